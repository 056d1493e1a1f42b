"""The write path: one background thread owns the store's writes (:class:`Writer`, for the
in-memory store and an ``rdflib.Dataset``), or none at all for a store that appends to a log
(:class:`AppendWriter`: the on-disk store, :mod:`otel_prov.stores.logstore`).

``export()`` maps spans (Python, holding the GIL) and hands N-Quads text to :class:`Writer`; the
writer thread stores them (Oxigraph parses and writes in Rust with the GIL released), so mapping the
next batch and writing the last one run at the same time on two cores.

- **Merging.** The writer takes everything queued since its last write and stores it in one call.
  An on-disk ``bulk_load`` has a fixed cost per call (new files, a dozen fsyncs: ~13 ms on a quiet
  disk, far more on a busy one), so many small batches must become few large writes.
- **Adaptive merging.** An idle writer writes a batch at once (a lone export is readable within
  milliseconds).  A busy one -- data arrived while it was writing -- waits up to :data:`LINGER` for
  :data:`MERGE_BYTES` to gather, unless someone waits (``wait()``: ``force_flush``, a receiver
  acknowledging) or the writer closes: then it writes at once.  So a burst becomes a few large
  writes, and latency stays bounded by ``LINGER`` plus one write.
- **Both cores at the end.** When the writer closes, nothing is being mapped any more, so the store
  may split what is left and load the parts side by side (:meth:`OxigraphStore.add_side_by_side`):
  the last write, which ``shutdown()`` waits for, takes about half as long.
- **Order.** Removals and additions are applied in the order they were submitted (additions in a
  row are merged; a removal is applied on its own).
- **Nothing dropped.** ``wait(seq)`` returns once everything submitted up to ``seq`` is stored;
  ``close()`` stores what is queued.  A failing store is retried with backoff; what still cannot be
  written at close is saved as N-Quads to a rescue file next to the store, never dropped silently.
  Above :data:`MAX_PENDING_BYTES` of unwritten data, submitting waits (back-pressure).

What was measured and not adopted (figures in ``docs/benchmarks.md``): a write per batch (the fixed
cost dominates), one write of everything at shutdown (nothing readable meanwhile, and the whole
write lands after the last export), a durable N-Quads spool file (appending is cheap, but it does not
make the store write faster, and it needs replay and ordering with removals).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..model.quads import Quad
from ..stores.base import AppendStore, WriteStore, open_private

logger = logging.getLogger(__name__)

MAX_PENDING_BYTES = 256 * 1024 * 1024
"""Past this much unwritten data, ``submit`` waits (back-pressure on the exporting thread)."""
MAX_SUBMIT_WAIT = 30.0
"""Seconds ``submit`` waits for room before refusing with :class:`WriterFull`."""


class NotStored(RuntimeError):
    """A batch was refused, not queued: the caller reports it (``export()`` returns FAILURE, the
    receiver answers UNAVAILABLE so the client retries)."""


class WriterFull(NotStored):
    """The store has not kept up (or is failing) for :data:`MAX_SUBMIT_WAIT`."""


class LogFailed(NotStored):
    """Appending to the store's log failed (a full or failing disk); nothing of the batch is kept."""
_MAX_MERGE_BYTES = 64 * 1024 * 1024
MERGE_BYTES = 2 * 1024 * 1024
"""Under load, the writer waits (up to :data:`LINGER` seconds) until this much is queued."""
LINGER = 0.05
"""How long, at most, a busy writer waits for more data before writing what it has."""


class _Counters:
    """What both writers count (``exporter.stats()``, the receiver's health and back-pressure)."""

    def __init__(self) -> None:
        self.failures = 0
        self.consecutive_failures = 0
        """Failed writes since the last successful one (0 while the store is healthy)."""
        self.last_error = ""
        self.written_quads = 0
        self.rescued = False
        """Whether unwritten data had to be saved to a rescue file at close."""

    @property
    def failing(self) -> str | None:
        """Why the store cannot be written now (None: it can)."""
        return self.last_error if self.consecutive_failures else None

    def _failed(self, exc: Exception) -> None:
        self.failures += 1
        self.consecutive_failures += 1
        self.last_error = str(exc)
        if self.failures == 1 or self.failures % 100 == 0:
            logger.error("otel-prov: writing to the store failed (%d times so far): %s",
                         self.failures, exc)


@dataclass(slots=True)
class _Op:
    seq: int
    data: bytes = b""
    count: int = 0
    remove: Sequence[Quad] = ()


