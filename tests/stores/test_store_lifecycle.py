"""The on-disk store's life around a process: the fold handed over at shutdown (stores/folder.py) and
forked children (the log store's fork safety) -- no index lock left held, no hang, no second writer
started by the application's instrumentation, and no mapped value kept by a cache.  Each is bounded
in time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from otel_prov.stores import segments
from otel_prov.stores.indexer import IndexLock
from otel_prov.stores.logstore import IndexerService, LoggedStore
from tests.support.procs import clean_env, folder_pids

QUAD = b'<urn:review:s> <urn:review:p> "%d" <urn:graph:retrieval> .\n'


def test_a_close_that_finds_another_indexer_leaves_no_index_held(tmp_path: Path) -> None:
    """``close(hand_over=True)`` returns at once when another process holds the index lock (it
    folds), without joining the background thread (before the merge close always joined it and
    then dropped the index).  A thread that was already past its ``stop`` check, about to try to
    take the index over, takes it once that other process lets go -- and nothing releases it any
    more: the closed store holds the index lock and RocksDB until the process exits, so no other
    writer ever indexes the store meanwhile and every reader waits READ_WAIT for a fold that never
    comes.  (The thread is held at the start of its take-over here, to make the interleaving
    certain; in a real run it is the few milliseconds of a take-over attempt.)"""
    path = tmp_path / "store"
    LoggedStore(path).close()  # the store exists
    directory = segments.segments_dir(path)
    other = IndexLock(directory)  # another process indexes
    assert other.acquire()
    service = IndexerService(path, interval=0.01, take_over=0.01)
    try:
        assert service.index is None
        entered, go = threading.Event(), threading.Event()
        real_take = service.take

        def take() -> bool:
            if threading.current_thread() is service._thread:
                entered.set()
                go.wait(10)
            return real_take()

        service.take = take  # type: ignore[method-assign]
        assert entered.wait(10), "the background thread did not try to take the index over"
        service.close(hand_over=True)  # another process indexes: returns at once
        other.release()  # ... and that process is done
        go.set()
        service._thread.join(10)
        assert not service._thread.is_alive()
        probe = IndexLock(directory)
        try:
            assert probe.acquire(), "a closed store still holds the index lock"
        finally:
            probe.release()
    finally:
        other.release()
        service._drop()


_READ_BACK_IN_CHILD = """
import os, signal, sys
from pathlib import Path
from otel_prov.stores.logstore import LoggedStore

store = LoggedStore(Path(sys.argv[1]))
assert store.service.index is not None  # this process indexes
store.add(b'<urn:review:s> <urn:review:p> "1" <urn:graph:retrieval> .\\n', 1)
if sys.argv[2] == "mid-round":
    store.sync()
    store.service._mutex.acquire()  # a fold round of the indexer thread is under way at the fork
pid = os.fork()
if pid == 0:
    signal.alarm(10)
    inherited = store.service.indexer
    try:
        quads = len(store.to_dataset())
    except BaseException as exc:
        print("child raised", repr(exc), flush=True)
        os._exit(3)
    folded = inherited.folded_records if inherited is not None else 0
    print("child read", quads, "quads; folded with the parent's index:", folded, flush=True)
    os._exit(0 if quads == 1 and folded == 0 else 1)
if sys.argv[2] == "mid-round":
    store.service._mutex.release()
status = os.waitpid(pid, 0)[1]
print("child status", os.waitstatus_to_exitcode(status), flush=True)
store.close()
"""


@pytest.mark.parametrize("state", ["unsynced", "mid-round"])
def test_reading_back_in_a_forked_child_neither_hangs_nor_uses_the_parents_index(
        tmp_path: Path, state: str) -> None:
    """``LoggedStore.query`` / ``to_dataset`` (``exporter.store.to_dataset()``) do not call
    ``_own()``: in a process forked after the store was opened they sync the parent's segment
    writer (whose sync thread is not in the child: it waits for ever when something was not
    synced at the fork) and fold with the parent's RocksDB handle (what ``_own`` exists to prevent;
    it blocks for ever on the fold mutex when the parent's indexer was in a round at the fork)."""
    run = subprocess.run([sys.executable, "-c", _READ_BACK_IN_CHILD, str(tmp_path / "store"), state],
                         capture_output=True, text=True, timeout=60, env=clean_env())
    assert run.returncode == 0, run.stdout + run.stderr[-2000:]
    assert "child status 0" in run.stdout, run.stdout + run.stderr[-2000:]


