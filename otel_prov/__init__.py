"""otel-prov: OpenTelemetry spans of AI agents as a W3C PROV-O explainability graph.

>>> from otel_prov import ProvSpanExporter, agent_session   # doctest: +SKIP
"""

from __future__ import annotations

import typing as _typing

if _typing.TYPE_CHECKING:
    from .errors import ConfigError, ProvError, StoreError, StoreNotFound
    from .ingest.exporter import ProvLogExporter, ProvSpanExporter
    from .instrument import (
        AgentSession,
        DocRagSession,
        GraphRagSession,
        Step,
        agent_session,
        doc_rag_session,
        graph_rag_session,
    )
    from .model.profiles import PROFILES, SEED, STRICT
    from .model.vocab import GRAPH_RETRIEVAL, OTELPROV, TG
    from .read.datasets import load_dataset, spans_to_dataset


_WHERE = {
    "ConfigError": "errors", "ProvError": "errors", "StoreError": "errors", "StoreNotFound": "errors",
    "ProvSpanExporter": "ingest.exporter", "ProvLogExporter": "ingest.exporter",
    "AgentSession": "instrument", "DocRagSession": "instrument", "GraphRagSession": "instrument",
    "Step": "instrument", "agent_session": "instrument", "doc_rag_session": "instrument",
    "graph_rag_session": "instrument",
    "PROFILES": "model.profiles", "SEED": "model.profiles", "STRICT": "model.profiles",
    "GRAPH_RETRIEVAL": "model.vocab", "OTELPROV": "model.vocab", "TG": "model.vocab",
    "load_dataset": "read.datasets", "spans_to_dataset": "read.datasets",
}
"""Where each public name lives: imported on first use (PEP 562), so that ``import otel_prov`` and
the ``otel-prov`` command start fast (a Ctrl-C at start-up lands in code that handles it)."""


def __getattr__(name: str) -> _typing.Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"

__all__ = [
    "GRAPH_RETRIEVAL",
    "OTELPROV",
    "PROFILES",
    "SEED",
    "STRICT",
    "TG",
    "AgentSession",
    "ConfigError",
    "DocRagSession",
    "GraphRagSession",
    "ProvError",
    "ProvLogExporter",
    "ProvSpanExporter",
    "Step",
    "StoreError",
    "StoreNotFound",
    "agent_session",
    "doc_rag_session",
    "graph_rag_session",
    "load_dataset",
    "spans_to_dataset",
]
