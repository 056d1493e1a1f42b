"""``ProvSpanExporter``: an OpenTelemetry SDK span exporter that writes the explainability graph.
A thin adapter: SDK spans in, the ingest pipeline (:mod:`.pipeline`) does the rest."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

import rdflib
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .. import settings
from ..mapping.spans import InvalidSpan, SpanRecord, from_sdk
from ..stores import StoreSpec, WriteStore, open_for_writing
from ..stores.logstore import LoggedStore
from .pipeline import IngestPipeline, PipelineClosed
from .problems import ProblemLog
from .writer import LogFailed, WriterFull

logger = logging.getLogger(__name__)


class ProvSpanExporter(SpanExporter):
    """Maps finished spans to PROV-O quads in the explainability graph ``urn:graph:retrieval``.

    Every argument is optional and falls back to an environment variable:

    - ``store``: ``"oxigraph:PATH"`` (persistent, the default, at ``OTEL_PROV_STORE`` or
      ``$XDG_DATA_HOME/otel-prov/store``, ``~/.local/share/otel-prov/store`` without it),
      ``"memory:"``, a path, the URL of a dataset on a SPARQL server (``"http://HOST:7878"``;
      credentials and TLS from ``OTEL_PROV_STORE_*``), or any ``rdflib.Dataset``.
    - ``profile``: ``"seed"`` (default; ``OTEL_PROV_PROFILE``) or ``"strict"``.
    - ``max_attribute_bytes``: a span with a larger attribute value is not stored (counted and
      logged, never truncated); default 4 MiB (``OTEL_PROV_MAX_ATTRIBUTE_BYTES``).

    ``export()`` never raises and is thread-safe, and returns SUCCESS only for spans whose quads are
    stored (on disk: appended to the store's log); a store that cannot be written (a full disk) is
    FAILURE, counted (:meth:`stats`) and logged once, and the exporter stores again as soon as the
    disk can take it.  ``force_flush(timeout_millis)`` waits, at most that long, until everything
    exported so far is durable.  ``shutdown(timeout_millis)`` (the SDK's ``BatchSpanProcessor``
    passes what is left of its own timeout) stores what is left and releases the store within that
    time, whatever the disk does.  An unusable store raises :class:`otel_prov.StoreError` here, at
    construction.
    """

    def __init__(
        self,
        *,
        store: str | os.PathLike[str] | rdflib.Dataset | StoreSpec | None = None,
        profile: str | None = None,
        max_attribute_bytes: int | None = None,
    ) -> None:
        self.profile = settings.PROFILE.get(profile)
        limit = settings.MAX_ATTRIBUTE_BYTES.get(max_attribute_bytes)
        spec = store if isinstance(store, rdflib.Dataset) else settings.STORE.get(store)
        self.store_spec = spec
        rescue_dir = spec.rescue_dir if isinstance(spec, StoreSpec) else None
        opened = open_for_writing(spec)
        if isinstance(opened, LoggedStore):  # shutdown() need not wait for the index
            opened.hand_over_fold = True
        self._pipeline = IngestPipeline(opened, self.profile, name="otel-prov exporter",
                                        rescue_dir=rescue_dir, max_attribute_bytes=limit)
        self._problems = ProblemLog(logger, "otel-prov exporter")

    @property
    def store(self) -> WriteStore:
        """The open store (for reading back: ``exporter.store.to_dataset()``)."""
        return self._pipeline.store

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._pipeline.closed:
            return SpanExportResult.FAILURE
        try:
            records: list[SpanRecord] = []
            problems: list[str] = []
            for span in spans:
                try:
                    records.append(from_sdk(span))
                except InvalidSpan:
                    problems.append("span without a valid trace or span id")
            update = self._pipeline.submit(records).update
            problems.extend(update.problems)
            problems.extend(f"span rejected, not stored ({error})" for _, error in update.failed)
            if problems:
                self._problems.report(problems)
            return SpanExportResult.SUCCESS
        except PipelineClosed:
            return SpanExportResult.FAILURE
        except WriterFull:
            self._problems.report(["batch refused: the store is not keeping up (or failing)"])
            return SpanExportResult.FAILURE
        except LogFailed:
            self._problems.report(["batch not stored: the store's log cannot be written"])
            return SpanExportResult.FAILURE
        except Exception:  # never into the application
            if not self._pipeline.closed:
                self._problems.exception("unexpected error in export (see the first traceback)")
            return SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        if self._pipeline.closed:
            return True
        return self._pipeline.wait(timeout=timeout_millis / 1000)

    def shutdown(self, timeout_millis: float = 30_000) -> None:
        if self._pipeline.closed:
            return
        if not self._pipeline.close(max(0.0, timeout_millis) / 1000):
            logger.error("otel-prov exporter: not everything could be stored at shutdown (see above)")

    def stats(self) -> dict[str, Any]:
        """Counters: spans seen, quads written, store failures, problems by kind, and the
        framework-trace state (``mapper``: traces and spans kept, forgotten, dropped)."""
        writer = self._pipeline.writer
        return {
            "spans": self._pipeline.spans,
            "quads_written": writer.written_quads,
            "store_failures": writer.failures,
            "problems": dict(self._problems.counts),
            "mapper": self._pipeline.mapper.stats(),
        }


class ConfiguredProvSpanExporter(ProvSpanExporter):
    """The exporter ``OTEL_TRACES_EXPORTER=prov`` builds (the ``prov`` entry point).

    The SDK's configurator builds every exporter that variable names, one after the other, and an
    exception from one of them stops the lot: the application's spans would reach none (not Jaeger
    either).  So here a store that cannot be opened (another process holds it, a read-only
    directory, ...) is one log line, and the exporter degrades: it drops what it is given and
    counts it (``stats()["dropped_spans"]``, and a line at shutdown); the other exporters go on.
    Built directly, :class:`ProvSpanExporter` still raises, where the caller can act on it."""

    def __init__(self, **kwargs: Any) -> None:
        self.degraded: str | None = None
        """Why spans are not stored (None: they are)."""
        self._dropped = 0
        self._dropped_lock = threading.Lock()
        try:
            super().__init__(**kwargs)
        except Exception as exc:  # never into the SDK's configurator
            self.degraded = str(exc)
            logger.error("otel-prov exporter: spans will not be stored in the explainability graph: %s "
                         "(the application's other exporters are not affected)", exc)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self.degraded is None:
            return super().export(spans)
        with self._dropped_lock:
            self._dropped += len(spans)
        return SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True if self.degraded is not None else super().force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000) -> None:
        if self.degraded is None:
            super().shutdown(timeout_millis)
        elif self._dropped:
            logger.warning("otel-prov exporter: %d spans were not stored (%s)", self._dropped, self.degraded)

    def stats(self) -> dict[str, Any]:
        if self.degraded is not None:
            return {"spans": 0, "dropped_spans": self._dropped, "degraded": self.degraded}
        return {**super().stats(), "dropped_spans": 0}
