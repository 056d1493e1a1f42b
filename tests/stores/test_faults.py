"""Faults of the store under real conditions (issue 9, items 5, 6 and 7's reading): a full disk, a
read-only directory, a frozen file system, descriptor exhaustion, a reader next to writers.  Real
file systems (a tmpfs, a read-only bind mount, a frozen ext4 image: :mod:`tests.support.mounts`), real
``otel-prov serve`` servers, real SDK spans, real child processes; every run is bounded.

What each shows:

- serve refuses while its store fails, recovers by itself once the cause is gone (no restart, no
  request needed), and loses nothing it acknowledged -- a framework trace's retried request too;
- the exporter never reports SUCCESS for what it did not store, and goes on storing once the disk
  has room; ``force_flush(timeout_millis)`` and ``shutdown(timeout_millis)`` return in time on a
  stuck disk;
- a writer's operations are folded in its order across its segments; folding many segments and
  appending at the descriptor limit recover;
- readers never write, never lock, never stop a writer from indexing, and read a store on a
  read-only file system whole.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import pyoxigraph
import pytest
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import ProvSpanExporter, load_dataset, spans_to_dataset
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import from_otlp, from_sdk
from otel_prov.model.profiles import SEED
from otel_prov.model.quads import nquads
from otel_prov.read.reader import TraceReader
from otel_prov.serve.receiver import Receiver
from otel_prov.serve.server import Server
from otel_prov.settings import ServeSettings
from otel_prov.stores import (
    StoreSpec,
    backlog_probe,
    logstore,
    open_for_reading,
    open_for_writing,
    parse_store,
    segments,
)
from otel_prov.stores.indexer import Indexer, IndexLock, fold_gate
from otel_prov.stores.logstore import _folded_snapshot, open_reader
from otel_prov.stores.oxigraph import PIN_PREFIX, SNAPSHOT_WAIT, OxigraphStore
from tests.support import mounts
from tests.support.genai import genai_traces
from tests.support.graphs import assert_isomorphic
from tests.support.procs import REPO, Proc, clean_env, start, start_serve, wait_until
from tests.support.serving import agent_spans, request_of, stub
from tests.support.stores import read_back

RECOVERY = 15.0
"""Seconds within which a store that failed must be usable again once the cause is gone (it
probes about once a second)."""


# -- helpers --------------------------------------------------------------------------------------


def _nq(data: bytes) -> set[str]:
    return {str(q) for q in pyoxigraph.parse(input=data, format=pyoxigraph.RdfFormat.N_QUADS)}


def _want(spans: list[ReadableSpan]) -> set[str]:
    """The graph one exporter gives for ``spans`` (one mapping of all of them)."""
    return _nq(nquads(TraceMapper(SEED).map([from_sdk(s) for s in spans]).add))


def _want_otlp(requests_: list[ExportTraceServiceRequest]) -> set[str]:
    """The graph ``otel-prov serve`` gives for ``requests_`` (one mapping of all their spans)."""
    records = [from_otlp(s) for r in requests_ for rs in r.resource_spans for ss in rs.scope_spans
               for s in ss.spans]
    return _nq(nquads(TraceMapper(SEED).map(records).add))


def _questions(spans: list[ReadableSpan]) -> set[str]:
    """The sessions ``otel-prov list`` shows for ``spans``."""
    question = "<https://trustgraph.ai/ns/Question>"
    return {q.split(" ", 1)[0][1:-1] for q in _want(spans) if question in q}


def _stored(store: Path) -> set[str]:
    with read_back(store) as index:
        return {str(q) for q in index}


def _genai(traces: int) -> tuple[list[ReadableSpan], list[ReadableSpan], list[ReadableSpan]]:
    """Framework agent traces: (their ``invoke_agent`` spans, their ``execute_tool`` spans but the
    last of each trace, the last ones).  Tool spans alone map to nothing yet (they wait for their
    agent); the agent span then writes the whole trace, and each later span rewrites it: the
    updates depend on each other."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    spans = genai_traces((provider, memory), traces)
    agents = [s for s in spans if s.name.startswith("invoke_agent")]
    tools = [s for s in spans if not s.name.startswith("invoke_agent")]
    last = {s.context.trace_id: s for s in tools}  # type: ignore[union-attr]
    late = list(last.values())
    return agents, [s for s in tools if s not in late], late


