"""Golden graphs of every flow of our helpers, from real SDK spans made by the helper API.

1. Literal-exact (``tests/data/golden/*.trig``, both profiles): the spans come from a provider whose
   ids and clock the test scripts (tests/support/scripted.py): every trace id, span id and nanosecond
   time is written below by hand, and the expected graphs are written from docs/model.md with those
   values -- IRIs by the spec's rule, times as the canonical ``xsd:dateTime`` text to the nanosecond.
   Nothing expected is computed by the code under test.  The comparison is of RDF terms as text
   (pyoxigraph terms), not rdflib isomorphism, which reads ``xsd:dateTime`` into Python datetimes and
   so cuts times to microseconds.  Each graph is checked three ways: the pure mapping's quads, what a
   real ``ProvSpanExporter`` stored in a store on disk (read back as N-Quads), and what ``otel-prov
   serve`` stored from the same spans sent as OTLP over real gRPC.
2. Every triple of the seed model, per flow, with the ids and times the SDK chose: the expected
   graphs are written out as TriG with those filled in (times formatted here, not by the code under
   test) and compared by rdflib isomorphism (to the microsecond).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph
import pytest
import rdflib
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import ProvSpanExporter, agent_session, doc_rag_session, graph_rag_session, spans_to_dataset
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import from_sdk
from otel_prov.model.quads import nquads
from otel_prov.stores import open_for_reading, parse_store
from tests.support.graphs import assert_isomorphic
from tests.support.procs import start_serve
from tests.support.scripted import scripted_provider
from tests.support.stores import read_back

# == 1. literal-exact, three ways ======================================================================

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
S = 1_000_000_000
"""Nanoseconds in a second."""
T0 = 1_700_000_000 * S
"""2023-11-14T22:13:20Z."""


# -- the scenarios: what the helpers are asked to do, and the ids and clock readings the SDK gets ---------


@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[TracerProvider], list[ReadableSpan] | None]
    """Drives the helper API; returns the spans to map when they are not all the finished ones
    (an unfinished session's snapshot)."""
    times: Sequence[int]
    trace_ids: Sequence[int]
    span_ids: Sequence[int]


def _agent_with_sub_trace(provider: TracerProvider) -> None:
    def knowledge_query(question: str) -> str:
        with graph_rag_session(question, session_id="kg:1", tracer_provider=provider) as rag:
            edge = ("http://example.org/Paris", "http://example.org/capitalOf", "http://example.org/France")
            rag.exploration([edge])
            rag.focus([(edge, "states the capital")])
            rag.synthesis("Paris")
        return "Paris"

    with agent_session("What is the capital of France?", tracer_provider=provider) as session:
        with session.iteration() as step:
            step.thought("I should ask the knowledge graph")
            step.call_tool("knowledge-query", knowledge_query, {"question": "capital of France"})
        with session.iteration() as step:
            step.thought("I know the answer")
            step.action("final-answer", {"answer": "Paris"})
        session.conclude("Paris")


AGENT = Scenario(
    "agent", _agent_with_sub_trace,
    times=[
        T0 + 1,                   # the agent's session span starts (its question marker too)
        T0 + 10,                  # the question marker ends
        T0 + 100,                 # iteration 1 starts
        T0 + 1_000,               # execute_tool starts
        T0 + 123_456,             # the GraphRAG session starts
        T0 + 100_000_000,         # its question marker ends
        T0 + 250_000_000,         # exploration starts
        T0 + 999_999_999,         # exploration ends
        T0 + 1 * S,               # focus starts
        T0 + 1 * S + 7,           # focus ends
        T0 + 2 * S + 500_000_500,  # synthesis starts
        T0 + 59 * S + 999_999_999,  # synthesis ends
        T0 + 60 * S + 1,          # the GraphRAG session ends
        T0 + 60 * S + 2,          # execute_tool ends
        T0 + 60 * S + 3,          # iteration 1 ends
        T0 + 3600 * S + 123,      # iteration 2 starts
        T0 + 6399 * S + 999_999_999,  # iteration 2 ends
        T0 + 6400 * S + 1,        # the session ends (the next day)
    ],
    trace_ids=[0x4BF92F3577B34DA6A3CE929D0E0E4736],
    span_ids=[0xA01, 0xA02, 0xA03, 0xA04, 0xA05, 0xA06, 0xA07, 0xA08, 0xA09, 0xA0A],
)


def _graph_rag(provider: TracerProvider) -> None:
    e0 = ("http://example.org/Paris", "http://example.org/capitalOf", "http://example.org/France")
    e1 = ("urn:x:Paris", "http://www.w3.org/2000/01/rdf-schema#label", 'Paris "City of Light"\n')
    e2 = ("http://example.org/a b", "http://example.org/p", "not an iri")
    with graph_rag_session("Which city is the capital of France?", session_id="g 1/é", collection="kg",
                           tracer_provider=provider) as session:
        session.exploration([e0, e1, e2])
        session.focus([(e0, "states the capital"), {"edge": e1, "reasoning": ""}, (e2, None)])
        session.synthesis("Paris.")


GRAPH_RAG = Scenario(
    "graphrag", _graph_rag,
    times=[
        T0 + 5 * S,                # the session starts
        T0 + 5 * S + 1,            # the question marker ends
        T0 + 5 * S + 500_000_000,  # exploration starts
        T0 + 5 * S + 500_000_001,  # exploration ends
        T0 + 6 * S + 100,          # focus starts
        T0 + 6 * S + 999_999_990,  # focus ends
        T0 + 7 * S,                # synthesis starts
        T0 + 7 * S + 42,           # synthesis ends
        T0 + 8 * S + 100_000_000,  # the session ends
    ],
    trace_ids=[0xC0FFEE],
    span_ids=[0xB01, 0xB02, 0xB03, 0xB04, 0xB05],
)


def _doc_rag(provider: TracerProvider) -> None:
    with doc_rag_session("What is PROV-O?", tracer_provider=provider) as session:
        session.exploration(["doc-1#p3", "doc-2#p1"])
        session.synthesis('PROV-O is a W3C ontology.\nIt says "OWL2" \\o/ \u263a')


DOC_RAG = Scenario(
    "docrag", _doc_rag,
    times=[
        T0 - 1,       # the session starts (the second before T0)
        T0,           # the question marker ends
        T0 + 2,       # exploration starts
        T0 + 20,      # exploration ends
        T0 + 200,     # synthesis starts
        T0 + 2_000,   # synthesis ends
        T0 + 20_000,  # the session ends
    ],
    trace_ids=[0x0AF7651916CD43DD8448EB211C80319C],
    span_ids=[0xC01, 0xC02, 0xC03, 0xC04],
)


def _failed(provider: TracerProvider) -> None:
    with pytest.raises(ZeroDivisionError):
        with agent_session("Divide 1 by 0", session_id="fail-1", tracer_provider=provider) as session:
            with session.iteration() as step:
                step.thought("dividing")
                step.action("calc", {"expr": "1/0"})
                step.observation(str(1 / 0))


FAILED = Scenario(
    "failed", _failed,
    times=[
        T0 + 10 * S,      # the session starts
        T0 + 10 * S + 1,  # the question marker ends
        T0 + 10 * S + 2,  # iteration 1 starts
        T0 + 10 * S + 3,  # iteration 1 records the exception (an event)
        T0 + 10 * S + 4,  # iteration 1 ends
        T0 + 10 * S + 5,  # the session records the exception
        T0 + 10 * S + 6,  # the session ends
    ],
    trace_ids=[0x5B8EFFF798038103D269B633813FC60C],
    span_ids=[0xD01, 0xD02, 0xD03],
)


def _unfinished(provider: TracerProvider) -> list[ReadableSpan]:
    memory = _memory(provider)
    with agent_session("Still thinking?", collection="docs", tracer_provider=provider) as session:
        with session.iteration() as step:
            step.thought("first")
            step.action("search", "plain text arg")
            step.observation("found: 3 items")
        with session.iteration() as step:
            step.thought("second")
            snapshot = list(memory.get_finished_spans())
    return snapshot


UNFINISHED = Scenario(
    "unfinished", _unfinished,
    times=[
        T0 + 20 * S,      # the session starts
        T0 + 20 * S + 1,  # the question marker ends
        T0 + 20 * S + 2,  # iteration 1 starts
        T0 + 20 * S + 3,  # iteration 1 ends
        T0 + 20 * S + 4,  # iteration 2 starts: the snapshot is taken while it runs
        T0 + 20 * S + 5,  # iteration 2 ends
        T0 + 20 * S + 6,  # the session ends
    ],
    trace_ids=[0x00000000000000010000000000000001],
    span_ids=[0xE01, 0xE02, 0xE03, 0xE04],
)

SCENARIOS = {s.name: s for s in [AGENT, GRAPH_RAG, DOC_RAG, FAILED, UNFINISHED]}
PROFILES = ("seed", "strict")


# -- comparison of terms as text -------------------------------------------------------------------------


def expected_quads(name: str, profile: str) -> set[pyoxigraph.Quad]:
    path = GOLDEN / f"{name}.{profile}.trig"
    return set(pyoxigraph.parse(path.read_bytes(), format=pyoxigraph.RdfFormat.TRIG))


def parsed(data: bytes) -> set[pyoxigraph.Quad]:
    return set(pyoxigraph.parse(data, format=pyoxigraph.RdfFormat.N_QUADS))


def assert_same_quads(expected: set[pyoxigraph.Quad], actual: set[pyoxigraph.Quad], where: str) -> None:
    if expected == actual:
        return
    missing = sorted(str(q) for q in expected - actual)
    extra = sorted(str(q) for q in actual - expected)
    lines = [f"{where}: graphs differ ({len(missing)} missing, {len(extra)} extra)"]
    lines += [f"  missing: {q}" for q in missing[:60]]
    lines += [f"  extra:   {q}" for q in extra[:60]]
    raise AssertionError("\n".join(lines))


def spans_of(scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> list[ReadableSpan]:
    with scripted_provider(monkeypatch, times=scenario.times, trace_ids=scenario.trace_ids,
                           span_ids=scenario.span_ids) as (provider, memory):
        chosen = scenario.run(provider)
        finished = list(memory.get_finished_spans())
    return finished if chosen is None else chosen


def mapped(spans: Iterable[ReadableSpan], profile: str) -> set[pyoxigraph.Quad]:
    update = TraceMapper(profile).map([from_sdk(s) for s in spans])
    assert not update.problems and not update.failed, (update.problems, update.failed)
    return parsed(nquads(update.add))


def stored(spans: Sequence[ReadableSpan], profile: str, directory: Path,
           monkeypatch: pytest.MonkeyPatch) -> set[pyoxigraph.Quad]:
    """What a real exporter stored on disk, read back as N-Quads.  The profile is given the two
    documented ways: strict by ``OTEL_PROV_PROFILE`` alone, seed by the argument over a variable
    that says strict (an argument beats the environment)."""
    monkeypatch.setenv("OTEL_PROV_PROFILE", "strict")
    exporter = ProvSpanExporter(store=str(directory), profile=None if profile == "strict" else profile)
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    reading = open_for_reading(parse_store(str(directory)))
    try:
        return parsed(reading.dump("nquads"))
    finally:
        reading.close()


@pytest.fixture(params=PROFILES)
def profile(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_mapping_gives_the_hand_written_graph(name: str, profile: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    spans = spans_of(SCENARIOS[name], monkeypatch)
    assert_same_quads(expected_quads(name, profile), mapped(spans, profile), f"{name} ({profile}), mapped")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_store_gives_back_the_hand_written_graph(name: str, profile: str, monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    spans = spans_of(SCENARIOS[name], monkeypatch)
    assert_same_quads(expected_quads(name, profile), stored(spans, profile, tmp_path / "store", monkeypatch),
                      f"{name} ({profile}), stored on disk and read back")


def _memory(provider: TracerProvider) -> InMemorySpanExporter:
    """The in-memory exporter of a provider made by ``scripted_provider``."""
    processors = provider._active_span_processor._span_processors  # noqa: SLF001 - test plumbing
    return next(p.span_exporter for p in processors if isinstance(p.span_exporter, InMemorySpanExporter))


def test_serve_stores_the_hand_written_graphs(profile: str, monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    """A real ``otel-prov serve`` (its own process) given every scenario's spans as OTLP over real
    gRPC, one request per scenario, then stopped with SIGTERM: its store holds exactly the union of the
    hand-written graphs (the OTLP encoding keeps nanoseconds and ids).  The profile is given as for
    the exporter: strict by ``OTEL_PROV_PROFILE``, seed by ``--profile`` over that variable."""
    batches = [spans_of(SCENARIOS[name], monkeypatch) for name in sorted(SCENARIOS)]
    flag = ["--profile", profile] if profile != "strict" else []
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log", *flag,
                        env={"OTEL_PROV_PROFILE": "strict"})
    try:
        exporter = GrpcExporter(endpoint=serve.grpc, insecure=True, timeout=20)
        try:
            for batch in batches:
                assert exporter.export(batch) is SpanExportResult.SUCCESS, serve.tail()
        finally:
            exporter.shutdown()
    finally:
        assert serve.terminate(timeout=30) == 0, serve.tail()
    expected = set().union(*(expected_quads(name, profile) for name in SCENARIOS))
    with read_back(serve.store) as store:
        actual = set(store.quads_for_pattern(None, None, None, None))
    assert_same_quads(expected, actual, f"otel-prov serve --profile {profile}")


# == 2. every triple per flow, isomorphic ==============================================================

PREFIXES = """
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix tg: <https://trustgraph.ai/ns/> .
@prefix otelprov: <https://w3id.org/otel-prov/ns#> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
"""


def isoformat_ns(ns: int) -> str:
    """docs/model.md's form of a time: UTC, nanoseconds, trailing zeros dropped (written here, apart
    from the code under test)."""
    seconds, frac = divmod(ns, 10**9)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return text + (f".{frac:09d}".rstrip("0") if frac else "") + "Z"


def _by_name(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    matches = [s for s in spans if s.name == name]
    assert len(matches) == 1, f"expected one span {name!r}, got {[s.name for s in spans]}"
    return matches[0]


def _ids(span: ReadableSpan) -> str:
    return (f'otelprov:traceId "{span.context.trace_id:032x}" ; '
            f'otelprov:spanId "{span.context.span_id:016x}"')


def _times(span: ReadableSpan) -> str:
    """The times every node records of the span it was written from (docs/model.md)."""
    return (f'otelprov:startTime "{isoformat_ns(span.start_time)}"^^xsd:dateTime ; '
            f'otelprov:endTime "{isoformat_ns(span.end_time)}"^^xsd:dateTime')


def _trig(body: str) -> rdflib.Dataset:
    ds = rdflib.Dataset()
    ds.parse(data=PREFIXES + "<urn:graph:retrieval> {\n" + body + "\n}", format="trig")
    return ds


def test_agent_session_seed_graph(captured) -> None:
    provider, memory = captured
    with agent_session("What is the capital of France?", tracer_provider=provider) as session:
        with session.iteration() as step:
            step.thought("I need to query the knowledge base")
            step.call_tool("knowledge-query", lambda question: "Paris is the capital of France.",
                           {"question": "capital of France"})
        with session.iteration() as step:
            step.thought("I know the answer")
            step.action("final-answer", {"answer": "Paris"})
            step.observation("done")
        session.conclude("Paris")
    spans = memory.get_finished_spans()
    root = _by_name(spans, "invoke_agent react-agent")
    i1, i2 = _by_name(spans, "iteration 1"), _by_name(spans, "iteration 2")
    uuid = session.session_id
    assert uuid == str(__import__("uuid").UUID(int=root.context.trace_id))
    q = f"<urn:trustgraph:agent:{uuid}>"
    assert session.explain_id == q[1:-1]
    expected = _trig(f"""
    {q} a prov:Activity, tg:Question, tg:AgentQuestion ;
        tg:query "What is the capital of France?" ;
        prov:startedAtTime "{isoformat_ns(root.start_time)}"^^xsd:dateTime ;
        otelprov:collection "default" ; {_ids(root)} ; {_times(root)} .
    <urn:trustgraph:agent:{uuid}/i1> a prov:Entity, tg:Analysis ;
        tg:thought "I need to query the knowledge base" ;
        tg:action "knowledge-query" ;
        tg:arguments {json.dumps(json.dumps({"question": "capital of France"}))} ;
        tg:observation "Paris is the capital of France." ;
        prov:wasDerivedFrom {q} ; {_ids(i1)} ; {_times(i1)} .
    <urn:trustgraph:agent:{uuid}/i2> a prov:Entity, tg:Analysis ;
        tg:thought "I know the answer" ;
        tg:action "final-answer" ;
        tg:arguments {json.dumps(json.dumps({"answer": "Paris"}))} ;
        tg:observation "done" ;
        prov:wasDerivedFrom <urn:trustgraph:agent:{uuid}/i1> ; {_ids(i2)} ; {_times(i2)} .
    <urn:trustgraph:agent:{uuid}/final> a prov:Entity, tg:Conclusion ;
        tg:answer "Paris" ;
        prov:wasDerivedFrom <urn:trustgraph:agent:{uuid}/i2> ; {_ids(root)} .
    """)
    assert_isomorphic(expected, spans_to_dataset(spans))


def test_agent_without_iterations_concludes_from_question(captured) -> None:
    provider, memory = captured
    with agent_session("2+2?", session_id="s-1", collection="maths",
                       tracer_provider=provider) as session:
        session.conclude("4")
    spans = memory.get_finished_spans()
    root = _by_name(spans, "invoke_agent react-agent")
    expected = _trig(f"""
    <urn:trustgraph:agent:s-1> a prov:Activity, tg:Question, tg:AgentQuestion ;
        tg:query "2+2?" ;
        prov:startedAtTime "{isoformat_ns(root.start_time)}"^^xsd:dateTime ;
        otelprov:collection "maths" ; {_ids(root)} ; {_times(root)} .
    <urn:trustgraph:agent:s-1/final> a prov:Entity, tg:Conclusion ;
        tg:answer "4" ; prov:wasDerivedFrom <urn:trustgraph:agent:s-1> ; {_ids(root)} .
    """)
    assert_isomorphic(expected, spans_to_dataset(spans))


def test_graph_rag_seed_graph(captured) -> None:
    provider, memory = captured
    edges = [("http://ex.org/Paris", "http://ex.org/capitalOf", "http://ex.org/France"),
             ("http://ex.org/Paris", "http://www.w3.org/2000/01/rdf-schema#label", "Paris")]
    with graph_rag_session("Capital of France?", session_id="g-1", tracer_provider=provider) as s:
        assert s.exploration(edges) == "urn:trustgraph:prov:exploration:g-1"
        s.focus([(edges[0], "states the capital"), {"edge": edges[1], "reasoning": "names it"}])
        s.synthesis("Paris")
    spans = memory.get_finished_spans()
    root = _by_name(spans, "invoke_agent graph-rag")
    exp, foc, syn = (_by_name(spans, "retrieval default"), _by_name(spans, "focus"),
                     _by_name(spans, "synthesis"))
    expected = _trig(f"""
    <urn:trustgraph:question:g-1> a prov:Activity, tg:Question, tg:GraphRagQuestion ;
        tg:query "Capital of France?" ;
        prov:startedAtTime "{isoformat_ns(root.start_time)}"^^xsd:dateTime ;
        otelprov:collection "default" ; {_ids(root)} ; {_times(root)} .
    <urn:trustgraph:prov:exploration:g-1> a prov:Entity, tg:Exploration ;
        tg:edgeCount 2 ;
        prov:wasGeneratedBy <urn:trustgraph:question:g-1> ; {_ids(exp)} ; {_times(exp)} .
    <urn:trustgraph:prov:focus:g-1> a prov:Entity, tg:Focus ;
        prov:wasDerivedFrom <urn:trustgraph:prov:exploration:g-1> ;
        tg:selectedEdge <urn:trustgraph:prov:edge:g-1:0>, <urn:trustgraph:prov:edge:g-1:1> ;
        {_ids(foc)} ; {_times(foc)} .
    <urn:trustgraph:prov:edge:g-1:0> a tg:EdgeSelection ;
        tg:edge <urn:trustgraph:prov:edge:g-1:0/triple> ; tg:reasoning "states the capital" .
    <urn:trustgraph:prov:edge:g-1:0/triple> a rdf:Statement ;
        rdf:subject <http://ex.org/Paris> ; rdf:predicate <http://ex.org/capitalOf> ;
        rdf:object <http://ex.org/France> .
    <urn:trustgraph:prov:edge:g-1:1> a tg:EdgeSelection ;
        tg:edge <urn:trustgraph:prov:edge:g-1:1/triple> ; tg:reasoning "names it" .
    <urn:trustgraph:prov:edge:g-1:1/triple> a rdf:Statement ;
        rdf:subject <http://ex.org/Paris> ;
        rdf:predicate <http://www.w3.org/2000/01/rdf-schema#label> ; rdf:object "Paris" .
    <urn:trustgraph:prov:synthesis:g-1> a prov:Entity, tg:Synthesis ;
        tg:content "Paris" ;
        prov:wasDerivedFrom <urn:trustgraph:prov:focus:g-1> ; {_ids(syn)} ; {_times(syn)} .
    """)
    assert_isomorphic(expected, spans_to_dataset(spans))


def test_doc_rag_seed_graph(captured) -> None:
    provider, memory = captured
    with doc_rag_session("What is PROV?", session_id="d-1", tracer_provider=provider) as s:
        s.exploration(["chunk-id-1", "chunk-id-2"])
        s.synthesis("A W3C provenance model.")
    spans = memory.get_finished_spans()
    root = _by_name(spans, "invoke_agent doc-rag")
    exp, syn = _by_name(spans, "retrieval default"), _by_name(spans, "synthesis")
    expected = _trig(f"""
    <urn:trustgraph:docrag:d-1> a prov:Activity, tg:Question, tg:DocRagQuestion ;
        tg:query "What is PROV?" ;
        prov:startedAtTime "{isoformat_ns(root.start_time)}"^^xsd:dateTime ;
        otelprov:collection "default" ; {_ids(root)} ; {_times(root)} .
    <urn:trustgraph:docrag:d-1/exploration> a prov:Entity, tg:Exploration ;
        tg:chunkCount 2 ; tg:selectedChunk "chunk-id-1", "chunk-id-2" ;
        prov:wasGeneratedBy <urn:trustgraph:docrag:d-1> ; {_ids(exp)} ; {_times(exp)} .
    <urn:trustgraph:docrag:d-1/synthesis> a prov:Entity, tg:Synthesis ;
        tg:content "A W3C provenance model." ;
        prov:wasDerivedFrom <urn:trustgraph:docrag:d-1/exploration> ; {_ids(syn)} ; {_times(syn)} .
    """)
    assert_isomorphic(expected, spans_to_dataset(spans))


def test_rag_inside_an_agent_tool_is_a_sub_trace(captured) -> None:
    provider, memory = captured

    def knowledge_query(question: str) -> str:
        with doc_rag_session(question, tracer_provider=provider) as rag:
            rag.exploration(["c1"])
            rag.synthesis("Paris")
        return "Paris"

    with agent_session("Capital?", session_id="a-1", tracer_provider=provider) as session:
        with session.iteration() as step:
            step.call_tool("knowledge-query", knowledge_query, {"question": "capital"})
        session.conclude("Paris")
    ds = spans_to_dataset(memory.get_finished_spans())
    quads = {(str(s), str(p), str(o)) for s, p, o, _ in ds.quads((None, None, None, None))}
    derived = {(s, o) for s, p, o in quads if p == "http://www.w3.org/ns/prov#wasDerivedFrom"}
    rag_questions = [s for s, p, o in quads if o == "https://trustgraph.ai/ns/DocRagQuestion"]
    assert len(rag_questions) == 1
    assert (str(rag_questions[0]), "urn:trustgraph:agent:a-1/i1") in derived
    # The sub-session minted its own id: it does not share the agent's trace id as its key.
    assert str(rag_questions[0]) != f"urn:trustgraph:docrag:{session.session_id}"


def test_blank_session_id_is_as_if_not_given(captured) -> None:
    provider, memory = captured
    with doc_rag_session("q", session_id="  ", tracer_provider=provider) as s:
        s.synthesis("a")
    root = _by_name(memory.get_finished_spans(), "invoke_agent doc-rag")
    expected_uuid = str(__import__("uuid").UUID(int=root.context.trace_id))
    assert s.explain_id == f"urn:trustgraph:docrag:{expected_uuid}"
    dataset = spans_to_dataset(memory.get_finished_spans())
    subjects = {str(q[0]) for q in dataset.quads((None, None, None, None))}
    assert s.explain_id in subjects


def test_malformed_edges_are_left_out_never_raised(captured) -> None:
    provider, memory = captured
    good = ("http://ex.org/a", "http://ex.org/p", "b")
    with graph_rag_session("q", session_id="g-bad", tracer_provider=provider) as s:
        s.exploration([good, ("only", "two"), None])
        s.focus([(good, "kept"), ("no reasoning pair",), {"edge": 5}, 7])
        s.synthesis("a")
    quads = {(str(q[0]), str(q[1]), str(q[2])) for q in
             spans_to_dataset(memory.get_finished_spans()).quads((None, None, None, None))}
    tg = "https://trustgraph.ai/ns/"
    assert ("urn:trustgraph:prov:exploration:g-bad", f"{tg}edgeCount", "1") in quads
    selected = {o for s, p, o in quads if p == f"{tg}selectedEdge"}
    assert selected == {"urn:trustgraph:prov:edge:g-bad:0"}
