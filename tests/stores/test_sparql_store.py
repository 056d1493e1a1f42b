"""A dataset on a SPARQL server as the store (``otel_prov.stores.sparql``), against real servers
started here: the Oxigraph server and Apache Jena Fuseki (TDB2).

The same real spans of the example flows are written once to the embedded store and once to each
server; every read command (``list``, ``show``, ``export``, ``query``) must then print the same thing
from both.  Then: ``otel-prov serve`` writing to a server, a server that goes away and comes back,
bad data the server refuses, a wrong URL, credentials (Fuseki's basic authentication and its Shiro
roles), TLS (Fuseki over HTTPS), and a bearer token and client certificate checked by an
authenticating proxy in front of Oxigraph (which has no authentication of its own).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import ProvSpanExporter, StoreError, load_dataset, spans_to_dataset
from otel_prov.examples.rag import doc_rag, graph_rag
from otel_prov.examples.react_agent import PolicyError, run_agent
from otel_prov.ingest.exporter import NOT_CONFIRMED
from otel_prov.model.quads import nquads
from otel_prov.model.terms import iri, literal
from otel_prov.model.vocab import GRAPH_RETRIEVAL
from otel_prov.serve.server import Server
from otel_prov.settings import STORE, serve_settings
from otel_prov.stores import open_for_reading, open_for_writing, sparql
from tests.support.cli import Result, StopAfter, cli
from tests.support.cli import one_error_line as cli_one_error_line
from tests.support.graphs import assert_isomorphic, only_graph
from tests.support.procs import clean_env, free_port, serve_command
from tests.support.sparql_servers import (
    AuthProxy,
    Pki,
    SparqlServer,
    make_pki,
    question_count,
    start_fuseki,
    start_oxigraph,
)

KINDS = ("oxigraph", "fuseki")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sparql")


@pytest.fixture(scope="module")
def servers(workdir: Path) -> Iterator[dict[str, SparqlServer]]:
    started: dict[str, SparqlServer] = {}
    try:
        started["oxigraph"] = start_oxigraph(workdir)
        started["fuseki"] = start_fuseki(workdir)
        yield started
    finally:
        for server in started.values():
            server.stop()


# -- the same spans, embedded and remote ------------------------------------------------------------


@pytest.fixture(scope="module")
def spans() -> list[ReadableSpan]:
    """Real spans of every example flow: an agent (with a RAG sub-trace), GraphRAG, DocRAG, one in
    collection "other", an unfinished and a failed session."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    run_agent(tracer_provider=provider)
    graph_rag(tracer_provider=provider)
    doc_rag(tracer_provider=provider)
    doc_rag("Where does the Spree flow?", tracer_provider=provider, collection="other")
    run_agent("What is the population of Berlin?", tracer_provider=provider, max_steps=1)
    with pytest.raises(PolicyError):
        run_agent("What is the area of Italy?", policy=StopAfter(1), tracer_provider=provider)
    provider.shutdown()
    return list(memory.get_finished_spans())


def export_to(store: str, spans: list[ReadableSpan]) -> None:
    exporter = ProvSpanExporter(store=store)
    try:
        for start in range(0, len(spans), 7):  # several batches, as a BatchSpanProcessor sends them
            assert exporter.export(spans[start:start + 7]).name == "SUCCESS"
        assert exporter.force_flush()
    finally:
        exporter.shutdown()


@pytest.fixture(scope="module")
def embedded(workdir: Path, spans: list[ReadableSpan]) -> str:
    path = workdir / "embedded"
    export_to(str(path), spans)
    return str(path)


@pytest.fixture(scope="module", params=KINDS)
def remote(request: pytest.FixtureRequest, servers: dict[str, SparqlServer],
           spans: list[ReadableSpan]) -> str:
    server = servers[request.param]
    server.clear()
    export_to(server.url, spans)
    return server.url


def session_ids(capsysbinary: Any, store: str) -> list[str]:
    import json

    result = cli(capsysbinary, "list", "--store", store, "--format", "json")
    return [row["id"] for row in json.loads(result.out)]


SPARQL_SELECT = """SELECT ?q ?text ?time WHERE { ?q a tg:Question ; tg:query ?text .
  OPTIONAL { ?q prov:startedAtTime ?time } } ORDER BY ?text"""
