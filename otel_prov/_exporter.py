"""``ProvSpanExporter``: an OpenTelemetry SDK span exporter that writes the explainability graph."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

import rdflib
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ._config import StoreSpec, parse_profile, parse_store
from ._mapper import TraceMapper
from ._mapping import nquads
from ._problems import ProblemLog
from ._spans import InvalidSpan, SpanRecord, from_sdk
from ._store import QuadStore, open_store
from ._writer import Writer, WriterFull

logger = logging.getLogger(__name__)


class ProvSpanExporter(SpanExporter):
    """Maps finished spans to PROV-O quads in the explainability graph ``urn:graph:retrieval``.

    Every argument is optional and falls back to an environment variable:

    - ``store``: ``"oxigraph:PATH"`` (persistent, the default, at ``OTEL_PROV_STORE`` or
      ``$XDG_DATA_HOME/otel-prov/store``, ``~/.local/share/otel-prov/store`` without it),
      ``"memory:"``, a path, or any ``rdflib.Dataset``.
    - ``profile``: ``"seed"`` (default; ``OTEL_PROV_PROFILE``) or ``"strict"``.

    ``export()`` never raises and is thread-safe; quads are written by a background thread, so
    ``force_flush()`` waits until everything exported so far is stored.  ``shutdown()`` stores what
    is left and releases the store.  An unusable store raises :class:`otel_prov.StoreError` here,
    at construction.
    """

    def __init__(
        self,
        *,
        store: str | os.PathLike[str] | rdflib.Dataset | None = None,
        profile: str | None = None,
    ) -> None:
        self.profile = parse_profile(profile)
        spec: StoreSpec | rdflib.Dataset = store if isinstance(store, rdflib.Dataset) else parse_store(store)
        self.store_spec = spec
        self._store: QuadStore = open_store(spec)
        rescue_dir = spec.path.parent if isinstance(spec, StoreSpec) and spec.path else None
        self._writer = Writer(self._store, rescue_dir=rescue_dir)
        self._mapper = TraceMapper(self.profile)
        self._problems = ProblemLog(logger, "otel-prov exporter")
        self._lock = threading.Lock()
        self._shutdown_lock = threading.Lock()
        self._shutdown = False
        self._spans = 0

    @property
    def store(self) -> QuadStore:
        """The open store (for reading back: ``exporter.store.to_dataset()``)."""
        return self._store

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        try:
            records: list[SpanRecord] = []
            problems: list[str] = []
            for span in spans:
                try:
                    records.append(from_sdk(span))
                except InvalidSpan:
                    problems.append("span without a valid trace or span id")
            # One mapping at a time (it holds the GIL anyway): a GenAI trace's updates build on
            # each other, so they must reach the writer in the order the mapper made them.
            with self._lock:
                if self._shutdown:
                    return SpanExportResult.FAILURE
                update = self._mapper.map(records)
                self._spans += len(records)
                if update.remove:
                    self._writer.remove(update.remove)
                if update.add:
                    self._writer.add(nquads(update.add), len(update.add))
            problems.extend(update.problems)
            problems.extend(f"span the mapping failed on, not stored ({error})"
                            for _, error in update.failed)
            if problems:
                self._problems.report(problems)
            return SpanExportResult.SUCCESS
        except WriterFull:
            self._problems.report(["batch refused: the store is not keeping up (or failing)"])
            return SpanExportResult.FAILURE
        except Exception:  # never into the application
            if not self._shutdown:
                self._problems.exception("unexpected error in export (see the first traceback)")
            return SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        if self._shutdown:
            return True
        return self._writer.wait(timeout=timeout_millis / 1000)

    def shutdown(self) -> None:
        with self._shutdown_lock:
            if self._shutdown:
                return
            self._shutdown = True
        # Close the writer first: an export() waiting for room in its queue is released (and fails)
        # instead of holding the lock forever.
        stored = self._writer.close()
        with self._lock:  # no export() is between mapping and submitting any more
            pass
        if not stored:
            logger.error("otel-prov exporter: not everything could be stored at shutdown (see above)")
        self._store.close()

    def stats(self) -> dict[str, Any]:
        """Counters: spans seen, quads written, store failures, problems by kind, and the
        standard-GenAI trace state (``mapper``: traces and spans kept, forgotten, dropped)."""
        return {
            "spans": self._spans,
            "quads_written": self._writer.written_quads,
            "store_failures": self._writer.failures,
            "problems": dict(self._problems.counts),
            "mapper": self._mapper.stats(),
        }
