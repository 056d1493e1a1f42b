"""Coverage on captures the tests never ran: a directory of framework traces recorded elsewhere (by a
person or a helper who did not read the mapping), each ``NAME.otlp`` (an OTLP
``ExportTraceServiceRequest``; ``NAME.otlp.logs``: an ``ExportLogsServiceRequest``, if any) beside
``NAME.expected.json``, what its spans hold of the story of ``tests/interop/story.py``:

    {"framework": "...", "mode": "on|off|redacted|rag|...",
     "sessions": [{"type": "Agent" | "DocRAG", "question": ..., "agent": ...,
                   "steps": [{"thought": ..., "action": ..., "arguments": {...}, "observation": ...}],
                   "answer": ..., "chunks": [ids or texts]}]}

each value the played one where the spans hold it, ``"(not captured)"`` where they do not, and
``"(redacted)"`` where a marker stands in its place.

    python benchmarks/genai_heldout.py DIR [--profile seed|strict] [--verbose] [NAME_SUBSTRING ...]

For each capture: the values the spans hold that the graph gives (``right`` of ``held``), and every
wrong value -- a value the graph states that is not the one the story played at that place (a value
where the spans hold none counts as wrong unless it is the played one).  Then the whole: the share of
held values with content on (modes other than off and redacted), and the wrong values of every mode.
Exits 1 if any value is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from otel_prov.mapping.spans import otlp_logs, records_from_otlp  # noqa: E402
from tests.interop import story  # noqa: E402
from tests.interop.chain import (  # noqa: E402
    FIELDS,
    NOT_CAPTURED,
    REDACTED,
    Chain,
    Step,
    field_values,
    mapped,
    same,
    unknown,
)

HIDDEN_MODES = ("off", "redacted")
_TEXT_TO_ID = {text: doc_id for doc_id, text, _ in story.DOCUMENTS}


def _mark(value: Any) -> Any:
    """The expected file's marks as the chain's (None stays None: the run has no such value)."""
    if isinstance(value, str) and value.strip().lower() in ("(not captured)", "not captured"):
        return NOT_CAPTURED
    if isinstance(value, str) and value.strip().lower() in ("(redacted)", "redacted"):
        return REDACTED
    return value


def _chunks(value: Any) -> tuple[str, ...] | str | None:
    if value is None or isinstance(value, str):
        return _mark(value)
    return tuple(sorted(_TEXT_TO_ID.get(v, v) for v in value))


def expected_chains(sessions: Sequence[dict[str, Any]]) -> list[Chain]:
    chains = []
    for s in sessions:
        steps = tuple(Step(_mark(st.get("thought")), _mark(st.get("action")), _mark(st.get("arguments")),
                           _mark(st.get("observation"))) for st in s.get("steps", ()))
        chains.append(Chain(s.get("type", "Agent"), _mark(s.get("question")), _mark(s.get("agent")), steps,
                            _mark(s.get("answer")), _chunks(s.get("chunks")),
                            tuple(expected_chains(s.get("subtraces", ())))))
    return chains


def played_value(field: str, index: int, rag: bool) -> Any:
    """What the story played for the ``index``-th value of ``field`` (one agent, two steps)."""
    table: dict[str, Sequence[Any]] = {
        "question": (story.RAG_QUERY if rag else story.QUESTION,),
        "answer": (story.RAG_ANSWER if rag else story.FINAL_ANSWER,),
        "agent name": (story.AGENT,),
        "thought": (story.THOUGHT_1, story.THOUGHT_2),
        "action": (story.TOOL_1, story.TOOL_2),
        "arguments": (story.TOOL_1_ARGS, story.TOOL_2_ARGS),
        "observation": (story.TOOL_1_RESULT, story.TOOL_2_RESULT),
    }
    values = table.get(field, ())
    return values[index] if index < len(values) else None


def judge(name: str, want: list[Chain], got: list[Chain], rag: bool) -> tuple[int, int, list[str]]:
    right = held = 0
    wrongs: list[str] = []
    wanted, found = field_values(want), field_values(got)
    for field in FIELDS:
        w, g = wanted[field], found[field]
        for i in range(max(len(w), len(g))):
            want_i = w[i] if i < len(w) else None
            got_i = g[i] if i < len(g) else None
            if field == "retrieval":
                wq, wc, wa = want_i if isinstance(want_i, tuple) else (None, None, None)
                gq, gc, ga = got_i if isinstance(got_i, tuple) else (None, None, None)
                for part, wp, gp in (("rag question", wq, gq), ("chunks", wc, gc), ("rag answer", wa, ga)):
                    if wp not in (None, NOT_CAPTURED, REDACTED):
                        held += 1
                        right += wp == gp
                    if gp not in (None, NOT_CAPTURED, REDACTED) and gp != wp:
                        wrongs.append(f"{part}: want {wp!r}, got {gp!r}")
                continue
            plain = not unknown(field, want_i) and want_i is not None
            if plain:
                held += 1
                right += same(field, want_i, got_i)
            if unknown(field, got_i) or same(field, want_i, got_i):
                continue
            if not plain and same(field, played_value(field, i, rag), got_i):
                continue  # the expected file missed it; the value is the played one
            wrongs.append(f"{field}[{i}]: want {want_i!r}, got {got_i!r}")
    return right, held, wrongs


def load(path: Path) -> tuple[list[Any], list[Any]]:
    request = ExportTraceServiceRequest.FromString(path.read_bytes())
    records, rejected = records_from_otlp(request.resource_spans)
    if rejected:
        print(f"{path.name}: {rejected} spans rejected", file=sys.stderr)
    logs_path = Path(str(path) + ".logs")
    logs: list[Any] = []
    if logs_path.exists():
        request = ExportLogsServiceRequest.FromString(logs_path.read_bytes())
        logs = list(otlp_logs(request.resource_logs).records)
    return records, logs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--profile", choices=("seed", "strict"), default="seed")
    parser.add_argument("--verbose", action="store_true", help="print each capture's chains")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    total_right = total_held = total_wrong = 0
    for expected_path in sorted(args.directory.glob("*.expected.json")):
        name = expected_path.name.removesuffix(".expected.json")
        if args.names and not any(n in name for n in args.names):
            continue
        capture = args.directory / f"{name}.otlp"
        if not capture.exists():
            print(f"{name}: no {capture.name}", file=sys.stderr)
            continue
        spec = json.loads(expected_path.read_text())
        records, logs = load(capture)
        got = mapped(records, args.profile, logs)
        want = expected_chains(spec.get("sessions", ()))
        rag = spec.get("mode") == "rag" or any(s.get("type") == "DocRAG" for s in spec.get("sessions", ()))
        right, held, wrongs = judge(name, want, got, rag)
        hidden = spec.get("mode") in HIDDEN_MODES
        if not hidden:
            total_right += right
            total_held += held
        total_wrong += len(wrongs)
        share = f"{right}/{held}" if not hidden else "(hidden)"
        print(f"{name:40} {share:>9}  {len(wrongs)} wrong")
        for line in wrongs:
            print(f"    WRONG {line}")
        if args.verbose or (not hidden and right < held):
            for chain in got:
                print(f"    got  {chain}")
            for chain in want:
                print(f"    want {chain}")
    share = total_right / total_held if total_held else 1.0
    print(f"\ncontent on: {total_right} of {total_held} held values ({share:.1%}); "
          f"{total_wrong} wrong in all")
    return 1 if total_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
