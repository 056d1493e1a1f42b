"""The graph as an ``rdflib.Dataset``: from spans (no store), or read back from a store."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import rdflib
from opentelemetry.sdk.trace import ReadableSpan

from ._config import parse_store
from ._mapper import TraceMapper
from ._mapping import SEED, nquads
from ._spans import SpanRecord, from_otlp, from_sdk
from ._store import open_store_for_reading, parse_nquads
from ._vocab import PREFIXES


def _record(span: Any) -> SpanRecord:
    if isinstance(span, SpanRecord):
        return span
    if isinstance(span, ReadableSpan):
        return from_sdk(span)
    return from_otlp(span)  # an OTLP protobuf span


def spans_to_dataset(spans: Iterable[Any], profile: str = SEED) -> rdflib.Dataset:
    """The explainability graph of some spans (SDK ``ReadableSpan`` or OTLP protobuf ``Span``),
    as an ``rdflib.Dataset`` with the graph ``urn:graph:retrieval``.  Invalid spans raise
    ``ValueError``."""
    update = TraceMapper(profile).map([_record(s) for s in spans])
    return dataset_from_nquads(nquads(update.add))


def dataset_from_nquads(data: bytes) -> rdflib.Dataset:
    ds = rdflib.Dataset()
    for prefix, namespace in PREFIXES.items():
        ds.bind(prefix, namespace)
    if data:
        parse_nquads(ds, data)
    return ds


def load_dataset(store: str | os.PathLike[str] | None = None) -> rdflib.Dataset:
    """Read a store back (default: ``OTEL_PROV_STORE`` or the default location) into an
    ``rdflib.Dataset``.  A missing store raises :class:`otel_prov.StoreNotFound`."""
    opened = open_store_for_reading(parse_store(store))
    try:
        return dataset_from_nquads(opened.dump("nquads"))
    finally:
        opened.close()