def _serve(store: Path, workers: int = 1) -> Server:
    """serve in this process; with ``workers`` > 1, its mapping workers are processes."""
    return Server(ServeSettings(store=StoreSpec("oxigraph", store), profile="seed", grpc_port=0,
                                http_port=0, drain_timeout=10.0, workers=workers))


def _health(server: Server) -> int:
    return requests.get(f"http://{server.http_address}/health", timeout=5).status_code


def _export(client: Any, request: ExportTraceServiceRequest) -> grpc.StatusCode:
    try:
        client.Export(request, timeout=20)
    except grpc.RpcError as err:
        return err.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


def _child(name: str, log: Path, *args: str) -> Proc:
    return start(name, [sys.executable, "-m", "tests.support.children", *args], log)


def _lines(proc: Proc) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.tail(10000).splitlines() if line.startswith("{")]


# -- item 5: serve recovers by itself -------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_on_a_full_disk_refuses_then_recovers_by_itself_and_loses_nothing_acknowledged(
        tmp_path: Path, workers: int) -> None:
    agents, early, late = _genai(4)
    tools = early + late
    sessions = agent_spans(6)
    with mounts.small_disk(tmp_path) as disk:
        store = disk.directory / "store"
        server = _serve(store, workers)
        try:
            channel, client = stub(server.grpc.port)  # type: ignore[union-attr]
            with channel:
                assert _export(client, request_of(tools)) is grpc.StatusCode.OK  # waits for its agents
                assert _export(client, request_of(sessions[:5])) is grpc.StatusCode.OK
                disk.fill()
                during = [request_of(agents), request_of(sessions[5:])]
                assert [_export(client, r) for r in during] == [grpc.StatusCode.UNAVAILABLE] * 2
                assert _health(server) == 503
                disk.free()
                # No request is needed to notice: the store probes, and health turns green.
                wait_until(lambda: _health(server) == 200, RECOVERY, "serve to recover by itself")
                # The Collector's retries of what was refused.
                assert [_export(client, r) for r in during] == [grpc.StatusCode.OK] * 2
        finally:
            server.stop(10)
        # Everything acknowledged, including the framework traces whose agent spans came in the
        # request that failed once: its retry must write them.
        assert _stored(store) == _want_otlp([request_of(tools), request_of(agents), request_of(sessions)])


