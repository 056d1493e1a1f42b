"""A big store answers at once: list, filter and show against store size (issue 20, item 7).

For each multiple of the load (``--sizes``, default 1, 10, 100; the load is ``--spans`` agent spans
of ``bench_ingest.py``, 16,400 by default: ~100,000 quads, so 100x is ~10 M quads), a store is filled
by bulk-loading the load's quads that many times under distinct session IRIs, copy k dated k
hundredths of a year earlier (outside the timing), so its session index does not exist yet.  Then:

1. a writer's fold, which builds the session index from the graph (once per store: an older store,
   a bulk load, ``check --rebuild``);
2. as whole processes, ``--repeats`` times each: ``otel-prov list --limit 10``, the same with a
   filter (a collection, a status, a text every session holds, one a session in 1,640 holds, a
   time range), ``otel-prov show IRI``;
3. the web view (in this process, on a free port), ``--requests`` times each: ``/api/sessions``
   (a page, then each filter), ``/api/sessions/IRI``, the list page, a session's page;
4. on the largest store: ``otel-prov serve`` ingesting ``--background`` spans/s of other sessions
   (paced requests of 100 spans) while sessions are exported one at a time and a client polls
   ``/api/sessions`` for each: how long after its export returned each is listed;
5. on the largest store: ``otel-prov delete`` of one session, and ``otel-prov prune`` of ~1%
   (on the embedded store both rebuild the index, so the erased text leaves the files; on a server,
   SPARQL updates).  ``--only erase``: these alone (they change the store: a kept one too).

Printed: median and 95th percentile of each (seconds or milliseconds), and quads in the store.

With ``--server oxigraph|fuseki`` the store is a dataset on a SPARQL server started for each size (on
127.0.0.1, its data in the work directory), filled by POSTing the copies' N-Quads (no otel-prov
writer: no session index yet); step 1 is then a writer opened on it, which builds the index (its rows
as triples on the server: docs/store.md), timed until no session is left to compute.

    python benchmarks/bench_bigstore.py [--spans 16400] [--sizes 1,10,100] [--background 2000]
        [--server oxigraph|fuseki]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import itertools
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyoxigraph  # noqa: E402

from benchmarks.bench_ingest import build_requests, build_spans, send_all  # noqa: E402
from benchmarks.bench_sustained import with_new_trace_ids  # noqa: E402
from otel_prov.mapping.flows import map_spans  # noqa: E402
from otel_prov.mapping.spans import from_sdk  # noqa: E402
from otel_prov.model.quads import in_parts, nquads  # noqa: E402
from otel_prov.settings import UiSettings  # noqa: E402
from otel_prov.stores import parse_store, server_sessions, sessions, sparql  # noqa: E402
from otel_prov.stores.oxigraph import OxigraphStore  # noqa: E402
from otel_prov.stores.sparql import MAX_POST_BYTES  # noqa: E402
from otel_prov.web import create_app, runner  # noqa: E402
from tests.support.procs import clean_env, start_serve  # noqa: E402
from tests.support.sparql_servers import start_fuseki, start_oxigraph  # noqa: E402

_SESSION = re.compile(r"(urn:trustgraph:(?:agent|question|docrag|prov:exploration|prov:focus|prov:synthesis"
                      r"|prov:edge):)")
_OLD = "2020-01-01T00:00:00"
_TIME = re.compile(r'"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)')


def fill(store: Path, data: str, copies: int) -> int:
    """``copies`` of the load under distinct session IRIs (every tenth copy in collection ``c{k}``,
    every hundredth dated 2020: what the filters and prune find), bulk-loaded into the index."""
    index = pyoxigraph.Store(str(store))
    for k in range(copies):
        text = _copy(data, k)
        index.bulk_load(input=text.encode("utf-8"), format=pyoxigraph.RdfFormat.N_QUADS, lenient=True)
    index.flush()
    count = len(index)
    del index
    return count


def fill_server(url: str, kind: str, data: str, copies: int) -> int:
    """The same copies as :func:`fill`, POSTed to a SPARQL server's dataset (8 MiB parts)."""
    import urllib3

    http = urllib3.PoolManager()
    target = url + ("/store?lenient" if kind == "oxigraph" else "")
    for k in range(copies):
        for part in in_parts([_copy(data, k).encode("utf-8")], MAX_POST_BYTES):
            response = http.request("POST", target, body=part, timeout=600,
                                    headers={"Content-Type": "application/n-quads"})
            assert response.status in (200, 201, 204), (response.status, response.data[:300])
    store = sparql.open_for_reading(parse_store(url))
    try:
        return store.count()
    finally:
        store.close()


def _copy(data: str, k: int) -> str:
    """Copy ``k`` of the load: its own session IRIs, its times ``k`` hundredths of a year earlier
    (100 copies: a year of sessions, not 100 sessions at each instant)."""
    text = _SESSION.sub(rf"\1x{k}-", data)
    if k:
        shift = datetime.timedelta(hours=87.6 * k)
        shifted: dict[str, str] = {}

        def earlier(match: re.Match[str]) -> str:
            found = match.group(1)
            if found not in shifted:
                when = datetime.datetime.strptime(found, "%Y-%m-%dT%H:%M:%S") - shift
                shifted[found] = when.strftime("%Y-%m-%dT%H:%M:%S")
            return '"' + shifted[found]

        text = _TIME.sub(earlier, text)
    if k % 10 == 1:
        text = text.replace('"default"', f'"c{k}"')
    if k % 100 == 2:
        text = re.sub(r'"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d', f'"{_OLD}', text)
    return text


