"""Our own flows: spans carrying ``otel_prov.*`` attributes (:mod:`otel_prov.attributes`) in, quads
out.  Pure: no I/O, no state.

One small function per kind of span (session, question, analysis, conclusion, exploration, focus,
synthesis, approval), dispatched in one place (:data:`_HANDLERS`).  Every IRI a span's quads use is
derived from data the span itself carries (its session id or trace id, its iteration number, its
span id), so the quads of a trace do not depend on how its spans are batched or ordered, and
exporting a span twice writes the same quads twice.

Quads are 4-tuples of N-Triples terms (:mod:`otel_prov.model.quads`).  Spans of framework
instrumentations are rewritten as the ``otel_prov`` spans they stand for and mapped here too
(:mod:`otel_prov.mapping.agents`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import attributes as A
from ..model.iris import (
    activity_iri,
    analysis_iri,
    approval_iri,
    association_iri,
    chunk_selection_iri,
    conclusion_iri,
    doc_focus_iri,
    edge_selection_iri,
    exploration_iri,
    focus_iri,
    is_analysis_iri,
    model_iri,
    person_iri,
    question_iri,
    role_iri,
    session_activity_iri,
    session_uuid,
    software_agent_iri,
    statement_iri,
    synthesis_iri,
)
from ..model.profiles import SEED, STRICT, check_profile
from ..model.quads import Quad
from ..model.terms import (
    checked_iri,
    clean_text,
    datetime_from_ns,
    double,
    has_invalid_text,
    integer,
    iri,
    literal,
    span_id_literal,
    trace_id_literal,
    value_term,
)
from ..model.vocab import NT
from .limits import ValueTooLarge, check_terms
from .spans import SpanLike, SpanRecord

_G = NT.graph
_QUESTION_SUBTYPE = {
    A.FLOW_AGENT: NT.tg_AgentQuestion,
    A.FLOW_GRAPH_RAG: NT.tg_GraphRagQuestion,
    A.FLOW_DOC_RAG: NT.tg_DocRagQuestion,
}


@dataclass
class Mapped:
    """What mapping a group of spans gave: quads, and what could not be mapped and why."""

    quads: list[Quad] = field(default_factory=list)
    mapped: int = 0
    """Spans that carry our attributes and were mapped."""
    ignored: int = 0
    """Spans that are not part of any explainability flow."""
    problems: list[str] = field(default_factory=list)
    """One short kind-of-problem text per problem met (e.g. ``"analysis span without iteration"``)."""


@dataclass(slots=True)
class _Ctx:
    """One span being mapped, with what every handler needs (not frozen: one is made per span,
    and a frozen dataclass is three times slower to build; handlers only read it)."""

    rec: SpanRecord
    attrs: Mapping[str, Any]
    flow: str
    uuid: str
    question: str
    strict: bool
    out: list[Quad]
    problems: list[str]

    def add(self, s: str, p: str, o: str) -> None:
        self.out.append((s, p, o, _G))

    def text(self, key: str) -> str | None:
        value = self.attrs.get(key)
        if value.__class__ is not str:  # the common case, str, without a call
            value = attr_text(value)
            if value is None:
                return None
        if has_invalid_text(value):
            self.problems.append("text that is not valid Unicode (replaced by U+FFFD)")
        return value

    def add_text(self, s: str, p: str, key: str) -> None:
        value = self.text(key)
        if value is not None:
            self.out.append((s, p, literal(value), _G))

    def stamp(self, node: str, *, span_id: bool = True, times: bool = True) -> None:
        """The trace id, span id, times and error status that every node records."""
        self.add(node, NT.traceId, trace_id_literal(self.rec.trace_id))
        if span_id:
            self.add(node, NT.spanId, span_id_literal(self.rec.span_id))
            for trace_id, linked in self.rec.links:  # the spans it links to: "{trace id}-{span id}"
                self.add(node, NT.linkedSpan, literal(f"{trace_id:032x}-{linked:016x}"))
        if times:
            self.times(node)
        if self.rec.error:
            self.add(node, NT.statusMessage, literal(self.rec.status_message or "error"))

    def times(self, node: str) -> None:
        """When the span the node was written from started and (once it has) ended."""
        if self.rec.start_ns > 0:
            self.add(node, NT.startTime, datetime_from_ns(self.rec.start_ns))
        if self.rec.end_ns > 0:
            self.add(node, NT.endTime, datetime_from_ns(self.rec.end_ns))

    def cost(self, node: str, activity: str | None) -> None:
        """What the step's model and tool calls cost, when the span says (:data:`A.GEN_AI_REQUEST_MODEL`
        ... :data:`A.TOOL_DURATION_MS`); strict: the model as a software agent of ``activity``."""
        attrs = self.attrs
        model = self.text(A.GEN_AI_REQUEST_MODEL)
        if model:
            self.add(node, NT.tg_llmModel, literal(model))
            if activity is not None:
                agent = iri(model_iri(model))
                self.add(activity, NT.wasAssociatedWith, agent)
                self.add(agent, NT.type, NT.Agent)
                self.add(agent, NT.type, NT.SoftwareAgent)
                self.add(agent, NT.label, literal(model))
        provider = self.text(A.GEN_AI_PROVIDER_NAME)
        if provider:
            self.add(node, NT.modelProvider, literal(provider))
        for key, predicate in ((A.GEN_AI_USAGE_INPUT_TOKENS, NT.tg_inToken),
                               (A.GEN_AI_USAGE_OUTPUT_TOKENS, NT.tg_outToken),
                               (A.GEN_AI_USAGE_REASONING_TOKENS, NT.reasoningTokens),
                               (A.LLM_DURATION_MS, NT.tg_llmDurationMs),
                               (A.TOOL_DURATION_MS, NT.tg_toolDurationMs)):
            number = int_attr(attrs, key, 0)
            if number is not None:
                self.add(node, predicate, integer(number))
        reason = attrs.get(A.GEN_AI_RESPONSE_FINISH_REASONS)
        if isinstance(reason, (list, tuple)):
            reason = next((r for r in reason if isinstance(r, str) and r), None)
        if isinstance(reason, str) and reason:
            self.add(node, NT.finishReason, literal(reason))

    def step_activity(self, entity: str, used: str) -> None:
        """Strict profile: the span as the activity that generated ``entity`` from ``used``."""
        act = iri(activity_iri(entity[1:-1]))
        self.add(entity, NT.wasGeneratedBy, act)
        self.add(entity, NT.generatedAtTime, datetime_from_ns(self.rec.end_ns))
        self.activity(act, used)

    def entity(self, node: str, kind: str) -> None:
        """A node of the model: a ``prov:Entity`` of the ``tg:`` class ``kind``."""
        self.add(node, NT.type, NT.Entity)
        self.add(node, NT.type, kind)

    def activity(self, act: str, used: str) -> None:
        """Strict profile: the span as the activity ``act``, which used ``used``."""
        self.add(act, NT.type, NT.Activity)
        self.add(act, NT.startedAtTime, datetime_from_ns(self.rec.start_ns))
        self.add(act, NT.endedAtTime, datetime_from_ns(self.rec.end_ns))
        self.add(act, NT.used, used)
        self.software_agent(act)
        self.stamp(act, times=False)  # an activity's times are PROV's own

    def software_agent(self, activity: str) -> None:
        name = self.text(A.GEN_AI_AGENT_NAME)
        if not name:
            return
        agent = iri(software_agent_iri(name))
        self.add(activity, NT.wasAssociatedWith, agent)
        self.add(agent, NT.type, NT.Agent)
        self.add(agent, NT.type, NT.SoftwareAgent)
        self.add(agent, NT.label, literal(name))


def attr_text(value: Any) -> str | None:
    """An attribute value as text: strings as they are, arrays and maps (OTLP) as JSON, with
    ``repr`` for what JSON cannot hold (bytes), so no value makes the mapping fail."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, dict)):
        try:
            return json.dumps(value, default=repr)
        except (TypeError, ValueError, RecursionError):
            return repr(value)
    return str(value)


