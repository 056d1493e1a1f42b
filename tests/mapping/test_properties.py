"""Property tests: the graph does not depend on how a trace's spans are batched, ordered or repeated.

Sessions of the three flows are made by the real helper API, standard GenAI agent traces by the
plain OpenTelemetry API (tests/support/strategies.py); both go through a real ``ProvSpanExporter`` (memory
store, ``export()`` called directly, then ``force_flush``) and through ``spans_to_dataset``.  The
traces of the real framework instrumentations (tests/interop) go through the mapper the exporter and
``otel-prov serve`` share, into a real store, several runs at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import rdflib
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from rdflib import RDF, URIRef

from otel_prov import OTELPROV, PROFILES, TG, ProvSpanExporter, spans_to_dataset
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import LogRecord, SpanRecord
from otel_prov.model.quads import nquads
from otel_prov.stores.oxigraph import OxigraphStore
from tests.interop.runner import SCENARIOS, Captured
from tests.support.graphs import assert_isomorphic
from tests.support.strategies import (
    AgentPlan,
    Chat,
    DocRagPlan,
    GenAIAgent,
    GenAIPlan,
    GraphRagPlan,
    deliver,
    genai_plans,
    helper_plans,
    run_plan,
    schedules,
)

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def export(batches: Sequence[Sequence[ReadableSpan]], profile: str) -> rdflib.Dataset:
    """What a real exporter stores after exporting these batches, in order."""
    exporter = ProvSpanExporter(store="memory:", profile=profile)
    try:
        for batch in batches:
            assert exporter.export(batch) is SpanExportResult.SUCCESS
        assert exporter.force_flush()
        return exporter.store.to_dataset()
    finally:
        exporter.shutdown()


def quads(ds: rdflib.Dataset) -> set[tuple[object, ...]]:
    return {(s, p, o, g.identifier if isinstance(g, rdflib.Graph) else g)
            for s, p, o, g in ds.quads((None, None, None, None))}


def typed(ds: rdflib.Dataset, cls: URIRef) -> set[object]:
    return {s for s, _, _, _ in ds.quads((None, RDF.type, cls, None))}


def values(ds: rdflib.Dataset, pred: URIRef) -> Counter[str]:
    """The values of ``pred``; a Thought entity's (profile trustgraph): its document's text."""
    def text(o: object) -> str:
        if isinstance(o, URIRef) and any(ds.quads((o, RDF.type, URIRef(TG.Thought), None))):
            document = next(d for _, _, d, _ in ds.quads((o, URIRef(TG.document), None, None)))
            return str(next(t for _, _, t, _ in ds.quads((document, URIRef(TG.content), None, None))))
        return str(o)
    return Counter(text(o) for _, _, o, _ in ds.quads((None, pred, None, None)))


def check_same_whatever_the_delivery(spans: list[ReadableSpan], schedule: list[list[int]],
                                     profile: str) -> rdflib.Dataset:
    whole = export([spans], profile)
    batches = deliver(spans, schedule)
    assert_isomorphic(whole, export(batches, profile))
    assert_isomorphic(whole, spans_to_dataset(spans, profile))
    assert_isomorphic(whole, spans_to_dataset([s for b in batches for s in b], profile))
    return whole


# -- what the graph must hold (so that an empty or collapsed graph cannot pass) ------------------------


def _expected_helper(plan: AgentPlan | GraphRagPlan | DocRagPlan) -> Counter[URIRef]:
    want: Counter[URIRef] = Counter({URIRef(TG.Question): 1, URIRef(TG.Analysis): 0,
                                     URIRef(TG.Conclusion): 0, URIRef(TG.Synthesis): 0})
    if isinstance(plan, AgentPlan):
        want[URIRef(TG.Analysis)] += len(plan.run_steps())
        want[URIRef(TG.Conclusion)] += plan.answer is not None and plan.fail_at is None
        for k, step in enumerate(plan.run_steps()):
            if k == plan.fail_at:
                continue  # it raised before running its tool
            if isinstance(step.inner, GenAIAgent):
                _add_genai(want, step.inner.all_agents(), len(step.inner.all_tools()))
            elif isinstance(step.inner, DocRagPlan):
                want[URIRef(TG.Question)] += 1
                want[URIRef(TG.Synthesis)] += step.inner.answer is not None
    else:
        want[URIRef(TG.Synthesis)] += plan.answer is not None
    return want


def _add_genai(want: Counter[URIRef], agents: list[GenAIAgent], tools: int) -> None:
    want[URIRef(TG.Question)] += len(agents)
    want[URIRef(TG.Analysis)] += tools
    want[URIRef(TG.Conclusion)] += len(agents)  # every finished agent: its answer or "not captured"


def _thoughts(agent: GenAIAgent) -> list[str | None]:
    """The thought of each of the agent's tool calls, in order: the text of the latest model call
    before it ("" when that call said nothing); None when there is none (not captured)."""
    last: Chat | None = None
    found: list[str | None] = []
    for turn in agent.turns:
        for item in turn.items:
            if isinstance(item, Chat):
                last = item
            elif last is None:
                found.append(None)
            elif agent.style == "openinference":
                found.append(last.text if last.text.strip() else "")
            else:  # a reasoning part "thinking...", then the text
                found.append("\n".join(dict.fromkeys(p for p in ("thinking...", last.text) if p.strip())))
    return found


def _assert_counts(ds: rdflib.Dataset, want: Counter[URIRef]) -> None:
    got = {cls: len(typed(ds, cls)) for cls in want}
    assert got == dict(want)


# -- the properties -----------------------------------------------------------------------------------


@SETTINGS
@given(plan=helper_plans, profile=st.sampled_from(PROFILES), data=st.data())
def test_helper_sessions_any_delivery_same_graph(plan: AgentPlan | GraphRagPlan | DocRagPlan,
                                                 profile: str, data: st.DataObject) -> None:
    spans = run_plan(plan)
    schedule = data.draw(schedules(len(spans)), label="schedule")
    whole = check_same_whatever_the_delivery(spans, schedule, profile)
    _assert_counts(whole, _expected_helper(plan))
    assert plan.question in values(whole, URIRef(TG.query))


@SETTINGS
@given(plan=genai_plans(), profile=st.sampled_from(PROFILES), data=st.data())
def test_genai_traces_any_delivery_same_graph(plan: GenAIPlan, profile: str, data: st.DataObject) -> None:
    spans = run_plan(plan)
    schedule = data.draw(schedules(len(spans)), label="schedule")
    whole = check_same_whatever_the_delivery(spans, schedule, profile)
    want: Counter[URIRef] = Counter()
    _add_genai(want, plan.all_agents(), len(plan.all_tools()))
    _assert_counts(whole, want)
    assert values(whole, URIRef(TG.action)) == Counter(t.name for t in plan.all_tools())
    assert values(whole, URIRef(TG.query)) == Counter(a.query or "" for a in plan.all_agents())
    thoughts = [t for a in plan.all_agents() for t in _thoughts(a)]
    assert values(whole, URIRef(TG.thought)) == Counter(t for t in thoughts if t)
    assert values(whole, URIRef(OTELPROV.notCaptured))["thought"] == thoughts.count(None)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=helper_plans, profile=st.sampled_from(PROFILES))
def test_running_session_already_shows_question_and_finished_steps(
        plan: AgentPlan | GraphRagPlan | DocRagPlan, profile: str) -> None:
    assume(not (isinstance(plan, AgentPlan) and plan.fail_at is not None))  # it never reaches its end
    finished_early: list[ReadableSpan] = []
    spans = run_plan(plan, before_end=finished_early.extend)
    assert finished_early, "the snapshot was taken"
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 1 and roots[0] not in finished_early  # the session was still running
    partial, final = export([finished_early], profile), export([spans], profile)
    assert quads(partial) <= quads(final)
    assert plan.question in values(partial, URIRef(TG.query))
    assert len(typed(partial, URIRef(TG.Question))) >= 1
    assert typed(partial, URIRef(TG.Analysis)) == typed(final, URIRef(TG.Analysis))
    # What the session does after the snapshot is not there yet: its Conclusion or Synthesis.
    last = URIRef(TG.Conclusion) if isinstance(plan, AgentPlan) else URIRef(TG.Synthesis)
    later = int(plan.answer is not None)
    assert len(typed(partial, last)) == len(typed(final, last)) - later


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_real_instrumentation_traces_any_delivery_same_graph(interop: Captured, data: st.DataObject) -> None:
    """Up to three real runs together (a bare openai-v2 loop spans three traces: its conversation is
    joined across batches), their spans and the GenAI events they sent as log records split into
    batches, shuffled, repeated (a log before its span, a span before its logs, across batches): the
    store ends with the graph of everything mapped at once."""
    names = data.draw(st.lists(st.sampled_from(sorted(SCENARIOS)), min_size=1, max_size=3, unique=True),
                      label="scenarios")
    profile = data.draw(st.sampled_from(PROFILES), label="profile")
    spans = [s for name in names for s in interop.spans(name)]
    logs = [r for name in names for r in interop.logs(name)]
    items: list[SpanRecord | LogRecord] = [*spans, *logs]
    schedule = data.draw(schedules(len(items)), label="schedule")
    whole, mapper = TraceMapper(profile).map(spans, logs).add, TraceMapper(profile)
    store, expected = OxigraphStore(None), OxigraphStore(None)
    try:
        expected.add(nquads(whole), len(whole))
        for batch in schedule:
            update = mapper.map(*_split([items[i] for i in batch]))
            store.remove(update.remove)
            store.add(nquads(update.add), len(update.add))
        assert _quads(store) == _quads(expected)
    finally:
        store.close()
        expected.close()


def _split(items: Sequence[SpanRecord | LogRecord]) -> tuple[list[SpanRecord], list[LogRecord]]:
    """A batch of a schedule as the spans and the log records of one request each."""
    return ([i for i in items if isinstance(i, SpanRecord)], [i for i in items if isinstance(i, LogRecord)])


def _quads(store: OxigraphStore) -> set[object]:
    return set(store.inner.quads_for_pattern(None, None, None, None))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_traces_shared_among_mappers_give_the_graph_of_one(interop: Captured, data: st.DataObject) -> None:
    """``otel-prov serve --workers N``: each worker's mapper maps the traces given to it, and the
    chat conversations (which span traces) are kept by worker 0's, fed the others' conversation
    changes (sent between processes: pickled).  Whatever the delivery, the store ends with the graph
    of all the spans mapped by one mapper."""
    import pickle

    from otel_prov.mapping.spans import trace_share
    from otel_prov.serve.worker import _portable

    names = data.draw(st.lists(st.sampled_from(sorted(SCENARIOS)), min_size=1, max_size=3, unique=True),
                      label="scenarios")
    profile = data.draw(st.sampled_from(PROFILES), label="profile")
    count = data.draw(st.integers(2, 3), label="workers")
    spans = [s for name in names for s in interop.spans(name)]
    logs = [r for name in names for r in interop.logs(name)]
    items: list[SpanRecord | LogRecord] = [*spans, *logs]
    schedule = data.draw(schedules(len(items)), label="schedule")
    whole = TraceMapper(profile).map(spans, logs).add
    mappers = [TraceMapper(profile, conversations=k == 0) for k in range(count)]
    store, expected = OxigraphStore(None), OxigraphStore(None)

    def apply(update) -> None:  # type: ignore[no-untyped-def]
        store.remove(update.remove)
        store.add(nquads(update.add), len(update.add))

    try:
        expected.add(nquads(whole), len(whole))
        for batch in schedule:
            ops = []
            for k, mapper in enumerate(mappers):
                mine = [items[i] for i in batch
                        if trace_share(items[i].trace_id.to_bytes(16, "big"), count) == k]
                update = mapper.map(*_split(mine))
                apply(update)
                ops += [(t, None if calls is None else tuple(_portable(c) for c in calls))
                        for t, calls in update.conversation_ops]
            assert not mappers[0].map([]).conversation_ops
            apply(mappers[0].apply_conversations(pickle.loads(pickle.dumps(ops))))
        assert _quads(store) == _quads(expected)
    finally:
        store.close()
        expected.close()
