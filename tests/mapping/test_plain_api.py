"""The attribute contract: code that uses only the plain OpenTelemetry API with the documented
``otel_prov.*`` attributes produces exactly the graph the helper API produces (approvals included)."""

from __future__ import annotations

from collections.abc import Iterator

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator

from otel_prov import agent_session, doc_rag_session, spans_to_dataset
from tests.support.graphs import assert_isomorphic


class _Replay(IdGenerator):
    """Hands out the ids another run used, in the same order."""

    def __init__(self, trace_ids: list[int], span_ids: list[int]) -> None:
        self._trace_ids: Iterator[int] = iter(trace_ids)
        self._span_ids: Iterator[int] = iter(span_ids)

    def generate_trace_id(self) -> int:
        return next(self._trace_ids)

    def generate_span_id(self) -> int:
        return next(self._span_ids)


def test_plain_api_agent_matches_helper(captured) -> None:
    provider, memory = captured
    with agent_session("Capital of France?", collection="geo", tracer_provider=provider) as s:
        with s.iteration() as step:
            step.thought("look it up")
            step.call_tool("lookup", lambda country: "Paris", {"country": "France"})
            step.approval("alice", comment="right tool")
        s.conclude("Paris")
    s.approval("bob", approved=False, role="reviewer")
    helper = memory.get_finished_spans()
    by_name = {sp.name: sp for sp in helper}
    approvals = [sp for sp in helper if sp.name == "approval"]
    by_name["approval 1"], by_name["approval 2"] = approvals
    creation = ["invoke_agent react-agent", "question", "iteration 1", "execute_tool lookup", "approval 1",
                "approval 2"]

    ids = _Replay([by_name[creation[0]].context.trace_id], [by_name[n].context.span_id for n in creation])
    plain_memory = InMemorySpanExporter()
    plain = TracerProvider(id_generator=ids)
    plain.add_span_processor(SimpleSpanProcessor(plain_memory))
    tracer = plain.get_tracer("my-agent")
    t = {n: (by_name[n].start_time, by_name[n].end_time) for n in creation}
    helper_uuid = s.explain_id.rsplit(":", 1)[1]

    # --- what a user of the plain OpenTelemetry API writes (docs/attributes.md) ---
    common = {"otel_prov.flow": "agent", "gen_ai.agent.name": "react-agent"}
    with tracer.start_as_current_span("invoke_agent react-agent", start_time=t[creation[0]][0],
                                      end_on_exit=False) as root:
        root.set_attributes({**common, "otel_prov.step": "session",
                             "otel_prov.question": "Capital of France?",
                             "otel_prov.collection": "geo"})
        tracer.start_span("question", start_time=t["question"][0], attributes={
            **common, "otel_prov.step": "question", "otel_prov.question": "Capital of France?",
            "otel_prov.collection": "geo"}).end(t["question"][1])
        with tracer.start_as_current_span("iteration 1", start_time=t["iteration 1"][0],
                                          end_on_exit=False) as it:
            it.set_attributes({**common, "otel_prov.step": "analysis", "otel_prov.iteration": 1,
                               "otel_prov.thought": "look it up", "otel_prov.action": "lookup",
                               "otel_prov.arguments": '{"country": "France"}'})
            tracer.start_span("execute_tool lookup", start_time=t["execute_tool lookup"][0],
                              attributes={**common, "otel_prov.step": "tool"}).end(
                                  t["execute_tool lookup"][1])
            it.set_attribute("otel_prov.observation", "Paris")
            tracer.start_span("approval", start_time=t["approval 1"][0], attributes={
                **common, "otel_prov.step": "approval",
                "otel_prov.approval.of": "urn:trustgraph:agent:" + helper_uuid + "/i1",
                "otel_prov.approval.decision": "approved", "otel_prov.approval.by": "alice",
                "otel_prov.approval.comment": "right tool"}).end(t["approval 1"][1])
            it.end(t["iteration 1"][1])
        root.set_attributes({"otel_prov.answer": "Paris", "otel_prov.iteration": 1})
        root.end(t[creation[0]][1])
        tracer.start_span("approval", start_time=t["approval 2"][0], attributes={
            **common, "otel_prov.step": "approval",
            "otel_prov.approval.of": "urn:trustgraph:agent:" + helper_uuid + "/final",
            "otel_prov.approval.decision": "rejected", "otel_prov.approval.by": "bob",
            "otel_prov.approval.role": "reviewer"}).end(t["approval 2"][1])
    # ---

    assert_isomorphic(spans_to_dataset(helper), spans_to_dataset(plain_memory.get_finished_spans()))
    plain.shutdown()


def test_plain_api_root_span_alone_gives_the_question(captured) -> None:
    """The instant `question` span is optional: a root span alone yields the same Question."""
    provider, memory = captured
    with doc_rag_session("What is PROV?", session_id="d-9", tracer_provider=provider) as s:
        s.exploration(["c1"])
        s.synthesis("a model")
    with_marker = spans_to_dataset(memory.get_finished_spans())
    without = spans_to_dataset([sp for sp in memory.get_finished_spans() if sp.name != "question"])
    assert_isomorphic(with_marker, without)
