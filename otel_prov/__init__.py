"""otel-prov: OpenTelemetry spans of AI agents as a W3C PROV-O explainability graph.

>>> from otel_prov import ProvSpanExporter, agent_session   # doctest: +SKIP
"""

from __future__ import annotations

from .errors import ConfigError, ProvError, StoreError, StoreNotFound
from .ingest.exporter import ProvSpanExporter
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
