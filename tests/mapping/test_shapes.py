"""Shapes of agent traces beyond the smallest, made with the real SDK and the plain OpenTelemetry API
(no ``otel_prov`` attributes), each read back as its explainability chain: steps only the model's
messages show, many parallel calls to one tool, a step that failed before the run still answered,
nested and merged tool spans, crews, conversations of agents taking turns, message-template span
names, and retrievals of every convention (a reranker's selection with its scores).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
import rdflib
from opentelemetry.trace import SpanKind

from otel_prov import TG, spans_to_dataset
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import from_sdk
from otel_prov.model.quads import nquads
from tests.interop.chain import NOT_CAPTURED, Chain, Step, mapped
from tests.support.genai import S, make
from tests.support.shapes import agent, chat, msgs, results, said, tool, user

Q = "How warm is it in the twelve cities?"
CITIES = [f"city-{n:02d}" for n in range(1, 13)]
"""More than ten parallel calls of one tool."""


def chains(root: S, profile: str = "seed") -> list[Chain]:
    return mapped([from_sdk(s) for s in make(root)], profile)


# -- steps from the model's messages ---------------------------------------------------------------------


def test_steps_only_the_models_messages_show_take_their_results_by_id() -> None:
    ask = said("First Paris.", ("c1", "temp", {"city": "Paris"}))
    ask2 = said("Then Oslo.", ("c2", "temp", {"city": "Oslo"}))
    root = agent(
        [
            chat(10, [user(Q)], ask),
            chat(20, [user(Q), ask, results(("c1", "21"))], ask2),
            chat(
                30,
                [user(Q), ask, results(("c1", "21")), ask2, results(("c2", "4"))],
                said("Paris 21, Oslo 4."),
            ),
        ]
    )
    assert chains(root) == [
        Chain(
            "Agent",
            Q,
            "weather",
            (
                Step("First Paris.", "temp", {"city": "Paris"}, "21"),
                Step("Then Oslo.", "temp", {"city": "Oslo"}, "4"),
            ),
            "Paris 21, Oslo 4.",
        )
    ]


def test_results_without_ids_answer_the_calls_before_them_in_order() -> None:
    ask = said("Both.", ("c1", "temp", {"city": "Paris"}), ("c2", "temp", {"city": "Oslo"}))
    root = agent(
        [
            chat(10, [user(Q)], ask),
            chat(20, [user(Q), ask, results((None, "21"), (None, "4"))], said("Paris 21, Oslo 4.")),
        ]
    )
    got = chains(root)[0]
    assert [(s.arguments, s.observation) for s in got.steps] == [
        ({"city": "Paris"}, "21"),
        ({"city": "Oslo"}, "4"),
    ]


def test_a_request_never_answered_is_a_step_whose_observation_is_not_captured() -> None:
    root = agent([chat(10, [user(Q)], said("Look.", ("c1", "temp", {"city": "Paris"})))])
    assert chains(root)[0].steps == (Step("Look.", "temp", {"city": "Paris"}, NOT_CAPTURED),)


# -- many calls of one tool, a failed step --------------------------------------------------------------


def test_twelve_parallel_calls_of_one_tool_each_keep_their_own_arguments_and_result() -> None:
    calls = [(f"call_{c}", "temp", {"city": c}) for c in CITIES]
    ask = said("All twelve at once.", *calls)
    # The tool spans start in another order than the model asked (they ran in parallel).
    order = CITIES[::2] + CITIES[1::2]
    tools = [tool(100 + n, "temp", f"call_{c}", {"city": c}, f"{c}: {n}") for n, c in enumerate(order)]
    temps = {c: f"{c}: {n}" for n, c in enumerate(order)}
    root = agent([chat(10, [user(Q)], ask), *tools, chat(200, [user(Q)], said("Done."))])
    got = chains(root)[0]
    assert len(got.steps) == 12
    assert [s.arguments["city"] for s in got.steps] == order  # numbered by start time
    assert all(s.observation == temps[s.arguments["city"]] for s in got.steps)
    assert {s.thought for s in got.steps} == {"All twelve at once."}
    assert got.answer == "Done."


def test_a_step_that_failed_and_a_run_that_still_answered() -> None:
    ask = said("Try Paris.", ("c1", "temp", {"city": "Paris"}))
    ask2 = said("Retry.", ("c2", "temp", {"city": "Paris"}))
    root = agent(
        [
            chat(10, [user(Q)], ask),
            tool(20, "temp", "c1", {"city": "Paris"}, "TimeoutError: upstream"),
            chat(30, [user(Q)], ask2),
            tool(40, "temp", "c2", {"city": "Paris"}, "21"),
            chat(50, [user(Q)], said("21 in Paris.")),
        ]
    )
    records = [from_sdk(s) for s in make(root)]
    records = [
        dataclasses.replace(r, error=True, status_message="TimeoutError")
        if r.attributes.get("gen_ai.tool.call.id") == "c1"
        else r
        for r in records
    ]
    got = mapped(records, "seed")[0]
    assert [(s.thought, s.observation) for s in got.steps] == [
        ("Try Paris.", "TimeoutError: upstream"),
        ("Retry.", "21"),
    ]
    assert got.answer == "21 in Paris."
    ds = rdflib.Dataset()
    ds.parse(data=nquads(TraceMapper("seed").map(records).add), format="nquads")
    errors = [(s, str(o)) for s, _, o, _ in ds.quads((None, TG.toolError, None, None))]
    failed = [
        s for s, _, o, _ in ds.quads((None, TG.observation, None, None)) if str(o).startswith("Timeout")
    ]
    assert errors == [(failed[0], "TimeoutError")]


# -- nested and merged tool spans --------------------------------------------------------------------------


def test_an_mcp_client_span_and_its_servers_span_are_one_step() -> None:
    server = S(
        "tools/call temp",
        21,
        23,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "temp",
            "gen_ai.tool.call.result": '{"content": [{"type": "text", "text": "21"}], "isError": false}',
        },
    )
    client = tool(20, "temp", "c1", {"city": "Paris"}, '[{"type": "text", "text": "21"}]')
    client.children = [server]
    root = agent(
        [
            chat(10, [user(Q)], said("Paris.", ("c1", "temp", {"city": "Paris"}))),
            client,
            chat(30, [user(Q)], said("21.")),
        ]
    )
    assert chains(root)[0].steps == (Step("Paris.", "temp", {"city": "Paris"}, "21"),)


def test_a_span_holding_tool_spans_of_other_names_is_no_step_its_children_are() -> None:
    merged = S(
        "execute_tool merged_tools",
        20,
        40,
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "merged_tools"},
        [tool(21, "temp", "c1", {"city": "Paris"}, "21"), tool(25, "wind", "c2", {"city": "Paris"}, "5")],
    )
    ask = said("Both.", ("c1", "temp", {"city": "Paris"}), ("c2", "wind", {"city": "Paris"}))
    root = agent([chat(10, [user(Q)], ask), merged, chat(50, [user(Q)], said("21, wind 5."))])
    assert [(s.action, s.observation) for s in chains(root)[0].steps] == [("temp", "21"), ("wind", "5")]


# -- runs of frameworks never met ---------------------------------------------------------------------------


def test_a_crew_its_task_and_the_tasks_agent_are_one_run_asked_the_tasks_description() -> None:
    """OpenLLMetry's CrewAI shape: every span an ``invoke_agent``; only the innermost names the
    agent; the question is the task's description, the prompt the model saw is the framework's."""
    prompt = f"\nCurrent Task: {Q}\n\nThis is the expected criteria for your final answer: one line."
    ask = said("Paris first.", ("c1", "temp", {"city": "Paris"}))
    crew_agent = S(
        "weather.agent",
        5,
        90,
        {
            "gen_ai.operation.name": "invoke_agent",
            "traceloop.span.kind": "agent",
            "gen_ai.agent.name": "weather",
        },
        [
            chat(10, [user(prompt)], ask),
            chat(30, [user(prompt), ask, results(("c1", "21"))], said("It is 21.")),
        ],
    )
    task = S(
        f"{Q}.task",
        2,
        95,
        {
            "gen_ai.operation.name": "invoke_agent",
            "traceloop.span.kind": "task",
            "crewai.task.description": Q,
            "traceloop.entity.output": "It is 21.",
        },
        [crew_agent],
    )
    crew = S("crewai.workflow", 0, 100, {"gen_ai.operation.name": "invoke_agent"}, [task])
    assert chains(crew) == [
        Chain("Agent", Q, "weather", (Step("Paris first.", "temp", {"city": "Paris"}, "21"),), "It is 21.")
    ]


def test_agents_taking_turns_in_a_conversation_are_one_run() -> None:
    """AG2's shape: a ``conversation`` root; the assistant's turns ask, the proxy's turns run the
    tools; the conversation's output is its transcript, whose last words are no one's answer."""
    ask = said(None, ("c1", "temp", {"city": "Paris"}))

    def turn(name: str, start: int, children: list[S], output: dict[str, Any] | None = None) -> S:
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
        if output is not None:
            attrs["gen_ai.output.messages"] = msgs(output)
        return S(f"invoke_agent {name}", start, start + 9, attrs, children)

    transcript = msgs(
        {"role": "assistant", "parts": [{"type": "text", "content": Q}]},
        ask,
        results((None, "21")),
        {"role": "user", "parts": [{"type": "text", "content": "21."}]},
    )
    root = S(
        "conversation proxy",
        0,
        100,
        {
            "gen_ai.operation.name": "conversation",
            "gen_ai.agent.name": "proxy",
            "gen_ai.input.messages": msgs(user(Q)),
            "gen_ai.output.messages": transcript,
        },
        [
            turn("weather", 10, [chat(11, [user(Q)], ask)], ask),
            turn("proxy", 20, [tool(21, "temp", "c1", {"city": "Paris"}, "21")]),
            turn("weather", 30, [chat(31, [user(Q), ask, results(("c1", "21"))], said("21."))], said("21.")),
            turn("proxy", 40, []),
        ],
    )
    assert chains(root) == [
        Chain("Agent", Q, "weather", (Step(None, "temp", {"city": "Paris"}, "21"),), "21.")
    ]


def test_message_template_span_names_and_event_records_in_one_attribute() -> None:
    """Logfire's shape: spans named by their unformatted message templates, the call's GenAI events
    as one ``events`` attribute, tools as ``Function: {name}`` with bare ``input`` / ``output``."""
    events = [
        {"event.name": "gen_ai.user.message", "role": "user", "content": Q},
        {"event.name": "gen_ai.assistant.message", "role": "assistant", "content": "Paris."},
        {
            "event.name": "gen_ai.assistant.message",
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "temp", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
    ]
    events2 = [
        *events,
        {"event.name": "gen_ai.tool.message", "role": "tool", "id": "c1", "content": "21"},
        {"event.name": "gen_ai.assistant.message", "role": "assistant", "content": "21."},
    ]

    def llm(start: int, recorded: list[dict[str, Any]]) -> S:
        return S(
            "Responses API with {gen_ai.request.model!r}",
            start,
            start + 5,
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.system": "openai",
                "gen_ai.request.model": "m",
                "events": json.dumps(recorded),
            },
        )

    run = S(
        "Agent run: {name!r}",
        0,
        100,
        {"name": "weather", "gen_ai.system": "openai"},
        [
            llm(10, events),
            S(
                "Function: {name}",
                20,
                22,
                {"name": "temp", "input": '{"city": "Paris"}', "output": "21", "gen_ai.system": "openai"},
            ),
            llm(30, events2),
        ],
    )
    root = S("OpenAI Agents trace: {name}", 0, 101, {"name": "wf"}, [run])
    assert chains(root) == [
        Chain("Agent", Q, "weather", (Step("Paris.", "temp", {"city": "Paris"}, "21"),), "21.")
    ]


def test_a_class_method_is_never_an_agents_name() -> None:
    root = S(
        "FunctionAgent.workflow",
        0,
        100,
        {"traceloop.span.kind": "workflow", "traceloop.entity.name": "FunctionAgent.workflow"},
        [
            chat(10, [user(Q)], said("Paris.")),
            S(
                "BaseWorkflowAgent.task",
                20,
                22,
                {
                    "traceloop.span.kind": "task",
                    "tool.name": "temp",
                    "tool.arguments": '{"city": "Paris"}',
                    "traceloop.entity.output": json.dumps(
                        {
                            "tool_name": "temp",
                            "tool_id": "c1",
                            "tool_output": {
                                "blocks": [{"block_type": "text", "text": "21"}],
                                "raw_output": "21",
                                "is_error": False,
                            },
                        }
                    ),
                },
            ),
            chat(30, [user(Q)], said("21.")),
        ],
    )
    assert chains(root) == [
        Chain("Agent", Q, None, (Step("Paris.", "temp", {"city": "Paris"}, "21"),), "21.")
    ]


# -- retrievals ---------------------------------------------------------------------------------------------


def test_a_run_that_only_retrieves_and_reranks_is_a_docrag_session_with_its_selection_and_scores() -> None:
    docs = [{"id": f"doc-{n:02d}", "content": f"text {n}", "score": round(1 - n / 20, 2)} for n in range(12)]
    kept = docs[:3]
    rerank = {"openinference.span.kind": "RERANKER", "reranker.query": "warm cities"}
    for n, d in enumerate(kept):
        rerank |= {
            f"reranker.output_documents.{n}.document.id": d["id"],
            f"reranker.output_documents.{n}.document.score": d["score"],
        }
    root = S(
        "invoke_agent finder",
        0,
        100,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "finder",
            "gen_ai.input.messages": msgs(user("warm cities")),
            "gen_ai.output.messages": msgs(said("Three are warm.")),
        },
        [
            S(
                "retrieval docs",
                10,
                20,
                {
                    "gen_ai.operation.name": "retrieval",
                    "gen_ai.retrieval.query.text": "warm cities",
                    "gen_ai.retrieval.documents": json.dumps(docs),
                },
            ),
            S("rerank", 20, 30, rerank),
            chat(40, [user("warm cities")], said("Three are warm.")),
        ],
    )
    got = chains(root)
    assert got == [
        Chain("DocRAG", "warm cities", None, (), "Three are warm.", tuple(sorted(d["id"] for d in docs)))
    ]
    ds = spans_to_dataset(make(root))
    focus = [s for s, _, _, _ in ds.quads((None, rdflib.RDF.type, TG.Focus, None))]
    assert len(focus) == 1
    selected = [o for _, _, o, _ in ds.quads((focus[0], TG.selectedChunk, None, None))]
    assert sorted(map(str, selected)) == [d["id"] for d in kept]
    # Every retrieved chunk and every selected one with its score and rank.
    scored = {}
    for selection, _, chunk, _ in ds.quads((None, TG.selectedChunk, None, None)):
        for _, _, score, _ in ds.quads((selection, TG.score, None, None)):
            scored.setdefault(str(chunk), set()).add(score.toPython())
    assert scored == {d["id"]: {d["score"]} for d in docs}


def test_a_vector_query_with_result_events_inside_a_tool_is_that_steps_docrag() -> None:
    query = S(
        "chroma.query",
        21,
        24,
        {"db.system.name": "chroma", "db.operation.name": "query", "db.query.text": "capital of France"},
    )
    ask = said("Look it up.", ("c1", "search", {"q": "capital of France"}))
    search = tool(20, "search", "c1", {"q": "capital of France"}, "Paris")
    search.children = [query]
    root = agent([chat(10, [user(Q)], ask), search, chat(30, [user(Q)], said("Paris."))])
    spans = make(root)
    # Result events as the vector-database instrumentations add them.
    records = []
    for span in spans:
        record = from_sdk(span)
        if span.name == "chroma.query":
            record = dataclasses.replace(
                record,
                events=tuple(
                    ("db.query.result", {"db.query.result.id": f"d{n}", "db.query.result.distance": n / 10})
                    for n in range(11)
                ),
            )
        records.append(record)
    got = mapped(records, "seed")[0]
    sub = got.steps[0].subtraces
    assert [c.type for c in sub] == ["DocRAG"]
    assert sub[0].question == "capital of France"
    assert sub[0].chunks == tuple(sorted(f"d{n}" for n in range(11)))
    assert sub[0].answer == "Paris"


def test_content_off_is_not_captured_never_a_guess() -> None:
    root = agent(
        [
            S(
                "chat m",
                10,
                15,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "m",
                    "gen_ai.response.finish_reasons": ["tool_calls"],
                },
            ),
            S(
                "execute_tool temp",
                20,
                22,
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "temp",
                    "gen_ai.tool.call.id": "c1",
                },
            ),
            S("chat m", 30, 35, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}),
        ]
    )
    assert chains(root) == [
        Chain(
            "Agent",
            NOT_CAPTURED,
            "weather",
            (Step(NOT_CAPTURED, "temp", NOT_CAPTURED, NOT_CAPTURED),),
            NOT_CAPTURED,
        )
    ]


# -- a run's own transcript; a loop's model calls written onto one span; events sent apart ------------------


def test_a_run_only_its_own_transcript_shows_acting_takes_its_steps_from_it() -> None:
    """No tool span, model calls that record nothing: the run's output holding its conversation (a
    pipeline's component state, its messages as their private fields) gives the steps, thought and
    results by id -- fourteen of them, one a call never answered."""
    def message(role: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {"_role": role, "_content": content, "_name": None, "_meta": {}}

    conversation = [message("user", [{"text": Q}])]
    for n, city in enumerate(CITIES + ["city-13", "city-14"], 1):
        call = {"tool_name": "temp", "arguments": {"city": city}, "id": f"c{n}"}
        conversation.append(message("assistant", [{"text": f"Next {city}."}, call]))
        if n != 14:
            answer = {"result": str(n), "origin": {"id": f"c{n}"}, "error": False}
            conversation.append(message("tool", [answer]))
    conversation.append(message("assistant", [{"text": "All warm."}]))
    output = {"researcher": {"messages": conversation, "last_message": conversation[-1]}}
    root = S("pipeline.workflow", 0, 900, {
        "traceloop.span.kind": "workflow", "traceloop.entity.name": "weather",
        "traceloop.entity.input": json.dumps({"args": [],
                                              "kwargs": {"researcher": {"messages": conversation[:1]}}}),
        "traceloop.entity.output": json.dumps(output)},
        [S("model.chat", 10 + 20 * n, 20 + 20 * n, {"llm.request.type": "chat"}, kind=SpanKind.CLIENT)
         for n in range(15)])
    got = chains(root)[0]
    assert (got.question, got.answer) == (Q, "All warm.")
    assert [(s.thought, s.action, s.arguments, s.observation) for s in got.steps] == [
        (f"Next {city}.", "temp", {"city": city}, str(n) if n != 14 else NOT_CAPTURED)
        for n, city in enumerate(CITIES + ["city-13", "city-14"], 1)]


def test_a_span_with_a_whole_loops_model_attributes_gives_no_step_the_last_calls_words() -> None:
    """One span holds the last model call's attributes (its input with every result so far, a tool
    call left over from an earlier call, its final text) and encloses the tools: no step's thought
    is that text, and the left-over request is no step."""
    ask1 = said("First Paris.", ("c1", "temp", {"city": "Paris"}))
    ask2 = said("Then Oslo.", ("c2", "temp", {"city": "Oslo"}))
    merged = chat(1, [user(Q), ask1, results(("c1", "21")), ask2, results(("c2", "4"))],
                  {"role": "assistant", "parts": [{"type": "text", "content": "Paris 21, Oslo 4."},
                                                  {"type": "tool_call", "id": "c2", "name": "temp",
                                                   "arguments": {"city": "Oslo"}}]})
    merged = dataclasses.replace(merged, end=900, children=[
        tool(100, "temp", "c1", {"city": "Paris"}, "21"), tool(200, "temp", "c2", {"city": "Oslo"}, "4")])
    got = chains(agent([merged]))[0]
    assert [(s.arguments, s.observation) for s in got.steps] == [({"city": "Paris"}, "21"),
                                                                  ({"city": "Oslo"}, "4")]
    assert all(s.thought != "Paris 21, Oslo 4." for s in got.steps)


def test_a_span_with_a_whole_loops_model_attributes_answers_and_says_the_last_steps_thought() -> None:
    """The same span: its final text came after every tool (its input holds their results), so it is
    the answer; the assistant message its input ends with is the last step's thought (by call id); the
    first step's words are in no span that says they are its own: not captured."""
    ask1 = said("First Paris.", ("c1", "temp", {"city": "Paris"}))
    ask2 = said("Then Oslo.", ("c2", "temp", {"city": "Oslo"}))
    merged = chat(1, [user(Q), ask1, results(("c1", "21")), ask2, results(("c2", "4"))],
                  {"role": "assistant", "parts": [{"type": "text", "content": "Paris 21, Oslo 4."}]})
    merged = dataclasses.replace(merged, end=900, children=[
        tool(100, "temp", "c1", {"city": "Paris"}, "21"), tool(200, "temp", "c2", {"city": "Oslo"}, "4")])
    got = chains(agent([merged]))[0]
    assert got.answer == "Paris 21, Oslo 4."
    assert [s.thought for s in got.steps] == [NOT_CAPTURED, "Then Oslo."]
    # Given no tool's result, the same span's text is no answer: it may have come before the tools.
    early = chat(1, [user(Q)], {"role": "assistant", "parts": [{"type": "text", "content": "Soon."}]})
    early = dataclasses.replace(early, end=900, children=[tool(100, "temp", "c1", {"city": "Paris"}, "21")])
    assert chains(agent([early]))[0].answer != "Soon."


