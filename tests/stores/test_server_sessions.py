"""The session index of a dataset on a SPARQL server (otel_prov/stores/server_sessions.py), against
the real Oxigraph server and Fuseki: a listing read from its rows equals the listing computed from the
graph for every filter, sort and page; writers keep the rows as sessions are added and erased (the
erased text leaves the index's graph); a lost index is built again; two writers racing over one
session never leave a row older than the data unmarked; exports and users' queries never see it."""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_prov import ProvSpanExporter
from otel_prov.cli.app import main
from otel_prov.examples.rag import graph_rag
from otel_prov.model.vocab import GRAPH_RETRIEVAL
from otel_prov.read.model import COMPLETE, SessionFilter, SessionRow
from otel_prov.read.reader import TraceReader
from otel_prov.stores import open_for_reading, open_for_writing, parse_store, server_sessions, sparql
from otel_prov.stores.server_sessions import GRAPH_SESSIONS, ROW, sweep
from otel_prov.stores.sparql import SparqlStore
from tests.support.cli import fill
from tests.support.erasing import token
from tests.support.listings import check_every_listing, names_in
from tests.support.runs import one_agent_run, record_runs
from tests.support.sparql_servers import SparqlServer, start_fuseki, start_oxigraph

KINDS = ("oxigraph", "fuseki")
MARKED = f"SELECT ?k WHERE {{ GRAPH <{GRAPH_SESSIONS}> {{ ?k <{ROW}dirty> ?s }} }}"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("server-sessions")


@pytest.fixture(scope="module")
def data(workdir: Path) -> bytes:
    """The runs of tests/support (every status, type, collection, tools, models...) as N-Quads."""
    path = workdir / "embedded"
    fill(path)
    record_runs(path)
    store = open_for_reading(parse_store(str(path)))
    try:
        once = store.dump("nquads")
    finally:
        store.close()
    # again under other session IRIs: every session has a twin of the same time (the listing's order
    # then falls to the IRI, which the server's query leaves to the reader); and twice more, years
    # earlier, in two other hours (a listing by time reads the newest hours first)
    copies = [once]
    for name, when in (("twin", None), ("old", b"2020-01-01T00"), ("older", b"2019-06-15T12")):
        session = rb"(urn:trustgraph:(?:agent|question|docrag|prov:[a-z]+):)"
        copy = re.sub(session, rb"\1" + name.encode() + b"-", once)
        if when is not None:
            copy = re.sub(rb'"20\d\d-\d\d-\d\dT\d\d', b'"' + when, copy)
        copies.append(copy)
    return b"".join(copies)


@pytest.fixture(scope="module", params=KINDS)
def server(request: pytest.FixtureRequest, workdir: Path) -> Iterator[SparqlServer]:
    started = (start_oxigraph if request.param == "oxigraph" else start_fuseki)(workdir)
    try:
        yield started
    finally:
        started.stop()


def opened(url: str) -> SparqlStore:
    store = open_for_reading(parse_store(url))
    assert isinstance(store, SparqlStore)
    return store


def settled(url: str, timeout: float = 60.0) -> None:
    """Wait until the index is built and no session is marked (the writers computed every row)."""
    store = opened(url)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if server_sessions.built(store) and not store.select(MARKED):
                return
            time.sleep(0.1)
        raise AssertionError(f"rows not computed within {timeout} s: {len(store.select(MARKED))} marked")
    finally:
        store.close()


def collections(url: str) -> list[str]:
    store = opened(url)
    try:
        return TraceReader(store).collections()
    finally:
        store.close()


def same(url: str, *, fresh: bool | None = None, **kw: Any) -> list[SessionRow]:
    """The listing and count from the index, and from the graph: equal (``fresh``: whether the reader
    must have computed some sessions itself, None: either)."""
    store = opened(url)
    try:
        indexed = TraceReader(store)
        listed = indexed.sessions(**kw)
        names = indexed.collections()
        count = indexed.count_sessions(**{k: v for k, v in kw.items()
                                          if k in ("kind", "collection", "where")})
        listing = indexed.session_index()
        assert listing is not None, "listed from the graph, not from the index"
        if fresh is not None:
            assert bool(listing.fresh) == fresh
        graph = TraceReader(store)
        graph._no_index = True
        expected = graph.sessions(**kw)
        assert names == graph.collections()
        expected_count = graph.count_sessions(**{k: v for k, v in kw.items()
                                                 if k in ("kind", "collection", "where")})
    finally:
        store.close()
    assert [r.as_json() for r in listed] == [r.as_json() for r in expected], kw
    assert count == expected_count, kw
    return listed


