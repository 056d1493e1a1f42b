"""Mapping workers: ``otel-prov serve --workers N`` maps on N processes, so it uses N cores (the
mapping is Python: one process maps on one core at a time).

- **The front** (the serve process: transports, admission, memory budget, health) decodes a request
  (an undecodable one is refused at once) and sends its bytes to every worker (:class:`WorkerPool`).
- **Worker k of N** (``python -m otel_prov.serve.worker``: :mod:`.worker`) maps the spans of the
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

Workers ignore SIGINT and SIGTERM: the front drains on them, then closes the workers.  This module
is the front's side (the pool, a handle per worker); :mod:`.worker` the worker's; :mod:`.messages` what
they send each other.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..mapping.mapper import ConversationOp
from ..mapping.policy import ContentPolicy
from ..mapping.spans import otlp_logs
from ..processes import interpreter
from ..stores import BlobPlace, StoreSpec
from . import messages as msg
from .decode import log_problems
from .slices import Failure

logger = logging.getLogger(__name__)

START_TIMEOUT = 60.0
"""Seconds a worker may take to start and open the store."""
RESTART_STABLE = 30.0
"""A worker that stopped sooner than this after it started is started again after a pause (0.5 s,
doubling up to :data:`RESTART_PAUSE_MAX`): one that cannot start is not restarted in a loop."""
RESTART_PAUSE_MAX = 10.0


# -- the front ------------------------------------------------------------------------------------


class _Call:
    """A request sent to some workers, waiting for their answers."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.results: dict[int, msg.PartResult] = {}
        self.cv = threading.Condition()

    def answer(self, worker: int, result: msg.PartResult) -> None:
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
                [pool.python, "-m", "otel_prov.serve.worker", str(theirs.fileno()), str(self.index),
                 str(pool.count), str(pool.store), pool.profile, str(pool.max_attribute_bytes),
                 pool.log_level, pool.policy.text, ",".join(pool.policy.key[1]) or "off",
                 str(pool.blob_threshold if pool.blob_dir is not None else 0), str(pool.blob_dir or "")],
                stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), env=env)
        finally:
            theirs.close()
        return proc, Connection(ours.detach())

    def send(self, message: msg.ToWorker, body: bytes | None = None) -> bool:
        """Send a message (and a body); False if the worker is gone."""
        try:
            with self.lock:
                self.conn.send(message)
                if body is not None:
                    self.conn.send_bytes(body)
            return True
        except (OSError, ValueError):
            return False

    def call(self, rid: int, call: _Call, message: msg.ToWorker, body: bytes | None = None) -> None:
        with self.lock:
            self.calls[rid] = call
        if not self.send(message, body):
            self._fail_call(rid, f"worker {self.index} is not running")

    def _fail_call(self, rid: int, message: str) -> None:
        with self.lock:
            call = self.calls.pop(rid, None)
        if call is not None:
            call.answer(self.index, msg.PartResult(failure=(Failure.WORKER_STOPPED, message)))

    def _read(self) -> None:
        try:
            while True:
                message: msg.ToFront = self.conn.recv()
                if isinstance(message, msg.Done):
                    result = message.result
                    if result.ops:
                        result.ops_end = self.pool.queue_ops(self.index, result.ops)
                    with self.lock:
                        call = self.calls.pop(message.rid, None)
                    if call is not None:
                        call.answer(self.index, result)
                elif isinstance(message, msg.Status):
                    self.failing, self.failures, self.written_quads = message
                elif isinstance(message, msg.Ready):
                    self.failing = None
                    self.ready.set()
                elif isinstance(message, msg.StartFailed):
                    self.error = message.error
                    self.ready.set()
                elif isinstance(message, msg.Closed):
                    self.closed = message.stored
        except (EOFError, OSError):
            pass
        except Exception:  # a message the front cannot read: treat the worker as gone
            logger.exception("otel-prov serve: unreadable answer from worker %d", self.index)
        self.failing = f"worker {self.index} stopped"
        self.ready.set()
        with self.lock:
            calls, self.calls = self.calls, {}
        for call in calls.values():
            stopped = msg.PartResult(failure=(Failure.WORKER_STOPPED, f"worker {self.index} stopped"))
            call.answer(self.index, stopped)
        self.pool.stopped(self)

    def close(self, timeout: float) -> None:
        self.send(msg.Close(timeout))

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
                 log_level: str = "INFO", policy: ContentPolicy | None = None,
                 blob_dir: BlobPlace | None = None, blob_threshold: int = 0) -> None:
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
        self.policy = policy or ContentPolicy()
        self.blob_dir = blob_dir
        """Where the workers write large values (None: they stay inline)."""
        self.blob_threshold = blob_threshold
        """Handed to each worker as its rules' text and its detectors' names (a plug-in is loaded there
        again)."""
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

    def ingest(self, request: Any, body: bytes | None, deadline: float | None, ack_timeout: float,
               logs: bool = False) -> msg.PoolResult:
        """Have every worker map and store its part of ``request`` (an ``ExportTraceServiceRequest``,
        or with ``logs`` an ``ExportLogsServiceRequest``: each worker takes the log records of its
        traces), sent as ``body``, its protobuf bytes (serialized here if None); returns once each
        part is durable (and the conversation changes it caused) -- within ``ack_timeout`` seconds,
        and by ``deadline`` (``time.monotonic()``) -- or with the first failure."""
        if body is None:
            body = bytes(request.SerializeToString())
        limit = time.monotonic() + ack_timeout
        deadline = limit if deadline is None else min(limit, deadline)
        counted = msg.PoolResult()
        if logs:
            found = otlp_logs(request.resource_logs)  # what the workers leave out, counted once here
            counted.problems.update([*found.problems, *log_problems(found)])
        total = self._ingest(body, deadline, logs)
        total.problems.update(counted.problems)
        return total

    def _ingest(self, body: bytes, deadline: float, logs: bool) -> msg.PoolResult:
        rid = next(self._ids)
        call = _Call(self.count)
        for worker in self.workers:
            worker.call(rid, call, msg.MapLogs(rid, deadline) if logs else msg.MapSpans(rid, deadline), body)
        if not call.wait(deadline):
            for worker in self.workers:
                with worker.lock:
                    worker.calls.pop(rid, None)
            return msg.PoolResult(failure=(Failure.TOO_SLOW, "the store did not commit in time"))
        total = msg.PoolResult()
        ops_end = 0
        for k in range(self.count):
            part = call.results[k]
            total.merge(part)
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

    def _conversations_durable(self, upto: int, deadline: float) -> tuple[Failure, str] | None:
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
            worker.call(rid, call, msg.MapConversations(rid, deadline, [op for _, _, op in batch]))
            if not call.wait(deadline):
                with worker.lock:
                    worker.calls.pop(rid, None)
                return (Failure.TOO_SLOW, "the store did not commit the conversations in time")
            result = call.results[0]
            if result.failure is not None and result.failure[0] is Failure.WORKER_STOPPED:
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
            old.join(msg.CLOSE_GRACE)
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
                new.close(msg.CLOSE_GRACE)
                new.join(msg.CLOSE_GRACE + 5.0)
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
