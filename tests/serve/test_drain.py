"""Documented behaviours that had no test of their own (docs/limits.md, docs/collector.md, the
mapper's docstring): serve's answer when the commit is slower than ``--ack-timeout``, its answers
while it drains (HTTP as well as gRPC, ``/health``, gRPC health NOT_SERVING), a second signal, and the
exit status when it cannot drain (the mapper's memory bound: tests/mapping/test_mapper_bounds.py).

Real servers: ``Server`` in process on port 0 with a real store whose writes the test holds
(``GatedStore``), or ``otel-prov serve`` in its own process for what signals do.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_prov import spans_to_dataset
from tests.support.graphs import assert_isomorphic
from tests.support.procs import Proc, start_serve, wait_until
from tests.support.serving import (
    GatedStore,
    Make,
    agent_spans,
    assert_retry_trailers,
    request_of,
    stored,
    stub,
)

HEALTH = "/grpc.health.v1.Health/Check"
SERVING, NOT_SERVING = b"\x08\x01", b"\x08\x02"


def grpc_health(address: str) -> bytes:
    with grpc.insecure_channel(address) as channel:
        check = channel.unary_unary(HEALTH, request_serializer=None, response_deserializer=None)
        answer: bytes = check(b"", timeout=5)
        return answer


def http_export(address: str, request: ExportTraceServiceRequest) -> requests.Response:
    return requests.post(f"http://{address}/v1/traces", data=request.SerializeToString(), timeout=20,
                         headers={"Content-Type": "application/x-protobuf"})


# -- serve: the ack timeout ---------------------------------------------------------------------------


def test_a_commit_slower_than_the_ack_timeout_is_unavailable_then_the_retry_is_stored(
        make_server: Make) -> None:
    """docs/limits.md, "the commit": past ``--ack-timeout`` the client gets UNAVAILABLE with RetryInfo
    1 s (HTTP: 503, ``Retry-After: 1``), not an acknowledgement; its retry, once the store commits
    again, is acknowledged and stored (the same quads: idempotent)."""
    store = GatedStore()
    store.gate.clear()
    server = make_server(store, ack_timeout=1.0)
    spans = agent_spans()
    channel, client = stub(server.grpc.port)
    with channel:
        started = time.monotonic()
        with pytest.raises(grpc.RpcError) as err:
            client.Export(request_of(spans), timeout=30)
        waited = time.monotonic() - started
        assert_retry_trailers(err.value, seconds=1)
        assert 0.9 <= waited < 20, waited  # answered at the ack timeout, not the client's deadline
        resp = http_export(server.http_address, request_of(spans))
        assert resp.status_code == 503 and resp.headers["Retry-After"] == "1"
        assert server.receiver.stats.acknowledged_requests == 0
        store.gate.set()
        client.Export(request_of(spans), timeout=30)  # the client's retry
    assert server.receiver.stats.acknowledged_requests == 1
    refused = server.receiver.stats.refused
    assert refused["request not acknowledged: store too slow (ack timeout)"] == 2
    assert_isomorphic(spans_to_dataset(spans), stored(server))


# -- serve: answers while draining ------------------------------------------------------------------------


def test_while_draining_http_and_health_answer_retry_later(make_server: Make) -> None:
    """docs/limits.md, "SIGTERM": while ``serve`` drains, a new request is refused as retryable on
    both transports (gRPC UNAVAILABLE + RetryInfo 5 s; HTTP 503 + ``Retry-After: 5``), ``/health`` is
    503 ``draining`` and gRPC health NOT_SERVING; the request in flight is still acknowledged."""
    store = GatedStore()
    store.gate.clear()
    server = make_server(store)
    assert grpc_health(server.grpc_address) == SERVING
    spans = agent_spans()
    channel, client = stub(server.grpc.port)
    with channel:
        held = client.Export.future(request_of(spans), timeout=30)
        assert store.entered.wait(10)
        stopping = threading.Thread(target=server.stop, args=(20,))
        stopping.start()
        try:
            wait_until(lambda: server.receiver._draining, 5, "serve to start draining")
            resp = http_export(server.http_address, request_of(agent_spans()))
            assert resp.status_code == 503 and resp.headers["Retry-After"] == "5", resp.text
            with pytest.raises(grpc.RpcError) as err:
                client.Export(request_of(agent_spans()), timeout=10)
            assert_retry_trailers(err.value, seconds=5)
            health = requests.get(f"http://{server.http_address}/health", timeout=5)
            assert health.status_code == 503 and health.json()["status"] == "draining"
            assert grpc_health(server.grpc_address) == NOT_SERVING
        finally:
            store.gate.set()
            stopping.join(30)
        held.result(timeout=10)  # acknowledged: it was in flight when the drain began
    assert server.receiver.stats.spans_acknowledged == len(spans)  # (the store is closed now)


def test_grpc_health_is_not_serving_while_the_store_fails(make_server: Make) -> None:
    """docs/collector.md, "Health": gRPC health answers NOT_SERVING when ``/health`` says ``store
    failing``, and SERVING again once the store recovers."""
    store = GatedStore()
    server = make_server(store)
    assert grpc_health(server.grpc_address) == SERVING
    store.fail = True
    channel, client = stub(server.grpc.port)
    with channel, pytest.raises(grpc.RpcError):
        client.Export(request_of(agent_spans()), timeout=10)
    assert grpc_health(server.grpc_address) == NOT_SERVING
    store.fail = False
    wait_until(lambda: grpc_health(server.grpc_address) == SERVING, 15, "gRPC health to be SERVING again")


# -- otel-prov serve in its own process: signals and the exit status -----------------------------------------


class _InFlight:
    """A request sent from a thread; ``outcome`` is "acked" or the gRPC status code's name."""

    def __init__(self, port: int, request: ExportTraceServiceRequest) -> None:
        self.outcome: str | None = None
        self.thread = threading.Thread(target=self._send, args=(port, request), daemon=True)
        self.thread.start()

    def _send(self, port: int, request: ExportTraceServiceRequest) -> None:
        channel, client = stub(port)
        with channel:
            try:
                client.Export(request, timeout=120)
                self.outcome = "acked"
            except grpc.RpcError as exc:
                self.outcome = exc.code().name


