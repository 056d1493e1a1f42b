"""Reading an on-disk store back in tests, as every reader does: through the store's reader, which
folds the log into the index (or waits for the process that indexes it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyoxigraph

from otel_prov.stores.logstore import open_reader


@contextmanager
def read_back(path: Path) -> Iterator[pyoxigraph.Store]:
    """The index of the store at ``path``, with everything committed to its log folded in."""
    store = open_reader(path)
    try:
        yield store.inner
    finally:
        store.close()