def _q(c: _Ctx) -> str:
    return iri(question_iri(c.flow, c.uuid))


def _exploration(c: _Ctx) -> str:
    return iri(exploration_iri(c.flow, c.uuid))


def int_attr(attrs: Mapping[str, Any], key: str, minimum: int) -> int | None:
    """An integer attribute (an int, or its decimal text) that is at least ``minimum``, else None."""
    value = attrs.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if number >= minimum else None


# -- one handler per kind of span -------------------------------------------------------------


def _question(c: _Ctx, *, is_session: bool) -> None:
    q = _q(c)
    c.add(q, NT.type, NT.Entity if c.strict else NT.Activity)
    c.add(q, NT.type, NT.tg_Question)
    c.add(q, NT.type, _QUESTION_SUBTYPE[c.flow])
    c.add(q, NT.tg_query, literal(c.question))
    c.add(q, NT.generatedAtTime if c.strict else NT.startedAtTime, datetime_from_ns(c.rec.start_ns))
    c.add(q, NT.collection, literal(c.text(A.COLLECTION) or "default"))
    parent = c.text(A.DERIVED_FROM)
    if parent:
        # A sub-trace (a RAG query run by an agent's step).  Seed: TrustGraph's link, derived from
        # the step.  Strict: the step's activity generated this question (the step's own entity is
        # generated only when the step ends, after the question).
        try:
            if c.strict:
                c.add(q, NT.wasGeneratedBy, checked_iri(activity_iri(parent)))
            else:
                c.add(q, NT.wasDerivedFrom, checked_iri(parent))
        except ValueError:
            c.problems.append(f"{A.DERIVED_FROM} is not a valid absolute IRI")
    if c.rec.service:
        c.add(q, NT.serviceName, literal(c.rec.service))
    if not is_session:
        # An instant marker: it adds the Question early; the session span adds its span id.
        c.add(q, NT.traceId, trace_id_literal(c.rec.trace_id))
        return
    if c.strict:
        c.activity(iri(session_activity_iri(question_iri(c.flow, c.uuid))), q)
        c.add(q, NT.traceId, trace_id_literal(c.rec.trace_id))
        c.add(q, NT.spanId, span_id_literal(c.rec.span_id))
        c.times(q)
    else:
        c.stamp(q)


