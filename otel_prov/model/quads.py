"""Quads: 4-tuples of N-Triples terms (:mod:`.terms`), as the mapping makes them; N-Quads text, which
is what every store reads fastest; and an ``rdflib.Dataset`` made from that text.

RDF 1.2 triple terms (``<<( s p o )>>``: profile ``trustgraph``'s selected edges) go to every store
as they are; rdflib and JSON-LD have none, and get each in its RDF 1.1 form (:func:`classic`)."""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyoxigraph
import rdflib

from .vocab import PREFIXES

Quad = tuple[str, str, str, str]
"""``(subject, predicate, object, graph)``, each an N-Triples term (``"<iri>"``, ``'"text"'``, ...)."""


def in_parts(texts: Iterable[bytes], limit: int) -> Iterator[bytes]:
    """N-Quads ``texts`` (each of whole lines) regrouped in parts of at most about ``limit`` bytes,
    each ending at a line end: small texts are joined, a long one is cut (a line longer than
    ``limit`` is a part of its own)."""
    group: list[bytes] = []
    size = 0
    for text in texts:
        if group and size + len(text) > limit:
            yield b"".join(group)
            group, size = [], 0
        start = 0
        while len(text) - start > limit:
            cut = text.rfind(b"\n", start, start + limit) + 1
            if cut <= start:  # one line longer than the limit
                cut = text.find(b"\n", start + limit) + 1 or len(text)
            yield text[start:cut]
            start = cut
        if start < len(text):
            group.append(text[start:] if start else text)
            size += len(text) - start
    if group:
        yield b"".join(group)


def nquads(quads: Sequence[Quad]) -> bytes:
    """Quads as N-Quads text, UTF-8."""
    if not quads:
        return b""
    return (" .\n".join(map(" ".join, quads)) + " .\n").encode("utf-8")


TRIPLE_PREFIX = "urn:otel-prov:triple:"
"""The IRIs of triple terms in their RDF 1.1 form (:func:`classic`)."""
_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_STATEMENT = pyoxigraph.NamedNode(_RDF + "Statement")
_TYPE = pyoxigraph.NamedNode(_RDF + "type")
_PARTS = tuple(pyoxigraph.NamedNode(_RDF + name) for name in ("subject", "predicate", "object"))


def classic(items: Iterable[Any]) -> Iterator[Any]:
    """pyoxigraph quads (or triples) with each triple term in RDF 1.1's form, for the formats and
    libraries that have none (rdflib, JSON-LD 1.1): ``x p <<( s p2 o )>>`` becomes ``x p <N>``, ``N a
    rdf:Statement ; rdf:subject s ; rdf:predicate p2 ; rdf:object o`` (RDF's reification, which
    asserts no more than the triple term does).  ``N`` is ``urn:otel-prov:triple:`` and the SHA-256
    of the quad's subject, predicate and triple term: the same text gives the same node (loading
    twice adds nothing), and two quads naming the same triple get a node each (removing one leaves
    the other's whole)."""
    for item in items:
        o = item.object
        if not isinstance(o, pyoxigraph.Triple):
            yield item
            continue
        graph = getattr(item, "graph_name", None)
        digest = hashlib.sha256(f"{item.subject} {item.predicate} {o}".encode()).hexdigest()
        node = pyoxigraph.NamedNode(TRIPLE_PREFIX + digest)
        yield _made(item.subject, item.predicate, node, graph)
        yield _made(node, _TYPE, _STATEMENT, graph)
        yield from classic(_made(node, part, value, graph)
                           for part, value in zip(_PARTS, (o.subject, o.predicate, o.object), strict=True))


def _made(s: Any, p: Any, o: Any, graph: Any) -> Any:
    """A triple (``graph`` None) or a quad."""
    return pyoxigraph.Triple(s, p, o) if graph is None else pyoxigraph.Quad(s, p, o, graph)


def classic_nquads(data: bytes) -> bytes:
    """N-Quads text with its triple terms in RDF 1.1's form (:func:`classic`)."""
    if b"<<(" not in data:
        return data
    quads = pyoxigraph.parse(data, format=pyoxigraph.RdfFormat.N_QUADS)
    return pyoxigraph.serialize(classic(quads), format=pyoxigraph.RdfFormat.N_QUADS) or b""


def classic_quads(quads: Sequence[Quad]) -> Sequence[Quad]:
    """Quads with their triple terms in RDF 1.1's form (:func:`classic`)."""
    if not any(o.startswith("<<(") for _, _, o, _ in quads):
        return quads
    parsed = pyoxigraph.parse(classic_nquads(nquads(quads)), format=pyoxigraph.RdfFormat.N_QUADS)
    return [(str(q.subject), str(q.predicate), str(q.object),
             "" if isinstance(q.graph_name, pyoxigraph.DefaultGraph) else str(q.graph_name)) for q in parsed]


def parse_nquads(ds: rdflib.Dataset, data: bytes) -> None:
    """``ds.parse`` of N-Quads (triple terms in RDF 1.1's form: :func:`classic`), without the
    DeprecationWarnings rdflib 7.6 raises from its own code (ConjunctiveGraph, default_context): they
    are not the caller's to fix."""
    data = classic_nquads(data)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="rdflib")
        ds.parse(data=data.decode("utf-8"), format="nquads")


def dataset_from_nquads(data: bytes) -> rdflib.Dataset:
    """An ``rdflib.Dataset`` holding ``data``, with our prefixes bound."""
    ds = rdflib.Dataset()
    for prefix, namespace in PREFIXES.items():
        ds.bind(prefix, namespace)
    if data:
        parse_nquads(ds, data)
    return ds


def delete_data(quads: Sequence[Quad]) -> str:
    """A SPARQL ``DELETE DATA`` update removing ``quads``."""
    return _data_update("DELETE", quads)


def insert_data(quads: Sequence[Quad]) -> str:
    """A SPARQL ``INSERT DATA`` update adding ``quads`` (a graph of ``""``: the default graph)."""
    return _data_update("INSERT", quads)


def _data_update(verb: str, quads: Sequence[Quad]) -> str:
    body = "\n".join(f"GRAPH {g} {{ {s} {p} {o} }}" if g else f"{s} {p} {o} ." for s, p, o, g in quads)
    return f"{verb} DATA {{\n{body}\n}}"
