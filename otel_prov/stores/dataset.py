"""A user's own ``rdflib.Dataset`` as the store: ``ProvSpanExporter(store=dataset)``."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import rdflib

from ..model.quads import Quad, classic_quads, delete_data, parse_nquads
from ..model.vocab import GRAPH_RETRIEVAL


class DatasetStore:
    """Any rdflib ``Dataset`` handed in by the user (they own it: ``close`` leaves it open).  A
    :class:`~otel_prov.stores.base.WriteStore`; read it back through the dataset itself."""

    def __init__(self, dataset: rdflib.Dataset) -> None:
        self.dataset = dataset
        self._lock = threading.Lock()

    def add(self, data: bytes, count: int) -> None:
        with self._lock:
            parse_nquads(self.dataset, data)

    def remove(self, quads: Sequence[Quad]) -> None:
        if quads:
            with self._lock:
                self.dataset.update(delete_data(classic_quads(quads)))

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
