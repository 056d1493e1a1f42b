"""A session's timeline (a waterfall): each step a bar placed by when it started and sized by how
long it took, relative to the whole session, sub-traces nested under the step that ran them.  Pure:
a :class:`~otel_prov.read.model.Trace` in, rows out (the web view draws them)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..read.graph import step_title
from ..read.model import Trace, TraceStep, epoch_ns, format_ms


@dataclass(frozen=True)
class Bar:
    """One row of the waterfall."""

    label: str
    depth: int
    """0: a step of the session; 1: of a sub-trace it ran; ..."""
    left: float
    """Where the bar starts, in percent of the session's span."""
    width: float
    """How long it is, in percent (at least a sliver, so an instant step shows)."""
    took: str
    """Its duration as a person reads it (empty when its times are not recorded)."""
    detail: str
    """What else the step says of itself: model, tokens, tool, status."""
    failed: bool = False
    anchor: str = ""
    """The id of the step's block on the page."""


MIN_WIDTH = 0.4
"""Percent: the narrowest bar drawn (an instant step is still seen)."""


def _times(step: TraceStep) -> tuple[int, int] | None:
    start, end = epoch_ns(step.value("startTime")), epoch_ns(step.value("endTime"))
    if start is None:
        return None
    return start, end if end is not None and end >= start else start


def _all(trace: Trace, depth: int = 0) -> list[tuple[int, TraceStep]]:
    found: list[tuple[int, TraceStep]] = []
    for step in trace.steps:
        found.append((depth, step))
        for sub in step.subtraces:
            found += _all(sub, depth + 1)
    for sub in trace.subtraces:
        found += _all(sub, depth + 1)
    return found


def timeline(trace: Trace) -> list[Bar]:
    """The waterfall of ``trace``: its steps (and its sub-traces' steps, nested) that recorded when
    they ran, in order; empty when none did."""
    steps = [(depth, step, times) for depth, step in _all(trace) if (times := _times(step)) is not None]
    if not steps:
        return []
    first = min(times[0] for _, _, times in steps)
    last = max(times[1] for _, _, times in steps)
    span = max(last - first, 1)
    bars = []
    for depth, step, (start, end) in steps:
        details = [text for label, text in step.facts() if label in ("Model", "Tokens", "Finish reason")]
        if step.value("action"):
            details.insert(0, str(step.value("action")))
        took = format_ms((end - start) / 1e6) if end > start else ""
        bars.append(Bar(label=step_title(step), depth=depth, left=100 * (start - first) / span,
                        width=max(MIN_WIDTH, 100 * (end - start) / span), took=took,
                        detail=" · ".join(details), failed=bool(step.error),
                        anchor=step_anchor(step.iri)))
    return bars


def step_anchor(iri: str) -> str:
    """The id of a step's block on the session page (stable, and unique among sub-traces' steps)."""
    return "step-" + hashlib.sha256(iri.encode("utf-8")).hexdigest()[:12]
