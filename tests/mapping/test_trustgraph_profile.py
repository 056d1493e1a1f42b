"""The ``trustgraph`` profile read by TrustGraph's own reader: ``ExplainabilityClient`` of
trustgraph-base 2.11.1 (installed by `.ci/setup --test`), over the example flows' real SDK spans
exported with ``profile="trustgraph"`` into an embedded store and read back through the store's read
protocol, reaches the end of every flow, with the steps and answers our own reader shows of the same
store."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pyoxigraph as ox
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.trace import SpanKind

from otel_prov import ProvSpanExporter, erasure
from otel_prov.examples.rag import doc_rag, graph_rag
from otel_prov.examples.react_agent import run_agent
from otel_prov.mapping.trustgraph import to_trustgraph
from otel_prov.read.graph import prov_graph
from otel_prov.read.model import SessionFilter
from otel_prov.read.reader import TraceReader
from otel_prov.stores import open_for_reading, parse_store, sessions
from otel_prov.stores.base import IRI, LITERAL, TRIPLE
from tests.support.genai import S, make
from tests.support.procs import in_ci

GRAPH = "urn:graph:retrieval"


def _explainability() -> ModuleType:
    """TrustGraph's reader, ``trustgraph/api/explainability.py``, loaded from the installed package
    as it is: it needs only the standard library and its sibling ``types.py``, while the package
    ``trustgraph.api`` imports the whole service client (prometheus_client, pulsar, aiohttp...)."""
    spec = importlib.util.find_spec("trustgraph")
    if spec is None or not spec.submodule_search_locations:
        if in_ci():
            raise ImportError("trustgraph-base is not installed (bash .ci/setup --test installs it)")
        pytest.skip("trustgraph-base is not installed (bash .ci/setup --test installs it)")
    api = Path(next(iter(spec.submodule_search_locations))) / "api"
    package = ModuleType("_tg_api")
    package.__path__ = [str(api)]
    sys.modules.setdefault("_tg_api", package)
    loaded = []
    for name in ("types", "explainability"):
        full = f"_tg_api.{name}"
        if full not in sys.modules:
            module_spec = importlib.util.spec_from_file_location(full, api / f"{name}.py")
            assert module_spec is not None and module_spec.loader is not None
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[full] = module
            module_spec.loader.exec_module(module)
        loaded.append(sys.modules[full])
    return loaded[-1]


def _wire(term: Any) -> dict[str, Any]:
    """A pyoxigraph term as TrustGraph's wire format (``{"t": "i", "i": ...}``, ``"l"``, ``"t"``)."""
    if isinstance(term, ox.NamedNode):
        return {"t": "i", "i": term.value}
    if isinstance(term, ox.Literal):
        return {"t": "l", "v": term.value}
    if isinstance(term, ox.Triple):
        return {"t": "t", "tr": {"s": _wire(term.subject), "p": _wire(term.predicate),
                                 "o": _wire(term.object)}}
    raise AssertionError(f"a term TrustGraph never writes: {term!r}")


class TriplesFlow:
    """What ExplainabilityClient calls on a TrustGraph flow: ``triples_query``, a triple pattern
    (IRIs as text, as TrustGraph passes them) in a graph, answered from a pyoxigraph store."""

    def __init__(self, store: ox.Store) -> None:
        self.store = store
        self.queries = 0

    def triples_query(self, s: str | None = None, p: str | None = None, o: str | None = None,
                      g: str | None = None, collection: str | None = None,
                      limit: int = 100) -> list[dict[str, Any]]:
        self.queries += 1

        def node(value: str | None) -> ox.NamedNode | None:
            return None if value is None else ox.NamedNode(value)

        found = self.store.quads_for_pattern(node(s), node(p), node(o), node(g))
        return [{"s": _wire(q.subject), "p": _wire(q.predicate), "o": _wire(q.object)}
                for q, _ in zip(found, range(limit), strict=False)]


def _spans_into_store(path: Path, content_policy: str | None = None) -> tuple[dict[str, Any], Any]:
    """The three example flows (the agent runs a DocRAG sub-trace) as real SDK spans, exported with
    ``profile="trustgraph"`` by otel-prov's exporter into an embedded store at ``path``."""
    spec = parse_store(f"oxigraph:{path}")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ProvSpanExporter(
        store=f"oxigraph:{path}", profile="trustgraph", content_policy=content_policy)))
    results = {"agent": run_agent(tracer_provider=provider), "graphrag": graph_rag(tracer_provider=provider),
               "docrag": doc_rag(tracer_provider=provider)}
    provider.shutdown()
    return results, spec


