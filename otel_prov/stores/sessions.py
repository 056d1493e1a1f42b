"""The session index of an on-disk store: one row per top-level session (what ``otel-prov list``
and the web view's list show of it, and what their filters test), in SQLite beside the index
(``STORE/sessions/index.sqlite``), so that a listing reads a few rows instead of the whole graph.

Who keeps it, and why it is exact:

- **The fold** (:mod:`.indexer`) notes which sessions each round touched: the subjects of the quads it
  added or removed, each reduced to its session's key (:func:`session_key`: the Question IRI its IRI
  pattern names, else the IRI itself), under a sequence number one higher than the last.  This is
  written after the round is applied to the index and flushed, and before its checkpoint.
- **A reader** (``otel-prov list``, the web view: :mod:`otel_prov.read.sessions`) reads the sequence
  number *before* it opens its snapshot of the index (:attr:`SessionLabel.seq`), so the snapshot holds at
  least every round noted up to it.  It computes the rows of the sessions touched after the last
  time each was computed, from its snapshot, with the same queries as a listing without the index,
  and records them as computed at that number.  A round noted later (higher number) makes them due
  again; rows computed from a newer snapshot than their label are only computed once more.
- Nothing else writes the index behind the fold's back but a rebuild or a bulk load: an index with no
  session index (an older store, a benchmark's bulk load) or one marked stale (``check --rebuild``)
  is built whole by the next reader.

Erased text does not stay in the file: rows are deleted with ``secure_delete`` on (SQLite overwrites
the freed content).  This module only stores and selects rows: what a row holds is computed by
:mod:`otel_prov.read.sessions` (the read model's rules), never here.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..model.iris import (
    AGENT_PREFIX,
    DOC_RAG_PREFIX,
    EDGE_PREFIX,
    EXPLORATION_PREFIX,
    FOCUS_PREFIX,
    GRAPH_RAG_PREFIX,
    SYNTHESIS_PREFIX,
)

logger = logging.getLogger(__name__)

DIRECTORY = "sessions"
"""The session index's directory inside a store's directory."""
FILENAME = "index.sqlite"
LOCK = "compute.lock"
"""Held (``flock``) by the process computing rows."""
VERSION = 1
"""The layout of the tables; another version is rebuilt (a newer otel-prov's is refused)."""
BUSY_TIMEOUT = 10.0
"""Seconds a connection waits for another process's write transaction."""

_QUESTIONS = (AGENT_PREFIX, DOC_RAG_PREFIX, GRAPH_RAG_PREFIX)
_GRAPH_RAG_STEPS = (EXPLORATION_PREFIX, FOCUS_PREFIX, SYNTHESIS_PREFIX)
_SHARED = ("urn:otel-prov:agent:", "urn:otel-prov:model:", "urn:otel-prov:person:", "urn:otel-prov:role:",
           "urn:otel-prov:seal:")
"""Nodes no single session owns (the strict profile's agents and models, people, roles, seals):
what is written of them changes no session's row."""
_SUBJECT = re.compile(rb"^<([^>\n]*)>", re.MULTILINE)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS touched (key TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    q TEXT PRIMARY KEY, type TEXT NOT NULL, sub_type TEXT, iri_type TEXT, question TEXT NOT NULL,
    time TEXT, trace TEXT, coll TEXT, status TEXT NOT NULL, steps INTEGER, duration REAL,
    agents TEXT NOT NULL, services TEXT NOT NULL, tools TEXT NOT NULL, models TEXT NOT NULL,
    texts TEXT NOT NULL,
    seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sessions_time ON sessions (time DESC, q DESC);
CREATE INDEX IF NOT EXISTS sessions_coll ON sessions (coll, time DESC);
CREATE INDEX IF NOT EXISTS sessions_trace ON sessions (trace);
"""
SEP = "\x1f"
"""Between the names of the ``tools`` and ``models`` columns (each also starts and ends with it)."""


def index_file(store: Path) -> Path:
    return store / DIRECTORY / FILENAME


def session_key(iri: str) -> str | None:
    """The key a node's session is noted under: the Question IRI its pattern names (an agent's or
    DocRAG's ``{question}/...``; a GraphRAG step's ``urn:trustgraph:prov:{step}:{uuid}``), else the
    IRI itself (resolved by the reader); None for nodes no session owns."""
    for prefix in _QUESTIONS:
        if iri.startswith(prefix):
            return prefix + iri[len(prefix):].split("/", 1)[0]
    for prefix in _GRAPH_RAG_STEPS:
        if iri.startswith(prefix):
            return GRAPH_RAG_PREFIX + iri[len(prefix):].split("/", 1)[0]
    if iri.startswith(EDGE_PREFIX):
        return GRAPH_RAG_PREFIX + iri[len(EDGE_PREFIX):].split("/", 1)[0].rsplit(":", 1)[0]
    if iri.startswith(_SHARED):
        return None
    return iri


def keys_of(payloads: Iterable[bytes]) -> set[str]:
    """The session keys of the subjects of N-Quads texts (one quad a line, as the log holds them)."""
    keys: set[str] = set()
    for payload in payloads:
        for subject in set(_SUBJECT.findall(payload)):
            key = session_key(subject.decode("utf-8", "replace"))
            if key is not None:
                keys.add(key)
    return keys


@dataclass
class SessionEntry:
    """One session's row (see :class:`otel_prov.read.model.SessionRow`, what it becomes)."""

    q: str
    type: str
    sub_type: str | None
    iri_type: str | None
    question: str
    time: str | None
    trace: str | None
    coll: str | None
    status: str
    steps: int | None
    duration: float | None
    agents: list[str] = field(default_factory=list)
    services: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    texts: str = ""
    """Every recorded text of the session, its question's first, in lower case (the text filter)."""


@dataclass(frozen=True)
class SessionLabel:
    """What a reader's snapshot of the index holds at least: the fold rounds noted up to ``seq``,
    and the sessions of the log's records it replayed beyond them (``unfolded``)."""

    path: Path
    seq: int
    unfolded: frozenset[str] = frozenset()


@dataclass(frozen=True)
class SessionQuery:
    """A listing's filters, as the index applies them (see :class:`otel_prov.read.model.SessionFilter`)."""

    kind: str | None = None
    collection: str | None = None
    since: str | None = None
    until: str | None = None
    text: str | None = None
    status: str | None = None
    tool: str | None = None
    agent: str | None = None
    model: str | None = None
    service: str | None = None
    sort: str = "time"
    statuses: tuple[str, ...] = ()
    """The statuses in the order ``sort="status"`` lists them (the read model's)."""


_ORDER = {
    "time": "time DESC, q DESC",
    "duration": "COALESCE(duration, -1) DESC, time DESC, q DESC",
    "steps": "COALESCE(steps, -1) DESC, time DESC, q DESC",
}
_COLUMNS = ("q", "type", "sub_type", "iri_type", "question", "time", "trace", "coll", "status", "steps",
            "duration", "agents", "services", "tools", "models", "texts")


class SessionIndex:
    """The session index of the store at ``store`` (created when missing)."""

    def __init__(self, store: Path) -> None:
        self.path = index_file(store)
        self._lock_fd = -1
        try:
            self.path.parent.mkdir(exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT, isolation_level=None,
                                      check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the session index {self.path}: {exc}") from exc
        try:
            self.db.execute("PRAGMA secure_delete = ON")
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
            with self.transaction():
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                found = self._meta("version")
                if found is None:
                    self._set("version", str(VERSION))
                elif int(found) > VERSION:
                    raise StoreError(f"the session index {self.path} is of a newer otel-prov (layout "
                                     f"{found}, this one reads {VERSION}); upgrade otel-prov")
                elif int(found) < VERSION:
                    self._reset()
        except sqlite3.Error as exc:
            self.db.close()
            raise StoreError(f"the session index {self.path} cannot be used ({exc}); remove it and it "
                             "is built again from the store by the next reader") from exc
        except BaseException:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def computing(self, timeout: float | None) -> bool:
        """Take the right to compute rows (one process at a time: two would compute the same ones),
        waiting at most ``timeout`` seconds (None: for ever); whether it was had.  Held until
        :meth:`computed` (or :meth:`close`)."""
        if self._lock_fd < 0:
            self._lock_fd = os.open(self.path.parent / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                time.sleep(0.02)

    def computed(self) -> None:
        """Let another process compute rows."""
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- what the fold writes -----------------------------------------------------------------
    def touch(self, keys: Iterable[str]) -> int:
        """Note ``keys`` touched by a new fold round; returns its sequence number."""
        with self.transaction():
            seq = self.seq() + 1
            self._set("seq", str(seq))
            self.db.executemany("INSERT INTO touched (key, seq) VALUES (?, ?) ON CONFLICT (key) "
                                "DO UPDATE SET seq = excluded.seq", ((k, seq) for k in keys))
        return seq

    def stale(self) -> None:
        """The index was rebuilt or loaded behind the fold's back: the next reader builds every row."""
        with self.transaction():
            self._set("built", "0")

    # -- what readers read and write ----------------------------------------------------------
    def seq(self) -> int:
        return int(self._meta("seq") or 0)

    def built(self) -> bool:
        return self._meta("built") == "1"

    def due(self, seq: int) -> list[str]:
        """The keys touched since their rows were last computed, by rounds a snapshot labelled
        ``seq`` holds (what later rounds touched is left to a later snapshot)."""
        return [k for (k,) in self.db.execute("SELECT key FROM touched WHERE seq <= ?", (seq,))]

    def start_build(self) -> None:
        """Before every row is computed again: none is kept."""
        with self.transaction():
            self._set("built", "0")
            self.db.execute("DELETE FROM sessions")

    def end_build(self, seq: int) -> None:
        """Every session's row was saved from a snapshot labelled ``seq``."""
        with self.transaction():
            self.db.execute("DELETE FROM touched WHERE seq <= ?", (seq,))
            self._set("built", "1")

    def save(self, rows: Sequence[SessionEntry], gone: Iterable[str], keys: Iterable[str], seq: int) -> None:
        """Record ``rows`` and remove the rows of ``gone`` (no longer top-level sessions), as computed
        from a snapshot labelled ``seq`` (a row saved from a newer one is kept); ``keys`` are then
        done, unless a later round touched them again."""
        with self.transaction():
            self.db.executemany("DELETE FROM sessions WHERE q = ? AND seq <= ?", ((q, seq) for q in gone))
            places = ", ".join("?" * len(_COLUMNS))
            self.db.executemany(
                f"INSERT INTO sessions ({', '.join(_COLUMNS)}, seq) VALUES ({places}, ?) "
                "ON CONFLICT (q) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[1:])
                + ", seq = excluded.seq WHERE excluded.seq >= sessions.seq",
                (_values(row) + (seq,) for row in rows))
            self.db.executemany("DELETE FROM touched WHERE key = ? AND seq <= ?", ((k, seq) for k in keys))

    def select(self, query: SessionQuery, limit: int | None = None, offset: int = 0) -> list[SessionEntry]:
        where, args = _where(query)
        page = ""
        if limit is not None:
            page = " LIMIT ? OFFSET ?"
            args += [int(limit), int(offset)]
        elif offset:
            page = " LIMIT -1 OFFSET ?"
            args.append(int(offset))
        if query.sort == "status":
            ranks = " ".join(f"WHEN ? THEN {rank}" for rank in range(len(query.statuses)))
            order = f"CASE status {ranks} ELSE {len(query.statuses)} END, {_ORDER['time']}"
            args = [*query.statuses, *args]
        else:
            order = _ORDER[query.sort]
        sql = f"SELECT {', '.join(_COLUMNS)} FROM sessions {where} ORDER BY {order}{page}"
        return [_row(values) for values in self.db.execute(sql, args)]

    def count(self, query: SessionQuery) -> int:
        where, args = _where(query)
        return int(self.db.execute(f"SELECT COUNT(*) FROM sessions {where}", args).fetchone()[0])

    def stamp(self) -> str:
        """Changes whenever a session starts, ends or fails (as the graph's stamp: what a live view
        polls)."""
        row = self.db.execute("SELECT COUNT(*), COUNT(*) FILTER (WHERE status = 'complete'), "
                              "COUNT(*) FILTER (WHERE status = 'failed') FROM sessions").fetchone()
        return f"{row[0]}-{row[1]}-{row[2]}"

    def collections(self) -> list[str]:
        return [c for (c,) in self.db.execute(
            "SELECT DISTINCT coll FROM sessions WHERE coll IS NOT NULL ORDER BY coll")]

    def compact(self) -> None:
        """The write-ahead log folded into the file and emptied, the file's free pages dropped: after
        an erasure, no copy of an erased row's text is left in either (rows are deleted with
        ``secure_delete``).  Best effort: another process reading the index at that moment keeps
        the log's frames until the next compaction."""
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.db.execute("VACUUM")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- internals ----------------------------------------------------------------------------
    def _meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO meta (key, value) VALUES (?, ?) "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    def _reset(self) -> None:
        for table in ("sessions", "touched"):
            self.db.execute(f"DELETE FROM {table}")
        self._set("version", str(VERSION))
        self._set("built", "0")


def note_touched(store: Path, payloads: Iterable[bytes]) -> None:
    """What the fold calls after a round: the round's sessions noted (see the module's docstring).
    A session index that cannot be written is said once and marked for a rebuild by the next
    reader that can (the fold itself goes on: the graph is what matters)."""
    keys = keys_of(payloads)
    try:
        index = SessionIndex(store)
        try:
            index.touch(keys)
        finally:
            index.close()
    except (StoreError, sqlite3.Error) as exc:
        logger.warning("otel-prov: the session index of %s was not updated (%s); the next listing "
                       "builds it again", store, exc)
        with contextlib.suppress(OSError):
            index_file(store).unlink()


def label(store: Path) -> SessionLabel | None:
    """The sequence number a reader reads before it opens its snapshot (None: no session index can
    be had here, e.g. a read-only store without one)."""
    try:
        index = SessionIndex(store)
    except StoreError:
        return None
    try:
        return SessionLabel(store, index.seq())
    finally:
        index.close()


def _values(row: SessionEntry) -> tuple[Any, ...]:
    return (row.q, row.type, row.sub_type, row.iri_type, row.question, row.time, row.trace, row.coll,
            row.status, row.steps, row.duration, _joined(row.agents), _joined(row.services),
            _joined(row.tools), _joined(row.models), row.texts)


def _joined(names: Sequence[str]) -> str:
    return SEP + SEP.join(names) + SEP


def _row(values: Sequence[Any]) -> SessionEntry:
    (q, type_, sub_type, iri_type, question, time, trace, coll, status, steps, duration, agents, services,
     tools, models, texts) = values
    return SessionEntry(q, type_, sub_type, iri_type, question, time, trace, coll, status, steps, duration,
               _split(agents), _split(services), _split(tools), _split(models), texts)


def _split(names: str) -> list[str]:
    return [name for name in names.split(SEP) if name]


def _where(query: SessionQuery) -> tuple[str, list[Any]]:
    tests: list[str] = []
    args: list[Any] = []
    if query.kind is not None:
        tests.append("(sub_type = ? OR iri_type = ?)")
        args += [query.kind, query.kind]
    if query.collection is not None:
        tests.append("coll = ?")
        args.append(query.collection)
    if query.status is not None:
        tests.append("status = ?")
        args.append(query.status)
    if query.text:
        tests.append("instr(texts, ?) > 0")
        args.append(query.text.lower())
    for column, value in (("tools", query.tool), ("models", query.model), ("agents", query.agent),
                          ("services", query.service)):
        if value:
            tests.append(f"instr({column}, ?) > 0")
            args.append(SEP + value + SEP)
    if query.since:
        tests.append("time >= ?")
        args.append(query.since)
    if query.until:
        tests.append("substr(time, 1, ?) <= ?")
        args += [len(query.until), query.until]
    return ("WHERE " + " AND ".join(tests)) if tests else "", args


def mark_stale(store: Path) -> None:
    """After the index was rebuilt or loaded behind the fold's back: the next reader builds every row."""
    index = SessionIndex(store)
    try:
        index.stale()
    finally:
        index.close()
