"""``otel-prov hold``, ``delete`` and ``prune``: legal holds, erasure and retention.

- ``hold add|remove|list``: a hold (:mod:`otel_prov.model.lifecycle`, graph ``urn:graph:holds``)
  exempts a session, with its sub-traces, or a whole collection from every removal.
- ``delete``: sessions (ids, a collection, or the sessions whose recorded text holds some words)
  removed with their sub-traces, on every backend, through the store's own write path; what is held
  is refused by name.  Each erasure is recorded (who, when, why, which session; never what it held:
  graph ``urn:graph:erasures``).  On an on-disk store the log is folded first (so no older addition
  can come back after the removal), and after it the index is rebuilt from what it holds
  (:mod:`otel_prov.stores.rebuild`), so the removed text leaves the store's files (Oxigraph never
  collects it from its string table).  When another process (``serve``) indexes the store, the
  rebuild cannot be done: the command says so.
- ``prune --older-than DURATION``: ``delete`` of the sessions that started before then; held ones
  are kept (counted, not an error).
"""

from __future__ import annotations

import argparse
import getpass
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyoxigraph

from ..model import lifecycle as L
from ..model.quads import Quad, nquads
from ..model.vocab import NT
from ..read.model import SessionFilter
from ..read.reader import TraceReader
from ..stores import open_for_writing, settle
from ..stores.base import BNODE, IRI, QuadTerms, Term
from .common import EXIT_FAILED, EXIT_OK, PROG, CliError, Reading, UsageError, store_spec
from .read import _session_quads

SETTLE_TIMEOUT = 30.0
"""Seconds ``delete`` waits for another process to fold the store's log before it removes anything."""
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d|w|y)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400,
                 "y": 365 * 86400}


def parse_duration(text: str) -> timedelta:
    """``90d``, ``12h``, ``30m``, ``2w``, ``1y`` (365 days), ``45s``."""
    match = _DURATION.match(text or "")
    if not match:
        raise UsageError(f"--older-than {text!r}: not a duration (for example 90d, 12h, 2w, 1y)")
    return timedelta(seconds=float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()])


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _by(args: argparse.Namespace) -> str:
    if args.by:
        return str(args.by)
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _nt(term: Term) -> str:
    if term.kind == IRI:
        return str(pyoxigraph.NamedNode(term.value))
    if term.kind == BNODE:
        return str(pyoxigraph.BlankNode(term.value))
    if term.language:
        return str(pyoxigraph.Literal(term.value, language=term.language))
    if term.datatype:
        return str(pyoxigraph.Literal(term.value, datatype=pyoxigraph.NamedNode(term.datatype)))
    return str(pyoxigraph.Literal(term.value))


def _as_quads(quads: list[QuadTerms]) -> list[Quad]:
    return [(_nt(s), _nt(p), _nt(o), _nt(g)) for s, p, o, g in quads]


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


def cmd_hold(args: argparse.Namespace) -> int:
    spec = store_spec(args)
    if args.action == "list":
        with Reading(args) as store:
            found = holds(TraceReader(store))
        if args.format == "json":
            import json

            print(json.dumps([{"hold": h.iri, "session": h.session, "collection": h.collection,
                               "time": h.time, "by": h.by, "reason": h.reason} for h in found], indent=2))
        elif not found:
            print("no holds", file=sys.stderr)
        for h in found if args.format != "json" else ():
            print(f"{h.iri}  {h.target()}  {h.time}  by {h.by}" + (f": {h.reason}" if h.reason else ""))
        return EXIT_OK
    if bool(args.sessions) == bool(args.collection):
        raise UsageError(f"hold {args.action}: give sessions or --collection, one of the two")
    with Reading(args) as store:
        reader = TraceReader(store)
        questions = [reader.question_of(ref) for ref in args.sessions]
        existing = holds(reader)
    writer = open_for_writing(spec)
    try:
        if args.action == "add":
            targets: list[str | None] = list(questions) or [None]
            for target in targets:
                placed, quads = L.hold_quads(session=target, collection=None if target else args.collection,
                                             when=_now(), by=_by(args), reason=args.reason)
                writer.add(nquads(quads), len(quads))
                print(f"held {target or 'collection ' + args.collection}: {placed}", file=sys.stderr)
        else:
            gone = [h for h in existing if (h.session in questions) or (
                args.collection is not None and h.collection == args.collection)]
            if not gone:
                raise CliError(f"no hold on {', '.join(questions) or 'collection ' + args.collection}")
            for hold in gone:
                with Reading(args) as store:
                    mine = store.select(f"SELECT ?p ?o WHERE {{ GRAPH <{L.GRAPH_HOLDS}> "
                                        f"{{ <{hold.iri}> ?p ?o }} }}")
                quads = [(_nt(Term(IRI, hold.iri)), _nt(row["p"]), _nt(row["o"]), f"<{L.GRAPH_HOLDS}>")
                         for row in mine]
                writer.remove(quads)
                print(f"released {hold.target()}: {hold.iri}", file=sys.stderr)
    finally:
        writer.close()
    return EXIT_OK


