"""Export benchmark: what provenance costs next to shipping the same spans to Jaeger.

On the same pre-built spans (real SDK ``ReadableSpan``s made with ``otel_prov.agent_session`` and
friends, captured with ``InMemorySpanExporter``), one run measures spans/s and peak memory of

  (a) ``ProvSpanExporter`` into the on-disk embedded store (``store='oxigraph:DIR'``),
  (b) ``ProvSpanExporter`` into memory (``store='memory:'``),
  (c) the standard OTLP gRPC exporter shipping the spans to a local receiver,

each fed the same way: ``export()`` with batches of ``--batch-size`` spans (the BatchSpanProcessor
default, 512) from one thread, timed from the first ``export()`` until ``shutdown()`` returns (for
(a) and (b): with everything stored; for (a): durable in the store's log, the fold into the index
left to the indexer -- for a large rest a background folder the exporter starts).  For (a) the time
a reader then takes to open the store and see everything (it waits for that fold) is reported too,
and the ratio "until readable" counts it in.  The receiver is a separate
process, so it does not share the exporter's GIL: the Collector (``otelcol-prov``, otlp receiver ->
debug exporter) or Jaeger from ``${OTEL_PROV_BIN_DIR:-~/.cache/otel-prov/bin}`` when built, else a
minimal Python gRPC TraceService server.

Every measurement runs in a process forked from this one after the spans are built, so runs do
not inherit each other's heap, threads or caches; before the timing, the child reads every span
once (copy-on-write page faults after the fork are set-up, not export, cost).  Memory is reported
two ways: the peak growth of the process's resident set (RSS: Python and native memory, RocksDB
and gRPC included; kernel ``VmHWM`` reset at the start of the measurement) in the timed runs, and,
in one extra untimed run per exporter, the tracemalloc peak (Python allocations only; tracemalloc
slows Python down, which is why it is not on during the timed runs).

After each run the result is checked, outside the timing: (a) the store is reopened and must hold
exactly the expected quads; (b) the memory store must hold them too; (c) the receiver must have
received every span.  A run that fails its check is reported as invalid.

    python benchmarks/bench_export.py [--spans 7500] [--repeats 3] [--batch-size 512]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import otel_prov  # noqa: F401
except ImportError:  # run from a checkout without an install
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import ProvSpanExporter, agent_session, doc_rag_session, graph_rag_session
from otel_prov.mapping.flows import map_spans
from otel_prov.mapping.spans import from_sdk
from otel_prov.model.quads import nquads

PROV_DISK, PROV_MEMORY, OTLP = "prov-disk", "prov-memory", "otlp-grpc"
LABELS = {
    PROV_DISK: "(a) ProvSpanExporter -> on-disk Oxigraph",
    PROV_MEMORY: "(b) ProvSpanExporter -> memory",
    OTLP: "(c) OTLP gRPC exporter -> receiver",
}
ORDER = (PROV_DISK, PROV_MEMORY, OTLP)


# -- the spans --------------------------------------------------------------------------------

_WORDS = (
    "the knowledge graph shows that entity relation capital France Paris population river Seine "
    "document chunk retrieval answer question because therefore we need to check whether tool "
    "result returned search query embedding vector score source citation evidence according "
    "report year 2024 revenue growth company product customer support ticket error timeout"
).split()
_TOOLS = ("knowledge-query", "web-search", "calculator", "sql-query", "doc-lookup")


def _text(rng: random.Random, low: int, high: int) -> str:
    words: list[str] = []
    size, target = 0, rng.randint(low, high)
    while size < target:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    text = " ".join(words)
    if rng.random() < 0.2:  # some text that needs N-Triples escaping
        text += '\nQuote: "' + rng.choice(_WORDS) + '" and a back\\slash.'
    return text[0].upper() + text[1:] + "."


def build_spans(count: int, seed: int = 7, sessions_wanted: int | None = None) -> list[ReadableSpan]:
    """At least ``count`` finished spans (or the spans of exactly ``sessions_wanted`` sessions):
    mostly agent sessions (3-6 think/act/observe iterations, each with a tool span), every 25th
    session a GraphRAG or document-RAG query."""
    rng = random.Random(seed)
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    sessions = 0
    while (sessions < sessions_wanted if sessions_wanted is not None
           else len(memory.get_finished_spans()) < count):
        sessions += 1
        question = _text(rng, 30, 120) + "?"
        if sessions % 50 == 0:
            with graph_rag_session(question, tracer_provider=provider) as rag:
                edges = [(f"http://example.org/e/{rng.randint(0, 999)}", "http://example.org/p/rel",
                          _text(rng, 5, 40)) for _ in range(rng.randint(10, 40))]
                rag.exploration(edges)
                rag.focus([(edge, _text(rng, 40, 160)) for edge in edges[:rng.randint(2, 6)]])
                rag.synthesis(_text(rng, 200, 800))
        elif sessions % 25 == 0:
            with doc_rag_session(question, tracer_provider=provider) as rag:
                rag.exploration([f"urn:chunk:{rng.randint(0, 99999)}" for _ in range(rng.randint(3, 10))])
                rag.synthesis(_text(rng, 200, 800))
        else:
            with agent_session(question, tracer_provider=provider) as session:
                for _ in range(rng.randint(3, 6)):
                    with session.iteration() as step:
                        step.thought(_text(rng, 60, 400))
                        tool = rng.choice(_TOOLS)
                        args = {"query": _text(rng, 10, 80), "limit": rng.randint(1, 20)}
                        step.call_tool(tool, lambda **kw: {"result": _text(rng, 100, 1200)}, args)
                session.conclude(_text(rng, 50, 400))
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    return spans


PARAGRAPH_WORDS = (350, 900)
"""Characters of a paragraph-long thought or observation."""


def build_paragraph_spans(count: int, seed: int = 11) -> list[ReadableSpan]:
    """At least ``count`` finished spans of agent sessions of exactly 4 steps whose thoughts and
    observations are each a paragraph (350-900 characters)."""
    rng = random.Random(seed)
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    while len(memory.get_finished_spans()) < count:
        with agent_session(_text(rng, 40, 160) + "?", tracer_provider=provider) as session:
            for _ in range(4):
                with session.iteration() as step:
                    step.thought(_text(rng, *PARAGRAPH_WORDS))
                    tool = rng.choice(_TOOLS)
                    args = {"query": _text(rng, 10, 80)}
                    step.call_tool(tool, lambda **kw: _text(rng, *PARAGRAPH_WORDS), args)
            session.conclude(_text(rng, *PARAGRAPH_WORDS))
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    return spans


WORKLOADS = {"repo": build_spans, "paragraphs": build_paragraph_spans}


def expected_nquads(spans: Sequence[ReadableSpan]) -> tuple[bytes, int]:
    """The N-Quads the PROV exporter must store for ``spans``, and their number (distinct)."""
    quads = sorted(set(map_spans([from_sdk(s) for s in spans]).quads))
    return nquads(quads), len(quads)


# -- the receiver (a separate process) --------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the receiver exited with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the receiver did not listen on port {port} within {timeout:.0f} s")


_SPANS_LOGGED = re.compile(rb'"spans": (\d+)|^spans (\d+)$', re.MULTILINE)


@dataclass
class Receiver:
    kind: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    def spans_received(self) -> int:
        """Spans received so far (from the debug exporter's log, or the Python server's)."""
        text = self.log.read_bytes() if self.log.exists() else b""
        return sum(int(a or b) for a, b in _SPANS_LOGGED.findall(text))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


_COLLECTOR_CONFIG = """\
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{port}
        max_recv_msg_size_mib: 64
