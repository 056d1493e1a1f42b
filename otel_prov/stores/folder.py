"""The background folder: a short-lived process to which a closing exporter hands the fold of what
its log still holds (:meth:`.logstore.IndexerService.close`), so that the application's
``shutdown()`` returns once its spans are durable instead of waiting for the index.

::

    python -m otel_prov.stores.folder STORE LOCK_FD

The closing process holds the index lock (``STORE/segments/index.lock``, an ``flock``) on the
descriptor ``LOCK_FD``, which it passes to this process: an ``flock`` belongs to the open file,
so the lock never changes hands through a moment when it is free -- a reader that starts meanwhile
sees a process indexing and waits for the fold (docs/store.md, "Reading").  The closing process
closes the index (RocksDB) before starting this one, which then opens it, folds everything, closes
it and exits; the kernel releases the lock.  Then it looks once more: a writer that closed while
this process held the lock left its tail to it, so it takes the lock again and folds that too.

Killed at any point (``kill -9``, the machine going down) it loses nothing: folding is idempotent
and the log is the truth (:mod:`.indexer`); a reader meanwhile replays what is not folded, and the
next writer folds it.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from ..processes import interpreter
from . import segments as seg

logger = logging.getLogger(__name__)

OPEN_TIMEOUT = 30.0
"""Seconds the folder waits for the index to be free (its lock: the closing process releases it as
it closes) before giving up (the next writer folds)."""
AGAIN = 3
"""Times the folder takes the lock again for a tail a writer left while it held it."""


def start(store: Path, lock_fd: int) -> subprocess.Popen[bytes] | None:
    """Start a folder for ``store``, handing it the index lock held on ``lock_fd``; None if no
    Python interpreter can be started from this process (then the caller folds)."""
    python = interpreter()
    if python is None:
        return None
    env = folder_environment(os.environ, str(Path(__file__).resolve().parents[2]))
    try:
        proc = subprocess.Popen(
            [python, "-m", "otel_prov.stores.folder", str(store), str(lock_fd)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(lock_fd,), close_fds=True, start_new_session=True, env=env)
    except OSError as exc:
        logger.debug("otel-prov: cannot start a background folder (%s); folding here", exc)
        return None
    # Reap it when it exits, so a long-running application keeps no zombie.
    threading.Thread(target=proc.wait, name="otel-prov-folder-reaper", daemon=True).start()
    return proc


def folder_environment(environ: Mapping[str, str], package_root: str) -> dict[str, str]:
    """The folder's environment: the application's, without what would make the folder run the
    application's telemetry -- the ``OTEL_*`` settings (our own ``OTEL_PROV_*`` kept) and
    ``opentelemetry-instrument``'s ``sitecustomize`` directory on ``PYTHONPATH`` (the folder would
    configure the SDK, every instrumentor and a ``prov`` exporter of its own on the store it folds)."""
    env = {k: v for k, v in environ.items() if not k.startswith("OTEL_") or k.startswith("OTEL_PROV_")}
    paths = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep)
             if p and not _is_auto_instrumentation(p)]
    env["PYTHONPATH"] = os.pathsep.join([package_root, *paths])
    return env


def _is_auto_instrumentation(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "sitecustomize.py")) and "auto_instrumentation" in path


SESSIONS_BUDGET = 2.0
"""Seconds the folder computes rows of the session index, at most, once it has folded (it holds the
index lock meanwhile: the rest is the next indexing process's)."""


def fold_with_lock(store: Path, lock_fd: int) -> int:
    """Open the index (waiting for it to be free), fold everything, close it; the records folded."""
    from .indexer import FOLD_BYTES, Indexer
    from .oxigraph import Locked, OxigraphStore
    from .sessions import update

    deadline = time.monotonic() + OPEN_TIMEOUT
    while True:
        try:
            index = OxigraphStore(store)
            break
        except Locked:  # the closing process has not closed it yet
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
    try:
        # What was left when it started, not what live writers append meanwhile (their indexers
        # fold that): each round folds about FOLD_BYTES.
        rounds = seg.unfolded_bytes(seg.segments_dir(store)) // FOLD_BYTES + 2
        indexer, total = Indexer(store, index, side_by_side=True), 0
        for _ in range(rounds):
            folded = indexer.fold_round()
            if folded < 0:
                break
            total += folded
        update(index, store, SESSIONS_BUDGET)  # rows of the session index: what is left, the next indexer
        return total
    finally:
        index.close()
        os.close(lock_fd)


def main(argv: list[str]) -> int:
    store, lock_fd = Path(argv[0]), int(argv[1])
    fold_with_lock(store, lock_fd)
    directory = seg.segments_dir(store)
    for _ in range(AGAIN):
        if not seg.pending_bytes(directory):
            break
        from .indexer import IndexLock

        lock = IndexLock(directory)
        if not lock.acquire():  # a writer holds it: it folds
            break
        fold_with_lock(store, lock.detach())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
