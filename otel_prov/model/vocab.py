"""Every IRI otel-prov writes, from closed namespaces (a typo raises instead of minting a wrong IRI),
and each term the mapping writes as N-Triples text (computed once: an attribute of a closed namespace
is built on every access)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from rdflib import RDF, RDFS, XSD
from rdflib.namespace import PROV, ClosedNamespace

TG_TERMS = (
        "Question", "AgentQuestion", "GraphRagQuestion", "DocRagQuestion",
        "Analysis", "Conclusion", "Exploration", "Focus", "Synthesis", "EdgeSelection",
        "query", "thought", "action", "arguments", "observation", "answer",
        "edgeCount", "selectedEdge", "edge", "reasoning", "chunkCount", "selectedChunk", "content",
        # TrustGraph's 2026 step metadata and chunk selections (docs/model.md)
        "llmModel", "inToken", "outToken", "llmDurationMs", "toolDurationMs", "toolError", "score",
        "ChunkSelection",
        # the trustgraph profile's Thought entities and documents (docs/model.md)
        "Thought", "Reflection", "document",
)
TG = ClosedNamespace("https://trustgraph.ai/ns/", list(TG_TERMS))
"""TrustGraph's vocabulary (the subset the seed model uses)."""

RAW_TERMS = {"query": "rawQuery", "thought": "rawThought", "arguments": "rawArguments",
             "observation": "rawObservation", "answer": "rawAnswer", "content": "rawContent"}
"""Per content property, the predicate that keeps a value recorded but not the plain thing
(``otelprov:notCaptured`` on the node says the property has no value; no reader shows these)."""

OTELPROV = ClosedNamespace(
    "https://w3id.org/otel-prov/ns#",
    ["traceId", "spanId", "collection", "statusMessage", "agentName", "serviceName", "notCaptured",
     "redacted",
     *RAW_TERMS.values(),
     "startTime", "endTime", "modelProvider", "reasoningTokens", "finishReason",
     "chunkSelection", "rank",
     # causal edges beside the chain (docs/model.md, "Causal edges")
     "informedBy", "toolCallId", "linkedSpan",
     "Evaluation", "evaluationName", "evaluationScore", "evaluationLabel", "evaluationExplanation",
     # a person's approval or rejection of a step or an answer (docs/model.md)
     "Approval", "decision",
     # what the content policy did to a node's values (docs/privacy.md)
     "contentPolicy", "truncatedFrom", "redactions",
     # a large value stored by reference, as a content-addressed blob (docs/store.md)
     "Blob", "blob", "byReference", "sha256", "byteSize", "mediaType", "preview",
     # otel-prov seal's manifest (docs/audit.md)
     "Seal", "sealedSession", "digest", "digestAlgorithm", "quadCount", "sessionCollection", "sessionTime",
     "hmac", "signature", "publicKey"],
)
"""otel-prov's own predicates (documented in docs/model.md)."""

OTELPROV_NS = str(OTELPROV)

GRAPH_RETRIEVAL = "urn:graph:retrieval"
"""The explainability graph every quad goes to."""

GRAPH_SEALS = "urn:graph:seals"
"""Where ``otel-prov seal`` records its seals of the sessions' graphs (never in the explainability
graph: sealing does not change what it sealed)."""

PREFIXES = {
    "tg": str(TG),
    "prov": str(PROV),
    "otelprov": OTELPROV_NS,
    "rdf": str(RDF),
    "rdfs": str(RDFS),
    "xsd": str(XSD),
}


def _nt(term: Any) -> str:
    return "<" + str(term) + ">"


NT = SimpleNamespace(
    graph=_nt(GRAPH_RETRIEVAL),
    type=_nt(RDF.type), label=_nt(RDFS.label),
    Statement=_nt(RDF.Statement), subject=_nt(RDF.subject), predicate=_nt(RDF.predicate),
    object=_nt(RDF.object),
    Activity=_nt(PROV.Activity), Entity=_nt(PROV.Entity), Agent=_nt(PROV.Agent),
    SoftwareAgent=_nt(PROV.SoftwareAgent),
    wasDerivedFrom=_nt(PROV.wasDerivedFrom), wasGeneratedBy=_nt(PROV.wasGeneratedBy), used=_nt(PROV.used),
    wasAssociatedWith=_nt(PROV.wasAssociatedWith), actedOnBehalfOf=_nt(PROV.actedOnBehalfOf),
    startedAtTime=_nt(PROV.startedAtTime), endedAtTime=_nt(PROV.endedAtTime),
    generatedAtTime=_nt(PROV.generatedAtTime),
    Person=_nt(PROV.Person), Association=_nt(PROV.Association), Role=_nt(PROV.Role),
    qualifiedAssociation=_nt(PROV.qualifiedAssociation), agent=_nt(PROV.agent), hadRole=_nt(PROV.hadRole),
    comment=_nt(RDFS.comment),
    traceId=_nt(OTELPROV.traceId), spanId=_nt(OTELPROV.spanId), collection=_nt(OTELPROV.collection),
    statusMessage=_nt(OTELPROV.statusMessage), agentName=_nt(OTELPROV.agentName),
    serviceName=_nt(OTELPROV.serviceName),
    notCaptured=_nt(OTELPROV.notCaptured), redacted=_nt(OTELPROV.redacted),
    startTime=_nt(OTELPROV.startTime), endTime=_nt(OTELPROV.endTime),
    modelProvider=_nt(OTELPROV.modelProvider), reasoningTokens=_nt(OTELPROV.reasoningTokens),
    finishReason=_nt(OTELPROV.finishReason), chunkSelection=_nt(OTELPROV.chunkSelection),
    rank=_nt(OTELPROV.rank), informedBy=_nt(OTELPROV.informedBy), toolCallId=_nt(OTELPROV.toolCallId),
    linkedSpan=_nt(OTELPROV.linkedSpan), wasInformedBy=_nt(PROV.wasInformedBy),
    Evaluation=_nt(OTELPROV.Evaluation),
    evaluationName=_nt(OTELPROV.evaluationName), evaluationScore=_nt(OTELPROV.evaluationScore),
    evaluationLabel=_nt(OTELPROV.evaluationLabel),
    evaluationExplanation=_nt(OTELPROV.evaluationExplanation),
    Approval=_nt(OTELPROV.Approval), decision=_nt(OTELPROV.decision),
    contentPolicy=_nt(OTELPROV.contentPolicy), truncatedFrom=_nt(OTELPROV.truncatedFrom),
    redactions=_nt(OTELPROV.redactions),
    Blob=_nt(OTELPROV.Blob), blob=_nt(OTELPROV.blob), byReference=_nt(OTELPROV.byReference),
    sha256=_nt(OTELPROV.sha256), byteSize=_nt(OTELPROV.byteSize), mediaType=_nt(OTELPROV.mediaType),
    preview=_nt(OTELPROV.preview),
    **{f"raw_{prop}": _nt(getattr(OTELPROV, name)) for prop, name in RAW_TERMS.items()},
    **{f"tg_{name}": _nt(getattr(TG, name)) for name in TG_TERMS},
)
"""Every term the mapping writes, as N-Triples text: ``NT.type``, ``NT.wasDerivedFrom``, ``NT.tg_query``..."""