def _read_back(spec: Any) -> tuple[ox.Store, list[str]]:
    """The store's graph read back through its read protocol, in a pyoxigraph store for the
    adapter's patterns, and as N-Quads lines."""
    opened = open_for_reading(spec)
    try:
        terms = list(opened.quads(GRAPH))
    finally:
        opened.close()

    def term(t: Any) -> ox.NamedNode | ox.Literal | ox.Triple:
        if t.kind == IRI:
            return ox.NamedNode(t.value)
        if t.kind == TRIPLE:  # a selected edge
            return ox.Triple(*map(term, t.parts))
        assert t.kind == LITERAL, t
        if t.language:
            return ox.Literal(t.value, language=t.language)
        return ox.Literal(t.value, datatype=ox.NamedNode(t.datatype) if t.datatype else None)

    store = ox.Store()
    quads = [ox.Quad(term(s), term(p), term(o), ox.NamedNode(GRAPH)) for s, p, o, _ in terms]
    store.extend(quads)
    return store, [str(q) for q in quads]


@pytest.fixture(scope="module")
def flows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    results, spec = _spans_into_store(tmp_path_factory.mktemp("tgstore") / "store")
    store, lines = _read_back(spec)
    return {"results": results, "store": store, "spec": spec, "lines": lines}


def _ours(flows: dict[str, Any], question: str) -> Any:
    reader_store = open_for_reading(flows["spec"])
    try:
        return TraceReader(reader_store).trace(question)[0]
    finally:
        reader_store.close()


def _client(flows: dict[str, Any]) -> Any:
    return _explainability().ExplainabilityClient(TriplesFlow(flows["store"]), retry_delay=0,
                                                   max_retries=2)


def _document(flows: dict[str, Any], entity: Any) -> str:
    """The text of a step's ``tg:document`` (what TrustGraph's librarian would hand out)."""
    texts = [q.object.value for q in flows["store"].quads_for_pattern(
        ox.NamedNode(entity.document), ox.NamedNode("https://trustgraph.ai/ns/content"), None, None)]
    assert len(texts) == 1, entity
    return texts[0]


