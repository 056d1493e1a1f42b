"""Mapping workers: ``otel-prov serve --workers N`` maps on N processes, so it uses N cores (the
mapping is Python: one process maps on one core at a time).

- **The front** (the serve process: transports, admission, memory budget, health) decodes a request
  (an undecodable one is refused at once) and sends its bytes to every worker (:class:`WorkerPool`).
- **Worker k of N** (``python -m otel_prov.serve.workers``, :func:`main`) maps the spans of the
  traces :func:`~otel_prov.mapping.spans.trace_share` gives to ``k`` -- every span of a trace goes
  to one worker, so a framework trace's tree and the mapper's state of it stay in one process --
  with its own :class:`~otel_prov.mapping.mapper.TraceMapper` (the bounds divided by N), appends
  what it maps to its own log segment (the store takes any number of writers: docs/store.md) and
  answers once that is durable (its group commit).  The front acknowledges a request when every
  worker has answered that its part is durable.
- **Chat conversations** span traces, so one mapper keeps them all: worker 0's.  The other workers'
  mappers hand out how their traces' free model calls changed
  (:attr:`~otel_prov.mapping.mapper.Update.conversation_ops`); the front forwards them to worker 0
  (each worker's in its order) and acknowledges a request only once worker 0 has made durable the
  conversation changes its spans caused.  A change worker 0 could not store is applied again with
  the next one (the conversation is then rewritten whole), and until that succeeds every request
  waits for it.
- **A worker that dies** (killed, out of memory) fails the requests it had (UNAVAILABLE: the client
  retries) and is started again; what it had acknowledged is in its segment.  Its mapper's state is
  lost, as at a restart of serve.  When the front dies (even ``kill -9``) each worker finds its
  connection closed, syncs and closes its store, and exits.

Workers ignore SIGINT and SIGTERM: the front drains on them, then closes the workers.
"""

from __future__ import annotations

import gc
import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..ingest.pipeline import IngestPipeline, PipelineClosed
from ..ingest.writer import NotStored
from ..mapping import mapper as M
from ..mapping.mapper import ConversationOp, TraceMapper, Update
from ..mapping.spans import SpanView, otlp_logs, otlp_slices
from ..stores import StoreSpec, open_for_writing, parse_store
from ..stores.folder import interpreter
from .decode import decode_logs, decode_protobuf, log_problems

logger = logging.getLogger(__name__)

START_TIMEOUT = 60.0
"""Seconds a worker may take to start and open the store."""
SLICE_SPANS = 1000
"""Spans of a request a worker reads and maps at a time (a large request is never all records)."""
STATUS_INTERVAL = 0.25
"""Seconds between a worker's reports of its store's state (failing or not) while it changes."""
CLOSE_GRACE = 10.0
"""Seconds a worker whose front is gone takes, at most, to close its store."""
RESTART_STABLE = 30.0
"""A worker that stopped sooner than this after it started is started again after a pause (0.5 s,
doubling up to :data:`RESTART_PAUSE_MAX`): one that cannot start is not restarted in a loop."""
RESTART_PAUSE_MAX = 10.0

GC_THRESHOLDS = (50_000, 20, 100)
"""The garbage collector's thresholds in a serve process (Python's defaults: 700, 10, 10)."""

# Failures a worker reports (the front answers UNAVAILABLE; the client retries).
STORE_FAILING = "store failing"
TOO_SLOW = "store too slow (ack timeout)"
CLOSED = "closed"
INTERNAL = "internal error"
WORKER_STOPPED = "worker stopped"


