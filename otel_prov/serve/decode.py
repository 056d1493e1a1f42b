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

import ijson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

from ..ingest.problems import ProblemLog
from ..mapping import otlp
from ..mapping.limits import MAX_VALUE_DEPTH, TOO_DEEP_MARKER
from ..mapping.spans import LogSlice

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest request accepted (after decompression), as the OTLP specification recommends."""

DECODED_PER_BYTE = 3
"""Memory a protobuf request takes per byte while it is decoded and mapped (the body, and the
decoded message, ~2x: measured), reserved in the receiver's memory budget."""
DECODED_PER_JSON_BYTE = 3
"""The same for OTLP/JSON, read a span at a time into protobuf (:func:`json_spans_to_protobuf`): the
body and its protobuf, about half its size (parsed whole, it took 10x: the document was ~6x the
text)."""

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
    """An ``ExportTraceServiceRequest`` (with ``logs``, an ``ExportLogsServiceRequest``) in OTLP/JSON.
    A traces request is read a span at a time into protobuf (:func:`json_spans_to_protobuf`), then
    read shallow as protobuf is (:func:`decode_protobuf`)."""
    if not logs:
        return decode_protobuf(json_spans_to_protobuf(body))
    return _decode_json_whole(body, logs)


def _decode_json_whole(body: bytes, logs: bool) -> Any:
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


_RESOURCE_SPANS = ("resourceSpans", "resource_spans")
_SCOPE_SPANS = ("scopeSpans", "scope_spans")
_SCHEMA_URL = ("schemaUrl", "schema_url")
_LISTS_AT = {1: _RESOURCE_SPANS, 3: _SCOPE_SPANS, 5: ("spans",)}
"""The lists of a traces request, by their depth in it: resource spans, scope spans, spans."""
JSON_SPANS_AT_ONCE = 1000
"""Spans of an OTLP/JSON request held as JSON at a time, while it is read into protobuf."""


def json_spans_to_protobuf(body: bytes) -> bytes:
    """An OTLP/JSON traces request as the protobuf bytes of the same request, read a span at a time
    (never the whole document: parsed whole, 58 MiB of JSON took 370 MiB, and ``serve`` peaked at
    596 MiB).  Two passes of ijson's C parser: the first finds where each resource, scope and span
    is (resources and scopes built, spans skipped); the second builds the spans one at a time, each
    converted as the whole document was (hex ids, values nested too deep cut) and written into its
    scope's protobuf.  Not a JSON object, not JSON, or not OTLP: :class:`BadRequest`."""
    try:
        resources, runs, prefixes = _json_layout(body)
        if len(prefixes) > 1:  # spans under both spellings of a key in one request: read whole
            return bytes(_decode_json_whole(body, False).SerializeToString())
        spans = ijson.items(body, next(iter(prefixes)), use_float=True) if prefixes else iter(())
        for resource, scope, count in runs:
            for start in range(0, count, JSON_SPANS_AT_ONCE):
                batch = [next(spans) for _ in range(min(JSON_SPANS_AT_ONCE, count - start))]
                resources[resource].scopes[scope].add(batch)
        return b"".join(otlp.wrap(1, rs.protobuf()) for rs in resources)
    except RecursionError:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable OTLP/JSON",
                         "nested deeper than the JSON parser goes (send protobuf)") from None
    except (ValueError, ijson.JSONError, json_format.ParseError, TypeError, StopIteration) as exc:
        said = " ".join(str(exc).split()) or type(exc).__name__  # yajl's message spans lines
        raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable OTLP/JSON", said[:500]) from None


class _JsonScope:
    """A scope's spans read so far, as protobuf, and its own fields (JSON until the end)."""

    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.spans: list[bytes] = []

    def add(self, spans: list[Any]) -> None:
        """``spans`` (JSON) converted as a whole document's are, written as protobuf."""
        for span in spans:
            _convert_ids(span)
            for link in _list(span, "links"):
                _convert_ids(link)
        self.spans.append(_protobuf({"spans": spans}, ScopeSpans()))

    def protobuf(self) -> bytes:
        return _protobuf(self.fields, ScopeSpans()) + b"".join(self.spans)


