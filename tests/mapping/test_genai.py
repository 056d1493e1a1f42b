"""Standard GenAI agent traces (no otel_prov attributes) -> the seed model.

Real SDK spans made with the plain OpenTelemetry API, shaped like the official
``opentelemetry-instrumentation-openai-agents-v2`` and like OpenInference LangChain/LangGraph and
smolagents.  The provider gets fixed ids and the spans fixed times, so the expected graphs are
written out in full as TriG.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
import rdflib
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from otel_prov import ProvSpanExporter, agent_session, spans_to_dataset
from otel_prov import attributes as A
from otel_prov.mapping.agents import NO_QUERY
from otel_prov.mapping.mapper import FORGOTTEN_WAITING, LATE_SPAN, TRACE_TOO_BIG, TraceMapper
from otel_prov.mapping.spans import SpanRecord, from_sdk, records_from_otlp
from otel_prov.mapping.tree import PARENT_LOOP, trace_view
from otel_prov.model.terms import isoformat_ns
from tests.support.genai import MS, T0, TRACE_ID, FixedIds, S, make
from tests.support.graphs import assert_isomorphic
from tests.support.mapping import map_agent_traces

NESTED = uuid.uuid5(uuid.NAMESPACE_URL, "https://w3id.org/otel-prov/ns#nested-agent")
"""docs/model.md: the namespace of the uuid5 of a session that does not own its trace id."""


def nested(trace_id: int, span_id: int, prefix: str = "urn:trustgraph:agent:") -> str:
    """The Question IRI of such a session, by the documented rule (the standard library's uuid5 of
    ``{trace id, 32 hex}/{span id, 16 hex}``), not by the code under test."""
    return prefix + str(uuid.uuid5(NESTED, f"{trace_id:032x}/{span_id:016x}"))

U = "urn:trustgraph:agent:4bf92f35-77b3-4da6-a3ce-929d0e0e4736"

PREFIXES = """
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix tg: <https://trustgraph.ai/ns/> .
@prefix otelprov: <https://w3id.org/otel-prov/ns#> .
@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
"""
TID = 'otelprov:traceId "4bf92f3577b34da6a3ce929d0e0e4736"'


def sid(n: int) -> str:
    return f'otelprov:spanId "{n:016x}"'


def t(ms: int) -> str:
    return f'"2026-11-30T10:00:00.{ms:03d}Z"^^xsd:dateTime'


def when(start: int, end: int) -> str:
    """A node's times (docs/model.md: otelprov:startTime / endTime, the span it was written from)."""
    return f"otelprov:startTime {t(start)} ; otelprov:endTime {t(end)}"


def trig(body: str) -> rdflib.Dataset:
    ds = rdflib.Dataset()
    ds.parse(data=PREFIXES + "<urn:graph:retrieval> {\n" + body + "\n}", format="trig")
    return ds


def lit(text: str) -> str:
    """A Turtle string literal (JSON string escapes are Turtle escapes)."""
    return json.dumps(text)


# -- real spans with fixed ids and times ---------------------------------------------------------------


def messages(*pairs: tuple[str, list[dict[str, str]]]) -> str:
    return json.dumps([{"role": role, "parts": parts} for role, parts in pairs])


def text(content: str) -> dict[str, str]:
    return {"type": "text", "content": content}


def export(batches: Sequence[Sequence[ReadableSpan]], profile: str = "seed") -> list[rdflib.Dataset]:
    """The store after each batch, through a real exporter."""
    exporter = ProvSpanExporter(store="memory:", profile=profile)
    states = []
    try:
        for batch in batches:
            assert exporter.export(batch) is SpanExportResult.SUCCESS
            assert exporter.force_flush()
            states.append(exporter.store.to_dataset())
        return states
    finally:
        exporter.shutdown()


def empty() -> rdflib.Dataset:
    return rdflib.Dataset()


def objects(ds: rdflib.Dataset, predicate: str) -> set[str]:
    return {str(o) for _, _, o, _ in ds.quads((None, rdflib.URIRef(predicate), None, None))}


# -- openai-agents-v2 -------------------------------------------------------------------------------

QUERY = 'What\'s the weather in Paris? Reply in "°C"\nplease.'


def openai_agents_trace() -> S:
    """workflow -> invoke_agent -> turn spans -> chat / execute_tool, as openai-agents-v2 records
    a run (no tool call id, no conversation id; some spans with operation ``unknown``)."""
    tool_call = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'}
    return S("Agent workflow", 0, 100, {"gen_ai.operation.name": "unknown"}, [
        S("invoke_agent Weather agent", 1, 99, {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "Weather agent",
            "gen_ai.provider.name": "openai",
            "gen_ai.input.messages": messages(("system", [text("Be brief.")]), ("user", [text(QUERY)])),
            "gen_ai.output.messages": messages(
                ("assistant", [{"type": "reasoning", "content": "The tool said 18."},
                               text("18 °C, sunny.")])),
        }, [
            S("turn", 2, 50, {"gen_ai.operation.name": "unknown"}, [
                S("chat gpt-4o", 3, 20, {
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                    "gen_ai.output.messages": messages(("assistant", [tool_call])),
                }, kind=SpanKind.CLIENT),
                S("execute_tool get_weather", 21, 30, {
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.type": "function",
                    "gen_ai.tool.call.arguments": '{"city": "Paris"}',
                    "gen_ai.tool.call.result": '{"temp_c": 18, "sky": "sunny"}',
                }),
                S("execute_tool get_time", 21, 25, {
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_time",
                    "gen_ai.tool.call.arguments": '{"tz": "Europe/Paris"}',
                }),
            ]),
            S("turn", 51, 98, {"gen_ai.operation.name": "unknown"}, [
                S("chat gpt-4o", 52, 96, {"gen_ai.operation.name": "chat"}, kind=SpanKind.CLIENT),
                S("agent_handoff", 97, 97, {"gen_ai.handoff.from_agent": "Weather agent",
                                            "gen_ai.handoff.to_agent": "Weather agent"}),
            ]),
        ]),
    ])


OPENAI_AGENTS_SEED = f"""
<{U}> a prov:Activity, tg:Question, tg:AgentQuestion ;
    tg:query {lit(QUERY)} ;
    prov:startedAtTime {t(1)} ; otelprov:agentName "Weather agent" ;
    otelprov:collection "default" ; {TID} ; {sid(2)} ; {when(1, 99)} .
<{U}/i1> a prov:Entity, tg:Analysis ;
    tg:action "get_weather" ;
    tg:arguments {lit('{"city": "Paris"}')} ;
    tg:observation {lit('{"temp_c": 18, "sky": "sunny"}')} ;
    prov:wasDerivedFrom <{U}> ; {TID} ; {sid(5)} ; {when(21, 30)} ;
    otelprov:toolCallId "call_1" ;
    tg:llmModel "gpt-4o" ; tg:llmDurationMs 17 ; tg:toolDurationMs 9 .
<{U}/i2> a prov:Entity, tg:Analysis ;
    tg:action "get_time" ;
    tg:arguments {lit('{"tz": "Europe/Paris"}')} ;
    otelprov:notCaptured "observation" ;
    prov:wasDerivedFrom <{U}/i1> ; {TID} ; {sid(6)} ; {when(21, 25)} ;
    tg:llmModel "gpt-4o" ; tg:llmDurationMs 17 ; tg:toolDurationMs 4 .
<{U}/final> a prov:Entity, tg:Conclusion ;
    tg:answer "18 °C, sunny." ;
    prov:wasDerivedFrom <{U}/i2> ; {TID} ; {sid(2)} ;
    tg:llmDurationMs 44 .
"""


def test_openai_agents_trace_seed_graph() -> None:
    """Tools are numbered by (start time, span id): get_weather and get_time start together."""
    spans = make(openai_agents_trace())
    assert_isomorphic(trig(OPENAI_AGENTS_SEED), spans_to_dataset(spans))
    assert_isomorphic(trig(OPENAI_AGENTS_SEED), export([spans])[-1])


