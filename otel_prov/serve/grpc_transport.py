"""The gRPC transport of ``otel-prov serve``: ``TraceService/Export``, ``LogsService/Export`` (the GenAI
events some instrumentations send as log records) and ``grpc.health.v1.Health/Check``.

Requests are deserialised here, not by grpcio, so that an undecodable one is answered
INVALID_ARGUMENT (grpcio's own deserialisation failure is INTERNAL).  Refusals under load are
UNAVAILABLE with ``google.rpc.RetryInfo`` in both trailers the OTLP clients read:
``grpc-status-details-bin`` (the Collector) and ``google.rpc.retryinfo-bin`` (the Python exporter).
grpcio's ``maximum_concurrent_rpcs`` is deliberately not used: its RESOURCE_EXHAUSTED carries no
RetryInfo, and the Collector drops such data as a permanent error.
"""

from __future__ import annotations

import logging
import time
from concurrent import futures
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from ..settings import ServeSettings
from .decode import DECODED_PER_BYTE, MAX_MESSAGE_BYTES, BadRequest, decode_logs, decode_protobuf
from .guards import single
from .receiver import Answer, Outcome, Receiver
from .rpc_status import UNAVAILABLE, retry_info, status

logger = logging.getLogger(__name__)

TRACE_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
HEALTH_SERVICE = "grpc.health.v1.Health"
STATUS_DETAILS_TRAILER = "grpc-status-details-bin"
RETRY_INFO_TRAILER = "google.rpc.retryinfo-bin"

# grpc.health.v1.HealthCheckResponse{status: SERVING | NOT_SERVING}: field 1, varint.
_HEALTH_SERVING = b"\x08\x01"
_HEALTH_NOT_SERVING = b"\x08\x02"

GRPC_LIMITS: dict[str, int] = {
    "grpc.max_allowed_incoming_connections": 256,  # connections open at once; more are refused
    "grpc.server_handshake_timeout_ms": 10_000,  # a connection that never speaks HTTP/2 is closed
    "grpc.max_concurrent_streams": 16,  # calls at once on one connection (HTTP/2 SETTINGS)
    "grpc.max_connection_idle_ms": 5 * 60_000,  # an idle connection is closed (GOAWAY)
    "grpc.max_connection_age_ms": 30 * 60_000,  # then GOAWAY: clients reconnect (and rebalance)
    "grpc.max_connection_age_grace_ms": 60_000,  # for the calls in flight at that moment
    "grpc.keepalive_time_ms": 60_000,  # ping an idle client, to find dead connections
    "grpc.keepalive_timeout_ms": 20_000,
    "grpc.keepalive_permit_without_calls": 1,  # clients may ping while idle ...
    "grpc.http2.min_ping_interval_without_data_ms": 5_000,  # ... but not more often than this
    "grpc.max_metadata_size": 64 * 1024,
}
"""grpcio's limits (channel arguments of the server).  Concurrency is bounded by the receiver's
in-flight count and memory budget, not grpcio's ``maximum_concurrent_rpcs`` (see above)."""

_EXTRA_WORKERS = 16
"""Threads beyond the in-flight bound, so that refusals are answered at once under load."""


def retry_trailers(outcome: Outcome) -> list[tuple[str, bytes]]:
    """Both trailers that carry ``google.rpc.RetryInfo`` for an UNAVAILABLE answer."""
    details = status(UNAVAILABLE, outcome.message, outcome.retry_after)
    return [
        (STATUS_DETAILS_TRAILER, details.SerializeToString()),
        (RETRY_INFO_TRAILER, retry_info(outcome.retry_after).SerializeToString()),
    ]


