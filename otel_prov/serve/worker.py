"""A mapping worker of ``otel-prov serve --workers N`` (``python -m otel_prov.serve.worker``, started by
the front: :mod:`.workers`, which says how the work is shared): maps its share of each request with its
own mapper, appends to its own log segment, answers each request once its part is durable.  What it and
the front send each other: :mod:`.messages`."""

from __future__ import annotations

import gc
import logging
import signal
import sys
import threading
import time
from multiprocessing.connection import Connection

from .. import settings
from ..ingest.pipeline import IngestPipeline, PipelineClosed
from ..ingest.writer import NotStored
from ..mapping import mapper as M
from ..mapping.mapper import ConversationOp, TraceMapper, Update
from ..mapping.spans import SpanView, otlp_logs, otlp_slices
from ..stores import blob_place, open_blobs, open_for_writing, parse_store
from . import messages as msg
from .decode import decode_logs, decode_protobuf, log_problems
from .slices import SLICE_SPANS, Failure

logger = logging.getLogger(__name__)

STATUS_INTERVAL = 0.25
"""Seconds between a worker's reports of its store's state (failing or not) while it changes."""
GC_THRESHOLDS = (50_000, 20, 100)
"""The garbage collector's thresholds in a serve process (Python's defaults: 700, 10, 10)."""


def tune_gc() -> None:
    """Garbage collection for a serve process (ours: a library never does this).  Nearly everything
    the ingest path allocates is freed by reference counting; what lives on is the modules (frozen
    here: never traversed again) and the mapper's bounded state.  With Python's defaults,
    collections took ~0.35 s of every 3 s of CPU under ``bench_ingest.py``'s load, holding the
    GIL; with these, ~0.01 s.  Cyclic garbage is still collected, every 50,000 allocations."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


class Worker:
    """One worker process: maps its share of each request, appends, answers once durable."""

    def __init__(self, conn: Connection, index: int, count: int, pipeline: IngestPipeline) -> None:
        self.conn = conn
        self.index = index
        self.count = count
        self.pipeline = pipeline
        self._send = threading.Lock()
        self._acks: list[tuple[int, int, float, list[Update], msg.PartResult]] = []
        self._acks_cv = threading.Condition()
        self._stop = False
        self._retry_ops: list[ConversationOp] = []
        """Conversation changes whose update could not be stored: applied again with the next."""
        self._status: msg.Status | None = None
        self._acker = threading.Thread(target=self._ack, name="otel-prov-worker-acks", daemon=True)

    def send(self, message: msg.ToFront) -> None:
        with self._send:
            self.conn.send(message)

    def run(self) -> None:
        self._acker.start()
        try:
            while True:
                try:
                    message: msg.ToWorker = self.conn.recv()
                except (EOFError, OSError):  # the front is gone
                    self.close(msg.CLOSE_GRACE, answer=False)
                    return
                if isinstance(message, msg.MapSpans):
                    self._request(message.rid, message.deadline, self.conn.recv_bytes())
                elif isinstance(message, msg.MapLogs):
                    self._logs(message.rid, message.deadline, self.conn.recv_bytes())
                elif isinstance(message, msg.MapConversations):
                    self._conversations(message.rid, message.deadline, message.ops)
                elif isinstance(message, msg.Close):
                    self.close(message.timeout, answer=True)
                    return
        finally:
            with self._acks_cv:
                self._stop = True
                self._acks_cv.notify_all()

    def _request(self, rid: int, deadline: float, body: bytes) -> None:
        result = msg.PartResult()
        updates: list[Update] = []
        seq = self.pipeline.writer.submitted
        try:
            request = decode_protobuf(body)  # the front decoded it too (text not UTF-8 repaired)
            del body
            for part in otlp_slices(request.resource_spans, SLICE_SPANS, (self.index, self.count)):
                submitted = self.pipeline.submit(part.records)
                seq, update = submitted.seq, submitted.update
                updates.append(update.without_quads())
                result.add(part, update)
                result.ops += update.conversation_ops
        except Exception as exc:
            result.failure = self._failure(exc, "while ingesting")
        self._queue_ack(rid, seq, deadline, updates, result)

    def _logs(self, rid: int, deadline: float, body: bytes) -> None:
        """This worker's share of a logs request: the GenAI events of its traces."""
        result = msg.PartResult()
        updates: list[Update] = []
        seq = self.pipeline.writer.submitted
        try:
            found = otlp_logs(decode_logs(body).resource_logs, (self.index, self.count))
            del body
            result.problems.update(found.problems)
            result.problems.update(log_problems(found))
            submitted = self.pipeline.submit([], found.records)
            seq, update = submitted.seq, submitted.update
            updates.append(update.without_quads())
            result.accepted = len(found.records)
            result.added = len(update.add)
            result.problems.update(update.problems)
            result.ops += update.conversation_ops
        except Exception as exc:
            result.failure = self._failure(exc, "while ingesting logs")
        self._queue_ack(rid, seq, deadline, updates, result)

    def _conversations(self, rid: int, deadline: float, ops: list[ConversationOp]) -> None:
        """Worker 0: other workers' conversation changes, applied, stored and answered (at once:
        they are rare, only chat conversations make them)."""
        ops = self._retry_ops + ops
        result = msg.PartResult()
        try:
            submitted = self.pipeline.apply_conversations(ops)
            result.problems.update(submitted.update.problems)
            result.added = len(submitted.update.add)
            if not self.pipeline.wait(submitted.seq, max(0.0, deadline - time.monotonic())):
                self.pipeline.unstored(submitted.update)
                result.failure = (Failure.TOO_SLOW, "the store did not commit in time")
        except Exception as exc:
            result.failure = self._failure(exc, "in conversations")
        self._retry_ops = ops if result.failure is not None else []
        self._answer(rid, result)

    def _failure(self, exc: Exception, doing: str) -> tuple[Failure, str]:
        """The failure answered for ``exc``, raised ``doing`` something (an unexpected one logged)."""
        if isinstance(exc, NotStored):  # the store refused it (a full disk): nothing of it is kept
            return (Failure.STORE_FAILING, f"the store is failing ({exc}); retry later")
        if isinstance(exc, PipelineClosed):
            return (Failure.CLOSED, "the receiver is shutting down; retry")
        logger.error("otel-prov serve worker %d: unexpected error %s", self.index, doing, exc_info=exc)
        return (Failure.INTERNAL, "internal error in the receiver; retry")

    def _answer(self, rid: int, result: msg.PartResult) -> bool:
        """Send a result; False if the front is gone.  A result that cannot be sent (a bug) is
        answered as an internal error, so the request never waits for nothing."""
        result.ops = [(trace_id, None if calls is None else tuple(_portable(c) for c in calls))
                      for trace_id, calls in result.ops]
        try:
            self.send(msg.Done(rid, result))
        except (OSError, ValueError, EOFError):
            return False
        except Exception:
            logger.exception("otel-prov serve worker %d: cannot send a result", self.index)
            try:
                internal = msg.PartResult(failure=(Failure.INTERNAL, "internal error in the receiver"))
                self.send(msg.Done(rid, internal))
            except Exception:
                return False
        return True

    def _queue_ack(self, rid: int, seq: int, deadline: float, updates: list[Update],
                   result: msg.PartResult) -> None:
        with self._acks_cv:
            self._acks.append((rid, seq, deadline, updates, result))
            self._acks_cv.notify_all()

    def _ack(self) -> None:
        """Answers each request, in order, once its part is durable (the group commit); reports
        the store's state when it changes."""
        while True:
            with self._acks_cv:
                while not self._acks and not self._stop:
                    self._acks_cv.wait(STATUS_INTERVAL)
                    self._report()
                if not self._acks:
                    return
                rid, seq, deadline, updates, result = self._acks.pop(0)
            if result.failure is None:
                try:
                    durable = self.pipeline.wait(seq, max(0.0, deadline - time.monotonic()))
                except Exception:
                    durable = False
                if not durable:
                    failing = self.pipeline.writer.failing
                    result.failure = (
                        (Failure.STORE_FAILING, f"the store is failing ({failing}); retry later")
                        if failing else (Failure.TOO_SLOW, "the store did not commit in time"))
            if result.failure is not None:
                for update in updates:  # the client's retry must write their traces whole
                    self.pipeline.unstored(update)
            self._report()
            if not self._answer(rid, result):
                return

    def _report(self) -> None:
        writer = self.pipeline.writer
        status = msg.Status(writer.failing, writer.failures, writer.written_quads)
        if status != self._status:
            self._status = status
            try:
                self.send(status)
            except (OSError, ValueError):
                pass

    def close(self, timeout: float, *, answer: bool) -> None:
        deadline = time.monotonic() + timeout
        with self._acks_cv:  # answer what is queued first
            self._stop = True
            self._acks_cv.notify_all()
        self._acker.join(timeout)
        stored = self.pipeline.close(max(0.0, deadline - time.monotonic()))
        if answer:
            try:
                self.send(msg.Closed(stored))
            except (OSError, ValueError):
                pass