def test_openai_agents_trace_counts() -> None:
    records = [from_sdk(s) for s in make(openai_agents_trace())]
    result = map_agent_traces(records, "seed")
    # Ignored: the workflow, the two turns, the hand-off (not a framework hand-off span).
    assert (result.mapped, result.ignored, result.waiting, result.problems) == (3, 4, 0, [])


def test_openai_agents_trace_out_of_order_and_repeated() -> None:
    spans = make(openai_agents_trace())
    by_name = {s.name: s for s in spans}
    workflow, agent = by_name["Agent workflow"], by_name["invoke_agent Weather agent"]
    children_first = [[s] for s in spans]  # the order spans end in
    states = export(children_first)
    # Nothing until the chain from the tools to the trace's root is known: the agent might be nested.
    for state in states[:-1]:
        assert_isomorphic(empty(), state)
    assert_isomorphic(trig(OPENAI_AGENTS_SEED), states[-1])
    # Root first, tools last, the agent twice, some spans in the same batch.
    rest = [s for s in spans if s not in (workflow, agent)]
    states = export([[workflow], [agent], rest[:3], [agent], rest[3:], rest[:1]])
    assert_isomorphic(trig(OPENAI_AGENTS_SEED), states[-1])


def test_the_conclusion_follows_the_last_tool_as_tools_arrive() -> None:
    """The Conclusion's edge is recomputed: the store drops the old edge when a later tool arrives."""
    spans = make(openai_agents_trace())
    late = [s for s in spans if s.name == "execute_tool get_time"]
    first = [s for s in spans if s not in late]
    before, after = export([first, late])
    derived = rdflib.URIRef("http://www.w3.org/ns/prov#wasDerivedFrom")
    final = rdflib.URIRef(f"{U}/final")
    assert {o for _, _, o, _ in before.quads((final, derived, None, None))} == {rdflib.URIRef(f"{U}/i1")}
    assert_isomorphic(trig(OPENAI_AGENTS_SEED), after)


# -- OpenInference LangChain / LangGraph --------------------------------------------------------------

LG_INPUT = json.dumps({"messages": [{"role": "user", "content": "Who wrote Faust?"}]})
LG_OUTPUT = json.dumps({"messages": [{"role": "user", "content": "Who wrote Faust?"},
                                     {"role": "assistant", "content": "Goethe."}]})
LG_RESULT = json.dumps({"content": "Faust was written by Goethe.", "type": "tool"})


def langgraph_trace() -> S:
    """Root AGENT named after the graph -> per-turn AGENT / CHAIN spans -> LLM and TOOL spans; the
    tool's one string argument as a bare string in input.value; session.id on every span."""
    oi = "openinference.span.kind"
    session = {"session.id": "thread-1"}
    return S("LangGraph", 0, 60, {oi: "AGENT", "input.value": LG_INPUT, "input.mime_type": "application/json",
                                  "output.value": LG_OUTPUT, **session}, [
        S("agent", 1, 20, {oi: "AGENT", **session}, [
            S("ChatOpenAI", 2, 19, {oi: "LLM", "llm.input_messages.0.message.role": "user",
                                    "llm.input_messages.0.message.content": "Who wrote Faust?", **session}),
        ]),
        S("tools", 21, 40, {oi: "CHAIN", **session}, [
            S("search", 22, 39, {oi: "TOOL", "tool.name": "search", "input.value": "author of Faust",
                                 "output.value": LG_RESULT, **session}),
        ]),
        S("agent", 41, 59, {oi: "AGENT", **session}, [
            S("ChatOpenAI", 42, 58, {oi: "LLM", **session}),
        ]),
    ])


LANGGRAPH_STRICT = f"""
<{U}> a prov:Entity, tg:Question, tg:AgentQuestion ;
    tg:query "Who wrote Faust?" ;
    prov:generatedAtTime {t(0)} ; otelprov:agentName "LangGraph" ;
    otelprov:collection "default" ; {TID} ; {sid(1)} ; {when(0, 60)} .
<{U}/session> a prov:Activity ;
    prov:startedAtTime {t(0)} ; prov:endedAtTime {t(60)} ;
    prov:used <{U}> ;
    prov:wasAssociatedWith <urn:otel-prov:agent:LangGraph> ; {TID} ; {sid(1)} .
<urn:otel-prov:agent:LangGraph> a prov:Agent, prov:SoftwareAgent ; rdfs:label "LangGraph" .
<{U}/i1> a prov:Entity, tg:Analysis ;
    tg:action "search" ;
    otelprov:rawArguments "author of Faust" ;
    tg:observation "Faust was written by Goethe." ;
    otelprov:notCaptured "thought", "arguments" ;
    prov:wasDerivedFrom <{U}> ; {when(22, 39)} ; tg:toolDurationMs 17 ; tg:llmDurationMs 17 ;
    prov:wasGeneratedBy <{U}/i1/activity> ; prov:generatedAtTime {t(39)} ; {TID} ; {sid(5)} .
<{U}/i1/activity> a prov:Activity ;
    prov:startedAtTime {t(22)} ; prov:endedAtTime {t(39)} ;
    prov:used <{U}> ;
    prov:wasAssociatedWith <urn:otel-prov:agent:LangGraph> ; {TID} ; {sid(5)} .
<{U}/final> a prov:Entity, tg:Conclusion ;
    tg:answer "Goethe." ;
    prov:wasDerivedFrom <{U}/i1> ; tg:llmDurationMs 16 ;
    prov:wasGeneratedBy <{U}/session> ; prov:generatedAtTime {t(60)} ; {TID} ; {sid(1)} .
"""


def test_openinference_langgraph_trace_strict_graph() -> None:
    """Per-turn AGENT spans below the root AGENT are turns, not agents; the question and answer are
    the text of the messages in input.value / output.value, the tool's result the ToolMessage's
    content; the bare-string argument of a tool whose parameter is not known is not an object: not
    captured, kept raw; the model calls record no output: the thought is not captured."""
    spans = make(langgraph_trace())
    assert_isomorphic(trig(LANGGRAPH_STRICT), spans_to_dataset(spans, "strict"))
    assert_isomorphic(trig(LANGGRAPH_STRICT), export([spans[::-1]], "strict")[-1])


# -- OpenInference smolagents --------------------------------------------------------------------------

SCHEMA = json.dumps({"query": {"type": "string", "description": "The search query"}})
SEARCH_ARGS = json.dumps({"args": [], "kwargs": {"query": "Eiffel tower height"}})
FINAL_ARGS = json.dumps({"args": ["330"], "kwargs": {}})
SMOL_QUERY = "How tall is the Eiffel tower?\n(in metres, \\no rounding)"


def smolagents_trace() -> S:
    """``{agent}.run`` AGENT -> ``Step N`` CHAIN -> LLM and TOOL spans named after the tool class.
    Its GenAI conversion puts the parameter schema into gen_ai.tool.call.arguments: ignored."""
    oi = "openinference.span.kind"

    def tool(name: str, cls: str, start: int, end: int, args: str, result: str) -> S:
        return S(cls, start, end, {oi: "TOOL", "tool.name": name, "gen_ai.operation.name": "execute_tool",
                                   "gen_ai.tool.call.arguments": SCHEMA, "input.value": args,
                                   "output.value": result})

    return S("CodeAgent.run", 0, 80, {oi: "AGENT", "input.value": SMOL_QUERY, "output.value": "330"}, [
        S("Step 1", 1, 40, {oi: "CHAIN"}, [
            S("LiteLLMModel.generate", 2, 10, {oi: "LLM", "output.value": "Thought: search the web."}),
            tool("web_search", "WebSearchTool", 11, 39, SEARCH_ARGS, "The Eiffel Tower is 330 m tall."),
        ]),
        S("Step 2", 41, 79, {oi: "CHAIN"}, [
            S("LiteLLMModel.generate", 42, 50, {oi: "LLM"}),
            tool("final_answer", "FinalAnswerTool", 51, 78, FINAL_ARGS, "330"),
        ]),
    ])


