"""The embedded store: Oxigraph, on disk (RocksDB: the index of :mod:`.logstore`, which opens
``oxigraph:PATH`` and bare paths) or in memory (``memory:``, opened here).  Writes are N-Quads;
reads are SPARQL, converted to plain data (:mod:`otel_prov.stores.base`)."""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

import pyoxigraph
import rdflib

from ..errors import StoreError
from ..model.quads import Quad, dataset_from_nquads, delete_data, in_parts
from ..model.vocab import GRAPH_RETRIEVAL, PREFIXES
from . import rebuild
from .base import QuadTerms, QueryResult, Row, StoreSpec
from .sessions import SessionLabel
from .terms import from_oxigraph, from_quad, from_triple

# Below this many quads a transactional ``load`` is cheaper than ``bulk_load`` (which writes new
# files on every call, ~13 ms); above it ``bulk_load`` is several times faster.
BULK_THRESHOLD = 2000
BULK_PIECE_BYTES = 4 * 1024 * 1024
"""One ``bulk_load`` call is given at most about this much N-Quads text: its memory grows with
what it is given (one 32 MiB call took a process ~190 MiB above its input, 4 MiB calls ~20 MiB,
and the 4 MiB calls were no slower: issue 23)."""
SIDE_BY_SIDE_PART_BYTES = 256 * 1024
""":meth:`OxigraphStore.add_side_by_side` splits a write into parts of at least this size."""
MAX_SIDE_BY_SIDE = 4


T = TypeVar("T")

SNAPSHOT_WAIT = 2.0
"""Seconds a reader retries a snapshot of an index that is being compacted."""
COMPACTED = "No such file"
"""How RocksDB says a table file the snapshot's manifest names is gone (compacted meanwhile)."""


_FORMATS = {
    "nquads": pyoxigraph.RdfFormat.N_QUADS,
    "trig": pyoxigraph.RdfFormat.TRIG,
    "turtle": pyoxigraph.RdfFormat.TURTLE,
    "ntriples": pyoxigraph.RdfFormat.N_TRIPLES,
}


