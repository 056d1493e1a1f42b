"""Properties over the graph's structure, not just its size: the derivation chain (every Analysis
derives from the previous one, the first from the Question, the Conclusion from the last), the
numbering (1..n, no gap), every recorded field back exactly, error status, sub-traces, ids and times.

Sessions of our helpers come from the plans of tests/support/strategies.py (blank session ids, failing
steps, nested queries), framework traces from its GenAI plans (parallel tool calls that start at the
same nanosecond) and from the real instrumentations' spans (tests/interop), perturbed: sibling spans
tied to one start time, every time shifted.  Expected IRIs are built here by docs/model.md's rule
with the standard library (``urllib.parse.quote``, ``uuid``), and times are read back from their
literal text to the nanosecond, independently of the code under test.
"""

from __future__ import annotations

import calendar
import dataclasses
import json
import os
import re
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from urllib.parse import quote

import pyoxigraph
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan

from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import SpanRecord, from_sdk
from otel_prov.model.quads import nquads
from tests.interop.runner import SCENARIOS, Captured
from tests.support.strategies import (
    AgentPlan,
    DocRagPlan,
    GenAIAgent,
    GenAIPlan,
    GraphRagPlan,
    genai_plans,
    helper_plans,
    run_plan,
)

MUTATION = os.environ.get("HYPOTHESIS_PROFILE") == "mutation"
SETTINGS = settings(max_examples=15 if MUTATION else 80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

PROV = "http://www.w3.org/ns/prov#"
TG = "https://trustgraph.ai/ns/"
OTELPROV = "https://w3id.org/otel-prov/ns#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"
NESTED = uuid.uuid5(uuid.NAMESPACE_URL, "https://w3id.org/otel-prov/ns#nested-agent")
"""docs/model.md: the namespace of the uuid5 of an agent that does not own its trace."""
_DATETIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{0,8}[1-9]))?Z$")


# -- the graph, as plain terms ----------------------------------------------------------------------


class Graph:
    """A mapped graph's triples by subject and predicate, terms as pyoxigraph gives them (the text
    of IRIs and literals as written)."""

    def __init__(self, quads: Iterable[pyoxigraph.Quad]) -> None:
        self.out: dict[str, dict[str, list[pyoxigraph.NamedNode | pyoxigraph.Literal]]] = defaultdict(
            lambda: defaultdict(list))
        self.graphs: set[str] = set()
        for q in set(quads):  # RDF: a triple written twice is there once
            assert isinstance(q.subject, pyoxigraph.NamedNode), f"a blank node: {q}"
            self.out[q.subject.value][q.predicate.value].append(q.object)
            self.graphs.add(str(q.graph_name))

    def objects(self, s: str, p: str) -> list[str]:
        """The values (IRI or literal text) of ``s p ?``, sorted."""
        return sorted(o.value for o in self.out.get(s, {}).get(p, []))

    def one(self, s: str, p: str) -> str:
        found = self.objects(s, p)
        assert len(found) == 1, f"{s} {p}: expected one value, got {found}"
        return found[0]

    def types(self, s: str) -> set[str]:
        return set(self.objects(s, RDF_TYPE))

    def typed(self, cls: str) -> list[str]:
        return sorted(s for s in self.out if cls in self.types(s))

    def literal(self, s: str, p: str) -> pyoxigraph.Literal:
        (value,) = self.out[s][p]
        assert isinstance(value, pyoxigraph.Literal), value
        return value


def mapped(records: Sequence[SpanRecord], profile: str) -> Graph:
    update = TraceMapper(profile).map(records)
    assert not update.failed, update.failed
    graph = Graph(pyoxigraph.parse(nquads(update.add), format=pyoxigraph.RdfFormat.N_QUADS))
    assert graph.graphs <= {"<urn:graph:retrieval>"}
    return graph


def ns_of(literal: pyoxigraph.Literal) -> int:
    """The nanoseconds since the epoch an ``xsd:dateTime`` literal says, read from its text (which
    must be the canonical form: UTC, no trailing zero in the fraction, at most nine digits)."""
    assert literal.datatype.value == XSD_DATETIME, literal
    match = _DATETIME.match(literal.value)
    assert match, f"not a canonical UTC xsd:dateTime: {literal.value!r}"
    *fields, frac = match.groups()
    seconds = calendar.timegm(tuple(int(f) for f in fields) + (0, 0, 0))
    return seconds * 1_000_000_000 + int((frac or "").ljust(9, "0"))


