"""Store faults under load: ``otel-prov serve`` keeps every span it acknowledged and recovers by
itself, whatever happens to its store.

For each fault a real ``otel-prov serve`` on a store of its own receives agent sessions from
``--concurrency`` gRPC clients.  Each client sends the next request, and a request answered
UNAVAILABLE again after the server's RetryInfo delay, as the Collector's retry does; a request
counts as acknowledged once answered OK.  After ``--warm`` seconds of load the fault is injected,
held ``--hold`` seconds and removed; the load goes on ``--after`` seconds; serve is stopped with
SIGTERM and the store is read back: every acknowledged request's quads must be there.

  kill9      serve is killed with SIGKILL under load and restarted on the same store
  disk-full  the store's file system (a tmpfs of ``--disk-mib`` MiB) is filled by another file,
             which is then deleted
  read-only  the store's directory is made read-only (a read-only bind mount on itself), then
             writable again
  fd-limit   serve's descriptor limit is lowered (prlimit) to what it has open, then raised back:
             no new descriptor (folding, a new segment) while the load goes on
  segments   serve starts, with a descriptor limit of 256, on a store holding ``--segments``
             sealed segments of dead writers that nobody folded: it folds them all under load
  moved      the store's directory is renamed away under the running serve (as if deleted or
             replaced), then renamed back

All the while a reader runs ``otel-prov list`` on the store as a whole process, one after another
(not while a ``moved`` store is away): printed are how many ran, how many failed, and the longest
(docs/store.md: a reader waits at most 5 s for the index, after a ``kill -9`` too).

Printed per fault: requests acknowledged and refused, how long after the cause was gone serve was
healthy again (``/health`` 200) and acknowledged again, how long until its log was folded again,
serve's peak RSS, the readers' figures, and acknowledged quads missing from the store (must be
0).  ``disk-full`` and ``read-only`` need root (mount); they are skipped without it.  Figures
taken on a shared machine are indicative.

    python benchmarks/bench_faults.py [--faults kill9,disk-full,read-only,fd-limit,segments,moved]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import grpc  # noqa: E402
import pyoxigraph  # noqa: E402
from google.rpc import error_details_pb2  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402

from benchmarks.bench_ingest import build_spans  # noqa: E402
from otel_prov.mapping.mapper import TraceMapper  # noqa: E402
from otel_prov.mapping.spans import from_sdk  # noqa: E402
from otel_prov.model.profiles import SEED  # noqa: E402
from otel_prov.model.quads import nquads  # noqa: E402
from otel_prov.serve.grpc_transport import RETRY_INFO_TRAILER  # noqa: E402
from otel_prov.stores import segments  # noqa: E402
from otel_prov.stores.logstore import READ_WAIT, open_reader  # noqa: E402
from tests.support import mounts  # noqa: E402
from tests.support.procs import Serve, http_get, peak_rss_kib, start_serve  # noqa: E402

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
FAULTS = ("kill9", "disk-full", "read-only", "fd-limit", "segments", "moved")


# -- the load -------------------------------------------------------------------------------------


@dataclass
class Load:
    """Clients sending ``requests`` in order to whichever server :attr:`port` names, retrying a
    refused request after its RetryInfo delay (at most 1 s here, to keep runs short)."""

    requests: list[bytes]
    port: int
    concurrency: int
    rate: float
    """Requests per second, all clients together (a steady load that lasts the whole run)."""
    acked: dict[int, float] = field(default_factory=dict)
    refused: int = 0
    errors: int = 0
    _next: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        self._threads = [threading.Thread(target=self._client, daemon=True) for _ in range(self.concurrency)]
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(60)

    def _take(self) -> int | None:
        with self._lock:
            if self._next >= len(self.requests):
                return None
            self._next += 1
            i = self._next - 1
        if i == 0:
            self._began = time.monotonic()
        else:
            self._stop.wait(max(0.0, self._began + i / self.rate - time.monotonic()))
        return i

    _began: float = 0.0

    def _client(self) -> None:
        port, channel, export = -1, None, None
        i = self._take()
        while i is not None and not self._stop.is_set():
            if port != self.port:
                if channel is not None:
                    channel.close()
                port = self.port
                channel = grpc.insecure_channel(f"127.0.0.1:{port}")
                export = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
            assert export is not None
            try:
                export(self.requests[i], timeout=30)
            except grpc.RpcError as err:
                with self._lock:
                    if err.code() is grpc.StatusCode.UNAVAILABLE:
                        self.refused += 1
                    else:
                        self.errors += 1
                self._stop.wait(min(1.0, _retry_delay(err)))
                continue  # the same request again, as the Collector retries
            with self._lock:
                self.acked[i] = time.monotonic()
            i = self._take()
        if channel is not None:
            channel.close()

    def acked_after(self, when: float) -> float | None:
        """Seconds from ``when`` to the first acknowledgement after it."""
        with self._lock:
            later = [t for t in self.acked.values() if t >= when]
        return min(later) - when if later else None


def _retry_delay(err: grpc.RpcError) -> float:
    for key, value in err.trailing_metadata() or ():  # type: ignore[attr-defined]
        if key == RETRY_INFO_TRAILER:
            info = error_details_pb2.RetryInfo.FromString(value)
            return float(info.retry_delay.seconds) + info.retry_delay.nanos / 1e9
    return 0.5


class Watch:
    """Every 50 ms: serve's ``/health`` status, and whether the log's checkpoint moved (a fold
    succeeded)."""

    def __init__(self, store: Path) -> None:
        self.http = ""
        self.samples: list[tuple[float, int]] = []
        self.folds: list[float] = []
        self._checkpoint = segments.segments_dir(store) / segments.CHECKPOINT
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        last = b""
        while not self._stop.wait(0.05):
            if self.http:
                status, _ = http_get(f"http://{self.http}/health", 2.0)
                self.samples.append((time.monotonic(), status))
            try:
                now = self._checkpoint.read_bytes()
            except OSError:
                continue
            if now != last:
                self.folds.append(time.monotonic())
                last = now

    def folded_after(self, when: float) -> float | None:
        later = [t for t in self.folds if t >= when]
        return min(later) - when if later else None

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def unhealthy_between(self, start: float, end: float) -> bool:
        return any(status not in (200, 0) for t, status in self.samples if start <= t <= end)

    def healthy_after(self, when: float) -> float | None:
        """Seconds from ``when`` until /health answered 200 for good (every later sample 200)."""
        later = [(t, s) for t, s in self.samples if t >= when]
        bad = [t for t, s in later if s != 200]
        good = [t for t, s in later if s == 200 and (not bad or t > max(bad))]
        return min(good) - when if good else None


class Readers:
    """``otel-prov list`` on the store, as a whole process, one run after another (paused while
    :attr:`paused` is set); each run's time and whether it failed (an exit status other than 0, or
    a traceback)."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.runs: list[tuple[float, bool]] = []
        self.first_failure = ""
        self.paused = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        command = [sys.executable, "-c", "import sys; from otel_prov.cli import main; sys.exit(main())",
                   "list", "--store", str(self.store), "--limit", "5"]
        while not self._stop.wait(0.2):
            if self.paused.is_set():
                continue
            start = time.monotonic()
            done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
            failed = done.returncode != 0 or "Traceback" in done.stderr
            if failed and self.paused.is_set():  # the store went away meanwhile: not a reader's fault
                continue
            self.runs.append((time.monotonic() - start, failed))
            if failed and not self.first_failure:
                self.first_failure = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(300)