class OxigraphStore:
    """Oxigraph, on disk (RocksDB, persistent) when ``path`` is given, else in memory."""

    def __init__(self, path: Path | None, *, snapshot: bool = False,
                 on_close: Callable[[], None] | None = None) -> None:
        self.path = path
        self.snapshot = snapshot
        """Opened read-only because another process holds the index (it sees the index as it was
        when opened, and cannot be written or flushed)."""
        self._pinned: Path | None = None
        """Where the snapshot's files are pinned (:func:`pin`), removed on close."""
        if path is not None and snapshot:
            self._pinned = pin(path)
        try:
            self._store: pyoxigraph.Store | None = (pyoxigraph.Store() if path is None else
                                                    _rocksdb(path, snapshot=snapshot, pinned=self._pinned))
        except BaseException:
            _unpin(self._pinned)
            raise
        self._on_close = on_close
        self.sessions: SessionLabel | None = None
        """A reader's: its label in the store's session index (:mod:`.sessions`), when it has one."""

    @property
    def inner(self) -> pyoxigraph.Store:
        if self._store is None:
            raise StoreError(f"store {self.path or 'memory:'} is closed")
        return self._store

    def add(self, data: bytes, count: int) -> None:
        """Store N-Quads made by our term builders (``_terms``: every IRI and literal already
        valid and escaped), so they are parsed leniently -- about 20% faster.  ``bulk_load``
        (not atomic; retrying it is harmless, quads are a set) above :data:`BULK_THRESHOLD`
        quads, a transactional ``load`` below.  Both release the GIL while they parse and write."""
        if count >= BULK_THRESHOLD:
            bulk_load(self.inner, [data])
        else:
            self.inner.load(input=data, format=pyoxigraph.RdfFormat.N_QUADS, lenient=True)

    def add_side_by_side(self, data: bytes, count: int) -> None:
        """Like :meth:`add`, for a write someone is waiting for (the writer is closing): on disk, a
        large write is split at line ends into one part per CPU (at most :data:`MAX_SIDE_BY_SIDE`),
        bulk-loaded at the same time.  One ``bulk_load`` runs mostly on one core; two parts take
        about half as long on two cores.  (While spans are still being mapped the other core is
        busy, so :meth:`add` does not split; the in-memory store gains nothing from it.)"""
        parts = 1
        if self.path is not None and count >= BULK_THRESHOLD:
            parts = min(MAX_SIDE_BY_SIDE, os.cpu_count() or 1, len(data) // SIDE_BY_SIDE_PART_BYTES)
        if parts <= 1:
            self.add(data, count)
        else:
            bulk_load(self.inner, [data], min(parts, -(-len(data) // BULK_PIECE_BYTES)))

    def remove(self, quads: Sequence[Quad]) -> None:
        if quads:
            self.inner.update(delete_data(quads))

    def query(self, sparql: str) -> Any:
        """A query with pyoxigraph's own results (this backend only; readers use :meth:`select`)."""
        return self.inner.query(sparql)

    def reading(self, read: Callable[[pyoxigraph.Store], T]) -> T:
        """``read(store)``, whole.  A snapshot that could not be pinned (:func:`pin`) opens its
        index's table files as it first needs them: one the indexing process compacted away since is
        gone (``FileNotFoundError``), and the snapshot is opened again (it then sees the index as it
        is now, which holds at least what it held) and ``read`` run again, for up to
        :data:`SNAPSHOT_WAIT` seconds.  Any other failure to read is a :class:`StoreError`."""
        deadline = time.monotonic() + SNAPSHOT_WAIT
        store, pause = self.inner, 0.01
        while True:
            try:
                return read(store)
            except OSError as exc:
                if not (self.snapshot and COMPACTED in str(exc)) or time.monotonic() > deadline:
                    raise StoreError(f"cannot read the store at {self.path}: {exc}") from exc
            while True:  # open the snapshot again (its manifest may name a file compacted meanwhile)
                time.sleep(pause)
                pause = min(pause * 2, 0.1)
                try:
                    path = Path(str(self.path))
                    _unpin(self._pinned)
                    self._pinned = pin(path)
                    store = self._store = _rocksdb(path, snapshot=True, pinned=self._pinned)
                    break
                except StoreError as exc:
                    if COMPACTED not in str(exc) or time.monotonic() > deadline:
                        raise

    # -- the read protocol (:class:`~otel_prov.stores.base.ReadStore`) ----------------------------

    def select(self, sparql: str) -> list[Row]:
        def rows(store: pyoxigraph.Store) -> list[Row]:
            results = store.query(sparql, prefixes=PREFIXES)
            if not isinstance(results, pyoxigraph.QuerySolutions):
                raise ValueError("not a SELECT query")
            names = [v.value for v in results.variables]
            return [{n: from_oxigraph(sol[n]) for n in names if sol[n] is not None} for sol in results]

        return self.reading(rows)

    def ask(self, sparql: str) -> bool:
        return self.reading(lambda store: bool(store.query(sparql, prefixes=PREFIXES)))

    def run_query(self, sparql: str) -> QueryResult:
        """Raises :class:`SyntaxError` on a syntax error, :class:`StoreError` when evaluation fails."""
        def result_of(store: pyoxigraph.Store) -> QueryResult:
            result = store.query(sparql, prefixes=PREFIXES, use_default_graph_as_union=True)
            if isinstance(result, pyoxigraph.QueryBoolean):
                return QueryResult("ask", boolean=bool(result))
            if isinstance(result, pyoxigraph.QueryTriples):
                return QueryResult("graph", triples=[from_triple(t) for t in result])
            names = [v.value for v in result.variables]
            rows = [{n: from_oxigraph(sol[n]) for n in names if sol[n] is not None} for sol in result]
            return QueryResult("select", variables=names, rows=rows)

        try:
            return self.reading(result_of)
        except (RuntimeError, ValueError) as exc:  # evaluation: SERVICE, LOAD, ...
            raise StoreError(f"the query failed: {exc}") from exc
        except StoreError as exc:
            raise StoreError(f"the query failed: {exc.__cause__ or exc}") from exc

    def quads(self, graph: str | None = None) -> Iterator[QuadTerms]:
        """The quads, as they are read (a snapshot's table file compacted away meanwhile is a
        :class:`StoreError`: what was yielded cannot be taken back)."""
        name = pyoxigraph.NamedNode(graph) if graph is not None else None
        try:
            for q in self.inner.quads_for_pattern(None, None, None, name):
                yield from_quad(q)
        except OSError as exc:
            raise StoreError(f"cannot read the store at {self.path}: {exc}") from exc

    def copy(self) -> OxigraphStore:
        """An in-memory copy of every quad, of the snapshot as it was opened: :class:`Compacted`
        when a table file it needs was compacted away meanwhile (not retried here: a reader that
        replays the log over the copy must read the log again with a new snapshot)."""
        memory = OxigraphStore(None)
        try:
            memory.inner.bulk_extend(self.inner.quads_for_pattern(None, None, None, None))
        except OSError as exc:
            if self.snapshot and COMPACTED in str(exc):
                raise Compacted(f"the index at {self.path} was compacted while it was read: {exc}") from exc
            raise StoreError(f"cannot read the store at {self.path}: {exc}") from exc
        return memory

    def count(self, graph: str | None = None) -> int:
        where = f"GRAPH <{graph}> {{ ?s ?p ?o }}" if graph is not None else "GRAPH ?g { ?s ?p ?o }"
        return int(self.select(f"SELECT (COUNT(*) AS ?n) WHERE {{ {where} }}")[0]["n"].value)

    def dump(self, fmt: str) -> bytes:
        rdf_format = _FORMATS[fmt]
        if rdf_format in (pyoxigraph.RdfFormat.TURTLE, pyoxigraph.RdfFormat.N_TRIPLES):
            out = self.reading(lambda store: store.dump(format=rdf_format,
                                                        from_graph=pyoxigraph.NamedNode(GRAPH_RETRIEVAL)))
        else:
            out = self.reading(lambda store: store.dump(format=rdf_format))
        return out or b""

    def to_dataset(self) -> rdflib.Dataset:
        return dataset_from_nquads(self.dump("nquads"))

    def flush(self) -> None:
        if self._store is not None and self.path is not None and not self.snapshot:
            self._store.flush()

    def close(self) -> None:
        """Flush and release the store (its lock is free for another process on return)."""
        if self._store is None:
            return
        try:
            self.flush()
        finally:
            store, self._store = self._store, None
            on_close, self._on_close = self._on_close, None
            # RocksDB releases its lock when the last reference goes: at once when ours is the
            # only one (a full collection costs ~60 ms with a big heap), else maybe via a cycle.
            shared = self.path is not None and sys.getrefcount(store) > 2
            del store
            if shared:
                gc.collect()
            _unpin(self._pinned)
            self._pinned = None
            if on_close is not None:
                on_close()


def bulk_load(store: pyoxigraph.Store, texts: Iterable[bytes], at_once: int = 1) -> None:
    """Bulk-load N-Quads ``texts`` into ``store`` in pieces of at most about
    :data:`BULK_PIECE_BYTES`, ``at_once`` pieces at the same time (side by side)."""
    pieces = in_parts(texts, BULK_PIECE_BYTES)
    while batch := list(islice(pieces, max(at_once, 1))):
        if len(batch) == 1:
            store.bulk_load(input=batch[0], format=pyoxigraph.RdfFormat.N_QUADS, lenient=True)
        else:
            bulk_load_side_by_side(store, batch)


def bulk_load_side_by_side(store: pyoxigraph.Store, parts: list[bytes]) -> None:
    """Bulk-load ``parts`` into ``store`` at the same time (this thread loads the first); the
    first error is raised once all have finished (the writer then retries the whole write:
    quads are a set, loading one twice is harmless)."""
    errors: list[BaseException] = []

    def load(part: bytes) -> None:
        try:
            store.bulk_load(input=part, format=pyoxigraph.RdfFormat.N_QUADS, lenient=True)
        except BaseException as exc:  # handed to the calling thread
            errors.append(exc)

    helpers = [threading.Thread(target=load, args=(part,), name="otel-prov-bulk-load", daemon=True)
               for part in parts[1:]]
    for helper in helpers:
        helper.start()
    load(parts[0])
    for helper in helpers:
        helper.join()
    if errors:
        raise errors[0]


class Compacted(StoreError):
    """A snapshot's table file was compacted away by the indexing process while it was read."""


class Locked(StoreError):
    """Another process holds the on-disk store (RocksDB's lock)."""


def _rocksdb(path: Path, *, snapshot: bool = False, pinned: Path | None = None) -> pyoxigraph.Store:
    """The on-disk store at ``path`` (a read-only snapshot when ``snapshot``, of its files pinned at
    ``pinned`` if given: :func:`pin`); every failure is a :class:`StoreError` naming the path
    (RocksDB reports corruption as ``RuntimeError``)."""
    if not snapshot:
        rebuild.finish(path)  # the caller holds the index lock: an interrupted swap is its to finish
    check_index(path)
    try:
        if snapshot:
            return pyoxigraph.Store.read_only(str(pinned or path))
        return pyoxigraph.Store(str(path))
    except (OSError, RuntimeError) as exc:
        if not snapshot and "lock" in str(exc).lower():
            raise Locked(str(exc)) from exc
        text = str(exc).replace(str(pinned), str(path)) if pinned is not None else str(exc)
        raise StoreError(f"cannot open the store at {path}: {text}") from exc


PIN_PREFIX = "otel-prov-snapshot-"


def pin(path: Path) -> Path | None:
    """The files of the index at ``path`` hard-linked into a new directory on the same file system
    (the system's temporary directory when it is on the same device as the store, else the store's
    parent): a snapshot opened there keeps its table files, whatever the indexing process compacts
    away meanwhile (RocksDB opens table files as it first needs them, by name: a file compacted
    away under a snapshot failed its reader, with a traceback, a panic or, in a COUNT, gigabytes of
    memory).  The store itself is not written.  None when no such directory can be made (a
    read-only file system, where nothing is compacted either): the snapshot is opened in place.

    The order makes it consistent: the write-ahead logs first (what a later manifest may not hold
    yet), then ``CURRENT`` and its manifest copied (not linked: it is appended to), then the table
    files.  A table file the copied manifest names but compacted away before it was linked makes
    the open fail with "No such file", and the caller opens again."""
    try:
        device = path.stat().st_dev
    except OSError:
        return None
    for parent in (Path(tempfile.gettempdir()), path.parent):
        try:
            if parent.stat().st_dev != device:
                continue
            _remove_stale_pins(parent)
            where = Path(tempfile.mkdtemp(prefix=f"{PIN_PREFIX}{os.getpid()}-", dir=parent))
        except OSError:
            continue
        try:
            _link_index(path, where)
            return where
        except OSError:
            _unpin(where)
    return None


def _link_index(path: Path, where: Path) -> None:
    names = os.listdir(path)
    for name in names:
        if name.endswith(".log"):
            _link(path / name, where / name)
    current = (path / "CURRENT").read_bytes()
    manifest = current.decode("ascii", "replace").strip()
    (where / "CURRENT").write_bytes(current)
    if manifest and "/" not in manifest:
        (where / manifest).write_bytes((path / manifest).read_bytes())
    for name in os.listdir(path):
        if name.endswith((".sst", ".blob")) or name.startswith("OPTIONS-") or name == "IDENTITY":
            _link(path / name, where / name)


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except FileNotFoundError:
        pass  # deleted meanwhile: if the manifest names it, opening says so (and is tried again)
    except FileExistsError:
        pass


def _unpin(where: Path | None) -> None:
    if where is not None:
        shutil.rmtree(where, ignore_errors=True)


def _remove_stale_pins(parent: Path) -> None:
    """Pinned snapshots left in ``parent`` by processes that died before closing them."""
    try:
        entries = list(parent.glob(f"{PIN_PREFIX}*"))
    except OSError:
        return
    for entry in entries:
        pid = entry.name[len(PIN_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            _unpin(entry)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_index(path: Path) -> None:
    """:class:`StoreError` when the index at ``path`` has lost its ``CURRENT`` file (the name of its
    live manifest) while its manifests and tables are there: opened so, RocksDB would start an empty
    index over them and every folded session would be gone.  Says how to repair it.  Waits for an
    index rebuild's swap to end first (:mod:`.rebuild`: in the middle of one, ``CURRENT`` is away)."""
    rebuild.wait(path)
    if (path / "CURRENT").exists():
        return
    manifests = sorted(path.glob("MANIFEST-*"))
    if manifests:
        raise StoreError(f"the index at {path} is damaged: its CURRENT file is missing ({manifests[-1].name} "
                         f"is there); nothing was changed. Repair it with 'otel-prov check --repair {path}'")


def repair_current(path: Path) -> str | None:
    """Write the missing ``CURRENT`` of the index at ``path``: the newest manifest (the one RocksDB
    wrote last).  Returns its name, or None when there is nothing to repair."""
    if (path / "CURRENT").exists():
        return None
    manifests = sorted(path.glob("MANIFEST-*"), key=lambda m: int(m.name.split("-")[1] or 0))
    if not manifests:
        return None
    tmp = path / "CURRENT.otel-prov.tmp"
    tmp.write_text(manifests[-1].name + "\n")
    os.replace(tmp, path / "CURRENT")
    return manifests[-1].name


def prepare_directory(path: Path) -> None:
    """Create the store's directory if missing; a clear :class:`StoreError` if it cannot be, or
    cannot be written."""
    check_not_a_file(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the store directory {path}: {exc.strerror or exc}; choose a writable "
            f"location ({WHERE_STORE})"
        ) from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise StoreError(
            f"the store directory {path} is not writable; choose a writable location ({WHERE_STORE})"
        )


WHERE_STORE = "--store, OTEL_PROV_STORE, or ProvSpanExporter(store=...)"
"""Where a store is named, for messages that apply to the CLI and the Python API alike."""


def check_not_a_file(path: Path) -> None:
    """A :class:`StoreError` when ``path`` is a file: a store is a directory."""
    if path.exists() and not path.is_dir():
        raise StoreError(f"{path} is a file, not a store (a store is a directory); check {WHERE_STORE}")


# -- the backend ----------------------------------------------------------------------------------


def open_for_writing(spec: StoreSpec, *, quick_close: bool = False) -> OxigraphStore:
    """``memory:``, a store in this process's memory (``quick_close``: nothing is left to do at close)."""
    return OxigraphStore(None)


def open_for_reading(spec: StoreSpec) -> OxigraphStore:
    """``memory:``: a new, empty store (nothing outlives the process that wrote one)."""
    return OxigraphStore(None)
