"""Headless Chromium for tests: Playwright (PyPI) driving Debian's Chromium (``.ci/setup --test``
installs ``chromium-headless-shell``; never ``playwright install``), and the real Jaeger UI build
from ``../shared/vendor`` (test data, never copied into the project).

A missing browser, driver or UI build fails the test under ``CI`` and skips it elsewhere, naming
what to provide.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.procs import REPO, in_ci

CHROMIUM_ARGS = [
    # Playwright passes most of these itself; repeated so that a closed network never sees Chromium's
    # background connections.
    "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
VENDORED_UI = Path("shared") / "vendor" / "jaeger-ui-1.76.0" / "jaeger-ui-build.tgz"


def _missing(reason: str) -> None:
    if in_ci():
        pytest.fail(reason + " -- CI must run this test", pytrace=False)
    pytest.skip(reason)


def find_chromium() -> str | None:
    """``OTEL_PROV_CHROMIUM``, else Debian's headless shell or Chromium (the binaries, not the
    /usr/bin wrapper scripts)."""
    given = os.environ.get("OTEL_PROV_CHROMIUM")
    if given:
        return given
    for path in ("/usr/lib/chromium/chromium-headless-shell", "/usr/lib/chromium/chromium"):
        if os.access(path, os.X_OK):
            return path
    return shutil.which("chromium-headless-shell") or shutil.which("chromium")


def launch(playwright: Any) -> Any:
    exe = find_chromium()
    if exe is None:
        _missing("no Chromium: apt-get install chromium-headless-shell (bash .ci/setup --test does), "
                 "or set OTEL_PROV_CHROMIUM")
    return playwright.chromium.launch(executable_path=exe, headless=True, chromium_sandbox=False,
                                      args=CHROMIUM_ARGS, timeout=30_000)


def sync_playwright() -> Any:
    try:
        from playwright.sync_api import sync_playwright as start
    except ImportError:
        _missing("no playwright: pip install -e '.[test]' (bash .ci/setup --test does)")
    return start()


def jaeger_ui_tgz() -> Path:
    """The vendored Jaeger UI build: ``JAEGER_UI_TGZ`` (the variable collector-config/jaeger-ui.sh
    reads), else ``../shared/vendor`` beside the repository (or beside the main checkout, from a git
    worktree)."""
    given = os.environ.get("JAEGER_UI_TGZ") or os.environ.get("OTEL_PROV_JAEGER_UI_TGZ")
    candidates = [Path(given)] if given else [REPO.parent / VENDORED_UI]
    if not given:
        try:
            common = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--path-format=absolute",
                                     "--git-common-dir"], capture_output=True, text=True, timeout=10,
                                    check=False).stdout.strip()
        except OSError:
            common = ""
        if common:
            candidates.append(Path(common).parent.parent / VENDORED_UI)
    for path in candidates:
        if path.is_file():
            return path
    _missing(f"no Jaeger UI build at {candidates[0]}: set JAEGER_UI_TGZ to a jaeger-ui build "
             "archive (shared/vendor/jaeger-ui-1.76.0/jaeger-ui-build.tgz)")
    raise AssertionError("unreachable")


def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: ``OTEL_PROV_TEST_ARTIFACTS``, else a pytest temporary directory."""
    given = os.environ.get("OTEL_PROV_TEST_ARTIFACTS")
    path = Path(given) if given else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


OVERLAPS_JS = """
() => {
  const svg = document.querySelector('#picture svg');
  const boxes = [];
  for (const g of svg.querySelectorAll('g.node')) {
    const b = g.getBBox(); boxes.push({what: 'node ' + g.textContent.slice(0, 40), b});
  }
  for (const t of svg.querySelectorAll('text.rel')) {
    const b = t.getBBox(); boxes.push({what: 'label ' + t.textContent, b});
  }
  const hits = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i].b, c = boxes[j].b;
    if (!boxes[i].what.startsWith('label') && !boxes[j].what.startsWith('label')) continue;
    if (a.x < c.x + c.width && c.x < a.x + a.width && a.y < c.y + c.height && c.y < a.y + a.height)
      hits.push(boxes[i].what + ' / ' + boxes[j].what);
  }
  return {labels: svg.querySelectorAll('text.rel').length,
          nodes: svg.querySelectorAll('g.node').length, hits};
}
"""
"""Drawn boxes of the picture, as the browser measured them: labels that meet a node or a label."""