def _session(c: _Ctx) -> None:
    _question(c, is_session=True)
    if c.flow == A.FLOW_AGENT and A.ANSWER in c.attrs:
        _conclusion(c)


def _marker(c: _Ctx) -> None:
    _question(c, is_session=False)


def _conclusion(c: _Ctx) -> None:
    last = int_attr(c.attrs, A.ITERATION, 0) or 0
    prev = iri(analysis_iri(c.uuid, last)) if last else _q(c)
    node = iri(conclusion_iri(c.uuid))
    c.entity(node, NT.tg_Conclusion)
    c.add(node, NT.tg_answer, literal(c.text(A.ANSWER) or ""))
    c.add(node, NT.wasDerivedFrom, prev)
    _informed(c, node, activity=False)
    # Written from the session's span, the Conclusion has no times of its own (the session's are
    # the Question's); from a conclusion span of its own, that span's.
    c.stamp(node, times=c.attrs.get(A.STEP) == A.STEP_CONCLUSION)
    session = iri(session_activity_iri(question_iri(c.flow, c.uuid)))
    c.cost(node, session if c.strict else None)
    if c.strict:
        c.add(node, NT.wasGeneratedBy, session)
        c.add(node, NT.generatedAtTime, datetime_from_ns(c.rec.end_ns))


def _analysis(c: _Ctx) -> None:
    n = int_attr(c.attrs, A.ITERATION, 1)
    if n is None:
        c.problems.append(f"analysis span without a valid {A.ITERATION} (an integer >= 1)")
        return
    node = iri(analysis_iri(c.uuid, n))
    prev = iri(analysis_iri(c.uuid, n - 1)) if n > 1 else _q(c)
    c.entity(node, NT.tg_Analysis)
    c.add_text(node, NT.tg_thought, A.THOUGHT)
    c.add_text(node, NT.tg_action, A.ACTION)
    c.add_text(node, NT.tg_arguments, A.ARGUMENTS)
    c.add_text(node, NT.tg_observation, A.OBSERVATION)
    c.add(node, NT.wasDerivedFrom, prev)
    c.stamp(node)
    c.cost(node, iri(activity_iri(node[1:-1])) if c.strict else None)
    if c.rec.error:
        c.add(node, NT.tg_toolError, literal(c.rec.status_message or "error"))
    c.add_text(node, NT.toolCallId, A.GEN_AI_TOOL_CALL_ID)
    _informed(c, node, activity=True)
    if c.strict:
        c.step_activity(node, prev)