def build_server(url: str, kind: str, data: str, size: int) -> None:
    t = time.perf_counter()
    quads = fill_server(url, kind, data, size)
    filled = time.perf_counter() - t
    t = time.perf_counter()
    writer = sparql.open_for_writing(parse_store(url))  # its keeper builds the index, then computes the rows
    reader = sparql.open_for_reading(parse_store(url))
    try:
        while not (server_sessions.built(reader) and not server_sessions.marked(reader, most=1)):
            time.sleep(0.5)
    finally:
        reader.close()
        writer.close()
    built = time.perf_counter() - t
    print(f"{size}x: {quads:,} quads on {kind} (filled in {filled:.0f} s); a writer builds the session "
          f"index: {built:.1f} s", flush=True)


def cli(store: Path | str, *args: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "otel_prov.cli", *args, "--store", str(store)],
                   capture_output=True, check=True, env=clean_env(), timeout=900)
    return time.perf_counter() - t


def get(url: str) -> tuple[float, bytes]:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read()
    return time.perf_counter() - t, body


def figures(times: list[float], unit: str = "s") -> str:
    scale = 1000 if unit == "ms" else 1
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return f"median {statistics.median(ordered) * scale:.{0 if unit == 'ms' else 2}f} {unit}, " \
           f"p95 {p95 * scale:.{0 if unit == 'ms' else 2}f} {unit}"


def first_iri(store: Path | str) -> str:
    out = subprocess.run([sys.executable, "-m", "otel_prov.cli", "list", "--limit", "1", "--format", "json",
                          "--store", str(store)], capture_output=True, check=True, env=clean_env(),
                         timeout=900).stdout
    return str(json.loads(out)[0]["id"])


def measure(store: Path | str, args: argparse.Namespace) -> None:
    iri = first_iri(store)
    filters = [[], ["--collection", "c1"], ["--status", "failed"], ["--text", "times 4"],
               ["--text", "is 289 times"], ["--since", _OLD[:10], "--until", "2020-12-31"]]
    for extra in filters:
        times = [cli(store, "list", "--limit", "10", *extra) for _ in range(args.repeats)]
        print(f"  otel-prov list --limit 10 {' '.join(extra):<36s} {figures(times)}", flush=True)
    times = [cli(store, "show", iri) for _ in range(args.repeats)]
    print(f"  otel-prov show IRI{'':<42s} {figures(times)}", flush=True)
    running = runner.start(create_app(UiSettings(store=parse_store(str(store)), port=0)), "127.0.0.1", 0)
    try:
        base = running.url.rstrip("/")
        quoted = urllib.parse.quote(iri, safe="")
        pages = {"/api/sessions?limit=10": "", "/api/sessions?limit=10&collection=c1": "",
                 "/api/sessions?limit=10&status=error": "", "/api/sessions?limit=10&q=times+4": "",
                 "/api/sessions?limit=10&q=is+289+times": "",
                 f"/api/sessions?limit=10&since={_OLD[:10]}&until=2020-12-31": "",
                 f"/api/sessions/{quoted}": "", "/": "", f"/sessions/{quoted}": ""}
        for page in pages:
            times = [get(base + page)[0] for _ in range(args.requests)]
            print(f"  web {page[:56]:<56s} {figures(times, 'ms')}", flush=True)
    finally:
        running.stop()


