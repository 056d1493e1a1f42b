"""Causal edges beside the chain (issue 19, item 1; docs/model.md, "Causal edges"): which steps'
results each model call was given, by tool call id, as ``otelprov:informedBy`` in both profiles
and, in strict, the step activities' ``prov:wasInformedBy``; the tool call id on each step.  Made
with the real SDK and the plain OpenTelemetry API (GenAI conventions, no ``otel_prov`` attribute)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import rdflib
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rdflib import RDFS

from otel_prov import OTELPROV, TG, ProvSpanExporter, spans_to_dataset
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.otlp import LazyRequest
from otel_prov.mapping.spans import records_from_otlp
from otel_prov.model.quads import nquads
from tests.support.cli import cli
from tests.support.genai import S, make
from tests.support.prov import ONTOLOGY, closure_errors, time_order_violations
from tests.support.shapes import agent, chat, results, said, tool, user

PROV = rdflib.Namespace("http://www.w3.org/ns/prov#")
Q = "How warm is it in the twelve cities?"
CITIES = [f"city-{n:02d}" for n in range(1, 13)]
"""More than ten parallel calls of one tool."""


def parallel_run() -> S:
    """Twelve parallel calls of one tool (their spans run in another order than asked), a call
    given all twelve results that asks for one more, and an answer given that last result (with the
    twelve again, as a conversation's history: they informed it through the step before)."""
    first = said("All twelve at once.", *[(f"c-{c}", "temp", {"city": c}) for c in CITIES])
    order = CITIES[::2] + CITIES[1::2]
    tools = [tool(100 + n, "temp", f"c-{c}", {"city": c}, f"{c}: {n}") for n, c in enumerate(order)]
    twelve = results(*[(f"c-{c}", f"{c}: {order.index(c)}") for c in CITIES])
    second = said("Now the mean.", ("c-mean", "mean", {"of": "all"}))
    return agent([
        chat(10, [user(Q)], first),
        *tools,
        chat(200, [user(Q), first, twelve], second),
        tool(210, "mean", "c-mean", {"of": "all"}, "11.5"),
        chat(300, [user(Q), first, twelve, second, results(("c-mean", "11.5"))], said("The mean is 11.5.")),
    ])


def dataset(root: S, profile: str) -> rdflib.Dataset:
    return spans_to_dataset(make(root), profile=profile)


def edges(ds: rdflib.Dataset, predicate: rdflib.URIRef) -> set[tuple[str, str]]:
    return {(str(s).rsplit("/", 1)[-1], str(o).rsplit("/", 1)[-1]) for s, _, o, _ in
            ds.quads((None, predicate, None, None))}


def step_of(ds: rdflib.Dataset) -> dict[str, str]:
    """Tool call id -> the local name of its Analysis (``i3``)."""
    found = ds.quads((None, OTELPROV.toolCallId, None, None))
    return {str(o): str(s).rsplit("/", 1)[-1] for s, _, o, _ in found}


@pytest.mark.parametrize("profile", ["seed", "strict"])
def test_each_model_call_is_informed_by_the_steps_whose_results_it_was_given_first(profile: str) -> None:
    ds = dataset(parallel_run(), profile)
    steps = step_of(ds)
    assert set(steps) == {f"c-{c}" for c in CITIES} | {"c-mean"}  # every step keeps its call's id
    mean = steps["c-mean"]
    assert mean == "i13"
    want = {(mean, steps[f"c-{c}"]) for c in CITIES} | {("final", mean)}
    assert edges(ds, OTELPROV.informedBy) == want
    # The chain is the spec's, unchanged: each step derives from the one before.
    chain = edges(ds, PROV.wasDerivedFrom)
    assert ("i13", "i12") in chain and ("final", "i13") in chain


def test_strict_states_the_edges_between_the_step_activities_and_stays_valid_prov() -> None:
    ds = dataset(parallel_run(), "strict")
    steps = step_of(ds)
    informed = edges(ds, PROV.wasInformedBy)
    assert informed == {("activity", "activity")}  # local names only: compare the whole IRIs
    whole = {(str(s), str(o)) for s, _, o, _ in ds.quads((None, PROV.wasInformedBy, None, None))}
    call = rdflib.Literal("c-mean")
    mean = next(str(s) for s, _, _, _ in ds.quads((None, OTELPROV.toolCallId, call, None)))
    session = mean.rsplit("/", 1)[0]
    assert whole == {(f"{mean}/activity", f"{session}/{steps[f'c-{c}']}/activity") for c in CITIES}
    onto = rdflib.Dataset()
    onto.parse(ONTOLOGY, format="nquads")
    ontology = [q[:3] for q in onto.quads((None, None, None, None))]
    # What docs/model.md says the new predicate means, checked with PROV-O: no inconsistency.
    ontology.append((OTELPROV.informedBy, RDFS.subPropertyOf, PROV.wasInfluencedBy))
    assert closure_errors(ds, ontology) == []
    assert time_order_violations(ds) == []


def test_results_without_ids_pair_in_order_or_make_no_edge() -> None:
    ask = said("Both.", ("c1", "temp", {"city": "Paris"}), ("c2", "temp", {"city": "Oslo"}))

    def run(*given: tuple[str | None, str]) -> rdflib.Dataset:
        return dataset(agent([chat(10, [user(Q)], ask),
                              chat(20, [user(Q), ask, results(*given)], said("Paris 21, Oslo 4."))]), "seed")

    # As many results as the message before asked for: they answer its calls in order (the rule
    # that gives the steps their observations), and the edges follow the same pairing.
    paired = run((None, "21"), (None, "4"))
    assert len(list(paired.quads((None, TG.observation, None, None)))) == 2
    assert edges(paired, OTELPROV.informedBy) == {("final", "i1"), ("final", "i2")}
    # One result too many: which answers which is not known, so neither an observation nor an edge.
    unknown = run((None, "21"), (None, "4"), (None, "x"))
    assert len(list(unknown.quads((None, TG.observation, None, None)))) == 0
    assert edges(unknown, OTELPROV.informedBy) == set()


def test_a_result_given_to_two_calls_informs_the_first_only() -> None:
    ask = said("Paris.", ("c1", "temp", {"city": "Paris"}))
    again = said("Oslo.", ("c2", "temp", {"city": "Oslo"}))
    root = agent([
        chat(10, [user(Q)], ask),
        tool(15, "temp", "c1", {"city": "Paris"}, "21"),
        chat(20, [user(Q), ask, results(("c1", "21"))], again),
        tool(25, "temp", "c2", {"city": "Oslo"}, "4"),
        # A framework that sends the whole history as the input's tail: c1 was given before.
        chat(30, [user(Q), results(("c1", "21")), again, results(("c1", "21"), ("c2", "4"))],
             said("21 and 4.")),
    ])
    ds = dataset(root, "seed")
    assert edges(ds, OTELPROV.informedBy) == {("i2", "i1"), ("final", "i2")}


def test_explain_follows_the_edges_back_from_the_answer_and_forward_from_a_result(
        tmp_path: Path, capsysbinary: Any) -> None:
    store = str(tmp_path / "store")
    exporter = ProvSpanExporter(store=store)
    assert exporter.export(make(parallel_run())).name == "SUCCESS"
    exporter.shutdown()

    def explain(*args: str) -> dict[str, list[dict[str, Any]]]:
        r = cli(capsysbinary, "explain", *args, "--store", store, "--format", "json")
        assert r.code == 0, r.err
        data: dict[str, list[dict[str, Any]]] = json.loads(r.out)
        return data

    asked = dataset(parallel_run(), "seed").quads((None, TG.query, None, None))
    question = next(str(s) for s, _, _, _ in asked)
    back = explain(question)["nodes"]
    assert back[0]["iri"] == f"{question}/final"
    informed = {n["iri"].rsplit("/", 1)[-1] for n in back if n.get("via") == "informedBy"}
    # From the answer: the step whose result it was given, and through it each of the twelve.
    assert informed == {f"i{n}" for n in range(1, 14)}
    ahead = {n["iri"].rsplit("/", 1)[-1] for n in explain(f"{question}/i5", "--forward")["nodes"]}
    assert {"i13", "final"} <= ahead


# -- span links ---------------------------------------------------------------------------------------


def linked_spans() -> tuple[list[ReadableSpan], trace.SpanContext]:
    """An agent whose second tool call links to its first (a result it picked up again) and to a
    span of another trace (the batch job that queued the work), with the real SDK."""
    memory, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("batch") as batch:
        job = batch.get_span_context()
    with tracer.start_as_current_span("invoke_agent weather", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}):
        with tracer.start_as_current_span("execute_tool temp", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "temp",
                "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                "gen_ai.tool.call.result": "21"}) as first:
            earlier = first.get_span_context()
        with tracer.start_as_current_span("execute_tool mean", links=[trace.Link(earlier), trace.Link(job)],
                                          attributes={"gen_ai.operation.name": "execute_tool",
                                                      "gen_ai.tool.name": "mean",
                                                      "gen_ai.tool.call.arguments": '{"of": "all"}',
                                                      "gen_ai.tool.call.result": "21"}):
            pass
    provider.shutdown()
    return list(memory.get_finished_spans()), job


def _linked(ds: rdflib.Dataset) -> set[tuple[str, str]]:
    found = ds.quads((None, OTELPROV.linkedSpan, None, None))
    return {(str(s).rsplit("/", 1)[-1], str(o)) for s, _, o, _ in found}


@pytest.mark.parametrize("profile", ["seed", "strict"])
def test_span_links_are_recorded_from_sdk_spans_and_from_otlp(profile: str) -> None:
    spans, job = linked_spans()
    first = next(s for s in spans if s.name == "execute_tool temp").context
    want = {f"{first.trace_id:032x}-{first.span_id:016x}", f"{job.trace_id:032x}-{job.span_id:016x}"}
    from_sdk_spans = spans_to_dataset(spans, profile=profile)
    assert {o for s, o in _linked(from_sdk_spans) if s == "i2"} == want
    body = encode_spans(spans).SerializeToString()
    records, problems = records_from_otlp(LazyRequest(body).resource_spans)
    assert problems == []
    assert {link for r in records for link in r.links} == {(first.trace_id, first.span_id),
                                                             (job.trace_id, job.span_id)}
    from_wire = rdflib.Dataset()
    from_wire.parse(data=nquads(TraceMapper(profile).map(records).add), format="nquads")
    assert _linked(from_wire) == _linked(from_sdk_spans)
    # Strict: the link within the trace, between the two steps' activities (the other trace's span
    # is no node here: its ids only).
    found = from_sdk_spans.quads((None, PROV.wasInformedBy, None, None))
    informed = {(str(s), str(o)) for s, _, o, _ in found}
    if profile == "strict":
        session = next(str(s) for s, _, _, _ in from_sdk_spans.quads((None, TG.query, None, None)))
        assert informed == {(f"{session}/i2/activity", f"{session}/i1/activity")}
    else:
        assert informed == set()


def test_explain_follows_a_link_within_the_trace_and_shows_one_to_another(
        tmp_path: Path, capsysbinary: Any) -> None:
    spans, job = linked_spans()
    store = str(tmp_path / "store")
    exporter = ProvSpanExporter(store=store)
    assert exporter.export(spans).name == "SUCCESS"
    exporter.shutdown()
    question = next(str(s) for s, _, _, _ in spans_to_dataset(spans).quads((None, TG.query, None, None)))
    r = cli(capsysbinary, "explain", f"{question}/i2", "--store", store, "--format", "json")
    assert r.code == 0, r.err
    nodes = json.loads(r.out)["nodes"]
    assert [n["iri"] for n in nodes if n.get("via") == "linkedSpan"] == [f"{question}/i1"]
    shown = {v["value"] for v in nodes[0]["values"] if v["property"] == "linkedSpan"}
    assert f"{job.trace_id:032x}-{job.span_id:016x}" in shown  # the other trace's span: its ids


def test_a_conversation_across_traces_has_the_same_edges() -> None:
    """Model calls in no agent, one trace each (a bare tool loop with the openai client): the
    conversation's steps and answer get their edges by tool call id too."""
    ask = said("Both.", ("c1", "temp", {"city": "Paris"}), ("c2", "temp", {"city": "Oslo"}))
    first = chat(10, [user(Q)], ask, **{"gen_ai.conversation.id": "conv-1"})
    second = chat(40, [user(Q), ask, results(("c1", "21"), ("c2", "4"))], said("Paris 21, Oslo 4."),
                  **{"gen_ai.conversation.id": "conv-1"})
    spans = make(first, trace_id=0x1111) + make(second, trace_id=0x2222)
    ds = spans_to_dataset(spans)
    assert set(step_of(ds)) == {"c1", "c2"}
    assert edges(ds, OTELPROV.informedBy) == {("final", step_of(ds)["c1"]), ("final", step_of(ds)["c2"])}
