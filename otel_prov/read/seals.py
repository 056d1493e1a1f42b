"""Seals of the sessions' graphs (``otel-prov seal``, ``otel-prov verify``; docs/audit.md).

A session's graph is the quads of its trace in ``urn:graph:retrieval``, exactly what
``otel-prov export --session`` writes for it (:meth:`.reader.TraceReader.session_triples`: its
Question, every node derived from it, sub-traces included, and what they link to).  Its digest is
the SHA-256 of its canonical N-Quads: the quads canonicalized with W3C RDFC-1.0 (blank nodes
relabelled ``_:c14nN``), one a line, sorted.  A seal records it in the graph ``urn:graph:seals``
(:data:`~otel_prov.model.vocab.GRAPH_SEALS`), with the time, the session's collection and time (so a
session removed since can still be told to be in a collection or a time range), and, when a key was
given, an HMAC-SHA256 and an Ed25519 signature of :meth:`Seal.message`.  The latest seal of a
session is the one that counts."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pyoxigraph
from rdflib.namespace import PROV, RDF

from ..model.iris import digest_of, seal_iri
from ..model.quads import Quad
from ..model.terms import datetime_from_ns, integer, iri, literal
from ..model.vocab import GRAPH_RETRIEVAL, GRAPH_SEALS, OTELPROV
from ..stores.base import ReadStore, Triple, to_oxigraph
from .model import epoch_ns

ALGORITHM = "RDFC-1.0/SHA-256"
"""How a session's digest is made: its quads canonicalized with RDFC-1.0, as sorted N-Quads, hashed
with SHA-256 (hex)."""
MESSAGE_VERSION = "otel-prov seal 1"
"""The first line of what an HMAC or a signature of a seal is computed over."""

INTACT, CHANGED, REMOVED, UNSEALED, UNSIGNED, BAD_SIGNATURE = (
    "intact", "changed", "removed", "unsealed", "unsigned", "bad-signature")
STATUSES = (INTACT, CHANGED, REMOVED, UNSEALED, UNSIGNED, BAD_SIGNATURE)
"""What ``verify`` finds of a session: its graph is as sealed; it changed; it is gone; it has no seal
(recorded after the last seal); its latest seal lacks the HMAC or signature a key was given for; or
that HMAC or signature does not match the key."""


def canonical_nquads(triples: Iterable[Triple]) -> bytes:
    """The canonical N-Quads of a session's triples in ``urn:graph:retrieval`` (RDFC-1.0): each
    distinct quad once, a line each, sorted by code point."""
    graph = pyoxigraph.NamedNode(GRAPH_RETRIEVAL)
    dataset = pyoxigraph.Dataset(pyoxigraph.Quad(to_oxigraph(s), to_oxigraph(p), to_oxigraph(o), graph)
                                 for s, p, o in triples)
    dataset.canonicalize(pyoxigraph.CanonicalizationAlgorithm.RDFC_1_0)
    return "".join(sorted(f"{quad} .\n" for quad in dataset)).encode("utf-8")


def digest(triples: Iterable[Triple]) -> tuple[str, int]:
    """A session's digest (:data:`ALGORITHM`, hex) and how many quads it covers."""
    text = canonical_nquads(triples)
    return hashlib.sha256(text).hexdigest(), text.count(b"\n")


@dataclass(frozen=True)
class Seal:
    """One seal of one session's graph, as ``urn:graph:seals`` records it."""

    session: str
    """The IRI of the session's Question."""
    digest: str
    quads: int
    time: str
    """When it was sealed (``xsd:dateTime``, UTC)."""
    collection: str | None = None
    """The session's collection when sealed."""
    session_time: str | None = None
    """The session's time when sealed (as ``otel-prov list`` shows it)."""
    algorithm: str = ALGORITHM
    hmac: str | None = None
    """HMAC-SHA256 of :meth:`message` (hex)."""
    signature: str | None = None
    """Ed25519 signature of :meth:`message` (base64)."""
    public_key: str | None = None
    """The raw Ed25519 public key the signature is checked with (base64)."""

    @property
    def iri(self) -> str:
        return seal_iri(self.session, self.digest, self.time)

    def message(self) -> bytes:
        """What the HMAC and the signature are computed over: every field above but themselves
        (times as nanoseconds since the epoch, whatever form a store gives them back in)."""
        fields = (MESSAGE_VERSION, self.session, self.algorithm, self.digest, str(self.quads),
                  str(epoch_ns(self.time)), self.collection or "", str(epoch_ns(self.session_time) or ""))
        return "\n".join(fields).encode("utf-8")

    def quads_in_graph(self) -> list[Quad]:
        """The seal's quads in ``urn:graph:seals`` (N-Triples terms)."""
        node, graph = iri(self.iri), iri(GRAPH_SEALS)
        values: list[tuple[Any, str | None]] = [
            (RDF.type, iri(str(PROV.Entity))), (RDF.type, iri(str(OTELPROV.Seal))),
            (OTELPROV.sealedSession, iri(self.session)), (OTELPROV.digest, literal(self.digest)),
            (OTELPROV.digestAlgorithm, literal(self.algorithm)), (OTELPROV.quadCount, integer(self.quads)),
            (PROV.generatedAtTime, _datetime(self.time)),
            (OTELPROV.sessionTime, _datetime(self.session_time)),
        ]
        values += [(predicate, literal(value)) for predicate, value in (
            (OTELPROV.sessionCollection, self.collection), (OTELPROV.hmac, self.hmac),
            (OTELPROV.signature, self.signature), (OTELPROV.publicKey, self.public_key)) if value is not None]
        return [(node, iri(str(predicate)), value, graph) for predicate, value in values if value is not None]

    def as_json(self) -> dict[str, Any]:
        return {"seal": self.iri, "digest": self.digest, "quads": self.quads, "time": self.time,
                "algorithm": self.algorithm, "collection": self.collection, "sessionTime": self.session_time,
                "hmac": self.hmac is not None, "signature": self.signature is not None}


