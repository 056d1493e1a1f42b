"""Reading sessions and traces back from a store, through the store's read protocol
(:class:`~otel_prov.stores.base.ReadStore`: SPARQL over the graph ``urn:graph:retrieval``), as the
plain data of :mod:`.model`."""

from __future__ import annotations

import re
from collections import defaultdict

from ..model.vocab import GRAPH_RETRIEVAL
from ..stores.base import ReadStore
from .build import SUBTYPES, TraceTriple, build_trace
from .model import (
    AGENT,
    COMPLETE,
    DOC_RAG,
    FAILED,
    GRAPH_RAG,
    UNFINISHED,
    SessionRow,
    Trace,
    TraceNotFound,
    time_key,
    type_from_iri,
)

_TRACE_ID = re.compile(r"[0-9a-f]{32}")


class TraceReader:
    """Queries over one open store."""

    def __init__(self, store: ReadStore) -> None:
        self.store = store

    def select(self, sparql: str) -> list[dict[str, str]]:
        """A SELECT query as rows of variable -> text (unbound: absent)."""
        return [{name: term.value for name, term in row.items()} for row in self.store.select(sparql)]

    # -- list ---------------------------------------------------------------------------------
    def sessions(self, *, kind: str | None = None, collection: str | None = None,
                 limit: int | None = None) -> list[SessionRow]:
        """Top-level sessions (sub-traces excluded), newest first.  Three flat queries; whether a
        session ended, failed or ran an agent is worked out here from the derivation links (a
        step counts for the nearest Question above it, so a sub-trace's steps are its own)."""
        rows = self.select(f"""
SELECT ?q ?query ?time ?sub ?trace ?coll ?parent WHERE {{
  GRAPH <{GRAPH_RETRIEVAL}> {{
    ?q tg:query ?query .
    OPTIONAL {{ ?q prov:wasDerivedFrom|prov:wasGeneratedBy ?parent }}
    OPTIONAL {{ ?q prov:startedAtTime ?time }}
    OPTIONAL {{ ?q prov:generatedAtTime ?time }}
    OPTIONAL {{ ?q a ?sub . FILTER(?sub IN (tg:AgentQuestion, tg:GraphRagQuestion, tg:DocRagQuestion)) }}
    OPTIONAL {{ ?q otelprov:traceId ?trace }}
    OPTIONAL {{ ?q otelprov:collection ?coll }}
  }}
}}""")
        questions = {row["q"] for row in rows}
        marks = self._marks(questions)
        by_id: dict[str, SessionRow] = {}
        for row in rows:
            q = row["q"]
            if q in by_id or "parent" in row:
                continue
            found = marks.get(q, set())
            type_ = (type_from_iri(q) or SUBTYPES.get(row.get("sub", ""))
                     or (AGENT if "analysis" in found else DOC_RAG if "chunks" in found else GRAPH_RAG))
            status = FAILED if "error" in found else COMPLETE if "end" in found else UNFINISHED
            by_id[q] = SessionRow(q, type_, row.get("query", ""), row.get("time", ""), row.get("trace"),
                                  row.get("coll"), status)
        sessions = [s for s in by_id.values()
                    if (kind is None or s.type == kind)
                    and (collection is None or s.collection == collection)]
        sessions.sort(key=lambda s: (time_key(s.time), s.id), reverse=True)
        return sessions[:limit] if limit is not None else sessions

    def _marks(self, questions: set[str]) -> dict[str, set[str]]:
        """Question -> what its own steps show: ``end`` (a Conclusion or Synthesis), ``error`` (an
        error status, the Question's included), ``analysis``, ``chunks``."""
        up: dict[str, list[str]] = defaultdict(list)
        for row in self.select(f"""
SELECT ?s ?o WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{
  ?s prov:wasDerivedFrom|prov:wasGeneratedBy|prov:used ?o }} }}"""):
            up[row["s"]].append(row["o"])
        marks: dict[str, set[str]] = defaultdict(set)
        for row in self.select(f"""
SELECT DISTINCT ?n ?mark WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{
  {{ ?n a tg:Conclusion BIND("end" AS ?mark) }} UNION {{ ?n a tg:Synthesis BIND("end" AS ?mark) }}
  UNION {{ ?n otelprov:statusMessage ?m BIND("error" AS ?mark) }}
  UNION {{ ?n a tg:Analysis BIND("analysis" AS ?mark) }}
  UNION {{ ?n tg:chunkCount ?c BIND("chunks" AS ?mark) }}
}} }}"""):
            owner = _nearest(row["n"], questions, up)
            if owner is not None:
                marks[owner].add(row["mark"])
        return marks

    # -- show ---------------------------------------------------------------------------------
    def triples(self, question: str) -> list[TraceTriple]:
        """Every triple of the nodes derived (directly or not) from ``question``, with their
        strict-profile activities and agents, edge selections and the selected statements."""
        chain = "(prov:wasDerivedFrom|prov:wasGeneratedBy|prov:used)*"
        q = f"<{question}>"
        sparql = f"""
SELECT DISTINCT ?s ?p ?o WHERE {{
  GRAPH <{GRAPH_RETRIEVAL}> {{
    {{ ?s {chain} {q} }}
    UNION {{ ?n {chain} {q} . ?n tg:selectedEdge ?s }}
    UNION {{ ?n {chain} {q} . ?n tg:selectedEdge/tg:edge ?s }}
    UNION {{ ?n {chain} {q} . ?n prov:wasAssociatedWith ?s }}
    ?s ?p ?o
  }}
}}"""
        return [(row["s"].value, row["p"].value, row["o"]) for row in self.store.select(sparql)]

    def find_question(self, iri: str) -> str:
        """The Question of the trace ``iri`` belongs to (``iri`` itself when it is one): the
        nearest node upstream that has ``tg:query``.  :class:`TraceNotFound` when there is none."""
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

    def session_of_trace(self, trace_id: str) -> str:
        """The session recorded from an OpenTelemetry trace (``trace_id``: 32 hex digits, as Jaeger
        shows it): its top-level Question (a sub-trace run inside it shares its trace id).
        :class:`TraceNotFound` when no node carries that trace id."""
        value = trace_id.strip().lower()
        if not _TRACE_ID.fullmatch(value):
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

    def trace(self, iri: str) -> tuple[Trace, list[TraceTriple]]:
        """The trace of ``iri`` (a Question, or any node of a trace), and its triples."""
        question = self.find_question(iri)
        triples = self.triples(question)
        return build_trace(question, triples), triples


def _nearest(node: str, questions: set[str], up: dict[str, list[str]]) -> str | None:
    """The first Question met going up the derivation links from ``node`` (itself included)."""
    frontier, seen = [node], {node}
    while frontier:
        for n in frontier:
            if n in questions:
                return n
        frontier = [o for n in frontier for o in up.get(n, ()) if o not in seen]
        seen.update(frontier)
    return None
