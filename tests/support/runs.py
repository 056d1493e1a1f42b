"""Runs to compare (``otel-prov diff``), recorded into a real store from real spans: the example
agent's question run again as it was, with a step inserted, with a thought said another way, with
its document search asking something else; a long agent run and one that changed at its 11th step;
and framework traces (GenAI spans) of twelve parallel calls of one tool (started in two orders, one
call's result changed), of a run that failed a step and still answered, and of values not captured,
empty or redacted."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_prov import ProvSpanExporter, agent_session
from otel_prov.examples.react_agent import Act, Finish, OfflinePolicy, Turn, run_agent
from otel_prov.read.reader import TraceReader
from otel_prov.stores import open_for_reading, parse_store
from tests.support.genai import S, make

CITIES = [f"city-{n:02d}" for n in range(1, 13)]
"""Twelve parallel calls of one tool (more than ten)."""
EXTRA = Act("Let me check the capital once more.", "kg_lookup", {"entity": "France", "relation": "capital"})
"""The step :class:`Inserted` adds."""
RETHOUGHT = "Density needs the population and the area: I divide them."
"""The thought :class:`Rethought` says instead."""


@dataclass
class Inserted:
    """The offline policy, with :data:`EXTRA` done once as cycle ``at``."""

    at: int
    name: str = "inserted"

    def decide(self, question: str, history: Sequence[Turn]) -> Act | Finish:
        if len(history) + 1 == self.at:
            return EXTRA
        return OfflinePolicy().decide(question, [t for t in history if t.act != EXTRA])


@dataclass
class Rethought:
    """The offline policy, whose cycle ``at`` thinks :data:`RETHOUGHT`."""

    at: int
    name: str = "rethought"

    def decide(self, question: str, history: Sequence[Turn]) -> Act | Finish:
        decision = OfflinePolicy().decide(question, history)
        return dataclasses.replace(decision, thought=RETHOUGHT) if len(history) + 1 == self.at else decision


@dataclass
class SearchesElsewhere:
    """The offline policy, whose document search asks about another city."""

    name: str = "searches elsewhere"

    def decide(self, question: str, history: Sequence[Turn]) -> Act | Finish:
        decision = OfflinePolicy().decide(question, history)
        if isinstance(decision, Act) and decision.tool == "search_documents":
            return dataclasses.replace(decision, arguments={"query": "Which river flows through Berlin?"})
        return decision


@dataclass
class Runs:
    """The sessions' IRIs."""

    path: Path
    agent: str
    """The example agent's question, run by the offline policy."""
    again: str
    """The same, run again: nothing but times and ids differ."""
    inserted: str
    """A step inserted as cycle 2 (:data:`EXTRA`)."""
    rethought: str
    """Cycle 4 says :data:`RETHOUGHT`."""
    elsewhere: str
    """The document search (a DocRAG sub-trace) asks about Berlin."""
    other_question: str
    """Another question."""
    long: str
    """12 steps."""
    long_changed: str
    """The same 12 steps, the 11th with another argument and result."""
    parallel: str
    """Twelve parallel calls of one tool, started in the order the model asked."""
    parallel_reordered: str
    """The same calls, started in another order."""
    parallel_changed: str
    """The same calls, one city's result different."""
    parallel_costlier: str
    """The same calls, each model call taking 40 input tokens more."""
    failed_then_answered: str
    """A tool call that failed, retried, then the answer."""
    answered: str
    """The same question answered at the first try."""
    thought_not_captured: str
    """A step whose thought the spans did not capture."""
    thought_redacted: str
    """The same step, its thought a redaction marker."""
    question_not_captured: str
    """A run whose question the spans did not capture (the graph's ``tg:query`` is ``""``)."""
    question_empty: str
    """A run whose question is the empty text (``tg:query ""`` too)."""
    question_redacted: str
    """A run whose question is a redaction marker."""


def _long(provider: TracerProvider, change_at: int | None = None) -> str:
    with agent_session("Count to twelve", tracer_provider=provider) as session:
        for i in range(1, 13):
            with session.iteration() as step:
                step.thought(f"step {i}: add one")
                term = 100 if i == change_at else 1
                step.call_tool("calculator", lambda expression: str(eval(expression)),  # noqa: S307
                               {"expression": f"{i - 1} + {term}"})
        session.conclude("12")
    return str(session.explain_id)


# -- framework traces (OpenTelemetry GenAI spans, no otel_prov attributes) -------------------------


def _messages(*messages: dict[str, Any]) -> str:
    return json.dumps(list(messages))


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def _said(text: str | None, *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text is not None else []
    parts += [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    return {"role": "assistant", "parts": parts}


def _chat(start: int, question: str | None, output: dict[str, Any] | None, tokens: int = 10) -> S:
    """A model call (``tokens`` in, 5 out); its input and output recorded unless None."""
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                             "gen_ai.usage.input_tokens": tokens, "gen_ai.usage.output_tokens": 5}
    if question is not None:
        attrs["gen_ai.input.messages"] = _messages(_user(question))
    if output is not None:
        attrs["gen_ai.output.messages"] = _messages(output)
    return S("chat m", start, start + 5, attrs, kind=SpanKind.CLIENT)


def _tool(start: int, call_id: str, args: dict[str, Any], result: str, end: int | None = None) -> S:
    return S("execute_tool temp", start, end if end is not None else start + 2, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "temp", "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": json.dumps(args), "gen_ai.tool.call.result": result})