def test_spans_named_after_a_tool_classs_run_method_are_its_calls() -> None:
    """A framework that traces its own methods, with no convention's keys: ``CalculatorTool.run()``
    is a call of CalculatorTool (what it took and gave not captured); ``Tool.run()`` (the base class),
    ``CalculatorTool.describe()`` and ``Toolbox.run()`` are no calls."""
    def span(name: str, start: int, children: list[S] | None = None) -> S:
        return S(name, start, start + 10, {"tags": ("x",)}, children or [])

    root = span("Agent.run()", 0, [span("KnowledgeBaseTool.try_run()", 1), span("CalculatorTool.run()", 20),
                                   span("Tool.run()", 40), span("CalculatorTool.describe()", 60),
                                   span("Toolbox.run()", 80)])
    root = dataclasses.replace(root, end=1000)
    got = chains(root)[0]
    assert [s.action for s in got.steps] == ["KnowledgeBaseTool", "CalculatorTool"]
    assert all((s.arguments, s.observation) == (NOT_CAPTURED, NOT_CAPTURED) for s in got.steps)


def test_events_a_model_call_sent_while_its_agent_span_was_current_are_that_calls() -> None:
    """Log records naming the agent span, each within the time of one of its model calls (which
    record nothing themselves): each call reads its own, none reads them all."""
    from otel_prov.mapping.spans import LogRecord

    root = agent([S("chat m", 10, 20, {"gen_ai.operation.name": "chat"}, kind=SpanKind.CLIENT),
                  tool(30, "temp", "c1", {"city": "Paris"}, "21"),
                  S("chat m", 40, 50, {"gen_ai.operation.name": "chat"}, kind=SpanKind.CLIENT)])
    spans = [from_sdk(s) for s in make(root)]
    top = next(s for s in spans if s.parent_id == 0)
    t0 = min(s.start_ns for s in spans)

    def log(at_ms: int, name: str, **body: Any) -> LogRecord:
        return LogRecord(top.trace_id, top.span_id, t0 + at_ms * 1_000_000, name, body)

    logs = [log(11, "gen_ai.user.message", content=Q),
            log(19, "gen_ai.choice", index=0, finish_reason="tool_calls",
                message={"content": "First Paris."},
                tool_calls=[{"id": "c1", "function": {"name": "temp", "arguments": {"city": "Paris"}}}]),
            log(41, "gen_ai.user.message", content=Q),
            log(49, "gen_ai.choice", index=0, finish_reason="stop", message={"content": "Paris 21."})]
    got = mapped(spans, "seed", logs)[0]
    assert (got.question, got.answer) == (Q, "Paris 21.")
    assert [(s.thought, s.observation) for s in got.steps] == [("First Paris.", "21")]


