"""Attacks on otel-prov's network surfaces and its store that the hardening pass (test_abuse.py,
test_faults.py) did not cover: each test is one finding, tried as an attacker, a careless operator or
an unlucky deployment would, on 127.0.0.1 only, bounded in count and time.  Real servers, real
clients, real stores and real processes."""

from __future__ import annotations

import http.server
import json
import logging
import os
import socket
import socketserver
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

import grpc
import pytest
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue, KeyValueList
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_prov import ProvSpanExporter, agent_session, spans_to_dataset
from otel_prov.cli import main as cli_main
from otel_prov.mapping import otlp
from otel_prov.mapping.spans import records_from_otlp
from otel_prov.serve.receiver import Receiver
from otel_prov.settings import UiSettings
from otel_prov.stores import parse_store, segments
from otel_prov.stores.oxigraph import OxigraphStore
from otel_prov.web import session_url
from tests.support.graphs import assert_isomorphic
from tests.support.procs import clean_env
from tests.support.serving import EXPORT, MIB, Make, agent_spans, request_of, stored
from tests.support.sparql_servers import question_count, start_oxigraph
from tests.support.stores import read_back
from tests.support.webdata import serve

# -- serve: hostile OTLP --------------------------------------------------------------------------


def _with_corrupt_nested_value(body: bytes, nested: bytes) -> tuple[bytes, int]:
    """``body`` with one more span (a copy of its first, another span id) whose attribute holds a
    key-value list of ``nested`` bytes, as a client writes it (protobuf reads it shallow: the nested
    bytes are only parsed when the span is mapped); and how many spans the request has."""
    request = otlp.ExportTraceServiceRequest.FromString(body)
    spans = request.resource_spans[0].scope_spans[0].spans
    bad = spans.add()
    bad.CopyFrom(spans[0])
    bad.span_id = b"\x0b" * 8
    value = bad.attributes.add()
    value.key = "bad"
    value.value.kvlist_value = nested
    return request.SerializeToString(), len(spans)


def test_a_corrupt_nested_value_rejects_its_span_for_good_not_the_request_for_ever(make_server: Make) -> None:
    """A nested value (an array or key-value list) is parsed only when its span is mapped.  Corrupt
    bytes there (or invalid UTF-8 in a nested string) were an "internal error": UNAVAILABLE / 503 with
    a retry delay, so the Collector retried the request for ever and none of it was stored.  It is
    one span that can never be accepted: rejected alone (partial success), the others stored."""
    server = make_server()
    spans = agent_spans()
    text = KeyValueList(values=[KeyValue(key="k", value=AnyValue(string_value="x"))]).SerializeToString()
    cases = {"corrupt wire format": b"\xff\xff\xff\xff", "invalid UTF-8": text.replace(b"x", b"\xff")}
    for what, nested in cases.items():
        body, count = _with_corrupt_nested_value(request_of(spans).SerializeToString(), nested)
        assert count == len(spans) + 1
        with grpc.insecure_channel(server.grpc_address) as channel:
            raw = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
            answer = ExportTraceServiceResponse.FromString(raw(body, timeout=20)).partial_success
        assert answer.rejected_spans == 1 and "not valid protobuf" in answer.error_message, (what, answer)
        resp = requests.post(f"http://{server.http_address}/v1/traces", data=body, timeout=20,
                             headers={"Content-Type": "application/x-protobuf"})
        assert resp.status_code == 200, (what, resp.status_code, resp.content[:200])
        assert ExportTraceServiceResponse.FromString(resp.content).partial_success.rejected_spans == 1
    assert_isomorphic(spans_to_dataset(spans), stored(server))  # the other spans, stored
    health = server.receiver.health()
    assert health["status"] == "ok" and health["acknowledged_requests"] == 4, health
    assert not any("unexpected" in kind for kind in health["problems"]), health["problems"]


# -- the web view ---------------------------------------------------------------------------------


@dataclass
class View:
    url: str
    store: Path
    session: str
    """The Question IRI of its one agent session."""


@pytest.fixture(scope="module")
def view(tmp_path_factory: pytest.TempPathFactory) -> Iterator[View]:
    """``otel-prov ui``'s app on a real server (127.0.0.1, a free port) over a store of one session."""
    store = tmp_path_factory.mktemp("attack-view") / "store"
    exporter = ProvSpanExporter(store=str(store))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with agent_session("What is 2+2?", tracer_provider=provider) as session:
        with session.iteration() as step:
            step.thought("add")
            step.action("calculator", {"expression": "2+2"})
            step.observation("4")
        session.conclude("4")
    provider.shutdown()
    running = serve(UiSettings(store=parse_store(str(store)), port=0, query_timeout=2.0))
    try:
        yield View(running.url, store, str(session.explain_id))
    finally:
        running.stop()


