"""Real SDK spans of standard GenAI agent traces with fixed ids and times, for the mapping's tests:
:class:`S` describes a span tree (name, start and end in ms after :data:`T0`, attributes, children),
:func:`make` makes it with the plain OpenTelemetry API; :func:`genai_traces` makes many small agent
traces with the SDK's own ids."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanKind

from otel_prov import attributes as A

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
T0 = 1_796_032_800_000_000_000  # 2026-11-30T10:00:00Z
MS = 1_000_000


class FixedIds(IdGenerator):
    """Span ids 1, 2, 3, ... in the order spans start; one trace id."""

    def __init__(self, trace_id: int = TRACE_ID) -> None:
        self.trace_id = trace_id
        self.count = 0

    def generate_span_id(self) -> int:
        self.count += 1
        return self.count

    def generate_trace_id(self) -> int:
        return self.trace_id


@dataclass
class S:
    """A span to make: name, start and end in ms after T0, attributes, children."""

    name: str
    start: int
    end: int
    attrs: dict[str, Any] = field(default_factory=dict)
    children: list[S] = field(default_factory=list)
    kind: SpanKind = SpanKind.INTERNAL


def make(root: S, trace_id: int = TRACE_ID, resource: Resource | None = None) -> list[ReadableSpan]:
    """The tree as real SDK spans, in the order they end (children first); ``resource``: the
    provider's (the SDK's default: no service name set)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(id_generator=FixedIds(trace_id), resource=resource or Resource.create())
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.genai")

    def emit(node: S, parent: Context) -> None:
        span = tracer.start_span(node.name, context=parent, kind=node.kind, attributes=node.attrs,
                                 start_time=T0 + node.start * MS)
        for child in node.children:
            emit(child, trace.set_span_in_context(span, Context()))
        span.end(end_time=T0 + node.end * MS)

    emit(root, Context())
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    return spans


def genai_traces(captured: tuple[TracerProvider, InMemorySpanExporter], traces: int) -> list:
    """Standard GenAI agent traces (no otel_prov attributes): their graph is recomputed per trace
    as spans arrive, so the exporter's updates depend on each other."""
    provider, memory = captured
    tracer = provider.get_tracer("plain")
    for t in range(traces):
        with tracer.start_as_current_span(f"invoke_agent a{t}", attributes={
                A.GEN_AI_OPERATION_NAME: "invoke_agent", A.GEN_AI_AGENT_NAME: f"a{t}"}):
            for i in range(4):
                with tracer.start_as_current_span(f"execute_tool t{i}", attributes={
                        A.GEN_AI_OPERATION_NAME: "execute_tool", A.GEN_AI_TOOL_NAME: f"t{i}",
                        A.GEN_AI_TOOL_CALL_ARGUMENTS: f'{{"n": {i}}}',
                        A.GEN_AI_TOOL_CALL_RESULT: f"result {t}/{i}"}):
                    pass
    return list(memory.get_finished_spans())
