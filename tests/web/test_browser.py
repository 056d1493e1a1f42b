"""The web view in a real headless browser (Playwright driving Debian's Chromium), and the round
trip with the real Jaeger UI: Jaeger's trace page links to the session, the session page links
back.  Screenshots are saved as test artifacts (``OTEL_PROV_TEST_ARTIFACTS``, else a pytest
temporary directory; their paths are printed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from otel_prov.settings import UiSettings
from otel_prov.stores import parse_store
from otel_prov.web import session_url
from tests.support.browser import OVERLAPS_JS, DemoStack, artifacts, launch, sync_playwright
from tests.support.webdata import LONG, SCRIPT, Recorded, record, serve

VIEWPORT = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=VIEWPORT)
    tab = context.new_page()
    tab.set_default_timeout(20_000)
    tab.problems = []
    tab.dialogs = []
    tab.on("console", lambda m: m.type == "error" and tab.problems.append(m.text))
    tab.on("pageerror", lambda e: tab.problems.append(f"pageerror: {e}"))

    def dialog(d: Any) -> None:
        tab.dialogs.append(d.message)
        d.dismiss()

    tab.on("dialog", dialog)
    yield tab
    context.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return artifacts(tmp_path_factory)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return record(tmp_path_factory.mktemp("browser") / "store", profile="strict")


@pytest.fixture(scope="module")
def view(recorded: Recorded) -> Iterator[str]:
    running = serve(UiSettings(store=parse_store(str(recorded.path)), port=0,
                               jaeger_url="http://127.0.0.1:16686"))
    yield running.url
    running.stop()


def no_horizontal_scroll(page: Any) -> None:
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the page is wider than the window: {width}"


def snap(page: Any, shots: Path, name: str, **kw: Any) -> None:
    path = shots / name
    page.screenshot(path=str(path), **kw)
    print(f"\nscreenshot: {path}")


def test_session_list(page: Any, view: str, recorded: Recorded, shots: Path) -> None:
    page.goto(view + "/")
    page.locator("table.sessions").wait_for()
    assert page.title() == "Sessions · otel-prov"
    text = page.locator("#sessions").inner_text()
    for question in ("What is the population density of the capital of France?",
                     "What is the capital of France and which river flows through it?",
                     "When was the Eiffel Tower built, and how tall is it?", "Where does the Spree flow?"):
        assert question in text
    assert page.locator(".badge.unfinished").count() == 1
    assert page.locator(".badge.error").count() == 1
    assert page.locator("#live").is_visible()
    no_horizontal_scroll(page)
    snap(page, shots, "list.png", full_page=True)
    page.select_option("select[name=type]", "docrag")
    page.click("form#filters button")
    page.wait_for_url("**/?type=docrag**")
    assert page.locator("table.sessions tbody tr").count() == 2
    assert page.problems == []


def test_session_page_with_picture(page: Any, view: str, recorded: Recorded, shots: Path) -> None:
    page.goto(view + session_url(recorded.agent.explain_id))
    page.locator("#picture svg").wait_for()
    assert page.locator("#question").inner_text() == recorded.agent.question
    assert page.locator(".step h3").first.inner_text() == "Analysis 1"
    assert page.get_by_text("Thought", exact=True).first.is_visible()
    sub = page.locator("details.subtrace").first
    assert not sub.locator("article.step").first.is_visible()  # collapsed until asked
    sub.locator("summary").click()
    assert sub.get_by_text("chunks from the document store").is_visible()
    drawn = page.evaluate(OVERLAPS_JS)
    assert drawn["hits"] == [], drawn["hits"]
    assert drawn["labels"] > 30 and drawn["nodes"] > 20  # the strict profile: activities and agents
    assert page.locator("#jaeger-link").get_attribute("href") == \
        f"http://127.0.0.1:16686/trace/{recorded.agent.trace_id}"
    no_horizontal_scroll(page)
    # The whole picture has room on the page (its Conclusion was hidden at the bottom of a scroll box
    # 80% of the window high): the box is as high as the picture.
    heights = page.evaluate("() => { const p = document.querySelector('#picture'); "
                            "return [p.scrollHeight, p.clientHeight, window.innerHeight]; }")
    assert heights[0] <= heights[1] and heights[1] > heights[2], heights
    snap(page, shots, "session.png", full_page=True)
    page.locator("#picture").screenshot(path=str(shots / "picture.png"))
    assert page.problems == []


def test_session_timeline(page: Any, view: str, recorded: Recorded, shots: Path) -> None:
    """The waterfall: a bar per step, placed by when it started and sized by how long it took (a
    step that took 6 s no longer looks like one of 6 ms), sub-trace steps nested, each row a link to
    its step."""
    page.goto(view + session_url(recorded.agent.explain_id))
    page.locator("#timeline").wait_for()
    boxes = page.evaluate("""() => [...document.querySelectorAll('#timeline li')].map(li => {
        const bar = li.querySelector('.bar').getBoundingClientRect();
        const track = li.querySelector('.bar-track').getBoundingClientRect();
        return [li.querySelector('.bar-label').textContent, bar.left - track.left, bar.width,
                li.querySelector('.bar-label').getAttribute('href')]; })""")
    labels = [b[0] for b in boxes]
    assert labels[0] == "Analysis 1" and "Exploration" in labels  # the DocRAG sub-trace's steps too
    tops = [b for b in boxes if b[0].startswith("Analysis")]
    assert [b[1] for b in tops] == sorted(b[1] for b in tops)  # later steps start further right
    assert all(b[2] >= 1 for b in boxes)  # every bar is seen
    target = boxes[1][3]
    page.locator("#timeline a").nth(1).click()
    assert page.locator(target).is_visible()
    no_horizontal_scroll(page)
    page.locator("#timeline").screenshot(path=str(shots / "timeline.png"))
    assert page.problems == []


def test_dashboard(page: Any, view: str, shots: Path) -> None:
    page.goto(view + "/dashboard")
    page.locator("#tools").wait_for()
    assert page.locator("#by-day li").count() >= 1
    assert "calculator" in page.locator("#tools").inner_text()
    assert page.locator("#slowest tbody tr").count() >= 3
    page.locator("#tools a").first.click()  # a tool's row lists the sessions that called it
    page.locator("table.sessions").wait_for()
    assert "tool=" in page.url
    page.goto(view + "/dashboard")
    no_horizontal_scroll(page)
    snap(page, shots, "dashboard.png", full_page=True)
    assert page.problems == []


def test_hostile_session_runs_nothing_and_wraps(page: Any, view: str, recorded: Recorded,
                                                shots: Path) -> None:
    page.goto(view + session_url(recorded.hostile))
    page.locator("#steps").wait_for()
    assert page.evaluate("() => window.__pwned") is None
    assert page.dialogs == []
    assert SCRIPT in page.locator("#steps").inner_text()
    assert "\\x1b[31mred" in page.locator("#question").inner_text()
    assert LONG[:100] in page.locator(".observation").inner_text()
    no_horizontal_scroll(page)
    snap(page, shots, "hostile.png")
    assert page.problems == []


def test_compare_two_sessions_side_by_side(page: Any, view: str, recorded: Recorded, shots: Path) -> None:
    """Two sessions ticked in the list open side by side; the hostile one runs nothing there either;
    "Compare with" on a session's page takes a pasted trace id; equal entries unfold on a click."""
    page.goto(view + "/")
    for iri in (recorded.agent.explain_id, recorded.hostile):
        page.locator(f'input[name=s][value="{iri}"]').check()
    page.click("#compare-selected button")
    page.locator("#verdict").wait_for()
    assert page.url.startswith(view + "/diff?s=")
    assert page.locator("#verdict").inner_text().startswith("The runs differ. First divergence: Question")
    assert page.evaluate("() => window.__pwned") is None and page.dialogs == []
    assert SCRIPT in page.locator("#entries").inner_text()
    no_horizontal_scroll(page)
    snap(page, shots, "diff-hostile.png", full_page=True)
    page.goto(view + session_url(recorded.agent.explain_id))
    itself = (recorded.agent.trace_id or "")[:8]  # as Jaeger's search page shows it
    page.fill("#compare-with input[name=b]", itself)
    page.click("#compare-with button")
    page.locator("#verdict").wait_for()
    assert page.locator("#verdict").inner_text().startswith("The runs are identical")
    folded = page.locator("tbody.equal details").first
    assert not folded.locator("table.titles").is_visible()
    folded.locator("summary").click()
    assert folded.locator("table.titles").is_visible()
    no_horizontal_scroll(page)
    snap(page, shots, "diff.png", full_page=True)
    assert page.problems == []