def tune_gc() -> None:
    """Garbage collection for a serve process (ours: a library never does this).  Nearly everything
    the ingest path allocates is freed by reference counting; what lives on is the modules (frozen
    here: never traversed again) and the mapper's bounded state.  With Python's defaults,
    collections took ~0.35 s of every 3 s of CPU under ``bench_ingest.py``'s load, holding the
    GIL; with these, ~0.01 s.  Cyclic garbage is still collected, every 50,000 allocations."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


@dataclass
class PoolResult:
    """What was done with a request, over every worker (or by one: :class:`PartResult`)."""

    accepted: int = 0
    rejected: int = 0
    """Spans rejected for good (partial success): a count, a request may hold millions."""
    first_rejected: str = ""
    """Why the first of them was."""
    problems: Counter[str] = field(default_factory=Counter)
    """Each kind of problem met, with its count."""
    added: int = 0
    failure: tuple[str, str] | None = None
    """``(kind, message)``: not known durable (the request is not acknowledged)."""


@dataclass
class PartResult(PoolResult):
    """What one worker did with its part of a request (or a batch of conversation changes)."""

    ops: list[ConversationOp] = field(default_factory=list)
    ops_end: int = 0
    """Set by the front: the sequence number of the last conversation change this part handed out."""


# -- the front ------------------------------------------------------------------------------------


class _Call:
    """A request sent to some workers, waiting for their answers."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.results: dict[int, PartResult] = {}
        self.cv = threading.Condition()

    def answer(self, worker: int, result: PartResult) -> None:
        with self.cv:
            self.results[worker] = result
            self.cv.notify_all()

    def wait(self, deadline: float) -> bool:
        with self.cv:
            while len(self.results) < self.expected:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.cv.wait(remaining)
            return True


class _Worker:
    """The front's handle of one worker process."""

    def __init__(self, pool: WorkerPool, index: int, pause: float = 0.0) -> None:
        self.pool = pool
        self.index = index
        self.pause = pause
        """Seconds the pool waited before starting this one (a restart's pause)."""
        self.started = time.monotonic()
        self.failing: str | None = "starting"
        self.failures = 0
        self.written_quads = 0
        self.calls: dict[int, _Call] = {}
        self.lock = threading.Lock()  # sends, and the calls waiting for an answer
        self.ready = threading.Event()
        self.error: str | None = None
        self.closed: bool | None = None
        """What the worker answered to ``close`` (None: not yet)."""
        self.proc, self.conn = self._start()
        self.reader = threading.Thread(target=self._read, name=f"otel-prov-worker-{index}-reader",
                                       daemon=True)
        self.reader.start()

    def _start(self) -> tuple[subprocess.Popen[bytes], Connection]:
        pool = self.pool
        ours, theirs = socket.socketpair()
        try:
            package_root = str(Path(__file__).resolve().parents[2])
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
            proc = subprocess.Popen(
                [pool.python, "-m", "otel_prov.serve.workers", str(theirs.fileno()), str(self.index),
                 str(pool.count), str(pool.store), pool.profile, str(pool.max_attribute_bytes),
                 pool.log_level],
                stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), env=env)
        finally:
            theirs.close()
        return proc, Connection(ours.detach())

    def send(self, message: tuple[Any, ...], body: bytes | None = None) -> bool:
        """Send a message (and a body); False if the worker is gone."""
        try:
            with self.lock:
                self.conn.send(message)
                if body is not None:
                    self.conn.send_bytes(body)
            return True
        except (OSError, ValueError):
            return False

    def call(self, rid: int, call: _Call, message: tuple[Any, ...], body: bytes | None = None) -> None:
        with self.lock:
            self.calls[rid] = call
        if not self.send(message, body):
            self._fail_call(rid, f"worker {self.index} is not running")

    def _fail_call(self, rid: int, message: str) -> None:
        with self.lock:
            call = self.calls.pop(rid, None)
        if call is not None:
            call.answer(self.index, PartResult(failure=(WORKER_STOPPED, message)))

    def _read(self) -> None:
        try:
            while True:
                message = self.conn.recv()
                kind = message[0]
                if kind == "done":
                    _, rid, result = message
                    if result.ops:
                        result.ops_end = self.pool.queue_ops(self.index, result.ops)
                    with self.lock:
                        call = self.calls.pop(rid, None)
                    if call is not None:
                        call.answer(self.index, result)
                elif kind == "status":
                    _, self.failing, self.failures, self.written_quads = message
                elif kind == "ready":
                    self.failing = None
                    self.ready.set()
                elif kind == "error":
                    self.error = message[1]
                    self.ready.set()
                elif kind == "closed":
                    self.closed = bool(message[1])
        except (EOFError, OSError):
            pass
        except Exception:  # a message the front cannot read: treat the worker as gone
            logger.exception("otel-prov serve: unreadable answer from worker %d", self.index)
        self.failing = f"worker {self.index} stopped"
        self.ready.set()
        with self.lock:
            calls, self.calls = self.calls, {}
        for call in calls.values():
            call.answer(self.index, PartResult(failure=(WORKER_STOPPED, f"worker {self.index} stopped")))
        self.pool.stopped(self)

    def close(self, timeout: float) -> None:
        self.send(("close", timeout))

    def join(self, timeout: float) -> bool:
        """Wait for the process to exit (killed past ``timeout``); whether it closed its store."""
        try:
            self.proc.wait(max(0.0, timeout))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return False
        finally:
            self.reader.join(5.0)  # it reads what the worker sent before exiting, then the end
            self.conn.close()
        return bool(self.closed)


