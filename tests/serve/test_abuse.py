"""Hostile input and load against ``otel-prov serve``, the exporter and the CLI (issue 9): each test
is one finding, tried as an attacker or a careless operator would, on 127.0.0.1 only, bounded in
count and time.  Real servers (the receiver's gRPC and HTTP transports on port 0, or ``otel-prov
serve`` as a process), real clients, raw sockets where a client library would refuse to misbehave."""

from __future__ import annotations

import gzip
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pyoxigraph
import pytest
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import ConfigError, ProvSpanExporter, agent_session, spans_to_dataset
from otel_prov.cli import main as cli_main
from otel_prov.mapping import otlp
from otel_prov.mapping.limits import (
    MAX_ATTRIBUTE_BYTES_CEILING,
    MAX_TERM_BYTES,
    MAX_VALUE_DEPTH,
    TOO_DEEP,
    TOO_DEEP_MARKER,
)
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import SpanRecord
from otel_prov.serve.http_server import HttpLimits
from otel_prov.serve.receiver import Receiver
from otel_prov.serve.server import Server
from otel_prov.settings import ServeSettings, serve_settings
from otel_prov.stores import StoreSpec
from otel_prov.stores.oxigraph import OxigraphStore
from tests.support.graphs import assert_isomorphic
from tests.support.procs import Proc, clean_env, serve_command, start_serve
from tests.support.serving import (
    EXPORT,
    MIB,
    GatedStore,
    Make,
    agent_spans,
    assert_retry_trailers,
    otlp_json,
    request_of,
    stored,
    stub,
)


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


# -- item 2: HTTP on a real server stack ---------------------------------------------------------


