"""Ingest benchmark: sustained OTLP/gRPC ingest of agent spans by ``otel-prov serve`` (into its
on-disk embedded store) side by side with Jaeger's own ingest of the same load, into its on-disk Badger
storage and into memory.

One run builds the load once -- real SDK spans of ReAct agent sessions (``otel_prov.agent_session``
with tool calls), encoded into ``ExportTraceServiceRequest``s of ``--spans-per-request`` spans and
serialised once -- then sends the same bytes with the same client (``--concurrency`` threads, one
gRPC channel each, the next request as soon as one is answered) to each server in turn, each a
separate process started for the run:

  serve   ``otel-prov serve --store oxigraph:TMP`` (acknowledges once a request's quads are
          committed to the store);
  serve   ... acknowledges once a request's quads are synced to its log segment (fdatasync); the
          fold into the index runs meanwhile in another thread, and serve folds what is left when
          it stops; the time a reader then needs to open the store is reported apart;
  jaeger-badger  Jaeger v2 with collector-config/jaeger-badger.yaml (Badger on disk);
  jaeger  Jaeger v2 with collector-config/jaeger.yaml (memory).  Jaeger acknowledges once its
          receiver has accepted the data; its batch processor writes to storage afterwards.

Reported per server: spans/s from the first request to the last answer, requests refused with
UNAVAILABLE and retried after the RetryInfo delay, and the peak RSS of the server process (VmHWM).
Checked outside the timing: the store holds exactly the quads the mapping gives for all the spans,
and Jaeger returns a sample of the traces complete.

    python benchmarks/bench_ingest.py [--spans 60000] [--spans-per-request 512] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import grpc  # noqa: E402
import pyoxigraph  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from otel_prov import agent_session  # noqa: E402
from otel_prov.mapping.flows import map_spans  # noqa: E402
from otel_prov.mapping.spans import from_sdk  # noqa: E402
from otel_prov.model.quads import nquads  # noqa: E402
from otel_prov.stores.logstore import open_reader  # noqa: E402
from tests.support.procs import (  # noqa: E402
    JAEGER_BADGER_CONFIG,
    http_get,
    peak_rss_kib,
    start_jaeger,
    start_serve,
    tree_peak_rss_kib,
    wait_until,
)

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
RETRY_INFO_TRAILER = "google.rpc.retryinfo-bin"


# -- the load -------------------------------------------------------------------------------------


def build_spans(n_spans: int, steps: int = 4) -> list[ReadableSpan]:
    """Agent sessions (question, iterations with a tool call each, conclusion) until ``n_spans``."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-react-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    k = 0
    while len(memory.get_finished_spans()) < n_spans:
        with agent_session(f"What is {k} times {steps}?", tracer_provider=provider) as session:
            for i in range(steps):
                with session.iteration() as step:
                    step.thought(f"I should multiply {k} by {i + 1} (step {i + 1} of {steps}).")
                    step.call_tool("calculator", lambda expression: str(eval_product(expression)),
                                   {"expression": f"{k}*{i + 1}"})
            session.conclude(f"{k * steps}")
        k += 1
    spans = list(memory.get_finished_spans())[:n_spans]
    provider.shutdown()
    return spans


def eval_product(expression: str) -> int:
    a, b = expression.split("*")
    return int(a) * int(b)


def build_requests(spans: list[ReadableSpan], per_request: int) -> list[tuple[bytes, int]]:
    out = []
    for i in range(0, len(spans), per_request):
        chunk = spans[i:i + per_request]
        out.append((encode_spans(chunk).SerializeToString(), len(chunk)))
    return out


# -- the client -----------------------------------------------------------------------------------


@dataclass
class Run:
    target: str
    spans: int
    seconds: float
    retries: int
    failures: int
    rss_kib: int

    @property
    def rate(self) -> float:
        return self.spans / self.seconds if self.seconds else 0.0


