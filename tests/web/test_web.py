"""``otel-prov ui`` over HTTP: a real uvicorn server on a free 127.0.0.1 port, a store filled by real
spans, and plain HTTP requests (the browser tests are in test_browser.py)."""

from __future__ import annotations

import html
import io
import json
import os
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import rdflib
import requests

from otel_prov import ConfigError
from otel_prov import attributes as A
from otel_prov.cli import main
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import SpanRecord
from otel_prov.model.quads import nquads
from otel_prov.read.model import SessionFilter
from otel_prov.read.reader import TraceReader
from otel_prov.serve.guards import HOST_REFUSED
from otel_prov.settings import UiSettings, ui_settings
from otel_prov.stores import parse_store
from otel_prov.stores.oxigraph import OxigraphStore
from otel_prov.web import app as web_app
from otel_prov.web import runner, session_url
from tests.support.cli import OTHER_SERVICE
from tests.support.webdata import ESC, LONG, SCRIPT, Recorded, long_session, record, serve


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return record(tmp_path_factory.mktemp("web") / "store")


def _config(path: Path, **kw: Any) -> UiSettings:
    values: dict[str, Any] = {"store": parse_store(str(path)), "port": 0,
                              "jaeger_url": "http://127.0.0.1:16686"}
    values.update(kw)
    return UiSettings(**values)


@pytest.fixture(scope="module")
def view(recorded: Recorded) -> Iterator[str]:
    running = serve(_config(recorded.path))
    yield running.url
    running.stop()


