"""Renderers: the read model (:mod:`otel_prov.read`) as text, JSON, RDF and pictures, behind one
registry of formats.  The CLI, and anything else that shows a trace, picks a format by name.

- a trace: :data:`TRACE_FORMATS` (``show --format``), each a function of a :class:`Shown`;
- a list of sessions: :data:`LIST_FORMATS` (``list --format``);
- two sessions compared: :data:`DIFF_FORMATS` (``diff --format``);
- query results: :mod:`.results`; quads for ``export``: :func:`.rdf.write_quads`.

Where to add a format: CONTRIBUTING.md ("An output format").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..read.build import TraceTriple
from ..read.diff import TraceDiff
from ..read.graph import ProvGraph, prov_graph
from ..read.model import SessionRow, Trace
from . import data, dot, rdf, svg, text


@dataclass
class Shown:
    """One trace to render: as read back, its triples, and the Jaeger UI base URL for its link."""

    trace: Trace
    triples: list[TraceTriple]
    jaeger_url: str | None = None
    _graph: ProvGraph | None = field(default=None, repr=False)

    @property
    def graph(self) -> ProvGraph:
        """The trace's provenance graph (made once, for the pictures)."""
        if self._graph is None:
            self._graph = prov_graph(self.trace, self.triples)
        return self._graph

    @property
    def title(self) -> str:
        return f"{self.trace.type} session: {self.trace.question}"


@dataclass(frozen=True)
class Format:
    name: str
    render: Callable[[Shown], str]
    media_type: str
    suffix: str


TRACE_FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("text", lambda s: text.trace_text(s.trace, s.jaeger_url), "text/plain; charset=utf-8", ".txt"),
    Format("json", lambda s: data.trace_json(s.trace, s.jaeger_url), "application/json", ".json"),
    Format("turtle", lambda s: rdf.triples_turtle(s.triples), "text/turtle", ".ttl"),
    Format("trig", lambda s: rdf.triples_in_graph(s.triples, "trig"), "application/trig", ".trig"),
    Format("jsonld", lambda s: rdf.triples_in_graph(s.triples, "jsonld"), "application/ld+json", ".jsonld"),
    Format("dot", lambda s: dot.to_dot(s.graph, s.title), "text/vnd.graphviz", ".dot"),
    Format("svg", lambda s: svg.to_svg(s.graph, s.title), "image/svg+xml", ".svg"),
)}
"""Every format one trace can be shown in (the first is the default)."""

FORMAT_ALIASES = {"ttl": "turtle", "nq": "nquads", "n-quads": "nquads", "json-ld": "jsonld"}
"""The usual short names of the formats (``--format ttl``, ``?format=ttl``)."""

LIST_FORMATS: dict[str, Callable[[Sequence[SessionRow]], str]] = {
    "table": text.session_table,
    "json": data.session_json,
}
"""Every format a list of sessions can be shown in (the first is the default)."""

DIFF_FORMATS: dict[str, Callable[[TraceDiff], str]] = {
    "text": text.diff_text,
    "json": data.diff_json,
}
"""Every format two sessions compared can be shown in (the first is the default)."""


def render_trace(fmt: str, shown: Shown) -> str:
    return TRACE_FORMATS[fmt].render(shown)