def _datetime(text: str | None) -> str | None:
    ns = epoch_ns(text)
    return datetime_from_ns(ns) if ns is not None else None


_OPTIONAL = {"collection": "sessionCollection", "stime": "sessionTime", "hmac": "hmac",
             "signature": "signature", "key": "publicKey"}


def read_seals(store: ReadStore) -> dict[str, list[Seal]]:
    """Every seal in ``urn:graph:seals``, by session, oldest first (the last one counts)."""
    optional = "\n".join(f"OPTIONAL {{ ?seal otelprov:{name} ?{var} }}" for var, name in _OPTIONAL.items())
    rows = store.select(f"""
SELECT ?session ?digest ?algorithm ?quads ?time ?{' ?'.join(_OPTIONAL)} WHERE {{ GRAPH <{GRAPH_SEALS}> {{
  ?seal a otelprov:Seal ; otelprov:sealedSession ?session ; otelprov:digest ?digest ;
    otelprov:digestAlgorithm ?algorithm ; otelprov:quadCount ?quads ; prov:generatedAtTime ?time .
  {optional}
}} }}""")
    seals: dict[str, list[Seal]] = defaultdict(list)
    for row in rows:
        text = {name: term.value for name, term in row.items()}
        try:
            quads = int(text["quads"])
        except ValueError:
            quads = -1  # not a count: a seal that no graph matches
        seals[text["session"]].append(Seal(
            text["session"], text["digest"], quads, text["time"], text.get("collection"), text.get("stime"),
            text["algorithm"], text.get("hmac"), text.get("signature"), text.get("key")))
    for found in seals.values():
        found.sort(key=lambda s: (epoch_ns(s.time) or 0, s.iri, s.digest))
    return dict(seals)


@dataclass(frozen=True)
class Finding:
    """What ``verify`` found of one session."""

    session: str
    status: str
    """One of :data:`STATUSES`."""
    detail: str
    digest: str | None = None
    """Its digest now (None: removed)."""
    quads: int | None = None
    seal: Seal | None = None
    """Its latest seal."""
    seals: int = 0
    """How many times it was sealed."""

    def as_json(self) -> dict[str, Any]:
        return {"session": self.session, "status": self.status, "detail": self.detail, "digest": self.digest,
                "quads": self.quads, "seals": self.seals,
                "sealed": self.seal.as_json() if self.seal is not None else None}


Authenticate = Callable[[Seal], "tuple[str, str] | None"]
"""A check of a seal against the keys given: None when it holds, else (status, why)."""


def compare(sessions: Iterable[str], now: dict[str, tuple[str, int]], seals: dict[str, list[Seal]],
            authenticate: Authenticate | None = None) -> list[Finding]:
    """What ``verify`` says of each of ``sessions`` (sorted by IRI), from its digest ``now`` (absent:
    its graph is gone) and its seals (the latest counts)."""
    findings = []
    for session in sorted(set(sessions)):
        found = seals.get(session, [])
        seal = found[-1] if found else None
        digest_now, quads = now.get(session, (None, None))
        if seal is None:
            status, detail = UNSEALED, "no seal: recorded after the last seal, or its seals were removed"
        elif (problem := authenticate(seal) if authenticate is not None else None) is not None:
            status, detail = problem
        elif digest_now is None:
            status, detail = REMOVED, f"sealed at {seal.time} with {seal.quads} quads; none is left"
        elif seal.algorithm != ALGORITHM:
            status, detail = CHANGED, f"sealed with {seal.algorithm!r}, which this otel-prov does not compute"
        elif digest_now != seal.digest:
            status, detail = CHANGED, f"sealed at {seal.time} with {seal.quads} quads; now {quads} quads, " \
                                      "another digest"
        else:
            status, detail = INTACT, f"as sealed at {seal.time}, {seal.quads} quads"
        findings.append(Finding(session, status, detail, digest_now, quads, seal, len(found)))
    return findings


def blobs_of(triples: Iterable[Triple]) -> list[str]:
    """The blobs (hex SHA-256) a session's triples refer to (``otelprov:blob``), sorted."""
    blob = str(OTELPROV.blob)
    return sorted({d for _, p, o in triples if p.value == blob and (d := digest_of(o.value)) is not None})


def with_blobs(findings: list[Finding], problems: dict[str, list[str]]) -> list[Finding]:
    """``findings`` with each session whose blobs are not as named (``problems``: its blobs' problems,
    ``"sha256:HEX missing"``, ``"sha256:HEX changed"``) said to be changed, whatever its seal says:
    a blob is part of what was recorded."""
    out = []
    for f in findings:
        found = problems.get(f.session)
        if not found:
            out.append(f)
            continue
        blobs = "; ".join(found)
        detail = f"blob {blobs}" if f.status == INTACT else f"{f.detail}; blob {blobs}"
        out.append(Finding(f.session, CHANGED, detail, f.digest, f.quads, f.seal, f.seals))
    return out
