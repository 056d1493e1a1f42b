"""Stores for the web view's tests and screenshots, filled by real spans: the example flows, an
unfinished and a failed session, another collection, and a session whose texts are hostile."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_prov import ProvSpanExporter, agent_session
from otel_prov.examples.rag import RagResult, doc_rag, graph_rag
from otel_prov.examples.react_agent import AgentResult, PolicyError, run_agent
from otel_prov.web import runner

SCRIPT = "<script>window.__pwned = 1; alert('pwned')</script>"
ESC = "\x1b[31mred\x1b[0m"
LONG = "x" * 20_000
"""One 20,000-character line without a space (must wrap, not widen the page)."""
HOSTILE_QUESTION = f"Hostile {SCRIPT} question {ESC}"


@dataclass
class Recorded:
    path: Path
    agent: AgentResult
    graph: RagResult
    docs: RagResult
    other: RagResult
    """A DocRAG query in collection "other"."""
    unfinished: str
    failed: str
    hostile: str


class _FailAt:
    """A policy that fails after ``n`` steps of the offline one (a failed session)."""

    name = "fails"

    def __init__(self, n: int) -> None:
        from otel_prov.examples.react_agent import OfflinePolicy

        self.n, self.inner = n, OfflinePolicy()

    def decide(self, question: str, history: list) -> object:  # type: ignore[type-arg]
        if len(history) >= self.n:
            raise PolicyError("the model went away")
        return self.inner.decide(question, history)


def record(path: Path, profile: str = "seed") -> Recorded:
    exporter = ProvSpanExporter(store=str(path), profile=profile)
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-prov-test"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        agent = run_agent(tracer_provider=provider)
        graph = graph_rag(tracer_provider=provider)
        docs = doc_rag(tracer_provider=provider)
        other = doc_rag("Where does the Spree flow?", tracer_provider=provider, collection="other")
        unfinished = run_agent("What is the population of Berlin?", tracer_provider=provider, max_steps=1)
        try:
            run_agent("What is the area of Italy?", policy=_FailAt(1), tracer_provider=provider)  # type: ignore[arg-type]
        except PolicyError:
            pass
        with agent_session(HOSTILE_QUESTION, tracer_provider=provider) as session:
            with session.iteration() as step:
                step.thought(f"thinking {SCRIPT} {ESC} \x00 done")
                step.action("search", {"q": SCRIPT, "long": LONG})
                step.observation(f"{LONG}\n{SCRIPT}")
            session.conclude(f"answer {SCRIPT}")
    finally:
        provider.shutdown()
    return Recorded(path, agent, graph, docs, other, str(unfinished.explain_id), _question(path, "Italy"),
                    str(session.explain_id))


def _question(path: Path, word: str) -> str:
    from otel_prov.read.reader import TraceReader
    from otel_prov.stores import open_for_reading, parse_store

    store = open_for_reading(parse_store(str(path)))
    try:
        return next(r.id for r in TraceReader(store).sessions() if word in r.question)
    finally:
        store.close()


def long_session(path: Path, steps: int) -> str:
    """An agent session of ``steps`` steps (each with a thought, an action and an observation)."""
    exporter = ProvSpanExporter(store=str(path))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        with agent_session(f"A long session of {steps} steps", tracer_provider=provider) as session:
            for i in range(steps):
                with session.iteration() as step:
                    step.thought(f"step {i}: add one")
                    step.action("calculator", {"expression": f"{i} + 1"})
                    step.observation(str(i + 1))
            session.conclude(str(steps))
    finally:
        provider.shutdown()
    return str(session.explain_id)


def serve(config: object) -> runner.Running:
    from otel_prov.settings import UiSettings
    from otel_prov.web import create_app

    assert isinstance(config, UiSettings)
    return runner.start(create_app(config), config.host, config.port)
