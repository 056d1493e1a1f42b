"""``otel-prov hold``, ``delete`` and ``prune``: legal holds, erasure and retention, on any store
(the work is :mod:`otel_prov.erasure`'s; this is the command's arguments and its lines).

- ``hold add|remove|list``: a hold exempts a session, with its sub-traces, or a whole collection
  from every removal.
- ``delete``: sessions (ids, a collection, or the sessions whose recorded text holds some words)
  erased with their sub-traces; what is held is refused by name.  On an on-disk store the erased
  text then leaves the store's files, unless another process (``serve``) indexes it: the command
  says so.
- ``prune --older-than DURATION``: ``delete`` of the sessions that started before then; held ones
  are kept (counted, not an error).
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta

from .. import erasure as E
from .. import settings
from ..errors import StoreError
from ..model import lifecycle as L
from ..model.quads import nquads
from ..read.model import SessionFilter
from ..read.reader import TraceReader
from ..stores import ReadStore, open_for_writing
from .common import EXIT_FAILED, EXIT_OK, PROG, CliError, Reading, UsageError, store_spec


def parse_duration(text: str) -> timedelta:
    """``--older-than``'s value (:func:`otel_prov.settings.parse_duration`); a usage error if not one."""
    try:
        return settings.parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"--older-than: {exc}") from None


def _by(args: argparse.Namespace) -> str:
    return str(args.by) if args.by else E.user()


# -- holds ------------------------------------------------------------------------------------------


def cmd_hold(args: argparse.Namespace) -> int:
    spec = store_spec(args)
    if args.action == "list":
        with Reading(args) as store:
            found = E.holds(TraceReader(store))
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
        existing = E.holds(reader)
        gone = [h for h in existing if (h.session in questions) or (
            args.collection is not None and h.collection == args.collection)]
        removals = [E.hold_quads(store, hold) for hold in gone] if args.action != "add" else []
    if args.action != "add" and not gone:
        raise CliError(f"no hold on {', '.join(questions) or 'collection ' + args.collection}")
    writer = open_for_writing(spec)
    try:
        if args.action == "add":
            targets: list[str | None] = list(questions) or [None]
            for target in targets:
                placed, quads = L.hold_quads(session=target, collection=None if target else args.collection,
                                             when=E.now(), by=_by(args), reason=args.reason)
                writer.add(nquads(quads), len(quads))
                print(f"held {target or 'collection ' + args.collection}: {placed}", file=sys.stderr)
        else:
            for hold, quads in zip(gone, removals, strict=True):
                writer.remove(quads)
                print(f"released {hold.target()}: {hold.iri}", file=sys.stderr)
    finally:
        writer.close()
    return EXIT_OK


# -- delete and prune ----------------------------------------------------------------------------------


def _selected(store: ReadStore, args: argparse.Namespace, until: str | None = None) -> list[str]:
    reader = TraceReader(store)
    if getattr(args, "sessions", None):
        return list(dict.fromkeys(reader.question_of(ref) for ref in args.sessions))
    return [row.id for row in reader.sessions(collection=args.collection,
                                              where=SessionFilter(text=getattr(args, "where_text", None),
                                                                  until=until))]


def _erase(args: argparse.Namespace, verb: str, *, until: str | None = None, keep_held: bool = False) -> int:
    """Delete the sessions ``args`` selects (``until``: those that started at the latest then), each
    with its sub-traces; a held one is refused by name (``keep_held``: kept and counted)."""
    spec = store_spec(args)
    if not args.dry_run:
        try:
            E.fold_first(spec)
        except StoreError as exc:
            raise CliError(str(exc)) from None
    with Reading(args) as store:
        planned = E.plan(store, _selected(store, args, until))
    refused = [] if keep_held else [
        f"{PROG} {verb}: {question} is held ({hold.iri}{': ' + hold.reason if hold.reason else ''}): "
        "not deleted" for question, hold in planned.held]
    for line in refused:
        print(line, file=sys.stderr)
    if keep_held and planned.held:
        held = len(planned.held)
        print(f"{held} held session{'s' if held != 1 else ''} kept", file=sys.stderr)
    if not planned.erase:
        print("nothing to delete", file=sys.stderr)
        return EXIT_FAILED if refused else EXIT_OK
    if args.dry_run:
        for doomed in planned.erase:
            print(f"would delete {doomed.question} ({len(doomed.quads)} quads)")
        return EXIT_FAILED if refused else EXIT_OK
    blob_dir = settings.BLOB_DIR.get(args.blob_dir, via="flag")
    rebuilt = E.erase(spec, planned.erase, by=_by(args), reason=args.reason, blob_dir=blob_dir,
                      each=lambda d: print(f"deleted {d.question} ({len(d.quads)} quads)", file=sys.stderr))
    if spec.path is not None:
        if rebuilt:
            print("erased from the store's files (its log folded, its index rebuilt without them)",
                  file=sys.stderr)
        else:
            print(f"{PROG} {verb}: another process indexes this store (serve?): the sessions are gone "
                  "from what every reader sees, but their text stays in the store's files until "
                  f"'{PROG} check --rebuild' runs with that process stopped", file=sys.stderr)
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
    older = parse_duration(args.older_than)
    args.sessions, args.where_text = [], None
    if args.reason is None:
        args.reason = f"retention: older than {args.older_than}"
    return _erase(args, "prune", until=E.cutoff(older), keep_held=True)
