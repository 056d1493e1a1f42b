"""Writing the nodes of a framework trace (the runs of :mod:`.agents`, the conversations of
:mod:`.conversations`): each node as the ``otel_prov`` span it stands for, mapped by the same handlers
as our own spans (:func:`.flows.map_span`), and the one place every content value passes the rule of
:mod:`.values` on its way to the graph.

A value that is the plain thing is written as the property; anything else is ``otelprov:notCaptured``
for that property, its raw value under ``otelprov:raw{Property}`` (which no reader shows as the
value), and a redaction marker is also ``otelprov:redacted``.  Pure.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .. import attributes as A
from ..model.iris import (
    activity_iri,
    analysis_iri,
    conclusion_iri,
    evaluation_iri,
    is_question_iri,
    question_iri,
    session_activity_iri,
    synthesis_iri,
)
from ..model.profiles import STRICT
from ..model.terms import (
    datetime_from_ns,
    double,
    iri,
    literal,
    span_id_literal,
    trace_id_literal,
    uuid_from_trace_id,
)
from ..model.vocab import NT
from . import values as V
from .dialects import Evaluation, LLMCall, Meta
from .flows import Mapped, map_span
from .limits import ValueTooLarge
from .spans import SpanLike, SpanRecord, SpanView

NO_QUERY = ("agent run without a question (no user text on its spans or its model calls): "
            "tg:query left empty, marked not captured")

# What ``otelprov:notCaptured`` names: the missing property's local name.
QUERY, THOUGHT, ARGUMENTS, OBSERVATION, ANSWER, CONTENT, CHUNKS = (
    V.QUERY, V.THOUGHT, V.ARGUMENTS, V.OBSERVATION, V.ANSWER, V.CONTENT, "selectedChunk")
_RAW = {QUERY: NT.raw_query, THOUGHT: NT.raw_thought, ARGUMENTS: NT.raw_arguments,
        OBSERVATION: NT.raw_observation, ANSWER: NT.raw_answer, CONTENT: NT.raw_content}


@dataclass
class AgentsMapped(Mapped):
    """:class:`Mapped`, plus the spans that wait for missing ancestors and the model calls outside
    any agent."""

    waiting: int = 0
    remote_roots: int = 0
    """Spans taken as roots because their parent is remote and has not arrived (it may)."""
    free_calls: list[SpanView] = field(default_factory=list)
    """Model calls outside any agent: calls of chat conversations (:mod:`.conversations`)."""
    too_large: dict[int, str] = field(default_factory=dict)
    """Spans (by span id) whose node was left out: a value too large for the store (:mod:`.limits`)."""


@dataclass
class Analysis:
    """An Analysis node to write: the span it comes from and what it records (None: absent)."""

    span: SpanLike
    action: str
    thought: str | None = None
    arguments: str | None = None
    observation: str | None = None
    missing: tuple[str, ...] = ()
    """What the trace does not record (``otelprov:notCaptured``)."""
    end_ns: int | None = None
    """When the step ended, if not when its span did."""
    llm: SpanLike | None = None
    """The model call that requested the step, with what it said (its model, tokens...)."""
    call: LLMCall | None = None
    tool_span: bool = True
    """The step's span is its tool call (False: a call the model requested, from its messages)."""
    call_id: str | None = None
    """The id the model gave the tool call, when the spans say."""
    informed: tuple[str, ...] = ()
    """The earlier steps whose results its model call was given (:data:`A.INFORMED_BY`)."""


K = TypeVar("K", bound=Hashable)


def first_given(calls: Iterable[tuple[K, Sequence[tuple[str | None, str]]]], ids: Mapping[str, str]
                ) -> dict[K, list[str]]:
    """The causal edges by tool call id (docs/model.md, "Causal edges"): for each model call (a key
    of it, and the tool results its input ends with, in the order the calls ran), the ids of
    ``ids`` (tool call id -> its step) its input gave it for the first time.  A result given again
    later reached that call through the first: one edge each, not one per call after.  A result
    without an id, or an id no step has, makes no edge: never guessed from order."""
    given: dict[K, list[str]] = {}
    seen: set[str] = set()
    for key, results in calls:
        new = [rid for rid, _ in results if rid and rid in ids and rid not in seen]
        seen.update(new)
        given[key] = list(dict.fromkeys(new))
    return given


def duration_ms(span: SpanLike) -> int | None:
    if span.start_ns > 0 and span.end_ns >= span.start_ns:
        return (span.end_ns - span.start_ns) // 1_000_000
    return None


