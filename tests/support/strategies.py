"""Hypothesis strategies shared by the property tests: plans of sessions, run into real SDK spans.

A *plan* is plain data that hypothesis draws and shrinks; ``run_plan`` turns it into real spans:
the three flows through the helper API (``otel_prov.agent_session`` / ``graph_rag_session`` /
``doc_rag_session``), standard GenAI agent traces through the plain OpenTelemetry API (shaped like
the OpenTelemetry GenAI conventions or like OpenInference).  ``schedules`` draws a way to deliver a
trace's spans: split into batches, in any order, each batch any number of times.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from opentelemetry import context, trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Tracer

from otel_prov import agent_session, doc_rag_session, graph_rag_session
from otel_prov import attributes as A
from otel_prov.mapping import values as V

# -- text -------------------------------------------------------------------------------------------

_AWKWARD = ['"', "'", "\\", "\n", "\r", "\t", '\\"', "\\n", "é", "ß", "中文", "😀", "\u2028", "\u00a0",
            "{", "}", "<", ">", "^^", "@en", " ", "\\u0041"]

texts = st.lists(
    st.one_of(st.sampled_from(_AWKWARD), st.text(st.characters(exclude_categories=("Cs",)), max_size=6)),
    max_size=5,
).map("".join)
"""Text with unicode, quotes, newlines, backslashes and N-Triples look-alikes."""

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")),
                min_size=1, max_size=8) | st.sampled_from(["search", "calc", "lookup", "ask-b"])
"""Tool and agent names: short, no control characters or spaces (span names carry them)."""

blank_ids = st.sampled_from(["", " ", "\t", " \n "])
"""Session ids that are blank: as if none was given (docs/model.md)."""

session_ids = st.none() | blank_ids | texts
"""Explicit session ids (blank ones too), or none."""

arguments = st.dictionaries(st.sampled_from(["q", "city", "n", "x y", "é"]), texts | st.integers(),
                            max_size=3)


# -- helper-API plans -------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepPlan:
    thought: str | None
    tool: str
    args: dict[str, Any] | None
    call_tool: bool
    """Run the tool through ``Step.call_tool`` (an ``execute_tool`` span) or record it by hand."""
    result: str
    inner: GenAIAgent | DocRagPlan | None = None
    """Something the tool runs: a standard GenAI agent, or a nested document-RAG query."""


class PlannedFailure(Exception):
    """What a failing step of a plan raises (the application's own error)."""


@dataclass(frozen=True)
class AgentPlan:
    question: str
    session_id: str | None
    collection: str
    steps: tuple[StepPlan, ...]
    answer: str | None
    fail_at: int | None = None
    """The step (from 0) that raises :class:`PlannedFailure` after its thought: the steps after it
    are not run and the session ends in error, without an answer."""

    def run_steps(self) -> tuple[StepPlan, ...]:
        """The steps that run (up to the failing one)."""
        return self.steps if self.fail_at is None else self.steps[:self.fail_at + 1]


@dataclass(frozen=True)
class GraphRagPlan:
    question: str
    session_id: str | None
    edges: tuple[tuple[str, str, str], ...]
    selected: tuple[tuple[int, str | None], ...]
    answer: str | None


@dataclass(frozen=True)
class DocRagPlan:
    question: str
    session_id: str | None
    chunks: tuple[str, ...]
    answer: str | None


# -- standard GenAI plans (plain OpenTelemetry API) --------------------------------------------------


@dataclass(frozen=True)
class Chat:
    text: str


@dataclass(frozen=True)
class Tool:
    name: str
    args: str | None
    result: str | None
    nested: GenAIAgent | None = None
    remote: bool = False
    """The nested agent runs in another service: its parent context is remote (propagated)."""


@dataclass(frozen=True)
class Turn:
    wrapper: str | None
    """Inside a turn span (OpenInference: of this span kind, ``CHAIN`` or ``AGENT``), or directly
    under the agent (``None``)."""
    items: tuple[Chat | Tool, ...]
    tied: bool = False
    """Tool calls made one after another in the turn are parallel: they start at the same
    nanosecond (as a framework running the calls a model requested together records them)."""


@dataclass(frozen=True)
class GenAIAgent:
    style: str
    """``"genai"`` (OpenTelemetry GenAI conventions) or ``"openinference"``."""
    name: str
    query: str | None
    answer: str | None
    turns: tuple[Turn, ...]

    def agents(self) -> int:
        return 1 + sum(t.nested.agents() for t in self.tools() if t.nested)

    def tools(self) -> list[Tool]:
        return [i for turn in self.turns for i in turn.items if isinstance(i, Tool)]

    def all_tools(self) -> list[Tool]:
        found = []
        for tool in self.tools():
            found.append(tool)
            if tool.nested:
                found.extend(tool.nested.all_tools())
        return found

    def all_agents(self) -> list[GenAIAgent]:
        found = [self]
        for tool in self.tools():
            if tool.nested:
                found.extend(tool.nested.all_agents())
        return found


@dataclass(frozen=True)
class GenAIPlan:
    workflow: bool
    """A workflow span above the agents (openai-agents), or the agents are roots."""
    agents: tuple[GenAIAgent, ...] = field(default=())

    def all_agents(self) -> list[GenAIAgent]:
        return [a for agent in self.agents for a in agent.all_agents()]

    def all_tools(self) -> list[Tool]:
        return [t for agent in self.agents for t in agent.all_tools()]


def _plain(text: str) -> bool:
    """Text a framework's span could hold only as text: no JSON, repr or redaction marker (those are
    the value rule's, tests/mapping/test_values.py)."""
    return not (V.looks_structured(text) or V.looks_like_repr(text) or V.is_marker(text)
                or text.strip() in ("None", "null"))


plain_texts = texts.filter(_plain)
"""The awkward texts a framework run's content may be."""


def _genai_agents(depth: int, style: str | None = None) -> st.SearchStrategy[GenAIAgent]:
    nested = st.none() if depth == 0 else st.none() | _genai_agents(depth - 1, "genai")
    texts = plain_texts
    tool = st.builds(Tool, name=names, args=st.none() | arguments.map(json.dumps), result=st.none() | texts,
                     nested=nested, remote=st.booleans())
    item = st.builds(Chat, texts) | tool
    turn = st.builds(Turn, wrapper=st.sampled_from([None, "CHAIN", "AGENT"]),
                     items=st.lists(item, max_size=3).map(tuple), tied=st.booleans())
    return st.builds(
        GenAIAgent,
        style=st.just(style) if style else st.sampled_from(["genai", "openinference"]),
        name=names,
        query=st.none() | texts,
        answer=st.none() | texts,
        turns=st.lists(turn, max_size=3).map(tuple),
    )


def genai_plans() -> st.SearchStrategy[GenAIPlan]:
    """One agent, or (under a workflow span) up to two sibling agents, nested agents inside tools."""
    return st.booleans().flatmap(lambda workflow: st.builds(
        GenAIPlan,
        workflow=st.just(workflow),
        agents=st.lists(_genai_agents(1), min_size=1, max_size=2 if workflow else 1).map(tuple),
    ))


def doc_rag_plans(ids: st.SearchStrategy[str | None] = session_ids) -> st.SearchStrategy[DocRagPlan]:
    return st.builds(DocRagPlan, question=texts, session_id=ids,
                     chunks=st.lists(texts, max_size=4).map(tuple), answer=st.none() | texts)


def graph_rag_plans() -> st.SearchStrategy[GraphRagPlan]:
    edge = st.tuples(texts | st.just("urn:e:1"), texts | st.just("http://p/"), texts)
    return st.lists(edge, max_size=4).flatmap(lambda edges: st.builds(
        GraphRagPlan,
        question=texts,
        session_id=session_ids,
        edges=st.just(tuple(edges)),
        selected=st.lists(st.tuples(st.integers(0, max(len(edges) - 1, 0)), st.none() | texts),
                          max_size=len(edges)).map(tuple),
        answer=st.none() | texts,
    ))


def agent_plans() -> st.SearchStrategy[AgentPlan]:
    # Nested queries mint their own ids (two given the same id would be one session), a blank id too.
    inner = st.none() | _genai_agents(0) | doc_rag_plans(st.none() | blank_ids)
    step = st.builds(StepPlan, thought=st.none() | texts, tool=names, args=st.none() | arguments,
                     call_tool=st.booleans(), result=texts, inner=inner)
    return st.lists(step, max_size=3).map(tuple).flatmap(lambda steps: st.builds(
        AgentPlan, question=texts, session_id=session_ids,
        collection=st.sampled_from(["default", "docs"]),
        steps=st.just(steps), answer=st.none() | texts,
        fail_at=st.none() | st.integers(0, len(steps) - 1) if steps else st.none()))


helper_plans = st.one_of(agent_plans(), graph_rag_plans(), doc_rag_plans())
"""Sessions of all three flows, made by the helper API."""


# -- running a plan ------------------------------------------------------------------------------------


@contextmanager
def capture() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A real TracerProvider whose finished spans are kept in memory."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    try:
        yield provider, memory
    finally:
        provider.shutdown()


Plan = AgentPlan | GraphRagPlan | DocRagPlan | GenAIPlan


def run_plan(plan: Plan, before_end: Callable[[list[ReadableSpan]], None] | None = None
             ) -> list[ReadableSpan]:
    """The real spans of one plan.  ``before_end`` is given the spans finished so far, inside the
    session, before its root ends."""
    with capture() as (provider, memory):
        hook = (lambda: before_end(list(memory.get_finished_spans()))) if before_end else None
        emit(plan, provider, hook)
        return list(memory.get_finished_spans())


def emit(plan: Plan, provider: TracerProvider, before_end: Callable[[], None] | None = None) -> None:
    if isinstance(plan, AgentPlan):
        _run_agent(plan, provider, before_end)
    elif isinstance(plan, GraphRagPlan):
        _run_graph_rag(plan, provider, before_end)
    elif isinstance(plan, DocRagPlan):
        _run_doc_rag(plan, provider, before_end)
    else:
        tracer = provider.get_tracer("tests.genai")
        workflow: AbstractContextManager[Any] = (
            tracer.start_as_current_span("Agent workflow", attributes={A.GEN_AI_OPERATION_NAME: "unknown"})
            if plan.workflow else nullcontext())
        with workflow:
            for agent in plan.agents:
                emit_genai_agent(agent, tracer)
            if before_end:
                before_end()


def _run_agent(plan: AgentPlan, provider: TracerProvider, before_end: Callable[[], None] | None) -> None:
    try:
        _run_agent_steps(plan, provider, before_end)
    except PlannedFailure:
        assert plan.fail_at is not None


def _run_agent_steps(plan: AgentPlan, provider: TracerProvider,
                     before_end: Callable[[], None] | None) -> None:
    with agent_session(plan.question, session_id=plan.session_id, collection=plan.collection,
                       tracer_provider=provider) as session:
        for k, sp in enumerate(plan.steps):
            with session.iteration() as step:
                if sp.thought is not None:
                    step.thought(sp.thought)
                if k == plan.fail_at:
                    raise PlannedFailure(f"step {k + 1} failed")
                if sp.call_tool:
                    step.call_tool(sp.tool, _tool_func(sp, provider), sp.args)
                else:
                    step.action(sp.tool, sp.args)
                    _tool_func(sp, provider)()
                    step.observation(sp.result)
        if before_end:
            before_end()
        if plan.answer is not None:
            session.conclude(plan.answer)


def _tool_func(sp: StepPlan, provider: TracerProvider) -> Callable[..., str]:
    def tool(*_args: Any, **_kwargs: Any) -> str:
        if isinstance(sp.inner, GenAIAgent):
            emit_genai_agent(sp.inner, provider.get_tracer("tests.genai"))
        elif isinstance(sp.inner, DocRagPlan):
            _run_doc_rag(sp.inner, provider, None)
        return sp.result
    return tool


def _run_graph_rag(plan: GraphRagPlan, provider: TracerProvider,
                   before_end: Callable[[], None] | None) -> None:
    with graph_rag_session(plan.question, session_id=plan.session_id, tracer_provider=provider) as session:
        session.exploration(plan.edges)
        if plan.edges:
            session.focus([(plan.edges[i], reasoning) for i, reasoning in plan.selected])
        if before_end:
            before_end()
        if plan.answer is not None:
            session.synthesis(plan.answer)


def _run_doc_rag(plan: DocRagPlan, provider: TracerProvider, before_end: Callable[[], None] | None) -> None:
    with doc_rag_session(plan.question, session_id=plan.session_id, tracer_provider=provider) as session:
        session.exploration(plan.chunks)
        if before_end:
            before_end()
        if plan.answer is not None:
            session.synthesis(plan.answer)


def _messages(role: str, text: str) -> str:
    system = {"role": "system", "parts": [{"type": "text", "content": "be brief"}]}
    history = [system] if role == "user" else []
    parts: list[dict[str, str]] = []
    if role == "assistant":
        parts.append({"type": "reasoning", "content": "thinking..."})
    parts.append({"type": "text", "content": text})
    return json.dumps([*history, {"role": role, "parts": parts}])


def emit_genai_agent(agent: GenAIAgent, tracer: Tracer) -> None:
    """One agent run as a framework instrumentation would record it."""
    oi = agent.style == "openinference"
    attrs: dict[str, Any]
    if oi:
        name = f"{agent.name}.run"
        attrs = {A.OPENINFERENCE_SPAN_KIND: "AGENT", "session.id": "s-1"}
        if agent.query is not None:
            attrs[A.INPUT_VALUE] = agent.query
        if agent.answer is not None:
            attrs[A.OUTPUT_VALUE] = agent.answer
    else:
        name = f"invoke_agent {agent.name}"
        attrs = {A.GEN_AI_OPERATION_NAME: "invoke_agent", A.GEN_AI_AGENT_NAME: agent.name}
        if agent.query is not None:
            attrs[A.GEN_AI_INPUT_MESSAGES] = _messages("user", agent.query)
        if agent.answer is not None:
            attrs[A.GEN_AI_OUTPUT_MESSAGES] = _messages("assistant", agent.answer)
    with tracer.start_as_current_span(name, kind=SpanKind.INTERNAL, attributes=attrs):
        for n, turn in enumerate(agent.turns, 1):
            wrapper: AbstractContextManager[Any] = nullcontext()
            if turn.wrapper:
                wrapper = tracer.start_as_current_span(
                    f"Step {n}" if oi else "turn",
                    attributes={A.OPENINFERENCE_SPAN_KIND: turn.wrapper} if oi else {})
            with wrapper:
                tie: int | None = None
                for item in turn.items:
                    if turn.tied and isinstance(item, Tool):
                        tie = tie if tie is not None else time.time_ns()
                    else:
                        tie = None
                    _emit_item(item, tracer, oi, tie)


def _emit_item(item: Chat | Tool, tracer: Tracer, oi: bool, start: int | None = None) -> None:
    """One model call or tool call; a tool call starts at ``start`` when given (parallel calls)."""
    if isinstance(item, Chat):
        attrs = ({A.OPENINFERENCE_SPAN_KIND: "LLM", A.OUTPUT_VALUE: item.text} if oi else
                 {A.GEN_AI_OPERATION_NAME: "chat",
                  A.GEN_AI_OUTPUT_MESSAGES: _messages("assistant", item.text)})
        tracer.start_span("chat model" if not oi else "LiteLLMModel.generate", kind=SpanKind.CLIENT,
                          attributes=attrs).end()
        return
    if oi:
        name = f"{item.name}Tool"
        attrs = {A.OPENINFERENCE_SPAN_KIND: "TOOL", A.TOOL_NAME: item.name,
                 A.GEN_AI_TOOL_CALL_ARGUMENTS: '{"type": "object", "properties": {}}'}
        if item.args is not None:
            attrs[A.INPUT_VALUE] = item.args
        if item.result is not None:
            attrs[A.OUTPUT_VALUE] = item.result
    else:
        name = f"execute_tool {item.name}"
        attrs = {A.GEN_AI_OPERATION_NAME: "execute_tool", A.GEN_AI_TOOL_NAME: item.name}
        if item.args is not None:
            attrs[A.GEN_AI_TOOL_CALL_ARGUMENTS] = item.args
        if item.result is not None:
            attrs[A.GEN_AI_TOOL_CALL_RESULT] = item.result
    with tracer.start_as_current_span(name, kind=SpanKind.INTERNAL, attributes=attrs, start_time=start):
        if item.nested is None:
            return
        if not item.remote:
            emit_genai_agent(item.nested, tracer)
            return
        # An HTTP call to the agent's service: client span here, server span there (remote parent).
        with tracer.start_as_current_span("POST /agent", kind=SpanKind.CLIENT) as client:
            ctx = client.get_span_context()
            remote = trace.NonRecordingSpan(trace.SpanContext(ctx.trace_id, ctx.span_id, is_remote=True,
                                                              trace_flags=ctx.trace_flags))
            token = context.attach(trace.set_span_in_context(remote))
            try:
                with tracer.start_as_current_span("POST /agent", kind=SpanKind.SERVER):
                    emit_genai_agent(item.nested, tracer)
            finally:
                context.detach(token)


# -- delivery -------------------------------------------------------------------------------------------


@st.composite
def schedules(draw: st.DrawFn, n: int) -> list[list[int]]:
    """Indices of ``n`` spans split into batches, shuffled; each batch delivered one or more times,
    the repeats anywhere in the sequence."""
    if n == 0:
        return []
    order = draw(st.permutations(range(n)))
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=min(n - 1, 6)))) if n > 1 else []
    bounds = [0, *cuts, n]
    batches = [list(order[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]
    repeats = draw(st.lists(st.integers(0, len(batches) - 1), max_size=3))
    sequence = draw(st.permutations([*range(len(batches)), *repeats]))
    return [batches[i] for i in sequence]


def deliver(spans: Sequence[ReadableSpan], schedule: Sequence[Sequence[int]]) -> list[list[ReadableSpan]]:
    return [[spans[i] for i in batch] for batch in schedule]