# -- names and keys no convention defines -------------------------------------------------------------


def test_an_operation_no_convention_defines_is_read_by_its_words_and_its_values_by_their_keys() -> None:
    """A framework writing the GenAI keys its own way (any-agent's ``call_llm`` operation,
    ``gen_ai.tool.args``, ``gen_ai.output``): a model call by the word ``llm``, its output a list of
    tool-call objects or plain text; a tool's arguments and result under keys whose last word says so."""
    def call(start: int, output: str, **extra: Any) -> S:
        attrs = {"gen_ai.operation.name": "call_llm", "gen_ai.output": output, **extra}
        return S("call_llm m", start, start + 5, attrs)

    def run(start: int, name: str, args: dict[str, Any], result: str) -> S:
        return S(f"execute_tool {name}", start, start + 2, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
            "gen_ai.tool.args": json.dumps(args), "gen_ai.output": result})

    root = agent([
        call(10, json.dumps([{"tool.name": "temp", "tool.args": json.dumps({"city": "Paris"})}]),
             **{"gen_ai.input.messages": json.dumps([{"role": "user", "content": Q}])}),
        run(20, "temp", {"city": "Paris"}, "21"),
        call(30, "Paris 21."),
    ])
    got = chains(root)[0]
    assert (got.question, got.answer) == (Q, "Paris 21.")
    assert [(s.action, s.arguments, s.observation) for s in got.steps] == [("temp", {"city": "Paris"}, "21")]