class Writer(_Counters):
    def __init__(self, store: WriteStore, *, rescue_dir: Path | None = None) -> None:
        super().__init__()
        self._store = store
        self._rescue_dir = rescue_dir
        self._cv = threading.Condition()
        self._queue: deque[_Op] = deque()
        self._pending_bytes = 0
        self._submitted = 0
        self._done = 0
        self._closing = False
        self._waiters = 0
        self._busy = False
        self._thread = threading.Thread(target=self._run, name="otel-prov-writer", daemon=True)
        self._thread.start()
        self._pid = os.getpid()
        self._fork_lock = threading.Lock()

    def _own(self) -> None:
        """In a process forked from the one that made this writer (workers of a preloaded app), the
        writer thread was not copied, and its condition may have been held at the fork: start this
        process's own (what the parent had queued is written again: harmless, quads are a set)."""
        if self._pid == os.getpid():
            return
        with self._fork_lock:  # never held at a fork: only taken here, in a forked process
            if self._pid == os.getpid():
                return
            self._cv = threading.Condition()
            self._waiters, self._busy = 0, False
            self._thread = threading.Thread(target=self._run, name="otel-prov-writer", daemon=True)
            self._thread.start()
            self._pid = os.getpid()

    # -- producers ---------------------------------------------------------------------------------

    def add(self, data: bytes, count: int) -> int:
        return self._submit(_Op(0, data=data, count=count))

    def remove(self, quads: Sequence[Quad]) -> int:
        return self._submit(_Op(0, remove=quads))

    def update(self, remove: Sequence[Quad], data: bytes, count: int) -> int:
        """Removals, then additions, as one operation: queued together or refused together."""
        return self._submit(_Op(0, data=data, count=count, remove=remove))

    def _submit(self, op: _Op) -> int:
        self._own()
        deadline = time.monotonic() + MAX_SUBMIT_WAIT
        with self._cv:
            while self._pending_bytes > MAX_PENDING_BYTES and not self._closing:
                if time.monotonic() >= deadline:
                    raise WriterFull(f"more than {MAX_PENDING_BYTES} bytes not yet stored for "
                                     f"{MAX_SUBMIT_WAIT:.0f} s; batch refused")
                self._cv.wait(0.1)
            if self._closing:
                raise RuntimeError("writer is closed")
            self._submitted += 1
            op.seq = self._submitted
            self._queue.append(op)
            self._pending_bytes += len(op.data)
            self._cv.notify_all()
            return op.seq

    @property
    def submitted(self) -> int:
        """The sequence number of the last submission (``wait(writer.submitted)`` waits for all so far)."""
        return self._submitted

    @property
    def pending_bytes(self) -> int:
        """N-Quads bytes submitted and not yet stored."""
        return self._pending_bytes

    def wait(self, seq: int | None = None, timeout: float | None = None) -> bool:
        """Block until everything submitted up to ``seq`` (default: so far) is stored."""
        self._own()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            target = self._submitted if seq is None else seq
            self._waiters += 1  # someone waits: the writer writes at once, it does not linger
            self._cv.notify_all()
            try:
                while self._done < target:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    if not self._thread.is_alive():
                        return False
                    self._cv.wait(remaining if remaining is not None else 0.5)
                return True
            finally:
                self._waiters -= 1

    @property
    def alive(self) -> bool:
        """Whether the writer thread still runs (after :meth:`close`: a store that hangs)."""
        return self._thread.is_alive()

    def close(self, timeout: float | None = None) -> bool:
        """Store what is queued, stop the thread.  Returns whether everything was stored."""
        self._own()
        with self._cv:
            self._closing = True
            self._cv.notify_all()
        self._thread.join(timeout)
        return not self._thread.is_alive() and not self._queue and not self.rescued

    # -- the writer thread ------------------------------------------------------------------------

    def _take(self) -> list[_Op] | None:
        with self._cv:
            if not self._queue:
                self._busy = False  # data found waiting after a write means load: linger next time
            while not self._queue and not self._closing:
                self._cv.wait()
            if not self._queue:
                return None
            if self._busy:
                self._linger()
            self._busy = True
            ops = [self._queue.popleft()]
            size = len(ops[0].data)
            # Merge consecutive additions into one write; a removal is applied on its own.
            while (self._queue and not ops[0].remove and not self._queue[0].remove
                   and size < _MAX_MERGE_BYTES):
                op = self._queue.popleft()
                ops.append(op)
                size += len(op.data)
            return ops

    def _linger(self) -> None:
        """Adaptive merging: under load, wait briefly for more data so the store gets few large
        writes (each costs a fixed ~13 ms on disk) -- unless someone waits or the writer closes."""
        deadline = time.monotonic() + LINGER
        while (self._pending_bytes < MERGE_BYTES and not self._waiters and not self._closing
               and not self._queue[0].remove):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._cv.wait(remaining)

    def _run(self) -> None:
        delay = 0.05
        while True:
            ops = self._take()
            if ops is None:
                return
            try:
                if ops[0].remove:  # taken alone: removals, then its additions
                    self._store.remove(ops[0].remove)
                    count = ops[0].count
                    if ops[0].data:
                        self._store.add(ops[0].data, count)
                    self.written_quads += count
                else:
                    count = sum(op.count for op in ops)
                    data = ops[0].data if len(ops) == 1 else b"".join(op.data for op in ops)
                    add = self._store.add
                    if self._closing:  # nothing is mapped any more: the store may use every core
                        add = getattr(self._store, "add_side_by_side", add)
                    add(data, count)
                    self.written_quads += count
            except Exception as exc:  # the store failed: keep the data, retry
                self._failed(exc)
                with self._cv:
                    self._queue.extendleft(reversed(ops))
                    closing = self._closing
                if closing and self.consecutive_failures > 3:
                    self._rescue()
                    return
                time.sleep(delay)
                delay = min(delay * 2, 5.0)
                continue
            delay = 0.05
            if self.consecutive_failures:
                logger.warning("otel-prov: the store is written to again, after %d failed attempts",
                               self.consecutive_failures)
            self.consecutive_failures = 0
            with self._cv:
                self._pending_bytes -= sum(len(op.data) for op in ops)
                self._done = ops[-1].seq
                self._cv.notify_all()

    def _rescue(self) -> None:
        """The store keeps failing at close: save what is left as N-Quads so nothing is lost."""
        with self._cv:
            ops, self._queue = list(self._queue), deque()
        self.rescued = True
        directory = self._rescue_dir or Path.cwd()
        path = directory / f"otel-prov-rescue-{os.getpid()}-{time.time_ns()}.nq"
        removals = sum(1 for op in ops if op.remove)
        try:
            directory.mkdir(parents=True, exist_ok=True)  # ($XDG_DATA_HOME/otel-prov may not exist yet)
            with open_private(path) as fh:
                for op in ops:
                    fh.write(op.data)
                fh.flush()
                os.fsync(fh.fileno())
            logger.error("otel-prov: the store could not be written; %d unwritten batches saved as "
                         "N-Quads to %s (%d removals not applied)", len(ops) - removals, path, removals)
        except OSError as exc:
            logger.error("otel-prov: the store could not be written and the rescue file %s could not "
                         "be saved either (%s): %d batches lost", path, exc, len(ops))
        with self._cv:
            self._done = self._submitted
            self._cv.notify_all()


