"""``otel-prov serve`` keeps the session index of its on-disk store up to date (docs/store.md).

The fold notes which sessions each round touched; their rows in the session index
(:mod:`otel_prov.stores.sessions`) are computed by whoever lists next.  Left to the readers, a web
view polling a store that ingests thousands of sessions a minute would compute them on every page.
So a thread of the serve process does it as the store is written: every :data:`INTERVAL` seconds,
when something was folded since, it opens a reader's snapshot and brings the index up to date with
it (:meth:`otel_prov.read.reader.TraceReader.session_index`): a page then finds little or nothing
left to compute.  A failure is one logged line (once until it succeeds again); it never stops serve
or the ingest, and the next reader computes what is left.
"""

from __future__ import annotations

import logging
import threading

from ..read.reader import TraceReader
from ..stores import StoreSpec, open_for_reading

logger = logging.getLogger(__name__)

INTERVAL = 0.5
"""Seconds between two updates of the session index."""


class SessionLister:
    """The thread that keeps the session index of ``store`` (on disk) up to date."""

    def __init__(self, store: StoreSpec, interval: float = INTERVAL) -> None:
        assert store.path is not None
        self.store = store
        self.interval = interval
        self.rounds = 0
        self._failing = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="otel-prov-sessions", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.update()

    def update(self) -> None:
        """Bring the index up to date with a snapshot of the store opened now."""
        try:
            store = open_for_reading(self.store)
            try:
                TraceReader(store).session_index(wait=None)
            finally:
                store.close()
        except Exception as exc:  # noqa: BLE001 - never stops serve; said once, tried again
            if not self._failing:
                logger.warning("otel-prov serve: the session index of %s was not brought up to date (%s); "
                               "tried again every %.1f s (listings compute what is left)", self.store, exc,
                               self.interval)
            self._failing = True
        else:
            if self._failing:
                logger.info("otel-prov serve: the session index of %s is up to date again", self.store)
            self._failing = False
            self.rounds += 1

    def stop(self, timeout: float) -> None:
        self._stop.set()
        self._thread.join(timeout)