def test_sessions_listed(flows: dict[str, Any]) -> None:
    client = _client(flows)
    listed = client.list_sessions()
    assert sorted(q.question_type for q in listed) == ["agent", "document-rag", "graph-rag"]
    reader_store = open_for_reading(flows["spec"])
    try:
        ours = TraceReader(reader_store).sessions()
    finally:
        reader_store.close()
    assert sorted(q.uri for q in listed) == sorted(row.id for row in ours)
    # every Question (the sub-trace's too) an entity, none an activity, as TrustGraph types them
    typed = {(q.subject.value, q.object.value) for q in flows["store"].quads_for_pattern(
        None, ox.NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"), None, None)}
    questions = {s for s, o in typed if o == "https://trustgraph.ai/ns/Question"}
    assert len(questions) == 4
    assert all((s, "http://www.w3.org/ns/prov#Entity") in typed for s in questions)
    assert not any(o == "http://www.w3.org/ns/prov#Activity" for _, o in typed)


@pytest.mark.parametrize("kind", ["graphrag", "docrag"])
def test_rag_flow_read_to_the_end(flows: dict[str, Any], kind: str) -> None:
    client = _client(flows)
    question = next(q for q in client.list_sessions()
                    if q.question_type == {"graphrag": "graph-rag", "docrag": "document-rag"}[kind])
    ours = _ours(flows, question.uri)
    trace = (client.fetch_graphrag_trace if kind == "graphrag" else client.fetch_docrag_trace)(question.uri)
    assert trace["question"].query == ours.question == flows["results"][kind].question
    assert trace["grounding"] is not None and trace["grounding"].concepts == []  # none recorded
    # our reader shows the Grounding as the first step
    assert [s.kind for s in ours.steps] == ["Grounding", "Exploration"] + (
        ["Focus"] if kind == "graphrag" else []) + ["Synthesis"]
    steps = {step.kind: step for step in ours.steps}
    exploration = trace["exploration"]
    assert exploration.uri == steps["Exploration"].iri
    if kind == "graphrag":
        assert exploration.edge_count == int(steps["Exploration"].value("edgeCount") or -1) == 8
        focus = trace["focus"]
        assert focus.uri == steps["Focus"].iri
        # the store's order, not the selection's: compared as sets
        assert sorted((e.uri, e.reasoning) for e in focus.edge_selections) == sorted(
            (e.iri, e.reasoning) for e in steps["Focus"].edges)
        assert len(focus.edge_selections) > 0
        # each edge read from its triple term (TrustGraph reads no other form): the edge the example
        # selected, as our reader reads it too
        selected = sorted(tuple(edge) for edge in flows["results"][kind].selected)
        assert sorted((e.edge["s"], e.edge["p"], e.edge["o"]) for e in focus.edge_selections if e.edge) \
            == sorted(e.edge for e in steps["Focus"].edges if e.edge) == selected
        assert not any(line.endswith("#Statement> <urn:graph:retrieval> .") for line in flows["lines"])
    else:
        assert exploration.chunk_count == int(steps["Exploration"].value("chunkCount") or -1) > 0
    synthesis = trace["synthesis"]
    assert synthesis is not None and synthesis.uri == steps["Synthesis"].iri
    assert _document(flows, synthesis) == steps["Synthesis"].value("content") == flows["results"][kind].answer


def test_agent_flow_read_to_the_end(flows: dict[str, Any]) -> None:
    client = _client(flows)
    question = next(q for q in client.list_sessions() if q.question_type == "agent")
    ours = _ours(flows, question.uri)
    result = flows["results"]["agent"]
    trace = client.fetch_agent_trace(question.uri)
    assert trace["question"].query == ours.question
    steps = trace["steps"]
    analyses = [s for s in steps if type(s).__name__ == "Analysis"]
    observations = [s for s in steps if type(s).__name__ == "Observation"]
    ours_analyses = [s for s in ours.steps if s.kind == "Analysis"]
    # our reader: each iteration followed by its Observation, then the Conclusion
    assert [s.kind for s in ours.steps] == ["Analysis", "Observation"] * len(ours_analyses) + ["Conclusion"]
    assert [a.uri for a in analyses] == [s.iri for s in ours_analyses]
    assert [(a.action, a.arguments) for a in analyses] == [
        (s.value("action") or "", s.value("arguments") or "") for s in ours_analyses]  # "" when none
    # each thought a Thought entity (TrustGraph's Reflection), its document the thought ours shows
    thoughts = [client.fetch_entity(a.thought, GRAPH) if a.thought else None for a in analyses]
    assert [a.thought for a in analyses] == [
        s.iri + "/thought" if s.value("thought") is not None else "" for s in ours_analyses]
    assert [_document(flows, t) if t else None for t in thoughts] == [
        s.value("thought") for s in ours_analyses]
    assert all(type(t).__name__ == "Reflection" and t.reflection_type == "thought" for t in thoughts if t)
    assert [t.act.thought for t in result.turns] == [  # (the last iteration thought, then answered)
        s.value("thought") for s in ours_analyses][:len(result.turns)] != []
    # one Observation per iteration, its document the observation ours shows
    assert [o.uri for o in observations] == [s.iri + "/observation" for s in ours_analyses]
    assert [_document(flows, o) if o.document else None for o in observations] == [
        s.value("observation") for s in ours_analyses]
    assert [t.observation for t in result.turns] == [
        s.value("observation") for s in ours_analyses if s.value("observation") is not None]
    # the document search's DocRAG sub-trace, read to its end
    subs = [s for s in steps if isinstance(s, dict)]
    assert len(subs) == 1 and subs[0]["trace"]["synthesis"] is not None
    # the end: the Conclusion, its document the answer
    conclusions = [s for s in steps if type(s).__name__ == "Conclusion"]
    assert len(conclusions) == 1  # (the reader walks depth first: the sub-trace may come after it)
    conclusion = conclusions[0]
    ours_conclusion = next(s for s in ours.steps if s.kind == "Conclusion")
    assert conclusion.uri == ours_conclusion.iri
    assert _document(flows, conclusion) == ours_conclusion.value("answer") == result.answer


def test_thoughts_are_found_by_the_text_filter(flows: dict[str, Any]) -> None:
    """A Thought entity's text (in its document, not on its Analysis) is what ``list --text`` searches,
    through the session index and through the graph; its IRI is not a text."""
    thought = flows["results"]["agent"].turns[0].act.thought
    reader_store = open_for_reading(flows["spec"])
    try:
        rows = sessions.compute(reader_store, [flows["results"]["agent"].explain_id])
        assert len(rows) == 1 and thought.lower() in rows[0].texts and "/thought" not in rows[0].texts
        for graph_only in (False, True):
            reader = TraceReader(reader_store)
            reader._no_index = graph_only
            found = [reader.count_sessions(where=SessionFilter(text=w)) for w in (thought, "/thought")]
            assert found == [1, 0]
    finally:
        reader_store.close()


def test_literals_are_plain_strings_as_trustgraph_writes_them(flows: dict[str, Any], tmp_path: Path) -> None:
    """TrustGraph writes counts, tokens, durations and scores as plain strings: so does the profile
    (PROV's times keep their xsd:dateTime); the seed's typed literals of the same spans become them."""
    tg = "https://trustgraph.ai/ns/"
    typed = [q for q in flows["store"] if q.predicate.value.startswith(tg)
             and isinstance(q.object, ox.Literal)
             and q.object.datatype.value != "http://www.w3.org/2001/XMLSchema#string"]
    assert typed == []
    counts = {q.predicate.value[len(tg):] for q in flows["store"]
              if q.predicate.value[len(tg):] in ("edgeCount", "chunkCount", "score", "toolDurationMs")}
    assert counts >= {"edgeCount", "chunkCount"}
    provider = TracerProvider()  # the same flow, the seed profile
    provider.add_span_processor(SimpleSpanProcessor(ProvSpanExporter(store=f"oxigraph:{tmp_path}")))
    graph_rag(tracer_provider=provider)
    provider.shutdown()
    seed_store, _ = _read_back(parse_store(f"oxigraph:{tmp_path}"))
    seed = [(str(q.subject), str(q.predicate), str(q.object), str(q.graph_name)) for q in seed_store
            if q.predicate.value.startswith(tg) and '"^^<' in str(q.object)]
    assert seed and all('"^^<' not in o for _, _, o, _ in to_trustgraph(seed))
    assert {o.split('"^^<')[0] + '"' for *_, o, _ in seed} == {o for *_, o, _ in to_trustgraph(seed)}


def test_seed_ends_at_the_question_for_trustgraphs_reader(flows: dict[str, Any]) -> None:
    """Without the profile's Grounding, TrustGraph's reader stops at a RAG trace's Question (what the
    profile is for): the same quads with what the profile added taken out."""
    store = ox.Store()
    store.extend(q for q in flows["store"] if "grounding" not in q.subject.value)
    client = _explainability().ExplainabilityClient(TriplesFlow(store), retry_delay=0, max_retries=2)
    question = next(q for q in client.list_sessions() if q.question_type == "graph-rag")
    trace = client.fetch_graphrag_trace(question.uri)
    assert trace["question"] is not None and trace["grounding"] is None and trace["synthesis"] is None


def test_transform_is_stable(flows: dict[str, Any]) -> None:
    """The rewrite of its own output is that output: a trace mapped again (or a conversation remapped)
    is rewritten to the same quads, so the mapper's diffs remove exactly what it wrote."""
    written = {(str(q.subject), str(q.predicate), str(q.object), str(q.graph_name)) for q in flows["store"]}
    assert any("/observation" in q[0] for q in written) and any("grounding" in q[0] for q in written)
    again = to_trustgraph(sorted(written))
    assert len(again) == len(written) and set(again) == written


def test_documents_hold_the_policed_text(tmp_path: Path) -> None:
    """The content policy applies before the rewrite: an omitted observation makes no document and
    is nowhere in the store; a hashed answer's document holds the hash."""
    results, spec = _spans_into_store(tmp_path / "store", "observation=omit,answer=sha256")
    store, lines = _read_back(spec)
    observations = [t.observation for t in results["agent"].turns]
    assert observations and not any(o in line for o in observations for line in lines)
    client = _explainability().ExplainabilityClient(TriplesFlow(store), retry_delay=0, max_retries=2)
    question = next(q for q in client.list_sessions() if q.question_type == "agent")
    steps = client.fetch_agent_trace(question.uri)["steps"]
    kinds = [type(s).__name__ for s in steps if not isinstance(s, dict)]
    assert kinds.count("Observation") == kinds.count("Analysis") > 0
    assert all(not s.document for s in steps if type(s).__name__ == "Observation")
    conclusion = next(s for s in steps if type(s).__name__ == "Conclusion")
    answer = results["agent"].answer
    assert _document({"store": store}, conclusion) == hashlib.sha256(answer.encode()).hexdigest()


def _framework_trace() -> S:
    """A GenAI-conventions agent run (as openai-agents records one): a model call asking for a tool,
    the tool, and a second model call answering."""
    tool_call = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'}

    def messages(*pairs: tuple[str, list[dict[str, str]]]) -> str:
        return json.dumps([{"role": role, "parts": parts} for role, parts in pairs])

    return S("invoke_agent Weather agent", 0, 99, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Weather agent",
        "gen_ai.input.messages": messages(("user", [{"type": "text", "content": "Weather in Paris?"}])),
        "gen_ai.output.messages": messages(("assistant", [{"type": "text", "content": "18 °C, sunny."}])),
    }, [
        S("chat gpt-4o", 3, 20, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                                 "gen_ai.output.messages": messages(("assistant", [tool_call]))},
          kind=SpanKind.CLIENT),
        S("execute_tool get_weather", 21, 30, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.arguments": '{"city": "Paris"}',
            "gen_ai.tool.call.result": '{"temp_c": 18, "sky": "sunny"}'}),
        S("chat gpt-4o", 52, 96, {"gen_ai.operation.name": "chat"}, kind=SpanKind.CLIENT),
    ])