_INSTRUMENTED_APP = """
import os
from pathlib import Path
from opentelemetry import trace
from otel_prov import agent_session
TEXT = "lorem ipsum dolor sit amet " * 150
for i in range(300):
    with agent_session(f"question {i}") as session:
        with session.iteration() as step:
            step.thought(TEXT)
            step.action("lookup", {"q": i})
            step.observation(TEXT * 3)
        session.conclude(f"answer {i}")
trace.get_tracer_provider().shutdown()
folders = []
for entry in Path("/proc").iterdir():
    try:
        if entry.name.isdigit() and b"otel_prov.stores.folder" in (entry / "cmdline").read_bytes():
            folders.append(entry.name)
    except OSError:
        pass
print("app pid", os.getpid(), "folder", folders, flush=True)
"""


def test_the_background_folder_does_not_run_the_applications_instrumentation(tmp_path: Path) -> None:
    """An application run under ``opentelemetry-instrument`` (README: the exporter is configured by
    ``OTEL_TRACES_EXPORTER=otlp,prov``) hands its fold to ``python -m otel_prov.stores.folder``
    started with the application's whole environment -- the auto-instrumentation's
    ``sitecustomize`` on ``PYTHONPATH`` and every ``OTEL_*`` variable.  So the folder configures the
    SDK and every instrumentor and builds a second ``prov`` exporter: a writer with its own
    segment and indexer thread on the store it folds (and its exit may hand over again)."""
    store = tmp_path / "store"
    app = tmp_path / "app.py"
    app.write_text(_INSTRUMENTED_APP)
    env = clean_env({"OTEL_TRACES_EXPORTER": "prov", "OTEL_METRICS_EXPORTER": "none",
                     "OTEL_LOGS_EXPORTER": "none", "OTEL_BSP_MAX_QUEUE_SIZE": "100000",
                     "OTEL_BSP_SCHEDULE_DELAY": "600000", "OTEL_PROV_STORE": str(store)})
    instrument = Path(sys.executable).parent / "opentelemetry-instrument"
    run = subprocess.run([str(instrument), sys.executable, str(app)], env=env, capture_output=True,
                         text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    app_pid = run.stdout.split("app pid", 1)[1].split()[0]
    assert "folder []" not in run.stdout, "the exporter did not hand its fold over (not enough left?)"
    directory = segments.segments_dir(store)
    foreign: set[str] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        alive = bool(folder_pids(store))
        foreign |= {n for n in segments.list_segments(directory) if n.split("-")[1] != app_pid}
        if not alive:
            break
        time.sleep(0.01)
    for pid in folder_pids(store):
        os.kill(pid, signal.SIGKILL)
    assert not foreign, f"the folder opened the store as a writer: {sorted(foreign)}"


def test_mapping_keeps_no_copy_of_the_values_it_mapped_once_the_mapper_is_gone() -> None:
    """perf cached ``terms.iri`` (``lru_cache(maxsize=4096)``), which also encodes the
    knowledge-graph values of spans (``value_term`` -> ``checked_iri`` -> ``iri``): each distinct
    value is kept twice (the key and its encoding), for the life of the process.  Values up to
    ``max_attribute_bytes`` (4 MiB): 4096 of them pin ~32 GiB in ``otel-prov serve`` (and in an
    application with the exporter), beyond any memory budget of the receiver."""
    import gc
    import tracemalloc

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_prov import graph_rag_session
    from otel_prov.mapping.mapper import TraceMapper
    from otel_prov.mapping.spans import from_sdk
    from otel_prov.model.profiles import SEED

    sessions, size = 48, 1 << 20
    batches = []
    for k in range(sessions):
        memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        with graph_rag_session(f"question {k}", tracer_provider=provider) as session:
            session.focus([((f"urn:kg:{k}:" + "a" * size, "urn:kg:p", "urn:kg:o"), "why")])
            session.synthesis("answer")
        batches.append([from_sdk(s) for s in memory.get_finished_spans()])
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        mapper = TraceMapper(SEED)
        for k, records in enumerate(batches):
            update = mapper.map(records)
            assert any(f"urn:kg:{k}:" in q[2] for q in update.add)
            del update
        del mapper
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 8 * size, f"{kept / size:.0f} MiB kept after mapping {sessions} 1 MiB values"


_IDLE_CHILD = """
import os, sys, time
from pathlib import Path
from otel_prov.stores import segments
from otel_prov.stores.indexer import IndexLock
from otel_prov.stores.logstore import LoggedStore

path = Path(sys.argv[1])
store = LoggedStore(path)
assert store.service.index is not None  # this process indexes
store.add(b'<urn:review:s> <urn:review:p> "1" <urn:graph:retrieval> .\\n', 1)
read, write = os.pipe()
pid = os.fork()
if pid == 0:  # a child that never uses the store (a multiprocessing helper, a Manager's server)
    os.close(write)
    os.read(read, 1)  # lives until the parent is done looking
    os._exit(0)
os.close(read)
store.close()
probe = IndexLock(segments.segments_dir(path))
free = probe.acquire()
probe.release()
left = segments.list_segments(segments.segments_dir(path))
print("index lock free after close:", free, "segments left:", left, flush=True)
os.write(write, b"x")
os.waitpid(pid, 0)
"""


def test_a_forked_child_that_never_uses_the_store_does_not_keep_its_locks(tmp_path: Path) -> None:
    """A process forked after the store was opened inherits the descriptors of the index lock and
    of the log segment (``flock``s belong to the open file): until it first uses the store
    (``_own``) it holds both.  One that never does (a ``multiprocessing`` helper, a Manager's
    server process, an idle worker) keeps the parent's index lock after the parent closed (or
    handed the fold over, or exited): no other writer can index the store, readers wait READ_WAIT
    for a fold that does not come, and the parent's sealed segment looks live (never deleted)."""
    run = subprocess.run([sys.executable, "-c", _IDLE_CHILD, str(tmp_path / "store")],
                         capture_output=True, text=True, timeout=60, env=clean_env())
    assert run.returncode == 0, run.stderr[-2000:]
    assert "index lock free after close: True segments left: []" in run.stdout, run.stdout


def test_the_background_folder_folds_what_was_left_and_exits_while_other_writers_append(
        tmp_path: Path) -> None:
    """The folder folds what the closing exporter left, then exits: a writer that goes on appending
    (its own indexer folds that) does not keep it folding round after round for the writer's life."""
    from otel_prov.stores import folder

    path = tmp_path / "store"
    first = LoggedStore(path)
    for i in range(2000):
        first.add(QUAD % i, 1)
    first.sync()
    first.service._stop.set()  # this test folds, not the writers' indexers
    first.service._thread.join(10)
    first.service._drop()
    live = LoggedStore(path)
    live.service._stop.set()
    live.service._thread.join(10)
    live.service._drop()
    stop = threading.Event()

    def append() -> None:  # a live writer, appending every 5 ms
        n = 10_000
        while not stop.is_set():
            for _ in range(50):
                live.add(QUAD % n, 1)
                n += 1
            live.sync()
            time.sleep(0.005)

    appender = threading.Thread(target=append)
    appender.start()
    try:
        lock = IndexLock(segments.segments_dir(path))
        assert lock.acquire()
        done = threading.Event()
        folded: list[int] = []
        worker = threading.Thread(
            target=lambda: (folded.append(folder.fold_with_lock(path, lock.detach())), done.set()))
        worker.start()
        assert done.wait(30), "the folder was still folding the live writer's appends after 30 s"
        worker.join(5)
        assert folded[0] >= 2000  # what was left is folded
    finally:
        stop.set()
        appender.join(10)
        live.close()
        first.close()


def test_a_writer_opening_the_store_removes_the_segments_a_dead_writer_never_named(tmp_path: Path) -> None:
    """A ``.tmp`` segment no one holds and older than a minute is a writer that died before naming it:
    gone when the next writer opens the store; a young one (a writer starting now) stays."""
    store = tmp_path / "store"
    LoggedStore(store).close()
    directory = segments.segments_dir(store)
    stale, young = directory / f"dead-1-0{segments.TMP_SUFFIX}", directory / f"new-2-0{segments.TMP_SUFFIX}"
    stale.write_bytes(b"half a segment")
    young.write_bytes(b"being written")
    an_hour_ago = time.time() - 3600
    os.utime(stale, (an_hour_ago, an_hour_ago))
    LoggedStore(store).close()
    assert not stale.exists() and young.exists()
