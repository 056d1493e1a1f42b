"""What mapping framework traces costs: the mapper (``TraceMapper.map``, shared by the SDK exporter
and ``otel-prov serve``) on the spans of the real instrumentations (tests/interop), per span and in
memory kept, next to our own helper spans.

    python benchmarks/bench_genai.py [--copies 200] [--repeats 5] [--batch-size 512]
                                     [--otel-prov DIR]   # measure another checkout's package (main)
                                     [--against DIR]     # this checkout and DIR's, in turn: the ratio

The spans: each scenario of ``--scenarios`` is run once (the real packages, offline), then each of
its traces is copied ``--copies`` times under fresh trace ids (tool call ids renamed per copy, so that
copies of a chat conversation stay apart), all delivered in the order the SDK exports them (children
first), in batches of ``--batch-size``.  One run maps them all with a fresh mapper; the best of
``--repeats`` runs is reported, in microseconds per span, with the mapper's kept bytes per span
(``TraceMapper.stats()``) and the tracemalloc peak of one extra run.  The helper spans are those of
``bench_export.py`` (agent sessions and RAG queries made with the helper API).

``--against DIR`` compares this checkout's package with DIR's on the same framework spans: one worker
process for each, each run in turn ``--repeats`` times (a machine whose speed drifts slows both
alike), and prints each side's best and median, the ratio of the bests and the median of the ratios
of the pairs.

Needs the interop extra (``bash .ci/setup --test``).  Figures on a shared machine are indicative.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SCENARIOS = ("agents_otel_responses", "agents_openinference_responses", "agents_traceloop_responses",
                     "langgraph_prebuilt", "smolagents_toolcalling", "openai_v2_chat", "rag_agent")


def _renamed(value: Any, copy: int) -> Any:
    return value.replace("call_", f"c{copy}_call_") if isinstance(value, str) else value


def capture(scenarios: list[str], directory: Path) -> None:
    """Runs the scenarios once, their spans written as OTLP to ``directory/NAME.otlp``."""
    from tests.interop.runner import SCENARIOS, run

    for name in scenarios:
        run(SCENARIOS[name], directory)


def workload(scenarios: list[str], copies: int, captures: Path | None = None) -> list[Any]:
    """The scenarios' spans (read from ``captures`` by the package measured, else run now), copied."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from otel_prov.mapping.spans import records_from_otlp

    rng = random.Random(7)
    out: list[Any] = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = captures or Path(tmp)
        if captures is None:
            capture(scenarios, directory)
        captured = [records_from_otlp(ExportTraceServiceRequest.FromString(
            (directory / f"{name}.otlp").read_bytes()).resource_spans)[0] for name in scenarios]
    for copy in range(copies):
        for spans in captured:
            ids = {t: rng.getrandbits(128) for t in {s.trace_id for s in spans}}
            out += [replace(s, trace_id=ids[s.trace_id],
                            attributes={k: _renamed(v, copy) for k, v in s.attributes.items()})
                    for s in spans]
    return out


def measure(records: list[Any], batch: int, profile: str = "seed") -> tuple[float, dict[str, Any]]:
    from otel_prov.mapping.mapper import TraceMapper

    mapper = TraceMapper(profile, max_spans=len(records) + 1, max_bytes=1 << 40, max_traces=len(records) + 1)
    start = time.perf_counter()
    quads = 0
    for i in range(0, len(records), batch):
        update = mapper.map(records[i:i + batch])
        quads += len(update.add) - len(update.remove)
    elapsed = time.perf_counter() - start
    stats = mapper.stats()
    stats["quads"] = quads
    return elapsed, stats


def helper_records(count: int) -> list[Any]:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from bench_export import build_spans

    from otel_prov.mapping.spans import from_sdk

    return [from_sdk(s) for s in build_spans(count)]


def report(label: str, records: list[Any], batch: int, repeats: int) -> None:
    best = min(measure(records, batch)[0] for _ in range(repeats))
    tracemalloc.start()
    _, stats = measure(records, batch)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    n = len(records)
    print(f"{label:14s} {n:7d} spans  {best * 1e6 / n:7.1f} us/span  ({n / best:8.0f} spans/s)  "
          f"kept {stats['bytes'] / n:6.0f} B/span  tracemalloc peak {peak / 2**20:6.1f} MiB  "
          f"quads {stats['quads']}")


def worker(args: argparse.Namespace) -> int:
    """One side of ``--against``: maps the framework spans once per line read, printing the time."""
    records = workload(args.scenarios, args.copies, args.captures)
    measure(records, args.batch_size)  # warm
    for _ in sys.stdin:
        print(measure(records, args.batch_size)[0] * 1e6 / len(records), flush=True)
    return 0


def against(args: argparse.Namespace) -> int:
    sides = {"this": REPO, "against": args.against.resolve()}
    captures = Path(tempfile.mkdtemp(prefix="bench-genai-"))
    capture(args.scenarios, captures)  # once, here: each side reads them with its own package
    command = [sys.executable, __file__, "--copies", str(args.copies), "--batch-size", str(args.batch_size),
               "--scenarios", *args.scenarios, "--captures", str(captures), "--worker"]
    workers = {name: subprocess.Popen([*command, str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True) for name, root in sides.items()}
    times: dict[str, list[float]] = {name: [] for name in sides}
    try:
        for _ in range(args.repeats):
            for name, process in workers.items():
                assert process.stdin is not None and process.stdout is not None
                process.stdin.write("run\n")
                process.stdin.flush()
                times[name].append(float(process.stdout.readline()))
    finally:
        for process in workers.values():
            if process.stdin is not None:
                process.stdin.close()
            process.wait()
    for name, root in sides.items():
        ordered = sorted(times[name])
        print(f"framework {name:8s} {root}: best {ordered[0]:6.1f} us/span, "
              f"median {statistics.median(ordered):6.1f}")
    pairs = [b / a for a, b in zip(times["against"], times["this"], strict=True)]
    print(f"ratio this/against: of the bests {min(times['this']) / min(times['against']):.2f}, "
          f"median of {len(pairs)} pairs {statistics.median(pairs):.2f}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--helper-spans", type=int, default=7500)
    parser.add_argument("--scenarios", nargs="*", default=list(DEFAULT_SCENARIOS))
    parser.add_argument("--otel-prov", type=Path, help="the checkout whose otel_prov package to measure")
    parser.add_argument("--against", type=Path, help="compare with this checkout's package, in turn")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--captures", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    if args.against:
        return against(args)
    if args.otel_prov or args.worker:
        sys.path.insert(0, str((args.otel_prov or args.worker).resolve()))
    if args.worker:
        return worker(args)
    import otel_prov

    print(f"otel_prov from {Path(otel_prov.__file__).parent}; batches of {args.batch_size}, "
          f"best of {args.repeats}")
    framework = workload(args.scenarios, args.copies)
    report("framework", framework, args.batch_size, args.repeats)
    report("helper API", helper_records(args.helper_spans), args.batch_size, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
