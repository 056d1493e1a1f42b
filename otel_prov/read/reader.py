"""Reading sessions and traces back from a store, through the store's read protocol
(:class:`~otel_prov.stores.base.ReadStore`: SPARQL over the graph ``urn:graph:retrieval``), as the
plain data of :mod:`.model`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.iris import QUESTION_PREFIXES, flow_of_question
from ..model.terms import literal
from ..model.vocab import GRAPH_RETRIEVAL
from ..stores.base import ReadStore, Triple
from ..stores.sessions import COMPLETE as IDX_COMPLETE
from ..stores.sessions import FAILED as IDX_FAILED
from ..stores.sessions import (
    LISTED,
    SUBTYPE_FLOWS,
    Listing,
    SessionEntry,
    SessionLabel,
    SessionListing,
    SessionQuery,
    Summary,
    listed,
    summarize,
)
from ..stores.sessions import UNFINISHED as IDX_UNFINISHED
from .build import SUBTYPES, TraceTriple, build_trace
from .model import (
    COMPLETE,
    FAILED,
    FLOW_TYPES,
    UNFINISHED,
    SessionFilter,
    SessionRow,
    Trace,
    TraceNotFound,
    check_iri,
    flow_of_type,
    is_trace_id,
    is_trace_id_prefix,
    is_uuid,
)

MAX_CANDIDATES = 5
"""How many sessions an ambiguous or mistaken reference lists."""

MARKS_PER_QUESTION_UP_TO = 200
"""Up to this many sessions listed, their marks are read from their own nodes; above, in one pass."""


_LINKED = ("(tg:selectedEdge|prov:wasAssociatedWith|otelprov:chunkSelection|tg:selectedEdge/tg:edge"
            "|tg:document|prov:qualifiedAssociation|prov:qualifiedAssociation/prov:hadRole|otelprov:blob)")
_DOWN = "(^prov:wasDerivedFrom|^prov:wasGeneratedBy|^prov:used)*"
"""From a node to every node derived from it (directly or not), itself included.  Written from the
bound end (the Question): written the other way round (``?n (...)* ?q``, ``?q`` bound by VALUES),
Fuseki took 10.9 s to ``show`` a session at 1 M quads, 0.27 s this way (Oxigraph: the same either way)."""
_OWNED = f"?q {_DOWN}/{_LINKED}? ?s"
"""``?s``: a node of the trace whose Question is ``?q``: the Question, every node derived from it
(directly or not, through activities: its sub-traces too), and what those link to (edge selections
and their statements, chunk selections, the strict profile's agents, an approval's person,
association and role, the trustgraph profile's documents, a large value's blob).  One property path: a
union of these as separate patterns is evaluated over the whole graph (0.5 s a session in a store
of 12,000, against 3 ms)."""
SESSIONS_PER_QUERY = 500
"""Sessions whose triples :meth:`TraceReader.session_triples` reads in one query."""

_STATUS_ORDER = {FAILED: 0, UNFINISHED: 1, COMPLETE: 2}
_SORT_KEYS: dict[str, Any] = {
    "duration": lambda r: -(r.duration_ms if r.duration_ms is not None else -1),
    "steps": lambda r: -(r.steps if r.steps is not None else -1),
    "status": lambda r: _STATUS_ORDER.get(r.status, 3),
}


class TraceReader:
    """Queries over one open store."""

    def __init__(self, store: ReadStore) -> None:
        self.store = store
        self._session_index: SessionListing | None = None
        self._no_index = False

    def select(self, sparql: str) -> list[dict[str, str]]:
        """A SELECT query as rows of variable -> text (unbound: absent)."""
        return [{name: term.value for name, term in row.items()} for row in self.store.select(sparql)]

    # -- list ---------------------------------------------------------------------------------
    def sessions(self, *, kind: str | None = None, collection: str | None = None,
                 where: SessionFilter | None = None, limit: int | None = None,
                 offset: int = 0) -> list[SessionRow]:
        """Top-level sessions (sub-traces excluded), newest first: filtered, ordered and cut by the
        store (the query touches every Question, not every quad); whether each listed session ended,
        failed or ran an agent is then read from its own steps only (a step counts for the nearest
        Question above it, so a sub-trace's steps are its own)."""
        index = self.session_index()
        if index is not None:
            found = index.select(query_of(kind, collection, where), limit, offset)
            return [as_session_row(row) for row in found]
        status = where.status if where is not None else None
        sort = where.sort if where is not None else "time"
        in_python = status is not None or sort != "time"  # known once each session's steps are read
        page = f"LIMIT {int(limit)}" if limit is not None and not in_python else ""
        if offset and not in_python:
            page += f" OFFSET {int(offset)}"
        rows = self.listed(kind=kind, collection=collection, where=where, page=page)
        marks = self.marks([row["q"] for row in rows])
        sessions = [self.session_row(row, marks) for row in rows]
        if in_python:  # kept, sorted (stably: newest first among equals), then paged, here
            if status is not None:
                sessions = [s for s in sessions if s.status == status]
            if sort != "time":
                sessions.sort(key=_SORT_KEYS[sort])
            sessions = sessions[offset:] if limit is None else sessions[offset:offset + limit]
        return sessions

    def session_row(self, row: dict[str, str], marks: dict[str, Summary]) -> SessionRow:
        """A listed Question's row (:meth:`listed`) with what its own steps show (:meth:`marks`)."""
        q = row["q"]
        summary = marks.get(q, Summary())
        flow = summary.flow(flow_of_question(q) or SUBTYPE_FLOWS.get(row.get("sub", "")))
        return SessionRow(q, FLOW_TYPES[flow], row.get("query", ""), row.get("time", ""), row.get("trace"),
                          row.get("coll"), _STATUS_NAMES[summary.status], summary.steps(flow),
                          summary.duration_ms)

    def session_index(self) -> SessionListing | None:
        """The store's session index as this snapshot sees it (a
        :class:`~otel_prov.stores.sessions.SessionListing`), when the store has one that can answer
        (an on-disk store whose indexing process built it, a SPARQL server's whose writers did);
        read once per reader.  None: the graph answers."""
        if self._session_index is not None or self._no_index:
            return self._session_index
        label = getattr(self.store, "sessions", None)
        server_listing = getattr(self.store, "session_listing", None)
        if isinstance(label, SessionLabel):
            self._session_index = Listing.open(self.store, label)
            if self._session_index is None:
                self.store.sessions = None  # type: ignore[attr-defined]  # its other readers too
        elif server_listing is not None:  # a SPARQL server's (otel_prov/stores/server_sessions.py)
            self._session_index = server_listing()
        self._no_index = self._session_index is None  # once: the graph answers
        return self._session_index

    def listed(self, *, kind: str | None = None, collection: str | None = None,
               where: SessionFilter | None = None, ids: Sequence[str] | None = None,
               page: str = "") -> list[dict[str, str]]:
        """The top-level Questions a listing keeps (of ``ids`` only, when given), newest first, as
        rows of ``q`` and what the listing shows of the Question alone (``query``, ``time``, ``sub``,
        ``trace``, ``coll``): one query, which reads no step."""
        return listed(self.store, [check_iri(q) for q in ids] if ids is not None else None,
                      _where(kind, collection, where), page)

    def count_sessions(self, *, kind: str | None = None, collection: str | None = None,
                       where: SessionFilter | None = None) -> int:
        """How many top-level sessions :meth:`sessions` would list without a limit."""
        index = self.session_index()
        if index is not None:
            return index.count(query_of(kind, collection, where))
        if where is not None and where.status is not None:
            return len(self.sessions(kind=kind, collection=collection, where=where))
        rows = self.select(f"""
SELECT (COUNT(DISTINCT ?q) AS ?n) WHERE {{
  {LISTED}
  {_where(kind, collection, where)}
}}""")
        return int(rows[0]["n"]) if rows else 0

    def stamp(self) -> str:
        """A short text that changes whenever a session starts, ends or records an error (what a
        live view polls; cheaper than counting the graph's quads)."""
        index = self.session_index()
        if index is not None:
            return index.stamp()
        row = self.select(f"""
SELECT (COUNT(?q) AS ?questions) (COUNT(?end) AS ?ends) (COUNT(?error) AS ?errors) WHERE {{
  GRAPH <{GRAPH_RETRIEVAL}> {{
    {{ ?q tg:query ?text }} UNION {{ ?end a tg:Conclusion }} UNION {{ ?end a tg:Synthesis }}
    UNION {{ ?error otelprov:statusMessage ?m }} }} }}""")[0]
        return f"{row['questions']}-{row['ends']}-{row['errors']}"

    def collections(self) -> list[str]:
        """The collections sessions were recorded in, sorted."""
        index = self.session_index()
        if index is not None:
            return index.collections()
        return sorted(row["c"] for row in self.select(
            f"SELECT DISTINCT ?c WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ ?q otelprov:collection ?c }} }}"))

    def marks(self, questions: list[str], *, scoped: bool | None = None) -> dict[str, Summary]:
        """Question -> what its own steps show: marks ``end`` (a Conclusion or Synthesis), ``error``
        (an error status, the Question's included), ``analysis``, ``chunks``; how many Analysis and
        retrieval steps; its earliest start and latest end (people's approvals not counted: as
        ``show``'s duration).  For a page of sessions only the nodes
        derived from them are read; for many, one pass over the graph is cheaper."""
        if not questions:
            return {}
        scope = ""
        if scoped or (scoped is None and len(questions) <= MARKS_PER_QUESTION_UP_TO):
            scope = "VALUES ?root { " + " ".join(f"<{q}>" for q in questions) + f" }} ?root {_DOWN} ?n ."
        up: dict[str, list[str]] = defaultdict(list)
        for row in self.select(f"""
SELECT DISTINCT ?n ?up WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ {scope}
  ?n prov:wasDerivedFrom|prov:wasGeneratedBy|prov:used ?up }} }}"""):
            up[row["n"]].append(row["up"])
        found: dict[str, set[str]] = defaultdict(set)
        times: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for row in self.select(f"""
SELECT DISTINCT ?n ?mark ?t WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ {scope}
  {{ ?n a tg:Conclusion BIND("end" AS ?mark) }} UNION {{ ?n a tg:Synthesis BIND("end" AS ?mark) }}
  UNION {{ ?n otelprov:statusMessage ?m BIND("error" AS ?mark) }}
  UNION {{ ?n a tg:Analysis BIND("analysis" AS ?mark) }}
  UNION {{ ?n a tg:Exploration BIND("retrieval" AS ?mark) }}
  UNION {{ ?n a tg:Focus BIND("retrieval" AS ?mark) }}
  UNION {{ ?n tg:chunkCount ?c BIND("chunks" AS ?mark) }}
  UNION {{ ?n tg:query ?text BIND("question" AS ?mark) }}
  UNION {{ ?n a otelprov:Approval BIND("approval" AS ?mark) }}
  UNION {{ ?n otelprov:startTime|prov:startedAtTime ?t BIND("start" AS ?mark) }}
  UNION {{ ?n otelprov:endTime|prov:endedAtTime ?t BIND("finish" AS ?mark) }}
}} }}"""):
            if "t" in row:
                times[row["n"]].append((row["mark"], row["t"]))
            else:
                found[row["n"]].add(row["mark"])
        return summarize(questions, up, found, times)

    # -- show ---------------------------------------------------------------------------------
    def triples(self, question: str) -> list[TraceTriple]:
        """Every triple of the nodes derived (directly or not) from ``question``, with their
        strict-profile activities and agents, edge selections and the selected statements."""
        for _, triples in self.session_triples([question]):
            return [(s.value, p.value, o) for s, p, o in triples]
        return []

    def session_triples(self, questions: Sequence[str]) -> Iterator[tuple[str, list[Triple]]]:
        """Each Question of ``questions`` with the triples of its trace (:data:`_OWNED`: what
        :meth:`triples` gives, as terms), in the order given; read :data:`SESSIONS_PER_QUERY`
        sessions at a time, so that many sessions cost a few queries and a bounded memory."""
        for start in range(0, len(questions), SESSIONS_PER_QUERY):
            part = questions[start:start + SESSIONS_PER_QUERY]
            values = " ".join(f"<{check_iri(q)}>" for q in part)
            found: dict[str, dict[Triple, None]] = {q: {} for q in part}
            for row in self.store.select(f"""
SELECT ?q ?s ?p ?o WHERE {{ VALUES ?q {{ {values} }}
  GRAPH <{GRAPH_RETRIEVAL}> {{ {_OWNED} . ?s ?p ?o }} }}"""):
                found[row["q"].value][(row["s"], row["p"], row["o"])] = None
            for q in part:
                yield q, list(found[q])

    def find_question(self, iri: str) -> str:
        """The Question of the trace ``iri`` belongs to (``iri`` itself when it is one): the
        nearest node upstream that has ``tg:query``.  :class:`TraceNotFound` when there is none,
        :class:`~.model.NotAnIri` when ``iri`` is not an IRI."""
        check_iri(iri)
        frontier, seen = [iri], {iri}
        while frontier:
            for node in frontier:
                if self.store.ask(f"ASK {{ GRAPH <{GRAPH_RETRIEVAL}> {{ <{node}> tg:query ?q }} }}"):
                    return node
            rows = []
            for node in frontier:
                rows += self.select(f"SELECT ?up WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> "
                                    f"{{ <{node}> prov:wasDerivedFrom|prov:wasGeneratedBy|prov:used ?up }} "
                                    "}")
            frontier = sorted({r["up"] for r in rows if "up" in r} - seen)
            seen.update(frontier)
        exists = self.store.ask(
            f"ASK {{ GRAPH <{GRAPH_RETRIEVAL}> {{ {{ <{iri}> ?p ?o }} UNION {{ ?s ?p <{iri}> }} }} }}")
        if exists:
            raise TraceNotFound(f"{iri} is in the graph but belongs to no session (no Question upstream)")
        raise TraceNotFound(f"no trace {iri} in the explainability graph (see 'otel-prov list')")

    def top_question(self, question: str) -> str:
        """The top-level Question of the session ``question`` is part of: ``question`` itself,
        unless it is a sub-trace's (derived from a step of another trace), then its parent's, up."""
        seen = {question}
        while True:
            rows = self.select(f"SELECT ?up WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ <{check_iri(question)}> "
                               "prov:wasDerivedFrom|prov:wasGeneratedBy ?up } } ORDER BY ?up LIMIT 1")
            try:
                parent = self.find_question(rows[0]["up"]) if rows and "up" in rows[0] else None
            except TraceNotFound:
                parent = None
            if parent is None or parent in seen:
                return question
            seen.add(parent)
            question = parent

    def session_of_trace(self, trace_id: str) -> str:
        """The session recorded from an OpenTelemetry trace (``trace_id``: 32 hex digits, as Jaeger
        shows it): its top-level Question (a sub-trace run inside it shares its trace id).
        :class:`TraceNotFound` when no node carries that trace id."""
        value = trace_id.strip().lower()
        if not is_trace_id(value):
            raise TraceNotFound(f"not a trace id: {trace_id!r} (expected 32 hexadecimal digits)")
        rows = self.select(f"""
SELECT ?n ?query ?parent WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{
  ?n otelprov:traceId "{value}" .
  OPTIONAL {{ ?n tg:query ?query }}
  OPTIONAL {{ ?n prov:wasDerivedFrom|prov:wasGeneratedBy ?parent }}
}} }} ORDER BY ?n""")
        if not rows:
            raise TraceNotFound(f"no session recorded from trace {value} (see 'otel-prov list')")
        tops = [r["n"] for r in rows if "query" in r and "parent" not in r]
        return tops[0] if tops else self.find_question(rows[0]["n"])

    def trace_id_of(self, ref: str) -> str:
        """The whole trace id that ``ref`` (a trace id, or a unique prefix of one: 6 hex digits or
        more) names; :class:`TraceNotFound` for none, or more than one (listing them)."""
        ref = ref.strip().lower()
        if is_trace_id(ref) or not is_trace_id_prefix(ref):
            return ref
        rows = self.select(f"""
SELECT DISTINCT ?t WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ ?n otelprov:traceId ?t
  FILTER(STRSTARTS(?t, "{ref}")) }} }} ORDER BY ?t LIMIT {MAX_CANDIDATES + 1}""")
        return self._one(ref, rows, "t", "trace id", "starts")

    def question_of(self, ref: str) -> str:
        """The Question of a session named by ``ref`` as people paste it: the IRI of its Question or
        of any of its nodes (:meth:`find_question`), the OpenTelemetry trace id it was recorded from
        (:meth:`session_of_trace`: what Jaeger and ``otel-prov show`` print) or a unique prefix of it
        (6 digits or more), or the bare UUID of its IRI.  A miss of an IRI names the sessions whose
        IRIs start with it (a truncated paste) or that it starts with (a character too many)."""
        ref = ref.strip()
        if is_trace_id(ref):
            return self.session_of_trace(ref)
        if is_trace_id_prefix(ref):
            return self.session_of_trace(self.trace_id_of(ref))
        if is_uuid(ref):
            rows = self.select(f"""
SELECT DISTINCT ?q WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ ?q tg:query ?text
  FILTER(STRENDS(STR(?q), ":{ref.lower()}")) }} }} ORDER BY ?q LIMIT {MAX_CANDIDATES + 1}""")
            return self._one(ref.lower(), rows, "q", "session", "ends")
        try:
            return self.find_question(ref)
        except TraceNotFound as exc:
            if len(ref) < 12:
                raise
            near = [r["q"] for r in self.select(f"""
SELECT DISTINCT ?q WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ ?q tg:query ?text
  FILTER(STRSTARTS(STR(?q), {literal(ref)}) || STRSTARTS({literal(ref)}, STR(?q))) }} }}
ORDER BY ?q LIMIT {MAX_CANDIDATES}""") if "q" in r]
            if near:
                raise TraceNotFound(f"{exc}; did you mean {', '.join(near)}?") from None
            raise

    def _one(self, ref: str, rows: list[dict[str, str]], key: str, what: str, how: str) -> str:
        """The one match of a short reference, else :class:`TraceNotFound` listing the candidates."""
        found = [r[key] for r in rows if key in r]
        if len(found) == 1:
            return found[0]
        if not found:
            raise TraceNotFound(f"no {what} {how} with {ref} (see 'otel-prov list')")
        more = " and more" if len(found) > MAX_CANDIDATES else ""
        raise TraceNotFound(f"{ref} is ambiguous: {len(found[:MAX_CANDIDATES])}{more} {what}s match: "
                            f"{', '.join(found[:MAX_CANDIDATES])}; give more of it")

    def trace(self, ref: str) -> tuple[Trace, list[TraceTriple]]:
        """The trace of ``ref`` (a Question, any node of a trace, or a trace id), and its triples."""
        question = self.question_of(ref)
        triples = self.triples(question)
        return build_trace(question, triples), triples


def query_of(kind: str | None, collection: str | None, where: SessionFilter | None) -> SessionQuery:
    """A listing's filters as the session index applies them."""
    flow = flow_of_type(kind) if kind is not None else None
    if where is None:
        return SessionQuery(flow=flow, collection=collection)
    return SessionQuery(flow=flow, collection=collection, since=where.since_bound if where.since else None,
                        until=where.until_bound if where.until else None, text=where.text or None,
                        status=_STATUS_CODES[where.status] if where.status is not None else None,
                        tool=where.tool or None, agent=where.agent or None, model=where.model or None,
                        service=where.service or None, sort=where.sort)


def as_session_row(row: SessionEntry) -> SessionRow:
    return SessionRow(row.q, FLOW_TYPES[row.flow], row.question, row.time or "", row.trace, row.coll,
                      _STATUS_NAMES[row.status], row.steps, row.duration)


_STATUS_NAMES = {IDX_FAILED: FAILED, IDX_UNFINISHED: UNFINISHED, IDX_COMPLETE: COMPLETE}
_STATUS_CODES = {name: code for code, name in _STATUS_NAMES.items()}


def _where(kind: str | None, collection: str | None, where: SessionFilter | None) -> str:
    """The SPARQL filters of a session listing (over ``?q``, ``?query0``, ``?time0``, ``?sub0``,
    ``?coll0``).  A type is matched by the Question's subtype or IRI pattern (a Question with
    neither is listed only without a type filter)."""
    tests = []
    if kind is not None:
        subtype = next(t for t, name in SUBTYPES.items() if name == kind)
        prefix = literal(QUESTION_PREFIXES[flow_of_type(kind)])
        tests.append(f"(?sub0 = <{subtype}> || STRSTARTS(STR(?q), {prefix}))")
    if collection is not None:
        tests.append(f"?coll0 = {literal(collection)}")
    if where is not None:
        if where.text:
            words = f"LCASE({literal(where.text)})"
            tests.append(f"""(CONTAINS(LCASE(STR(?query0)), {words}) || EXISTS {{ GRAPH <{GRAPH_RETRIEVAL}> {{
    ?n (prov:wasDerivedFrom|prov:wasGeneratedBy)+ ?q .
    ?n tg:thought|tg:thought/tg:document/tg:content|tg:action|tg:arguments|tg:observation|tg:answer|tg:content
       |tg:reasoning ?said .
    FILTER(isLITERAL(?said) && CONTAINS(LCASE(STR(?said)), {words})) }} }})""")
        for value, predicate in ((where.tool, "tg:action"), (where.model, "tg:llmModel")):
            if value:
                tests.append(f"""EXISTS {{ GRAPH <{GRAPH_RETRIEVAL}> {{
    ?n (prov:wasDerivedFrom|prov:wasGeneratedBy)+ ?q . ?n {predicate} {literal(value)} }} }}""")
        for value, predicate in ((where.agent, "otelprov:agentName"),
                                 (where.service, "otelprov:serviceName")):
            if value:
                tests.append(f"EXISTS {{ GRAPH <{GRAPH_RETRIEVAL}> {{ ?q {predicate} {literal(value)} }} }}")
        if where.since:
            tests.append(f"STR(?time0) >= {literal(where.since_bound)}")
        if where.until:
            bound = where.until_bound
            tests.append(f"SUBSTR(STR(?time0), 1, {len(bound)}) <= {literal(bound)}")
    return f"FILTER({' && '.join(tests)})" if tests else ""


@dataclass
class Dashboard:
    """Many runs at once (``/dashboard``): over the sessions a filter keeps."""

    sessions: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    by_day: list[tuple[str, int, int]] = field(default_factory=list)
    """(day, sessions, of which failed or unfinished), oldest first."""
    tools: list[tuple[str, int]] = field(default_factory=list)
    """Tool name -> calls, most used first."""
    models: list[tuple[str, int, int, int]] = field(default_factory=list)
    """Model -> (calls, input tokens, output tokens), most used first."""
    slowest: list[SessionRow] = field(default_factory=list)


DASHBOARD_SESSIONS = 20_000
"""The most sessions one dashboard reads (the newest; it says so when there are more)."""


def dashboard(reader: TraceReader, *, collection: str | None = None, where: SessionFilter | None = None,
              top: int = 10) -> Dashboard:
    """The dashboard of the sessions ``where`` keeps (of ``collection``): counts by status and by day,
    the slowest, and the tools and models their steps called (with tokens)."""
    rows = reader.sessions(collection=collection, where=where, limit=DASHBOARD_SESSIONS)
    found = Dashboard(sessions=len(rows))
    days: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        found.by_status[row.status] = found.by_status.get(row.status, 0) + 1
        day = days[(row.time or "unknown")[:10]]
        day[0] += 1
        day[1] += row.status != COMPLETE
    found.by_day = [(d, n, bad) for d, (n, bad) in sorted(days.items())]
    timed = [r for r in rows if r.duration_ms is not None]
    found.slowest = sorted(timed, key=lambda r: -(r.duration_ms or 0))[:top]
    if not rows:
        return found
    values = " ".join(f"<{row.id}>" for row in rows)
    tools = reader.select(f"""
SELECT ?tool (COUNT(?n) AS ?calls) WHERE {{ VALUES ?q {{ {values} }} GRAPH <{GRAPH_RETRIEVAL}> {{
  ?n (prov:wasDerivedFrom|prov:wasGeneratedBy)+ ?q . ?n tg:action ?tool }} }}
GROUP BY ?tool ORDER BY DESC(?calls) ?tool LIMIT {top}""")
    found.tools = [(r["tool"], int(r["calls"])) for r in tools if "tool" in r]
    models = reader.select(f"""
SELECT ?model (COUNT(?n) AS ?calls) (SUM(?i) AS ?in) (SUM(?o) AS ?out) WHERE {{ VALUES ?q {{ {values} }}
  GRAPH <{GRAPH_RETRIEVAL}> {{ ?n (prov:wasDerivedFrom|prov:wasGeneratedBy)+ ?q . ?n tg:llmModel ?model .
  OPTIONAL {{ ?n tg:inToken ?i0 }} OPTIONAL {{ ?n tg:outToken ?o0 }} }}
  BIND(COALESCE(xsd:integer(?i0), 0) AS ?i) BIND(COALESCE(xsd:integer(?o0), 0) AS ?o) }}
GROUP BY ?model ORDER BY DESC(?calls) ?model LIMIT {top}""")
    found.models = [(r["model"], int(r["calls"]), int(float(r.get("in", 0))), int(float(r.get("out", 0))))
                    for r in models if "model" in r]
    return found
