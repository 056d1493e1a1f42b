"""What a store keeps about its own life: legal holds and erasures (``otel-prov hold``, ``delete``,
``prune``), as quads.  Pure.

Each is in a named graph of its own, never in the explainability graph: a hold or an erasure is a
fact about the record, not about what an agent did.

- A **hold** (graph ``urn:graph:holds``) exempts a session, or a whole collection, from every
  removal: ``otelprov:LegalHold``, ``otelprov:heldSession`` (the session's Question) or
  ``otelprov:heldCollection``, ``prov:generatedAtTime``, ``prov:wasAttributedTo`` the person who
  placed it, ``rdfs:comment`` the reason.
- An **erasure** (graph ``urn:graph:erasures``) records that a session was removed, never what it
  held: a ``prov:Activity`` and ``otelprov:Erasure`` with its time, the person, the reason, and
  the Question ``prov:wasInvalidatedBy`` it (``prov:invalidatedAtTime``); a PROV invalidation in
  both profiles (the Question is an entity in both).
"""

from __future__ import annotations

import uuid

from rdflib import RDFS
from rdflib.namespace import PROV

from .iris import person_iri
from .quads import Quad
from .terms import iri, literal
from .vocab import NT, OTELPROV_NS

GRAPH_HOLDS = "urn:graph:holds"
GRAPH_ERASURES = "urn:graph:erasures"

LegalHold = f"<{OTELPROV_NS}LegalHold>"
heldSession = f"<{OTELPROV_NS}heldSession>"  # noqa: N816 (the vocabulary's name)
heldCollection = f"<{OTELPROV_NS}heldCollection>"  # noqa: N816
Erasure = f"<{OTELPROV_NS}Erasure>"
erasedSession = f"<{OTELPROV_NS}erasedSession>"  # noqa: N816
erasedTraceId = f"<{OTELPROV_NS}erasedTraceId>"  # noqa: N816
Person = f"<{PROV.Person}>"
wasAttributedTo = f"<{PROV.wasAttributedTo}>"  # noqa: N816
wasInvalidatedBy = f"<{PROV.wasInvalidatedBy}>"  # noqa: N816
invalidatedAtTime = f"<{PROV.invalidatedAtTime}>"  # noqa: N816
comment = f"<{RDFS.comment}>"
_DATETIME = "^^<http://www.w3.org/2001/XMLSchema#dateTime>"


def _when(timestamp: str) -> str:
    return literal(timestamp) + _DATETIME


def _person(name: str, graph: str) -> list[Quad]:
    who = iri(person_iri(name))
    return [(who, NT.type, Person, graph), (who, NT.type, NT.Agent, graph),
            (who, NT.label, literal(name), graph)]


def hold_quads(*, session: str | None = None, collection: str | None = None, when: str, by: str,
               reason: str | None, hold: str | None = None) -> tuple[str, list[Quad]]:
    """A new hold on ``session`` (a Question's IRI) or ``collection``: its IRI and quads.  ``when``
    is an ``xsd:dateTime`` text."""
    if (session is None) == (collection is None):
        raise ValueError("a hold is on one session or one collection")
    hold = hold or f"urn:otel-prov:hold:{uuid.uuid4()}"
    g, h = iri(GRAPH_HOLDS), iri(hold)
    quads = [(h, NT.type, LegalHold, g), (h, NT.generatedAtTime, _when(when), g),
             (h, wasAttributedTo, iri(person_iri(by)), g), *_person(by, g)]
    quads.append((h, heldSession, iri(session), g) if session is not None
                 else (h, heldCollection, literal(collection or ""), g))
    if reason:
        quads.append((h, comment, literal(reason), g))
    return hold, quads


def erasure_quads(*, session: str, trace_id: str | None, when: str, by: str, reason: str | None,
                  erasure: str | None = None) -> tuple[str, list[Quad]]:
    """The record that ``session`` (a Question's IRI) was erased: its IRI and quads (no content)."""
    erasure = erasure or f"urn:otel-prov:erasure:{uuid.uuid4()}"
    g, e, q = iri(GRAPH_ERASURES), iri(erasure), iri(session)
    quads = [(e, NT.type, NT.Activity, g), (e, NT.type, Erasure, g),
             (e, NT.startedAtTime, _when(when), g), (e, NT.endedAtTime, _when(when), g),
             (e, NT.wasAssociatedWith, iri(person_iri(by)), g), *_person(by, g),
             (e, erasedSession, q, g), (q, wasInvalidatedBy, e, g), (q, invalidatedAtTime, _when(when), g)]
    if trace_id:
        quads.append((e, erasedTraceId, literal(trace_id), g))
    if reason:
        quads.append((e, comment, literal(reason), g))
    return erasure, quads
