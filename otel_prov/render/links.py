"""Links out of the graph: a trace's page in the Jaeger UI."""

from __future__ import annotations


def jaeger_link(base: str | None, trace_id: str | None) -> str | None:
    if not base or not trace_id:
        return None
    return f"{base.rstrip('/')}/trace/{trace_id}"
