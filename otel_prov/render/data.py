"""JSON: the sessions of ``otel-prov list --format json`` and one trace as ``otel-prov show --format
json`` gives it (the read model as data).  Keys are camelCase throughout, as the graph's own
predicates (``traceId``, ``edgeCount``) and OTLP/JSON are; the schema is docs/schema/ (checked by
the tests)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

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
    out["subtraces"] = [trace_dict(s, jaeger) for s in step.subtraces]
    return out


def trace_json(trace: Trace, jaeger: str | None = None) -> str:
    return json.dumps(trace_dict(trace, jaeger), indent=2, ensure_ascii=False) + "\n"


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