def _informed(c: _Ctx, node: str, *, activity: bool) -> None:
    """The causal edges of :data:`A.INFORMED_BY`: ``node`` ``otelprov:informedBy`` each step named
    (both profiles: the chain's ``prov:wasDerivedFrom`` stays the spec's); strict, with ``activity``,
    also the node's activity ``prov:wasInformedBy`` the activity of each Analysis named."""
    for target in _string_list(c, A.INFORMED_BY):
        try:
            checked = checked_iri(target)
        except ValueError:
            c.problems.append(f"{A.INFORMED_BY} holds a value that is not a valid absolute IRI")
            continue
        if checked == node:
            continue
        c.add(node, NT.informedBy, checked)
        if c.strict and activity and is_analysis_iri(target):
            c.add(iri(activity_iri(node[1:-1])), NT.wasInformedBy, iri(activity_iri(target)))


def _tool(c: _Ctx) -> None:
    """Tools are opaque (spec): their input and output are on the analysis step."""


def _exploration_step(c: _Ctx) -> None:
    node = _exploration(c)
    q = _q(c)
    c.entity(node, NT.tg_Exploration)
    if c.flow == A.FLOW_DOC_RAG:
        chunks = _string_list(c, A.CHUNK_IDS)
        if A.CHUNK_IDS in c.attrs:  # absent: not recorded (a count of 0 would be made up)
            c.add(node, NT.tg_chunkCount, integer(len(chunks)))
        _chunks(c, node, chunks)
    else:
        count = int_attr(c.attrs, A.EDGE_COUNT, 0)
        if count is None:
            edges = _json(c, A.EDGES)
            count = len(edges) if isinstance(edges, list) else None
        if count is None:
            c.problems.append(f"graphrag exploration span without {A.EDGE_COUNT}")
        else:
            c.add(node, NT.tg_edgeCount, integer(count))
    c.stamp(node)
    if c.strict:
        c.add(node, NT.wasDerivedFrom, q)
        c.step_activity(node, q)
    else:
        c.add(node, NT.wasGeneratedBy, q)


def _focus(c: _Ctx) -> None:
    node = iri(focus_iri(c.uuid))
    exploration = _exploration(c)
    c.entity(node, NT.tg_Focus)
    c.add(node, NT.wasDerivedFrom, exploration)
    c.stamp(node)
    selected = _json(c, A.SELECTED_EDGES)
    if not isinstance(selected, list):
        selected = []
        c.problems.append(f"focus span without a JSON list in {A.SELECTED_EDGES}")
    for index, item in enumerate(selected):
        edge = item.get("edge") if isinstance(item, dict) else None
        if not (isinstance(edge, list) and len(edge) == 3):
            c.problems.append(f"{A.SELECTED_EDGES} item that is not {{edge: [s, p, o]}}")
            continue
        selection = edge_selection_iri(c.uuid, index)
        sel, stmt = iri(selection), iri(statement_iri(selection))
        c.add(node, NT.tg_selectedEdge, sel)
        c.add(sel, NT.type, NT.tg_EdgeSelection)
        if c.strict:
            c.add(sel, NT.type, NT.Entity)
        c.add(sel, NT.tg_edge, stmt)
        reasoning = item.get("reasoning")
        if reasoning is not None:
            c.add(sel, NT.tg_reasoning, literal(str(reasoning)))
        c.add(stmt, NT.type, NT.Statement)
        for pred, term in zip((NT.subject, NT.predicate, NT.object), edge, strict=True):
            c.add(stmt, pred, value_term(clean_text(str(term))))
    if c.strict:
        c.step_activity(node, exploration)


def _chunks(c: _Ctx, node: str, chunks: list[str]) -> None:
    """A DocRAG Exploration's or Focus's chunks (``tg:selectedChunk``) and, where the span gives
    their scores (:data:`A.CHUNK_SCORES`), one ``tg:ChunkSelection`` per chunk with its score and
    rank."""
    for chunk in chunks:
        c.add(node, NT.tg_selectedChunk, literal(chunk))
    scores = c.attrs.get(A.CHUNK_SCORES)
    if not isinstance(scores, (list, tuple)):
        return
    for rank, (chunk, score) in enumerate(zip(chunks, scores, strict=False), 1):
        selection = iri(chunk_selection_iri(node[1:-1], rank))
        c.add(node, NT.chunkSelection, selection)
        c.add(selection, NT.type, NT.tg_ChunkSelection)
        if c.strict:
            c.add(selection, NT.type, NT.Entity)
        c.add(selection, NT.tg_selectedChunk, literal(chunk))
        c.add(selection, NT.rank, integer(rank))
        if isinstance(score, (int, float)) and not isinstance(score, bool) and score == score:
            c.add(selection, NT.tg_score, double(float(score)))


