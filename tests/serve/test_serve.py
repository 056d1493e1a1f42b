"""The OTLP receiver (``otel-prov serve``): real gRPC and HTTP servers on port 0, real OTLP
exporters and clients, real Oxigraph stores; subprocess runs for SIGTERM and kill -9."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pyoxigraph
import pytest
import requests
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_prov import spans_to_dataset
from otel_prov.mapping import mapper as _mapper
from otel_prov.mapping.flows import map_spans
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import SpanRecord, from_otlp, from_sdk
from otel_prov.model.quads import nquads
from otel_prov.model.terms import isoformat_ns
from otel_prov.serve.server import Server
from otel_prov.settings import ServeSettings, serve_settings
from otel_prov.stores import StoreSpec
from otel_prov.stores.oxigraph import OxigraphStore
from tests.support.graphs import assert_isomorphic
from tests.support.procs import Proc, process_tree, start_serve, wait_until
from tests.support.serving import (
    EXPORT,
    MIB,
    GatedStore,
    Make,
    agent_spans,
    assert_retry_trailers,
    export_over_grpc,
    otlp_json,
    padded_request,
    request_of,
    stored,
    stub,
)
from tests.support.stores import read_back

# -- success --------------------------------------------------------------------------------------


def test_grpc_export_stores_the_same_graph_as_the_sdk_exporter(make_server: Make) -> None:
    server = make_server()
    spans = agent_spans(2)
    export_over_grpc(server, spans)
    assert_isomorphic(spans_to_dataset(spans), stored(server))
    assert server.receiver.stats.spans_acknowledged == len(spans)


def test_the_same_span_gives_the_same_literals_through_serve_as_in_process(make_server: Make) -> None:
    """N-Quads compared as text (rdflib's isomorphism would cut times to microseconds): every
    xsd:dateTime keeps its nanoseconds, in the canonical form, on both paths."""
    server = make_server()
    spans = agent_spans(3)
    export_over_grpc(server, spans)
    in_process = {" ".join(q) for q in TraceMapper("seed").map([from_sdk(s) for s in spans]).add}
    store = server.receiver.store
    assert isinstance(store, OxigraphStore)
    served = {str(q) for q in store.inner}  # N-Quads terms, as the mapping writes them
    assert served == in_process
    times = {o for q in in_process for o in [q.split(" ", 2)[2]] if "dateTime" in o}
    stamps = {span.start_time for span in spans} | {span.end_time for span in spans}
    assert any(stamp % 10 for stamp in stamps)  # nanoseconds that a microsecond cut would lose
    assert {isoformat_ns(stamp) for stamp in stamps} >= {t.split('"')[1] for t in times}


def test_http_protobuf_export(make_server: Make) -> None:
    server = make_server()
    spans = agent_spans()
    exporter = HttpExporter(endpoint=f"http://{server.http_address}/v1/traces", timeout=10)
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert_isomorphic(spans_to_dataset(spans), stored(server))


def test_gzip_on_both_transports(make_server: Make) -> None:
    server = make_server()
    spans_grpc, spans_http = agent_spans(), agent_spans()
    grpc_exporter = GrpcExporter(endpoint=server.grpc_address, insecure=True, timeout=10,
                                 compression=grpc.Compression.Gzip)
    http_exporter = HttpExporter(endpoint=f"http://{server.http_address}/v1/traces", timeout=10,
                                 compression=HttpCompression.Gzip)
    try:
        assert grpc_exporter.export(spans_grpc) is SpanExportResult.SUCCESS
        assert http_exporter.export(spans_http) is SpanExportResult.SUCCESS
    finally:
        grpc_exporter.shutdown()
        http_exporter.shutdown()
    # And a hand-made gzip body, to be sure the server (not the client) decompresses.
    spans_raw = agent_spans()
    body = gzip.compress(request_of(spans_raw).SerializeToString())
    resp = requests.post(f"http://{server.http_address}/v1/traces", data=body, timeout=10,
                         headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"})
    assert resp.status_code == 200, resp.content
    assert_isomorphic(spans_to_dataset(spans_grpc + spans_http + spans_raw), stored(server))


def test_messages_up_to_64_mib(make_server: Make) -> None:
    server = make_server()
    channel, client = stub(server.grpc.port, **{"grpc.max_send_message_length": 128 * MIB})
    with channel:
        response = client.Export(padded_request(40 * MIB), timeout=60)
        assert not response.HasField("partial_success")
        with pytest.raises(grpc.RpcError) as too_big:
            client.Export(padded_request(65 * MIB), timeout=60)
    assert too_big.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    # HTTP: 40 MiB is fine; a gzip body that inflates past 64 MiB is 413.
    url = f"http://{server.http_address}/v1/traces"
    headers = {"Content-Type": "application/x-protobuf"}
    resp = requests.post(url, data=padded_request(40 * MIB).SerializeToString(), headers=headers, timeout=60)
    assert resp.status_code == 200
    bomb = gzip.compress(b"\0" * (65 * MIB))
    resp = requests.post(url, data=bomb, headers={**headers, "Content-Encoding": "gzip"}, timeout=60)
    assert resp.status_code == 413


def test_http_content_length_over_64_mib_is_413_without_reading_it(make_server: Make) -> None:
    server = make_server()
    with socket.create_connection(("127.0.0.1", server.http.port), timeout=10) as sock:
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/x-protobuf\r\nContent-Length: %d\r\n\r\n" % (64 * MIB + 1))
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 413")


# -- partial success and bad payloads -------------------------------------------------------------


def test_partial_success_for_spans_that_can_never_be_accepted(make_server: Make) -> None:
    server = make_server()
    spans = agent_spans()
    request = request_of(spans)
    bad = request.resource_spans[0].scope_spans[0].spans.add()
    bad.CopyFrom(request.resource_spans[0].scope_spans[0].spans[0])
    bad.trace_id = b"\x01\x02\x03\x04"  # not 16 bytes
    channel, client = stub(server.grpc.port)
    with channel:
        response = client.Export(request, timeout=10)
    assert response.partial_success.rejected_spans == 1
    assert "trace_id" in response.partial_success.error_message
    # Over HTTP/JSON too.
    resp = requests.post(f"http://{server.http_address}/v1/traces", timeout=10,
                         data=json.dumps(otlp_json(request)), headers={"Content-Type": "application/json"})
    assert resp.status_code == 200
    body = resp.json()
    assert body["partialSuccess"]["rejectedSpans"] == "1"
    assert_isomorphic(spans_to_dataset(spans), stored(server))


def poison_map_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real per-span mapping, except that it raises on a span named ``poison`` (a stand-in for
    a mapping bug: no real input is known to make it raise)."""
    real = _mapper.map_span

    def map_span(rec: SpanRecord, *args: Any, **kwargs: Any) -> Any:
        if rec.name == "poison":
            raise RuntimeError("mapping bug (test)")
        return real(rec, *args, **kwargs)

    monkeypatch.setattr(_mapper, "map_span", map_span)


def test_a_span_the_mapping_fails_on_is_rejected_and_the_rest_stored(
        make_server: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    poison_map_span(monkeypatch)
    server = make_server()
    spans = agent_spans()
    request = request_of(spans)
    poison = request.resource_spans[0].scope_spans[0].spans.add()
    poison.CopyFrom(request.resource_spans[0].scope_spans[0].spans[0])
    poison.span_id = b"\x09" * 8
    poison.name = "poison"
    channel, client = stub(server.grpc.port)
    with channel:
        response = client.Export(request, timeout=10)
    assert response.partial_success.rejected_spans == 1
    assert "poison" in response.partial_success.error_message
    assert_isomorphic(spans_to_dataset(spans), stored(server))


def test_undecodable_requests_are_invalid_argument_and_400(make_server: Make) -> None:
    server = make_server()
    channel = grpc.insecure_channel(server.grpc_address)
    with channel:
        raw = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as err:
            raw(b"\x0a\x05abc", timeout=10)  # a length-delimited field cut short
    assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    url = f"http://{server.http_address}/v1/traces"
    cases = [
        ({"Content-Type": "application/x-protobuf"}, b"\x0a\x05abc", 400),
        ({"Content-Type": "application/json"}, b"{not json", 400),
        ({"Content-Type": "application/json"}, b'{"resourceSpans": [{"scopeSpans": [{"spans": '
                                               b'[{"traceId": "zz"}]}]}]}', 400),
        ({"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"}, b"not gzip", 400),
        ({"Content-Type": "text/plain"}, b"hello", 415),
    ]
    for headers, body, expected in cases:
        resp = requests.post(url, data=body, headers=headers, timeout=10)
        assert resp.status_code == expected, (headers, body, resp.content)
    assert server.receiver.stats.acknowledged_requests == 0
    assert len(stored(server)) == 0


def test_otlp_json_with_hex_ids(make_server: Make) -> None:
    server = make_server()
    spans = agent_spans()
    document = otlp_json(request_of(spans))
    trace_ids = {f"{s.context.trace_id:032x}" for s in spans}
    assert {s["traceId"] for s in document["resourceSpans"][0]["scopeSpans"][0]["spans"]} == trace_ids
    resp = requests.post(f"http://{server.http_address}/v1/traces", data=json.dumps(document),
                         headers={"Content-Type": "application/json"}, timeout=10)
    assert resp.status_code == 200, resp.content
    assert resp.headers["Content-Type"] == "application/json"
    assert resp.json() == {}
    assert_isomorphic(spans_to_dataset(spans), stored(server))


# -- authentication and TLS -----------------------------------------------------------------------


def test_bearer_token(make_server: Make) -> None:
    server = make_server(token="s3cret")
    request = request_of(agent_spans())
    channel, client = stub(server.grpc.port)
    with channel:
        for metadata in ((), (("authorization", "Bearer wrong"),), (("authorization", "s3cret"),)):
            with pytest.raises(grpc.RpcError) as err:
                client.Export(request, metadata=metadata, timeout=10)
            assert err.value.code() is grpc.StatusCode.UNAUTHENTICATED
        client.Export(request, metadata=(("authorization", "Bearer s3cret"),), timeout=10)
    url = f"http://{server.http_address}/v1/traces"
    body = request.SerializeToString()
    headers = {"Content-Type": "application/x-protobuf"}
    assert requests.post(url, data=body, headers=headers, timeout=10).status_code == 401
    assert requests.post(url, data=body, timeout=10,
                         headers={**headers, "Authorization": "Bearer nope"}).status_code == 401
    assert requests.post(url, data=body, timeout=10,
                         headers={**headers, "Authorization": "Bearer s3cret"}).status_code == 200
    # The SDK's own exporter with the header configured.
    spans = agent_spans()
    exporter = GrpcExporter(endpoint=server.grpc_address, insecure=True, timeout=10,
                            headers={"authorization": "Bearer s3cret"})
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert server.receiver.stats.refused["request refused: no bearer token"] == 2
    assert server.receiver.stats.refused["request refused: wrong bearer token"] == 3


@pytest.fixture
def tls_files(tmp_path: Path) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        if os.environ.get("CI"):
            pytest.fail("openssl is needed to make a test certificate")
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def test_tls_on_both_transports(make_server: Make, tls_files: tuple[Path, Path]) -> None:
    cert, key = tls_files
    server = make_server(tls=(cert, key))
    spans = agent_spans()
    credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
    exporter = GrpcExporter(endpoint=f"localhost:{server.grpc.port}", credentials=credentials, timeout=10)
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    resp = requests.post(f"https://localhost:{server.http.port}/v1/traces", verify=str(cert), timeout=10,
                         data=request_of(agent_spans()).SerializeToString(),
                         headers={"Content-Type": "application/x-protobuf"})
    assert resp.status_code == 200
    with pytest.raises(requests.exceptions.ConnectionError):  # plaintext to a TLS port
        requests.post(f"http://127.0.0.1:{server.http.port}/v1/traces", data=b"", timeout=5)


# -- back-pressure, store failure, health ---------------------------------------------------------


def test_backpressure_answers_unavailable_with_both_retry_trailers(make_server: Make) -> None:
    store = GatedStore()
    store.gate.clear()
    server = make_server(store, max_inflight=1)
    channel, client = stub(server.grpc.port)
    with channel:
        held = client.Export.future(request_of(agent_spans()), timeout=30)
        assert store.entered.wait(10)
        with pytest.raises(grpc.RpcError) as err:
            client.Export(request_of(agent_spans()), timeout=10)
        assert_retry_trailers(err.value, seconds=1)
        resp = requests.post(f"http://{server.http_address}/v1/traces", timeout=10,
                             data=request_of(agent_spans()).SerializeToString(),
                             headers={"Content-Type": "application/x-protobuf"})
        assert resp.status_code == 503
        assert resp.headers["Retry-After"] == "1"
        assert status_pb2.Status.FromString(resp.content).code == grpc.StatusCode.UNAVAILABLE.value[0]
        assert not held.done()  # not acknowledged before the commit
        store.gate.set()
        held.result(timeout=10)
    refused = server.receiver.stats.refused
    assert refused["request refused: too many requests in flight"] == 2


def test_failing_store_answers_unavailable_then_recovers(make_server: Make) -> None:
    store = GatedStore()
    store.fail = True
    server = make_server(store)
    spans = agent_spans()
    channel, client = stub(server.grpc.port)
    with channel:
        with pytest.raises(grpc.RpcError) as err:
            client.Export(request_of(spans), timeout=10)
        assert_retry_trailers(err.value, seconds=5)
        health = requests.get(f"http://{server.http_address}/health", timeout=5)
        assert health.status_code == 503 and health.json()["status"] == "store failing"
        with pytest.raises(grpc.RpcError) as err:  # refused at once while the store fails
            client.Export(request_of(agent_spans()), timeout=10)
        assert_retry_trailers(err.value, seconds=5)
        store.fail = False
        deadline = time.monotonic() + 15
        while not server.receiver.healthy():
            assert time.monotonic() < deadline, "the writer did not recover"
            time.sleep(0.05)
        client.Export(request_of(spans), timeout=10)  # the client's retry
    assert_isomorphic(spans_to_dataset(spans), stored(server))


def test_health_endpoints(make_server: Make) -> None:
    server = make_server()
    resp = requests.get(f"http://{server.http_address}/health", timeout=5)
    assert resp.status_code == 200
    assert resp.json()["status"] == "ok"
    channel = grpc.insecure_channel(server.grpc_address)
    with channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=None,
                                    response_deserializer=None)
        assert check(b"", timeout=5) == b"\x08\x01"  # SERVING


# -- shutdown -------------------------------------------------------------------------------------


def test_stop_drains_in_flight_requests(make_server: Make) -> None:
    store = GatedStore()
    store.gate.clear()
    server = make_server(store)
    spans = agent_spans()
    channel, client = stub(server.grpc.port)
    with channel:
        held = client.Export.future(request_of(spans), timeout=30)
        assert store.entered.wait(10)
        with futures.ThreadPoolExecutor(1) as pool:
            stopping = pool.submit(server.stop, 20)
            deadline = time.monotonic() + 5
            while not server.receiver._draining:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            with pytest.raises(grpc.RpcError) as err:  # new work is refused as retryable
                client.Export(request_of(agent_spans()), timeout=10)
            assert err.value.code() is grpc.StatusCode.UNAVAILABLE
            assert not stopping.done()
            store.gate.set()
            held.result(timeout=10)
            assert stopping.result(timeout=20) is True


def _quads(spans_request: ExportTraceServiceRequest) -> list[pyoxigraph.Quad]:
    records = [from_otlp(s) for rs in spans_request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    data = nquads(map_spans(records).quads)
    return list(pyoxigraph.parse(input=data, format=pyoxigraph.RdfFormat.N_QUADS))


def _send_until(port: int, requests_: list[ExportTraceServiceRequest], stop: threading.Event,
                acked: list[int], lock: threading.Lock, start: int, step: int) -> None:
    channel, client = stub(port)
    with channel:
        for i in range(start, len(requests_), step):
            if stop.is_set():
                return
            try:
                client.Export(requests_[i], timeout=10)
            except grpc.RpcError:
                return  # refused or the server went away: not acknowledged
            with lock:
                acked.append(i)


class _Load:
    """``clients`` threads sending ``batch`` to a server until stopped; ``acked`` holds the indexes
    of acknowledged requests."""

    def __init__(self, port: int, batch: list[ExportTraceServiceRequest], clients: int) -> None:
        self.acked: list[int] = []
        self.lock, self._stop = threading.Lock(), threading.Event()
        self._threads = [threading.Thread(target=_send_until, args=(
            port, batch, self._stop, self.acked, self.lock, k, clients)) for k in range(clients)]
        for t in self._threads:
            t.start()

    def wait_for(self, count: int, serve: Proc) -> None:
        deadline = time.monotonic() + 30
        while len(self.acked) < count:
            assert time.monotonic() < deadline, serve.tail()
            time.sleep(0.005)

    def stop(self) -> list[int]:
        self._stop.set()
        for t in self._threads:
            t.join(30)
        with self.lock:
            return sorted(set(self.acked))


def test_sigterm_drains_and_exits_cleanly(tmp_path: Path, procs: list[Proc]) -> None:
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log")
    procs.append(serve)
    batch = [request_of(agent_spans(5)) for _ in range(40)]
    load = _Load(serve.grpc_port, batch, clients=4)
    load.wait_for(8, serve)
    code = serve.terminate(timeout=30)
    acked = load.stop()
    assert code == 0, serve.tail()
    assert "stopped" in serve.tail()
    with read_back(serve.store) as store:
        missing = [i for i in acked for q in _quads(batch[i]) if q not in store]
    assert not missing, f"{len(missing)} acknowledged quads missing"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_kill9_and_restart_lose_nothing_acknowledged(tmp_path: Path, procs: list[Proc], workers: str) -> None:
    """A real ``otel-prov serve`` under load from real gRPC clients is killed with SIGKILL, then
    restarted on the same store: every acknowledged request's quads are there.  Its mapping
    workers, if any, find the serve process gone and exit."""
    store_path = tmp_path / "store"
    serve = start_serve(store_path, tmp_path / "serve.log", "--workers", workers)
    procs.append(serve)
    children = process_tree(serve.pid)[1:]
    assert len(children) == (0 if workers == "1" else int(workers))
    batch = [request_of(agent_spans(20)) for _ in range(64)]
    load = _Load(serve.grpc_port, batch, clients=8)
    load.wait_for(24, serve)
    serve.kill9()
    acknowledged = load.stop()
    assert len(acknowledged) < len(batch), "the kill came after the load: nothing was in flight"
    wait_until(lambda: not [c for c in children if Path(f"/proc/{c}").exists()
                            and "Z" not in Path(f"/proc/{c}/stat").read_text().split(")")[-1][:3]],
               30, "the mapping workers to exit")
    restarted = start_serve(store_path, tmp_path / "serve2.log")
    procs.append(restarted)
    health = requests.get(f"http://{restarted.http}/health", timeout=5)
    assert health.status_code == 200
    assert restarted.terminate(timeout=30) == 0, restarted.tail()
    expected = [q for i in acknowledged for q in _quads(batch[i])]
    assert expected
    with read_back(store_path) as store:
        missing = [q for q in expected if q not in store]
    assert not missing, f"{len(missing)} of {len(expected)} acknowledged quads lost after kill -9"


def test_a_mapping_worker_killed_is_started_again_and_nothing_acknowledged_is_lost(
        tmp_path: Path, procs: list[Proc]) -> None:
    """``--workers 2``: one worker is killed with SIGKILL under load; the requests it had are
    answered UNAVAILABLE (the clients retry), serve starts it again, and every request ends
    acknowledged with its quads in the store."""
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log", "--workers", "2")
    procs.append(serve)
    batch = [request_of(agent_spans(20)) for _ in range(300)]
    acked: list[int] = []
    refused: list[int] = []
    lock = threading.Lock()

    def send(start: int) -> None:  # a client that retries what is refused, as the Collector does
        channel, client = stub(serve.grpc_port)
        with channel:
            for i in range(start, len(batch), 6):
                deadline = time.monotonic() + 90
                while True:
                    try:
                        client.Export(batch[i], timeout=30)
                        break
                    except grpc.RpcError as exc:
                        assert exc.code() is grpc.StatusCode.UNAVAILABLE, exc
                        with lock:
                            refused.append(i)
                        assert time.monotonic() < deadline
                        time.sleep(0.2)
                with lock:
                    acked.append(i)

    clients = [threading.Thread(target=send, args=(k,)) for k in range(6)]
    for client in clients:
        client.start()
    wait_until(lambda: len(acked) >= 10, 30, "requests acknowledged", proc=serve)
    victim = process_tree(serve.pid)[-1]
    os.kill(victim, 9)
    for client in clients:
        client.join(180)
    assert sorted(acked) == list(range(len(batch)))
    assert refused, "nothing was refused: the kill came after the load"
    assert "starting it again" in serve.tail() and "runs again" in serve.tail()
    health = requests.get(f"http://{serve.http}/health", timeout=5).json()
    assert health["status"] == "ok"
    assert serve.terminate(timeout=60) == 0, serve.tail()
    with read_back(serve.store) as store:
        missing = [q for request in batch for q in _quads(request) if q not in store]
    assert not missing, f"{len(missing)} acknowledged quads missing"


def _mapping_workers() -> list[int]:
    """The mapping workers this process started (``python -m otel_prov.serve.worker``)."""
    return [pid for pid in process_tree(os.getpid())[1:]
            if b"otel_prov.serve.worker\x00" in Path(f"/proc/{pid}/cmdline").read_bytes()]


def test_mapping_workers_store_the_graph_of_one_mapper_over_both_transports(
        interop: Any, tmp_path: Path) -> None:
    """``workers=2`` on an on-disk store: agent sessions and the real openai-v2 chat traces (one
    conversation over several traces, given trace ids that put them on both workers), every trace
    cut over requests sent in a shuffled order over gRPC, HTTP/protobuf and HTTP/JSON.  The store
    holds exactly what one mapper makes of all the spans; a span with an invalid trace id is
    rejected once; text that is not UTF-8 is repaired by the workers as by the serve process."""
    import random

    from otel_prov.mapping import otlp
    from otel_prov.mapping.spans import records_from_otlp, trace_share

    whole = interop.request("openai_v2_chat")
    chat_ids = {span.trace_id for rs in whole.resource_spans for ss in rs.scope_spans for span in ss.spans}
    whole.resource_spans.extend(request_of(agent_spans(4)).resource_spans)
    new_ids: dict[bytes, bytes] = {}  # traces alternate between the workers, the chat's first
    pieces = []
    for rs in whole.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                if span.trace_id not in new_ids:
                    new = os.urandom(16)
                    while trace_share(new, 2) != len(new_ids) % 2:
                        new = os.urandom(16)
                    new_ids[span.trace_id] = new
                span.trace_id = new_ids[span.trace_id]
                pieces.append((rs.resource, ss.scope, span))
    chat_traces = {new_ids[t] for t in chat_ids}
    assert {trace_share(t, 2) for t in chat_traces} == {0, 1}
    body = request_of(agent_spans(2)).SerializeToString()
    assert b"question 1?" in body
    not_utf8 = body.replace(b"question 1?", b"question\xff1?")  # the same length: still protobuf
    records, _ = records_from_otlp(whole.resource_spans)
    repaired = records_from_otlp(otlp.repaired(not_utf8).resource_spans)[0]
    assert any("question\ufffd1?" in str(r.attributes) for r in repaired)
    want = {" ".join(q) for q in TraceMapper("seed").map(records + repaired).add}
    chat_records = [r for r in records if r.trace_id.to_bytes(16, "big") in chat_traces]
    assert TraceMapper("seed").map(chat_records).add, "the chat traces map to nothing"
    random.Random(7).shuffle(pieces)
    requests_ = []
    for i in range(0, len(pieces), 5):
        request = ExportTraceServiceRequest()
        for resource, scope, span in pieces[i:i + 5]:
            rs = request.resource_spans.add()
            rs.resource.CopyFrom(resource)
            ss = rs.scope_spans.add()
            ss.scope.CopyFrom(scope)
            ss.spans.add().CopyFrom(span)
        requests_.append(request)
    bad = requests_[0].resource_spans[0].scope_spans[0].spans.add()
    bad.CopyFrom(requests_[0].resource_spans[0].scope_spans[0].spans[0])
    bad.trace_id = b"\x01\x02\x03\x04"

    store = tmp_path / "store"
    server = Server(ServeSettings(store=StoreSpec("oxigraph", store), profile="seed", grpc_port=0,
                                  http_port=0, drain_timeout=10.0, workers=2))
    try:
        assert len(_mapping_workers()) == 2
        url = f"http://{server.http_address}/v1/traces"
        channel, client = stub(server.grpc.port)  # type: ignore[union-attr]
        with channel:
            for i, request in enumerate(requests_):
                if i % 3 == 0:
                    response = client.Export(request, timeout=20)
                    assert response.partial_success.rejected_spans == (1 if i == 0 else 0)
                elif i % 3 == 1:
                    resp = requests.post(url, data=request.SerializeToString(), timeout=20,
                                         headers={"Content-Type": "application/x-protobuf"})
                    assert resp.status_code == 200, resp.content
                else:
                    resp = requests.post(url, data=json.dumps(otlp_json(request)), timeout=20,
                                         headers={"Content-Type": "application/json"})
                    assert resp.status_code == 200, resp.content
            raw = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
            answer = ExportTraceServiceResponse.FromString(raw(not_utf8, timeout=20))
            assert not answer.HasField("partial_success"), answer
        assert server.receiver.stats.spans_acknowledged == len(pieces) + len(repaired)
    finally:
        assert server.stop(30)
    assert not _mapping_workers()
    with read_back(store) as index:
        assert {str(q) for q in index} == want


# -- settings -------------------------------------------------------------------------------------


def test_settings_from_flags_and_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OTEL_PROV_SERVE_GRPC_PORT", "5317")
    monkeypatch.setenv("OTEL_PROV_SERVE_HTTP_PORT", "off")
    monkeypatch.setenv("OTEL_PROV_SERVE_TOKEN", "from-env")
    settings = serve_settings(store=f"oxigraph:{tmp_path / 's'}")
    assert (settings.host, settings.grpc_port, settings.http_port, settings.token) == \
        ("127.0.0.1", 5317, None, "from-env")
    settings = serve_settings(store="memory:", grpc_port="0", token="flag")
    assert (settings.grpc_port, settings.token) == (0, "flag")
    from otel_prov import ConfigError

    with pytest.raises(ConfigError, match="both transports are off"):
        serve_settings(store="memory:", grpc_port="off")
    with pytest.raises(ConfigError, match="70000"):
        serve_settings(store="memory:", grpc_port="70000")
    with pytest.raises(ConfigError, match="TLS"):
        serve_settings(store="memory:", tls_cert=str(tmp_path / "cert.pem"))
    assert serve_settings(store=f"oxigraph:{tmp_path / 's'}").mapping_workers == 1  # opt-in
    monkeypatch.setenv("OTEL_PROV_SERVE_WORKERS", "3")
    assert serve_settings(store=f"oxigraph:{tmp_path / 's'}").mapping_workers == 3
    assert serve_settings(store="memory:").mapping_workers == 1  # lives in the serve process
    auto = serve_settings(store=f"oxigraph:{tmp_path / 's'}", workers="0").mapping_workers
    assert auto == min(os.cpu_count() or 1, 4)
    with pytest.raises(ConfigError, match="OTEL_PROV_SERVE_WORKERS"):
        monkeypatch.setenv("OTEL_PROV_SERVE_WORKERS", "many")
        serve_settings(store="memory:")


def test_serve_command_reports_a_bad_store_in_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    from tests.support.procs import clean_env, serve_command

    result = subprocess.run([*serve_command(), "--store", f"oxigraph:{blocker / 'store'}", "--grpc-port", "0",
                             "--http-port", "0"], capture_output=True, text=True, timeout=60, env=clean_env())
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("otel-prov: error: cannot create the store")


def test_serve_in_memory_warns_at_start(tmp_path: Path) -> None:
    """``--store memory:`` is allowed (tests, trials) but said: everything is lost when serve stops."""
    from tests.support.procs import start_serve

    server = start_serve("memory:", tmp_path / "serve.log")
    assert server.terminate() == 0, server.tail()
    warned = [line for line in server.log.read_text().splitlines() if "memory:" in line and "WARNING" in line]
    assert len(warned) == 1, server.log.read_text()
    assert warned[0].endswith(
        "otel-prov serve: the store is in memory (memory:): everything received is lost when serve stops, "
        "and no other command can read it; give --store PATH to keep it")


def test_response_type_matches_request(make_server: Make) -> None:
    server = make_server()
    resp = requests.post(f"http://{server.http_address}/v1/traces", timeout=10,
                         data=request_of(agent_spans()).SerializeToString(),
                         headers={"Content-Type": "application/x-protobuf"})
    assert resp.headers["Content-Type"] == "application/x-protobuf"
    assert ExportTraceServiceResponse.FromString(resp.content) == ExportTraceServiceResponse()


def test_two_authorization_headers_are_never_decided_by_the_first(make_server: Make) -> None:
    """With a token, a request carrying the right token and a wrong one (in either order) is refused
    on both transports: which header a server reads first decides nothing."""
    import http.client

    server = make_server(token="s3cret")
    request = request_of(agent_spans())
    channel, client = stub(server.grpc.port)
    with channel:
        for metadata in ((("authorization", "Bearer s3cret"), ("authorization", "Bearer wrong")),
                         (("authorization", "Bearer wrong"), ("authorization", "Bearer s3cret"))):
            with pytest.raises(grpc.RpcError) as err:
                client.Export(request, metadata=metadata, timeout=10)
            assert err.value.code() is grpc.StatusCode.UNAUTHENTICATED
    host, port = server.http_address.rsplit(":", 1)
    body = request.SerializeToString()
    for first, second in (("s3cret", "wrong"), ("wrong", "s3cret")):
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        connection.putrequest("POST", "/v1/traces")
        connection.putheader("Content-Type", "application/x-protobuf")
        connection.putheader("Content-Length", str(len(body)))
        connection.putheader("Authorization", f"Bearer {first}")
        connection.putheader("Authorization", f"Bearer {second}")
        connection.endheaders(body)
        assert connection.getresponse().status == 401
        connection.close()


def test_serve_warns_of_more_workers_than_cpus(tmp_path: Path) -> None:
    from tests.support.procs import start_serve

    cpus = os.cpu_count() or 1
    server = start_serve(tmp_path / "store", tmp_path / "serve.log", "--workers", str(cpus + 1))
    assert server.terminate() == 0, server.tail()
    lines = server.log.read_text().splitlines()
    warned = [line for line in lines if "more mapping processes than CPUs" in line]
    assert len(warned) == 1 and f"--workers {cpus + 1} on {cpus} CPU" in warned[0]
