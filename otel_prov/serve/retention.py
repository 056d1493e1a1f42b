"""``otel-prov serve --prune-older-than DURATION``: serve's own retention, on a schedule.

A thread of the serve process runs :func:`otel_prov.erasure.prune` every ``--prune-interval`` (the
first time after one interval, at most a minute after serve starts): the same erasure as ``otel-prov
prune``, through a writer of its own on the same store, so holds are respected and each erasure is
recorded.  At most :data:`BATCH` sessions are erased at a time, the oldest first, and batches follow
one another until none is left or serve stops.  A failure is one logged line, tried again at the next
interval: it never stops serve.  While serve indexes an on-disk store, the erased sessions are gone
from what every reader sees, but their text stays in the store's files until ``otel-prov check
--rebuild`` runs with serve stopped (docs/store.md).
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from .. import erasure
from ..settings import ServeSettings

logger = logging.getLogger(__name__)

BATCH = 1000
"""Sessions erased at most in one go (each batch reads its sessions' quads into memory)."""
FIRST_DELAY = 60.0
"""Seconds after serve starts before the first round, at most."""


def _shown(duration: timedelta) -> str:
    seconds = duration.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


class Pruner:
    """The thread that prunes the store of ``settings`` (``settings.prune_older_than`` set)."""

    def __init__(self, settings: ServeSettings) -> None:
        assert settings.prune_older_than is not None
        self.settings = settings
        self.older = settings.prune_older_than
        self.interval = settings.prune_interval.total_seconds()
        self.reason = f"retention: older than {_shown(self.older)}"
        self.erased = 0
        """Sessions erased since serve started."""
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="otel-prov-prune", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        delay = min(self.interval, FIRST_DELAY)
        while not self._stop.wait(delay):
            self.prune_now()
            delay = self.interval

    def prune_now(self) -> None:
        """One round: batches until nothing older is left (but held sessions), or serve stops."""
        erased, held, rebuilt = 0, 0, True
        try:
            while not self._stop.is_set():
                done = erasure.prune(self.settings.store, self.older, by="otel-prov serve",
                                     reason=self.reason, limit=BATCH, blob_dir=self.settings.blob_dir)
                erased, held, rebuilt = erased + done.erased, done.held, rebuilt and done.rebuilt
                if not done.more or not done.erased:
                    break
        except Exception as exc:  # noqa: BLE001 - never stops serve; said, and tried again
            logger.error("otel-prov serve: pruning sessions older than %s failed (%s); %d erased in this "
                         "round; tried again in %s", _shown(self.older), exc, erased,
                         _shown(timedelta(seconds=self.interval)))
        else:
            if erased or held:
                logger.info("otel-prov serve: pruned %d session(s) older than %s%s%s", erased,
                            _shown(self.older), f", {held} held kept" if held else "",
                            "" if rebuilt or not erased else "; their text stays in the store's files until "
                            "'otel-prov check --rebuild' runs with serve stopped")
        finally:
            self.erased += erased
            self.rounds += 1

    def stop(self, timeout: float) -> None:
        """No new batch; wait at most ``timeout`` seconds for the one under way."""
        self._stop.set()
        self._thread.join(timeout)