def test_a_list_flattened_into_keys_is_never_a_spans_own_value() -> None:
    """``metadata.steps.0.output`` is an item of a list (a step's output), not what the agent or the
    model call gave: never the answer."""
    root = agent([S("call_llm m", 10, 15, {"gen_ai.operation.name": "call_llm",
                                           "metadata.steps.0.output": "Paris"})],
                 **{"metadata.steps.0.output": "21"})
    got = chains(root)
    assert all(c.answer in (None, NOT_CAPTURED) for c in got)


@pytest.mark.parametrize("op,role", [
    ("call_llm", "llm"), ("llm_call", "llm"), ("tools/call", "tool"), ("run_tool", "tool"),
    ("run_agent", "agent"), ("retrieve_documents", "retriever"), ("list_tools", "other"),
    ("create_agent", "other"), ("embeddings", "other"),
])
def test_operations_by_their_words(op: str, role: str) -> None:
    from otel_prov.mapping.dialects.genai import GENAI
    from otel_prov.mapping.spans import SpanRecord

    span = SpanRecord(trace_id=1, span_id=2, parent_id=0, name="x", start_ns=1, end_ns=2,
                      attributes={"gen_ai.operation.name": op})
    assert GENAI.role(span).value == role


def _component(name: str, kind: str, start: int, end: int, inputs: Any = None, outputs: Any = None,
               children: list[S] | None = None) -> S:
    """A span of a framework that traces its components in no convention (Haystack's own tracer)."""
    attrs: dict[str, Any] = {"fw.component.name": name, "fw.component.type": kind}
    if inputs is not None:
        attrs["fw.component.input"] = json.dumps(inputs)
    if outputs is not None:
        attrs["fw.component.output"] = json.dumps(outputs)
    return S("fw.component.run", start, end, attrs, children or [])


