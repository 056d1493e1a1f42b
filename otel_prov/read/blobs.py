"""Large values read back (docs/store.md, "Large values"): which node's property is which blob
(``otelprov:byReference "observation sha256:HEX"``), and the whole text from the blob store.  A
blob that is missing, or whose bytes no longer hash to its name, is never shown as the value: the
preview stays, and the problem is said."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..model.vocab import GRAPH_RETRIEVAL, NT
from ..stores import Blobs
from ..stores.base import LITERAL, QuadTerms, ReadStore, Term

_NOTE = re.compile(r"(\S+) sha256:([0-9a-f]{64})\Z")


def _local(iri: str) -> str:
    return iri.rsplit("#", 1)[-1].rsplit("/", 1)[-1]


def references(store: ReadStore, subjects: Iterable[str] | None = None) -> dict[tuple[str, str], str]:
    """``(node IRI, property's local name) -> hex SHA-256`` of the values stored by reference (of
    ``subjects`` only, when given)."""
    values = ""
    if subjects is not None:
        wanted = sorted(set(subjects))
        if not wanted:
            return {}
        values = "VALUES ?s { " + " ".join(f"<{s}>" for s in wanted) + " } "
    out: dict[tuple[str, str], str] = {}
    for row in store.select(f"SELECT ?s ?n WHERE {{ {values}GRAPH <{GRAPH_RETRIEVAL}> "
                            f"{{ ?s {NT.byReference} ?n }} }}"):
        found = _NOTE.match(row["n"].value)
        if found:
            out[(row["s"].value, found.group(1))] = found.group(2)
    return out


@dataclass
class Resolver:
    """Reads blobs (each once) and remembers what could not be read."""

    blobs: Blobs | None
    problems: dict[str, str] = field(default_factory=dict)
    """hex -> ``missing`` or ``changed`` (or ``missing (no blob directory)``)."""
    _texts: dict[str, str] = field(default_factory=dict)

    def text(self, digest: str) -> str | None:
        """The whole text of blob ``digest``, or None (said in :attr:`problems`)."""
        if digest in self._texts:
            return self._texts[digest]
        if digest in self.problems:
            return None
        if self.blobs is None:
            self.problems[digest] = "missing (no blob directory)"
            return None
        data = self.blobs.get(digest)
        if data is None:
            self.problems[digest] = "missing"
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            self.problems[digest] = "changed"
            return None
        text = self._texts[digest] = data.decode("utf-8", errors="replace")
        return text

    def said(self) -> list[str]:
        """One line per blob that could not be read."""
        return [f"blob sha256:{d} {why}: its preview kept" for d, why in sorted(self.problems.items())]


def inlined(quads: Iterable[QuadTerms], refs: dict[tuple[str, str], str],
            resolver: Resolver) -> Iterator[QuadTerms]:
    """``quads`` with each value stored by reference back in its literal, whole."""
    for quad in quads:
        s, p, o, g = quad
        if o.kind == LITERAL and refs:
            digest = refs.get((s.value, _local(p.value)))
            if digest is not None:
                text = resolver.text(digest)
                if text is not None:
                    yield (s, p, Term(LITERAL, text, o.datatype, o.language), g)
                    continue
        yield quad


Triple3 = tuple[str, str, Term]
"""A trace's triple as :mod:`.build` reads it: subject and predicate IRIs as text, the object a term."""


def triple_references(triples: Iterable[Triple3]) -> dict[tuple[str, str], str]:
    """:func:`references` of a trace's own triples."""
    note = NT.byReference[1:-1]
    out: dict[tuple[str, str], str] = {}
    for s, p, o in triples:
        if p == note and (found := _NOTE.match(o.value)):
            out[(s, found.group(1))] = found.group(2)
    return out


def inlined_triples(triples: list[Triple3], resolver: Resolver) -> list[Triple3]:
    """A trace's triples with each value stored by reference whole in its literal, and the note that
    said it was a preview left out of the nodes whose value came back (a blob that could not be read
    keeps its preview and its note)."""
    refs = triple_references(triples)
    if not refs:
        return triples
    note = NT.byReference[1:-1]
    done: set[tuple[str, str]] = set()
    out: list[Triple3] = []
    for s, p, o in triples:
        digest = refs.get((s, _local(p))) if o.kind == LITERAL and p != note else None
        text = resolver.text(digest) if digest is not None else None
        if text is not None:
            done.add((s, digest or ""))
            out.append((s, p, Term(LITERAL, text, o.datatype, o.language)))
        else:
            out.append((s, p, o))
    return [t for t in out
            if not (t[1] == note and (m := _NOTE.match(t[2].value)) and (t[0], m.group(2)) in done)]


def notes_of(notes: Iterable[str]) -> list[tuple[str, str]]:
    """``otelprov:byReference`` values as ``(property's local name, hex)``, those well formed only."""
    return [(m.group(1), m.group(2)) for note in notes if (m := _NOTE.match(note))]