class WorkerPool:
    """``count`` worker processes mapping into the on-disk store ``store``.  Thread-safe.  Looks
    like the writer to the receiver (:attr:`failing`, :attr:`pending_bytes`, :attr:`failures`,
    :attr:`written_quads`)."""

    def __init__(self, store: StoreSpec, profile: str, count: int, *, max_attribute_bytes: int,
                 log_level: str = "INFO") -> None:
        python = interpreter()
        if python is None:
            raise StoreError(f"cannot start mapping workers: {sys.executable!r} is not a Python "
                             "interpreter (use --workers 1)")
        self.python = python
        self.store = store
        self.profile = profile
        self.count = count
        self.max_attribute_bytes = max_attribute_bytes
        self.log_level = log_level
        self.pending_bytes = 0
        """Always 0: nothing waits in the front's memory (the workers append at once)."""
        self._ids = itertools.count(1)
        self._closing = False
        self._stopping = threading.Event()
        """Set when the pool closes: a restart waiting out its pause gives up."""
        self._lock = threading.Lock()
        self._ops: list[tuple[int, int, ConversationOp]] = []
        """Conversation changes not yet delivered to worker 0: (sequence number, worker, change)."""
        self._ops_seq = 0
        self._ops_durable = 0
        """Changes up to this sequence number are durable at worker 0."""
        self._ops_dirty = False
        """Worker 0 could not store a batch of changes: it applies them again with the next one."""
        self._flush = threading.Lock()
        self.workers: list[_Worker] = []
        try:
            self.workers = [_Worker(self, k) for k in range(count)]
            deadline = time.monotonic() + START_TIMEOUT
            for worker in self.workers:
                if not worker.ready.wait(max(0.0, deadline - time.monotonic())):
                    raise StoreError(f"mapping worker {worker.index} did not start within "
                                     f"{START_TIMEOUT:.0f} s")
                if worker.error is not None:
                    raise StoreError(worker.error)
                if worker.failing is not None:
                    raise StoreError(f"mapping worker {worker.index} stopped while starting")
        except BaseException:
            self._closing = True
            self._stopping.set()
            for worker in self.workers:
                worker.close(1.0)
            for worker in self.workers:
                worker.join(5.0)
            raise

    # -- what the receiver reads ------------------------------------------------------------------

    @property
    def failing(self) -> str | None:
        for worker in self.workers:
            if worker.failing is not None:
                return worker.failing
        return None

    @property
    def failures(self) -> int:
        return sum(w.failures for w in self.workers)

    @property
    def written_quads(self) -> int:
        return sum(w.written_quads for w in self.workers)

    # -- requests ---------------------------------------------------------------------------------

    def ingest(self, body: bytes, deadline: float, logs: bool = False) -> PoolResult:
        """Have every worker map and store its part of the request ``body`` (an
        ``ExportTraceServiceRequest``, or with ``logs`` an ``ExportLogsServiceRequest``: each worker
        takes the log records of its traces); returns once each part is durable (and the
        conversation changes it caused), or with the first failure."""
        rid = next(self._ids)
        call = _Call(self.count)
        for worker in self.workers:
            worker.call(rid, call, ("logs" if logs else "req", rid, deadline), body)
        if not call.wait(deadline):
            for worker in self.workers:
                with worker.lock:
                    worker.calls.pop(rid, None)
            return PoolResult(failure=(TOO_SLOW, "the store did not commit in time"))
        total = PoolResult()
        ops_end = 0
        for k in range(self.count):
            part = call.results[k]
            total.accepted += part.accepted
            total.rejected += part.rejected
            total.first_rejected = total.first_rejected or part.first_rejected
            total.problems.update(part.problems)
            total.added += part.added
            ops_end = max(ops_end, part.ops_end)
            if part.failure is not None and total.failure is None:
                total.failure = part.failure
        if ops_end or self._ops_dirty:
            failure = self._conversations_durable(ops_end, deadline)
            if failure is not None and total.failure is None:
                total.failure = failure
        return total

    def queue_ops(self, worker: int, ops: list[ConversationOp]) -> int:
        """Queue a worker's conversation changes for worker 0 (in the order they arrive); returns
        the sequence number of the last."""
        with self._lock:
            for op in ops:
                self._ops_seq += 1
                self._ops.append((self._ops_seq, worker, op))
            return self._ops_seq

    def _conversations_durable(self, upto: int, deadline: float) -> tuple[str, str] | None:
        """Deliver the queued conversation changes to worker 0 until those up to ``upto`` are
        durable there; the failure, if that does not happen."""
        with self._flush:
            if self._ops_durable >= upto and not self._ops_dirty:
                return None
            with self._lock:
                batch = list(self._ops)
            rid = next(self._ids)
            call = _Call(1)
            worker = self.workers[0]
            worker.call(rid, call, ("conv", rid, deadline, [op for _, _, op in batch]))
            if not call.wait(deadline):
                with worker.lock:
                    worker.calls.pop(rid, None)
                return (TOO_SLOW, "the store did not commit the conversations in time")
            result = call.results[0]
            if result.failure is not None and result.failure[0] == WORKER_STOPPED:
                return result.failure  # not delivered: sent again (to the restarted worker) next time
            with self._lock:  # delivered: worker 0 has applied them (and keeps them if not stored)
                del self._ops[:len(batch)]
            if batch:
                self._ops_durable = max(self._ops_durable, batch[-1][0])
            self._ops_dirty = result.failure is not None
            return result.failure

    # -- workers that stop, and closing -----------------------------------------------------------

    def stopped(self, worker: _Worker) -> None:
        """A worker's connection closed: start it again, unless the pool is closing."""
        if self._closing:
            return
        logger.error("otel-prov serve: mapping worker %d (pid %d) stopped (exit %s); starting it again",
                     worker.index, worker.proc.pid, worker.proc.poll())
        threading.Thread(target=self._restart, args=(worker,), name="otel-prov-worker-restart",
                         daemon=True).start()

    def _restart(self, old: _Worker) -> None:
        try:
            old.join(CLOSE_GRACE)
        except Exception:
            pass
        pause = (0.0 if time.monotonic() - old.started >= RESTART_STABLE
                 else min(max(0.5, 2 * old.pause), RESTART_PAUSE_MAX))
        while not self._stopping.wait(pause):
            try:
                new = _Worker(self, old.index, pause)
            except OSError as exc:
                logger.error("otel-prov serve: cannot start mapping worker %d: %s", old.index, exc)
                pause = min(max(0.5, 2 * pause), RESTART_PAUSE_MAX)
                continue
            self.workers[old.index] = new
            if self._stopping.is_set():  # the pool closed meanwhile, without this one
                new.close(CLOSE_GRACE)
                new.join(CLOSE_GRACE + 5.0)
                return
            if new.ready.wait(START_TIMEOUT) and new.error is None and new.failing is None:
                logger.warning("otel-prov serve: mapping worker %d runs again", old.index)
            elif new.error is not None:
                logger.error("otel-prov serve: mapping worker %d: %s", old.index, new.error)
            return  # if it stopped again, its reader starts another

    def close(self, timeout: float) -> bool:
        """Close every worker (each syncs, folds what is left if it indexes, and releases the
        store); returns whether all did so in time."""
        self._closing = True
        self._stopping.set()
        deadline = time.monotonic() + timeout
        for worker in self.workers:
            worker.close(timeout)
        ok = True
        for worker in self.workers:
            ok &= worker.join(deadline + 5.0 - time.monotonic())
        return ok


