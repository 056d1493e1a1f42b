"""The session index of an on-disk store: one row per top-level session (what ``otel-prov list``
and the web view's list show of it, and what their filters test), in SQLite beside the index
(``STORE/sessions/index.sqlite``), so that a listing reads a few rows instead of the whole graph.

Only writers write it (readers never write to a store, docs/store.md), and it stays exact:

- **The fold** (:mod:`.indexer`) notes which sessions each round touched: the subjects of the quads it
  added or removed, each reduced to its session's key (:func:`session_key`: the Question IRI its IRI
  pattern names, else the IRI itself), under a sequence number one higher than the last; after the
  round is applied and flushed, before its checkpoint (a crash in between notes them again).
- **The indexing process** (the one holding the index lock: ``serve``, an exporter, the background
  folder, ``otel-prov delete``) then computes the rows of the noted sessions from its index, between
  fold rounds, :data:`BATCH` at a time (:func:`update`), and builds every row when there are none
  (an older store, one bulk-loaded, ``check --rebuild``).
- **A reader** reads the sequence number *before* it opens its snapshot (:class:`SessionLabel`), so
  the snapshot holds every round noted up to it.  The sessions noted up to it and not computed yet
  (and those its snapshot replayed from the log) it computes from its snapshot, in memory, and lists
  them in the place of their rows (:class:`Listing`).  A store whose rows were never built, or with
  more sessions left to compute than a reader computes (:data:`READER_MOST`), is listed from the graph.

The rows are computed by :func:`compute` with the read model's rules (the marks a step counts for,
the type, status, steps and duration of ``otel-prov list``; the texts, tools, models, agents and
services its filters test): ``tests/read/test_session_index.py`` checks that every listing, filter,
sort and page equals the one computed from the graph.  Erased text does not stay in the file: rows
are deleted with ``secure_delete`` on, and :meth:`SessionIndex.compact` runs after an erasure.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import sqlite3
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .. import attributes as A
from ..errors import StoreError
from ..model.iris import (
    AGENT_PREFIX,
    DOC_RAG_PREFIX,
    EDGE_PREFIX,
    EXPLORATION_PREFIX,
    FOCUS_PREFIX,
    GRAPH_RAG_PREFIX,
    SYNTHESIS_PREFIX,
    flow_of_question,
)
from ..model.terms import epoch_ns
from ..model.vocab import GRAPH_RETRIEVAL, OTELPROV, TG
from .base import ReadStore

logger = logging.getLogger(__name__)

DIRECTORY = "sessions"
"""The session index's directory inside a store's directory."""
FILENAME = "index.sqlite"
LOCK = "compute.lock"
"""Held (``flock``) by the process computing rows."""
VERSION = 1
"""The layout of the tables; an older one is built again (a newer otel-prov's is refused)."""
BUSY_TIMEOUT = 10.0
"""Seconds a connection waits for another process's write transaction."""
BATCH = 200
"""Sessions whose rows one round of queries computes (0.15-0.4 s here, more in a bigger store)."""
WRITER_BATCH = 50
"""The same, in the indexing process between two fold rounds: short, so a fold (and a reader waiting
for it) never waits long for rows."""
READER_MOST = 2000
"""Sessions a reader computes itself, at most (about 2 s); with more left, it lists from the graph."""

# -- which session a node is of ----------------------------------------------------------------------

_QUESTIONS = (AGENT_PREFIX, DOC_RAG_PREFIX, GRAPH_RAG_PREFIX)
_GRAPH_RAG_STEPS = (EXPLORATION_PREFIX, FOCUS_PREFIX, SYNTHESIS_PREFIX)
_SHARED = ("urn:otel-prov:agent:", "urn:otel-prov:model:", "urn:otel-prov:person:", "urn:otel-prov:role:",
           "urn:otel-prov:seal:")
"""Nodes no single session owns (the strict profile's agents and models, people, roles, seals):
what is written of them changes no session's row."""
_SUBJECT = re.compile(rb"^<([^>\n]*)>", re.MULTILINE)


def session_key(iri: str) -> str | None:
    """The key a node's session is noted under: the Question IRI its pattern names (an agent's or
    DocRAG's ``{question}/...``; a GraphRAG step's ``urn:trustgraph:prov:{step}:{uuid}``), else the
    IRI itself (resolved when its row is computed); None for nodes no session owns."""
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


# -- what a row is made of (the read model's rules) ---------------------------------------------------

LISTED = f"""GRAPH <{GRAPH_RETRIEVAL}> {{
    ?q tg:query ?query0 .
    FILTER NOT EXISTS {{ ?q prov:wasDerivedFrom|prov:wasGeneratedBy ?parent }}
    OPTIONAL {{ ?q prov:startedAtTime|prov:generatedAtTime ?time0 }}
    OPTIONAL {{ ?q a ?sub0 . FILTER(?sub0 IN (tg:AgentQuestion, tg:GraphRagQuestion, tg:DocRagQuestion)) }}
    OPTIONAL {{ ?q otelprov:traceId ?trace0 }}
    OPTIONAL {{ ?q otelprov:collection ?coll0 }}
  }}"""
"""The top-level Questions (sub-traces have a parent) and what a listing shows of them."""

SUBTYPE_FLOWS = {str(TG.AgentQuestion): A.FLOW_AGENT, str(TG.GraphRagQuestion): A.FLOW_GRAPH_RAG,
                 str(TG.DocRagQuestion): A.FLOW_DOC_RAG}
FAILED, UNFINISHED, COMPLETE = 0, 1, 2
"""A session's status as the index holds it (and sorts it)."""


@dataclass
class Summary:
    """What a listing shows of one session's own nodes (see :func:`summarize`)."""

    marks: set[str] = field(default_factory=set)
    analyses: int = 0
    retrievals: int = 0
    start: int | None = None
    """Nanoseconds since the epoch."""
    end: int | None = None

    @property
    def duration_ms(self) -> float | None:
        if self.start is None or self.end is None or self.end < self.start:
            return None
        return (self.end - self.start) / 1e6

    @property
    def status(self) -> int:
        return FAILED if "error" in self.marks else COMPLETE if "end" in self.marks else UNFINISHED

    def flow(self, declared: str | None) -> str:
        """The session's flow: as its Question declares it, else as its steps show."""
        return declared or (A.FLOW_AGENT if "analysis" in self.marks
                            else A.FLOW_DOC_RAG if "chunks" in self.marks else A.FLOW_GRAPH_RAG)

    def steps(self, flow: str) -> int:
        return self.analyses if flow == A.FLOW_AGENT else self.retrievals


def summarize(questions: Iterable[str], up: Mapping[str, Sequence[str]], found: Mapping[str, set[str]],
              times: Mapping[str, Sequence[tuple[str, str]]]) -> dict[str, Summary]:
    """Each node's marks (``end``, ``error``, ``analysis``, ``retrieval``, ``chunks``, ``question``,
    ``approval``) and times (``start``, ``finish``) counted for the nearest Question above it
    (``up``: a node's derivation links), kept for ``questions``: a sub-trace's steps are its own,
    and a person's approval is not part of the session's time."""
    owners = set(questions) | {n for n, m in found.items() if "question" in m}
    wanted = set(questions)
    marks: dict[str, Summary] = defaultdict(Summary)
    for node in found.keys() | times.keys():
        owner = nearest(node, owners, up)
        if owner not in wanted:
            continue
        summary = marks[owner]
        kinds = found.get(node, set())
        summary.marks |= kinds - {"question", "retrieval", "approval"}
        summary.analyses += "analysis" in kinds
        summary.retrievals += "retrieval" in kinds
        if "approval" in kinds:  # a person's decision, maybe long after: not the session's time
            continue
        for mark, text in times.get(node, ()):
            when = epoch_ns(text)
            if when is None:
                continue
            if mark == "start" and (summary.start is None or when < summary.start):
                summary.start = when
            if mark == "finish" and (summary.end is None or when > summary.end):
                summary.end = when
    return marks


def nearest(node: str, questions: set[str], up: Mapping[str, Sequence[str]]) -> str | None:
    """The first Question met going up the derivation links from ``node`` (itself included)."""
    frontier, seen = [node], {node}
    while frontier:
        for n in frontier:
            if n in questions:
                return n
        frontier = [o for n in frontier for o in up.get(n, ()) if o not in seen]
        seen.update(frontier)
    return None


@dataclass
class SessionEntry:
    """One session's row (what :class:`otel_prov.read.model.SessionRow` shows, and more to filter)."""

    q: str
    flow: str
    sub_flow: str | None
    iri_flow: str | None
    question: str
    time: str | None
    trace: str | None
    coll: str | None
    status: int
    steps: int | None
    duration: float | None
    agents: list[str] = field(default_factory=list)
    services: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    texts: str = ""
    """Every recorded text of the session, its question's first, in lower case (the text filter)."""


_PROV, _TG, _OTELPROV = "http://www.w3.org/ns/prov#", str(TG), str(OTELPROV)
_UP = {_PROV + "wasDerivedFrom", _PROV + "wasGeneratedBy", _PROV + "used"}
_DERIVED = {_PROV + "wasDerivedFrom", _PROV + "wasGeneratedBy"}
_MARK_TYPES = {_TG + "Conclusion": "end", _TG + "Synthesis": "end", _TG + "Analysis": "analysis",
               _TG + "Exploration": "retrieval", _TG + "Focus": "retrieval",
               _OTELPROV + "Approval": "approval"}
_MARK_PREDICATES = {_OTELPROV + "statusMessage": "error", _TG + "chunkCount": "chunks",
                    _TG + "query": "question"}
_TIMES = {_OTELPROV + "startTime": "start", _PROV + "startedAtTime": "start",
          _OTELPROV + "endTime": "finish", _PROV + "endedAtTime": "finish"}
_SAID = {_TG + name for name in
         ("thought", "action", "arguments", "observation", "answer", "content", "reasoning")}
"""What the text filter searches besides the question."""
_MODEL, _ACTION = _TG + "llmModel", _TG + "action"
_AGENT, _SERVICE = _OTELPROV + "agentName", _OTELPROV + "serviceName"
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_READ = ", ".join(f"<{p}>" for p in sorted(
    _UP | set(_MARK_PREDICATES) | set(_TIMES) | _SAID | {_MODEL, _AGENT, _SERVICE, _RDF_TYPE}))
"""The predicates a row is made of: one query reads them for every node of a batch of sessions."""


def listed(store: ReadStore, questions: Sequence[str] | None = None, extra: str = "",
           page: str = "") -> list[dict[str, str]]:
    """The top-level Questions (of ``questions`` only, when given), newest first, as rows of ``q`` and
    what the listing shows of the Question alone (``query``, ``time``, ``sub``, ``trace``,
    ``coll``): one query, which reads no step (``extra``: more of its pattern, a filter)."""
    pattern = LISTED
    if questions is not None:  # inside the graph's pattern: Oxigraph then starts from them (18x faster)
        graph = f"GRAPH <{GRAPH_RETRIEVAL}> {{"
        only = "VALUES ?q { " + " ".join(f"<{q}>" for q in questions) + " }"
        pattern = pattern.replace(graph, f"{graph} {only}", 1)
    return _select(store, f"""
SELECT ?q (SAMPLE(?query0) AS ?query) (MAX(?time0) AS ?time) (SAMPLE(?sub0) AS ?sub)
       (SAMPLE(?trace0) AS ?trace) (SAMPLE(?coll0) AS ?coll) WHERE {{
  {pattern}
  {extra}
}} GROUP BY ?q ORDER BY DESC(?time) DESC(?q) {page}""")


def compute(store: ReadStore, questions: Sequence[str]) -> list[SessionEntry]:
    """The rows of those of ``questions`` that are top-level sessions, read from ``store``: which
    they are and what their Question says (:func:`listed`), the rest from one query over their
    nodes."""
    rows = listed(store, questions) if questions else []
    if not rows:
        return []
    ids = [row["q"] for row in rows]
    values = " ".join(f"<{q}>" for q in ids)
    up: dict[str, list[str]] = defaultdict(list)
    derived: dict[str, list[str]] = defaultdict(list)
    found: dict[str, set[str]] = defaultdict(set)
    times: dict[str, list[tuple[str, str]]] = defaultdict(list)
    own: dict[str, list[tuple[str, str]]] = defaultdict(list)
    seen: set[tuple[str, str, str]] = set()
    for row in _select(store, f"""
SELECT ?n ?p ?o WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ VALUES ?q {{ {values} }}
  ?q (^prov:wasDerivedFrom|^prov:wasGeneratedBy|^prov:used)* ?n .
  {{ ?n ?p ?o FILTER(?p IN ({_READ}) && (?p != tg:thought || isLITERAL(?o))) }}
  UNION {{ ?n tg:thought/tg:document/tg:content ?o BIND(tg:thought AS ?p) }} }} }}"""):
        n, p, o = row["n"], row["p"], row["o"]
        if (n, p, o) in seen:  # a sub-trace's node, reached from its Question and from the top's
            continue
        seen.add((n, p, o))
        if p in _UP:
            up[n].append(o)
            if p in _DERIVED:
                derived[n].append(o)
        elif p == _RDF_TYPE:
            if o in _MARK_TYPES:
                found[n].add(_MARK_TYPES[o])
        elif p in _MARK_PREDICATES:
            found[n].add(_MARK_PREDICATES[p])
        elif p in _TIMES:
            times[n].append((_TIMES[p], o))
        else:
            own[n].append((p, o))
    marks = summarize(ids, up, found, times)
    said: dict[str, set[str]] = defaultdict(set)
    tools: dict[str, set[str]] = defaultdict(set)
    models: dict[str, set[str]] = defaultdict(set)
    tops = set(ids)
    for n, pairs in own.items():
        for q in _above(n, derived, tops):
            for p, o in pairs:
                if p == _MODEL:
                    models[q].add(o)
                elif p in _SAID:
                    said[q].add(o.lower())
                    if p == _ACTION:
                        tools[q].add(o)
    out = []
    for row in rows:
        q = row["q"]
        summary = marks.get(q, Summary())
        sub_flow, iri_flow = SUBTYPE_FLOWS.get(row.get("sub", "")), flow_of_question(q)
        flow = summary.flow(iri_flow or sub_flow)
        question = row.get("query", "")
        out.append(SessionEntry(
            q, flow, sub_flow, iri_flow, question, row.get("time"), row.get("trace"), row.get("coll"),
            summary.status, summary.steps(flow), summary.duration_ms,
            sorted(o for p, o in own.get(q, ()) if p == _AGENT),
            sorted(o for p, o in own.get(q, ()) if p == _SERVICE), sorted(tools[q]), sorted(models[q]),
            "\n".join([question.lower(), *sorted(said[q])])))
    return out


def questions_of(store: ReadStore, keys: Sequence[str]) -> list[str]:
    """The Questions whose rows ``keys`` (:func:`session_key`) may have changed: each key's session
    (a key of another pattern: the nearest Question upstream of it), and the top-level session a
    sub-trace is part of (its texts, tools and models are the top's too)."""
    values = " ".join(f"<{k}>" for k in keys)
    questions = {row["k"] for row in _select(store, f"""
SELECT DISTINCT ?k WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ VALUES ?k {{ {values} }} ?k tg:query ?text }} }}""")}
    for key in sorted(set(keys) - questions):  # a key of another pattern, or a session no longer there
        question = _nearest_question(store, key)
        if question is not None:
            questions.add(question)
    found = set(questions)
    if questions:
        values = " ".join(f"<{q}>" for q in sorted(questions))
        for row in _select(store, f"""
SELECT DISTINCT ?q WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ VALUES ?q {{ {values} }}
  ?q prov:wasDerivedFrom|prov:wasGeneratedBy ?up }} }}"""):
            found.add(_top(store, row["q"]))
    return sorted(found)


def _nearest_question(store: ReadStore, node: str) -> str | None:
    frontier, seen = [node], {node}
    while frontier:
        values = " ".join(f"<{n}>" for n in frontier)
        rows = _select(store, f"""
SELECT ?n ?q ?up WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ VALUES ?n {{ {values} }}
  OPTIONAL {{ ?n tg:query ?q }}
  OPTIONAL {{ ?n prov:wasDerivedFrom|prov:wasGeneratedBy|prov:used ?up }} }} }}""")
        hits = sorted({row["n"] for row in rows if "q" in row})
        if hits:
            return hits[0]
        frontier = sorted({row["up"] for row in rows if "up" in row} - seen)
        seen.update(frontier)
    return None


def _top(store: ReadStore, question: str) -> str:
    """The top-level Question of the session ``question`` is part of."""
    seen = {question}
    while True:
        rows = _select(store, f"""SELECT ?up WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{
  <{question}> prov:wasDerivedFrom|prov:wasGeneratedBy ?up }} }} ORDER BY ?up LIMIT 1""")
        parent = _nearest_question(store, rows[0]["up"]) if rows else None
        if parent is None or parent in seen:
            return question
        seen.add(parent)
        question = parent


def _above(node: str, derived: Mapping[str, Sequence[str]], tops: set[str]) -> set[str]:
    """The sessions of ``tops`` that ``node`` derives from through one derivation link or more."""
    found: set[str] = set()
    frontier, seen = list(derived.get(node, ())), {node}
    while frontier:
        seen.update(frontier)
        found.update(n for n in frontier if n in tops)
        frontier = [o for n in frontier for o in derived.get(n, ()) if o not in seen]
    return found


def _select(store: ReadStore, sparql: str) -> list[dict[str, str]]:
    return [{name: term.value for name, term in row.items()} for row in store.select(sparql)]


# -- the SQLite file -------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS touched (key TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS building (q TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS sessions (
    q TEXT PRIMARY KEY, flow TEXT NOT NULL, sub_flow TEXT, iri_flow TEXT, question TEXT NOT NULL,
    time TEXT, trace TEXT, coll TEXT, status INTEGER NOT NULL, steps INTEGER, duration REAL,
    agents TEXT NOT NULL, services TEXT NOT NULL, tools TEXT NOT NULL, models TEXT NOT NULL,
    texts TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS sessions_time ON sessions (time DESC, q DESC);
CREATE INDEX IF NOT EXISTS sessions_coll ON sessions (coll, time DESC);
CREATE INDEX IF NOT EXISTS sessions_status ON sessions (status);
"""
_COLUMNS = ("q", "flow", "sub_flow", "iri_flow", "question", "time", "trace", "coll", "status", "steps",
            "duration", "agents", "services", "tools", "models", "texts")
SEP = "\x1f"
"""Between the names of the ``agents``, ``services``, ``tools`` and ``models`` columns (each also
starts and ends with it)."""


def index_file(store: Path) -> Path:
    return store / DIRECTORY / FILENAME


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

    flow: str | None = None
    collection: str | None = None
    since: str | None = None
    until: str | None = None
    text: str | None = None
    status: int | None = None
    tool: str | None = None
    agent: str | None = None
    model: str | None = None
    service: str | None = None
    sort: str = "time"


_ORDER = {
    "time": "time DESC, q DESC",
    "duration": "COALESCE(duration, -1) DESC, time DESC, q DESC",
    "steps": "COALESCE(steps, -1) DESC, time DESC, q DESC",
    "status": "status, time DESC, q DESC",
}


class SessionIndex:
    """The session index of the store at ``store``: written by the process that indexes the store
    (created when missing), read by readers (``read_only``: never created, never written)."""

    def __init__(self, store: Path, *, read_only: bool = False) -> None:
        self.path = index_file(store)
        self.read_only = read_only
        self._lock_fd = -1
        try:
            if read_only:
                if not self.path.is_file():
                    raise StoreError(f"no session index at {self.path}")
                self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT,
                                          isolation_level=None, check_same_thread=False)
            else:
                self.path.parent.mkdir(exist_ok=True)
                self.db = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT, isolation_level=None,
                                          check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the session index {self.path}: {exc}") from exc
        try:
            if read_only:
                found = self._meta("version")
                if found is None or int(found) != VERSION:
                    raise StoreError(f"the session index {self.path} is of layout {found}, this otel-prov "
                                     f"reads {VERSION}")
                return
            self.db.execute("PRAGMA secure_delete = ON")
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
            raise StoreError(f"the session index {self.path} cannot be used ({exc}); remove it and the "
                             "process that indexes the store builds it again") from exc
        except BaseException:
            self.db.close()
            raise

    def close(self) -> None:
        self.db.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- what the fold and the indexing process write -------------------------------------------
    def touch(self, keys: Iterable[str]) -> int:
        """Note ``keys`` touched by a new fold round; returns its sequence number."""
        with self.transaction():
            seq = self.seq() + 1
            self._set("seq", str(seq))
            self.db.executemany("INSERT INTO touched (key, seq) VALUES (?, ?) ON CONFLICT (key) "
                                "DO UPDATE SET seq = excluded.seq", ((k, seq) for k in keys))
        return seq

    def stale(self) -> None:
        """The index was rebuilt or loaded behind the fold's back: every row is built again."""
        with self.transaction():
            self._set("built", "0")

    def start_build(self, questions: Iterable[str], seq: int) -> None:
        """Before every row is computed again (``questions``: every top-level session, as of ``seq``):
        none is kept (readers list from the graph meanwhile)."""
        with self.transaction():
            self._set("built", "building")
            self._set("build_seq", str(seq))
            self.db.execute("DELETE FROM sessions")
            self.db.execute("DELETE FROM building")
            self.db.executemany("INSERT OR IGNORE INTO building (q) VALUES (?)", ((q,) for q in questions))

    def building(self) -> bool:
        return self._meta("built") == "building"

    def to_build(self, most: int) -> list[str]:
        return [q for (q,) in self.db.execute("SELECT q FROM building ORDER BY q LIMIT ?", (most,))]

    def built_part(self, rows: Sequence[SessionEntry], questions: Sequence[str], seq: int) -> None:
        """``rows``, the rows of ``questions`` (those that are top-level sessions), saved."""
        self.save(rows, (), (), seq)
        with self.transaction():
            self.db.executemany("DELETE FROM building WHERE q = ?", ((q,) for q in questions))

    def end_build(self) -> None:
        """Every session's row is saved: what was noted before the build began is done."""
        with self.transaction():
            self.db.execute("DELETE FROM touched WHERE seq <= ?", (int(self._meta("build_seq") or 0),))
            self._set("built", "1")

    def save(self, rows: Sequence[SessionEntry], gone: Iterable[str], keys: Iterable[str], seq: int) -> None:
        """Record ``rows`` and remove the rows of ``gone`` (no longer top-level sessions), computed
        from the index as of ``seq`` or later; ``keys`` are then done, unless a later round touched
        them again."""
        with self.transaction():
            self.db.executemany("DELETE FROM sessions WHERE q = ?", ((q,) for q in gone))
            places = ", ".join("?" * len(_COLUMNS))
            self.db.executemany(
                f"INSERT INTO sessions ({', '.join(_COLUMNS)}, seq) VALUES ({places}, ?) "
                "ON CONFLICT (q) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in _COLUMNS[1:])
                + ", seq = excluded.seq", (_values(row) + (seq,) for row in rows))
            self.db.executemany("DELETE FROM touched WHERE key = ? AND seq <= ?", ((k, seq) for k in keys))

    def compact(self) -> None:
        """The file's free pages dropped (after an erasure: with ``secure_delete``, no copy of an
        erased row's text is left in the file)."""
        self.db.execute("VACUUM")

    def computing(self, timeout: float | None) -> bool:
        """Take the right to compute rows (one process at a time), waiting at most ``timeout``
        seconds (None: for ever); whether it was had.  Held until :meth:`computed` or :meth:`close`."""
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
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    # -- what readers read ----------------------------------------------------------------------
    def seq(self) -> int:
        return int(self._meta("seq") or 0)

    def built(self) -> bool:
        return self._meta("built") == "1"

    def due(self, seq: int | None = None) -> list[str]:
        """The keys touched since their rows were last computed (by rounds up to ``seq``)."""
        if seq is None:
            return [k for (k,) in self.db.execute("SELECT key FROM touched")]
        return [k for (k,) in self.db.execute("SELECT key FROM touched WHERE seq <= ?", (seq,))]

    def count_due(self, seq: int) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM touched WHERE seq <= ?", (seq,)).fetchone()[0])

    # -- internals ----------------------------------------------------------------------------
    def _meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO meta (key, value) VALUES (?, ?) "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    def _reset(self) -> None:
        for table in ("sessions", "touched", "building"):
            self.db.execute(f"DELETE FROM {table}")
        self._set("version", str(VERSION))
        self._set("built", "0")


class SessionListing(Protocol):
    """What a reader lists from: :class:`Listing` (the on-disk store's), and a SPARQL server's
    (:class:`~.server_sessions.ServerListing`, from its store's ``session_listing()``)."""

    def select(self, query: SessionQuery, limit: int | None = None,
               offset: int = 0) -> list[SessionEntry]: ...

    def count(self, query: SessionQuery) -> int: ...

    def stamp(self) -> str: ...

    def collections(self) -> list[str]: ...

    def close(self) -> None: ...


class Listing:
    """A reader's listing: the index's rows, but those its snapshot holds newer data for (the
    sessions noted up to its label and not computed yet, those it replayed from the log), which it
    computes from its snapshot and lists in their place.  None from :meth:`open` when the index
    cannot answer (not built, unreadable, or more left to compute than :data:`READER_MOST`)."""

    def __init__(self, index: SessionIndex, fresh: Sequence[SessionEntry], hidden: Iterable[str]) -> None:
        self.index = index
        db = index.db
        db.execute(f"CREATE TEMP TABLE IF NOT EXISTS fresh ({', '.join(_COLUMNS)})")
        db.execute("CREATE TEMP TABLE IF NOT EXISTS hidden (q TEXT PRIMARY KEY)")
        db.execute("DELETE FROM temp.fresh")
        db.execute("DELETE FROM temp.hidden")
        db.executemany("INSERT OR IGNORE INTO temp.hidden VALUES (?)", ((q,) for q in hidden))
        db.executemany(f"INSERT INTO temp.fresh VALUES ({', '.join('?' * len(_COLUMNS))})",
                       (_values(row) for row in fresh))
        self._overlay = bool(fresh) or any(True for _ in db.execute("SELECT 1 FROM temp.hidden LIMIT 1"))
        """Whether rows are listed in the place of the index's (else the index's table answers alone,
        its indexes serving the order and the page)."""

    @classmethod
    def open(cls, store: ReadStore, label: SessionLabel) -> Listing | None:
        try:
            index = SessionIndex(label.path, read_only=True)
        except StoreError as exc:
            logger.debug("otel-prov: %s; listed from the graph", exc)
            return None
        try:
            if not index.built():
                return None
            keys = sorted(set(index.due(label.seq)) | label.unfolded)
            if len(keys) > READER_MOST:
                logger.info("otel-prov: %d sessions of %s are not in its session index yet (the process "
                            "indexing the store computes them); listed from the graph", len(keys), label.path)
                return None
            questions = questions_of(store, keys) if keys else []
            fresh = [row for start in range(0, len(questions), BATCH)
                     for row in compute(store, questions[start:start + BATCH])]
            listing = cls(index, fresh, set(keys) | set(questions))
        except (sqlite3.Error, StoreError) as exc:
            logger.warning("otel-prov: the session index of %s is not used (%s); listed from the graph",
                           label.path, exc)
            index.close()
            return None
        except BaseException:
            index.close()
            raise
        return listing

    def close(self) -> None:
        self.index.close()

    def select(self, query: SessionQuery, limit: int | None = None, offset: int = 0) -> list[SessionEntry]:
        where, args = _where(query)
        columns, order = ", ".join(_COLUMNS), _ORDER[query.sort]
        page = "" if limit is None else f" LIMIT {int(limit)} OFFSET {int(offset)}"
        if limit is None and offset:
            page = f" LIMIT -1 OFFSET {int(offset)}"
        if not self._overlay:
            sql = f"SELECT {columns} FROM main.sessions {where} ORDER BY {order}{page}"
            return [_row(values) for values in self.index.db.execute(sql, args)]
        kept = f"{where} {'AND' if where else 'WHERE'} q NOT IN (SELECT q FROM temp.hidden)"
        first = "" if limit is None else f" LIMIT {int(limit) + int(offset)}"  # the index's part: its page
        sql = (f"SELECT {columns} FROM (SELECT * FROM (SELECT {columns} FROM main.sessions {kept} "
               f"ORDER BY {order}{first}) UNION ALL SELECT {columns} FROM temp.fresh {where}) "
               f"ORDER BY {order}{page}")
        return [_row(values) for values in self.index.db.execute(sql, args + args)]

    def count(self, query: SessionQuery) -> int:
        where, args = _where(query)
        db = self.index.db
        if not self._overlay:
            return int(db.execute(f"SELECT COUNT(*) FROM main.sessions {where}", args).fetchone()[0])
        kept = f"{where} {'AND' if where else 'WHERE'} q NOT IN (SELECT q FROM temp.hidden)"
        return (int(db.execute(f"SELECT COUNT(*) FROM main.sessions {kept}", args).fetchone()[0])
                + int(db.execute(f"SELECT COUNT(*) FROM temp.fresh {where}", args).fetchone()[0]))

    def stamp(self) -> str:
        """Changes whenever a session starts, ends or fails (what a live view polls)."""
        counts = [self.count(SessionQuery()), self.count(SessionQuery(status=COMPLETE)),
                  self.count(SessionQuery(status=FAILED))]
        return "-".join(map(str, counts))

    def collections(self) -> list[str]:
        kept = " AND q NOT IN (SELECT q FROM temp.hidden)" if self._overlay else ""
        found = {c for (c,) in self.index.db.execute(
            f"SELECT DISTINCT coll FROM main.sessions WHERE coll IS NOT NULL{kept}")}
        if self._overlay:
            found |= {c for (c,) in self.index.db.execute(
                "SELECT DISTINCT coll FROM temp.fresh WHERE coll IS NOT NULL")}
        return sorted(found)


# -- the indexing process --------------------------------------------------------------------------

def update(store: ReadStore, path: Path, budget: float | None = None) -> bool:
    """In the process indexing the store at ``path`` (``store``: its index, open): compute the rows
    of the sessions noted since, and build every row when there are none, for at most about
    ``budget`` seconds (None: until done).  Whether everything is done (or another process is
    computing rows: it does).  A session index that cannot be written is said once (the fold goes on:
    readers list from the graph)."""
    deadline = None if budget is None else time.monotonic() + budget
    try:
        index = SessionIndex(path)
    except StoreError as exc:
        _say_once(path, exc)
        return True
    try:
        if not index.computing(0 if deadline is not None else None):
            return True  # another process computes them (the next fold here looks again)
        try:
            seq = index.seq()  # the index holds every round noted up to it (this process folds)
            if not index.built():
                if not index.building():
                    index.start_build([row["q"] for row in listed(store)], seq)
                while part := index.to_build(BATCH if deadline is None else WRITER_BATCH):
                    if deadline is not None and time.monotonic() > deadline:
                        return False
                    index.built_part(compute(store, part), part, seq)
                index.end_build()
            keys = index.due()
            started = time.monotonic()
            step = BATCH if deadline is None else WRITER_BATCH
            for start in range(0, len(keys), step):
                if deadline is not None and time.monotonic() > deadline:
                    return False
                part = keys[start:start + step]
                questions = questions_of(store, part)
                rows = compute(store, questions)
                done = {row.q for row in rows}
                index.save(rows, sorted((set(part) | set(questions)) - done), part, seq)
            if keys:
                logger.debug("otel-prov: %d session(s) of the session index of %s computed in %.3f s",
                             len(keys), path, time.monotonic() - started)
            return True
        finally:
            index.computed()
    except (sqlite3.Error, StoreError) as exc:
        _say_once(path, exc)
        return True
    finally:
        index.close()


_said: set[Path] = set()


def _say_once(path: Path, exc: Exception) -> None:
    if path not in _said:
        _said.add(path)
        logger.warning("otel-prov: the session index of %s is not kept up to date (%s); listings read "
                       "the graph", path, exc)


def note_touched(store: Path, payloads: Iterable[bytes]) -> None:
    """What the fold calls after a round: the round's sessions noted (see the module's docstring).
    A session index that cannot be written is said once, and removed: the next indexing process
    builds it again (the fold itself goes on: the graph is what matters)."""
    keys = keys_of(payloads)
    try:
        index = SessionIndex(store)
        try:
            index.touch(keys)
        finally:
            index.close()
    except (StoreError, sqlite3.Error) as exc:
        _say_once(store, exc)
        with contextlib.suppress(OSError):
            index_file(store).unlink()


def label(store: Path) -> SessionLabel | None:
    """The sequence number a reader reads before it opens its snapshot (None: no session index)."""
    try:
        index = SessionIndex(store, read_only=True)
    except StoreError:
        return None
    try:
        return SessionLabel(store, index.seq())
    except sqlite3.Error:
        return None
    finally:
        index.close()


def compact(store: Path) -> None:
    """After an erasure, in the process indexing the store: the session index's file compacted."""
    try:
        index = SessionIndex(store)
        try:
            index.compact()
        finally:
            index.close()
    except (StoreError, sqlite3.Error) as exc:
        _say_once(store, exc)


def mark_stale(store: Path) -> None:
    """After the index was rebuilt or loaded behind the fold's back: every row is built again."""
    index = SessionIndex(store)
    try:
        index.stale()
    finally:
        index.close()


def _values(row: SessionEntry) -> tuple[Any, ...]:
    return (row.q, row.flow, row.sub_flow, row.iri_flow, row.question, row.time, row.trace, row.coll,
            row.status, row.steps, row.duration, _joined(row.agents), _joined(row.services),
            _joined(row.tools), _joined(row.models), row.texts)


def _joined(names: Sequence[str]) -> str:
    return SEP + SEP.join(names) + SEP


def _row(values: Sequence[Any]) -> SessionEntry:
    (q, flow, sub_flow, iri_flow, question, time_, trace, coll, status, steps, duration, agents, services,
     tools, models, texts) = values
    return SessionEntry(q, flow, sub_flow, iri_flow, question, time_, trace, coll, status, steps, duration,
                        _split(agents), _split(services), _split(tools), _split(models), texts)


def _split(names: str) -> list[str]:
    return [name for name in names.split(SEP) if name]


def _where(query: SessionQuery) -> tuple[str, list[Any]]:
    tests: list[str] = []
    args: list[Any] = []
    if query.flow is not None:
        tests.append("(sub_flow = ? OR iri_flow = ?)")
        args += [query.flow, query.flow]
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
