"""Legal holds, erasure and retention on any store: what ``otel-prov hold``, ``delete``, ``prune``
and ``serve --prune-older-than`` share.

- A hold (:mod:`otel_prov.model.lifecycle`, graph ``urn:graph:holds``) exempts a session, with its
  sub-traces, or a whole collection from every removal: :func:`plan` sets it apart.
- :func:`erase` removes the planned sessions with their sub-traces through the store's own write
  path (so the same removal works on every backend), keeping the quads of the nodes another session
  refers to, and records each erasure without its content (graph ``urn:graph:erasures``).
- On an on-disk store the log is folded first, so no addition written before the removal can be
  folded after it and bring a session back (:func:`otel_prov.stores.settle`), and the index is
  rebuilt after it, so the removed text leaves the store's files (:mod:`otel_prov.stores.rebuild`)
  -- unless another process indexes the store (``serve``), whose lock that is.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from .errors import StoreError
from .model import lifecycle as L
from .model.iris import blob_iri, digest_of
from .model.quads import Quad, nquads
from .model.vocab import GRAPH_RETRIEVAL, NT
from .read.model import SessionFilter
from .read.reader import TraceReader
from .stores import (
    BlobPlace,
    ReadStore,
    StoreSpec,
    default_dir,
    open_blobs,
    open_for_reading,
    open_for_writing,
    settle,
)
from .stores.base import IRI, QuadTerms, Term, to_ntriples

SETTLE_TIMEOUT = 30.0
"""Seconds an erasure waits for another process to fold the store's log before it removes anything."""
SHARED_BATCH = 200
"""Nodes asked about at once by :func:`_shared`."""

def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def cutoff(older_than: timedelta) -> str:
    """The time ``older_than`` ago, as the sessions' start times are written."""
    return (datetime.now(UTC) - older_than).isoformat(timespec="seconds").replace("+00:00", "Z")


def user() -> str:
    """Who runs this, for the record of a hold or an erasure."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


# -- holds ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hold:
    iri: str
    session: str | None
    collection: str | None
    time: str
    by: str
    reason: str

    def target(self) -> str:
        return self.session if self.session is not None else f"collection {self.collection}"


def holds(reader: TraceReader) -> list[Hold]:
    """Every hold the store records, oldest first."""
    rows = reader.select(f"""