def _agent(children: list[S]) -> S:
    return S("invoke_agent weather", 0, 1000, {"gen_ai.operation.name": "invoke_agent",
                                               "gen_ai.agent.name": "weather"}, children)


def parallel_spans(trace_id: int, order: Sequence[str], changed: str | None = None,
                   tokens: int = 10) -> list[ReadableSpan]:
    """Twelve parallel calls of ``temp``, their spans started in ``order`` (overlapping), each city's
    result its own (``changed``'s another); each model call takes ``tokens`` input tokens."""
    question = "How warm is it in the twelve cities?"
    calls = [(f"call_{c}", "temp", {"city": c}) for c in CITIES]
    tools = [_tool(100 + n, f"call_{c}", {"city": c}, f"{c}: {'31' if c == changed else '21'} C")
             for n, c in enumerate(order)]
    root = _agent([_chat(10, question, _said("All twelve at once.", *calls), tokens), *tools,
                   _chat(200, question, _said("All warm."), tokens)])
    return make(root, trace_id)


def failed_step_spans(trace_id: int, fail_first: bool) -> list[ReadableSpan]:
    """A call of ``temp`` (failed, then retried, with ``fail_first``), then the answer."""
    question = "How warm is it in Paris?"
    children = []
    if fail_first:
        children += [_chat(10, question, _said("I look it up.", ("c0", "temp", {"city": "Paris"}))),
                     _tool(20, "c0", {"city": "Paris"}, "TimeoutError: upstream")]
    children += [_chat(30, question, _said("I look it up.", ("c1", "temp", {"city": "Paris"}))),
                 _tool(40, "c1", {"city": "Paris"}, "21 C"),
                 _chat(50, question, _said("21 C in Paris."))]
    spans = make(_agent(children), trace_id)
    if fail_first:  # the first tool call's span ended in error
        for span in spans:
            if span.attributes.get("gen_ai.tool.call.id") == "c0":
                span._status = Status(StatusCode.ERROR, "TimeoutError: upstream")
    return spans


def thought_spans(trace_id: int, thought: str | None) -> list[ReadableSpan]:
    """One call of ``temp`` whose thought is ``thought`` (None: the model call's content not
    captured)."""
    question = "How warm is it in Oslo?"
    output = None if thought is None else _said(thought, ("c1", "temp", {"city": "Oslo"}))
    root = _agent([_chat(10, None if thought is None else question, output),
                   _tool(20, "c1", {"city": "Oslo"}, "4 C"), _chat(30, question, _said("4 C in Oslo."))])
    return make(root, trace_id)


def question_spans(trace_id: int, question: str | None) -> list[ReadableSpan]:
    """One model call answering ``question`` (None: its input not captured)."""
    return make(_agent([_chat(10, question, _said("4 C."))]), trace_id)


def record_runs(path: Path) -> Runs:
    """Every run of :class:`Runs`, into the store at ``path``."""
    exporter = ProvSpanExporter(store=str(path))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        agent = run_agent(tracer_provider=provider).explain_id
        again = run_agent(tracer_provider=provider).explain_id
        inserted = run_agent(policy=Inserted(2), tracer_provider=provider).explain_id
        rethought = run_agent(policy=Rethought(4), tracer_provider=provider).explain_id
        elsewhere = run_agent(policy=SearchesElsewhere(), tracer_provider=provider).explain_id
        other = run_agent("What is the population of Berlin?", tracer_provider=provider).explain_id
        long, long_changed = _long(provider), _long(provider, change_at=11)
        reordered = CITIES[::2] + CITIES[1::2]
        framework = [
            parallel_spans(0x1001, CITIES), parallel_spans(0x1002, reordered),
            parallel_spans(0x1003, CITIES, changed="city-07"), parallel_spans(0x1004, CITIES, tokens=50),
            failed_step_spans(0x2001, fail_first=True), failed_step_spans(0x2002, fail_first=False),
            thought_spans(0x3001, None), thought_spans(0x3002, "[REDACTED]"),
            question_spans(0x4001, None), question_spans(0x4002, ""), question_spans(0x4003, "[REDACTED]"),
        ]
        for spans in framework:
            exporter.export(spans)
    finally:
        provider.shutdown()
    store = open_for_reading(parse_store(str(path)))
    try:
        reader = TraceReader(store)
        ids = [reader.session_of_trace(f"{spans[0].context.trace_id:032x}") for spans in framework]
    finally:
        store.close()
    return Runs(path, agent, again, inserted, rethought, elsewhere, other, long, long_changed, *ids)


def one_agent_run(store: str, question: str, answer: str | None = "done", collection: str = "default") -> str:
    """One agent session (a thought, a search and its observation, then ``answer``; None: it never
    ends) in ``collection``, exported to ``store`` (a directory or a server's URL) through the SDK:
    its Question's IRI."""
    exporter = ProvSpanExporter(store=store)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        with agent_session(question, collection=collection, tracer_provider=provider) as session:
            with session.iteration() as step:
                step.thought(f"thinking about {question}")
                step.action("search", {"q": question})
                step.observation("found it")
            if answer is not None:
                session.conclude(answer)
    finally:
        provider.shutdown()
    return str(session.explain_id)
