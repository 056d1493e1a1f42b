"""The helper API: one context manager per flow of the spec, emitting standard OpenTelemetry spans.

Spans follow the GenAI conventions (root ``invoke_agent {agent}``, ``execute_tool {tool}``,
``retrieval {collection}``) and carry the ``otel_prov.*`` attributes of :mod:`otel_prov.attributes`.
Nothing here knows about RDF: the exporter derives the graph from the spans alone.
"""

from __future__ import annotations

import json
import logging
import uuid as _uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Tracer, TracerProvider

from . import attributes as A
from .ingest.problems import ProblemLog
from .model.iris import (
    analysis_iri,
    approval_iri,
    conclusion_iri,
    exploration_iri,
    focus_iri,
    question_iri,
    session_uuid,
    synthesis_iri,
)
from .model.vocab import GRAPH_RETRIEVAL

logger = logging.getLogger(__name__)
_problems = ProblemLog(logger, "otel-prov", "every occurrence is counted in its session's .problems")

_TRACER_NAME = "otel_prov"
# The IRI of the step being run, so that a session started inside it (a RAG query run by an
# agent's tool) is recorded as its sub-trace.
_current_step: ContextVar[str | None] = ContextVar("otel_prov_current_step", default=None)

Edge = Sequence[Any]
"""A knowledge-graph edge ``(subject, predicate, object)``; values that start with ``http://``,
``https://`` or ``urn:`` are IRIs, everything else is a literal."""


NOT_JSON = "tool arguments or result not JSON-serialisable (written with repr())"
NOT_AN_EDGE = "knowledge-graph edge that is not (subject, predicate, object) (left out)"
NOT_A_FOCUS_ITEM = "focus item that is not (edge, reasoning) (left out)"
NO_ANSWER_YET = "approval of an answer before the session gave one (left out)"


def _problem(kind: str, counts: Counter[str] | None) -> None:
    """A value a session could not record as given: counted in the session's ``problems``, logged
    once per process."""
    if counts is not None:
        counts[kind] += 1
    _problems.report([kind])


def to_json(value: Any, problems: Counter[str] | None = None) -> str:
    """JSON text for tool arguments and results; values JSON cannot hold are written with ``repr``
    (counted in ``problems``, logged once)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        _problem(NOT_JSON, problems)
        return json.dumps(value, ensure_ascii=False, default=repr, skipkeys=True)


def _edge(value: Any) -> list[str] | None:
    """An edge as ``[s, p, o]`` text; None when it is not three values."""
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 3:
        return [str(t) for t in value]
    return None


class _Session:
    """What every flow's session has: the root span, ids, and "explain this answer" handles."""

    flow = ""

    def __init__(self, tracer: Tracer, root: Span, question: str, collection: str,
                 session_id: str | None, agent_name: str) -> None:
        self._tracer = tracer
        self.span = root
        self.question = question
        self.collection = collection
        self.agent_name = agent_name
        ctx = root.get_span_context()
        self.trace_id = f"{ctx.trace_id:032x}" if ctx.is_valid else None
        self.session_id = session_id or session_uuid(None, ctx.trace_id)
        self._uuid = session_uuid(self.session_id, 0)
        self.explain_id = question_iri(self.flow, self._uuid)
        """The IRI of this session's Question: the entry point of its explanation."""
        self.explain_graph = GRAPH_RETRIEVAL
        """The named graph the explanation is in."""
        self._common: dict[str, Any] = {A.FLOW: self.flow, A.GEN_AI_AGENT_NAME: agent_name}
        if session_id is not None:
            self._common[A.SESSION_ID] = str(session_id)
        self._context = trace.set_span_in_context(root)
        self._synthesized = False
        self.problems: Counter[str] = Counter()
        """What this session could not record as it was given, by kind, e.g. ``{"focus item that is
        not (edge, reasoning) (left out)": 1}`` (empty when everything was recorded).  Each kind is
        also logged once per process, as a warning of the ``otel_prov.instrument`` logger."""

    def _instant(self, name: str, step: str, attributes: Mapping[str, Any],
                 kind: SpanKind = SpanKind.INTERNAL, context: Context | None = None) -> None:
        span = self._tracer.start_span(name, context=context or self._context, kind=kind,
                                       attributes={**self._common, A.STEP: step, **attributes})
        span.end()

    def _answer_iri(self) -> str | None:
        """The IRI of the session's answer once it has given one."""
        return None

    def approval(self, by: str, *, approved: bool = True, role: str | None = None,
                 comment: str | None = None) -> str | None:
        """A person's approval (or, ``approved=False``, rejection) of the session's answer, now: an
        instant span ``approval``.  Call it after ``conclude()`` / ``synthesis()`` (an agent's answer
        is generated when its session ends: after the ``with`` block keeps the strict profile's times
        in order).  Returns the approval's IRI; None, and counted in ``problems``, before an answer."""
        answer = self._answer_iri()
        if answer is None:
            _problem(NO_ANSWER_YET, self.problems)
            return None
        return self._approve(answer, by, approved, role, comment, self._context)

    def _approve(self, of: str, by: str, approved: bool, role: str | None, comment: str | None,
                 context: Context) -> str | None:
        attributes: dict[str, Any] = {
            A.APPROVAL_OF: of,
            A.APPROVAL_DECISION: A.DECISION_APPROVED if approved else A.DECISION_REJECTED,
            A.APPROVAL_BY: str(by),
        }
        if role is not None:
            attributes[A.APPROVAL_ROLE] = str(role)
        if comment is not None:
            attributes[A.APPROVAL_COMMENT] = str(comment)
        span = self._tracer.start_span("approval", context=context, kind=SpanKind.INTERNAL,
                                       attributes={**self._common, A.STEP: A.STEP_APPROVAL, **attributes})
        span.end()
        ctx = span.get_span_context()
        return approval_iri(self.explain_id, ctx.span_id) if ctx.is_valid else None