# -- the newcomer's set-up: Jaeger with the real UI, and `otel-prov demo --ui --otlp` -----------------


class DemoStack:
    """``collector-config/jaeger-ui.sh`` (Jaeger + the vendored UI, linking to the view) and
    ``otel-prov demo --ui --otlp`` sending the demo's spans to that Jaeger and serving the view, each
    on free 127.0.0.1 ports, stopped on exit."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[Any] = []

    def __enter__(self) -> DemoStack:
        import re
        import sys

        from tests.support.procs import free_port, http_get, port_open, require_binary, start, wait_until

        require_binary("jaeger")
        tgz = jaeger_ui_tgz()
        self.ui_port, otlp, query = free_port(), free_port(), free_port()
        self.ui = f"http://127.0.0.1:{self.ui_port}"
        self.jaeger = f"http://127.0.0.1:{query}"
        env = {"JAEGER_OTLP_GRPC_ENDPOINT": f"127.0.0.1:{otlp}",
               "JAEGER_OTLP_HTTP_ENDPOINT": f"127.0.0.1:{free_port()}",
               "JAEGER_QUERY_HTTP_ENDPOINT": f"127.0.0.1:{query}",
               "JAEGER_QUERY_GRPC_ENDPOINT": f"127.0.0.1:{free_port()}",
               "JAEGER_LOG_LEVEL": "warn", "JAEGER_UI_TGZ": str(tgz), "OTEL_PROV_UI_URL": self.ui,
               "OTEL_PROV_JAEGER_UI_DIR": str(self.workdir / "jaeger-ui"),
               "OTEL_PROV_BIN_DIR": str(require_binary("jaeger").parent)}
        jaeger = start("jaeger", ["bash", str(REPO / "collector-config" / "jaeger-ui.sh")],
                       self.workdir / "jaeger.log", env)
        self.procs.append(jaeger)
        wait_until(lambda: http_get(f"{self.jaeger}/api/services", 1.0)[0] == 200 and port_open(otlp), 60,
                   "Jaeger with the UI", proc=jaeger)
        self.store = self.workdir / "store"
        command = [sys.executable, "-m", "otel_prov.cli", "demo", "--ui", "-q", "--store", str(self.store),
                   "--port", str(self.ui_port), "--otlp", f"http://127.0.0.1:{otlp}",
                   "--jaeger-url", self.jaeger]
        demo = start("otel-prov demo --ui", command, self.workdir / "demo.log")
        self.procs.append(demo)
        self.demo = demo
        wait_until(lambda: re.search(r"otel-prov ui: serving (\S+)", demo.log.read_text(errors="replace")),
                   120, "the demo's web view", proc=demo)
        return self

    def trace_in_jaeger(self, trace_id: str, timeout: float = 30.0) -> dict[str, Any]:
        """The trace once Jaeger stops receiving spans of it (it answers as soon as one is stored)."""
        import json
        import time

        from tests.support.procs import http_get, wait_until

        seen: list[int] = []

        def settled() -> dict[str, Any] | None:
            status, body = http_get(f"{self.jaeger}/api/traces/{trace_id}")
            if status != 200:
                return None
            trace: dict[str, Any] = json.loads(body)["data"][0]
            seen.append(len(trace["spans"]))
            time.sleep(0.3)
            return trace if len(seen) > 1 and seen[-1] == seen[-2] else None

        result: dict[str, Any] = wait_until(settled, timeout, f"trace {trace_id} in Jaeger")
        return result

    def __exit__(self, *exc: object) -> None:
        for proc in reversed(self.procs):
            proc.terminate(timeout=15)
