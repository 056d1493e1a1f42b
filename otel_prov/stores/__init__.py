"""Stores, behind two small protocols (:mod:`.base`), found by the scheme of their name.

``OTEL_PROV_STORE`` / ``--store`` / ``store=`` name a store as ``SCHEME:LOCATION``; a bare path means
``oxigraph:PATH``; an ``http://`` or ``https://`` URL names a dataset on a SPARQL server
(:mod:`.sparql`).  :data:`BACKENDS` maps each scheme to the module that opens it, imported when
first used (as rdflib's plugin registry does); a backend module has ``open_for_writing(spec, *,
quick_close=False)`` and ``open_for_reading(spec)``, returning a :class:`~.base.WriteStore` and a
:class:`~.base.ReadStore`.  Where to add one: CONTRIBUTING.md ("A store backend").
"""

from __future__ import annotations

import importlib
import os
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import rdflib

from .base import AppendStore, QueryResult, ReadStore, Remote, Row, StoreSpec, Term, WriteStore
from .blobs import BlobPlace, Blobs, BlobStore, S3Place, blob_place, default_dir, open_blobs
from .sessions import mark_stale

__all__ = ["BACKENDS", "REMOTE_SCHEMES", "AppendStore", "BlobPlace", "BlobStore", "Blobs", "S3Place",
           "blob_place", "open_blobs", "QueryResult", "ReadStore", "Remote",
           "Row", "StoreSpec", "Term", "WriteStore", "backlog_probe", "check_store", "check_url",
           "default_dir", "default_store", "mark_stale", "open_for_reading", "open_for_writing",
           "parse_store"]

BACKENDS: dict[str, str] = {
    "oxigraph": "otel_prov.stores.logstore",
    "memory": "otel_prov.stores.oxigraph",
    "http": "otel_prov.stores.sparql",
    "https": "otel_prov.stores.sparql",
}
"""Scheme -> the module of its backend."""

REMOTE_SCHEMES = ("http", "https")
"""Schemes of stores on a server: the spec is the whole URL, used with :class:`~.base.Remote`."""

OXIGRAPH = "oxigraph"
MEMORY = "memory"


