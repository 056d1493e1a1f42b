"""Stores for the web view's tests and screenshots, filled by real spans: the example flows, an
unfinished and a failed session, another collection, and a session whose texts are hostile."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_prov import ProvSpanExporter, agent_session
from otel_prov.web import runner
from tests.support.cli import Filled, fill

SCRIPT = "<script>window.__pwned = 1; alert('pwned')</script>"
ESC = "\x1b[31mred\x1b[0m"
LONG = "x" * 20_000
"""One 20,000-character line without a space (must wrap, not widen the page)."""
HOSTILE_QUESTION = f"Hostile {SCRIPT} question {ESC}"


@dataclass
class Recorded(Filled):
    """The CLI tests' sessions, and one whose texts are hostile."""

    hostile: str


def record(path: Path, profile: str = "seed") -> Recorded:
    """The CLI tests' store (tests.support.cli.fill), then a session whose texts are hostile."""
    hostile: list[str] = []

    def more(provider: TracerProvider) -> None:
        with agent_session(HOSTILE_QUESTION, tracer_provider=provider) as session:
            with session.iteration() as step:
                step.thought(f"thinking {SCRIPT} {ESC} \x00 done")
                step.action("search", {"q": SCRIPT, "long": LONG})
                step.observation(f"{LONG}\n{SCRIPT}")
            session.conclude(f"answer {SCRIPT}")
        hostile.append(str(session.explain_id))

    filled = fill(path, profile, more)
    return Recorded(**vars(filled), hostile=hostile[0])


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
