"""The on-disk store (``oxigraph:PATH``): a log that is the truth, and an Oxigraph index derived
from it.  Any number of processes write and read one store at the same time.

::

    STORE/                      the Oxigraph index (RocksDB files)
    STORE/segments/*.seg        the log: one segment per writing process (:mod:`.segments`)
    STORE/segments/checkpoint.json, index.lock, fold.gate

- **Writing** (:class:`LoggedStore`): each process appends its additions and removals, in order,
  to its own segment -- no lock between processes -- and syncs them in group commits.
- **Indexing** (:class:`IndexerService`, :mod:`.indexer`): the process holding the index lock folds
  every segment into the index when the log stops growing, or at most
  :data:`~.indexer.FOLD_MAX_DELAY` seconds after it saw something to fold.  Every writer tries to
  take the lock when it opens and then every :data:`~.indexer.TAKE_OVER_INTERVAL` seconds, so when
  the indexing process exits another takes over; a writer that closes folds what is left, within
  its timeout, so a store whose writers all exited cleanly is folded whole (an exporter hands a
  large rest to a background process, :mod:`.folder`, so that ``shutdown()`` need not wait).  A
  fold that fails closes the index (RocksDB refuses every write after some I/O errors until it is
  reopened) and releases the lock: the next attempt reopens it.
- **Reading** (:func:`open_reader`) takes no lock and writes nothing, ever (docs/store.md,
  "Reading").  It reads a read-only snapshot of the index; what the log holds past the checkpoint
  (a writer's last moments, a writer killed while nobody indexed) is replayed into an in-memory
  copy, so a reader sees every committed operation even on a read-only file system.  When a process
  is indexing, the reader first waits (at most :data:`READ_WAIT` seconds) until it has folded what
  the log held when the reader started, then opens the snapshot between two fold rounds (the fold
  gate, shared, :func:`~.indexer.fold_gate`) and reads it as it is, without a copy.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import itertools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

import rdflib

from ..errors import StoreError, StoreNotFound
from ..model.quads import Quad, nquads
from . import folder, rebuild, sessions
from . import segments as seg
from .base import StoreSpec
from .indexer import (
    FOLD_BYTES,
    FOLD_EAGER_BYTES,
    FOLD_INTERVAL,
    FOLD_MAX_DELAY,
    TAKE_OVER_INTERVAL,
    Indexer,
    IndexLock,
    apply_records,
    fold_gate,
    index_held,
    wait_folded,
)
from .oxigraph import (
    COMPACTED,
    SNAPSHOT_WAIT,
    Compacted,
    Locked,
    OxigraphStore,
    check_index,
    check_not_a_file,
    prepare_directory,
)

logger = logging.getLogger(__name__)

READ_WAIT = 5.0
"""Seconds a reader waits, at most, for the indexing process to fold what the log holds."""
READ_LOG_BYTES = 256 * 1024 * 1024
"""A reader replays at most about this much of the unfolded log into memory (its memory bound);
past it, each writer's first operations are shown and the rest is reported as not shown."""
FINAL_FOLD_BYTES = FOLD_BYTES // 8
"""Rounds of the fold a closing writer does are this small, so it can stop at its deadline."""
SESSIONS_BUDGET = 0.1
"""Seconds the indexing thread computes rows of the session index between two looks at the log."""
CLOSE_SESSIONS_BUDGET = 2.0
"""Seconds a closing writer computes rows of the session index, at most (the next indexer: the rest)."""
HAND_OVER_BYTES = 1024 * 1024
"""A closing exporter hands the fold to a background process (:mod:`.folder`) when at least this
much of the log is left to fold (less folds here in milliseconds: not worth starting a process)."""


def log_backlog(path: Path, every: float = 0.25) -> Callable[[], int]:
    """A probe of how many bytes of the log of the on-disk store at ``path`` are not folded into its
    index yet: read from the directory at most every ``every`` seconds (it lists the segments)."""
    last = [0.0, 0]
    lock = threading.Lock()

    def backlog() -> int:
        with lock:
            now = time.monotonic()
            if now - last[0] >= every:
                try:
                    last[1] = seg.unfolded_bytes(seg.segments_dir(path))
                except (OSError, StoreError):
                    last[1] = 0  # a store that cannot be read says so by its writes
                last[0] = now
            return int(last[1])

    return backlog


