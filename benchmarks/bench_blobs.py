"""Large values by reference: what storing them as blobs costs and saves.

Each run exports ``--sessions`` agent sessions (real SDK spans through ``ProvSpanExporter``, one
observation each of ``--kib`` KiB of random words, ``--distinct`` different values among them) into a
fresh on-disk store, timed from the first session until ``shutdown()`` returns: once with the values
inline (``blob_threshold=0``) and once as blobs (the default threshold, 64 KiB), in turn,
``--repeats`` times.  Outside the timing, each store is read back (its log folded) and measured: its
bytes on disk (the blob files apart) and, for the blobs run, the files under ``blobs/``, which must be
``--distinct``.  Then ``show --inline`` of one session, timed (a blob read back and hashed).

    python benchmarks/bench_blobs.py [--sessions 200] [--kib 100] [--distinct 20] [--repeats 3]
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402

from otel_prov import ProvSpanExporter, agent_session, load_dataset  # noqa: E402
from otel_prov.cli import main as cli  # noqa: E402


def _text(kib: int) -> str:
    return " ".join(secrets.token_hex(6) for _ in range(kib * 1024 // 13 + 1))[: kib * 1024]


def _export(store: Path, observations: list[str], threshold: int) -> tuple[float, str]:
    exporter = ProvSpanExporter(store=f"oxigraph:{store}", blob_threshold=threshold)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    start = time.perf_counter()
    session_id = ""
    for n, observation in enumerate(observations):
        with agent_session(f"question {n}?", tracer_provider=provider) as session:
            with session.iteration() as step:
                step.observation(observation)
            session.conclude("done")
        session_id = session.explain_id
    provider.shutdown()
    return time.perf_counter() - start, session_id


def _bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--kib", type=int, default=100)
    parser.add_argument("--distinct", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    values = [_text(args.kib) for _ in range(args.distinct)]
    observations = [values[i % args.distinct] for i in range(args.sessions)]
    times: dict[str, list[float]] = {"inline": [], "blobs": []}
    sizes: dict[str, tuple[int, int]] = {}
    work = Path(tempfile.mkdtemp(prefix="bench-blobs-"))
    try:
        for _ in range(args.repeats):
            for name, threshold in (("inline", 0), ("blobs", 64 * 1024)):
                store = work / name
                shutil.rmtree(store, ignore_errors=True)
                took, session_id = _export(store, observations, threshold)
                times[name].append(took)
                load_dataset(str(store))  # folds the log into the index
                blob_bytes = _bytes(store / "blobs") if (store / "blobs").exists() else 0
                sizes[name] = (_bytes(store) - blob_bytes, blob_bytes)
                if threshold:
                    files = [f for f in (store / "blobs").rglob("*") if f.is_file()]
                    assert len(files) == args.distinct, (len(files), args.distinct)
        start = time.perf_counter()
        sink = work / "shown.txt"
        assert cli(["show", session_id, "--store", str(work / "blobs"), "--inline", "-o", str(sink)]) == 0
        shown = time.perf_counter() - start
        assert values[(args.sessions - 1) % args.distinct][-50:] in sink.read_text()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.sessions} sessions, one {args.kib} KiB observation each, {args.distinct} distinct values; "
          f"{args.repeats} runs each, in turn")
    for name in ("inline", "blobs"):
        index, blobs = sizes[name]
        print(f"  {name:6}: median {statistics.median(times[name]):.2f} s, best {min(times[name]):.2f} s; "
              f"store {index / 1e6:.1f} MB" + (f" + blobs {blobs / 1e6:.1f} MB" if blobs else ""))
    print(f"  show --inline of one session: {shown * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
