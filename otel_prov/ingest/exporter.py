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

try:  # the SDK's log exporter base class, renamed in 1.39
    from opentelemetry.sdk._logs.export import LogRecordExporter as _LogExporter
    from opentelemetry.sdk._logs.export import LogRecordExportResult as _LogResult
except ImportError:  # pragma: no cover - older SDKs
    from opentelemetry.sdk._logs.export import (  # type: ignore[assignment,no-redef,unused-ignore]
        LogExporter as _LogExporter,
    )
    from opentelemetry.sdk._logs.export import (  # type: ignore[assignment,no-redef,unused-ignore]
        LogExportResult as _LogResult,
    )

from .. import settings
from ..mapping.spans import InvalidSpan, LogRecord, SpanRecord, from_sdk, log_from_sdk
from ..stores import StoreSpec, WriteStore
from .pipeline import IngestPipeline, PipelineClosed
from .problems import ProblemLog
from .shared import LOGS, SPANS, lease
from .writer import LogFailed, WriterFull

logger = logging.getLogger(__name__)


def submit(pipeline: IngestPipeline, problems_log: ProblemLog, records: Sequence[SpanRecord],
           logs: Sequence[LogRecord], problems: list[str]) -> int | None:
    """Hands spans and log records to the pipeline; the writer's sequence number to wait for if they
    are stored (on a store on a server: queued for it), else None.  Never raises: a closed pipeline,
    a full writer, a log that cannot be written and anything unexpected are None, each reported once
    by kind (with ``problems``, what the caller found wrong with its input)."""
    try:
        submitted = pipeline.submit(records, logs)
        update = submitted.update
        problems = [*problems, *update.problems,
                    *(f"span rejected, not stored ({error})" for _, error in update.failed)]
        if problems:
            problems_log.report(problems)
        return submitted.seq
    except PipelineClosed:
        return None
    except WriterFull:
        problems_log.report(["batch refused: the store is not keeping up (or failing)"])
        return None
    except LogFailed:
        problems_log.report(["batch not stored: the store's log cannot be written"])
        return None
    except Exception:  # never into the application
        if not pipeline.closed:
            problems_log.exception("unexpected error in export (see the first traceback)")
        return None


BATCH_THREAD = "OtelBatch"
"""How the SDK's batch processors name their worker thread (``OtelBatchSpanRecordProcessor``)."""
NOT_CONFIRMED = "batch not confirmed by the store on the server in time: still queued (FAILURE answered)"


Store = str | os.PathLike[str] | rdflib.Dataset | StoreSpec | None


class _Leased:
    """What both exporters share: the store and profile from their arguments (or the environment), a
    lease on the process's ingest pipeline for that store, its problems log, flush and release."""

    def _open(self, kind: str, name: str, store: Store, profile: str | None,
              max_attribute_bytes: int | None, content_policy: str | None, redact: str | None,
              blob_threshold: int | None = None, blob_dir: str | os.PathLike[str] | None = None) -> None:
        self.profile = settings.PROFILE.get(profile)
        limit = settings.MAX_ATTRIBUTE_BYTES.get(max_attribute_bytes)
        self.policy = settings.policy(content_policy, redact)
        """What of the content reaches the store (docs/privacy.md)."""
        spec = store if isinstance(store, rdflib.Dataset) else settings.STORE.get(store)
        self.store_spec = spec
        self._name = name
        self.blob_threshold = settings.BLOB_THRESHOLD.get(blob_threshold)
        self.blob_dir = settings.BLOB_DIR.get(blob_dir)
        self._lease = lease(kind, spec, self.profile, name=name, max_attribute_bytes=limit,
                            policy=self.policy, blob_threshold=self.blob_threshold, blob_dir=self.blob_dir)
        self._pipeline = self._lease.pipeline
        self._problems = ProblemLog(logger, name)
        remote = isinstance(spec, StoreSpec) and spec.remote is not None
        self._wait = settings.EXPORT_WAIT.get() if remote else "never"
        self._wait_timeout = settings.EXPORT_WAIT_TIMEOUT.get()

    def _confirmed(self, seq: int | None) -> bool:
        """Whether what was submitted up to ``seq`` is stored, as far as this exporter promises: on
        a store on a server, when it waits (:data:`~otel_prov.settings.EXPORT_WAIT`), once the server
        has it; else once it is queued (on disk: appended to the log)."""
        if seq is None:
            return False
        wait = self._wait == "always" or (
            self._wait == "auto" and threading.current_thread().name.startswith(BATCH_THREAD))
        if wait and not self._pipeline.wait(seq, timeout=self._wait_timeout):
            self._problems.report([NOT_CONFIRMED])
            return False
        return True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        if self._pipeline.closed:
            return True
        return self._pipeline.wait(timeout=timeout_millis / 1000)

    def _release(self, timeout: float) -> None:
        if self._pipeline.closed:
            return
        if not self._lease.release(max(0.0, timeout)):
            logger.error("%s: not everything could be stored at shutdown (see above)", self._name)