class AgentSession(_Session):
    """A ReAct agent's session: ``iteration()`` per think/act/observe cycle, then ``conclude()``."""

    flow = A.FLOW_AGENT

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.iterations = 0
        self.answer: str | None = None

    @contextmanager
    def iteration(self) -> Iterator[Step]:
        """One think/act/observe cycle: a span ``iteration {n}``, numbered 1, 2, ..."""
        self.iterations += 1
        n = self.iterations
        step_iri = analysis_iri(self._uuid, n)
        attributes = {**self._common, A.STEP: A.STEP_ANALYSIS, A.ITERATION: n}
        with self._tracer.start_as_current_span(
            f"iteration {n}", context=self._context, kind=SpanKind.INTERNAL, attributes=attributes
        ) as span:
            token = _current_step.set(step_iri)
            try:
                yield Step(self, span, n, step_iri)
            finally:
                _current_step.reset(token)

    def _answer_iri(self) -> str | None:
        return conclusion_iri(self._uuid) if self.answer is not None else None

    def conclude(self, answer: str) -> str:
        """Record the final answer; returns the Conclusion's IRI."""
        self.answer = str(answer)
        self.span.set_attribute(A.ANSWER, self.answer)
        self.span.set_attribute(A.ITERATION, self.iterations)
        return conclusion_iri(self._uuid)


class Step:
    """One iteration of an agent: what it thought, which tool it chose, what it observed."""

    def __init__(self, session: AgentSession, span: Span, number: int, explain_id: str) -> None:
        self._session = session
        self.span = span
        self.number = number
        self.explain_id = explain_id
        """The IRI of this step's Analysis node."""
        self._observed = False

    def thought(self, text: str) -> None:
        self.span.set_attribute(A.THOUGHT, str(text))

    def action(self, tool: str, arguments: Any = None) -> None:
        """The tool chosen and its arguments (JSON-serialised)."""
        self._act(tool, None if arguments is None else to_json(arguments, self._session.problems))

    def _act(self, tool: str, arguments: str | None) -> None:
        self.span.set_attribute(A.ACTION, str(tool))
        if arguments is not None:
            self.span.set_attribute(A.ARGUMENTS, arguments)

    def observation(self, text: str) -> None:
        self._observed = True
        self.span.set_attribute(A.OBSERVATION, str(text))

    def approval(self, by: str, *, approved: bool = True, role: str | None = None,
                 comment: str | None = None) -> str | None:
        """A person's approval (or, ``approved=False``, rejection) of this step, now: an instant span
        ``approval`` (a child of the step's span, or of the session's once the step has ended).
        ``role`` defaults to ``approver`` in the graph.  Returns the approval's IRI."""
        context = trace.set_span_in_context(self.span) if self.span.is_recording() else self._session._context
        return self._session._approve(self.explain_id, by, approved, role, comment, context)

    def call_tool(self, tool: str, func: Callable[..., Any], arguments: Any = None) -> Any:
        """Record the action, run ``func`` in an ``execute_tool {tool}`` span and record its result
        as the observation (unless one was given).  A mapping is passed as keyword arguments, any
        other value as the one positional argument.  Exceptions are recorded and re-raised."""
        session = self._session
        arguments_text = None if arguments is None else to_json(arguments, session.problems)
        self._act(tool, arguments_text)
        attributes = {
            **session._common,
            A.STEP: A.STEP_TOOL,
            A.GEN_AI_OPERATION_NAME: "execute_tool",
            A.GEN_AI_TOOL_NAME: str(tool),
        }
        if arguments_text is not None:
            attributes[A.GEN_AI_TOOL_CALL_ARGUMENTS] = arguments_text
        with session._tracer.start_as_current_span(
            f"execute_tool {tool}", kind=SpanKind.INTERNAL, attributes=attributes
        ) as span:
            if isinstance(arguments, Mapping):
                result = func(**arguments)
            elif arguments is None:
                result = func()
            else:
                result = func(arguments)
            text = to_json(result, session.problems)
            span.set_attribute(A.GEN_AI_TOOL_CALL_RESULT, text)
        if not self._observed:
            self.observation(text)
        return result