exporters:
  debug:
    verbosity: basic
    sampling_initial: 1000000
    sampling_thereafter: 1
service:
  telemetry:
    logs:
      sampling:
        enabled: false
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [debug]
"""


def start_receiver(workdir: Path, prefer: str) -> Receiver:
    """A Collector or Jaeger binary when there is one (unless ``prefer == 'python'``), else the
    minimal Python server below, each in its own process."""
    bin_dir = Path(os.environ.get("OTEL_PROV_BIN_DIR") or Path.home() / ".cache/otel-prov/bin")
    port = _free_port()
    log = workdir / "receiver.log"
    candidates = [("otelcol-prov", bin_dir / "otelcol-prov"), ("jaeger", bin_dir / "jaeger")]
    for kind, binary in candidates:
        if prefer not in ("auto", kind) or not os.access(binary, os.X_OK):
            continue
        config = workdir / f"{kind}.yaml"
        config.write_text(_jaeger_config(port) if kind == "jaeger" else
                          _COLLECTOR_CONFIG.format(port=port))
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(binary), "--config", str(config)], stdout=out,
                                    stderr=subprocess.STDOUT)
        _wait_port(port, proc)
        return Receiver(f"{kind} ({binary})", port, proc, log)
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, __file__, "--python-receiver", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
    _wait_port(port, proc)
    return Receiver("minimal Python gRPC TraceService server (no Collector/Jaeger binary)", port,
                    proc, log)


def _jaeger_config(port: int) -> str:
    """Jaeger v2 with its in-memory store, OTLP gRPC on ``port``, the query side on free ports."""
    return f"""\
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: memstore
    enable_tracing: false
    http:
      endpoint: 127.0.0.1:{_free_port()}
    grpc:
      endpoint: 127.0.0.1:{_free_port()}
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{port}
        max_recv_msg_size_mib: 64
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
  debug:
    verbosity: basic
    sampling_initial: 1000000
    sampling_thereafter: 1
