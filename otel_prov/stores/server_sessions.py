"""The session index of a dataset on a SPARQL server: one row per top-level session (what ``otel-prov
list`` and the web view's list show of it, and what their filters test), kept as triples in a graph
of its own (:data:`GRAPH_SESSIONS`), so that a listing reads a few rows instead of the whole graph.
The rows are the embedded store's (:mod:`.sessions`: computed by :func:`~.sessions.compute` with the
read model's rules); only how they are kept up to date differs, for writers on many machines and no
lock between them:

- **Marks.** Every write names the sessions it touches: the quads a writer adds are followed, in the
  same request (after them), by a mark ``<key> row:dirty "stamp"`` for each session key of their
  subjects (:func:`~.sessions.session_key`), the stamp unique to the write.  A removal deletes the rows
  of the sessions it touches and marks them, in the same update.  So a session's row is either up to
  date or its session is marked: no writer can leave a row behind the data without a mark.
- **Rows.** A writer's background thread (:class:`RowKeeper`) computes the rows of the sessions it
  marked, then of any left marked (by a writer that stopped first), :data:`~.sessions.WRITER_BATCH` at a
  time, and stores them with one conditional update: the new rows in place of the old, and the marks it
  read removed, *only if every mark it read is still there*.  A mark is removed only by the update of
  rows computed after it was made: when another writer's newer rows got there first, the update
  changes nothing; a mark made while the rows were computed stays, and the session is computed again.
- **Building.** A writer that finds no index marks every top-level session (:data:`MARKS_PER_UPDATE`
  an update), then sets the ``built`` flag; the rows are then computed like any other.  Two writers
  building at once both mark every session: wasteful, not wrong (a mark is a mark).  Deleting the
  graph (``DROP GRAPH <urn:otel-prov:sessions>``) makes the next writer build it again: the way back
  after the dataset was changed by something else than otel-prov.
- **A reader** reads the marks, computes the marked sessions itself from the graph (at most
  :data:`~.sessions.READER_MOST`; with more, or no ``built`` flag, it lists from the graph) and lists
  them in the place of their rows, the others from the rows: filtered by the server, ordered by
  numbers (the newest hours first: :meth:`ServerListing._newest`), the page put together here.

The graph is the index's alone: exports, counts and a user's queries (:mod:`.sparql`) leave it out.
"""

from __future__ import annotations

import calendar
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from ..errors import StoreError
from ..model.terms import epoch_ns, integer, literal
from .base import ReadStore
from .sessions import (
    BATCH,
    COMPLETE,
    FAILED,
    READER_MOST,
    WRITER_BATCH,
    SessionEntry,
    SessionQuery,
    compute,
    keys_of,
    listed,
    questions_of,
)

logger = logging.getLogger(__name__)

GRAPH_SESSIONS = "urn:otel-prov:sessions"
"""The graph the rows and marks are kept in."""
ROW = "urn:otel-prov:row#"
"""The namespace of the rows' predicates (an index's, not a vocabulary: nothing else reads them)."""
_G = f"<{GRAPH_SESSIONS}>"
_DIRTY, _BUILT = f"<{ROW}dirty>", f"<{ROW}built>"
_SCALARS = {"flow": "flow", "sub_flow": "subFlow", "iri_flow": "iriFlow", "question": "question",
            "time": "time", "trace": "trace", "coll": "coll", "status": "status", "steps": "steps",
            "duration": "duration", "texts": "texts"}
_SORT_KEYS = {"duration": "byDuration", "steps": "bySteps", "status": "status"}
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_NAMES = {"agents": "agent", "services": "service", "tools": "tool", "models": "model"}
_FIELDS = {ROW + name: attr for attr, name in {**_SCALARS, **_NAMES}.items()}
MARKS_PER_UPDATE = 5000
"""Marks in one update while the index is built."""
HOUR_MOST = 5000
"""Rows a listing by time reads of its newest hours at most; past that the server sorts every row."""
HOURS_MOST = 4
"""The most hours a listing by time reads in one query (after the newest hour's)."""
TEXT_MOST = 2000
"""Rows a text filter's scan returns whole (:meth:`ServerListing._matching`); past that the server
counts and sorts them."""
IDLE_SWEEP = 5.0
"""Seconds between two looks of an idle writer for marks other writers left."""
LEFT_AFTER = 30.0
"""Seconds after which an idle writer takes another writer's mark as left (its writer stopped, or is
far behind): younger ones are their writers' to compute.  Two writers computing the same sessions
halved the ingest of two ``serve`` receivers (bench_remote.py)."""