class _Listener:
    """A plain HTTP server on 127.0.0.1 that records every request it gets (what a SERVICE clause,
    or any other request the view should never make, would reach)."""

    def __init__(self) -> None:
        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the standard library's name
                hits.append(("GET", self.path))
                self.send_response(500)
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802
                hits.append(("POST", self.path))
                self.send_response(500)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = socketserver.TCPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_session_url_cannot_inject_sparql(view: View) -> None:
    """The IRI in ``/sessions/{iri}`` went into the reader's SPARQL as ``<{iri}>``: an IRI closing
    the ``>`` added any clause -- a ``SERVICE`` call to any URL (which the SPARQL page refuses), from
    a link or an ``<img>`` on any web site, since the view needs no token on loopback -- and other
    text made it fail with a traceback (500).  Now such an IRI is no session: 404."""
    listener = _Listener()
    try:
        injected = f"{view.session}> ?p ?o }} SERVICE <{listener.url}/ssrf> {{ ?a ?b ?c }} }} #"
        for iri in (injected, "urn:x y", "urn:a>b", 'urn:"', "urn:{x}"):
            for prefix in ("/sessions/", "/api/sessions/"):
                resp = requests.get(view.url + prefix + quote(iri, safe=""), timeout=30)
                assert resp.status_code == 404, (prefix, iri, resp.status_code, resp.text[:300])
                assert "not an IRI" in resp.text, resp.text[:300]
        assert listener.hits == []
    finally:
        listener.close()
    # What is an IRI still reads (percent-encoded characters included).
    assert requests.get(view.url + session_url(view.session), timeout=30).status_code == 200
    missing = requests.get(view.url + session_url("urn:trustgraph:agent:no%20such"), timeout=30)
    assert missing.status_code == 404 and "no trace" in missing.text


SLOW_QUERY = ("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g1 { ?a ?b ?c } GRAPH ?g2 { ?d ?e ?f } "
              "GRAPH ?g3 { ?h ?i ?j } GRAPH ?g4 { ?k ?l ?m } GRAPH ?g5 { ?n1 ?n2 ?n3 } }")
"""Hours of work for the store's engine (five copies of the graph joined): it runs until the view's
timeout stops it, holding one of the two query slots and a core meanwhile."""


def test_a_page_on_another_site_cannot_make_the_view_run_queries(view: View) -> None:
    """Without a token (the default on loopback) any web page the user visits could make the browser
    request ``/sparql?query=...`` (an ``<img>``, a form posted to it), again and again: two slow
    queries at a time held both query slots (503 for the user's own queries) and two cores, for as
    long as the page stayed open (before queries were killed at their timeout: for hours after).
    The browser says where a request comes from (``Sec-Fetch-Site``; ``Origin`` on a POST): from
    another site the view runs no query (403; the page shows the query, to run with its Run button)."""
    cross = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}
    for path in ("/sparql", "/api/sparql"):
        for headers in (cross, {**cross, "Sec-Fetch-Site": "same-site"}):
            resp = requests.get(view.url + path, params={"query": SLOW_QUERY}, headers=headers, timeout=30)
            assert resp.status_code == 403, (path, resp.status_code, resp.text[:300])
        posted = requests.post(view.url + path, data={"query": SLOW_QUERY}, timeout=30,
                               headers={"Origin": "http://evil.example"})
        assert posted.status_code == 403, (path, posted.status_code, posted.text[:300])
    page = requests.get(view.url + "/sparql", params={"query": SLOW_QUERY}, headers=cross, timeout=30)
    assert "another site" in page.text and "GRAPH ?g5" in page.text  # shown in the form, not run
    # Nothing was run: the slots are free, and the view's own requests run queries as before.
    ask = {"query": "ASK { ?s ?p ?o }"}
    for headers in ({}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}):
        resp = requests.get(view.url + "/api/sparql", params=ask, headers=headers, timeout=30)
        assert resp.status_code == 200 and resp.json()["boolean"] is True, (headers, resp.text[:300])
    host = view.url.removeprefix("http://")
    resp = requests.post(view.url + "/api/sparql", data=ask, headers={"Origin": f"http://{host}"}, timeout=30)
    assert resp.status_code == 200, resp.text[:300]