def _exported(batches: list[list[Any]]) -> ox.Store:
    exporter = ProvSpanExporter(store="memory:", profile="trustgraph")
    try:
        for batch in batches:
            assert exporter.export(batch) is SpanExportResult.SUCCESS
            assert exporter.force_flush()
        data = exporter.store.to_dataset().serialize(format="nquads").encode()
    finally:
        exporter.shutdown()
    store = ox.Store()
    store.load(data, format=ox.RdfFormat.N_QUADS)
    return store


def test_framework_trace_in_pieces(tmp_path: Path) -> None:
    """A framework's trace (mapped per trace, its quads rewritten again as spans arrive: the
    mapper's diffs) ends as the same store whichever order its spans come in, and TrustGraph's
    reader follows it to the Conclusion through each iteration's Observation."""
    spans = make(_framework_trace())
    whole = _exported([spans])
    by_name = {s.name: s for s in spans}
    root = by_name["invoke_agent Weather agent"]
    rest = [s for s in spans if s is not root]
    pieces = _exported([[root], rest[:1], [root], rest[1:], rest[:1]])
    assert set(pieces) == set(whole)
    client = _explainability().ExplainabilityClient(TriplesFlow(pieces), retry_delay=0, max_retries=2)
    (question,) = client.list_sessions()
    assert question.query == "Weather in Paris?"
    steps = client.fetch_agent_trace(question.uri)["steps"]
    # the tool call's iteration, its Observation, the answer (the second model call) the Conclusion
    assert [type(s).__name__ for s in steps] == ["Analysis", "Observation", "Conclusion"]
    assert steps[0].action == "get_weather"
    assert _document({"store": pieces}, steps[1]) == '{"temp_c": 18, "sky": "sunny"}'
    assert _document({"store": pieces}, steps[-1]) == "18 °C, sunny."