# -- a worker -------------------------------------------------------------------------------------


class Worker:
    """One worker process: maps its share of each request, appends, answers once durable."""

    def __init__(self, conn: Connection, index: int, count: int, pipeline: IngestPipeline) -> None:
        self.conn = conn
        self.index = index
        self.count = count
        self.pipeline = pipeline
        self._send = threading.Lock()
        self._acks: list[tuple[int, int, float, list[Update], PartResult]] = []
        self._acks_cv = threading.Condition()
        self._stop = False
        self._retry_ops: list[ConversationOp] = []
        """Conversation changes whose update could not be stored: applied again with the next."""
        self._status: tuple[Any, ...] = ()
        self._acker = threading.Thread(target=self._ack, name="otel-prov-worker-acks", daemon=True)

    def send(self, message: tuple[Any, ...]) -> None:
        with self._send:
            self.conn.send(message)

    def run(self) -> None:
        self._acker.start()
        try:
            while True:
                try:
                    message = self.conn.recv()
                except (EOFError, OSError):  # the front is gone
                    self.close(CLOSE_GRACE, answer=False)
                    return
                kind = message[0]
                if kind == "req":
                    _, rid, deadline = message
                    body = self.conn.recv_bytes()
                    self._request(rid, deadline, body)
                elif kind == "logs":
                    _, rid, deadline = message
                    body = self.conn.recv_bytes()
                    self._logs(rid, deadline, body)
                elif kind == "conv":
                    _, rid, deadline, ops = message
                    self._conversations(rid, deadline, ops)
                elif kind == "close":
                    self.close(float(message[1]), answer=True)
                    return
        finally:
            with self._acks_cv:
                self._stop = True
                self._acks_cv.notify_all()

    def _request(self, rid: int, deadline: float, body: bytes) -> None:
        result = PartResult()
        updates: list[Update] = []
        seq = self.pipeline.writer.submitted
        try:
            request = decode_protobuf(body)  # the front decoded it too (text not UTF-8 repaired)
            del body
            for part in otlp_slices(request.resource_spans, SLICE_SPANS, (self.index, self.count)):
                result.problems.update(part.problems)
                if part.rejected:
                    result.rejected += len(part.rejected)
                    result.first_rejected = result.first_rejected or part.rejected[0]
                    result.problems["spans rejected: invalid trace or span id"] += 1
                submitted = self.pipeline.submit(part.records)
                seq, update = submitted.seq, submitted.update
                updates.append(update)
                for rec, error in update.failed:
                    result.rejected += 1
                    result.first_rejected = (result.first_rejected
                                             or f"span {rec.name[:200]!r} rejected: {error}")
                    result.problems[f"span rejected ({_kind(error)})"] += 1
                result.accepted += len(part.records) - len(update.failed)
                result.added += len(update.add)
                result.problems.update(update.problems)
                result.ops += update.conversation_ops
        except Exception as exc:
            result.failure = self._failure(exc, "while ingesting")
        self._queue_ack(rid, seq, deadline, updates, result)

    def _logs(self, rid: int, deadline: float, body: bytes) -> None:
        """This worker's share of a logs request: the GenAI events of its traces."""
        result = PartResult()
        updates: list[Update] = []
        seq = self.pipeline.writer.submitted
        try:
            found = otlp_logs(decode_logs(body).resource_logs, (self.index, self.count))
            del body
            result.problems.update(found.problems)
            result.problems.update(log_problems(found))
            submitted = self.pipeline.submit([], found.records)
            seq, update = submitted.seq, submitted.update
            updates.append(update)
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
        result = PartResult()
        try:
            submitted = self.pipeline.apply_conversations(ops)
            result.problems.update(submitted.update.problems)
            result.added = len(submitted.update.add)
            if not self.pipeline.wait(submitted.seq, max(0.0, deadline - time.monotonic())):
                self.pipeline.unstored(submitted.update)
                result.failure = (TOO_SLOW, "the store did not commit in time")
        except Exception as exc:
            result.failure = self._failure(exc, "in conversations")
        self._retry_ops = ops if result.failure is not None else []
        self._answer(rid, result)

    def _failure(self, exc: Exception, doing: str) -> tuple[str, str]:
        """The failure answered for ``exc``, raised ``doing`` something (an unexpected one logged)."""
        if isinstance(exc, NotStored):  # the store refused it (a full disk): nothing of it is kept
            return (STORE_FAILING, f"the store is failing ({exc}); retry later")
        if isinstance(exc, PipelineClosed):
            return (CLOSED, "the receiver is shutting down; retry")
        logger.error("otel-prov serve worker %d: unexpected error %s", self.index, doing, exc_info=exc)
        return (INTERNAL, "internal error in the receiver; retry")

    def _answer(self, rid: int, result: PartResult) -> bool:
        """Send a result; False if the front is gone.  A result that cannot be sent (a bug) is
        answered as an internal error, so the request never waits for nothing."""
        result.ops = [(trace_id, None if calls is None else tuple(_portable(c) for c in calls))
                      for trace_id, calls in result.ops]
        try:
            self.send(("done", rid, result))
        except (OSError, ValueError, EOFError):
            return False
        except Exception:
            logger.exception("otel-prov serve worker %d: cannot send a result", self.index)
            try:
                self.send(("done", rid, PartResult(failure=(INTERNAL, "internal error in the receiver"))))
            except Exception:
                return False
        return True

    def _queue_ack(self, rid: int, seq: int, deadline: float, updates: list[Update],
                   result: PartResult) -> None:
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
                    result.failure = ((STORE_FAILING, f"the store is failing ({failing}); retry later")
                                      if failing else (TOO_SLOW, "the store did not commit in time"))
            if result.failure is not None:
                for update in updates:  # the client's retry must write their traces whole
                    self.pipeline.unstored(update)
            self._report()
            if not self._answer(rid, result):
                return

    def _report(self) -> None:
        writer = self.pipeline.writer
        status = ("status", writer.failing, writer.failures, writer.written_quads)
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
                self.send(("closed", stored))
            except (OSError, ValueError):
                pass


