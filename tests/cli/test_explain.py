"""``otel-prov explain``: the lineage of an answer (or any node) on a real store of the example flows,
in both profiles, checked against what the read model and SPARQL say of the same sessions."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import ProvSpanExporter
from otel_prov.examples.rag import doc_rag, graph_rag
from otel_prov.examples.react_agent import PolicyError, run_agent
from otel_prov.read.model import Trace
from otel_prov.read.reader import TraceReader
from otel_prov.stores import open_for_reading, parse_store
from tests.support.cli import StopAfter, cli, one_error_line


def _spans() -> list[ReadableSpan]:
    """An agent (with a DocRAG sub-trace run by a tool), GraphRAG, DocRAG, and an agent whose model
    went away after one step (no answer)."""
    memory, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    run_agent(tracer_provider=provider)
    graph_rag(tracer_provider=provider)
    doc_rag(tracer_provider=provider)
    with pytest.raises(PolicyError):
        run_agent("What is the area of Italy?", policy=StopAfter(1), tracer_provider=provider)
    provider.shutdown()
    return list(memory.get_finished_spans())


@pytest.fixture(scope="module", params=["seed", "strict"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp(f"explain-{request.param}") / "store"
    exporter = ProvSpanExporter(store=path, profile=request.param)
    assert exporter.export(_spans()).name == "SUCCESS"
    exporter.shutdown()
    return str(path)


def _traces(store: str) -> dict[str, Trace]:
    """Each top-level session by type (the first of each), read by the read model."""
    reader_store = open_for_reading(parse_store(store))
    try:
        reader = TraceReader(reader_store)
        out: dict[str, Trace] = {}
        for row in reader.sessions():
            trace = reader.trace(row.id)[0]
            answered = trace.steps and trace.steps[-1].kind in ("Conclusion", "Synthesis")
            key = trace.type if answered else "unfinished"
            out.setdefault(key, trace)
        return out
    finally:
        reader_store.close()


def _explain(capsysbinary: Any, store: str, *args: str) -> dict[str, Any]:
    r = cli(capsysbinary, "explain", *args, "--store", store, "--format", "json")
    assert r.code == 0, r.err
    data: dict[str, Any] = json.loads(r.out)
    return data


def _nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """The nodes of ``explain --format json``'s tree (a flat list, each naming its parent)."""
    nodes: list[dict[str, Any]] = tree["nodes"]
    assert nodes[0]["parent"] is None and all(0 <= n["parent"] < k for k, n in enumerate(nodes) if k)
    return nodes


def _values(tree: dict[str, Any], name: str) -> set[str]:
    return {v["value"] for n in _nodes(tree) for v in n.get("values", []) if v["property"] == name}


def _steps(trace: Trace) -> list[Any]:
    """Every step of the trace and of the sub-traces its steps ran."""
    return [s for step in trace.steps for s in [step, *(t for sub in step.subtraces for t in sub.steps)]]


def test_an_agents_answer_derives_from_every_step_the_question_and_the_sub_trace(
        store: str, capsysbinary: Any) -> None:
    agent = _traces(store)["Agent"]
    data = _explain(capsysbinary, store, agent.trace_id or agent.id)
    tree = data
    answer = agent.steps[-1]
    assert data["session"] == agent.id and data["start"] == answer.iri
    assert _nodes(tree)[0]["iri"] == answer.iri
    reached = {n["iri"] for n in _nodes(tree)}
    assert {s.iri for s in _steps(agent)} | {agent.id} <= reached
    assert _values(tree, "answer") == set(answer.values["answer"])
    assert _values(tree, "observation") == {o for s in agent.steps for o in s.values.get("observation", [])}
    asked = {agent.question} | {sub.question for s in agent.steps for sub in s.subtraces}
    assert _values(tree, "query") == asked
    ran = [n for n in _nodes(tree) if n.get("via") == "ran"]
    runner = next(s for s in agent.steps if s.subtraces)
    assert [n["iri"] for n in ran] == [runner.subtraces[0].steps[-1].iri]  # the sub-trace's answer
    assert any(n.get("seenAbove") for n in _nodes(tree))  # the sub-trace leads back to its step: once
    assert len([n for n in _nodes(tree) if n["iri"] == runner.iri and not n.get("seenAbove")]) == 1


def test_a_graphrag_answer_derives_from_its_selected_edges_as_the_store_says(store: str,
                                                                           capsysbinary: Any) -> None:
    rag = _traces(store)["GraphRAG"]
    tree = _explain(capsysbinary, store, rag.id)
    edges = [edge for step in rag.steps for edge in step.edges]  # the read model's
    assert len(edges) >= 3
    nodes = {n["iri"]: n for n in _nodes(tree)}
    assert all(nodes[edge.iri]["via"] == "selectedEdge" for edge in edges)
    assert {edge.reasoning for edge in edges} == _values(tree, "reasoning")
    statements = [dict((v["property"], v["value"]) for v in n["values"]) for n in _nodes(tree)
                  if n.get("via") == "edge"]
    assert {(s["subject"], s["predicate"], s["object"]) for s in statements} == {edge.edge for edge in edges}
    assert rag.id in nodes


def test_forward_from_the_question_reaches_the_answer(store: str, capsysbinary: Any) -> None:
    doc = _traces(store)["DocRAG"]
    tree = _explain(capsysbinary, store, doc.id, "--forward")
    assert _nodes(tree)[0]["iri"] == doc.id and "values" in _nodes(tree)[0]
    assert doc.steps[-1].iri in {n["iri"] for n in _nodes(tree)}
    text = cli(capsysbinary, "explain", doc.id, "--forward", "--store", store)
    assert text.code == 0 and "what it went on to influence" in text.out and " it: " in text.out


def test_a_session_without_an_answer_explains_its_question_and_says_so(store: str, capsysbinary: Any) -> None:
    unfinished = _traces(store)["unfinished"]
    r = cli(capsysbinary, "explain", unfinished.id, "--store", store)
    assert r.code == 0 and "has no answer recorded" in r.err
    assert r.out.splitlines()[2].startswith(f"Agent Question  {unfinished.id}")


def test_depth_text_and_pictures(store: str, capsysbinary: Any, tmp_path: Path) -> None:
    agent = _traces(store)["Agent"]
    shallow = _nodes(_explain(capsysbinary, store, agent.id, "--depth", "1"))
    assert all(n["parent"] == 0 for n in shallow[1:]) and any(n.get("deeper") for n in shallow[1:])
    text = cli(capsysbinary, "explain", agent.id, "--store", store)
    assert text.code == 0
    for step in agent.steps:
        assert step.iri in text.out
    for thought in (t for s in agent.steps for t in s.values.get("thought", [])):
        assert thought[:60] in text.out
    full = _explain(capsysbinary, store, agent.id)
    svg = tmp_path / "lineage.svg"
    assert cli(capsysbinary, "explain", agent.id, "--store", store, "--output", str(svg)).code == 0
    ET.parse(svg)  # well-formed
    dot = cli(capsysbinary, "explain", agent.id, "--store", store, "--format", "dot")
    assert dot.out.startswith("digraph") and all(n["iri"] in dot.out for n in _nodes(full))


def test_an_unknown_node_is_one_line(store: str, capsysbinary: Any) -> None:
    one_error_line(cli(capsysbinary, "explain", "urn:nothing:here", "--store", store), "urn:nothing:here")
