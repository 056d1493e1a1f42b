"""The ``otel-prov`` command against stores filled by real spans of the example flows."""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pyoxigraph
import pytest
import rdflib
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_prov import ProvSpanExporter, agent_session, load_dataset
from otel_prov.cli import build_parser, main
from otel_prov.cli.common import Progress
from otel_prov.examples.rag import graph_rag
from otel_prov.examples.tools import knowledge_graph
from otel_prov.model.vocab import GRAPH_RETRIEVAL
from otel_prov.read.reader import TraceReader
from otel_prov.render import EXPORT_FORMATS, LIST_FORMATS, TRACE_FORMATS
from otel_prov.render.results import RESULT_FORMATS
from otel_prov.stores import open_for_reading, parse_store
from tests.support.cli import OTHER_SERVICE, SERVICE, Filled, cli, fill, one_error_line
from tests.support.graphs import assert_isomorphic

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
TG = "https://trustgraph.ai/ns/"
PROV = "http://www.w3.org/ns/prov#"


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Filled:
    return fill(tmp_path_factory.mktemp("cli") / "store")


# -- list -------------------------------------------------------------------------------------------


def test_list_table_newest_first_without_subtraces(filled: Filled, capsysbinary: Any) -> None:
    r = cli(capsysbinary, "list", "--store", str(filled.path))
    assert r.code == 0 and r.err == ""
    lines = r.out.splitlines()
    assert [c.strip() for c in lines[0].split("|")] == ["Session ID", "Type", "Question", "Time", "Steps",
                                                        "Duration", "Status"]
    assert set(lines[1]) <= {"-", "+"}
    body = [[c.strip() for c in line.split("|")] for line in lines[2:]]
    # six top-level sessions; the agent's document search (a sub-trace) is not listed
    assert len(body) == 6
    ids = [row[0] for row in body]
    assert filled.agent.explain_id in ids and filled.graph.explain_id in ids
    subtrace_questions = [row[2] for row in body if row[2].startswith("How densely")]
    assert subtrace_questions == []
    times = [row[3] for row in body]
    assert all(TIME.fullmatch(t) for t in times)
    assert times == sorted(times, reverse=True)
    by_id = {row[0]: row for row in body}
    assert by_id[filled.agent.explain_id][1] == "Agent"
    assert by_id[filled.graph.explain_id][1] == "GraphRAG"
    assert by_id[filled.docs.explain_id][1] == "DocRAG"
    assert by_id[filled.agent.explain_id][6] == "complete"
    assert by_id[filled.unfinished][1:7:5] == ["Agent", "unfinished"]
    assert by_id[filled.failed][1:7:5] == ["Agent", "error"]
    # Steps: the Analysis steps the example agent took (its trace read back), the Exploration and
    # Focus of a RAG query; a duration from the session's first start to its last end.
    store = open_for_reading(parse_store(str(filled.path)))
    try:
        agent_trace, _ = TraceReader(store).trace(filled.agent.explain_id)
    finally:
        store.close()
    analyses = sum(s.kind == "Analysis" for s in agent_trace.steps)
    assert analyses >= 2 and by_id[filled.agent.explain_id][4] == str(analyses)
    assert by_id[filled.graph.explain_id][4] == "2" and by_id[filled.docs.explain_id][4] == "1"
    assert all(re.fullmatch(r"[\d.]+ (ms|s)", row[5]) for row in body)
    # the question is cut to 45 characters, as TrustGraph's
    question = by_id[filled.agent.explain_id][2]
    assert len(question) == 45 and question.endswith("...")
    assert filled.agent.question.startswith(question[:-3])


def test_list_json_filters(filled: Filled, capsysbinary: Any) -> None:
    r = cli(capsysbinary, "list", "--store", str(filled.path), "--format", "json")
    rows = json.loads(r.out)
    assert {"id", "type", "question", "time", "traceId", "collection", "status"} <= set(rows[0])
    assert {row["type"] for row in rows} == {"Agent", "GraphRAG", "DocRAG"}
    agent = next(row for row in rows if row["id"] == filled.agent.explain_id)
    assert agent["question"] == filled.agent.question
    assert agent["traceId"] == filled.agent.trace_id
    assert agent["status"] == "complete"

    r = cli(capsysbinary, "list", "--store", str(filled.path), "--format", "json", "--type", "agent")
    assert {row["id"] for row in json.loads(r.out)} == {filled.agent.explain_id, filled.unfinished,
                                                        filled.failed}
    r = cli(capsysbinary, "list", "--store", str(filled.path), "--format", "json", "--limit", "2")
    assert [row["id"] for row in json.loads(r.out)] == [row["id"] for row in rows[:2]]
    r = cli(capsysbinary, "list", "--store", str(filled.path), "--format", "json", "--collection", "other")
    assert [row["id"] for row in json.loads(r.out)] == [filled.other.explain_id]


def test_list_collection_and_store_from_environment(filled: Filled, capsysbinary: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_PROV_STORE", str(filled.path))
    monkeypatch.setenv("OTEL_PROV_COLLECTION", "other")
    r = cli(capsysbinary, "list", "--format", "json")
    assert [row["id"] for row in json.loads(r.out)] == [filled.other.explain_id]


def test_list_empty_store(tmp_path: Path, capsysbinary: Any) -> None:
    ProvSpanExporter(store=str(tmp_path / "empty")).shutdown()
    r = cli(capsysbinary, "list", "--store", str(tmp_path / "empty"))
    assert (r.code, r.out, r.err) == (0, "No explainability sessions found.\n", "")
    r = cli(capsysbinary, "list", "--store", str(tmp_path / "empty"), "--format", "json")
    assert json.loads(r.out) == []


def test_reads_never_create_a_store(tmp_path: Path, capsysbinary: Any) -> None:
    missing = tmp_path / "nothing-here"
    for argv in (["list"], ["show", "urn:trustgraph:agent:x"], ["export"], ["query", "ASK {}"]):
        r = cli(capsysbinary, *argv, "--store", str(missing))
        one_error_line(r, "no store at", str(missing))
    assert not missing.exists()
    r = cli(capsysbinary, "list", "--store", "memory:")
    one_error_line(r, "memory:", code=2)
    r = cli(capsysbinary, "list", "--store", "bogus://x")
    one_error_line(r, "unknown store", code=2)


# -- show -------------------------------------------------------------------------------------------


def _section(lines: list[str], title: str) -> list[str]:
    start = lines.index(title)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("--- ")), len(lines))
    return lines[start + 1:end]


def test_show_agent_text(filled: Filled, capsysbinary: Any) -> None:
    agent = filled.agent
    r = cli(capsysbinary, "show", agent.explain_id, "--store", str(filled.path))
    assert r.code == 0 and r.err == ""
    lines = r.out.splitlines()
    assert lines[0] == f"=== Agent Session: {agent.explain_id} ==="
    assert lines[1] == ""
    assert lines[2] == f"Question: {agent.question}"
    assert lines[3] == f"Service: {SERVICE}"
    assert TIME.fullmatch(lines[4].removeprefix("Time: "))
    assert lines[5] == f"Trace ID: {agent.trace_id}"
    assert lines[6] == "Collection: default"
    assert not any(line.startswith("Jaeger:") for line in lines)
    # every cycle, in order, with thought, action, pretty-printed arguments and observation
    for n, turn in enumerate(agent.turns, 1):
        block = _section(lines, f"--- Analysis {n} ---")
        assert block[0] == f"  Thought: {turn.act.thought}"
        assert block[1] == f"  Action: {turn.act.tool}"
        assert block[2] == "  Arguments:"
        pretty = json.dumps(turn.act.arguments, indent=4, ensure_ascii=False).splitlines()
        assert block[3:3 + len(pretty)] == ["    " + line for line in pretty]
        assert block[3 + len(pretty)] == f"  Observation: {turn.observation}"
    last = _section(lines, f"--- Analysis {len(agent.turns) + 1} ---")
    assert last[0].startswith("  Thought: ")
    assert _section(lines, "--- Conclusion ---")[:2] == ["Answer:", f"  {agent.answer}"]
    assert lines[-1] == f"  {agent.answer}"
    assert "--- Unfinished ---" not in lines
    # the document search ran a DocRAG query: shown as a sub-trace of its step
    search = next(n for n, t in enumerate(agent.turns, 1) if t.act.tool == "search_documents")
    block = _section(lines, f"--- Analysis {search} ---")
    assert "  Sub-trace (DocRAG, derived from this step):" in block
    start = block.index("  Sub-trace (DocRAG, derived from this step):")
    assert block[start + 1].startswith("    === DocRAG Session: urn:trustgraph:docrag:")
    assert f"    Derived from: {agent.explain_id}/i{search}" in block
    assert "    Retrieved 3 chunks from document store" in lines