# -- delete and prune ----------------------------------------------------------------------------------


def _selected(reader: TraceReader, args: argparse.Namespace, until: str | None = None) -> list[str]:
    if getattr(args, "sessions", None):
        return list(dict.fromkeys(reader.question_of(ref) for ref in args.sessions))
    where = SessionFilter(text=getattr(args, "where_text", None), until=until)
    return [row.id for row in reader.sessions(collection=args.collection, where=where)]


SHARED_BATCH = 200
"""Nodes asked about at once by :func:`_shared`."""


def _shared(reader: TraceReader, subjects: set[str]) -> set[str]:
    """Of ``subjects`` (the nodes of the sessions being deleted), those another node of the
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


def _erase(args: argparse.Namespace, verb: str, *, until: str | None = None, keep_held: bool = False) -> int:
    """Delete the sessions ``args`` selects (``until``: those that started at the latest then), each
    with its sub-traces; a held one is refused by name (``keep_held``: kept and counted)."""
    spec = store_spec(args)
    if not args.dry_run and not settle(spec, timeout=SETTLE_TIMEOUT):
        raise CliError(f"the process indexing the store (serve?) did not fold its log within "
                       f"{SETTLE_TIMEOUT:.0f} s; nothing was deleted: try again")
    plan: list[tuple[str, str | None, list[QuadTerms]]] = []
    refused, kept = [], 0
    trace_id = NT.traceId[1:-1]
    with Reading(args) as store:
        reader = TraceReader(store)
        every = holds(reader)
        for question in _selected(reader, args, until):
            quads = _session_quads(store, [question])
            hold = _holding(question, quads, _collection_of(reader, question), every)
            if hold is not None:
                kept += 1
                if not keep_held:
                    refused.append(f"{PROG} {verb}: {question} is held ({hold.iri}"
                                   f"{': ' + hold.reason if hold.reason else ''}): not deleted")
                continue
            trace = next((o.value for s, p, o, _ in quads
                          if s.value == question and p.value == trace_id), None)
            plan.append((question, trace, quads))
        shared = _shared(reader, {q[0].value for _, _, quads in plan for q in quads})
    plan = [(question, trace, [q for q in quads if q[0].value not in shared])
            for question, trace, quads in plan]
    for line in refused:
        print(line, file=sys.stderr)
    if keep_held and kept:
        print(f"{kept} held session{'s' if kept != 1 else ''} kept", file=sys.stderr)
    if not plan:
        print("nothing to delete", file=sys.stderr)
        return EXIT_FAILED if refused else EXIT_OK
    if args.dry_run:
        for question, _, quads in plan:
            print(f"would delete {question} ({len(quads)} quads)")
        return EXIT_FAILED if refused else EXIT_OK
    writer = open_for_writing(spec)
    try:
        for question, trace, quads in plan:
            writer.remove(_as_quads(quads))
            _, record = L.erasure_quads(session=question, trace_id=trace, when=_now(), by=_by(args),
                                        reason=args.reason)
            writer.add(nquads(record), len(record))
            print(f"deleted {question} ({len(quads)} quads)", file=sys.stderr)
    finally:
        writer.close()
    if spec.path is not None:
        if settle(spec, timeout=0, compact=True):
            print("erased from the store's files (its log folded, its index rebuilt without them)",
                  file=sys.stderr)
        else:
            print(f"{PROG} {verb}: another process indexes this store (serve?): the sessions are gone "
                  "from what every reader sees, but their text stays in the store's files until the "
                  f"store is erased again with that process stopped ('{PROG} {verb}' of nothing more, or "
                  f"'{PROG} prune --older-than 100y', rebuilds it)",
                  file=sys.stderr)
            return EXIT_FAILED
    return EXIT_FAILED if refused else EXIT_OK


def cmd_delete(args: argparse.Namespace) -> int:
    chosen = sum(bool(x) for x in (args.sessions, args.collection, args.where_text))
    if chosen == 0:
        raise UsageError("delete: give sessions, --collection or --where-text")
    if args.sessions and (args.collection or args.where_text):
        raise UsageError("delete: give sessions, or --collection/--where-text, not both")
    return _erase(args, "delete")


def cmd_prune(args: argparse.Namespace) -> int:
    cutoff = datetime.now(UTC) - parse_duration(args.older_than)
    args.sessions, args.where_text = [], None
    if args.reason is None:
        args.reason = f"retention: older than {args.older_than}"
    return _erase(args, "prune", until=cutoff.isoformat(timespec="seconds").replace("+00:00", "Z"),
                  keep_held=True)