class _RagSession(_Session):
    def _answer_iri(self) -> str | None:
        return synthesis_iri(self.flow, self._uuid) if self._synthesized else None


class GraphRagSession(_RagSession):
    """A GraphRAG query: ``exploration(edges)``, ``focus(selected)``, ``synthesis(answer)``."""

    flow = A.FLOW_GRAPH_RAG

    def exploration(self, edges: Iterable[Edge]) -> str:
        """The edges retrieved from the knowledge graph; returns the Exploration's IRI."""
        edge_list = []
        for edge in edges:
            found = _edge(edge)
            if found is None:
                _problem(NOT_AN_EDGE, self.problems)
            else:
                edge_list.append(found)
        self._instant(f"retrieval {self.collection}", A.STEP_EXPLORATION, {
            A.GEN_AI_OPERATION_NAME: "retrieval",
            A.GEN_AI_DATA_SOURCE_ID: self.collection,
            A.GEN_AI_RETRIEVAL_QUERY_TEXT: self.question,
            A.EDGE_COUNT: len(edge_list),
            A.EDGES: to_json(edge_list, self.problems),
        }, kind=SpanKind.CLIENT)
        return exploration_iri(self.flow, self._uuid)

    def focus(self, selected: Iterable[Any]) -> str:
        """The edges kept, each with its reasoning: ``(edge, reasoning)`` pairs or
        ``{"edge": edge, "reasoning": text}`` mappings.  Returns the Focus's IRI."""
        items = []
        for item in selected:
            if isinstance(item, Mapping):
                edge, reasoning = _edge(item.get("edge")), item.get("reasoning")
            elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 2:
                edge, reasoning = _edge(item[0]), item[1]
            else:
                edge, reasoning = None, None
            if edge is None:
                _problem(NOT_A_FOCUS_ITEM, self.problems)
                continue
            entry: dict[str, Any] = {"edge": edge}
            if reasoning is not None:
                entry["reasoning"] = str(reasoning)
            items.append(entry)
        self._instant("focus", A.STEP_FOCUS, {A.SELECTED_EDGES: to_json(items, self.problems)})
        return focus_iri(self._uuid)

    def synthesis(self, answer: str) -> str:
        """The final answer; returns the Synthesis's IRI."""
        self._instant("synthesis", A.STEP_SYNTHESIS, {A.CONTENT: str(answer)})
        self._synthesized = True
        return synthesis_iri(self.flow, self._uuid)


class DocRagSession(_RagSession):
    """A document-RAG query: ``exploration(chunk_ids)``, ``synthesis(content)``."""

    flow = A.FLOW_DOC_RAG

    def exploration(self, chunk_ids: Iterable[str]) -> str:
        chunks = tuple(str(c) for c in chunk_ids)
        self._instant(f"retrieval {self.collection}", A.STEP_EXPLORATION, {
            A.GEN_AI_OPERATION_NAME: "retrieval",
            A.GEN_AI_DATA_SOURCE_ID: self.collection,
            A.GEN_AI_RETRIEVAL_QUERY_TEXT: self.question,
            A.CHUNK_IDS: chunks,
        }, kind=SpanKind.CLIENT)
        return exploration_iri(self.flow, self._uuid)

    def synthesis(self, content: str) -> str:
        self._instant("synthesis", A.STEP_SYNTHESIS, {A.CONTENT: str(content)})
        self._synthesized = True
        return synthesis_iri(self.flow, self._uuid)