def write(url: str, data: bytes) -> None:
    """``data`` written by a writer that stays open until the index is built and every row computed
    (a writer closed first leaves the build to the next one)."""
    store = open_for_writing(parse_store(url))
    try:
        store.add(data, 0)
        settled(url)
    finally:
        store.close()


def in_index(server: SparqlServer, text: str) -> int:
    store = opened(server.url)
    try:
        return len(store.select(f"""SELECT DISTINCT ?s WHERE {{ GRAPH <{GRAPH_SESSIONS}> {{ ?s ?p ?o
  FILTER(CONTAINS(STR(?o), "{text}")) }} }}"""))
    finally:
        store.close()


def test_every_filter_sort_and_page_lists_what_the_graph_lists(server: SparqlServer, data: bytes) -> None:
    server.clear()
    write(server.url, data)
    store = opened(server.url)
    try:
        names = names_in(store)
        rows = store.select(f"SELECT ?q WHERE {{ GRAPH <{GRAPH_SESSIONS}> {{ ?q <{ROW}flow> ?f }} }}")
    finally:
        store.close()
    everything = check_every_listing(functools.partial(same, server.url, fresh=False), names)
    assert len(rows) == len(everything)
    for hour_most in (server_sessions.HOUR_MOST, 3):  # then hours too full: the server sorts every row
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(server_sessions, "HOUR_MOST", hour_most)
            for offset in range(0, len(everything), 7):  # every page, down to the oldest hour's
                same(server.url, fresh=False, limit=7, offset=offset)
            times = sorted(r.time for r in everything if r.time)
            for since, until in ((times[0][:10], times[0][:10]), (times[len(times) // 2], None),
                                 (None, times[len(times) // 3]), (times[1], times[-2])):
                window = SessionFilter(since=since, until=until)
                passing = len(same(server.url, fresh=False, where=window))
                for offset in (0, max(0, passing - 2)):  # the newest and the oldest of the range: only
                    same(server.url, fresh=False, where=window, limit=3, offset=offset)  # its hours read
    for text_most in (server_sessions.TEXT_MOST, 2):  # a text filter's rows read whole, then too many
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(server_sessions, "HOUR_MOST", 3)  # (the newest hours too full: no help there)
            patch.setattr(server_sessions, "TEXT_MOST", text_most)
            for text, sort in (("paris", "time"), ("search", "time"), ("e", "status"), ("e", "duration"),
                               ("zzz-no-such-text", "time")):  # ("e": most rows, of every status)
                for offset in (0, 2):
                    same(server.url, fresh=False, where=SessionFilter(text=text, sort=sort), limit=2,
                         offset=offset)
            same(server.url, fresh=False, where=SessionFilter(text="search", status=COMPLETE), limit=2)
            same(server.url, fresh=False, where=SessionFilter(text="search", since=times[1]), limit=2)
    # three sessions of each type marked (as a writer leaves them): computed by the reader in their place
    picked = [r.id for kind in sorted({r.type for r in everything})
              for r in [r for r in everything if r.type == kind][:3]]
    server.update(f"INSERT DATA {{ GRAPH <{GRAPH_SESSIONS}> {{ "
                  + " ".join(f'<{q}> <{ROW}dirty> "by-hand" .' for q in picked) + " } }")
    check_every_listing(functools.partial(same, server.url, fresh=True), names)


def test_writers_keep_the_rows_as_sessions_come_and_go(server: SparqlServer, data: bytes) -> None:
    server.clear()
    write(server.url, data)
    before = same(server.url)
    secret = token()
    added = [one_agent_run(server.url, f"question {n} {secret if n == 11 else ''}",
                           collection=f"coll-{secret}" if n == 11 else "default") for n in range(12)]
    listed = same(server.url)  # at once: marked sessions are computed by the reader
    assert set(added) <= {r.id for r in listed} and len(listed) == len(before) + 12
    settled(server.url)
    assert [r.id for r in same(server.url, fresh=False, where=SessionFilter(text=secret))] == [added[11]]
    assert in_index(server, secret) == 2  # the row holds the text the filter searches (and the
    assert f"coll-{secret}" in collections(server.url)  # registry of collections, its collection)
    # erased: the row goes with the session, in the same update, and its collection's name
    assert main(["delete", added[11], "--store", server.url]) == 0
    assert in_index(server, secret) == 0
    assert f"coll-{secret}" not in collections(server.url)
    settled(server.url)  # the deleting writer computed what it marked
    listed = same(server.url, fresh=False)
    assert added[11] not in {r.id for r in listed} and len(listed) == len(before) + 11
    # lost: listed from the graph, then built again by the next writer
    server.update(f"DROP GRAPH <{GRAPH_SESSIONS}>")
    store = opened(server.url)
    try:
        assert TraceReader(store).session_index() is None
    finally:
        store.close()
    writer = open_for_writing(parse_store(server.url))  # a writer that writes nothing builds it
    try:
        settled(server.url)
    finally:
        writer.close()
    assert [r.id for r in same(server.url, fresh=False)] == [r.id for r in listed]


def test_exports_counts_and_queries_leave_the_index_out(server: SparqlServer, data: bytes,
                                                         capsysbinary: Any) -> None:
    server.clear()
    write(server.url, data)
    store = opened(server.url)
    try:
        assert server_sessions.built(store)
        assert GRAPH_SESSIONS.encode() not in store.dump("nquads")
        whole = store.count()
        assert whole == len(data.splitlines())
        assert store.run_query("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").rows[0]["n"].value == str(whole)
        assert not store.run_query(f"ASK {{ GRAPH <{GRAPH_SESSIONS}> {{ ?s ?p ?o }} }}").boolean
    finally:
        store.close()
    capsysbinary.readouterr()
    assert main(["query", "--store", server.url, "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"]) == 0
    assert GRAPH_SESSIONS.encode() not in capsysbinary.readouterr().out


def test_racing_writers_never_leave_an_older_row_unmarked(server: SparqlServer, data: bytes,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Writer A reads a session's marks and computes its row; meanwhile the session changes (a write
    and its mark) and writer B computes and stores the newer row.  A's update must change nothing."""
    server.clear()
    write(server.url, data)
    first = one_agent_run(server.url, "the race's question")
    settled(server.url)
    compute = server_sessions.compute
    a, b = opened(server.url), opened(server.url)
    try:
        query = "<https://trustgraph.ai/ns/query>"
        renamed = f"<{first}> {query} \"the race's question, asked again\" <{GRAPH_RETRIEVAL}> .\n"
        asked = f"<{first}> {query} \"the race's question\""
        server.update(f"DELETE DATA {{ GRAPH <{GRAPH_RETRIEVAL}> {{ {asked} }} }}")

        def meanwhile(store: Any, questions: Any) -> Any:
            rows = compute(store, questions)  # A's rows, of the data before
            if store is a:
                monkeypatch.setattr(server_sessions, "compute", compute)
                writer = sparql._open(parse_store(server.url))  # no rows of its own: B computes them
                try:
                    writer.add(renamed.encode(), 1)
                finally:
                    writer.close()
                assert sweep(b, None) >= 1  # B: the newer row, A's marks removed
            return rows

        server.update(f'INSERT DATA {{ GRAPH <{GRAPH_SESSIONS}> {{ <{first}> <{ROW}dirty> "a" }} }}')
        monkeypatch.setattr(server_sessions, "compute", meanwhile)
        assert sweep(a, [first]) == 1
    finally:
        a.close()
        b.close()
    listed = {r.id: r.question for r in same(server.url, fresh=False)}
    assert listed[first] == "the race's question, asked again"


def test_trustgraph_edges_are_triple_terms_on_the_server(server: SparqlServer, capsys: Any) -> None:
    """Profile ``trustgraph`` writes a GraphRAG Focus's selected edges as RDF 1.2 triple terms: the
    server takes them, gives them back (SPARQL 1.2's results) as the edges the example selected, and
    an erasure removes them with their session (its update names them)."""
    server.clear()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ProvSpanExporter(store=server.url, profile="trustgraph")))
    result = graph_rag(tracer_provider=provider)
    provider.shutdown()
    terms = "ASK { GRAPH ?g { ?s <https://trustgraph.ai/ns/edge> ?o FILTER(isTRIPLE(?o)) } }"
    store = opened(server.url)
    try:
        trace, _ = TraceReader(store).trace(result.explain_id)
        assert sorted(e.edge for step in trace.steps for e in step.edges if e.edge) == sorted(
            map(tuple, result.selected)) != []
        assert store.ask(terms)
    finally:
        store.close()
    capsys.readouterr()
    assert main(["show", result.explain_id, "--store", server.url]) == 0
    shown = "(" + ", ".join(part.rsplit("/", 1)[-1] for part in result.selected[0]) + ")"
    assert shown in capsys.readouterr().out  # "(Seine, flowsThrough, Paris)"
    assert main(["delete", result.explain_id, "--store", server.url]) == 0
    store = opened(server.url)
    try:
        assert not store.ask(terms)
        assert not store.ask("ASK { GRAPH ?g { ?s <https://trustgraph.ai/ns/selectedEdge> ?o } }")
    finally:
        store.close()
