"""Counting what could not be mapped or stored: each kind is logged once, every one is counted."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable


class ProblemLog:
    def __init__(self, logger: logging.Logger, what: str) -> None:
        self._logger = logger
        self._what = what
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    def report(self, problems: Iterable[str]) -> None:
        for kind in problems:
            with self._lock:
                self.counts[kind] += 1
                first = self.counts[kind] == 1
            if first:
                self._logger.warning("%s: %s (logged once; every occurrence is counted)",
                                     self._what, kind)

    def exception(self, kind: str) -> None:
        """Count an unexpected error; log it with its traceback the first time only.  Call from an
        ``except`` block."""
        with self._lock:
            self.counts[kind] += 1
            first = self.counts[kind] == 1
        if first:
            self._logger.exception("%s: %s (logged once; every occurrence is counted)",
                                   self._what, kind)