def raw(port: int, data: bytes, *, wait: float = 5.0) -> bytes:
    """Send ``data`` on a fresh connection; everything the server answers until it closes the
    connection (or ``wait`` seconds pass without a byte)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        try:
            sock.sendall(data)
        except OSError:
            pass  # closed on us while sending: read what it said
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return answer


def post_head(length: str | None = None, *, host: str = "127.0.0.1", extra: str = "") -> bytes:
    head = f"POST /v1/traces HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-protobuf\r\n{extra}"
    if length is not None:
        head += f"Content-Length: {length}\r\n"
    return (head + "\r\n").encode()


HEALTH_REQUEST = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def statuses(answer: bytes) -> list[int]:
    return [int(line.split()[1]) for line in answer.split(b"\r\n") if line.startswith(b"HTTP/1.1 ")]


@pytest.mark.parametrize("length", ["-1", "1_0", "+10", "0x10", "10, 11"])
def test_content_length_is_parsed_strictly_and_the_body_is_never_a_request(make_server: Make,
                                                                          length: str) -> None:
    server = make_server()
    # The "body" is a whole request of its own: read as one, it would be answered too.
    answer = raw(server.http.port, post_head(length) + HEALTH_REQUEST)
    assert statuses(answer) == [400], answer[:300]
    assert server.receiver.stats.acknowledged_requests == 0
    assert_serving(server)


def test_oversized_header_sections_are_refused(make_server: Make) -> None:
    server = make_server()
    port = server.http.port
    for extra in ("X-Big: " + "a" * 100_000 + "\r\n", "".join(f"X-{i}: 1\r\n" for i in range(10_000))):
        assert statuses(raw(port, post_head("0", extra=extra))) in ([400], [431])
    # Arriving in pieces, h11 stops reading at 64 KiB.
    answer = raw(port, post_head(None, extra="X-Big: " + "a" * 200_000 + "\r\n")[:150_000])
    assert statuses(answer) in ([400], [431]), answer[:200]
    assert_serving(server)


def test_a_negative_chunk_size_is_400(make_server: Make) -> None:
    server = make_server()
    answer = raw(server.http.port, post_head(extra="Transfer-Encoding: chunked\r\n")
                 + b"-5\r\nhello\r\n0\r\n\r\n")
    assert statuses(answer) == [400], answer[:300]
    assert_serving(server)


def test_a_chunked_body_over_64_mib_is_413_before_it_is_all_read(make_server: Make) -> None:
    server = make_server()
    chunk = b"%x\r\n" % MIB + b"\0" * MIB + b"\r\n"
    with socket.create_connection(("127.0.0.1", server.http.port), timeout=30) as sock:
        sock.sendall(post_head(extra="Transfer-Encoding: chunked\r\n"))
        sent = 0
        try:
            while sent < 100:  # 100 MiB, if the server let it
                sock.sendall(chunk)
                sent += 1
        except OSError:
            pass
        sock.settimeout(10)
        try:
            answer = sock.recv(65536)
        except OSError:
            answer = b""
    assert sent < 100, "the server read 100 MiB"
    assert answer.startswith(b"HTTP/1.1 413") or answer == b"", answer[:200]
    assert server.receiver.budget.reserved == 0
    assert_serving(server)


def test_gzip_members_are_all_read_and_trailing_bytes_refused(make_server: Make) -> None:
    server = make_server()
    spans = agent_spans(2)
    body = request_of(spans).SerializeToString()
    half = len(body) // 2
    two_members = gzip.compress(body[:half]) + gzip.compress(body[half:])
    url = f"http://{server.http_address}/v1/traces"
    headers = {"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}
    resp = requests.post(url, data=two_members, headers=headers, timeout=10)
    assert resp.status_code == 200, resp.content
    assert_isomorphic(spans_to_dataset(spans), stored(server))
    for trailing in (b"garbage", b"\0\0\0\0", b"\x1f"):
        member = gzip.compress(request_of(agent_spans()).SerializeToString())
        resp = requests.post(url, data=member + trailing, headers=headers, timeout=10)
        assert resp.status_code == 400, (trailing, resp.content)
    assert server.receiver.stats.acknowledged_requests == 1


def test_without_a_token_a_request_naming_another_host_is_refused(make_server: Make) -> None:
    server = make_server()
    spans = agent_spans()
    body = request_of(spans).SerializeToString()
    port = server.http.port
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", ""):
        answer = raw(port, post_head(str(len(body)), host=host) + body)
        assert statuses(answer) == [403], (host, answer[:200])
    assert server.receiver.stats.acknowledged_requests == 0
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "[::1]", "localhost"):
        answer = raw(port, post_head(str(len(body)), host=host).replace(
            b"Host", b"Connection: close\r\nHost") + body)
        assert statuses(answer) == [200], (host, answer[:200])


def test_with_a_token_any_host_may_be_named(make_server: Make) -> None:
    server = make_server(token="s3cret")
    body = request_of(agent_spans()).SerializeToString()
    extra = "Authorization: Bearer s3cret\r\nConnection: close\r\n"
    answer = raw(server.http.port, post_head(str(len(body)), host="collector.internal", extra=extra) + body)
    assert statuses(answer) == [200], answer[:200]


def test_a_client_that_goes_away_is_no_traceback(make_server: Make, caplog: pytest.LogCaptureFixture) -> None:
    store = GatedStore()
    server = make_server(store)
    body = request_of(agent_spans()).SerializeToString()
    port = server.http.port
    with caplog.at_level(logging.DEBUG):
        # Gone in the middle of its body; then gone while its request waits for the commit.
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(post_head(str(len(body))) + body[:10])
        store.gate.clear()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(post_head(str(len(body))) + body)
            assert store.entered.wait(10)
        store.gate.set()
        wait_for(lambda: server.receiver.stats.acknowledged_requests == 1, "the request to be stored")
        assert_serving(server)
    tracebacks = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert not tracebacks, [r.getMessage() for r in tracebacks]


def wait_for(predicate: Callable[[], object], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def tight_server(make_server: Make) -> Iterator[Server]:
    """The receiver on small HTTP limits: 20 connections, deadlines of a second."""
    limits = HttpLimits(max_connections=20, header_timeout=1.0, body_timeout=1.0, idle_timeout=1.0,
                        graceful_timeout=1.0)
    settings = ServeSettings(store=StoreSpec("memory"), profile="seed", grpc_port=0, http_port=0)
    server = Server(settings, Receiver(OxigraphStore(None), "seed"), http_limits=limits)
    try:
        yield server
    finally:
        server.stop(5)


def test_a_request_sent_too_slowly_is_cut_off(tight_server: Server) -> None:
    port = tight_server.http.port
    body = request_of(agent_spans()).SerializeToString()
    cases = {
        "nothing": b"",
        "half the headers": post_head(str(len(body)))[:30],
        "half the body": post_head(str(len(body))) + body[: len(body) // 2],
    }
    for what, data in cases.items():
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(data)
            start = time.monotonic()
            try:
                while sock.recv(65536):
                    pass
            except ConnectionResetError:
                pass
            assert time.monotonic() - start < 8, f"{what}: the connection stayed open"
    assert tight_server.http.stats()["timed_out"] >= 3
    assert tight_server.receiver.stats.acknowledged_requests == 0


def test_idle_connections_past_the_cap_do_not_lock_anyone_out(tight_server: Server) -> None:
    port = tight_server.http.port
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
    try:
        time.sleep(0.2)
        assert tight_server.http.server.open_connections <= 20
        for _ in range(3):
            assert statuses(raw(port, HEALTH_REQUEST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")))\
                == [200]
        assert tight_server.http.stats()["evicted_idle"] >= 40
    finally:
        for sock in idle:
            sock.close()


def test_bodies_trickled_past_the_cap_do_not_lock_anyone_out(make_server: Make) -> None:
    """Connections that each declare a body and send it a byte at a time held every slot: new
    clients (a health check) were closed at once until the body deadline.  Now the slowest of them
    makes room for a new client."""
    limits = HttpLimits(max_connections=20, body_timeout=60.0, body_grace=0.5)
    settings = ServeSettings(store=StoreSpec("memory"), profile="seed", grpc_port=0, http_port=0)
    server = Server(settings, Receiver(OxigraphStore(None), "seed"), http_limits=limits)
    port = server.http.port
    body = request_of(agent_spans()).SerializeToString()
    slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
    try:
        for sock in slow:
            sock.sendall(post_head(str(len(body) + 1_000_000)) + body[:1])
        wait_for(lambda: server.http.server.open_connections == 20, "the slow bodies to connect")
        time.sleep(0.7)  # past their grace
        for _ in range(3):
            assert statuses(raw(port, HEALTH_REQUEST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")))\
                == [200]
        assert server.http.stats()["evicted_slow"] >= 1
        assert server.http.server.open_connections <= 20
        assert server.receiver.stats.acknowledged_requests == 0
    finally:
        for sock in slow:
            sock.close()
        server.stop(5)


def test_a_request_whose_client_half_closes_after_sending_it_is_answered(make_server: Make) -> None:
    """A client that sends its request and then shuts down its sending half (``SHUT_WR``, as
    ``curl --data @file`` through some proxies or a shell ``printf | nc -N`` do) got no answer: the
    connection was closed at once, the spans never stored."""
    server = make_server()
    body = request_of(agent_spans()).SerializeToString()
    with socket.create_connection(("127.0.0.1", server.http.port), timeout=10) as sock:
        sock.sendall(post_head(str(len(body))) + body)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert statuses(answer) == [200]
    assert server.receiver.stats.acknowledged_requests == 1


# -- item 4: values nested deep are cut, never the request ---------------------------------------


def deep_kvlist(depth: int) -> bytes:
    """A ``KeyValueList`` nested ``depth`` levels (encoded level by level: no parser recursion)."""
    inner = otlp.KeyValueList()
    leaf = inner.values.add()
    leaf.key, leaf.value.string_value = "leaf", "the bottom"
    data = inner.SerializeToString()
    for _ in range(depth - 1):
        level = otlp.KeyValueList()
        kv = level.values.add()
        kv.key = "k"
        kv.value.kvlist_value = data
        data = level.SerializeToString()
    return bytes(data)


def with_deep_arguments(spans: list[ReadableSpan], depth: int) -> bytes:
    """The request of ``spans``, its first iteration's ``otel_prov.arguments`` a key-value list
    nested ``depth`` deep."""
    request = otlp.ExportTraceServiceRequest.FromString(request_of(spans).SerializeToString())
    span = next(s for s in request.resource_spans[0].scope_spans[0].spans if s.name == "iteration 1")
    kv = next(kv for kv in span.attributes if kv.key == "otel_prov.arguments")
    kv.value.kvlist_value = deep_kvlist(depth)
    return bytes(request.SerializeToString())


def deep_json(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "the bottom"}
    key = "leaf"
    for _ in range(depth):
        value = {"kvlistValue": {"values": [{"key": key, "value": value}]}}
        key = "k"
    return value


def stored_arguments(server: Server) -> list[str]:
    """The arguments of the first iteration, as stored."""
    return [str(o) for s, p, o, _ in stored(server).quads((None, None, None, None))
            if str(p).endswith("arguments") and str(s).endswith("/i1")]


@pytest.mark.parametrize("depth", [32, 100, 5000])
def test_deeply_nested_values_are_cut_not_the_request(make_server: Make, depth: int) -> None:
    server = make_server()
    spans = agent_spans()
    body = with_deep_arguments(spans, depth)
    channel = grpc.insecure_channel(server.grpc_address)
    with channel:
        export = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        answer = ExportTraceServiceResponse.FromString(export(body, timeout=20))
    assert not answer.HasField("partial_success")
    resp = requests.post(f"http://{server.http_address}/v1/traces", data=body, timeout=20,
                         headers={"Content-Type": "application/x-protobuf"})
    assert resp.status_code == 200, resp.content[:300]
    [arguments] = stored_arguments(server)
    assert ("the bottom" in arguments) is (depth <= MAX_VALUE_DEPTH)
    assert (TOO_DEEP_MARKER in arguments) is (depth > MAX_VALUE_DEPTH)
    assert json.loads(arguments)  # still JSON
    assert server.receiver.problems.counts[TOO_DEEP] == (2 if depth > MAX_VALUE_DEPTH else 0)
    assert server.receiver.stats.spans_acknowledged == 2 * len(spans)


@pytest.mark.parametrize("depth", [32, 100])
def test_deeply_nested_values_in_otlp_json(make_server: Make, depth: int) -> None:
    server = make_server()
    spans = agent_spans()
    document = otlp_json(request_of(spans))
    for span in document["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        if span["name"] == "iteration 1":
            for kv in span["attributes"]:
                if kv["key"] == "otel_prov.arguments":
                    kv["value"] = deep_json(depth)
    resp = requests.post(f"http://{server.http_address}/v1/traces", data=json.dumps(document), timeout=20,
                         headers={"Content-Type": "application/json"})
    assert resp.status_code == 200, resp.content[:300]
    [arguments] = stored_arguments(server)
    assert ("the bottom" in arguments) is (depth <= MAX_VALUE_DEPTH)
    assert (TOO_DEEP_MARKER in arguments) is (depth > MAX_VALUE_DEPTH)


# -- item 3: memory bounded by a budget; a large request does not starve the others -------------


def replicated(spans: list[ReadableSpan], copies: int) -> ExportTraceServiceRequest:
    """The request of ``spans`` repeated ``copies`` times, each copy under its own trace ids."""
    request = request_of(spans)
    template = list(request.resource_spans[0].scope_spans[0].spans)
    target = request.resource_spans[0].scope_spans[0].spans
    for n in range(1, copies):
        trace_id = n.to_bytes(16, "big")
        for span in template:
            copy = target.add()
            copy.CopyFrom(span)
            copy.trace_id = trace_id
    return request


def padded_agent_request(size: int) -> ExportTraceServiceRequest:
    """An agent session's request, padded to about ``size`` bytes (attributes of 1 MiB that the
    mapping does not read)."""
    request = request_of(agent_spans())
    span = request.resource_spans[0].scope_spans[0].spans[0]
    for i, start in enumerate(range(0, size, MIB)):
        padding = AnyValue(string_value="x" * min(MIB, size - start))
        span.attributes.append(KeyValue(key=f"padding{i}", value=padding))
    return request


@pytest.fixture
def budget_server() -> Iterator[tuple[Server, GatedStore]]:
    """The receiver with a memory budget of 8 MiB, around a store whose writes can be held."""
    store = GatedStore()
    settings = ServeSettings(store=StoreSpec("memory"), profile="seed", grpc_port=0, http_port=0)
    server = Server(settings, Receiver(store, "seed", memory_budget=8 * MIB))
    try:
        yield server, store
    finally:
        store.gate.set()
        server.stop(5)


def test_past_the_memory_budget_requests_are_told_to_retry(budget_server: tuple[Server, GatedStore]) -> None:
    server, store = budget_server
    store.gate.clear()
    url = f"http://{server.http_address}/v1/traces"
    headers = {"Content-Type": "application/x-protobuf"}
    first_body = padded_agent_request(MIB).SerializeToString()  # ~3 MiB of the budget while it waits
    with futures.ThreadPoolExecutor(1) as pool:
        first = pool.submit(requests.post, url, data=first_body, headers=headers, timeout=30)
        wait_for(lambda: server.receiver.budget.reserved > 0, "the first request to be admitted")
        second = padded_agent_request(2 * MIB)  # ~6 MiB more: past 8 MiB
        resp = requests.post(url, data=second.SerializeToString(), headers=headers, timeout=30)
        assert resp.status_code == 503 and resp.headers["Retry-After"] == "1", resp.content[:200]
        channel, client = stub(server.grpc.port)
        with channel:
            with pytest.raises(grpc.RpcError) as err:
                client.Export(second, timeout=10)
            assert_retry_trailers(err.value, seconds=1)
            store.gate.set()
            assert first.result(30).status_code == 200
            client.Export(second, timeout=10)  # the client's retry
    assert server.receiver.budget.reserved == 0
    assert server.receiver.budget.peak <= 8 * MIB


def test_a_large_request_does_not_starve_a_small_one(make_server: Make) -> None:
    server = make_server(ack_timeout=60.0)
    big = replicated(agent_spans(), 10_000)  # 40,000 spans: seconds of mapping
    small_spans = agent_spans()
    done: list[str] = []
    channel, client = stub(server.grpc.port, **{"grpc.max_send_message_length": 64 * MIB})
    with channel, futures.ThreadPoolExecutor(1) as pool:
        def send_big() -> None:
            client.Export(big, timeout=120)
            done.append("big")

        running = pool.submit(send_big)
        pipeline = server.receiver._writer.pipeline  # type: ignore[attr-defined]  # noqa: SLF001 - to know the big one is being mapped
        wait_for(lambda: pipeline.spans > 0, "the large request to be mapped")
        client.Export(request_of(small_spans), timeout=60)
        done.append("small")
        running.result(120)
    assert done == ["small", "big"]
    assert server.receiver.stats.spans_acknowledged == 40_000 + len(small_spans)


# -- serve as a process: SIGTERM with a stalled client, file descriptors -------------------------




def test_a_stalled_client_does_not_hold_the_sigterm_drain(tmp_path: Path, procs: list[Proc]) -> None:
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log")
    procs.append(serve)
    body = request_of(agent_spans()).SerializeToString()
    stalled = socket.create_connection(("127.0.0.1", serve.http_port))
    idle = socket.create_connection(("127.0.0.1", serve.http_port))
    try:
        stalled.sendall(post_head(str(len(body))) + body[:20])  # and never the rest
        time.sleep(0.3)
        start = time.monotonic()
        code = serve.terminate(timeout=30)
        took = time.monotonic() - start
    finally:
        stalled.close()
        idle.close()
    assert code == 0, serve.tail()
    assert took < 10, f"SIGTERM took {took:.1f} s with a stalled client"
    assert "Traceback" not in serve.log.read_text()


def test_a_flood_of_idle_connections_exhausts_no_file_descriptors(tmp_path: Path, procs: list[Proc]) -> None:
    """1,100 idle connections on each port of a serve allowed 1,024 file descriptors: HTTP and
    /health answer at once, gRPC within its handshake timeout, and the process stops cleanly."""
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log", prefix=["prlimit", "--nofile=1024:1024"])
    procs.append(serve)
    flood: list[socket.socket] = []
    try:
        for port in (serve.http_port, serve.grpc_port):
            for _ in range(1100):
                try:
                    flood.append(socket.create_connection(("127.0.0.1", port), timeout=5))
                except OSError:
                    break  # refused: that is fine too, as long as service goes on
        time.sleep(0.5)
        health = requests.get(f"http://{serve.http}/health", timeout=10)
        assert health.status_code == 200, serve.tail()
        body = request_of(agent_spans()).SerializeToString()
        resp = requests.post(f"http://{serve.http}/v1/traces", data=body, timeout=10,
                             headers={"Content-Type": "application/x-protobuf"})
        assert resp.status_code == 200, resp.content[:200]

        def grpc_works() -> bool:
            channel, client = stub(serve.grpc_port)
            with channel:
                try:
                    client.Export(request_of(agent_spans()), timeout=5)
                    return True
                except grpc.RpcError:
                    return False

        wait_for(grpc_works, "gRPC to serve again", timeout=40)
    finally:
        for sock in flood:
            sock.close()
    assert serve.terminate(timeout=30) == 0, serve.tail()
    assert "Too many open files" not in serve.log.read_text()


# -- item 10: no token, no listening beyond loopback unless the operator says so ----------------


def test_listening_beyond_loopback_without_a_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for host in ("0.0.0.0", "::", "192.0.2.10"):
        with pytest.raises(ConfigError, match="without a token"):
            serve_settings(store="memory:", host=host)
        assert serve_settings(store="memory:", host=host, token="t").token == "t"
        assert serve_settings(store="memory:", host=host, public_without_token="true").public_without_token
    monkeypatch.setenv("OTEL_PROV_SERVE_PUBLIC_WITHOUT_TOKEN", "true")
    assert serve_settings(store="memory:", host="0.0.0.0").token is None
    monkeypatch.delenv("OTEL_PROV_SERVE_PUBLIC_WITHOUT_TOKEN")
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        assert serve_settings(store="memory:", host=host).loopback
    result = subprocess.run([*serve_command(), "--store", "memory:", "--host", "0.0.0.0", "--grpc-port", "0",
                             "--http-port", "0"], capture_output=True, text=True, timeout=60, env=clean_env())
    assert result.returncode == 2  # a bad value: a usage error
    assert "refusing to listen on 0.0.0.0 without a token" in result.stderr
    assert "--public-without-token" in result.stderr


# -- item 8: a session of 10,000 steps renders in every format -----------------------------------


@pytest.fixture(scope="module")
def long_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one agent session of 10,000 iterations (real SDK spans, the exporter)."""
    store = tmp_path_factory.mktemp("long") / "store"
    exporter = ProvSpanExporter(store=f"oxigraph:{store}")
    provider = TracerProvider()
    processor = BatchSpanProcessor(exporter, max_queue_size=20_000, max_export_batch_size=2048)
    provider.add_span_processor(processor)
    with agent_session("a long question?", tracer_provider=provider) as session:
        for i in range(LONG_STEPS):
            with session.iteration() as step:
                step.thought(f"thought {i}")
                step.action("calculator", {"expression": f"{i}+1"})
                step.observation(str(i + 1))
        session.conclude("done")
    provider.shutdown()
    return store, session.explain_id