# -- the store ------------------------------------------------------------------------------------


def _export_session(store: Path, question: str) -> None:
    exporter = ProvSpanExporter(store=str(store))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with agent_session(question, tracer_provider=provider) as session:
        session.conclude("yes")
    provider.shutdown()


def _questions(store: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """``otel-prov list --format json``'s questions (it must succeed)."""
    capsys.readouterr()
    code = cli_main(["list", "--store", str(store), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return sorted(row["question"] for row in json.loads(out))


def test_stray_truncated_or_renamed_segment_files_do_not_stop_the_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    """One file in the log's directory named ``*.seg`` that is not a segment (empty, cut short of its
    header, garbage: a segment truncated by hand, a file copied there) made every reader fail with a
    traceback and every fold fail, for every writer's segments: nothing was indexed again and
    nothing could be read, until someone found the file.  It has no committed record (its header is
    not intact): readers pass over it, and the indexer sets it aside (``NAME.seg.bad``, logged) and
    folds the rest.  A segment renamed with digits that are not ASCII was the same (its number was
    unreadable)."""
    store = tmp_path / "store"
    _export_session(store, "before?")
    directory = segments.segments_dir(store)
    stray = {"aa-1-1-000001.seg": b"", "aa-1-2-000001.seg": segments.MAGIC[:3],
             "aa-1-3-000001.seg": b"not a segment at all\n" * 10}
    for name, data in stray.items():
        (directory / name).write_bytes(data)
    quad = b"<urn:trustgraph:x> <urn:p> \"renamed\" <urn:graph:retrieval> .\n"
    (directory / "bb-1-1-\u00b2\u00b3.seg").write_bytes(segments.MAGIC + segments.encode(segments.ADD, quad))
    with caplog.at_level(logging.WARNING):
        assert _questions(store, capsys) == ["before?"]  # a reader, nobody indexing
        _export_session(store, "after?")  # a writer: it folds the log as it closes
    assert _questions(store, capsys) == ["after?", "before?"]
    left = sorted(name for name in os.listdir(directory) if name.endswith((".seg", ".bad")))
    assert left == sorted(f"{name}.bad" for name in stray), left  # set aside, none deleted; the rest folded
    assert all((directory / f"{name}.bad").read_bytes() == data for name, data in stray.items())
    with read_back(store) as inner:
        assert any(q.object.value == "renamed" for q in inner.quads_for_pattern(None, None, None, None))
    assert any("not an otel-prov log segment" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("checkpoint",
                         [b"{not json", b'{"folded": []}', b'["x"]', b'{"folded": {"a.seg": "x"}}'])
def test_an_unreadable_checkpoint_is_folded_again_not_fatal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], checkpoint: bytes) -> None:
    """The checkpoint (how far each segment is folded) unreadable: every reader failed with a
    traceback and folding stopped for good.  Replaying a writer's operations from further back is
    harmless (each sets a quad's presence; docs/store.md), so it is read as empty, logged, and the
    next fold writes it again."""
    store = tmp_path / "store"
    _export_session(store, "before?")
    directory = segments.segments_dir(store)
    (directory / segments.CHECKPOINT).write_bytes(checkpoint)
    assert _questions(store, capsys) == ["before?"]
    _export_session(store, "after?")
    assert _questions(store, capsys) == ["after?", "before?"]
    assert isinstance(segments.load_checkpoint(directory), dict)
    assert json.loads((directory / segments.CHECKPOINT).read_bytes())["version"] == 1


def test_a_checkpoint_of_a_newer_format_is_refused_in_one_line_not_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A checkpoint's version was never checked: one written by a newer otel-prov was read as this
    one's.  Now readers refuse it in one line saying so, ``check`` reports it, a writer keeps what
    it is given in the log, and the file is left as it was."""
    store = tmp_path / "store"
    _export_session(store, "before?")
    path = segments.segments_dir(store) / segments.CHECKPOINT
    data = json.loads(path.read_bytes())
    assert data["version"] == segments.CHECKPOINT_VERSION
    newer = json.dumps({**data, "version": segments.CHECKPOINT_VERSION + 1}).encode()
    path.write_bytes(newer)
    capsys.readouterr()
    assert cli_main(["list", "--store", str(store)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "written by a newer otel-prov" in err
    assert cli_main(["check", "--store", str(store)]) == 1
    out, _ = capsys.readouterr()
    assert "damaged: the checkpoint" in out and "newer otel-prov" in out
    _export_session(store, "after?")  # appended to the log; folding it waits for the right version
    assert path.read_bytes() == newer
    path.write_bytes(json.dumps(data).encode())
    assert _questions(store, capsys) == ["after?", "before?"]


_FORKING_APP = """
import os, sys
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otel_prov import ProvSpanExporter, agent_session

exporter = ProvSpanExporter(store=sys.argv[1])  # built before the fork, as a preloaded app does
provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=50))

