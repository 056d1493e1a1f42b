"""Diff benchmark: ``otel-prov diff A B`` on two agent runs of 1,000 steps each, in a real store.

The runs are recorded with ``otel_prov.agent_session`` (real SDK spans: a thought, a tool call with
arguments and a result per step, the answer), mapped by the real exporter into an on-disk store
(``oxigraph:TMPDIR``).  Run B is run A's 1,000 steps (the same seeded texts) with three changes: step
500 calls its tool with other arguments (and observes another result), a step is inserted before step
700 and step 800 is left out -- still 1,000 steps.  A third run, C, has 1,000 steps of other texts
and tools (every step differs: the worst case for the alignment, which pairs those of the same tool).

Timed, each ``--repeats`` times (median and best reported):

  process    ``python -m otel_prov.cli diff A B --store S`` as a whole process (start, imports,
             reading both sessions from the store, the comparison, the text), in text and JSON,
             and for A against C;
  read       reading the two sessions (``TraceReader.trace``) in this process;
  diff       the comparison alone (``otel_prov.read.diff.diff`` on the two sessions read);
  render     the text and the JSON of the comparison.

Checked, outside the timing: the process exits 1 (the runs differ) and 0 for A against itself; the
comparison finds exactly the three changes (step 500 changed, one step only in B, one only in A) and
the rest equal; A against C finds no step equal.  The target: the whole process under
``--target`` seconds (2).  Exit status 1 when a check failed or the target was missed.

    python benchmarks/bench_diff.py [--steps 1000] [--repeats 5] [--target 2]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from benchmarks.bench_export import _TOOLS, _text  # noqa: E402
from otel_prov import ProvSpanExporter, agent_session  # noqa: E402
from otel_prov.read.diff import CHANGED, EQUAL, ONLY_A, ONLY_B, diff  # noqa: E402
from otel_prov.read.model import Trace  # noqa: E402
from otel_prov.read.reader import TraceReader  # noqa: E402
from otel_prov.render import DIFF_FORMATS  # noqa: E402
from otel_prov.stores import open_for_reading, parse_store  # noqa: E402

Step = tuple[str, str, dict[str, Any], str]
"""A step to record: thought, tool, arguments, result."""
QUESTION = "Which of the thousand records holds the answer?"


def steps(count: int, seed: int) -> list[Step]:
    rng = random.Random(seed)
    return [(_text(rng, 60, 300), rng.choice(_TOOLS), {"query": _text(rng, 10, 60), "page": n},
             _text(rng, 100, 600)) for n in range(count)]


def changed(run: list[Step]) -> list[Step]:
    """``run`` with step 500's arguments and result changed, a step inserted before step 700, step 800
    left out (as many steps)."""
    out = list(run)
    thought, tool, args, _ = out[499]
    out[499] = (thought, tool, {**args, "query": "another query"}, "another result")
    del out[799]
    out.insert(699, ("An extra look.", "calculator", {"expression": "1 + 1"}, "2"))
    return out


def record(path: Path, runs: list[list[Step]]) -> list[str]:
    """Each run as an agent session (its spans made first, then exported by the real exporter into
    the store at ``path``, in batches of 512 as the BatchSpanProcessor sends them)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    ids = []
    for run in runs:
        with agent_session(QUESTION, tracer_provider=provider) as session:
            for thought, tool, args, result in run:
                with session.iteration() as step:
                    step.thought(thought)
                    step.call_tool(tool, lambda r=result, **kw: r, args)
            session.conclude("The 1,000th record.")
        ids.append(str(session.explain_id))
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    exporter = ProvSpanExporter(store=f"oxigraph:{path}")
    for i in range(0, len(spans), 512):
        exporter.export(spans[i:i + 512])
    exporter.shutdown()
    return ids


def timed(func: Callable[[], Any], repeats: int) -> tuple[list[float], Any]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return times, result