def test_serve_recovers_by_itself_after_its_store_directory_was_read_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the directory is read-only the log cannot start a new segment (rotation) and the index
    cannot be written (folding fails); once it is writable again both recover without a restart."""
    monkeypatch.setattr(segments, "SEGMENT_BYTES", 64 * 1024)
    store = tmp_path / "store"
    batches = [agent_spans(4) for _ in range(24)]
    server = _serve(store)  # mapping here: its log has the small segments set above
    acked: list[int] = []
    try:
        channel, client = stub(server.grpc.port)  # type: ignore[union-attr]
        with channel:
            assert _export(client, request_of(batches[0])) is grpc.StatusCode.OK
            acked.append(0)
            refused = []
            with mounts.read_only(store):
                for i in range(1, len(batches)):
                    code = _export(client, request_of(batches[i]))
                    (acked if code is grpc.StatusCode.OK else refused).append(i)
                time.sleep(1.0)  # the indexer meets the read-only index
            assert refused, "every request was acknowledged: the log never needed a new segment"
            wait_until(lambda: _health(server) == 200, RECOVERY, "serve to recover by itself")
            for i in refused:  # the client's retries
                assert _export(client, request_of(batches[i])) is grpc.StatusCode.OK
                acked.append(i)
            directory = segments.segments_dir(store)
            wait_until(lambda: not segments.pending_bytes(directory), RECOVERY,
                       "the indexer to fold the log again")
    finally:
        server.stop(10)
    assert sorted(acked) == list(range(len(batches)))
    assert _stored(store) == _want_otlp([request_of(b) for b in batches])


# -- item 6: the exporter -------------------------------------------------------------------------


def test_export_on_a_full_disk_never_reports_success_for_what_it_did_not_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(segments, "SEGMENT_BYTES", 1)  # a new segment for every append after a first
    agents, early, late = _genai(4)  # each trace's last tool span comes after the disk has room
    before, lost, after = agent_spans(3), agent_spans(2), agent_spans(3)
    with mounts.small_disk(tmp_path) as disk:
        store = disk.directory / "store"
        exporter = ProvSpanExporter(store=store)
        results = [exporter.export(early), exporter.export(before)]
        assert results == [SpanExportResult.SUCCESS] * 2
        disk.fill()
        with caplog.at_level(logging.WARNING, logger="otel_prov"):
            during = [exporter.export(agents), exporter.export(lost), exporter.export(lost)]
        assert during == [SpanExportResult.FAILURE] * 3
        disk.free()
        assert [exporter.export(late), exporter.export(after)] == [SpanExportResult.SUCCESS] * 2
        stats = exporter.stats()
        exporter.shutdown()
        got = _stored(store)
    assert stats["store_failures"] >= 3
    assert sum("batch not stored" in r.getMessage() for r in caplog.records) == 1  # logged once
    # What export() said was stored is: the sessions before and after, and the framework traces
    # whole (their agent spans failed once, and are written with the next span of their trace).
    assert got == _want(early + agents + late + before + after)
    assert not _want(lost) & got  # FAILURE: nothing of them, not half


def test_force_flush_and_shutdown_return_in_time_on_a_stuck_disk(
        tmp_path: Path, killed_procs: list[Proc]) -> None:
    """A frozen file system: every write blocks in the kernel.  The application's exporting thread
    is stuck there, but ``force_flush(timeout_millis)`` and ``shutdown(timeout_millis)`` (the
    SDK's ``BatchSpanProcessor`` passes what is left of its own timeout) return in time."""
    mounts.require_mount("freezing a file system")
    import inspect

    assert "timeout_millis" in inspect.getfullargspec(ProvSpanExporter.shutdown).args
    with mounts.loop_ext4() as where:
        go = tmp_path / "go"
        child = _child("stuck exporter", tmp_path / "child.log", "stuck-export", str(where / "store"),
                       str(go))
        killed_procs.append(child)
        try:
            wait_until(lambda: "ready" in child.tail(), 60, "the exporter", proc=child)
            mounts.freeze(where)
            go.touch()
            deadline = time.monotonic() + 30
            while "done" not in child.tail() and child.popen.poll() is None:
                assert time.monotonic() < deadline, f"force_flush/shutdown hung:\n{child.tail()}"
                time.sleep(0.1)
        finally:
            mounts.thaw(where)
        child.popen.wait(30)
        lines = _lines(child)
    flush = next(line for line in lines if "force_flush" in line)
    shutdown = next(line for line in lines if "shutdown" in line)
    assert flush["force_flush"] is False and flush["seconds"] < 3.0  # not confirmed, and said so
    assert shutdown["seconds"] < 4.0


# -- the log and the index ------------------------------------------------------------------------


def _fold(store: Path) -> int:
    """Fold the log as the indexing process does (the index lock, the index read-write)."""
    lock = IndexLock(segments.segments_dir(store))
    assert lock.acquire()
    index = OxigraphStore(store)
    try:
        return Indexer(store, index).fold_all()
    finally:
        index.close()
        lock.release()


def _dead_writers(store: Path, count: int) -> list[bytes]:
    """``count`` sealed segments of one quad each (a writer that rotated at every append, as many dead
    writers leave them), nobody folding; returns their N-Quads lines."""
    lines = [f"<urn:x:s{i}> <urn:x:p> <urn:x:o> <urn:graph:retrieval> .\n".encode() for i in range(count)]
    log = segments.SegmentWriter(segments.segments_dir(store), segment_bytes=1)
    for line in lines:
        log.append(segments.ADD, line)
    log.close()
    return lines


def test_a_writers_operations_fold_in_its_order_across_its_segments(tmp_path: Path) -> None:
    """Add, remove, add the same quad, each in its own segment (the writer rotated): folded in one
    round, the quad is there, as the last operation says."""
    store = tmp_path / "store"
    line = b"<urn:x:s> <urn:x:p> <urn:x:o> <urn:graph:retrieval> .\n"
    log = segments.SegmentWriter(segments.segments_dir(store), segment_bytes=1)
    for kind in (segments.ADD, segments.REMOVE, segments.ADD):
        log.append(kind, line)
    log.close()
    assert len(segments.list_segments(segments.segments_dir(store))) == 3
    _fold(store)
    assert _stored(store) == _nq(line)


def test_folding_many_segments_under_a_low_descriptor_limit(tmp_path: Path) -> None:
    """Hundreds of sealed segments (writers that died or rotated while nobody indexed) fold with
    a descriptor limit far below their number."""
    store = tmp_path / "store"
    lines = _dead_writers(store, 600)
    out = subprocess.run([sys.executable, "-m", "tests.support.children", "fold-limited", str(store), "256"],
                         capture_output=True, text=True, timeout=120, cwd=REPO, env=clean_env())
    assert out.returncode == 0, out.stderr[-3000:]
    assert _stored(store) == _nq(b"".join(lines))
    assert not segments.list_segments(segments.segments_dir(store))


def test_a_fold_round_that_runs_out_of_descriptors_closes_what_it_opened(tmp_path: Path) -> None:
    """A round that fails while opening segments (EMFILE) closes the ones it had opened: otherwise
    every failed round leaks, and the process soon has no descriptor for anything."""
    import errno
    import os
    import resource

    store = tmp_path / "store"
    _dead_writers(store, 60)
    lock = IndexLock(segments.segments_dir(store))
    assert lock.acquire()
    index = OxigraphStore(store)
    indexer = Indexer(store, index)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        before = len(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (before + 20, hard))
        with pytest.raises(OSError) as err:
            indexer.fold_round()
        assert err.value.errno == errno.EMFILE
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        index.close()
        lock.release()
    _fold(store)  # with descriptors again, the same round folds it all
    assert len(_stored(store)) == 60


def test_a_reader_reads_many_unfolded_segments_under_a_low_descriptor_limit(tmp_path: Path) -> None:
    """600 segments nobody folded (writers killed while nobody indexed), read under a limit of 64
    descriptors more than are open: a reader holds one segment open at a time."""
    import os
    import resource

    store = tmp_path / "store"
    lines = _dead_writers(store, 600)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 64, hard))
    try:
        got = _stored(store)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert got == _nq(b"".join(lines))


