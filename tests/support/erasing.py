"""Sessions to erase, and looking for their words in a store's files.

The index's table files are compressed (LZ4, from RocksDB's third level down), and LZ4 replaces a
run of bytes seen shortly before by a reference to it: a sentence that shares its first words with
its neighbours ("thinking about keep 7") is not found by a byte search even where it is stored.  A
run of random letters and digits has nothing to refer back to and stays as it is, so each session
here carries a :func:`token` of its own, and a test looks for the tokens of the sessions that stay
too: finding those is what shows that the search can see into the files at all.  LZ4 may still cut a
token where four of its characters happen to repeat bytes shortly before it (about one token in a
hundred), never in three places at once: a token counts as found when any of its three pieces is."""

from __future__ import annotations

import os
import secrets
import string
from pathlib import Path

from opentelemetry.sdk.trace import Event, ReadableSpan

PIECE = 12


def token() -> str:
    """36 random letters and digits (three pieces of :data:`PIECE`)."""
    return "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(3 * PIECE))


def agent(question: str, collection: str = "default") -> list[ReadableSpan]:
    """Real SDK spans of one agent session asking ``question``, in ``collection``."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from otel_prov import agent_session

    memory, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with agent_session(question, collection=collection, tracer_provider=provider) as session:
        with session.iteration() as step:
            step.thought(f"thinking about {question}")
        session.conclude(f"the answer to {question}")
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    return spans


def files_holding(store: Path, word: str) -> list[str]:
    """Every file under ``store`` whose bytes hold a piece of the :func:`token` ``word``, relative to it."""
    needles = [word[k:k + PIECE].encode() for k in range(0, len(word), PIECE)]
    found = []
    for root, _, names in os.walk(store):
        for name in names:
            with open(os.path.join(root, name), "rb") as fh:
                data = fh.read()
                if any(needle in data for needle in needles):
                    found.append(os.path.relpath(os.path.join(root, name), store))
    return found


DAY_NS = 86400 * 10**9


def aged(spans: list[ReadableSpan], days: int) -> list[ReadableSpan]:
    """The same spans, every time ``days`` earlier."""
    shift = days * DAY_NS
    return [ReadableSpan(name=s.name, context=s.context, parent=s.parent, resource=s.resource,
                         attributes=s.attributes, kind=s.kind, status=s.status, links=s.links,
                         events=[Event(e.name, e.attributes, e.timestamp - shift) for e in s.events],
                         start_time=(s.start_time or 0) - shift, end_time=(s.end_time or 0) - shift,
                         instrumentation_scope=s.instrumentation_scope)
            for s in spans]