LONG_STEPS = 10_000


@pytest.mark.parametrize("fmt", ["text", "json", "turtle", "dot", "svg"])
def test_a_session_of_10000_steps_renders_in_every_format(long_session: tuple[Path, str], fmt: str,
                                                          tmp_path: Path) -> None:
    store, iri = long_session
    out = tmp_path / f"show.{fmt}"
    assert cli_main(["show", iri, "--store", f"oxigraph:{store}", "--format", fmt, "--output", str(out)]) == 0
    text = out.read_text()
    if fmt == "text":
        assert f"--- Analysis {LONG_STEPS} ---" in text and "--- Conclusion ---" in text
    elif fmt == "json":
        steps = json.loads(text)["steps"]
        assert [s.get("number") for s in steps[:-1]] == list(range(1, LONG_STEPS + 1))
    elif fmt == "svg":
        assert f"Analysis {LONG_STEPS}<" in text and text.rstrip().endswith("</svg>")
    else:
        assert f"/i{LONG_STEPS}" in text


# -- item 9: our exporter never breaks the application's other exporters -------------------------


_APP = """
from opentelemetry import trace
from otel_prov import agent_session

with agent_session("is anybody there?") as session:
    with session.iteration() as step:
        step.thought("look")
        step.observation("nobody")
    session.conclude("no")
trace.get_tracer_provider().shutdown()
print("app done")
"""