def process(store: Path, a: str, b: str, *extra: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_PROV_")}
    command = [sys.executable, "-m", "otel_prov.cli", "diff", a, b, "--store", str(store), *extra]
    return subprocess.run(command, capture_output=True, env=env, timeout=600, check=False)


def figures(times: list[float]) -> str:
    return f"median {statistics.median(times):.3f} s, best {min(times):.3f} s ({len(times)} runs)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--target", type=float, default=2.0, help="seconds the whole process may take")
    args = parser.parse_args(argv)
    if args.steps < 900:
        parser.error("--steps: at least 900 (the changes are at steps 500, 700 and 800)")
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-diff-") as work:
        store = Path(work) / "store"
        started = time.perf_counter()
        base = steps(args.steps, seed=1)
        a, b, c = record(store, [base, changed(base), steps(args.steps, seed=2)])
        print(f"recorded 3 agent sessions of {args.steps} steps into oxigraph:{store} in "
              f"{time.perf_counter() - started:.1f} s; A {a}, B {b}, C {c}")

        def read_two(x: str, y: str) -> tuple[Trace, Trace]:
            opened = open_for_reading(parse_store(str(store)))
            try:
                reader = TraceReader(opened)
                return reader.trace(x)[0], reader.trace(y)[0]
            finally:
                opened.close()

        read_times, (ta, tb) = timed(lambda: read_two(a, b), args.repeats)
        diff_times, found = timed(lambda: diff(ta, tb), args.repeats)
        text_times, _ = timed(lambda: DIFF_FORMATS["text"](found), args.repeats)
        json_times, _ = timed(lambda: DIFF_FORMATS["json"](found), args.repeats)
        statuses = [p.status for p in found.pairs]
        counts = {s: statuses.count(s) for s in (EQUAL, CHANGED, ONLY_A, ONLY_B)}
        first = found.pairs[found.first or 0]
        if (counts[CHANGED], counts[ONLY_A], counts[ONLY_B]) != (1, 1, 1) or first.a is None \
                or first.a.title != "Analysis 500" or first.changed != ("arguments", "observation"):
            problems.append(f"A against B: expected step 500 changed, one step in each run only; got "
                            f"{counts}, first {first.a.title if first.a else None} {first.changed}")
        _, (_, tc) = timed(lambda: read_two(a, c), 1)
        worst_times, worst = timed(lambda: diff(ta, tc), args.repeats)
        worst_counts = {s: sum(p.status == s for p in worst.pairs) for s in (EQUAL, CHANGED, ONLY_A, ONLY_B)}
        if any(p.status == EQUAL for p in worst.pairs if p.entry.kind == "Analysis"):
            problems.append(f"A against C: a step found equal ({worst_counts})")

        runs: dict[str, list[float]] = {}
        cases = (("text, A B", a, b, (), 1), ("json, A B", a, b, ("--format", "json"), 1),
                 ("text, A A", a, a, (), 0), ("text, A C", a, c, (), 1))
        for label, x, y, extra, status in cases:
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                run = process(store, x, y, *extra)
                times.append(time.perf_counter() - start)
                if run.returncode != status:
                    problems.append(f"diff {label}: exit {run.returncode}, expected {status}: "
                                    f"{run.stderr.decode()[-300:]}")
            runs[label] = times
        out = process(store, a, b).stdout.decode()
        if "First divergence: Analysis 500 (" not in out:
            problems.append("diff A B: its text does not name Analysis 500 as the first divergence")

    print(f"\nA against B ({len(found.pairs)} pairs: {counts})")
    print(f"  read both sessions   {figures(read_times)}")
    print(f"  diff alone           {figures(diff_times)}")
    print(f"  render text          {figures(text_times)}")
    print(f"  render JSON          {figures(json_times)}")
    print(f"A against C, every step different ({len(worst.pairs)} pairs: {worst_counts})")
    print(f"  diff alone           {figures(worst_times)}")
    print("otel-prov diff as a whole process:")
    for label, times in runs.items():
        print(f"  {label:11}          {figures(times)}")
    slowest = max(statistics.median(t) for t in runs.values())
    verdict = "met" if slowest < args.target else "MISSED"
    print(f"target: the whole process under {args.target:g} s: {verdict} (slowest median {slowest:.3f} s)")
    for problem in problems:
        print(f"CHECK FAILED: {problem}")
    return 0 if not problems and slowest < args.target else 1


if __name__ == "__main__":
    sys.exit(main())