EXACT, LINES, GRAPH, ERROR = "exact", "lines", "graph", "error"
READS = [
    (("list",), EXACT),
    (("list", "--format", "json"), EXACT),
    (("list", "--type", "agent"), EXACT),
    (("list", "--collection", "other", "--format", "json"), EXACT),
    (("list", "--limit", "2"), EXACT),
    (("export", "--format", "nquads"), LINES),  # a whole store comes in each store's own order
    (("export",), GRAPH),
    (("export", "--format", "trig"), GRAPH),
    (("export", "--format", "jsonld"), GRAPH),
    (("export", "--collection", "other", "--format", "nquads"), EXACT),
    (("query", SPARQL_SELECT), EXACT),
    (("query", SPARQL_SELECT, "--format", "json"), EXACT),
    (("query", SPARQL_SELECT, "--format", "csv"), EXACT),
    (("query", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"), EXACT),
    (("query", "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"), EXACT),
    (("query", "ASK { ?q a tg:AgentQuestion }", "--format", "json"), EXACT),
    (("query", "ASK { ?q a tg:NoSuchType }"), EXACT),
    (("query", "CONSTRUCT { ?q tg:query ?t } WHERE { ?q tg:query ?t }", "--format", "json"), LINES),
    (("query", "CONSTRUCT { ?q tg:query ?t } WHERE { ?q tg:query ?t }"), GRAPH),
    (("query", "SELECT * WHERE { ?s ?p }"), ERROR),
    (("query", "SELECT ?x WHERE { ?x a undeclared:Thing }"), ERROR),
    (("show", "urn:nothing:here"), EXACT),
]


def parsed(out: str, argv: tuple[str, ...]) -> Any:
    import rdflib

    fmt = argv[argv.index("--format") + 1] if "--format" in argv else "turtle"
    dataset = rdflib.Dataset()
    dataset.parse(data=out, format={"jsonld": "json-ld"}.get(fmt, fmt))
    return dataset


@pytest.mark.parametrize(("argv", "mode"), READS, ids=[" ".join(argv)[:60] for argv, _ in READS])
def test_reads_print_the_same_as_on_the_embedded_store(
        argv: tuple[str, ...], mode: str, embedded: str, remote: str, capsysbinary: Any) -> None:
    expected = cli(capsysbinary, *argv, "--store", embedded)
    actual = cli(capsysbinary, *argv, "--store", remote)
    assert actual.code == expected.code
    if mode == ERROR:
        # the same one line, except for the parser's own words on a server that is not Oxigraph
        said = ("otel-prov: error: SPARQL syntax error", "otel-prov: error: undeclared prefix")
        assert expected.code == 1 and expected.err.startswith(said)
        one_error_line(actual, "otel-prov: error:")
        assert actual.err.startswith(said), actual.err
        assert re.search(r"line 1\b.*\b(column|col) [1-9]\d?\b", actual.err, re.IGNORECASE), actual.err
        if not remote.endswith("/ds"):  # Oxigraph's parser: the very same line
            assert actual.err == expected.err
        return
    assert actual.err == expected.err
    assert expected.code == 0 and expected.out or argv[0] == "show"
    if mode == EXACT:
        assert actual.out == expected.out
    elif mode == LINES:
        assert sorted(actual.out.splitlines()) == sorted(expected.out.splitlines())
    else:
        assert_isomorphic(parsed(expected.out, argv), parsed(actual.out, argv))


@pytest.mark.parametrize("fmt", ["text", "json", "turtle", "trig", "jsonld", "dot", "svg"])
def test_show_prints_the_same_for_every_session(fmt: str, embedded: str, remote: str,
                                                capsysbinary: Any) -> None:
    ids = session_ids(capsysbinary, embedded)
    assert len(ids) == 6
    assert session_ids(capsysbinary, remote) == ids
    for iri_ in [*ids, ids[0] + "/i1"]:
        expected = cli(capsysbinary, "show", iri_, "--format", fmt, "--store", embedded)
        actual = cli(capsysbinary, "show", iri_, "--format", fmt, "--store", remote)
        assert expected.code == 0 or iri_.endswith("/i1")
        assert (actual.code, actual.out, actual.err) == (expected.code, expected.out, expected.err)


def test_the_web_view_reads_the_same(embedded: str, remote: str, spans: list[ReadableSpan],
                                     capsysbinary: Any) -> None:
    """``otel-prov ui``'s JSON API (the read side of the web view) over both stores."""
    import urllib.parse

    import requests

    from otel_prov.settings import ui_settings
    from tests.support.webdata import serve

    ids = session_ids(capsysbinary, embedded)
    trace_id = f"{spans[0].context.trace_id:032x}"
    paths = ["/api/sessions", "/api/sessions?type=agent", "/api/sessions?limit=2&offset=1",
             "/api/sessions?collection=other", "/api/sessions?q=Berlin", "/api/changes",
             f"/api/trace/{trace_id}", "/api/sessions/urn:nothing:here",
             "/api/sparql?query=" + urllib.parse.quote(SPARQL_SELECT)]
    paths += [f"/api/sessions/{urllib.parse.quote(i, safe=':')}" for i in ids]
    views = [serve(ui_settings(store=store, port=0)) for store in (embedded, remote)]
    try:
        for path in paths:
            expected, actual = (requests.get(view.url + path, timeout=30) for view in views)
            if path == "/api/changes":  # an opaque token (the embedded store's from its session index)
                assert actual.status_code == expected.status_code == 200
                assert actual.json()["stamp"] and expected.json()["stamp"]
                continue
            assert (actual.status_code, actual.json()) == (expected.status_code, expected.json()), path
    finally:
        for view in views:
            view.stop()


def test_export_of_sessions_and_load_dataset(embedded: str, remote: str, spans: list[ReadableSpan],
                                             capsysbinary: Any) -> None:
    ids = session_ids(capsysbinary, embedded)
    argv = ["export", "--format", "nquads"] + [a for i in ids[:3] for a in ("--session", i)]
    expected = cli(capsysbinary, *argv, "--store", embedded)
    actual = cli(capsysbinary, *argv, "--store", remote)
    assert actual.code == 0 and actual.out == expected.out and actual.out
    dataset = load_dataset(remote)
    assert_isomorphic(spans_to_dataset(spans), dataset)
    assert_isomorphic(load_dataset(embedded), dataset)


def test_any_sparql_server_through_insert_data_and_construct(
        servers: dict[str, SparqlServer], embedded: str, spans: list[ReadableSpan], capsysbinary: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """OTEL_PROV_STORE_SERVER=sparql: the dataset URL is the SPARQL endpoint for queries and updates
    (Fuseki's is), written with INSERT DATA, graphs read with CONSTRUCT."""
    server = servers["fuseki"]
    server.clear()
    monkeypatch.setenv("OTEL_PROV_STORE_SERVER", "sparql")
    store = open_for_writing(STORE.get(server.url))
    assert isinstance(store, sparql.SparqlStore) and store.server is sparql.SPARQL
    store.close()
    export_to(server.url, spans)
    for argv in [("list",), ("query", SPARQL_SELECT)]:
        expected = cli(capsysbinary, *argv, "--store", embedded)
        actual = cli(capsysbinary, *argv, "--store", server.url)
        assert actual.code == 0 and actual.out == expected.out
    argv = ("export", "--format", "trig")
    exported = cli(capsysbinary, *argv, "--store", server.url)
    expected = cli(capsysbinary, *argv, "--store", embedded)
    assert_isomorphic(parsed(expected.out, argv), parsed(exported.out, argv))
    ids = session_ids(capsysbinary, embedded)
    for iri_ in ids:
        assert cli(capsysbinary, "show", iri_, "--store", server.url).out == \
            cli(capsysbinary, "show", iri_, "--store", embedded).out
    server.clear()


# -- writing ----------------------------------------------------------------------------------------


def agent_request(n: int, tag: str = "") -> trace_service_pb2.ExportTraceServiceRequest:
    """``n`` agent sessions as one OTLP request (real SDK spans, encoded as the OTLP exporter does)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return encode_spans(agent_spans(n, tag))


def agent_spans(n: int, tag: str = "") -> list[ReadableSpan]:
    from otel_prov import agent_session

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for i in range(n):
        with agent_session(f"question {tag}{i}?", tracer_provider=provider) as session:
            with session.iteration() as step:
                step.thought(f"thinking about {tag}{i}")
                step.action("lookup", {"key": f"{tag}{i}"})
                step.observation(f"found {tag}{i}")
            session.conclude(f"answer {tag}{i}")
    provider.shutdown()
    return list(memory.get_finished_spans())


def export_grpc(port: int, request: trace_service_pb2.ExportTraceServiceRequest,
                timeout: float = 30.0) -> grpc.StatusCode:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        try:
            stub.Export(request, timeout=timeout)
            return grpc.StatusCode.OK
        except grpc.RpcError as exc:
            return exc.code()  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", [*KINDS, "oxigraph-bulk"])
def test_serve_writes_to_the_server(kind: str, servers: dict[str, SparqlServer],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    server = servers[kind.split("-")[0]]
    server.clear()
    if kind.endswith("bulk"):  # Oxigraph's bulk loader (not atomic; the same quads in the end)
        monkeypatch.setenv("OTEL_PROV_STORE_BULK_LOAD", "true")
    serve = Server(serve_settings(store=server.url, grpc_port=0, http_port="off"))
    store = serve.receiver.store
    assert isinstance(store, sparql.SparqlStore)
    assert ("no_transaction" in store.server.quads_params) is kind.endswith("bulk")
    try:
        requests = [agent_request(20, f"r{k}-") for k in range(5)]
        for request in requests:
            assert export_grpc(serve.grpc.port, request) == grpc.StatusCode.OK  # type: ignore[union-attr]
        # acknowledged = on the server, readable by another client right away
        assert question_count(server.url) == 100
    finally:
        assert serve.stop()
    expected = spans_to_dataset([s for r in requests for rs in r.resource_spans for ss in rs.scope_spans
                                 for s in ss.spans])
    assert_isomorphic(expected, load_dataset(server.url))


def test_serve_subprocess_prints_the_url_and_writes(servers: dict[str, SparqlServer], tmp_path: Path) -> None:
    """``otel-prov serve --store URL`` as a process: the listening line names the store without
    secrets, and SIGTERM drains into the server."""
    server = servers["oxigraph"]
    server.clear()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([*serve_command(), "--store", server.url, "--grpc-port", "0",
                                 "--http-port", "off"], stdout=out, stderr=subprocess.STDOUT,
                                env=clean_env({"OTEL_PROV_STORE_PASSWORD": "pa55word-never-shown",
                                               "OTEL_PROV_STORE_USER": "someone"}))
    try:
        deadline = time.monotonic() + 30
        while "listening" not in log.read_text() and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.05)
        line = next(li for li in log.read_text().splitlines() if "listening" in li)
        assert f"store={server.url}" in line
        port = int(line.split("grpc=")[1].split()[0].rsplit(":", 1)[1])
        assert export_grpc(port, agent_request(10)) == grpc.StatusCode.OK
    finally:
        proc.terminate()
        assert proc.wait(30) == 0, log.read_text()
    assert "pa55word" not in log.read_text()
    assert question_count(server.url) == 10


def test_a_server_that_goes_away_and_comes_back_loses_nothing(
        workdir: Path, caplog: pytest.LogCaptureFixture) -> None:
    """serve answers UNAVAILABLE (the client retries) while the server is down, logs the failure
    once, and everything acknowledged is on the server when it is back."""
    location = workdir / "comeback"
    server = start_oxigraph(workdir, location=location)
    port = server.port
    serve = Server(serve_settings(store=server.url, grpc_port=0, http_port="off", ack_timeout=5))
    grpc_port = serve.grpc.port  # type: ignore[union-attr]
    acknowledged = 0
    try:
        caplog.set_level(logging.WARNING, logger="otel_prov")
        assert export_grpc(grpc_port, agent_request(10, "before-")) == grpc.StatusCode.OK
        acknowledged += 10
        server.kill9()
        requests = [agent_request(10, f"down{k}-") for k in range(4)]
        for request in requests:  # the first is admitted and waits for its commit; then the store is failing
            assert export_grpc(grpc_port, request, timeout=10) == grpc.StatusCode.UNAVAILABLE
        failures = [r for r in caplog.records if "writing to the store failed" in r.getMessage()]
        assert len(failures) == 1, [r.getMessage() for r in failures]
        assert "cannot reach http://127.0.0.1" in failures[0].getMessage()
        server = start_oxigraph(workdir, location=location, port=port)
        # the clients retry; every request is acknowledged once the server is back
        for request in requests:
            deadline = time.monotonic() + 60
            while export_grpc(grpc_port, request) != grpc.StatusCode.OK:
                assert time.monotonic() < deadline
                time.sleep(0.5)
            acknowledged += 10
        assert question_count(server.url) == acknowledged == 50
        assert any("written to again" in r.getMessage() for r in caplog.records)
    finally:
        serve.stop()
        server.stop()


def test_the_exporter_keeps_what_it_could_not_write_until_the_server_is_back(workdir: Path) -> None:
    location = workdir / "exporter-comeback"
    server = start_oxigraph(workdir, location=location)
    exporter = ProvSpanExporter(store=server.url)
    try:
        exporter.export(agent_spans(5, "a-"))
        assert exporter.force_flush()
        server.stop()
        assert exporter.export(agent_spans(5, "b-")).name == "SUCCESS"  # queued, never raised
        assert not exporter.force_flush(timeout_millis=1500)
        assert exporter.stats()["store_failures"] >= 1
        server = start_oxigraph(workdir, location=location, port=server.port)
        assert exporter.force_flush(timeout_millis=30000)
    finally:
        exporter.shutdown()
    assert question_count(server.url) == 10
    server.stop()


def test_export_success_means_the_server_has_the_spans_when_it_waits(
        workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 2: on a store on a server ``export()`` answered SUCCESS once the spans were queued in
    memory (a ``kill -9`` then lost them).  Called by the SDK's ``BatchSpanProcessor`` (its own
    thread), or with ``OTEL_PROV_EXPORT_WAIT=always``, it now answers SUCCESS once the server has
    them, and FAILURE when the server does not confirm in time (they stay queued)."""
    location = workdir / "exporter-waits"
    server = start_oxigraph(workdir, location=location)
    monkeypatch.setenv("OTEL_PROV_EXPORT_WAIT", "always")
    exporter = ProvSpanExporter(store=server.url)
    try:
        assert exporter.export(agent_spans(3, "w-")).name == "SUCCESS"
        assert question_count(server.url) == 3  # no flush: SUCCESS meant stored
    finally:
        exporter.shutdown()
    monkeypatch.setenv("OTEL_PROV_EXPORT_WAIT", "auto")
    monkeypatch.setenv("OTEL_PROV_EXPORT_WAIT_TIMEOUT", "1")
    exporter = ProvSpanExporter(store=server.url)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=50))
    try:
        from otel_prov import agent_session

        server.stop()
        with agent_session("asked while the server is down?", tracer_provider=provider) as session:
            session.conclude("kept")
        # the batch thread exports it (after its 50 ms), waits a second, and says FAILURE
        deadline = time.monotonic() + 15
        while not exporter.stats()["problems"].get(NOT_CONFIRMED):
            assert time.monotonic() < deadline, "the batch thread's export was never refused"
            time.sleep(0.05)
        # the application's own thread is never held: a direct call answers once queued
        started = time.monotonic()
        assert exporter.export(agent_spans(1, "direct-")).name == "SUCCESS"
        assert time.monotonic() - started < 1.0
        server = start_oxigraph(workdir, location=location, port=server.port)
        with agent_session("asked once it is back?", tracer_provider=provider) as session:
            session.conclude("stored")
        assert provider.force_flush(30_000) and exporter.force_flush(30_000)
        assert question_count(server.url) == 6  # what was not confirmed was still stored
    finally:
        provider.shutdown()
    server.stop()


def test_quads_the_server_refuses_are_set_aside_and_the_rest_stored(
        servers: dict[str, SparqlServer], tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.setattr(sparql, "MAX_POST_BYTES", 2000)  # several parts
    good = [(iri(f"http://example.org/s{i}"), iri("http://example.org/p"), literal(f"v{i}"),
             iri(GRAPH_RETRIEVAL)) for i in range(200)]
    bad = b'<http://example.org/bad> <http://example.org/p> "unterminated <urn:graph:retrieval> .\n'
    data = nquads(good[:77]) + bad + nquads(good[77:])
    for kind, server in servers.items():
        server.clear()
        caplog.clear()
        store = open_for_writing(STORE.get(server.url))
        try:
            caplog.set_level(logging.ERROR, logger="otel_prov")
            store.add(data, 201)
            assert isinstance(store, sparql.SparqlStore) and store.rejected == 1
            assert store.count() == 200, kind
            assert store.rejected_file is not None and store.rejected_file.parent == tmp_path / "otel-prov"
            assert bad in store.rejected_file.read_bytes()
            assert len([r for r in caplog.records if "refused 1 quad" in r.getMessage()]) == 1
            # removing it again (a framework trace's update) is not retried for ever either
            bad_quad = ("<http://example.org/bad>", "<http://example.org/p>", '"unterminated',
                        iri(GRAPH_RETRIEVAL))
            store.remove([*good[:5], bad_quad, *good[5:10]])
            assert store.count() == 190
            assert any("refused to remove a quad" in r.getMessage() for r in caplog.records)
        finally:
            store.close()
            if store.rejected_file is not None:
                store.rejected_file.unlink()


def test_a_big_write_goes_in_parts_and_a_removal_follows_it(
        servers: dict[str, SparqlServer], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sparql, "MAX_POST_BYTES", 4096)
    monkeypatch.setattr(sparql, "MAX_UPDATE_QUADS", 50)
    quads = [(iri(f"http://example.org/s{i}"), iri("http://example.org/p"), literal(f"line\n{i} \"q\""),
              iri(GRAPH_RETRIEVAL)) for i in range(1000)]
    for server in servers.values():
        server.clear()
        store = open_for_writing(STORE.get(server.url))
        try:
            store.add(nquads(quads), len(quads))
            assert store.count(GRAPH_RETRIEVAL) == 1000
            store.remove(quads[:120])
            assert store.count(GRAPH_RETRIEVAL) == 880
            store.add(nquads(quads), len(quads))  # again: a set, nothing doubled
            assert store.count(GRAPH_RETRIEVAL) == 1000
        finally:
            store.close()
        assert len(server.nquads()) == len(quads)


# -- a wrong URL ------------------------------------------------------------------------------------


def one_error_line(result: Result, *needles: str, code: int = 1) -> str:
    """test_cli's check (one line, exit ``code``, nothing on stdout), and the line."""
    cli_one_error_line(result, *needles, code=code)
    return result.err.strip()


def test_a_wrong_url_is_one_line_at_start(servers: dict[str, SparqlServer], capsysbinary: Any,
                                          tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    one_error_line(cli(capsysbinary, "list", "--store", closed), closed, "cannot reach", "connection refused")
    nothing = servers["fuseki"].url.rsplit("/", 1)[0] + "/nothing"
    one_error_line(cli(capsysbinary, "list", "--store", nothing), f"no SPARQL dataset at {nothing}",
                   "names a dataset")
    one_error_line(cli(capsysbinary, "list", "--store", "http://user:secret@127.0.0.1:1/ds"),
                   "credentials do not go into the store URL", code=2)
    assert "secret" not in cli(capsysbinary, "list", "--store", "http://user:secret@127.0.0.1:1/ds").err
    # https:// to a plain-HTTP server: the handshake never ends; the message says why, with the
    # timeout it waited, not another one.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OTEL_PROV_STORE_TIMEOUT", "1")
        https = servers["oxigraph"].url.replace("http://", "https://", 1)
        one_error_line(cli(capsysbinary, "list", "--store", https), "within 1 s",
                       "the server speaks plain HTTP; give the URL with http://")
    # serve: exits 1 with one line, before listening
    done = subprocess.run([*serve_command(), "--store", closed, "--grpc-port", "0",
                           "--http-port", "off"], capture_output=True, text=True, timeout=60, env=clean_env())
    assert done.returncode == 1 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and closed in done.stderr, done.stderr
    with pytest.raises(StoreError, match="cannot reach"):
        ProvSpanExporter(store=closed)


def test_the_bulk_loader_is_for_oxigraph_only(servers: dict[str, SparqlServer], capsysbinary: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_PROV_STORE_BULK_LOAD", "yes")
    one_error_line(cli(capsysbinary, "list", "--store", servers["fuseki"].url), "OTEL_PROV_STORE_BULK_LOAD",
                   "Oxigraph")
    monkeypatch.setenv("OTEL_PROV_STORE_BULK_LOAD", "maybe")
    one_error_line(cli(capsysbinary, "list", "--store", servers["oxigraph"].url),
                   "OTEL_PROV_STORE_BULK_LOAD='maybe': expected true or false", code=2)


def test_a_server_that_is_not_sparql_or_redirects(capsysbinary: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """An HTTP server that is not a SPARQL endpoint (a web page), and one that redirects: a redirect
    is not followed (it would carry the credentials elsewhere)."""
    import http.server
    import threading

    class NotSparql(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            moved = self.path.startswith("/moved")
            body = b"" if moved else b"<html>hello</html>"
            self.send_response(308 if moved else 200)
            if moved:
                self.send_header("Location", "https://elsewhere.example/ds/query")
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    web = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotSparql)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{web.server_address[1]}"
    try:
        one_error_line(cli(capsysbinary, "list", "--store", base), "did not answer with SPARQL JSON results")
        monkeypatch.setenv("OTEL_PROV_STORE_SERVER", "fuseki")
        monkeypatch.setenv("OTEL_PROV_STORE_TOKEN", "s3cret-token")
        line = one_error_line(cli(capsysbinary, "list", "--store", base + "/moved"), "redirects (HTTP 308)",
                              "https://elsewhere.example/ds/query", "not followed")
        assert "s3cret" not in line
    finally:
        web.shutdown()
        web.server_close()


# -- credentials and TLS ----------------------------------------------------------------------------


def test_basic_authentication(workdir: Path, spans: list[ReadableSpan], capsysbinary: Any,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    passwd = workdir / "passwd"
    passwd.write_text("writer: s3cret-pw\n")
    server = start_fuseki(workdir, name="fuseki-passwd", args=("--passwd", str(passwd), "--auth", "basic"),
                          auth=("writer", "s3cret-pw"))
    try:
        line = one_error_line(cli(capsysbinary, "list", "--store", server.url), server.url, "HTTP 401",
                              "needs credentials", "OTEL_PROV_STORE_USER")
        monkeypatch.setenv("OTEL_PROV_STORE_USER", "writer")
        monkeypatch.setenv("OTEL_PROV_STORE_PASSWORD", "wrong-pw")
        line = one_error_line(cli(capsysbinary, "list", "--store", server.url), "refused the credentials")
        assert "wrong-pw" not in line
        with pytest.raises(StoreError, match="refused the credentials"):
            ProvSpanExporter(store=server.url)
        monkeypatch.setenv("OTEL_PROV_STORE_PASSWORD", "s3cret-pw")
        export_to(server.url, spans[:20])
        result = cli(capsysbinary, "list", "--store", server.url)
        assert result.code == 0 and "Session ID" in result.out
        assert repr(STORE.get(server.url)).count("s3cret") == 0
    finally:
        server.stop()


SHIRO = """[main]
securityManager.subjectDAO.sessionStorageEvaluator.sessionStorageEnabled = false
[users]
writer = w-pass, rw
reader = r-pass, ro
[roles]
rw = *
ro = *
[urls]
/ds/query = noSessionCreation, authcBasic
/ds/get = noSessionCreation, authcBasic
/ds/** = noSessionCreation, authcBasic, roles[rw]
/ds = noSessionCreation, authcBasic, roles[rw]
/** = noSessionCreation, authcBasic
"""


def test_a_reader_may_read_but_not_write(workdir: Path, spans: list[ReadableSpan], capsysbinary: Any,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Fuseki with Shiro roles: the writer writes; the reader reads (list, export through the
    read-only graph store) and is refused at the start of writing, with one line."""
    shiro = workdir / "shiro.ini"
    shiro.write_text(SHIRO)
    server = start_fuseki(workdir, name="fuseki-shiro", args=("--shiro", str(shiro)),
                          auth=("writer", "w-pass"))
    try:
        monkeypatch.setenv("OTEL_PROV_STORE_USER", "writer")
        monkeypatch.setenv("OTEL_PROV_STORE_PASSWORD", "w-pass")
        export_to(server.url, spans)
        monkeypatch.setenv("OTEL_PROV_STORE_USER", "reader")
        monkeypatch.setenv("OTEL_PROV_STORE_PASSWORD", "r-pass")
        assert cli(capsysbinary, "list", "--store", server.url).code == 0
        exported = cli(capsysbinary, "export", "--store", server.url)
        assert exported.code == 0 and exported.out.count("\n") > 100
        with pytest.raises(StoreError, match="can be written.*HTTP 40[13]") as info:
            ProvSpanExporter(store=server.url)
        assert "\n" not in str(info.value) and "r-pass" not in str(info.value)
        done = subprocess.run([*serve_command(), "--store", server.url, "--grpc-port", "0",
                               "--http-port", "off"], capture_output=True, text=True, timeout=60,
                              env=clean_env({"OTEL_PROV_STORE_USER": "reader",
                                             "OTEL_PROV_STORE_PASSWORD": "r-pass"}))
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "can be written" in done.stderr and "r-pass" not in done.stderr
    finally:
        server.stop()


@pytest.fixture(scope="module")
def pki(workdir: Path) -> Pki:
    return make_pki(workdir / "pki")


def test_tls(workdir: Path, pki: Pki, spans: list[ReadableSpan], capsysbinary: Any,
             monkeypatch: pytest.MonkeyPatch) -> None:
    """Fuseki over HTTPS: verified with OTEL_PROV_STORE_CA; without it, or with the wrong CA, one line."""
    server = start_fuseki(workdir, name="fuseki-https", https=pki)
    try:
        assert server.url.startswith("https://")
        one_error_line(cli(capsysbinary, "list", "--store", server.url), "TLS", "OTEL_PROV_STORE_CA")
        monkeypatch.setenv("OTEL_PROV_STORE_CA", str(pki.other_ca))
        one_error_line(cli(capsysbinary, "list", "--store", server.url), "TLS", "certificate verify failed")
        monkeypatch.setenv("OTEL_PROV_STORE_CA", str(pki.ca))
        export_to(server.url, spans[:30])
        assert cli(capsysbinary, "list", "--store", server.url).code == 0
        monkeypatch.setenv("OTEL_PROV_STORE_CA", str(workdir / "no-such-ca.pem"))
        one_error_line(cli(capsysbinary, "list", "--store", server.url), "OTEL_PROV_STORE_CA", "no such file",
                       code=2)
    finally:
        server.stop()


def test_bearer_token_and_client_certificate(
        servers: dict[str, SparqlServer], pki: Pki, spans: list[ReadableSpan], embedded: str,
        capsysbinary: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Oxigraph behind an HTTPS proxy that checks a bearer token and a client certificate."""
    upstream = servers["oxigraph"]
    upstream.clear()
    proxy = AuthProxy(upstream.url, "t0ken-value", pki)
    try:
        monkeypatch.setenv("OTEL_PROV_STORE_CA", str(pki.ca))
        monkeypatch.setenv("OTEL_PROV_STORE_TOKEN", "t0ken-value")
        one_error_line(cli(capsysbinary, "list", "--store", proxy.url), "TLS")  # no client certificate
        monkeypatch.setenv("OTEL_PROV_STORE_CLIENT_CERT", str(pki.client_cert))
        monkeypatch.setenv("OTEL_PROV_STORE_CLIENT_KEY", str(pki.client_key))
        export_to(proxy.url, spans)
        expected = cli(capsysbinary, "list", "--store", embedded)
        assert cli(capsysbinary, "list", "--store", proxy.url).out == expected.out
        # detected through the proxy: it passes the server's own headers on
        store = open_for_reading(STORE.get(proxy.url))
        assert isinstance(store, sparql.SparqlStore) and store.server is sparql.OXIGRAPH
        store.close()
        monkeypatch.setenv("OTEL_PROV_STORE_TOKEN", "wrong-t0ken")
        line = one_error_line(cli(capsysbinary, "list", "--store", proxy.url), "HTTP 401",
                              "refused the credentials")
        assert "t0ken" not in line
        assert proxy.refused >= 1
    finally:
        proxy.close()


def test_remote_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from otel_prov.errors import ConfigError

    monkeypatch.setenv("OTEL_PROV_STORE_TOKEN", "t")
    monkeypatch.setenv("OTEL_PROV_STORE_USER", "u")
    with pytest.raises(ConfigError, match="either OTEL_PROV_STORE_TOKEN"):
        STORE.get("http://127.0.0.1:1")
    monkeypatch.delenv("OTEL_PROV_STORE_TOKEN")
    with pytest.raises(ConfigError, match="needs both"):
        STORE.get("http://127.0.0.1:1")
    monkeypatch.setenv("OTEL_PROV_STORE_PASSWORD", "p")
    monkeypatch.setenv("OTEL_PROV_STORE_TIMEOUT", "0")
    with pytest.raises(ConfigError, match="OTEL_PROV_STORE_TIMEOUT='0'"):
        STORE.get("http://127.0.0.1:1")
    monkeypatch.setenv("OTEL_PROV_STORE_TIMEOUT", "2.5")
    monkeypatch.setenv("OTEL_PROV_STORE_SERVER", "virtuoso")
    with pytest.raises(ConfigError, match="OTEL_PROV_STORE_SERVER='virtuoso': expected auto or one of"):
        STORE.get("http://127.0.0.1:1")
    monkeypatch.setenv("OTEL_PROV_STORE_SERVER", "Fuseki")
    spec = STORE.get("HTTP://127.0.0.1:1/ds/")
    assert str(spec) == "http://127.0.0.1:1/ds"
    assert spec.remote is not None and spec.remote.server == "fuseki" and spec.remote.timeout == 2.5
    assert "'p'" not in repr(spec) and spec.remote.password == "p"
    assert spec.rescue_dir == Path(os.environ["XDG_DATA_HOME"]) / "otel-prov"
    assert STORE.get(str(tmp_path / "x")).remote is None  # only a store on a server gets them
    with pytest.raises(ConfigError) as info:
        STORE.get("https://me:pa55@example.org/ds")
    assert "pa55" not in str(info.value) and "***@" in str(info.value)


def test_no_server_needed_to_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """The URL forms: a dataset URL without query, fragment or credentials."""
    from otel_prov.stores import check_url

    assert check_url("https://Example.org:8443/a/ds/") == "https://Example.org:8443/a/ds"
    for bad in ("http://", "http://h/ds?x=1", "http://h/ds#f", "http://h:99999/ds", "ftp://h/ds"):
        with pytest.raises(ValueError):
            check_url(bad)




# -- holds, erasure and retention on a server ------------------------------------------------------


def _listed_traces(capsysbinary: Any, store: str) -> dict[str, str]:
    """Trace id -> session id of every session listed."""
    import json

    result = cli(capsysbinary, "list", "--store", store, "--format", "json", "--limit", "1000")
    assert result.code == 0, result.err
    return {row["traceId"]: row["id"] for row in json.loads(result.out)}


def _trace_of(spans: list[ReadableSpan]) -> str:
    return f"{spans[0].context.trace_id:032x}"  # type: ignore[union-attr]


@pytest.mark.parametrize("kind", KINDS)
def test_hold_delete_and_prune_on_a_server(kind: str, servers: dict[str, SparqlServer],
                                           capsysbinary: Any) -> None:
    """The same commands as on the embedded store, through DELETE DATA: what stays is exactly the
    graph of the sessions that stay (every hold and erasure recorded beside it), a held session is
    refused by name, and prune keeps it and the recent ones."""
    from tests.support.erasing import aged, agent

    server = servers[kind]
    server.clear()
    keep = [agent(f"keep {k}") for k in range(11)]
    gone, held = agent("to be erased"), aged(agent("old but held"), 400)
    old = [aged(agent(f"old {k}"), 40) for k in range(3)]
    for spans in [*keep, gone, held, *old]:
        export_to(server.url, spans)
    listed = _listed_traces(capsysbinary, server.url)
    assert len(listed) == 16
    assert cli(capsysbinary, "hold", "add", listed[_trace_of(held)], "--store", server.url,
               "--reason", "litigation").code == 0
    r = cli(capsysbinary, "delete", _trace_of(gone), "--store", server.url, "--reason", "a person asked")
    assert r.code == 0 and f"deleted {listed[_trace_of(gone)]} (" in r.err, r.err
    refused = cli(capsysbinary, "delete", _trace_of(held), "--store", server.url)
    assert refused.code == 1 and "is held" in refused.err and "litigation" in refused.err, refused.err
    pruned = cli(capsysbinary, "prune", "--older-than", "30d", "--store", server.url)
    assert pruned.code == 0 and pruned.err.count("deleted ") == 3 and "1 held session kept" in pruned.err
    staying = [*keep, held]
    assert set(_listed_traces(capsysbinary, server.url)) == {_trace_of(s) for s in staying}
    stored = load_dataset(server.url)
    explained = only_graph(stored, GRAPH_RETRIEVAL)
    assert_isomorphic(spans_to_dataset([s for spans in staying for s in spans]), explained)
    erasures = cli(capsysbinary, "query", "--store", server.url, "--format", "json",
                   "SELECT ?q ?why WHERE { GRAPH <urn:graph:erasures> { ?q prov:wasInvalidatedBy ?e . "
                   "?e rdfs:comment ?why } }")
    import json

    rows = json.loads(erasures.out)["results"]["bindings"]
    reasons = sorted(row["why"]["value"] for row in rows)
    assert reasons == ["a person asked"] + ["retention: older than 30d"] * 3, reasons


def test_serve_prunes_a_server_by_itself(servers: dict[str, SparqlServer], capsysbinary: Any) -> None:
    from tests.support.erasing import aged, agent

    server = servers["oxigraph"]
    server.clear()
    old, fresh = [aged(agent(f"old {k}"), 40) for k in range(12)], [agent(f"fresh {k}") for k in range(2)]
    for spans in [*old, *fresh]:
        export_to(server.url, spans)
    serve = Server(serve_settings(store=server.url, grpc_port=0, http_port="off", prune_older_than="30d",
                                  prune_interval="1s"))
    try:
        deadline = time.monotonic() + 60
        while question_count(server.url) != len(fresh) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        assert serve.stop()
    assert set(_listed_traces(capsysbinary, server.url)) == {_trace_of(s) for s in fresh}
    assert serve.pruner is not None and serve.pruner.erased == 12
