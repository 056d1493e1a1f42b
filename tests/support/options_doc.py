"""The docs' option tables, generated from ``otel_prov/settings.py`` (each option's text is written
once, there): each page holds its table between two markers, and ``tests/system/test_docs.py`` fails
when a table differs from what :func:`otel_prov.settings.markdown_table` gives.

    .venv/bin/python -m tests.support.options_doc     # rewrite the tables after changing settings.py
"""

from __future__ import annotations

import re
import sys

from otel_prov.settings import markdown_table
from tests.support.procs import REPO

PAGES = {
    "docs/configuration.md": "exporter and CLI",
    "docs/collector.md": "serve",
    "docs/ui.md": "ui",
    "examples/README.md": "examples",
}
"""Each page and the table of :data:`otel_prov.settings.TABLES` it shows."""

BEGIN = "<!-- options: {name} (generated from otel_prov/settings.py: python -m tests.support.options_doc) -->"
END = "<!-- /options -->"


def block(name: str) -> str:
    return f"{BEGIN.format(name=name)}\n{markdown_table(name)}{END}"


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(BEGIN.format(name=name)) + r"\n.*?" + re.escape(END), re.S)


def current(page: str) -> str | None:
    """The page's generated block as it is now (None: no block)."""
    match = _pattern(PAGES[page]).search((REPO / page).read_text(encoding="utf-8"))
    return match.group(0) if match else None


def rewrite() -> list[str]:
    """Rewrites every page's block; the pages that changed."""
    changed = []
    for page, name in PAGES.items():
        path = REPO / page
        text = path.read_text(encoding="utf-8")
        new, count = _pattern(name).subn(block(name).replace("\\", "\\\\"), text)
        if count != 1:
            raise SystemExit(f"{page}: no block for {name!r} (put the two markers where the table goes)")
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(page)
    return changed


if __name__ == "__main__":
    for page in rewrite():
        print(f"rewrote {page}")
    sys.exit(0)
