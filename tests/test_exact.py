"""Literal-exact golden graphs: every flow of our helpers, in both profiles, against graphs written by
hand (tests/data/golden/*.trig).

The spans are real SDK spans made by the helper API, on a provider whose ids and clock the test
scripts (tests/scripted.py): every trace id, span id and nanosecond time is written below by hand, and
the expected graphs are written from docs/model.md with those values -- IRIs by the spec's rule,
times as the canonical ``xsd:dateTime`` text to the nanosecond.  Nothing expected is computed by the
code under test.

The comparison is of RDF terms as text (pyoxigraph terms: an IRI, a literal's lexical form, its
datatype), not rdflib isomorphism, which reads ``xsd:dateTime`` into Python datetimes and so cuts
times to microseconds.  Each graph is checked three ways: the pure mapping's quads, what a real
``ProvSpanExporter`` stored in a store on disk (read back by a second process-level open, as
N-Quads), and what ``otel-prov serve`` stored from the same spans sent as OTLP over real gRPC.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import ProvSpanExporter, agent_session, doc_rag_session, graph_rag_session
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import from_sdk
from otel_prov.model.quads import nquads
from otel_prov.stores import open_for_reading, parse_store
from tests.procs import start_serve
from tests.scripted import scripted_provider
from tests.stores import read_back

GOLDEN = Path(__file__).parent / "data" / "golden"
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
