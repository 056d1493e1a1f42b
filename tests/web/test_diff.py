"""The web view's comparison of two sessions (``/diff``, ``/api/diff``) over HTTP: a real server on a
free 127.0.0.1 port, a store of real runs (tests/support/runs.py) and of the web tests' sessions (a
hostile one among them); the links to it from the list and the session page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
import requests

from otel_prov.cli import main
from otel_prov.settings import UiSettings
from otel_prov.stores import parse_store
from otel_prov.web import app as web_app
from otel_prov.web import session_url
from tests.support.runs import EXTRA, RETHOUGHT, Runs, record_runs
from tests.support.webdata import ESC, SCRIPT, Recorded, record, serve


@dataclass
class Stored:
    runs: Runs
    recorded: Recorded
    url: str


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stored]:
    path = tmp_path_factory.mktemp("web-diff") / "store"
    recorded = record(path)
    runs = record_runs(path)
    running = serve(UiSettings(store=parse_store(str(path)), port=0))
    yield Stored(runs, recorded, running.url)
    running.stop()


def get(url: str, **params: Any) -> requests.Response:
    return requests.get(url, params=params, timeout=60)


def script_tags(page: str) -> list[str]:
    return re.findall(r"<script\b[^>]*>", page)


def test_two_runs_side_by_side(stored: Stored) -> None:
    runs = stored.runs
    r = get(stored.url + "/diff", a=runs.agent, b=runs.inserted)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = r.text
    assert ('The runs differ. First divergence: <a href="#pair-2">B&#39;s Analysis 2 (kg_lookup): only in '
            "B</a>") in page
    assert "Downstream of it (after it in the chain): A&#39;s Analysis 2 to Conclusion (9 entries)" in page
    inserted = re.search(r'<tbody class="pair onlyInB" id="pair-2">(.*?)</tbody>', page, re.S)
    assert inserted is not None
    assert '<span class="none">not in A</span>' in inserted.group(1)
    assert f'<div class="text">{EXTRA.thought}</div>' in inserted.group(1)
    assert page.count('<tbody class="pair equal"') == 2  # the entries before it, and after it, folded
    assert "= A&#39;s Analysis 2 to Conclusion, B&#39;s Analysis 3 to Conclusion" in page
    assert f'href="{session_url(runs.agent)}"' in page and f'href="{session_url(runs.inserted)}"' in page
    assert "<dt>Steps</dt><dd>A 6, B 7 (+1)</dd>" in page  # measured apart
    changed = get(stored.url + "/diff", a=runs.agent, b=runs.rethought).text
    row = re.search(r'<tr class="field changed"><th scope="row">Thought</th>(.*?)</tr>', changed, re.S)
    assert row is not None and RETHOUGHT in row.group(1)
    assert 'class="value a"' in row.group(1) and 'class="value b"' in row.group(1)
    assert "3 equal values: Action, Arguments, Observation" in changed
    same = get(stored.url + "/diff", a=runs.agent, b=runs.again).text
    assert "The runs are identical" in same and 'id="pair-1"' not in same


def test_sessions_named_as_the_cli_takes_them_and_ticked_in_the_list(stored: Stored) -> None:
    runs = stored.runs
    expected = get(stored.url + "/api/diff", a=runs.agent, b=runs.inserted).json()
    trace_id = expected["b"]["traceId"]
    for a, b in ((runs.agent.rsplit(":", 1)[1], trace_id),
                 (expected["a"]["traceId"][:7], runs.inserted + "/i3")):
        assert get(stored.url + "/api/diff", a=a, b=b).json() == expected
    ticked = requests.get(stored.url + "/diff", params=[("s", runs.agent), ("s", runs.inserted)], timeout=60)
    assert ticked.status_code == 200 and "B&#39;s Analysis 2 (kg_lookup): only in B" in ticked.text


def test_the_json_is_the_clis(stored: Stored, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    runs = stored.runs
    assert main(["diff", runs.agent, runs.elsewhere, "--store", str(runs.path), "--format", "json"]) == 1
    cli = json.loads(capsysbinary.readouterr().out.decode())
    assert get(stored.url + "/api/diff", a=runs.agent, b=runs.elsewhere).json() == cli
    assert "/api/diff?a=&b=" in get(stored.url + "/api").json()["endpoints"]


@pytest.mark.parametrize("params,status,needle", [
    ([("s", "urn:trustgraph:agent:x")], 400, "select two sessions to compare (1 selected)"),
    ([("a", "{agent}"), ("b", "")], 400, "give two sessions to compare: b= is empty"),
    ([("a", "{agent}"), ("b", "urn:trustgraph:agent:none")], 404, "B: no trace urn:trustgraph:agent:none"),
    ([("a", "garbage"), ("b", "{agent}")], 404, "A: not an IRI"),
    ([("a", "urn:x>"), ("b", "{agent}")], 404, "A: not an IRI"),
])
def test_what_names_no_two_sessions_says_why(stored: Stored, params: list[tuple[str, str]], status: int,
                                             needle: str) -> None:
    given = [(k, v.format(agent=stored.runs.agent)) for k, v in params]
    page = requests.get(stored.url + "/diff", params=given, timeout=60)
    assert page.status_code == status
    assert f'<p class="error" id="problem">{needle}' in page.text.replace("&#39;", "'").replace("&gt;", ">")
    api = requests.get(stored.url + "/api/diff", params=given, timeout=60)
    assert api.status_code == status and needle in api.json()["error"]


def test_without_sessions_a_form(stored: Stored) -> None:
    page = get(stored.url + "/diff")
    assert page.status_code == 200
    assert '<form class="filters" method="get" action="/diff" id="compare">' in page.text
    assert get(stored.url + "/api/diff").status_code == 400


def test_linked_from_the_list_and_the_session_page(stored: Stored) -> None:
    listed = get(stored.url + "/").text
    assert '<form class="compare-selected" method="get" action="/diff" id="compare-selected">' in listed
    boxes = re.findall(r'<input type="checkbox" name="s" value="([^"]+)" form="compare-selected"', listed)
    assert stored.runs.agent in boxes and len(boxes) == len(set(boxes)) >= 10
    session = get(stored.url + session_url(stored.runs.agent)).text
    form = re.search(r'<form class="compare-with" method="get" action="/diff" id="compare-with">(.*?)</form>',
                     session, re.S)
    assert form is not None
    assert f'<input type="hidden" name="a" value="{stored.runs.agent}">' in form.group(1)
    assert 'name="b" required' in form.group(1)


def test_hostile_text_is_escaped(stored: Stored) -> None:
    page = get(stored.url + "/diff", a=stored.recorded.hostile, b=stored.recorded.agent.explain_id).text
    assert script_tags(page) == ['<script src="/static/app.js" defer>']
    assert "&lt;script&gt;window.__pwned" in page
    assert ESC not in page and "\\x1b[31mred\\x1b[0m" in page and "\x00" not in page
    assert SCRIPT not in page
    error = get(stored.url + "/diff", a=SCRIPT, b=stored.recorded.hostile).text  # the id itself, in the form
    assert script_tags(error) == ['<script src="/static/app.js" defer>'] and SCRIPT not in error


def test_past_its_limit_the_page_says_where_the_rest_is(stored: Stored,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web_app, "DIFF_SHOWN", 1)
    runs = stored.runs
    page = get(stored.url + "/diff", a=runs.agent, b=runs.elsewhere).text
    assert page.count('<tbody class="pair changed"') == 1
    assert "(or <code>otel-prov diff</code>) has all of them" in page
    assert f'href="/api/diff?a={quote(runs.agent, safe="")}&amp;b={quote(runs.elsewhere, safe="")}"' in page
