"""Seal and verify benchmark: ``otel-prov seal`` and ``otel-prov verify`` over a store of many sessions.

Makes ``--sessions`` sessions (10,000) of real SDK spans with the span generator of
``bench_export.py`` (agent sessions of 3-6 steps with a tool call each, every 25th a GraphRAG or
document-RAG query), exports them with ``ProvSpanExporter`` into an on-disk store in a temporary
directory, reads it once (so the index is folded, as a store is that has been written a while ago),
then runs the real command, each in its own process, and prints its time and peak memory:

  seal                 the first seal of every session (every digest computed, every seal written)
  verify               every digest computed again and compared
  seal (again)         nothing to write: each session already sealed as it is
  seal --hmac-key      every session sealed again, with an HMAC
  verify --hmac-key    with the HMAC checked
  verify (tampered)    after a literal of one session is changed: it is named, exit status 1

Checks (a failed one exits 1): every session is sealed and then verified intact; the second seal
writes nothing; the tampered session, and only it, is reported changed.  The target is sealing
10,000 sessions in under a minute on the 2-core machine (printed, not a check: the machine is shared).

    python benchmarks/bench_seal.py [--sessions 10000] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
try:
    import otel_prov  # noqa: F401
except ImportError:  # run from a checkout without an install
    sys.path.insert(0, str(REPO))

from bench_export import build_spans  # noqa: E402

from otel_prov import ProvSpanExporter  # noqa: E402
from otel_prov.model.terms import literal  # noqa: E402
from otel_prov.model.vocab import GRAPH_RETRIEVAL, TG  # noqa: E402
from otel_prov.read.reader import TraceReader  # noqa: E402
from otel_prov.stores import open_for_reading, open_for_writing, parse_store  # noqa: E402

TARGET_S = 60.0
"""Sealing 10,000 sessions takes less than this."""


def fill(store: Path, sessions: int) -> tuple[int, float, float]:
    """``sessions`` sessions exported into ``store``: (spans, seconds to make them, seconds to export)."""
    start = time.perf_counter()
    spans = build_spans(0, sessions_wanted=sessions)
    made = time.perf_counter() - start
    start = time.perf_counter()
    exporter = ProvSpanExporter(store=f"oxigraph:{store}")
    for i in range(0, len(spans), 512):
        exporter.export(spans[i:i + 512])
    exporter.shutdown()
    return len(spans), made, time.perf_counter() - start


_RUN = """import sys
from otel_prov.cli import main
code = main(sys.argv[1:])
with open("/proc/self/status") as status:
    peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
sys.stderr.write(f"\\nVmHWM {peak}\\n")
sys.exit(code)
"""
"""``otel-prov ARGV``, then its peak resident set on the last line of stderr (the kernel's ``VmHWM``:
this process's own, not counting the benchmark's memory it was forked from, which ``wait4`` would)."""


def run(*argv: str) -> tuple[int, float, float, str]:
    """``otel-prov ARGV`` in its own process: (exit status, seconds, peak RSS in MiB, stdout)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _RUN, *argv], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"otel-prov {' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")
    peak_kib = int(done.stderr.rsplit("VmHWM ", 1)[1])
    return done.returncode, elapsed, peak_kib / 1024, done.stdout


def tamper(store: Path) -> str:
    """Change one literal of the newest session (its question's text): its Question's IRI."""
    spec = parse_store(str(store))
    reader_store = open_for_reading(spec)
    try:
        reader = TraceReader(reader_store)
        session = reader.listed(page="LIMIT 1")[0]["q"]
        rows = reader.select(f"SELECT ?text WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ <{session}> "
                             "tg:query ?text } }")
    finally:
        reader_store.close()
    text, graph, query = rows[0]["text"], f"<{GRAPH_RETRIEVAL}>", f"<{TG.query}>"
    writer = open_for_writing(spec)
    try:
        writer.remove([(f"<{session}>", query, literal(text), graph)])
        writer.add(f"<{session}> {query} {literal(text + ' (edited)')} {graph} .\n".encode(), 1)
    finally:
        writer.close()
    return session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--workdir", type=Path, help="where the store goes (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the store afterwards")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-seal-", dir=args.workdir))
    store = workdir / "store"
    failures: list[str] = []
    try:
        spans, made, exported = fill(store, args.sessions)
        code, first_read, _, out = run("list", "--store", str(store), "--format", "json", "--limit", "1")
        quads = _count(store)
        print(f"store: {args.sessions:,} sessions, {spans:,} spans, {quads:,} quads "
              f"(spans made in {made:.1f} s, exported in {exported:.1f} s, first read {first_read:.1f} s)")
        key = workdir / "seal.key"
        key.write_bytes(os.urandom(32))
        steps: list[tuple[str, list[str]]] = [
            ("seal", ["seal"]), ("verify", ["verify"]), ("seal (again)", ["seal"]),
            ("seal --hmac-key", ["seal", "--hmac-key", str(key)]),
            ("verify --hmac-key", ["verify", "--hmac-key", str(key)]),
        ]
        results: dict[str, dict[str, Any]] = {}
        for label, command in steps:
            code, seconds, rss, out = run(*command, "--store", str(store), "--format", "json")
            report = json.loads(out)
            results[label] = {"code": code, "seconds": seconds, "rss": rss, "report": report}
            print(f"{label:22s} {seconds:6.1f} s  {args.sessions / seconds:7.0f} sessions/s  "
                  f"peak RSS {rss:5.0f} MiB  exit {code}  {report['counts']}")
        changed = tamper(store)
        code, seconds, rss, out = run("verify", "--store", str(store), "--format", "json")
        report = json.loads(out)
        print(f"{'verify (tampered)':22s} {seconds:6.1f} s  {args.sessions / seconds:7.0f} sessions/s  "
              f"peak RSS {rss:5.0f} MiB  exit {code}  {report['counts']}")
        sealed = results["seal"]["report"]["counts"]
        if sealed != {"sealed": args.sessions}:
            failures.append(f"the first seal: {sealed}")
        if results["verify"]["code"] != 0 or results["verify"]["report"]["counts"]["intact"] != args.sessions:
            failures.append(f"verify: {results['verify']['report']['counts']}")
        if results["seal (again)"]["report"]["counts"] != {"unchanged": args.sessions}:
            failures.append(f"the second seal: {results['seal (again)']['report']['counts']}")
        if results["verify --hmac-key"]["code"] != 0:
            failures.append(f"verify --hmac-key: {results['verify --hmac-key']['report']['counts']}")
        named = [s["session"] for s in report["sessions"] if s["status"] != "intact"]
        if code != 1 or named != [changed]:
            failures.append(f"the tampered store: exit {code}, named {named[:3]} (expected {changed})")
        seal_s = results["seal"]["seconds"] * 10_000 / args.sessions
        print(f"target: seal 10,000 sessions in < {TARGET_S:.0f} s: {seal_s:.1f} s "
              f"({'met' if seal_s < TARGET_S else 'MISSED'}; load average {os.getloadavg()[0]:.1f})")
    finally:
        if args.keep:
            print(f"kept: {store}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    for failure in failures:
        print(f"CHECK FAILED: {failure}")
    return 1 if failures else 0


def _count(store: Path) -> int:
    opened = open_for_reading(parse_store(str(store)))
    try:
        return opened.count(GRAPH_RETRIEVAL)
    finally:
        opened.close()


if __name__ == "__main__":
    sys.exit(main())