# -- what every session must look like, whatever made it ----------------------------------------------


def session_uuid(session_id: str | None, trace_id: int) -> str:
    """docs/model.md: the session id, every character but A-Z a-z 0-9 - . _ ~ percent-encoded (UTF-8);
    a missing or blank one: the trace id formatted as a UUID."""
    if session_id is None or not session_id.strip():
        return str(uuid.UUID(int=trace_id))
    return quote(session_id, safe="-._~")


def nested_uuid(trace_id: int, span_id: int) -> str:
    return str(uuid.uuid5(NESTED, f"{trace_id:032x}/{span_id:016x}"))


def analyses_of(g: Graph, q: str) -> list[str]:
    """The Analyses of the agent Question ``q``, checked to be numbered 1..n without a gap."""
    numbers = sorted(int(s[len(q) + 2:]) for s in g.typed(TG + "Analysis")
                     if s.startswith(q + "/i") and s[len(q) + 2:].isdigit())
    assert numbers == list(range(1, len(numbers) + 1)), f"{q}: steps numbered {numbers}"
    return [f"{q}/i{n}" for n in numbers]


def check_agent_chain(g: Graph, q: str, profile: str) -> list[str]:
    """Every Analysis derives from the previous one, the first from the Question; the Conclusion (if
    any) from the last.  Strict: each step generated by its own activity, which used the previous
    step, started before it ended, and ended when the step was generated.  Returns the steps."""
    steps = analyses_of(g, q)
    for prev, step in zip([q, *steps], steps, strict=False):
        assert g.objects(step, PROV + "wasDerivedFrom") == [prev], step
        assert g.types(step) == {PROV + "Entity", TG + "Analysis"}
        if profile == "strict":
            check_activity(g, step, used=prev)
    final = q + "/final"
    if final in g.out:
        assert g.types(final) == {PROV + "Entity", TG + "Conclusion"}
        assert g.objects(final, PROV + "wasDerivedFrom") == [steps[-1] if steps else q]
        if profile == "strict":
            assert g.objects(final, PROV + "wasGeneratedBy") == [q + "/session"]
    return steps


def check_activity(g: Graph, entity: str, used: str) -> None:
    activity = entity + "/activity"
    assert g.objects(entity, PROV + "wasGeneratedBy") == [activity]
    assert g.objects(activity, PROV + "used") == [used]
    assert g.types(activity) == {PROV + "Activity"}
    start = ns_of(g.literal(activity, PROV + "startedAtTime"))
    end = ns_of(g.literal(activity, PROV + "endedAtTime"))
    assert start <= end
    assert ns_of(g.literal(entity, PROV + "generatedAtTime")) == end


STRUCTURED = ("seed", "strict")
"""The profiles whose chain these checks describe; the trustgraph profile rewrites the seed's (a
Grounding, Observation entities, documents) and has its own tests (test_trustgraph_profile.py)."""


def check_question(g: Graph, q: str, kind: str, profile: str) -> None:
    kind_of_node = PROV + ("Entity" if profile == "strict" else "Activity")
    assert g.types(q) == {kind_of_node, TG + "Question", TG + kind}
    assert len(g.objects(q, TG + "query")) == 1
    ns_of(g.literal(q, PROV + ("generatedAtTime" if profile == "strict" else "startedAtTime")))


def check_every_session(g: Graph, profile: str) -> None:
    """The chain of every Question in the graph, of any flow."""
    for q in g.typed(TG + "Question"):
        if q.startswith("urn:trustgraph:agent:"):
            check_question(g, q, "AgentQuestion", profile)
            check_agent_chain(g, q, profile)
        elif q.startswith("urn:trustgraph:docrag:"):
            check_question(g, q, "DocRagQuestion", profile)
            exploration = q + "/exploration"
            if exploration in g.out:
                link = "wasDerivedFrom" if profile == "strict" else "wasGeneratedBy"
                assert g.objects(exploration, PROV + link) == [q]
            if q + "/synthesis" in g.out:
                assert g.objects(q + "/synthesis", PROV + "wasDerivedFrom") == [exploration]
        else:
            assert q.startswith("urn:trustgraph:question:"), q
            check_question(g, q, "GraphRagQuestion", profile)


# -- our helpers: every field of the plan, back exactly -------------------------------------------------