def test_show_graph_rag_text(filled: Filled, capsysbinary: Any) -> None:
    g = filled.graph
    r = cli(capsysbinary, "show", g.explain_id, "--store", str(filled.path))
    lines = r.out.splitlines()
    assert lines[0] == f"=== GraphRAG Session: {g.explain_id} ==="
    assert lines[2] == f"Question: {g.question}"
    exploration = _section(lines, "--- Exploration ---")
    assert exploration[0] == f"Retrieved {len(g.retrieved)} edges from knowledge graph"
    focus = _section(lines, "--- Focus (Edge Selection) ---")
    assert focus[0] == f"Selected {len(g.selected)} edges:"
    kg = knowledge_graph()
    names = [line for line in focus if re.match(r"  \d+\. \(", line)]
    assert len(names) == len(g.selected)
    for i, (edge, line) in enumerate(zip(g.selected, names, strict=False), 1):
        local = [v.rsplit("/", 1)[-1] for v in edge]
        assert line == f"  {i}. ({', '.join(local)})"
    assert sum(line.startswith("     Reasoning: shares ") for line in focus) == len(g.selected)
    assert _section(lines, "--- Synthesis ---") == ["Answer:", f"  {g.answer}"]
    assert kg.graph  # the edges shown are the knowledge graph's