def test_the_log_syncs_again_after_running_out_of_descriptors(tmp_path: Path) -> None:
    """The sync thread needs a descriptor for each group commit (a duplicate of the segment's):
    at the limit that fails, and syncing works again once descriptors are free."""
    import os
    import resource

    log = segments.SegmentWriter(segments.segments_dir(tmp_path / "store"))
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        held: list[int] = []
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 8, hard))
            with contextlib.suppress(OSError):
                while True:
                    held.append(os.open(os.devnull, os.O_RDONLY))
            at = log.append(segments.ADD, b"<urn:x:a> <urn:x:p> <urn:x:o> <urn:graph:retrieval> .\n")
            with contextlib.suppress(OSError):
                assert not log.sync(at, timeout=1.0)
        finally:
            for fd in held:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert log.sync(at, timeout=10.0), "the log never synced again"
    finally:
        log.close()


def test_an_exporter_at_its_descriptor_limit_fails_then_recovers(
        tmp_path: Path, killed_procs: list[Proc]) -> None:
    store = tmp_path / "store"
    child = _child("exporter", tmp_path / "child.log", "fd-limited-export", str(store), "256")
    killed_procs.append(child)
    wait_until(lambda: "done" in child.tail(), 120, "the exporter", proc=child)
    assert child.popen.wait(60) == 0, child.tail()
    lines = _lines(child)
    phases = {p: [line["success"] for line in lines if line["phase"] == p]
              for p in ("before", "exhausted", "after")}
    assert phases["before"] == [True] * 3 and len(phases["exhausted"]) == 3
    assert phases["after"] == [True] * 3, child.tail()
    stored = {line["iri"] for line in lines if line["success"]}
    assert stored <= _listed(store)  # SUCCESS only for what was stored


# -- item 7: readers never lock, never write, never block ------------------------------------------


def _unfolded_store(store: Path, sessions: list[ReadableSpan]) -> None:
    """A store whose log holds ``sessions`` not folded into the index (nobody indexed them: this
    test held the index lock while they were exported, as when their writer was killed)."""
    directory = segments.segments_dir(store)
    directory.mkdir(parents=True, exist_ok=True)
    lock = IndexLock(directory)
    assert lock.acquire()
    try:
        exporter = ProvSpanExporter(store=store)
        assert exporter.export(sessions) is SpanExportResult.SUCCESS
        exporter.shutdown()
    finally:
        lock.release()
    assert segments.pending_bytes(directory)


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "otel_prov.cli", *args, "--store", str(store)],
                          capture_output=True, text=True, timeout=60, cwd=REPO, env=clean_env())