class AppendWriter(_Counters):
    """The writer for a store that appends to a log (:class:`~otel_prov.stores.base.AppendStore`):
    no thread and no queue.  ``add`` and ``remove`` append in the caller's thread (the pipeline
    calls them one at a time, in mapping order) and return once the data is in the OS page cache;
    ``wait`` is the group commit that makes it durable.  Same interface as :class:`Writer`."""

    def __init__(self, store: AppendStore) -> None:
        super().__init__()
        self._store = store
        self._closed = False
        self.pending_bytes = 0
        """Always 0: nothing waits in memory."""

    def add(self, data: bytes, count: int) -> int:
        return self.update((), data, count)

    def remove(self, quads: Sequence[Quad]) -> int:
        return self.update(quads, b"", 0)

    def update(self, remove: Sequence[Quad], data: bytes, count: int) -> int:
        """Removals, then additions, appended in one write (all or nothing): :class:`LogFailed` if
        the log cannot be written."""
        try:
            self._store.update(remove, data, count)
        except OSError as exc:
            self._failed(exc)
            raise LogFailed(f"the store's log could not be written: {exc}") from exc
        self.consecutive_failures = 0
        self.written_quads += count
        return self._store.position

    @property
    def failing(self) -> str | None:
        """Why the log cannot be written now; the log clears it itself once it can (it probes)."""
        return self._store.failure

    @property
    def submitted(self) -> int:
        return self._store.position

    def wait(self, seq: int | None = None, timeout: float | None = None) -> bool:
        """Whether everything appended up to ``seq`` (default: so far) became durable within
        ``timeout`` seconds; False too if syncing failed (the caller does not acknowledge; the data
        may still be synced later)."""
        try:
            return self._store.sync(seq, timeout)
        except OSError as exc:
            self._failed(exc)
            return False

    @property
    def alive(self) -> bool:
        return not self._closed

    def close(self, timeout: float | None = None) -> bool:
        """Nothing is queued: the store's ``close`` syncs what was appended."""
        self._closed = True
        return True
