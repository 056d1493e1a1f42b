"""A user's own redaction step, for the instrumentations that have no redaction option of their own
(Pydantic AI, Semantic Kernel, AG2, OpenLLMetry: tests/interop/scenarios/openllmetry_content.py) or no
switch to leave content out (Strands Agents, OpenInference, Logfire's Agents SDK spans): an exporter
in front of capture's in-memory exporter that replaces the value of every content-bearing span
attribute and span-event attribute with "[REDACTED]" (or, with ``drop=True``, leaves them out), and a
log-record processor that does the same to the body of every content-bearing log record (or, with
``fields``, to those fields of a record whose body is a map: a GenAI event's ``content``, ``message``,
...), as a redaction processor in a user's pipeline would.  The spans keep their names, ids, timing,
events and every other attribute.

    provider, memory = redacting_tracer_provider(is_content)   # instead of capture.tracer_provider()
    logs = redacting_logger_provider(is_content_record)        # instead of capture.logger_provider()
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

REDACTED = "[REDACTED]"


class RedactingExporter(SpanExporter):
    """Hands ``inner`` copies of the spans whose content-bearing attribute values are "[REDACTED]"
    (``drop``: left out)."""

    def __init__(self, inner: SpanExporter, is_content: Callable[[str], bool], drop: bool = False) -> None:
        self.inner = inner
        self.is_content = is_content
        self.drop = drop

    def _scrub(self, attributes: Any) -> dict[str, Any]:
        scrubbed = {}
        for key, value in (attributes or {}).items():
            if not self.is_content(key):
                scrubbed[key] = value
            elif not self.drop:
                scrubbed[key] = REDACTED
        return scrubbed

    def _redact(self, span: ReadableSpan) -> ReadableSpan:
        events = [Event(e.name, self._scrub(e.attributes), e.timestamp) for e in span.events]
        return ReadableSpan(
            name=span.name, context=span.context, parent=span.parent, resource=span.resource,
            attributes=self._scrub(span.attributes), events=events, links=span.links,
            kind=span.kind, status=span.status, start_time=span.start_time, end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([self._redact(s) for s in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def redacting_tracer_provider(is_content: Callable[[str], bool], drop: bool = False) -> tuple[Any, Any]:
    """Like :func:`tests.interop.capture.tracer_provider`, with the redaction in front of the memory."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-prov-interop"}))
    provider.add_span_processor(SimpleSpanProcessor(RedactingExporter(memory, is_content, drop)))
    return provider, memory


class RedactingLogProcessor:
    """A LogRecordProcessor that replaces the body of every content-bearing log record with
    "[REDACTED]" (``fields``: a map body keeps its other fields) before the processors after it (the
    export) see it."""

    def __init__(self, is_content_record: Callable[[Any], bool],
                 fields: Collection[str] | None = None) -> None:
        self.is_content_record = is_content_record
        self.fields = fields

    def on_emit(self, log_record: Any) -> None:  # a ReadWriteLogRecord
        record = log_record.log_record
        if not self.is_content_record(record):
            return
        if self.fields is not None and isinstance(record.body, dict):
            record.body = {k: (REDACTED if k in self.fields else v) for k, v in record.body.items()}
        else:
            record.body = REDACTED

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def redacting_logger_provider(is_content_record: Callable[[Any], bool],
                              fields: Collection[str] | None = None) -> tuple[Any, Any]:
    """Like :func:`tests.interop.capture.logger_provider`, with :class:`RedactingLogProcessor` first."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "otel-prov-interop"}))
    provider.add_log_record_processor(RedactingLogProcessor(is_content_record, fields))  # type: ignore[arg-type]
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    return provider, memory
