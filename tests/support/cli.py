"""The CLI tests' store and calls (tests/cli/, and the store and web tests that read the same store):
:func:`fill` runs the example flows into a store (another collection, an unfinished and a failed
session); :func:`cli` runs ``otel-prov`` in the test's process and captures what it printed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_prov import ProvSpanExporter
from otel_prov.cli import main
from otel_prov.examples.rag import RagResult, doc_rag, graph_rag
from otel_prov.examples.react_agent import (
    Act,
    AgentResult,
    Finish,
    OfflinePolicy,
    PolicyError,
    Turn,
    run_agent,
)
from otel_prov.read.reader import TraceReader
from otel_prov.stores import open_for_reading, parse_store


class StopAfter:
    """A policy that follows the offline one for ``n`` steps, then fails (a session left unfinished)."""

    name = "stops"

    def __init__(self, n: int) -> None:
        self.n, self.inner = n, OfflinePolicy()

    def decide(self, question: str, history: list[Turn]) -> Act | Finish:
        if len(history) >= self.n:
            raise PolicyError("the model went away")
        return self.inner.decide(question, history)


@dataclass
class Filled:
    path: Path
    agent: AgentResult
    graph: RagResult
    docs: RagResult
    other: RagResult
    """A DocRAG query in collection "other", recorded by the service :data:`OTHER_SERVICE` (the
    rest by :data:`SERVICE`)."""
    unfinished: str
    """The Question IRI of an agent session that stopped before answering (out of steps)."""
    failed: str
    """The Question IRI of an agent session whose policy failed in its second cycle."""


SERVICE, OTHER_SERVICE = "cli-tests", "spree-desk"


def fill(path: Path, profile: str = "seed", more: Callable[[TracerProvider], None] | None = None) -> Filled:
    """The example flows, another collection, an unfinished and a failed session (then ``more``)."""
    exporter = ProvSpanExporter(store=str(path), profile=profile)
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # a second service writing to the same store (not shut down: that would close the exporter)
    elsewhere = TracerProvider(resource=Resource.create({"service.name": OTHER_SERVICE}),
                               shutdown_on_exit=False)
    elsewhere.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        agent = run_agent(tracer_provider=provider)
        graph = graph_rag(tracer_provider=provider)
        docs = doc_rag(tracer_provider=provider)
        other = doc_rag("Where does the Spree flow?", tracer_provider=elsewhere, collection="other")
        run_agent("What is the population of Berlin?", tracer_provider=provider, max_steps=1)
        with pytest.raises(PolicyError):
            run_agent("What is the area of Italy?", policy=StopAfter(1), tracer_provider=provider)
        if more is not None:
            more(provider)
    finally:
        provider.shutdown()
    store = open_for_reading(parse_store(str(path)))
    try:
        rows = TraceReader(store).sessions()
    finally:
        store.close()
    by_question = {row.question: row.id for row in rows}
    return Filled(path, agent, graph, docs, other, by_question["What is the population of Berlin?"],
                  by_question["What is the area of Italy?"])


@dataclass
class Result:
    code: int
    out: str
    err: str


def cli(capsysbinary: pytest.CaptureFixture[bytes], *argv: str) -> Result:
    code = main(list(argv))
    captured = capsysbinary.readouterr()
    return Result(code, captured.out.decode("utf-8"), captured.err.decode("utf-8"))


def one_error_line(result: Result, *needles: str, code: int = 1) -> None:
    """One line on stderr, nothing on stdout, exit status ``code`` (1: an operation failed; 2: a
    usage error or a bad value)."""
    assert result.code == code, result
    assert result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("otel-prov: error: ")
    for needle in needles:
        assert needle in lines[0]
