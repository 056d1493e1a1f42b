"""Child processes for the many-processes tests (``python -m tests.support.children COMMAND ...``):

- ``export STORE OUT INDEX SESSIONS``: a real SDK pipeline with ``ProvSpanExporter`` on ``STORE``
  runs agent sessions; after every few it flushes and appends ``{"iri", "flushed"}`` lines (wall
  clock) to ``OUT/INDEX.flushed``; at the end ``OUT/INDEX.nq`` holds the same spans mapped in memory.
  Prints ``exported N`` after each session whose export() returned (a SimpleSpanProcessor).
- ``read-loop STORE OUT STOP``: until the file ``STOP`` exists, opens the store as every reader does
  and lists the questions; appends ``{"start", "end", "iris"}`` lines to ``OUT``.
- ``fold STORE BUDGET``: folds the log into the index as the indexing process does (in rounds of
  ``BUDGET`` bytes), printing ``folding`` first.
- ``stuck-export STORE GO``: an exporter appends a few sessions (not synced: no group commit), prints
  ``ready``, waits for the file ``GO`` (the test has frozen the store's file system), starts an
  application thread that exports (it blocks in the kernel), then times ``force_flush(1000)`` and
  ``shutdown(timeout_millis=2000)`` and prints each as one JSON line.
- ``fold-limited STORE NOFILE``: folds the log into the index as the indexing process does, with at
  most ``NOFILE`` open descriptors.
- ``fd-limited-export STORE NOFILE``: an exporter (a segment per append) with at most ``NOFILE``
  descriptors exports; then every free descriptor is taken and it exports again; then they are
  given back and it exports again.  Prints ``{"iri", "result"}`` JSON lines.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

PARAGRAPH = ("The user asks about the population density of the capital, so I first need the capital "
             "itself, then its population and its area; the knowledge base has the first two, and the "
             "area comes from the document search, which cites the city's own statistics office. ")


def export(store: str, out: Path, index: int, sessions: int) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_prov import ProvSpanExporter, agent_session
    from otel_prov.mapping.mapper import TraceMapper
    from otel_prov.mapping.spans import from_sdk
    from otel_prov.model.profiles import SEED
    from otel_prov.model.quads import nquads

    exporter = ProvSpanExporter(store=store)
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    pending: list[str] = []
    with open(out / f"{index}.flushed", "a") as flushed:
        for i in range(sessions):
            with agent_session(f"process {index} question {i}", tracer_provider=provider) as session:
                for _ in range(2):
                    with session.iteration() as step:
                        step.thought(PARAGRAPH)
                        step.action("lookup", {"q": i})
                        step.observation(PARAGRAPH * 2)
                session.conclude(f"answer {index}/{i}")
            pending.append(session.explain_id)
            print(f"exported {session.explain_id}", flush=True)
            if len(pending) == 4:
                assert exporter.force_flush()
                now = time.time()
                for iri in pending:
                    flushed.write(json.dumps({"iri": iri, "flushed": now}) + "\n")
                flushed.flush()
                pending.clear()
            time.sleep(0.01)
    provider.shutdown()
    spans = [from_sdk(s) for s in memory.get_finished_spans()]
    (out / f"{index}.nq").write_bytes(nquads(TraceMapper(SEED).map(spans).add))


def read_loop(store: str, out: Path, stop: Path) -> None:
    from otel_prov.stores import open_for_reading, parse_store

    spec = parse_store(store)
    with open(out, "a") as fh:
        while not stop.exists():
            start = time.time()
            opened = open_for_reading(spec)
            try:
                rows = opened.select("SELECT ?q WHERE { GRAPH ?g { ?q a tg:Question } }")
            finally:
                opened.close()
            fh.write(json.dumps({"start": start, "end": time.time(),
                                 "iris": sorted(r["q"].value for r in rows)}) + "\n")
            fh.flush()
            time.sleep(0.05)


def fold(store: str, budget: int) -> None:
    from otel_prov.stores import indexer, logstore

    indexer.FOLD_BYTES = budget
    print("folding", flush=True)
    logstore.fold(Path(store))
    print("folded", flush=True)


def _sessions(provider: object, prefix: str, n: int) -> list[str]:
    from otel_prov import agent_session

    iris = []
    for i in range(n):
        with agent_session(f"{prefix} {i}", tracer_provider=provider) as session:  # type: ignore[arg-type]
            with session.iteration() as step:
                step.thought(PARAGRAPH)
                step.action("lookup", {"q": i})
                step.observation(PARAGRAPH)
            session.conclude(f"answer {prefix} {i}")
        iris.append(session.explain_id)
    return iris


def stuck_export(store: str, go: Path) -> None:
    import os
    import threading

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from otel_prov import ProvSpanExporter
    from otel_prov.stores import segments

    segments.SYNC_INTERVAL = 3600.0  # nothing is synced behind the test's back
    exporter = ProvSpanExporter(store=store)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _sessions(provider, "before", 3)
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.02)
    app = threading.Thread(target=_sessions, args=(provider, "frozen", 3), daemon=True)
    app.start()
    time.sleep(0.5)  # the application thread is in export(), blocked writing to the frozen disk
    began = time.monotonic()
    flushed = exporter.force_flush(timeout_millis=1000)
    print(json.dumps({"force_flush": flushed, "seconds": time.monotonic() - began}), flush=True)
    began = time.monotonic()
    exporter.shutdown(timeout_millis=2000)  # type: ignore[call-arg]
    print(json.dumps({"shutdown": True, "seconds": time.monotonic() - began}), flush=True)
    print("done", flush=True)
    os._exit(0)  # the application thread stays blocked in the kernel until the test thaws the disk


def fold_limited(store: str, nofile: int) -> None:
    import resource

    from otel_prov.stores import segments
    from otel_prov.stores.indexer import Indexer, IndexLock
    from otel_prov.stores.oxigraph import OxigraphStore

    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    lock = IndexLock(segments.segments_dir(Path(store)))
    assert lock.acquire()
    index = OxigraphStore(Path(store))
    try:
        print(json.dumps({"folded": Indexer(Path(store), index).fold_all()}), flush=True)
    finally:
        index.close()
        lock.release()


def fd_limited_export(store: str, nofile: int) -> None:
    import os
    import resource

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult

    from otel_prov import ProvSpanExporter
    from otel_prov.stores import segments

    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    segments.SEGMENT_BYTES = 1  # every append after a segment's first needs a new segment (a new fd)
    results: list[SpanExportResult] = []

    class Recording(ProvSpanExporter):
        def export(self, spans):  # type: ignore[no-untyped-def]
            result = super().export(spans)
            results.append(result)
            return result

    exporter = Recording(store=store)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def run(prefix: str, n: int) -> None:
        for i in range(n):
            results.clear()
            (iri,) = _sessions(provider, f"{prefix} {i}", 1)
            ok = bool(results) and all(r == SpanExportResult.SUCCESS for r in results)
            print(json.dumps({"iri": iri, "phase": prefix, "success": ok}), flush=True)

    run("before", 3)
    held = []
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    run("exhausted", 3)
    for fd in held:
        os.close(fd)
    run("after", 3)
    provider.shutdown()
    print("done", flush=True)


def main(argv: list[str]) -> None:
    command, args = argv[0], argv[1:]
    if command == "export":
        export(args[0], Path(args[1]), int(args[2]), int(args[3]))
    elif command == "read-loop":
        read_loop(args[0], Path(args[1]), Path(args[2]))
    elif command == "fold":
        fold(args[0], int(args[1]))
    elif command == "stuck-export":
        stuck_export(args[0], Path(args[1]))
    elif command == "fold-limited":
        fold_limited(args[0], int(args[1]))
    elif command == "fd-limited-export":
        fd_limited_export(args[0], int(args[1]))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