def cost_attrs(llm: SpanLike | None, meta: Meta | None) -> dict[str, Any]:
    """The attributes that make :func:`.flows.map_span` write a model call's metadata on a node."""
    found: dict[str, Any] = {}
    if meta is not None:
        for key, value in ((A.GEN_AI_REQUEST_MODEL, meta.model), (A.GEN_AI_PROVIDER_NAME, meta.provider),
                           (A.GEN_AI_USAGE_INPUT_TOKENS, meta.input_tokens),
                           (A.GEN_AI_USAGE_OUTPUT_TOKENS, meta.output_tokens),
                           (A.GEN_AI_USAGE_REASONING_TOKENS, meta.reasoning_tokens),
                           (A.GEN_AI_RESPONSE_FINISH_REASONS, meta.finish_reason)):
            if value is not None:
                found[key] = value
    if llm is not None:
        took = duration_ms(llm)
        if took is not None:
            found[A.LLM_DURATION_MS] = took
    return found


class NodeWriter:
    """Writes nodes as the ``otel_prov`` spans they stand for, each content value through
    :func:`.values.check`, plus the marks only framework traces need."""

    def __init__(self, profile: str, result: AgentsMapped) -> None:
        self.profile = profile
        self.strict = profile == STRICT
        self.result = result

    def emit(self, span: SpanLike, attrs: dict[str, Any], end_ns: int | None = None,
             start_ns: int | None = None) -> bool:
        """Maps ``span`` as the ``otel_prov`` span it stands for: same ids, times and status.  False
        (nothing written, the span noted in ``too_large``) if a value is too large for the store."""
        ours = SpanRecord(trace_id=span.trace_id, span_id=span.span_id, name=span.name,
                          start_ns=span.start_ns if start_ns is None else start_ns,
                          end_ns=span.end_ns if end_ns is None else end_ns, attributes=attrs,
                          parent_id=span.parent_id, parent_remote=span.parent_remote, error=span.error,
                          status_message=span.status_message, service=span.service,
                          links=getattr(span, "links", ()))
        try:
            map_span(ours, self.profile, self.result)
        except ValueTooLarge as exc:
            self.result.too_large[span.span_id] = str(exc)
            return False
        return True

    def add(self, s: str, p: str, o: str) -> None:
        self.result.quads.append((s, p, o, NT.graph))

    def not_captured(self, node: str, names: Sequence[str]) -> None:
        for name in names:
            self.add(iri(node), NT.notCaptured, literal(name))

    def content(self, attrs: dict[str, Any], key: str, prop: str, value: Any | V.Verdict,
                marks: list[tuple[str, V.Verdict]]) -> None:
        """The rule: ``value`` becomes the attribute ``key`` (property ``prop``) only when it is the
        plain thing; else its verdict is kept in ``marks`` (:meth:`mark`, once the node is written)."""
        verdict = value if isinstance(value, V.Verdict) else V.check(prop, value)
        if verdict.plain:
            attrs[key] = verdict.value
        elif verdict.raw is not None:
            marks.append((prop, verdict))

    def mark(self, node: str, missing: Sequence[str], marks: Sequence[tuple[str, V.Verdict]]) -> None:
        """``node`` lacks ``missing`` (not recorded) and the values of ``marks`` (recorded, not plain)."""
        names = list(dict.fromkeys([*missing, *(prop for prop, _ in marks)]))
        self.not_captured(node, names)
        subject = iri(node)
        for prop, verdict in marks:
            if verdict.raw is not None:
                self.add(subject, _RAW[prop], literal(verdict.raw))
            if verdict.redacted:
                self.add(subject, NT.redacted, literal(prop))

    def step(self, uuid: str, number: int, step: Analysis, common: dict[str, Any]) -> None:
        """Analysis ``number`` of the session ``uuid``."""
        attrs: dict[str, Any] = {A.FLOW: A.FLOW_AGENT, A.STEP: A.STEP_ANALYSIS, A.ITERATION: number,
                                 A.ACTION: step.action, **common,
                                 **cost_attrs(step.llm, step.call.meta if step.call else None)}
        if step.tool_span:
            took = duration_ms(step.span)
            if took is not None:
                attrs[A.TOOL_DURATION_MS] = took
        if uuid != uuid_from_trace_id(step.span.trace_id):
            attrs[A.SESSION_ID] = uuid
        if step.call_id:
            attrs[A.GEN_AI_TOOL_CALL_ID] = step.call_id
        if step.informed:
            attrs[A.INFORMED_BY] = list(step.informed)
        marks: list[tuple[str, V.Verdict]] = []
        for key, prop, value in ((A.THOUGHT, THOUGHT, step.thought), (A.ARGUMENTS, ARGUMENTS, step.arguments),
                                 (A.OBSERVATION, OBSERVATION, step.observation)):
            self.content(attrs, key, prop, value, marks)
        if self.emit(step.span, attrs, step.end_ns):
            self.mark(analysis_iri(uuid, number), step.missing, marks)

    def session(self, span: SpanLike, flow: str, uuid: str, query: str | V.Verdict | None,
                derived: str | None, extra: dict[str, Any], end_ns: int | None = None,
                start_ns: int | None = None, answer: tuple[str | None, bool] | None = None) -> str:
        """A session's Question (and, for an agent given an ``answer``, its Conclusion: the answer
        found, and whether the run ended without one, so that it is marked not captured); ``derived``:
        the node it derives from (a step, or a Question)."""
        attrs: dict[str, Any] = {A.FLOW: flow, A.STEP: A.STEP_SESSION, **extra}
        question_marks: list[tuple[str, V.Verdict]] = []
        self.content(attrs, A.QUESTION, QUERY, query, question_marks)
        attrs.setdefault(A.QUESTION, "")
        answer_marks: list[tuple[str, V.Verdict]] = []
        answer_missing = False
        if flow == A.FLOW_AGENT and answer is not None:
            text, answer_missing = answer
            self.content(attrs, A.ANSWER, ANSWER, text, answer_marks)
            attrs.setdefault(A.ANSWER, "")
        if uuid != uuid_from_trace_id(span.trace_id):
            attrs[A.SESSION_ID] = uuid
        from_question = derived is not None and is_question_iri(derived)
        if derived and not (from_question and self.strict):
            attrs[A.DERIVED_FROM] = derived
        question = question_iri(flow, uuid)
        if not self.emit(span, attrs, end_ns, start_ns):
            return question
        if answer_missing or answer_marks:
            self.mark(conclusion_iri(uuid), [ANSWER] if answer_missing else [], answer_marks)
        if derived and from_question and self.strict:
            # Strict: the enclosing session's activity generated this Question (map_span links a
            # step's activity, ``{step}/activity``; a session's activity is ``{question}/session``).
            self.add(iri(question), NT.wasGeneratedBy, iri(session_activity_iri(derived)))
        self.mark(question, [QUERY] if query is None else [], question_marks)
        name = extra.get(A.GEN_AI_AGENT_NAME)
        if name:
            self.add(iri(question), NT.agentName, literal(str(name)))
        return question

    def evaluation(self, target: str, n: int, found: Evaluation, span: SpanLike) -> None:
        """The ``n``-th evaluation of the node ``target`` (written from ``span``'s event): an entity
        derived from what it evaluates; strict: generated by an activity that used it."""
        node = iri(evaluation_iri(target, n))
        self.add(node, NT.type, NT.Entity)
        self.add(node, NT.type, NT.Evaluation)
        self.add(node, NT.wasDerivedFrom, iri(target))
        self.add(node, NT.evaluationName, literal(found.name))
        if found.score is not None and found.score == found.score:
            self.add(node, NT.evaluationScore, double(found.score))
        if found.label:
            self.add(node, NT.evaluationLabel, literal(found.label))
        if found.explanation:
            verdict = V.check(V.CONTENT, found.explanation)
            if verdict.plain and verdict.value is not None:
                self.add(node, NT.evaluationExplanation, literal(verdict.value))
            elif verdict.redacted:
                self.add(node, NT.redacted, literal("evaluationExplanation"))
        self.add(node, NT.traceId, trace_id_literal(span.trace_id))
        self.add(node, NT.spanId, span_id_literal(span.span_id))
        when = found.time_ns or span.end_ns or span.start_ns
        if when > 0:
            self.add(node, NT.startTime, datetime_from_ns(when))
        if self.strict:
            activity = iri(activity_iri(evaluation_iri(target, n)))
            self.add(node, NT.wasGeneratedBy, activity)
            self.add(activity, NT.type, NT.Activity)
            self.add(activity, NT.used, iri(target))
            # No PROV times: an evaluation recorded on a span may be timed before the end of the
            # session whose answer it evaluates (its time is otelprov:startTime).

    def synthesis(self, flow: str, uuid: str, span: SpanLike, content: str | None, missing: bool,
                  focused: bool = False) -> None:
        """A RAG session's Synthesis: ``content`` through the rule (``missing``: the chain ended and
        its answer is in no span; ``focused``: derived from the session's Focus)."""
        attrs: dict[str, Any] = {A.FLOW: flow, A.STEP: A.STEP_SYNTHESIS}
        if focused:
            attrs[A.FROM_FOCUS] = True
        marks: list[tuple[str, V.Verdict]] = []
        self.content(attrs, A.CONTENT, CONTENT, content, marks)
        attrs.setdefault(A.CONTENT, "")
        if uuid != uuid_from_trace_id(span.trace_id):
            attrs[A.SESSION_ID] = uuid
        if self.emit(span, attrs):
            self.mark(synthesis_iri(flow, uuid), [CONTENT] if missing else [], marks)
