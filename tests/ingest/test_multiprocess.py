"""Many processes, one store: real exporting processes, a real ``otel-prov serve`` and real readers
(the CLI as subprocesses) on one on-disk store at the same time; ``kill -9`` during an append and
during folding.  Every run is bounded in count and time."""

from __future__ import annotations

import json
import logging
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyoxigraph
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import ProvSpanExporter
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import from_otlp, from_sdk
from otel_prov.model.profiles import SEED
from otel_prov.model.quads import nquads
from otel_prov.stores import segments
from otel_prov.stores.indexer import IndexLock
from tests.support.genai import genai_traces
from tests.support.procs import REPO, Proc, clean_env, folder_pids, start, start_serve, wait_until
from tests.support.serving import agent_spans, request_of, stub
from tests.support.stores import fold, read_back

PROCESSES = 4
SESSIONS = 24
LISTED_WITHIN = 1.0


def _child(name: str, log: Path, *args: str) -> Proc:
    return start(name, [sys.executable, "-m", "tests.support.children", *args], log)


def _quads(data: bytes) -> set[str]:
    return {str(q) for q in pyoxigraph.parse(input=data, format=pyoxigraph.RdfFormat.N_QUADS)}


def _segments(store: Path) -> list[str]:
    return segments.list_segments(segments.segments_dir(store))


class _CliReaders:
    """Threads running ``otel-prov list`` / ``show`` / ``query`` as subprocesses in a loop."""

    COMMANDS = (["list", "--format", "json"], ["query", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"],
                ["show"])

    def __init__(self, store: Path, threads: int) -> None:
        self.store = store
        self.runs: list[tuple[list[str], int, float, str]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._loop, args=(k,)) for k in range(threads)]
        for t in self._threads:
            t.start()

    def _loop(self, k: int) -> None:
        shown = ""
        i = k
        while not self._stop.is_set():
            command = list(self.COMMANDS[i % len(self.COMMANDS)])
            i += 1
            if command == ["show"]:
                if not shown:
                    continue
                command = ["show", shown]
            began = time.monotonic()
            out = subprocess.run([sys.executable, "-m", "otel_prov.cli", *command, "--store",
                                  str(self.store)], capture_output=True, text=True, timeout=60, cwd=REPO,
                                 env=clean_env())
            self.runs.append((command, out.returncode, time.monotonic() - began, out.stderr))
            if command[0] == "list" and out.returncode == 0:
                rows = json.loads(out.stdout)
                if rows:
                    shown = rows[0]["id"]

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(90)


def test_four_exporting_processes_serve_and_readers_share_one_store(tmp_path: Path,
                                                                     killed_procs: list[Proc]) -> None:
    store = tmp_path / "store"
    out = tmp_path / "out"
    out.mkdir()
    serve = start_serve(store, tmp_path / "serve.log")
    killed_procs.append(serve)
    stop_file = tmp_path / "stop"
    reader = _child("read loop", tmp_path / "reader.log", "read-loop", str(store), str(out / "reads.jsonl"),
                    str(stop_file))
    killed_procs.append(reader)
    cli = _CliReaders(store, threads=2)
    exporters = [_child(f"exporter {k}", tmp_path / f"exporter{k}.log", "export", f"oxigraph:{store}",
                        str(out), str(k), str(SESSIONS)) for k in range(PROCESSES)]
    killed_procs.extend(exporters)
    # serve gets its own spans from a gRPC client at the same time.
    requests_ = [request_of(agent_spans(3)) for _ in range(12)]
    channel, client = stub(serve.grpc_port)
    with channel:
        for request in requests_:
            client.Export(request, timeout=30)  # acknowledged: synced to serve's log segment
    try:
        for proc in exporters:
            assert proc.popen.wait(180) == 0, proc.tail()
        time.sleep(LISTED_WITHIN + 0.5)  # the reader loop runs past the last flush
    finally:
        stop_file.touch()
        cli.stop()
    assert reader.popen.wait(60) == 0, reader.tail()
    assert serve.terminate(timeout=60) == 0, serve.tail()

    # No reader failed or was blocked.
    assert cli.runs, "the CLI readers never ran"
    failed = [(cmd, code, err) for cmd, code, _, err in cli.runs if code != 0]
    assert not failed, failed[:3]
    assert {cmd[0] for cmd, *_ in cli.runs} >= {"list", "query"}

    # Every span is accounted for: the store holds exactly the same spans mapped in memory.
    want = set().union(*(_quads((out / f"{k}.nq").read_bytes()) for k in range(PROCESSES)))
    records = [from_otlp(s) for r in requests_ for rs in r.resource_spans for ss in rs.scope_spans
               for s in ss.spans]
    want |= _quads(nquads(TraceMapper(SEED).map(records).add))
    with read_back(store) as index:
        got = {str(q) for q in index}
    assert got == want, (len(got - want), len(want - got))
    assert not _segments(store), "every segment was folded and deleted"

    # A session flushed by one process is listed by a reader that starts within a second.
    flushed = {}
    for k in range(PROCESSES):
        for line in (out / f"{k}.flushed").read_text().splitlines():
            row = json.loads(line)
            flushed[row["iri"]] = row["flushed"]
    assert len(flushed) == PROCESSES * SESSIONS
    reads = [json.loads(line) for line in (out / "reads.jsonl").read_text().splitlines()]
    assert len(reads) > 10
    late = []
    for iri, when in flushed.items():
        for read in reads:
            if read["start"] >= when + LISTED_WITHIN and iri not in read["iris"]:
                late.append((iri, read["start"] - when))
    assert not late, f"{len(late)} reads started over {LISTED_WITHIN} s after a flush missed it: {late[:3]}"
    lags = []
    for iri, when in flushed.items():
        seen = [r["end"] for r in reads if r["start"] >= when and iri in r["iris"]]
        if seen:
            lags.append(min(seen) - when)
    print(f"listed after flush: median {sorted(lags)[len(lags) // 2]:.3f} s, max {max(lags):.3f} s")