def _listed(store: Path) -> set[str]:
    out = _cli(store, "list", "--format", "json", "--limit", "1000")
    assert out.returncode == 0, out.stderr
    return {row["id"] for row in json.loads(out.stdout)}


def test_readers_never_write_or_lock_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first, second = agent_spans(3), agent_spans(3)
    exporter = ProvSpanExporter(store=store)  # an index with the first sessions ...
    exporter.export(first)
    exporter.shutdown()
    _fold(store)
    _unfolded_store(store, second)  # ... and a log with the second, not folded
    before = mounts.tree_state(store)
    opened = open_for_reading(parse_store(str(store)))  # a reader holding the store (a long read)
    try:
        lock = IndexLock(segments.segments_dir(store))
        assert lock.acquire(), "the reader holds the index lock"
        lock.release()
        assert _nq(opened.dump("nquads")) == _want(first + second)
    finally:
        opened.close()
    iri = next(iter(_listed(store)))
    for args in (["list"], ["show", iri], ["export", "--format", "nquads"],
                 ["query", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"]):
        assert _cli(store, *args).returncode == 0
    assert_isomorphic(spans_to_dataset(first + second), load_dataset(str(store)))
    assert mounts.tree_state(store) == before, "a reader changed the store"


def _fill_index(store: Path, rounds: int, first: int = 0) -> None:
    """``rounds`` small writes to the index, each flushed to a table file of its own (as the
    indexer's rounds make them), in a graph of their own."""
    index = pyoxigraph.Store(str(store))
    for n in range(first, first + rounds):
        index.load(input="".join(f'<urn:filler:{n}:{i}> <urn:p> "{i}" <urn:graph:filler> .\n'
                                 for i in range(500)).encode(), format=pyoxigraph.RdfFormat.N_QUADS)
        index.flush()
    if first:
        index.optimize()  # compaction: the table files of before are deleted
    del index


def test_a_reader_whose_snapshot_is_compacted_under_it_reads_on(tmp_path: Path) -> None:
    """Finding 5: a reader (``otel-prov list``, the web view) holds a snapshot of the index and
    opens its table files as it needs them; the indexing process compacted them away meanwhile, and
    the read failed with a traceback (``FileNotFoundError`` on an ``.sst``), a panic, or (a COUNT)
    ran out of memory.  Now a snapshot's files are pinned (hard links outside the store) when it is
    opened: it reads the index as it was then, whatever is compacted, and the store is not written."""
    store = tmp_path / "store"
    spans = agent_spans(3)
    exporter = ProvSpanExporter(store=store)
    exporter.export(spans)
    exporter.shutdown()
    _fill_index(store, 40)
    opened = open_for_reading(parse_store(str(store)))
    try:
        assert isinstance(opened, OxigraphStore) and opened.snapshot  # nothing unfolded: the snapshot
        _fill_index(store, 10, first=40)  # the indexing process writes and compacts meanwhile
        rows = TraceReader(opened).sessions()
        assert {row.id for row in rows} == _questions(spans)
        count = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <urn:graph:filler> { ?s ?p ?o } }"
        assert int(opened.select(count)[0]["n"].value) == 40 * 500  # the index as it was opened
        assert _nq(opened.dump("nquads")) >= _want(spans)
        assert int(opened.copy().select(count)[0]["n"].value) == 40 * 500
    finally:
        opened.close()
    assert not any(Path(tempfile.gettempdir()).glob(f"{PIN_PREFIX}{os.getpid()}-*")), "a pin was left"


def test_serve_pushes_back_while_its_index_is_behind_and_takes_requests_once_it_caught_up(
        tmp_path: Path) -> None:
    """Finding 6: under sustained ingest the log not folded into the index grew without bound
    (+16 MiB/s); readers then replayed it all, or showed part of it.  Past a bound, requests are now
    refused (UNAVAILABLE, retry in a second) until the fold has caught up.  Here the index is held
    by another process (nothing is folded) and the bound is one byte."""
    store = tmp_path / "store"
    exporter = ProvSpanExporter(store=store)
    exporter.export(agent_spans(1))
    exporter.shutdown()
    held = IndexLock(segments.segments_dir(store))
    assert held.acquire()
    spec = parse_store(str(store))
    settings = ServeSettings(store=spec, profile="seed", grpc_port=0, http_port=None)
    receiver = Receiver(open_for_writing(spec), "seed", backlog=backlog_probe(spec), max_backlog_bytes=1)
    server = Server(settings, receiver)
    try:
        channel, client = stub(server.grpc.port)
        with channel:
            client.Export(request_of(agent_spans(1)), timeout=20)  # nothing was behind: taken
            time.sleep(0.3)  # the probe reads the directory at most every 0.25 s
            with pytest.raises(grpc.RpcError) as refused:
                client.Export(request_of(agent_spans(1)), timeout=20)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "index is behind" in (refused.value.details() or "")
            assert receiver.health()["log_not_folded"] > 0
            held.release()  # serve's writer takes the index over and folds what is behind

            def taken() -> bool:
                try:
                    client.Export(request_of(agent_spans(1)), timeout=20)
                    return True
                except grpc.RpcError as exc:
                    assert exc.code() == grpc.StatusCode.UNAVAILABLE, exc
                    return False

            wait_until(taken, RECOVERY, "the index to catch up", interval=0.3)
    finally:
        held.release()
        server.stop(10)


@pytest.mark.parametrize("indexed", [True, False], ids=["index-and-log", "log-only"])
def test_a_store_on_a_read_only_file_system_is_read_whole(tmp_path: Path, indexed: bool) -> None:
    mounts.require_mount("a read-only file system")
    first, second = agent_spans(2), agent_spans(3)
    with mounts.tmpfs("64m") as where:
        store = where / "store"
        if indexed:
            exporter = ProvSpanExporter(store=store)
            exporter.export(first)
            exporter.shutdown()
            _fold(store)
        _unfolded_store(store, second)
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True, timeout=60)
        out = _cli(store, "export", "--format", "nquads")
        assert out.returncode == 0, out.stderr
        assert _nq(out.stdout.encode()) == _want((first if indexed else []) + second)
        assert "not shown" not in out.stderr