class ProvSpanExporter(_Leased, SpanExporter):
    """Maps finished spans to PROV-O quads in the explainability graph ``urn:graph:retrieval``.

    Every argument is optional and falls back to an environment variable:

    - ``store``: ``"oxigraph:PATH"`` (persistent, the default, at ``OTEL_PROV_STORE`` or
      ``$XDG_DATA_HOME/otel-prov/store``, ``~/.local/share/otel-prov/store`` without it),
      ``"memory:"``, a path, the URL of a dataset on a SPARQL server (``"http://HOST:7878"``;
      credentials and TLS from ``OTEL_PROV_STORE_*``), or any ``rdflib.Dataset``.
    - ``profile``: ``"seed"`` (default; ``OTEL_PROV_PROFILE``) or ``"strict"``.
    - ``max_attribute_bytes``: a span with a larger attribute value is not stored (counted and
      logged, never truncated); default 4 MiB (``OTEL_PROV_MAX_ATTRIBUTE_BYTES``).
    - ``content_policy``: what of each field's text is stored (``"keep"``, the default;
      ``"thought=sha256,observation=truncate:500"``...; ``OTEL_PROV_CONTENT_POLICY``), and
      ``redact``: secrets and personal data replaced by typed markers before anything is stored
      (``"on"``, ``"off"``, the default, or detectors' names; ``OTEL_PROV_REDACT``): docs/privacy.md.
    - ``blob_threshold``: a content value of more UTF-8 bytes is stored once as a content-addressed
      blob, the graph keeping its hash, size and a preview (default 65536; 0: never;
      ``OTEL_PROV_BLOB_THRESHOLD``), under ``blob_dir`` (default ``blobs/`` in an on-disk store; a
      store on a server or in memory has none unless named: its values stay inline;
      ``OTEL_PROV_BLOB_DIR``): docs/store.md.

    ``export()`` never raises and is thread-safe, and returns SUCCESS only for spans whose quads are
    stored (on disk: appended to the store's log); a store that cannot be written (a full disk) is
    FAILURE, counted (:meth:`stats`) and logged once, and the exporter stores again as soon as the
    disk can take it.  ``force_flush(timeout_millis)`` waits, at most that long, until everything
    exported so far is durable.  ``shutdown(timeout_millis)`` (the SDK's ``BatchSpanProcessor``
    passes what is left of its own timeout) stores what is left and releases the store within that
    time, whatever the disk does.  An unusable store raises :class:`otel_prov.StoreError` here, at
    construction.
    """

    def __init__(self, *, store: Store = None, profile: str | None = None,
                 max_attribute_bytes: int | None = None, content_policy: str | None = None,
                 redact: str | None = None, blob_threshold: int | None = None,
                 blob_dir: str | os.PathLike[str] | None = None) -> None:
        self._open(SPANS, "otel-prov exporter", store, profile, max_attribute_bytes, content_policy, redact,
                   blob_threshold, blob_dir)

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
        except Exception:  # never into the application
            if not self._pipeline.closed:
                self._problems.exception("unexpected error in export (see the first traceback)")
            return SpanExportResult.FAILURE
        stored = self._confirmed(submit(self._pipeline, self._problems, records, (), problems))
        return SpanExportResult.SUCCESS if stored else SpanExportResult.FAILURE

    def shutdown(self, timeout_millis: float = 30_000) -> None:
        self._release(timeout_millis / 1000)

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


