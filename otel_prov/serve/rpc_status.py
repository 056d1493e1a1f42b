"""``google.rpc.Status`` and ``google.rpc.RetryInfo`` for the receiver's error answers.

Built from their definitions in a private descriptor pool, so ``otel-prov serve`` needs only
``protobuf`` (not ``googleapis-common-protos``); the wire format is the standard one, which the
Collector and the OTLP exporters decode with their own copies of these messages.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, message_factory
from google.protobuf.message import Message

# google/rpc/code.proto
UNAVAILABLE = 14
INVALID_ARGUMENT = 3
UNAUTHENTICATED = 16
RETRY_INFO_TYPE_URL = "type.googleapis.com/google.rpc.RetryInfo"

_F = descriptor_pb2.FieldDescriptorProto


def _pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    from google.protobuf import any_pb2

    for dependency in (any_pb2.DESCRIPTOR, duration_pb2.DESCRIPTOR):
        pool.AddSerializedFile(dependency.serialized_pb)
    proto = descriptor_pb2.FileDescriptorProto(
        name="otel_prov/google_rpc.proto", package="google.rpc", syntax="proto3",
        dependency=["google/protobuf/any.proto", "google/protobuf/duration.proto"])
    status = proto.message_type.add(name="Status")
    status.field.add(name="code", number=1, type=_F.TYPE_INT32, label=_F.LABEL_OPTIONAL, json_name="code")
    status.field.add(name="message", number=2, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL,
                     json_name="message")
    status.field.add(name="details", number=3, type=_F.TYPE_MESSAGE, label=_F.LABEL_REPEATED,
                     type_name=".google.protobuf.Any", json_name="details")
    retry = proto.message_type.add(name="RetryInfo")
    retry.field.add(name="retry_delay", number=1, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                    type_name=".google.protobuf.Duration", json_name="retryDelay")
    pool.Add(proto)
    return pool


POOL = _pool()
Status: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName("google.rpc.Status"))
RetryInfo: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName("google.rpc.RetryInfo"))


def status(code: int, message: str, retry_after: float | None = None) -> Message:
    """A ``google.rpc.Status``; with ``retry_after``, a ``RetryInfo`` detail."""
    result = Status(code=code, message=message)
    if retry_after is not None:
        result.details.add(type_url=RETRY_INFO_TYPE_URL, value=retry_info(retry_after).SerializeToString())
    return result


def retry_info(seconds: float) -> Message:
    whole = int(seconds)
    delay = duration_pb2.Duration(seconds=whole, nanos=int(round((seconds - whole) * 1e9)))
    info = RetryInfo()
    info.retry_delay.seconds = delay.seconds
    info.retry_delay.nanos = delay.nanos
    return info