def work(who):
    for i in range(int(sys.argv[2])):
        with agent_session(f"{who} {i}?", tracer_provider=provider) as session:
            with session.iteration() as step:
                step.thought("t" * 2000)
                step.action("calculator", {"expression": f"{i}+1"})
                step.observation(str(i + 1))
            session.conclude(str(i + 1))

children = []
for k in range(3):
    pid = os.fork()
    if pid == 0:  # a worker
        code = 0
        try:
            work(f"worker{k}")
            code = 0 if provider.force_flush(20000) else 3
            provider.shutdown()
        except BaseException:
            code = 4
        finally:
            os._exit(code)
    children.append(pid)
work("master")
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
provider.shutdown()
print("children", codes)
"""


def test_workers_forked_from_a_process_with_an_open_exporter_lose_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A process that opened the store (an exporter built at import, as ``opentelemetry-instrument``
    or a preloaded gunicorn app does) and then forks workers: each worker inherited the parent's log
    segment and its index, RocksDB's handle included, and folded into it -- the index was corrupted
    (a worker's close: "Sst file size mismatch", "No such file") and every session was lost, though
    every ``export()`` had returned SUCCESS.  A forked process now lets the parent's segment and
    index be (never written, folded or closed there) and opens its own segment on first use."""
    store = tmp_path / "store"
    per_process = 5
    run = subprocess.run([sys.executable, "-c", _FORKING_APP, str(store), str(per_process)],
                         capture_output=True, text=True, timeout=180, env=clean_env())
    assert run.returncode == 0 and "children [0, 0, 0]" in run.stdout, run.stdout + run.stderr[-3000:]
    assert "Corruption" not in run.stderr and "failed" not in run.stderr, run.stderr[-3000:]
    questions = _questions(store, capsys)
    expected = sorted(f"{who} {i}?" for who in ("master", "worker0", "worker1", "worker2")
                      for i in range(per_process))
    assert questions == expected
    assert [n for n in os.listdir(segments.segments_dir(store)) if n.endswith(".seg")] == []  # all folded


def test_the_token_link_redirects_only_within_the_view(view: View) -> None:
    """``?token=`` sets the cookie and redirects to the same path without the token; a path starting
    ``//`` (or ``%2F%2F``) made that a redirect to another site (``Location: //evil.example/``)."""
    running = serve(UiSettings(store=parse_store(str(view.store)), port=0, token="s3cret"))
    try:
        for target in ("//evil.example/?token=s3cret", "/%2F%2Fevil.example?token=s3cret",
                       "/%2F/evil.example?token=s3cret", "/\\\\evil.example?token=s3cret"):
            with socket.create_connection(("127.0.0.1", running.port), timeout=10) as sock:
                sock.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                             .encode())
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
            head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower()
            assert head.startswith("http/1.1 303"), (target, head)
            location = next(line.split(":", 1)[1].strip() for line in head.split("\r\n")
                            if line.startswith("location:"))
            assert location.startswith("/") and not location.startswith(("//", "/\\")), (target, location)
            assert urljoin("http://127.0.0.1/", location).startswith("http://127.0.0.1/"), location
    finally:
        running.stop()


