"""Helpers of the tests of ``otel-prov serve`` (tests/serve/, and the store and ingest tests that
send it requests): real SDK spans of agent sessions, their OTLP requests, gRPC stubs, a store whose
writes the test can hold or fail, the retry trailers serve answers with, OTLP/JSON as the
specification writes it."""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import agent_session
from otel_prov.serve.grpc_transport import RETRY_INFO_TRAILER, STATUS_DETAILS_TRAILER
from otel_prov.serve.receiver import Receiver
from otel_prov.serve.server import Server
from otel_prov.settings import ServeSettings
from otel_prov.stores import StoreSpec
from otel_prov.stores.oxigraph import OxigraphStore

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
MIB = 1024 * 1024


# -- fixtures and helpers -------------------------------------------------------------------------


class GatedStore(OxigraphStore):
    """A real in-memory Oxigraph store whose writes can be held (``gate``) or made to fail."""

    def __init__(self) -> None:
        super().__init__(None)
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.fail = False

    def add(self, data: bytes, count: int) -> None:
        self.entered.set()
        self.gate.wait(30)
        if self.fail:
            raise OSError("No space left on device (test)")
        super().add(data, count)


Make = Callable[..., Server]


def server_maker() -> Iterator[Make]:
    """Makes the receiver's real gRPC and HTTP servers on port 0 around an in-memory store (or the
    store given); stops them at the end (the ``make_server`` fixture of tests/conftest.py)."""
    servers: list[Server] = []

    def make(store: OxigraphStore | None = None, *, token: str | None = None, max_inflight: int = 8,
             ack_timeout: float = 10.0, tls: tuple[Path, Path] | None = None) -> Server:
        store = store if store is not None else OxigraphStore(None)
        settings = ServeSettings(store=StoreSpec("memory"), profile="seed", grpc_port=0, http_port=0,
                                 token=token, max_inflight=max_inflight, ack_timeout=ack_timeout,
                                 tls_cert=tls[0] if tls else None, tls_key=tls[1] if tls else None,
                                 drain_timeout=10.0)
        receiver = Receiver(store, "seed", token=token, max_inflight=max_inflight, ack_timeout=ack_timeout)
        server = Server(settings, receiver)
        servers.append(server)
        return server

    yield make
    for server in servers:
        store = server.receiver.store
        if isinstance(store, GatedStore):
            store.fail = False
            store.gate.set()
        server.stop(5)


def agent_spans(n_sessions: int = 1, steps: int = 2) -> list[ReadableSpan]:
    """Real SDK spans of agent sessions (each its own trace)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider.add_span_processor(SimpleSpanProcessor(memory))
    for k in range(n_sessions):
        with agent_session(f"question {k}?", tracer_provider=provider) as session:
            for i in range(steps):
                with session.iteration() as step:
                    step.thought(f"thought {k}.{i}")
                    step.action("calculator", {"expression": f"{k}+{i}"})
                    step.observation(str(k + i))
            session.conclude(f"answer {k}")
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    return spans


def request_of(spans: list[ReadableSpan]) -> ExportTraceServiceRequest:
    return encode_spans(spans)


def stub(port: int, **options: Any) -> tuple[grpc.Channel, trace_service_pb2_grpc.TraceServiceStub]:
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=list(options.items()))
    return channel, trace_service_pb2_grpc.TraceServiceStub(channel)


def export_over_grpc(server: Server, spans: list[ReadableSpan]) -> None:
    """The spans sent with the real OTLP gRPC exporter; they must be acknowledged."""
    exporter = GrpcExporter(endpoint=server.grpc_address, insecure=True, timeout=10)
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()


def stored(server: Server) -> Any:
    return server.receiver.store.to_dataset()


def padded_request(size: int) -> ExportTraceServiceRequest:
    """A request of about ``size`` bytes: one plain (non-agent) span with large attributes (of 1 MiB
    at most: under the limit per value)."""
    pieces = [min(MIB, size - start) for start in range(0, size, MIB)]
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="big",
                attributes=[KeyValue(key=f"padding{i}", value=AnyValue(string_value="x" * n))
                            for i, n in enumerate(pieces)])
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[span])])])


def assert_retry_trailers(err: grpc.RpcError, seconds: int) -> None:
    assert err.code() is grpc.StatusCode.UNAVAILABLE
    trailers = dict(err.trailing_metadata() or ())
    status = status_pb2.Status.FromString(trailers[STATUS_DETAILS_TRAILER])
    assert status.code == grpc.StatusCode.UNAVAILABLE.value[0]
    assert len(status.details) == 1
    info = error_details_pb2.RetryInfo()
    assert status.details[0].Unpack(info)
    assert info.retry_delay.seconds == seconds
    assert error_details_pb2.RetryInfo.FromString(trailers[RETRY_INFO_TRAILER]) == info


def otlp_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """OTLP/JSON as the specification writes it: trace and span ids as hex, not base64."""
    document = json_format.MessageToDict(request)
    for rs in document.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return document