class _Store(ReadStore, Protocol):
    def update(self, sparql: str, what: str) -> None: ...


# -- what writers add ------------------------------------------------------------------------------


def marks(payload: bytes, stamp: str) -> tuple[bytes, set[str]]:
    """The marks of the sessions an N-Quads text's subjects are of (N-Quads lines), and their keys."""
    keys = keys_of([payload])
    stamp_term = literal(stamp)
    return "".join(f"<{key}> {_DIRTY} {stamp_term} {_G} .\n" for key in sorted(keys)).encode(), keys


def erasing(keys: Iterable[str], stamp: str) -> str:
    """What a removal's update adds: the rows of the sessions ``keys`` are of deleted, and marks."""
    keys = sorted(keys)
    if not keys:
        return ""
    values = " ".join(f"<{k}>" for k in keys)
    stamp_term = literal(stamp)
    return (f";\nDELETE {{ GRAPH {_G} {{ ?k ?p ?o }} }} WHERE {{ GRAPH {_G} {{ VALUES ?k {{ {values} }} "
            f"?k ?p ?o FILTER(?p != {_DIRTY}) }} }};\n"
            # a collection no row is of any more leaves the registry (its name erased with it)
            f"DELETE {{ GRAPH {_G} {{ {_G} <{ROW}hasColl> ?c }} }} WHERE {{ GRAPH {_G} {{ "
            f"{_G} <{ROW}hasColl> ?c FILTER NOT EXISTS {{ ?q <{ROW}coll> ?c }} }} }};\n"
            f"INSERT DATA {{ GRAPH {_G} {{ " + " ".join(f"<{k}> {_DIRTY} {stamp_term} ." for k in keys)
            + " } }")


def new_stamp() -> str:
    """A write's stamp: ``t``, its time (nanoseconds, 20 digits: the texts sort as the times), and a
    UUID."""
    return f"t{time.time_ns():020d}-{uuid.uuid4().hex}"


def _before(ns: int) -> str:
    """The filter of marks made before ``ns`` (a mark of an index build, or of no time, at any time)."""
    return f'FILTER(!STRSTARTS(?s, "t") || ?s < "t{ns:020d}")'



# -- computing rows (a writer) ---------------------------------------------------------------------


def built(store: ReadStore) -> bool:
    return store.ask(f"ASK {{ GRAPH {_G} {{ {_G} {_BUILT} ?v }} }}")


def build(store: _Store) -> bool:
    """Mark every top-level session and set the ``built`` flag, unless another writer did: whether
    this one did."""
    if built(store):
        return False
    questions = [row["q"] for row in listed(store)]
    stamp = literal("build-" + new_stamp())
    for start in range(0, len(questions), MARKS_PER_UPDATE):
        part = questions[start:start + MARKS_PER_UPDATE]
        triples = " ".join(f"<{q}> {_DIRTY} {stamp} ." for q in part)
        store.update(f"INSERT DATA {{ GRAPH {_G} {{ {triples} }} }}", "building the session index")
    if built(store):
        return False
    store.update(f'INSERT DATA {{ GRAPH {_G} {{ {_G} {_BUILT} "1" }} }}', "building the session index")
    logger.info("otel-prov: the session index of %s is being built (%d sessions)", store, len(questions))
    return True


def marked(store: ReadStore, keys: Sequence[str] | None = None,
           most: int = WRITER_BATCH, before: int | None = None) -> dict[str, set[str]]:
    """Key -> its marks' stamps, of ``keys`` (None: any marked, at most ``most`` keys; ``before``: with
    a mark made before that time, in nanoseconds)."""
    only = "" if keys is None else "VALUES ?k { " + " ".join(f"<{k}>" for k in keys) + " } "
    found: dict[str, set[str]] = {}
    page = "" if keys is not None else f" LIMIT {int(most) * 4}"
    old = "" if before is None else _before(before)
    for row in store.select(f"SELECT ?k ?s WHERE {{ GRAPH {_G} {{ {only}?k {_DIRTY} ?s {old} }} }}{page}"):
        key = row["k"].value
        if key in found or len(found) < most or keys is not None:
            found.setdefault(key, set()).add(row["s"].value)
    return found


