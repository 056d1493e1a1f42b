"""The mapper's memory bound (its docstring): past ``max_spans`` or ``max_bytes`` the least recently
updated trace is forgotten, traces without framework spans first, and a framework trace forgotten
stays forgotten (its late spans are refused, counted).  Pure: spans in, updates out."""

from __future__ import annotations

import pytest

from otel_prov.mapping.mapper import LATE_SPAN, TraceMapper
from otel_prov.mapping.spans import SpanRecord


def _agent(trace_id: int, text: str = "") -> list[SpanRecord]:
    """A framework (GenAI) trace: an agent and one tool call, the tool's result ``text``."""
    agent = SpanRecord(trace_id, 1, "invoke_agent a", 10, 100, {"gen_ai.operation.name": "invoke_agent",
                                                               "gen_ai.agent.name": "a"})
    return [agent, _tool(trace_id, 2, text)]


def _tool(trace_id: int, span_id: int, text: str = "") -> SpanRecord:
    return SpanRecord(trace_id, span_id, "execute_tool t", 20 + span_id, 30 + span_id,
                      {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
                       "gen_ai.tool.call.result": text}, parent_id=1)


def _plain(trace_id: int) -> list[SpanRecord]:
    """A trace with no agent or tool span (HTTP calls)."""
    return [SpanRecord(trace_id, 1, "GET /", 0, 5, {"http.method": "GET"}),
            SpanRecord(trace_id, 2, "GET /x", 1, 4, {"http.method": "GET"}, parent_id=1)]


def _kept(mapper: TraceMapper, trace_id: int, span_id: int, text: str = "") -> bool:
    """Whether the mapper still knows a GenAI trace: a late tool call of it is mapped (a new step)
    rather than refused as the late span of a forgotten trace."""
    update = mapper.map([_tool(trace_id, span_id, text)])
    if LATE_SPAN in update.problems:
        assert not update.add
        return False
    assert update.add and not update.problems, update.problems
    return True


@pytest.mark.parametrize("bound", ["max_spans", "max_bytes"])
def test_past_its_memory_bound_the_mapper_forgets_plain_traces_first_then_the_least_recent(
        bound: str) -> None:
    """The mapper's docstring: past ``max_spans`` (or ``max_bytes``) the least recently updated trace
    is forgotten, traces without framework spans first, and a GenAI trace forgotten stays forgotten
    (its late spans are refused, counted)."""
    text = "x" * 20_000 if bound == "max_bytes" else ""
    first, second, plain, third = 0xA1, 0xB2, 0xC3, 0xD4
    if bound == "max_spans":
        mapper = TraceMapper("seed", max_spans=6)  # three traces of two spans
    else:  # room for three GenAI traces, not for a plain one besides
        probe = TraceMapper("seed")
        probe.map(_agent(first, text))
        genai = probe.stats()["bytes"]
        probe.map(_plain(plain))
        mapper = TraceMapper("seed", max_bytes=3 * genai + (probe.stats()["bytes"] - genai) // 2)
    assert mapper.map(_agent(first, text)).add
    assert mapper.map(_agent(second, text)).add
    mapper.map(_plain(plain))  # the most recent: yet forgotten first
    assert mapper.stats()["forgotten_traces"] == 0
    assert mapper.map(_agent(third, text)).add  # over the bound: `plain` goes, only it
    assert mapper.stats()["forgotten_traces"] == 1
    assert _kept(mapper, first, 3, text)  # over again: the least recently updated GenAI trace goes
    assert mapper.stats()["forgotten_traces"] == 2
    assert not _kept(mapper, second, 3)
    assert _kept(mapper, third, 3)
