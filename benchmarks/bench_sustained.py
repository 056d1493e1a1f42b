"""Sustained ingest and store size: how ``otel-prov serve`` behaves as its store grows.

1. **RSS under a bounded sustained run.**  ``otel-prov serve`` on a fresh store receives the ingest
   benchmark's load (``bench_ingest.py``: agent sessions, requests of 512 spans, 8 concurrent
   clients) again and again, each round with new trace ids (so the store grows), for ``--rounds``
   rounds or ``--seconds`` at most.  Printed: the server's resident set (``VmRSS``) sampled every
   ``--sample`` seconds -- the curve -- and spans/s per round.
2. **Cost against store size.**  For each multiple of the load already in the store (``--sizes``,
   default 1, 10, 100: the index filled beforehand, outside the timing, with the load's quads under
   distinct IRIs), a fresh ``serve`` on that store ingests the load once: spans/s, then how long a
   reader takes to open the store once ``serve`` has stopped (it folds what is left when it stops;
   readers never fold), and how long ``otel-prov list --limit 10`` takes.

    python benchmarks/bench_sustained.py [--spans 60000] [--rounds 10] [--sizes 1,10,100]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pyoxigraph  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)

from benchmarks.bench_ingest import build_requests, build_spans, send_all, warm_up  # noqa: E402
from otel_prov.mapping.flows import map_spans  # noqa: E402
from otel_prov.mapping.spans import from_sdk  # noqa: E402
from otel_prov.model.quads import nquads  # noqa: E402
from otel_prov.stores.logstore import open_reader  # noqa: E402
from tests.support.procs import clean_env, start_serve  # noqa: E402


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def with_new_trace_ids(requests: list[tuple[bytes, int]], round_: int) -> list[tuple[bytes, int]]:
    """The same requests with every trace id changed (so a round adds new sessions)."""
    out = []
    salt = round_.to_bytes(4, "big")
    for body, n in requests:
        request = ExportTraceServiceRequest.FromString(body)
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    span.trace_id = salt + span.trace_id[4:]
        out.append((request.SerializeToString(), n))
    return out


def sustained(workdir: Path, requests: list[tuple[bytes, int]], args: argparse.Namespace) -> None:
    serve = start_serve(workdir / "sustained", workdir / "sustained.log")
    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    t0 = time.monotonic()

    def sample() -> None:
        while not stop.wait(args.sample):
            samples.append((time.monotonic() - t0, rss_mib(serve.pid)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    spans = 0
    try:
        for r in range(args.rounds):
            if time.monotonic() - t0 > args.seconds:
                break
            load = with_new_trace_ids(requests, r + 1)
            seconds, acked, _, failures = send_all(serve.grpc_port, load, args.concurrency, 300)
            spans += acked
            print(f"  round {r + 1:3d}: {acked / seconds:8,.0f} spans/s  ({spans:,} spans so far, "
                  f"{failures} failed)  RSS {rss_mib(serve.pid):.0f} MiB", flush=True)
    finally:
        stop.set()
        sampler.join()
        serve.terminate(120)
    print("RSS curve (s: MiB): " + ", ".join(f"{t:.0f}: {m:.0f}" for t, m in samples))


def fill(store: Path, data: bytes, copies: int) -> None:
    """``copies`` of the load's quads under distinct IRIs, bulk-loaded into the index directly."""
    index = pyoxigraph.Store(str(store))
    text = data.decode("utf-8")
    for k in range(copies):
        index.bulk_load(input=text.replace("urn:trustgraph:", f"urn:trustgraph:x{k}-").encode("utf-8"),
                        format=pyoxigraph.RdfFormat.N_QUADS, lenient=True)
    index.flush()
    del index


def by_size(workdir: Path, requests: list[tuple[bytes, int]], data: bytes, n_spans: int,
            args: argparse.Namespace) -> None:
    print(f"\n{'in the store':>14s} {'serve spans/s':>14s} {'read after':>11s} {'list --limit 10':>16s}")
    for size in [int(s) for s in args.sizes.split(",")]:
        store = workdir / f"size{size}"
        t = time.perf_counter()
        fill(store, data, size)
        filled = time.perf_counter() - t
        serve = start_serve(store, workdir / f"size{size}.log")
        try:
            warm_up(serve.grpc_port, requests)
            seconds, acked, _, _ = send_all(serve.grpc_port, with_new_trace_ids(requests, 10_000 + size),
                                            args.concurrency, 300)
        finally:
            serve.terminate(120)
        t = time.perf_counter()
        open_reader(store).close()  # serve folded the rest of its log when it stopped
        fold = time.perf_counter() - t
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "otel_prov.cli", "list", "--limit", "10", "--store",
                        str(store)], capture_output=True, check=True, env=clean_env(), timeout=600)
        listed = time.perf_counter() - t
        print(f"{size:>5d}x {n_spans:,} {acked / seconds:14,.0f} {fold:10.2f}s {listed:15.2f}s"
              f"   (filled in {filled:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=60_000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=10, help="sustained rounds, at most (default 10)")
    parser.add_argument("--seconds", type=float, default=120, help="sustained run, at most (default 120)")
    parser.add_argument("--sample", type=float, default=1.0, help="RSS sampling interval (default 1 s)")
    parser.add_argument("--sizes", default="1,10,100", help="multiples of the load in the store")
    parser.add_argument("--skip", choices=("sustained", "sizes"), help="run only the other part")
    args = parser.parse_args(argv)
    spans = build_spans(args.spans)
    requests = build_requests(spans, 512)
    data = nquads(map_spans([from_sdk(s) for s in spans]).quads)
    print(f"load: {len(spans):,} spans in {len(requests)} requests, {len(data) / 2**20:.1f} MiB of N-Quads")
    with tempfile.TemporaryDirectory(prefix="bench-sustained-") as tmp:
        if args.skip != "sustained":
            print("sustained run:")
            sustained(Path(tmp), requests, args)
        if args.skip != "sizes":
            by_size(Path(tmp), requests, data, len(spans), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
