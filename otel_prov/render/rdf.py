"""RDF: a trace's triples as Turtle (``show --format turtle``), and any quads or triples in the
formats of ``export`` -- serialized by pyoxigraph from the read side's plain terms.  JSON-LD 1.1 has
no triple terms: it gets each in RDF 1.1's form (:func:`~otel_prov.model.quads.classic`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

import pyoxigraph

from ..model.quads import classic
from ..model.vocab import GRAPH_RETRIEVAL, PREFIXES
from ..read.build import TraceTriple
from ..stores.base import QuadTerms, Triple, to_oxigraph

EXPORT_FORMATS = {
    "turtle": pyoxigraph.RdfFormat.TURTLE,
    "trig": pyoxigraph.RdfFormat.TRIG,
    "nquads": pyoxigraph.RdfFormat.N_QUADS,
    "jsonld": pyoxigraph.RdfFormat.JSON_LD,
}
"""``export``'s formats; those without named graphs (Turtle) get the triples."""


node = to_oxigraph


def triples_turtle(triples: Iterable[TraceTriple]) -> str:
    """A trace's triples (subject and predicate IRIs as text) as Turtle, sorted."""
    items = sorted(
        (pyoxigraph.Triple(pyoxigraph.NamedNode(s), pyoxigraph.NamedNode(p), node(o)) for s, p, o in triples),
        key=str)
    data = pyoxigraph.serialize(items, format=pyoxigraph.RdfFormat.TURTLE, prefixes=PREFIXES)
    return (data or b"").decode("utf-8")


def triples_in_graph(triples: Iterable[TraceTriple], fmt: str) -> str:
    """A trace's triples as quads of the explainability graph, sorted, in a format that keeps the
    graph's name (``trig``, ``jsonld``, ``nquads``)."""
    graph = pyoxigraph.NamedNode(GRAPH_RETRIEVAL)
    items = sorted((pyoxigraph.Quad(pyoxigraph.NamedNode(s), pyoxigraph.NamedNode(p), node(o), graph)
                    for s, p, o in triples), key=str)
    rdf_format = EXPORT_FORMATS[fmt]
    if rdf_format == pyoxigraph.RdfFormat.JSON_LD:
        items = sorted(classic(items), key=str)
    text = (pyoxigraph.serialize(items, format=rdf_format, prefixes=PREFIXES) or b"").decode()
    return text if not text or text.endswith("\n") else text + "\n"  # JSON-LD ends without one


GRAPH_FORMATS = {"table": pyoxigraph.RdfFormat.TURTLE, "json": pyoxigraph.RdfFormat.JSON_LD}
"""A CONSTRUCT's result in ``query``'s formats: Turtle for people, JSON-LD for ``json``."""


def graph_text(triples: Iterable[Triple], fmt: str) -> bytes:
    """Triples (a CONSTRUCT's result) in a :data:`GRAPH_FORMATS` format, with our prefixes, sorted
    (the same text whatever order the store gave them in)."""
    items = sorted((pyoxigraph.Triple(node(s), node(p), node(o)) for s, p, o in triples), key=str)
    rdf_format = GRAPH_FORMATS[fmt]
    if rdf_format == pyoxigraph.RdfFormat.JSON_LD:
        items = sorted(classic(items), key=str)
    data = pyoxigraph.serialize(items, format=rdf_format, prefixes=PREFIXES) or b""
    return data if not data or data.endswith(b"\n") else data + b"\n"  # JSON-LD ends without one


def write_quads(quads: Iterable[QuadTerms], fmt: str, output: IO[bytes]) -> None:
    """Stream ``quads`` to ``output`` in an :data:`EXPORT_FORMATS` format."""
    rdf_format = EXPORT_FORMATS[fmt]
    items: Iterable[Any]
    if rdf_format.supports_datasets:
        items = (pyoxigraph.Quad(node(s), node(p), node(o), node(g)) for s, p, o, g in quads)
    else:
        items = (pyoxigraph.Triple(node(s), node(p), node(o)) for s, p, o, _ in quads)
    if rdf_format == pyoxigraph.RdfFormat.JSON_LD:
        items = classic(items)
    pyoxigraph.serialize(items, output, rdf_format, prefixes=PREFIXES)
    if rdf_format == pyoxigraph.RdfFormat.JSON_LD:
        output.write(b"\n")  # the only format pyoxigraph ends without a newline