@contextlib.contextmanager
def _workers_stopped(serve: Proc) -> Iterator[None]:
    """``serve --workers 2``'s mapping workers stopped (SIGSTOP) for the block, continued after it:
    a request sent meanwhile stays in flight until the test lets it go, however fast the machine."""
    def workers() -> list[int]:
        found = []
        for child in Path(f"/proc/{serve.popen.pid}/task/{serve.popen.pid}/children").read_text().split():
            try:
                command = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            if b"otel_prov.serve.worker\x00" in command:
                found.append(int(child))
        return found

    wait_until(lambda: len(workers()) == 2, 30, "the two mapping workers", proc=serve)
    pids = workers()
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for proc in started:
        proc.kill9()


def _wait_in_flight(serve: Proc, http: str) -> None:
    def busy() -> bool:
        body = requests.get(f"http://{http}/health", timeout=5).json()
        return bool(body.get("memory_reserved"))
    wait_until(busy, 30, "the large request to be in flight", proc=serve)


def test_a_second_signal_exits_at_once_without_draining(tmp_path: Path, procs: list[Proc]) -> None:
    """docs/collector.md, "Shutdown": the first SIGTERM drains; a second one exits at once, status
    1, saying so; the request in flight is not acknowledged (nothing acknowledged is lost).  The
    request is held in flight by the test: its workers are stopped until serve has exited."""
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log", "--workers", "2")
    procs.append(serve)
    with _workers_stopped(serve):
        sent = _InFlight(serve.grpc_port, request_of(agent_spans()))
        _wait_in_flight(serve, serve.http)
        serve.popen.send_signal(signal.SIGTERM)
        wait_until(lambda: "stopping" in serve.log.read_text(), 10, "serve to start draining", proc=serve)
        assert serve.popen.poll() is None, "it exited before its drain"
        started = time.monotonic()
        serve.popen.send_signal(signal.SIGTERM)
        code = serve.popen.wait(10)
        assert time.monotonic() - started < 5
    assert code == 1, serve.tail()
    assert "second signal, exiting without draining" in serve.log.read_text()
    sent.thread.join(30)
    assert sent.outcome != "acked"


def test_the_exit_status_is_1_when_the_drain_times_out(tmp_path: Path, procs: list[Proc]) -> None:
    """docs/collector.md, "Shutdown": a request still in flight when ``--drain-timeout`` runs out
    makes ``serve`` exit 1 (0 when everything was drained: tests/serve/test_serve.py); the client was not
    told it was stored.  The request is held in flight by the test (its workers stopped) until the
    drain has run out."""
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log", "--drain-timeout", "0.2",
                        "--workers", "2")
    procs.append(serve)
    with _workers_stopped(serve):
        sent = _InFlight(serve.grpc_port, request_of(agent_spans()))
        _wait_in_flight(serve, serve.http)
        serve.popen.send_signal(signal.SIGTERM)
        wait_until(lambda: "requests still in flight after 0.2 s" in serve.log.read_text(), 30,
                   "the drain to run out", proc=serve)
    assert serve.popen.wait(60) == 1, serve.tail()
    sent.thread.join(30)
    assert sent.outcome != "acked"