class IndexerService:
    """Holds the index (when it can) for one open store, and folds in a background thread."""

    def __init__(self, path: Path, *, interval: float = FOLD_INTERVAL,
                 take_over: float = TAKE_OVER_INTERVAL) -> None:
        self.path = path
        self.lock = IndexLock(seg.segments_dir(path))
        self.index: OxigraphStore | None = None
        self.indexer: Indexer | None = None
        self.errors = 0
        self._failing = False
        self._interval = interval
        self._take_over = take_over
        self._stop = threading.Event()
        self._mutex = threading.Lock()  # one fold at a time; close waits for it
        self._release_on_stop = False
        self._since: float | None = None
        """When the indexer first saw the log's unfolded part (since the last fold)."""
        self._seen = 0
        """The unfolded bytes it saw at its last look."""
        self._rows_due = True
        """Whether rows of the session index may be left to compute (:mod:`.sessions`)."""
        self._rows_left = False
        """Whether the last slice of rows stopped at its budget: the next look at the log is at once,
        and rows are computed on unless a fold is due."""
        self.take()  # an index that cannot be opened is an error now, not later
        self._thread = threading.Thread(target=self._run, name="otel-prov-indexer", daemon=True)
        self._thread.start()

    def take(self) -> bool:
        """Become the indexer if the index lock is free; raises :class:`StoreError` if the index
        cannot be opened for another reason than a lock."""
        with self._mutex:
            if self.index is not None:
                return True
            if not self.lock.acquire():
                return False
            try:
                self.index = OxigraphStore(self.path)
            except Locked:  # RocksDB held by a process that did not take the index lock
                self.lock.release()
                return False
            except BaseException:
                self.lock.release()
                raise
            self.indexer = Indexer(self.path, self.index)
            logger.debug("otel-prov: this process indexes %s", self.path)
            return True

    def fold(self, targets: dict[str, int] | None = None) -> int:
        """Fold everything committed now, or what the log held at ``targets``
        (:meth:`.Indexer.fold_all`), if this process holds the index; the records folded."""
        with self._mutex:
            if self.indexer is None:
                return 0
            folded = self.indexer.fold_all(self._stop, targets)
            if self.indexer.moved:  # the store is no longer where this index was: let it go; the
                self._drop_locked()  # next take() opens the index of the store now at the path
            return folded

    def _run(self) -> None:
        last_try = 0.0
        while not self._stop.wait(self._interval if not self._rows_left else 0.0):
            try:
                if self.index is None:
                    last_try += self._interval
                    if last_try < self._take_over:
                        continue
                    last_try = 0.0
                    if not self.take():
                        continue
                if self._due():
                    self.fold(seg.pending_bytes(seg.segments_dir(self.path)))
                    self._since, self._seen = None, 0
                    self._rows_due = True
                elif self._rows_due:  # between rounds: the session index's rows of what was folded
                    self._rows_due = self._rows_left = not self.update_sessions(SESSIONS_BUDGET)
            except Exception as exc:  # the log keeps everything: reopen the index, try again
                self.errors += 1
                if not self._failing or self.errors % 100 == 0:
                    logger.error("otel-prov: folding the log into the index at %s failed (%d times so "
                                 "far): %s; the index is reopened and the fold tried again", self.path,
                                 self.errors, exc)
                self._failing = True
                self._drop()
                last_try = 0.0
            else:
                if self._failing and self.index is not None:
                    self._failing = False
                    logger.warning("otel-prov: folding the log into the index at %s works again",
                                   self.path)
        if self._release_on_stop:  # close() handed the fold over during a round: let the folder in
            self._drop()

    def update_sessions(self, budget: float | None) -> bool:
        """Compute rows of the session index for about ``budget`` seconds (:func:`.sessions.update`);
        whether none is left."""
        with self._mutex:
            if self.index is None:
                return True
            return sessions.update(self.index, self.path, budget)

    def _due(self) -> bool:
        """Whether to fold now: when the log has stopped growing (its writers paused), or what is
        not folded has waited :data:`~.indexer.FOLD_MAX_DELAY` seconds, or is
        :data:`~.indexer.FOLD_EAGER_BYTES` or more.  While writers append without a pause (a burst
        of exports, a stream of requests) folding waits a little, so it does not take the CPU from
        the mapping for a short burst, and folds larger batches (each ``bulk_load`` has a fixed cost)."""
        left = seg.unfolded_bytes(seg.segments_dir(self.path))
        if not left:
            self._since = None
            return False
        now = time.monotonic()
        if self._since is None:
            self._since = now
        grown, self._seen = left != self._seen, left
        return not grown or now - self._since >= FOLD_MAX_DELAY or left >= FOLD_EAGER_BYTES

    def _drop(self) -> None:
        """Close the index and release the lock (after a failure: RocksDB stays unusable after some
        I/O errors until it is reopened, and another process may index meanwhile)."""
        with self._mutex:
            self._drop_locked()

    def forget(self) -> None:
        """In a process forked from this one's: let the parent's index be.  Its RocksDB handle is
        never used, closed or destroyed here (closing it writes to the index the parent goes on
        writing); this process's copy of the index lock's descriptor is closed (the parent keeps the
        lock)."""
        if self.index is not None:
            _keep_for_ever(self.index)
        self.index = self.indexer = None
        self.lock.release()

    def _drop_locked(self) -> None:
        index, indexer, self.index, self.indexer = self.index, self.indexer, None, None
        try:
            if index is not None and indexer is not None and indexer.moved:
                # Never closed: RocksDB would write its manifest at the path, now another store's.
                _keep_for_ever(index)
            elif index is not None:
                index.close()
        except Exception as exc:
            logger.debug("otel-prov: closing the failed index at %s: %s", self.path, exc)
        finally:
            self.lock.release()

    def close(self, deadline: float | None = None, *, hand_over: bool = False) -> None:
        """Stop folding in the background; then, until ``deadline`` (``time.monotonic()``; None:
        no limit), fold what is left if this process holds the index or can take it -- the last
        writer to close leaves the store folded -- and release the index.

        With ``hand_over``, when :data:`HAND_OVER_BYTES` or more are left to fold, a background
        folder process (:mod:`.folder`) is started with the index lock and folds them, and close
        returns at once: it does not wait for the index, not even for a fold round under way in
        the background thread (which releases the index when that round ends)."""
        self._stop.set()
        if hand_over and (deadline is None or time.monotonic() < deadline) and self._hand_over():
            return
        self._thread.join()
        try:
            if deadline is None or time.monotonic() < deadline:
                self._fold_rest(deadline)
            if self.index is not None and (deadline is None or time.monotonic() < deadline):
                left = CLOSE_SESSIONS_BUDGET if deadline is None else deadline - time.monotonic()
                self.update_sessions(min(CLOSE_SESSIONS_BUDGET, left))  # the rest: the next indexer
        finally:
            self._drop()

    def _hand_over(self) -> bool:
        """Start a folder for what is left, sharing the index lock with it; False if there is not
        enough left to be worth a process, or none can be started (the caller folds)."""
        try:
            if not self.lock.held and not self.take():
                # Another process indexes: it folds what is left.  The background thread may take
                # the index after all (that process letting go meanwhile): it gives it up as it stops.
                self._release_on_stop = True
                return True
            if seg.unfolded_bytes(seg.segments_dir(self.path)) < HAND_OVER_BYTES:
                return False
            fd = self.lock.duplicate()
            try:
                started = folder.start(self.path, fd)
            finally:
                os.close(fd)
        except Exception as exc:  # the log keeps everything: fold here instead
            logger.debug("otel-prov: handing the fold at %s over failed: %s", self.path, exc)
            return False
        if started is None:
            return False
        logger.debug("otel-prov: the rest of the log at %s is folded by a background process (pid %d)",
                     self.path, started.pid)
        # The folder opens the index once this process has closed it: now, or after the round under
        # way (the background thread closes it then, as it stops).
        self._release_on_stop = True
        if self._mutex.acquire(blocking=False):
            try:
                self._drop_locked()
            finally:
                self._mutex.release()
        return True

    def _fold_rest(self, deadline: float | None) -> None:
        try:
            if not self.take():
                return
            with self._mutex:
                indexer = self.indexer
                if indexer is not None:
                    indexer.side_by_side = True  # this process writes nothing more: every CPU
                while indexer is not None and (deadline is None or time.monotonic() < deadline):
                    if indexer.fold_round(FINAL_FOLD_BYTES) < 0:
                        return
        except Exception as exc:  # the log keeps it: the next indexer folds it
            logger.warning("otel-prov: folding the rest of the log at %s on close failed: %s",
                           self.path, exc)


