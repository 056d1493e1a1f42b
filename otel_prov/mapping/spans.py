"""One span shape for the mapping, read from an SDK ``ReadableSpan`` or an OTLP protobuf span.

:class:`SpanRecord` is a span as the mapping receives it; :class:`SpanView` the lighter view a
trace's tree keeps of it; :data:`SpanLike` either."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeAlias

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """What the mapping needs of a span.  Ids are integers (0 = absent), times nanoseconds."""

    trace_id: int
    span_id: int
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any] = field(default_factory=dict)
    parent_id: int = 0
    parent_remote: bool = False
    """The parent is in another process (propagated context): it may never be exported to us."""
    error: bool = False
    status_message: str = ""


class SpanView(NamedTuple):
    """What a trace's tree keeps of a span (:func:`otel_prov.mapping.tree.trace_view`): the fields
    of a :class:`SpanRecord` (a tuple, several times cheaper to make), with only the attributes the
    mapping needs."""

    trace_id: int
    span_id: int
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any]
    parent_id: int
    parent_remote: bool
    error: bool
    status_message: str


SpanLike: TypeAlias = "SpanRecord | SpanView"
"""A span as the mapping reads it: the record, or its view."""


class InvalidSpan(ValueError):
    """A span that can never be accepted (missing or malformed ids)."""


def from_sdk(span: ReadableSpan) -> SpanRecord:
    ctx = span.context
    if ctx is None or not ctx.trace_id or not ctx.span_id:
        raise InvalidSpan(f"span {span.name!r} has no valid trace or span id")
    status = span.status
    error = status is not None and status.status_code is StatusCode.ERROR
    message = ""
    if error:
        message = status.description or _exception_message(
            (ev.name, ev.attributes) for ev in span.events
        )
    return SpanRecord(
        trace_id=ctx.trace_id,
        span_id=ctx.span_id,
        parent_id=span.parent.span_id if span.parent is not None else 0,
        parent_remote=span.parent is not None and span.parent.is_remote,
        name=span.name,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        attributes=_plain(span.attributes),
        error=error,
        status_message=message,
    )


def _plain(attributes: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The span's attributes as a plain dict: the SDK hands a read-only view of ``BoundedAttributes``,
    a Python-level mapping whose every lookup (and every miss, raised as ``KeyError``) runs Python
    code; one C-level copy per span makes the mapping's many lookups ~20% cheaper overall."""
    if not attributes:
        return {}
    copy = getattr(attributes, "copy", None)
    plain = copy() if copy is not None else None
    return plain if isinstance(plain, dict) else dict(attributes)


def _exception_message(events: Iterable[tuple[str, Mapping[str, Any] | None]]) -> str:
    for name, attrs in events:
        if name == "exception" and attrs:
            kind = attrs.get("exception.type", "")
            text = attrs.get("exception.message", "")
            return f"{kind}: {text}" if kind else str(text)
    return ""


# -- OTLP protobuf --------------------------------------------------------------------------------

_STATUS_CODE_ERROR = 2
_FLAGS_REMOTE = 0x300
"""SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK | SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK: the parent is remote."""


def from_otlp(span: Any) -> SpanRecord:
    """An ``opentelemetry.proto.trace.v1.trace_pb2.Span``."""
    if len(span.trace_id) != 16 or not any(span.trace_id):
        raise InvalidSpan(f"span {span.name!r}: trace_id must be 16 bytes, not all zero")
    if len(span.span_id) != 8 or not any(span.span_id):
        raise InvalidSpan(f"span {span.name!r}: span_id must be 8 bytes, not all zero")
    if span.parent_span_id and len(span.parent_span_id) != 8:
        raise InvalidSpan(f"span {span.name!r}: parent_span_id must be 8 bytes or empty")
    attributes = {kv.key: any_value(kv.value) for kv in span.attributes}
    error = span.status.code == _STATUS_CODE_ERROR
    message = ""
    if error:
        message = span.status.message or _exception_message(
            (ev.name, {kv.key: any_value(kv.value) for kv in ev.attributes}) for ev in span.events
        )
    return SpanRecord(
        trace_id=int.from_bytes(span.trace_id, "big"),
        span_id=int.from_bytes(span.span_id, "big"),
        parent_id=int.from_bytes(span.parent_span_id, "big") if span.parent_span_id else 0,
        parent_remote=bool(span.parent_span_id) and span.flags & _FLAGS_REMOTE == _FLAGS_REMOTE,
        name=span.name,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        attributes=attributes,
        error=error,
        status_message=message,
    )


def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as the Python value the SDK would hold."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(any_value(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)


def records_from_otlp(resource_spans: Sequence[Any]) -> tuple[list[SpanRecord], list[str]]:
    """All spans of an OTLP ``ExportTraceServiceRequest.resource_spans``: the valid ones, and one
    message per span that can never be accepted."""
    records: list[SpanRecord] = []
    rejected: list[str] = []
    for rs in resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                try:
                    records.append(from_otlp(span))
                except InvalidSpan as exc:
                    rejected.append(str(exc))
    return records, rejected
