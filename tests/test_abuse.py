"""Hostile input and load against ``otel-prov serve``, the exporter and the CLI (issue 9): each test
is one finding, tried as an attacker or a careless operator would, on 127.0.0.1 only, bounded in
count and time.  Real servers (the receiver's gRPC and HTTP transports on port 0, or ``otel-prov
serve`` as a process), real clients, raw sockets where a client library would refuse to misbehave."""

from __future__ import annotations

import gzip
from pathlib import Path

import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import ProvSpanExporter, spans_to_dataset
from otel_prov.mapping.limits import MAX_ATTRIBUTE_BYTES_CEILING, MAX_TERM_BYTES
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import SpanRecord
from otel_prov.serve.server import Server
from tests import test_serve
from tests.graphs import assert_isomorphic
from tests.test_serve import MIB, Make, agent_spans, request_of, stored, stub

make_server = test_serve.make_server
"""The fixture: the receiver's real gRPC and HTTP servers on port 0 around an in-memory store."""


def with_big_attribute(spans: list[ReadableSpan], size: int) -> tuple[ExportTraceServiceRequest, int]:
    """The request of ``spans`` with one more span (a copy of the first, another span id) carrying
    an attribute of ``size`` bytes; and how many spans it has."""
    request = request_of(spans)
    spans_pb = request.resource_spans[0].scope_spans[0].spans
    big = spans_pb.add()
    big.CopyFrom(spans_pb[0])
    big.span_id = b"\x0b" * 8
    big.attributes.append(KeyValue(key="otel_prov.observation", value=AnyValue(string_value="a" * size)))
    return request, len(spans_pb)


def assert_serving(server: Server) -> None:
    """Health is ok and a fresh request is acknowledged."""
    health = requests.get(f"http://{server.http_address}/health", timeout=10)
    assert health.status_code == 200, health.text
    channel, client = stub(server.grpc.port)
    with channel:
        response = client.Export(request_of(agent_spans()), timeout=20)
    assert not response.HasField("partial_success")


# -- item 1: a value too large for the store is rejected for its span alone --------------------


def test_a_span_with_an_attribute_over_16_mib_is_rejected_alone_and_serve_goes_on(make_server: Make) -> None:
    server = make_server(ack_timeout=5.0)
    spans = agent_spans()
    request, _ = with_big_attribute(spans, 17 * MIB)
    channel, client = stub(server.grpc.port, **{"grpc.max_send_message_length": 64 * MIB})
    with channel:
        response = client.Export(request, timeout=30)
        assert response.partial_success.rejected_spans == 1
        assert "limit" in response.partial_success.error_message
        # The client retries what it was told nothing about: the same request again changes nothing.
        again = client.Export(request, timeout=30)
        assert again.partial_success.rejected_spans == 1
    assert_isomorphic(spans_to_dataset(spans), stored(server))
    assert server.receiver.store.inner is not None
    assert server.receiver.health()["store_failures"] == 0
    assert_serving(server)


def test_a_small_gzip_body_inflating_to_a_60_mb_question_is_rejected_alone(make_server: Make) -> None:
    server = make_server(ack_timeout=5.0)
    spans = agent_spans()
    request = request_of(spans)
    marker = next(s for s in request.resource_spans[0].scope_spans[0].spans if s.name == "question")
    for kv in marker.attributes:
        if kv.key == "otel_prov.question":
            kv.value.string_value = "?" * (60 * 1000 * 1000)
    body = gzip.compress(request.SerializeToString(), compresslevel=9)
    assert len(body) < 200_000
    resp = requests.post(f"http://{server.http_address}/v1/traces", data=body, timeout=60,
                         headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
    assert resp.status_code == 200, resp.content[:300]
    answer = ExportTraceServiceResponse.FromString(resp.content)
    assert answer.partial_success.rejected_spans == 1
    assert server.receiver.health()["store_failures"] == 0
    assert_isomorphic(spans_to_dataset([s for s in spans if s.name != "question"]), stored(server))
    assert_serving(server)


def test_the_exporter_rejects_the_same_spans_and_stores_the_rest(tmp_path: Path) -> None:
    spans = agent_spans()
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("abuse").start_as_current_span("huge", attributes={
            "otel_prov.flow": "agent", "otel_prov.step": "analysis", "otel_prov.iteration": 9,
            "otel_prov.observation": "o" * (17 * MIB)}):
        pass
    huge = list(memory.get_finished_spans())
    provider.shutdown()
    exporter = ProvSpanExporter(store=f"oxigraph:{tmp_path / 'store'}")
    try:
        assert exporter.export(spans + huge) is SpanExportResult.SUCCESS
        assert exporter.force_flush(20_000)
        stats = exporter.stats()
        assert stats["store_failures"] == 0
        assert any("limit" in kind for kind in stats["problems"]), stats["problems"]
        assert_isomorphic(spans_to_dataset(spans), exporter.store.to_dataset())
    finally:
        exporter.shutdown()
    assert not list(tmp_path.glob("**/otel-prov-rescue-*"))


def test_a_term_that_escaping_makes_too_large_is_rejected_in_both_mappings() -> None:
    """Under the attribute limit, but text of quotes doubles when escaped: past what the store takes."""
    quotes = '"' * MAX_ATTRIBUTE_BYTES_CEILING
    ours = SpanRecord(trace_id=1, span_id=1, name="analysis", start_ns=1, end_ns=2, attributes={
        "otel_prov.flow": "agent", "otel_prov.step": "analysis", "otel_prov.iteration": 1,
        "otel_prov.observation": quotes})
    agent = SpanRecord(trace_id=2, span_id=2, name="agent", start_ns=1, end_ns=5, attributes={
        "openinference.span.kind": "AGENT", "input.value": "what?"})
    tool = SpanRecord(trace_id=2, span_id=3, parent_id=2, name="tool", start_ns=2, end_ns=3, attributes={
        "openinference.span.kind": "TOOL", "tool.name": "search", "input.value": "{}",
        "output.value": quotes})
    mapper = TraceMapper("seed", max_attribute_bytes=MAX_ATTRIBUTE_BYTES_CEILING)
    update = mapper.map([ours, agent, tool])
    assert sorted(rec.span_id for rec, _ in update.failed) == [1, 3]
    assert all(len(term.encode()) <= MAX_TERM_BYTES for quad in update.add for term in quad)
    assert any("what?" in quad[2] for quad in update.add), "the agent's Question is still mapped"
    # A later tool call of that trace is mapped; the rejected one does not come back.
    later = mapper.map([SpanRecord(trace_id=2, span_id=4, parent_id=2, name="tool", start_ns=3, end_ns=4,
                                   attributes={"openinference.span.kind": "TOOL", "tool.name": "calc"})])
    assert not later.failed
    assert any('"calc"' == quad[2] for quad in later.add)
    assert all(len(term.encode()) <= MAX_TERM_BYTES for quad in later.add for term in quad)