class LoggedStore:
    """A :class:`~.base.WriteStore` that appends to this process's log segment
    (:class:`~.base.AppendStore`): ``add`` and ``remove`` return with the operation in the OS page
    cache (it survives ``kill -9``); :meth:`sync` makes everything appended durable."""

    def __init__(self, path: Path, *, hand_over_fold: bool = False) -> None:
        prepare_directory(path)
        self.path = path
        try:
            seg.remove_stale_tmp(seg.segments_dir(path))  # a writer that died before naming its segment
            self.log = seg.SegmentWriter(seg.segments_dir(path))
        except OSError as exc:
            raise StoreError(f"cannot write the store's log at {seg.segments_dir(path)}: "
                             f"{exc.strerror or exc}") from exc
        try:
            self.service = IndexerService(path)
        except BaseException:
            self.log.close()
            raise
        self._pid = os.getpid()
        self._fork_lock = threading.Lock()
        self._inherited = False
        _OPEN.add(self)
        self.hand_over_fold = hand_over_fold
        """Whether :meth:`close` hands a large fold to a background process (the SDK exporter: an
        application's ``shutdown()`` then returns once its spans are durable)."""

    def _own(self) -> None:
        """In a process forked from the one that opened the store (workers of a preloaded app, a
        ``multiprocessing`` pool): the log segment and the index it inherited are the parent's --
        appending to that segment, or folding with that RocksDB handle, corrupts the index.  Let
        them be, and open this process's own segment and indexer (on first use, not at the fork)."""
        if self._pid == os.getpid():
            return
        with self._fork_lock:  # never held at a fork: only taken here, in a forked process
            if self._pid == os.getpid():
                return
            self._let_go()
            log = seg.SegmentWriter(seg.segments_dir(self.path))  # OSError: tried again next time
            try:
                service = IndexerService(self.path)
            except BaseException:
                log.close()
                raise
            self.log, self.service, self._pid, self._inherited = log, service, os.getpid(), False

    def _let_go(self) -> None:
        """Let the parent's segment and index be (once; called with the fork lock held)."""
        if not self._inherited:
            self._inherited = True
            self.log.forget()
            self.service.forget()

    @property
    def position(self) -> int:
        """Bytes appended so far: pass to :meth:`sync`."""
        self._own()
        return self.log.appended

    @property
    def failure(self) -> str | None:
        """Why the log cannot be written now (None: it can); cleared by the log's own probe."""
        if self._pid != os.getpid():
            return None  # the parent's is not this process's
        return self.log.failure

    def add(self, data: bytes, count: int) -> None:
        self.update((), data, count)

    def remove(self, quads: Sequence[Quad]) -> None:
        self.update(quads, b"", 0)

    def update(self, remove: Sequence[Quad], data: bytes, count: int) -> None:
        """Removals, then additions, appended in one write: all of them or none."""
        records = [(seg.REMOVE, nquads(remove))] if remove else []
        if data:
            records.append((seg.ADD, data))
        if records:
            self._own()
            self.log.append_all(records)

    def sync(self, upto: int | None = None, timeout: float | None = None) -> bool:
        """Whether everything appended up to ``upto`` (default: so far) became durable within
        ``timeout`` seconds (group commit: callers at the same time share one ``fdatasync``)."""
        self._own()
        return self.log.sync(upto, timeout)

    def close(self, timeout: float | None = None) -> None:
        """Sync and seal this process's segment, fold what is left (within ``timeout`` seconds, if
        this process indexes or nobody does), release the index."""
        if self._pid != os.getpid():  # forked, and nothing written here: the parent's are its own
            with self._fork_lock:
                self._let_go()
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            self.log.close()
        finally:
            self.service.close(deadline, hand_over=self.hand_over_fold)

    # -- reading back in this process (tests, notebooks) ------------------------------------------

    def query(self, sparql: str) -> list[Any]:
        """A query's results (pyoxigraph's own), after folding what this process appended."""
        with self._reader() as store:
            result = store.query(sparql)
            return list(result) if not isinstance(result, bool) else [result]

    def to_dataset(self) -> rdflib.Dataset:
        with self._reader() as store:
            return store.to_dataset()

    def _reader(self) -> _Closing:
        self._own()
        self.log.sync()
        if self.service.index is not None:
            self.service.fold()
        return _Closing(open_reader(self.path))


