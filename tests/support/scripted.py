"""A real SDK TracerProvider whose ids and clock are scripted by the test: every trace id, span id
and timestamp the SDK hands out comes, in order, from lists written by hand in the test, so the
expected graph can be written by hand too (times to the nanosecond, IRIs by the spec's rule).

The SDK reads its clock through ``opentelemetry.sdk.trace.time_ns`` (span start and end, event
timestamps) and its ids through the provider's ``IdGenerator``; both are replaced here, nothing else.
A script that is not used up exactly (a call more, or fewer, than the test wrote down) fails the test.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator


class Script:
    """Values handed out in order; taking one more than written, or fewer, is an error."""

    def __init__(self, what: str, values: Sequence[int]) -> None:
        self.what = what
        self.values = list(values)
        self.taken = 0

    def __call__(self) -> int:
        if self.taken >= len(self.values):
            raise AssertionError(f"the SDK asked for {self.what} #{self.taken + 1}; the test wrote "
                                 f"down only {len(self.values)}")
        self.taken += 1
        return self.values[self.taken - 1]

    def check_used_up(self) -> None:
        assert self.taken == len(self.values), (
            f"the SDK took {self.taken} {self.what}s; the test wrote down {len(self.values)}")


class ScriptedIds(IdGenerator):
    def __init__(self, trace_ids: Sequence[int], span_ids: Sequence[int]) -> None:
        self.trace_ids = Script("trace id", trace_ids)
        self.span_ids = Script("span id", span_ids)

    def generate_trace_id(self) -> int:
        return self.trace_ids()

    def generate_span_id(self) -> int:
        return self.span_ids()


@contextmanager
def scripted_provider(monkeypatch: pytest.MonkeyPatch, *, times: Sequence[int], trace_ids: Sequence[int],
                      span_ids: Sequence[int]) -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A real TracerProvider (spans kept in memory as they end) with these ids and this clock.
    Checks on exit that the SDK used every value written down, no more and no less."""
    clock = Script("clock reading", times)
    ids = ScriptedIds(trace_ids, span_ids)
    memory = InMemorySpanExporter()
    provider = TracerProvider(id_generator=ids, resource=Resource.create({"service.name": "golden-agents"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with monkeypatch.context() as patch:
        patch.setattr(sdk_trace, "time_ns", clock)
        try:
            yield provider, memory
        finally:
            provider.shutdown()
    clock.check_used_up()
    ids.trace_ids.check_used_up()
    ids.span_ids.check_used_up()
