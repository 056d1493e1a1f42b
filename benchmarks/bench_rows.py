"""Session-index rows on a SPARQL server: how fast a writer computes and stores them
(otel_prov/stores/server_sessions.py), for sessions new to the index and for sessions whose rows
exist (a session written to again: more spans, a late log).

One run loads ``--sessions`` agent sessions (real SDK spans, as bench_ingest.py builds them) into a
fresh server (``--server``) through otel-prov's own writer, with no keeper of its own, marks every
session as a build would, and times the sweeps that compute every row (``first``); then marks every
session again and times the sweeps that replace every row (``again``).  Checked outside the timing:
every session has its row, and no mark is left.

    python benchmarks/bench_rows.py [--sessions 1000] [--server oxigraph|fuseki]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_ingest import build_spans  # noqa: E402
from otel_prov.mapping.flows import map_spans  # noqa: E402
from otel_prov.mapping.spans import from_sdk  # noqa: E402
from otel_prov.model.quads import nquads  # noqa: E402
from otel_prov.stores import parse_store, server_sessions, sparql  # noqa: E402
from otel_prov.stores.server_sessions import GRAPH_SESSIONS, ROW  # noqa: E402
from tests.support.sparql_servers import start_fuseki, start_oxigraph  # noqa: E402


def swept(store: sparql.SparqlStore) -> tuple[int, float]:
    """Sweep until no mark is left: how many sessions' marks were read, in how many seconds."""
    start, n = time.perf_counter(), 0
    while True:
        k = server_sessions.sweep(store)
        if not k:
            return n, time.perf_counter() - start
        n += k


def count(store: sparql.SparqlStore, pattern: str) -> int:
    rows = store.select(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{GRAPH_SESSIONS}> {{ {pattern} }} }}")
    return int(rows[0]["n"].value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--server", choices=("oxigraph", "fuseki"), default="oxigraph")
    args = parser.parse_args()
    quads = map_spans([from_sdk(s) for s in build_spans(args.sessions * 10)]).quads
    with tempfile.TemporaryDirectory() as tmp:
        server = (start_oxigraph if args.server == "oxigraph" else start_fuseki)(Path(tmp))
        try:
            store = sparql._open(parse_store(server.url))
            store.keeper = None  # this benchmark sweeps
            store.add(nquads(quads), len(quads))
            assert server_sessions.build(store)
            first, first_s = swept(store)
            rows = count(store, f"?q <{ROW}status> ?s")
            store.update(f"INSERT {{ GRAPH <{GRAPH_SESSIONS}> {{ ?q <{ROW}dirty> \"again\" }} }} "
                         f"WHERE {{ GRAPH <{GRAPH_SESSIONS}> {{ ?q <{ROW}status> ?s }} }}", "marking")
            again, again_s = swept(store)
            left = count(store, f"?q <{ROW}dirty> ?s")
            store.close()
        finally:
            server.stop()
    print(f"{args.server}: {rows} sessions, {len(quads)} quads")
    print(f"  first   {rows / first_s:8.0f} sessions/s  ({first} marks' sessions read in {first_s:.2f} s)")
    print(f"  again   {rows / again_s:8.0f} sessions/s  ({again} marks' sessions read in {again_s:.2f} s)")
    print(f"  check: {rows} rows for {args.sessions} sessions, {left} marks left: "
          f"{'OK' if rows == args.sessions and left == 0 else 'WRONG'}")


if __name__ == "__main__":
    main()
