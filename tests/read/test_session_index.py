"""The session index of an on-disk store (otel_prov/stores/sessions.py): a listing read from it equals
the listing computed from the graph, for every filter, sort and page, and stays equal as sessions are
added (rows computed by the indexing process, or by the reader for what it has not computed yet),
sessions erased, and the index lost or rebuilt."""

from __future__ import annotations

import functools
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_prov import ProvSpanExporter, agent_session
from otel_prov.read.model import SessionFilter, SessionRow
from otel_prov.read.reader import TraceReader
from otel_prov.stores import open_for_reading, parse_store
from otel_prov.stores.sessions import SessionIndex, index_file
from tests.support.cli import fill
from tests.support.erasing import files_holding, token
from tests.support.listings import check_every_listing, names_in
from tests.support.runs import one_agent_run, record_runs
from tests.support.stores import fold

OVERLAY: list[frozenset[str]] = [frozenset()]
"""Sessions the reader is told it replayed from the log (computed by it, listed in the place of the
index's rows): set by a test to run the same checks through that path."""


def both(path: Path, **kw: object) -> tuple[list[SessionRow], list[SessionRow], int, int]:
    """The listing and count from the index, and from the graph (the same snapshot)."""
    store = open_for_reading(parse_store(str(path)))
    try:
        assert store.sessions is not None  # type: ignore[attr-defined]
        store.sessions = replace(store.sessions, unfolded=OVERLAY[0])  # type: ignore[attr-defined]
        indexed = TraceReader(store)
        listed = indexed.sessions(**kw)  # type: ignore[arg-type]
        count = indexed.count_sessions(**{k: v for k, v in kw.items()  # type: ignore[arg-type]
                                          if k in ("kind", "collection", "where")})
        listing = indexed.session_index()
        assert listing is not None, "listed from the graph, not from the index"
        assert listing._overlay or not OVERLAY[0], "the reader's own rows were not listed"
        label = store.sessions  # type: ignore[attr-defined]
        store.sessions = None  # type: ignore[attr-defined]
        graph = TraceReader(store)
        expected = graph.sessions(**kw)  # type: ignore[arg-type]
        expected_count = graph.count_sessions(**{k: v for k, v in kw.items()  # type: ignore[arg-type]
                                                 if k in ("kind", "collection", "where")})
        store.sessions = label  # type: ignore[attr-defined]
    finally:
        store.close()
    return listed, expected, count, expected_count


def same(path: Path, **kw: object) -> list[SessionRow]:
    listed, expected, count, expected_count = both(path, **kw)
    assert [r.as_json() for r in listed] == [r.as_json() for r in expected], kw
    assert count == expected_count, kw
    return listed


def rows_in_index(path: Path) -> int:
    db = sqlite3.connect(index_file(path))
    try:
        return int(db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0])
    finally:
        db.close()


@pytest.fixture(params=["index", "index and the reader's rows"])
def overlay(request: pytest.FixtureRequest, filled: Path) -> Iterator[None]:
    if request.param == "index":
        OVERLAY[0] = frozenset()
    else:  # three sessions of each kind computed by the reader in the place of their rows
        rows = same(filled)
        OVERLAY[0] = frozenset(r.id for kind in {r.type for r in rows} for r in
                               [r for r in rows if r.type == kind][:3])
    yield
    OVERLAY[0] = frozenset()


@pytest.fixture(scope="module", params=["seed", "strict", "trustgraph"])
def filled(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp(f"index-{request.param}") / "store"
    fill(path, request.param)
    record_runs(path)
    yield path


def test_every_filter_sort_and_page_lists_what_the_graph_lists(filled: Path, overlay: None) -> None:
    store = open_for_reading(parse_store(str(filled)))
    try:
        names = names_in(store)
    finally:
        store.close()
    everything = check_every_listing(functools.partial(same, filled), names)
    assert rows_in_index(filled) == len(everything)


def test_new_sessions_erasure_and_a_lost_index_keep_the_listing_exact(tmp_path: Path) -> None:
    path = tmp_path / "store"
    fill(path)
    before = same(path)
    # added after the index was built: listed from the rows the fold noted, not a full build
    secret = token()
    added = [one_agent_run(str(path), f"question {n} {secret if n == 7 else ''}") for n in range(12)]
    listed = same(path)
    assert len(listed) == len(before) + 12 and set(added) <= {r.id for r in listed}
    assert [r.id for r in same(path, where=SessionFilter(text=secret))] == [added[7]]
    assert files_holding(path / "sessions", secret)  # the row holds the text the filter searches
    # erased: its row goes, and its text leaves the index's files
    from otel_prov.cli.app import main

    assert main(["delete", added[7], "--store", str(path)]) == 0
    listed = same(path)
    assert added[7] not in {r.id for r in listed} and len(listed) == len(before) + 11
    assert files_holding(path / "sessions", secret) == []
    # lost: listed from the graph, then built again by the next process to index the store
    for name in list(index_file(path).parent.iterdir()):
        name.unlink()
    store = open_for_reading(parse_store(str(path)))
    try:
        assert TraceReader(store).session_index() is None
    finally:
        store.close()
    fold(path)
    assert [r.id for r in same(path)] == [r.id for r in listed]
    # marked stale (check --rebuild): built again, equal
    assert main(["check", "--rebuild", str(path)]) == 0
    assert [r.id for r in same(path)] == [r.id for r in listed]


def test_a_reader_lists_what_it_replayed_from_the_log_before_any_fold(tmp_path: Path) -> None:
    path = tmp_path / "store"
    fill(path)
    same(path)  # built
    store = open_for_reading(parse_store(str(path)))
    try:
        label = store.sessions  # type: ignore[attr-defined]
    finally:
        store.close()
    assert label is not None and label.unfolded == frozenset()
    # a label naming a session its snapshot replayed: computed again from the snapshot, not kept stale
    db = sqlite3.connect(index_file(path))
    try:
        db.execute("UPDATE sessions SET question = 'stale' WHERE rowid = 1")
        db.commit()
        (stale,) = db.execute("SELECT q FROM sessions WHERE rowid = 1").fetchone()
    finally:
        db.close()
    store = open_for_reading(parse_store(str(path)))
    try:
        store.sessions = replace(store.sessions, unfolded=frozenset({stale}))  # type: ignore[attr-defined]
        rows = TraceReader(store).sessions()
    finally:
        store.close()
    assert "stale" not in {r.question for r in rows} and stale in {r.id for r in rows}


def test_the_indexing_process_computes_the_rows_and_a_reader_what_is_left(tmp_path: Path) -> None:
    path = tmp_path / "store"
    fill(path)
    exporter = ProvSpanExporter(store=str(path))  # a live writer: it indexes the store
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        for n in range(15):
            with agent_session(f"live question {n}", tracer_provider=provider) as session:
                session.conclude("ok")
        index = SessionIndex(path, read_only=True)
        try:
            deadline = time.monotonic() + 30
            while index.due() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert index.due() == [], "the indexing process did not compute the rows"
        finally:
            index.close()
        assert sum(r.question.startswith("live question") for r in same(path)) == 15
        # noted by the fold and not computed yet (the writer paused): the reader computes them
        with agent_session("one more live question", tracer_provider=provider) as session:
            session.conclude("ok")
        provider.force_flush()
        listed = same(path)
        assert "one more live question" in {r.question for r in listed}
    finally:
        provider.shutdown()