def test_sparql_page(page: Any, view: str, shots: Path) -> None:
    page.goto(view + "/sparql")
    assert "PREFIX prov: <http://www.w3.org/ns/prov#>" in page.locator("#prefixes").inner_text()
    page.click("form.sparql button")
    page.locator("table.results").wait_for()
    assert page.locator("table.results tbody tr").count() == 8
    page.locator("table.results a").first.click()
    page.locator("#question").wait_for()
    assert page.url.startswith(view + "/sessions/urn:trustgraph:")
    page.goto(view + "/sparql")
    page.fill("#query", "SELECT nonsense")
    page.click("form.sparql button")
    assert "SPARQL syntax error" in page.locator("#query-error").inner_text()
    snap(page, shots, "sparql.png")


def test_live_refresh(page: Any, tmp_path: Path) -> None:
    """A list left open shows a session recorded after it was loaded, without a reload."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from otel_prov import ProvSpanExporter, doc_rag_session

    path = tmp_path / "store"
    running = serve(UiSettings(store=parse_store(str(path)), port=0))
    exporter = ProvSpanExporter(store=str(path))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        page.goto(running.url + "/")
        page.locator("#empty").wait_for()  # an empty store (the exporter made it)
        with doc_rag_session("Recorded while you watch?", tracer_provider=provider) as session:
            session.exploration(["c1"])
            session.synthesis("yes")
        assert exporter.force_flush()
        page.get_by_text("Recorded while you watch?").wait_for(timeout=15_000)
        assert page.evaluate("() => performance.getEntriesByType('navigation').length") == 1  # no reload
        page.locator("input[name=s]").first.check()  # ticked to compare: still ticked after a refresh
        with doc_rag_session("And another one?", tracer_provider=provider) as session:
            session.exploration(["c2"])
            session.synthesis("yes")
        assert exporter.force_flush()
        page.get_by_text("And another one?").wait_for(timeout=15_000)
        ticked = page.locator("input[name=s]:checked")
        assert ticked.count() == 1 and ticked.get_attribute("value") != page.locator("input[name=s]").first \
            .get_attribute("value")  # the first session's box, now second in the list
    finally:
        provider.shutdown()
        running.stop()


def test_jaeger_ui_and_back(page: Any, tmp_path: Path, shots: Path) -> None:
    """The newcomer's path: ``otel-prov demo --ui --otlp`` with Jaeger running the real UI.  From
    the agent's trace in Jaeger, the link lands on its session; from there, back to Jaeger."""
    with DemoStack(tmp_path) as stack:
        listed = requests.get(stack.ui + "/api/sessions", params={"type": "agent"}, timeout=30)
        rows = listed.json()["sessions"]
        agent = rows[0]
        trace_id = agent["traceId"]
        spans = stack.trace_in_jaeger(trace_id)["spans"]
        assert len(spans) > 5

        page.goto(f"{stack.jaeger}/trace/{trace_id}")
        header = page.locator(".TracePageHeader--titleRow")
        header.wait_for()
        page.get_by_text("invoke_agent").first.wait_for()
        link = header.locator('a[target="_blank"]')
        assert link.count() == 1
        assert link.get_attribute("href") == f"{stack.ui}/trace/{trace_id}"
        assert link.get_attribute("title") == "Open in otel-prov"
        snap(page, shots, "jaeger.png")

        with page.context.expect_page() as opened:
            link.click()
        landed = opened.value
        landed.locator("#question").wait_for()
        assert landed.url == stack.ui + session_url(agent["id"])
        assert landed.locator("#question").inner_text() == agent["question"]
        assert landed.locator("#picture svg").count() == 1
        snap(landed, shots, "landed.png")

        with landed.context.expect_page() as back:
            landed.click("#jaeger-link")
        jaeger_again = back.value
        jaeger_again.locator(".TracePageHeader--titleRow").wait_for()
        assert jaeger_again.url == f"{stack.jaeger}/trace/{trace_id}"
        assert page.problems == []
    assert stack.demo.popen.returncode == 0, stack.demo.tail()
