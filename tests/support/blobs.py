"""Sessions with large values, made by real SDK spans through the exporter (tests/ingest/test_blobs.py,
tests/cli/test_blobs.py)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import rdflib
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_prov import ProvSpanExporter, agent_session


def payload(kib: int = 100) -> tuple[str, str]:
    """A text of ``kib`` KiB of random words (found by a byte search wherever stored), and a word
    from past its preview."""
    words = [secrets.token_hex(6) for _ in range(kib * 1024 // 13 + 1)]
    text = " ".join(words)[: kib * 1024]
    return text, words[len(words) // 2]


def run(store: str | rdflib.Dataset, observations: list[str], **options: Any) -> list[str]:
    """One agent session per observation, through a real SDK provider and the exporter (shut down
    after): the sessions' IRIs."""
    exporter = ProvSpanExporter(store=store, **options)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    ids: list[str] = []
    for n, observation in enumerate(observations):
        with agent_session(f"question {n}?", tracer_provider=provider) as session:
            with session.iteration() as step:
                step.thought("read the big file")
                step.action("read-file", {"path": "/data/big.txt"})
                step.observation(observation)
            session.conclude("done")
        ids.append(session.explain_id)
    provider.shutdown()
    return ids


def blob_files(directory: Path) -> list[Path]:
    return sorted(p for p in (directory / "sha256").rglob("*") if p.is_file())


def big_spans(observations: list[str]) -> list:
    """Agent sessions with these observations, as finished SDK spans (to send to ``serve``)."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for n, observation in enumerate(observations):
        with agent_session(f"question {n}?", tracer_provider=provider) as session:
            with session.iteration() as step:
                step.observation(observation)
            session.conclude("done")
    return list(memory.get_finished_spans())
