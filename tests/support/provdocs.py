"""The tests of PROV-N and PROV-JSON (tests/render/test_provdm.py, tests/cli/test_prov_formats.py): a
store of real sessions (the example flows, people's approvals, and a session of long and awkward
values with an awkward id) in a profile, its triples, and the ``prov`` package's records of a
document as plain data that compares by IRIs (never by prefixes)."""

from __future__ import annotations

import datetime
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyoxigraph
from opentelemetry.sdk.trace import TracerProvider
from prov.identifier import Identifier, QualifiedName
from prov.model import Literal, ProvDocument
from rdflib import XSD

from otel_prov import agent_session
from otel_prov.model.vocab import GRAPH_RETRIEVAL
from otel_prov.render.rdf import node
from otel_prov.stores import open_for_reading, parse_store
from otel_prov.stores.base import IRI, Term, Triple
from tests.support.approvals import ApprovedRun, record_approved_run
from tests.support.cli import Filled, fill

AWKWARD_ID = "ré sumé: 1/(x)"
"""A session id every character of which but the letters is percent-encoded in its IRIs."""
ODD = 'say "hi" \\ there\nline 2\r\n\ttabbed %% [x], \'q\' """ // /* */ \x00 \x1b \u2028 😀 עברית'
"""Quotes, backslashes, line breaks, PROV-N's own punctuation, control characters, unicode."""
LONG = ("ünïcödé ☃ 😀 \"quoted\" \\back\\slash\\ line\n" * 50_000)[:2_000_000]
"""About 2.4 MB of UTF-8 (the exporter's limit is 4 MiB a value)."""


@dataclass
class ProvStore:
    path: Path
    profile: str
    filled: Filled
    approved: ApprovedRun
    awkward: str
    """The Question IRI of the session of :data:`LONG` and :data:`ODD` values."""


def _awkward(provider: TracerProvider) -> None:
    with agent_session(ODD, session_id=AWKWARD_ID, tracer_provider=provider) as session:
        with session.iteration() as step:
            step.thought(LONG)
            step.action("echo", {"text": ODD})
            step.observation(ODD)
        session.conclude(ODD + LONG[:1000])


def record(path: Path, profile: str) -> ProvStore:
    """The example flows (:func:`tests.support.cli.fill`), the awkward session and an approved run."""
    filled = fill(path, profile, more=_awkward)
    approved = record_approved_run(str(path), profile)
    store = open_for_reading(parse_store(str(path)))
    try:
        question = next(s.value for s, p, o, _ in store.quads(GRAPH_RETRIEVAL)
                        if p.value.endswith("/query") and o.value == ODD)
    finally:
        store.close()
    return ProvStore(path, profile, filled, approved, question)


def triples(path: Path) -> list[Triple]:
    """Every triple of the explainability graph."""
    store = open_for_reading(parse_store(str(path)))
    try:
        return [(s, p, o) for s, p, o, _ in store.quads(GRAPH_RETRIEVAL)]
    finally:
        store.close()


def as_ntriples(found: list[Triple]) -> str:
    items = [pyoxigraph.Triple(node(s), node(p), node(o)) for s, p, o in found]
    return (pyoxigraph.serialize(items, format=pyoxigraph.RdfFormat.N_TRIPLES) or b"").decode()


# -- a document as plain data -------------------------------------------------------------------------

_FRACTION = re.compile(r"(\.\d{6})\d+")


def micro(lexical: str) -> str:
    """An ``xsd:dateTime`` as the ``prov`` package holds it: to the microsecond, in UTC."""
    text = _FRACTION.sub(r"\1", lexical).replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(text).isoformat()


def value(v: Any) -> tuple[Any, ...]:
    """One value the ``prov`` package read, as plain data: an IRI, a time, a number, a literal."""
    if isinstance(v, QualifiedName | Identifier):
        return ("iri", v.uri)
    if isinstance(v, datetime.datetime):
        return ("time", v.isoformat())
    if isinstance(v, bool):
        return ("literal", str(v).lower(), str(XSD.boolean), None)
    if isinstance(v, float):
        return ("double", v)
    if isinstance(v, Literal):
        datatype = v.datatype.uri if v.datatype is not None else None
        return ("literal", v.value, None if datatype == str(XSD.string) else datatype, v.langtag)
    return ("literal", str(v), None, None)


def term(t: Term) -> tuple[Any, ...]:
    """One of our attribute values as :func:`value` gives it once the ``prov`` package read it."""
    if t.kind == IRI:
        return ("iri", t.value)
    if t.datatype == str(XSD.dateTime):
        return ("time", micro(t.value))
    if t.datatype in (str(XSD.double), str(XSD.float)):
        return ("double", float(t.value))
    return ("literal", t.value, None if t.datatype == str(XSD.string) else t.datatype, t.language)


Record = tuple[str, str | None, tuple[tuple[str, Any], ...], frozenset[tuple[str, Any]]]
"""A record: its kind (``ProvDerivation``), its identifier's IRI, its formal attributes in order, its
other attributes."""


def records(doc: ProvDocument) -> Counter[Record]:
    """The records of ``doc`` (of its one bundle, if it has one) as plain data."""
    bundles = list(doc.bundles)
    holder = bundles[0] if bundles else doc
    return Counter((type(r).__name__, r.identifier.uri if r.identifier is not None else None,
                    tuple((name.uri, value(v)) for name, v in r.formal_attributes if v is not None),
                    frozenset((name.uri, value(v)) for name, v in r.extra_attributes))
                   for r in holder.get_records())