class _Handlers:
    def __init__(self, receiver: Receiver) -> None:
        self._receiver = receiver

    def export(self, data: bytes, context: grpc.ServicerContext) -> bytes:
        return self._export(data, context, logs=False)

    def export_logs(self, data: bytes, context: grpc.ServicerContext) -> bytes:
        return self._export(data, context, logs=True)

    def _export(self, data: bytes, context: grpc.ServicerContext, logs: bool) -> bytes:
        receiver = self._receiver
        if not receiver.begin():
            self._abort(context, receiver.draining_outcome())
        held = 0
        try:
            header = _metadata(context, "authorization")
            if not receiver.authorized(header):
                self._abort(context, receiver.refuse_unauthenticated(header is not None))
            # grpcio has received the message: what decoding it takes is reserved first.
            refusal = receiver.take(len(data) * DECODED_PER_BYTE)
            if refusal is not None:
                self._abort(context, refusal)
            held = len(data) * DECODED_PER_BYTE
            try:
                request = decode_logs(data) if logs else decode_protobuf(data, receiver.problems)
            except BadRequest as exc:
                self._abort(context, receiver.refuse_invalid(exc.kind, exc.detail))
            remaining = context.time_remaining()
            deadline = time.monotonic() + remaining if remaining is not None else None
            outcome = receiver.ingest(request, deadline, body=data, logs=logs)
            del data, request
            if outcome.answer is not Answer.OK:
                self._abort(context, outcome)
            if logs:
                return bytes(ExportLogsServiceResponse().SerializeToString())
            response = ExportTraceServiceResponse()
            if outcome.rejected_spans:
                response.partial_success.CopyFrom(ExportTracePartialSuccess(
                    rejected_spans=outcome.rejected_spans, error_message=outcome.message))
            return bytes(response.SerializeToString())
        finally:
            receiver.give(held)
            receiver.end()

    @staticmethod
    def _abort(context: grpc.ServicerContext, outcome: Outcome) -> None:
        if outcome.answer is Answer.UNAVAILABLE:
            context.set_trailing_metadata(retry_trailers(outcome))
            context.abort(grpc.StatusCode.UNAVAILABLE, outcome.message)
        elif outcome.answer is Answer.UNAUTHENTICATED:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, outcome.message)
        else:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, outcome.message)

    def health(self, data: bytes, context: grpc.ServicerContext) -> bytes:
        return _HEALTH_SERVING if self._receiver.healthy() else _HEALTH_NOT_SERVING


def _metadata(context: grpc.ServicerContext, key: str) -> str | None:
    """The one value of ``key`` (:func:`.guards.single`: ``""`` when it is given more than once)."""
    return single([v if isinstance(v, str) else v.decode("utf-8", "replace")
                   for k, v in context.invocation_metadata() if k == key])


def _identity(data: bytes) -> bytes:
    return data


class GrpcTransport:
    def __init__(self, receiver: Receiver, settings: ServeSettings) -> None:
        handlers = _Handlers(receiver)
        trace = grpc.method_handlers_generic_handler(TRACE_SERVICE, {
            "Export": grpc.unary_unary_rpc_method_handler(
                handlers.export, request_deserializer=_identity, response_serializer=_identity),
        })
        logs = grpc.method_handlers_generic_handler(LOGS_SERVICE, {
            "Export": grpc.unary_unary_rpc_method_handler(
                handlers.export_logs, request_deserializer=_identity, response_serializer=_identity),
        })
        health = grpc.method_handlers_generic_handler(HEALTH_SERVICE, {
            "Check": grpc.unary_unary_rpc_method_handler(
                handlers.health, request_deserializer=_identity, response_serializer=_identity),
        })
        options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.so_reuseport", 0),
            *GRPC_LIMITS.items(),
        ]
        self._executor = futures.ThreadPoolExecutor(
            max_workers=settings.max_inflight + _EXTRA_WORKERS, thread_name_prefix="otel-prov-grpc")
        self._server = grpc.server(self._executor, handlers=[trace, logs, health], options=options)
        address = settings.address(settings.grpc_port)
        try:
            if settings.tls_cert and settings.tls_key:
                credentials = grpc.ssl_server_credentials(
                    [(settings.tls_key.read_bytes(), settings.tls_cert.read_bytes())])
                self.port = self._server.add_secure_port(address, credentials)
            else:
                self.port = self._server.add_insecure_port(address)
        except RuntimeError as exc:  # grpcio's "failed to bind"
            self._executor.shutdown(wait=False)
            raise OSError(f"cannot listen for gRPC on {address} ({exc}); is the port in use?") from None
        if not self.port:
            self._executor.shutdown(wait=False)
            raise OSError(f"cannot listen for gRPC on {address}; is the port in use?")
        self._server.start()
        logger.info("otel-prov serve: gRPC on %s:%d", settings.host, self.port)

    def stop(self, grace: float) -> None:
        self._server.stop(grace).wait(grace + 1)
        self._executor.shutdown(wait=False)
