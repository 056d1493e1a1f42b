"""Every IRI otel-prov writes, from closed namespaces (a typo raises instead of minting a wrong IRI)."""

from __future__ import annotations

from rdflib import RDF, RDFS, XSD
from rdflib.namespace import PROV, ClosedNamespace

TG_TERMS = (
        "Question", "AgentQuestion", "GraphRagQuestion", "DocRagQuestion",
        "Analysis", "Conclusion", "Exploration", "Focus", "Synthesis", "EdgeSelection",
        "query", "thought", "action", "arguments", "observation", "answer",
        "edgeCount", "selectedEdge", "edge", "reasoning", "chunkCount", "selectedChunk", "content",
)
TG = ClosedNamespace("https://trustgraph.ai/ns/", list(TG_TERMS))
"""TrustGraph's vocabulary (the subset the seed model uses)."""

OTELPROV = ClosedNamespace(
    "https://w3id.org/otel-prov/ns#",
    ["traceId", "spanId", "collection", "statusMessage"],
)
"""otel-prov's own predicates (documented in docs/model.md)."""

OTELPROV_NS = str(OTELPROV)

GRAPH_RETRIEVAL = "urn:graph:retrieval"
"""The explainability graph every quad goes to."""

PREFIXES = {
    "tg": str(TG),
    "prov": str(PROV),
    "otelprov": OTELPROV_NS,
    "rdf": str(RDF),
    "rdfs": str(RDFS),
    "xsd": str(XSD),
}

# IRI prefixes of the seed model (TrustGraph's patterns).
AGENT_PREFIX = "urn:trustgraph:agent:"
GRAPH_RAG_PREFIX = "urn:trustgraph:question:"
DOC_RAG_PREFIX = "urn:trustgraph:docrag:"
EXPLORATION_PREFIX = "urn:trustgraph:prov:exploration:"
FOCUS_PREFIX = "urn:trustgraph:prov:focus:"
SYNTHESIS_PREFIX = "urn:trustgraph:prov:synthesis:"
EDGE_PREFIX = "urn:trustgraph:prov:edge:"
SOFTWARE_AGENT_PREFIX = "urn:otel-prov:agent:"