def _retry_delay(err: grpc.RpcError) -> float:
    from otel_prov.serve.rpc_status import RetryInfo

    for key, value in err.trailing_metadata() or ():
        if key == RETRY_INFO_TRAILER:
            info = RetryInfo.FromString(value)
            return float(info.retry_delay.seconds + info.retry_delay.nanos / 1e9)
    return 0.5


def send_all(port: int, requests: list[tuple[bytes, int]], concurrency: int,
             time_limit: float) -> tuple[float, int, int, int]:
    """Send every request (retrying refusals); returns (seconds, spans acknowledged, retries, failures)."""
    lock = threading.Lock()
    state = {"next": 0, "spans": 0, "retries": 0, "failures": 0}
    deadline = time.monotonic() + time_limit

    def worker() -> None:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[
            ("grpc.max_send_message_length", 64 * 1024 * 1024)])
        export = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        try:
            while True:
                with lock:
                    i = state["next"]
                    state["next"] += 1
                if i >= len(requests) or time.monotonic() > deadline:
                    return
                body, n = requests[i]
                while True:
                    try:
                        export(body, timeout=60)
                        with lock:
                            state["spans"] += n
                        break
                    except grpc.RpcError as err:
                        if err.code() is grpc.StatusCode.UNAVAILABLE and time.monotonic() < deadline:
                            with lock:
                                state["retries"] += 1
                            time.sleep(_retry_delay(err))
                            continue
                        with lock:
                            state["failures"] += 1
                        break
        finally:
            channel.close()

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start, state["spans"], state["retries"], state["failures"]


def warm_up(port: int, requests: list[tuple[bytes, int]]) -> None:
    send_all(port, requests[:2], 1, 30)


# -- checks ---------------------------------------------------------------------------------------


def expected_quad_count(spans: list[ReadableSpan]) -> int:
    data = nquads(map_spans([from_sdk(s) for s in spans]).quads)
    return len(set(pyoxigraph.parse(input=data, format=pyoxigraph.RdfFormat.N_QUADS)))


def check_jaeger(jaeger: object, spans: list[ReadableSpan], sample: int = 20) -> str:
    by_trace: dict[str, int] = {}
    for s in spans:
        key = f"{s.context.trace_id:032x}"
        by_trace[key] = by_trace.get(key, 0) + 1
    chosen = random.Random(1).sample(sorted(by_trace), min(sample, len(by_trace)))
    for trace_id in chosen:
        def complete(tid: str = trace_id) -> bool:
            trace = jaeger.trace(tid)  # type: ignore[attr-defined]
            return bool(trace) and len(trace["spans"]) == by_trace[tid]

        wait_until(complete, 60, f"Jaeger to return trace {trace_id} complete", interval=0.2)
    return f"{len(chosen)} sampled traces complete"


# -- main -----------------------------------------------------------------------------------------


def run_serve(workdir: Path, requests: list[tuple[bytes, int]], spans: list[ReadableSpan],
              args: argparse.Namespace, expected_quads: int, workers: str = "") -> tuple[Run, str]:
    store = workdir / f"store{workers}"
    serve = start_serve(store, workdir / f"serve{workers}.log", *(("--workers", workers) if workers else ()))
    try:
        warm_up(serve.grpc_port, requests)
        seconds, acked, retries, failures = send_all(serve.grpc_port, requests, args.concurrency,
                                                     args.time_limit)
        rss = tree_peak_rss_kib(serve.pid)  # with its mapping workers
        status, body = http_get(f"http://{serve.http}/health")
        health = json.loads(body) if status == 200 else {}
    finally:
        code = serve.terminate(60)
    t0 = time.perf_counter()
    reopened = open_reader(store)  # serve folded the rest of its log when it stopped
    read_s = time.perf_counter() - t0
    stored = len(reopened.inner)
    reopened.close()
    ok = stored == expected_quads and acked == len(spans) and code == 0
    check = (f"store holds {stored} quads, expected {expected_quads}; server acknowledged "
             f"{health.get('spans_acknowledged')} spans (incl. warm-up); exit {code}; a reader "
             f"opened the store in {read_s:.2f} s: "
             f"{'OK' if ok else 'MISMATCH'}")
    label = "otel-prov serve" + (f" (--workers {workers})" if workers else "")
    return Run(label, acked, seconds, retries, failures, rss), check


