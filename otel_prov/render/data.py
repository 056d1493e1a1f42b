"""JSON: the sessions of ``otel-prov list --format json`` and one trace as ``otel-prov show --format
json`` gives it (the read model as data).  Keys are camelCase throughout, as the graph's own
predicates (``traceId``, ``edgeCount``) and OTLP/JSON are; the schema is docs/schema/ (checked by
the tests)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..read.diff import CHANGED, EQUAL, ONLY_A, ONLY_B, TEXT, Entry, Pair, TraceDiff, Value
from ..read.model import SessionRow, Trace, TraceStep
from .links import jaeger_link


def session_dicts(rows: Sequence[SessionRow]) -> list[dict[str, Any]]:
    """The sessions as ``list --format json`` writes them (and the web view's API serves them)."""
    return [r.as_json() for r in rows]


def session_json(rows: Sequence[SessionRow]) -> str:
    return json.dumps(session_dicts(rows), indent=2, ensure_ascii=False) + "\n"


def trace_dict(trace: Trace, jaeger: str | None = None) -> dict[str, Any]:
    return {
        "id": trace.id,
        "type": trace.type,
        "question": trace.question,
        "agent": trace.agent,
        "service": trace.service,
        "notCaptured": trace.not_captured,
        "redacted": trace.redacted,
        "time": trace.time,
        "traceId": trace.trace_id,
        "jaegerUrl": jaeger_link(jaeger, trace.trace_id),
        "collection": trace.collection,
        "status": trace.status,
        "derivedFrom": trace.derived_from,
        "errors": trace.errors,
        "steps": [_step_dict(s, jaeger) for s in trace.steps],
        "subtraces": [trace_dict(s, jaeger) for s in trace.subtraces],
    }


def _step_dict(step: TraceStep, jaeger: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": step.iri, "kind": step.kind}
    if step.number is not None:
        out["number"] = step.number
    for name, values in sorted(step.values.items()):
        out[name] = values if name == "selectedChunk" or len(values) > 1 else values[0]
    if step.duration_ms is not None:
        out["durationMs"] = step.duration_ms
    if step.chunk_scores:
        out["chunkScores"] = [{"chunk": c.chunk, "rank": c.rank, "score": c.score} for c in step.chunk_scores]
    if step.edges:
        out["selectedEdges"] = [{"id": e.iri, "edge": list(e.edge) if e.edge else None,
                                 "reasoning": e.reasoning} for e in step.edges]
    if step.approvals:
        out["approvals"] = [a.as_json() for a in step.approvals]
    out["subtraces"] = [trace_dict(s, jaeger) for s in step.subtraces]
    return out


def trace_json(trace: Trace, jaeger: str | None = None) -> str:
    return json.dumps(trace_dict(trace, jaeger), indent=2, ensure_ascii=False) + "\n"


def _value(value: Value) -> dict[str, Any]:
    """A compared value: ``{"state": "value", "values": [...]}``, or only its state
    (``notCaptured``, ``redacted``, ``absent``)."""
    if value.state == TEXT:
        return {"state": value.state, "values": list(value.texts)}
    return {"state": value.state}


def _measures(pairs: dict[str, tuple[float | None, float | None]]) -> dict[str, Any]:
    return {name: {"a": a, "b": b, "delta": None if a is None or b is None else b - a}
            for name, (a, b) in pairs.items()}


def _entry(entry: Entry | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    return {"id": entry.iri, "title": entry.title, "kind": entry.kind, "depth": entry.depth}


def _pair(pair: Pair) -> dict[str, Any]:
    """An aligned pair: its entries, the values that differ (both sides; all of an entry in one run
    only), and its measures."""
    names = pair.changed if pair.a is not None and pair.b is not None else pair.names
    return {"status": pair.status, "a": _entry(pair.a), "b": _entry(pair.b), "changed": list(pair.changed),
            "values": {name: {"a": _value(pair.value("a", name)), "b": _value(pair.value("b", name))}
                       for name in names},
            "measures": _measures(pair.deltas())}


def _run(trace: Trace) -> dict[str, Any]:
    return {"id": trace.id, "type": trace.type, "question": trace.question, "status": trace.status,
            "time": trace.time, "traceId": trace.trace_id, "collection": trace.collection,
            "service": trace.service, "agent": trace.agent}


def diff_dict(found: TraceDiff) -> dict[str, Any]:
    """``otel-prov diff --format json`` (and the web view's ``/api/diff``)."""
    first = found.first
    after = found.downstream
    return {
        "identical": found.identical,
        "a": _run(found.a),
        "b": _run(found.b),
        "firstDivergence": None if first is None else {"index": first, **_pair(found.pairs[first])},
        "downstream": {
            "a": [p.a.iri for p in after if p.a is not None],
            "b": [p.b.iri for p in after if p.b is not None],
            **{status: found.count(status, after) for status in (EQUAL, CHANGED, ONLY_A, ONLY_B)}},
        "entries": [_pair(p) for p in found.pairs],
        "measures": _measures(found.totals),
    }


def diff_json(found: TraceDiff) -> str:
    return json.dumps(diff_dict(found), indent=2, ensure_ascii=False) + "\n"


CSV_COLUMNS = ("id", "type", "question", "time", "traceId", "collection", "status", "steps", "durationMs")


def sessions_csv(rows: Sequence[SessionRow]) -> str:
    """The list as CSV (a header, then one row per session; the JSON's keys as columns)."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in session_dicts(rows):
        writer.writerow(["" if row.get(c) is None else row[c] for c in CSV_COLUMNS])
    return out.getvalue()