_KEPT: list[Any] = []

_OPEN: weakref.WeakSet[LoggedStore] = weakref.WeakSet()
"""The stores open in this process, let go of in a child at the fork (:func:`_after_fork`)."""


def _after_fork() -> None:
    """In a forked child, at once: close its copies of every open store's descriptors (segment,
    index lock), so a child that never uses the store -- a ``multiprocessing`` helper, an idle
    worker -- does not hold the parent's locks after the parent lets go of them.  Nothing here takes
    a lock or writes (:meth:`LoggedStore._let_go`); a child that uses the store opens its own."""
    try:
        for store in list(_OPEN):
            store._let_go()
    except Exception as exc:  # never fail a fork; the child lets go on first use instead
        logger.debug("otel-prov: letting the parent's stores go in a forked child: %s", exc)


os.register_at_fork(after_in_child=_after_fork)


def _keep_for_ever(obj: Any) -> None:
    """Never destroy ``obj`` in this process, not even at its exit (a RocksDB handle inherited from a
    parent: its destructor would write to the parent's index)."""
    _KEPT.append(obj)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))  # survives the interpreter's clean-up too


class _Closing:
    def __init__(self, store: OxigraphStore) -> None:
        self.store = store

    def __enter__(self) -> OxigraphStore:
        return self.store

    def __exit__(self, *exc: object) -> None:
        self.store.close()