def default_store() -> StoreSpec:
    """``oxigraph:$XDG_DATA_HOME/otel-prov/store`` (``~/.local/share/otel-prov/store``)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return StoreSpec(OXIGRAPH, Path(base) / "otel-prov" / "store")


def parse_store(text: str) -> StoreSpec:
    """``SCHEME:LOCATION`` of a registered scheme, or a path.  :class:`ValueError` for an unknown
    scheme (the caller names where the value came from)."""
    if not text.strip():
        raise ValueError("an empty store: give a path, 'oxigraph:PATH', 'memory:' or the URL of a "
                         "dataset on a SPARQL server (or leave it unset for the default store)")
    if text in (f"{MEMORY}:", MEMORY):
        return StoreSpec(MEMORY)
    scheme, sep, rest = text.partition(":")
    if sep and scheme == OXIGRAPH:
        if not rest.strip():
            raise ValueError(f"'{OXIGRAPH}:' names no path: give '{OXIGRAPH}:PATH' (or leave the store unset "
                             "for the default store)")
        return StoreSpec(OXIGRAPH, Path(os.path.expanduser(rest)), rest)
    if sep and scheme.lower() in REMOTE_SCHEMES:
        url = check_url(text)
        return StoreSpec(url.partition(":")[0], None, url.partition(":")[2])
    if sep and scheme in BACKENDS:
        return StoreSpec(scheme, None, rest)
    if sep and os.sep not in scheme and not os.path.isabs(text):
        known = ", ".join(f"'{s}:'" for s in BACKENDS)
        raise ValueError(f"unknown store {text!r}: use a path, or one of {known} "
                         "(e.g. 'oxigraph:PATH' on disk, 'memory:', 'http://HOST:PORT/DATASET')")
    return StoreSpec(OXIGRAPH, Path(os.path.expanduser(text)), text)


def check_url(text: str) -> str:
    """The URL of a dataset on a server, checked and normalised (lower-case scheme, no trailing
    ``/``).  :class:`ValueError` says what is wrong: credentials belong in the environment (the URL
    is printed and logged), and the endpoints are derived from it, so it has no query."""
    parts = urllib.parse.urlsplit(text.strip())
    scheme = parts.scheme.lower()
    example = "e.g. http://HOST:7878 (Oxigraph) or http://HOST:3030/DATASET (Fuseki)"
    if scheme not in REMOTE_SCHEMES or not parts.hostname:
        raise ValueError(f"not a dataset URL: {text!r} ({example})")
    if parts.username is not None or parts.password is not None:
        raise ValueError("credentials do not go into the store URL (it is printed and logged): use "
                         "OTEL_PROV_STORE_USER and OTEL_PROV_STORE_PASSWORD, or OTEL_PROV_STORE_TOKEN")
    if parts.query or parts.fragment:
        raise ValueError(f"the store URL names a dataset and has no query or fragment ({example})")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise ValueError(f"bad port in {text!r}: {exc}") from None
    return urllib.parse.urlunsplit((scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def _backend(spec: StoreSpec) -> Any:
    return importlib.import_module(BACKENDS[spec.scheme])


def open_for_writing(spec: StoreSpec | rdflib.Dataset, *, quick_close: bool = False) -> WriteStore:
    """Open a store to write to (an on-disk store is created if missing); an ``rdflib.Dataset`` is
    written to as it is.  ``quick_close``: ``close()`` may leave to a background process what a later
    reader or writer can finish (the on-disk store's fold of its index): an application's exit waits
    only for its data to be durable."""
    if isinstance(spec, rdflib.Dataset):
        from .dataset import DatasetStore

        return DatasetStore(spec)
    return cast(WriteStore, _backend(spec).open_for_writing(spec, quick_close=quick_close))


def open_for_reading(spec: StoreSpec) -> ReadStore:
    """Open an existing store to read; a missing one is :class:`~otel_prov.errors.StoreNotFound`,
    never created.  Reading never blocks a writer."""
    return cast(ReadStore, _backend(spec).open_for_reading(spec))


def backlog_probe(spec: StoreSpec) -> Callable[[], int] | None:
    """For an on-disk store, a function giving how many bytes of its log are not folded into its
    index yet (read at most four times a second); None for other stores (they have no log)."""
    if spec.scheme != OXIGRAPH or spec.path is None:
        return None
    return cast(Callable[[], int], _backend(spec).log_backlog(spec.path))


def settle(spec: StoreSpec, *, timeout: float, compact: bool = False) -> bool:
    """For an on-disk store: everything its log holds now folded into its index (by this process
    when no other indexes it, else waited for, at most ``timeout`` seconds), and with ``compact`` the
    index's files compacted (what was removed then leaves the files too).  Whether that was done:
    False when another process indexes it (a compaction is then its to do) or did not fold in time.
    Other stores have no log: True."""
    if spec.scheme != OXIGRAPH or spec.path is None:
        return True
    backend = _backend(spec)
    folded = backend.fold(spec.path, compact=compact)
    if folded is not None:
        return True
    from .indexer import wait_folded
    from .segments import segments_dir

    return not compact and wait_folded(segments_dir(spec.path), timeout) == 0


def check_store(spec: StoreSpec, *, repair: bool = False) -> Any:
    """The state of an on-disk store (its index, its log: :class:`~.logstore.Health`); with
    ``repair``, what can be repaired without losing anything is (a lost ``CURRENT``).  Other stores
    have nothing of this kind to check: :class:`~otel_prov.errors.StoreError`."""
    from ..errors import StoreError, StoreNotFound

    if spec.scheme != OXIGRAPH or spec.path is None:
        raise StoreError(f"'check' looks at an on-disk store; {spec} is not one")
    if not spec.path.is_dir():
        raise StoreNotFound(f"no store at {spec.path}")
    return _backend(spec).check(spec.path, repair=repair)
