"""A trace's span tree, for framework instrumentations' spans: which spans are agents (or the chain
that runs one), which are tool calls and model calls of which agent, which are retrievals, which wait
for missing ancestors.  Pure.

The tree keeps a light view of each span (:func:`trace_view`): a framework span the mapping needs
with what its dialect read of it (:class:`Read`: read once, when the span arrives), every other span
as a skeleton (ids, parent, name, start; for our own spans the keys that name their step).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from types import MappingProxyType
from typing import Any, TypeVar

from .. import attributes as A
from .dialects import (
    Agent,
    Dialect,
    Evaluation,
    LLMCall,
    Retrieval,
    Role,
    ToolCall,
    dialect_of,
    evaluations_of,
)
from .dialects.genai import unmarked
from .flows import is_ours, step_iri
from .spans import Event, SpanLike, SpanRecord, SpanView

PARENT_LOOP = "span whose chain of parents loops (waits forever)"
READ_FAILED = "a {dialect} span the dialect could not read (left out)"

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_OUR_KEYS = (A.FLOW, A.STEP, A.SESSION_ID, A.ITERATION)
"""What a tree needs of an ``otel_prov`` span: that it is one, and the IRI of its step."""


class Kind:
    """What :func:`trace_view` says a span is."""

    OURS = "ours"
    """Carries ``otel_prov.*`` attributes (mapped on its own)."""
    RELEVANT = "relevant"
    """A framework span whose content the mapping reads (agent, tool, model call, retrieval, the
    root chain of a run)."""
    OTHER = "other"
    """Anything else (needed only for its place in the tree)."""


@dataclass(frozen=True, slots=True)
class Read:
    """What a dialect read of a framework span: its role and content."""

    role: Role
    data: Agent | ToolCall | LLMCall | Retrieval | None
    turns_below_agent: bool = False
    evaluations: tuple[Evaluation, ...] = ()
    """The evaluations of what the span produced (``gen_ai.evaluation.result`` events)."""

    def size(self) -> int:
        """Rough bytes of the text it holds."""
        data = self.data
        if data is None:
            return 0
        size = 0
        for value in (getattr(data, name) for name in data.__slots__):
            if isinstance(value, str):
                size += len(value)
            elif isinstance(value, tuple):
                size += sum(64 + sum(len(v) for v in item if isinstance(v, str)) if isinstance(item, tuple)
                            else 64 + len(str(item)) for item in value)
        return size


def _read_as(dialect: Dialect, role: Role, span: SpanLike, problems: list[str]
             ) -> Agent | ToolCall | LLMCall | Retrieval | None:
    """What ``dialect`` reads of ``span`` in the role ``role``."""
    if role is Role.AGENT:
        return dialect.agent(span, problems)
    if role is Role.CHAIN:
        # Only a run's top span needs its content (and only a root can be known to be one as it
        # arrives); the others are kept as markers.
        root = span.parent_id == 0 or span.parent_remote
        return dialect.agent(span, problems) if root else None
    if role is Role.TOOL:
        return dialect.tool_call(span, problems)
    if role is Role.LLM:
        return dialect.llm_call(span, problems)
    if role in (Role.RETRIEVER, Role.RERANKER):  # a retrieval, or a reranking (its output documents)
        return dialect.retrieval(span, problems)
    return None


def framework_role(span: SpanLike) -> Role:
    """What a span that is not ours may be (its dialect's role; a view: the role it was read as)."""
    info = getattr(span, "info", None)
    if isinstance(info, Read):
        return info.role
    if is_ours(span):
        return Role.OTHER
    return dialect_of(span).role(span)


def _read(span: SpanLike, problems: list[str]) -> Read | None:
    dialect = dialect_of(span)
    role = dialect.role(span)
    if role is Role.OTHER:
        return None
    try:
        found = _read_as(dialect, role, span, problems)
        evaluations = evaluations_of(getattr(span, "events", ()))
    except Exception:  # a dialect must not raise; if one does, the span is left out, counted
        problems.append(READ_FAILED.format(dialect=dialect.name))
        return None
    return Read(role, found, dialect.turns_below_agent, evaluations)


# -- log records: a span's events sent apart from it ---------------------------------------------------

_EVENT_RANK = {"gen_ai.system.message": 0, "gen_ai.user.message": 1, "gen_ai.assistant.message": 2,
               "gen_ai.tool.message": 3, "gen_ai.choice": 4}


def log_order(events: Iterable[Event]) -> tuple[Event, ...]:
    """A span's events from log records, each once, in a canonical order: by time (the record's,
    kept under ``otel_prov.event.time``), then the order of a conversation (system, user, assistant,
    tool messages, the choices), then content -- the same whatever order they arrived in."""
    keyed = {}
    for name, attrs in events:
        text = json.dumps(attrs, sort_keys=True, default=str)
        keyed[(name, text)] = (name, attrs)
    order = sorted(keyed, key=lambda k: (keyed[k][1].get("otel_prov.event.time", 0),
                                         _EVENT_RANK.get(k[0], 5), k[0], k[1]))
    return tuple(keyed[k] for k in order)


def with_logs(view: SpanView, events: Sequence[Event]) -> SpanView:
    """A framework span's view with what its log records add: read by the GenAI conventions (the
    events' own), in the role the span was read as; what the span recorded itself is kept, what it
    left out is taken from the events (:func:`merged`)."""
    read = view.info if isinstance(view.info, Read) else None
    if read is None or not events:
        return view
    from .dialects.genai import GENAI

    span = SpanRecord(view.trace_id, view.span_id, view.name, view.start_ns, view.end_ns, {}, view.parent_id,
                      view.parent_remote, view.error, view.status_message, tuple(events))
    problems: list[str] = []
    try:
        fragment = _read_as(GENAI, read.role, span, problems)
        evaluations = evaluations_of(events)
    except Exception:
        return view
    data = read.data if fragment is None else (fragment if read.data is None else merged(read.data, fragment))
    return view._replace(info=Read(read.role, data, read.turns_below_agent, read.evaluations + evaluations))


_D = TypeVar("_D")


def merged(own: _D, extra: _D) -> _D:
    """``own`` (what a span recorded) completed field by field from ``extra`` (what its events add):
    a field ``own`` leaves empty takes ``extra``'s; flags that say content was recorded are either's."""
    if not is_dataclass(own) or type(own) is not type(extra):
        return own
    changes: dict[str, Any] = {}
    for item in fields(own):
        mine, theirs = getattr(own, item.name), getattr(extra, item.name)
        if item.name in ("captured", "output_captured", "offered_tools"):
            changes[item.name] = bool(mine) or bool(theirs)
        elif is_dataclass(mine):
            changes[item.name] = merged(mine, theirs)
        elif mine is None or mine == () or mine == "":
            changes[item.name] = theirs
    if isinstance(own, LLMCall) and not own.output_captured and isinstance(extra, LLMCall) and \
            extra.output_captured:
        for name in ("text", "reasoning", "requests"):
            changes[name] = getattr(extra, name)
    return replace(own, **changes)  # type: ignore[type-var]


def trace_view(span: SpanLike, problems: list[str] | None = None) -> tuple[SpanView, str]:
    """What a trace's tree must keep of a span, and its :class:`Kind`.  A view is returned as it is."""
    if isinstance(span, SpanView):
        return span, view_kind(span)
    if is_ours(span):
        attrs = span.attributes
        kept = {key: value for key in _OUR_KEYS if (value := attrs.get(key)) is not None}
        return skeleton(span, kept), Kind.OURS
    read = _read(span, problems if problems is not None else [])
    if read is None:
        return skeleton(span), Kind.OTHER
    view = SpanView(span.trace_id, span.span_id, span.name, span.start_ns, span.end_ns, _EMPTY,
                    span.parent_id, span.parent_remote, span.error, span.status_message, read,
                    span.service, span.links)
    return view, view_kind(view)


def view_kind(view: SpanLike) -> str:
    """The :class:`Kind` of a span, from its view."""
    info = getattr(view, "info", None)
    if isinstance(info, Read):
        return Kind.OTHER if info.data is None else Kind.RELEVANT  # a chain below a root: a marker
    return Kind.OURS if is_ours(view) else Kind.OTHER


def skeleton(span: SpanLike, attrs: Mapping[str, Any] = _EMPTY) -> SpanView:
    """The view of a span needed only for its place in the tree."""
    return SpanView(span.trace_id, span.span_id, span.name, span.start_ns, 0, attrs, span.parent_id,
                    span.parent_remote, False, "", None, span.service)


def view_size(view: SpanView) -> int:
    """A rough size in bytes of a span's view (for the mapper's memory bound)."""
    size = 200 + len(view.name) + len(view.status_message)
    if isinstance(view.info, Read):
        size += 100 + view.info.size()
    for value in view.attributes.values():
        size += len(value) if isinstance(value, str) else 16
    return size


# -- the tree -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Up:
    """What a span's ancestors make of it (``None`` stands for "not known yet")."""

    agent: int = 0
    """The nearest agent (or run's top chain) above (span id), 0 if none or if an ``otel_prov``
    span is nearer."""
    tool: int = 0
    """The nearest tool call of that agent above, 0 if none."""
    under_prov: bool = False
    """An ``otel_prov`` span is nearer than any agent."""
    link: str | None = None
    """Under an ``otel_prov`` span: the IRI of its step (what a session below derives from)."""
    retriever: int = 0
    """The nearest retrieval above (span id), 0 if none: a retrieval inside one is part of it."""
    llm: int = 0
    """The nearest model call above (span id), 0 if none: a model call inside one is that call."""


_ROOT = Up()


class Place:
    """A span's place in the tree (:attr:`SpanTree.place`)."""

    AGENT = "agent"
    CHAIN = "chain"
    """The top chain of a run (an OpenInference ``CHAIN`` with no agent above)."""
    TOOL = "tool"
    LLM = "llm"
    """A model call of an agent (not inside one of its tools), or, with no agent above, a call of a
    chat conversation."""
    RETRIEVER = "retriever"
    RERANKER = "reranker"
    """A reranking of a run's retrieved documents (the chunks it selected)."""
    TURN = "turn"
    """An unnamed agent span directly below an agent: one of its turns."""
    WAIT = "wait"
    """A framework span the mapping needs whose chain of ancestors is not complete yet."""
    OTHER = "other"


class SpanTree:
    """Classifies every span of one trace (see :class:`Place`); :attr:`up` says, for every span not
    at :attr:`Place.OTHER`, what is above it."""

    def __init__(self, spans: Iterable[SpanView], problems: list[str]) -> None:
        self.nodes: dict[int, SpanView] = {}
        for span in spans:
            self.nodes.setdefault(span.span_id, span)
        self.place: dict[int, str] = {}
        self.up: dict[int, Up] = {}
        self._below: dict[int, Up | None] = {}
        self._problems = problems
        self.remote_roots = 0
        """Spans taken as roots because their parent is remote and has not arrived (it may)."""
        self.inner_llms: dict[int, list[int]] = {}
        """Model-call spans inside a model-call span (by the outer's span id): one call, several spans
        (a framework's wrapper around the client's own span)."""
        self._model_parents = {v.parent_id for v in self.nodes.values()
                               if isinstance(v.info, Read) and v.info.role is Role.LLM}
        """Spans with a model call among their children (see :meth:`_classify`)."""
        for span_id in self.nodes:
            self._resolve(span_id)

    def _above(self, span: SpanView) -> Up | None:
        if span.parent_id == 0:
            return _ROOT
        if span.parent_remote and span.parent_id not in self.nodes:
            # The parent is in another process, whose spans may never reach us: a root until
            # (if ever) it arrives.
            self.remote_roots += 1
            return _ROOT
        return self._below.get(span.parent_id)  # missing parent, or a loop: not known

    def _resolve(self, span_id: int) -> None:
        chain: list[int] = []
        seen: set[int] = set()
        current = span_id
        while current not in self._below:
            if current in seen:
                self._problems.append(PARENT_LOOP)
                break
            seen.add(current)
            chain.append(current)
            parent = self.nodes[current].parent_id
            if parent == 0 or parent not in self.nodes:
                break
            current = parent
        for node in reversed(chain):
            span = self.nodes[node]
            self._below[node] = self._classify(span, self._above(span))

    def _set(self, span: SpanView, place: str, up: Up) -> None:
        self.place[span.span_id] = place
        self.up[span.span_id] = up

    def _classify(self, span: SpanView, up: Up | None) -> Up | None:
        """Records the span's place; returns what it makes of its children."""
        span_id = span.span_id
        read = span.info if isinstance(span.info, Read) else None
        if read is None:
            if is_ours(span):
                self.place[span_id] = Place.OTHER
                link = step_iri(span)
                if link is None:
                    if up is None:
                        return None
                    link = up.link if up.under_prov else None
                return Up(under_prov=True, link=link)
            if up is _ROOT and span_id in self._model_parents and unmarked(span):
                # A trace's root in no convention whose children call a model (the AI SDK's
                # ``ai.generateText``): the run of an agent that names itself nowhere.
                self._set(span, Place.AGENT, up)
                return Up(agent=span_id)
            self.place[span_id] = Place.OTHER
            return up
        if up is None:
            self.place[span_id] = Place.WAIT
            return None
        role = read.role
        if role is Role.AGENT:
            agent = read.data if isinstance(read.data, Agent) else None
            if up.agent and not up.tool and read.turns_below_agent and not (agent and agent.named):
                self._set(span, Place.TURN, up)
                return up
            self._set(span, Place.AGENT, up)
            return Up(agent=span_id)
        if role is Role.CHAIN:
            if up.agent:
                self.place[span_id] = Place.OTHER
                return up
            self._set(span, Place.CHAIN, up)
            return Up(agent=span_id)
        if role is Role.TOOL:
            if not up.agent:
                self.place[span_id] = Place.OTHER
                return up
            self._set(span, Place.TOOL, up)  # a tool inside a tool too (see SpanTree.inner_tools)
            return Up(agent=up.agent, tool=span_id, retriever=up.retriever)
        if role is Role.LLM:
            if up.llm:
                self.place[span_id] = Place.OTHER  # the same call, seen by a span inside it
                self.inner_llms.setdefault(up.llm, []).append(span_id)
                return up
            if up.tool or (up.under_prov and not up.agent):
                self.place[span_id] = Place.OTHER  # a tool's own model call, or inside our step
                return up
            self._set(span, Place.LLM, up)
            return Up(up.agent, up.tool, up.under_prov, up.link, up.retriever, llm=span_id)
        if role is Role.RERANKER:
            self._set(span, Place.RERANKER, up)
            return up
        if up.retriever:
            self.place[span_id] = Place.OTHER  # a retrieval inside a retrieval: part of it
            return up
        self._set(span, Place.RETRIEVER, up)
        return Up(up.agent, up.tool, up.under_prov, up.link, retriever=span_id, llm=up.llm)

    def at(self, place: str) -> list[SpanView]:
        """The spans at ``place``, by (start time, span id)."""
        found = [self.nodes[s] for s, p in self.place.items() if p == place]
        return sorted(found, key=lambda span: (span.start_ns, span.span_id))


# -- what a view says ----------------------------------------------------------------------------------

_T = TypeVar("_T")


def _data(view: SpanView, kind: type[_T], default: _T) -> _T:
    """What the view's dialect read of its span, if of ``kind``; else ``default``."""
    data = view.info.data if isinstance(view.info, Read) else None
    return data if isinstance(data, kind) else default


def agent_of(view: SpanView) -> Agent:
    return _data(view, Agent, Agent(None, None, None, False, False))


def tool_of(view: SpanView) -> ToolCall:
    return _data(view, ToolCall, ToolCall(view.name, captured=False))


def llm_of(view: SpanView) -> LLMCall:
    return _data(view, LLMCall, _NO_CALL)


def retrieval_of(view: SpanView) -> Retrieval:
    return _data(view, Retrieval, Retrieval(None, None))


_NO_CALL = LLMCall()