def fold(path: Path, *, compact: bool = False) -> int | None:
    """Fold the log of the store at ``path`` into its index now, as its indexing process does (the
    index lock, the index read-write): the records folded, or None if another process holds the
    index lock (it folds).  With ``compact``, the index is then rebuilt from what it holds
    (:mod:`.rebuild`): Oxigraph never collects the text of a removed literal from its files, so only
    then is an erased text gone from the store's files (``otel-prov delete``).  A writer's work,
    never a reader's."""
    directory = seg.segments_dir(path)
    lock = IndexLock(directory)
    if not lock.acquire():
        return None
    try:
        index = OxigraphStore(path)
        try:
            folded = Indexer(path, index).fold_all()
            sessions.update(index, path)  # the rows of what was folded (all of them, if none yet)
            if compact:
                sessions.compact(path)
                rebuild.build(path, index.inner)
        finally:
            index.close()
        if compact:
            with fold_gate(directory):  # no reader opens a snapshot in the middle of the swap
                rebuild.swap(path)
        return folded
    finally:
        lock.release()


_BEING_CREATED = ("Column family not found", "only possible on read-write")
"""How RocksDB says the index is being created (its column families appear one by one)."""


def _snapshot(path: Path) -> OxigraphStore | None:
    """A read-only snapshot of the index, or None while the first writer is still creating it.

    The indexing process compacts the index meanwhile: a file the snapshot's manifest names may be
    gone by the time it is opened; then open again (it names the files that replaced it).  An index
    being created has had nothing folded into it (a writer folds only once its index is open), so
    the log alone holds everything: no snapshot is needed."""
    deadline = time.monotonic() + SNAPSHOT_WAIT
    for attempt in itertools.count():
        before = _current(path)
        try:
            return OxigraphStore(path, snapshot=True)
        except StoreError as exc:
            if any(sign in str(exc) for sign in _BEING_CREATED):
                return None
            replaced = _current(path) != before or (path / rebuild.MARK).exists()
            if (COMPACTED not in str(exc) and not replaced) or time.monotonic() > deadline:
                raise
            time.sleep(min(0.01 * (attempt + 1), 0.1))
    raise AssertionError("unreachable")