SMOLAGENTS_SEED = f"""
<{U}> a prov:Activity, tg:Question, tg:AgentQuestion ;
    tg:query {lit(SMOL_QUERY)} ;
    prov:startedAtTime {t(0)} ; otelprov:agentName "CodeAgent" ;
    otelprov:collection "default" ; {TID} ; {sid(1)} ; {when(0, 80)} .
<{U}/i1> a prov:Entity, tg:Analysis ;
    tg:thought "Thought: search the web." ;
    tg:action "web_search" ; tg:arguments {lit('{"query": "Eiffel tower height"}')} ;
    tg:observation "The Eiffel Tower is 330 m tall." ;
    prov:wasDerivedFrom <{U}> ; {TID} ; {sid(4)} ; {when(11, 39)} ; tg:toolDurationMs 28 ;
    tg:llmDurationMs 8 .
<{U}/final> a prov:Entity, tg:Conclusion ;
    tg:answer "330" ;
    prov:wasDerivedFrom <{U}/i1> ; {TID} ; {sid(1)} ; tg:llmDurationMs 8 .
"""


def test_openinference_smolagents_trace_seed_graph() -> None:
    """The arguments unwrapped from smolagents' {"args", "kwargs"}; the thought is the LLM's output
    text; final_answer is the conclusion, not a step."""
    spans = make(smolagents_trace())
    assert_isomorphic(trig(SMOLAGENTS_SEED), spans_to_dataset(spans))


# -- multi-agent -----------------------------------------------------------------------------------------

EXPERT = nested(TRACE_ID, 4)
HELPER = nested(TRACE_ID, 6)


def multi_agent_trace() -> S:
    def agent(name: str, start: int, end: int, extra: dict[str, Any], children: list[S]) -> S:
        return S(f"invoke_agent {name}", start, end,
                 {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **extra}, children)

    def tool(name: str, start: int, end: int, args: str, result: str, children: list[S] | None = None) -> S:
        return S(f"execute_tool {name}", start, end, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": args, "gen_ai.tool.call.result": result}, children or [])

    return agent("Triage", 0, 100, {
        "gen_ai.input.messages": messages(("user", [text("Plan a trip to Rome")])),
        "gen_ai.output.messages": messages(("assistant", [text("Go in May.")])),
    }, [
        S("chat gpt-4o", 1, 10, {"gen_ai.operation.name": "chat"}, kind=SpanKind.CLIENT),
        tool("ask_expert", 11, 90, '{"topic": "Rome"}', "May is best.", [
            agent("Expert", 12, 89, {
                "gen_ai.input.messages": messages(("user", [text("When to visit Rome?")])),
                "gen_ai.output.messages": messages(("assistant", [text("May is best.")])),
            }, [tool("lookup", 13, 50, '{"q": "Rome weather"}', "mild in May")]),
        ]),
        agent("Helper", 91, 99, {"input.value": "summarise"}, []),
    ])


MULTI_AGENT_SEED = f"""
<{U}> a prov:Activity, tg:Question, tg:AgentQuestion ;
    tg:query "Plan a trip to Rome" ; prov:startedAtTime {t(0)} ; otelprov:agentName "Triage" ;
    otelprov:collection "default" ; {TID} ; {sid(1)} ; {when(0, 100)} .
<{U}/i1> a prov:Entity, tg:Analysis ;
    tg:action "ask_expert" ; tg:arguments {lit('{"topic": "Rome"}')} ; tg:observation "May is best." ;
    otelprov:notCaptured "thought" ;
    prov:wasDerivedFrom <{U}> ; {TID} ; {sid(3)} ; {when(11, 90)} ; tg:toolDurationMs 79 ;
    tg:llmDurationMs 9 .
<{U}/final> a prov:Entity, tg:Conclusion ;
    tg:answer "Go in May." ; prov:wasDerivedFrom <{U}/i1> ; {TID} ; {sid(1)} .

<{EXPERT}> a prov:Activity, tg:Question, tg:AgentQuestion ;
    tg:query "When to visit Rome?" ; prov:startedAtTime {t(12)} ; otelprov:agentName "Expert" ;
    prov:wasDerivedFrom <{U}/i1> ;
    otelprov:collection "default" ; {TID} ; {sid(4)} ; {when(12, 89)} .
<{EXPERT}/i1> a prov:Entity, tg:Analysis ;
    tg:action "lookup" ; tg:arguments {lit('{"q": "Rome weather"}')} ; tg:observation "mild in May" ;
    otelprov:notCaptured "thought" ;
    prov:wasDerivedFrom <{EXPERT}> ; {TID} ; {sid(5)} ; {when(13, 50)} ; tg:toolDurationMs 37 .
<{EXPERT}/final> a prov:Entity, tg:Conclusion ;
    tg:answer "May is best." ; prov:wasDerivedFrom <{EXPERT}/i1> ; {TID} ; {sid(4)} .

<{HELPER}> a prov:Activity, tg:Question, tg:AgentQuestion ;
    tg:query "summarise" ; prov:startedAtTime {t(91)} ; otelprov:agentName "Helper" ;
    prov:wasDerivedFrom <{U}> ;
    otelprov:collection "default" ; {TID} ; {sid(6)} ; {when(91, 99)} .
<{HELPER}/final> a prov:Entity, tg:Conclusion ; tg:answer "" ; otelprov:notCaptured "answer" ;
    prov:wasDerivedFrom <{HELPER}> ; {TID} ; {sid(6)} .
"""


def test_nested_agents_seed_graph() -> None:
    """A nested agent's Question derives from the step it runs in, else from its parent's
    Question; its tool calls are its own (nearest agent), its uuid derived from trace and span."""
    spans = make(multi_agent_trace())
    assert_isomorphic(trig(MULTI_AGENT_SEED), spans_to_dataset(spans))
    assert_isomorphic(trig(MULTI_AGENT_SEED), export([[s] for s in spans])[-1])


def test_nested_agents_strict_links_are_valid_prov() -> None:
    """Strict: a nested Question is generated by the enclosing step's activity, or (no step) by the
    enclosing session's activity; every generator is an activity the graph describes."""
    ds = spans_to_dataset(make(multi_agent_trace()), "strict")
    gen = rdflib.URIRef("http://www.w3.org/ns/prov#wasGeneratedBy")
    generated = {(s, o) for s, _, o, _ in ds.quads((None, gen, None, None))}
    assert (rdflib.URIRef(EXPERT), rdflib.URIRef(f"{U}/i1/activity")) in generated
    assert (rdflib.URIRef(HELPER), rdflib.URIRef(f"{U}/session")) in generated
    activity = rdflib.URIRef("http://www.w3.org/ns/prov#Activity")
    activities = {s for s, _, _, _ in ds.quads((None, rdflib.RDF.type, activity, None))}
    assert {o for _, o in generated} <= activities


def test_sibling_agents_first_one_owns_the_trace_id() -> None:
    """Two agents under a span that is not a run (no GenAI operation): two sessions, the earlier
    owns the trace id as its uuid."""
    def agent(name: str, start: int, end: int) -> S:
        return S(f"invoke_agent {name}", start, end, {"gen_ai.operation.name": "invoke_agent",
                                                      "input.value": f"to {name}", "output.value": name})
    spans = make(S("Agent workflow", 0, 100, {}, [agent("A", 1, 40), agent("B", 41, 99)]))
    second = nested(TRACE_ID, 3)
    expected = trig(f"""
    <{U}> a prov:Activity, tg:Question, tg:AgentQuestion ; tg:query "to A" ; prov:startedAtTime {t(1)} ;
        otelprov:agentName "A" ; otelprov:collection "default" ; {TID} ; {sid(2)} ; {when(1, 40)} .
    <{U}/final> a prov:Entity, tg:Conclusion ; tg:answer "A" ; prov:wasDerivedFrom <{U}> ; {TID} ; {sid(2)} .
    <{second}> a prov:Activity, tg:Question, tg:AgentQuestion ; tg:query "to B" ;
        prov:startedAtTime {t(41)} ; otelprov:agentName "B" ; otelprov:collection "default" ;
        {TID} ; {sid(3)} ; {when(41, 99)} .
    <{second}/final> a prov:Entity, tg:Conclusion ; tg:answer "B" ; prov:wasDerivedFrom <{second}> ;
        {TID} ; {sid(3)} .
    """)
    assert_isomorphic(expected, spans_to_dataset(spans))
    # B arrives (with the root) before A: the store first holds B as the trace's agent, then fixes it.
    b = [s for s in spans if s.name != "invoke_agent A"]
    a = [s for s in spans if s.name == "invoke_agent A"]
    assert_isomorphic(expected, export([b, a])[-1])


# -- spans that are not agents or tools ---------------------------------------------------------------


def test_lone_chat_call_maps_to_nothing() -> None:
    """A model call outside any agent that requested no tool call and has no conversation id is
    not an agent session (a conversation of one plain call)."""
    chat = S("chat gpt-4o", 0, 10, {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": messages(("user", [text("hi")]), ("tool", [
            {"type": "tool_call_response", "id": "call_1", "response": "18"}])),
        "gen_ai.output.messages": messages(("assistant", [text("hello")])),
    }, kind=SpanKind.CLIENT)
    spans = make(chat)
    records = [from_sdk(s) for s in spans]
    result = map_agent_traces(records, "seed")
    assert (result.quads, result.waiting, result.problems) == ([], 0, [])
    update = TraceMapper("seed").map(records)
    assert (update.add, update.remove, update.problems) == ([], [], [])
    assert_isomorphic(empty(), export([spans])[-1])


