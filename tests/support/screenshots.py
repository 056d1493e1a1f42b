"""The README's screenshots, taken from what a newcomer runs: Jaeger with the real UI
(collector-config/jaeger-ui.sh) and ``otel-prov demo --ui --otlp``, in headless Chromium.

    .venv/bin/python -m tests.support.screenshots [DIR]     # default docs/images/

Writes ui-list.png (the sessions), ui-session.png (the agent session's page), ui-timeline.png (its
timeline), ui-picture.png (its provenance picture), ui-dashboard.png (the dashboard) and ui-jaeger.png
(its trace in Jaeger, with the link back)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import requests

from otel_prov.web import session_url
from tests.support.browser import DemoStack, launch, sync_playwright
from tests.support.procs import REPO


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work, DemoStack(Path(work)) as stack, sync_playwright() as pw:
        browser = launch(pw)
        page = browser.new_page(viewport={"width": 1280, "height": 440})
        page.goto(stack.ui + "/")
        page.locator("table.sessions").wait_for()
        page.screenshot(path=str(out / "ui-list.png"))
        agent = requests.get(stack.ui + "/api/sessions", params={"type": "agent"}, timeout=30).json()
        row = agent["sessions"][0]
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(stack.ui + session_url(row["id"]))
        page.locator("#picture svg").wait_for()
        page.screenshot(path=str(out / "ui-session.png"))
        page.locator("#picture").screenshot(path=str(out / "ui-picture.png"))
        page.locator("#timeline").screenshot(path=str(out / "ui-timeline.png"))
        page.goto(stack.ui + "/dashboard")
        page.locator("#tools").wait_for()
        page.screenshot(path=str(out / "ui-dashboard.png"))
        stack.trace_in_jaeger(row["traceId"])
        page.set_viewport_size({"width": 1280, "height": 560})
        page.goto(f"{stack.jaeger}/trace/{row['traceId']}")
        page.locator(".TracePageHeader--titleRow").wait_for()
        page.get_by_text("invoke_agent").first.wait_for()
        page.screenshot(path=str(out / "ui-jaeger.png"))
        browser.close()
    for name in ("ui-list.png", "ui-session.png", "ui-timeline.png", "ui-picture.png", "ui-dashboard.png",
                 "ui-jaeger.png"):
        print(out / name)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "images")