def test_show_doc_rag_text_and_jaeger_link(filled: Filled, capsysbinary: Any,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    d = filled.docs
    r = cli(capsysbinary, "show", d.explain_id, "--store", str(filled.path),
            "--jaeger-url", "http://jaeger.example:16686/")
    lines = r.out.splitlines()
    assert lines[0] == f"=== DocRAG Session: {d.explain_id} ==="
    assert f"Jaeger: http://jaeger.example:16686/trace/{d.trace_id}" in lines
    chunks = [hit["id"] for hit in d.retrieved]
    assert _section(lines, "--- Exploration ---")[:2] == [
        f"Retrieved {len(chunks)} chunks from document store", f"  Chunks: {', '.join(chunks)}"]
    assert _section(lines, "--- Synthesis ---") == ["Answer:", f"  {d.answer}"]
    monkeypatch.setenv("OTEL_PROV_JAEGER_URL", "http://localhost:16686")
    r = cli(capsysbinary, "show", d.explain_id, "--store", str(filled.path))
    assert f"Jaeger: http://localhost:16686/trace/{d.trace_id}" in r.out.splitlines()


def test_show_unfinished_and_failed_sessions(filled: Filled, capsysbinary: Any) -> None:
    r = cli(capsysbinary, "show", filled.unfinished, "--store", str(filled.path))
    lines = r.out.splitlines()
    assert "--- Analysis 1 ---" in lines and "--- Conclusion ---" not in lines
    assert lines[-2:] == ["--- Unfinished ---", "No Conclusion recorded: the session is still running, "
                          "or it stopped before answering."]
    assert json.loads(cli(capsysbinary, "show", filled.unfinished, "--store", str(filled.path),
                          "--format", "json").out)["status"] == "unfinished"

    r = cli(capsysbinary, "show", filled.failed, "--store", str(filled.path))
    lines = r.out.splitlines()
    assert "  Error: PolicyError: the model went away" in _section(lines, "--- Analysis 2 ---")
    assert "Error: PolicyError: the model went away" in lines  # on the session too
    assert lines[-2:] == ["--- Unfinished ---",
                          "No Conclusion recorded: the session stopped with an error (see above)."]


def test_show_a_step_iri_shows_its_session(filled: Filled, capsysbinary: Any) -> None:
    r = cli(capsysbinary, "show", f"{filled.agent.explain_id}/i2", "--store", str(filled.path))
    assert r.out.splitlines()[0] == f"=== Agent Session: {filled.agent.explain_id} ==="


def test_show_takes_ids_as_people_paste_them(filled: Filled, capsysbinary: Any) -> None:
    """A trace id's first digits (Jaeger's search page shows 7), the bare UUID of a session's IRI, a
    full IRI; a truncated IRI is answered with the session it may have meant."""
    store = str(filled.path)
    want = f"=== Agent Session: {filled.agent.explain_id} ==="
    trace_id = str(filled.agent.trace_id)
    uuid = filled.agent.explain_id.rsplit(":", 1)[1]
    for ref in (trace_id[:7], trace_id[:6].upper(), uuid, filled.agent.explain_id):
        r = cli(capsysbinary, "show", ref, "--store", store)
        assert r.code == 0 and r.out.splitlines()[0] == want, ref
    one_error_line(cli(capsysbinary, "show", filled.agent.explain_id[:-6], "--store", store),
                   f"did you mean {filled.agent.explain_id}?")
    one_error_line(cli(capsysbinary, "show", f"{filled.agent.explain_id}/", "--store", store),
                   f"did you mean {filled.agent.explain_id}?")
    one_error_line(cli(capsysbinary, "show", "fffff0", "--store", store), "no trace id starts with fffff0")
    one_error_line(cli(capsysbinary, "show", "e2f", "--store", store),
                   "not an id: 'e2f': expected a session's", code=2)
    one_error_line(cli(capsysbinary, "show", "", "--store", store),
                   "no id given: expected a session's IRI", code=2)


def test_an_ambiguous_trace_id_prefix_lists_the_candidates() -> None:
    from otel_prov.read.model import TraceNotFound
    from otel_prov.read.reader import TraceReader
    from otel_prov.stores.oxigraph import OxigraphStore

    store = OxigraphStore(None)
    data = "".join(
        f'<urn:trustgraph:agent:{n}> <https://trustgraph.ai/ns/query> "q{n}" <{GRAPH_RETRIEVAL}> .\n'
        f'<urn:trustgraph:agent:{n}> <https://w3id.org/otel-prov/ns#traceId> "abcdef{n:026d}" '
        f'<{GRAPH_RETRIEVAL}> .\n' for n in (1, 2))
    store.add(data.encode(), 4)
    try:
        ambiguous = "abcdef is ambiguous: 2 trace ids match: abcdef0+1, abcdef0+2"
        with pytest.raises(TraceNotFound, match=ambiguous):
            TraceReader(store).question_of("abcdef")
        assert TraceReader(store).question_of("abcdef" + "0" * 25 + "1") == "urn:trustgraph:agent:1"
    finally:
        store.close()


SCHEMAS = Path(__file__).resolve().parents[2] / "docs" / "schema"


def test_json_follows_the_documented_schemas(filled: Filled, capsysbinary: Any) -> None:
    """list and show JSON (every session, failed and unfinished ones, sub-traces, a Jaeger link) match
    docs/schema/, whose trace and selected-edge objects allow no other key: one key style."""
    sessions = json.loads((SCHEMAS / "sessions.schema.json").read_text())
    trace = json.loads((SCHEMAS / "trace.schema.json").read_text())
    for schema in (sessions, trace):
        jsonschema.Draft202012Validator.check_schema(schema)
    rows = json.loads(cli(capsysbinary, "list", "--store", str(filled.path), "--format", "json").out)
    jsonschema.validate(rows, sessions)
    assert {row["status"] for row in rows} == {"complete", "unfinished", "error"}
    for row in rows:
        shown = json.loads(cli(capsysbinary, "show", row["id"], "--store", str(filled.path), "--format",
                               "json", "--jaeger-url", "http://127.0.0.1:16686").out)
        jsonschema.validate(shown, trace)
        assert shown["jaegerUrl"] == f"http://127.0.0.1:16686/trace/{row['traceId']}"
    bad = {**rows[0], "trace_id": rows[0]["traceId"]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([bad], sessions)


def test_every_output_ends_with_a_newline(filled: Filled, capsysbinary: Any) -> None:
    store = str(filled.path)
    runs = [("list", "--format", f) for f in LIST_FORMATS]
    runs += [("show", filled.agent.explain_id, "--format", f) for f in TRACE_FORMATS]
    runs += [("export", "--format", f) for f in EXPORT_FORMATS]
    runs += [("query", q, "--format", f) for f in RESULT_FORMATS
             for q in ("SELECT ?q WHERE { ?q tg:query ?t }", "ASK { ?q tg:query ?t }",
                       "CONSTRUCT { ?q tg:query ?t } WHERE { ?q tg:query ?t }")]
    for argv in runs:
        out = cli(capsysbinary, *argv, "--store", store).out
        assert out.endswith("\n") and not out.endswith("\n\n\n"), argv


def test_show_json(filled: Filled, capsysbinary: Any) -> None:
    agent = filled.agent
    r = cli(capsysbinary, "show", agent.explain_id, "--store", str(filled.path), "--format", "json")
    data = json.loads(r.out)
    assert (data["id"], data["type"], data["question"], data["status"]) == (
        agent.explain_id, "Agent", agent.question, "complete")
    assert data["traceId"] == agent.trace_id
    analyses = [s for s in data["steps"] if s["kind"] == "Analysis"]
    assert [s["number"] for s in analyses] == list(range(1, len(agent.turns) + 2))
    for step, turn in zip(analyses, agent.turns, strict=False):
        assert (step["thought"], step["action"]) == (turn.act.thought, turn.act.tool)
        assert json.loads(step["arguments"]) == turn.act.arguments
    assert data["steps"][-1]["kind"] == "Conclusion" and data["steps"][-1]["answer"] == agent.answer
    subs = [sub for s in data["steps"] for sub in s["subtraces"]]
    assert len(subs) == 1 and subs[0]["type"] == "DocRAG" and subs[0]["status"] == "complete"
    r = cli(capsysbinary, "show", filled.graph.explain_id, "--store", str(filled.path), "--format", "json")
    focus = next(s for s in json.loads(r.out)["steps"] if s["kind"] == "Focus")
    assert [e["edge"] for e in focus["selectedEdges"]] == filled.graph.selected


def test_show_turtle_is_the_trace_subgraph(filled: Filled, capsysbinary: Any) -> None:
    r = cli(capsysbinary, "show", filled.docs.explain_id, "--store", str(filled.path), "--format", "turtle")
    shown = rdflib.Graph().parse(data=r.out, format="turtle")
    stored = load_dataset(str(filled.path)).graph(rdflib.URIRef(GRAPH_RETRIEVAL))
    expected = rdflib.Graph()
    prefix = filled.docs.explain_id
    for s, p, o in stored:
        if str(s).startswith(prefix):
            expected.add((s, p, o))
    assert_isomorphic(expected, shown)


def test_show_dot_and_svg(filled: Filled, capsysbinary: Any, tmp_path: Path) -> None:
    agent = filled.agent
    r = cli(capsysbinary, "show", agent.explain_id, "--store", str(filled.path), "--format", "dot")
    assert r.out.startswith("digraph provenance {")
    nodes = re.findall(r"^  n\d+ \[label=", r.out, re.M)
    steps = len(agent.turns) + 1 + 1  # analyses and the conclusion
    subtrace = 3  # the DocRAG question, exploration and synthesis
    assert len(nodes) == 1 + steps + subtrace
    assert r.out.count("shape=box") == 2  # the two questions (prov:Activity in the seed profile)
    assert len(re.findall(r"n\d+ -> n\d+ \[label=\"wasDerivedFrom\"\]", r.out)) == steps + 2

    out = tmp_path / "trace.svg"
    r = cli(capsysbinary, "show", agent.explain_id, "--store", str(filled.path), "--format", "svg",
            "--output", str(out))
    assert (r.code, r.out, r.err) == (0, "", "")
    svg = ET.parse(out).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    groups = svg.findall(f"{ns}g")
    assert len(groups) == 1 + steps + subtrace
    assert sum(g.find(f"{ns}rect") is not None for g in groups) == 2
    assert sum(g.find(f"{ns}ellipse") is not None for g in groups) == steps + subtrace - 1
    titles = {g.find(f"{ns}title").text for g in groups}  # type: ignore[union-attr]
    assert agent.explain_id in titles and f"{agent.explain_id}/final" in titles
    assert len(svg.findall(f"{ns}path")) == steps + 2 + 1  # + the DocRAG wasGeneratedBy


def test_show_strict_profile_draws_agents(tmp_path: Path, capsysbinary: Any) -> None:
    exporter = ProvSpanExporter(store=str(tmp_path / "s"), profile="strict")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    result = graph_rag(tracer_provider=provider)
    provider.shutdown()
    r = cli(capsysbinary, "show", result.explain_id, "--store", str(tmp_path / "s"))
    lines = r.out.splitlines()
    assert lines[0] == f"=== GraphRAG Session: {result.explain_id} ==="
    assert _section(lines, "--- Synthesis ---") == ["Answer:", f"  {result.answer}"]
    r = cli(capsysbinary, "show", result.explain_id, "--store", str(tmp_path / "s"), "--format", "svg")
    svg = ET.fromstring(r.out)
    assert svg.findall(".//{http://www.w3.org/2000/svg}polygon")  # the software agent's house


def test_svg_of_text_with_control_characters_is_well_formed(tmp_path: Path, capsysbinary: Any) -> None:
    exporter = ProvSpanExporter(store=str(tmp_path / "s"))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with agent_session("nul\x00 escape\x1b?", session_id="ctl", tracer_provider=provider) as session:
        with session.iteration() as step:
            step.thought("bell\x07")
        session.conclude("form feed\x0c")
    provider.shutdown()
    r = cli(capsysbinary, "show", session.explain_id, "--store", str(tmp_path / "s"), "--format", "svg")
    assert r.code == 0
    svg = ET.fromstring(r.out)  # raises on a character XML cannot hold
    texts = " ".join(t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text"))
    assert "nul\ufffd escape\ufffd?" in texts


def test_show_unknown_step_type_is_shown(tmp_path: Path, capsysbinary: Any) -> None:
    """A trace whose first step this viewer does not know (TrustGraph's shows nothing)."""
    store_path = tmp_path / "foreign"
    q = "urn:trustgraph:agent:foreign-1"
    data = f"""
<{q}> a <{PROV}Activity>, <{TG}Question>, <{TG}AgentQuestion> ;
    <{TG}query> "Plan a trip" ; <{PROV}startedAtTime> "2026-01-02T03:04:05Z" .
<{q}/plan> a <{PROV}Entity>, <{TG}Plan> ; <{TG}planStep> "book a train" ;
    <{PROV}wasDerivedFrom> <{q}> .
<{q}/i1> a <{PROV}Entity>, <{TG}Analysis> ; <{TG}thought> "first, the train" ;
    <{TG}action> "book" ; <{PROV}wasDerivedFrom> <{q}/plan> .
"""
    store = pyoxigraph.Store(str(store_path))
    store.load(input=data.encode(), format=pyoxigraph.RdfFormat.TURTLE,
               to_graph=pyoxigraph.NamedNode(GRAPH_RETRIEVAL))
    store.flush()
    del store
    r = cli(capsysbinary, "show", q, "--store", str(store_path))
    lines = r.out.splitlines()
    assert lines[0] == f"=== Agent Session: {q} ==="
    assert lines[2:4] == ["Question: Plan a trip", "Time: 2026-01-02T03:04:05.000000000Z"]
    assert _section(lines, "--- Plan ---") == [f"  Node: {q}/plan", "  planStep: book a train", ""]
    assert _section(lines, "--- Analysis 1 ---")[:2] == ["  Thought: first, the train", "  Action: book"]
    assert lines[-2:] == ["--- Unfinished ---", "No Conclusion recorded: the session is still running, "
                          "or it stopped before answering."]


def test_show_bad_input(filled: Filled, capsysbinary: Any) -> None:
    one_error_line(cli(capsysbinary, "show", "urn:trustgraph:agent:no-such", "--store", str(filled.path)),
                   "no trace urn:trustgraph:agent:no-such")
    one_error_line(cli(capsysbinary, "show", "not an iri", "--store", str(filled.path)),
                   "not an id: 'not an iri'", code=2)
    one_error_line(cli(capsysbinary, "show", "urn:x>} DROP ALL", "--store", str(filled.path)),
                   "neither an IRI nor a trace id", code=2)
    one_error_line(cli(capsysbinary, "show", filled.agent.explain_id, "--store", str(filled.path),
                       "--output", "/nonexistent-dir/x.svg"), "cannot write /nonexistent-dir/x.svg")


# -- export -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt,rdflib_format", [("turtle", "turtle"), ("trig", "trig"),
                                               ("nquads", "nquads"), ("jsonld", "json-ld")])
def test_export_everything(filled: Filled, capsysbinary: Any, fmt: str, rdflib_format: str) -> None:
    r = cli(capsysbinary, "export", "--store", str(filled.path), "--format", fmt)
    assert r.code == 0 and r.err == ""
    stored = load_dataset(str(filled.path))
    if fmt == "turtle":
        exported: Any = rdflib.Graph().parse(data=r.out, format=rdflib_format)
        assert_isomorphic(stored.graph(rdflib.URIRef(GRAPH_RETRIEVAL)), exported)
    else:
        exported = rdflib.Dataset()
        exported.parse(data=r.out, format=rdflib_format)
        assert_isomorphic(stored, exported)


def test_export_sessions_and_collection(filled: Filled, capsysbinary: Any, tmp_path: Path) -> None:
    out = tmp_path / "agent.nq"
    r = cli(capsysbinary, "export", "--store", str(filled.path), "--session", filled.agent.explain_id,
            "--format", "nquads", "--output", str(out))
    assert (r.code, r.out, r.err) == (0, "", "")
    ds = rdflib.Dataset()
    ds.parse(out, format="nquads")
    questions = {str(s) for s, _, _, _ in ds.quads((None, rdflib.URIRef(TG + "query"), None, None))}
    assert len(questions) == 2 and filled.agent.explain_id in questions  # with its sub-trace
    assert not any(filled.graph.explain_id in str(s) for s, _, _, _ in ds.quads((None, None, None, None)))

    r = cli(capsysbinary, "export", "--store", str(filled.path), "--collection", "other")
    g = rdflib.Graph().parse(data=r.out, format="turtle")
    assert {str(s) for s in g.subjects(rdflib.URIRef(TG + "query"))} == {filled.other.explain_id}
    one_error_line(cli(capsysbinary, "export", "--store", str(filled.path), "--session", "urn:x:none"),
                   "no trace urn:x:none")
    one_error_line(cli(capsysbinary, "export", "--store", str(filled.path), "-o", "/nonexistent-dir/x"),
                   "cannot write /nonexistent-dir/x")


def test_export_progress_only_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, pipe = Terminal(), io.StringIO()
    assert list(Progress(50000, tty).wrap(range(50000))) == list(range(50000))
    assert list(Progress(50000, pipe).wrap(range(50000))) == list(range(50000))
    assert "exporting: 1000/50000 quads (2%)" in tty.getvalue()
    assert tty.getvalue().endswith("\rexported 50000 quads.                    \n")
    assert pipe.getvalue() == ""
    short = Terminal()
    list(Progress(10, short).wrap(range(10)))
    assert short.getvalue() == ""


# -- query ------------------------------------------------------------------------------------------


def test_query_formats(filled: Filled, capsysbinary: Any, tmp_path: Path) -> None:
    sparql = "SELECT ?q ?text WHERE { ?q tg:query ?text } ORDER BY ?text"
    r = cli(capsysbinary, "query", sparql, "--store", str(filled.path))
    lines = r.out.splitlines()
    assert [c.strip() for c in lines[0].split("|")] == ["q", "text"]
    assert lines[-1] == "(7 rows)"  # six sessions and the sub-trace
    texts = [line.split("|")[1].strip() for line in lines[2:-1]]
    assert texts == sorted(texts) and filled.agent.question in texts

    data = json.loads(cli(capsysbinary, "query", sparql, "--store", str(filled.path), "--format", "json").out)
    assert data["head"]["vars"] == ["q", "text"] and len(data["results"]["bindings"]) == 7
    csv_lines = cli(capsysbinary, "query", sparql, "--store", str(filled.path),
                    "--format", "csv").out.splitlines()
    assert csv_lines[0] == "q,text" and len(csv_lines) == 8

    ask = cli(capsysbinary, "query", "ASK { ?q a tg:AgentQuestion }", "--store", str(filled.path))
    assert ask.out == "true\n"
    construct = (f"CONSTRUCT {{ <{filled.docs.explain_id}> tg:query ?t }} WHERE "
                 f"{{ <{filled.docs.explain_id}> tg:query ?t }}")
    r = cli(capsysbinary, "query", construct, "--store", str(filled.path))
    assert len(rdflib.Graph().parse(data=r.out, format="turtle")) == 1
    # a CONSTRUCT says what json and csv mean for triples: JSON-LD, and subject/predicate/object rows
    r = cli(capsysbinary, "query", construct, "--store", str(filled.path), "--format", "json")
    graph = rdflib.Graph().parse(data=r.out, format="json-ld")
    assert [(str(s), str(o)) for s, _, o in graph] == [(filled.docs.explain_id, filled.docs.question)]
    rows = list(csv.reader(io.StringIO(cli(capsysbinary, "query", construct, "--store", str(filled.path),
                                           "--format", "csv").out)))
    assert rows == [["subject", "predicate", "object"],
                    [filled.docs.explain_id, TG + "query", filled.docs.question]]

    query_file = tmp_path / "q.rq"
    query_file.write_text("SELECT (COUNT(*) AS ?n) WHERE { ?s a tg:Analysis }")
    r = cli(capsysbinary, "query", "--file", str(query_file), "--store", str(filled.path), "--format", "csv")
    # the agent's cycles, the unfinished session's one, and the failed session's two
    analyses = len(filled.agent.turns) + 1 + 1 + 2
    assert r.out.splitlines() == ["n", str(analyses)]


def test_query_errors(filled: Filled, capsysbinary: Any, tmp_path: Path) -> None:
    r = cli(capsysbinary, "query", "SELECT ?q WHERE {\n  ?q tg:query ?text .\n  FILTER(\n}",
            "--store", str(filled.path))
    one_error_line(r, "SPARQL syntax error at line 4, column")
    store = str(filled.path)
    # What a person types wrong, said in their words: no character classes, no "expected CONSTRUCT".
    # A query the engine cannot run is a failure (1); one refused before it reaches the engine is a
    # bad value of the argument (2).
    for query, says, code in (
            ("SELECT ?x WHERE { ?x foo:bar ?y }", "undeclared prefix 'foo:' at line 1, column 29", 1),
            ("INSERT DATA { <urn:a> <urn:b> <urn:c> }", "updates are not allowed here (INSERT)", 2),
            ("PREFIX x: <urn:x#>\nDELETE WHERE { ?s ?p ?o }", "updates are not allowed here (DELETE)", 2),
            ("SELEC ?x WHERE { }", "a query starts with SELECT, ASK, CONSTRUCT, DESCRIBE", 2),
            ("", "the query is empty", 2)):
        r = cli(capsysbinary, "query", query, "--store", store)
        one_error_line(r, says, code=code)
        assert "\\u{" not in r.err and "CONSTRUCT" not in r.err.replace("SELECT, ASK, CONSTRUCT", "")
    one_error_line(cli(capsysbinary, "query", "--file", str(tmp_path / "none.rq"), "--store", store),
                   f"cannot read {tmp_path / 'none.rq'}")
    (tmp_path / "bin.rq").write_bytes(b"\xff\xfe\x00")
    one_error_line(cli(capsysbinary, "query", "--file", str(tmp_path / "bin.rq"), "--store", store),
                   "cannot read")
    one_error_line(cli(capsysbinary, "query", "--store", str(filled.path)), "no query", code=2)
    # An evaluation error (a SERVICE call that cannot be made) is one line too, not a traceback.
    one_error_line(cli(capsysbinary, "query", "SELECT * WHERE { SERVICE <http://127.0.0.1:1/> { ?s ?p ?o } }",
                       "--store", store, "--allow-service"), "the query failed")
    # Without --allow-service, SERVICE is refused before anything reaches the network.
    one_error_line(cli(capsysbinary, "query", "SELECT * WHERE { SERVICE <http://127.0.0.1:1/> { ?s ?p ?o } }",
                       "--store", store), "uses SERVICE", "--allow-service", code=2)


def test_careless_values_are_one_line_naming_them(tmp_path: Path, capsysbinary: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a store\n")
    one_error_line(cli(capsysbinary, "list", "--store", ""), "--store '': an empty store", code=2)
    one_error_line(cli(capsysbinary, "list", "--store", str(a_file)),
                   f"{a_file} is a file, not a store (a store is a directory)")
    assert a_file.read_text() == "not a store\n"  # left as it was
    one_error_line(cli(capsysbinary, "show", "urn:x:y", "--jaeger-url", "not a url", "--store", str(a_file)),
                   "--jaeger-url 'not a url': expected a base URL such as http://localhost:16686", code=2)
    monkeypatch.setenv("OTEL_PROV_JAEGER_URL", "ftp://host")
    one_error_line(cli(capsysbinary, "show", "urn:x:y"),
                   "OTEL_PROV_JAEGER_URL='ftp://host': expected a base URL", code=2)
    monkeypatch.delenv("OTEL_PROV_JAEGER_URL")
    one_error_line(cli(capsysbinary, "demo", "--profile", "bogus", "--store", "memory:"),
                   "--profile 'bogus': unknown profile 'bogus': expected one of seed, strict", code=2)


def test_corrupt_store_is_one_error_line(tmp_path: Path, capsysbinary: Any) -> None:
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "CURRENT").write_text("not a RocksDB manifest name\n")
    one_error_line(cli(capsysbinary, "list", "--store", str(corrupt)), "cannot open the store")


# -- demo, help, the process ------------------------------------------------------------------------


def test_demo_writes_then_lists_and_shows(tmp_path: Path, capsysbinary: Any) -> None:
    store = tmp_path / "demo"
    r = cli(capsysbinary, "demo", "--store", str(store))
    assert r.code == 0
    assert "policy: offline (deterministic rules, no language model)" in r.err
    lines = r.out.splitlines()
    assert lines[0] == f"$ otel-prov list --store {store}"  # each command printed works as printed
    assert [c.strip() for c in lines[1].split("|")] == ["Session ID", "Type", "Question", "Time", "Steps",
                                                        "Duration", "Status"]
    assert sorted(line.split("|")[1].strip() for line in lines[3:6]) == ["Agent", "DocRAG", "GraphRAG"]
    assert lines[6] == ""
    shows = [line for line in lines if line.startswith("$ otel-prov show ")]
    assert len(shows) == 3
    for kind in ("Agent", "GraphRAG", "DocRAG"):
        assert sum(line.startswith(f"=== {kind} Session: ") for line in lines) == 1
    assert "--- Conclusion ---" in lines and "--- Focus (Edge Selection) ---" in lines
    # the store holds what was shown, for the other subcommands
    rows = json.loads(cli(capsysbinary, "list", "--store", str(store), "--format", "json").out)
    assert {row["id"] for row in rows} == {line.split()[3] for line in shows}  # "$ otel-prov show IRI"
    assert all(line.endswith(f" --store {store}") for line in shows)
    # a second run adds three more sessions and says there are earlier ones
    r = cli(capsysbinary, "demo", "--store", str(store), "--quiet")
    assert f"(3 earlier sessions in this store: otel-prov list --store {store})" in r.out
    assert not any(line.startswith("$ otel-prov show") for line in r.out.splitlines())


def test_demo_in_memory_and_strict(capsysbinary: Any) -> None:
    r = cli(capsysbinary, "demo", "--store", "memory:", "--profile", "strict", "--collection", "demo")
    assert r.code == 0
    assert "(profile strict)" in r.err
    assert r.out.count("Collection: demo") == 3


SUBCOMMANDS = ["list", "show", "diff", "explain", "audit", "export", "query", "check", "import", "hold",
               "delete", "prune", "seal", "verify", "demo"]


@pytest.mark.parametrize("command", [None, *SUBCOMMANDS])
def test_help(command: str | None, capsysbinary: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"] if command else ["--help"])
    assert exit_info.value.code == 0
    out = capsysbinary.readouterr().out.decode()
    assert out.startswith(f"usage: otel-prov{' ' + command if command else ''}")
    if command is None:
        for name in SUBCOMMANDS:
            assert name in out
    if command in ("list", "show", "diff", "export", "query", "check", "import"):
        assert "--store" in out and "OTEL_PROV_STORE" in out


def test_every_subcommand_is_registered() -> None:
    parser = build_parser()
    choices = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[union-attr]
    assert set(SUBCOMMANDS) | {"serve", "ui"} == set(choices)


def test_usage_error_exit_status(capsysbinary: Any) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["list", "--limit", "0"])
    assert exit_info.value.code == 2
    assert "must be at least 1" in capsysbinary.readouterr().err.decode()


def _process(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}, **(env or {})}
    return subprocess.run([sys.executable, "-m", "otel_prov.cli", *argv], capture_output=True, text=True,
                          env=env, timeout=120)