class _JsonResource:
    def __init__(self) -> None:
        self.fields: dict[str, Any] = {}
        self.scopes: list[_JsonScope] = []

    def protobuf(self) -> bytes:
        return _protobuf(self.fields, ResourceSpans()) + b"".join(
            otlp.wrap(2, scope.protobuf()) for scope in self.scopes)


def _protobuf(document: dict[str, Any], message: Any) -> bytes:
    """``document`` (a part of an OTLP/JSON request: ids already base64) as ``message``'s bytes."""
    cut_deep_values(document)
    json_format.ParseDict(document, message, ignore_unknown_fields=True,
                          max_recursion_depth=_JSON_MESSAGE_DEPTH)
    return bytes(message.SerializeToString())


def _json_layout(body: bytes) -> tuple[list[_JsonResource], list[list[int]], set[str]]:
    """The first pass: each resource with its scopes (their own fields built, as JSON), the spans'
    places in document order as runs (resource, scope, how many), and the prefixes they are at."""
    resources: list[_JsonResource] = []
    runs: list[list[int]] = []
    prefixes: set[str] = set()
    events = ijson.parse(body, use_float=True)
    first = next(events, None)
    if first is None or first[1] != "start_map":
        raise ValueError("the body is not a JSON object")
    skip_to: tuple[str, str] | None = None
    for prefix, event, value in events:
        if skip_to is not None:  # inside a span (read in the second pass) or a key we do not read
            if (prefix, event) == skip_to:
                skip_to = None
            continue
        if event == "map_key" or event.startswith("end_"):
            continue
        path = prefix.split(".")
        depth = len(path)
        if path[0] not in _RESOURCE_SPANS:  # another top-level key: ignored, as the parser does
            skip_to = _end_of(prefix, event)
        elif path[-1] in _LISTS_AT.get(depth, ()):
            if event != "start_array":
                raise ValueError(f"{path[-1]!r} must be a list")
        elif depth in (2, 4):  # a resource's item, a scope's
            if event != "start_map":
                raise ValueError(f"expected a JSON object, found {event}")
            if depth == 2:
                resources.append(_JsonResource())
            else:
                resources[-1].scopes.append(_JsonScope())
        elif depth == 3:  # a resource's own field: resource, schemaUrl, ...
            resources[-1].fields[path[2]] = _value(events, prefix, event, value)
        elif depth == 5:  # a scope's own field: scope, schemaUrl, ...
            resources[-1].scopes[-1].fields[path[4]] = _value(events, prefix, event, value)
        else:  # depth 6: a span, read in the second pass
            if event != "start_map":
                raise ValueError(f"expected a JSON object, found {event}")
            place = [len(resources) - 1, len(resources[-1].scopes) - 1]
            if runs and runs[-1][:2] == place:
                runs[-1][2] += 1
            else:
                runs.append([*place, 1])
            prefixes.add(prefix)
            skip_to = (prefix, "end_map")
    return resources, runs, prefixes


def _end_of(prefix: str, event: str) -> tuple[str, str] | None:
    """The event that ends the value starting with ``event`` at ``prefix`` (None for a scalar)."""
    if event == "start_map":
        return (prefix, "end_map")
    if event == "start_array":
        return (prefix, "end_array")
    return None


def _value(events: Any, prefix: str, event: str, value: Any) -> Any:
    """The JSON value that starts with ``event`` at ``prefix``, built from the events after it."""
    if event not in ("start_map", "start_array"):
        return value
    end = _end_of(prefix, event)
    builder = ijson.ObjectBuilder()
    builder.event(event, None)
    for at, kind, item in events:
        builder.event(kind, item)
        if (at, kind) == end:
            return builder.value
    raise ValueError("the JSON ends inside a value")


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
