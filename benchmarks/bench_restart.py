"""Restart under load: ``otel-prov serve`` is killed with SIGKILL while clients send, restarted on the
same store, killed again, ...; afterwards the spans the receiver acknowledged are counted against
the spans in the store.  They must be equal (acknowledged ⊆ stored; the store may hold more: spans
committed whose answer the kill cut off, which a real client retries, idempotently).

Each of ``--cycles`` cycles starts ``otel-prov serve --store oxigraph:TMP`` (same store every
time), lets ``--concurrency`` gRPC clients send pre-built requests of real agent spans (each
request new sessions), kills the server with SIGKILL after a random ``--min-load``..``--max-load``
seconds of load, and records which requests were acknowledged.  At the end a last start/SIGTERM
opens the store cleanly, and a span counts as stored when every quad the mapping gives for it is in
the store (checked by reading the store directly).

    python benchmarks/bench_restart.py [--cycles 5] [--concurrency 8] [--sessions-per-request 20]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import grpc  # noqa: E402
import pyoxigraph  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402

from benchmarks.bench_ingest import build_spans  # noqa: E402
from otel_prov.mapping.flows import map_spans  # noqa: E402
from otel_prov.mapping.spans import from_sdk  # noqa: E402
from otel_prov.model.quads import nquads  # noqa: E402
from tests.support.procs import start_serve  # noqa: E402

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def span_quads(span: ReadableSpan) -> list[pyoxigraph.Quad]:
    data = nquads(map_spans([from_sdk(span)]).quads)
    return list(pyoxigraph.parse(input=data, format=pyoxigraph.RdfFormat.N_QUADS))


def load_until_killed(port: int, requests: list[bytes], first: int, concurrency: int, kill_after: float,
                      kill: threading.Event) -> tuple[list[int], int]:
    """Send requests[first:] until the server dies; returns (acknowledged indexes, next index)."""
    lock = threading.Lock()
    state = {"next": first}
    acked: list[int] = []

    def worker() -> None:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        export = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        try:
            while True:
                with lock:
                    i = state["next"]
                    state["next"] += 1
                if i >= len(requests):
                    return
                try:
                    export(requests[i], timeout=30)
                except grpc.RpcError:
                    return  # killed (or refused): not acknowledged
                with lock:
                    acked.append(i)
        finally:
            channel.close()

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    time.sleep(kill_after)
    kill.set()
    for t in threads:
        t.join(60)
    return acked, state["next"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--sessions-per-request", type=int, default=20)
    parser.add_argument("--requests", type=int, default=600, help="pre-built requests (upper bound)")
    parser.add_argument("--min-load", type=float, default=0.5)
    parser.add_argument("--max-load", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)

    spans_per_session = 10  # question, root, 4 x (iteration + execute_tool)
    spans = build_spans(args.requests * args.sessions_per_request * spans_per_session)
    by_trace: dict[int, list[ReadableSpan]] = {}
    for s in spans:
        by_trace.setdefault(s.context.trace_id, []).append(s)
    traces = list(by_trace.values())
    groups = [sum(traces[i:i + args.sessions_per_request], []) for i in
              range(0, len(traces), args.sessions_per_request)]
    requests = [encode_spans(g).SerializeToString() for g in groups]
    print(f"load: {len(requests)} requests of {args.sessions_per_request} agent sessions "
          f"(~{len(spans) // len(requests)} spans each), {args.concurrency} clients, "
          f"{args.cycles} kill -9 cycles")

    acknowledged: set[int] = set()
    sent_upto = 0
    with tempfile.TemporaryDirectory(prefix="bench-restart-") as tmp:
        store = Path(tmp) / "store"
        for cycle in range(args.cycles):
            serve = start_serve(store, Path(tmp) / f"serve-{cycle}.log")
            kill = threading.Event()
            kill_after = rng.uniform(args.min_load, args.max_load)

            def killer(proc=serve, ev=kill) -> None:  # type: ignore[no-untyped-def]
                ev.wait()
                proc.kill9()

            k = threading.Thread(target=killer)
            k.start()
            acked, sent_upto = load_until_killed(serve.grpc_port, requests, sent_upto, args.concurrency,
                                                 kill_after, kill)
            k.join()
            acknowledged.update(acked)
            n_spans = sum(len(groups[i]) for i in acked)
            print(f"  cycle {cycle + 1}: killed -9 after {kill_after:.2f} s of load; {len(acked)} requests "
                  f"({n_spans} spans) acknowledged; sent up to request {sent_upto}", flush=True)
            if sent_upto >= len(requests):
                print("  (ran out of pre-built requests; raise --requests)")
                break
        final = start_serve(store, Path(tmp) / "serve-final.log")
        code = final.terminate(60)
        db = pyoxigraph.Store.read_only(str(store))
        acked_spans = [s for i in sorted(acknowledged) for s in groups[i]]
        lost = [s for s in acked_spans if not all(q in db for q in span_quads(s))]
        sent_spans = [s for i in range(sent_upto) for s in (groups[i] if i < len(groups) else [])]
        unacked = [s for i in range(min(sent_upto, len(groups))) if i not in acknowledged
                   for s in groups[i]]
        stored_unacked = [s for s in unacked if all(q in db for q in span_quads(s))]
        total_quads = len(db)
        del db
    print()
    print(f"spans sent (attempted):             {len(sent_spans)}")
    print(f"spans acknowledged by the receiver: {len(acked_spans)}")
    print(f"acknowledged spans in the store:    {len(acked_spans) - len(lost)}")
    print(f"acknowledged spans lost:            {len(lost)}")
    print(f"unacknowledged spans in the store:  {len(stored_unacked)} of {len(unacked)} (committed, "
          f"answer cut off by the kill; a client retries them)")
    print(f"quads in the store:                 {total_quads}; final SIGTERM exit code {code}")
    equal = not lost and code == 0
    print(f"acknowledged == stored (of those acknowledged): {'YES' if equal else 'NO'}")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
