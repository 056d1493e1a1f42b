"""Child processes for the many-processes tests (``python -m tests.children COMMAND ...``):

- ``export STORE OUT INDEX SESSIONS``: a real SDK pipeline with ``ProvSpanExporter`` on ``STORE``
  runs agent sessions; after every few it flushes and appends ``{"iri", "flushed"}`` lines (wall
  clock) to ``OUT/INDEX.flushed``; at the end ``OUT/INDEX.nq`` holds the same spans mapped in memory.
  Prints ``exported N`` after each session whose export() returned (a SimpleSpanProcessor).
- ``read-loop STORE OUT STOP``: until the file ``STOP`` exists, opens the store as every reader does
  and lists the questions; appends ``{"start", "end", "iris"}`` lines to ``OUT``.
- ``fold STORE BUDGET``: opens the store to read (which folds the log, in rounds of ``BUDGET`` bytes),
  printing ``folding`` first.
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
    from otel_prov.stores import indexer
    from otel_prov.stores.logstore import open_reader

    indexer.FOLD_BYTES = budget
    print("folding", flush=True)
    open_reader(Path(store)).close()
    print("folded", flush=True)


def main(argv: list[str]) -> None:
    command, args = argv[0], argv[1:]
    if command == "export":
        export(args[0], Path(args[1]), int(args[2]), int(args[3]))
    elif command == "read-loop":
        read_loop(args[0], Path(args[1]), Path(args[2]))
    elif command == "fold":
        fold(args[0], int(args[1]))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