def test_delete_takes_the_documents(tmp_path: Path) -> None:
    """A session erased takes its documents (the texts they hold) with it; the others keep theirs."""
    results, spec = _spans_into_store(tmp_path / "store")
    store, _ = _read_back(spec)
    client = _explainability().ExplainabilityClient(TriplesFlow(store), retry_delay=0, max_retries=2)
    agent = next(q for q in client.list_sessions() if q.question_type == "agent")
    opened = open_for_reading(spec)
    try:
        doomed = erasure.plan(opened, [agent.uri]).erase
    finally:
        opened.close()
    erasure.erase(spec, doomed, by="test", reason="test")
    _, lines = _read_back(spec)
    gone = [results["agent"].answer] + [t.observation for t in results["agent"].turns]
    assert not [text for text in gone if any(text in line for line in lines)]
    assert not [line for line in lines if "/document" in line and agent.uri in line]
    kept = results["graphrag"].answer
    assert sum(kept in line for line in lines) == 2  # the Synthesis's tg:content and its document's


_EDGES = [
    (["urn:x:Paris", "urn:x:mayor", "Anne, anne.hidalgo@example.org"], "the mayor's contact"),
    (["urn:x:Paris", "urn:x:population", "2.1 million people living in the twenty arrondissements"], "size"),
    (["Paris", "urn:x:capitalOf", "urn:x:France"], "a subject given as a name, no IRI"),
    (["urn:x:Paris", "urn:x:river", "urn:x:Seine"], "plain"),
]


