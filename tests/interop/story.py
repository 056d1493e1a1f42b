"""The run every scenario plays: a ReAct agent with two tool calls and a final answer (the Agents SDK
scenarios start with a triage agent that hands off to it).  Free of any framework import, so the
scenarios, the scripted model and the tests all share it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

QUESTION = "What is the population density of the capital of France?"
FINAL_ANSWER = "About 19,949 people per km²."

THOUGHT_1 = "I need the capital first"
THOUGHT_2 = "Now compute density"
HANDOFF_THOUGHT = "This needs research; handing off to the researcher"
FINAL_THOUGHT = "I can answer now"

TOOL_1 = "knowledge_query"
TOOL_1_ARGS = {"question": "capital of France"}
TOOL_1_RESULT = "Paris"

TOOL_2 = "calculator"
TOOL_2_ARGS = {"expression": "2102650 / 105.4"}
TOOL_2_RESULT = "19949.2"

AGENT = "researcher"
TRIAGE = "triage"
WORKFLOW = "density-workflow"

TOOL_DESCRIPTIONS = {
    TOOL_1: "Answer a factual question from the knowledge base.",
    TOOL_2: "Evaluate an arithmetic expression.",
}


def knowledge_query(question: str) -> str:
    """Answer a factual question from the knowledge base."""
    return TOOL_1_RESULT if "capital" in question.lower() else "unknown"


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return TOOL_2_RESULT if expression.replace(" ", "") == "2102650/105.4" else "error"


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any]
    call_id: str


@dataclass
class Step:
    """One scripted model answer: optional thought text, then tool calls or a final text."""

    thought: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    final: str | None = None


def react_steps(handoff_tool: str | None = None) -> list[Step]:
    """The model's answers, in call order.  With ``handoff_tool`` a triage turn comes first."""
    steps = []
    if handoff_tool:
        steps.append(Step(HANDOFF_THOUGHT, [ToolCall(handoff_tool, {}, "call_handoff")]))
    steps += [
        Step(THOUGHT_1, [ToolCall(TOOL_1, dict(TOOL_1_ARGS), "call_1")]),
        Step(THOUGHT_2, [ToolCall(TOOL_2, dict(TOOL_2_ARGS), "call_2")]),
        Step(final=FINAL_ANSWER),
    ]
    return steps


# -- retrieval --------------------------------------------------------------------------------------

RAG_QUERY = "capital of France"
RAG_ANSWER = "Paris is the capital of France."
DOCUMENTS = [
    # (id, text, metadata)
    ("doc-paris", "Paris is the capital of France.", {"source": "kb://geo/france", "chunk_id": "chunk-1"}),
    ("doc-paris-pop", "Paris has 2,102,650 inhabitants on 105.4 km².",
     {"source": "kb://stats/paris", "chunk_id": "chunk-7"}),
    ("doc-lyon", "Lyon is a city in France.", {"source": "kb://geo/lyon", "chunk_id": "chunk-3"}),
]
RETRIEVED = ["doc-paris", "doc-lyon"]
"""What the keyword retriever returns for :data:`RAG_QUERY` (top 2), in order."""


def retrieve(query: str, k: int = 2) -> list[tuple[str, str, dict[str, Any], float]]:
    """The documents sharing most words with ``query``: (id, text, metadata, score), best first."""
    words = set(query.lower().split())
    scored = []
    for doc_id, text, metadata in DOCUMENTS:
        score = len(words & set(text.lower().rstrip(".").split())) / max(len(words), 1)
        scored.append((doc_id, text, metadata, round(score, 3)))
    scored.sort(key=lambda item: -item[3])
    return scored[:k]
