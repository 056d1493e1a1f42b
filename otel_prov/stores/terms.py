"""The read-back :class:`~.base.Term` of every backend: what the embedded store's pyoxigraph terms
and a SPARQL server's JSON results say, as one plain type (no reader sees a backend's own)."""

from __future__ import annotations

from typing import Any

import pyoxigraph

from ..errors import StoreError
from .base import BNODE, IRI, LITERAL, QuadTerms, Term, Triple, to_ntriples, to_oxigraph, triple_term  # noqa: F401

XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
RDF_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
"""The datatypes of plain literals: a :class:`Term` leaves them out."""


def from_oxigraph(value: Any) -> Term:
    """A pyoxigraph term (a query's solution, a quad's part)."""
    if isinstance(value, pyoxigraph.NamedNode):
        return Term(IRI, value.value)
    if isinstance(value, pyoxigraph.Literal):
        datatype = value.datatype.value
        plain = value.language is not None or datatype == XSD_STRING
        return Term(LITERAL, value.value, None if plain else datatype, value.language)
    if isinstance(value, pyoxigraph.BlankNode):
        return Term(BNODE, value.value)
    if isinstance(value, pyoxigraph.DefaultGraph):
        return Term(IRI, "")
    if isinstance(value, pyoxigraph.Triple):
        return triple_term(from_triple(value))
    raise ValueError(f"unexpected pyoxigraph term: {value!r}")


def from_triple(triple: Any) -> Triple:
    """A pyoxigraph triple's terms."""
    return from_oxigraph(triple.subject), from_oxigraph(triple.predicate), from_oxigraph(triple.object)


def from_quad(quad: Any) -> QuadTerms:
    """A pyoxigraph quad's terms (the default graph's name is ``""``)."""
    return (from_oxigraph(quad.subject), from_oxigraph(quad.predicate), from_oxigraph(quad.object),
            from_oxigraph(quad.graph_name))


def from_json(value: dict[str, Any]) -> Term:
    """A term of the SPARQL 1.1 JSON results format (and SPARQL 1.0's ``typed-literal``; SPARQL 1.2's
    ``triple``)."""
    kind, text = value.get("type"), value.get("value", "")
    if kind == "triple" and isinstance(text, dict):
        try:
            return triple_term((from_json(text["subject"]), from_json(text["predicate"]),
                                from_json(text["object"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"unexpected triple term in the server's results: {value!r}") from exc
    if kind == "uri":
        return Term(IRI, text)
    if kind == "bnode":
        return Term(BNODE, text)
    if kind in ("literal", "typed-literal"):
        language = value.get("xml:lang")
        datatype = value.get("datatype")
        if language is not None or datatype in (XSD_STRING, RDF_LANG_STRING):
            datatype = None
        return Term(LITERAL, text, datatype, language)
    raise StoreError(f"unexpected term in the server's results: {value!r}")
