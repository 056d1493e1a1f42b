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