def run_jaeger(workdir: Path, requests: list[tuple[bytes, int]], spans: list[ReadableSpan],
               args: argparse.Namespace, badger: bool = False) -> tuple[Run, str]:
    jaeger = start_jaeger(workdir, max_traces=1_000_000,
                          **({"config": JAEGER_BADGER_CONFIG} if badger else {}))
    try:
        warm_up(jaeger.otlp_grpc, requests)
        seconds, acked, retries, failures = send_all(jaeger.otlp_grpc, requests, args.concurrency,
                                                     args.time_limit)
        check = check_jaeger(jaeger, spans)
        rss = peak_rss_kib(jaeger.pid)
    finally:
        jaeger.terminate(30)
    return Run("jaeger (badger)" if badger else "jaeger (memory)", acked, seconds, retries, failures,
               rss), check


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=60_000)
    parser.add_argument("--spans-per-request", type=int, default=512)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds per run, at most")
    parser.add_argument("--workers", default="", help="comma-separated --workers values of serve to "
                        "run side by side (default: serve's default only)")
    args = parser.parse_args(argv)

    t = time.perf_counter()
    spans = build_spans(args.spans)
    requests = build_requests(spans, args.spans_per_request)
    expected = expected_quad_count(spans)
    size = sum(len(b) for b, _ in requests)
    print(f"load: {len(spans)} spans of {len({s.context.trace_id for s in spans})} agent sessions in "
          f"{len(requests)} requests ({size / 1e6:.1f} MB protobuf), {args.concurrency} concurrent "
          f"clients; built in {time.perf_counter() - t:.1f} s; {expected} quads expected")
    results: dict[str, list[Run]] = {}
    checks: list[str] = []
    for r in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
            workdir = Path(tmp)
            serves = tuple(f"serve:{w}" for w in args.workers.split(",")) if args.workers else ("serve:",)
            runners = (*serves, "jaeger-badger", "jaeger")
            for runner in runners if r % 2 == 0 else tuple(reversed(runners)):
                if runner.startswith("serve:"):
                    run, check = run_serve(workdir, requests, spans, args, expected, runner[6:])
                else:
                    run, check = run_jaeger(workdir, requests, spans, args, badger=runner != "jaeger")
                results.setdefault(run.target, []).append(run)
                checks.append(f"run {r + 1} {run.target}: {check}")
                print(f"  run {r + 1}: {run.target:18s} {run.rate:9.0f} spans/s  "
                      f"({run.spans} spans in {run.seconds:.2f} s, {run.retries} retried, "
                      f"{run.failures} failed)  peak RSS {run.rss_kib / 1024:.0f} MiB", flush=True)
    print()
    print(f"{'server':18s} {'spans/s (median)':>17s} {'peak RSS (max)':>15s} {'retried':>8s} {'failed':>7s}")
    for target, runs in results.items():
        print(f"{target:18s} {statistics.median(r.rate for r in runs):17.0f} "
              f"{max(r.rss_kib for r in runs) / 1024:12.0f} MiB {sum(r.retries for r in runs):8d} "
              f"{sum(r.failures for r in runs):7d}")
    medians = {t: statistics.median(r.rate for r in runs) for t, runs in results.items()}
    badger = medians.get("jaeger (badger)", float("nan"))
    memory = medians.get("jaeger (memory)", float("nan"))
    for target, serve in medians.items():
        if target.startswith("otel-prov serve"):
            print(f"\nsummary (medians of {args.repeats}): {target} vs Jaeger+Badger {serve / badger:.2f} "
                  f"(target >= 2); vs Jaeger in memory {serve / memory:.2f} (target >= 0.5)")
    print()
    for line in checks:
        print("check:", line)
    return 0 if all("MISMATCH" not in c for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