# -- faults ---------------------------------------------------------------------------------------


@dataclass
class Result:
    fault: str
    acked: int = 0
    refused: int = 0
    errors: int = 0
    unhealthy: bool = False
    healthy_again: float | None = None
    acked_again: float | None = None
    folded_again: float | None = None
    rss_mib: float = 0.0
    missing: int = -1
    reads: int = 0
    reads_failed: int = 0
    longest_read: float = 0.0
    note: str = ""


def run_fault(fault: str, store: Path, workdir: Path, requests: list[bytes], args: argparse.Namespace,
              inject: Callable[[Serve, Load], None], remove: Callable[[Serve, Load], Serve],
              nofile: int | None = None) -> tuple[Result, Load]:
    """Load, inject, hold, remove, load, stop; the figures (not the store check).  ``nofile``:
    serve's descriptor limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if nofile is not None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))  # serve inherits it
    try:
        serve = start_serve(store, workdir / f"{fault}.log")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    health = Watch(store)
    health.http = serve.http
    readers = Readers(store)
    if fault == "moved":
        readers.paused.set()  # until the load has made the store
    load = Load(requests, serve.grpc_port, args.concurrency, args.rate)
    result = Result(fault)
    injected = False
    try:
        load.start()
        time.sleep(args.warm)
        began = time.monotonic()
        injected = True
        if fault == "moved":
            readers.paused.set()
        else:
            readers.paused.clear()
        inject(serve, load)
        time.sleep(args.hold)
        injected = False
        serve = remove(serve, load)
        readers.paused.clear()
        health.http = serve.http
        gone = time.monotonic()
        time.sleep(args.after)
        result.unhealthy = health.unhealthy_between(began, gone)
        result.healthy_again = health.healthy_after(gone)
        result.acked_again = load.acked_after(gone)
        result.folded_again = health.folded_after(gone)
        result.rss_mib = peak_rss_kib(serve.pid) / 1024
    finally:
        if injected:  # an error while the fault was on: undo it all the same
            with contextlib.suppress(Exception):
                serve = remove(serve, load)
        load.stop()
        health.stop()
        readers.stop()
        code = serve.terminate(120)
    result.acked, result.refused, result.errors = len(load.acked), load.refused, load.errors
    result.reads = len(readers.runs)
    result.reads_failed = sum(1 for _, failed in readers.runs if failed)
    result.longest_read = max((took for took, _ in readers.runs), default=0.0)
    if readers.first_failure:
        result.note = f"a read failed: {readers.first_failure[:200]}"
    if code != 0:
        result.note = f"serve exit {code}; {result.note}".rstrip("; ")
    return result, load


def check(store: Path, groups: list[list[ReadableSpan]], acked: dict[int, float]) -> int:
    """Acknowledged quads missing from the store (read as any reader does)."""
    reader = open_reader(store)
    try:
        missing = 0
        for i in acked:
            data = nquads(TraceMapper(SEED).map([from_sdk(s) for s in groups[i]]).add)
            for q in pyoxigraph.parse(input=data, format=pyoxigraph.RdfFormat.N_QUADS):
                if q not in reader.inner:
                    missing += 1
        return missing
    finally:
        reader.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--sessions-per-request", type=int, default=10)
    parser.add_argument("--rate", type=float, default=40.0, help="requests/s, all clients together")
    parser.add_argument("--warm", type=float, default=3.0)
    parser.add_argument("--hold", type=float, default=5.0)
    parser.add_argument("--after", type=float, default=6.0)
    parser.add_argument("--disk-mib", type=int, default=512)
    parser.add_argument("--segments", type=int, default=2000)
    args = parser.parse_args(argv)
    faults = [f for f in args.faults.split(",") if f]
    mountable = mounts.can_mount()

    count = int(args.rate * (args.warm + args.hold + args.after + 10))  # the load outlasts the run
    spans = build_spans(count * args.sessions_per_request * 10)
    by_trace: dict[int, list[ReadableSpan]] = {}
    for s in spans:
        by_trace.setdefault(s.context.trace_id, []).append(s)  # type: ignore[union-attr]
    traces = list(by_trace.values())
    groups = [sum(traces[i:i + args.sessions_per_request], []) for i in
              range(0, len(traces), args.sessions_per_request)]
    requests = [encode_spans(g).SerializeToString() for g in groups]
    print(f"load: {args.rate:g} requests/s of {args.sessions_per_request} agent sessions "
          f"(~{len(spans) // len(requests)} spans each), {args.concurrency} clients; "
          f"fault after {args.warm:g} s, held {args.hold:g} s, then {args.after:g} s more", flush=True)

    results: list[Result] = []
    for fault in faults:
        with tempfile.TemporaryDirectory(prefix=f"bench-faults-{fault}-") as tmp:
            workdir = Path(tmp)
            if fault in ("disk-full", "read-only") and not mountable:
                results.append(Result(fault, note="skipped: needs root (mount)"))
                continue
            with contextlib.ExitStack() as stack:
                base = stack.enter_context(mounts.tmpfs(f"{args.disk_mib}m")) if fault == "disk-full" \
                    else workdir
                store = base / "store"
                inject, remove, restarted = _actions(fault, store, base, workdir)
                if fault == "segments":
                    _dead_writers(store, args.segments)
                began = time.monotonic()
                if fault == "segments":
                    result, load = run_fault(fault, store, workdir, requests, args, inject, remove, 256)
                    result.note = (f"{args.segments} sealed segments, 256 descriptors; "
                                   f"{len(segments.list_segments(segments.segments_dir(store)))} "
                                   f"segments left after {time.monotonic() - began:.0f} s")
                else:
                    result, load = run_fault(fault, store, workdir, requests, args, inject, remove)
                for extra in restarted[:-1]:
                    extra.terminate(60)
                result.missing = check(store, groups, load.acked)
            results.append(result)
            print(f"  {fault}: {json.dumps(result.__dict__)}", flush=True)

    def s(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f} s"

    print(f"\n{'fault':10s} {'acked':>6s} {'refused':>8s} {'503 seen':>8s} {'healthy again':>14s} "
          f"{'acked again':>12s} {'folded again':>13s} {'peak RSS':>9s} {'reads (failed, longest)':>24s} "
          f"{'acked lost':>10s}  note")
    ok = True
    for r in results:
        if r.note.startswith("skipped"):
            print(f"{r.fault:10s} {'':>6s} {'':>8s} {'':>8s} {'':>14s} {'':>12s} {'':>13s} {'':>9s} "
                  f"{'':>24s} {'':>10s}  {r.note}")
            continue
        ok &= r.missing == 0 and r.healthy_again is not None and r.acked_again is not None
        ok &= r.reads_failed == 0 and r.longest_read <= READ_WAIT + 5  # the wait, and a process's start
        reads = f"{r.reads} ({r.reads_failed}, {r.longest_read:.1f} s)"
        print(f"{r.fault:10s} {r.acked:6d} {r.refused:8d} {'yes' if r.unhealthy else 'no':>8s} "
              f"{s(r.healthy_again):>14s} {s(r.acked_again):>12s} {s(r.folded_again):>13s} "
              f"{r.rss_mib:6.0f} MiB {reads:>24s} {r.missing:10d}  {r.note}")
    survived = sum(1 for r in results if not r.note.startswith("skipped") and r.missing == 0
                   and r.healthy_again is not None and r.reads_failed == 0)
    tried = sum(1 for r in results if not r.note.startswith("skipped"))
    print(f"\nfaults survived (nothing acknowledged lost, healthy again by itself, no read failed): "
          f"{survived} of {tried}")
    return 0 if ok else 1


Action = Callable[[Serve, Load], None]
Removal = Callable[[Serve, Load], Serve]


def _actions(fault: str, store: Path, base: Path, workdir: Path) -> tuple[Action, Removal, list[Serve]]:
    """How ``fault`` is injected and removed (the removal returns the serve to go on with), and the
    servers it started."""
    restarted: list[Serve] = []
    limits: dict[str, tuple[int, int]] = {}
    held = contextlib.ExitStack()
    disk = mounts.FullDisk(base, mounted=True)

    def nothing(serve: Serve, load: Load) -> None:
        pass

    def same(serve: Serve, load: Load) -> Serve:
        return serve

    def kill(serve: Serve, load: Load) -> None:
        serve.kill9()

    def restart(serve: Serve, load: Load) -> Serve:
        new = start_serve(store, workdir / "kill9-restarted.log")
        restarted.append(new)
        load.port = new.grpc_port
        return new

    def fill(serve: Serve, load: Load) -> None:
        disk.fill()

    def free(serve: Serve, load: Load) -> Serve:
        disk.free()
        return serve

    def read_only(serve: Serve, load: Load) -> None:
        held.enter_context(mounts.read_only(store))

    def writable(serve: Serve, load: Load) -> Serve:
        held.close()
        return serve

    def lower(serve: Serve, load: Load) -> None:
        limits["old"] = resource.prlimit(serve.pid, resource.RLIMIT_NOFILE)
        open_now = len(os.listdir(f"/proc/{serve.pid}/fd"))
        resource.prlimit(serve.pid, resource.RLIMIT_NOFILE, (open_now, limits["old"][1]))

    def raise_back(serve: Serve, load: Load) -> Serve:
        resource.prlimit(serve.pid, resource.RLIMIT_NOFILE, limits["old"])
        return serve

    away = store.with_name(store.name + ".away")

    def move_away(serve: Serve, load: Load) -> None:
        store.rename(away)

    def move_back(serve: Serve, load: Load) -> Serve:
        if store.exists():  # something made a new store meanwhile: keep it aside, for the record
            store.rename(store.with_name(store.name + ".made-meanwhile"))
        away.rename(store)
        return serve

    actions: dict[str, tuple[Action, Removal]] = {
        "kill9": (kill, restart), "disk-full": (fill, free), "read-only": (read_only, writable),
        "fd-limit": (lower, raise_back), "moved": (move_away, move_back)}
    inject, remove = actions.get(fault, (nothing, same))
    return inject, remove, restarted


def _dead_writers(store: Path, count: int) -> None:
    """``count`` sealed segments, one record each, as writers that died before anyone folded."""
    directory = segments.segments_dir(store)
    log = segments.SegmentWriter(directory, segment_bytes=1)
    try:
        for i in range(count):
            log.append(segments.ADD, f"<urn:bench:dead{i}> <urn:bench:p> \"{i}\" <urn:graph:retrieval> .\n"
                       .encode())
    finally:
        log.close()


if __name__ == "__main__":
    sys.exit(main())