def test_as_a_process(filled: Filled, tmp_path: Path) -> None:
    ok = _process("show", filled.graph.explain_id, "--store", str(filled.path))
    assert ok.returncode == 0 and ok.stdout.startswith("=== GraphRAG Session: ")
    for argv in (["show", "urn:trustgraph:agent:none", "--store", str(filled.path)],
                 ["list", "--store", str(tmp_path / "missing")],
                 ["query", "SELECT * WHERE { ?s ?p }", "--store", str(filled.path)],
                 ["query", "--file", str(tmp_path / "missing.rq"), "--store", str(filled.path)]):
        bad = _process(*argv)
        assert bad.returncode == 1, argv
        assert bad.stdout == ""
        assert len(bad.stderr.splitlines()) == 1 and "Traceback" not in bad.stderr, bad.stderr
    head = subprocess.run(f"{sys.executable} -m otel_prov.cli export --store {filled.path} | head -1",
                          shell=True, capture_output=True, text=True, timeout=120)
    assert head.stdout.startswith("@prefix") and "Traceback" not in head.stderr


def test_demo_and_list_use_the_exporters_default_store(capsysbinary: Any) -> None:
    """No --store, no OTEL_PROV_STORE: both use $XDG_DATA_HOME/otel-prov/store (a tmp dir here)."""
    default = Path(os.environ["XDG_DATA_HOME"]) / "otel-prov" / "store"
    assert not default.exists()
    r = cli(capsysbinary, "demo", "--quiet")
    assert r.code == 0 and f"writing to oxigraph:{default}" in r.err
    rows = json.loads(cli(capsysbinary, "list", "--format", "json").out)
    assert sorted(row["type"] for row in rows) == ["Agent", "DocRAG", "GraphRAG"]