def test_a_long_read_never_stops_a_writer_from_indexing(tmp_path: Path, killed_procs: list[Proc]) -> None:
    """A reader holds the store open (a notebook, a long query) when serve starts: serve starts,
    indexes, and another reader lists what serve acknowledged meanwhile."""
    store = tmp_path / "store"
    exporter = ProvSpanExporter(store=store)
    exporter.export(agent_spans(1))
    exporter.shutdown()
    opened = open_for_reading(parse_store(str(store)))
    try:
        serve = start_serve(store, tmp_path / "serve.log")
        killed_procs.append(serve)
        spans = agent_spans(3)
        channel, client = stub(serve.grpc_port)
        with channel:
            client.Export(request_of(spans), timeout=20)
        began = time.monotonic()
        listed = _listed(store)
        took = time.monotonic() - began
        assert _questions(spans) <= listed, serve.tail()
        assert took < 5.0, f"the second reader waited {took:.1f} s"
    finally:
        opened.close()
    assert serve.terminate(timeout=30) == 0, serve.tail()


def test_a_reader_next_to_a_busy_writer_reads_the_snapshot_not_a_copy_of_the_index(tmp_path: Path) -> None:
    """Finding 5: next to a writer that never pauses, the log always held something past the
    checkpoint, so every reader replayed it into an in-memory copy of the whole index (3.4 s at
    300,000 quads, and growing with the store).  Now a reader takes the snapshot between two fold
    rounds once what the log held when it began is folded: no copy, and all of that is in it."""
    store = tmp_path / "store"
    writer = open_for_writing(parse_store(str(store)))
    stop = threading.Event()

    def keep_writing() -> None:
        while not stop.is_set():
            batch = TraceMapper(SEED).map([from_sdk(s) for s in agent_spans(2)]).add
            writer.add(nquads(batch), len(batch))
            time.sleep(0.01)

    busy = threading.Thread(target=keep_writing, daemon=True)
    try:
        for _ in range(3):
            spans = agent_spans(2)
            quads = TraceMapper(SEED).map([from_sdk(s) for s in spans]).add
            writer.add(nquads(quads), len(quads))
            assert writer.sync(timeout=20)
            if not busy.is_alive():
                busy.start()
            opened = open_for_reading(parse_store(str(store)))
            try:
                assert isinstance(opened, OxigraphStore) and opened.snapshot, "the index was copied"
                assert _nq(opened.dump("nquads")) >= _want(spans)
            finally:
                opened.close()
    finally:
        stop.set()
        busy.join(30)
        writer.close(timeout=60)


