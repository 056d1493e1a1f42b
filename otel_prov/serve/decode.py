"""Decoding OTLP request bodies, for both transports: protobuf (read shallow, :mod:`otel_prov.mapping.otlp`),
OTLP/JSON (hex ids, values nested too deep cut before protobuf's JSON parser sees them), and gzip
(every member, nothing after the last, never more than the size limit while inflating).

Every failure is a :class:`BadRequest` carrying the HTTP status to answer (gRPC answers
INVALID_ARGUMENT, or RESOURCE_EXHAUSTED for a body over the limit).
"""

from __future__ import annotations

import base64
import json
import zlib
from http import HTTPStatus
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ..ingest.problems import ProblemLog
from ..mapping import otlp
from ..mapping.limits import MAX_VALUE_DEPTH, TOO_DEEP_MARKER
from ..mapping.spans import LogSlice

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest request accepted (after decompression), as the OTLP specification recommends."""

DECODED_PER_BYTE = 3
"""Memory a protobuf request takes per byte while it is decoded and mapped (the body, and the
decoded message, ~2x: measured), reserved in the receiver's memory budget."""
DECODED_PER_JSON_BYTE = 10
"""The same for OTLP/JSON (the parsed document is ~8x the text)."""

_ID_FIELDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")
_NESTED_JSON = ("kvlistValue", "kvlist_value", "arrayValue", "array_value")
_JSON_MESSAGE_DEPTH = 3 * MAX_VALUE_DEPTH + 16
"""Messages nested in a request whose values are cut at ``MAX_VALUE_DEPTH`` (three per level: the
value, its list, the key-value), for protobuf's JSON parser."""
_GZIP_MAGIC = b"\x1f\x8b"


class BadRequest(Exception):
    def __init__(self, status: HTTPStatus, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.status = status
        self.kind = kind
        self.detail = detail


def too_large(detail: str) -> BadRequest:
    return BadRequest(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request too large", detail)


# -- protobuf -------------------------------------------------------------------------------------


NOT_UTF8 = "text that is not UTF-8 (replaced by U+FFFD)"


def decode_protobuf(body: bytes, problems: ProblemLog | None = None) -> Any:
    """An ``ExportTraceServiceRequest``, walked on the wire now and its spans decoded a slice at a
    time as they are read (:class:`~otel_prov.mapping.otlp.LazyRequest`: memory bounded whatever the
    request holds; any depth of nested values decodes).  A body that is not such a request is
    :class:`BadRequest`.  Text that is not UTF-8 is replaced by U+FFFD (counted once in
    ``problems``), not the whole request refused."""
    said: list[bool] = []

    def repaired() -> None:
        if problems is not None and not said:
            said.append(True)
            problems.report([NOT_UTF8])

    try:
        return otlp.LazyRequest(body, repaired)
    except (otlp.WireError, DecodeError) as exc:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable protobuf", str(exc)[:500]) from None


def decode_logs(body: bytes) -> ExportLogsServiceRequest:
    """An ``ExportLogsServiceRequest`` (OTLP logs: the GenAI events some instrumentations send as log
    records)."""
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError) as exc:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable protobuf", str(exc)[:500]) from None
    return request


LOGS_IGNORED = "log records that are no GenAI event (an application's own log lines): not stored"
LOGS_UNATTACHED = "GenAI events (log records) without a trace and span id: not stored"


def log_problems(found: LogSlice) -> list[str]:
    """What the records of a logs request that are not stored are, for the problem counters."""
    return [LOGS_IGNORED] * bool(found.ignored) + [LOGS_UNATTACHED] * bool(found.unattached)


# -- OTLP/JSON ------------------------------------------------------------------------------------


def decode_json(body: bytes, logs: bool = False) -> Any:
    """An ``ExportTraceServiceRequest`` (with ``logs``, an ``ExportLogsServiceRequest``) in OTLP/JSON."""
    try:
        document = json.loads(body)
        hex_ids_to_base64(document)
        cut_deep_values(document)
        request: Any = ExportLogsServiceRequest() if logs else ExportTraceServiceRequest()
        json_format.ParseDict(document, request, ignore_unknown_fields=True,
                              max_recursion_depth=_JSON_MESSAGE_DEPTH)
        return request
    except RecursionError:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable OTLP/JSON",
                         "nested deeper than the JSON parser goes (send protobuf)") from None
    except (ValueError, json_format.ParseError, TypeError) as exc:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable OTLP/JSON", str(exc)[:500]) from None


