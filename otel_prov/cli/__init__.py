"""The ``otel-prov`` command (:mod:`.app`: the subcommands and their parser).

This module is the entry point and stays light: the command's modules load inside :func:`main`,
so Ctrl-C while they load exits 130 with one line, as at any later moment, not a traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Any


def main(argv: Sequence[str] | None = None) -> int:
    try:
        from .app import main as run

        return run(argv)
    except KeyboardInterrupt:
        print("otel-prov: interrupted", file=sys.stderr)
        return 130


def __getattr__(name: str) -> Any:  # build_parser and the rest of .app, loaded when asked for
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(importlib.import_module(".app", __name__), name)