service:
  extensions: [jaeger_storage, jaeger_query]
  telemetry:
    logs:
      sampling:
        enabled: false
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter, debug]
"""


def python_receiver(port: int) -> None:
    """The fallback receiver: accepts OTLP/gRPC trace exports, logs ``spans N`` per request."""
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    class Service(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 (gRPC's name)
            spans = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
            sys.stdout.write(f"spans {spans}\n")
            sys.stdout.flush()
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         options=[("grpc.max_receive_message_length", 64 * 1024 * 1024)])
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    signal.signal(signal.SIGTERM, lambda *_: server.stop(0))
    server.wait_for_termination()


# -- one measurement (in a forked process) -----------------------------------------------------

def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _process_cpu_s() -> float:
    """CPU-seconds used by this process so far (all its threads)."""
    t = os.times()
    return t.user + t.system


def _receiver_cpu_s(receiver: Receiver) -> float:
    try:
        with open(f"/proc/{receiver.proc.pid}/stat") as fh:
            stat = fh.read().rsplit(")", 1)[1].split()
        return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _reset_peak_rss() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
    except OSError:
        pass


def _touch(spans: Sequence[ReadableSpan]) -> None:
    """Read every part of every span once, untimed: after ``fork()`` the first touch of each memory
    page copies it (copy-on-write), a cost of the benchmark's set-up, not of any exporter."""
    for span in spans:
        list(span.attributes.items())
        for event in span.events:
            list((event.attributes or {}).items())
        for item in (span.context, span.parent, span.status, span.resource, span.links, span.kind,
                     span.instrumentation_scope, span.name, span.start_time, span.end_time):
            del item


def _feed(exporter: SpanExporter, spans: Sequence[ReadableSpan], batch: int) -> int:
    failures = 0
    for start in range(0, len(spans), batch):
        if exporter.export(spans[start:start + batch]) is not SpanExportResult.SUCCESS:
            failures += 1
    return failures


