"""The rows of an on-disk store's session index (:mod:`otel_prov.stores.sessions`), computed by the
read model's own rules, and a listing read from it.

A reader brings the index up to date with its snapshot before it lists: the rows of the sessions
the fold noted since they were last computed (and of those its snapshot replayed from the log) are
computed again from the snapshot, :data:`BATCH` sessions a query; an index never built (an older
store, one bulk-loaded or rebuilt) is built whole, in the same batches.  The listing is then one
SQL query, whatever the size of the graph."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..model.vocab import GRAPH_RETRIEVAL
from ..stores.sessions import Label, Query, Row, SessionIndex
from .model import (
    COMPLETE,
    FAILED,
    UNFINISHED,
    SessionFilter,
    SessionRow,
    TraceNotFound,
    check_iri,
    type_from_iri,
)

if TYPE_CHECKING:
    from .reader import TraceReader

logger = logging.getLogger(__name__)

BATCH = 200
"""Sessions whose rows one round of queries computes."""

_TEXTS = "tg:thought|tg:action|tg:arguments|tg:observation|tg:answer|tg:content|tg:reasoning"
"""What the text filter searches besides the question (as :func:`.reader._where`)."""


def query_of(kind: str | None, collection: str | None, where: SessionFilter | None) -> Query:
    if where is None:
        return Query(kind=kind, collection=collection)
    return Query(kind=kind, collection=collection, since=where.since_bound if where.since else None,
                 until=where.until_bound if where.until else None, text=where.text or None,
                 status=where.status, tool=where.tool or None, agent=where.agent or None,
                 model=where.model or None, service=where.service or None, sort=where.sort,
                 statuses=(FAILED, UNFINISHED, COMPLETE))


def as_session_row(row: Row) -> SessionRow:
    return SessionRow(row.q, row.type, row.question, row.time or "", row.trace, row.coll, row.status,
                      row.steps, row.duration)


def up_to_date(reader: TraceReader, label: Label) -> SessionIndex | None:
    """The session index of the store ``label`` names, brought up to date with ``reader``'s
    snapshot; None when it cannot be used (said once; the caller lists from the graph)."""
    try:
        index = SessionIndex(label.path)
    except Exception as exc:  # noqa: BLE001 - a listing never fails for its index: the graph answers
        logger.warning("otel-prov: the session index of %s is not used: %s", label.path, exc)
        return None
    try:
        if not index.built():
            index.start_build()
            questions = [row["q"] for row in reader.listed()]
            for start in range(0, len(questions), BATCH):
                index.save(rows(reader, questions[start:start + BATCH]), (), (), label.seq)
            index.end_build(label.seq)
        keys = sorted(set(index.due(label.seq)) | label.unfolded)
        for start in range(0, len(keys), BATCH):
            part = keys[start:start + BATCH]
            found = _questions(reader, part)
            computed = rows(reader, found)
            listed = {row.q for row in computed}
            index.save(computed, sorted((set(part) | set(found)) - listed), part, label.seq)
    except BaseException:
        index.close()
        raise
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


def rows(reader: TraceReader, questions: Sequence[str]) -> list[Row]:
    """The rows of those of ``questions`` that are top-level sessions (as ``otel-prov list`` shows
    them without the index, and what its filters test)."""
    listed = reader.listed(ids=questions) if questions else []
    if not listed:
        return []
    ids = [row["q"] for row in listed]
    marks = reader.marks(ids, scoped=True)
    values = " ".join(f"<{q}>" for q in ids)
    agents: dict[str, set[str]] = defaultdict(set)
    services: dict[str, set[str]] = defaultdict(set)
    for row in reader.select(f"""
SELECT ?q ?p ?o WHERE {{ VALUES ?q {{ {values} }} GRAPH <{GRAPH_RETRIEVAL}> {{
  ?q otelprov:agentName|otelprov:serviceName ?o . ?q ?p ?o }} }}"""):
        (agents if row["p"].endswith("agentName") else services)[row["q"]].add(row["o"])
    said: dict[str, list[str]] = defaultdict(list)
    tools: dict[str, set[str]] = defaultdict(set)
    models: dict[str, set[str]] = defaultdict(set)
    for row in reader.select(f"""
SELECT ?q ?p ?o WHERE {{ VALUES ?q {{ {values} }} GRAPH <{GRAPH_RETRIEVAL}> {{
  ?n (prov:wasDerivedFrom|prov:wasGeneratedBy)+ ?q . ?n {_TEXTS}|tg:llmModel ?o . ?n ?p ?o }} }}"""):
        q, p, o = row["q"], row["p"], row["o"]
        if p.endswith("llmModel"):
            models[q].add(o)
            continue
        if p.endswith("action"):
            tools[q].add(o)
        said[q].append(o.lower())
    out = []
    for row in listed:
        q = row["q"]
        session = reader.session_row(row, marks)
        out.append(Row(
            q, session.type, reader.declared_type(row), type_from_iri(q), session.question,
            row.get("time"), session.trace_id, session.collection, session.status, session.steps,
            session.duration_ms, sorted(agents[q]), sorted(services[q]), sorted(tools[q]),
            sorted(models[q]), "\n".join([session.question.lower(), *_unique(said[q])])))
    return out


def _unique(texts: Iterable[str]) -> list[str]:
    return sorted(set(texts))