def hex_ids_to_base64(document: Any) -> None:
    """OTLP/JSON writes trace and span ids as hex; protobuf's JSON parser reads bytes as base64.
    Rewrites them in place (spans and span links) so ``json_format`` decodes the right bytes."""
    if not isinstance(document, dict):
        raise ValueError("the body is not a JSON object")
    for rl in _list(document, "resourceLogs", "resource_logs"):
        for sl in _list(rl, "scopeLogs", "scope_logs"):
            for record in _list(sl, "logRecords", "log_records"):
                _convert_ids(record)
    for rs in _list(document, "resourceSpans", "resource_spans"):
        for ss in _list(rs, "scopeSpans", "scope_spans"):
            for span in _list(ss, "spans"):
                _convert_ids(span)
                for link in _list(span, "links"):
                    _convert_ids(link)


def cut_deep_values(document: Any) -> None:
    """Replaces, in place, every ``AnyValue`` nested deeper than ``MAX_VALUE_DEPTH`` arrays and
    key-value lists by the marker (as the protobuf path does).  Iterative."""
    stack: list[tuple[Any, int]] = [(document, 0)]
    while stack:
        obj, depth = stack.pop()
        if isinstance(obj, list):
            stack.extend((item, depth) for item in obj)
        elif isinstance(obj, dict):
            for key, value in list(obj.items()):
                if key in _NESTED_JSON and isinstance(value, dict):
                    if depth >= MAX_VALUE_DEPTH:
                        obj.clear()
                        obj["stringValue"] = TOO_DEEP_MARKER
                        break
                    stack.append((value, depth + 1))
                elif isinstance(value, (dict, list)):
                    stack.append((value, depth))


def _list(obj: Any, *keys: str) -> list[Any]:
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, found {type(obj).__name__}")
    for key in keys:
        value = obj.get(key)
        if value is not None:
            if not isinstance(value, list):
                raise ValueError(f"{key!r} must be a list")
            return value
    return []


def _convert_ids(obj: Any) -> None:
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, found {type(obj).__name__}")
    for key in _ID_FIELDS:
        value = obj.get(key)
        if isinstance(value, str) and value:
            try:
                raw = bytes.fromhex(value)
            except ValueError:
                raise ValueError(f"{key} {value[:40]!r} is not hex") from None
            obj[key] = base64.b64encode(raw).decode("ascii")


# -- gzip -----------------------------------------------------------------------------------------


class Gunzip:
    """Inflates a gzip body fed in pieces: every member (RFC 1952 allows several, concatenated),
    nothing but members (trailing bytes are an error), never more than ``limit`` bytes out (checked
    while inflating, so a small body cannot make a large one)."""

    def __init__(self, limit: int = MAX_MESSAGE_BYTES) -> None:
        self.limit = limit
        self.size = 0
        self._inflater: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._pending = b""
        """Bytes after a member's end not yet known to start another member."""

    def feed(self, data: bytes) -> bytes:
        out: list[bytes] = []
        data = self._pending + data
        self._pending = b""
        while data:
            if self._inflater.eof:  # a member ended: what follows must be another member
                if len(data) < 2:
                    self._pending = data
                    break
                if data[:2] != _GZIP_MAGIC:
                    raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable gzip body",
                                     "bytes after the last gzip member")
                self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                chunk = self._inflater.decompress(data, self.limit - self.size + 1)
            except zlib.error as exc:
                raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable gzip body", str(exc)) from None
            self.size += len(chunk)
            if self.size > self.limit:
                raise too_large(f"more than {self.limit} bytes after gzip decompression")
            out.append(chunk)
            data = self._inflater.unconsumed_tail or self._inflater.unused_data
        return b"".join(out)

    def finish(self) -> None:
        """The body has ended: it must have ended with a whole member."""
        if self._pending or not self._inflater.eof:
            raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable gzip body",
                             "bytes after the last gzip member" if self._pending else "truncated gzip stream")
