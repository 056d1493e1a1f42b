"""The one path from spans to the store, shared by the SDK exporter and the OTLP receiver: map
(:class:`~otel_prov.mapping.mapper.TraceMapper`), submit to the writer (:class:`.writer.Writer`) in
mapping order, wait for the commit, and at the end store what is left or rescue it.

An update the writer refuses (a full disk: nothing of it is kept) is handed back to the mapper
(:meth:`~otel_prov.mapping.mapper.TraceMapper.unstored`), so that a framework trace's next span --
or the retry of the same request -- writes that trace whole, never a change on top of quads that
are not there."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from ..errors import StoreError
from ..mapping.limits import DEFAULT_MAX_ATTRIBUTE_BYTES
from ..mapping.mapper import ConversationOp, TraceMapper, Update
from ..mapping.policy import ContentPolicy
from ..mapping.spans import LogRecord, SpanRecord
from ..model.quads import nquads
from ..stores import Blobs
from ..stores.base import AppendStore, WriteStore
from .writer import AppendWriter, NotStored, Writer

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
                 max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
                 mapper: TraceMapper | None = None, policy: ContentPolicy | None = None,
                 blobs: Blobs | None = None, blob_threshold: int = 0) -> None:
        self.store = store
        self.blobs = blobs
        """Where large values go (:mod:`otel_prov.stores.blobs`): written before the quads that name
        them.  None: every value stays inline."""
        self.name = name
        """Who runs it (``otel-prov exporter``, ``otel-prov serve``), for log lines."""
        self.mapper = mapper or TraceMapper(profile, max_attribute_bytes=max_attribute_bytes, policy=policy,
                                            blob_threshold=blob_threshold if blobs is not None else 0)
        """Maps with the content policy (``policy``): the writer, the store's log and a rescue file only
        ever get what it lets through."""
        self.writer: Writer | AppendWriter = (
            AppendWriter(store) if _appends(store) else Writer(store, rescue_dir=rescue_dir))
        self.spans = 0
        """Spans submitted so far."""
        self.logs = 0
        """GenAI events (log records) submitted so far."""
        self._lock = threading.Lock()
        self._close_lock = threading.Lock()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def submit(self, records: Sequence[SpanRecord], logs: Sequence[LogRecord] = ()) -> Submitted:
        """Map ``records`` (and the GenAI events of ``logs``) and hand the update to the writer.  One
        at a time: a framework trace's updates build on each other, so they must reach the writer in
        the order they were made.  Raises :class:`~.writer.WriterFull` when the store has not kept up,
        :class:`PipelineClosed` after :meth:`close`."""
        with self._lock:
            if self._closed:
                raise PipelineClosed(f"{self.name} is shut down")
            update = self.mapper.map(records, logs)
            self.spans += len(records)
            self.logs += len(logs)
            return self._write(update)

    def apply_conversations(self, ops: Sequence[ConversationOp]) -> Submitted:
        """Another mapper's conversation changes (:meth:`TraceMapper.apply_conversations`), mapped
        and handed to the writer like :meth:`submit`'s."""
        with self._lock:
            if self._closed:
                raise PipelineClosed(f"{self.name} is shut down")
            return self._write(self.mapper.apply_conversations(ops))

    def _write(self, update: Update) -> Submitted:
        if update.remove or update.add:
            try:
                if update.blobs:
                    self._store_blobs(update)
                self.writer.update(update.remove, nquads(update.add), len(update.add))
            except NotStored:
                self.mapper.unstored(update)
                raise
        return Submitted(self.writer.submitted, update)

    def _store_blobs(self, update: Update) -> None:
        """The blobs of ``update``, written (fsynced) before any quad that names them is handed on; a
        blob store that fails refuses the update (:class:`~.writer.NotStored`: nothing of it is
        stored, the exporter reports it, the receiver answers UNAVAILABLE)."""
        if self.blobs is None:  # a mapper given without a blob store (never by this class)
            raise NotStored(f"{self.name}: values stored by reference but no blob store")
        try:
            self.blobs.put_all(update.blobs)
        except StoreError as exc:
            raise NotStored(str(exc)) from exc

    def unstored(self, update: Update) -> None:
        """``update`` was submitted but its commit is not confirmed (the receiver does not
        acknowledge it): a retry must write its traces whole."""
        self.mapper.unstored(update)

    def wait(self, seq: int | None = None, timeout: float | None = None) -> bool:
        """Whether everything submitted up to ``seq`` (default: so far) was stored in time."""
        return self.writer.wait(seq, timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Refuse new spans, store what is queued (or rescue it), release the store.  Returns whether
        everything was stored.  Returns within about ``timeout`` seconds whatever the store does: a
        store that hangs (a disk that does not answer) is left to a background thread (what was
        committed is safe).  Closing again returns True at once."""
        deadline = None if timeout is None else time.monotonic() + timeout
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
        store = self.store

        def close_store() -> None:
            with self._lock:  # no submit() is between mapping and handing over any more
                pass
            if _appends(store):
                store.close(None if deadline is None else max(0.0, deadline - time.monotonic() - 0.1))
            else:
                store.close()

        try:
            finished = _within(close_store, deadline, f"{self.name}-close")
        except Exception as exc:
            logger.error("%s: closing the store failed: %s", self.name, exc)
            return False
        if not finished:
            logger.error("%s: the store did not close within %.1f s (a disk that does not answer?); "
                         "what was appended stays in its log, to be synced and folded when it can",
                         self.name, timeout or 0)
            return False
        return stored


def _within(work: Callable[[], None], deadline: float | None, name: str) -> bool:
    """Run ``work`` in a thread and wait for it until ``deadline`` (``time.monotonic()``; None: no
    limit).  False if it has not finished by then (it goes on in the background: a daemon thread);
    its exception is raised here."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # handed to the waiting thread
            errors.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    if thread.is_alive():
        return False
    if errors:
        raise errors[0]
    return True
