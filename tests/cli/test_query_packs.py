"""``otel-prov query --pack``: every canned query's answer on a real store of the example flows and an
approved run, in both profiles, against gold answers computed here from the read model of the same
sessions (not from the queries)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import ProvSpanExporter
from otel_prov.examples.rag import doc_rag, graph_rag
from otel_prov.examples.react_agent import run_agent
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.model.quads import nquads
from otel_prov.read import packs
from otel_prov.read.model import Trace
from otel_prov.read.reader import TraceReader
from otel_prov.stores import open_for_reading, open_for_writing, parse_store
from tests.interop.runner import SCENARIOS
from tests.support.approvals import record_approved_run
from tests.support.cli import cli

INTEROP = "interop"
"""The store of every real-instrumentation scenario's spans (tests/interop): framework agents, RAG
queries and conversations as their own packages record them, mapped as ``serve`` maps them."""


@pytest.fixture(scope="module", params=["seed", "strict", "trustgraph", INTEROP])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp(f"packs-{request.param}") / "store"
    if request.param == INTEROP:
        captured = request.getfixturevalue("interop")
        writer = open_for_writing(parse_store(str(path)))
        try:
            for name in sorted(SCENARIOS):
                update = TraceMapper("seed").map(captured.spans(name), captured.logs(name))
                writer.add(nquads(update.add), len(update.add))
        finally:
            writer.close()
        return str(path)
    memory, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    run_agent(tracer_provider=provider)
    graph_rag(tracer_provider=provider)
    doc_rag(tracer_provider=provider)
    provider.shutdown()
    exporter = ProvSpanExporter(store=path, profile=request.param)
    assert exporter.export(list(memory.get_finished_spans())).name == "SUCCESS"
    exporter.shutdown()
    record_approved_run(str(path), request.param)
    return str(path)


def _traces(store: str) -> list[Trace]:
    """Every top-level session, read by the read model."""
    opened = open_for_reading(parse_store(store))
    try:
        reader = TraceReader(opened)
        return [reader.trace(row.id)[0] for row in reader.sessions()]
    finally:
        opened.close()


def _all(traces: list[Trace]) -> list[Trace]:
    """The sessions with the sub-traces their steps ran."""
    out = []
    for trace in traces:
        out.append(trace)
        out += _all([sub for step in trace.steps for sub in step.subtraces] + trace.subtraces)
    return out


def _answer(trace: Trace) -> Any:
    ends = [s for s in trace.steps if s.kind in ("Conclusion", "Synthesis")]
    return ends[-1] if ends else None


def _rows(capsysbinary: Any, store: str, name: str) -> list[dict[str, str]]:
    r = cli(capsysbinary, "query", "--pack", name, "--store", store, "--format", "json")
    assert r.code == 0, r.err
    return [{k: v["value"] for k, v in row.items()} for row in json.loads(r.out)["results"]["bindings"]]


def test_every_pack_query_is_listed_and_has_gold_answers_below() -> None:
    names = {q.name for q in packs.queries()}
    assert names == set(GOLD)
    assert all(q.title and q.asks and q.source for q in packs.queries())


def _sessions(traces: list[Trace]) -> set[tuple[str, ...]]:
    return {(t.id, t.type, t.question) for t in traces}


def _selected_facts(traces: list[Trace]) -> set[tuple[str, ...]]:
    return {(_answer(t).iri, *edge.edge, edge.reasoning or "") for t in _all(traces) for step in t.steps
            for edge in step.edges if _answer(t) is not None and edge.edge}


def _documents(traces: list[Trace]) -> set[tuple[str, ...]]:
    out = set()
    for trace in _all(traces):
        answer = _answer(trace)
        if answer is None:
            continue
        for part in _all([trace]):
            for step in part.steps:
                out |= {(answer.iri, chunk) for chunk in step.values.get("selectedChunk", [])}
    return out


def _periods(traces: list[Trace]) -> set[tuple[str, ...]]:
    times: dict[str, list[str]] = defaultdict(list)
    for trace in _all(traces):
        if trace.time:
            times[trace.service or "(not recorded)"].append(trace.time)
    return {(service, min(when), max(when), str(len(when))) for service, when in times.items()}


def _tools(traces: list[Trace]) -> set[tuple[str, ...]]:
    calls = Counter(s.value("action") for t in _all(traces) for s in t.steps if s.value("action"))
    return {(tool, str(n)) for tool, n in calls.items() if tool}


def _input_output(traces: list[Trace]) -> set[tuple[str, ...]]:
    return {(t.id, t.question, a.iri, a.value("answer") or a.value("content") or "")
            for t in _all(traces) for a in [_answer(t)] if a is not None}


def _approvals(traces: list[Trace]) -> set[tuple[str, ...]]:
    return {(step.iri, a.decision, a.by or "", a.role or "", a.time or "") for t in _all(traces)
            for step in t.steps for a in step.approvals}


def _causes(traces: list[Trace]) -> set[tuple[str, ...]]:
    """Only which answers have causes: how many is each profile's own (strict has activities too)."""
    return {(_answer(t).iri,) for t in _all(traces) if _answer(t) is not None}