def _portable(call: SpanView) -> SpanView:
    """A span's view as it can be sent to another process (its attributes a plain dict)."""
    return call if isinstance(call.attributes, dict) else call._replace(attributes=dict(call.attributes))


def main(argv: list[str]) -> int:
    """``python -m otel_prov.serve.worker FD INDEX COUNT STORE PROFILE MAX_ATTRIBUTE_BYTES LEVEL RULES
    DETECTORS BLOB_THRESHOLD BLOB_DIR`` (the content policy: every field's rule, the detectors' names or
    ``off``; large values stored by reference above BLOB_THRESHOLD bytes in BLOB_DIR, or ``0 ""``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the front drains on them, then closes us
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    fd, index, count = int(argv[0]), int(argv[1]), int(argv[2])
    spec, profile, limit, level = parse_store(argv[3]), argv[4], int(argv[5]), argv[6]
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("otel_prov").setLevel(level.upper())
    conn = Connection(fd)
    try:
        policy = settings.policy(argv[7], argv[8])
        mapper = TraceMapper(profile, max_attribute_bytes=limit, conversations=index == 0,
                             max_traces=max(1, M.MAX_TRACES // count), max_spans=max(1, M.MAX_SPANS // count),
                             max_bytes=max(1, M.MAX_BYTES // count), policy=policy,
                             blob_threshold=int(argv[9]) if argv[10] else 0)
        pipeline = IngestPipeline(open_for_writing(spec), profile, name=f"otel-prov serve (worker {index})",
                                  rescue_dir=spec.rescue_dir, mapper=mapper,
                                  blobs=open_blobs(blob_place(argv[10])) if argv[10] else None)
    except Exception as exc:
        conn.send(msg.StartFailed(str(exc)))
        return 1
    tune_gc()
    conn.send(msg.Ready())
    Worker(conn, index, count, pipeline).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
