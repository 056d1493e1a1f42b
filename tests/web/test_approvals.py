"""The web view's session page and its JSON twin, of a run with people's approvals
(``tests/support/approvals.py``), over HTTP against a real server: each step's and the answer's
approvals, who, decision, role, time and comment, every text escaped."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
import requests

from otel_prov.render.timeline import step_anchor
from otel_prov.settings import UiSettings
from otel_prov.stores import parse_store
from otel_prov.web import session_url
from tests.support.approvals import COMMENT, ApprovedRun, record_approved_run
from tests.support.webdata import serve


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, ApprovedRun]]:
    path: Path = tmp_path_factory.mktemp("approvals") / "store"
    run = record_approved_run(str(path))
    running = serve(UiSettings(store=parse_store(str(path)), port=0))
    yield running.url, run
    running.stop()


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


def _article(page: str, step_iri: str) -> str:
    """The ``<article>`` of one step (its id is the step's anchor)."""
    anchor = step_anchor(step_iri)
    match = re.search(rf'<article class="step[^"]*" id="{anchor}">(.*?)</article>', page, re.S)
    assert match is not None, step_iri
    return match.group(1)


def test_the_session_page_shows_each_steps_and_the_answers_approvals(site: tuple[str, ApprovedRun]) -> None:
    url, run = site
    r = requests.get(url + session_url(run.explain_id), timeout=30)
    assert r.status_code == 200
    page = r.text
    first = _article(page, run.steps[0])
    items = re.findall(r'<li class="approval( rejected)?">(.*?)</li>', first, re.S)
    assert [bool(rejected) for rejected, _ in items] == [False, True]
    texts = [html.unescape(re.sub(r"<[^>]+>", "", body)) for _, body in items]
    assert re.match(r"approved by alice@example\.com \(approver\), \d{4}-", texts[0])
    assert re.match(r"rejected by bob \(auditor\), \d{4}-", texts[1]) and texts[1].endswith(COMMENT)
    assert "approval" not in _article(page, run.steps[1])
    answer = _article(page, run.explain_id + "/final")
    assert "approved" in answer and "good answer" in answer
    # escaped: the comment's markup is text, the page's only script is its own
    assert "&lt;script&gt;alert(" in first
    parser = _Tags()
    parser.feed(page)
    assert parser.tags.count("script") == 1


def test_the_session_api_has_the_approvals(site: tuple[str, ApprovedRun]) -> None:
    url, run = site
    shown = requests.get(url + "/api" + session_url(run.explain_id), timeout=30).json()
    first = shown["steps"][0]
    assert [(a["decision"], a["by"], a["role"], a["comment"]) for a in first["approvals"]] == [
        ("approved", "alice@example.com", "approver", None), ("rejected", "bob", "auditor", COMMENT)]
    assert shown["steps"][-1]["approvals"][0]["comment"] == "good answer"