def _current(path: Path) -> int | None:
    """The identity of the index's ``CURRENT`` file: a new one (RocksDB's next manifest, a rebuilt
    index swapped in) says the files a snapshot was opened from may have been mixed."""
    try:
        return (path / "CURRENT").stat().st_ino
    except OSError:
        return None


def open_reader(path: Path, *, wait: float = READ_WAIT) -> OxigraphStore:
    """Open the store at ``path`` to read (see the module's docstring): no lock, no write, never
    creates a store."""
    directory = seg.segments_dir(path)
    check_not_a_file(path)
    if not (path / "CURRENT").exists() and not directory.is_dir():
        raise StoreNotFound(
            f"no store at {path} (nothing has been exported there yet; check --store or "
            f"OTEL_PROV_STORE)"
        )
    if wait > 0 and index_held(directory):
        targets = seg.pending_bytes(directory)
        if not targets or not wait_folded(directory, wait, targets):
            snapshot = _folded_snapshot(path, targets)
            if snapshot is not None:
                return snapshot
    return _read(path)


def _folded_snapshot(path: Path, targets: dict[str, int]) -> OxigraphStore | None:
    """The index's snapshot alone, when it holds everything the log held as the read began
    (``targets``, each segment's size then, all folded since): opened under the fold gate, shared,
    so no round is half applied in it and it is exactly the checkpoint's state.  Whatever the log
    holds past the checkpoint was committed after the read began; without this, a reader next to a
    busy writer replayed it into a copy of the whole index (3.4 s at 300,000 quads, and growing
    with the store).  None when it cannot be had (no gate, a round longer than
    :data:`~.oxigraph.SNAPSHOT_WAIT`, an index being created): the caller replays."""
    directory = seg.segments_dir(path)
    _check_index(path, directory)
    with fold_gate(directory, shared=True, timeout=SNAPSHOT_WAIT) as held:
        if not held or not (path / "CURRENT").exists():
            return None
        folded = seg.load_checkpoint(directory)
        present = set(seg.list_segments(directory))
        if any(folded.get(name, 0) < size for name, size in targets.items() if name in present):
            return None
        label = sessions.label(path)  # no round runs: the snapshot is exactly what it labels
        snapshot = _snapshot(path)
        if snapshot is not None:
            snapshot.sessions = label
        return snapshot


COPY_MOST_BYTES = 512 * 1024 * 1024
"""An index of more bytes on disk is never copied into memory to replay the log's unfolded part into
(a copy takes several times its size: gigabytes at 10 M quads); the reader reads its snapshot alone
and says what it does not show."""


def _say_not_shown(directory: Path, folded: dict[str, int]) -> None:
    """One line of how much of the log a reader of a snapshot alone does not show (none: nothing)."""
    unshown = sum(size - max(folded.get(name, 0), len(seg.MAGIC))
                  for name, size in seg.pending_bytes(directory, folded).items())
    if unshown:
        logger.warning("otel-prov: %d bytes of the log at %s are not folded into the index yet (the "
                       "indexing process is behind) and are not shown: the index is too large to copy "
                       "them into (more than %d MiB); read again in a moment", unshown, directory,
                       COPY_MOST_BYTES >> 20)


def _index_bytes(path: Path) -> int:
    """The size of the index's table files (RocksDB's ``*.sst``)."""
    total = 0
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name.endswith(".sst"):
                    with contextlib.suppress(OSError):
                        total += entry.stat().st_size
    except OSError:
        return 0
    return total


READ_TRIES = 5
"""Times a reader starts again when a segment it listed was deleted (folded) before it read it."""