def _doc_focus(c: _Ctx) -> None:
    """A DocRAG session's Focus: the chunks a reranker selected from the Exploration's."""
    node = iri(doc_focus_iri(c.uuid))
    exploration = _exploration(c)
    c.entity(node, NT.tg_Focus)
    c.add(node, NT.wasDerivedFrom, exploration)
    chunks = _string_list(c, A.CHUNK_IDS)
    if A.CHUNK_IDS in c.attrs:
        c.add(node, NT.tg_chunkCount, integer(len(chunks)))
    _chunks(c, node, chunks)
    c.stamp(node)
    if c.strict:
        c.step_activity(node, exploration)


def _synthesis(c: _Ctx) -> None:
    node = iri(synthesis_iri(c.flow, c.uuid))
    if c.flow == A.FLOW_DOC_RAG:
        prev = iri(doc_focus_iri(c.uuid)) if c.attrs.get(A.FROM_FOCUS) is True else _exploration(c)
    else:
        prev = iri(focus_iri(c.uuid))
    c.entity(node, NT.tg_Synthesis)
    c.add(node, NT.tg_content, literal(c.text(A.CONTENT) or ""))
    c.add(node, NT.wasDerivedFrom, prev)
    c.stamp(node)
    if c.strict:
        c.step_activity(node, prev)


def _approval(c: _Ctx) -> None:
    """A person's approval or rejection of a node (:data:`A.APPROVAL_OF`): an activity that used it,
    at the span's time, associated with the person in their role (a qualified association).  The same
    in both profiles: what it uses is an entity in both (an Analysis, a Conclusion, a Synthesis)."""
    decision = c.text(A.APPROVAL_DECISION)
    if decision not in A.DECISIONS:
        c.problems.append(f"approval span whose {A.APPROVAL_DECISION} is not one of {', '.join(A.DECISIONS)}"
                          " (not mapped)")
        return
    try:
        of = checked_iri(c.text(A.APPROVAL_OF) or "")
    except ValueError:
        c.problems.append(f"approval span without a valid absolute IRI in {A.APPROVAL_OF} (not mapped)")
        return
    node = iri(approval_iri(question_iri(c.flow, c.uuid), c.rec.span_id))
    c.add(node, NT.type, NT.Activity)
    c.add(node, NT.type, NT.Approval)
    c.add(node, NT.used, of)
    c.add(node, NT.decision, literal(decision))
    if c.rec.start_ns > 0:
        c.add(node, NT.startedAtTime, datetime_from_ns(c.rec.start_ns))
    if c.rec.end_ns > 0:
        c.add(node, NT.endedAtTime, datetime_from_ns(c.rec.end_ns))
    comment = c.text(A.APPROVAL_COMMENT)
    if comment:
        c.add(node, NT.comment, literal(comment))
    c.stamp(node, times=False)  # an activity's times are PROV's own
    by = c.text(A.APPROVAL_BY)
    if not (by and by.strip()):
        c.problems.append(f"approval span without {A.APPROVAL_BY} (who decided is not recorded)")
        return
    person, association = iri(person_iri(by)), iri(association_iri(node[1:-1]))
    role_name = c.text(A.APPROVAL_ROLE)
    role_name = role_name if role_name and role_name.strip() else A.DEFAULT_APPROVAL_ROLE
    role = iri(role_iri(role_name))
    c.add(node, NT.wasAssociatedWith, person)
    c.add(person, NT.type, NT.Agent)
    c.add(person, NT.type, NT.Person)
    c.add(person, NT.label, literal(by))
    c.add(node, NT.qualifiedAssociation, association)
    c.add(association, NT.type, NT.Association)
    c.add(association, NT.agent, person)
    c.add(association, NT.hadRole, role)
    c.add(role, NT.type, NT.Role)
    c.add(role, NT.label, literal(role_name))


def _string_list(c: _Ctx, key: str) -> list[str]:
    value = c.attrs.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        parsed = _json(c, key)
        value = parsed if isinstance(parsed, list) else [value]
    elif not isinstance(value, (list, tuple)):  # one scalar (a plain-API caller's single id)
        value = [value]
    return [clean_text(str(v)) for v in value]


