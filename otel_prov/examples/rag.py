"""The two retrieval flows of the examples: GraphRAG over the bundled knowledge graph and
document RAG over the bundled documents.

Retrieval is real (SPARQL / graph walk with rdflib; BM25 ranking); the "synthesis" is extractive
(the answer is assembled from what was selected, no language model), which keeps the examples
deterministic and offline.  Every step is an otel-prov span, so the exporter records the trace.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import TracerProvider

from .. import doc_rag_session, graph_rag_session
from .tools import Edge, best_sentence, document_index, knowledge_graph, tokens

GRAPH_RAG_QUESTION = "What is the capital of France and which river flows through it?"
DOC_RAG_QUESTION = "When was the Eiffel Tower built, and how tall is it?"


@dataclass
class RagResult:
    """What a RAG query returned, with the handles to its explanation."""

    question: str
    answer: str
    explain_id: str
    """The IRI of the Question node: ``otel-prov show <explain_id>``."""
    trace_id: str | None
    retrieved: list[Any] = field(default_factory=list)
    selected: list[Any] = field(default_factory=list)


def _rank_edges(edges: list[Edge], question: str) -> list[tuple[float, str, Edge]]:
    """Edges scored by the words they share with the question, each word weighted by its inverse
    frequency among the edges (a word every edge has says little); best first."""
    wanted = set(tokens(question))
    words = [set(tokens(e.text())) for e in edges]
    df = Counter(w for ws in words for w in ws)
    ranked = []
    for edge, ws in zip(edges, words, strict=False):
        shared = sorted(wanted & ws)
        if shared:
            score = round(sum(math.log(len(edges) / df[w]) + 0.1 for w in shared), 3)
            reason = "shares " + ", ".join(f"'{w}'" for w in shared) + f" with the question (score {score})"
            ranked.append((score, reason, edge))
    ranked.sort(key=lambda item: (-item[0], item[2].text()))
    return ranked


def graph_rag(question: str = GRAPH_RAG_QUESTION, *, tracer_provider: TracerProvider | None = None,
              collection: str = "default", hops: int = 2, keep: int = 3) -> RagResult:
    """Answer ``question`` from the knowledge graph: explore the edges within ``hops`` of the
    entities it names, focus on the ``keep`` edges that share most (rare) words with it, and
    synthesise an answer from those."""
    kg = knowledge_graph()
    with graph_rag_session(question, collection=collection, agent_name="graph-rag-example",
                           tracer_provider=tracer_provider) as session:
        edges = kg.edges_around(kg.entities_in(question), hops=hops)
        session.exploration([e.as_list() for e in edges])
        chosen = [(e, reason) for _, reason, e in _rank_edges(edges, question)[:keep]]
        session.focus([(e.as_list(), reason) for e, reason in chosen])
        if chosen:
            answer = "From the knowledge graph: " + "; ".join(e.text() for e, _ in chosen) + "."
        else:
            answer = "The knowledge graph has nothing on this question."
        session.synthesis(answer)
    return RagResult(question, answer, session.explain_id, session.trace_id,
                     [e.as_list() for e in edges], [e.as_list() for e, _ in chosen])


def doc_rag(question: str = DOC_RAG_QUESTION, *, tracer_provider: TracerProvider | None = None,
            collection: str = "default", k: int = 3) -> RagResult:
    """Answer ``question`` from the documents: rank paragraph chunks with BM25, keep the best
    ``k``, answer with the best-matching sentence of each of the two best (citing the chunk)."""
    index = document_index()
    with doc_rag_session(question, collection=collection, agent_name="doc-rag-example",
                         tracer_provider=tracer_provider) as session:
        hits = index.search(question, k=k)
        session.exploration([chunk.id for chunk, _ in hits])
        if hits:
            parts = [f"{best_sentence(chunk.text, question)} [{chunk.id}]" for chunk, _ in hits[:2]]
            answer = " ".join(parts)
        else:
            answer = "No document mentions this."
        session.synthesis(answer)
    return RagResult(question, answer, session.explain_id, session.trace_id,
                     [{"id": c.id, "score": s} for c, s in hits], [c.id for c, _ in hits[:2]])
