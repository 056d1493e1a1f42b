"""Stores, behind two small protocols (:mod:`.base`), found by the scheme of their name.

``OTEL_PROV_STORE`` / ``--store`` / ``store=`` name a store as ``SCHEME:LOCATION``; a bare path means
``oxigraph:PATH``.  :data:`BACKENDS` maps each scheme to the module that implements it, imported
when first used (as rdflib's plugin registry does); a backend module has ``open_for_writing(spec)``
and ``open_for_reading(spec)``, returning a :class:`~.base.WriteStore` and a
:class:`~.base.ReadStore`.  Where to add one: CONTRIBUTING.md ("A store backend").
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, cast

import rdflib

from .base import AppendStore, QueryResult, ReadStore, Row, StoreSpec, Term, WriteStore

__all__ = ["BACKENDS", "AppendStore", "QueryResult", "ReadStore", "Row", "StoreSpec", "Term", "WriteStore",
           "default_store", "open_for_reading", "open_for_writing", "parse_store"]

BACKENDS: dict[str, str] = {
    "oxigraph": "otel_prov.stores.oxigraph",
    "memory": "otel_prov.stores.oxigraph",
}
"""Scheme -> the module of its backend."""

OXIGRAPH = "oxigraph"
MEMORY = "memory"


def default_store() -> StoreSpec:
    """``oxigraph:$XDG_DATA_HOME/otel-prov/store`` (``~/.local/share/otel-prov/store``)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return StoreSpec(OXIGRAPH, Path(base) / "otel-prov" / "store")


def parse_store(text: str) -> StoreSpec:
    """``SCHEME:LOCATION`` of a registered scheme, or a path.  :class:`ValueError` for an unknown
    scheme (the caller names where the value came from)."""
    if text in (f"{MEMORY}:", MEMORY):
        return StoreSpec(MEMORY)
    scheme, sep, rest = text.partition(":")
    if sep and scheme == OXIGRAPH:
        if not rest:
            return default_store()
        return StoreSpec(OXIGRAPH, Path(os.path.expanduser(rest)), rest)
    if sep and scheme in BACKENDS:
        return StoreSpec(scheme, None, rest)
    if sep and os.sep not in scheme and not os.path.isabs(text):
        known = ", ".join(f"'{s}:'" for s in BACKENDS)
        raise ValueError(f"unknown store {text!r}: use a path, or one of {known} "
                         "(e.g. 'oxigraph:PATH' on disk, 'memory:')")
    return StoreSpec(OXIGRAPH, Path(os.path.expanduser(text)), text)


def _backend(spec: StoreSpec) -> Any:
    return importlib.import_module(BACKENDS[spec.scheme])


def open_for_writing(spec: StoreSpec | rdflib.Dataset) -> WriteStore:
    """Open a store to write to (an on-disk store is created if missing); an ``rdflib.Dataset`` is
    written to as it is."""
    if isinstance(spec, rdflib.Dataset):
        from .dataset import DatasetStore

        return DatasetStore(spec)
    return cast(WriteStore, _backend(spec).open_for_writing(spec))


def open_for_reading(spec: StoreSpec) -> ReadStore:
    """Open an existing store to read; a missing one is :class:`~otel_prov.errors.StoreNotFound`,
    never created.  Reading never blocks a writer."""
    return cast(ReadStore, _backend(spec).open_for_reading(spec))