def _read(path: Path) -> OxigraphStore:
    """The index's snapshot, with the log's operations past the checkpoint replayed into an
    in-memory copy of it when there are any.

    Exact without a lock: the checkpoint is read, the segments listed, the snapshot opened, then each
    listed segment read from the checkpoint's offset to its end (one open at a time).  The snapshot
    holds at least the checkpoint's state, and whatever the indexer folded since; what is read
    reaches at least as far as what the snapshot holds, so replaying it in each writer's order gives
    every quad the state its last operation says, whatever part of it the snapshot already had
    (:mod:`.indexer`).  A listed segment gone when it is read was folded and deleted meanwhile,
    perhaps after the snapshot was taken, or a table file of the snapshot compacted away before it
    was copied: then the reader starts again."""
    directory = seg.segments_dir(path)
    _check_index(path, directory)  # an index that lost its CURRENT: said, never read as if it were empty
    for _ in range(READ_TRIES):
        label = sessions.label(path)  # before the snapshot: it holds at least what this labels
        folded = seg.load_checkpoint(directory)
        names = seg.list_segments(directory)
        index = _snapshot(path) if (path / "CURRENT").exists() else None
        try:
            too_big = index is not None and _index_bytes(path) > COPY_MOST_BYTES
            # Too big to copy (gigabytes of memory): the snapshot alone, and the log is not read.
            read = ([], 0) if too_big else _unfolded(directory, names, folded)
            if read is None:
                continue
            if not any(read[0]):
                if too_big:
                    _say_not_shown(directory, folded)
                kept, index = index, None  # handed to the caller, who closes it
                kept = kept if kept is not None else OxigraphStore(None)
                kept.sessions = label
                return kept
            memory = index.copy() if index is not None else OxigraphStore(None)
            break
        except Compacted:
            continue
        finally:
            if index is not None:
                index.close()
    else:
        raise StoreError(f"the log at {directory} kept changing while it was read; try again")
    sequences, left = read
    apply_records(memory.inner, sequences)
    if label is not None:  # the sessions of what was replayed are computed again from this copy
        memory.sessions = dataclasses.replace(label, unfolded=frozenset(
            sessions.keys_of(r.payload for records in sequences for r in records)))
    logger.debug("otel-prov: read %s with %d records of its log not folded yet", path,
                 sum(len(s) for s in sequences))
    if left:
        logger.warning("otel-prov: %d bytes of the log at %s are not folded into the index (no "
                       "process is indexing it) and are more than a reader replays; they are not "
                       "shown.  Any writer on the store (an exporter, otel-prov serve) folds them",
                       left, directory)
    return memory


def _unfolded(directory: Path, names: list[str], folded: dict[str, int]
              ) -> tuple[list[list[seg.Record]], int] | None:
    """Each writer's committed records past the checkpoint, in its order (at most
    :data:`READ_LOG_BYTES` of payload in all), and how many bytes of the log were left out; None if
    a segment was deleted before it could be read."""
    sequences: list[list[seg.Record]] = []
    budget, left = READ_LOG_BYTES, 0
    for _, group in groupby(names, key=lambda name: seg.segment_key(name)[0]):
        records: list[seg.Record] = []
        cut = False
        for name in group:
            offset = folded.get(name, 0)
            try:
                with open(directory / name, "rb") as fh:
                    size = os.fstat(fh.fileno()).st_size
                    if cut or budget <= 0:
                        cut = True
                        left += max(0, size - max(offset, len(seg.MAGIC)))
                        continue
                    got, ended, _ = seg.read_open_records(fh, offset, budget)
            except FileNotFoundError:
                return None
            except seg.NotASegment as exc:  # no record of it is committed (the indexer sets it aside)
                seg.report_once(f"not a segment:{directory / name}", logging.WARNING, "otel-prov: %s; "
                                "it is not read", exc)
                continue
            budget -= sum(len(r.payload) for r in got)
            records.extend(got)
            if not ended:  # the budget ran out within this segment
                cut = True
                left += size - got[-1].end if got else 0
        sequences.append(records)
    return sequences, left


# -- the backend of ``oxigraph:PATH`` and bare paths (:data:`otel_prov.stores.BACKENDS`) --------------


def open_for_writing(spec: StoreSpec, *, quick_close: bool = False) -> LoggedStore | OxigraphStore:
    """The log-and-index store at ``spec.path``, created if missing (no path: a store in memory).
    ``quick_close``: ``close()`` hands a large fold of the index to a background process (an
    application's ``shutdown()`` returns once its spans are durable)."""
    if spec.path is None:
        return OxigraphStore(None)
    return LoggedStore(spec.path, hand_over_fold=quick_close)


