"""The framework mapping of some spans as a whole, once (``TraceMapper`` keeps the trees as spans
arrive and maps each trace again as it grows): what the tests of the mapping compare."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from otel_prov.mapping.agents import AgentsMapped, trace_mapped
from otel_prov.mapping.conversations import components, map_conversation
from otel_prov.mapping.spans import SpanLike
from otel_prov.mapping.tree import trace_view


def map_agent_traces(spans: Sequence[SpanLike], profile: str) -> AgentsMapped:
    """The quads of the framework runs in some spans (of one or more traces), chat conversations
    across the traces given included."""
    result = AgentsMapped()
    by_trace: dict[int, list[Any]] = {}
    for span in spans:
        view, _ = trace_view(span, result.problems)
        by_trace.setdefault(span.trace_id, []).append(view)
    for trace_id in sorted(by_trace):
        trace_mapped(by_trace[trace_id], profile, result)
    for component in components(result.free_calls):
        map_conversation(component, profile, result)
    return result