def _after_a_tool(traces: list[Trace]) -> set[tuple[str, ...]]:
    out = set()
    for top in traces:
        for trace in _all([top]):
            answer = _answer(trace)
            if answer is None:
                continue
            # every tool call before the answer in its own session, and (for a sub-trace) before the
            # step of the session above that ran it
            out |= {(s.value("action"), s.value("arguments") or "", answer.iri) for s in trace.steps
                    if s.value("action")}
    for top in traces:
        for k, step in enumerate(top.steps):
            for sub in step.subtraces:
                answer = _answer(sub)
                out |= {(s.value("action"), s.value("arguments") or "", answer.iri) for s in top.steps[:k + 1]
                        if s.value("action")} if answer is not None else set()
    return out


GOLD = {
    "trustgraph/sessions": (("session", "type", "question"), _sessions),
    "trustgraph/selected-facts": (("answer", "subject", "predicate", "object", "why"), _selected_facts),
    "trustgraph/documents": (("answer", "chunk"), _documents),
    "records/periods-of-use": (("service", "first", "last", "sessions"), _periods),
    "records/tools-used": (("tool", "calls"), _tools),
    "records/input-output": (("question", "input", "answer", "output"), _input_output),
    "records/approvals": (("node", "decision", "person", "role", "time"), _approvals),
    "lineage/causes": (("answer",), _causes),
    "lineage/after-a-tool": (("tool", "arguments", "answer"), _after_a_tool),
}


NONE_IN_INTEROP = {"records/approvals", "trustgraph/selected-facts"}
"""What no framework records (a person's approval, a knowledge graph's selected edges): the pack
answers nothing there, as the gold says."""


@pytest.mark.parametrize("name", sorted(GOLD))
def test_a_pack_query_gives_the_gold_answer(name: str, store: str, capsysbinary: Any) -> None:
    columns, gold = GOLD[name]
    want = gold(_traces(store))
    if f"packs-{INTEROP}" not in store or name not in NONE_IN_INTEROP:
        assert want, f"{name}: the test data has nothing for it"
    got = {tuple(row.get(c, "") for c in columns) for row in _rows(capsysbinary, store, name)}
    assert got == want


def test_pack_list_and_usage(store: str, capsysbinary: Any, tmp_path: Path) -> None:
    listed = cli(capsysbinary, "query", "--pack", "list")
    assert listed.code == 0 and all(name in listed.out for name in GOLD)
    assert cli(capsysbinary, "query", "--pack", "records.tools-used", "--store", store).code == 0
    wrong = cli(capsysbinary, "query", "--pack", "records/nothing", "--store", store)
    assert wrong.code == 2 and "records/tools-used" in wrong.err
    both = cli(capsysbinary, "query", "SELECT * {}", "--pack", "records/tools-used", "--store", store)
    assert both.code == 2
