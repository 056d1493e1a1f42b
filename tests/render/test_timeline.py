"""The session's timeline (render/timeline.py): bars placed and sized from the steps' recorded times,
sub-traces nested, values written by hand."""

from __future__ import annotations

from otel_prov.read.model import Trace, TraceStep
from otel_prov.render.timeline import MIN_WIDTH, step_anchor, timeline


def step(iri: str, kind: str, start: str | None, end: str | None, number: int | None = None,
         **values: str) -> TraceStep:
    found = {k: [v] for k, v in values.items()}
    if start:
        found["startTime"] = [start]
    if end:
        found["endTime"] = [end]
    return TraceStep(iri, kind, found, number)


def test_bars_are_placed_and_sized_by_the_recorded_times() -> None:
    sub = Trace("urn:trustgraph:docrag:s", "DocRAG", "q", None, None, None, None, steps=[
        step("urn:trustgraph:docrag:s/exploration", "Exploration", "2026-12-04T10:00:02Z",
             "2026-12-04T10:00:03Z")])
    first = step("urn:trustgraph:agent:a/i1", "Analysis", "2026-12-04T10:00:00Z", "2026-12-04T10:00:06Z", 1,
                 action="search", llmModel="m")
    first.subtraces.append(sub)
    trace = Trace("urn:trustgraph:agent:a", "Agent", "q", None, None, None, None, steps=[
        first,
        step("urn:trustgraph:agent:a/i2", "Analysis", "2026-12-04T10:00:06Z", "2026-12-04T10:00:06.006Z", 2),
        step("urn:trustgraph:agent:a/i3", "Analysis", None, None, 3),  # no times: not drawn
        step("urn:trustgraph:agent:a/answer", "Conclusion", "2026-12-04T10:00:10Z", "2026-12-04T10:00:10Z"),
    ])
    bars = timeline(trace)
    assert [(b.label, b.depth) for b in bars] == [("Analysis 1", 0), ("Exploration", 1), ("Analysis 2", 0),
                                                  ("Conclusion", 0)]
    assert [(round(b.left, 2), round(b.width, 2), b.took) for b in bars] == [
        (0.0, 60.0, "6.0 s"), (20.0, 10.0, "1.0 s"), (60.0, MIN_WIDTH, "6.0 ms"), (100.0, MIN_WIDTH, "")]
    assert bars[0].detail == "search · m" and bars[0].anchor == step_anchor("urn:trustgraph:agent:a/i1")
    assert bars[0].anchor != bars[2].anchor


def test_no_recorded_times_no_timeline() -> None:
    trace = Trace("urn:trustgraph:agent:a", "Agent", "q", None, None, None, None,
                  steps=[step("urn:trustgraph:agent:a/i1", "Analysis", None, None, 1)])
    assert timeline(trace) == []
