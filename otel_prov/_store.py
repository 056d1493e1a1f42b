"""Stores the explainability graph is written to: Oxigraph (on disk or in memory) or any rdflib
``Dataset``.  A store is a small class around a lazily opened inner store; every write is N-Quads."""

from __future__ import annotations

import gc
import os
import sys
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import pyoxigraph
import rdflib

from ._config import StoreSpec
from ._errors import StoreError, StoreNotFound
from ._mapping import Quad
from ._vocab import GRAPH_RETRIEVAL

# Below this many quads a transactional ``load`` is cheaper than ``bulk_load`` (which writes new
# files on every call, ~13 ms); above it ``bulk_load`` is several times faster.
BULK_THRESHOLD = 2000
SIDE_BY_SIDE_PART_BYTES = 256 * 1024
""":meth:`OxigraphStore.add_side_by_side` splits a write into parts of at least this size."""
MAX_SIDE_BY_SIDE = 4


class QuadStore(Protocol):
    def add(self, data: bytes, count: int) -> None: ...
    def remove(self, quads: Sequence[Quad]) -> None: ...
    def query(self, sparql: str) -> Any: ...
    def dump(self, fmt: str) -> bytes: ...
    def to_dataset(self) -> rdflib.Dataset: ...
    def close(self) -> None: ...