SELECT ?h ?s ?c ?t ?who ?why WHERE {{ GRAPH <{L.GRAPH_HOLDS}> {{
  ?h a {L.LegalHold} .
  OPTIONAL {{ ?h {L.heldSession} ?s }} OPTIONAL {{ ?h {L.heldCollection} ?c }}
  OPTIONAL {{ ?h {NT.generatedAtTime} ?t }} OPTIONAL {{ ?h {L.wasAttributedTo} ?p . ?p {NT.label} ?who }}
  OPTIONAL {{ ?h {L.comment} ?why }}
}} }} ORDER BY ?t ?h""")
    return [Hold(r["h"], r.get("s"), r.get("c"), r.get("t", ""), r.get("who", ""), r.get("why", ""))
            for r in rows]


def hold_quads(store: ReadStore, hold: Hold) -> list[Quad]:
    """The quads that record ``hold`` (to remove it)."""
    mine = store.select(f"SELECT ?p ?o WHERE {{ GRAPH <{L.GRAPH_HOLDS}> {{ <{hold.iri}> ?p ?o }} }}")
    return [(_nt(Term(IRI, hold.iri)), _nt(row["p"]), _nt(row["o"]), f"<{L.GRAPH_HOLDS}>") for row in mine]


def _collection_of(reader: TraceReader, question: str) -> str | None:
    rows = reader.select(f"SELECT ?c WHERE {{ GRAPH {NT.graph} {{ <{question}> {NT.collection} ?c }} }} "
                         "LIMIT 1")
    return rows[0]["c"] if rows else None


def _holding(question: str, quads: list[QuadTerms], collection: str | None, every: list[Hold]) -> Hold | None:
    """The hold that keeps ``question`` (its own, a sub-trace's, or its collection's), if any."""
    subjects = {s.value for s, _, _, _ in quads} | {question}
    for hold in every:
        if (hold.session is not None and hold.session in subjects) or (
                hold.collection is not None and hold.collection == collection):
            return hold
    return None


# -- what to erase ------------------------------------------------------------------------------------


def session_quads(reader: TraceReader, questions: Iterable[str]) -> list[QuadTerms]:
    """Every quad of the sessions whose Questions are ``questions``, with their sub-traces', in a
    stable order."""
    graph = Term(IRI, GRAPH_RETRIEVAL)
    quads = {(s, p, o, graph) for _, triples in reader.session_triples(list(questions))
             for s, p, o in triples}
    return sorted(quads, key=lambda q: tuple((t.kind, t.value, t.datatype or "", t.language or "")
                                             for t in q))


@dataclass(frozen=True)
class Doomed:
    """A session to erase: its Question, trace id and the quads that go (those of the nodes another
    session refers to are kept)."""

    question: str
    trace_id: str | None
    quads: list[QuadTerms]


@dataclass
class Plan:
    erase: list[Doomed] = field(default_factory=list)
    held: list[tuple[str, Hold]] = field(default_factory=list)
    """Each session that a hold keeps, and the hold."""


def plan(store: ReadStore, questions: Iterable[str]) -> Plan:
    """What erasing the sessions of ``questions`` (Questions' IRIs) takes, holds set apart."""
    reader = TraceReader(store)
    every = holds(reader)
    out = Plan()
    trace_id = NT.traceId[1:-1]
    for question in dict.fromkeys(questions):
        quads = session_quads(reader, [question])
        hold = _holding(question, quads, _collection_of(reader, question), every)
        if hold is not None:
            out.held.append((question, hold))
            continue
        trace = next((o.value for s, p, o, _ in quads if s.value == question and p.value == trace_id), None)
        out.erase.append(Doomed(question, trace, quads))
    shared = _shared(reader, {q[0].value for doomed in out.erase for q in doomed.quads})
    out.erase = [Doomed(d.question, d.trace_id, [q for q in d.quads if q[0].value not in shared])
                 for d in out.erase]
    return out


def older_than(store: ReadStore, until: str, collection: str | None = None) -> list[str]:
    """The Questions of the sessions that started at the latest at ``until``."""
    where = SessionFilter(until=until)
    return [row.id for row in TraceReader(store).sessions(collection=collection, where=where)]


def _shared(reader: TraceReader, subjects: set[str]) -> set[str]:
    """Of ``subjects`` (the nodes of the sessions being erased), those another node of the
    explainability graph refers to: shared with sessions that stay (the strict profile's software
    agents, a person who approved steps of several sessions).  Their own quads are kept."""
    shared: set[str] = set()
    ordered = sorted(subjects)
    for start in range(0, len(ordered), SHARED_BATCH):
        values = " ".join(f"<{s}>" for s in ordered[start:start + SHARED_BATCH])
        rows = reader.select(f"SELECT DISTINCT ?s ?x WHERE {{ VALUES ?s {{ {values} }} "
                             f"GRAPH {NT.graph} {{ ?x ?p ?s }} }}")
        shared |= {row["s"] for row in rows if row["x"] not in subjects}
    return shared


# -- erasing ------------------------------------------------------------------------------------------


def fold_first(spec: StoreSpec, timeout: float = SETTLE_TIMEOUT) -> None:
    """Everything the store's log holds folded into its index before anything is removed (so no
    addition written before the removal is folded after it); a :class:`StoreError` if the process
    that indexes it did not fold within ``timeout`` seconds."""
    if not settle(spec, timeout=timeout):
        raise StoreError(f"the process indexing the store (serve?) did not fold its log within "
                         f"{timeout:.0f} s; nothing was deleted: try again")


def erase(spec: StoreSpec, doomed: Iterable[Doomed], *, by: str, reason: str | None,
          each: Callable[[Doomed], None] = lambda _: None, blob_dir: BlobPlace | None = None) -> bool:
    """Remove each of ``doomed`` from the store and record its erasure (``each`` is told of each one
    done), then, on an on-disk store, rebuild its index so that the removed text leaves its files.
    Returns whether it was rebuilt: False when another process indexes the store (the sessions are
    gone from what every reader sees; their text stays in the files until a rebuild)."""
    doomed = list(doomed)
    writer = open_for_writing(spec)
    try:
        for one in doomed:
            writer.remove(_as_quads(one.quads))
            _, record = L.erasure_quads(session=one.question, trace_id=one.trace_id, when=now(), by=by,
                                        reason=reason)
            writer.add(nquads(record), len(record))
            each(one)
    finally:
        writer.close()
    drop_blobs(spec, {d for one in doomed for d in _blobs_of(one.quads)}, blob_dir)
    return spec.path is None or settle(spec, timeout=0, compact=True)


def _blobs_of(quads: Iterable[QuadTerms]) -> set[str]:
    blob = NT.blob[1:-1]
    return {d for _, p, o, _ in quads if p.value == blob and (d := digest_of(o.value)) is not None}


def drop_blobs(spec: StoreSpec, digests: Iterable[str], blob_dir: BlobPlace | None = None) -> list[str]:
    """After sessions' quads were removed: the blobs no quad of the explainability graph refers to any
    more -- of ``digests`` (those sessions' blobs) and any blob described but referred to by no node
    (left by a framework trace mapped again with another value) -- go, their description from the
    graph and their file from the blob directory; a blob still referred to is never removed.  The
    blobs removed (hex)."""
    wanted = sorted(set(digests))
    store = open_for_reading(spec)
    try:
        referred = {d for start in range(0, len(wanted), SHARED_BATCH)
                    for row in store.select(
                        "SELECT DISTINCT ?b WHERE { VALUES ?b { "
                        + " ".join(f"<{blob_iri(d)}>" for d in wanted[start:start + SHARED_BATCH])
                        + f" }} GRAPH <{GRAPH_RETRIEVAL}> {{ ?x {NT.blob} ?b }} }}")
                    if (d := digest_of(row["b"].value)) is not None}
        graph = Term(IRI, GRAPH_RETRIEVAL)
        orphans = [(row["b"], row["p"], row["o"], graph) for row in store.select(
            f"SELECT ?b ?p ?o WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ ?b a {NT.Blob} ; ?p ?o "
            f"FILTER NOT EXISTS {{ ?x {NT.blob} ?b }} }} }}")]
    finally:
        store.close()
    if orphans:
        writer = open_for_writing(spec)
        try:
            writer.remove(_as_quads(orphans))
        finally:
            writer.close()
    gone = {d for d in wanted if d not in referred}
    gone |= {d for b, _, _, _ in orphans if (d := digest_of(b.value)) is not None}
    where = default_dir(spec, blob_dir)
    if where is None:
        return []
    blobs = open_blobs(where)
    return [d for d in sorted(gone) if blobs.remove(d)]


@dataclass
class Pruned:
    erased: int
    held: int
    rebuilt: bool
    more: bool = False
    """Whether more sessions were old enough than ``limit`` allowed (another round is due)."""


def prune(spec: StoreSpec, older: timedelta, *, collection: str | None = None, by: str,
          reason: str | None = None, limit: int | None = None, blob_dir: BlobPlace | None = None) -> Pruned:
    """Erase the sessions that started more than ``older`` ago (``collection``'s only, if given),
    but the held ones; at most ``limit`` of them (the oldest first)."""
    fold_first(spec)
    store = open_for_reading(spec)
    try:
        old = older_than(store, cutoff(older), collection)[::-1]
        planned = plan(store, old[:limit] if limit is not None else old)
    finally:
        store.close()
    more = limit is not None and len(old) > limit
    if not planned.erase:
        return Pruned(0, len(planned.held), True, more)
    rebuilt = erase(spec, planned.erase, by=by, reason=reason, blob_dir=blob_dir)
    return Pruned(len(planned.erase), len(planned.held), rebuilt, more)


_nt = to_ntriples


def _as_quads(quads: list[QuadTerms]) -> list[Quad]:
    return [(_nt(s), _nt(p), _nt(o), _nt(g)) for s, p, o, g in quads]
