"""Span dialects: how each family of framework instrumentation writes an agent run into spans.

A dialect is one module with one object implementing :class:`Dialect`: it says whether it speaks for
a span (its marker attribute), what the span is (:meth:`Dialect.role`), and reads what the
explainability model needs out of it -- an agent's name, question and answer, a tool call, an LLM
call (the thought, the tool calls it requested, the results it was given), a retrieval -- as the plain
data below, declaring every attribute key it reads (:attr:`Dialect.keys`, :attr:`Dialect.prefixes`).
:func:`dialect_of` dispatches, in one place, in the order of :data:`DIALECTS` (the most specific
marker first; the GenAI conventions are the fallback).  Shared readers (messages, arguments, results,
documents) are in :mod:`.content`.

A dialect never raises: what it cannot read is ``None`` (or empty), with a short problem text
appended to ``problems`` when the shape was unexpected.

Where to add one: CONTRIBUTING.md ("A span dialect").
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..spans import SpanLike


class Role(enum.Enum):
    """What a framework span is to the explainability model."""

    AGENT = "agent"
    """An agent run, or the root of one (a workflow): a Question, and a Conclusion once it ends."""
    CHAIN = "chain"
    """An OpenInference ``CHAIN``: the session when it is the top span of a run that calls tools (a
    LangGraph graph) or retrieves (a RAG chain); else nothing."""
    TOOL = "tool"
    """A tool call (or a hand-off) of the nearest agent above: one Analysis step."""
    LLM = "llm"
    """A model call: the thought of the tool calls it requested; alone, part of a chat conversation."""
    RETRIEVER = "retriever"
    """A retrieval: a DocRAG session (a sub-trace of the step or agent it runs in)."""
    RERANKER = "reranker"
    """A reranking of retrieved documents: the chunks a DocRAG session selected (its Focus)."""
    OTHER = "other"
    """Anything else (turns, prompts, HTTP, ...): needed only for its place in the tree."""


@dataclass(frozen=True, slots=True)
class Agent:
    """What an agent (or chain) span says of its run (``None``: not recorded on the span)."""

    name: str | None
    question: str | None
    answer: str | None
    named: bool = True
    """The span names an agent of its own (OpenInference: an unnamed ``AGENT`` span directly below
    another agent is one of its turns)."""
    captured: bool = True
    """The span records content (messages, input, output); False: capture was off."""
    transcript: tuple[TranscriptStep, ...] = ()
    """The tool calls the span's own record of the run's conversation shows (its output holding the
    messages): the run's steps when no tool span or model call shows them."""


@dataclass(frozen=True, slots=True)
class Request:
    """A tool call the model asked for in an LLM call."""

    id: str | None
    name: str
    arguments: str | None
    """JSON text, as the model wrote it (None: not recorded)."""


@dataclass(frozen=True, slots=True)
class TranscriptStep:
    """A tool call a transcript shows: what the model said with it, the call, its result."""

    thought: str | None
    request: Request
    result: str | None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """What a tool span says of its call (``None``: not recorded on the span)."""

    name: str
    arguments: str | None = None
    """The actual arguments as JSON text (unwrapped from the framework's envelope)."""
    bare_argument: str | None = None
    """The argument of a one-argument tool, given as a bare string (its parameter not named)."""
    parameters: tuple[str, ...] = ()
    """The tool's parameter names, when the span gives its schema."""
    result: str | None = None
    call_id: str | None = None
    handoff: str | None = None
    """A hand-off to another agent: its name ("" when the span does not say); None: a tool call."""
    captured: bool = True


