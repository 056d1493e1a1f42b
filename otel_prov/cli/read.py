"""The reading commands: ``list``, ``show``, ``export`` and ``query``.  They open an existing store
to read (never create one) through its read protocol, and print what the renderers make of it."""

from __future__ import annotations

import argparse
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from .. import settings
from ..erasure import session_quads
from ..errors import ProvError, StoreError
from ..model.vocab import GRAPH_RETRIEVAL
from ..read import packs
from ..read.blobs import Resolver, inlined, inlined_triples, references
from ..read.build import build_trace
from ..read.diff import diff
from ..read.lineage import Lineage
from ..read.model import STATUS_NAMES, TYPES, SessionFilter, Trace, TraceNotFound, check_bound
from ..read.queries import QueryRefused, check_query, run_query, syntax_message
from ..read.reader import TraceReader
from ..render import (
    DIFF_FORMATS,
    EXPORT_FORMATS,
    LIST_FORMATS,
    TRACE_FORMATS,
    Shown,
    rdf,
    render_trace,
    write_export,
)
from ..render.lineage import render as render_lineage
from ..render.provdm import PROV_FORMATS
from ..render.results import render_result
from ..render.text import EMPTY
from ..stores import ReadStore, check_store, mark_stale, parse_store, settle
from ..stores.base import QuadTerms
from .common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    CliError,
    Progress,
    Reading,
    UsageError,
    blob_store,
    check_iri,
    option,
    resolve_format,
    silence_stdout,
    write,
)

T = TypeVar("T")



DEFAULT_LIMIT = 50
"""Sessions ``list`` shows unless ``--limit`` says otherwise (a line then says how many more match)."""


def cmd_list(args: argparse.Namespace) -> int:
    kind = TYPES[args.type] if args.type else None
    collection = option(args, settings.COLLECTION)
    check_time_range(args)
    where = SessionFilter(since=args.since, until=args.until, text=args.text,
                          status=STATUS_NAMES[args.status] if args.status else None,
                          tool=args.tool, agent=args.agent, model=args.model, service=args.service,
                          sort=args.sort)
    filtered = any((kind, collection is not None, args.since, args.until, args.text, args.status, args.tool,
                    args.agent, args.model, args.service))
    limit = args.limit or DEFAULT_LIMIT
    with Reading(args) as store:
        reader = TraceReader(store)
        rows = reader.sessions(kind=kind, collection=collection, where=where, limit=limit)
        more = reader.count_sessions(kind=kind, collection=collection, where=where) - len(rows) \
            if len(rows) == limit else 0
        if not rows and args.format == "table" and filtered:
            found = " ".join(filter(None, (f"of type {args.type}" if kind else "",
                                           _in_collection(args, reader, collection))))
            write(f"{EMPTY.rstrip('.')} {found or 'matching the filters'}.\n", None)
            return 0
    write(LIST_FORMATS[args.format](rows), None)
    if more > 0 and args.format == "table":
        print(f"({more} more: --limit N shows more)", file=sys.stderr)
    return 0


def check_time_range(args: argparse.Namespace) -> None:
    """``--since`` and ``--until``, checked: a :class:`UsageError` naming the flag."""
    for name in ("since", "until"):
        try:
            check_bound(f"--{name}", getattr(args, name))
        except ValueError as exc:
            raise UsageError(str(exc)) from None


def _in_collection(args: argparse.Namespace, reader: TraceReader, collection: str | None) -> str:
    """``in collection 'C'`` (and where that filter came from, and which collections the store
    has), for a listing or an export that found nothing; empty without a collection filter."""
    if collection is None:
        return ""
    source = f" ({settings.COLLECTION.env})" if args.collection is None else ""
    known = reader.collections()
    has = f"; the store's collections: {', '.join(repr(c) for c in known)}" if known else ""
    return f"in collection {collection!r}{source}{has}"


