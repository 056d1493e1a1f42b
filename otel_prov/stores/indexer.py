"""Folding the log (:mod:`.segments`) into the Oxigraph index.

Whichever process holds the index lock (``STORE/segments/index.lock``, an exclusive ``flock``) opens
the index read-write and folds: it reads every segment's committed records past the checkpoint,
applies additions in large ``bulk_load`` calls and removals as ``DELETE DATA``, each segment's in
its own order, flushes the index, records the new checkpoint (atomically, durably), and deletes the
segments that are sealed (no writer holds them) and folded to their end.

**Why replaying after a crash is harmless.**  A fold that dies (``kill -9``, a power cut) after
applying some operations but before its checkpoint leaves the index with the checkpoint's state
plus an unknown part of the round's operations (``bulk_load`` is not even atomic).  The next fold
replays every segment from the checkpoint, in each segment's order.  Each operation sets one quad's
presence absolutely (an addition: present; a removal: absent), so a quad's state after the replay
is decided by the last replayed operation on it -- whatever the crashed round had done to it; a quad
no replayed operation touches was not touched by the crashed round either.  Hence the index ends as
if the operations had been applied once, in order: nothing acknowledged is lost, nothing is
duplicated (quads are a set), and removals take effect in order.  Between segments (different
processes) no order is defined; a round interleaves them in some order that keeps each segment's.

A checkpoint is written only after the index is flushed, and a segment is deleted only after a
checkpoint covering its end is on disk, so neither step can get ahead of the index.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

import pyoxigraph

from ..model.quads import Quad, delete_data
from . import segments as seg
from .oxigraph import MAX_SIDE_BY_SIDE, OxigraphStore, bulk_load
from .sessions import note_touched

logger = logging.getLogger(__name__)

FOLD_BYTES = 32 * 1024 * 1024
"""A fold round reads at most about this much payload (memory bound); more is left to the next."""
FOLD_INTERVAL = 0.1
"""Seconds between an indexer's looks at the log.  It folds when the log stopped growing since its
last look, or at the latest :data:`FOLD_MAX_DELAY` after it saw something to fold (together they
bound how stale a reader's snapshot is)."""
GATE_GAP = 0.02
"""Seconds the background indexer leaves the fold gate free after a round (readers poll it every 5 ms)."""
FOLD_MAX_DELAY = 0.3
"""Seconds the indexer lets what is not folded wait while writers keep appending."""
FOLD_EAGER_BYTES = 16 * 1024 * 1024
"""Unfolded bytes the indexer folds at once, without waiting for a pause."""
FOLD_SEGMENTS = 64
"""A fold round opens at most this many segments (each sealed one stays open until the round ends):
hundreds of dead writers' segments are folded over several rounds, never past the descriptor
limit."""
TAKE_OVER_INTERVAL = 1.0
"""Seconds between a writer's attempts to take the index lock while another process holds it."""
_BULK_BYTES = 256 * 1024
"""Below this much N-Quads text a transactional ``load`` is cheaper than ``bulk_load``."""


class IndexLock:
    """The index lock: who holds it may open the index read-write and fold."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / seg.INDEX_LOCK
        self._fd = -1

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def acquire(self) -> bool | None:
        """True: taken; False: another process (or another store object) holds it; None: it
        cannot be taken here (a read-only store, a missing log directory)."""
        if self._fd >= 0:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return None
        if seg.try_lock(fd):
            self._fd = fd
            return True
        os.close(fd)
        return False

    def release(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def detach(self) -> int:
        """The descriptor the lock is held on, given up to the caller (who closes it, or hands it
        to another process: the lock goes with the open file); -1 if it is not held."""
        fd, self._fd = self._fd, -1
        return fd

    def duplicate(self) -> int:
        """A new descriptor of the same open file: the lock is held as long as either is open (to
        hand to another process, which then holds it too)."""
        if self._fd < 0:
            raise OSError("the index lock is not held")
        return os.dup(self._fd)


@dataclass
class _Planned:
    name: str
    records: list[seg.Record]
    fd: int
    """Held open (and flock'd) when the segment is sealed, so no new writer can reuse it; else -1."""
    ended: bool
    """Whether the segment's committed prefix ended within ``records``."""
    damaged: bool = False
    """Damage was skipped reading it: once folded it is set aside (kept), never deleted."""

    @property
    def finished(self) -> bool:
        """Sealed and folded to its end: it can be deleted once the checkpoint says so."""
        return self.fd >= 0 and self.ended


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class Indexer:
    """Folds the log of the store at ``path`` into ``index`` (an open, read-write
    :class:`~.oxigraph.OxigraphStore`); the caller holds the index lock."""

    def __init__(self, path: Path, index: OxigraphStore, *, side_by_side: bool = False) -> None:
        self.index = index
        self.side_by_side = side_by_side
        """Load large additions in parts on every CPU at once (when nothing else runs here: the
        background folder, a closing writer)."""
        self.path = path
        self.directory = seg.segments_dir(path)
        self._place = _identity(self.directory)
        self.moved = False
        """The store's log is no longer where it was when this indexer opened it (the store deleted,
        moved or replaced): it folds nothing more (never a new store's log into this index)."""
        self.damaged: set[str] = set()
        """Segments damage was skipped in: set aside (kept) once folded, never deleted."""
        self.folded_records = 0
        self.folded_bytes = 0
        self.deleted_segments = 0

    def fold_all(self, stop: threading.Event | None = None, targets: dict[str, int] | None = None) -> int:
        """Fold rounds until nothing is left (or ``stop`` is set), or only until what the log held
        at ``targets`` (segment -> size, :func:`~.segments.pending_bytes`) is folded, leaving the
        fold gate free :data:`GATE_GAP` seconds after each round: an indexer next to writers that
        never pause would otherwise run rounds back to back, and a reader would seldom find the gate
        free between two (:func:`fold_gate`).  Returns the records folded."""
        total = 0
        while stop is None or not stop.is_set():
            n = self.fold_round()
            if n < 0:
                break
            total += n
            if targets is None:
                continue
            # The gate stays free a moment before the next round takes it: a reader polls for it
            # (fold_gate), and rounds run back to back next to writers that never pause.
            if stop is not None:
                stop.wait(GATE_GAP)
            else:
                time.sleep(GATE_GAP)
            if not seg.pending_bytes(self.directory, targets=targets):
                break
        return total

    def fold_round(self, budget: int | None = None) -> int:
        """One round (of at most about ``budget`` bytes, default :data:`FOLD_BYTES`); returns the
        records folded, or -1 when there was nothing to do."""
        budget = FOLD_BYTES if budget is None else budget
        if self.moved or not self.directory.is_dir():
            return -1
        if self._place is not None and _identity(self.directory) != self._place:
            self.moved = True
            logger.error("otel-prov: the store's log %s is no longer the one this process opened (the store "
                         "was deleted, moved or replaced); this process folds nothing more into its index "
                         "(the log is kept for the next writer to open the store)", self.directory)
            return -1
        folded = seg.load_checkpoint(self.directory)
        plan = self._plan(folded, budget)
        try:
            if not plan:
                return -1
            with fold_gate(self.directory):
                return self._fold(plan, folded)
        finally:
            for item in plan:
                if item.fd >= 0:
                    os.close(item.fd)

    def _fold(self, plan: list[_Planned], folded: dict[str, int]) -> int:
        """Apply ``plan``, move the checkpoint past it, delete the segments it finished."""
        self._apply(plan)
        # the sessions this round touched, noted before the checkpoint moves past it (a crash in
        # between replays the round, and notes them again)
        note_touched(self.path, (r.payload for item in plan for r in item.records))
        names = set(seg.list_segments(self.directory))
        checkpoint = {name: off for name, off in folded.items() if name in names}
        for item in plan:
            if item.records:
                checkpoint[item.name] = item.records[-1].end
        if checkpoint != folded:
            seg.save_checkpoint(self.directory, checkpoint)
        for item in plan:
            if item.damaged:
                self.damaged.add(item.name)
            if item.finished and item.name in self.damaged:
                seg.set_aside(self.directory / item.name, OSError(f"{item.name} was damaged"))
            elif item.finished:
                (self.directory / item.name).unlink(missing_ok=True)
                self.deleted_segments += 1
        if any(item.finished for item in plan):
            seg.fsync_dir(self.directory)
        count = sum(len(item.records) for item in plan)
        self.folded_records += count
        self.folded_bytes += sum(len(r.payload) for item in plan for r in item.records)
        return count

    def _plan(self, folded: dict[str, int], budget: int) -> list[_Planned]:
        """What this round folds: each writer's segments in order, a later one only once the
        earlier one is sealed and read to its end (so a writer's order holds across rotation).  On
        an error (no descriptor left) the segments it opened are closed again."""
        plan: list[_Planned] = []
        try:
            names = seg.list_segments(self.directory)
            for _, group in groupby(names, key=lambda n: seg.segment_key(n)[0]):
                if budget <= 0 or len(plan) >= FOLD_SEGMENTS:
                    break  # the rest waits for the next round
                for name in group:
                    if len(plan) >= FOLD_SEGMENTS:
                        break
                    try:
                        item = self._plan_segment(name, folded.get(name, 0), budget)
                    except FileNotFoundError:  # folded and deleted meanwhile
                        continue
                    if item is None:
                        break  # a live writer's segment with nothing new (it is its last one)
                    budget -= sum(len(r.payload) for r in item.records)
                    if item.records or item.finished:
                        plan.append(item)
                    elif item.fd >= 0:
                        os.close(item.fd)
                    if not item.finished:
                        break
        except BaseException:
            for item in plan:
                if item.fd >= 0:
                    os.close(item.fd)
            raise
        return plan

    def _plan_segment(self, name: str, offset: int, budget: int) -> _Planned | None:
        """A segment's records from ``offset``, held open (and locked) if it is sealed; None for a
        live writer's segment with nothing new; ``FileNotFoundError`` if it is gone."""
        path = self.directory / name
        fd = os.open(path, os.O_RDONLY)
        try:
            if not seg.try_lock(fd):
                os.close(fd)
                fd = -1
                if os.stat(path).st_size <= max(offset, len(seg.MAGIC)):
                    return None
            records, ended, damaged = seg.read_records(path, offset, max(budget, 1))
        except seg.NotASegment as exc:  # nothing in it is committed; sealed, it is set aside
            if fd >= 0:
                os.close(fd)
                seg.set_aside(path, exc)
            return None
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise
        return _Planned(name, records, fd, ended, damaged)

    def _apply(self, plan: list[_Planned]) -> None:
        sequences: list[list[seg.Record]] = []
        for _, items in groupby(plan, key=lambda item: seg.segment_key(item.name)[0]):
            sequences.append([r for item in items for r in item.records])  # a writer's, in its order
        apply_records(self.index.inner, sequences, side_by_side=self.side_by_side)
        self.index.inner.flush()


def apply_records(store: pyoxigraph.Store, sequences: list[list[seg.Record]], *,
                  side_by_side: bool = False) -> None:
    """Apply each writer's records, in its order: the additions of every sequence up to its next
    removal in one load, then those removals, and so on.  Each sequence's order is kept (a writer's
    segments are one sequence: its removal in one segment and its addition of the same quad in the
    next stay in that order); sequences interleave."""
    cursors = [0] * len(sequences)
    while True:
        adds: list[bytes] = []
        for i, records in enumerate(sequences):
            while cursors[i] < len(records) and records[cursors[i]].kind == seg.ADD:
                adds.append(records[cursors[i]].payload)
                cursors[i] += 1
        if adds:
            _add(store, adds, side_by_side)
        removed = False
        for i, records in enumerate(sequences):
            quads: list[Quad] = []
            while cursors[i] < len(records) and records[cursors[i]].kind == seg.REMOVE:
                quads.extend(parse_removal(records[cursors[i]].payload))
                cursors[i] += 1
                removed = True
            if quads:
                store.update(delete_data(quads))
        if not adds and not removed:
            break


def _add(store: pyoxigraph.Store, payloads: list[bytes], side_by_side: bool = False) -> None:
    """The additions' N-Quads: a transactional load when small, bulk loads of bounded pieces (never
    joined whole: a round's 32 MiB would be held twice) when large."""
    size = sum(map(len, payloads))
    if size < _BULK_BYTES:
        store.load(input=b"".join(payloads), format=pyoxigraph.RdfFormat.N_QUADS, lenient=True)
    else:
        bulk_load(store, payloads, min(os.cpu_count() or 1, MAX_SIDE_BY_SIDE) if side_by_side else 1)


def parse_removal(payload: bytes) -> list[Quad]:
    """The quads of a removal record: N-Quads lines made by :func:`~otel_prov.model.quads.nquads`
    from the mapping's terms (the graph is always an IRI, which has no space)."""
    quads: list[Quad] = []
    for line in payload.decode("utf-8").splitlines():
        if not line:
            continue
        s, p, rest = line.split(" ", 2)
        o, g = rest.removesuffix(" .").rsplit(" ", 1)
        quads.append((s, p, o, g))
    return quads


@contextlib.contextmanager
def fold_gate(directory: Path, *, shared: bool = False, timeout: float = 0.0) -> Iterator[bool]:
    """The fold gate (:data:`~.segments.FOLD_GATE`): an indexer holds it exclusively while a round
    changes the index, its checkpoint and the segments, so between two rounds the index is exactly
    the checkpoint's state; a reader holds it ``shared`` while it reads the checkpoint and opens its
    snapshot, waiting at most ``timeout`` seconds for a round to end.  Yields whether it is held:
    False for a reader when there is no gate yet (a store made before it) or the round outlasted the
    timeout, or where it cannot be opened (the indexer then folds all the same: readers replay)."""
    path = directory / seg.FOLD_GATE
    try:  # a reader never creates a file in the store
        fd = os.open(path, os.O_RDONLY) if shared else os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield False
        return
    try:
        if not shared:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = True
        else:
            deadline = time.monotonic() + timeout
            while not (held := _try_flock(fd, fcntl.LOCK_SH)) and time.monotonic() < deadline:
                time.sleep(0.005)
        yield held
    finally:
        os.close(fd)  # releases the lock


def _try_flock(fd: int, kind: int) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def index_held(directory: Path) -> bool:
    """Whether some process holds the index lock (so it folds), read from ``/proc/locks`` without
    taking any lock.  False when it cannot be known (no ``/proc``; a holder in another PID
    namespace is not listed)."""
    try:
        st = os.stat(directory / seg.INDEX_LOCK)
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            table = fh.read()
    except OSError:
        return False
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table.splitlines():
        fields = line.split()
        if "->" in fields:  # a process waiting for the lock, not holding it
            continue
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key:
            return True
    return False


def wait_folded(directory: Path, timeout: float, targets: dict[str, int] | None = None) -> int:
    """Wait (at most ``timeout`` s) until what the log holds now (or ``targets``: segment -> size,
    from :func:`~.segments.pending_bytes`) is folded by the process holding the index; returns the
    bytes still not folded."""
    targets = seg.pending_bytes(directory) if targets is None else targets
    deadline = time.monotonic() + timeout
    while True:
        folded = seg.load_checkpoint(directory)
        present = set(seg.list_segments(directory))
        left = {name: size - folded.get(name, 0) for name, size in targets.items()
                if name in present and folded.get(name, 0) < size}
        if not left or time.monotonic() >= deadline:
            return sum(left.values())
        time.sleep(0.02)
