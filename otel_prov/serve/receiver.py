"""``otel-prov serve``: an OTLP trace receiver that writes the explainability graph.

Transport-independent core.  :class:`Receiver` admits a decoded ``ExportTraceServiceRequest`` (or
logs request) and hands it to its :class:`Writer`: :class:`~.inprocess.InProcess`, the SDK exporter's
ingest pipeline in this process, or the mapping workers (:class:`~.workers.WorkerPool`); it answers
only once the request's quads are committed to the store, so a client's retry covers every failure
before the commit.  Back-pressure is a bounded number of
requests in flight (and a bound on bytes not yet written): past it, and while the store is failing,
requests are refused as retryable (``UNAVAILABLE`` / HTTP 503) with a retry delay.

The transports (:mod:`.grpc_transport`, :mod:`.http_transport`) are started around one receiver by
:class:`~.server.Server`.  Settings: :class:`otel_prov.settings.ServeSettings`.
"""

from __future__ import annotations

import enum
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..ingest.problems import ProblemLog
from ..ingest.writer import NotStored
from ..mapping.limits import DEFAULT_MAX_ATTRIBUTE_BYTES
from ..mapping.policy import ContentPolicy
from ..settings import (
    DEFAULT_ACK_TIMEOUT,
    DEFAULT_MAX_INFLIGHT,
    DEFAULT_MAX_PENDING_BYTES,
    DEFAULT_MEMORY_BUDGET,
)
from ..stores import BlobPlace, WriteStore
from .guards import bearer_matches
from .inprocess import InProcess
from .messages import PoolResult
from .slices import RETRY_BUSY_SECONDS, RETRY_DRAINING_SECONDS, RETRY_STORE_SECONDS, Failure
from .workers import WorkerPool

logger = logging.getLogger(__name__)


CLOSE_TIMEOUT = 120.0
"""Seconds to wait at shutdown for the writer to store what is queued (a hung store must not hang
the process forever)."""

# -- outcomes -------------------------------------------------------------------------------------


class Answer(enum.Enum):
    OK = "ok"
    INVALID = "invalid"            # gRPC INVALID_ARGUMENT, HTTP 400: never retry
    UNAVAILABLE = "unavailable"    # gRPC UNAVAILABLE + RetryInfo, HTTP 503 + Retry-After: retry
    UNAUTHENTICATED = "unauthenticated"


@dataclass(frozen=True, slots=True)
class Outcome:
    answer: Answer
    message: str = ""
    rejected_spans: int = 0
    retry_after: float = 0.0

    @property
    def retry_after_seconds(self) -> int:
        """Whole seconds for HTTP ``Retry-After``."""
        return max(1, math.ceil(self.retry_after))


def _unavailable(message: str, delay: float) -> Outcome:
    return Outcome(Answer.UNAVAILABLE, message, retry_after=delay)


class Writer(Protocol):
    """Who maps and stores a request for the receiver, and what the receiver reads of the store's
    state: :class:`~.inprocess.InProcess` (mapping in this process) or the mapping workers'
    :class:`~.workers.WorkerPool`."""

    def ingest(self, request: Any, body: bytes | None, deadline: float | None, ack_timeout: float,
               logs: bool = False) -> PoolResult:
        """Map and store ``request`` (``body``: its protobuf bytes, when the transport has them);
        returns once it is durable, or with the failure in :attr:`PoolResult.failure`."""

    def close(self, timeout: float) -> bool:
        """Store what is queued and release the store; whether everything was stored."""

    @property
    def failing(self) -> str | None:
        """Why the store is failing now, or None."""

    @property
    def pending_bytes(self) -> int:
        """Bytes waiting in this process's memory to be written (the pool's: none, the workers append)."""

    @property
    def failures(self) -> int: ...

    @property
    def written_quads(self) -> int: ...


@dataclass
class ReceiverStats:
    """What ``/health`` counts (and serve logs when it stops): requests; those answered OK (their
    spans committed, or rejected for good: ``partial_success``); spans acknowledged and rejected;
    quads submitted; and the requests refused, by reason."""

    refused: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    acknowledged_requests: int = 0
    spans_acknowledged: int = 0
    spans_rejected: int = 0
    log_records_acknowledged: int = 0
    """GenAI events (log records) stored or kept for their spans."""
    quads_submitted: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "acknowledged_requests": self.acknowledged_requests,
            "spans_acknowledged": self.spans_acknowledged,
            "spans_rejected": self.spans_rejected,
            "log_records_acknowledged": self.log_records_acknowledged,
            "quads_submitted": self.quads_submitted,
            "refused": dict(self.refused),
        }


