"""The span attribute contract of otel-prov.

Every key otel-prov reads from a span is a constant here.  Code that uses only the plain
OpenTelemetry API and sets these attributes produces exactly the same provenance graph as the
helpers in :mod:`otel_prov` (see ``docs/attributes.md`` for the full contract).

All our own keys live under one namespace, ``otel_prov.``.  Standard OpenTelemetry GenAI keys
(``gen_ai.*``) and OpenInference keys are listed at the end; they are read for traces that carry
none of ours.

This module has no dependencies and may be imported by anyone.
"""

from __future__ import annotations

NAMESPACE = "otel_prov."

# -- which node a span stands for -------------------------------------------------------------
FLOW = "otel_prov.flow"
"""The flow a span belongs to: one of :data:`FLOWS`. Required on every otel-prov span."""
STEP = "otel_prov.step"
"""What the span stands for within its flow: one of :data:`STEPS`. Required on every otel-prov span."""

FLOW_AGENT = "agent"
FLOW_GRAPH_RAG = "graphrag"
FLOW_DOC_RAG = "docrag"
FLOWS = (FLOW_AGENT, FLOW_GRAPH_RAG, FLOW_DOC_RAG)

STEP_SESSION = "session"
"""The session's root span: the Question (and, for an agent, the Conclusion once answered)."""
STEP_QUESTION = "question"
"""An instant span at the session's start (same start time as the root) so the Question is stored
before the session ends. Optional: the root span alone gives the same Question."""
STEP_ANALYSIS = "analysis"
"""One think/act/observe cycle of an agent (needs :data:`ITERATION`)."""
STEP_TOOL = "tool"
"""A tool execution inside an analysis step; opaque: it adds nothing to the seed graph."""
STEP_CONCLUSION = "conclusion"
"""An agent's final answer, when it is recorded on a span of its own rather than on the root."""
STEP_EXPLORATION = "exploration"
STEP_FOCUS = "focus"
STEP_SYNTHESIS = "synthesis"
STEP_APPROVAL = "approval"
"""A person approving or rejecting a step or an answer: an instant span (its time is the decision's),
with :data:`APPROVAL_OF`, :data:`APPROVAL_DECISION` and :data:`APPROVAL_BY`."""
STEPS = (
    STEP_SESSION,
    STEP_QUESTION,
    STEP_ANALYSIS,
    STEP_TOOL,
    STEP_CONCLUSION,
    STEP_EXPLORATION,
    STEP_FOCUS,
    STEP_SYNTHESIS,
    STEP_APPROVAL,
)

# -- identity ---------------------------------------------------------------------------------
SESSION_ID = "otel_prov.session.id"
"""The session's ``{uuid}``.  Absent: the trace id, formatted as a UUID."""
COLLECTION = "otel_prov.collection"
"""The collection the session belongs to (default ``"default"``); recorded on the Question."""
DERIVED_FROM = "otel_prov.derived_from"
"""On a session span: the IRI of the step that started this session (a RAG query run by an agent's
tool).  The Question is then a sub-trace, ``prov:wasDerivedFrom`` that step."""
INFORMED_BY = "otel_prov.informed_by"
"""On an analysis span, or a session or conclusion span with the answer: the IRIs (a string array)
of the earlier steps whose results this step's model call was given (``otelprov:informedBy``;
strict: also its activity ``prov:wasInformedBy`` theirs).  The framework mapping sets it from tool
call ids; docs/model.md, "Causal edges"."""
EXPLAIN_ID = "otel_prov.explain_id"
"""Written by the helpers on the root span: the IRI of the Question, for "explain this answer".
Informational: the mapping never reads it."""