def _genai_spans(traces: int) -> list:  # type: ignore[type-arg]
    """Standard GenAI agent traces, whose graph is rewritten (quads removed) as later spans come."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return genai_traces((provider, memory), traces)


def _log_without_index(store: Path, spans: list, batch: int = 2) -> tuple[set[str], int]:  # type: ignore[type-arg]
    """Export ``spans`` in a shuffled order, a few at a time (a trace's graph is rewritten as its
    spans come: removals) while this test holds the index lock, so everything stays in the log;
    returns the graph one export of all would give, and how many removal records the log holds."""
    lock = IndexLock(segments.segments_dir(store))
    segments.segments_dir(store).mkdir(parents=True)
    assert lock.acquire()
    try:
        exporter = ProvSpanExporter(store=store)
        order = spans[:]
        random.Random(5).shuffle(order)
        for i in range(0, len(order), batch):
            exporter.export(order[i:i + batch])
        exporter.shutdown()
    finally:
        lock.release()
    removals = 0
    for name in _segments(store):
        records, _, _ = segments.read_records(segments.segments_dir(store) / name, 0, 1 << 40)
        removals += sum(1 for r in records if r.kind == segments.REMOVE)
    want = _quads(nquads(TraceMapper(SEED).map([from_sdk(s) for s in spans]).add))
    return want, removals


def test_kill9_during_folding_loses_nothing_and_applies_removals_in_order(tmp_path: Path,
                                                                         killed_procs: list[Proc]) -> None:
    store = tmp_path / "store"
    want, removals = _log_without_index(store, _genai_spans(60))
    assert removals > 0, "the log has no removals: the test would prove nothing about their order"
    size = sum((segments.segments_dir(store) / n).stat().st_size for n in _segments(store))
    rng = random.Random(7)
    interrupted = 0
    for attempt in range(6):
        before = segments.load_checkpoint(segments.segments_dir(store))
        folder = _child("folder", tmp_path / f"fold{attempt}.log", "fold", str(store), str(size // 40))
        killed_procs.append(folder)
        wait_until(lambda proc=folder: "folding" in proc.tail(), 60, "the folder to start", proc=folder)
        time.sleep(rng.uniform(0.0, 0.15))
        folder.kill9()
        after = segments.load_checkpoint(segments.segments_dir(store))  # never half-written
        if "folded" not in folder.tail():
            interrupted += 1
        assert all(after.get(n, 0) >= off for n, off in before.items() if n in after)
        if not _segments(store):
            break
    assert interrupted, "no kill landed during a fold"
    with read_back(store) as index:  # a reader: the index, the rest of the log replayed
        got = {str(q) for q in index}
    assert got == want, (len(got - want), len(want - got))
    fold(store)  # the next indexer finishes the interrupted folds
    with read_back(store) as index:
        assert {str(q) for q in index} == want
    assert not _segments(store)


def test_kill9_during_appends_loses_nothing_exported_and_a_torn_tail_is_ignored(
        tmp_path: Path, killed_procs: list[Proc]) -> None:
    store = tmp_path / "store"
    out = tmp_path / "out"
    out.mkdir()
    lock = IndexLock(segments.segments_dir(store))
    segments.segments_dir(store).mkdir(parents=True)
    assert lock.acquire()  # nobody folds while the writer runs: everything must come from its log
    exporter = _child("exporter", tmp_path / "exporter.log", "export", f"oxigraph:{store}", str(out), "0",
                      "100000")
    killed_procs.append(exporter)
    wait_until(lambda: exporter.tail().count("exported") >= 20, 60, "sessions exported", proc=exporter)
    exporter.kill9()
    lock.release()
    exported = [line.split()[1] for line in exporter.tail(100000).splitlines()
                if line.startswith("exported ")]
    (name,) = _segments(store)
    # A record the kill cut short: half of one more append at the end of the dead writer's segment.
    torn = segments.encode(segments.ADD, b"<urn:x:torn> <urn:x:p> <urn:x:o> <urn:graph:retrieval> .\n")
    with open(segments.segments_dir(store) / name, "ab") as fh:
        fh.write(torn[: len(torn) // 2])
    for folded in (False, True):  # a reader replaying the log; then the index once it is folded
        if folded:
            fold(store)
        with read_back(store) as index:
            questions = {str(q.subject.value) for q in index.quads_for_pattern(
                None, pyoxigraph.NamedNode("https://trustgraph.ai/ns/query"), None, None)}
            assert not list(index.quads_for_pattern(pyoxigraph.NamedNode("urn:x:torn"), None, None, None))
        assert set(exported) <= questions, f"{len(set(exported) - questions)} exported sessions lost"
    assert not _segments(store), "the dead writer's segment was folded and deleted"


def test_segments_rotate_and_folded_ones_are_deleted_while_the_writer_runs(tmp_path: Path,
                                                                           monkeypatch) -> None:
    monkeypatch.setattr(segments, "SEGMENT_BYTES", 64 * 1024)
    store = tmp_path / "store"
    exporter = ProvSpanExporter(store=store)  # this process indexes
    spans = _genai_spans(40)
    for i in range(0, len(spans), 5):
        exporter.export(spans[i:i + 5])
    assert exporter.force_flush()
    created = exporter.store.log._n  # type: ignore[attr-defined]
    assert created > 3, "the writer did not rotate"
    wait_until(lambda: len(_segments(store)) == 1, 10, "folded segments to be deleted")
    exporter.shutdown()
    want = _quads(nquads(TraceMapper(SEED).map([from_sdk(s) for s in spans]).add))
    with read_back(store) as index:
        assert {str(q) for q in index} == want
    assert not _segments(store)


def test_torn_and_corrupt_records_end_the_committed_prefix(tmp_path: Path) -> None:
    path = tmp_path / "x.seg"
    good = [segments.encode(segments.ADD, f"<urn:a:{i}> <urn:p> <urn:o> <urn:g> .\n".encode())
            for i in range(3)]
    path.write_bytes(segments.MAGIC + b"".join(good))
    records, ended, _ = segments.read_records(path, 0, 1 << 20)
    assert len(records) == 3 and ended
    for tail in (good[0][:5], good[0][:-1], good[0][:-1] + b"X", b"\0" * 64):
        path.write_bytes(segments.MAGIC + b"".join(good) + tail)
        records, ended, _ = segments.read_records(path, 0, 1 << 20)
        assert [r.payload for r in records] == [g[segments.HEADER_SIZE:] for g in good] and ended
    records, ended, _ = segments.read_records(path, records[0].end, 1)
    assert len(records) == 1 and not ended  # resumes at an offset; the budget stops it early


def test_a_genai_trace_split_over_two_exporters_keeps_only_what_each_can_map(tmp_path: Path) -> None:
    """Not coordinated across processes: each process maps the spans it saw.  A standard GenAI
    trace whose ``invoke_agent`` span is exported by one process and whose ``execute_tool`` spans
    by another (two exporters here: each has its own mapper, as two processes do) leaves the
    session and its answer in the store but not its steps: the tools' process never sees their
    agent.  The same spans through one mapper (``otel-prov serve`` behind a Collector) give the
    whole graph.  (docs/benchmarks.md, "Many processes, one store".)"""
    spans = _genai_spans(3)
    agent = [s for s in spans if s.name.startswith("invoke_agent")]
    tools = [s for s in spans if not s.name.startswith("invoke_agent")]
    store = tmp_path / "store"
    first, second = ProvSpanExporter(store=store), ProvSpanExporter(store=store)
    first.export(agent)
    second.export(tools)
    waiting = second.stats()["mapper"]["spans"]
    first.shutdown()
    second.shutdown()
    whole = _quads(nquads(TraceMapper(SEED).map([from_sdk(s) for s in spans]).add))
    with read_back(store) as index:
        got = {str(q) for q in index}
    # A part, nothing else wrong: a finished agent always gets its Conclusion, which the agent's
    # process, having seen no step, derives from the Question (the whole graph: from the last step).
    extra = got - whole
    assert len(extra) == 3 and all("/final> <http://www.w3.org/ns/prov#wasDerivedFrom>" in q for q in extra)
    assert got - extra < whole
    analysis = "<https://trustgraph.ai/ns/Analysis>"
    assert not any(analysis in q for q in got) and any(analysis in q for q in whole)
    questions = {q.split()[0] for q in got if "<https://trustgraph.ai/ns/AgentQuestion>" in q}
    assert len(questions) == 3  # every session is listed, with its question
    assert waiting == len(tools)  # the tools' exporter kept them for an agent span it never saw


def test_readers_while_the_first_writer_creates_the_store(tmp_path: Path) -> None:
    """A reader that comes while the first writer is still creating the index (its column
    families appear one by one) reads the log, never fails: 'no store yet', or what is there."""
    from otel_prov.errors import StoreError, StoreNotFound
    from otel_prov.stores import open_for_reading, parse_store

    errors: list[str] = []
    opened = 0
    for n in range(5):
        path = tmp_path / f"store{n}"
        code = (f"from otel_prov import ProvSpanExporter\n"
                f"exporter = ProvSpanExporter(store={str(path)!r})\n"
                "import time; time.sleep(0.3); exporter.shutdown()\n")
        writer = subprocess.Popen([sys.executable, "-c", code], env=clean_env())
        try:
            while writer.poll() is None:
                try:
                    open_for_reading(parse_store(str(path))).close()
                    opened += 1
                except StoreNotFound:
                    pass
                except StoreError as exc:
                    errors.append(str(exc))
        finally:
            writer.wait(timeout=60)
        assert writer.returncode == 0
    assert errors == []
    assert opened > 0  # the readers did meet the store while it was being made


# -- the fold handed over at shutdown ------------------------------------------------------------


def _paragraph_sessions(count: int) -> list:  # type: ignore[type-arg]
    """Agent sessions with long texts: more than a megabyte of N-Quads for a few hundred."""
    from otel_prov import agent_session
    from tests.support.children import PARAGRAPH

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for i in range(count):
        with agent_session(f"question {i}", tracer_provider=provider) as session:
            for _ in range(3):
                with session.iteration() as step:
                    step.thought(PARAGRAPH)
                    step.action("lookup", {"q": i})
                    step.observation(PARAGRAPH * 3)
            session.conclude(f"answer {i}")
    return list(memory.get_finished_spans())


def _export_all(store: Path, spans: list, monkeypatch=None) -> ProvSpanExporter:  # type: ignore[type-arg,no-untyped-def]
    """Export ``spans``; with ``monkeypatch``, the exporter's indexer folds nothing meanwhile (so
    that shutdown() has the whole log left to fold)."""
    from otel_prov.stores.logstore import IndexerService

    if monkeypatch is not None:
        monkeypatch.setattr(IndexerService, "_due", lambda self: False)
    exporter = ProvSpanExporter(store=store)
    for i in range(0, len(spans), 512):
        exporter.export(spans[i:i + 512])
    return exporter


def test_shutdown_hands_a_large_fold_to_a_background_process_that_loses_nothing(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    from otel_prov.stores.indexer import index_held
    from otel_prov.stores.logstore import HAND_OVER_BYTES

    store = tmp_path / "store"
    spans = _paragraph_sessions(300)
    want = _quads(nquads(TraceMapper(SEED).map([from_sdk(s) for s in spans]).add))
    exporter = _export_all(store, spans, monkeypatch)
    assert segments.unfolded_bytes(segments.segments_dir(store)) >= HAND_OVER_BYTES
    exporter.shutdown()
    # The lock never went free: a reader starting now sees a process indexing, waits for it, and
    # reads everything (from the index, or the log it replays if it gave up waiting).
    assert folder_pids(store), "no background folder"
    assert index_held(segments.segments_dir(store))
    with read_back(store) as index:
        assert {str(q) for q in index} == want
    wait_until(lambda: not folder_pids(store), 60, "the folder to exit")
    assert not _segments(store), "every segment was folded and deleted"
    with read_back(store) as index:
        assert {str(q) for q in index} == want


def test_kill9_of_the_background_folder_loses_nothing(tmp_path: Path, monkeypatch) -> None:
    store = tmp_path / "store"
    spans = _paragraph_sessions(300)
    want = _quads(nquads(TraceMapper(SEED).map([from_sdk(s) for s in spans]).add))
    _export_all(store, spans, monkeypatch).shutdown()
    (pid,) = folder_pids(store)
    subprocess.run(["kill", "-9", str(pid)], check=True)
    wait_until(lambda: not folder_pids(store), 10, "the killed folder to be gone")
    with read_back(store) as index:  # the index, and whatever it had not folded, from the log
        assert {str(q) for q in index} == want
    fold(store)  # as the next writer would
    with read_back(store) as index:
        assert {str(q) for q in index} == want
    assert not _segments(store)


def test_shutdown_folds_in_process_when_no_folder_can_be_started(tmp_path: Path, monkeypatch) -> None:
    store = tmp_path / "store"
    spans = _paragraph_sessions(300)
    want = _quads(nquads(TraceMapper(SEED).map([from_sdk(s) for s in spans]).add))
    monkeypatch.setattr(sys, "executable", "/nonexistent/python3")
    _export_all(store, spans, monkeypatch).shutdown()
    assert not folder_pids(store)
    assert not _segments(store), "the exporter folded everything itself"
    with read_back(store) as index:
        assert {str(q) for q in index} == want


def test_shutdown_does_not_wait_for_a_fold_round_under_way(tmp_path: Path, monkeypatch) -> None:
    """A round of the background indexer is under way when ``shutdown()`` is called: shutdown hands
    the rest over and returns; the round's end releases the index to the folder."""
    from otel_prov.stores import indexer

    store = tmp_path / "store"
    spans = _paragraph_sessions(300)
    want = _quads(nquads(TraceMapper(SEED).map([from_sdk(s) for s in spans]).add))
    in_round, release = threading.Event(), threading.Event()
    fold_round = indexer.Indexer.fold_round

    def slow_round(self, budget=None):  # type: ignore[no-untyped-def]
        in_round.set()
        release.wait(30)
        return fold_round(self, budget)

    monkeypatch.setattr(indexer.Indexer, "fold_round", slow_round)
    exporter = _export_all(store, spans)
    assert in_round.wait(10), "the indexer did not start a round"
    exporter.shutdown()
    returned_during_round = not release.is_set()
    release.set()
    assert returned_during_round
    assert folder_pids(store), "no background folder"
    with read_back(store) as index:
        assert {str(q) for q in index} == want
    wait_until(lambda: not folder_pids(store), 60, "the folder to exit")
    assert not _segments(store)