def listable(store: Path | str, workdir: Path, args: argparse.Namespace) -> None:
    """Sessions exported to ``serve`` (one request each, while others keep it busy) until each is in
    the first page of ``/api/sessions`` of a web view on the same store (newest first: their spans
    are made after every other session's, so each is the newest when it arrives)."""
    (workdir / "serve.log").unlink(missing_ok=True)  # its address is read from it
    serve = start_serve(store, workdir / "serve.log")
    running = runner.start(create_app(UiSettings(store=parse_store(str(store)), port=0)), "127.0.0.1", 0)
    stop = threading.Event()
    background = build_requests(build_spans(20_000), 100)
    spans = build_spans(args.listable * 12, steps=5)  # "What is k times 5?": in no other session
    requests = build_requests(spans, 12)  # one agent session (12 spans) a request
    pace = 100 / args.background if args.background else 0.0
    sent = {"spans": 0, "seconds": 0.0}

    def busy() -> None:
        started = time.perf_counter()
        for k in itertools.count():
            if stop.is_set():
                break
            request = with_new_trace_ids([background[k % len(background)]], k // len(background))
            sent["spans"] += send_all(serve.grpc_port, request, 1, 60)[1]
            if pace:
                stop.wait(max(0.0, started + (k + 1) * pace - time.perf_counter()))
        sent["seconds"] = time.perf_counter() - started

    loader = threading.Thread(target=busy, daemon=True)
    loader.start()
    delays: list[float] = []
    try:
        time.sleep(2)  # the background load under way
        for request in requests[:args.listable]:
            question = re.search(rb"What is \d+ times 5\?", request[0])
            assert question is not None
            send_all(serve.grpc_port, [request], 1, 60)
            acked = time.perf_counter()
            asked = question.group(0).decode()
            while time.perf_counter() - acked < 60:
                _, body = get(f"{running.url.rstrip('/')}/api/sessions?limit=5")
                if any(row["question"] == asked for row in json.loads(body)["sessions"]):
                    break
            delays.append(time.perf_counter() - acked)
    finally:
        stop.set()
        loader.join(120)
        running.stop()
        serve.terminate(300)
    rate = sent["spans"] / sent["seconds"] if sent["seconds"] else 0
    print(f"  serve ingesting {rate:,.0f} spans/s of other sessions meanwhile", flush=True)
    print(f"  listable after its export returned, while serve ingests ({len(delays)} sessions): "
          f"{figures(delays)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=16_400, help="the load (default 16,400 spans)")
    parser.add_argument("--sizes", default="1,10,100", help="multiples of the load in the store")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each command (default 5)")
    parser.add_argument("--requests", type=int, default=40, help="requests of each page (default 40)")
    parser.add_argument("--listable", type=int, default=20, help="sessions timed until listed (default 20)")
    parser.add_argument("--background", type=float, default=2000,
                        help="spans/s serve ingests meanwhile (default 2,000; 0: as fast as it takes them)")
    parser.add_argument("--skip-erase", action="store_true", help="no delete and prune timings")
    parser.add_argument("--keep", type=Path, help="build the stores in this directory and keep them (a store "
                        "already there is used as it is)")
    parser.add_argument("--server", choices=("oxigraph", "fuseki"),
                        help="a dataset on this SPARQL server (started here) instead of the embedded store")
    parser.add_argument("--only", choices=("listable", "measure", "erase"),
                        help="only the listable run (on the largest store), only the timings of list, "
                             "show and the pages, or only those of delete and prune (on the largest store)")
    args = parser.parse_args(argv)
    spans = build_spans(args.spans)
    data = nquads(map_spans([from_sdk(s) for s in spans]).quads).decode("utf-8")
    print(f"load: {len(spans):,} spans, {data.count(chr(10)):,} quads")
    with tempfile.TemporaryDirectory(prefix="bench-bigstore-") as tmp:
        workdir = args.keep or Path(tmp)
        sizes = [int(s) for s in args.sizes.split(",")]
        for size in sizes:
            with contextlib.ExitStack() as stack:
                store = stack.enter_context(_store(workdir, size, data, args))
                _measure_size(store, workdir, size, sizes, args)
    return 0


@contextlib.contextmanager
def _store(workdir: Path, size: int, data: str, args: argparse.Namespace) -> Iterator[Path | str]:
    """The store of ``size`` copies: an embedded store's directory, or a started server's URL."""
    if args.server:
        place = workdir / f"{args.server}{size}"
        kept = args.keep is not None and place.exists()
        place.mkdir(parents=True, exist_ok=True)
        if args.server == "oxigraph":
            server = start_oxigraph(place, location=place / "data")
        else:
            server = start_fuseki(place)
        try:
            if kept:  # kept from an earlier run: as it was
                print(f"{size}x: the {args.server} dataset kept in {place}", flush=True)
            else:
                build_server(server.url, args.server, data, size)
            yield server.url
        finally:
            server.stop()
        return
    store = workdir / f"size{size}"
    if (store / "CURRENT").exists() and args.keep:  # kept from an earlier run: as it was
        print(f"{size}x: the store kept in {store}", flush=True)
    else:
        build(store, data, size)
    yield store


def _measure_size(store: Path | str, workdir: Path, size: int, sizes: list[int],
                  args: argparse.Namespace) -> None:
    if args.only in (None, "measure"):
        measure(store, args)
    if size != sizes[-1]:
        return
    if args.only in (None, "listable"):
        listable(store, workdir, args)
    if args.only == "erase" or (args.only is None and not args.skip_erase):
        iri = first_iri(store)
        took = cli(store, "delete", iri)
        print(f"  otel-prov delete (one session{'' if args.server else '; index rebuilt'})  {took:.1f} s")
        print(f"  otel-prov prune --older-than 365d (~1%)          "
              f"{cli(store, 'prune', '--older-than', '365d'):.1f} s", flush=True)
        gone = first_iri(store) != iri
        print(f"  check: the deleted session {'is gone' if gone else 'IS STILL LISTED'}", flush=True)


def build(store: Path, data: str, size: int) -> None:
    t = time.perf_counter()
    quads = fill(store, data, size)
    filled = time.perf_counter() - t
    t = time.perf_counter()
    index = OxigraphStore(store)  # what the indexing process does when it finds no rows
    try:
        assert sessions.update(index, store)
    finally:
        index.close()
    built = time.perf_counter() - t
    print(f"{size}x: {quads:,} quads (filled in {filled:.0f} s); a writer builds the session "
          f"index: {built:.1f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
