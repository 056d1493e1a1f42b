"""The write-ahead log of an on-disk store: one segment file per writing process, appended without
any lock between processes, read back by whichever process folds it into the index
(:mod:`.indexer`).

**A segment** (``STORE/segments/<host>-<pid>-<start>-<n>.seg``) starts with :data:`MAGIC` and holds
records, each ``kind (1 byte) | length (4 bytes, little-endian) | crc32 (4 bytes) | payload``:
kind ``A`` adds the payload's N-Quads, kind ``D`` removes them.  The CRC covers the kind, the length
and the payload, so a torn tail (a process killed in the middle of ``write``, or zeros left by a power
cut) ends the segment's *committed prefix*: everything before it is read, nothing after it.

**Who writes.**  One :class:`SegmentWriter` per process and store appends to its own segment and
holds an exclusive ``flock`` on it while it may still write; the lock goes when the writer closes
the segment (it rotated, or shut down) or when the process dies, even by ``kill -9``.  A segment
whose lock is free is *sealed*: nothing more will be appended to it.  A segment is created under a
``.tmp`` name, locked, then renamed, so an indexer never sees a segment before its writer holds it.

**What is durable when.**  :meth:`SegmentWriter.append` returns once the record is in the OS page
cache (it survives ``kill -9`` of the writer).  :meth:`SegmentWriter.sync` makes every record
appended so far durable with ``fdatasync`` (it survives a power cut); concurrent callers share one
``fdatasync`` (group commit).  A writer's sync thread calls it every :data:`SYNC_INTERVAL` seconds
while there is something to sync; rotation and close sync first.

**The checkpoint** (``STORE/segments/checkpoint.json``) records, for each segment, the offset up to
which it has been folded into the index; it is replaced atomically (write, fsync, rename, fsync of
the directory) and only after the index has been flushed.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import socket
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

MAGIC = b"OTPLOG1\n"
"""The first bytes of every segment (the format's version)."""
ADD, REMOVE = b"A", b"D"
_HEADER = struct.Struct("<cII")
HEADER_SIZE = _HEADER.size
SEGMENT_SUFFIX = ".seg"
TMP_SUFFIX = ".tmp"
CHECKPOINT = "checkpoint.json"
INDEX_LOCK = "index.lock"
SEGMENTS_DIR = "segments"

SEGMENT_BYTES = 64 * 1024 * 1024
"""A writer starts a new segment once its current one is this large (the old one is then sealed,
and deleted once folded: the disk a live writer keeps is bounded by this plus what is unfolded)."""
SYNC_INTERVAL = 0.1
"""Seconds between a writer's group commits while it has unsynced records."""
_STALE_TMP_SECONDS = 60.0


def segments_dir(store: Path) -> Path:
    return store / SEGMENTS_DIR


def _crc(kind: bytes, length: int, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(kind + length.to_bytes(4, "little")))


def encode(kind: bytes, payload: bytes) -> bytes:
    """One record (header and payload)."""
    return _HEADER.pack(kind, len(payload), _crc(kind, len(payload), payload)) + payload


@dataclass(frozen=True, slots=True)
class Record:
    kind: bytes
    payload: bytes
    end: int
    """The offset just past this record in its segment (where folding resumes)."""


def read_records(path: Path, offset: int, budget: int) -> tuple[list[Record], bool]:
    """The committed records of the segment at ``path`` from ``offset`` (0: its start), up to about
    ``budget`` bytes of payload (at least one record).  Returns them and whether the committed
    prefix ended within what was read (a torn or incomplete record, or the end of the file)."""
    records: list[Record] = []
    with open(path, "rb") as fh:
        if offset < len(MAGIC):
            if fh.read(len(MAGIC)) != MAGIC:
                raise ValueError(f"{path} is not an otel-prov log segment")
            offset = len(MAGIC)
        fh.seek(offset)
        used = 0
        while used < budget or not records:
            header = fh.read(HEADER_SIZE)
            if len(header) < HEADER_SIZE:
                return records, True
            kind, length, crc = _HEADER.unpack(header)
            if kind not in (ADD, REMOVE):
                return records, True
            payload = fh.read(length)
            if len(payload) < length or _crc(kind, length, payload) != crc:
                return records, True
            offset += HEADER_SIZE + length
            used += length
            records.append(Record(kind, payload, offset))
    return records, False


def try_lock(fd: int) -> bool:
    """Take an exclusive ``flock`` on ``fd`` without waiting; False if someone else holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def segment_key(name: str) -> tuple[str, int]:
    """``(writer, n)``: a writer's segments are folded in the order of ``n``."""
    stem = name[: -len(SEGMENT_SUFFIX)]
    writer, _, n = stem.rpartition("-")
    return writer, int(n) if n.isdigit() else 0


def list_segments(directory: Path) -> list[str]:
    """The segment names in ``directory``, each writer's in order."""
    try:
        names = [n for n in os.listdir(directory) if n.endswith(SEGMENT_SUFFIX)]
    except FileNotFoundError:
        return []
    return sorted(names, key=segment_key)


def remove_stale_tmp(directory: Path) -> None:
    """Delete ``.tmp`` segments a writer died before naming (unlocked and old)."""
    try:
        names = [n for n in os.listdir(directory) if n.endswith(TMP_SUFFIX)]
    except FileNotFoundError:
        return
    for name in names:
        path = directory / name
        try:
            if time.time() - path.stat().st_mtime < _STALE_TMP_SECONDS:
                continue
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            if try_lock(fd):
                path.unlink(missing_ok=True)
        finally:
            os.close(fd)


# -- the checkpoint ---------------------------------------------------------------------------------


def load_checkpoint(directory: Path) -> dict[str, int]:
    """Segment name -> offset folded so far (empty when there is no checkpoint yet)."""
    try:
        data = json.loads((directory / CHECKPOINT).read_bytes())
    except FileNotFoundError:
        return {}
    except ValueError as exc:  # never written half: replaced atomically
        raise ValueError(f"the checkpoint {directory / CHECKPOINT} is unreadable: {exc}") from exc
    folded = data.get("folded", {})
    return {str(k): int(v) for k, v in folded.items()}


def save_checkpoint(directory: Path, folded: dict[str, int]) -> None:
    """Replace the checkpoint atomically and durably."""
    tmp = directory / f"{CHECKPOINT}.{os.getpid()}.{threading.get_ident()}.tmp"
    data = json.dumps({"version": 1, "folded": folded}, sort_keys=True).encode("utf-8")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, directory / CHECKPOINT)
    fsync_dir(directory)