def test_a_request_of_many_invalid_spans_keeps_a_count_not_a_message_each() -> None:
    """A request's rejected spans were kept as one message each until it was answered (only the first
    and the count are sent): 8 million empty spans (a 15 MiB body) took ~0.9 GiB in messages on top of
    their decoding (serve's peak: 2.4 GiB, 1.5 GiB now).  Python's own allocations during the request
    (tracemalloc: deterministic, whatever the machine's speed) now stay those of one slice."""
    spans = b"\x12\x00" * 100_000  # ScopeSpans.spans, each empty: no trace id, no span id
    scope = b"\x12" + _varint(len(spans)) + spans
    request = otlp.ExportTraceServiceRequest.FromString(b"\x0a" + _varint(len(scope)) + scope)
    receiver = Receiver(OxigraphStore(None), "seed")
    try:
        tracemalloc.start()
        try:
            outcome = receiver.ingest(request)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        receiver.close()
    assert outcome.rejected_spans == 100_000 and "(and 99999 more)" in outcome.message
    assert outcome.message.startswith("100000 span(s) rejected: span '': trace_id must be 16 bytes")
    assert peak < 4 * MIB, f"{peak / MIB:.1f} MiB of Python objects for one request of empty spans"


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def test_text_that_is_not_utf8_is_replaced_not_the_whole_request_refused(make_server: Make) -> None:
    """Protobuf requires text to be UTF-8, and this receiver's parser refused a whole request for one
    bad byte (INVALID_ARGUMENT / 400: the client drops it for good).  The Collector does not check
    (open-telemetry/opentelemetry-collector#11449) and batches such a span, from an SDK that does not
    check either, with other agents' spans: every span of the batch was lost.  Now the bytes that are
    not UTF-8 are replaced by U+FFFD, as the exporter does with text Python cannot encode (OTEP 257's
    recommendation), and the rest is stored."""
    server = make_server()
    spans = agent_spans(3)
    body = request_of(spans).SerializeToString()
    assert body.count(b"question 1?") == 2 and body.count(b"thought 2.1") == 1
    # The same lengths (a space made a byte that is not UTF-8), so the wire format stays whole.
    bad = body.replace(b"question 1?", b"question\xff1?").replace(b"thought 2.1", b"thought\xc32.1")
    url = f"http://{server.http_address}/v1/traces"
    with grpc.insecure_channel(server.grpc_address) as channel:
        raw = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        answer = ExportTraceServiceResponse.FromString(raw(bad, timeout=20))
    assert not answer.HasField("partial_success"), answer
    resp = requests.post(url, data=bad, headers={"Content-Type": "application/x-protobuf"}, timeout=20)
    assert resp.status_code == 200, resp.content[:300]
    request = otlp.ExportTraceServiceRequest.FromString(body)
    for span in request.resource_spans[0].scope_spans[0].spans:
        for kv in span.attributes:
            text = kv.value.string_value
            if text in ("question 1?", "thought 2.1"):
                kv.value.string_value = text.replace(" ", "\ufffd")
    expected = spans_to_dataset(records_from_otlp(request.resource_spans)[0])
    assert_isomorphic(expected, stored(server))
    assert "text that is not UTF-8 (replaced by U+FFFD)" in server.receiver.health()["problems"]
    # Still undecodable: a body that is not protobuf at all.
    resp = requests.post(url, data=b"\x0a\x05abc", timeout=20,
                         headers={"Content-Type": "application/x-protobuf"})
    assert resp.status_code == 400


def test_an_offset_past_any_number_is_an_empty_page_not_a_500(view: View) -> None:
    """``/api/sessions?offset=`` went into the SPARQL ``OFFSET`` as given: past 2**64 the query did
    not parse, and the view answered 500 with a traceback in its log."""
    for offset in (10**23, 2**64, 2**63):
        resp = requests.get(view.url + "/api/sessions", params={"offset": offset}, timeout=30)
        assert resp.status_code == 200, (offset, resp.text[:200])
        assert resp.json()["sessions"] == [] and resp.json()["total"] == 1


def test_workers_forked_from_a_process_with_an_open_exporter_reach_a_remote_store(tmp_path: Path) -> None:
    """The same with a dataset on a SPARQL server as the store: a forked worker's exporter queued
    its spans for a writer thread the fork had not copied, and its HTTP connections were the
    parent's sockets.  ``export()`` returned SUCCESS and nothing of the workers reached the server.
    A forked process now starts its own writer thread and opens its own connections."""
    server = start_oxigraph(tmp_path)
    try:
        run = subprocess.run([sys.executable, "-c", _FORKING_APP, server.url, "5"],
                             capture_output=True, text=True, timeout=180, env=clean_env())
        assert run.returncode == 0 and "children [0, 0, 0]" in run.stdout, run.stdout + run.stderr[-3000:]
        assert "not everything could be stored" not in run.stderr, run.stderr[-3000:]
        assert question_count(server.url) == 4 * 5
    finally:
        server.stop()
