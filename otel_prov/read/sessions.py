"""The rows of an on-disk store's session index (:mod:`otel_prov.stores.sessions`), computed by the
read model's own rules, and a listing read from it.

A reader brings the index up to date with its snapshot before it lists: the rows of the sessions
the fold noted since they were last computed (and of those its snapshot replayed from the log) are
computed again from the snapshot, :data:`BATCH` sessions a query; an index never built (an older
store, one bulk-loaded or rebuilt) is built whole, in the same batches.  The listing is then one
SQL query, whatever the size of the graph."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence

from ..model.vocab import GRAPH_RETRIEVAL, OTELPROV, TG
from ..stores import SessionEntry, SessionIndex, SessionLabel
from .model import (
    TraceNotFound,
    check_iri,
    type_from_iri,
)
from .reader import TraceReader, summarize

logger = logging.getLogger(__name__)

BATCH = 200
"""Sessions whose rows one round of queries computes."""
WAIT = 5.0
"""Seconds a reader waits for another process computing rows (as long as a reader waits for a fold)."""

def up_to_date(reader: TraceReader, label: SessionLabel, wait: float | None = WAIT) -> SessionIndex | None:
    """The session index of the store ``label`` names, brought up to date with ``reader``'s
    snapshot; None when it cannot be used (said once; the caller lists from the graph), or when
    another process computes rows for longer than ``wait`` seconds (a whole build: minutes)."""
    try:
        index = SessionIndex(label.path)
    except Exception as exc:  # noqa: BLE001 - a listing never fails for its index: the graph answers
        logger.warning("otel-prov: the session index of %s is not used: %s", label.path, exc)
        return None
    try:
        if not index.computing(wait):
            logger.warning("otel-prov: the session index of %s is being built by another process; "
                           "listed from the graph meanwhile (slower)", label.path)
            index.close()
            return None
        if not index.built():
            index.start_build()
            questions = [row["q"] for row in reader.listed()]
            for start in range(0, len(questions), BATCH):
                index.save(rows(reader, questions[start:start + BATCH]), (), (), label.seq)
            index.end_build(label.seq)
        keys = sorted(set(index.due(label.seq)) | label.unfolded)
        started = time.perf_counter()
        for start in range(0, len(keys), BATCH):
            part = keys[start:start + BATCH]
            found = _questions(reader, part)
            computed = rows(reader, found)
            listed = {row.q for row in computed}
            index.save(computed, sorted((set(part) | set(found)) - listed), part, label.seq)
        if keys:
            logger.debug("otel-prov: %d session(s) of the session index of %s computed in %.3f s", len(keys),
                         label.path, time.perf_counter() - started)
    except BaseException:
        index.close()
        raise
    index.computed()
    return index


def _questions(reader: TraceReader, keys: Sequence[str]) -> list[str]:
    """The Questions whose rows ``keys`` (:func:`~otel_prov.stores.sessions.session_key`) may have
    changed: each key's session, and the top-level session a sub-trace is part of (its texts, tools
    and models are the top's too)."""
    values = " ".join(f"<{check_iri(k)}>" for k in keys)
    questions = {row["k"] for row in reader.select(f"""
SELECT ?k WHERE {{ VALUES ?k {{ {values} }} GRAPH <{GRAPH_RETRIEVAL}> {{ ?k tg:query ?text }} }}""")}
    for key in set(keys) - questions:  # a node of another pattern: its session, when it has one
        try:
            questions.add(reader.find_question(key))
        except TraceNotFound:
            pass
    found = set(questions)
    if questions:
        values = " ".join(f"<{q}>" for q in sorted(questions))
        for row in reader.select(f"""
SELECT DISTINCT ?q WHERE {{ VALUES ?q {{ {values} }} GRAPH <{GRAPH_RETRIEVAL}> {{
  ?q prov:wasDerivedFrom|prov:wasGeneratedBy ?up }} }}"""):
            found.add(reader.top_question(row["q"]))
    return sorted(found)


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
_MODEL, _ACTION = _TG + "llmModel", _TG + "action"
_AGENT, _SERVICE = _OTELPROV + "agentName", _OTELPROV + "serviceName"
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_READ = sorted(_UP | set(_MARK_PREDICATES) | set(_TIMES) | _SAID | {_MODEL, _AGENT, _SERVICE, _RDF_TYPE})
"""The predicates a row is made of: one query reads them for every node of a batch of sessions."""


def rows(reader: TraceReader, questions: Sequence[str]) -> list[SessionEntry]:
    """The rows of those of ``questions`` that are top-level sessions (as ``otel-prov list`` shows
    them without the index, and what its filters test): which they are and what their Question
    says, as :meth:`~.reader.TraceReader.listed` reads it; the rest from one query over their nodes,
    counted as :meth:`~.reader.TraceReader.marks` and the filters of :func:`.reader._where` count."""
    listed = reader.listed(ids=questions) if questions else []
    if not listed:
        return []
    ids = [row["q"] for row in listed]
    values = " ".join(f"<{q}>" for q in ids)
    wanted = ", ".join(f"<{p}>" for p in _READ)
    up: dict[str, list[str]] = defaultdict(list)
    derived: dict[str, list[str]] = defaultdict(list)
    found: dict[str, set[str]] = defaultdict(set)
    times: dict[str, list[tuple[str, str]]] = defaultdict(list)
    own: dict[str, list[tuple[str, str]]] = defaultdict(list)
    seen: set[tuple[str, str, str]] = set()
    for row in reader.select(f"""
SELECT ?n ?p ?o WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ VALUES ?q {{ {values} }}
  ?n (prov:wasDerivedFrom|prov:wasGeneratedBy|prov:used)* ?q . ?n ?p ?o FILTER(?p IN ({wanted})) }} }}"""):
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
    said: dict[str, list[str]] = defaultdict(list)
    tools: dict[str, set[str]] = defaultdict(set)
    models: dict[str, set[str]] = defaultdict(set)
    tops = set(ids)
    for n, pairs in own.items():
        for q in _above(n, derived, tops):
            for p, o in pairs:
                if p == _MODEL:
                    models[q].add(o)
                elif p in _SAID:
                    said[q].append(o.lower())
                    if p == _ACTION:
                        tools[q].add(o)
    out = []
    for row in listed:
        q = row["q"]
        session = reader.session_row(row, marks)
        agents = sorted(o for p, o in own.get(q, ()) if p == _AGENT)
        services = sorted(o for p, o in own.get(q, ()) if p == _SERVICE)
        out.append(SessionEntry(
            q, session.type, reader.declared_type(row), type_from_iri(q), session.question,
            row.get("time"), session.trace_id, session.collection, session.status, session.steps,
            session.duration_ms, agents, services, sorted(tools[q]), sorted(models[q]),
            "\n".join([session.question.lower(), *_unique(said[q])])))
    return out


def _above(node: str, derived: dict[str, list[str]], tops: set[str]) -> set[str]:
    """The sessions of ``tops`` that ``node`` derives from through one derivation link or more."""
    found: set[str] = set()
    frontier, seen = list(derived.get(node, ())), {node}
    while frontier:
        seen.update(frontier)
        found.update(n for n in frontier if n in tops)
        frontier = [o for n in frontier for o in derived.get(n, ()) if o not in seen]
    return found


def _unique(texts: Iterable[str]) -> list[str]:
    return sorted(set(texts))