def _focus_session(**options: Any) -> ox.Store:
    """A GraphRAG session with the edges of :data:`_EDGES` selected, exported with profile
    ``trustgraph`` (and ``options``: a content policy, redaction) into a memory store."""
    exporter = ProvSpanExporter(store="memory:", profile="trustgraph", **options)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    from otel_prov import graph_rag_session

    with graph_rag_session("What of Paris?", tracer_provider=provider) as session:
        session.exploration([edge for edge, _ in _EDGES])
        session.focus(_EDGES)
        session.synthesis("Paris.")
    assert exporter.force_flush()
    data = exporter.store.dump("nquads")
    provider.shutdown()
    store = ox.Store()
    store.load(data, format=ox.RdfFormat.N_QUADS)
    return store


def _edges_of(store: ox.Store) -> dict[str, Any]:
    """Each edge selection's reasoning -> TrustGraph's reader's ``edge`` of it."""
    client = _explainability().ExplainabilityClient(TriplesFlow(store), retry_delay=0, max_retries=2)
    (question,) = client.list_sessions()
    focus = client.fetch_graphrag_trace(question.uri)["focus"]
    return {e.reasoning: e.edge for e in focus.edge_selections}


def test_an_edge_not_as_the_span_gave_it_is_no_triple_term() -> None:
    """A triple term states an edge: only one whose parts are the span's own becomes one.  A part
    redacted, or cut by the content policy, or a subject that is no IRI keeps the seed's statement
    (its notes with it), and TrustGraph's reader has no edge for it: not captured."""
    plain = ("urn:x:Paris", "urn:x:river", "urn:x:Seine")
    as_given = _edges_of(_focus_session())
    assert as_given["plain"] == dict(zip("spo", plain, strict=True))
    assert as_given["the mayor's contact"]["o"] == "Anne, anne.hidalgo@example.org"
    assert as_given["a subject given as a name, no IRI"] is None  # "Paris" is a literal: no triple term
    policed = _focus_session(content_policy="retrieval=truncate:20", redact="email")
    edges = _edges_of(policed)
    assert edges["plain"] == as_given["plain"]
    assert edges["the mayor's contact"] is None and edges["size"] is None
    notes = {q.predicate.value.rsplit("#", 1)[-1] for q in policed
             if q.subject.value.endswith("/triple") and not q.predicate.value.startswith(str(ox.NamedNode(
                 "http://www.w3.org/1999/02/22-rdf-syntax-ns#").value))}
    assert {"redactions", "truncatedFrom", "contentPolicy"} <= notes
    assert not any("anne.hidalgo" in str(q) for q in policed)


