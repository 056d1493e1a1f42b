"""The public surface is explicit: adding a name to ``otel_prov`` is a decision, not an accident."""

from __future__ import annotations

import types

import otel_prov


def test_public_names_are_locked() -> None:
    assert sorted(otel_prov.__all__) == [
        "AgentSession", "ConfigError", "DocRagSession", "GRAPH_RETRIEVAL", "GraphRagSession", "OTELPROV",
        "PROFILES", "ProvError", "ProvLogExporter", "ProvSpanExporter", "SEED", "STRICT", "Step",
        "StoreError", "StoreNotFound", "TG", "agent_session", "doc_rag_session", "graph_rag_session",
        "load_dataset", "spans_to_dataset",
    ]
    assert all(hasattr(otel_prov, name) for name in otel_prov.__all__)
    # Everything else at the top level is a submodule or ``from __future__ import annotations``.
    public = {n for n, v in vars(otel_prov).items()
              if not n.startswith("_") and not isinstance(v, types.ModuleType)} - {"annotations"}
    assert public == set(otel_prov.__all__)