def open_for_reading(spec: StoreSpec) -> OxigraphStore:
    """Open an existing store for reading; a missing one is :class:`StoreNotFound`, never created
    (naming the store inside the directory given, when there is one: its parent was given); no
    path: a store in memory."""
    if spec.path is None:
        return OxigraphStore(None)
    try:
        return open_reader(spec.path)
    except StoreNotFound as exc:
        inside = store_inside(spec.path)
        if inside is None:
            raise
        raise StoreNotFound(f"no store at {spec.path}, but there is one inside it: {inside} (give that "
                            "to --store or OTEL_PROV_STORE)") from exc


def store_inside(path: Path, most: int = 100) -> Path | None:
    """A store directly inside the directory ``path`` (``store`` first, as the default store's
    parent has it; then the other directories, looking at ``most`` at most), or None."""
    def is_store(candidate: Path) -> bool:
        return (candidate / "CURRENT").is_file() or seg.segments_dir(candidate).is_dir()

    try:
        children = sorted(child for _, child in zip(range(most), path.iterdir(), strict=False)
                          if child.is_dir())
    except OSError:
        return None
    children.sort(key=lambda child: child.name != "store")
    return next((child for child in children if is_store(child)), None)


@dataclass
class Health:
    """What :func:`check` found in an on-disk store."""

    index: str
    """``ok``, ``none`` (nothing folded yet) or why it cannot be read."""
    segments: int = 0
    unfolded_bytes: int = 0
    damaged: list[str] = field(default_factory=list)
    """One line per damaged segment (the records that fail their checksum are skipped by readers)."""
    set_aside: list[str] = field(default_factory=list)
    """Files set aside as not segments (``*.bad``), kept for inspection."""
    repaired: str | None = None
    """What was repaired, in words."""

    @property
    def ok(self) -> bool:
        return self.index in ("ok", "none") and not self.damaged


def _check_index(path: Path, directory: Path) -> None:
    """:func:`.oxigraph.check_index` once something was folded (the checkpoint is there): before the
    first fold, an index without its ``CURRENT`` is one the first writer is still creating."""
    if (directory / seg.CHECKPOINT).exists() or not directory.is_dir():
        check_index(path)


def check(path: Path, *, repair: bool = False) -> Health:
    """The state of the on-disk store at ``path``: its index (with ``repair``, a lost ``CURRENT``
    is written again from the newest manifest), its log (segments, what is not folded, damage,
    what was set aside).  Reads only, but for the repair; takes no lock, but to finish an
    interrupted index rebuild (:mod:`.rebuild`)."""
    from .oxigraph import repair_current

    directory = seg.segments_dir(path)
    health = Health(index="none")
    current = repair_current(path) if repair else None
    repaired = f"the index's CURRENT file written again ({current})" if current else None
    if repair and (path / rebuild.MARK).exists():
        lock = IndexLock(directory)
        if lock.acquire():  # else the process that holds it finishes the swap as it opens the index
            try:
                rebuild.finish(path)
                repaired = "an interrupted index rebuild, finished"
            finally:
                lock.release()
    health.repaired = repaired
    try:
        _check_index(path, directory)
        if (path / "CURRENT").exists():
            OxigraphStore(path, snapshot=True).close()
            health.index = "ok"
    except StoreError as exc:
        health.index = str(exc)
    if directory.is_dir():
        names = seg.list_segments(directory)
        health.segments = len(names)
        try:
            health.unfolded_bytes = seg.unfolded_bytes(directory)
        except StoreError as exc:
            health.damaged.append(str(exc))
        for name in names:
            try:
                offset = 0
                while True:
                    records, ended, damaged = seg.read_records(directory / name, offset, 64 << 20)
                    if damaged:
                        health.damaged.append(f"{name}: a record fails its checksum (skipped by readers)")
                        break
                    if ended or not records:
                        break
                    offset = records[-1].end
            except seg.NotASegment as exc:
                health.damaged.append(str(exc))
            except FileNotFoundError:
                continue  # folded and deleted meanwhile
        health.set_aside = sorted(p.name for p in directory.glob(f"*{seg.BAD_SUFFIX}"))
    return health
