"""The pure mapping: spans in, quads out.  No I/O, no state.

One small function per kind of span (session, question, analysis, conclusion, exploration, focus,
synthesis), dispatched in one place (:data:`_HANDLERS`).  Every IRI a span's quads use is derived from
data the span itself carries (its session id or trace id, its iteration number), so the quads of a
trace do not depend on how its spans are batched or ordered, and exporting a span twice writes the
same quads twice.

Quads are 4-tuples of N-Triples terms (see :mod:`otel_prov._terms`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from rdflib import RDF, RDFS
from rdflib.namespace import PROV

from . import attributes as A
from ._spans import SpanRecord
from ._terms import (
    checked_iri,
    clean_text,
    datetime_from_ns,
    has_invalid_text,
    hex_span_id,
    hex_trace_id,
    integer,
    iri,
    iri_segment,
    literal,
    uuid_from_trace_id,
    value_term,
)
from ._vocab import (
    AGENT_PREFIX,
    DOC_RAG_PREFIX,
    EDGE_PREFIX,
    EXPLORATION_PREFIX,
    FOCUS_PREFIX,
    GRAPH_RAG_PREFIX,
    GRAPH_RETRIEVAL,
    OTELPROV,
    SOFTWARE_AGENT_PREFIX,
    SYNTHESIS_PREFIX,
    TG,
)

Quad = tuple[str, str, str, str]

SEED = "seed"
STRICT = "strict"
PROFILES = (SEED, STRICT)

_G = iri(GRAPH_RETRIEVAL)


def _p(term: Any) -> str:
    return "<" + str(term) + ">"


# Terms, as N-Triples, computed once.
_TYPE = _p(RDF.type)
_LABEL = _p(RDFS.label)
_STATEMENT, _SUBJECT, _PREDICATE, _OBJECT = (
    _p(RDF.Statement), _p(RDF.subject), _p(RDF.predicate), _p(RDF.object))
_ACTIVITY, _ENTITY, _AGENT, _SOFTWARE_AGENT = (
    _p(PROV.Activity), _p(PROV.Entity), _p(PROV.Agent), _p(PROV.SoftwareAgent))
_DERIVED, _GENERATED_BY, _USED, _ASSOCIATED = (
    _p(PROV.wasDerivedFrom), _p(PROV.wasGeneratedBy), _p(PROV.used), _p(PROV.wasAssociatedWith))
_STARTED, _ENDED, _GENERATED_AT = (
    _p(PROV.startedAtTime), _p(PROV.endedAtTime), _p(PROV.generatedAtTime))
_TRACE_ID, _SPAN_ID, _COLLECTION, _STATUS_MESSAGE = (
    _p(OTELPROV.traceId), _p(OTELPROV.spanId), _p(OTELPROV.collection), _p(OTELPROV.statusMessage))
_QUESTION_SUBTYPE = {
    A.FLOW_AGENT: _p(TG.AgentQuestion),
    A.FLOW_GRAPH_RAG: _p(TG.GraphRagQuestion),
    A.FLOW_DOC_RAG: _p(TG.DocRagQuestion),
}
_QUESTION_PREFIX = {
    A.FLOW_AGENT: AGENT_PREFIX,
    A.FLOW_GRAPH_RAG: GRAPH_RAG_PREFIX,
    A.FLOW_DOC_RAG: DOC_RAG_PREFIX,
}
# TrustGraph terms, as N-Triples, computed once (an attribute of ``TG`` is built on every access).
_tg = SimpleNamespace(**{name: _p(getattr(TG, name)) for name in (
    "Question", "query", "Conclusion", "answer", "Analysis", "thought", "action",
    "arguments", "observation", "Exploration", "chunkCount", "selectedChunk", "edgeCount", "Focus",
    "selectedEdge", "EdgeSelection", "edge", "reasoning", "Synthesis", "content",
)})


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
        value = attr_text(self.attrs.get(key))
        if value is None:
            return None
        if has_invalid_text(value):
            self.problems.append("text that is not valid Unicode (replaced by U+FFFD)")
        return value

    def add_text(self, s: str, p: str, key: str) -> None:
        value = self.text(key)
        if value is not None:
            self.add(s, p, literal(value))

    def stamp(self, node: str, *, span_id: bool = True) -> None:
        """The trace id, span id and error status that every node records."""
        self.add(node, _TRACE_ID, literal(hex_trace_id(self.rec.trace_id)))
        if span_id:
            self.add(node, _SPAN_ID, literal(hex_span_id(self.rec.span_id)))
        if self.rec.error:
            self.add(node, _STATUS_MESSAGE, literal(self.rec.status_message or "error"))

    def step_activity(self, entity: str, used: str) -> None:
        """Strict profile: the span as the activity that generated ``entity`` from ``used``."""
        act = iri(entity[1:-1] + "/activity")
        self.add(entity, _GENERATED_BY, act)
        self.add(entity, _GENERATED_AT, datetime_from_ns(self.rec.end_ns))
        self.add(act, _TYPE, _ACTIVITY)
        self.add(act, _STARTED, datetime_from_ns(self.rec.start_ns))
        self.add(act, _ENDED, datetime_from_ns(self.rec.end_ns))
        self.add(act, _USED, used)
        self.software_agent(act)
        self.stamp(act)

    def software_agent(self, activity: str) -> None:
        name = self.text(A.GEN_AI_AGENT_NAME)
        if not name:
            return
        agent = iri(SOFTWARE_AGENT_PREFIX + iri_segment(name))
        self.add(activity, _ASSOCIATED, agent)
        self.add(agent, _TYPE, _AGENT)
        self.add(agent, _TYPE, _SOFTWARE_AGENT)
        self.add(agent, _LABEL, literal(name))


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


# -- IRIs -----------------------------------------------------------------------------------------


def session_uuid(session_id: object, trace_id: int) -> str:
    """The ``{uuid}`` of a session: its session id made IRI-safe, else its trace id as a UUID."""
    if session_id is not None and str(session_id).strip():
        return iri_segment(str(session_id))
    return uuid_from_trace_id(trace_id)


def question_iri(flow: str, uuid: str) -> str:
    """The Question IRI of a session (plain text, not N-Triples)."""
    return _QUESTION_PREFIX[flow] + uuid


def analysis_iri(uuid: str, n: int) -> str:
    return f"{AGENT_PREFIX}{uuid}/i{n}"


def conclusion_iri(uuid: str) -> str:
    return f"{AGENT_PREFIX}{uuid}/final"


def exploration_iri(flow: str, uuid: str) -> str:
    if flow == A.FLOW_DOC_RAG:
        return f"{DOC_RAG_PREFIX}{uuid}/exploration"
    return EXPLORATION_PREFIX + uuid


def focus_iri(uuid: str) -> str:
    return FOCUS_PREFIX + uuid


def synthesis_iri(flow: str, uuid: str) -> str:
    if flow == A.FLOW_DOC_RAG:
        return f"{DOC_RAG_PREFIX}{uuid}/synthesis"
    return SYNTHESIS_PREFIX + uuid


def _q(c: _Ctx) -> str:
    return iri(question_iri(c.flow, c.uuid))


def _exploration(c: _Ctx) -> str:
    return iri(exploration_iri(c.flow, c.uuid))


def _int_attr(c: _Ctx, key: str, minimum: int) -> int | None:
    value = c.attrs.get(key)
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
    c.add(q, _TYPE, _ENTITY if c.strict else _ACTIVITY)
    c.add(q, _TYPE, _tg.Question)
    c.add(q, _TYPE, _QUESTION_SUBTYPE[c.flow])
    c.add(q, _tg.query, literal(c.question))
    c.add(q, _GENERATED_AT if c.strict else _STARTED, datetime_from_ns(c.rec.start_ns))
    c.add(q, _COLLECTION, literal(c.text(A.COLLECTION) or "default"))
    parent = c.text(A.DERIVED_FROM)
    if parent:
        # A sub-trace (a RAG query run by an agent's step).  Seed: TrustGraph's link, derived from
        # the step.  Strict: the step's activity generated this question (the step's own entity is
        # generated only when the step ends, after the question).
        try:
            if c.strict:
                c.add(q, _GENERATED_BY, checked_iri(parent + "/activity"))
            else:
                c.add(q, _DERIVED, checked_iri(parent))
        except ValueError:
            c.problems.append(f"{A.DERIVED_FROM} is not a valid absolute IRI")
    if not is_session:
        # An instant marker: it adds the Question early; the session span adds its span id.
        c.add(q, _TRACE_ID, literal(hex_trace_id(c.rec.trace_id)))
        return
    if c.strict:
        act = iri(question_iri(c.flow, c.uuid) + "/session")
        c.add(act, _TYPE, _ACTIVITY)
        c.add(act, _STARTED, datetime_from_ns(c.rec.start_ns))
        c.add(act, _ENDED, datetime_from_ns(c.rec.end_ns))
        c.add(act, _USED, q)
        c.software_agent(act)
        c.stamp(act)
        c.add(q, _TRACE_ID, literal(hex_trace_id(c.rec.trace_id)))
        c.add(q, _SPAN_ID, literal(hex_span_id(c.rec.span_id)))
    else:
        c.stamp(q)


def _session(c: _Ctx) -> None:
    _question(c, is_session=True)
    if c.flow == A.FLOW_AGENT and A.ANSWER in c.attrs:
        _conclusion(c)


def _marker(c: _Ctx) -> None:
    _question(c, is_session=False)


def _conclusion(c: _Ctx) -> None:
    last = _int_attr(c, A.ITERATION, 0) or 0
    prev = iri(analysis_iri(c.uuid, last)) if last else _q(c)
    node = iri(conclusion_iri(c.uuid))
    c.add(node, _TYPE, _ENTITY)
    c.add(node, _TYPE, _tg.Conclusion)
    c.add(node, _tg.answer, literal(c.text(A.ANSWER) or ""))
    c.add(node, _DERIVED, prev)
    c.stamp(node)
    if c.strict:
        session = iri(question_iri(c.flow, c.uuid) + "/session")
        c.add(node, _GENERATED_BY, session)
        c.add(node, _GENERATED_AT, datetime_from_ns(c.rec.end_ns))


def _analysis(c: _Ctx) -> None:
    n = _int_attr(c, A.ITERATION, 1)
    if n is None:
        c.problems.append(f"analysis span without a valid {A.ITERATION} (an integer >= 1)")
        return
    node = iri(analysis_iri(c.uuid, n))
    prev = iri(analysis_iri(c.uuid, n - 1)) if n > 1 else _q(c)
    c.add(node, _TYPE, _ENTITY)
    c.add(node, _TYPE, _tg.Analysis)
    c.add_text(node, _tg.thought, A.THOUGHT)
    c.add_text(node, _tg.action, A.ACTION)
    c.add_text(node, _tg.arguments, A.ARGUMENTS)
    c.add_text(node, _tg.observation, A.OBSERVATION)
    c.add(node, _DERIVED, prev)
    c.stamp(node)
    if c.strict:
        c.step_activity(node, prev)


def _tool(c: _Ctx) -> None:
    """Tools are opaque (spec): their input and output are on the analysis step."""


def _exploration_step(c: _Ctx) -> None:
    node = _exploration(c)
    q = _q(c)
    c.add(node, _TYPE, _ENTITY)
    c.add(node, _TYPE, _tg.Exploration)
    if c.flow == A.FLOW_DOC_RAG:
        chunks = _string_list(c, A.CHUNK_IDS)
        c.add(node, _tg.chunkCount, integer(len(chunks)))
        for chunk in chunks:
            c.add(node, _tg.selectedChunk, literal(chunk))
    else:
        count = _int_attr(c, A.EDGE_COUNT, 0)
        if count is None:
            edges = _json(c, A.EDGES)
            count = len(edges) if isinstance(edges, list) else None
        if count is None:
            c.problems.append(f"graphrag exploration span without {A.EDGE_COUNT}")
        else:
            c.add(node, _tg.edgeCount, integer(count))
    c.stamp(node)
    if c.strict:
        c.add(node, _DERIVED, q)
        c.step_activity(node, q)
    else:
        c.add(node, _GENERATED_BY, q)


def _focus(c: _Ctx) -> None:
    node = iri(focus_iri(c.uuid))
    exploration = _exploration(c)
    c.add(node, _TYPE, _ENTITY)
    c.add(node, _TYPE, _tg.Focus)
    c.add(node, _DERIVED, exploration)
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
        sel = iri(f"{EDGE_PREFIX}{c.uuid}:{index}")
        stmt = iri(f"{EDGE_PREFIX}{c.uuid}:{index}/triple")
        c.add(node, _tg.selectedEdge, sel)
        c.add(sel, _TYPE, _tg.EdgeSelection)
        if c.strict:
            c.add(sel, _TYPE, _ENTITY)
        c.add(sel, _tg.edge, stmt)
        reasoning = item.get("reasoning")
        if reasoning is not None:
            c.add(sel, _tg.reasoning, literal(str(reasoning)))
        c.add(stmt, _TYPE, _STATEMENT)
        for pred, term in zip((_SUBJECT, _PREDICATE, _OBJECT), edge, strict=True):
            c.add(stmt, pred, value_term(clean_text(str(term))))
    if c.strict:
        c.step_activity(node, exploration)


def _synthesis(c: _Ctx) -> None:
    node = iri(synthesis_iri(c.flow, c.uuid))
    prev = _exploration(c) if c.flow == A.FLOW_DOC_RAG else iri(focus_iri(c.uuid))
    c.add(node, _TYPE, _ENTITY)
    c.add(node, _TYPE, _tg.Synthesis)
    c.add(node, _tg.content, literal(c.text(A.CONTENT) or ""))
    c.add(node, _DERIVED, prev)
    c.stamp(node)
    if c.strict:
        c.step_activity(node, prev)


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
_HANDLERS[(A.FLOW_AGENT, A.STEP_ANALYSIS)] = _analysis
_HANDLERS[(A.FLOW_AGENT, A.STEP_TOOL)] = _tool
_HANDLERS[(A.FLOW_AGENT, A.STEP_CONCLUSION)] = _conclusion
_HANDLERS[(A.FLOW_GRAPH_RAG, A.STEP_FOCUS)] = _focus
del _flow


def is_prov_span(rec: SpanRecord) -> bool:
    """Whether the span carries our attributes (and so is mapped without its trace's tree)."""
    return A.FLOW in rec.attributes


def map_span(rec: SpanRecord, profile: str = SEED, into: Mapped | None = None) -> Mapped:
    """The quads of one span that carries ``otel_prov.*`` attributes."""
    result = into if into is not None else Mapped()
    attrs = rec.attributes
    flow, step = attrs.get(A.FLOW), attrs.get(A.STEP)
    handler = _HANDLERS.get((flow, step)) if isinstance(flow, str) and isinstance(step, str) else None
    if handler is None or not isinstance(flow, str):
        result.problems.append(f"unknown {A.FLOW}/{A.STEP} pair {flow!r}/{step!r}")
        result.ignored += 1
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
    handler(ctx)
    result.mapped += 1
    return result


def map_spans(records: Iterable[SpanRecord], profile: str = SEED) -> Mapped:
    """The quads of every span that carries our attributes; the others are counted as ignored.
    (Standard GenAI spans, which need their trace's tree, are mapped by :mod:`otel_prov._genai`.)"""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: expected one of {', '.join(PROFILES)}")
    result = Mapped()
    for rec in records:
        if is_prov_span(rec):
            map_span(rec, profile, result)
        else:
            result.ignored += 1
    return result


def nquads(quads: Sequence[Quad]) -> bytes:
    """Quads as N-Quads text, UTF-8."""
    return "".join(f"{s} {p} {o} {g} .\n" for s, p, o, g in quads).encode("utf-8")
