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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..errors import StoreError

logger = logging.getLogger(__name__)

MAGIC = b"OTPLOG1\n"
"""The first bytes of every segment (the format's version)."""
ADD, REMOVE = b"A", b"D"
_HEADER = struct.Struct("<cII")
HEADER_SIZE = _HEADER.size
SEGMENT_SUFFIX = ".seg"
TMP_SUFFIX = ".tmp"
BAD_SUFFIX = ".bad"
"""Appended to the name of a file that is not a segment (its header is not intact) when the indexer
sets it aside."""
CHECKPOINT = "checkpoint.json"
CHECKPOINT_VERSION = 1
"""The checkpoint's format; a newer one is refused (:class:`NewerFormat`), never read as this one."""
INDEX_LOCK = "index.lock"
FOLD_GATE = "fold.gate"
"""Held exclusively by the indexer while a fold round changes the index, the checkpoint and the
segments; shared by a reader while it reads the checkpoint and opens its snapshot (:mod:`.indexer`)."""
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


class StoreMoved(OSError):
    """The store a writer appends to is no longer where it was: its directory deleted, moved or
    replaced (a segment open for appending is no longer the file of its name)."""


class NewerFormat(StoreError):
    """A file of the store written by a newer otel-prov, in a format this one does not read."""


class NotASegment(ValueError):
    """A file named like a segment whose header is not intact (empty, cut short, not ours): no record
    of it is committed."""


_reported: set[str] = set()


def report_once(key: str, level: int, message: str, *args: object) -> None:
    """Log a problem of the store once per process (readers open the store for every request)."""
    if key not in _reported:
        _reported.add(key)
        logger.log(level, message, *args)


def set_aside(path: Path, why: Exception) -> None:
    """Rename a sealed file that is not a segment to ``NAME.bad`` (kept, never read again), so that it
    stops no fold; the indexer's work, never a reader's."""
    try:
        os.rename(path, path.with_name(path.name + BAD_SUFFIX))
    except OSError as exc:
        report_once(f"aside:{path}", logging.ERROR, "otel-prov: %s; it cannot be set aside (%s)", why, exc)
        return
    logger.error("otel-prov: %s; set aside as %s%s (nothing in it is read)", why, path.name, BAD_SUFFIX)


@dataclass(frozen=True, slots=True)
class Record:
    kind: bytes
    payload: bytes
    end: int
    """The offset just past this record in its segment (where folding resumes)."""


def read_records(path: Path, offset: int, budget: int) -> tuple[list[Record], bool, bool]:
    """The committed records of the segment at ``path`` from ``offset`` (0: its start), up to about
    ``budget`` bytes of payload (at least one record).  Returns them, whether the committed prefix
    ended within what was read (a torn or incomplete record, or the end of the file), and whether
    damage was skipped on the way (:func:`read_open_records`)."""
    with open(path, "rb") as fh:
        return read_open_records(fh, offset, budget)


SALVAGE_BYTES = 64 * 1024 * 1024
"""How many bytes of checksums a search for the next good record past damage may compute at most."""


def _resync(fh: IO[bytes], start: int) -> int | None:
    """Past a record that fails its checksum, the offset of the next record that passes it (a flipped
    byte in the middle of a segment must not hide what follows); None if none follows (a torn tail:
    a writer killed in the middle of a ``write``)."""
    fh.seek(start)
    data = fh.read()
    spent = 0
    for i in range(1, len(data) - HEADER_SIZE + 1):
        if data[i:i + 1] not in (ADD, REMOVE):
            continue
        kind, length, crc = _HEADER.unpack_from(data, i)
        end = i + HEADER_SIZE + length
        if end > len(data):
            continue
        spent += length
        if spent > SALVAGE_BYTES:
            return None
        if _crc(kind, length, data[i + HEADER_SIZE:end]) == crc:
            return start + i
    return None