def _said(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def test_components_that_say_their_kind_a_serialized_transcript() -> None:
    """Spans in no convention that say what they are under a key of their own (``...type``): an
    ``Agent`` named by the ``...name`` beside it; a ``ChatGenerator`` whose output holds the model's
    message is a model call, a ``ChatPromptBuilder`` is not; calls and results written as serialized
    blocks (``{"tool_call": {...}}``, ``{"tool_call_result": {...}}``)."""
    call = {"tool_call": {"tool_name": "temp", "arguments": {"city": "Paris"}, "id": "c1", "extra": None}}
    result = {"role": "tool", "content": [{"tool_call_result": {
        "result": "21", "origin": {"tool_name": "temp", "arguments": {"city": "Paris"}, "id": "c1"},
        "error": False}}]}
    question = {"role": "user", "content": [{"text": Q}]}
    ask, answer = _said({"text": "First Paris."}, call), _said({"text": "Paris 21."})
    root = _component("weather", "Agent", 0, 100, {"messages": [question]}, None, [
        _component("prompt", "ChatPromptBuilder", 5, 8, {"query": Q}, {"prompt": [question]}),
        _component("llm", "OpenAIChatGenerator", 10, 20, {"messages": [question]}, {"replies": [ask]}),
        _component("tools", "ToolInvoker", 21, 25, {"messages": [ask]}, {"tool_messages": [result]}),
        _component("llm", "OpenAIChatGenerator", 30, 40, {"messages": [question, ask, result]},
                   {"replies": [answer]}),
    ])
    got = chains(root)
    assert len(got) == 1
    assert (got[0].question, got[0].agent, got[0].answer) == (Q, "weather", "Paris 21.")
    assert [(s.thought, s.action, s.arguments, s.observation) for s in got[0].steps] == [
        ("First Paris.", "temp", {"city": "Paris"}, "21")]


def test_a_retrieval_then_a_model_call_in_no_convention_is_a_rag_session() -> None:
    """A pipeline of components in no convention: the retriever's query and documents under its own
    keys, the model call after it (beside it in the pipeline) its synthesis."""
    docs = [{"id": "d1", "content": "Paris is the capital.", "score": 3.2},
            {"id": "d2", "content": "Lyon is a city.", "score": 1.8}]
    reply = {"replies": [{"role": "assistant", "content": [{"text": "Paris."}]}]}
    root = S("fw.pipeline.run", 0, 100, {"fw.pipeline.input_data": "{}"}, [
        _component("retriever", "InMemoryBM25Retriever", 5, 10, {"query": "capital?", "top_k": None},
                   {"documents": docs}),
        _component("llm", "OpenAIChatGenerator", 20, 30, {"messages": []}, reply),
    ])
    got = chains(root)
    assert [(c.type, c.question, c.answer, c.chunks) for c in got] == [
        ("DocRAG", "capital?", "Paris.", ("d1", "d2"))]


def test_a_tracer_of_its_own_with_kinds_and_values_as_json_text() -> None:
    """A framework's own tracer (MLflow's): the kind under ``x.spanType`` as JSON text (``'"TOOL"'``),
    what each span took and gave under camel-case keys (``x.spanInputs`` / ``x.spanOutputs``), a model
    call's output its client's whole response (a chat completion's ``choices``)."""
    def span(name: str, kind: str, start: int, end: int, inputs: Any, outputs: Any,
             children: list[S] | None = None) -> S:
        return S(name, start, end, {"x.spanType": json.dumps(kind), "x.spanInputs": json.dumps(inputs),
                                    "x.spanOutputs": json.dumps(outputs)}, children or [])

    def completion(content: str, *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = [{"id": i, "type": "function", "function": {
                "name": n, "arguments": json.dumps(a)}} for i, n, a in calls]
        return {"id": "c", "choices": [{"index": 0, "message": message,
                                        "finish_reason": "tool_calls" if calls else "stop"}]}

    asked = [{"role": "user", "content": Q}]
    root = span("weather", "AGENT", 0, 100, {"question": Q}, "Paris 21.", [
        span("Completions", "CHAT_MODEL", 10, 20, {"messages": asked},
             completion("First Paris.", ("c1", "temp", {"city": "Paris"}))),
        span("temp", "TOOL", 21, 25, {"city": "Paris"}, "21"),
        span("Completions", "CHAT_MODEL", 30, 40, {"messages": asked}, completion("Paris 21.")),
    ])
    got = chains(root)
    assert len(got) == 1
    assert (got[0].question, got[0].agent, got[0].answer) == (Q, "weather", "Paris 21.")
    assert [(s.thought, s.action, s.arguments, s.observation) for s in got[0].steps] == [
        ("First Paris.", "temp", {"city": "Paris"}, "21")]


def test_parallel_calls_of_one_tool_at_one_instant_keep_their_own_arguments_and_results() -> None:
    """Two calls of one tool that the model requested together, their spans started at the same
    millisecond, with no call id (OpenInference JS): each step pairs its span's own argument with its
    own result, in the order the model asked -- never one call's arguments with the other's result."""
    def oi_tool(start: int, argument: str, result: str) -> S:
        return S("temp", start, start + 3, {"openinference.span.kind": "TOOL", "tool.name": "temp",
                                            "input.value": argument, "output.value": result})

    ask = said("Both cities.", ("c1", "temp", {"city": "Paris"}), ("c2", "temp", {"city": "Oslo"}))
    root = agent([
        chat(10, [user(Q)], ask),
        oi_tool(20, "Oslo", "4"),  # the second request's span first: same start, lower span id
        oi_tool(20, "Paris", "21"),
        chat(30, [user(Q), ask, results(("c1", "21"), ("c2", "4"))], said("Paris 21, Oslo 4.")),
    ])
    got = chains(root)[0]
    assert [(s.arguments, s.observation) for s in got.steps] == [({"city": "Paris"}, "21"),
                                                                ({"city": "Oslo"}, "4")]


def test_a_root_of_no_convention_over_model_calls_is_a_run() -> None:
    """The AI SDK's own spans (``ai.generateText`` > ``ai.generateText.doGenerate`` > ``ai.toolCall``):
    the root, in no convention, calls a model: it is the run of an agent that names itself nowhere; a
    model call's output is spread over its response namespace (``ai.response.text``,
    ``ai.response.toolCalls``) and its input is ``ai.prompt.messages``; a tool is named by
    ``ai.toolCall.name`` (never by its span's name)."""
    def generate(start: int, prompt: list[dict[str, Any]], text: str, *calls: tuple[str, str, dict[str, Any]],
                 children: list[S] | None = None) -> S:
        attrs: dict[str, Any] = {
            "ai.operationId": "ai.generateText.doGenerate", "gen_ai.system": "p",
            "gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 3,
            "ai.prompt.messages": json.dumps(prompt), "ai.response.text": text}
        if calls:
            attrs["ai.response.toolCalls"] = json.dumps(
                [{"toolCallId": i, "toolName": n, "input": a} for i, n, a in calls])
        return S("ai.generateText.doGenerate", start, start + 10, attrs, children or [])

    tool = S("ai.toolCall", 12, 14, {
        "ai.operationId": "ai.toolCall", "ai.toolCall.name": "temp", "ai.toolCall.id": "c1",
        "ai.toolCall.args": json.dumps({"city": "Paris"}), "ai.toolCall.result": json.dumps("21")})
    asked = [{"role": "user", "content": [{"type": "text", "text": Q}]}]
    top = {"ai.operationId": "ai.generateText", "ai.response.text": "Paris 21."}
    root = S("ai.generateText", 0, 100, top, [
        generate(5, asked, "First Paris.", ("c1", "temp", {"city": "Paris"}), children=[tool]),
        generate(30, asked, "Paris 21."),
    ])
    got = chains(root)
    assert len(got) == 1
    assert (got[0].question, got[0].answer) == (Q, "Paris 21.")
    assert [(s.thought, s.action, s.arguments, s.observation) for s in got[0].steps] == [
        ("First Paris.", "temp", {"city": "Paris"}, "21")]
