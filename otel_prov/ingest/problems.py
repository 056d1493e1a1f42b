"""Counting what could not be mapped or stored: each kind is logged once, every one is counted."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable

_ONCE = "%s: %s (logged once; %s)"


class ProblemLog:
    def __init__(self, logger: logging.Logger, what: str,
                 counted: str = "every occurrence is counted") -> None:
        """``counted``: where a user reads the counts (the log line says it)."""
        self._logger = logger
        self._what = what
        self._counted = counted
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def report(self, problems: Iterable[str]) -> None:
        for kind in problems:
            if self._first(kind):
                self._logger.warning(_ONCE, self._what, kind, self._counted)

    def exception(self, kind: str) -> None:
        """Count an unexpected error; log it with its traceback the first time only.  Call from an
        ``except`` block."""
        if self._first(kind):
            self._logger.exception(_ONCE, self._what, kind, self._counted)

    def _first(self, kind: str) -> bool:
        """Count ``kind``; whether it is its first occurrence."""
        with self._lock:
            self.counts[kind] += 1
            return self.counts[kind] == 1