def measure(kind: str, spans: Sequence[ReadableSpan], batch: int, workdir: Path,
            receiver: Receiver, expected: bytes, expected_count: int,
            use_tracemalloc: bool, shared_store: Path | None = None) -> dict[str, Any]:
    """One run.  With ``shared_store`` (several processes at once) the store is not checked or
    removed here: the caller does it once every process has finished."""
    store_dir = shared_store or Path(tempfile.mkdtemp(prefix="store-", dir=workdir))
    verify: Callable[[], str | None]
    if kind == OTLP:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        received_before = receiver.spans_received()
        exporter: SpanExporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{receiver.port}",
                                                  insecure=True)
        verify = lambda: _verify_received(receiver, received_before, len(spans))  # noqa: E731
    else:
        exporter = ProvSpanExporter(store=f"oxigraph:{store_dir}" if kind == PROV_DISK else "memory:")
        if kind == PROV_DISK:
            verify = lambda: None  # noqa: E731  (folded and checked after the timing)
        else:
            inner = exporter.store.inner  # type: ignore[attr-defined]  (kept to check (b) afterwards)
            verify = lambda: _verify_store(inner, expected, expected_count)  # noqa: E731
    _touch(spans)
    if use_tracemalloc:
        tracemalloc.start()
    _reset_peak_rss()
    rss_before = _status_kib("VmRSS")
    cpu0, receiver_cpu0 = _process_cpu_s(), _receiver_cpu_s(receiver)
    wall0 = time.time()
    t0 = time.perf_counter()
    failures = _feed(exporter, spans, batch)
    t1 = time.perf_counter()
    exporter.shutdown()
    seconds = time.perf_counter() - t0
    wall1 = time.time()
    cpu = _process_cpu_s() - cpu0
    receiver_cpu = _receiver_cpu_s(receiver) - receiver_cpu0
    result: dict[str, Any] = {
        "seconds": seconds,
        "spans_per_s": len(spans) / seconds,
        "export_calls_s": t1 - t0,
        "shutdown_s": seconds - (t1 - t0),
        "cpu_s": cpu,
        "receiver_cpu_s": receiver_cpu if kind == OTLP else 0.0,
        "rss_peak_mib": max(0, _status_kib("VmHWM") - rss_before) / 1024,
        "export_failures": failures,
        "wall_start": wall0,
        "wall_end": wall1,
    }
    if use_tracemalloc:
        result["tracemalloc_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    if shared_store is not None:
        result["invalid"] = f"{failures} export() calls failed" if failures else None
        return result
    if kind == PROV_DISK:  # outside the timing: a reader opens it and it holds it all
        result["read_s"], problem = _read_and_verify(store_dir, expected, expected_count)
    else:
        problem = verify()
    if failures:
        problem = f"{failures} export() calls failed" + (f"; {problem}" if problem else "")
    result["invalid"] = problem
    shutil.rmtree(store_dir, ignore_errors=True)
    return result


def _read_and_verify(path: Path, expected: bytes, count: int) -> tuple[float, str | None]:
    """Open the store as a reader does, timed; then check it holds exactly the expected quads."""
    from otel_prov.stores.logstore import open_reader

    t0 = time.perf_counter()
    store = open_reader(path)
    read_s = time.perf_counter() - t0
    try:
        return read_s, _verify_store(store.inner, expected, count)
    finally:
        store.close()


def measure_parallel(kind: str, processes: int, spans: Sequence[ReadableSpan], batch: int,
                     workdir: Path, receiver: Receiver, expected: bytes, expected_count: int,
                     timeout: float) -> dict[str, Any]:
    """``processes`` forked processes export the same spans at the same time (into one shared
    on-disk store, or to the receiver); aggregate spans/s over the wall time from the first start
    to the last ``shutdown()``."""
    store = Path(tempfile.mkdtemp(prefix="store-", dir=workdir))
    received_before = receiver.spans_received()
    go_read, go_write = os.pipe()

    def child() -> dict[str, Any]:
        os.close(go_write)
        os.read(go_read, 1)  # all start together
        return measure(kind, spans, batch, workdir, receiver, expected, expected_count, False,
                       shared_store=store)

    results = run_many(processes, timeout, child, lambda: os.write(go_write, b"g" * processes))
    os.close(go_read)
    os.close(go_write)
    errors = [r["error"] for r in results if "error" in r] + [r["invalid"] for r in results
                                                             if r.get("invalid")]
    seconds = max(r["wall_end"] for r in results if "wall_end" in r) - min(
        r["wall_start"] for r in results if "wall_start" in r) if not errors else float("nan")
    result: dict[str, Any] = {"seconds": seconds, "spans_per_s": processes * len(spans) / seconds,
                              "processes": processes, "rss_peak_mib": sum(
                                  r.get("rss_peak_mib", 0) for r in results)}
    if not errors and kind == PROV_DISK:  # in a child too: RocksDB's threads must not be in this one
        checked = run_forked(timeout, lambda: dict(zip(("read_s", "problem"), _read_and_verify(
            store, expected, expected_count), strict=True)))
        result["read_s"], problem = checked.get("read_s", float("nan")), checked.get(
            "problem", checked.get("error"))
    elif not errors:
        problem = _verify_received(receiver, received_before, processes * len(spans))
    else:
        problem = "; ".join(str(e) for e in errors[:3])
    result["invalid"] = problem
    shutil.rmtree(store, ignore_errors=True)
    return result


def run_many(n: int, timeout: float, func: Callable[[], dict[str, Any]],
             release: Callable[[], object]) -> list[dict[str, Any]]:
    """``func()`` in ``n`` forked children at once (``release()`` once all are forked).  The
    children are forked from this thread before any helper thread starts: a child forked while
    another thread of the parent holds a native lock would inherit it locked (RocksDB's open then
    hangs)."""
    children = [start_forked(func) for _ in range(n)]
    release()
    return [collect_forked(pid, fd, timeout) for pid, fd in children]


def _verify_store(store: Any, expected: bytes, count: int) -> str | None:
    import pyoxigraph

    want = pyoxigraph.Store()
    want.load(input=expected, format=pyoxigraph.RdfFormat.N_QUADS)
    have_set, want_set = {str(q) for q in store}, {str(q) for q in want}
    if have_set == want_set and len(want_set) == count:
        return None
    return (f"store holds {len(have_set)} quads, expected {count} "
            f"({len(want_set - have_set)} missing, {len(have_set - want_set)} unexpected)")


def _verify_received(receiver: Receiver, before: int, count: int) -> str | None:
    deadline = time.monotonic() + 10
    got = receiver.spans_received() - before
    while got < count and time.monotonic() < deadline:
        time.sleep(0.1)
        got = receiver.spans_received() - before
    return None if got == count else f"receiver logged {got} spans, expected {count}"


def components(spans: Sequence[ReadableSpan], batch: int, workdir: Path) -> dict[str, float]:
    """Where the PROV path's time goes, each part alone on one thread (milliseconds, best of 3)."""
    import pyoxigraph

    from otel_prov.mapping.mapper import TraceMapper

    nq = pyoxigraph.RdfFormat.N_QUADS
    batches = [spans[i:i + batch] for i in range(0, len(spans), batch)]
    records = [[from_sdk(s) for s in b] for b in batches]

    def mapping() -> list[Any]:
        mapper = TraceMapper("seed")
        return [mapper.map(r).add for r in records]

    quad_lists = mapping()
    data = [nquads(q) for q in quad_lists]
    whole = b"".join(data)

    def fresh() -> Any:
        return pyoxigraph.Store(tempfile.mkdtemp(prefix="store-", dir=workdir))

    def per_batch_bulk() -> None:
        store = fresh()
        for part in data:
            store.bulk_load(input=part, format=nq, lenient=True)

    def append_file() -> None:
        with open(workdir / "spool.nq", "ab") as fh:
            for part in data:
                fh.write(part)
            fh.flush()
            os.fsync(fh.fileno())

    parts: dict[str, Callable[[], Any]] = {
        "from_sdk (ReadableSpan -> SpanRecord)": lambda: [[from_sdk(s) for s in b] for b in batches],
        "TraceMapper.map per batch (the mapping)": mapping,
        "nquads() per batch (N-Quads text)": lambda: [nquads(q) for q in quad_lists],
        f"on-disk bulk_load of everything, one call ({len(whole) / 2**20:.1f} MiB)":
            lambda: fresh().bulk_load(input=whole, format=nq, lenient=True),
        "on-disk bulk_load per batch": per_batch_bulk,
        "in-memory bulk_load of everything, one call": lambda: pyoxigraph.Store().bulk_load(
            input=whole, format=nq, lenient=True),
        "append N-Quads per batch to a file, one fsync": append_file,
    }
    out: dict[str, float] = {}
    for name, func in parts.items():
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            func()
            best = min(best, time.perf_counter() - t0)
        out[name] = best * 1000
    return out


def run_forked(timeout: float, func: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``func()`` in a forked child (fresh heap growth, threads and peak RSS), its result as JSON."""
    pid, fd = start_forked(func)
    return collect_forked(pid, fd, timeout)


def start_forked(func: Callable[[], dict[str, Any]]) -> tuple[int, int]:
    """Fork a child running ``func()``; returns its pid and the pipe its JSON result comes on."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_fd)
        code = 0
        try:
            payload = json.dumps(func()).encode()
        except BaseException as exc:  # report anything to the parent
            payload = json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode()
            code = 1
        with os.fdopen(write_fd, "wb") as out:
            out.write(payload)
        os._exit(code)
    os.close(write_fd)
    return pid, read_fd


def collect_forked(pid: int, read_fd: int, timeout: float) -> dict[str, Any]:
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([pipe], [], [], remaining)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return {"error": f"timed out after {timeout:.0f} s"}
            chunk = pipe.read(65536)
            if not chunk:
                break
            chunks.append(chunk)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks) or b'{"error": "the measurement process died"}')


