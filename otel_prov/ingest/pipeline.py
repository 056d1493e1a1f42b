"""The one path from spans to the store, shared by the SDK exporter and the OTLP receiver: map
(:class:`~otel_prov.mapping.mapper.TraceMapper`), submit to the writer (:class:`.writer.Writer`) in
mapping order, wait for the commit, and at the end store what is left or rescue it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from ..mapping.limits import DEFAULT_MAX_ATTRIBUTE_BYTES
from ..mapping.mapper import TraceMapper, Update
from ..mapping.spans import SpanRecord
from ..model.quads import nquads
from ..stores.base import AppendStore, WriteStore
from .writer import AppendWriter, Writer

logger = logging.getLogger(__name__)


def _appends(store: WriteStore) -> TypeGuard[AppendStore]:
    """A store that appends to a durable log needs no writer thread (:class:`.writer.AppendWriter`)."""
    return callable(getattr(store, "sync", None)) and hasattr(store, "position")


class PipelineClosed(RuntimeError):
    """Spans submitted after :meth:`IngestPipeline.close`."""


@dataclass(frozen=True, slots=True)
class Submitted:
    """What :meth:`IngestPipeline.submit` did: the mapping's update, and the writer's sequence
    number to wait for (everything submitted so far: a retried batch may map to nothing new while
    its first attempt is still queued)."""

    seq: int
    update: Update


class IngestPipeline:
    """Thread-safe.  Owns the mapper and the writer; closes the store with :meth:`close`."""

    def __init__(self, store: WriteStore, profile: str, *, name: str, rescue_dir: Path | None = None,
                 max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES) -> None:
        self.store = store
        self.name = name
        """Who runs it (``otel-prov exporter``, ``otel-prov serve``), for log lines."""
        self.mapper = TraceMapper(profile, max_attribute_bytes=max_attribute_bytes)
        self.writer: Writer | AppendWriter = (
            AppendWriter(store) if _appends(store) else Writer(store, rescue_dir=rescue_dir))
        self.spans = 0
        """Spans submitted so far."""
        self._lock = threading.Lock()
        self._close_lock = threading.Lock()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, records: Sequence[SpanRecord]) -> Submitted:
        """Map ``records`` and hand the update to the writer.  One at a time: a framework trace's
        updates build on each other, so they must reach the writer in the order they were made.
        Raises :class:`~.writer.WriterFull` when the store has not kept up, :class:`PipelineClosed`
        after :meth:`close`."""
        with self._lock:
            if self._closed:
                raise PipelineClosed(f"{self.name} is shut down")
            update = self.mapper.map(records)
            self.spans += len(records)
            if update.remove:
                self.writer.remove(update.remove)
            if update.add:
                self.writer.add(nquads(update.add), len(update.add))
            return Submitted(self.writer.submitted, update)

    def wait(self, seq: int | None = None, timeout: float | None = None) -> bool:
        """Whether everything submitted up to ``seq`` (default: so far) was stored in time."""
        return self.writer.wait(seq, timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Refuse new spans, store what is queued (or rescue it), release the store.  Returns whether
        everything was stored.  A store that hangs longer than ``timeout`` is left to the writer
        thread (what was committed is safe).  Closing again returns True at once."""
        with self._close_lock:
            if self._closed:
                return True
            self._closed = True
        # Close the writer first: a submit() waiting for room in its queue is released (and fails)
        # instead of holding the lock forever.
        stored = self.writer.close(timeout)
        if self.writer.alive:
            logger.error("%s: the store did not finish writing within %.0f s at shutdown; what is still "
                         "queued is not stored", self.name, timeout or 0)
            return False
        with self._lock:  # no submit() is between mapping and handing over any more
            pass
        try:
            self.store.close()
        except Exception as exc:
            logger.error("%s: closing the store failed: %s", self.name, exc)
            return False
        return stored