def test_control_characters_are_shown_escaped_not_sent_to_the_terminal(
        tmp_path: Path, capsysbinary: Any) -> None:
    store = tmp_path / "ctl"
    exporter = ProvSpanExporter(store=f"oxigraph:{store}")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with agent_session("red \x1b[31malert\r?", session_id="ctl", tracer_provider=provider) as s:
        with s.iteration() as step:
            step.thought("line one\nline\ttwo \x07bell")
        s.conclude("done")
    provider.shutdown()
    for argv in (["list"], ["show", "urn:trustgraph:agent:ctl"],
                 ["query", "SELECT ?q WHERE { ?s tg:query ?q }"]):
        result = cli(capsysbinary, *argv, "--store", str(store))
        assert result.code == 0
        assert "\x1b" not in result.out and "\x07" not in result.out and "\r" not in result.out
        assert "\\x1b[31malert" in result.out
    shown = cli(capsysbinary, "show", "urn:trustgraph:agent:ctl", "--store", str(store)).out
    assert "line one\n" in shown and "\\x07bell" in shown and "\t" in shown


# -- a newcomer's first hour (issue 13): what a tester met following the docs literally ----------------


def test_exit_statuses(filled: Filled, tmp_path: Path) -> None:
    """0 done, 1 an operation failed, 2 a usage error or a bad value (argparse's own, a bad flag or
    variable, a missing input), as docs/cli.md says; as a process, each error on one line."""
    store = str(filled.path)
    cases: list[tuple[list[str], dict[str, str], int]] = [
        (["list", "--store", store], {}, 0),
        (["show", "urn:trustgraph:agent:none", "--store", store], {}, 1),  # not found: failed
        (["list", "--store", str(tmp_path / "missing")], {}, 1),
        (["query", "SELECT * WHERE { ?s ?p }", "--store", store], {}, 1),  # the query is wrong
        (["list", "--limit", "x", "--store", store], {}, 2),  # argparse
        (["query", "--store", store], {}, 2),  # no query given
        (["query", "ASK {}", "--file", "x.rq", "--store", store], {}, 2),  # both
        (["demo", "--profile", "strik", "--store", "memory:"], {}, 2),
        (["ui", "--port", "abc", "--store", store], {}, 2),
        (["list", "--store", store], {"OTEL_PROV_PROFILE": "strik", "OTEL_PROV_JAEGER_URL": "ftp://x"}, 0),
        (["show", "urn:x:y", "--store", store], {"OTEL_PROV_JAEGER_URL": "ftp://x"}, 2),  # a variable
        (["show", "not an IRI", "--store", store], {}, 2),
        (["list", "--store", "memory:"], {}, 2),
    ]
    for argv, env, expected in cases:
        run = _process(*argv, env=env)
        assert run.returncode == expected, (argv, run.stderr)
        if expected:
            lines = run.stderr.splitlines()
            assert run.stdout == "" and "Traceback" not in run.stderr, (argv, run.stderr)
            assert len(lines) == 1 or lines[0].startswith("usage: "), (argv, run.stderr)