def test_tool_outside_any_agent_is_ignored() -> None:
    spans = make(S("job", 0, 10, {}, [S("execute_tool x", 1, 2, {"gen_ai.operation.name": "execute_tool"})]))
    result = map_agent_traces([from_sdk(s) for s in spans], "seed")
    assert (result.quads, result.mapped, result.ignored) == ([], 0, 2)


def test_agent_without_content_is_marked_not_captured() -> None:
    """Content capture off: the session, its step and its Conclusion are there, with names, times
    and ids; what the spans do not record is marked otelprov:notCaptured, and it is not a problem."""
    spans = make(S("invoke_agent quiet", 0, 10, {"gen_ai.operation.name": "invoke_agent"}, [
        S("execute_tool look", 1, 2, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "look"})]))
    result = map_agent_traces([from_sdk(s) for s in spans], "seed")
    assert result.problems == []
    expected = trig(f"""
    <{U}> a prov:Activity, tg:Question, tg:AgentQuestion ; tg:query "" ; prov:startedAtTime {t(0)} ;
        otelprov:notCaptured "query" ; otelprov:agentName "quiet" ;
        otelprov:collection "default" ; {TID} ; {sid(1)} ; {when(0, 10)} .
    <{U}/i1> a prov:Entity, tg:Analysis ; tg:action "look" ; prov:wasDerivedFrom <{U}> ;
        otelprov:notCaptured "thought", "arguments", "observation" ; {TID} ; {sid(2)} ; {when(1, 2)} ;
        tg:toolDurationMs 1 .
    <{U}/final> a prov:Entity, tg:Conclusion ; tg:answer "" ; otelprov:notCaptured "answer" ;
        prov:wasDerivedFrom <{U}/i1> ; {TID} ; {sid(1)} .
    """)
    assert_isomorphic(expected, spans_to_dataset(spans))


def test_agent_with_content_but_no_question_is_a_counted_problem() -> None:
    output = messages(("assistant", [text("hi")]))
    spans = make(S("invoke_agent a", 0, 10, {"gen_ai.operation.name": "invoke_agent",
                                             "gen_ai.output.messages": output}))
    result = map_agent_traces([from_sdk(s) for s in spans], "seed")
    assert result.problems == [NO_QUERY]
    ds = spans_to_dataset(spans)
    assert objects(ds, "https://w3id.org/otel-prov/ns#notCaptured") == {"query"}
    assert objects(ds, "https://trustgraph.ai/ns/answer") == {"hi"}


def test_messages_in_older_shapes_and_unreadable_messages() -> None:
    old_style = json.dumps([{"role": "user", "content": "first"},
                            {"role": "user", "content": [{"type": "text", "text": "second"},
                                                         {"type": "image_url", "image_url": "x"}]},
                            {"role": "assistant", "content": "not me"}])
    spans = make(S("invoke_agent a", 0, 10, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": old_style,
        "gen_ai.output.messages": "{not json", "output.value": "fallback answer"}))
    records = [from_sdk(s) for s in spans]
    result = map_agent_traces(records, "seed")
    assert result.problems == ["gen_ai.output.messages is not a JSON list of messages"]
    ds = spans_to_dataset(spans)
    assert objects(ds, "https://trustgraph.ai/ns/query") == {"second"}
    assert objects(ds, "https://trustgraph.ai/ns/answer") == {"fallback answer"}


def test_agent_error_status_is_recorded() -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider(id_generator=FixedIds())
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("t")
    with pytest.raises(RuntimeError):
        with tracer.start_as_current_span("invoke_agent a", attributes={
                "gen_ai.operation.name": "invoke_agent", "input.value": "q"}):
            with tracer.start_as_current_span("execute_tool boom", attributes={
                    "gen_ai.operation.name": "execute_tool"}):
                raise RuntimeError("tool failed")
    ds = spans_to_dataset(memory.get_finished_spans())
    assert objects(ds, "https://w3id.org/otel-prov/ns#statusMessage") == {"RuntimeError: tool failed"}


# -- next to our own spans -------------------------------------------------------------------------------


def test_genai_tool_span_inside_our_step_is_not_mapped_twice(captured) -> None:
    provider, memory = captured
    tracer = provider.get_tracer("framework")
    with agent_session("2+3?", session_id="s-1", tracer_provider=provider) as session:
        with session.iteration() as step:
            step.action("calc", {"a": 2, "b": 3})
            with tracer.start_as_current_span("execute_tool calc", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "calc"}):
                pass
            step.observation("5")
        session.conclude("5")
    spans = list(memory.get_finished_spans())
    without = [s for s in spans if s.name != "execute_tool calc"]
    assert len(without) == len(spans) - 1
    assert_isomorphic(spans_to_dataset(without), spans_to_dataset(spans))


def test_genai_agent_run_by_our_tool_is_a_sub_trace_of_our_step(captured) -> None:
    provider, memory = captured
    tracer = provider.get_tracer("framework")

    def ask_framework_agent(question: str) -> str:
        with tracer.start_as_current_span("invoke_agent helper", attributes={
                "gen_ai.operation.name": "invoke_agent", "input.value": question, "output.value": "42"}):
            with tracer.start_as_current_span("execute_tool think", attributes={
                    "gen_ai.operation.name": "execute_tool"}):
                pass
        return "42"

    with agent_session("Meaning?", session_id="s-2", tracer_provider=provider) as session:
        with session.iteration() as step:
            step.call_tool("ask", ask_framework_agent, "the meaning")
        session.conclude("42")
    spans = list(memory.get_finished_spans())
    helper = next(s for s in spans if s.name == "invoke_agent helper")
    think = next(s for s in spans if s.name == "execute_tool think")
    sub_agent = nested(helper.context.trace_id, helper.context.span_id)
    ids = f'otelprov:traceId "{helper.context.trace_id:032x}"'
    start = isoformat_ns(helper.start_time)

    def times(span: ReadableSpan) -> str:
        return (f'otelprov:startTime "{isoformat_ns(span.start_time)}"^^xsd:dateTime ; '
                f'otelprov:endTime "{isoformat_ns(span.end_time)}"^^xsd:dateTime')

    took = (think.end_time - think.start_time) // MS  # docs/model.md: whole milliseconds
    expected_sub = trig(f"""
    <{sub_agent}> a prov:Activity, tg:Question, tg:AgentQuestion ; tg:query "the meaning" ;
        prov:startedAtTime "{start}"^^xsd:dateTime ; otelprov:collection "default" ;
        otelprov:agentName "helper" ;
        prov:wasDerivedFrom <urn:trustgraph:agent:s-2/i1> ; {ids} ;
        otelprov:spanId "{helper.context.span_id:016x}" ; {times(helper)} .
    <{sub_agent}/i1> a prov:Entity, tg:Analysis ; tg:action "think" ; prov:wasDerivedFrom <{sub_agent}> ;
        otelprov:notCaptured "thought", "arguments", "observation" ; {times(think)} ;
        tg:toolDurationMs {took} ;
        {ids} ; otelprov:spanId "{think.context.span_id:016x}" .
    <{sub_agent}/final> a prov:Entity, tg:Conclusion ; tg:answer "42" ; prov:wasDerivedFrom <{sub_agent}/i1> ;
        {ids} ; otelprov:spanId "{helper.context.span_id:016x}" .
    """)
    ours = [s for s in spans if s.name not in ("invoke_agent helper", "execute_tool think")]
    whole = spans_to_dataset(spans)
    combined = spans_to_dataset(ours)
    for quad in expected_sub.quads((None, None, None, None)):
        combined.add(quad)
    assert_isomorphic(combined, whole)