def _json(c: _Ctx, key: str) -> Any:
    value = c.attrs.get(key)
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        c.problems.append(f"{key} is not valid JSON")
        return None


_Handler = Callable[[_Ctx], None]
_HANDLERS: dict[tuple[str, str], _Handler] = {}
for _flow in A.FLOWS:
    _HANDLERS[(_flow, A.STEP_SESSION)] = _session
    _HANDLERS[(_flow, A.STEP_QUESTION)] = _marker
    _HANDLERS[(_flow, A.STEP_EXPLORATION)] = _exploration_step
    _HANDLERS[(_flow, A.STEP_SYNTHESIS)] = _synthesis
    _HANDLERS[(_flow, A.STEP_APPROVAL)] = _approval
_HANDLERS[(A.FLOW_AGENT, A.STEP_ANALYSIS)] = _analysis
_HANDLERS[(A.FLOW_AGENT, A.STEP_TOOL)] = _tool
_HANDLERS[(A.FLOW_AGENT, A.STEP_CONCLUSION)] = _conclusion
_HANDLERS[(A.FLOW_GRAPH_RAG, A.STEP_FOCUS)] = _focus
_HANDLERS[(A.FLOW_DOC_RAG, A.STEP_FOCUS)] = _doc_focus
del _flow


def is_ours(span: SpanLike) -> bool:
    """Whether the span carries our attributes (it is mapped on its own, without its trace's tree)."""
    return A.FLOW in span.attributes


def step_iri(span: SpanLike) -> str | None:
    """The IRI of the node an ``otel_prov`` span's step writes (a Question or an Analysis), which
    a framework agent running inside that step derives from; None for other steps."""
    attrs = span.attributes
    flow, step = attrs.get(A.FLOW), attrs.get(A.STEP)
    if flow not in A.FLOWS:
        return None
    uuid = session_uuid(attrs.get(A.SESSION_ID), span.trace_id)
    if step in (A.STEP_SESSION, A.STEP_QUESTION):
        return question_iri(str(flow), uuid)
    if step == A.STEP_ANALYSIS and flow == A.FLOW_AGENT:
        n = int_attr(attrs, A.ITERATION, 1)
        return analysis_iri(uuid, n) if n is not None else None
    return None


def map_span(rec: SpanRecord, profile: str = SEED, into: Mapped | None = None) -> Mapped:
    """The quads of one span that carries ``otel_prov.*`` attributes.  Raises
    :class:`~.limits.ValueTooLarge` (adding nothing) if a term would be too large for the store."""
    result = into if into is not None else Mapped()
    attrs = rec.attributes
    flow, step = attrs.get(A.FLOW), attrs.get(A.STEP)
    handler = _HANDLERS.get((flow, step)) if isinstance(flow, str) and isinstance(step, str) else None
    if handler is None or not isinstance(flow, str):
        result.problems.append(f"unknown {A.FLOW}/{A.STEP} pair {flow!r}/{step!r}")
        result.ignored += 1
        return result
    if handler is _tool:  # nothing to write (and nothing to check)
        result.mapped += 1
        return result
    question = attrs.get(A.QUESTION)
    ctx = _Ctx(
        rec=rec,
        attrs=attrs,
        flow=flow,
        uuid=session_uuid(attrs.get(A.SESSION_ID), rec.trace_id),
        question=clean_text(str(question)) if question is not None else "",
        strict=profile == STRICT,
        out=result.quads,
        problems=result.problems,
    )
    if question is None and step in (A.STEP_SESSION, A.STEP_QUESTION):
        result.problems.append(f"{step} span without {A.QUESTION}")
    before = len(result.quads)
    handler(ctx)
    try:
        check_terms(result.quads, before)
    except ValueTooLarge:  # none of the span's quads: they could never be written
        del result.quads[before:]
        raise
    result.mapped += 1
    return result


def map_spans(records: Iterable[SpanRecord], profile: str = SEED) -> Mapped:
    """The quads of every span that carries our attributes; the others are counted as ignored.
    (Framework spans, which need their trace's tree, are mapped by :mod:`otel_prov.mapping.agents`.)"""
    check_profile(profile)
    result = Mapped()
    for rec in records:
        if is_ours(rec):
            map_span(rec, profile, result)
        else:
            result.ignored += 1
    return result