@pytest.mark.parametrize("exporters", ["prov,otlp", "otlp,prov"])
def test_a_store_that_cannot_be_opened_degrades_our_exporter_not_the_others(
        make_server: Make, tmp_path: Path, exporters: str) -> None:
    server = make_server()
    blocker = tmp_path / "file"
    blocker.write_text("a file where the store's directory should be")
    store = blocker / "store"  # cannot be created
    script = tmp_path / "app.py"
    script.write_text(_APP)
    instrument = Path(sys.executable).parent / "opentelemetry-instrument"
    env = clean_env({
        "OTEL_TRACES_EXPORTER": exporters, "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://{server.grpc_address}",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "true",
        "OTEL_PROV_STORE": f"oxigraph:{store}",
    })
    run = subprocess.run([str(instrument), sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "app done" in run.stdout
    assert "Traceback" not in run.stderr, run.stderr
    lines = [line for line in run.stderr.splitlines() if "otel-prov exporter" in line]
    assert len(lines) == 2 and "will not be stored" in lines[0] and str(store) in lines[0], \
        run.stderr
    delivered = server.receiver.stats.spans_acknowledged  # the OTLP exporter delivered them all
    assert delivered == 3  # the agent span, its question and its iteration
    assert f"{delivered} spans were not stored" in lines[1]


# -- item 7 (its query part): --timeout, Ctrl-C, no network unless asked --------------------------


SLOW_QUERY = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?a ?p ?x . ?b ?p ?y . ?c ?p ?z } }"


