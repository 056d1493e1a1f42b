"""The write path (``otel_prov.ingest.writer.Writer`` over real Oxigraph stores): merging under load,
lingering and what cuts it short, ordering, concurrency, failures retried and rescued, and text
that survives the lenient bulk parser exactly."""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyoxigraph
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import ProvSpanExporter
from otel_prov.ingest import writer as _writer
from otel_prov.ingest.writer import Writer
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import from_sdk
from otel_prov.model.profiles import SEED
from otel_prov.model.quads import Quad, in_parts, nquads
from otel_prov.model.terms import iri, literal
from otel_prov.model.vocab import GRAPH_RETRIEVAL
from otel_prov.stores.logstore import open_reader
from otel_prov.stores.oxigraph import (
    BULK_PIECE_BYTES,
    BULK_THRESHOLD,
    SIDE_BY_SIDE_PART_BYTES,
    OxigraphStore,
    bulk_load,
    bulk_load_side_by_side,
)
from tests.support.genai import genai_traces

G = iri(GRAPH_RETRIEVAL)
P = iri("http://example.org/p")


def quads(prefix: str, n: int) -> list[Quad]:
    return [(iri(f"http://example.org/{prefix}/{i}"), P, literal(f"value {i}"), G) for i in range(n)]


class RecordingStore(OxigraphStore):
    """A real on-disk store that records each write, optionally slow or failing at first."""

    def __init__(self, path: Path, *, delay: float = 0.0, fail_first: int = 0) -> None:
        super().__init__(path)
        self.delay = delay
        self.fail_first = fail_first
        self.calls: list[int] = []  # quads per successful add
        self.side_by_side: list[int] = []  # quads per successful add_side_by_side
        self.attempts = 0

    def add(self, data: bytes, count: int) -> None:
        self.attempts += 1
        if self.attempts <= self.fail_first:
            raise OSError(f"injected failure {self.attempts}")
        time.sleep(self.delay)
        super().add(data, count)
        self.calls.append(count)

    def add_side_by_side(self, data: bytes, count: int) -> None:
        super().add_side_by_side(data, count)
        self.side_by_side.append(count)


def stored(store: OxigraphStore) -> set[str]:
    return {str(q) for q in store.inner}


def expected(qs: list[Quad]) -> set[str]:
    want = pyoxigraph.Store()
    want.load(input=nquads(qs), format=pyoxigraph.RdfFormat.N_QUADS)
    return {str(q) for q in want}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RecordingStore]:
    s = RecordingStore(tmp_path / "store")
    yield s
    s.close()


def test_batches_queued_while_the_store_is_busy_are_merged_into_few_writes(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "store", delay=0.05)
    writer = Writer(store)
    batches = [quads(f"b{i}", 50) for i in range(60)]
    for batch in batches:
        writer.add(nquads(batch), len(batch))
    assert writer.wait(timeout=30)
    assert writer.close()
    assert sum(store.calls) == 60 * 50 == writer.written_quads
    assert len(store.calls) <= 6, store.calls  # 60 submissions, a handful of writes
    assert stored(store) == expected([q for b in batches for q in b])
    store.close()


def test_a_busy_writer_lingers_for_more_data_but_never_past_a_waiter_or_close(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_writer, "LINGER", 30.0)  # long enough that only a waiter or close ends it
    store = RecordingStore(tmp_path / "store", delay=0.2)
    writer = Writer(store)
    writer.add(nquads(quads("first", 5)), 5)      # written at once (the writer was idle)
    time.sleep(0.05)
    second = writer.add(nquads(quads("second", 5)), 5)  # arrives while the store is busy
    time.sleep(0.6)
    assert store.calls == [5]  # the busy writer lingers: the small second batch waits for company
    started = time.monotonic()
    assert writer.wait(second, timeout=10)  # a waiter cuts the linger short
    assert time.monotonic() - started < 5
    assert store.calls == [5, 5]
    # Busy again; close() also ends the linger and stores everything.
    writer.add(nquads(quads("third", 5)), 5)
    time.sleep(0.05)
    writer.add(nquads(quads("fourth", 5)), 5)
    started = time.monotonic()
    assert writer.close(timeout=10)
    assert time.monotonic() - started < 5
    assert sum(store.calls) == 20
    store.close()


