"""The embedded store's index rebuilt from what it holds, so that an erased text leaves its files.

Oxigraph keeps the text of every literal it has stored in a string table that it never collects:
after ``otel-prov delete`` removed a session and the index was compacted, the session's text was
still in one of the index's table files (no quad refers to it, no reader sees it, ``grep`` finds
it).  A rebuild copies every quad of the index into a new index beside it, then swaps the files:

1. :func:`build`: the new index, in ``STORE/.otel-prov-rebuilt``, written and closed;
2. :func:`swap`: the swap written down (``STORE/.otel-prov-rebuild``, naming its phase), the old
   index's files moved aside to ``STORE/.otel-prov-retired`` (phase ``out``), the new one's moved in,
   ``CURRENT`` last (phase ``in``), the mark removed, then both side directories.

Only the process that holds the index lock rebuilds (``otel-prov delete`` and ``prune``, when no
other process indexes the store), with the index closed, holding the fold gate so that no reader
opens a snapshot in the middle of the swap.  The log (``segments/``) and its checkpoint are not
touched: the new index holds exactly what the old one held, so the checkpoint still says how far
the log is folded into it, and writers keep appending to the log meanwhile.

Interrupted (a crash, ``kill -9``), the swap is finished forward by the next process that opens the
index to write (:func:`finish`: it holds the index lock); a reader that finds the mark waits for it
to go (:func:`wait`) and otherwise says what to do.  A build interrupted before the swap began
leaves only ``.otel-prov-rebuilt``, which :func:`finish` removes.  Nothing here is a reader's work:
readers only wait.
"""

from __future__ import annotations

import gc
import os
import shutil
import time
from pathlib import Path

import pyoxigraph

from ..errors import StoreError
from .blobs import BLOBS_DIR

MARK = ".otel-prov-rebuild"
NEW = ".otel-prov-rebuilt"
OLD = ".otel-prov-retired"
KEPT = frozenset({MARK, f"{MARK}.tmp", NEW, OLD, "segments", "sessions", BLOBS_DIR})
"""What is in a store's directory and is not its index's (``segments``: the log; ``sessions``: the
session index, :mod:`.sessions`; ``blobs``: the large values, docs/store.md)."""
WAIT = 10.0
"""Seconds a reader waits for a swap in progress to end (it is a few renames: milliseconds)."""


def build(path: Path, index: pyoxigraph.Store) -> int:
    """Every quad (and named graph) of ``index``, the open index at ``path``, copied into a new
    index at ``path/.otel-prov-rebuilt``, written and closed.  Returns the quads copied."""
    target = path / NEW
    shutil.rmtree(target, ignore_errors=True)
    new = pyoxigraph.Store(str(target))
    try:
        for graph in index.named_graphs():
            new.add_graph(graph)
        new.bulk_extend(index.quads_for_pattern(None, None, None, None))
        new.flush()
        count = len(new)
    finally:
        del new
        gc.collect()  # RocksDB closes (and releases its LOCK) when the last reference goes
    _sync_directory(target)
    return count


def swap(path: Path) -> None:
    """Put the index built by :func:`build` in the place of the one at ``path`` (closed by the
    caller, who holds the index lock and the fold gate)."""
    if not (path / NEW / "CURRENT").exists():
        raise StoreError(f"no rebuilt index at {path / NEW} to put in place")
    _mark(path, "out")
    _finish(path, "out")


def finish(path: Path) -> None:
    """Finish a swap that was interrupted, or remove what an interrupted build left; nothing when
    neither.  The caller holds the index lock (it is about to open the index to write)."""
    try:
        phase = (path / MARK).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        for side in (NEW, OLD):
            shutil.rmtree(path / side, ignore_errors=True)
        return
    except OSError as exc:
        raise StoreError(f"cannot read {path / MARK}: {exc.strerror or exc}") from exc
    if phase not in ("out", "in"):
        raise StoreError(f"{path / MARK} says {phase!r}, not a phase of an index rebuild; nothing was "
                         "changed (a newer otel-prov's store?)")
    _finish(path, phase)


def wait(path: Path, timeout: float = WAIT) -> None:
    """For a reader: return once no swap is in progress at ``path`` (at most ``timeout`` seconds);
    a :class:`StoreError` saying what to do if one still is (it was interrupted)."""
    deadline = time.monotonic() + timeout
    while (path / MARK).exists():
        if time.monotonic() > deadline:
            raise StoreError(f"the index at {path} is being rebuilt, or its rebuild was interrupted "
                             f"({path / MARK} is there): the next process to write to the store finishes "
                             f"it, or run 'otel-prov check --repair {path}'")
        time.sleep(0.02)


def _finish(path: Path, phase: str) -> None:
    if phase == "out":
        retired = path / OLD
        retired.mkdir(exist_ok=True)
        for entry in sorted(os.listdir(path)):
            if entry not in KEPT:
                os.replace(path / entry, retired / entry)
        _sync_directory(path)
        _mark(path, "in")
    built = path / NEW
    names = sorted(os.listdir(built)) if built.is_dir() else []
    for entry in [n for n in names if n != "CURRENT"] + [n for n in names if n == "CURRENT"]:
        os.replace(built / entry, path / entry)
    _sync_directory(path)
    (path / MARK).unlink()
    _sync_directory(path)
    for side in (NEW, OLD):
        shutil.rmtree(path / side, ignore_errors=True)


def _mark(path: Path, phase: str) -> None:
    tmp = path / f"{MARK}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(phase + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path / MARK)
    _sync_directory(path)


def _sync_directory(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
