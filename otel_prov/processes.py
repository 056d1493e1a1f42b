"""Starting a Python child process from this one (the store's background folder, ``serve``'s
mapping workers): which interpreter to start."""

from __future__ import annotations

import os
import sys


def interpreter() -> str | None:
    """This process's Python interpreter, if it is one (not a frozen application, nor a server
    embedding Python, whose ``sys.executable`` would start the application itself)."""
    executable = sys.executable
    if not executable or getattr(sys, "frozen", False) or not os.access(executable, os.X_OK):
        return None
    name = os.path.basename(executable).lower()
    return executable if name.startswith(("python", "pypy")) else None