# -- content ------------------------------------------------------------------------------------
QUESTION = "otel_prov.question"
"""The user's question (``tg:query``), on session and question spans."""
ITERATION = "otel_prov.iteration"
"""On an analysis span: its number, 1, 2, ...  On a session or conclusion span: the number of the
last analysis before the conclusion (0 when there was none)."""
THOUGHT = "otel_prov.thought"
ACTION = "otel_prov.action"
"""The tool name chosen in this cycle."""
ARGUMENTS = "otel_prov.arguments"
"""The tool arguments as JSON text."""
OBSERVATION = "otel_prov.observation"
ANSWER = "otel_prov.answer"
"""The agent's final answer (``tg:answer``)."""
EDGE_COUNT = "otel_prov.edge_count"
"""GraphRAG exploration: how many edges were retrieved."""
EDGES = "otel_prov.edges"
"""GraphRAG exploration: the retrieved edges, JSON ``[[s, p, o], ...]`` (for Jaeger and the CLI;
the seed graph records only the count)."""
SELECTED_EDGES = "otel_prov.selected_edges"
"""GraphRAG focus: JSON ``[{"edge": [s, p, o], "reasoning": "..."}, ...]``."""
CHUNK_IDS = "otel_prov.chunk_ids"
"""DocRAG exploration: the retrieved chunk ids, a string array.  DocRAG focus: the chunks selected
(reranked) from them."""
CHUNK_SCORES = "otel_prov.chunk_scores"
"""DocRAG exploration or focus: each chunk's score, a number array in the order of :data:`CHUNK_IDS`
(optional)."""
FROM_FOCUS = "otel_prov.from_focus"
"""DocRAG synthesis: true when the session selected chunks (a focus span): the Synthesis derives from
the Focus, else from the Exploration."""
CONTENT = "otel_prov.content"
"""The synthesised answer of a RAG flow (``tg:content``)."""

# -- a person's approval (on an approval span) ------------------------------------------------------
APPROVAL_OF = "otel_prov.approval.of"
"""The IRI of the node approved or rejected: a step's Analysis, the Conclusion, a Synthesis (required)."""
APPROVAL_DECISION = "otel_prov.approval.decision"
"""One of :data:`DECISIONS` (required: any other value and the span is not mapped)."""
APPROVAL_BY = "otel_prov.approval.by"
"""Who decided: a person's id or name (``prov:Person``, ``urn:otel-prov:person:{by}``)."""
APPROVAL_ROLE = "otel_prov.approval.role"
"""The role they decided in (``prov:hadRole``; default :data:`DEFAULT_APPROVAL_ROLE`)."""
APPROVAL_COMMENT = "otel_prov.approval.comment"
"""Why, in their words (``rdfs:comment``; optional)."""
DECISION_APPROVED = "approved"
DECISION_REJECTED = "rejected"
DECISIONS = (DECISION_APPROVED, DECISION_REJECTED)
DEFAULT_APPROVAL_ROLE = "approver"

# -- what a step cost (optional; read on analysis and conclusion spans) -------------------------------
LLM_DURATION_MS = "otel_prov.llm.duration_ms"
"""How long the model call of this step took, in milliseconds (``tg:llmDurationMs``)."""
TOOL_DURATION_MS = "otel_prov.tool.duration_ms"
"""How long the tool call of this step took, in milliseconds (``tg:toolDurationMs``)."""

# -- standard keys that are read too --------------------------------------------------------------
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_AGENT_NAME = "gen_ai.agent.name"
GEN_AI_CONVERSATION_ID = "gen_ai.conversation.id"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
"""On an analysis span: the id the model gave the tool call (``otelprov:toolCallId``)."""
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
GEN_AI_DATA_SOURCE_ID = "gen_ai.data_source.id"
GEN_AI_RETRIEVAL_QUERY_TEXT = "gen_ai.retrieval.query.text"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
"""On an analysis or conclusion span: the model of its model call (``tg:llmModel``)."""
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
"""The model's provider (``otelprov:modelProvider``)."""
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
"""Input tokens of the step's model call (``tg:inToken``)."""
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
"""Output tokens (``tg:outToken``)."""
GEN_AI_USAGE_REASONING_TOKENS = "gen_ai.usage.reasoning.output_tokens"
"""Of the output tokens, the reasoning ones (``otelprov:reasoningTokens``)."""
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
"""Why the model stopped (``otelprov:finishReason``; the first, for an array)."""
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"
TOOL_NAME = "tool.name"