def _portable(call: SpanView) -> SpanView:
    """A span's view as it can be sent to another process (its attributes a plain dict)."""
    return call if isinstance(call.attributes, dict) else call._replace(attributes=dict(call.attributes))


def _kind(error: str) -> str:
    return "too large for the store" if "limit" in error else "the mapping failed"


def main(argv: list[str]) -> int:
    """``python -m otel_prov.serve.workers FD INDEX COUNT STORE PROFILE MAX_ATTRIBUTE_BYTES LEVEL``."""
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
        mapper = TraceMapper(profile, max_attribute_bytes=limit, conversations=index == 0,
                             max_traces=max(1, M.MAX_TRACES // count), max_spans=max(1, M.MAX_SPANS // count),
                             max_bytes=max(1, M.MAX_BYTES // count))
        pipeline = IngestPipeline(open_for_writing(spec), profile, name=f"otel-prov serve (worker {index})",
                                  rescue_dir=spec.rescue_dir, mapper=mapper)
    except Exception as exc:
        conn.send(("error", str(exc)))
        return 1
    tune_gc()
    conn.send(("ready",))
    Worker(conn, index, count, pipeline).run()
    return 0


if __name__ == "__main__":
    # Run as the module (not ``__main__``), so what is sent to the front pickles by its real name.
    from otel_prov.serve import workers

    sys.exit(workers.main(sys.argv[1:]))
