"""Reading an on-disk store back in tests, as every reader does (no lock, nothing written: the
index's snapshot with the unfolded log replayed in memory), and folding it as a writer does."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyoxigraph

from otel_prov.stores import logstore
from otel_prov.stores.logstore import open_reader


@contextmanager
def read_back(path: Path) -> Iterator[pyoxigraph.Store]:
    """Everything committed to the store at ``path`` (its index and its log)."""
    store = open_reader(path)
    try:
        yield store.inner
    finally:
        store.close()


def fold(path: Path) -> int:
    """Fold the store's log into its index, as the indexing process does; the records folded."""
    folded = logstore.fold(path)
    assert folded is not None, f"another process indexes {path}"
    return folded