# -- the mapper's state --------------------------------------------------------------------------------


def test_views_map_like_the_spans_themselves() -> None:
    """What the mapper keeps of a span (``trace_view``) gives the same graph as the span."""
    for root in (openai_agents_trace(), langgraph_trace(), smolagents_trace(), multi_agent_trace()):
        records = [from_sdk(s) for s in make(root)]
        views = [trace_view(r)[0] for r in records]
        for profile in ("seed", "strict"):
            full, kept = map_agent_traces(records, profile), map_agent_traces(views, profile)
            assert sorted(full.quads) == sorted(kept.quads)
            assert (full.mapped, full.ignored, full.problems) == (kept.mapped, kept.ignored, kept.problems)


def test_a_parent_loop_waits_and_is_reported() -> None:
    a = SpanRecord(TRACE_ID, 1, "invoke_agent a", 0, 1, {"gen_ai.operation.name": "invoke_agent"},
                   parent_id=2)
    b = SpanRecord(TRACE_ID, 2, "x", 0, 1, {}, parent_id=1)
    result = map_agent_traces([a, b], "seed")
    assert result.quads == [] and result.waiting == 1 and PARENT_LOOP in result.problems


def _records(root: S, trace_id: int) -> list[SpanRecord]:
    return [from_sdk(s) for s in make(root, trace_id)]


def test_mapper_forgets_least_recent_trace_past_its_bound() -> None:
    mapper = TraceMapper("seed", max_traces=2)
    traces = [_records(openai_agents_trace(), TRACE_ID + n) for n in range(3)]
    waiting = [[r for r in recs if r.name.startswith("execute_tool")] for recs in traces]
    # Three traces whose tools wait for their agent: the first one is forgotten, with a problem.
    updates = [mapper.map(w) for w in waiting]
    assert [u.add for u in updates] == [[], [], []]
    assert updates[2].problems == [FORGOTTEN_WAITING]
    assert mapper.stats()["forgotten_traces"] == 1
    # Its later spans are not mapped (a half-known tree must not produce a graph); counted.
    late = mapper.map(traces[0])
    framework = [r for r in traces[0] if r.name.startswith(("invoke_agent", "execute_tool", "chat"))]
    assert late.add == [] and late.problems.count(LATE_SPAN) == len(framework) == 5
    # The others complete normally.
    done = mapper.map(traces[2])
    assert done.add and not done.problems
    assert mapper.stats()["traces"] <= 2


def test_mapper_spans_bound_and_skeletons() -> None:
    mapper = TraceMapper("seed", max_spans_per_trace=3)
    update = mapper.map(_records(openai_agents_trace(), TRACE_ID))
    assert update.problems.count(TRACE_TOO_BIG) == 9 - 3
    assert mapper.stats()["spans"] == 3
    # Skeletons: the chat span keeps no attributes, the agent span keeps only what is read.
    mapper = TraceMapper("seed")
    records = _records(openai_agents_trace(), TRACE_ID)
    mapper.map(records)
    sizes = mapper.stats()
    assert sizes["spans"] == 9 and sizes["bytes"] < 9 * 300 + 2000


# -- a trace that continues a remote context -----------------------------------------------------------


def _remote_hop() -> tuple[list[ReadableSpan], list[ReadableSpan]]:
    """An upstream agent calls a remote agent service; the service continues the trace from the
    propagated context (its parent is remote)."""
    upstream = make(S("invoke_agent Planner", 0, 100, {"gen_ai.operation.name": "invoke_agent",
                                                       "input.value": "plan"}, [
        S("execute_tool call_remote", 1, 99, {"gen_ai.operation.name": "execute_tool",
                                              "gen_ai.tool.name": "call_remote"}, [
            S("POST /agent", 1, 99, {"http.request.method": "POST"}, kind=SpanKind.CLIENT),
        ]),
    ]))
    client = next(s for s in upstream if s.name == "POST /agent")
    remote_parent = trace.NonRecordingSpan(trace.SpanContext(
        TRACE_ID, client.context.span_id, is_remote=True, trace_flags=trace.TraceFlags(1)))
    memory = InMemorySpanExporter()
    provider = TracerProvider(id_generator=FixedIds())
    provider.id_generator.count = 100  # type: ignore[attr-defined]
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("service")
    agent = tracer.start_span("invoke_agent Remote", context=trace.set_span_in_context(remote_parent),
                              attributes={"gen_ai.operation.name": "invoke_agent", "input.value": "sub-plan"},
                              start_time=T0 + 2 * MS)
    tracer.start_span("execute_tool look", context=trace.set_span_in_context(agent),
                      attributes={"gen_ai.operation.name": "execute_tool"}, start_time=T0 + 3 * MS
                      ).end(end_time=T0 + 4 * MS)
    agent.end(end_time=T0 + 98 * MS)
    downstream = list(memory.get_finished_spans())
    provider.shutdown()
    return upstream, downstream


def test_remote_parent_is_a_root_until_it_arrives() -> None:
    upstream, downstream = _remote_hop()
    assert all(s.parent is not None and s.parent.is_remote for s in downstream if s.name.endswith("Remote"))
    # The service's own spans (its upstream never exported to us) map at once, as the trace's agent.
    alone = spans_to_dataset(downstream)
    assert objects(alone, "https://trustgraph.ai/ns/query") == {"sub-plan"}
    assert (rdflib.URIRef(U), rdflib.RDF.type, rdflib.URIRef("https://trustgraph.ai/ns/Question")) in \
        {(s, p, o) for s, p, o, _ in alone.quads((None, None, None, None))}
    # With the upstream spans, the remote agent is nested under the step that called it, whatever
    # arrives first.
    remote = nested(TRACE_ID, 101)
    whole = spans_to_dataset(upstream + downstream)
    derived = {(str(s), str(o)) for s, _, o, _ in whole.quads(
        (None, rdflib.URIRef("http://www.w3.org/ns/prov#wasDerivedFrom"), None, None))}
    assert (remote, f"{U}/i1") in derived
    assert_isomorphic(whole, export([downstream, upstream])[-1])
    assert_isomorphic(whole, export([upstream, downstream])[-1])
    # The HTTP client span (no GenAI content) arriving last still links the remote agent.
    client = [s for s in upstream if s.name == "POST /agent"]
    rest = [s for s in upstream if s not in client]
    states = export([downstream, rest, client])
    assert (remote, f"{U}/i1") not in {(str(s), str(o)) for s, _, o, _ in states[1].quads(
        (None, rdflib.URIRef("http://www.w3.org/ns/prov#wasDerivedFrom"), None, None))}
    assert_isomorphic(whole, states[-1])


def test_remote_parent_flag_read_from_otlp() -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from otel_prov.mapping.spans import records_from_otlp

    upstream, downstream = _remote_hop()
    request = encode_spans(upstream + downstream)
    records, rejected = records_from_otlp(request.resource_spans)
    assert rejected == []
    remote = {r.name for r in records if r.parent_remote}
    assert remote == {"invoke_agent Remote"}
    assert_isomorphic(spans_to_dataset(upstream + downstream), spans_to_dataset(records))


