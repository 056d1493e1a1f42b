"""Remote-store benchmark: spans/s into a SPARQL server through 1 and 2 ``otel-prov serve``
receivers, against the server's own load rate for the same quads; and where the time goes.

One run builds the load once (real SDK spans of agent sessions, as ``bench_ingest.py`` does, in
OTLP requests of ``--spans-per-request`` spans) and maps it once to the N-Quads the receivers will
write.  Then, each on a fresh server (``--server``: the Oxigraph server on RocksDB, or Fuseki TDB2)
started for it, on 127.0.0.1:

  limit, 1 client   the server's own load rate: the N-Quads POSTed by a plain urllib3 client, in
                    the same 8 MiB parts otel-prov sends (no mapping, no OTLP): what no number of
                    receivers can exceed;
  limit, 2 clients  the same parts from two clients at once;
  ... bulk loader   (Oxigraph) the same with ``?no_transaction``, Oxigraph's bulk loader (not
                    atomic), for the limit and for the receivers (OTEL_PROV_STORE_BULK_LOAD=true);
  serve x N         N ``otel-prov serve --store URL`` processes; ``--concurrency`` gRPC clients send
                    the requests, request i to receiver i mod N (each acknowledged once its quads
                    are on the server).

Reported: spans/s (and quads/s) from the first request to the last answer, the ratio to the
1-client limit, and the CPU each process used during the run (seconds, and % of one core): the
receivers (mapping, in Python) or the server (parsing, indexing) near 100% of a core, or all of
them together near the machine's cores, says where the bottleneck is.  Checked outside the timing:
the server holds exactly the expected quads after each run.

    python benchmarks/bench_remote.py [--spans 40000] [--server oxigraph|fuseki] [--receivers 1 2]
        [--spans-per-request 512] [--concurrency 8] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import urllib3  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402

from benchmarks.bench_ingest import build_requests, build_spans, expected_quad_count, send_all  # noqa: E402
from otel_prov.mapping.flows import map_spans  # noqa: E402
from otel_prov.mapping.spans import from_sdk  # noqa: E402
from otel_prov.model.quads import in_parts, nquads  # noqa: E402
from otel_prov.stores.sparql import MAX_POST_BYTES  # noqa: E402
from tests.support.procs import start_serve  # noqa: E402
from tests.support.sparql_servers import SparqlServer, start_fuseki, start_oxigraph  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def busy_cpus_elsewhere(pids: set[int], seconds: float, start: dict[str, float]) -> float:
    """CPUs kept busy by every other process during the run (from /proc/stat minus ``pids``)."""
    now = _machine_ticks()
    total = (now - start["machine"]) / TICKS
    ours = sum(cpu_seconds(p) for p in pids if Path(f"/proc/{p}").exists()) - start["ours"]
    return max(0.0, (total - ours) / seconds)


def _machine_ticks() -> float:
    parts = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    return float(sum(int(x) for i, x in enumerate(parts) if i not in (3, 4)))  # without idle, iowait


@dataclass
class Result:
    series: str
    spans: int
    quads: int
    seconds: float
    cpu: dict[str, float] = field(default_factory=dict)
    elsewhere: float = 0.0
    check: str = ""

    @property
    def spans_per_s(self) -> float:
        return self.spans / self.seconds

    @property
    def quads_per_s(self) -> float:
        return self.quads / self.seconds


def fresh_server(kind: str, workdir: Path, n: int) -> SparqlServer:
    if kind == "oxigraph":
        return start_oxigraph(workdir, location=workdir / f"oxigraph-{n}")
    return start_fuseki(workdir, name=f"fuseki-{n}")


def data_endpoint(server: SparqlServer, bulk: bool = False) -> str:
    if server.kind == "oxigraph":
        return server.url + ("/store?no_transaction&lenient" if bulk else "/store?lenient")
    return server.url


def stored_quads(server: SparqlServer) -> int:
    return len(server.nquads())


def run_limit(kind: str, workdir: Path, n: int, data: bytes, spans: int, quads: int,
              clients: int, bulk: bool = False) -> Result:
    server = fresh_server(kind, workdir, n)
    parts = list(in_parts([data], MAX_POST_BYTES))
    http = urllib3.PoolManager(maxsize=clients)
    try:
        next_part = iter(range(len(parts)))
        lock = threading.Lock()

        def client() -> None:
            while True:
                with lock:
                    i = next(next_part, None)
                if i is None:
                    return
                resp = http.request("POST", data_endpoint(server, bulk), body=parts[i],
                                    headers={"Content-Type": "application/n-quads"}, timeout=600)
                assert resp.status < 300, (resp.status, resp.data[:300])

        before = cpu_seconds(server.pid)
        start = time.perf_counter()
        threads = [threading.Thread(target=client) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.perf_counter() - start
        cpu = {"server": cpu_seconds(server.pid) - before}
        got = stored_quads(server)
    finally:
        server.stop()
    check = f"{got} quads stored, {quads} expected: {'OK' if got == quads else 'MISMATCH'}"
    series = f"limit, {clients} client{'s' if clients > 1 else ''}" + (", bulk loader" if bulk else "")
    return Result(series, spans, quads, seconds, cpu, check=check)


def run_receivers(kind: str, workdir: Path, n: int, receivers: int, requests: list[tuple[bytes, int]],
                  spans: int, quads: int, args: argparse.Namespace, bulk: bool = False) -> Result:
    server = fresh_server(kind, workdir, n)
    serves = []
    env = {"OTEL_PROV_STORE_BULK_LOAD": "true"} if bulk else None
    try:
        for r in range(receivers):
            log = workdir / f"serve-{n}-{r}.log"
            serves.append(start_serve(server.url, log, "--http-port", "off", env=env))
        pids = {server.pid, *(s.pid for s in serves)}
        before = {"server": cpu_seconds(server.pid)} | {f"serve-{r + 1}": cpu_seconds(s.pid)
                                                         for r, s in enumerate(serves)}
        start_ticks = {"machine": _machine_ticks(), "ours": sum(cpu_seconds(p) for p in pids | {os.getpid()})}
        client = cpu_seconds(os.getpid())
        seconds, acked, retries, failures = send_split([s.grpc_port for s in serves], requests,
                                                       args.concurrency, args.time_limit)
        cpu = {"server": cpu_seconds(server.pid) - before["server"]}
        for r, s in enumerate(serves):
            cpu[f"serve-{r + 1}"] = cpu_seconds(s.pid) - before[f"serve-{r + 1}"]
        cpu["gRPC clients"] = cpu_seconds(os.getpid()) - client
        elsewhere = busy_cpus_elsewhere(pids | {os.getpid()}, seconds, start_ticks)
    finally:
        codes = [s.terminate(120) for s in serves]
    try:
        got = stored_quads(server)
    finally:
        server.stop()
    ok = got == quads and acked == spans and not failures and all(c == 0 for c in codes)
    check = (f"{acked}/{spans} spans acknowledged ({retries} retried after UNAVAILABLE, {failures} failed); "
             f"{got} quads stored, {quads} expected; serve exit {codes}: {'OK' if ok else 'MISMATCH'}")
    series = f"otel-prov serve x {receivers}" + (", bulk loader" if bulk else "")
    return Result(series, acked, quads, seconds, cpu, elsewhere, check)


def send_split(ports: list[int], requests: list[tuple[bytes, int]], concurrency: int,
               time_limit: float) -> tuple[float, int, int, int]:
    """Request i to receiver i mod N, ``concurrency`` clients in all (at least one per receiver)."""
    groups = [requests[i::len(ports)] for i in range(len(ports))]
    per = max(1, concurrency // len(ports))
    results: list[tuple[float, int, int, int]] = [(0.0, 0, 0, 0)] * len(ports)

    def one(i: int) -> None:
        results[i] = send_all(ports[i], groups[i], per, time_limit)

    start = time.perf_counter()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(ports))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    return seconds, sum(r[1] for r in results), sum(r[2] for r in results), sum(r[3] for r in results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=40_000)
    parser.add_argument("--spans-per-request", type=int, default=512)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--server", choices=("oxigraph", "fuseki"), default="oxigraph")
    parser.add_argument("--receivers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds per run, at most")
    args = parser.parse_args(argv)

    t = time.perf_counter()
    spans: list[ReadableSpan] = build_spans(args.spans)
    requests = build_requests(spans, args.spans_per_request)
    data = nquads(map_spans([from_sdk(s) for s in spans]).quads)
    quads = expected_quad_count(spans)
    print(f"load: {len(spans)} spans ({len({s.context.trace_id for s in spans})} agent sessions) in "
          f"{len(requests)} requests; {quads} quads, {len(data) / 1e6:.1f} MB of N-Quads "
          f"({len(list(in_parts([data], MAX_POST_BYTES)))} POSTs for the limit); server: "
          f"{args.server}; built in {time.perf_counter() - t:.1f} s; {os.cpu_count()} CPUs", flush=True)
    results: dict[str, list[Result]] = {}
    n = 0
    for r in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="bench-remote-") as tmp:
            workdir = Path(tmp)
            runs = [("limit", 1), ("limit", 2)] + [("serve", k) for k in args.receivers]
            if args.server == "oxigraph":
                runs += [("bulk", 2)] + [("serve-bulk", k) for k in args.receivers]
            for what, k in runs:
                n += 1
                if what in ("limit", "bulk"):
                    result = run_limit(args.server, workdir, n, data, len(spans), quads, k,
                                       bulk=what == "bulk")
                else:
                    result = run_receivers(args.server, workdir, n, k, requests, len(spans), quads, args,
                                           bulk=what == "serve-bulk")
                results.setdefault(result.series, []).append(result)
                cpu = ", ".join(f"{name} {sec:.1f} s ({100 * sec / result.seconds:.0f}%)"
                                for name, sec in result.cpu.items() if sec)
                if result.elsewhere:
                    cpu += f"; other processes kept {result.elsewhere:.1f} CPUs busy"
                print(f"  run {r + 1}: {result.series:28s} {result.spans_per_s:8.0f} spans/s "
                      f"{result.quads_per_s:9.0f} quads/s in {result.seconds:6.2f} s; CPU: {cpu}", flush=True)
                print(f"          check: {result.check}", flush=True)
    limit = statistics.median(x.spans_per_s for x in results["limit, 1 client"])
    print()
    print(f"{'series':30s} {'spans/s':>9s} {'quads/s':>9s} {'/ limit':>8s}   (medians of {args.repeats})")
    for series, runs in results.items():
        rate = statistics.median(x.spans_per_s for x in runs)
        print(f"{series:30s} {rate:9.0f} {statistics.median(x.quads_per_s for x in runs):9.0f} "
              f"{rate / limit if limit else 0:8.2f}")
    return 0 if all("MISMATCH" not in x.check for runs in results.values() for x in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
