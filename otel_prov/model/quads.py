"""Quads: 4-tuples of N-Triples terms (:mod:`.terms`), as the mapping makes them; N-Quads text, which
is what every store reads fastest; and an ``rdflib.Dataset`` made from that text."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Sequence

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


def parse_nquads(ds: rdflib.Dataset, data: bytes) -> None:
    """``ds.parse`` of N-Quads, without the DeprecationWarnings rdflib 7.6 raises from its own code
    (ConjunctiveGraph, default_context): they are not the caller's to fix."""
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
