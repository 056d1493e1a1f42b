"""One span shape for the mapping, read from an SDK ``ReadableSpan`` or an OTLP protobuf span.

:class:`SpanRecord` is a span as the mapping receives it; :class:`SpanView` the lighter view a
trace's tree keeps of it; :data:`SpanLike` either."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeAlias

from google.protobuf.message import DecodeError
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from . import otlp
from .limits import MAX_VALUE_DEPTH, TOO_DEEP, TOO_DEEP_MARKER


@dataclass(slots=True)
class SpanRecord:
    """What the mapping needs of a span.  Ids are integers (0 = absent), times nanoseconds.  Treated
    as read-only (not frozen: a frozen dataclass takes ~1.3 µs more to build, and one is built per
    span received)."""

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
    events: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    """The span's GenAI events (name, attributes): the ones a dialect may read messages from
    (:data:`EVENT_PREFIX`); other events are not kept."""
    service: str = ""
    """Its resource's ``service.name`` ("" when not set: :func:`service_name`)."""
    links: tuple[tuple[int, int], ...] = ()
    """The spans it links to, (trace id, span id), at most :data:`MAX_LINKS` (``otelprov:linkedSpan``)."""


MAX_LINKS = 128
"""Links kept of one span (the SDK's default limit); more are left out."""


def link_ids(links: Iterable[Any], as_bytes: bool) -> tuple[tuple[int, int], ...]:
    """A span's links as (trace id, span id): from the SDK's (``context``) or OTLP's (bytes) links;
    a link whose ids are not valid is left out."""
    out: list[tuple[int, int]] = []
    for link in links:
        if as_bytes:
            trace_bytes, span_bytes = link.trace_id, link.span_id
            if len(trace_bytes) != 16 or len(span_bytes) != 8:
                continue
            trace_id, span_id = int.from_bytes(trace_bytes, "big"), int.from_bytes(span_bytes, "big")
        else:
            context = getattr(link, "context", None)
            trace_id, span_id = getattr(context, "trace_id", 0) or 0, getattr(context, "span_id", 0) or 0
        if trace_id and span_id:
            out.append((trace_id, span_id))
            if len(out) >= MAX_LINKS:
                break
    return tuple(out)


SERVICE_NAME = "service.name"


def service_name(value: Any) -> str:
    """A resource's ``service.name`` as recorded: "" for none, and for the SDKs' stand-in when the
    application set none (``unknown_service``, ``unknown_service:python3``): not the service's name."""
    if not isinstance(value, str) or value.startswith("unknown_service"):
        return ""
    return value.strip()


EVENT_PREFIX = ("gen_ai.", "db.query.result")
"""Events kept on a :class:`SpanRecord`: the GenAI events (``gen_ai.client.inference.operation.details``,
the per-message ``gen_ai.user.message`` ... ``gen_ai.choice``, ``gen_ai.evaluation.result``, the
deprecated ``gen_ai.content.prompt`` / ``gen_ai.content.completion``) and a vector query's results."""

Event = tuple[str, Mapping[str, Any]]
"""A span event (or a log record) as the mapping reads it: its name and attributes."""


@dataclass(slots=True)
class LogRecord:
    """An OTLP log record that is a GenAI event, as the mapping needs it: the span it belongs to, when,
    its event name, and its attributes with its body's fields (the older GenAI events carry their
    content in the body)."""

    trace_id: int
    span_id: int
    time_ns: int
    name: str
    attributes: Mapping[str, Any]

    @property
    def event(self) -> Event:
        return (self.name, self.attributes)


EVENT_NAME = "event.name"
"""Where a log record names its event when its ``event_name`` field is empty (older SDKs, Python's
logging bridge: Semantic Kernel)."""


def log_record(trace_id: int, span_id: int, time_ns: int, event_name: str | None,
               attributes: Mapping[str, Any] | None, body: Any) -> LogRecord | None:
    """A log record as the mapping reads it, or None when it is no GenAI event (an application's own
    log line): the event's name from ``event_name`` or the ``event.name`` attribute; the body's fields
    (a map, or JSON text of one) beside the attributes, a body of another shape as ``content``."""
    attrs = dict(attributes or {})
    name = event_name or attrs.pop(EVENT_NAME, None)
    attrs.pop(EVENT_NAME, None)
    if not isinstance(name, str) or not name.startswith(EVENT_PREFIX):
        return None
    if isinstance(body, str) and body[:1] == "{":
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            body = parsed
    if isinstance(body, Mapping):
        for key, value in body.items():
            attrs.setdefault(str(key), value)
    elif body not in (None, ""):
        attrs.setdefault("content", body)
    return LogRecord(trace_id, span_id, time_ns, name, attrs)