@pytest.fixture(scope="module")
def slow_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store where :data:`SLOW_QUERY` runs for minutes (a three-way join of 3,000 quads)."""
    path = tmp_path_factory.mktemp("slow") / "store"
    store = pyoxigraph.Store(str(path))
    store.load(input="".join(f'<urn:s{i}> <urn:p> "{i}" <urn:g> .\n' for i in range(3000)).encode(),
               format=pyoxigraph.RdfFormat.N_QUADS)
    store.flush()
    del store
    return path


def query_command(store: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "otel_prov.cli", "query", "--store", f"oxigraph:{store}", *args]


def test_query_gives_up_after_its_timeout(slow_store: Path) -> None:
    start = time.monotonic()
    run = subprocess.run(query_command(slow_store, SLOW_QUERY, "--timeout", "1.5"), capture_output=True,
                         text=True, timeout=60, env=clean_env())
    assert run.returncode == 1
    assert run.stderr.strip() == "otel-prov: error: the query did not finish within 1.5 s (--timeout)"
    assert time.monotonic() - start < 20


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_ctrl_c_stops_a_long_query_at_once(slow_store: Path) -> None:
    proc = subprocess.Popen(query_command(slow_store, SLOW_QUERY), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        # Well into the query: 2 s of CPU spent (start-up takes about 0.5 s), however busy the machine.
        wait_for(lambda: proc.poll() is not None or _cpu_seconds(proc.pid) >= 2.0, "the query to run",
                 timeout=60)
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err
    assert err.strip() == "otel-prov: interrupted"


def test_service_is_refused_unless_asked_and_then_bounded(slow_store: Path) -> None:
    """A SERVICE pointing at a server that accepts and never answers: without --allow-service no
    connection is made at all; with it, --timeout still ends the query."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    query = f"SELECT * WHERE {{ SERVICE <http://127.0.0.1:{port}/sparql> {{ ?s ?p ?o }} }}"
    try:
        run = subprocess.run(query_command(slow_store, query), capture_output=True, text=True, timeout=60,
                             env=clean_env())
        assert run.returncode == 2  # refused before it runs: a bad value of the query argument
        assert "SERVICE" in run.stderr and "--allow-service" in run.stderr
        with pytest.raises(TimeoutError):
            listener.accept()  # nobody came
        start = time.monotonic()
        run = subprocess.run(query_command(slow_store, query, "--allow-service", "--timeout", "2"),
                             capture_output=True, text=True, timeout=60, env=clean_env())
        assert run.returncode == 1
        assert "did not finish within 2 s" in run.stderr or "query failed" in run.stderr, run.stderr
        assert time.monotonic() - start < 20
    finally:
        listener.close()