def test_odd_attribute_values_never_fail_the_mapping() -> None:
    """OTLP can carry any value: bytes, maps with bytes, deeply nested JSON text."""
    deep = "[" * 100_000 + "]" * 100_000
    agent = SpanRecord(TRACE_ID, 1, "invoke_agent a", 0, 10, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": deep,
        "input.value": {"k": b"\xff", "n": (1, 2)}, "output.value": b"bytes"})
    tool = SpanRecord(TRACE_ID, 2, "execute_tool t", 1, 2, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": ("a", 1),
        "gen_ai.tool.call.result": 3.5}, parent_id=1)
    update = TraceMapper("strict").map([tool, agent])
    assert update.add and update.problems == ["gen_ai.input.messages is not a JSON list of messages"]
    ds = spans_to_dataset([agent, tool])
    # None of these is the plain thing (a map for a question, bytes for an answer, a list for the
    # arguments): each is not captured, its raw value kept apart; a number result is its text.
    assert objects(ds, "https://trustgraph.ai/ns/query") == {""}
    assert objects(ds, "https://w3id.org/otel-prov/ns#rawQuery") == {'{"k": "b\'\\\\xff\'", "n": [1, 2]}'}
    assert objects(ds, "https://trustgraph.ai/ns/answer") == {""}
    assert objects(ds, "https://w3id.org/otel-prov/ns#rawAnswer") == {"b'bytes'"}
    assert objects(ds, "https://trustgraph.ai/ns/arguments") == set()
    assert objects(ds, "https://w3id.org/otel-prov/ns#rawArguments") == {'["a", 1]'}
    assert objects(ds, "https://trustgraph.ai/ns/observation") == {"3.5"}


# -- where older conventions and other instrumentations put things --------------------------------------