def pending_bytes(directory: Path, folded: dict[str, int] | None = None) -> dict[str, int]:
    """Segment name -> its size where that is past what the checkpoint says is folded."""
    folded = load_checkpoint(directory) if folded is None else folded
    out: dict[str, int] = {}
    for name in list_segments(directory):
        try:
            size = (directory / name).stat().st_size
        except FileNotFoundError:
            continue
        if size > max(folded.get(name, 0), len(MAGIC)):
            out[name] = size
    return out


# -- the writer side --------------------------------------------------------------------------------


class SegmentWriter:
    """This process's segments of one store: append, group commit, rotate, seal.  Thread-safe."""

    def __init__(self, directory: Path, *, sync_interval: float | None = None,
                 segment_bytes: int | None = None) -> None:
        self.directory = directory
        self._prefix = f"{socket.gethostname().replace('-', '_')}-{os.getpid()}-{time.time_ns()}"
        self._segment_bytes = SEGMENT_BYTES if segment_bytes is None else segment_bytes
        self._n = 0
        self._fd = -1
        self._size = 0
        self.name = ""
        self._lock = threading.Lock()        # appends, rotation
        self._sync_cv = threading.Condition()
        self._syncing = False
        self.appended = 0
        """Bytes appended so far over all this writer's segments."""
        self.synced = 0
        """Bytes of :attr:`appended` known durable."""
        self._closed = False
        directory.mkdir(parents=True, exist_ok=True)
        self._open_next()
        self._stop = threading.Event()
        self._sync_interval = SYNC_INTERVAL if sync_interval is None else sync_interval
        self._thread = threading.Thread(target=self._sync_loop, name="otel-prov-log-sync", daemon=True)
        self._thread.start()

    def _open_next(self) -> None:
        self._n += 1
        name = f"{self._prefix}-{self._n:06d}{SEGMENT_SUFFIX}"
        tmp = self.directory / (name + TMP_SUFFIX)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _write_all(fd, MAGIC)
            os.fsync(fd)
            os.rename(tmp, self.directory / name)
            fsync_dir(self.directory)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        self._fd, self._size, self.name = fd, len(MAGIC), name

    def append(self, kind: bytes, payload: bytes) -> int:
        """Append one record; returns :attr:`appended` after it (pass it to :meth:`sync`).  On an
        error nothing of the record stays in the segment (it is cut back), and ``OSError`` is
        raised."""
        record = encode(kind, payload)
        with self._lock:
            if self._closed:
                raise OSError(errno.EBADF, "the log segment is closed")
            if self._size + len(record) > self._segment_bytes and self._size > len(MAGIC):
                self._rotate()
            try:
                _write_all(self._fd, record)
            except OSError:
                try:
                    os.ftruncate(self._fd, self._size)
                except OSError as exc:  # the segment is unusable: start another
                    logger.error("otel-prov: cannot cut back a failed append to %s: %s", self.name, exc)
                    self._rotate()
                raise
            self._size += len(record)
            self.appended += len(record)
            return self.appended

    def _rotate(self) -> None:
        """Seal the current segment (synced, closed: its lock is released once no sync still holds
        a duplicate of its descriptor) and open the next.  Called with the append lock held."""
        os.fdatasync(self._fd)
        os.close(self._fd)
        self._fd = -1
        with self._sync_cv:
            self.synced = max(self.synced, self.appended)
        self._open_next()

    def sync(self, upto: int | None = None) -> None:
        """Return once everything appended up to ``upto`` (default: so far) is durable.  Callers
        that arrive while an ``fdatasync`` runs wait for it and share the next one."""
        target = self.appended if upto is None else upto
        while True:
            with self._sync_cv:
                while self._syncing and self.synced < target:
                    self._sync_cv.wait()
                if self.synced >= target:
                    return
                self._syncing = True
            try:
                with self._lock:  # a duplicate: rotation may close the segment meanwhile
                    if self._fd < 0:
                        raise OSError(errno.EBADF, "the log segment is closed")
                    end, fd = self.appended, os.dup(self._fd)
                try:
                    os.fdatasync(fd)
                finally:
                    os.close(fd)
                with self._sync_cv:
                    self.synced = max(self.synced, end)
            finally:
                with self._sync_cv:
                    self._syncing = False
                    self._sync_cv.notify_all()

    def _sync_loop(self) -> None:
        while not self._stop.wait(self._sync_interval):
            if self.synced < self.appended:
                try:
                    self.sync()
                except OSError as exc:
                    logger.error("otel-prov: syncing the log segment %s failed: %s", self.name, exc)

    def close(self) -> None:
        """Sync and seal: the segment's lock is released, so an indexer may fold it and delete it."""
        self._stop.set()
        self._thread.join()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self.synced < self.appended:
                    os.fdatasync(self._fd)
                    self.synced = self.appended
            finally:
                os.close(self._fd)
                self._fd = -1


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def iter_unfolded(directory: Path, folded: dict[str, int]) -> Iterator[tuple[str, int]]:
    """``(name, offset)`` for each segment, from the checkpoint's offset (or its start)."""
    for name in list_segments(directory):
        yield name, folded.get(name, 0)
