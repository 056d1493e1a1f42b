"""OTLP trace requests read *shallow*: the messages of ``opentelemetry-proto``, except that an
``AnyValue``'s array and key-value list are kept as their encoded bytes.

An attribute value may nest arrays and key-value lists without bound, and protobuf's parser recurses
into every level: upb refuses a request nested past 100 messages (a key-value list 32 levels deep,
which the Go implementations accept, made the whole request undecodable), and raising that limit
overflows the C stack long before the 64 MiB size limit is reached.  Read shallow, a request has a
fixed depth whatever its attributes hold; :func:`~.spans.any_value` then decodes each nested level
on its own, as deep as :data:`~.limits.MAX_VALUE_DEPTH`.  Same wire format, same field names: the
rest of the mapping reads a shallow span as it reads a full one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

_NESTED = ("array_value", "kvlist_value")


_MODULES = (common_pb2, resource_pb2, trace_pb2, trace_service_pb2)
_BYTES = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING


def _pool(*, lenient: bool = False) -> descriptor_pool.DescriptorPool:
    """The messages read shallow; ``lenient``: their text fields as bytes too (not checked as UTF-8)."""
    pool = descriptor_pool.DescriptorPool()
    for module in _MODULES:
        proto = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        for message in proto.message_type:
            if message.name == "AnyValue" and proto.package == "opentelemetry.proto.common.v1":
                for field in message.field:
                    if field.name in _NESTED:
                        field.type = _BYTES
                        field.ClearField("type_name")
            if lenient:
                _text_as_bytes(message)
        pool.Add(proto)
    return pool


def _text_as_bytes(message: descriptor_pb2.DescriptorProto) -> None:
    for field in message.field:
        if field.type == _STRING:
            field.type = _BYTES
    for nested in message.nested_type:
        _text_as_bytes(nested)


_POOL = _pool()


def _message(name: str) -> Any:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(name))


ExportTraceServiceRequest: Any = _message("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest")
"""The request, read shallow (its ``AnyValue``'s nested values as bytes)."""
ArrayValue: Any = _message("opentelemetry.proto.common.v1.ArrayValue")
KeyValueList: Any = _message("opentelemetry.proto.common.v1.KeyValueList")


# -- text that is not UTF-8 -------------------------------------------------------------------------

_LENIENT_POOL = _pool(lenient=True)
_LenientRequest: Any = message_factory.GetMessageClass(
    _LENIENT_POOL.FindMessageTypeByName("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest"))


def _text_fields() -> frozenset[str]:
    names: set[str] = set()
    stack = [message for module in _MODULES
             for message in _POOL.FindFileByName(module.DESCRIPTOR.name).message_types_by_name.values()]
    while stack:
        message = stack.pop()
        names.update(f.full_name for f in message.fields if f.type == FieldDescriptor.TYPE_STRING)
        stack.extend(message.nested_types)
    return frozenset(names)


_TEXT_FIELDS = _text_fields()


def repaired(body: bytes) -> Any | None:
    """The request of ``body`` (read shallow) once every byte sequence of its text fields that is not
    UTF-8 is replaced by U+FFFD; None if it is not a request even so.  Protobuf requires text to be
    UTF-8, and its parser refuses the whole request for one bad byte, but the Collector does not
    check (so one such span would lose every span batched with it): this reads it as the exporter
    reads text Python cannot encode.  The slow path, for a request the strict parser refused; a
    nested value (read shallow, parsed when mapped) with such text still rejects its span."""
    lenient = _LenientRequest()
    try:
        lenient.ParseFromString(body)
    except DecodeError:
        return None
    stack: list[Any] = [lenient]
    while stack:
        message = stack.pop()
        for field, value in message.ListFields():
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                stack.extend(value) if field.is_repeated else stack.append(value)
            elif field.full_name in _TEXT_FIELDS:
                if field.is_repeated:
                    getattr(message, field.name)[:] = [_valid_utf8(v) for v in value]
                else:
                    setattr(message, field.name, _valid_utf8(value))
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(lenient.SerializeToString())
    except DecodeError:
        return None
    return request


def _valid_utf8(data: bytes) -> bytes:
    return data.decode("utf-8", "replace").encode("utf-8")


# -- a request decoded a slice at a time ------------------------------------------------------------
#
# Decoded whole, a request of many small messages takes far more memory than its bytes: a 63 MiB
# request of empty spans took 5.8 GiB (upb makes a message of some 180 bytes for each 2-byte span),
# and an ordinary 63.7 MiB request of 221k agent spans about 1 GiB.  So a request is first walked on
# the wire (its resource spans, scope spans and spans: where each is, nothing decoded), and its
# spans are decoded a slice at a time as the mapping reads them.

ResourceMessage: Any = _message("opentelemetry.proto.resource.v1.Resource")
ScopeSpansMessage: Any = _message("opentelemetry.proto.trace.v1.ScopeSpans")

SLICE_SPANS = 1000
"""Spans decoded at once (at most)."""
SLICE_BYTES = 1 << 20
"""Bytes of spans decoded at once (at most; a larger span alone)."""
MAX_REQUEST_PARTS = 1_000_000
"""Resource spans, scope spans and spans in one request, at most (an OTLP exporter sends a few
thousand spans a request): past it the request is refused whole, before anything is decoded."""
MAX_SPAN_PARTS = 100_000
"""Attributes, events and links of one span, at most (the SDK keeps 128 attributes by default):
a span with more is rejected alone, undecoded."""


class WireError(ValueError):
    """A request that is not the protobuf of an ``ExportTraceServiceRequest`` on the wire."""


def _varint(buf: bytes, i: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if i >= end:
            raise WireError("a varint runs past its message")
        byte = buf[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise WireError("a varint longer than 10 bytes")


def _fields(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """The fields of the message in ``buf[start:end]``: (number, where its tag starts, where its
    value starts, where it ends); a value's start is -1 for a field that is not length-delimited."""
    i = start
    while i < end:
        tag = i
        key, i = _varint(buf, i, end)
        wire = key & 7
        if wire == 2:
            size, i = _varint(buf, i, end)
            if i + size > end:
                raise WireError("a field's length runs past its message")
            yield key >> 3, tag, i, i + size
            i += size
            continue
        if wire == 0:
            _, i = _varint(buf, i, end)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise WireError(f"wire type {wire} (groups are not used by OTLP)")
        if i > end:
            raise WireError("a fixed-size field runs past its message")
        yield key >> 3, tag, -1, i


@dataclass
class _Refused:
    """A span rejected undecoded (:data:`MAX_SPAN_PARTS`): its ids and name, for the message."""

    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes
    name: str
    reason: str

    @property
    def attributes(self) -> Any:
        from .spans import InvalidSpan

        raise InvalidSpan(f"span {self.name[:200]!r}: {self.reason}")


class LazyRequest:
    """An ``ExportTraceServiceRequest`` as the mapping reads it (``resource_spans``, each with its
    ``resource`` and its ``scope_spans``, each with its ``spans``), its spans decoded a slice at a
    time (:data:`SLICE_SPANS`, :data:`SLICE_BYTES`) as they are read.  Text that is not UTF-8 is
    repaired as :func:`repaired` does (``on_repair`` is called); a slice that is not protobuf even
    so is decoded span by span, and the spans that are not are rejected alone."""

    def __init__(self, body: bytes, on_repair: Callable[[], None] | None = None) -> None:
        self.body = body
        self._on_repair = on_repair
        self.resource_spans = _walk(body, self)

    def SerializeToString(self) -> bytes:  # noqa: N802 - the protobuf message's name
        return self.body

    def decode(self, pieces: list[tuple[int, int]]) -> list[Any]:
        """The spans at ``pieces`` (each a whole ``spans`` field: tag, length, value)."""
        data = b"".join(self.body[a:b] for a, b in pieces)
        try:
            return list(ScopeSpansMessage.FromString(data).spans)
        except DecodeError:
            pass
        fixed = repaired(wrap(1, wrap(2, data)))
        if fixed is not None:
            if self._on_repair is not None:
                self._on_repair()
            return list(fixed.resource_spans[0].scope_spans[0].spans)
        if len(pieces) > 1:
            return [span for piece in pieces for span in self.decode([piece])]
        a, b = pieces[0]
        return [_refused(self.body, a, b, "not valid protobuf")]


def wrap(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field: its tag, the length of ``data``, ``data``."""
    return _encode_varint(number << 3 | 2) + _encode_varint(len(data)) + data


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _refused(body: bytes, start: int, end: int, reason: str) -> _Refused:
    """The span whose ``spans`` field is ``body[start:end]``, rejected (its ids and name read)."""
    found: dict[int, bytes] = {}
    _, i = _varint(body, start, end)
    _, i = _varint(body, i, end)
    try:
        for seen, (number, _tag, value, stop) in enumerate(_fields(body, i, end)):
            if number in (1, 2, 4, 5) and value >= 0:
                found.setdefault(number, body[value:stop])
            if len(found) == 4 or seen >= 64:  # the ids and the name come first (as SDKs write them)
                break
    except WireError:
        pass
    name = found.get(5, b"").decode("utf-8", "replace")
    return _Refused(found.get(1, b""), found.get(2, b""), found.get(4, b""), name, reason)


@dataclass
class _LazyScopes:
    request: LazyRequest
    slices: list[list[tuple[int, int]]]
    refused: list[tuple[int, int]]

    def __iter__(self) -> Iterator[Any]:
        for pieces in self.slices:
            yield SimpleNamespace(spans=self.request.decode(pieces))
        if self.refused:
            yield SimpleNamespace(spans=[_refused(self.request.body, a, b, f"more than {MAX_SPAN_PARTS:,} "
                                                  "attributes, events and links (not decoded)")
                                         for a, b in self.refused])


def _walk(body: bytes, request: LazyRequest) -> list[Any]:
    """The request's resource spans: their resource decoded, their spans located and sliced."""
    parts = 0
    out = []
    for number, _tag, start, end in _fields(body, 0, len(body)):
        if number != 1 or start < 0:
            continue
        resource = None
        slices: list[list[tuple[int, int]]] = []
        refused: list[tuple[int, int]] = []
        piece: list[tuple[int, int]] = []
        size = 0
        for rs_number, _t, rs_start, rs_end in _fields(body, start, end):
            if rs_number == 1 and rs_start >= 0:
                resource = _resource(body[rs_start:rs_end], request)
            elif rs_number == 2 and rs_start >= 0:
                for ss_number, tag, ss_start, ss_end in _fields(body, rs_start, rs_end):
                    if ss_number != 2 or ss_start < 0:
                        continue
                    parts += 1
                    if parts > MAX_REQUEST_PARTS:
                        raise WireError(f"more than {MAX_REQUEST_PARTS:,} spans in one request: send "
                                        "smaller batches")
                    if ss_end - ss_start > SLICE_BYTES and _too_many_parts(body, ss_start, ss_end):
                        refused.append((tag, ss_end))
                        continue
                    if piece and (len(piece) >= SLICE_SPANS or size + ss_end - tag > SLICE_BYTES):
                        slices.append(piece)
                        piece, size = [], 0
                    piece.append((tag, ss_end))
                    size += ss_end - tag
            parts += 1
        if piece:
            slices.append(piece)
        out.append(SimpleNamespace(resource=resource or ResourceMessage(),
                                   scope_spans=_LazyScopes(request, slices, refused)))
        parts += 1
        if parts > MAX_REQUEST_PARTS:
            raise WireError(f"more than {MAX_REQUEST_PARTS:,} parts in one request: send smaller batches")
    return out


def _resource(data: bytes, request: LazyRequest) -> Any:
    """A resource (its text repaired if it is not UTF-8; an empty one if it is not protobuf even so)."""
    try:
        return ResourceMessage.FromString(data)
    except DecodeError:
        fixed = repaired(wrap(1, wrap(1, data)))
        if fixed is None:
            return ResourceMessage()
        if request._on_repair is not None:
            request._on_repair()
        return fixed.resource_spans[0].resource


def _too_many_parts(body: bytes, start: int, end: int) -> bool:
    count = 0
    for number, _tag, _value, _end in _fields(body, start, end):
        if number in (9, 11, 13):
            count += 1
            if count > MAX_SPAN_PARTS:
                return True
    return False