def test_triple_terms_where_rdf_12_is_not_spoken(flows: dict[str, Any], tmp_path: Path) -> None:
    """JSON-LD and rdflib have no triple terms: they get each selected edge in RDF 1.1's form, a
    ``rdf:Statement`` node with the edge's parts; a user's rdflib Dataset takes them as a store."""
    import rdflib

    from otel_prov import spans_to_dataset
    from otel_prov.cli.app import main

    selected = sorted(tuple(edge) for edge in flows["results"]["graphrag"].selected)

    def statements(ds: rdflib.Dataset) -> list[tuple[str, ...]]:
        """The edges ``tg:edge`` points to, each read from its statement's parts."""
        edge, rdf = rdflib.URIRef("https://trustgraph.ai/ns/edge"), rdflib.RDF
        nodes = {o for _, _, o, _ in ds.quads((None, edge, None, None))}
        return sorted(tuple(str(o) for part in (rdf.subject, rdf.predicate, rdf.object)
                            for _, _, o, _ in ds.quads((node, part, None, None))) for node in nodes)

    out = tmp_path / "store.jsonld"
    assert main(["export", "--store", str(flows["spec"].location), "--format", "jsonld", "-o", str(out)]) == 0
    exported = rdflib.Dataset()
    exported.parse(out, format="json-ld")
    assert statements(exported) == selected
    spans: list[Any] = []

    class Keep:
        def export(self, batch: Any) -> SpanExportResult:
            spans.extend(batch)
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            pass

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Keep()))  # type: ignore[arg-type]
    graph_rag(tracer_provider=provider)
    assert statements(spans_to_dataset(spans, profile="trustgraph")) == selected
    mine = rdflib.Dataset()
    exporter = ProvSpanExporter(store=mine, profile="trustgraph")
    assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert statements(mine) == selected


def test_a_reranked_docrag_is_read_to_its_synthesis(tmp_path: Path) -> None:
    """A DocRAG whose reranker selected chunks (a Focus, which TrustGraph's DocRAG has not): its
    Synthesis is also derived from the Exploration, so TrustGraph's reader reaches it; ours shows the
    Focus between them, as in the seed."""
    docs = [{"id": f"doc-{n:02d}", "content": f"text {n}", "score": round(1 - n / 20, 2)} for n in range(12)]
    rerank: dict[str, Any] = {"openinference.span.kind": "RERANKER", "reranker.query": "warm cities"}
    for n, d in enumerate(docs[:3]):
        rerank |= {f"reranker.output_documents.{n}.document.id": d["id"],
                   f"reranker.output_documents.{n}.document.score": d["score"]}

    def messages(role: str, text: str) -> str:
        return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])

    spans = make(S("invoke_agent finder", 0, 100, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "finder",
        "gen_ai.input.messages": messages("user", "warm cities"),
        "gen_ai.output.messages": messages("assistant", "Three are warm.")}, [
        S("retrieval docs", 10, 20, {"gen_ai.operation.name": "retrieval",
                                     "gen_ai.retrieval.query.text": "warm cities",
                                     "gen_ai.retrieval.documents": json.dumps(docs)}),
        S("rerank", 20, 30, rerank),
        S("chat", 40, 90, {"gen_ai.operation.name": "chat",
                           "gen_ai.output.messages": messages("assistant", "Three are warm.")},
          kind=SpanKind.CLIENT)]))
    exporter = ProvSpanExporter(store=f"oxigraph:{tmp_path / 'store'}", profile="trustgraph")
    assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    spec = parse_store(f"oxigraph:{tmp_path / 'store'}")
    store, _ = _read_back(spec)
    client = _explainability().ExplainabilityClient(TriplesFlow(store), retry_delay=0, max_retries=2)
    (question,) = client.list_sessions()
    trace = client.fetch_docrag_trace(question.uri)
    assert trace["exploration"] is not None and trace["synthesis"] is not None
    assert _document({"store": store}, trace["synthesis"]) == "Three are warm."
    ours = _ours({"spec": spec}, question.uri)
    assert [s.kind for s in ours.steps] == ["Grounding", "Exploration", "Focus", "Synthesis"]
    assert ours.steps[-1].value("content") == "Three are warm."


def test_the_picture_draws_no_document_and_no_unknown_node(flows: dict[str, Any]) -> None:
    """A document holds its holder's text (shown on the holder): the provenance picture draws the
    holders, each with a kind, and no document beside them."""
    reader_store = open_for_reading(flows["spec"])
    try:
        reader = TraceReader(reader_store)
        for question in [s.id for s in reader.sessions()]:
            trace, triples = reader.trace(question)
            documents = {o.value for _, p, o in triples if p == "https://trustgraph.ai/ns/document"}
            graph = prov_graph(trace, triples)
            assert documents and not documents & {n.iri for n in graph.nodes}, question
            assert all(n.title and n.title != "Unknown" for n in graph.nodes), question
    finally:
        reader_store.close()
