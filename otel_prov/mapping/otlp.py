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
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1 import common_pb2
from opentelemetry.proto.resource.v1 import resource_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

_NESTED = ("array_value", "kvlist_value")


def _pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    for module in (common_pb2, resource_pb2, trace_pb2, trace_service_pb2):
        proto = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        for message in proto.message_type:
            if message.name == "AnyValue" and proto.package == "opentelemetry.proto.common.v1":
                for field in message.field:
                    if field.name in _NESTED:
                        field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
                        field.ClearField("type_name")
        pool.Add(proto)
    return pool


_POOL = _pool()


def _message(name: str) -> Any:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(name))


ExportTraceServiceRequest: Any = _message("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest")
"""The request, read shallow (its ``AnyValue``'s nested values as bytes)."""
ArrayValue: Any = _message("opentelemetry.proto.common.v1.ArrayValue")
KeyValueList: Any = _message("opentelemetry.proto.common.v1.KeyValueList")