def log_from_sdk(item: Any) -> LogRecord | None:
    """An SDK log record (``ReadableLogRecord``, or the older ``LogData``: both hold ``log_record``)."""
    rec = getattr(item, "log_record", item)
    time_ns = getattr(rec, "timestamp", None) or getattr(rec, "observed_timestamp", None) or 0
    return log_record(getattr(rec, "trace_id", 0) or 0, getattr(rec, "span_id", 0) or 0, int(time_ns),
                      getattr(rec, "event_name", None), _plain(getattr(rec, "attributes", None)),
                      getattr(rec, "body", None))


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
    info: Any = None
    """What the span's dialect read of it (:class:`otel_prov.mapping.tree.Read`), for a framework span
    the mapping needs; None for a skeleton or one of our spans."""
    service: str = ""
    links: tuple[tuple[int, int], ...] = ()


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
        events=tuple((ev.name, _plain(ev.attributes)) for ev in span.events
                     if ev.name.startswith(EVENT_PREFIX)) if span.events else (),
        service=_sdk_service(span),
        links=link_ids(span.links, False) if span.links else (),
    )


def _sdk_service(span: ReadableSpan) -> str:
    resource = span.resource
    attributes = resource.attributes if resource is not None else None
    return service_name(attributes.get(SERVICE_NAME)) if attributes else ""


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


def from_otlp(span: Any, problems: list[str] | None = None, service: str = "") -> SpanRecord:
    """An ``opentelemetry.proto.trace.v1.trace_pb2.Span`` (or one read shallow, :mod:`.otlp`) of the
    resource whose ``service.name`` is ``service``.  A value nested too deep is cut
    (:data:`~.limits.TOO_DEEP`, appended to ``problems``)."""
    # Every field access of a protobuf message makes a new Python object: each is read once.
    trace_id, span_id, parent_id = span.trace_id, span.span_id, span.parent_span_id
    if len(trace_id) != 16 or not any(trace_id):
        raise InvalidSpan(f"span {span.name[:200]!r}: trace_id must be 16 bytes, not all zero")
    if len(span_id) != 8 or not any(span_id):
        raise InvalidSpan(f"span {span.name[:200]!r}: span_id must be 8 bytes, not all zero")
    if parent_id and len(parent_id) != 8:
        raise InvalidSpan(f"span {span.name[:200]!r}: parent_span_id must be 8 bytes or empty")
    cut: list[bool] = []
    attributes = key_values(span.attributes, cut)
    status = span.status
    error = status.code == _STATUS_CODE_ERROR
    message = ""
    events = span.events
    if error:
        message = status.message or _exception_message(
            (ev.name, key_values(ev.attributes, cut)) for ev in events
        )
    kept = tuple((ev.name, key_values(ev.attributes, cut))
                 for ev in events if ev.name.startswith(EVENT_PREFIX)) if events else ()
    if cut and problems is not None:
        problems.append(TOO_DEEP)
    return SpanRecord(
        _int(trace_id, "big"),
        _int(span_id, "big"),
        span.name,
        span.start_time_unix_nano,
        span.end_time_unix_nano,
        attributes,
        _int(parent_id, "big") if parent_id else 0,
        bool(parent_id) and span.flags & _FLAGS_REMOTE == _FLAGS_REMOTE,
        error,
        message,
        kept,
        service,
        link_ids(span.links, True) if span.links else (),
    )


_int = int.from_bytes
_SCALARS = frozenset(("bool_value", "int_value", "double_value", "bytes_value"))


def key_values(pairs: Iterable[Any], cut: list[bool] | None = None) -> dict[str, Any]:
    """OTLP ``KeyValue``s as a dict, as :func:`any_value` reads each value (the last of a repeated
    key wins); text, the common case, read inline."""
    out: dict[str, Any] = {}
    for kv in pairs:
        value = kv.value
        kind = value.WhichOneof("value")
        if kind == "string_value":
            out[kv.key] = value.string_value
        elif kind in _SCALARS:
            out[kv.key] = getattr(value, kind)
        else:
            out[kv.key] = any_value(value, cut=cut)
    return out


