"""otel-prov: OpenTelemetry spans of AI agents as a W3C PROV-O explainability graph.

>>> from otel_prov import ProvSpanExporter, agent_session   # doctest: +SKIP
"""

from __future__ import annotations

from ._dataset import load_dataset, spans_to_dataset
from ._emit import (
    AgentSession,
    DocRagSession,
    GraphRagSession,
    Step,
    agent_session,
    doc_rag_session,
    graph_rag_session,
)
from ._errors import ConfigError, ProvError, StoreError, StoreNotFound
from ._exporter import ProvSpanExporter
from ._mapping import PROFILES, SEED, STRICT
from ._vocab import GRAPH_RETRIEVAL, OTELPROV, TG

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