class _Tags(HTMLParser):
    """Every start tag of a page (to check that no text became markup)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def get(url: str, **kw: Any) -> requests.Response:
    return requests.get(url, timeout=kw.pop("timeout", 30), allow_redirects=kw.pop("allow_redirects", True),
                        **kw)


# -- the list ---------------------------------------------------------------------------------------


def test_list_newest_first_with_status_marks(view: str, recorded: Recorded) -> None:
    r = get(view + "/")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    page = r.text
    order = [page.index(quote(iri, safe=":/")) for iri in
             (recorded.hostile, recorded.failed, recorded.unfinished, recorded.other.explain_id,
              recorded.docs.explain_id, recorded.graph.explain_id, recorded.agent.explain_id)]
    assert order == sorted(order), "newest first"
    assert "8 sessions" not in page and "7 sessions" in page  # the agent's sub-trace is not listed
    rows = re.findall(r'<tr class="status-(\w+)">', page)
    assert sorted(rows) == sorted(["complete"] * 5 + ["unfinished", "error"])
    assert '<span class="badge unfinished">unfinished</span>' in page
    assert '<span class="badge error">error</span>' in page
    assert [t for t, a in tags(page) if t == "script"] == ["script"]  # ours, /static/app.js, only
    assert "data-live" in page


def test_list_filters_and_paging(view: str, recorded: Recorded, monkeypatch: pytest.MonkeyPatch) -> None:
    def ids(**params: str) -> list[str]:
        data = get(view + "/api/sessions", params=params).json()
        return [s["id"] for s in data["sessions"]]

    assert ids(type="docrag") == [recorded.other.explain_id, recorded.docs.explain_id]
    assert ids(collection="other") == [recorded.other.explain_id]
    assert ids(q="SPREE") == [recorded.other.explain_id]  # any case
    assert ids(type="graphrag", q="capital") == [recorded.graph.explain_id]
    times = get(view + "/api/sessions").json()["sessions"]
    middle = times[3]["time"][:19]  # to the second, as a bound is read
    assert ids(since=middle) == [t["id"] for t in times if t["time"][:19] >= middle]
    assert ids(until=middle) == [t["id"] for t in times if t["time"][:19] <= middle]
    assert ids(since="2999-01-01") == []
    page = get(view + "/", params={"q": "nothing like this"}).text
    assert "No session matches these filters (7 in the store)" in page
    data = get(view + "/api/sessions", params={"offset": "2", "limit": "3"}).json()
    assert (data["total"], data["offset"], data["limit"]) == (7, 2, 3)
    assert [s["id"] for s in data["sessions"]] == [t["id"] for t in times[2:5]]
    monkeypatch.setattr(web_app, "PAGE_SIZE", 3)
    second = get(view + "/", params={"page": "2"}).text
    assert "page 2 of 3" in second and "4–6 shown" in second
    assert times[3]["id"] in second and times[0]["id"] not in second
    assert 'rel="prev"' in second and 'rel="next"' in second


DAY = 86_400 * 10**9


def test_session_filters_are_applied_by_the_store() -> None:
    """Text (any case), a time range whose bounds may be cut short, type, collection, paging."""
    store = OxigraphStore(None)
    t0 = 1_796_034_066_024_000_000  # 2026-11-30T10:21:06.024Z; then a day apart
    questions = {1: "What is the Capital?", 2: "Which river?", 3: "How tall is it?"}
    records = [SpanRecord(trace_id=n, span_id=n, name="invoke_agent", start_ns=t0 + (n - 1) * DAY,
                          end_ns=t0 + (n - 1) * DAY + 1, attributes={
                              A.FLOW: A.FLOW_AGENT if n != 3 else A.FLOW_DOC_RAG, A.STEP: A.STEP_SESSION,
                              A.QUESTION: text, A.COLLECTION: "c2" if n == 2 else "default",
                              **({A.ANSWER: "Paris"} if n == 1 else {})})
               for n, text in questions.items()]
    quads = TraceMapper("seed").map(records).add
    store.add(nquads(quads), len(quads))
    reader = TraceReader(store)

    def listed(**kwargs: Any) -> list[str]:
        return [row.question for row in reader.sessions(**kwargs)]

    assert listed() == ["How tall is it?", "Which river?", "What is the Capital?"]  # newest first
    assert listed(where=SessionFilter(text="capital")) == ["What is the Capital?"]
    assert listed(where=SessionFilter(since="2026-11-30T10:21", until="2026-12-01")) == [
        "Which river?", "What is the Capital?"]
    assert listed(where=SessionFilter(since="2026-11-30T10:21:06")) == listed()
    assert listed(where=SessionFilter(since="2026-11-30T10:21:07")) == ["How tall is it?", "Which river?"]
    assert listed(where=SessionFilter(until="2026-11-30T10:21:06")) == ["What is the Capital?"]
    assert listed(where=SessionFilter(until="2026-11-30T10:21:05")) == []
    assert listed(where=SessionFilter(until="2026-11-29")) == []
    assert listed(kind="DocRAG") == ["How tall is it?"]
    assert listed(collection="c2") == ["Which river?"]
    assert listed(limit=1, offset=1) == ["Which river?"]
    assert reader.count_sessions() == 3 and reader.count_sessions(kind="Agent") == 2
    assert reader.collections() == ["c2", "default"]
    assert [row.status for row in reader.sessions()] == ["unfinished", "unfinished", "complete"]


def test_list_json_is_the_cli_json(view: str, recorded: Recorded, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--store", str(recorded.path), "--format", "json"]) == 0
    cli_rows = json.loads(capsys.readouterr().out)
    assert get(view + "/api/sessions", params={"limit": "100"}).json()["sessions"] == cli_rows


# -- one session ------------------------------------------------------------------------------------


def test_session_page_shows_question_steps_answer_subtrace_picture(view: str, recorded: Recorded) -> None:
    agent = recorded.agent
    r = get(view + session_url(agent.explain_id))
    assert r.status_code == 200
    page = r.text
    assert "What is the population density of the capital of France?" in page
    for n in range(1, 7):
        assert f"<h3>Analysis {n}</h3>" in page
    assert page.count("<dt>Thought</dt>") >= 6
    assert "<code>kg_lookup</code>" in page and "<code>calculator</code>" in page
    assert '<pre class="arguments">{\n  &#34;' in page  # arguments pretty-printed
    assert "<h3>Conclusion</h3>" in page and agent.answer.split(":")[0] in page
    # The answer once, at the top (the Conclusion step points to it), not twice.
    assert page.count(html.escape(agent.answer, quote=False)) == 1 and 'href="#answer"' in page
    assert '<details class="subtrace">' in page and "Sub-trace: DocRAG" in page
    assert '<a id="jaeger-link" class="button" href="http://127.0.0.1:16686/trace/' \
           f'{agent.trace_id}"' in page
    svg = re.search(r'<div class="picture" id="picture">(.*?)</div>', page, re.S)
    assert svg is not None
    root = ET.fromstring(svg.group(1))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    for fmt in ("text", "json", "turtle", "trig", "jsonld", "dot", "svg"):  # every format of show
        assert f"?format={fmt}" in page


def test_session_page_says_why_the_answer_as_explain_does(view: str, recorded: Recorded,
                                                          capsysbinary: Any) -> None:
    """The lineage of the answer, on the page as ``otel-prov explain`` prints it (escaped), every
    step and the sub-trace's answer in it; a session without an answer has none."""
    from tests.support.cli import cli

    agent = recorded.agent
    page = get(view + session_url(agent.explain_id)).text
    why = re.search(r'<pre class="lineage">(.*?)</pre>', page, re.S)
    assert why is not None and '<details class="lineage" id="why">' in page
    printed = cli(capsysbinary, "explain", agent.explain_id, "--store", str(recorded.path))
    assert printed.code == 0
    assert html.unescape(why.group(1)) == printed.out.split("\n", 2)[2]  # without its heading
    for n in range(1, 7):
        assert f"Analysis {n}  " in why.group(1)
    assert "ran: Synthesis" in why.group(1)


def test_downloads_parse(view: str, recorded: Recorded) -> None:
    iri = recorded.docs.explain_id
    base = view + session_url(iri)
    for fmt, parser in (("turtle", "turtle"), ("trig", "trig"), ("jsonld", "json-ld")):
        r = get(base, params={"format": fmt})
        assert r.status_code == 200, r.text
        assert r.headers["content-disposition"].startswith("attachment; filename=")
        data = rdflib.Dataset()
        data.parse(data=r.text, format=parser)
        assert (rdflib.URIRef(iri), None, None) in data or any(
            s == rdflib.URIRef(iri) for s, _, _, _ in data.quads((None, None, None, None)))
        if fmt != "turtle":
            assert {str(g) for _, _, _, g in data.quads((None, None, None, None))} == {"urn:graph:retrieval"}
    svg = get(base, params={"format": "svg"})
    assert svg.headers["content-type"].startswith("image/svg+xml")
    ET.fromstring(svg.content)
    assert get(base, params={"format": "nope"}).status_code == 400
    aliased = get(base, params={"format": "ttl"})  # the usual short name, as the CLI takes it
    assert aliased.status_code == 200 and aliased.text == get(base, params={"format": "turtle"}).text
    for fmt in ("text", "json", "dot"):
        assert get(base, params={"format": fmt}).status_code == 200


