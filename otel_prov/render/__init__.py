"""Renderers: the read model (:mod:`otel_prov.read`) as text, JSON, RDF and pictures, behind one
registry of formats.  The CLI, and anything else that shows a trace, picks a format by name.

- a trace: :data:`TRACE_FORMATS` (``show --format``), each a function of a :class:`Shown`;
- a list of sessions: :data:`LIST_FORMATS` (``list --format``);
- two sessions compared: :data:`DIFF_FORMATS` (``diff --format``);
- query results: :mod:`.results`; quads for ``export``: :func:`write_export` (RDF by :mod:`.rdf`, PROV-N
  and PROV-JSON by :mod:`.provdm`).

Where to add a format: CONTRIBUTING.md ("An output format").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO

from ..read.build import TraceTriple
from ..read.diff import TraceDiff
from ..read.graph import ProvGraph, prov_graph
from ..read.model import SessionRow, Trace
from ..stores.base import IRI, QuadTerms, Term
from . import data, dot, provdm, rdf, svg, text


@dataclass
class Shown:
    """One trace to render: as read back, its triples, and the Jaeger UI base URL for its link."""

    trace: Trace
    triples: list[TraceTriple]
    jaeger_url: str | None = None
    _graph: ProvGraph | None = field(default=None, repr=False)
    _prov: provdm.Document | None = field(default=None, repr=False)

    @property
    def graph(self) -> ProvGraph:
        """The trace's provenance graph (made once, for the pictures)."""
        if self._graph is None:
            self._graph = prov_graph(self.trace, self.triples)
        return self._graph

    @property
    def prov(self) -> provdm.Document:
        """The trace's PROV statements (made once, for PROV-N and PROV-JSON)."""
        if self._prov is None:
            self._prov = provdm.document((Term(IRI, s), Term(IRI, p), o) for s, p, o in self.triples)
        return self._prov

    @property
    def title(self) -> str:
        return f"{self.trace.type} session: {self.trace.question}"


@dataclass(frozen=True)
class Format:
    name: str
    render: Callable[[Shown], str]
    media_type: str
    suffix: str
    note: Callable[[Shown], str | None] | None = None
    """What the format left out of the trace, in one line for stderr (None: nothing)."""


def _prov_format(name: str, media_type: str, suffix: str) -> Format:
    title, write = provdm.PROV_FORMATS[name]
    return Format(name, lambda s: write(s.prov), media_type, suffix,
                  lambda s: provdm.left_out_note(s.prov, title))


TRACE_FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("text", lambda s: text.trace_text(s.trace, s.jaeger_url), "text/plain; charset=utf-8", ".txt"),
    Format("json", lambda s: data.trace_json(s.trace, s.jaeger_url), "application/json", ".json"),
    Format("turtle", lambda s: rdf.triples_turtle(s.triples), "text/turtle", ".ttl"),
    Format("trig", lambda s: rdf.triples_in_graph(s.triples, "trig"), "application/trig", ".trig"),
    Format("jsonld", lambda s: rdf.triples_in_graph(s.triples, "jsonld"), "application/ld+json", ".jsonld"),
    _prov_format("provn", "text/provenance-notation; charset=utf-8", ".provn"),
    _prov_format("prov-json", "application/json", ".provjson"),  # not .json: that one is json's
    Format("dot", lambda s: dot.to_dot(s.graph, s.title), "text/vnd.graphviz", ".dot"),
    Format("svg", lambda s: svg.to_svg(s.graph, s.title), "image/svg+xml", ".svg"),
)}
"""Every format one trace can be shown in (the first is the default; the SVG last, the web view's
picture)."""

FORMAT_ALIASES = {"ttl": "turtle", "nq": "nquads", "n-quads": "nquads", "json-ld": "jsonld",
                  "prov-n": "provn", "provjson": "prov-json"}
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


EXPORT_FORMATS = (*rdf.EXPORT_FORMATS, *provdm.PROV_FORMATS)
"""``export``'s formats (the first is the default): RDF, streamed, and PROV's own, made once every quad
is read."""


def render_trace(fmt: str, shown: Shown) -> str:
    return TRACE_FORMATS[fmt].render(shown)


def write_export(quads: Iterable[QuadTerms], fmt: str, output: IO[bytes]) -> str | None:
    """``quads`` to ``output`` in an :data:`EXPORT_FORMATS` format; what a PROV format left out of them,
    in one line (None: nothing)."""
    if fmt not in provdm.PROV_FORMATS:
        rdf.write_quads(quads, fmt, output)
        return None
    title, write = provdm.PROV_FORMATS[fmt]
    doc = provdm.document((s, p, o) for s, p, o, _ in quads)
    output.write(write(doc).encode("utf-8"))
    return provdm.left_out_note(doc, title)