def test_an_idle_writer_makes_an_export_readable_at_once(store: RecordingStore) -> None:
    writer = Writer(store)
    batch = quads("streamed", 10)
    writer.add(nquads(batch), len(batch))
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not store.calls:
        time.sleep(0.01)
    assert stored(store) == expected(batch)  # no flush: streaming
    writer.close()


def test_removals_and_additions_apply_in_submission_order(store: RecordingStore) -> None:
    writer = Writer(store)
    a, b = quads("a", 3), quads("b", 3)
    writer.add(nquads(a), 3)
    writer.remove(a[:2])
    writer.add(nquads(b), 3)
    writer.remove(b[2:])
    writer.add(nquads(b[2:]), 1)  # re-added after its removal: present
    assert writer.wait(timeout=10)
    assert stored(store) == expected(a[2:] + b)
    writer.close()


def test_producers_on_several_threads_lose_nothing(store: RecordingStore) -> None:
    writer = Writer(store)
    seqs: list[int] = []
    lock = threading.Lock()

    def produce(t: int) -> None:
        for i in range(40):
            batch = quads(f"t{t}/{i}", 7)
            seq = writer.add(nquads(batch), len(batch))
            with lock:
                seqs.append(seq)

    threads = [threading.Thread(target=produce, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert writer.wait(timeout=30)
    assert sorted(seqs) == list(range(1, 161))  # every submission got its own sequence number
    assert writer.written_quads == 4 * 40 * 7
    assert stored(store) == expected([q for t in range(4) for i in range(40)
                                      for q in quads(f"t{t}/{i}", 7)])
    writer.close()


def test_a_failing_store_is_retried_and_nothing_is_lost(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "store", fail_first=2)
    writer = Writer(store)
    batch = quads("retried", 20)
    seq = writer.add(nquads(batch), len(batch))
    assert writer.wait(seq, timeout=30)
    assert writer.failures == 2 and writer.consecutive_failures == 0
    assert "injected failure" in writer.last_error
    assert stored(store) == expected(batch)
    writer.close()
    store.close()


def test_failures_long_past_do_not_cut_retries_at_close_short(tmp_path: Path) -> None:
    """Only failures in a row count towards the rescue at close: a store that failed (and
    recovered) earlier still gets its retries for a transient failure of the last write."""
    store = RecordingStore(tmp_path / "store", fail_first=4)
    writer = Writer(store, rescue_dir=tmp_path)
    early = quads("early", 3)
    assert writer.wait(writer.add(nquads(early), 3), timeout=30)
    assert writer.failures == 4 and writer.consecutive_failures == 0
    failed_once: list[int] = []

    def side_by_side(data: bytes, count: int) -> None:  # called only while closing
        if not failed_once:
            failed_once.append(count)
            raise OSError("transient failure at close")
        RecordingStore.add_side_by_side(store, data, count)

    store.add_side_by_side = side_by_side  # type: ignore[method-assign]
    store.delay = 0.3  # the writer is busy with `blocker` when close() is called
    blocker, last = quads("blocker", 3), quads("last", 3)
    writer.add(nquads(blocker), 3)
    time.sleep(0.05)
    writer.add(nquads(last), 3)
    assert writer.close(timeout=60)
    assert failed_once, "the last write was not made while closing"
    assert not list(tmp_path.glob("otel-prov-rescue-*.nq"))
    assert stored(store) == expected(early + blocker + last)
    store.close()


def test_a_store_that_keeps_failing_at_close_is_rescued_to_a_file(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "store", fail_first=10**9)
    writer = Writer(store, rescue_dir=tmp_path)
    first, second = quads("r1", 5), quads("r2", 5)
    writer.add(nquads(first), 5)
    writer.add(nquads(second), 5)
    assert not writer.wait(timeout=0.3)  # not stored: force_flush would say so
    writer.close(timeout=60)
    rescued = list(tmp_path.glob("otel-prov-rescue-*.nq"))
    assert len(rescued) == 1
    back = pyoxigraph.Store()
    back.load(path=str(rescued[0]), format=pyoxigraph.RdfFormat.N_QUADS)
    assert {str(q) for q in back} == expected(first + second)
    assert writer.wait(timeout=1)  # nobody is left waiting forever
    store.close()


@pytest.mark.parametrize("count", [1, BULK_THRESHOLD])  # the transactional and the bulk path
def test_text_round_trips_exactly_through_the_lenient_parser(store: RecordingStore, count: int) -> None:
    tricky = 'quote " backslash \\ newline \n return \r tab \t unicode é 漢字 🙂 \\n literal'
    batch = [(iri(f"http://example.org/t/{i}"), P, literal(tricky), G) for i in range(count)]
    writer = Writer(store)
    writer.add(nquads(batch), len(batch))
    assert writer.wait(timeout=30)
    values = {str(row[0].value) for row in store.inner.query(
        f"SELECT ?o WHERE {{ GRAPH {G} {{ ?s {P} ?o }} }}")}
    assert values == {tricky}
    assert len(store.inner) == count
    writer.close()


def test_genai_traces_exported_from_several_threads_give_the_graph_of_one_export(
        captured: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path) -> None:
    spans = genai_traces(captured, 30)
    # One export of the whole trace set, by the same mapping (rdflib would round the timestamps).
    want = expected_from(nquads(TraceMapper(SEED).map([from_sdk(s) for s in spans]).add))
    rng = random.Random(5)
    order = spans[:]
    rng.shuffle(order)
    batches = [order[i:i + 2] for i in range(0, len(order), 2)]
    exporter = ProvSpanExporter(store=f"oxigraph:{tmp_path / 'store'}")

    def export(part: list) -> None:
        for batch in part:
            exporter.export(batch)

    threads = [threading.Thread(target=export, args=(batches[k::4],)) for k in range(4)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often: interleavings that a race would need
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(interval)
    assert exporter.force_flush()
    exporter.shutdown()
    store = open_reader(tmp_path / "store")  # the log folded into the index by this reader
    try:
        assert {str(q) for q in store.inner} == want
    finally:
        store.close()


def expected_from(data: bytes) -> set[str]:
    want = pyoxigraph.Store()
    want.load(input=data, format=pyoxigraph.RdfFormat.N_QUADS)
    return {str(q) for q in want}


def big_batch(prefix: str, size: int) -> list[Quad]:
    """At least ``size`` bytes of N-Quads with long literals (as observations are)."""
    text = "an observation with some length " * 20
    n = size // (len(text) + 80) + 1
    return [(iri(f"http://example.org/{prefix}/{i}"), P, literal(f"{text}{i}"), G) for i in range(n)]


def test_n_quads_in_parts_cut_only_after_a_newline_and_join_small_texts() -> None:
    data = nquads(big_batch("s", 300_000))
    for limit in (1_000, 70_000, 150_000, 10**6):
        pieces = list(in_parts([data], limit))
        assert b"".join(pieces) == data and all(p.endswith(b"\n") for p in pieces)
        assert all(len(p) <= limit for p in pieces) and len(pieces) >= -(-len(data) // limit)
    small = [nquads(big_batch(f"t{i}", 1_000)) for i in range(50)]
    joined = list(in_parts(small, 20_000))
    assert b"".join(joined) == b"".join(small) and 1 < len(joined) < 50
    assert all(len(p) <= 20_000 for p in joined)
    assert list(in_parts([b"one line longer than the limit\n", b"x\n"], 4)) == [
        b"one line longer than the limit\n", b"x\n"]
    assert list(in_parts([b"no newline"], 2)) == [b"no newline"]
    assert list(in_parts([], 2)) == []


def test_a_large_bulk_load_is_given_to_the_store_in_bounded_pieces(tmp_path: Path) -> None:
    real = pyoxigraph.Store(str(tmp_path / "store"))
    batch = big_batch("pieces", 3 * BULK_PIECE_BYTES)
    seen: list[int] = []

    class Counting:
        def bulk_load(self, *, input: bytes, **kwargs: object) -> None:  # noqa: A002 (pyoxigraph's name)
            seen.append(len(input))
            real.bulk_load(input=input, **kwargs)

    bulk_load(Counting(), [nquads(batch)], 2)  # type: ignore[arg-type]
    assert len(seen) >= 3 and max(seen) <= BULK_PIECE_BYTES
    assert {str(q) for q in real} == expected(batch)


def test_a_large_write_loaded_side_by_side_stores_exactly_its_quads(store: RecordingStore) -> None:
    batch = big_batch("sbs", 3 * SIDE_BY_SIDE_PART_BYTES)
    store.add_side_by_side(nquads(batch), len(batch))
    assert stored(store) == expected(batch)
    assert len(store.inner) == len(batch)


class FailingPart:
    """A real store whose bulk load of one given part fails once."""

    def __init__(self, store: pyoxigraph.Store, failing: bytes) -> None:
        self.store, self.failing = store, failing

    def bulk_load(self, *, input: bytes, **kwargs: object) -> None:  # noqa: A002 (pyoxigraph's name)
        if input == self.failing:
            self.failing = b""
            raise OSError("injected failure of one part")
        self.store.bulk_load(input=input, **kwargs)


def test_a_failing_part_is_raised_after_the_others_finish_and_a_retry_completes(tmp_path: Path) -> None:
    real = pyoxigraph.Store(str(tmp_path / "store"))
    batch = big_batch("fail", 2 * SIDE_BY_SIDE_PART_BYTES)
    parts = list(in_parts([nquads(batch)], SIDE_BY_SIDE_PART_BYTES + 1))
    failing = FailingPart(real, parts[1])
    with pytest.raises(OSError, match="injected"):
        bulk_load_side_by_side(failing, parts)  # type: ignore[arg-type]
    assert 0 < len(real) < len(batch)  # the other part was stored
    bulk_load_side_by_side(failing, parts)  # the writer's retry: the whole write again
    assert {str(q) for q in real} == expected(batch)


def test_the_write_left_at_close_goes_side_by_side(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "store", delay=0.3)
    writer = Writer(store)
    first = quads("first", 5)
    writer.add(nquads(first), 5)  # the store is busy with this one ...
    batches = [big_batch(f"late{i}", SIDE_BY_SIDE_PART_BYTES // 2) for i in range(6)]
    for batch in batches:  # ... while 3 MiB more queue up
        writer.add(nquads(batch), len(batch))
    assert writer.close(timeout=60)
    assert store.side_by_side and sum(store.side_by_side) + sum(store.calls) >= sum(map(len, batches))
    assert stored(store) == expected(first + [q for b in batches for q in b])
    store.close()


def test_files_set_aside_are_private_and_never_follow_a_link(tmp_path: Path) -> None:
    """Rescue files and quads a server refused hold agents' data: 0600, never through a symbolic
    link planted at their (predictable) name, never over an existing file."""
    from otel_prov.stores.base import open_private

    path = tmp_path / "otel-prov-rescue-1.nq"
    with open_private(path) as handle:
        handle.write(b"<urn:a> <urn:b> <urn:c> <urn:g> .\n")
    assert path.stat().st_mode & 0o777 == 0o600
    with pytest.raises(FileExistsError):
        open_private(path)
    with open_private(path, append=True) as handle:
        handle.write(b"<urn:d> <urn:b> <urn:c> <urn:g> .\n")
    assert len(path.read_bytes().splitlines()) == 2
    target = tmp_path / "elsewhere"
    target.write_bytes(b"keep\n")
    link = tmp_path / "otel-prov-rejected-1.nq"
    link.symlink_to(target)
    with pytest.raises(OSError):
        open_private(link, append=True)
    with pytest.raises(OSError):
        open_private(link)
    assert target.read_bytes() == b"keep\n"


def test_the_rescue_directory_is_made_when_it_does_not_exist_yet(tmp_path: Path) -> None:
    """A store on a server rescues next to ``$XDG_DATA_HOME/otel-prov``, which a process that never
    wrote an on-disk store has not made: the rescue makes it rather than losing what it holds."""
    store = RecordingStore(tmp_path / "store", fail_first=10**9)
    missing = tmp_path / "xdg" / "otel-prov"
    writer = Writer(store, rescue_dir=missing)
    batch = quads("r1", 5)
    writer.add(nquads(batch), 5)
    writer.close(timeout=60)
    rescued = list(missing.glob("otel-prov-rescue-*.nq"))
    assert len(rescued) == 1
    back = pyoxigraph.Store()
    back.load(path=str(rescued[0]), format=pyoxigraph.RdfFormat.N_QUADS)
    assert {str(q) for q in back} == expected(batch)
    store.close()