JSON_TOO = {"prov-json": ".json"}
"""A format that may also be written to a ``.json`` file when ``--format`` names it (that suffix alone
still means ``show``'s JSON, ``export``'s JSON-LD)."""


def cmd_show(args: argparse.Namespace) -> int:
    fmt = resolve_format(args.format, args.output, {f.suffix: f.name for f in TRACE_FORMATS.values()},
                         next(iter(TRACE_FORMATS)), JSON_TOO)
    ref = check_iri(args.iri, trace_id=True)
    jaeger = option(args, settings.JAEGER_URL)  # a bad value is an error before the store is read
    with Reading(args) as store:
        try:
            trace, triples = TraceReader(store).trace(ref)
        except TraceNotFound as exc:
            raise CliError(str(exc)) from exc
    resolver = Resolver(blob_store(args)) if args.inline else None
    if resolver is not None:
        triples = inlined_triples(triples, resolver)
        trace = build_trace(trace.id, triples)
    shown = Shown(trace, triples, jaeger)
    write(render_trace(fmt, shown), args.output)
    note = TRACE_FORMATS[fmt].note
    _say_left_out(note(shown) if note is not None else None)
    if resolver is not None and resolver.problems:
        for line in resolver.said():
            print(f"{PROG} show: {line}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _say_left_out(line: str | None) -> None:
    """The one line a format says on stderr of what it left out (PROV-N: what is not valid PROV)."""
    if line:
        print(f"{PROG}: {line}", file=sys.stderr)


# -- explain ----------------------------------------------------------------------------------------


EXPLAIN_SUFFIXES = {".txt": "text", ".json": "json", ".dot": "dot", ".gv": "dot", ".svg": "svg"}


def cmd_explain(args: argparse.Namespace) -> int:
    fmt = resolve_format(args.format, args.output, EXPLAIN_SUFFIXES, "text")
    ref = check_iri(args.iri, trace_id=True)
    with Reading(args) as store:
        try:
            trace, triples = TraceReader(store).trace(ref)
        except TraceNotFound as exc:
            raise CliError(str(exc)) from exc
    lineage = Lineage(trace, triples)
    if ref in lineage.nodes and ref != trace.id:
        start: str | None = ref
    else:  # a session: backward from its answer, forward from its Question
        start = trace.id if args.forward else lineage.answer_of(trace.id)
    if start is None:
        start = trace.id
        print(f"{PROG}: {trace.id} has no answer recorded (unfinished or failed): its Question is "
              "explained; give a step's IRI to explain that step", file=sys.stderr)
    root = lineage.tree(start, forward=args.forward, depth=args.depth)
    what = "what it went on to influence" if args.forward else "what it derives from"
    heading = f"{root.kind} {start} of session {trace.id}: {what}"
    write(render_lineage(fmt, lineage, root, forward=args.forward, heading=heading), args.output)
    return 0


# -- diff -------------------------------------------------------------------------------------------


DIFF_SUFFIXES = {".txt": "text", ".json": "json"}
"""``diff --output``'s suffixes, and the format each means when ``--format`` is not given."""
EXIT_DIFFERENT = 1
"""``diff``'s exit status when the sessions differ (0: identical; 2: trouble), as ``diff(1)``'s."""


class DiffTrouble(CliError):
    """What keeps ``diff`` from comparing (a session or a store not found, an output not written):
    exit status 2, as ``diff(1)``'s trouble, never 1 (which says the sessions differ)."""

    status = EXIT_USAGE


def cmd_diff(args: argparse.Namespace) -> int:
    try:
        fmt = resolve_format(args.format, args.output, DIFF_SUFFIXES, next(iter(DIFF_FORMATS)))
        refs = [check_iri(ref, trace_id=True) for ref in (args.a, args.b)]
        traces: list[Trace] = []
        with Reading(args) as store:
            reader = TraceReader(store)
            for side, ref in zip("AB", refs, strict=True):
                try:
                    traces.append(reader.trace(ref)[0])
                except TraceNotFound as exc:
                    raise CliError(f"{side}: {exc}") from exc
    except (CliError, ProvError) as exc:
        raise DiffTrouble(str(exc)) from exc
    found = diff(*traces)
    status = EXIT_OK if found.identical else EXIT_DIFFERENT
    try:
        write(DIFF_FORMATS[fmt](found), args.output)
    except BrokenPipeError:  # `otel-prov diff A B | head`: the status still says what was found
        silence_stdout()
    except CliError as exc:
        raise DiffTrouble(str(exc)) from exc
    except OSError as exc:
        raise DiffTrouble(f"{exc.strerror or exc} (the output)") from exc
    return status


# -- export -----------------------------------------------------------------------------------------


def _session_quads(store: ReadStore, iris: Iterable[str]) -> list[QuadTerms]:
    reader = TraceReader(store)
    try:
        questions = list(dict.fromkeys(reader.question_of(iri) for iri in iris))
    except TraceNotFound as exc:
        raise CliError(str(exc)) from exc
    return session_quads(reader, questions)


EXPORT_SUFFIXES = {f".{rdf_format.file_extension}": name for name, rdf_format in rdf.EXPORT_FORMATS.items()}
EXPORT_SUFFIXES[".json"] = "jsonld"  # JSON-LD is the JSON of RDF (PROV-JSON: --format prov-json)
EXPORT_SUFFIXES |= {TRACE_FORMATS[name].suffix: name for name in PROV_FORMATS}
"""``export --output``'s suffixes, and the format each means when ``--format`` is not given."""


def export_format(args: argparse.Namespace) -> str:
    """``--format``, else the format ``--output``'s suffix names (``.ttl``, ``.trig``, ``.nq``,
    ``.jsonld``, ``.json``, ``.provn``, ``.provjson``), else Turtle; a contradiction between the two is a
    usage error."""
    return resolve_format(args.format, args.output, EXPORT_SUFFIXES, EXPORT_FORMATS[0], JSON_TOO)


def cmd_export(args: argparse.Namespace) -> int:
    collection = option(args, settings.COLLECTION)
    fmt = export_format(args)
    items: Iterable[QuadTerms]
    with Reading(args) as store:
        if args.session:
            quads = _session_quads(store, [check_iri(s, trace_id=True) for s in args.session])
            total, items = len(quads), quads
        elif collection is not None:
            reader = TraceReader(store)
            ids = [row.id for row in reader.sessions(collection=collection)]
            if not ids:
                print(f"{PROG}: nothing exported: no session is {_in_collection(args, reader, collection)}",
                      file=sys.stderr)
            quads = _session_quads(store, ids)
            total, items = len(quads), quads
        else:
            total, items = store.count(GRAPH_RETRIEVAL), store.quads(GRAPH_RETRIEVAL)
        resolver = None
        if args.inline:
            refs = references(store)
            if refs:
                resolver = Resolver(blob_store(args))
                items = inlined(items, refs, resolver)
        stream = Progress(total).wrap(items)
        if args.output is None or args.output == "-":
            left_out = write_export(stream, fmt, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            try:
                with open(args.output, "wb") as handle:
                    left_out = write_export(stream, fmt, handle)
            except OSError as exc:
                raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from exc
    _say_left_out(left_out)
    if resolver is not None and resolver.problems:
        for line in resolver.said():
            print(f"{PROG} export: {line}", file=sys.stderr)
        return EXIT_FAILED
    return 0


# -- query ------------------------------------------------------------------------------------------


def _read_query(args: argparse.Namespace) -> str:
    if getattr(args, "pack", None) is not None:
        if args.file is not None or args.sparql is not None:
            raise UsageError("give a query, --file or --pack, one of the three")
        try:
            return packs.find(args.pack).text
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
    if args.file is not None:
        if args.sparql is not None:
            raise UsageError("give the query as an argument or with --file, not both")
        if args.file == "-":
            return sys.stdin.read()
        try:
            with open(args.file, encoding="utf-8") as handle:
                return handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise CliError(f"cannot read {args.file}: {reason}") from exc
    if args.sparql is None:
        raise UsageError("no query: give it as an argument, or with --file FILE ('-' for stdin)")
    return str(args.sparql)


DEFAULT_QUERY_TIMEOUT = 60.0
"""Seconds ``query`` runs before giving up (``--timeout``)."""


QUERY_SUFFIXES = {".json": "json", ".csv": "csv"}
"""``query --output``'s suffixes, and the format each means when ``--format`` is not given."""


def cmd_query(args: argparse.Namespace) -> int:
    if getattr(args, "pack", None) == "list":
        for query in packs.queries():
            print(f"{query.name}\n  {query.title}: {query.asks}\n  from: {query.source}")
        return 0
    fmt = resolve_format(args.format, args.output, QUERY_SUFFIXES, "table")
    text = _read_query(args)
    try:
        check_query(text, allow_service=args.allow_service)
    except QueryRefused as exc:  # the query argument's value is refused: a usage error
        raise UsageError(str(exc)) from None
    with Reading(args) as store:
        try:
            result = run_with_timeout(lambda: run_query(store, text), args.timeout)
        except SyntaxError as exc:
            raise CliError(syntax_message(text, str(exc))) from None
        except StoreError as exc:
            raise CliError(str(exc)) from exc
    write(render_result(result, fmt), args.output)
    return 0


def _without_frames(exc: BaseException) -> BaseException:
    """``exc`` (and the exceptions it was raised from) without tracebacks: their frames hold the
    store's query results, which must be dropped on the thread that made them."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if current.__traceback__ is not None:
            traceback.clear_frames(current.__traceback__)
            current.__traceback__ = None
        current = current.__cause__ or current.__context__
    return exc


def run_with_timeout(work: Callable[[], T], timeout: float) -> T:
    """``work()`` on a daemon thread, while this (main) thread waits: Ctrl-C interrupts at once
    (KeyboardInterrupt here), and after ``timeout`` seconds a :class:`CliError`.  The store's
    query engine releases the GIL, so the wait is not held up by it; a query left running ends
    with the process."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # handed to the waiting thread, without this thread's frames
            outcome.append((False, _without_frames(exc)))

    worker = threading.Thread(target=run, name="otel-prov-query", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise CliError(f"the query did not finish within {timeout:g} s (--timeout)")
    ok, value = outcome[0]
    if not ok:
        raise value
    return cast(T, value)


def cmd_check(args: argparse.Namespace) -> int:
    """The on-disk store's state: its index and its log; ``--repair`` writes a lost ``CURRENT``."""
    spec = parse_store(args.store_path) if args.store_path else option(args, settings.STORE)
    health = check_store(spec, repair=args.repair)
    lines = [f"store: {spec}"]
    if health.repaired:
        lines.append(f"repaired: {health.repaired}")
    if args.rebuild:
        if not health.ok:
            raise CliError(f"{spec}: not rebuilt, the store has problems ('{PROG} check' says which)")
        if spec.path is not None:
            mark_stale(spec.path)  # the session index's rows: built again as the log is folded, below
        if not settle(spec, timeout=0, compact=True):
            raise CliError(f"{spec}: another process indexes this store (serve?); stop it, then rebuild")
        lines.append("rebuilt: the log folded, the index rebuilt from what it holds")
        health = check_store(spec)
    lines.append(f"index: {health.index}")
    lines.append(f"log: {health.segments} segment(s), {health.unfolded_bytes} bytes not folded yet"
                 + (" (any writer folds them)" if health.unfolded_bytes else ""))
    lines += [f"damaged: {line}" for line in health.damaged]
    lines += [f"set aside: {name} (kept, never read)" for name in health.set_aside]
    lines.append("ok" if health.ok else "problems found (see above); nothing was deleted")
    write("\n".join(lines) + "\n", None)
    return 0 if health.ok else 1
