"""Golden tests: every triple of the seed model, per flow, from real SDK spans made by the helper API.

The expected graphs are written out as TriG; only ids and times the SDK chooses are filled in (times
formatted here, not by the code under test).  rdflib's isomorphism compares times to the microsecond
only: tests/test_exact.py compares the same flows, in both profiles, term by term to the nanosecond.
"""

from __future__ import annotations

import json
import time

import rdflib
from opentelemetry.sdk.trace import ReadableSpan

from otel_prov import agent_session, doc_rag_session, graph_rag_session, spans_to_dataset
from tests.graphs import assert_isomorphic

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