@dataclass(frozen=True, slots=True)
class Meta:
    """What every user of an agent-tracing tool expects of a model call beside its content."""

    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class LLMCall:
    """What a model-call span says: the text and reasoning it produced, the tool calls it requested,
    the tool results its input ends with, the user's question."""

    text: str | None = None
    reasoning: str | None = None
    requests: tuple[Request, ...] = ()
    results: tuple[tuple[str | None, str], ...] = ()
    """The tool results the input ends with: (call id, text), what the previous call asked for."""
    question: str | None = None
    """The text of the last user message of the input."""
    conversation: str | None = None
    """``gen_ai.conversation.id`` (or the dialect's equivalent)."""
    offered_tools: bool = False
    """The call offered the model tools (an agent's call)."""
    output_captured: bool = False
    """The span records the model's output (False: capture was off, or the instrumentation drops it)."""
    prior_text: str | None = None
    prior_requests: tuple[Request, ...] = ()
    """The previous call's output as its input ends with it (the assistant message before the
    trailing tool results): where some instrumentations record a call's output."""
    said: tuple[tuple[str, str | None], ...] = ()
    """What the model said as it requested each tool call of the assistant messages its input ends
    with (call id, thought): the previous call's words, which that call's own span may not hold (a
    span overwritten call after call)."""
    meta: Meta = Meta()

    @property
    def thought(self) -> str | None:
        from .content import thought_of

        return thought_of([self.reasoning] if self.reasoning else [], [self.text] if self.text else [])


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What a retrieval span says: the query and the retrieved chunks' ids (``None``: the documents
    were not recorded)."""

    query: str | None
    chunks: tuple[str, ...] | None
    scores: tuple[float | None, ...] | None = None
    """Each chunk's score, when the span records any."""


@dataclass(frozen=True, slots=True)
class Evaluation:
    """An evaluation of what a span produced (a ``gen_ai.evaluation.result`` event): its name, score,
    label and explanation (``None``: not recorded), and when it was made (0: not known)."""

    name: str
    score: float | None = None
    label: str | None = None
    explanation: str | None = None
    time_ns: int = 0


EVALUATION_EVENT = "gen_ai.evaluation.result"


def evaluations_of(events: Sequence[tuple[str, Mapping[str, Any]]]) -> tuple[Evaluation, ...]:
    """The evaluations among a span's events (the GenAI conventions' ``gen_ai.evaluation.result``)."""
    found = []
    for name, attrs in events:
        if name != EVALUATION_EVENT:
            continue
        title = attrs.get("gen_ai.evaluation.name")
        if not isinstance(title, str) or not title:
            continue
        score = attrs.get("gen_ai.evaluation.score.value")
        if isinstance(score, str):
            try:
                score = float(score)
            except ValueError:
                score = None
        label = attrs.get("gen_ai.evaluation.score.label")
        explanation = attrs.get("gen_ai.evaluation.explanation")
        time_ns = attrs.get("otel_prov.event.time", 0)
        found.append(Evaluation(
            title, float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
            label if isinstance(label, str) else None, explanation if isinstance(explanation, str) else None,
            time_ns if isinstance(time_ns, int) else 0))
    return tuple(found)


class Dialect(Protocol):
    name: str
    """A short name, for docs and problems."""
    keys: frozenset[str]
    """Every attribute key the dialect reads."""
    prefixes: tuple[str, ...]
    """Prefixes of the flattened keys it reads (``llm.input_messages.``...)."""
    turns_below_agent: bool
    """An unnamed agent span of this dialect directly below another agent is one of its turns, not
    a nested agent (OpenInference marks LangGraph's model turns ``AGENT``)."""

    def claims(self, span: SpanLike) -> bool:
        """Whether the span is written in this dialect."""
        ...

    def role(self, span: SpanLike) -> Role:
        """What the span is (classify)."""
        ...

    def agent(self, span: SpanLike, problems: list[str]) -> Agent:
        """An agent or chain span's name, question (clean user text) and answer (plain text)."""
        ...

    def tool_call(self, span: SpanLike, problems: list[str]) -> ToolCall: ...

    def llm_call(self, span: SpanLike, problems: list[str]) -> LLMCall:
        """A model call: its thought (text and reasoning), the tool calls it requested, ..."""
        ...

    def retrieval(self, span: SpanLike, problems: list[str]) -> Retrieval: ...


def _dialects() -> tuple[Dialect, ...]:
    from .genai import GENAI
    from .openinference import OPENINFERENCE
    from .traceloop import TRACELOOP

    return (OPENINFERENCE, TRACELOOP, GENAI)


DIALECTS: tuple[Dialect, ...] = _dialects()
"""Every dialect, most specific first; the last one (the GenAI conventions) claims every span."""


def dialect_of(span: SpanLike) -> Dialect:
    """The dialect a span is written in."""
    for dialect in DIALECTS:
        if dialect.claims(span):
            return dialect
    return DIALECTS[-1]