def test_show_takes_a_trace_id(filled: Filled, capsysbinary: Any) -> None:
    """The 32-hex trace id that `show` prints and Jaeger shows names its session (the top-level one:
    a sub-trace shares it), as the web view's /trace/{id} does; any case; export --session too."""
    by_iri = cli(capsysbinary, "show", filled.agent.explain_id, "--store", str(filled.path))
    assert filled.agent.trace_id and f"Trace ID: {filled.agent.trace_id}" in by_iri.out
    for given in (filled.agent.trace_id, filled.agent.trace_id.upper()):
        by_id = cli(capsysbinary, "show", given, "--store", str(filled.path))
        assert (by_id.code, by_id.out, by_id.err) == (0, by_iri.out, "")
    one_error_line(cli(capsysbinary, "show", "0" * 32, "--store", str(filled.path)),
                   f"no session recorded from trace {'0' * 32}")
    one_error_line(cli(capsysbinary, "show", "0" * 31, "--store", str(filled.path)),  # a prefix
                   f"no trace id starts with {'0' * 31}")
    one_error_line(cli(capsysbinary, "show", "0" * 33, "--store", str(filled.path)),
                   "not an id", code=2)
    trace_id = filled.graph.trace_id or ""
    exported = cli(capsysbinary, "export", "--session", trace_id, "--store", str(filled.path))
    same = cli(capsysbinary, "export", "--session", filled.graph.explain_id, "--store", str(filled.path))
    assert exported.code == 0 and exported.out == same.out and filled.graph.explain_id in exported.out


@pytest.mark.parametrize("text", ["garbage", "urn:x>", 'urn:x"', "urn:x y", "urn:x%zz", "urn:{x}", "a:b\\c"])
def test_the_read_model_refuses_what_is_not_an_iri(filled: Filled, text: str) -> None:
    """Before any SPARQL is built: whoever calls (the CLI, the web view, a script), nothing is added to
    a query or breaks it (e.g. a percent sign the store's parser would refuse: a syntax error)."""
    from otel_prov.read.model import NotAnIri, check_iri

    with pytest.raises(NotAnIri, match=r"^not an IRI: "):
        check_iri(text)
    store = open_for_reading(parse_store(str(filled.path)))
    try:
        reader = TraceReader(store)
        for call in (reader.find_question, reader.triples, reader.trace, reader.question_of):
            with pytest.raises(NotAnIri):
                call(text)
    finally:
        store.close()
    assert check_iri("urn:trustgraph:agent:no%20such") == "urn:trustgraph:agent:no%20such"


def test_export_format_follows_the_output_suffix(filled: Filled, tmp_path: Path, capsysbinary: Any) -> None:
    store = str(filled.path)
    formats = pyoxigraph.RdfFormat
    for suffix, rdf_format in ((".nq", formats.N_QUADS), (".trig", formats.TRIG),
                               (".jsonld", formats.JSON_LD), (".ttl", formats.TURTLE)):
        out = tmp_path / f"out{suffix}"
        assert cli(capsysbinary, "export", "--store", store, "--output", str(out)).code == 0
        parsed = list(pyoxigraph.parse(out.read_bytes(), format=rdf_format))
        assert parsed
        graphs = {getattr(q, "graph_name", None) for q in parsed}
        if suffix == ".ttl":
            assert not any(isinstance(g, pyoxigraph.NamedNode) for g in graphs)
        else:
            assert pyoxigraph.NamedNode(GRAPH_RETRIEVAL) in graphs  # the named graph: not Turtle
    # --format and a suffix that names another format: refused, nothing written; .json is JSON-LD;
    # the usual aliases; a suffix of no RDF format is Turtle, the default
    out = tmp_path / "mismatch.nq"
    one_error_line(cli(capsysbinary, "export", "--store", store, "-o", str(out), "--format", "turtle"),
                   "--format turtle does not match the output file", code=2)
    assert not out.exists()
    assert cli(capsysbinary, "export", "--store", store, "-o", str(out), "--format", "nq").code == 0
    assert list(pyoxigraph.parse(out.read_bytes(), format=formats.N_QUADS))
    out = tmp_path / "out.json"
    assert cli(capsysbinary, "export", "--store", store, "-o", str(out)).code == 0
    assert list(pyoxigraph.parse(out.read_bytes(), format=formats.JSON_LD))
    assert cli(capsysbinary, "export", "--store", store, "-o", str(out), "--format", "json").code == 0
    # a file named for a format export does not write (N-Triples, RDF/XML) is refused, not Turtle
    for name in ("out.nt", "out.rdf"):
        one_error_line(cli(capsysbinary, "export", "--store", store, "-o", str(tmp_path / name)),
                       f"the output file '{tmp_path / name}' is ", "which this command does not write",
                       code=2)
        assert not (tmp_path / name).exists()
    # query: the format from the suffix too
    ask = "ASK { ?q tg:query ?t }"
    assert cli(capsysbinary, "query", ask, "--store", store, "-o", str(tmp_path / "a.json")).code == 0
    assert json.loads((tmp_path / "a.json").read_text()) == {"head": {}, "boolean": True}
    select = "SELECT ?t WHERE { ?q tg:query ?t } LIMIT 1"
    assert cli(capsysbinary, "query", select, "--store", store, "-o", str(tmp_path / "s.csv")).code == 0
    assert (tmp_path / "s.csv").read_bytes().startswith(b"t\r\n")
    one_error_line(cli(capsysbinary, "query", ask, "--store", store, "-o", str(tmp_path / "a.json"),
                       "--format", "csv"), "--format csv does not match the output file", code=2)
    out = tmp_path / "trace.svg"  # show too: from the suffix, and aliases
    assert cli(capsysbinary, "show", filled.agent.explain_id, "--store", store, "-o", str(out)).code == 0
    assert out.read_text().startswith("<svg") or "<svg" in out.read_text()[:200]
    shown = cli(capsysbinary, "show", filled.agent.explain_id, "--store", store, "--format", "ttl")
    assert shown.code == 0 and shown.out.startswith("@prefix")
    out = tmp_path / "out.data"  # a suffix of no RDF format: Turtle, the default
    assert cli(capsysbinary, "export", "--store", store, "-o", str(out)).code == 0
    assert out.read_text().startswith("@prefix")
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    assert ".nq nquads" in " ".join(capsysbinary.readouterr().out.decode().split())


