"""Which surviving mutants change an emitted triple: each one is run over a corpus of spans and its
graph compared with the unmutated code's.  Run by tests/mutation/mutation.sh after mutmut, in its mutants/
directory (where every mutant is compiled in, chosen by name at call time).

The corpus: the real instrumentations' recorded spans (OTLP bytes, read by the code under test), the
helper flows of tests/mapping/test_golden.py (scripted ids and times), and helper sessions and framework
traces drawn (deterministically) from tests/support/strategies.py -- blank ids, failing steps, parallel tool
calls, nested agents and queries.  Each is mapped in both profiles, all at once and one span at a
time in reverse order (the incremental mapper's removals applied), so a mutant that changes a
triple on any of them, or raises, is reported as "changes triples".  A mutant that changes none is
reported as "same graph": equivalent as far as the graph goes, on this corpus (evidence, not proof).

Before that, each survivor meets test_interop's own assertion (tests/interop/chain.py: every
recorded real-instrumentation scenario, both profiles, against the chain its story played): a
mutant that fails it is "killed by test_interop" -- the suite kills it, though mutmut's per-mutant
run leaves test_interop out (it would take 20 s a mutant).

    python tests/mutation/mutation_oracle.py MUTANTS_DIR INTEROP_SPANS_DIR SURVIVORS_FILE
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

PLANS = 60
"""Plans of each kind drawn from tests/support/strategies.py."""
INCREMENTAL = 60
"""The first span sets of the corpus (the recorded ones first) are also mapped one span at a time."""


def main(argv: list[str]) -> int:
    mutants_dir, spans_dir, survivors_file = Path(argv[0]), Path(argv[1]), Path(argv[2])
    sys.path.insert(0, str(mutants_dir))
    from mutmut.mutation.trampoline import set_mutant_under_test

    set_mutant_under_test("none")  # no mutant: the code as written
    corpus = _corpus(spans_dir)
    print(f"oracle: corpus of {len(corpus)} span sets", flush=True)
    baseline = [_graphs(make, k < INCREMENTAL) for k, make in enumerate(corpus)]
    chains = _interop_chains(spans_dir)
    failing = [name for name, check in chains if not check()]
    assert not failing, f"the interop chains fail without a mutant: {failing}"
    names = [line.split(":")[0].strip() for line in survivors_file.read_text().splitlines() if line.strip()]
    changed = killed = 0
    for name in names:
        set_mutant_under_test(name)
        verdict = "same graph"
        for scenario, check in chains:
            try:
                ok = check()
            except Exception:  # noqa: BLE001 - a mutant may raise anything
                ok = False
            if not ok:
                verdict = f"killed by test_interop ({scenario})"
                break
        if verdict != "same graph":
            killed += 1
            print(f"{name}: {verdict}", flush=True)
            continue
        for k, (make, expected) in enumerate(zip(corpus, baseline, strict=True)):
            try:
                got = _graphs(make, k < INCREMENTAL)
            except Exception as exc:  # noqa: BLE001 - a mutant may raise anything
                verdict = f"changes triples (raises {type(exc).__name__})"
                break
            if got != expected:
                verdict = "changes triples"
                break
        changed += verdict != "same graph"
        print(f"{name}: {verdict}", flush=True)
    set_mutant_under_test("none")
    print(f"oracle: of {len(names)} surviving mutants, {killed} killed by test_interop's chains, "
          f"{changed} change a triple, {len(names) - killed - changed} give the same graph", flush=True)
    return 0


Records = Callable[[], list[Any]]


def _interop_chains(spans_dir: Path) -> list[tuple[str, Callable[[], bool]]]:
    """test_interop.test_whole_chain, per recorded scenario: both profiles map to the expected chain."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from tests.interop.chain import expected, mapped, normalized

    checks = []
    for path in sorted(spans_dir.glob("*.otlp")):
        name, data = path.stem, path.read_bytes()

        def check(name: str = name, data: bytes = data) -> bool:
            from otel_prov.mapping.spans import records_from_otlp

            records = records_from_otlp(ExportTraceServiceRequest.FromString(data).resource_spans)[0]
            want = expected(name)
            return all(normalized(mapped(records, profile), want) == want for profile in ("seed", "strict"))
        checks.append((name, check))
    return checks


def _graphs(make: Records, incremental: bool) -> tuple[frozenset[tuple[str, ...]], ...]:
    """The graph of the span set in each profile, mapped at once and (``incremental``) one span at a
    time, in reverse order."""
    from otel_prov.mapping.mapper import TraceMapper

    out = []
    for profile in ("seed", "strict"):
        records = make()
        out.append(frozenset(TraceMapper(profile).map(records).add))
        if not incremental:
            continue
        mapper, store = TraceMapper(profile), set()
        for record in reversed(records):
            update = mapper.map([record])
            store.difference_update(update.remove)
            store.update(update.add)
        out.append(frozenset(store))
    return tuple(out)


def _corpus(spans_dir: Path) -> list[Records]:
    corpus: list[Records] = []
    for path in sorted(spans_dir.glob("*.otlp")):
        corpus.append(_from_otlp(path.read_bytes()))
    for spans in _helper_and_framework_spans():
        corpus.append(_from_sdk(spans))
    return corpus


def _from_otlp(data: bytes) -> Records:
    def make() -> list[Any]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        from otel_prov.mapping.spans import records_from_otlp

        return list(records_from_otlp(ExportTraceServiceRequest.FromString(data).resource_spans)[0])
    return make


def _from_sdk(spans: list[Any]) -> Records:
    def make() -> list[Any]:
        from otel_prov.mapping.spans import from_sdk

        return [from_sdk(s) for s in spans]
    return make


def _helper_and_framework_spans() -> Iterator[list[Any]]:
    import pytest
    from hypothesis import HealthCheck, Phase, given, settings

    from tests import test_exact
    from tests.support.scripted import scripted_provider
    from tests.support.strategies import genai_plans, helper_plans, run_plan

    for scenario in test_exact.SCENARIOS.values():
        with pytest.MonkeyPatch.context() as patch:
            with scripted_provider(patch, times=scenario.times, trace_ids=scenario.trace_ids,
                                   span_ids=scenario.span_ids) as (provider, memory):
                chosen = scenario.run(provider)
                finished = list(memory.get_finished_spans())
        yield finished if chosen is None else chosen
    plans: list[Any] = []
    for strategy in (helper_plans, genai_plans()):
        @settings(derandomize=True, max_examples=PLANS, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck), deadline=None)
        @given(strategy)
        def collect(plan: Any) -> None:
            plans.append(plan)
        collect()
    for plan in plans:
        yield run_plan(plan)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception:
        traceback.print_exc()
        sys.exit(2)