def test_messages_on_events_and_in_the_deprecated_attributes() -> None:
    """The current conventions' event (gen_ai.client.inference.operation.details), the deprecated
    gen_ai.content.prompt / gen_ai.content.completion events and the indexed gen_ai.prompt.{i} /
    gen_ai.completion.{i} attributes (OpenLLMetry's) are read like gen_ai.input/output.messages --
    through the SDK exporter's records and through OTLP."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from otel_prov.mapping.spans import records_from_otlp

    memory = InMemorySpanExporter()
    provider = TracerProvider(id_generator=FixedIds())
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("old-conventions")
    call = {"type": "tool_call", "id": "c1", "name": "look", "arguments": {"q": "x"}}
    agent = {"gen_ai.operation.name": "invoke_agent"}
    with tracer.start_as_current_span("invoke_agent old", attributes=agent):
        with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}) as chat:
            chat.add_event("gen_ai.client.inference.operation.details", {
                "gen_ai.input.messages": messages(("user", [text("from the event")])),
                "gen_ai.output.messages": messages(("assistant", [text("thinking on an event"), call]))})
        with tracer.start_as_current_span("execute_tool look", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "look",
                "gen_ai.tool.call.id": "c1", "gen_ai.tool.call.arguments": '{"q": "x"}',
                "gen_ai.tool.call.result": "seen"}):
            pass
        with tracer.start_as_current_span("chat m", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": "indexed question", "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.content": "the indexed answer"}):
            pass
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    for records in ([from_sdk(s) for s in spans], records_from_otlp(encode_spans(spans).resource_spans)[0]):
        ds = spans_to_dataset(records)
        assert objects(ds, "https://trustgraph.ai/ns/query") == {"from the event"}
        assert objects(ds, "https://trustgraph.ai/ns/thought") == {"thinking on an event"}
        assert objects(ds, "https://trustgraph.ai/ns/answer") == {"the indexed answer"}
    deprecated = make(S("invoke_agent dep", 0, 10, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.prompt": messages(("user", [text("old prompt")])),
        "gen_ai.completion": messages(("assistant", [text("old")]))}))
    ds = spans_to_dataset(deprecated)
    assert objects(ds, "https://trustgraph.ai/ns/query") == {"old prompt"}
    assert objects(ds, "https://trustgraph.ai/ns/answer") == {"old"}


def test_genai_retrieval_inside_a_tool_is_a_docrag_sub_trace_of_its_step() -> None:
    docs = json.dumps([{"id": "c-1", "score": 0.9}, {"metadata": {"chunk_id": "c-2"}}, {"content": "no id"}])
    spans = make(S("invoke_agent a", 0, 100, {"gen_ai.operation.name": "invoke_agent", "input.value": "q?"}, [
        S("execute_tool search", 1, 50, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
            "gen_ai.tool.call.arguments": '{"q": "x"}', "gen_ai.tool.call.result": "found it"}, [
            S("retrieval kb", 2, 10, {"gen_ai.operation.name": "retrieval",
                                      "gen_ai.retrieval.query.text": "x",
                                      "gen_ai.retrieval.documents": docs}),
        ]),
    ]))
    sub = nested(TRACE_ID, 3, "urn:trustgraph:docrag:")
    ds = spans_to_dataset(spans)
    derived = {(str(s), str(o)) for s, _, o, _ in ds.quads(
        (None, rdflib.URIRef("http://www.w3.org/ns/prov#wasDerivedFrom"), None, None))}
    assert (sub, f"{U}/i1") in derived
    assert objects(ds, "https://trustgraph.ai/ns/selectedChunk") == {"c-1", "c-2", "0000000000000003/3"}
    assert objects(ds, "https://trustgraph.ai/ns/chunkCount") == {"3"}
    assert objects(ds, "https://trustgraph.ai/ns/content") == {"found it"}


def test_calls_of_one_conversation_id_across_traces_are_one_session_whatever_the_order() -> None:
    """Model calls outside any agent, in three traces, tied by gen_ai.conversation.id only (no tool
    calls): one session; its IRI and graph do not depend on which trace arrives first."""
    def call(n: int, question: str, answer: str) -> list[ReadableSpan]:
        return make(S("chat m", 10 * n, 10 * n + 5, {
            "gen_ai.operation.name": "chat", "gen_ai.conversation.id": "conv-9",
            "gen_ai.input.messages": messages(("user", [text(question)])),
            "gen_ai.output.messages": messages(("assistant", [text(answer)]))}, kind=SpanKind.CLIENT),
            trace_id=TRACE_ID + n)
    traces = [call(0, "first?", "one"), call(1, "second?", "two"), call(2, "third?", "three")]
    first = nested(TRACE_ID, 1)
    whole = spans_to_dataset([s for t in traces for s in t])
    assert objects(whole, "https://trustgraph.ai/ns/query") == {"first?"}
    assert objects(whole, "https://trustgraph.ai/ns/answer") == {"three"}
    assert {str(s) for s, _, _, _ in whole.quads((None, rdflib.URIRef("https://trustgraph.ai/ns/query"),
                                                  None, None))} == {first}
    assert_isomorphic(whole, export(traces[::-1])[-1])
    assert_isomorphic(whole, export([traces[1], traces[2] + traces[0]])[-1])


def test_openllmetry_decorators_entity_input_and_output() -> None:
    """OpenLLMetry's @workflow / @agent / @tool decorators: the content is in traceloop.entity.input /
    output (JSON of the call's arguments and of its result)."""
    spans = make(S("trip.workflow", 0, 100, {"traceloop.span.kind": "workflow",
                                             "traceloop.workflow.name": "trip"}, [
        S("planner.agent", 1, 99, {"traceloop.span.kind": "agent", "traceloop.entity.name": "planner",
                                   "traceloop.entity.input": json.dumps({"args": ["Plan Rome"],
                                                                         "kwargs": {}}),
                                   "traceloop.entity.output": json.dumps("Go in May.")}, [
            S("weather.tool", 2, 10, {"traceloop.span.kind": "tool", "traceloop.entity.name": "weather",
                                      "traceloop.entity.input": json.dumps({"args": [],
                                                                            "kwargs": {"city": "Rome"}}),
                                      "traceloop.entity.output": json.dumps("mild")}),
        ]),
    ]))
    ds = spans_to_dataset(spans)
    assert objects(ds, "https://trustgraph.ai/ns/query") == {"Plan Rome"}
    assert objects(ds, "https://trustgraph.ai/ns/answer") == {"Go in May."}
    assert objects(ds, "https://trustgraph.ai/ns/action") == {"weather"}
    assert objects(ds, "https://trustgraph.ai/ns/arguments") == {'{"city": "Rome"}'}
    assert objects(ds, "https://trustgraph.ai/ns/observation") == {"mild"}
    assert objects(ds, "https://w3id.org/otel-prov/ns#agentName") == {"planner"}


def test_the_service_that_recorded_a_session() -> None:
    """The resource's service.name is recorded on each Question (sub-traces too), from SDK spans and
    from the same spans as OTLP; the SDKs' stand-in for none (``unknown_service...``) is not a name."""
    tree = S("invoke_agent planner", 0, 50, {A.GEN_AI_OPERATION_NAME: "invoke_agent",
                                               A.GEN_AI_AGENT_NAME: "planner"}, [
        S("execute_tool weather", 2, 10, {A.GEN_AI_OPERATION_NAME: "execute_tool",
                                          A.GEN_AI_TOOL_NAME: "weather"}),
    ])
    service = "https://w3id.org/otel-prov/ns#serviceName"
    spans = make(tree, resource=Resource.create({"service.name": "travel-desk"}))
    ds = spans_to_dataset(spans)
    assert objects(ds, service) == {"travel-desk"}
    assert len(list(ds.quads((None, rdflib.URIRef(service), None, None)))) == 1  # on the Question only
    request = ExportTraceServiceRequest.FromString(encode_spans(spans).SerializeToString())
    records, rejected = records_from_otlp(request.resource_spans)
    assert not rejected and {r.service for r in records} == {"travel-desk"}
    for unnamed in ({}, {"service.name": "unknown_service:python3"}, {"service.name": "unknown_service"}):
        assert objects(spans_to_dataset(make(tree, resource=Resource(unnamed))), service) == set()
    # our helper API's sessions
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "helpdesk"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with agent_session("Capital of France?", tracer_provider=provider) as session:
        with session.iteration() as step:
            step.action("knowledge-query", {"q": "capital of France"})
            step.observation("Paris")
        session.conclude("Paris")
    provider.shutdown()
    ds = spans_to_dataset(memory.get_finished_spans())
    assert objects(ds, service) == {"helpdesk"}


def chat_call(n: int, requests: list[str], results: list[str]) -> list[SpanRecord]:
    """A model call outside any agent, alone in trace ``TRACE_ID + n`` at ``10 n`` ms for 5 ms: it
    requests the tool calls ``requests`` and carries the results of ``results``."""
    output = [text(f"thinking {n}")] + [{"type": "tool_call", "id": r, "name": "look", "arguments": {}}
                                       for r in requests]
    inputs = [("user", [text("the question")])]
    inputs += [("tool", [{"type": "tool_call_response", "id": r, "response": f"seen {r}"}])
               for r in results]
    return [from_sdk(s) for s in make(S("chat m", 10 * n, 10 * n + 5, {
        "gen_ai.operation.name": "chat", "gen_ai.input.messages": messages(*inputs),
        "gen_ai.output.messages": messages(("assistant", output))}, kind=SpanKind.CLIENT),
        trace_id=TRACE_ID + n)]


def test_a_conversation_update_that_never_reached_the_store_is_rewritten_whole() -> None:
    """An update may not reach the store (``TraceMapper.unstored``): the next mapping of the
    conversation it rewrote -- the retried request -- says everything, so the store ends right."""
    traces = [chat_call(0, ["c1"], []), chat_call(1, ["c2"], ["c1"]), chat_call(2, [], ["c2"])]
    whole = set(TraceMapper("seed").map([s for t in traces for s in t]).add)
    mapper, store = TraceMapper("seed"), set()

    def apply(update: Any) -> None:
        store.difference_update(update.remove)
        store.update(update.add)

    apply(mapper.map(traces[0]))
    lost = mapper.map(traces[1])
    assert lost.remove  # the first call's conversation is rewritten: its quads then were removed
    mapper.unstored(lost)  # ... but that update never got to the store
    apply(mapper.map(traces[1]))  # the retry
    apply(mapper.map(traces[2]))
    assert store == whole


def test_a_conversation_in_the_strict_profile_at_its_times() -> None:
    """Model calls outside any agent tied by their tool calls, strict profile: each step is generated
    when its tool's result came back (the start of the call that carried it), the session ends with
    the last call, and the question is a prov:Entity."""
    calls = chat_call(0, ["c1"], []) + chat_call(1, ["c2"], ["c1"]) + chat_call(2, [], ["c2"])
    quads = TraceMapper("strict").map(calls).add
    prov, dt = "http://www.w3.org/ns/prov#", "^^<http://www.w3.org/2001/XMLSchema#dateTime>"
    question = next(s for s, _, o, _ in quads if o == "<https://trustgraph.ai/ns/AgentQuestion>")
    assert (question, "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", f"<{prov}Entity>") in {
        q[:3] for q in quads}
    times = {(s[len(question) - 1:-1], p[len(prov) + 1:-1]): o  # {question}{suffix}: the suffix
             for s, p, o, _ in quads if p.startswith(f"<{prov}") and p.endswith("Time>")}
    assert times == {
        ("", "generatedAtTime"): f'"2026-11-30T10:00:00Z"{dt}',
        ("/session", "startedAtTime"): f'"2026-11-30T10:00:00Z"{dt}',
        ("/session", "endedAtTime"): f'"2026-11-30T10:00:00.025Z"{dt}',
        ("/i1/activity", "startedAtTime"): f'"2026-11-30T10:00:00Z"{dt}',
        ("/i1/activity", "endedAtTime"): f'"2026-11-30T10:00:00.01Z"{dt}',
        ("/i1", "generatedAtTime"): f'"2026-11-30T10:00:00.01Z"{dt}',
        ("/i2/activity", "startedAtTime"): f'"2026-11-30T10:00:00.01Z"{dt}',
        ("/i2/activity", "endedAtTime"): f'"2026-11-30T10:00:00.02Z"{dt}',
        ("/i2", "generatedAtTime"): f'"2026-11-30T10:00:00.02Z"{dt}',
        ("/final", "generatedAtTime"): f'"2026-11-30T10:00:00.025Z"{dt}',
    }


# -- an OpenInference RAG chain (a chain that retrieves and calls no tools): a DocRAG session -------------

D = "urn:trustgraph:docrag:4bf92f35-77b3-4da6-a3ce-929d0e0e4736"
OI = "openinference.span.kind"


def oi_llm(name: str, start: int, end: int, content: str) -> S:
    return S(name, start, end, {OI: "LLM", "llm.output_messages.0.message.role": "assistant",
                                "llm.output_messages.0.message.content": content}, kind=SpanKind.CLIENT)


def rag_chain(chain: dict[str, str], calls: bool = True) -> S:
    """CHAIN (span 1) -> RETRIEVER (2), and (``calls``) model calls: one that ends before the
    retrieval does (3), one that starts as it ends (4), one after that (5)."""
    return S("RetrievalQA", 0, 100, {OI: "CHAIN", **chain}, [
        S("retrieve", 5, 20, {OI: "RETRIEVER", "input.value": "PROV-O definition",
                              "retrieval.documents.0.document.id": "doc-a",
                              "retrieval.documents.1.document.id": "doc-b"}),
        *([oi_llm("early", 3, 4, "Too early."), oi_llm("llm", 20, 90, "From the LLM."),
           oi_llm("later", 91, 95, "Later.")] if calls else []),
    ])


RAG_CHAIN_SEED = f"""
<{D}> a prov:Activity, tg:Question, tg:DocRagQuestion ;
    tg:query "What is PROV-O?" ; prov:startedAtTime {t(0)} ;
    otelprov:collection "default" ; {TID} ; {sid(1)} ; {when(0, 100)} .
<{D}/exploration> a prov:Entity, tg:Exploration ;
    tg:selectedChunk "doc-a", "doc-b" ; tg:chunkCount 2 ;
    prov:wasGeneratedBy <{D}> ; {TID} ; {sid(2)} ; {when(5, 20)} .
<{D}/synthesis> a prov:Entity, tg:Synthesis ;
    tg:content "An ontology of provenance." ;
    prov:wasDerivedFrom <{D}/exploration> ; {TID} ; {sid(1)} ; {when(0, 100)} .
"""

RAG_CHAIN_STRICT = f"""
<{D}> a prov:Entity, tg:Question, tg:DocRagQuestion ;
    tg:query "PROV-O definition" ; prov:generatedAtTime {t(0)} ;
    otelprov:collection "default" ; {TID} ; {sid(1)} ; {when(0, 100)} .
<{D}/session> a prov:Activity ; prov:used <{D}> ;
    prov:startedAtTime {t(0)} ; prov:endedAtTime {t(100)} ; {TID} ; {sid(1)} .
<{D}/exploration> a prov:Entity, tg:Exploration ;
    tg:selectedChunk "doc-a", "doc-b" ; tg:chunkCount 2 ;
    prov:wasDerivedFrom <{D}> ; prov:wasGeneratedBy <{D}/exploration/activity> ;
    prov:generatedAtTime {t(20)} ; {TID} ; {sid(2)} ; {when(5, 20)} .
<{D}/exploration/activity> a prov:Activity ; prov:used <{D}> ;
    prov:startedAtTime {t(5)} ; prov:endedAtTime {t(20)} ; {TID} ; {sid(2)} .
<{D}/synthesis> a prov:Entity, tg:Synthesis ;
    tg:content "From the LLM." ;
    prov:wasDerivedFrom <{D}/exploration> ; prov:wasGeneratedBy <{D}/synthesis/activity> ;
    prov:generatedAtTime {t(90)} ; {TID} ; {sid(4)} ; {when(20, 90)} .
<{D}/synthesis/activity> a prov:Activity ; prov:used <{D}/exploration> ;
    prov:startedAtTime {t(20)} ; prov:endedAtTime {t(90)} ; {TID} ; {sid(4)} .
"""


def test_a_rag_chain_is_a_docrag_session_with_the_chains_question_and_answer() -> None:
    """The chain's own question (not its retrieval's query) and answer; its retrieval the Exploration."""
    spans = make(rag_chain({"input.value": "What is PROV-O?", "output.value": "An ontology of provenance."}))
    assert_isomorphic(trig(RAG_CHAIN_SEED), spans_to_dataset(spans))
    assert map_agent_traces([from_sdk(s) for s in spans], "seed").mapped == 3


def test_a_rag_chain_without_its_own_text_in_the_strict_profile() -> None:
    """No question or answer on the chain: the query is the retrieval's, the synthesis is the first
    model call that starts once the retrieval ended (its span, its times)."""
    spans = make(rag_chain({}))
    assert_isomorphic(trig(RAG_CHAIN_STRICT), spans_to_dataset(spans, profile="strict"))


def test_a_rag_chain_that_ended_without_an_answer_marks_the_synthesis_not_captured() -> None:
    ds = spans_to_dataset(make(rag_chain({}, calls=False)))
    assert objects(ds, "https://trustgraph.ai/ns/content") == {""}
    assert {(str(s), str(o)) for s, _, o, _ in ds.quads(
        (None, rdflib.URIRef("https://w3id.org/otel-prov/ns#notCaptured"), None, None))} == {
        (f"{D}/synthesis", "content")}


# -- hand-offs, the trace's owner, the last model call as the answer ------------------------------------

OA = {"gen_ai.agent.description": "OpenAI Agents instrumentation"}


def oa_agent(name: str, start: int, end: int, children: list[S], attrs: dict[str, str]) -> S:
    return S(f"invoke_agent {name}", start, end,
             {**OA, "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **attrs}, children)


def handoff_trace(to: str) -> S:
    """openai-agents-v2: a workflow whose entry agent Triage asks for ``transfer_to_billing`` and
    hands off (an ``agent_handoff`` span) to the agent ``to``, its sibling."""
    call = {"type": "tool_call", "id": "call_9", "name": "transfer_to_billing", "arguments": "{}"}
    return S("Agent workflow", 0, 100, {"gen_ai.operation.name": "invoke_agent"}, [
        oa_agent("Triage", 1, 40, [
            S("chat gpt-4o", 2, 10, {**OA, "gen_ai.operation.name": "chat",
                                     "gen_ai.output.messages": messages(("assistant", [call]))},
              kind=SpanKind.CLIENT),
            S("agent_handoff", 11, 12, {**OA, "gen_ai.operation.name": "agent_handoff",
                                        "gen_ai.handoff.from_agent": "Triage",
                                        "gen_ai.handoff.to_agent": to}),
        ], {"gen_ai.input.messages": messages(("user", [text("Refund my order")]))}),
        oa_agent(to, 41, 99, [],
                 {"gen_ai.output.messages": messages(("assistant", [text("Refund issued.")]))}),
    ])


def test_a_handoff_is_a_step_and_in_strict_a_delegation_between_two_agents() -> None:
    """The agent handed off to derives from the hand-off step (its action the requested
    ``transfer_to_*`` call, its observation the target); strict adds prov:actedOnBehalfOf, from the
    agent handed off to to the one handing off -- not when an agent hands off to itself."""
    acted = rdflib.URIRef("http://www.w3.org/ns/prov#actedOnBehalfOf")
    derived = rdflib.URIRef("http://www.w3.org/ns/prov#wasDerivedFrom")
    billing = nested(TRACE_ID, 5)
    seed = spans_to_dataset(make(handoff_trace("Billing")))
    assert objects(seed, "https://trustgraph.ai/ns/action") == {"transfer_to_billing"}
    assert objects(seed, "https://trustgraph.ai/ns/observation") == {"Billing"}
    assert (rdflib.URIRef(billing), derived, rdflib.URIRef(f"{U}/i1")) in {q[:3] for q in seed.quads()}
    assert not set(seed.quads((None, acted, None, None)))
    strict = spans_to_dataset(make(handoff_trace("Billing")), "strict")
    assert {(str(s), str(o)) for s, _, o, _ in strict.quads((None, acted, None, None))} == {
        ("urn:otel-prov:agent:Billing", "urn:otel-prov:agent:Triage")}
    itself = spans_to_dataset(make(handoff_trace("Triage")), "strict")
    assert not set(itself.quads((None, acted, None, None)))


def test_of_sibling_agents_the_earlier_start_owns_the_trace_id_whatever_the_span_ids() -> None:
    """The trace's owner is the run that starts first, not the one with the smaller span id."""
    def agent(name: str, start: int, end: int) -> S:
        return S(f"invoke_agent {name}", start, end, {"gen_ai.operation.name": "invoke_agent",
                                                      "input.value": f"to {name}", "output.value": name})
    # Span 2 is B (starts at 41), span 3 is A (starts at 1).
    ds = spans_to_dataset(make(S("Agent workflow", 0, 100, {}, [agent("B", 41, 99), agent("A", 1, 40)])))
    query = rdflib.URIRef("https://trustgraph.ai/ns/query")
    assert {(str(s), str(o)) for s, _, o, _ in ds.quads((None, query, None, None))} == {
        (U, "to A"), (nested(TRACE_ID, 2), "to B")}


def test_the_last_model_call_is_the_answer_only_if_it_requested_nothing_and_came_after_every_tool() -> None:
    """An agent without its own output: its last model call's text is the answer only when that call
    requested no tool and no tool started after it; otherwise the answer is not captured."""
    def run(last_requests: bool, tool_at: int) -> rdflib.Dataset:
        output: list[dict[str, str]] = [text("Done.")]
        if last_requests:
            output.append({"type": "tool_call", "id": "c2", "name": "t", "arguments": "{}"})
        return spans_to_dataset(make(S("invoke_agent a", 0, 100, {
            "gen_ai.operation.name": "invoke_agent", "input.value": "q?"}, [
            S("chat m", 50, 60, {"gen_ai.operation.name": "chat",
                                 "gen_ai.output.messages": messages(("assistant", output))},
              kind=SpanKind.CLIENT),
            S("execute_tool t", tool_at, tool_at + 5, {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
                "gen_ai.tool.call.arguments": "{}", "gen_ai.tool.call.result": "ok"}),
        ])))
    assert objects(run(False, 10), "https://trustgraph.ai/ns/answer") == {"Done."}
    for requested, tool_at in ((True, 10), (False, 70)):
        ds = run(requested, tool_at)
        assert objects(ds, "https://trustgraph.ai/ns/answer") == {""}
        assert objects(ds, "https://w3id.org/otel-prov/ns#notCaptured") >= {"answer"}