class ProvLogExporter(_Leased, _LogExporter):
    """An OpenTelemetry SDK log exporter for the GenAI events some instrumentations send as log
    records (content capture as events: ``gen_ai.user.message``, ``gen_ai.choice``,
    ``gen_ai.client.inference.operation.details``, ``gen_ai.evaluation.result``): the mapping joins each
    to its span by trace and span id, whichever arrives first.  Other log records (an application's own
    log lines) are not stored.

    It shares the ingest pipeline (and the store) of the process's :class:`ProvSpanExporter` on the same
    store: ``OTEL_TRACES_EXPORTER=prov`` with ``OTEL_LOGS_EXPORTER=prov``
    (``opentelemetry-instrument``), or both built with the same ``store=``.  Same arguments, the same
    guarantees as the span exporter: ``export()`` never raises, SUCCESS once stored."""

    def __init__(self, *, store: Store = None, profile: str | None = None,
                 max_attribute_bytes: int | None = None, content_policy: str | None = None,
                 redact: str | None = None, blob_threshold: int | None = None,
                 blob_dir: str | os.PathLike[str] | None = None) -> None:
        self._open(LOGS, "otel-prov log exporter", store, profile, max_attribute_bytes, content_policy,
                   redact, blob_threshold, blob_dir)
        self.records = 0
        """GenAI events exported so far."""
        self.ignored = 0
        """Log records that are no GenAI event (not stored)."""

    def export(self, batch: Sequence[Any]) -> Any:
        if self._pipeline.closed:
            return _LogResult.FAILURE
        try:
            logs: list[LogRecord] = []
            for item in batch:
                found = log_from_sdk(item)
                if found is None:
                    self.ignored += 1
                else:
                    logs.append(found)
        except Exception:  # never into the application
            self._problems.exception("unexpected error in export (see the first traceback)")
            return _LogResult.FAILURE
        if not logs:
            return _LogResult.SUCCESS
        self.records += len(logs)
        stored = self._confirmed(submit(self._pipeline, self._problems, [], logs, []))
        return _LogResult.SUCCESS if stored else _LogResult.FAILURE

    def shutdown(self) -> None:
        self._release(30.0)

    def stats(self) -> dict[str, Any]:
        return {"records": self.records, "ignored": self.ignored, "problems": dict(self._problems.counts)}


class ConfiguredProvLogExporter(ProvLogExporter):
    """The log exporter ``OTEL_LOGS_EXPORTER=prov`` builds (the ``prov`` entry point): a store that
    cannot be opened is one log line, and the exporter drops what it is given (the application's
    other exporters go on), as :class:`ConfiguredProvSpanExporter` does."""

    def __init__(self, **kwargs: Any) -> None:
        self.degraded: str | None = None
        self._dropped = 0
        try:
            super().__init__(**kwargs)
        except Exception as exc:  # never into the SDK's configurator
            self.degraded = str(exc)
            logger.error("otel-prov log exporter: GenAI events will not be stored: %s", exc)

    def export(self, batch: Sequence[Any]) -> Any:
        if self.degraded is None:
            return super().export(batch)
        self._dropped += len(batch)
        return _LogResult.FAILURE

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True if self.degraded is not None else super().force_flush(timeout_millis)

    def shutdown(self) -> None:
        if self.degraded is None:
            super().shutdown()