def sweep(store: _Store, keys: Sequence[str] | None = None, left_after: float | None = None) -> int:
    """Compute and store the rows of the sessions marked (of ``keys``; None: any, or with
    ``left_after``, any with a mark older than that many seconds), one batch: how many keys' marks
    were read (0: none left)."""
    before = None if left_after is None else time.time_ns() - int(left_after * 1e9)
    found = marked(store, keys, before=before)
    if not found:
        return 0
    if before is not None:  # every mark of those sessions, the younger ones too: the rows replace them
        found = marked(store, sorted(found))
    part = sorted(found)
    questions = questions_of(store, part)
    rows = compute(store, questions)
    subjects = sorted(set(part) | set(questions))
    read = [(k, s) for k in part for s in sorted(found[k])]
    marks_read = " ".join(f"<{k}> {_DIRTY} {literal(s)} ." for k, s in read)
    values = " ".join(f"<{q}>" for q in subjects)
    # One request, three operations, each only if every mark read is still there: the old rows
    # deleted, the new inserted, the marks read deleted.  Not one DELETE/INSERT: its INSERT template,
    # all constants, is made again for each old row's triple (a thousand times the rows of 50
    # sessions), which cost an Oxigraph server 26 s where this takes a few ms.
    still = f"GRAPH {_G} {{ {marks_read} }}"
    store.update(f"""DELETE {{ GRAPH {_G} {{ ?r ?rp ?ro }} }}
WHERE {{ {still} GRAPH {_G} {{ VALUES ?r {{ {values} }} ?r ?rp ?ro FILTER(?rp != {_DIRTY}) }} }} ;
INSERT {{ GRAPH {_G} {{ {" ".join(row_triples(row) for row in rows)} }} }} WHERE {{ {still} }} ;
DELETE {{ GRAPH {_G} {{ {marks_read} }} }} WHERE {{ {still} }}""", "keeping the session index")
    return len(part)


def row_triples(row: SessionEntry) -> str:
    out = []
    for attr, name in _SCALARS.items():
        value = getattr(row, attr)
        if value is None:
            continue
        if attr in ("status", "steps"):
            term = integer(value)
        elif attr == "duration":
            term = _double(value)
        else:
            term = literal(str(value))
        out.append(f"<{ROW}{name}> {term}")
    for attr, name in _NAMES.items():
        out += [f"<{ROW}{name}> {literal(value)}" for value in getattr(row, attr)]
    ts = order_key(row)
    out += [f"<{ROW}ts> {integer(ts)}", f"<{ROW}hour> {integer(hour_of(ts))}",
            # the sort keys, on every row: numbers sort fast
            f"<{ROW}bySteps> {integer(row.steps if row.steps is not None else -1)}",
            f"<{ROW}byDuration> {_double(row.duration if row.duration is not None else -1.0)}"]
    registry = f" . {_G} <{ROW}hasHour> {integer(hour_of(ts))}"
    if row.coll is not None:
        registry += f" ; <{ROW}hasColl> {literal(row.coll)}"
    return f"<{row.q}> " + " ; ".join(out) + registry + " ."


def hour_of(ts: int) -> int:
    """The hour a row is listed in (hours since the epoch; -1 without a time)."""
    return ts // 3_600_000_000_000 if ts >= 0 else -1


def _tied(ts: Any) -> str:
    """A pattern of the rows whose order key is ``ts`` (a result's term)."""
    return f"VALUES ?ts {{ {_typed(ts)} }} ?q <{ROW}ts> ?ts ."


def _typed(term: Any) -> str:
    """A number read back, as a literal of its datatype."""
    return f'"{term.value}"^^<{term.datatype or "http://www.w3.org/2001/XMLSchema#integer"}>'


def _double(value: float) -> str:
    return f'"{float(value)!r}"^^<http://www.w3.org/2001/XMLSchema#double>'


def order_key(row: SessionEntry) -> int:
    """A row's place in a listing by time: its time in nanoseconds (-1 without one: listed last,
    as an unbound time is).  A number, not the time's text: an Oxigraph server sorts 16,400 rows by
    an integer in 6 ms, by a text in 380 ms."""
    ns = epoch_ns(row.time)
    return -1 if ns is None else ns