# -- how busy the machine is with other work -----------------------------------------------------

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_busy_s() -> float:
    """CPU-seconds spent busy by the whole machine so far (all CPUs)."""
    with open("/proc/stat") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / _TICK


def _own_cpu_s(receiver: Receiver) -> float:
    """CPU-seconds used by this benchmark: this process, its finished children, the receiver."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system + _receiver_cpu_s(receiver)


class OtherLoad:
    """How many CPUs other processes kept busy while the benchmark ran (it shares the machine)."""

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver
        self.start = (time.monotonic(), _cpu_busy_s(), _own_cpu_s(receiver))

    def cpus(self) -> float:
        wall0, busy0, own0 = self.start
        wall = time.monotonic() - wall0
        others = (_cpu_busy_s() - busy0) - (_own_cpu_s(self.receiver) - own0)
        return max(0.0, others / wall) if wall > 0 else 0.0


# -- report -------------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=7500, help="spans to build (at least; default 7500)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each exporter (default 3)")
    parser.add_argument("--batch-size", type=int, default=512, help="spans per export() (default 512)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds allowed per run (default 300)")
    parser.add_argument("--receiver", choices=("auto", "otelcol-prov", "jaeger", "python"), default="auto",
                        help="which local receiver (default: a binary if built, else Python)")
    parser.add_argument("--no-tracemalloc", action="store_true", help="skip the untimed tracemalloc runs")
    parser.add_argument("--json", type=Path, help="also write all figures to this file")
    parser.add_argument("--components", action="store_true",
                        help="also time the parts of the PROV path one by one, on one thread")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), default="repo",
                        help="repo: the mixed sessions above; paragraphs: 4-step agent sessions with "
                             "paragraph-long thoughts and observations (default repo)")
    parser.add_argument("--processes", type=int, default=1,
                        help="also run (a) and (c) in this many processes at once (default 1: no)")
    parser.add_argument("--python-receiver", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.python_receiver:
        python_receiver(args.python_receiver)
        return 0

    t0 = time.perf_counter()
    spans = WORKLOADS[args.workload](args.spans)
    expected, expected_count = expected_nquads(spans)
    print(f"workload: {args.workload}; spans: {len(spans)} built in {time.perf_counter() - t0:.1f} s "
          f"({expected_count} distinct quads expected in the store); batches of {args.batch_size}; "
          f"{args.repeats} timed runs each; {os.cpu_count()} CPUs; Python {sys.version.split()[0]}")
    workdir = Path(tempfile.mkdtemp(prefix="otel-prov-bench-"))
    if args.components:
        print("components (one thread, best of 3, forked):")
        for name, ms in run_forked(args.timeout, lambda: components(spans, args.batch_size, workdir)).items():
            print(f"  {name:58s} {ms:7.1f} ms  {len(spans) / ms * 1000:9,.0f} spans/s")
    receiver = start_receiver(workdir, args.receiver)
    print(f"receiver: {receiver.kind}, 127.0.0.1:{receiver.port}, separate process")
    kinds = ORDER + ((f"{PROV_DISK} x{args.processes}", f"{OTLP} x{args.processes}")
                     if args.processes > 1 else ())
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    memory: dict[str, dict[str, Any]] = {}
    before = OtherLoad(receiver)
    time.sleep(1.0)
    print(f"other processes before the runs: {before.cpus():.2f} of {os.cpu_count()} CPUs busy")
    load = OtherLoad(receiver)
    try:
        for repeat in range(args.repeats):
            order = kinds if repeat % 2 == 0 else tuple(reversed(kinds))
            for kind in order:
                if " x" in kind:
                    result = measure_parallel(kind.split()[0], args.processes, spans, args.batch_size,
                                              workdir, receiver, expected, expected_count, args.timeout)
                else:
                    result = run_forked(args.timeout, lambda kind=kind: measure(
                        kind, spans, args.batch_size, workdir, receiver, expected, expected_count, False))
                runs[kind].append(result)
                print(f"  run {repeat + 1} {kind:12s} {_one(result)}", flush=True)
        if not args.no_tracemalloc:
            for kind in ORDER:
                memory[kind] = run_forked(args.timeout, lambda kind=kind: measure(
                    kind, spans, args.batch_size, workdir, receiver, expected, expected_count, True))
        others = load.cpus()
    finally:
        receiver.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return report(runs, memory, len(spans), receiver.kind, others, args)


def _one(result: dict[str, Any]) -> str:
    if "error" in result:
        return f"ERROR {result['error']}"
    if "processes" in result:
        text = (f"{result['spans_per_s']:9,.0f} spans/s aggregate  {result['seconds']:.3f} s  "
                f"RSS +{result['rss_peak_mib']:.0f} MiB (sum)")
        if "read_s" in result:
            text += f"  then read in {result['read_s']:.3f} s"
        return text + (f"  INVALID: {result['invalid']}" if result.get("invalid") else "")
    text = (f"{result['spans_per_s']:9,.0f} spans/s  {result['seconds']:.3f} s (export() calls "
            f"{result['export_calls_s']:.3f} s + shutdown {result['shutdown_s']:.3f} s)  "
            f"CPU {result['cpu_s']:.3f} s"
            + (f" (+ receiver {result['receiver_cpu_s']:.3f} s)" if result["receiver_cpu_s"] else "")
            + f"  RSS +{result['rss_peak_mib']:.0f} MiB"
            + (f"  then read in {result['read_s']:.3f} s" if "read_s" in result else ""))
    return text + (f"  INVALID: {result['invalid']}" if result.get("invalid") else "")


def report(runs: dict[str, list[dict[str, Any]]], memory: dict[str, dict[str, Any]], count: int,
           receiver: str, others: float, args: argparse.Namespace) -> int:
    ok = True
    medians: dict[str, float] = {}
    print(f"\n{'exporter':42s} {'median spans/s':>14s}  {'runs (spans/s)':30s} {'CPU s':>6s} "
          f"{'peak RSS +MiB':>13s} {'tracemalloc MiB':>15s}")
    for kind in runs:
        good = [r for r in runs[kind] if "error" not in r and not r.get("invalid")]
        ok &= len(good) == len(runs[kind])
        rates = [r["spans_per_s"] for r in good]
        medians[kind] = statistics.median(rates) if rates else float("nan")
        rss = statistics.median([r["rss_peak_mib"] for r in good]) if good else float("nan")
        cpu = statistics.median([r.get("cpu_s", float("nan")) for r in good]) if good else float("nan")
        traced = memory.get(kind, {}).get("tracemalloc_peak_mib")
        print(f"{LABELS.get(kind, kind):42s} {medians[kind]:14,.0f}  "
              f"{', '.join(f'{r:,.0f}' for r in rates):30s} {cpu:6.3f} {rss:13.0f} "
              f"{'-' if traced is None else f'{traced:.1f}':>15s}")
    reads = [r["read_s"] for r in runs[PROV_DISK] if "read_s" in r]
    readable = _readable(runs[PROV_DISK], count)
    if reads:
        print(f"\n(a) then readable: a reader opened the store and saw everything "
              f"{statistics.median(reads):.3f} s after shutdown() returned (median; it waits for the "
              f"fold); counted in: {readable:,.0f} spans/s")
    summary = [f"(a)/(c) on-disk PROV vs OTLP {medians[PROV_DISK] / medians[OTLP]:.2f}",
               f"(b)/(c) in-memory PROV vs OTLP {medians[PROV_MEMORY] / medians[OTLP]:.2f}",
               f"(a) until readable vs OTLP {readable / medians[OTLP]:.2f}"]
    if args.processes > 1:
        n = args.processes
        disk_n, otlp_n = medians[f"{PROV_DISK} x{n}"], medians[f"{OTLP} x{n}"]
        readable_n = _readable(runs[f"{PROV_DISK} x{n}"], n * count)
        summary += [f"{n} processes: on-disk PROV vs OTLP {disk_n / otlp_n:.2f}",
                    f"until readable {readable_n / otlp_n:.2f}",
                    f"on-disk PROV {n} processes vs 1 {disk_n / medians[PROV_DISK]:.2f}"]
    print(f"\nsummary ({args.workload}, {count} spans, medians of {args.repeats}): " + "; ".join(summary))
    print(f"receiver: {receiver}")
    print(f"other processes during the runs: {others:.2f} of {os.cpu_count()} CPUs busy"
          + ("  (the machine was shared: figures are noisy)" if others > 0.25 else ""))
    if not ok:
        print("SOME RUNS FAILED OR WERE INVALID (see above): the figures are not trustworthy")
    if args.json:
        args.json.write_text(json.dumps({"spans": count, "batch_size": args.batch_size,
                                         "receiver": receiver, "runs": runs, "tracemalloc": memory,
                                         "medians": medians, "other_cpus": others}, indent=2))
    return 0 if ok else 1


def _readable(runs: list[dict[str, Any]], spans: int) -> float:
    """Median spans/s of (a) runs counting the time until a reader saw everything."""
    rates = [spans / (r["seconds"] + r["read_s"]) for r in runs
             if "read_s" in r and "error" not in r and not r.get("invalid")]
    return statistics.median(rates) if rates else float("nan")


if __name__ == "__main__":
    sys.exit(main())