def read_open_records(fh: IO[bytes], offset: int, budget: int) -> tuple[list[Record], bool, bool]:
    """:func:`read_records` from a segment already open (``fh``).  A record that fails its checksum
    with a good record after it is damage (a flipped byte, not a torn tail): it is skipped, said once
    in one line naming the file, and reading goes on from the good record."""
    records: list[Record] = []
    damaged = False
    if offset < len(MAGIC):
        fh.seek(0)
        head = fh.read(len(MAGIC))
        if head != MAGIC:
            if head[:6] == MAGIC[:6] and head[6:7].isdigit() and head[6:7] > MAGIC[6:7]:
                raise NotASegment(f"{fh.name} is a log segment of a newer otel-prov (format "
                                  f"{head[6:7].decode()}): read it with that version")
            raise NotASegment(f"{fh.name} is not an otel-prov log segment (its header is not intact)")
        offset = len(MAGIC)
    fh.seek(offset)
    used = 0
    while used < budget or not records:
        header = fh.read(HEADER_SIZE)
        if len(header) < HEADER_SIZE:
            return records, True, damaged
        kind, length, crc = _HEADER.unpack(header)
        payload = fh.read(length) if kind in (ADD, REMOVE) else b""
        if kind not in (ADD, REMOVE) or len(payload) < length or _crc(kind, length, payload) != crc:
            good = _resync(fh, offset)
            if good is None:
                return records, True, damaged
            report_once(f"damaged:{fh.name}:{offset}", logging.ERROR,
                        "otel-prov: the log segment %s is damaged: %d bytes at offset %d fail their "
                        "checksum and are skipped (the records after them are read; the file is kept)",
                        fh.name, good - offset, offset)
            damaged = True
            offset = good
            fh.seek(offset)
            continue
        offset += HEADER_SIZE + length
        used += length
        records.append(Record(kind, payload, offset))
    return records, False, damaged


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
    return writer, int(n) if n.isascii() and n.isdigit() else 0


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
    """Segment name -> offset folded so far (empty when there is no checkpoint yet).  A checkpoint
    that cannot be read (it is replaced atomically, so only by another hand) is read as empty, and
    logged: every segment is then folded again from its start, which is harmless (each operation
    sets a quad's presence; :mod:`.indexer`), and the next fold writes a good one."""
    path = directory / CHECKPOINT
    try:
        data = json.loads(path.read_bytes())
        version = data.get("version", CHECKPOINT_VERSION)
        if isinstance(version, int) and version > CHECKPOINT_VERSION:
            raise NewerFormat(f"the checkpoint {path} was written by a newer otel-prov (its version "
                              f"{version}; this one reads {CHECKPOINT_VERSION}): use that version "
                              "(nothing was changed)")
        return {str(k): int(v) for k, v in data.get("folded", {}).items()}
    except FileNotFoundError:
        return {}
    except (ValueError, AttributeError, TypeError) as exc:
        report_once(f"checkpoint:{path}", logging.ERROR, "otel-prov: the checkpoint %s is unreadable (%s); "
                    "the log is folded again from the start of each segment", path, exc)
        return {}


def save_checkpoint(directory: Path, folded: dict[str, int]) -> None:
    """Replace the checkpoint atomically and durably."""
    tmp = directory / f"{CHECKPOINT}.{os.getpid()}.{threading.get_ident()}.tmp"
    data = json.dumps({"version": CHECKPOINT_VERSION, "folded": folded}, sort_keys=True).encode("utf-8")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, directory / CHECKPOINT)
    fsync_dir(directory)


def pending_bytes(directory: Path, folded: dict[str, int] | None = None, *,
                  targets: dict[str, int] | None = None) -> dict[str, int]:
    """Segment name -> its size where that is past what the checkpoint says is folded (or, given
    ``targets`` from an earlier call, that earlier size where the checkpoint has not reached it
    yet: what of it is left)."""
    folded = load_checkpoint(directory) if folded is None else folded
    out: dict[str, int] = {}
    for name in list_segments(directory):
        try:
            size = targets[name] if targets is not None else (directory / name).stat().st_size
        except (KeyError, FileNotFoundError):  # not a target; deleted (folded) meanwhile
            continue
        if size > max(folded.get(name, 0), len(MAGIC)):
            out[name] = size
    return out


