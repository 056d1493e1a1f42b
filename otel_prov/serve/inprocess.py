"""Mapping in the serve process (``--workers 1``, the default): the receiver's writer when it has no
mapping workers (:mod:`.workers`).  Both answer the receiver the same way (:class:`.receiver.Writer`):
``ingest`` returns a :class:`~.messages.PoolResult` once the request is durable, or with a
:class:`~.slices.Failure`."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from ..ingest.pipeline import IngestPipeline, PipelineClosed
from ..ingest.writer import WriterFull
from ..mapping.limits import DEFAULT_MAX_ATTRIBUTE_BYTES
from ..mapping.mapper import Update
from ..mapping.policy import ContentPolicy
from ..mapping.spans import otlp_logs, otlp_slices
from ..stores import BlobPlace, WriteStore, open_blobs
from .decode import log_problems
from .messages import PoolResult
from .slices import SLICE_SPANS, Failure

STORE_FAILING_GRACE = 0.5
"""A waiting request answers UNAVAILABLE once the store has been failing this long (seconds)."""


class Turns:
    """A lock granted in the order it was asked for (``threading.Lock`` is not fair: a thread that
    releases it and asks again at once usually gets it back, so a large request mapped slice by
    slice would still starve the others)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._next = 0
        self._serving = 0

    def __enter__(self) -> None:
        with self._cv:
            ticket = self._next
            self._next += 1
            while self._serving != ticket:
                self._cv.wait()

    def __exit__(self, *exc: object) -> None:
        with self._cv:
            self._serving += 1
            self._cv.notify_all()


class InProcess:
    """Maps each request in this process with the SDK exporter's pipeline, a slice at a time
    (:data:`~.slices.SLICE_SPANS` spans), in arrival order with the other requests, so a large one
    cannot starve them; answers once its quads are committed.  Thread-safe."""

    def __init__(self, store: WriteStore, profile: str, *, rescue_dir: Path | None = None,
                 max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES,
                 policy: ContentPolicy | None = None, blob_dir: BlobPlace | None = None,
                 blob_threshold: int = 0) -> None:
        self.pipeline = IngestPipeline(store, profile, name="otel-prov serve", rescue_dir=rescue_dir,
                                       max_attribute_bytes=max_attribute_bytes, policy=policy,
                                       blobs=open_blobs(blob_dir) if blob_dir is not None else None,
                                       blob_threshold=blob_threshold)
        self._turns = Turns()
        self._closed = False

    # -- the store's state (StoreState) -----------------------------------------------------------

    @property
    def failing(self) -> str | None:
        return self.pipeline.writer.failing

    @property
    def pending_bytes(self) -> int:
        return self.pipeline.writer.pending_bytes

    @property
    def failures(self) -> int:
        return self.pipeline.writer.failures

    @property
    def written_quads(self) -> int:
        return self.pipeline.writer.written_quads

    # -- requests ---------------------------------------------------------------------------------

    def ingest(self, request: Any, body: bytes | None, deadline: float | None, ack_timeout: float,
               logs: bool = False) -> PoolResult:
        """Map and store one request (an ``ExportTraceServiceRequest``, or read shallow; with ``logs``
        an ``ExportLogsServiceRequest``: the GenAI events of its log records); ``body`` is not needed.
        Returns once its quads are committed -- within ``ack_timeout`` seconds of the end of its
        mapping, and by ``deadline`` (``time.monotonic()``) -- or with the failure."""
        pipeline = self.pipeline
        result = PoolResult()
        updates: list[Update] = []
        seq = pipeline.writer.submitted  # a request with nothing to store waits for nothing new
        try:
            if logs:
                found = otlp_logs(request.resource_logs)
                with self._turns:  # log records are small and few beside spans: one turn
                    submitted = pipeline.submit([], found.records)
                seq, update = submitted.seq, submitted.update
                updates.append(update.without_quads())
                result.problems.update([*found.problems, *log_problems(found), *update.problems])
                result.accepted, result.added = len(found.records), len(update.add)
            else:
                slices = otlp_slices(request.resource_spans, SLICE_SPANS)
                while True:
                    # Reading a slice is Python work too: done in the turn, so the other requests'
                    # threads wait on the turn instead of contending for the GIL.
                    with self._turns:
                        part = next(slices, None)
                        if part is None:
                            break
                        submitted = pipeline.submit(part.records)
                    seq, update = submitted.seq, submitted.update
                    updates.append(update.without_quads())
                    result.add(part, update)
        except WriterFull:
            result.failure = (Failure.NOT_KEEPING_UP, "the store is not keeping up; retry")
        except PipelineClosed:
            result.failure = (Failure.CLOSED_WHILE_MAPPING, "the receiver is shutting down; retry")
        if result.failure is None:
            limit = time.monotonic() + ack_timeout
            result.failure = self._await(seq, limit if deadline is None else min(limit, deadline))
        if result.failure is not None:
            for update in updates:  # the client's retry must write their traces whole
                pipeline.unstored(update)
        return result

    def _await(self, seq: int, deadline: float) -> tuple[Failure, str] | None:
        """None once ``seq`` is committed; the failure if the store fails or is too slow."""
        writer = self.pipeline.writer
        failing_since: float | None = None
        while True:
            before = time.monotonic()
            if writer.wait(seq, timeout=0.05):
                if self._closed:  # the drain timed out: a closing writer may have rescued, not stored
                    return (Failure.CLOSED_UNCONFIRMED, "the receiver closed; retry")
                return None
            now = time.monotonic()
            if now - before < 0.04 and not writer.failing:  # the writer thread is gone
                return (Failure.WRITER_STOPPED, "the receiver's writer has stopped; retry")
            failing = writer.failing
            if failing:
                failing_since = failing_since or now
                if now - failing_since >= STORE_FAILING_GRACE:
                    return (Failure.STORE_FAILING, f"the store is failing ({failing}); retry later")
            else:
                failing_since = None
            if now >= deadline:
                return (Failure.TOO_SLOW, "the store did not commit in time; retry")

    def close(self, timeout: float) -> bool:
        """Store what is queued and release the store; whether everything was stored."""
        self._closed = True
        return self.pipeline.close(timeout)