def _span(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


def _root(spans: Sequence[ReadableSpan], agent: str) -> ReadableSpan:
    return next(s for s in spans if s.name == f"invoke_agent {agent}" and s.parent is None)


def check_ids(g: Graph, node: str, span: ReadableSpan) -> None:
    assert span.context is not None
    assert g.objects(node, OTELPROV + "traceId") == [f"{span.context.trace_id:032x}"]
    assert g.objects(node, OTELPROV + "spanId") == [f"{span.context.span_id:016x}"]


def check_agent_plan(g: Graph, plan: AgentPlan, spans: Sequence[ReadableSpan], profile: str) -> None:
    root = _root(spans, "react-agent")
    assert root.context is not None
    q = "urn:trustgraph:agent:" + session_uuid(plan.session_id, root.context.trace_id)
    check_question(g, q, "AgentQuestion", profile)
    assert g.objects(q, TG + "query") == [plan.question]
    assert g.objects(q, OTELPROV + "collection") == [plan.collection]
    time = "generatedAtTime" if profile == "strict" else "startedAtTime"
    assert ns_of(g.literal(q, PROV + time)) == root.start_time
    check_ids(g, q, root)
    steps = check_agent_chain(g, q, profile)
    run = plan.run_steps()
    assert len(steps) == len(run)
    failed = plan.fail_at is not None
    error = [f"PlannedFailure: step {plan.fail_at + 1} failed"] if plan.fail_at is not None else []
    session = q + "/session" if profile == "strict" else q
    assert g.objects(session, OTELPROV + "statusMessage") == error
    if profile == "strict":
        assert ns_of(g.literal(session, PROV + "startedAtTime")) == root.start_time
        assert ns_of(g.literal(session, PROV + "endedAtTime")) == root.end_time
        assert g.objects(session, PROV + "used") == [q]
        assert g.objects(session, PROV + "wasAssociatedWith") == ["urn:otel-prov:agent:react-agent"]
    for k, (node, sp) in enumerate(zip(steps, run, strict=True)):
        span = _span(spans, f"iteration {k + 1}")
        check_ids(g, node, span)
        stopped = k == plan.fail_at
        assert g.objects(node, TG + "thought") == ([] if sp.thought is None else [sp.thought])
        assert g.objects(node, TG + "action") == ([] if stopped else [sp.tool])
        arguments = [] if stopped or sp.args is None else [json.dumps(sp.args, ensure_ascii=False)]
        assert g.objects(node, TG + "arguments") == arguments
        assert g.objects(node, TG + "observation") == ([] if stopped else [sp.result])
        assert g.objects(node, OTELPROV + "statusMessage") == (error if stopped else [])
        if profile == "strict":
            activity = node + "/activity"
            assert ns_of(g.literal(activity, PROV + "startedAtTime")) == span.start_time
            assert ns_of(g.literal(activity, PROV + "endedAtTime")) == span.end_time
            assert g.objects(activity, OTELPROV + "statusMessage") == (error if stopped else [])
        if not stopped:
            check_sub_trace(g, node, sp.inner, spans, profile)
    final = q + "/final"
    if plan.answer is not None and not failed:
        assert g.objects(final, TG + "answer") == [plan.answer]
        check_ids(g, final, root)
        if profile == "strict":
            assert ns_of(g.literal(final, PROV + "generatedAtTime")) == root.end_time
    else:
        assert final not in g.out


def check_sub_trace(g: Graph, step: str, inner: GenAIAgent | DocRagPlan | None,
                    spans: Sequence[ReadableSpan], profile: str) -> None:
    """The query a step ran is a sub-trace: its Question derives from the step (strict: generated
    by the step's activity)."""
    link, parent = ("wasGeneratedBy", step + "/activity") if profile == "strict" else ("wasDerivedFrom", step)
    subs = [s for s in g.typed(TG + "Question") if g.objects(s, PROV + link) == [parent]]
    if inner is None:
        assert subs == []
        return
    assert len(subs) == 1, subs
    sub = subs[0]
    if isinstance(inner, DocRagPlan):
        assert sub.startswith("urn:trustgraph:docrag:")
        assert g.objects(sub, TG + "query") == [inner.question]
        # A nested query without an id (or with a blank one) mints its own: never the agent's.
        assert sub[len("urn:trustgraph:docrag:"):] != step.split(":")[-1].split("/")[0]
        check_doc_rag_body(g, sub, inner)
    else:
        agent = next(s for s in spans if s.name in (f"invoke_agent {inner.name}", f"{inner.name}.run")
                     and s.parent is not None and s.context is not None
                     and g.objects(sub, OTELPROV + "spanId") == [f"{s.context.span_id:016x}"])
        assert agent.context is not None
        assert sub == "urn:trustgraph:agent:" + nested_uuid(agent.context.trace_id, agent.context.span_id)
        assert len(analyses_of(g, sub)) == len(inner.tools())


def check_doc_rag_body(g: Graph, q: str, plan: DocRagPlan) -> None:
    exploration = q + "/exploration"
    assert g.objects(exploration, TG + "chunkCount") == [str(len(plan.chunks))]
    assert g.objects(exploration, TG + "selectedChunk") == sorted(set(plan.chunks))
    content = g.objects(q + "/synthesis", TG + "content")
    assert content == ([] if plan.answer is None else [plan.answer])


def check_rag_plan(g: Graph, plan: GraphRagPlan | DocRagPlan, spans: Sequence[ReadableSpan],
                   profile: str) -> None:
    doc = isinstance(plan, DocRagPlan)
    root = _root(spans, "doc-rag" if doc else "graph-rag")
    assert root.context is not None
    uid = session_uuid(plan.session_id, root.context.trace_id)
    q = ("urn:trustgraph:docrag:" if doc else "urn:trustgraph:question:") + uid
    assert g.objects(q, TG + "query") == [plan.question]
    check_ids(g, q, root)
    if isinstance(plan, DocRagPlan):
        check_doc_rag_body(g, q, plan)
        return
    exploration, focus = f"urn:trustgraph:prov:exploration:{uid}", f"urn:trustgraph:prov:focus:{uid}"
    assert g.objects(exploration, TG + "edgeCount") == [str(len(plan.edges))]
    selections = [f"urn:trustgraph:prov:edge:{uid}:{i}" for i in range(len(plan.selected))]
    assert g.objects(focus, TG + "selectedEdge") == sorted(selections)
    for selection, (index, reasoning) in zip(selections, plan.selected, strict=True):
        assert g.objects(selection, TG + "reasoning") == ([] if reasoning is None else [reasoning])
        statement = g.one(selection, TG + "edge")
        assert statement == selection + "/triple"
        for pred, text in zip(("subject", "predicate", "object"), plan.edges[index], strict=True):
            (term,) = g.out[statement]["http://www.w3.org/1999/02/22-rdf-syntax-ns#" + pred]
            if isinstance(term, pyoxigraph.Literal):
                assert term.value == text  # not an IRI: the text, exactly
            else:
                assert text.startswith(("http://", "https://", "urn:")), text
    content = g.objects(f"urn:trustgraph:prov:synthesis:{uid}", TG + "content")
    assert content == ([] if plan.answer is None else [plan.answer])


@SETTINGS
@given(plan=helper_plans, profile=st.sampled_from(STRUCTURED))
def test_helper_sessions_keep_their_chain_numbering_fields_and_status(
        plan: AgentPlan | GraphRagPlan | DocRagPlan, profile: str) -> None:
    spans = run_plan(plan)
    g = mapped([from_sdk(s) for s in spans], profile)
    check_every_session(g, profile)
    if isinstance(plan, AgentPlan):
        check_agent_plan(g, plan, spans, profile)
    else:
        check_rag_plan(g, plan, spans, profile)


# -- framework traces: made up (with parallel tool calls) and real -----------------------------------------


@SETTINGS
@given(plan=genai_plans(), profile=st.sampled_from(STRUCTURED))
def test_framework_traces_keep_their_chain_and_numbering(plan: GenAIPlan, profile: str) -> None:
    """Every agent of a framework trace (parallel tool calls starting at the same nanosecond
    included) is a Question with its steps numbered 1..n and chained, one step per tool call."""
    spans = run_plan(plan)
    g = mapped([from_sdk(s) for s in spans], profile)
    check_every_session(g, profile)
    agents = [q for q in g.typed(TG + "Question") if q.startswith("urn:trustgraph:agent:")]
    assert len(agents) == len(plan.all_agents())
    steps = [s for q in agents for s in analyses_of(g, q)]
    assert sorted(g.one(s, TG + "action") for s in steps) == sorted(t.name for t in plan.all_tools())


def _tie_siblings(records: list[SpanRecord], parents: set[int]) -> list[SpanRecord]:
    """The children of each of ``parents`` all start when the first of them starts (parallel); 0
    stands for the roots."""
    first: dict[int, int] = {}
    for r in records:
        if r.parent_id in parents:
            first[r.parent_id] = min(first.get(r.parent_id, r.start_ns), r.start_ns)
    return [dataclasses.replace(r, start_ns=first[r.parent_id]) if r.parent_id in first else r
            for r in records]


@settings(max_examples=25 if MUTATION else 100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_real_instrumentation_traces_keep_their_chain_under_ties_and_shifts(
        interop: Captured, data: st.DataObject) -> None:
    """A real instrumentation's trace (tests/interop), its times shifted by any amount: the same graph
    but for its times, each shifted by exactly that amount (nothing else depends on the clock).  Its
    spans' siblings tied to one start time (parallel calls): every session keeps its chain, numbering
    and step count."""
    name = data.draw(st.sampled_from(sorted(SCENARIOS)), label="scenario")
    profile = data.draw(st.sampled_from(STRUCTURED), label="profile")
    records = interop.spans(name)
    shift = data.draw(st.integers(-10**18, 10**18).filter(lambda d: min(r.start_ns for r in records) + d > 0),
                      label="shift (ns)")
    before = mapped(records, profile)
    check_every_session(before, profile)
    after = mapped([dataclasses.replace(r, start_ns=r.start_ns + shift, end_ns=r.end_ns + shift)
                    for r in records], profile)
    assert set(after.out) == set(before.out)
    for s, by_pred in before.out.items():
        assert set(after.out[s]) == set(by_pred), s
        for p, values in by_pred.items():
            if all(isinstance(v, pyoxigraph.Literal) and v.datatype.value == XSD_DATETIME for v in values):
                assert sorted(ns_of(v) + shift for v in values) == sorted(ns_of(v) for v in after.out[s][p])
            else:
                assert sorted(map(str, values)) == sorted(map(str, after.out[s][p])), (s, p)
    # 0: the roots (the calls of a bare model-call loop are one trace each, tied into a conversation)
    parents = data.draw(st.sets(st.sampled_from(sorted({r.parent_id for r in records}))),
                        label="parents whose children are tied (0: the roots)")
    tied = mapped(_tie_siblings(records, parents), profile)
    check_every_session(tied, profile)
    # Which of two sessions that start together is the trace's first (its IRI the trace id) may
    # change; how many sessions there are, and how many steps each has, may not.
    def shape(g: Graph) -> list[tuple[str, int]]:
        return sorted((q.split(":")[2], len(analyses_of(g, q)) if ":agent:" in q else 0)
                      for q in g.typed(TG + "Question"))

    assert shape(tied) == shape(before)


def test_the_checks_fail_on_a_broken_chain() -> None:
    """The chain checker is not vacuous: a graph whose second step derives from the Question fails."""
    q = "urn:trustgraph:agent:x"
    text = "\n".join([
        f"<{q}> <{RDF_TYPE}> <{PROV}Activity> <urn:graph:retrieval> .",
        f"<{q}/i1> <{RDF_TYPE}> <{PROV}Entity> <urn:graph:retrieval> .",
        f"<{q}/i1> <{RDF_TYPE}> <{TG}Analysis> <urn:graph:retrieval> .",
        f"<{q}/i1> <{PROV}wasDerivedFrom> <{q}> <urn:graph:retrieval> .",
        f"<{q}/i2> <{RDF_TYPE}> <{PROV}Entity> <urn:graph:retrieval> .",
        f"<{q}/i2> <{RDF_TYPE}> <{TG}Analysis> <urn:graph:retrieval> .",
        f"<{q}/i2> <{PROV}wasDerivedFrom> <{q}> <urn:graph:retrieval> .",
    ])
    g = Graph(pyoxigraph.parse(text.encode(), format=pyoxigraph.RdfFormat.N_QUADS))
    with pytest.raises(AssertionError):
        check_agent_chain(g, q, "seed")
    gap = Graph(q_ for q_ in pyoxigraph.parse(text.replace("/i2>", "/i3>").encode(),
                                              format=pyoxigraph.RdfFormat.N_QUADS))
    with pytest.raises(AssertionError, match="numbered"):
        analyses_of(gap, q)