def unfolded_bytes(directory: Path) -> int:
    """Bytes of the log past what the checkpoint says is folded."""
    folded = load_checkpoint(directory)
    return sum(size - max(folded.get(name, 0), len(MAGIC))
               for name, size in pending_bytes(directory, folded).items())


# -- the writer side --------------------------------------------------------------------------------


PROBE_INTERVAL = 1.0
"""Seconds between a failing writer's probes of its disk: it is usable again, by itself, once a
probe succeeds (no restart, no traffic needed)."""
PROBE_FREE_BYTES = 1 << 20
"""A probe counts a disk that was full as usable again only with at least this much free."""


@dataclass(frozen=True, slots=True)
class _FailedSync:
    attempt: int
    error: OSError


class SegmentWriter:
    """This process's segments of one store: append, group commit, rotate, seal.  Thread-safe.

    **Faults.**  A failed append is cut back out of the segment (nothing half stays) and raised; a
    segment that cannot be cut back is retired (never appended to again) and the next append starts
    a new one.  A segment that cannot be started (a full disk, a read-only directory, no descriptor
    left) is started again at the next append.  Meanwhile :attr:`failure` says why the log cannot be
    written, and the sync thread probes the disk every :data:`PROBE_INTERVAL` seconds (free space,
    a segment open, an ``fdatasync``): the first probe that succeeds clears it.

    **Syncing.**  The sync thread does every ``fdatasync`` (group commit): every
    :data:`SYNC_INTERVAL` seconds while something is unsynced, and at once when a caller of
    :meth:`sync` waits.  A caller waits at most its timeout, so a disk that hangs never hangs it.
    A retired segment (rotated, or abandoned) keeps its descriptor, and its lock, until it is
    synced; then it is closed, which seals it."""

    def __init__(self, directory: Path, *, sync_interval: float | None = None,
                 segment_bytes: int | None = None) -> None:
        self.directory = directory
        self._prefix = f"{socket.gethostname().replace('-', '_')}-{os.getpid()}-{time.time_ns()}"
        self._segment_bytes = SEGMENT_BYTES if segment_bytes is None else segment_bytes
        self._n = 0
        self._fd = -1
        self._size = 0
        self.name = ""
        self._retired: list[tuple[int, str]] = []
        """Segments no longer appended to whose descriptor is kept until they are synced."""
        self._lock = threading.Lock()        # appends, rotation, the descriptors
        self._cv = threading.Condition()     # the sync state below
        self.appended = 0
        """Bytes appended so far over all this writer's segments."""
        self.synced = 0
        """Bytes of :attr:`appended` known durable."""
        self._wanted = 0
        self._retry_at = 0.0
        self._attempts = 0
        self._failed_sync: _FailedSync | None = None
        self._append_error: OSError | None = None
        self._sync_error: OSError | None = None
        self._closed = False
        """Set when :meth:`close` begins: no more appends."""
        self._finished = False
        """Set when :meth:`close` has synced and closed every segment."""
        directory.mkdir(parents=True, exist_ok=True)
        self._open_next()
        self._stop = threading.Event()
        self._sync_interval = SYNC_INTERVAL if sync_interval is None else sync_interval
        self._thread = threading.Thread(target=self._run, name="otel-prov-log-sync", daemon=True)
        self._thread.start()

    @property
    def failure(self) -> str | None:
        """Why the log cannot be written now (None: it can)."""
        error = self._append_error or self._sync_error
        return None if error is None else (error.strerror or str(error))

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
        """Append one record; see :meth:`append_all`."""
        return self.append_all([(kind, payload)])

    def append_all(self, records: Sequence[tuple[bytes, bytes]]) -> int:
        """Append ``(kind, payload)`` records in one write: all of them or none.  Returns
        :attr:`appended` after them (pass it to :meth:`sync`).  On an error nothing of them stays in
        the log, and ``OSError`` is raised."""
        data = b"".join(encode(kind, payload) for kind, payload in records)
        with self._lock:
            if self._closed:
                raise OSError(errno.EBADF, "the log segment is closed")
            try:
                if self._fd >= 0 and self._size + len(data) > self._segment_bytes \
                        and self._size > len(MAGIC):
                    self._retire()
                if self._fd < 0:
                    self._open_next()
                self._write(data)
            except OSError as exc:
                self._append_failed(exc)
                raise
            if self._append_error is not None:
                self._recovered("append")
            self._size += len(data)
            self.appended += len(data)
            return self.appended

    def _check_place(self, fd: int, name: str) -> None:
        """``OSError`` unless the segment open as ``fd`` is still the store's file ``name`` (the store
        directory, or its ``segments/``, deleted, moved or replaced under the writer: what is appended
        to it would never be folded)."""
        try:
            here, there = os.fstat(fd), os.stat(self.directory / name)
        except FileNotFoundError:
            here, there = None, None
        if here is None or there is None or (here.st_dev, here.st_ino) != (there.st_dev, there.st_ino):
            raise StoreMoved(errno.ENOENT, f"the store's log segment {self.directory / name} was removed "
                                           "or replaced (the store directory deleted or moved?); nothing "
                                           "more is acknowledged until the store is back")

    def _write(self, data: bytes) -> None:
        try:
            self._check_place(self._fd, self.name)
        except StoreMoved:
            self._retire()
            raise
        try:
            _write_all(self._fd, data)
        except OSError:
            try:
                os.ftruncate(self._fd, self._size)
            except OSError as exc:  # a torn record may stay at its end: never append there again
                logger.error("otel-prov: cannot cut back a failed append to %s (%s); it is sealed and "
                             "the next append starts a new segment", self.name, exc)
                self._retire()
            raise

    def _retire(self) -> None:
        """Stop appending to the current segment (called with the append lock held); the sync
        thread syncs and closes it, which seals it."""
        self._retired.append((self._fd, self.name))
        self._fd, self.name = -1, ""
        with self._cv:
            self._cv.notify_all()

    def _append_failed(self, exc: OSError) -> None:
        if self._append_error is None and self._sync_error is None:
            logger.error("otel-prov: the log at %s cannot be written (%s); appends fail until a probe "
                         "finds it writable again", self.directory, exc)
        self._append_error = exc

    def _recovered(self, what: str) -> None:
        if what == "append":
            self._append_error = None
        else:
            self._sync_error = None
        if self._append_error is None and self._sync_error is None:
            logger.warning("otel-prov: the log at %s can be written again", self.directory)

    # -- syncing --------------------------------------------------------------------------------

    def sync(self, upto: int | None = None, timeout: float | None = None) -> bool:
        """Wait until everything appended up to ``upto`` (default: so far) is durable: True once it
        is, False if ``timeout`` seconds pass first.  Raises ``OSError`` if an ``fdatasync`` begun
        after this call failed (what it covered is not known durable)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            target = self.appended if upto is None else upto
            if self.synced >= target:
                return True
            if self._finished:
                raise OSError(errno.EBADF, "the log segment is closed")
            begun = self._attempts
            self._wanted = max(self._wanted, target)
            self._cv.notify_all()
            while self.synced < target:
                failed = self._failed_sync
                if failed is not None and failed.attempt > begun:
                    raise failed.error
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                if self._finished:
                    raise OSError(errno.EBADF, "the log segment is closed")
                self._cv.wait(remaining)
            return True

    def _due(self) -> bool:
        """The sync thread's wake-up condition (called with ``_cv`` held)."""
        return self._stop.is_set() or (self._wanted > self.synced and time.monotonic() >= self._retry_at)

    def _run(self) -> None:
        last_probe = 0.0
        while True:
            with self._cv:
                self._cv.wait_for(self._due, self._sync_interval)
                if self._stop.is_set():
                    return
            now = time.monotonic()
            try:
                if self.failure is not None and now - last_probe >= PROBE_INTERVAL:
                    last_probe = now
                    self._probe()
                if (self.synced < self.appended or self._retired) and now >= self._retry_at:
                    if self._sync_once() is not None:  # not again at once: waiters' timeouts bound them
                        self._retry_at = time.monotonic() + min(PROBE_INTERVAL,
                                                                max(self._sync_interval, 0.05))
            except Exception:  # never let the thread die: syncing must resume when it can
                logger.exception("otel-prov: unexpected error in the log's sync thread")
                self._retry_at = time.monotonic() + PROBE_INTERVAL

    def _sync_once(self) -> OSError | None:
        """One group commit: ``fdatasync`` of the retired segments and the current one; synced
        retired segments are closed (sealed).  A segment no longer the store's file (the store moved:
        :class:`StoreMoved`) fails the commit, and every segment open is let go: nothing more is
        appended to them.  Returns the error, if it failed."""
        with self._cv:
            self._attempts += 1
            attempt = self._attempts
        error: OSError | None = None
        done: list[tuple[int, str]] = []
        current = -1
        try:
            with self._lock:
                end = self.appended
                retired = list(self._retired)
                current = os.dup(self._fd) if self._fd >= 0 else -1  # no descriptor left: a failure
                current_name = self.name
            for fd, name in retired:
                os.fdatasync(fd)
                self._check_place(fd, name)
                done.append((fd, name))
            if current >= 0:
                os.fdatasync(current)
                self._check_place(current, current_name)
        except OSError as exc:
            error = exc
        finally:
            if current >= 0:
                os.close(current)
        failing = self.failure is not None  # said already: once is enough
        with self._lock:
            if isinstance(error, StoreMoved):
                if self._fd >= 0:
                    self._retire()
                done = list(self._retired)  # let every open segment go: none is the store's any more
                self._append_error = error
            for item in done:
                self._retired.remove(item)
                os.close(item[0])
        with self._cv:
            if error is None:
                self.synced = max(self.synced, end)
                if self._sync_error is not None:
                    self._recovered("sync")
            else:
                if not failing:
                    logger.error("otel-prov: syncing the log at %s failed (%s); what it covered is not "
                                 "known durable", self.directory, error)
                self._sync_error = error
                self._failed_sync = _FailedSync(attempt, error)
            self._cv.notify_all()
        return error

    def _probe(self) -> None:
        """Whether the log can be written again: room on the disk, a segment open, a sync."""
        try:
            if not self.directory.exists() and self.directory.parent.is_dir():
                self.directory.mkdir(exist_ok=True)  # the store is back, without its log directory yet
            st = os.statvfs(self.directory)
            if st.f_bavail * st.f_frsize < PROBE_FREE_BYTES:
                return
            with self._lock:
                if self._closed:
                    return
                if self._fd < 0:
                    self._open_next()
        except OSError as exc:
            logger.debug("otel-prov: the log at %s is still not writable: %s", self.directory, exc)
            return
        if self._sync_once() is None and self._append_error is not None:
            with self._lock:
                self._recovered("append")

    def forget(self) -> None:
        """In a process forked from this writer's: close this process's copies of its descriptors and
        nothing else -- no write, sync, truncation or lock (a thread of the parent may have held one at
        the fork).  The segments stay the parent's, locked by it."""
        fds = [fd for fd, _ in self._retired] + ([self._fd] if self._fd >= 0 else [])
        self._fd, self._retired, self._closed = -1, [], True
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self) -> None:
        """Sync and seal: the segments' locks are released, so an indexer may fold them and delete
        them.  Raises ``OSError`` if the last ``fdatasync`` fails (the segments are closed anyway)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stop.set()
        with self._cv:
            self._cv.notify_all()
        self._thread.join()
        with self._lock:
            fds = [fd for fd, _ in self._retired] + ([self._fd] if self._fd >= 0 else [])
            self._retired, self._fd = [], -1
            end = self.appended
        try:
            if self.synced < end:
                for fd in fds:
                    os.fdatasync(fd)
                with self._cv:
                    self.synced = end
        finally:
            for fd in fds:
                os.close(fd)
            with self._cv:
                self._finished = True
                self._cv.notify_all()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