class MemoryBudget:
    """Bytes of request data held at once (bodies read, requests decoded and mapped), with the
    N-Quads queued for the store (``queued``): a reservation that would go past ``limit`` is refused
    -- unless nothing else is reserved, so that one request of any allowed size can always be served."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.reserved = 0
        self.peak = 0
        self._lock = threading.Lock()

    def take(self, nbytes: int, queued: int) -> bool:
        with self._lock:
            if self.reserved and self.reserved + queued + nbytes > self.limit:
                return False
            self.reserved += nbytes
            self.peak = max(self.peak, self.reserved + queued)
            return True

    def give(self, nbytes: int) -> None:
        with self._lock:
            self.reserved -= nbytes


# -- the receiver ---------------------------------------------------------------------------------


MAX_BACKLOG_BYTES = 256 * 1024 * 1024
"""Requests are refused (UNAVAILABLE, retry in a second) while the on-disk store's log holds more
than this not folded into its index: the backlog stays bounded when ingest outruns the fold, and a
reader (which replays this much at most: ``stores.logstore.READ_LOG_BYTES``) sees everything."""


class Receiver:
    """Thread-safe; one per server.  Owns the writer (and closes the store with :meth:`close`)."""

    def __init__(
        self,
        store: WriteStore | None,
        profile: str,
        *,
        pool: WorkerPool | None = None,
        token: str | None = None,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        ack_timeout: float = DEFAULT_ACK_TIMEOUT,
        rescue_dir: Path | None = None,
        max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
        backlog: Callable[[], int] | None = None,
        max_backlog_bytes: int = MAX_BACKLOG_BYTES,
        policy: ContentPolicy | None = None,
        blob_dir: BlobPlace | None = None,
        blob_threshold: int = 0,
    ) -> None:
        self.store = store
        self._backlog = backlog
        """Bytes of the store's log not folded into its index yet (an on-disk store), or None."""
        self._max_backlog_bytes = max_backlog_bytes
        self.budget = MemoryBudget(memory_budget)
        self.transport_stats: dict[str, Callable[[], dict[str, int]]] = {}
        """Counters of the transports, for :meth:`health` (their connections, ...)."""
        self._token = token.encode("utf-8") if token else None
        self._max_inflight = max_inflight
        self._max_pending_bytes = max_pending_bytes
        self._ack_timeout = ack_timeout
        if pool is None and store is None:
            raise ValueError("a receiver needs a store or a worker pool")
        self._writer: Writer = pool if pool is not None else InProcess(
            store, profile, rescue_dir=rescue_dir,  # type: ignore[arg-type]
            max_attribute_bytes=max_attribute_bytes, policy=policy, blob_dir=blob_dir,
            blob_threshold=blob_threshold)
        """Who maps and stores: the mapping workers (``--workers N``), or this process."""
        self.problems = ProblemLog(logger, "otel-prov serve")
        self.stats = ReceiverStats()
        self._cv = threading.Condition()
        self._inflight = 0
        self._active = 0
        self._draining = False
        self._closed = False

    # -- authentication ---------------------------------------------------------------------------

    def authorized(self, header: str | None) -> bool:
        """Whether an ``authorization`` header value is acceptable (always, without a token)."""
        return self._token is None or bearer_matches(header, self._token)

    def refuse_unauthenticated(self, has_header: bool) -> Outcome:
        kind = "wrong bearer token" if has_header else "no bearer token"
        self._refused(f"request refused: {kind}")
        return Outcome(Answer.UNAUTHENTICATED, "a valid 'authorization: Bearer <token>' header is required")

    def refuse_invalid(self, kind: str, detail: str) -> Outcome:
        """An undecodable request (never retried by the client)."""
        self._refused(f"request refused: {kind}")
        return Outcome(Answer.INVALID, f"{kind}: {detail}")

    def _refused(self, kind: str) -> None:
        with self._cv:
            self.stats.requests += 1
            self.stats.refused[kind] += 1
        self.problems.report([kind])

    # -- the request lifecycle --------------------------------------------------------------------

    def begin(self) -> bool:
        """A transport starts handling a request; False while draining (answer UNAVAILABLE)."""
        with self._cv:
            if self._draining:
                return False
            self._active += 1
            return True

    def end(self) -> None:
        with self._cv:
            self._active -= 1
            self._cv.notify_all()

    def take(self, nbytes: int) -> Outcome | None:
        """Reserve ``nbytes`` of the memory budget for a request (its body, what decoding it
        takes); an UNAVAILABLE outcome if that would go past the budget.  :meth:`give` them back
        once the request is answered."""
        if self.budget.take(nbytes, self._writer.pending_bytes):
            return None
        self._refused("request refused: memory budget reached")
        return _unavailable("the receiver's memory budget is in use; retry", RETRY_BUSY_SECONDS)

    def give(self, nbytes: int) -> None:
        self.budget.give(nbytes)

    def draining_outcome(self) -> Outcome:
        self._refused("request refused: shutting down")
        return _unavailable("the receiver is shutting down; retry", RETRY_DRAINING_SECONDS)

    def ingest(self, request: Any, deadline: float | None = None, body: bytes | None = None,
               logs: bool = False) -> Outcome:
        """Map and store one request; returns after its quads are committed, or with a refusal.
        With ``logs``, ``request`` is an ``ExportLogsServiceRequest`` (the GenAI events some
        instrumentations send as log records: joined to their spans, whichever arrives first).

        ``deadline`` (``time.monotonic()`` seconds) shortens the wait for the commit (a client's
        gRPC deadline); the default is the receiver's ack timeout.  ``request`` is an
        ``ExportTraceServiceRequest``, or one read shallow (:mod:`otel_prov.mapping.otlp`);
        ``body``, its protobuf bytes if the transport has them (the workers read those).
        """
        refusal = self._admit()
        if refusal is not None:
            return refusal
        try:
            result = self._writer.ingest(request, body, deadline, self._ack_timeout, logs)
            if result.problems:
                self.problems.report(result.problems.elements())
            if result.failure is not None:
                kind, message = result.failure
                self._refused_inflight(kind)
                return _unavailable(message, kind.retry_after)
            return self._acknowledged(result.accepted, result.rejected, result.first_rejected, result.added,
                                      logs)
        except NotStored as exc:  # the store refused it (a full disk): nothing of it is kept
            self._refused_inflight(Failure.STORE_FAILING)
            return _unavailable(f"the store is failing ({exc}); retry later", RETRY_STORE_SECONDS)
        except Exception:
            self.problems.exception("unexpected error while ingesting (see the first traceback)")
            return _unavailable("internal error in the receiver; retry", RETRY_STORE_SECONDS)
        finally:
            with self._cv:
                self._inflight -= 1
                self._cv.notify_all()

    def _admit(self) -> Outcome | None:
        writer = self._writer
        with self._cv:
            self.stats.requests += 1
            if self._closed:
                kind = "shutting down"
                outcome = _unavailable("the receiver is closed", RETRY_DRAINING_SECONDS)
            elif writer.failing:
                kind = "store failing"
                outcome = _unavailable(f"the store is failing ({writer.failing}); retry later",
                                       RETRY_STORE_SECONDS)
            elif self._inflight >= self._max_inflight or writer.pending_bytes > self._max_pending_bytes:
                kind = "too many requests in flight"
                outcome = _unavailable("too many requests in flight; retry", RETRY_BUSY_SECONDS)
            elif self._backlog is not None and self._backlog() > self._max_backlog_bytes:
                kind = "index behind"
                outcome = _unavailable(f"the store's index is behind its log (over "
                                       f"{self._max_backlog_bytes >> 20} MiB not folded yet); retry",
                                       RETRY_BUSY_SECONDS)
            else:
                self._inflight += 1
                return None
            self.stats.refused[f"request refused: {kind}"] += 1
        self.problems.report([f"request refused: {kind}"])
        return outcome

    def _acknowledged(self, accepted: int, rejected: int, first_rejected: str, added: int,
                      logs: bool = False) -> Outcome:
        with self._cv:
            self.stats.acknowledged_requests += 1
            if logs:
                self.stats.log_records_acknowledged += accepted
            else:
                self.stats.spans_acknowledged += accepted
            self.stats.spans_rejected += rejected
            self.stats.quads_submitted += added
        if rejected:
            message = f"{rejected} span(s) rejected: {first_rejected}"
            if rejected > 1:
                message += f" (and {rejected - 1} more)"
            return Outcome(Answer.OK, message, rejected_spans=rejected)
        return Outcome(Answer.OK)

    def _refused_inflight(self, kind: str) -> None:
        """A request admitted but answered UNAVAILABLE (its quads may still be written later;
        the client's retry is idempotent)."""
        with self._cv:
            self.stats.refused[f"request not acknowledged: {kind}"] += 1
        self.problems.report([f"request not acknowledged: {kind}"])

    # -- health and shutdown ----------------------------------------------------------------------

    def healthy(self) -> bool:
        return not self._draining and not self._closed and not self._writer.failing

    def health(self) -> dict[str, Any]:
        status = "ok" if self.healthy() else ("draining" if self._draining else "store failing")
        with self._cv:
            info: dict[str, Any] = {"status": status, "in_flight": self._inflight}
            info.update(self.stats.as_dict())
        info["memory_reserved"] = self.budget.reserved
        info["memory_queued"] = self._writer.pending_bytes
        if self._backlog is not None:
            info["log_not_folded"] = self._backlog()
        info["store_failures"] = self._writer.failures
        info["quads_written"] = self._writer.written_quads
        info["problems"] = dict(self.problems.counts)
        for name, counters in self.transport_stats.items():
            info[name] = counters()
        return info

    def drain(self, timeout: float) -> bool:
        """Refuse new requests and wait until those in flight are answered."""
        deadline = time.monotonic() + timeout
        with self._cv:
            self._draining = True
            while self._active > 0 or self._inflight > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cv.wait(remaining)
        return True

    def close(self, timeout: float | None = None) -> bool:
        """Store what is queued and release the store, within ``timeout`` seconds (default
        :data:`CLOSE_TIMEOUT`; what the on-disk log holds and is not folded by then is folded at the
        next start).  Returns whether everything was stored."""
        with self._cv:
            if self._closed:
                return True
            self._closed = True
            self._draining = True
        return self._writer.close(CLOSE_TIMEOUT if timeout is None else timeout)
