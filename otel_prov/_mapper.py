"""The mapping with the little state it needs: a trace's standard GenAI spans.

Spans with our attributes are mapped one at a time by the pure :func:`otel_prov._mapping.map_span`.
Standard GenAI agent traces (``invoke_agent`` with ``execute_tool`` descendants, no ``otel_prov.*``
attributes) need their whole tree to number the steps, so their spans are kept per trace and the
trace's graph is recomputed (by the pure :func:`otel_prov._genai.map_genai_trace`) whenever one of
its spans arrives; the update removes what is no longer true and adds what is new.  Both paths are
order-independent and idempotent.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from ._genai import genai_relevant, map_genai_trace
from ._mapping import Mapped, Quad, is_prov_span, map_span
from ._spans import SpanRecord

MAX_TRACES = 10_000
"""GenAI traces whose spans are remembered (least recently updated are forgotten first)."""
MAX_SPANS_PER_TRACE = 10_000


@dataclass
class Update:
    add: list[Quad] = field(default_factory=list)
    remove: list[Quad] = field(default_factory=list)
    mapped: int = 0
    ignored: int = 0
    problems: list[str] = field(default_factory=list)


@dataclass
class _Trace:
    spans: dict[int, SpanRecord] = field(default_factory=dict)
    quads: frozenset[Quad] = frozenset()


class TraceMapper:
    """Thread-safe.  One per exporter or receiver."""

    def __init__(self, profile: str) -> None:
        self.profile = profile
        self._traces: OrderedDict[int, _Trace] = OrderedDict()
        self._lock = threading.Lock()

    def map(self, records: Iterable[SpanRecord]) -> Update:
        direct = Mapped()
        genai: dict[int, list[SpanRecord]] = {}
        for rec in records:
            if is_prov_span(rec):
                map_span(rec, self.profile, direct)
            else:
                genai.setdefault(rec.trace_id, []).append(rec)
        update = Update(add=direct.quads, mapped=direct.mapped, ignored=direct.ignored,
                        problems=direct.problems)
        if genai:
            with self._lock:
                for trace_id, recs in genai.items():
                    self._update_trace(trace_id, recs, update)
        return update

    def _update_trace(self, trace_id: int, recs: list[SpanRecord], update: Update) -> None:
        trace = self._traces.get(trace_id)
        if trace is None:
            if not any(genai_relevant(r) for r in recs):
                update.ignored += len(recs)
                return
            trace = self._traces[trace_id] = _Trace()
            while len(self._traces) > MAX_TRACES:
                self._traces.popitem(last=False)
        else:
            self._traces.move_to_end(trace_id)
        for rec in recs:
            if len(trace.spans) < MAX_SPANS_PER_TRACE or rec.span_id in trace.spans:
                trace.spans[rec.span_id] = rec
            else:
                update.problems.append(f"trace with more than {MAX_SPANS_PER_TRACE} spans")
        result = map_genai_trace(list(trace.spans.values()), self.profile)
        new = frozenset(result.quads)
        update.remove.extend(trace.quads - new)
        update.add.extend(new - trace.quads)
        trace.quads = new
        update.mapped += sum(1 for r in recs if genai_relevant(r))
        update.ignored += sum(1 for r in recs if not genai_relevant(r))
        update.problems.extend(result.problems)