def any_value(value: Any, depth: int = 0, cut: list[bool] | None = None) -> Any:
    """An OTLP ``AnyValue`` as the Python value the SDK would hold.  Nested arrays and key-value
    lists (messages, or bytes in a request read shallow) are kept down to
    :data:`~.limits.MAX_VALUE_DEPTH` levels; deeper, :data:`~.limits.TOO_DEEP_MARKER` stands for
    the rest (and ``True`` is appended to ``cut``)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind not in ("array_value", "kvlist_value"):
        return getattr(value, kind)
    if depth >= MAX_VALUE_DEPTH:
        if cut is not None:
            cut.append(True)
        return TOO_DEEP_MARKER
    nested = getattr(value, kind)
    if kind == "array_value":
        if isinstance(nested, bytes):
            nested = otlp.ArrayValue.FromString(nested)
        return tuple(any_value(v, depth + 1, cut) for v in nested.values)
    if isinstance(nested, bytes):
        nested = otlp.KeyValueList.FromString(nested)
    return {kv.key: any_value(kv.value, depth + 1, cut) for kv in nested.values}


@dataclass
class OtlpSlice:
    """Some spans of an OTLP request, read: the valid ones, one message per span that can never be
    accepted, and the problems met (values cut)."""

    records: list[SpanRecord] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.records) + len(self.rejected)


def otlp_slices(resource_spans: Iterable[Any], size: int, share: tuple[int, int] | None = None
                ) -> Iterator[OtlpSlice]:
    """The spans of an ``ExportTraceServiceRequest.resource_spans``, read ``size`` at a time (so a
    large request is never held as records all at once).  With ``share=(k, n)``, only the spans of
    the traces that :func:`trace_share` gives to ``k`` of ``n``."""
    part = OtlpSlice()
    for rs in resource_spans:
        service = _otlp_service(rs.resource.attributes)
        for ss in rs.scope_spans:
            for span in ss.spans:
                if share is not None and trace_share(span.trace_id, share[1]) != share[0]:
                    continue
                try:
                    part.records.append(from_otlp(span, part.problems, service))
                except InvalidSpan as exc:
                    part.rejected.append(str(exc))
                except DecodeError as exc:  # a nested value, read shallow, parsed only now
                    part.rejected.append(f"span {span.name[:200]!r}: an attribute value is not valid "
                                         f"protobuf ({exc})")
                if len(part) >= size:
                    yield part
                    part = OtlpSlice()
    if len(part):
        yield part


def _otlp_service(attributes: Iterable[Any]) -> str:
    for kv in attributes:
        if kv.key == SERVICE_NAME and kv.value.WhichOneof("value") == "string_value":
            return service_name(kv.value.string_value)
    return ""


def trace_share(trace_id: bytes, n: int) -> int:
    """Which of ``n`` shares the spans of a trace belong to (every span of a trace to the same one;
    a span without a valid trace id to 0, which rejects it)."""
    return zlib.crc32(trace_id) % n if len(trace_id) == 16 else 0


def records_from_otlp(resource_spans: Sequence[Any]) -> tuple[list[SpanRecord], list[str]]:
    """All spans of an OTLP ``ExportTraceServiceRequest.resource_spans``: the valid ones, and one
    message per span that can never be accepted."""
    whole = OtlpSlice()
    for part in otlp_slices(resource_spans, 1 << 62):
        whole = part
    return whole.records, whole.rejected


# -- OTLP logs ------------------------------------------------------------------------------------


@dataclass
class LogSlice:
    """The GenAI events among some OTLP log records: the records kept, and how many were not (an
    application's own log lines; records tied to no span)."""

    records: list[LogRecord] = field(default_factory=list)
    ignored: int = 0
    unattached: int = 0
    """GenAI events without a valid trace and span id: they cannot be joined to a span."""
    problems: list[str] = field(default_factory=list)


def otlp_logs(resource_logs: Iterable[Any], share: tuple[int, int] | None = None) -> LogSlice:
    """The GenAI events of an ``ExportLogsServiceRequest.resource_logs`` (``share=(k, n)``: only the
    records of the traces :func:`trace_share` gives to ``k`` of ``n``)."""
    found = LogSlice()
    cut: list[bool] = []
    for rl in resource_logs:
        for sl in rl.scope_logs:
            for rec in sl.log_records:
                trace_id, span_id = bytes(rec.trace_id), bytes(rec.span_id)
                if share is not None and trace_share(trace_id, share[1]) != share[0]:
                    continue
                name = rec.event_name
                attributes = key_values(rec.attributes, cut)
                body = any_value(rec.body, cut=cut) if rec.HasField("body") else None
                record = log_record(_int(trace_id, "big") if len(trace_id) == 16 else 0,
                                    _int(span_id, "big") if len(span_id) == 8 else 0,
                                    rec.time_unix_nano or rec.observed_time_unix_nano, name, attributes, body)
                if record is None:
                    found.ignored += 1
                elif not record.trace_id or not record.span_id:
                    found.unattached += 1
                else:
                    found.records.append(record)
    if cut:
        found.problems.append(TOO_DEEP)
    return found