def test_a_flipped_byte_in_the_middle_of_a_segment_hides_nothing_else_and_deletes_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """One flipped byte in a record in the middle of a sealed segment hid every record after it
    (133 of 300 sessions) and the fold then deleted the segment -- what followed was gone for good.
    Now only the damaged record is skipped, said once in one line naming the file; reader and indexer
    read the rest; the folded segment is kept (set aside), never deleted."""
    store = tmp_path / "store"
    directory = segments.segments_dir(store)
    payloads = [f"<urn:s:{i}> <urn:p> \"{i}\" <urn:g> .\n".encode() for i in range(40)]
    writer = segments.SegmentWriter(directory)
    for payload in payloads:
        writer.append(segments.ADD, payload)
    writer.close()  # sealed
    name = _segments(store)[0]
    path = directory / name
    records, _, _ = segments.read_records(path, 0, 1 << 40)
    data = bytearray(path.read_bytes())
    data[records[19].end + segments.HEADER_SIZE + 3] ^= 0xFF  # inside the 21st record
    path.write_bytes(bytes(data))
    want = {q for p in payloads[:20] + payloads[21:] for q in _quads(p)}
    with caplog.at_level(logging.ERROR, logger="otel_prov"):
        with read_back(store) as index:
            assert {str(q) for q in index} == want
        fold(store)
    assert sum("is damaged" in r.getMessage() and name in r.getMessage() for r in caplog.records) == 1
    with read_back(store) as index:
        assert {str(q) for q in index} == want
    assert (directory / (name + segments.BAD_SUFFIX)).exists()  # kept, never deleted


def test_a_segment_of_a_newer_format_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "x.seg"
    path.write_bytes(b"OTPLOG9\n" + b"\0" * 32)
    with pytest.raises(segments.NotASegment, match="newer otel-prov"):
        segments.read_records(path, 0, 1 << 20)