def _day(bound: str | None, days: int) -> int | None:
    """Nanoseconds ``days`` days from the start of the day a time range's bound names (None: no
    whole date in it): a margin wide enough for any time zone, the exact test being the text's."""
    if not bound or not _DATE.match(bound):
        return None
    year, month, day = int(bound[:4]), int(bound[5:7]), int(bound[8:10])
    try:
        start = calendar.timegm((year, month, day, 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    return (start + days * 86_400) * 1_000_000_000


class RowKeeper:
    """A writer's thread computing rows: of the sessions it marked (:meth:`noted`), and, when idle,
    of those other writers left marked (the index built first when there is none).  It has its own
    connection (``connect``); a failure is logged and tried again later (the marks stay: readers
    compute the marked sessions themselves)."""

    def __init__(self, connect: Callable[[], Any], name: str) -> None:
        self._connect = connect
        self._name = name
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed_at = 0.0

    def noted(self, keys: Iterable[str]) -> None:
        with self._lock:
            self._pending.update(keys)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="otel-prov-session-rows", daemon=True)
                self._thread.start()
        self._wake.set()

    def start(self) -> None:
        """Start without a write (the idle sweep and the build)."""
        self.noted(())

    def close(self, timeout: float = 5.0) -> None:
        """Stop, once the rows of the sessions this writer marked are stored (waited for ``timeout``
        seconds at most; a thread still at work then ends by itself, and a mark left is computed by
        the next writer, and meanwhile by readers).  A thread that never had work never connects."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        store = None
        last_idle = 0.0
        try:
            while True:
                if not self._stop.is_set():
                    self._wake.wait(IDLE_SWEEP)
                self._wake.clear()
                try:
                    while True:
                        with self._lock:
                            own = sorted(self._pending)[:WRITER_BATCH]
                            self._pending.difference_update(own)
                        if own:  # also once stopped: what this writer marked, it computes
                            store = store or self._connect()
                            sweep(store, own)
                            continue
                        if self._stop.is_set() or time.monotonic() - last_idle < IDLE_SWEEP:
                            break
                        store = store or self._connect()
                        build(store)
                        if not sweep(store, left_after=LEFT_AFTER):
                            last_idle = time.monotonic()
                            break
                except (StoreError, OSError) as exc:
                    if time.monotonic() - self._failed_at > 60:
                        logger.warning("otel-prov: the session index of %s is not kept up to date (%s); "
                                       "listings compute what is marked from the graph", self._name, exc)
                    self._failed_at = time.monotonic()
                    if self._stop.wait(1.0):
                        return  # stopped: what is left stays marked
                if self._stop.is_set():
                    with self._lock:
                        if not self._pending:
                            return
        finally:
            if store is not None:
                store.close()


# -- listing (a reader) ----------------------------------------------------------------------------


class ServerListing:
    """A reader's listing from the rows on the server, the marked sessions computed by the reader and
    listed in their place (the interface of :class:`~.sessions.Listing`)."""

    def __init__(self, store: ReadStore, fresh: Sequence[SessionEntry], hidden: Iterable[str]) -> None:
        self.store = store
        self.fresh = list(fresh)
        self.hidden = sorted(set(hidden))
        self._counts: dict[SessionQuery, int] = {}
        """Counts read, by query (a page asks for the same one more than once)."""
        self._texts: dict[SessionQuery, list[tuple[int, str]] | None] = {}
        """A text filter's rows, by query (:meth:`_matching`)."""
        self._stamp: str | None = None

    @classmethod
    def open(cls, store: ReadStore) -> ServerListing | None:
        try:
            if not built(store):
                return None
            keys = sorted(marked(store, most=READER_MOST + 1))
            if len(keys) > READER_MOST:
                logger.info("otel-prov: more than %d sessions of %s are not in its session index yet (its "
                            "writers compute them); listed from the graph", READER_MOST, store)
                return None
            questions = questions_of(store, keys) if keys else []
            fresh = [row for start in range(0, len(questions), BATCH)
                     for row in compute(store, questions[start:start + BATCH])]
        except StoreError as exc:
            logger.warning("otel-prov: the session index of %s is not used (%s); listed from the graph",
                           store, exc)
            return None
        return cls(store, fresh, set(keys) | set(questions))

    def close(self) -> None:
        pass

    def _hidden(self) -> str:
        """The filter that leaves out the rows of the sessions listed in their place."""
        return ("FILTER(?q NOT IN (" + ", ".join(f"<{q}>" for q in self.hidden) + "))") if self.hidden else ""

    def _pattern(self, query: SessionQuery, lead: str = "", *, ordered: bool = True) -> str:
        """The rows ``query`` keeps, as ``?q`` (and, ``ordered``, its order key ``?ts``: every row has
        one), ``lead`` (a pattern binding ``?q`` to a few rows) read first.

        An Oxigraph server joins in the order written, each row of the first pattern looked up in the
        next: so a text filter alone comes first (a scan of the texts in the index's order: 0.25 s
        for 164,000 rows of 316 characters), and after any equality filter, which binds fewer rows
        (looking 164,000 rows' texts up one by one took 2.3 s)."""
        equal = []
        if query.collection is not None:
            equal.append(f"?q <{ROW}coll> {literal(query.collection)} .")
        if query.status is not None:
            equal.append(f"?q <{ROW}status> {integer(query.status)} .")
        for name, value in (("tool", query.tool), ("model", query.model), ("agent", query.agent),
                            ("service", query.service)):
            if value:
                equal.append(f"?q <{ROW}{name}> {literal(value)} .")
        text = (f"?q <{ROW}texts> ?texts FILTER(CONTAINS(?texts, {literal(query.text.lower())}))"
                if query.text else "")
        tests = [lead] if lead else []
        if text and not lead and not equal:
            tests.append(text)
            text = ""
        tests += equal
        timed = bool(query.since or query.until)
        if ordered or timed or not tests:
            tests.append(f"?q <{ROW}ts> ?ts .")
        if query.flow is not None:
            flow = literal(query.flow)
            tests.append(f"FILTER(EXISTS {{ ?q <{ROW}subFlow> {flow} }} "
                         f"|| EXISTS {{ ?q <{ROW}iriFlow> {flow} }})")
        if timed:  # the order key first (a number), then the text as SQLite tests it
            low, high = _day(query.since, -1), _day(query.until, 2)
            near = [test for test in (low and f"?ts >= {low}", high and f"?ts < {high}") if test]
            if near:
                tests.append(f"FILTER({' && '.join(near)})")
            tests.append(f"?q <{ROW}time> ?time .")
        if query.since:
            tests.append(f"FILTER(?time >= {literal(query.since)})")
        if query.until:
            tests.append(f"FILTER(SUBSTR(?time, 1, {len(query.until)}) <= {literal(query.until)})")
        if text:
            tests.append(text)
        tests.append(self._hidden())
        return f"GRAPH {_G} {{ " + "\n".join(tests) + " }"

    def select(self, query: SessionQuery, limit: int | None = None, offset: int = 0) -> list[SessionEntry]:
        """The page of rows, in a listing's order: with a text filter that few rows pass, from the one
        read of them (:meth:`_matching`); the newest first read hour by hour (:meth:`_newest`),
        other orders by the server, by numbers only (the sort key, the time's), the rows tied with
        the page's last read too; all put in order here, the session IRI last (an Oxigraph server
        orders 16,400 rows by two numbers in a few ms, by the IRI's text in 180 ms)."""
        most = None if limit is None else int(limit) + int(offset)
        key = _SORT_KEYS.get(query.sort)
        few = self._matching(query) if key is None and query.text else None
        if few is not None:  # every row that passes: the newest (the rows tied with the last too)
            ids = [q for ts, q in few if most is None or ts >= few[min(most, len(few)) - 1][0]]
        else:
            ids = self._newest(query, most) if key is None and most is not None else []
        if not ids and few is None:
            first = f"GRAPH {_G} {{ ?q <{ROW}{key}> ?by }}" if key else "BIND(0 AS ?by)"
            order = ("ASC(?by) " if query.sort == "status" else "DESC(?by) " if key else "") + "DESC(?ts)"
            found = self.store.select(f"SELECT ?q ?by ?ts WHERE {{ {self._pattern(query)} {first} }} "
                                      f"ORDER BY {order}" + ("" if most is None else f" LIMIT {most}"))
            ids = [row["q"].value for row in found]
            if most is not None and len(found) == most:  # the rows tied with the last one read
                last = found[-1]
                ids += [row["q"].value for row in self.store.select(
                    f"SELECT ?q WHERE {{ {self._pattern(query, _tied(last['ts']), ordered=False)} {first} "
                    f"FILTER(?by = {_typed(last['by'])}) }}")]
        rows = self._rows(sorted(set(ids))) + [row for row in self.fresh if matches(row, query)]
        ordered = in_order(rows, query.sort)
        return ordered[offset:] if limit is None else ordered[offset:offset + limit]

    def _matching(self, query: SessionQuery) -> list[tuple[int, str]] | None:
        """With a text filter, which scans every row's texts whatever else is asked: every row
        ``query`` keeps, as (order key, IRI), when at most :data:`TEXT_MOST` do, read in one scan the
        server sorts nothing of; None when more do.  Read once per listing, for both its page and its
        count (a list page counts first, the API and ``list`` after)."""
        query = replace(query, sort="time")
        if query not in self._texts:
            found = self.store.select(f"SELECT ?q ?ts WHERE {{ {self._pattern(query)} }} "
                                      f"LIMIT {TEXT_MOST + 1}")
            self._texts[query] = (None if len(found) > TEXT_MOST else
                                  sorted(((int(row["ts"].value), row["q"].value) for row in found),
                                         reverse=True))
        return self._texts[query]

    def _newest(self, query: SessionQuery, most: int) -> list[str]:
        """The ``most`` newest rows ``query`` keeps, read from the newest hours (each row's hour, and
        the hours rows were written for, are numbers the server finds by its index): the newest hour,
        then the 4 before, until ``most`` are found.  Every row of an hour read is read, so the newest
        ``most`` (and the rows tied with them) are among them.  Sorting every row costs an Oxigraph
        server 210 ms at 164,000 rows; this, a few ms.  Empty (the server then sorts what passes the
        filters) when the 5 newest hours hold fewer (a filter few rows pass: sorting those is
        quick) or more than :data:`HOUR_MOST` rows (a bulk load)."""
        hours = sorted((int(row["h"].value) for row in self.store.select(
            f"SELECT ?h WHERE {{ GRAPH {_G} {{ {_G} <{ROW}hasHour> ?h }} }}")), reverse=True)
        low, high = _day(query.since, -1), _day(query.until, 2)
        if low is not None or high is not None:  # only the hours of the range (none untimed)
            hours = [h for h in hours if h >= 0 and (low is None or h >= hour_of(low))
                     and (high is None or h <= hour_of(high))]
        found: list[tuple[int, str]] = []
        start, size = 0, 1
        while start < len(hours) and len(found) < most:
            if size > HOURS_MOST:  # a filter few rows pass: the server's sort of what passes is faster
                return []
            part = " ".join(integer(h) for h in hours[start:start + size])
            lead = f"VALUES ?h {{ {part} }} ?q <{ROW}hour> ?h ."
            rows = self.store.select(f"SELECT ?q ?ts WHERE {{ {self._pattern(query, lead)} }} "
                                     f"LIMIT {HOUR_MOST + 1}")
            if len(rows) > HOUR_MOST:  # hours too full to read whole: the server sorts them all
                return []
            found += [(int(row["ts"].value), row["q"].value) for row in rows]
            start, size = start + size, size * 4
        found.sort(reverse=True)  # the time, then the IRI, both descending: the listing's order
        return [q for _, q in found[:most]]

    def _rows(self, ids: Sequence[str]) -> list[SessionEntry]:
        if not ids:
            return []
        values = " ".join(f"<{q}>" for q in ids)
        found: dict[str, dict[str, Any]] = {q: {} for q in ids}
        for row in self.store.select(f"""SELECT ?q ?p ?o WHERE {{ GRAPH {_G} {{ VALUES ?q {{ {values} }}
  ?q ?p ?o FILTER(?p != <{ROW}texts> && ?p != {_DIRTY}) }} }}"""):
            attr = _FIELDS.get(row["p"].value)
            if attr is None:
                continue
            value = row["o"].value
            if attr in _NAMES:
                found[row["q"].value].setdefault(attr, []).append(value)
            else:
                found[row["q"].value][attr] = value
        out = []
        for q in ids:
            v = found[q]
            out.append(SessionEntry(
                q, v.get("flow", ""), v.get("sub_flow"), v.get("iri_flow"), v.get("question", ""),
                v.get("time"), v.get("trace"), v.get("coll"), int(v.get("status", FAILED)),
                int(v["steps"]) if "steps" in v else None, float(v["duration"]) if "duration" in v else None,
                agents=sorted(v.get("agents", [])), services=sorted(v.get("services", [])),
                tools=sorted(v.get("tools", [])), models=sorted(v.get("models", []))))
        return out

    def count(self, query: SessionQuery) -> int:
        if query.sort != "time":
            query = replace(query, sort="time")  # the same count: one query for both
        if query == SessionQuery() and self._stamp is not None:  # every session: the stamp's count
            return int(self._stamp.split("-")[0])  # (read first by a page that reads both)
        few = self._matching(query) if query.text and query not in self._counts else None
        if few is not None:
            self._counts[query] = len(few) + sum(1 for row in self.fresh if matches(row, query))
        if query not in self._counts:
            rows = self.store.select(
                f"SELECT (COUNT(?q) AS ?n) WHERE {{ {self._pattern(query, ordered=False)} }}")
            self._counts[query] = ((int(rows[0]["n"].value) if rows else 0)
                                   + sum(1 for row in self.fresh if matches(row, query)))
        return self._counts[query]

    def stamp(self) -> str:
        """How many sessions, complete and failed: one query (each row read once), once."""
        if self._stamp is None:
            self._stamp = self._read_stamp()
        return self._stamp

    def _read_stamp(self) -> str:
        rows = self.store.select(f"""SELECT (COUNT(?q) AS ?n)
  (SUM(IF(?status = {COMPLETE}, 1, 0)) AS ?complete) (SUM(IF(?status = {FAILED}, 1, 0)) AS ?failed)
  WHERE {{ GRAPH {_G} {{ ?q <{ROW}status> ?status {self._hidden()} }} }}""")
        counts = [int(rows[0][name].value) if rows and name in rows[0] else 0
                  for name in ("n", "complete", "failed")]
        for row in self.fresh:
            counts[0] += 1
            counts[1] += row.status == COMPLETE
            counts[2] += row.status == FAILED
        return "-".join(map(str, counts))

    def collections(self) -> list[str]:
        """The collections of the rows (each looked up in the registry rows add their collection
        to, as they do their hour: reading every row's cost an Oxigraph server 38 ms at 164,000)
        and of the fresh rows."""
        hidden = self._hidden()
        found = {row["c"].value for row in self.store.select(
            f"SELECT ?c WHERE {{ GRAPH {_G} {{ {_G} <{ROW}hasColl> ?c "
            f"FILTER EXISTS {{ ?q <{ROW}coll> ?c {hidden} }} }} }}")}
        return sorted(found | {row.coll for row in self.fresh if row.coll is not None})


def matches(row: SessionEntry, query: SessionQuery) -> bool:
    """Whether ``row`` passes ``query``'s filters (as the server's query tests them)."""
    if query.flow is not None and query.flow not in (row.sub_flow, row.iri_flow):
        return False
    if query.collection is not None and row.coll != query.collection:
        return False
    if query.status is not None and row.status != query.status:
        return False
    if query.text and query.text.lower() not in row.texts:
        return False
    for names, value in ((row.tools, query.tool), (row.models, query.model), (row.agents, query.agent),
                         (row.services, query.service)):
        if value and value not in names:
            return False
    if query.since and (row.time is None or row.time < query.since):
        return False
    return not (query.until and (row.time is None or row.time[:len(query.until)] > query.until))


def in_order(rows: list[SessionEntry], sort: str) -> list[SessionEntry]:
    """``rows`` in a listing's order, as the server's query orders them (stable sorts, the last key
    first)."""
    rows = sorted(rows, key=lambda r: r.q, reverse=True)
    rows.sort(key=order_key, reverse=True)
    if sort == "duration":
        rows.sort(key=lambda r: r.duration if r.duration is not None else -1, reverse=True)
    elif sort == "steps":
        rows.sort(key=lambda r: r.steps if r.steps is not None else -1, reverse=True)
    elif sort == "status":
        rows.sort(key=lambda r: r.status)
    return rows
