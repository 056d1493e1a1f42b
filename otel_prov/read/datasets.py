"""The graph as an ``rdflib.Dataset``: from spans (no store), or read back from a store."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import rdflib
from opentelemetry.sdk.trace import ReadableSpan

from .. import settings
from ..mapping.mapper import TraceMapper
from ..mapping.spans import SpanRecord, from_otlp, from_sdk
from ..model.profiles import SEED
from ..model.quads import dataset_from_nquads, nquads
from ..stores import open_for_reading


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


def load_dataset(store: str | os.PathLike[str] | None = None) -> rdflib.Dataset:
    """Read a store back (default: ``OTEL_PROV_STORE`` or the default location) into an
    ``rdflib.Dataset``.  A missing store raises :class:`otel_prov.StoreNotFound`."""
    opened = open_for_reading(settings.STORE.get(store))
    try:
        return opened.to_dataset()
    finally:
        opened.close()