def test_a_reader_never_copies_a_large_index_it_reads_its_snapshot_and_says_what_it_leaves_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A reader replays the log's unfolded part into a copy of the index; a copy of a large index
    takes gigabytes (a bench at 10 M quads was killed by the kernel for 23 GB: the indexing process
    starved of CPU, every reader copied).  Past COPY_MOST_BYTES it reads the snapshot alone, and
    one line says how much of the log it does not show."""
    first, second = agent_spans(2), agent_spans(2)
    store = tmp_path / "store"
    exporter = ProvSpanExporter(store=store)
    exporter.export(first)
    exporter.shutdown()
    _unfolded_store(store, second)
    copied = open_reader(store, wait=0)
    try:  # small: copied, everything shown
        assert not copied.snapshot and _nq(copied.dump("nquads")) == _want(first) | _want(second)
    finally:
        copied.close()
    monkeypatch.setattr(logstore, "COPY_MOST_BYTES", 0)
    with caplog.at_level(logging.WARNING, logger="otel_prov"):
        alone = open_reader(store, wait=0)
    try:
        assert alone.snapshot and _nq(alone.dump("nquads")) == _want(first)
    finally:
        alone.close()
    said = [r.getMessage() for r in caplog.records if "too large to copy" in r.getMessage()]
    assert len(said) == 1 and "bytes of the log" in said[0]


def test_a_reader_never_takes_the_index_in_the_middle_of_a_fold_round(tmp_path: Path) -> None:
    """A round applies its records (``bulk_load`` is not atomic), then moves the checkpoint: a
    snapshot taken in between would hold part of a round that the checkpoint does not count.  The
    round holds the fold gate; a reader that cannot have it shared in time replays the log instead,
    and reads everything all the same."""
    store = tmp_path / "store"
    first, second = agent_spans(2), agent_spans(2)
    exporter = ProvSpanExporter(store=store)
    exporter.export(first)
    exporter.shutdown()
    _unfolded_store(store, second)
    directory = segments.segments_dir(store)
    with fold_gate(directory) as gate:  # an indexing process in the middle of a round
        assert gate
        began = time.monotonic()
        assert _folded_snapshot(store, {}) is None, "a snapshot was taken during a fold round"
        assert time.monotonic() - began >= SNAPSHOT_WAIT
    taken = _folded_snapshot(store, {})  # between rounds: exactly the checkpoint's state
    assert taken is not None
    try:
        assert _nq(taken.dump("nquads")) == _want(first)
    finally:
        taken.close()
    assert _folded_snapshot(store, segments.pending_bytes(directory)) is None  # not folded yet
    held = IndexLock(directory)
    assert held.acquire()  # an indexing process that does not get to it in time: the log replayed
    try:
        opened = open_reader(store, wait=0.2)
        try:
            assert _nq(opened.dump("nquads")) == _want(first + second)
        finally:
            opened.close()
    finally:
        held.release()


# -- the store deleted or replaced under a running writer ----------------------------------------------


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_an_exporter_whose_store_is_deleted_or_replaced_reports_failure_then_recovers(
        tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture) -> None:
    """The store directory deleted (then made again), or moved away and replaced by another: export()
    answered SUCCESS into a file no reader would ever see; now it is FAILURE, said once, until the
    store is back -- and what it acknowledges then is in the store."""
    store = tmp_path / "store"
    before, lost, after = agent_spans(2), agent_spans(2), agent_spans(3)
    exporter = ProvSpanExporter(store=store)
    assert exporter.export(before) is SpanExportResult.SUCCESS
    with caplog.at_level(logging.ERROR, logger="otel_prov"):
        if how == "deleted":
            shutil.rmtree(store)
        else:
            store.rename(tmp_path / "old")
            store.mkdir()
        assert exporter.export(lost) is SpanExportResult.FAILURE
        if how == "deleted":
            time.sleep(2.5)  # several probes: the store is not back, nothing is acknowledged
            assert exporter.export(lost) is SpanExportResult.FAILURE
            store.mkdir()
        deadline = time.monotonic() + RECOVERY
        while exporter.export(after) is not SpanExportResult.SUCCESS:
            assert time.monotonic() < deadline, "the exporter did not recover once the store was back"
            time.sleep(0.2)
    assert exporter.force_flush(10_000)
    exporter.shutdown()
    said = [r for r in caplog.records if r.name == "otel_prov.stores.segments"]
    assert sum("removed or replaced" in r.getMessage() for r in said) == 1
    got = _stored(store)
    assert _want(after) <= got
    assert not _want(lost) & got


def test_serve_whose_store_is_deleted_refuses_says_so_and_recovers_when_it_is_back(tmp_path: Path) -> None:
    """serve kept answering OK and /health "ok" while everything acknowledged went into a deleted
    directory (800 of 800 sessions lost); now requests are UNAVAILABLE and /health 503 until the store
    is back, and nothing acknowledged afterwards is lost."""
    store = tmp_path / "store"
    batches = [agent_spans(3) for _ in range(4)]
    server = _serve(store)
    try:
        channel, client = stub(server.grpc.port)  # type: ignore[union-attr]
        with channel:
            assert _export(client, request_of(batches[0])) is grpc.StatusCode.OK
            shutil.rmtree(store)
            assert _export(client, request_of(batches[1])) is grpc.StatusCode.UNAVAILABLE
            assert _health(server) == 503
            store.mkdir()
            wait_until(lambda: _health(server) == 200, RECOVERY, "serve to recover once its store is back")
            for batch in batches[1:]:  # the client's retry, and what comes next
                assert _export(client, request_of(batch)) is grpc.StatusCode.OK
    finally:
        server.stop(10)
    got = _stored(store)
    assert _want_otlp([request_of(b) for b in batches[1:]]) <= got


def test_serves_close_is_bounded_by_the_drain_timeout_and_the_rest_is_folded_later(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM took 41-116 s when much was left to fold: the close fold ignored --drain-timeout.  Now
    closing takes what is left of the drain timeout (at least MIN_CLOSE for the log's last sync); what
    is not folded stays in the log and is folded by the next writer -- nothing acknowledged is lost."""
    from otel_prov.serve import server as serve_server
    from otel_prov.stores import indexer

    real_round = indexer.Indexer.fold_round

    def slow_round(self: indexer.Indexer, budget: int | None = None) -> int:
        time.sleep(1.0)  # a fold that takes its time (a large backlog on a slow disk)
        return real_round(self, 1)  # one record a round: there is always more left

    monkeypatch.setattr(indexer.Indexer, "fold_round", slow_round)
    store = tmp_path / "store"
    batches = [agent_spans(3) for _ in range(5)]
    server = _serve(store)
    channel, client = stub(server.grpc.port)  # type: ignore[union-attr]
    with channel:
        for batch in batches:
            assert _export(client, request_of(batch)) is grpc.StatusCode.OK
    started = time.monotonic()
    server.stop(drain_timeout=1.0)
    took = time.monotonic() - started
    assert took < 1.0 + serve_server.MIN_CLOSE + 3.0, took
    monkeypatch.setattr(indexer.Indexer, "fold_round", real_round)
    assert segments.pending_bytes(segments.segments_dir(store))  # left for the next start
    assert _stored(store) == _want_otlp([request_of(b) for b in batches])


def test_an_index_that_lost_its_current_file_is_said_never_read_as_empty_and_repaired(
        tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """A missing index CURRENT file hid every folded session and serve started anyway (RocksDB would
    have begun an empty index over the old one).  Now readers and writers refuse with one line
    naming the file and the repair; 'otel-prov check --repair' writes it again; nothing is lost."""
    from otel_prov.cli import main
    from otel_prov.errors import StoreError

    store = tmp_path / "store"
    batches = [agent_spans(2) for _ in range(3)]
    exporter = ProvSpanExporter(store=store)
    for batch in batches:
        assert exporter.export(batch) is SpanExportResult.SUCCESS
    exporter.shutdown()
    want = _stored(store)
    assert want
    (store / "CURRENT").unlink()
    with pytest.raises(StoreError, match="its CURRENT file is missing"):
        _stored(store)
    with pytest.raises(StoreError, match="check --repair"):
        _serve(store)
    capsysbinary.readouterr()
    assert main(["check", str(store)]) == 1
    assert b"CURRENT file is missing" in capsysbinary.readouterr().out
    assert main(["check", "--repair", str(store)]) == 0
    assert b"repaired: the index's CURRENT file written again" in capsysbinary.readouterr().out
    assert _stored(store) == want