def test_a_step_iri_redirects_to_its_session(view: str, recorded: Recorded) -> None:
    step = recorded.agent.explain_id + "/i2"
    r = get(view + session_url(step), allow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == session_url(recorded.agent.explain_id)


def test_unfinished_and_failed_sessions_are_marked(view: str, recorded: Recorded) -> None:
    unfinished = get(view + session_url(recorded.unfinished)).text
    assert '<span class="badge unfinished">unfinished</span>' in unfinished
    assert "No Conclusion recorded" in unfinished and "data-live" in unfinished
    failed = get(view + session_url(recorded.failed)).text
    assert '<span class="badge error">error</span>' in failed
    assert "the model went away" in failed


def test_session_json_is_the_cli_json(view: str, recorded: Recorded,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    iri = recorded.agent.explain_id
    assert main(["show", iri, "--store", str(recorded.path), "--format", "json",
                 "--jaeger-url", "http://127.0.0.1:16686"]) == 0
    assert get(view + "/api/sessions/" + quote(iri, safe=":/")).json() == json.loads(capsys.readouterr().out)
    missing = get(view + "/api/sessions/urn:trustgraph:agent:nope")
    assert missing.status_code == 404 and "no trace" in missing.json()["error"]


def test_unknown_session_is_a_clear_404(view: str) -> None:
    r = get(view + "/sessions/urn:trustgraph:agent:00000000-0000-0000-0000-000000000000")
    assert r.status_code == 404
    assert "No such session" in r.text and "otel-prov list" in r.text
    assert get(view + "/no/such/page").status_code == 404
    assert get(view + "/api/no/such").json() == {"error": "nothing at /api/no/such"}


# -- Jaeger trace ids -------------------------------------------------------------------------------


def test_trace_id_resolves_to_its_session(view: str, recorded: Recorded) -> None:
    for trace_id in (recorded.agent.trace_id, recorded.agent.trace_id.upper()):
        r = get(view + f"/trace/{trace_id}", allow_redirects=False)
        assert r.status_code == 303
        # the sub-trace shares the trace id: the top-level session is the one shown
        assert r.headers["location"] == session_url(recorded.agent.explain_id)
    api = get(view + f"/api/trace/{recorded.graph.trace_id}").json()
    assert api == {"traceId": recorded.graph.trace_id, "session": recorded.graph.explain_id,
                   "url": session_url(recorded.graph.explain_id)}
    # the short id Jaeger's search page shows, as the CLI and /sessions/ take it
    short = recorded.graph.trace_id[:8].upper()
    assert get(view + f"/api/trace/{short}").json() == api
    r = get(view + f"/trace/{short}", allow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == session_url(recorded.graph.explain_id)


def test_a_method_not_allowed_is_said_as_the_rest(view: str) -> None:
    """405 was Starlette's bare text, where every other API error is JSON and every page a page."""
    r = requests.delete(view + "/api/sessions", timeout=10)
    assert r.status_code == 405 and r.headers["content-type"].startswith("application/json")
    assert r.json() == {"error": "DELETE is not allowed on /api/sessions (only GET, HEAD)"}
    assert r.headers["allow"] == "GET, HEAD"
    r = requests.put(view + "/", timeout=10)
    assert r.status_code == 405 and r.headers["content-type"].startswith("text/html")
    assert "Method not allowed" in r.text


@pytest.mark.parametrize("trace_id", ["0" * 32, "not-a-trace-id", "abc"])
def test_unknown_trace_id_is_a_clear_404(view: str, trace_id: str) -> None:
    r = get(view + f"/trace/{trace_id}")
    assert r.status_code == 404
    assert "No session for this trace" in r.text
    assert ("not a trace id" in r.text) == (trace_id != "0" * 32)
    assert get(view + f"/api/trace/{trace_id}").status_code == 404


# -- SPARQL -----------------------------------------------------------------------------------------


def test_sparql_page_and_api(view: str, recorded: Recorded) -> None:
    page = get(view + "/sparql").text
    assert "PREFIX tg: &lt;https://trustgraph.ai/ns/&gt;" in page
    assert "PREFIX otelprov:" in page and "a query is stopped after 10 s" in page
    query = "SELECT ?q ?text WHERE { ?q a tg:Question ; tg:query ?text } ORDER BY ?q"
    r = requests.post(view + "/sparql", data={"query": query}, timeout=30)
    assert r.status_code == 200
    assert "8 rows" in r.text  # 7 sessions and the agent's sub-trace
    assert f'href="{session_url(recorded.graph.explain_id)}"' in r.text
    api = get(view + "/api/sparql", params={"query": query})
    assert api.headers["content-type"].startswith("application/sparql-results+json")
    assert api.json()["head"]["vars"] == ["q", "text"]
    assert len(api.json()["results"]["bindings"]) == 8
    bad = get(view + "/sparql", params={"query": "SELEC nothing"})
    assert bad.status_code == 400 and "a query starts with SELECT" in bad.text
    bad = get(view + "/sparql", params={"query": "SELECT ?x WHERE { ?x ?p }"})
    assert bad.status_code == 400 and "SPARQL syntax error at line 1, column 26" in bad.text
    bad = get(view + "/sparql", params={"query": "SELECT ?x WHERE { ?x foo:bar ?y }"})
    assert bad.status_code == 400 and "undeclared prefix &#39;foo:&#39;" in bad.text
    bad = get(view + "/sparql", params={"query": "INSERT DATA { <urn:a> <urn:b> <urn:c> }"})
    assert bad.status_code == 400 and "updates are not allowed here" in bad.text
    assert get(view + "/api/sparql", params={"query": "SELEC"}).status_code == 400
    ask = get(view + "/api/sparql", params={"query": "ASK { ?s tg:query ?q }"}).json()
    assert ask["boolean"] is True
    construct = "CONSTRUCT { ?q tg:query ?t } WHERE { ?q tg:query ?t }"
    graph = get(view + "/api/sparql", params={"query": construct})
    assert graph.headers["content-type"].startswith("application/ld+json")
    assert len(rdflib.Graph().parse(data=graph.text, format="json-ld")) == 8
    rows = get(view + "/api/sparql", params={"query": construct, "format": "csv"}).text.splitlines()
    assert rows[0] == "subject,predicate,object" and len(rows) == 9


def _query_processes() -> list[int]:
    """This process's children running a query (multiprocessing's spawned interpreters)."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
            cmdline = (status.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields.get("PPid", "0").strip()) == os.getpid() and b"spawn_main" in cmdline:
            found.append(int(status.parent.name))
    return found


def test_sparql_row_limit_and_timeout(recorded: Recorded) -> None:
    running = serve(_config(recorded.path, row_limit=3, query_timeout=0.2))
    try:
        r = get(running.url + "/sparql", params={"query": "SELECT * WHERE { ?s ?p ?o }"})
        assert "3 rows (cut at the row limit, 3: more rows matched)" in r.text
        api = get(running.url + "/api/sparql", params={"query": "SELECT * WHERE { ?s ?p ?o }"}).json()
        assert len(api["results"]["bindings"]) == 3 and api["truncated"] is True
        heavy = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
        started = time.monotonic()
        slow = get(running.url + "/sparql", params={"query": heavy})
        assert slow.status_code == 504 and "did not finish within 0.2 s" in slow.text
        assert time.monotonic() - started < 15
        # The abandoned query does not go on using a core: its process is gone.
        assert _query_processes() == []
        for _ in range(3):  # and the view's query slots are free again
            assert get(running.url + "/sparql", params={"query": heavy}).status_code == 504
        assert get(running.url + "/api/sparql", params={"query": "ASK { ?s ?p ?o }"}).json()["boolean"]
    finally:
        running.stop()


# -- hostile content --------------------------------------------------------------------------------


def test_hostile_text_is_escaped_everywhere(view: str, recorded: Recorded) -> None:
    for url in (view + "/", view + "/?q=Hostile", view + session_url(recorded.hostile)):
        page = get(url).text
        assert [t for t, _ in tags(page) if t == "script"] == ["script"], url  # /static/app.js only
        assert "&lt;script&gt;window.__pwned" in page, url
        assert "\x1b" not in page and "\\x1b[31mred\\x1b[0m" in page, url
        assert "\x00" not in page
    session = get(view + session_url(recorded.hostile)).text
    assert LONG in session  # kept whole (the page wraps it)
    assert '<pre class="arguments">' in session and "&#34;q&#34;: &#34;&lt;script&gt;" in session
    svg = re.search(r'<div class="picture" id="picture">(.*?)</div>', session, re.S)
    assert svg is not None
    root = ET.fromstring(svg.group(1))
    assert not root.findall(".//{http://www.w3.org/2000/svg}script")
    assert SCRIPT.split(">")[0] not in svg.group(1)  # escaped in the picture too
    assert ESC not in session


def test_security_headers_and_host_check(view: str) -> None:
    r = get(view + "/")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["x-content-type-options"] == "nosniff"
    rebound = get(view + "/api/sessions", headers={"Host": "attacker.example:8080"})
    assert (rebound.status_code, rebound.text) == (403, HOST_REFUSED)  # serve's answer, from the same check
    assert get(view + "/api/sessions", headers={"Host": "localhost:1234"}).status_code == 200


def test_token(recorded: Recorded) -> None:
    running = serve(_config(recorded.path, token="s3cret"))
    try:
        url = running.url
        assert get(url + "/api/sessions").status_code == 401
        assert get(url + "/api/sessions", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert get(url + "/api/sessions", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        page = get(url + "/")
        assert page.status_code == 401 and 'name="token"' in page.text
        assert get(url + "/static/style.css").status_code == 200
        with requests.Session() as browser:
            signed = browser.get(url + "/?type=agent&token=s3cret", allow_redirects=False, timeout=30)
            assert signed.status_code == 303 and signed.headers["location"] == "/?type=agent"
            assert "httponly" in signed.headers["set-cookie"].lower()
            assert "s3cret" not in signed.headers["set-cookie"]
            assert browser.get(url + "/", timeout=30).status_code == 200
            assert browser.get(url + f"/trace/{recorded.agent.trace_id}", timeout=30).status_code == 200
        assert get(url + "/?token=wrong").status_code == 401
    finally:
        running.stop()


def test_non_loopback_needs_a_token_or_an_explicit_yes(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match="refusing to listen on 0.0.0.0 without a token"):
        ui_settings(store=str(tmp_path), host="0.0.0.0")
    assert ui_settings(store=str(tmp_path), host="0.0.0.0", token="t").token == "t"
    assert ui_settings(store=str(tmp_path), host="0.0.0.0", public_without_token=True).host == "0.0.0.0"
    assert ui_settings(store=str(tmp_path), host="::1").host == "::1"
    assert main(["ui", "--store", str(tmp_path), "--host", "0.0.0.0"]) == 2  # a bad value: a usage error
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--public-without-token" in err
    with pytest.raises(ConfigError, match="memory"):
        ui_settings(store="memory:")


# -- read-only, live --------------------------------------------------------------------------------


def test_missing_store_is_an_empty_state_and_never_created(tmp_path: Path) -> None:
    path = tmp_path / "nothing-here"
    running = serve(_config(path))
    try:
        page = get(running.url + "/")
        assert page.status_code == 200 and "No store yet." in page.text
        assert get(running.url + "/api/sessions").status_code == 404
        assert get(running.url + "/api/changes").json() == {"stamp": "none"}
        assert get(running.url + "/sparql", params={"query": "ASK {}"}).status_code == 404
        assert get(running.url + f"/trace/{'1' * 32}").status_code == 404
    finally:
        running.stop()
    assert not path.exists()


def test_new_sessions_show_while_a_writer_holds_the_store(tmp_path: Path) -> None:
    """An exporter keeps the store open (as an agent process does); the view, opening it for each
    request, lists what it writes and its change stamp moves."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from otel_prov import ProvSpanExporter, graph_rag_session

    path = tmp_path / "store"
    exporter = ProvSpanExporter(store=str(path))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    running = serve(_config(path))
    try:
        with graph_rag_session("First question?", tracer_provider=provider) as first:
            first.exploration([("a", "b", "c")])
        assert exporter.force_flush()
        stamp = get(running.url + "/api/changes").json()["stamp"]
        assert [s["id"] for s in get(running.url + "/api/sessions").json()["sessions"]] == [first.explain_id]
        page = get(running.url + "/").text
        assert "unfinished" in page
        # The page carries the stamp of what it shows, so a change before its first poll refreshes it.
        assert re.search(r'data-stamp="([^"]*)"', page).group(1) == stamp  # type: ignore[union-attr]
        with graph_rag_session("Second question?", tracer_provider=provider) as second:
            second.exploration([("a", "b", "c")])
            second.synthesis("done")
        assert exporter.force_flush()
        assert get(running.url + "/api/changes").json()["stamp"] != stamp
        rows = get(running.url + "/api/sessions").json()["sessions"]
        assert [s["id"] for s in rows] == [second.explain_id, first.explain_id]
    finally:
        running.stop()
        provider.shutdown()


def test_ten_thousand_steps(tmp_path: Path) -> None:
    steps = 10_000
    iri = long_session(tmp_path / "store", steps)
    running = serve(_config(tmp_path / "store"))
    slow = 180  # a page reads the whole trace (110,000 triples): 9-20 s here, over 30 s under CI's load
    try:
        started = time.monotonic()
        page = get(running.url + session_url(iri), timeout=slow)
        took = time.monotonic() - started
        assert page.status_code == 200
        assert page.text.count('<article class="step kind-analysis') == web_app.STEPS_PER_PAGE
        assert f"steps 1–{web_app.STEPS_PER_PAGE} of {steps + 1}" in page.text
        assert "too many to draw here" in page.text
        last = get(running.url + session_url(iri), params={"steps": str(steps - 100)}, timeout=slow).text
        assert "<h3>Analysis 10000</h3>" in last and "<h3>Conclusion</h3>" in last
        data = get(running.url + "/api/sessions/" + quote(iri, safe=":/"), timeout=slow).json()
        assert len(data["steps"]) == steps + 1
        print(f"\n10,000-step session page: {took:.2f} s; {len(page.content) / 1e6:.1f} MB")
    finally:
        running.stop()


def test_runner_reports_a_busy_port() -> None:
    first = runner.start(web_app.Starlette(), "127.0.0.1", 0)
    try:
        with pytest.raises(OSError):
            runner.start(web_app.Starlette(), "127.0.0.1", first.port)
    finally:
        first.stop()


def test_svg_download_of_a_strict_session_is_readable(tmp_path: Path) -> None:
    recorded_strict = record(tmp_path / "strict", profile="strict")
    running = serve(_config(recorded_strict.path))
    try:
        svg = get(running.url + session_url(recorded_strict.agent.explain_id), params={"format": "svg"})
        root = ET.fromstring(svg.content)
        labels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text") if t.get("class") == "rel"]
        assert "wasAssociatedWith" in labels
    finally:
        running.stop()


def test_the_ui_command_serves_until_sigterm(recorded: Recorded, tmp_path: Path) -> None:
    import sys

    from tests.support.procs import start, wait_until

    proc = start("otel-prov ui", [sys.executable, "-m", "otel_prov.cli", "ui", "--store", str(recorded.path),
                                  "--port", "0"], tmp_path / "ui.log")
    try:
        found = wait_until(lambda: re.search(r"otel-prov ui: serving (http://127\.0\.0\.1:\d+)/ \(store ",
                                             proc.log.read_text()), 30, "the view", proc=proc)
        assert "7 sessions" in get(found.group(1) + "/").text
    finally:
        assert proc.terminate() == 0, proc.tail()


# -- a newcomer's first hour (issue 13) -------------------------------------------------------------


@pytest.mark.parametrize("path", ["garbage", "a%20b", "urn:x%3E", "urn:x%22", "xyz", "urn:x%25zz",
                                  "urn:x%3E%20%7D%20SERVICE%20%3Chttp://127.0.0.1:1/%3E%20%7B"])
def test_a_malformed_iri_is_a_clear_404_never_sparql(view: str, path: str) -> None:
    page = get(view + "/sessions/" + path)
    assert page.status_code == 404
    assert "No such session" in page.text and "not an IRI" in page.text
    api = get(view + "/api/sessions/" + path)
    assert api.status_code == 404 and api.json()["error"].startswith("not an IRI: ")


def test_a_trace_id_in_a_session_url_redirects_to_its_session(view: str, recorded: Recorded) -> None:
    r = get(view + f"/sessions/{recorded.agent.trace_id}", allow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == session_url(recorded.agent.explain_id)


def test_a_store_that_cannot_be_read_is_a_clear_page(tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """The store becomes a file while the view runs (any StoreError): every page says so, /api answers
    {"error": ...}, one log line each, never a traceback."""
    path = tmp_path / "store"
    running = serve(_config(path))
    try:
        assert get(running.url + "/").status_code == 200  # no store yet: fine
        path.write_text("a file now\n")
        for page in ("/", "/sessions/urn:trustgraph:agent:x", "/sparql?query=ASK%20%7B%7D"):
            r = get(running.url + page)
            assert r.status_code == 503, (page, r.status_code, r.text[:300])
            assert "is a file, not a store" in r.text
            assert "The store cannot be read" in r.text or page.startswith("/sparql")
            assert r.headers["content-type"].startswith("text/html")
            assert r.headers["x-frame-options"] == "DENY"
        for api in ("/api/sessions", "/api/sessions/urn:trustgraph:agent:x", f"/api/trace/{'1' * 32}",
                    "/api/sparql?query=ASK%20%7B%7D", "/api/changes"):
            r = get(running.url + api)
            assert r.status_code == 503 and "is a file, not a store" in r.json()["error"], api
    finally:
        running.stop()
    failures = [r for r in caplog.records if "the store cannot be read" in r.getMessage()]
    assert failures and not any(r.exc_info for r in failures)


def test_the_ui_command_refuses_a_store_it_cannot_read_at_start(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a store\n")
    assert main(["ui", "--store", str(a_file), "--port", "0"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"otel-prov: error: {a_file} is a file, not a store (a store is a directory); "
                            "check --store, OTEL_PROV_STORE, or ProvSpanExporter(store=...)\n")


def test_no_store_yet_suggests_the_store_of_the_view(tmp_path: Path) -> None:
    path = tmp_path / "my store"
    running = serve(_config(path))
    try:
        page = get(running.url + "/").text
    finally:
        running.stop()
    assert f"otel-prov demo --store &#39;oxigraph:{path}&#39;" in page
    assert f"OTEL_PROV_STORE=&#39;oxigraph:{path}&#39;" in page


def test_sparql_select_star_columns_in_the_query_order(view: str) -> None:
    query = "SELECT * WHERE { ?zeta tg:query ?alpha . ?zeta otelprov:traceId ?mid } LIMIT 1"
    api = get(view + "/api/sparql", params={"query": query}).json()
    assert api["head"]["vars"] == ["zeta", "alpha", "mid"]
    page = get(view + "/sparql", params={"query": query}).text
    assert re.findall(r"<th>(\w+)</th>", page) == ["zeta", "alpha", "mid"]


def test_a_token_is_never_printed(recorded: Recorded, tmp_path: Path) -> None:
    """The token given through the environment stays out of stdout and logs; the line says one is needed."""
    import sys

    from tests.support.procs import start, wait_until

    command = [sys.executable, "-m", "otel_prov.cli", "ui", "--store", str(recorded.path), "--port", "0"]
    proc = start("otel-prov ui", command, tmp_path / "ui.log", env={"OTEL_PROV_UI_TOKEN": "s3cret-t0ken"})
    try:
        found = wait_until(lambda: re.search(r"otel-prov ui: serving (http://127\.0\.0\.1:\d+)/ \(.*\)\n",
                                             proc.log.read_text()), 30, "the view", proc=proc)
        assert "a token is required: open it once with ?token=... in a browser" in found.group(0)
        url = found.group(1)
        assert get(url + "/").status_code == 401
        assert get(url + "/", headers={"Authorization": "Bearer s3cret-t0ken"}).status_code == 200
    finally:
        assert proc.terminate() == 0, proc.tail()
    assert "s3cret-t0ken" not in proc.log.read_text()


def test_demo_ui_checks_its_port_before_running_anything(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    busy = socket.create_server(("127.0.0.1", 0))
    port = busy.getsockname()[1]
    store = tmp_path / "store"
    try:
        code = main(["demo", "--ui", "--port", str(port), "--store", str(store)])
    finally:
        busy.close()
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert captured.err == (f"otel-prov: error: cannot listen on 127.0.0.1:{port}: Address already in use "
                            "(choose another with --port or OTEL_PROV_UI_PORT)\n")
    assert not store.exists()  # nothing ran


def _post_raw(url: str, head: str, chunks: Iterator[bytes]) -> tuple[int, int]:
    """Sends a POST's head, then its body chunk by chunk until the view answers or stops reading;
    the status it answered and how many body bytes it was sent."""
    import select
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(url)
    sent = 0
    with socket.create_connection((where.hostname, where.port), timeout=30) as sock:
        sock.sendall(head.encode())
        for chunk in chunks:
            if select.select([sock], [], [], 0)[0]:
                break  # it answered before the body ended
            try:
                sock.sendall(chunk)
            except OSError:
                break
            sent += len(chunk)
        sock.settimeout(30)
        answer = b""
        while b"\r\n" not in answer:
            part = sock.recv(4096)
            if not part:
                break
            answer += part
    return int(answer.split(b" ", 2)[1]), sent


def test_a_posted_body_is_read_only_up_to_its_limit(view: str) -> None:
    """A POST body is read in bounded pieces: a declared length over 1 MiB is refused before any of it
    is read, and a chunked body without one is no longer read past 1 MiB (a 2 GiB POST took the view
    to 4 GiB when it read every body whole before looking at it)."""
    host = view.split("//", 1)[1]
    status, _ = _post_raw(view, f"POST /api/sparql HTTP/1.1\r\nHost: {host}\r\nContent-Type: "
                                "application/x-www-form-urlencoded\r\nContent-Length: 2147483648\r\n\r\n",
                          iter([b"query=" + b"x" * 1000]))
    assert status == 413

    def chunked(total: int) -> Iterator[bytes]:
        piece = b"x" * (1 << 20)
        for _ in range(total >> 20):
            yield b"%x\r\n" % len(piece) + piece + b"\r\n"

    for path in ("/api/sparql", "/sparql"):
        head = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded"
                "\r\nTransfer-Encoding: chunked\r\n\r\n")
        status, sent = _post_raw(view, head, chunked(512 << 20))
        assert status == 413, path
        assert sent < 128 << 20, sent  # it stopped reading: the rest was never sent


@pytest.mark.parametrize("host,token,allowed,names", [
    # Every loopback address is loopback (127.0.0.2 answered 421 to everything).
    ("127.0.0.2", None, (), {"127.0.0.2": 200, "localhost": 200, "attacker.example": 403}),
    # Public without a token: the check still holds (it was off), and --allowed-hosts names the view.
    ("0.0.0.0", None, ("view.example",), {"view.example": 200, "attacker.example": 403, "10.1.2.3": 200}),
    ("127.0.0.1", None, ("*",), {"attacker.example": 200}),
])
def test_the_views_host_check_is_serves(recorded: Recorded, host: str, token: str | None,
                                         allowed: tuple[str, ...], names: dict[str, int]) -> None:
    running = serve(_config(recorded.path, host=host, token=token, allowed_hosts=allowed))
    try:
        port = running.url.rsplit(":", 1)[1]
        for name, status in names.items():
            address = "127.0.0.1" if host == "0.0.0.0" else host
            r = get(f"http://{address}:{port}/api/sessions", headers={"Host": f"{name}:{port}"})
            assert r.status_code == status, (host, name, r.status_code)
    finally:
        running.stop()


def test_ui_allowed_hosts_flag_and_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    given = ui_settings(allowed_hosts="a.example,B.example", via="flag")
    assert given.allowed_hosts == ("a.example", "b.example")
    monkeypatch.setenv("OTEL_PROV_UI_ALLOWED_HOSTS", "c.example")
    assert ui_settings().allowed_hosts == ("c.example",)


def test_a_query_that_needs_too_much_memory_is_stopped_in_its_own_process(recorded: Recorded) -> None:
    """Two cartesian ORDER BY queries took the view's query processes to 6.8 GiB within their timeout;
    each now has an address-space limit (1 GiB beyond the open store) and is answered 507."""
    running = serve(_config(recorded.path, query_timeout=60.0))
    try:
        heavy = ("SELECT ?a ?b ?c ?d ?e WHERE { ?a ?p1 ?o1 . ?b ?p2 ?o2 . ?c ?p3 ?o3 . ?d ?p4 ?o4 . "
                 "?e ?p5 ?o5 } ORDER BY ?a ?b ?c ?d ?e")
        started = time.monotonic()
        r = get(running.url + "/api/sparql", params={"query": heavy})
        assert r.status_code == 507, r.text[:300]
        assert "needed more than 1024 MiB of memory" in r.json()["error"]
        assert time.monotonic() - started < 60
        assert get(running.url + "/api/sparql", params={"query": "ASK { ?s ?p ?o }"}).json()["boolean"]
    finally:
        running.stop()


@pytest.mark.parametrize("query,reason", [
    ("type=bogus", "type='bogus': one of agent, docrag, graphrag"),
    ("since=yesterday", "since='yesterday': expected an ISO 8601 time"),
    ("until=2026-13", "until='2026-13': expected an ISO 8601 time"),
    ("limit=abc", "limit='abc': expected a whole number"),
    ("limit=0", "limit=0: expected 1 to 1000"),
    ("offset=-1", "offset=-1: expected 0 or more"),
    ("text=paris", "unknown parameter 'text': the filters are type, collection,"),  # (q= is the text)
])
def test_a_bad_filter_is_a_400_with_its_reason(view: str, query: str, reason: str) -> None:
    """``?type=bogus`` gave every session and ``?since=yesterday`` an empty list that read as "no
    sessions"; the CLI refuses such values, and so do the API and the list page now."""
    api = get(view + "/api/sessions?" + query)
    assert api.status_code == 400 and api.json()["error"].startswith(reason), api.text[:200]
    if not query.startswith(("limit", "offset", "text")):
        page = get(view + "/?" + query)
        assert page.status_code == 400 and reason.split(":")[0] in html.unescape(page.text)
    assert get(view + "/api/sessions?type=agent&since=2026-01-01").status_code == 200


def test_the_list_page_names_a_parameter_it_does_not_apply(view: str) -> None:
    """``/?text=paris`` listed every session as if they all held "paris" (the text filter is q=),
    with nothing on the page to say so: it is still a page (links carry other parameters), and says
    which parameters it did not apply."""
    page = html.unescape(get(view + "/?text=paris&limit=5").text)
    assert "Not a filter, so not applied: limit, text. The filters are type, collection," in page
    assert "(q: the text)" in page
    everything = html.unescape(get(view + "/").text)
    count = re.search(r'<p class="count">([^<]*)</p>', everything)
    assert count and count.group(1) in page  # every session listed, as the page says
    for query in ("q=paris&page=1", "type=agent&sort=steps", ""):
        assert 'id="ignored"' not in get(view + "/?" + query).text, query
    many = html.unescape(get(view + "/?" + "&".join(f"x{i:02d}=1" for i in range(30))).text)
    assert "not applied: x00, x01, x02, x03, x04, x05, x06, x07, x08, x09, .... The filters" in many


def test_a_long_observation_starts_folded(tmp_path: Path) -> None:
    """A 20-line observation was shown whole, pushing the next steps off the screen: past 10 lines it
    is folded (its first line and its length), the whole text one click away."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from otel_prov import ProvSpanExporter, agent_session

    store = tmp_path / "store"
    exporter = ProvSpanExporter(store=store)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    lines = "\n".join(f"row {n}" for n in range(20))
    with agent_session("long?", tracer_provider=provider) as session:
        with session.iteration() as step:
            step.thought("look")
            step.action("table", {})
            step.observation(lines)
        with session.iteration() as step:
            step.thought("short")
            step.action("one", {})
            step.observation("one line")
        session.conclude("done")
    provider.shutdown()
    running = serve(_config(store))
    try:
        page = get(running.url + session_url(session.explain_id)).text
    finally:
        running.stop()
    folded = ('<details class="long"><summary class="text observation">row 0 '
              '<span class="hint">(20 lines)</span>')
    assert folded in page
    assert "row 19" in page  # the whole text is on the page, folded
    assert '<div class="text observation">one line</div>' in page


def test_the_list_and_the_api_filter_by_status_text_and_tool(view: str, recorded: Recorded) -> None:
    """The same filters as the CLI's: status, words of any recorded text, a tool (a model, an agent)."""
    def ids(**params: str) -> set[str]:
        r = get(view + "/api/sessions", params=params)
        assert r.status_code == 200, r.text
        return {row["id"] for row in r.json()["sessions"]}

    assert ids(status="unfinished") == {recorded.unfinished}
    assert ids(status="failed") == {recorded.failed}
    assert ids(status="error") == {recorded.failed} == ids(status="FAILED", type="Agent", sort="Steps")
    assert ids(q="19949.2") == {recorded.agent.explain_id}  # only in an observation
    assert recorded.agent.explain_id in ids(tool="calculator") and ids(tool="nothing") == set()
    assert ids(service=OTHER_SERVICE) == {recorded.other.explain_id}
    assert get(view + "/api/sessions", params={"status": "broken"}).status_code == 400
    page = get(view + "/", params={"status": "unfinished"}).text
    assert recorded.unfinished in page and recorded.agent.explain_id not in page
    assert 'name="tool"' in page and 'name="status"' in page and 'name="service"' in page
    page = get(view + "/", params={"service": OTHER_SERVICE}).text
    assert recorded.other.explain_id in page and recorded.agent.explain_id not in page
    session = get(view + "/sessions/" + recorded.other.explain_id).text
    assert f"<dt>Service</dt><dd>{OTHER_SERVICE}</dd>" in session


def test_the_dashboard_and_the_downloads(view: str, recorded: Recorded) -> None:
    """Many runs at once: counts by status, sessions over time, tools used, the slowest; the list as
    CSV; SPARQL results as CSV, linked from the SPARQL page."""
    import csv

    board = get(view + "/api/dashboard").json()
    listed = get(view + "/api/sessions", params={"limit": 1000}).json()
    assert board["sessions"] == listed["total"]
    assert board["byStatus"]["unfinished"] == 1 and board["byStatus"]["error"] == 1
    assert sum(d["sessions"] for d in board["byDay"]) == board["sessions"]
    calls = {t["tool"]: t["calls"] for t in board["tools"]}
    assert calls["calculator"] >= 1 and calls == dict(sorted(calls.items(), key=lambda kv: -kv[1]))
    slow = [s["durationMs"] for s in board["slowest"]]
    assert slow == sorted(slow, reverse=True) and len(slow) <= 10
    page = get(view + "/dashboard")
    assert page.status_code == 200 and 'id="tools"' in page.text and "calculator" in page.text
    assert get(view + "/api/dashboard", params={"since": "nope"}).status_code == 400
    rows = list(csv.DictReader(io.StringIO(get(view + "/api/sessions", params={"format": "csv"}).text)))
    assert {r["id"] for r in rows} == {s["id"] for s in get(view + "/api/sessions").json()["sessions"]}
    query = "SELECT ?q ?text WHERE { ?q a tg:Question ; tg:query ?text } ORDER BY ?q"
    results = get(view + "/api/sparql", params={"query": query, "format": "csv"})
    assert results.headers["content-type"].startswith("text/csv") and results.text.startswith("q,text")
    assert 'id="download-csv"' in requests.post(view + "/sparql", data={"query": query}, timeout=30).text


def test_the_list_sorts_by_its_columns(view: str) -> None:
    api = get(view + "/api/sessions", params={"sort": "duration"}).json()["sessions"]
    durations = [s["durationMs"] for s in api if s["durationMs"] is not None]
    assert durations == sorted(durations, reverse=True)
    assert get(view + "/api/sessions", params={"sort": "size"}).status_code == 400
    page = get(view + "/", params={"sort": "status", "type": "agent"}).text
    assert html.unescape(page).count("/?sort=duration&type=agent") == 1  # the column keeps the filters
    assert 'class="sort sorted"' in page
