"""``otel-prov delete`` while others keep writing to the same on-disk store: agents' exporters in
their own processes (one of them indexing it), then ``otel-prov serve`` fed over gRPC.  Nothing
acknowledged by a writer is lost, nothing erased comes back (also from a replay of a log the writers
left unfolded: they are killed with ``kill -9``), and once nobody else indexes the store,
``check --rebuild`` takes the erased words out of its files."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_prov import ProvSpanExporter
from tests.support.cli import cli
from tests.support.erasing import agent, files_holding, token
from tests.support.procs import REPO, Proc, start, start_serve, wait_until

WRITER = """
import os, sys, time
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from otel_prov import ProvSpanExporter, agent_session

store, name, count, acks = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
exporter = ProvSpanExporter(store=store)
with open(acks, "a") as out:
    for n in range(count):
        memory, provider = InMemorySpanExporter(), TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        with agent_session(f"{name} asks {n}", tracer_provider=provider) as session:
            with session.iteration() as step:
                step.thought(f"{name} thinks {n}")
            session.conclude(f"{name} answers {n}")
        spans = list(memory.get_finished_spans())
        if exporter.export(spans) is SpanExportResult.SUCCESS:
            out.write(f"{spans[0].context.trace_id:032x}\\n")
            out.flush()
            os.fsync(out.fileno())
        time.sleep(0.02)
print("done", flush=True)
time.sleep(3600)  # killed with kill -9: what it wrote stays in the log, unfolded
"""


def _acked(path: Path) -> set[str]:
    return set(path.read_text().split()) if path.exists() else set()


def _listed(capsysbinary: Any, store: Path) -> dict[str, str]:
    """Trace id -> question text of every session listed."""
    r = cli(capsysbinary, "list", "--store", str(store), "--format", "json", "--limit", "10000")
    assert r.code == 0, r.err
    return {row["traceId"]: row.get("question", "") for row in json.loads(r.out)}


def _trace(spans: list[Any]) -> str:
    return f"{spans[0].context.trace_id:032x}"


def test_delete_while_exporters_in_other_processes_keep_writing(tmp_path: Path, capsysbinary: Any) -> None:
    store = tmp_path / "store"
    secrets_, kept = [token() for _ in range(5)], [token() for _ in range(12)]
    victims = [agent(f"victim {word}") for word in secrets_]
    others = [agent(f"bystander {word}") for word in kept]
    exporter = ProvSpanExporter(store=store)
    for spans in [*others, *victims]:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    env = {"PYTHONPATH": str(REPO)}
    writers: list[Proc] = []
    acks = [tmp_path / f"acks-{w}" for w in range(2)]
    try:
        for w in range(2):
            writers.append(start(f"writer {w}", [sys.executable, "-c", WRITER, str(store), f"writer{w}",
                                                 "60", str(acks[w])], tmp_path / f"writer-{w}.log", env))
        wait_until(lambda: all(len(_acked(a)) >= 10 for a in acks), 60, "both writers to export 10 sessions",
                   proc=writers[0])
        r = cli(capsysbinary, "delete", *[_trace(v) for v in victims], "--store", str(store),
                "--reason", "erasure request")
        assert r.code in (0, 1), r.err  # 1: a writer indexes the store, the files are left for later
        assert r.err.count("deleted ") == len(victims), r.err
        wait_until(lambda: all("done" in p.tail() for p in writers), 120, "the writers to finish",
                   proc=writers[1])
    finally:
        for p in writers:
            p.kill9()
    acked = _acked(acks[0]) | _acked(acks[1])
    assert len(acked) == 120
    listed = _listed(capsysbinary, store)  # the writers' last records unfolded: replayed by the reader
    assert acked <= set(listed)
    assert {_trace(o) for o in others} <= set(listed)
    assert not {_trace(v) for v in victims} & set(listed)
    assert len(listed) == 120 + len(others)
    assert cli(capsysbinary, "check", "--rebuild", str(store)).code == 0
    assert not any(files_holding(store, word) for word in secrets_)
    assert all(files_holding(store, word) for word in kept)  # the search sees into the files
    assert _listed(capsysbinary, store) == listed


def test_delete_while_serve_ingests(tmp_path: Path, capsysbinary: Any) -> None:
    store = tmp_path / "store"
    secrets_ = [token() for _ in range(4)]
    victims = [agent(f"victim {word}") for word in secrets_]
    serve = start_serve(store, tmp_path / "serve.log")
    acked: list[str] = []
    fed: list[str] = []
    stop = threading.Event()

    def feed() -> None:
        client = OTLPSpanExporter(endpoint=f"127.0.0.1:{serve.grpc_port}", insecure=True, timeout=10)
        n = 0
        while not stop.is_set() and n < 300:
            word = token()
            spans = agent(f"fed {word}")
            if client.export(spans) is SpanExportResult.SUCCESS:
                acked.append(_trace(spans))
                fed.append(word)
            n += 1
        client.shutdown()

    try:
        client = OTLPSpanExporter(endpoint=f"127.0.0.1:{serve.grpc_port}", insecure=True, timeout=10)
        for spans in victims:
            assert client.export(spans) is SpanExportResult.SUCCESS
        client.shutdown()
        feeder = threading.Thread(target=feed)
        feeder.start()
        wait_until(lambda: len(acked) >= 20, 60, "20 sessions fed to serve", proc=serve)
        r = cli(capsysbinary, "delete", *[_trace(v) for v in victims], "--store", str(store))
        assert r.code == 1 and "another process indexes this store" in r.err, r.err
        assert r.err.count("deleted ") == len(victims), r.err
        time.sleep(1.0)
        stop.set()
        feeder.join(60)
        during = _listed(capsysbinary, store)
        assert not {_trace(v) for v in victims} & set(during)
    finally:
        stop.set()
        serve.kill9()  # what serve had not folded stays in the log
    listed = _listed(capsysbinary, store)
    assert set(acked) <= set(listed) and len(acked) >= 20
    assert not {_trace(v) for v in victims} & set(listed)
    assert any(files_holding(store, word) for word in secrets_)  # serve indexed: still in the files
    assert cli(capsysbinary, "check", "--rebuild", str(store)).code == 0
    assert not any(files_holding(store, word) for word in secrets_)
    assert all(files_holding(store, word) for word in fed[:10])  # the search sees into the files
    assert _listed(capsysbinary, store) == listed