def parse_nquads(ds: rdflib.Dataset, data: bytes) -> None:
    """``ds.parse`` of N-Quads, without the DeprecationWarnings rdflib 7.6 raises from its own code
    (ConjunctiveGraph, default_context): they are not the caller's to fix."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="rdflib")
        ds.parse(data=data.decode("utf-8"), format="nquads")


def _delete_data(quads: Sequence[Quad]) -> str:
    body = "\n".join(f"GRAPH {g} {{ {s} {p} {o} }}" for s, p, o, g in quads)
    return f"DELETE DATA {{\n{body}\n}}"


_FORMATS = {
    "nquads": pyoxigraph.RdfFormat.N_QUADS,
    "trig": pyoxigraph.RdfFormat.TRIG,
    "turtle": pyoxigraph.RdfFormat.TURTLE,
    "ntriples": pyoxigraph.RdfFormat.N_TRIPLES,
}


class OxigraphStore:
    """Oxigraph, on disk (RocksDB, persistent) when ``path`` is given, else in memory."""

    def __init__(self, path: Path | None, *, read_only: bool = False) -> None:
        self.path = path
        self._store: pyoxigraph.Store | None
        self._store, self.snapshot = _open_oxigraph(path, read_only)
        """``snapshot``: opened read-only because another process holds the store (it sees the
        store as it was when opened, and cannot be written or flushed)."""

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
            self.inner.bulk_load(input=data, format=pyoxigraph.RdfFormat.N_QUADS, lenient=True)
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
            _bulk_load_side_by_side(self.inner, _split_lines(data, parts))

    def remove(self, quads: Sequence[Quad]) -> None:
        if quads:
            self.inner.update(_delete_data(quads))

    def query(self, sparql: str) -> Any:
        return self.inner.query(sparql)

    def dump(self, fmt: str) -> bytes:
        rdf_format = _FORMATS[fmt]
        if rdf_format in (pyoxigraph.RdfFormat.TURTLE, pyoxigraph.RdfFormat.N_TRIPLES):
            out = self.inner.dump(format=rdf_format, from_graph=pyoxigraph.NamedNode(GRAPH_RETRIEVAL))
        else:
            out = self.inner.dump(format=rdf_format)
        return out or b""

    def to_dataset(self) -> rdflib.Dataset:
        ds = rdflib.Dataset()
        parse_nquads(ds, self.dump("nquads"))
        return ds

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
            # RocksDB releases its lock when the last reference goes: at once when ours is the
            # only one (a full collection costs ~60 ms with a big heap), else maybe via a cycle.
            shared = self.path is not None and sys.getrefcount(store) > 2
            del store
            if shared:
                gc.collect()


def _split_lines(data: bytes, parts: int) -> list[bytes]:
    """``data`` in ``parts`` pieces of about equal size, each cut after a newline (N-Quads: one
    quad per line; a newline inside a literal is escaped)."""
    pieces: list[bytes] = []
    start = 0
    for i in range(1, parts):
        cut = data.find(b"\n", max(start, len(data) * i // parts)) + 1
        if cut <= 0:
            break
        pieces.append(data[start:cut])
        start = cut
    pieces.append(data[start:])
    return [p for p in pieces if p]


def _bulk_load_side_by_side(store: pyoxigraph.Store, parts: list[bytes]) -> None:
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


def _open_oxigraph(path: Path | None, read_only: bool) -> tuple[pyoxigraph.Store, bool]:
    """The store, and whether it is a read-only snapshot."""
    if path is None:
        return pyoxigraph.Store(), False
    if read_only:
        if not (path / "CURRENT").exists():
            raise StoreNotFound(
                f"no store at {path} (nothing has been exported there yet; check --store or "
                f"OTEL_PROV_STORE)"
            )
        try:
            return pyoxigraph.Store(str(path)), False
        except (OSError, RuntimeError) as exc:  # RuntimeError: RocksDB reports corruption
            if "lock" not in str(exc).lower():
                raise StoreError(f"cannot open the store at {path}: {exc}") from exc
        try:  # held by a running exporter or server: read a snapshot
            return pyoxigraph.Store.read_only(str(path)), True
        except (OSError, RuntimeError) as exc:
            raise StoreError(f"cannot open the store at {path}: {exc}") from exc
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"cannot create the store directory {path}: {exc.strerror or exc}; choose a writable "
            f"location with store='oxigraph:PATH' or OTEL_PROV_STORE"
        ) from exc
    if not os.access(path, os.W_OK | os.X_OK):
        raise StoreError(
            f"the store directory {path} is not writable; choose a writable location with "
            f"store='oxigraph:PATH' or OTEL_PROV_STORE"
        )
    try:
        return pyoxigraph.Store(str(path)), False
    except (OSError, RuntimeError) as exc:  # RuntimeError: RocksDB reports corruption
        if "lock" in str(exc).lower():
            raise StoreError(
                f"the store at {path} is in use by another process (one writer at a time); stop it, "
                f"or give this process its own store (OTEL_PROV_STORE), or send spans to "
                f"'otel-prov serve'"
            ) from exc
        raise StoreError(f"cannot open the store at {path}: {exc}") from exc


class DatasetStore:
    """Any rdflib ``Dataset`` handed in by the user (they own it: ``close`` leaves it open)."""

    def __init__(self, dataset: rdflib.Dataset) -> None:
        self.dataset = dataset
        self.path = None
        self._lock = threading.Lock()

    def add(self, data: bytes, count: int) -> None:
        with self._lock:
            parse_nquads(self.dataset, data)

    def remove(self, quads: Sequence[Quad]) -> None:
        if quads:
            with self._lock:
                self.dataset.update(_delete_data(quads))

    def query(self, sparql: str) -> Any:
        with self._lock:
            return self.dataset.query(sparql)

    def dump(self, fmt: str) -> bytes:
        with self._lock:
            if fmt in ("turtle", "ntriples"):
                graph = self.dataset.graph(rdflib.URIRef(GRAPH_RETRIEVAL))
                return graph.serialize(format="nt" if fmt == "ntriples" else fmt, encoding="utf-8")
            return self.dataset.serialize(format=fmt, encoding="utf-8")

    def to_dataset(self) -> rdflib.Dataset:
        return self.dataset

    def close(self) -> None:
        pass


def open_store(spec: StoreSpec | rdflib.Dataset) -> QuadStore:
    """Open a store for writing (an on-disk store is created if missing)."""
    if isinstance(spec, rdflib.Dataset):
        return DatasetStore(spec)
    return OxigraphStore(spec.path)


def open_store_for_reading(spec: StoreSpec) -> OxigraphStore:
    """Open an existing store for reading; a missing one is :class:`StoreNotFound`, never created."""
    return OxigraphStore(spec.path, read_only=True)