def test_empty_results_name_the_filter(filled: Filled, capsysbinary: Any,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    store = str(filled.path)
    r = cli(capsysbinary, "list", "--store", store, "--collection", "Mine")
    assert (r.code, r.err) == (0, "")
    assert r.out == ("No explainability sessions found in collection 'Mine'; the store's collections: "
                     "'default', 'other'.\n")
    r = cli(capsysbinary, "list", "--store", store, "--collection", "other", "--type", "agent")
    assert r.out == ("No explainability sessions found of type agent in collection 'other'; the store's "
                     "collections: 'default', 'other'.\n")
    monkeypatch.setenv("OTEL_PROV_COLLECTION", "Mine")  # a variable forgotten in the shell: said so
    assert "in collection 'Mine' (OTEL_PROV_COLLECTION)" in cli(capsysbinary, "list", "--store", store).out
    assert json.loads(cli(capsysbinary, "list", "--store", store, "--format", "json").out) == []
    monkeypatch.delenv("OTEL_PROV_COLLECTION")
    r = cli(capsysbinary, "export", "--store", store, "--collection", "nope")
    assert r.code == 0 and r.out == ""
    assert r.err == ("otel-prov: nothing exported: no session is in collection 'nope'; the store's "
                     "collections: 'default', 'other'\n")


def test_select_star_columns_in_the_query_order(filled: Filled, capsysbinary: Any) -> None:
    """Oxigraph gives SELECT *'s columns in alphabetical order; people expect the query's."""
    store = str(filled.path)
    query = ("SELECT * WHERE { ?zeta tg:query ?alpha . # ?comment\n"
             " ?zeta otelprov:traceId ?mid . FILTER(?alpha != \"?quoted\") } ORDER BY ?zeta LIMIT 2")
    table = cli(capsysbinary, "query", query, "--store", store).out.splitlines()
    assert [c.strip() for c in table[0].split("|")] == ["zeta", "alpha", "mid"]
    doc = json.loads(cli(capsysbinary, "query", query, "--store", store, "--format", "json").out)
    assert doc["head"]["vars"] == ["zeta", "alpha", "mid"]
    assert list(doc["results"]["bindings"][0]) == ["zeta", "alpha", "mid"]
    csv_out = cli(capsysbinary, "query", query, "--store", store, "--format", "csv").out
    assert csv_out.startswith("zeta,alpha,mid\r\n")
    named = cli(capsysbinary, "query", query.replace("SELECT *", "SELECT ?mid ?zeta"), "--store", store).out
    assert [c.strip() for c in named.splitlines()[0].split("|")] == ["mid", "zeta"]


def test_a_long_table_cell_is_cut_but_json_and_csv_keep_it(tmp_path: Path, capsysbinary: Any) -> None:
    store = tmp_path / "long"
    exporter = ProvSpanExporter(store=f"oxigraph:{store}")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    long_question = "Why " + "very " * 60 + "long?"
    with agent_session(long_question, session_id="long", tracer_provider=provider) as session:
        session.conclude("yes")
    provider.shutdown()
    query = "SELECT ?text WHERE { ?q tg:query ?text }"
    table = cli(capsysbinary, "query", query, "--store", str(store)).out.splitlines()
    assert table[2] == long_question[:97] + "..."
    doc = json.loads(cli(capsysbinary, "query", query, "--store", str(store), "--format", "json").out)
    assert doc["results"]["bindings"][0]["text"]["value"] == long_question
    assert long_question in cli(capsysbinary, "query", query, "--store", str(store), "--format", "csv").out


def test_syntax_errors_list_a_few_expected_words(filled: Filled, capsysbinary: Any) -> None:
    store = str(filled.path)
    r = cli(capsysbinary, "query", "SELECT ?q WHERE {\n  ?q tg:query ?text\n  FILTER(\n}", "--store", store)
    one_error_line(r, "SPARQL syntax error at line 4, column 2 near '}': expected an expression or a keyword")
    r = cli(capsysbinary, "query", "SELECT ?q WHERE { ?q ?p ?o", "--store", store)
    one_error_line(r, "expected one of ',', '.', ';', '{', '}', a name or a number")
    assert "FDCF" not in r.err and "\\u{" not in r.err
    r = cli(capsysbinary, "query", "SELECT ?q WHERE { ?q ?p ?o } ORDER", "--store", store)
    one_error_line(r, "expected one of GROUP, LATERAL, LIMIT or SERVICE")


def test_a_directory_holding_the_store_names_it(filled: Filled, tmp_path: Path, capsysbinary: Any) -> None:
    """The default store's parent (~/.local/share/otel-prov) given as the store: the store inside it
    is named."""
    one_error_line(cli(capsysbinary, "list", "--store", str(filled.path.parent)),
                   f"no store at {filled.path.parent}, but there is one inside it: {filled.path}")
    (tmp_path / "empty").mkdir()
    one_error_line(cli(capsysbinary, "list", "--store", str(tmp_path / "empty")),
                   "nothing has been exported there yet")


def test_demo_prints_commands_that_work_as_printed(tmp_path: Path, capsysbinary: Any) -> None:
    """--jaeger-url is in the `show` lines whose output has Jaeger links; a store in memory prints no
    command (none could read it); --otlp says where the spans went."""
    store = tmp_path / "with space"
    r = cli(capsysbinary, "demo", "--store", str(store), "--jaeger-url", "http://127.0.0.1:16686")
    assert r.code == 0
    shows = [line for line in r.out.splitlines() if line.startswith("$ otel-prov show ")]
    assert len(shows) == 3 and r.out.count("Jaeger: http://127.0.0.1:16686/trace/") >= 3
    for line in shows:  # run each as printed: the same text
        argv = shlex.split(line[2:])[1:]
        again = cli(capsysbinary, *argv)
        assert again.code == 0 and again.out.splitlines()[0] in r.out
        assert "Jaeger: http://127.0.0.1:16686/trace/" in again.out
    assert f"otel-prov ui --store '{store}' --jaeger-url http://127.0.0.1:16686" in r.out
    memory = cli(capsysbinary, "demo", "--store", "memory:")
    assert memory.code == 0 and "$ otel-prov" not in memory.out and "Next:" not in memory.out
    assert memory.out.startswith("The store is in memory (memory:)")
    assert memory.out.count("=== ") == 4  # the three sessions and the agent's sub-trace


def test_demo_otlp_says_where_the_spans_went(tmp_path: Path, capsysbinary: Any) -> None:
    """A real OTLP/gRPC receiver (otel-prov serve, in process) takes the spans; then none listens."""
    from otel_prov.serve.server import Server
    from otel_prov.settings import serve_settings

    server = Server(serve_settings(store="memory:", grpc_port="0", http_port="off"))
    try:
        endpoint = f"http://{server.grpc_address}"
        r = cli(capsysbinary, "demo", "-q", "--store", "memory:", "--otlp", endpoint)
        assert r.code == 0
        received = server.receiver.stats.spans_acknowledged
        assert received > 0
        said = [line for line in r.err.splitlines() if "over OTLP/gRPC" in line]
        assert said == [f"otel-prov demo: {received} spans sent over OTLP/gRPC to {endpoint} "
                         "(service otel-prov-demo)"]
    finally:
        server.stop()
    r = cli(capsysbinary, "demo", "-q", "--store", "memory:", "--otlp", endpoint)  # nobody listens now
    assert r.code == 0
    assert f"spans could not be sent over OTLP/gRPC to {endpoint} (service otel-prov-demo): is Jaeger " \
           "(or a Collector) listening there?" in r.err


_CTRL_C_WHILE_LOADING = """
import sys

class CtrlC:  # Ctrl-C arriving while the command's modules load (they load inside main())
    def find_spec(self, name, path=None, target=None):
        if name == "otel_prov.cli.app":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, CtrlC())
from otel_prov.cli import main
sys.exit(main(["list"]))
"""


def test_ctrl_c_while_the_command_loads_is_one_line_and_exit_130() -> None:
    """The entry point loads nothing heavy: Ctrl-C while the command's modules load (the first
    ~0.1 s of every command) says 'interrupted' in one line and exits 130, not a traceback."""
    done = subprocess.run([sys.executable, "-c", _CTRL_C_WHILE_LOADING], capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stderr, done.stdout) == (130, "otel-prov: interrupted\n", "")
    light = subprocess.run([sys.executable, "-c", "import sys, otel_prov.cli; "
                            "print(sorted(m for m in sys.modules if m.startswith('otel_prov')))"],
                           capture_output=True, text=True, timeout=60)
    assert light.stdout.strip() == "['otel_prov', 'otel_prov.cli']", light.stdout


def test_no_crash_and_no_traceback_on_deep_queries_huge_limits_or_a_full_device(filled: Filled) -> None:
    """A query nested 5,000 deep (10 KB) once crashed the process in the engine's parser (exit 139);
    ``--limit`` past a 64-bit number and stdout on a full device printed tracebacks.  Each is one line
    now, with the exit status of its kind (as processes: a crash would take a test runner with it)."""
    store = str(filled.path)
    deep = "SELECT * WHERE { " + "{ " * 5000 + "?s ?p ?o" + " }" * 5000 + " }"
    for argv, code, says in (
            (["query", deep, "--store", store], 2, "nests 5001 levels deep"),
            (["list", "--limit", "99999999999999999999999", "--store", store], 2, "must be at most 1000000"),
            (["list", "--limit", "1e400", "--store", store], 2, "not a number")):
        run = _process(*argv)
        assert run.returncode == code, (argv[0], run.returncode, run.stderr[-500:])
        assert says in run.stderr and "Traceback" not in run.stderr
    with open("/dev/full", "w") as full:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        run = subprocess.run([sys.executable, "-m", "otel_prov.cli", "list", "--store", store], stdout=full,
                             stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    assert run.returncode == 1
    assert run.stderr.splitlines() == ["otel-prov: error: No space left on device (the output)"]


def test_usage_errors_print_the_subcommands_usage_and_one_error_line() -> None:
    """An unknown argument printed the top-level usage; ``serve --log-level verbose`` a traceback."""
    unknown = _process("list", "--bogus")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("usage: otel-prov list ")
    assert unknown.stderr.splitlines()[-1] == "otel-prov list: error: unrecognized arguments: --bogus"
    # an option put before its command: argparse took its value for the command
    before = _process("--log-level", "debug", "serve")
    assert before.returncode == 2 and before.stderr.splitlines()[-1] == \
        "otel-prov: error: --log-level goes after the command: otel-prov serve --log-level debug"
    level = _process("serve", "--log-level", "verbose", "--store", "memory:")
    assert level.returncode == 2 and "Traceback" not in level.stderr
    last = level.stderr.splitlines()[-1]
    assert "argument --log-level: invalid choice: 'verbose' (choose from DEBUG, INFO" in last


def test_the_list_table_lines_up_wide_characters() -> None:
    """A CJK question takes two columns a character on a terminal: the table pads by columns, not by
    characters (the columns after a CJK question were misaligned), and cuts by columns too."""
    from otel_prov.read.model import SessionRow
    from otel_prov.render.text import display_width, session_table

    rows = [SessionRow(id=f"urn:trustgraph:agent:{n}", type="Agent", question=q, time=None)
            for n, q in enumerate(("东京的人口是多少？", "How many people live in Tokyo?", "東京" * 40))]
    lines = session_table(rows).splitlines()

    def separators(line: str) -> tuple[int, ...]:  # the terminal columns of each " | "
        return tuple(display_width(line[:i]) for i in range(len(line)) if line.startswith(" | ", i))

    assert len({separators(line) for line in lines[2:]}) == 1 and separators(lines[2])
    assert all(display_width(cell.strip()) <= 45 for line in lines[2:] for cell in line.split(" | ")[2:3])


def test_list_filters_by_status_text_tool_and_time(filled: Filled, capsysbinary: Any) -> None:
    """Filters everywhere: status, words of any recorded text (not only the question), a tool, a time
    range; a default limit with a line saying how many more match; bad values refused in one line."""
    store = str(filled.path)

    def ids(*argv: str) -> set[str]:
        r = cli(capsysbinary, "list", "--store", store, "--format", "json", *argv)
        assert r.code == 0, r.err
        return {row["id"] for row in json.loads(r.out)}

    everything = ids()
    assert ids("--status", "unfinished") == {filled.unfinished}
    assert ids("--status", "failed") == {filled.failed}
    # as the list shows it ("error", "Agent"), whatever the case
    assert ids("--status", "Error") == {filled.failed} == ids("--status", "FAILED", "--type", "Agent")
    assert filled.agent.explain_id in ids("--status", "complete", "--sort", "Duration")
    # "19949.2" is only in a tool's observation of the agent session, never in a question.
    assert ids("--text", "19949.2") == {filled.agent.explain_id}
    assert filled.agent.explain_id in ids("--tool", "calculator")
    assert ids("--tool", "no_such_tool") == set()
    # the service that recorded them (the resource's service.name)
    assert ids("--service", OTHER_SERVICE) == {filled.other.explain_id}
    assert ids("--service", SERVICE) == everything - {filled.other.explain_id}
    assert ids("--service", "unknown_service") == set()
    assert ids("--since", "2000-01-01") == everything and ids("--until", "2000-01-01") == set()
    r = cli(capsysbinary, "list", "--store", store, "--limit", "2")
    assert r.code == 0 and f"({len(everything) - 2} more: --limit N shows more)" in r.err
    one_error_line(cli(capsysbinary, "list", "--store", store, "--since", "yesterday"),
                   "--since='yesterday': expected an ISO 8601 time", code=2)
    # a time with its offset from UTC means that time (the list's times are UTC)
    rows = json.loads(cli(capsysbinary, "list", "--store", store, "--format", "json").out)
    newest = datetime.datetime.fromisoformat(rows[0]["time"].replace("Z", "+00:00"))
    for hours, sign in ((2, "+"), (5, "-")):
        shifted = newest + datetime.timedelta(hours=hours if sign == "+" else -hours)
        local = shifted.strftime("%Y-%m-%dT%H:%M") + f"{sign}{hours:02d}:00"
        assert ids("--since", local) == ids("--since", newest.strftime("%Y-%m-%dT%H:%M")) != set(), local
        assert ids("--until", local) == ids("--until", newest.strftime("%Y-%m-%dT%H:%M")), local


def test_list_sorts_by_duration_steps_and_status(filled: Filled, capsysbinary: Any) -> None:
    store = str(filled.path)

    def rows(*argv: str) -> list[dict[str, Any]]:
        r = cli(capsysbinary, "list", "--store", store, "--format", "json", *argv)
        assert r.code == 0, r.err
        return list(json.loads(r.out))

    durations = [r["durationMs"] for r in rows("--sort", "duration") if r["durationMs"] is not None]
    assert durations == sorted(durations, reverse=True) and len(durations) >= 3
    steps = [r["steps"] for r in rows("--sort", "steps") if r["steps"] is not None]
    assert steps == sorted(steps, reverse=True)
    statuses = [r["status"] for r in rows("--sort", "status")]
    assert statuses[:2] == ["error", "unfinished"] and set(statuses[2:]) == {"complete"}
    longest = rows("--sort", "duration")[0]["id"]
    assert [r["id"] for r in rows("--sort", "duration", "--limit", "1")] == [longest]


def _value_flags() -> list[tuple[str, str]]:
    """Every (subcommand, flag) whose value is checked: a choice, a number, a time, a URL, a store."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = []
    for name, command in sub.choices.items():
        for action in command._actions:
            flags = [o for o in action.option_strings if o.startswith("--")]
            if not flags or action.nargs == 0 or flags[0] == "--help":
                continue
            if action.choices is not None or action.type is not None or flags[0] in (
                    "--since", "--until", "--jaeger-url", "--store", "--profile", "--grpc-port",
                    "--http-port", "--max-inflight", "--ack-timeout", "--drain-timeout", "--memory-budget",
                    "--workers", "--max-attribute-bytes", "--port", "--query-timeout", "--row-limit",
                    "--content-policy", "--redact"):
                found.append((name, flags[0]))
    return found


@pytest.mark.parametrize("command,flag", _value_flags())
def test_every_flag_refuses_a_bad_value_in_one_line(command: str, flag: str, tmp_path: Path) -> None:
    """No traceback anywhere: every subcommand given a bad value of any flag it checks answers with its
    own usage and one error line naming the flag, exit 2, before doing anything."""
    bad = {"--store": "", "--jaeger-url": "not a url"}.get(flag, "bogus!")
    argv = [command, flag, bad]
    if command in ("show",):
        argv.append("urn:trustgraph:agent:x")
    if command == "diff":
        argv += ["urn:trustgraph:agent:x", "urn:trustgraph:agent:y"]
    if command == "query":
        argv.append("ASK { ?s ?p ?o }")
    if command == "import":
        argv.append(str(tmp_path / "x.nq"))
    env = {"XDG_DATA_HOME": str(tmp_path)}
    run = _process(*argv, env=env)
    assert run.returncode == 2, (argv, run.returncode, run.stderr[-400:])
    assert "Traceback" not in run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert "error" in last and flag in last or bad in last, (argv, last)
