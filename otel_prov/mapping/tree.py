"""A trace's span tree, for framework instrumentations' spans: which spans are agents, which are tool
calls of which agent, which wait for missing ancestors.  Pure.

The tree keeps a light view of each span (:func:`trace_view`): agent and tool spans with the
attributes their dialect reads, every other span as a skeleton (ids, parent, name, start; for our own
spans the keys that name their step).  Classifying views gives the same result as classifying the
spans themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .. import attributes as A
from .dialects import Role, dialect_of
from .flows import is_ours, step_iri
from .spans import SpanLike, SpanView

PARENT_LOOP = "span whose chain of parents loops (waits forever)"

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_OUR_KEYS = (A.FLOW, A.STEP, A.SESSION_ID, A.ITERATION)
"""What a tree needs of an ``otel_prov`` span: that it is one, and the IRI of its step."""


class Kind:
    """What :func:`trace_view` says a span is."""

    OURS = "ours"
    """Carries ``otel_prov.*`` attributes (mapped on its own)."""
    RELEVANT = "relevant"
    """A possible agent or tool call of a framework trace (its content is needed)."""
    OTHER = "other"
    """Anything else (needed only for its place in the tree)."""


def framework_role(span: SpanLike) -> Role:
    """What a span that is not ours may be: an agent, a tool call, or other."""
    if is_ours(span):
        return Role.OTHER
    return dialect_of(span).role(span)


def trace_view(span: SpanLike) -> tuple[SpanView, str]:
    """What a trace's tree must keep of a span, and its :class:`Kind`."""
    source = span.attributes
    if is_ours(span):
        kept = {key: source[key] for key in _OUR_KEYS if source.get(key) is not None}
        return skeleton(span, kept), Kind.OURS
    dialect = dialect_of(span)
    role = dialect.role(span)
    if role is not Role.OTHER:
        return _view(span, dialect.keep(source, role)), Kind.RELEVANT
    return skeleton(span, _EMPTY), Kind.OTHER


def view_kind(view: SpanLike) -> str:
    """The :class:`Kind` of a span, from its view."""
    if is_ours(view):
        return Kind.OURS
    return Kind.RELEVANT if framework_role(view) is not Role.OTHER else Kind.OTHER


def _view(span: SpanLike, attrs: Mapping[str, Any]) -> SpanView:
    return SpanView(span.trace_id, span.span_id, span.name, span.start_ns, span.end_ns, attrs,
                    span.parent_id, span.parent_remote, span.error, span.status_message)


def skeleton(span: SpanLike, attrs: Mapping[str, Any] = _EMPTY) -> SpanView:
    """The view of a span needed only for its place in the tree."""
    return SpanView(span.trace_id, span.span_id, span.name, span.start_ns, 0, attrs, span.parent_id,
                    span.parent_remote, False, "")


def view_size(view: SpanView) -> int:
    """A rough size in bytes of a span's view (for the mapper's memory bound)."""
    size = 200 + len(view.name)
    for value in view.attributes.values():
        size += len(value) if isinstance(value, str) else 16
    return size


# -- the tree -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Up:
    """What a span's ancestors make of it (``None`` stands for "not known yet")."""

    agent: int = 0
    """The nearest agent above (span id), 0 if none or if an ``otel_prov`` span is nearer."""
    tool: int = 0
    """The nearest tool call of that agent above, 0 if none."""
    under_prov: bool = False
    """An ``otel_prov`` span is nearer than any agent."""
    link: str | None = None
    """Under an ``otel_prov`` span: the IRI of its step (what an agent below derives from)."""


_ROOT = Up()


class Place:
    """A span's place in the tree (:attr:`SpanTree.place`)."""

    AGENT = "agent"
    TOOL = "tool"
    WAIT = "wait"
    """An agent or tool span whose chain of ancestors is not complete yet."""
    OTHER = "other"


class SpanTree:
    """Classifies every span of one trace: agent, tool call (of which agent), waiting, other."""

    def __init__(self, spans: Iterable[SpanLike], problems: list[str]) -> None:
        self.nodes: dict[int, SpanLike] = {}
        for span in spans:
            self.nodes.setdefault(span.span_id, span)
        self.place: dict[int, str] = {}
        self.up: dict[int, Up] = {}
        self._below: dict[int, Up | None] = {}
        self._problems = problems
        self.remote_roots = 0
        """Spans taken as roots because their parent is remote and has not arrived (it may)."""
        for span_id in self.nodes:
            self._resolve(span_id)

    def _above(self, span: SpanLike) -> Up | None:
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

    def _classify(self, span: SpanLike, up: Up | None) -> Up | None:
        """Records the span's place; returns what it makes of its children."""
        span_id = span.span_id
        if is_ours(span):
            self.place[span_id] = Place.OTHER
            link = step_iri(span)
            if link is None:
                if up is None:
                    return None
                link = up.link if up.under_prov else None
            return Up(under_prov=True, link=link)
        dialect = dialect_of(span)
        role = dialect.role(span)
        if role is not Role.OTHER:
            if up is None:
                self.place[span_id] = Place.WAIT
                return None
            if role is Role.AGENT:
                if not dialect.turns_below_agent or up.agent == 0:
                    self.place[span_id] = Place.AGENT
                    self.up[span_id] = up
                    return Up(agent=span_id)
            elif up.agent != 0:
                self.place[span_id] = Place.TOOL
                self.up[span_id] = up
                return Up(agent=up.agent, tool=span_id)
        self.place[span_id] = Place.OTHER
        return up

    def at(self, place: str) -> list[SpanLike]:
        """The spans at ``place``, by (start time, span id)."""
        found = [self.nodes[s] for s, p in self.place.items() if p == place]
        return sorted(found, key=lambda span: (span.start_ns, span.span_id))
