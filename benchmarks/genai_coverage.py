"""Coverage of the framework instrumentations: runs every scenario of tests/interop (the real
packages, offline), maps its spans, reads the graph back as ``otel-prov show`` does, and compares each
field of the explainability chain with the run the scenario played (tests/interop/story.py).

    python benchmarks/genai_coverage.py [--profile seed|strict] [--markdown] [NAME_SUBSTRING ...]

Prints one row per scenario and one column per field (question, thought, action, arguments,
observation, answer, retrieval, agent name, delegation):

  ✓              every value is the one played
  not captured   the graph marks it ``otelprov:notCaptured`` (the instrumentation did not record it)
  absent         not in the graph and not marked (the instrumentation drops it silently)
  k/n            k of the n values are the played ones (the others not captured or absent)
  ✗              a value differs from the one played (a wrong value, never acceptable)
  —              the run has none (no retrieval; one agent: no delegation)

Needs the interop extra (``bash .ci/setup --test``).  Exits 1 if a scenario fails to run or a value
is wrong.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.interop import story  # noqa: E402
from tests.interop.chain import (  # noqa: E402
    NOT_CAPTURED,
    Chain,
    Variant,
    docrag,
    handoff,
    mapped,
    react,
    thought_matches,
)
from tests.interop.runner import SCENARIOS, ScenarioFailed, missing_packages, run  # noqa: E402

FIELDS = ("question", "thought", "action", "arguments", "observation", "answer", "retrieval", "agent name",
          "delegation")
WRONG = "✗"


def played(name: str) -> list[Chain]:
    """The run a scenario played, every value as the story has it (what a perfect mapping gives)."""
    if name.startswith("agents_"):
        return [handoff(Variant())]
    if name.startswith("rag_chain"):
        return [docrag(story.RAG_ANSWER)]
    if name == "rag_agent":
        return [react(Variant(tool_1_result=story.RAG_ANSWER, tool_1_subtraces=(docrag(story.RAG_ANSWER),)))]
    if name.startswith("openai_v2_chat"):
        return [react(Variant(agent=None))]
    if name.startswith("langgraph_prebuilt"):
        return [react(Variant(agent="LangGraph"))]
    if name == "smolagents_code":
        return [react(Variant(thoughts=(f"Thought: {story.THOUGHT_1}\n", f"Thought: {story.THOUGHT_2}\n")))]
    return [react(Variant())]


def _agents(chains: list[Chain]) -> Iterator[Chain]:
    for chain in chains:
        yield chain
        for step in chain.steps:
            yield from _agents(list(step.subtraces))
        yield from _agents(list(chain.subtraces))


def values(chains: list[Chain]) -> dict[str, list[Any]]:
    """Every value of each field, in chain order."""
    out: dict[str, list[Any]] = {f: [] for f in FIELDS}
    for chain in _agents(chains):
        if chain.type == "DocRAG":
            out["retrieval"].append((chain.question, chain.chunks, chain.answer))
            continue
        out["question"].append(chain.question)
        out["answer"].append(chain.answer)
        out["agent name"].append(chain.agent)
        for step in chain.steps:
            out["thought"].append(step.thought)
            out["action"].append(step.action)
            out["arguments"].append(step.arguments)
            out["observation"].append(step.observation)
            out["delegation"] += [sub.delegated for sub in step.subtraces if sub.type == "Agent"]
    return out


def _same(field: str, want: Any, got: Any) -> bool:
    if field == "thought":
        return thought_matches(want, got)
    if field == "action" and isinstance(want, str) and want.startswith("transfer_to_"):
        return got in (want, "handoff to " + want.removeprefix("transfer_to_"))  # the hand-off, named
    if field == "arguments" and want == {}:
        return got in ({}, None)  # no arguments, written "{}" or not at all
    return bool(want == got)


def cell(field: str, want: list[Any], got: list[Any]) -> str:
    if not want:
        return "—"
    if len(got) != len(want):
        return f"{WRONG} ({len(got)} for {len(want)})"
    good = sum(_same(field, w, g) for w, g in zip(want, got, strict=True))
    missing = [g for w, g in zip(want, got, strict=True) if not _same(field, w, g)]
    if any(g not in (None, NOT_CAPTURED, False) for g in missing):
        return WRONG
    if good == len(want):
        return "✓"
    if good == 0:
        return "not captured" if all(g == NOT_CAPTURED for g in missing) else "absent"
    return f"{good}/{len(want)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=("seed", "strict"), default="seed")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (for docs/genai.md)")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    reason = missing_packages()
    if reason:
        print(f"genai_coverage: {reason}", file=sys.stderr)
        return 1
    rows, failed = [], False
    with tempfile.TemporaryDirectory() as tmp:
        for name, scenario in SCENARIOS.items():
            if args.names and not any(n in name for n in args.names):
                continue
            try:
                spans, _ = run(scenario, Path(tmp))
            except ScenarioFailed as exc:
                print(exc, file=sys.stderr)
                failed = True
                continue
            want, got = values(played(name)), values(mapped(spans, args.profile))
            if name.endswith("_no_content") and not got["question"]:
                row = ["nothing (no content links the calls)"] + [""] * (len(FIELDS) - 1)
            else:
                row = [cell(f, want[f], got[f]) for f in FIELDS]
            failed |= any(c.startswith(WRONG) for c in row)
            rows.append((scenario.family, name, row))
    header = ("instrumentation", "scenario", *FIELDS)
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for family, name, row in rows:
            print("| " + " | ".join((family, f"`{name}`", *row)) + " |")
    else:
        widths = [max(len(str(r)) for r in col) for col in zip(header, *[(f, n, *c) for f, n, c in rows],
                                                                strict=True)]
        for line in (header, *[(f, n, *c) for f, n, c in rows]):
            print("  ".join(str(v).ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