S = TypeVar("S", bound=_Session)

_warned_not_recorded = False
NOT_RECORDED = "session not recorded (its spans do not record: no SDK tracer provider, or not sampled)"
"""The problem counted on every session whose spans do not record (said once per process in the log)."""


def _not_recorded(given: TracerProvider | None) -> None:
    """Say once per process that sessions are not recorded: their spans do not record (no SDK tracer
    provider is set, or the sampler dropped them), so the explain ids handed back name nothing."""
    global _warned_not_recorded
    if _warned_not_recorded:
        return
    _warned_not_recorded = True
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

    provider = given if given is not None else trace.get_tracer_provider()
    why = ("its sampler did not sample it" if isinstance(provider, SdkTracerProvider) else
           "no OpenTelemetry SDK tracer provider is set (trace.set_tracer_provider(TracerProvider()) with a "
           "ProvSpanExporter on it, or run under opentelemetry-instrument with OTEL_TRACES_EXPORTER=prov), "
           "or pass tracer_provider=")
    logger.warning("otel-prov: this session is not recorded, nor any other of this process like it: %s; "
                   "its explain_id names nothing in the store", why)


@contextmanager
def _session(cls: type[S], question: str, session_id: str | None, collection: str,
             agent_name: str, tracer_provider: TracerProvider | None) -> Iterator[S]:
    tracer = trace.get_tracer(_TRACER_NAME, tracer_provider=tracer_provider)
    enclosing = trace.get_current_span().get_span_context().is_valid
    derived_from = _current_step.get()
    with tracer.start_as_current_span(
        f"invoke_agent {agent_name}", kind=SpanKind.INTERNAL,
    ) as root:
        ctx = root.get_span_context()
        if session_id is not None and not str(session_id).strip():
            session_id = None  # blank: as if not given (the mapping treats it so too)
        if session_id is None and (enclosing or not ctx.is_valid):
            # Inside another trace the trace id is not this session's own: mint one.
            session_id = str(_uuid.uuid4())
        session = cls(tracer, root, str(question), collection, session_id, agent_name)
        marker = {
            **session._common,
            A.STEP: A.STEP_QUESTION,
            A.QUESTION: session.question,
            A.COLLECTION: collection,
        }
        if derived_from:
            marker[A.DERIVED_FROM] = derived_from
        root.set_attributes({
            **marker,
            A.STEP: A.STEP_SESSION,
            A.EXPLAIN_ID: session.explain_id,
            A.GEN_AI_OPERATION_NAME: "invoke_agent",
            A.GEN_AI_CONVERSATION_ID: session.session_id,
        })
        start = getattr(root, "start_time", None)
        if not root.is_recording():
            _not_recorded(tracer_provider)
            session.problems[NOT_RECORDED] += 1
        if root.is_recording() and start:
            # An instant span with the root's start time: the Question is stored now, not when
            # the session ends.
            tracer.start_span("question", context=session._context, start_time=start,
                              attributes=marker).end()
        yield session


def agent_session(question: str, *, session_id: str | None = None, collection: str = "default",
                  agent_name: str = "react-agent",
                  tracer_provider: TracerProvider | None = None) -> AbstractContextManager[AgentSession]:
    """An agent session (ReAct loop).  ``session_id`` defaults to the trace id as a UUID (a fresh
    UUID when started inside another trace)."""
    return _session(AgentSession, question, session_id, collection, agent_name, tracer_provider)


def graph_rag_session(question: str, *, session_id: str | None = None, collection: str = "default",
                      agent_name: str = "graph-rag", tracer_provider: TracerProvider | None = None,
                      ) -> AbstractContextManager[GraphRagSession]:
    """A GraphRAG query (the keyword arguments of :func:`agent_session`)."""
    return _session(GraphRagSession, question, session_id, collection, agent_name, tracer_provider)


def doc_rag_session(question: str, *, session_id: str | None = None, collection: str = "default",
                    agent_name: str = "doc-rag", tracer_provider: TracerProvider | None = None,
                    ) -> AbstractContextManager[DocRagSession]:
    """A document-RAG query (the keyword arguments of :func:`agent_session`)."""
    return _session(DocRagSession, question, session_id, collection, agent_name, tracer_provider)
