"""OpenInference (Arize; the LangChain/LangGraph, smolagents, OpenAI Agents, LlamaIndex
instrumentations): ``openinference.span.kind`` marks every span (``AGENT``, ``CHAIN``, ``TOOL``,
``LLM``, ``RETRIEVER``, ``RERANKER``, ...); ``input.value`` / ``output.value`` hold a span's input and
output, ``tool.name`` a tool's name, ``llm.input_messages.{i}.message.*`` /
``llm.output_messages.{i}.message.*`` a model call's messages, ``retrieval.documents.{i}.document.*``
the retrieved documents.

- An unnamed ``AGENT`` span directly below an agent is one of its turns (LangGraph's model node); a
  named one (``agent.name`` / ``graph.node.id``: the OpenAI Agents SDK's agents) is an agent.
- Arguments are read from ``input.value`` only: OpenInference's GenAI conversion writes the tool's
  parameter *schema* into ``gen_ai.tool.call.arguments``.  smolagents' ``{"args", "kwargs"}`` envelope is
  unwrapped; a bare string (a one-argument LangChain tool) is named by the caller.
- A result that is a LangChain ``ToolMessage`` gives its content (and its tool call id).
- A hand-off (OpenAI Agents SDK) is a ``TOOL`` span named ``handoff to {agent}`` without ``tool.name``.
- Reasoning the flattened messages drop (LangChain ``{"type": "reasoning"}`` blocks) is read from the
  LLM span's ``output.value`` (its ``generations``).
- The ids of retrieved documents, which the LangChain instrumentation leaves out of
  ``retrieval.documents``, are read from the RETRIEVER's ``output.value``.

Keys the GenAI conversion adds (``OPENINFERENCE_ENABLE_GENAI_SEMCONV``) are read as fallbacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..flows import attr_text
from ..spans import SpanLike
from . import Agent, LLMCall, Retrieval, Role, ToolCall
from . import content as C
from .genai import (
    CONVERSATION_ID,
    INPUT_MESSAGES,
    INPUT_VALUE,
    OI_TOOL_NAME,
    OUTPUT_MESSAGES,
    OUTPUT_VALUE,
    RETRIEVAL_DOCUMENTS,
    RETRIEVAL_QUERY,
    TOOL_CALL_RESULT,
    TOOL_DEFINITIONS,
    GenAIDialect,
    chunk_ids,
    io_text,
    llm_call_of,
    string_attr,
)

SPAN_KIND = "openinference.span.kind"
AGENT_NAME = "agent.name"
GRAPH_NODE = "graph.node.id"
SESSION_ID = "session.id"
TOOL_PARAMETERS = "tool.parameters"
INPUT_PREFIX = "llm.input_messages."
OUTPUT_PREFIX = "llm.output_messages."
TOOLS_PREFIX = "llm.tools."
DOCUMENTS_PREFIX = "retrieval.documents."
HANDOFF_PREFIX = "handoff to "
RUN_SUFFIX = ".run"
"""smolagents names an agent's span ``{agent}.run``."""

_ROLES = {"AGENT": Role.AGENT, "CHAIN": Role.CHAIN, "TOOL": Role.TOOL, "LLM": Role.LLM,
          "RETRIEVER": Role.RETRIEVER, "RERANKER": Role.OTHER}


class OpenInferenceDialect(GenAIDialect):
    name = "openinference"
    keys = GenAIDialect.keys | {SPAN_KIND, AGENT_NAME, GRAPH_NODE, SESSION_ID, TOOL_PARAMETERS}
    prefixes = (INPUT_PREFIX, OUTPUT_PREFIX, TOOLS_PREFIX, DOCUMENTS_PREFIX, *GenAIDialect.prefixes)
    turns_below_agent = True

    def claims(self, span: SpanLike) -> bool:
        return string_attr(span, SPAN_KIND) is not None

    def role(self, span: SpanLike) -> Role:
        return _ROLES.get((string_attr(span, SPAN_KIND) or "").upper(), Role.OTHER)

    def _messages(self, span: SpanLike, output: bool, problems: list[str],
                  groups: C.FlatGroups | None = None) -> list[C.Message] | None:
        prefix = OUTPUT_PREFIX if output else INPUT_PREFIX
        flat = C.flat_messages(groups if groups is not None else span.attributes, prefix, tail=not output)
        if flat is not None:
            return flat
        key = OUTPUT_MESSAGES if output else INPUT_MESSAGES
        return self.messages(span, output, problems) if key in span.attributes else None

    def agent(self, span: SpanLike, problems: list[str]) -> Agent:
        attrs = span.attributes
        name = string_attr(span, AGENT_NAME) or string_attr(span, GRAPH_NODE)
        named = name is not None
        if name is None:
            name = span.name.removesuffix(RUN_SUFFIX) or None
        inputs = self._messages(span, False, problems)
        outputs = self._messages(span, True, problems)
        question = C.last_text(inputs, C.USER) if inputs else None
        if question is None:
            question = io_text(attrs.get(INPUT_VALUE), C.USER)
        answer = io_text(attrs.get(OUTPUT_VALUE), C.ASSISTANT)
        if answer is None and outputs:
            answer = C.last_text(outputs, C.ASSISTANT)
        captured = inputs is not None or outputs is not None or INPUT_VALUE in attrs or OUTPUT_VALUE in attrs
        return Agent(name, question, answer, named, captured)

    def tool_call(self, span: SpanLike, problems: list[str]) -> ToolCall:
        attrs = span.attributes
        name = string_attr(span, OI_TOOL_NAME)
        raw_args, raw_result = attrs.get(INPUT_VALUE), attrs.get(OUTPUT_VALUE, attrs.get(TOOL_CALL_RESULT))
        if name is None and span.name.startswith(HANDOFF_PREFIX):
            target = span.name[len(HANDOFF_PREFIX):].strip() or (string_attr(span, OUTPUT_VALUE) or "")
            return ToolCall("handoff", handoff=target, result=target or None)
        arguments, bare = C.arguments(raw_args)
        result, call_id = C.result_text(raw_result)
        return ToolCall(name or span.name, arguments, bare,
                        tuple(C.parameter_names(attrs.get(TOOL_PARAMETERS))), result, call_id, None,
                        raw_args is not None or raw_result is not None)

    def llm_call(self, span: SpanLike, problems: list[str]) -> LLMCall:
        attrs = span.attributes
        groups = C.flat_groups(attrs, (INPUT_PREFIX, OUTPUT_PREFIX, TOOLS_PREFIX))
        inputs = self._messages(span, False, problems, groups)
        outputs = self._messages(span, True, problems, groups)
        raw = attrs.get(OUTPUT_VALUE)
        generations = _generations(raw)
        if generations is not None:
            if outputs is None:
                outputs = generations
            elif not any(m.reasoning for m in outputs):
                reasoning = [r for m in generations for r in m.reasoning]
                if reasoning:
                    outputs = [*outputs, C.Message(C.ASSISTANT, reasoning=reasoning)]
        elif outputs is None and raw is not None:  # the output as a message, or as plain text
            outputs = C.messages_of(raw)
            if not outputs or not any(m.texts or m.reasoning or m.calls for m in outputs):
                outputs = [C.Message(C.ASSISTANT, texts=[attr_text(raw) or ""])]
        offered = TOOL_DEFINITIONS in attrs or bool(groups[TOOLS_PREFIX])
        conversation = string_attr(span, CONVERSATION_ID) or string_attr(span, SESSION_ID)
        return llm_call_of(inputs, outputs, conversation, offered)

    def retrieval(self, span: SpanLike, problems: list[str]) -> Retrieval:
        attrs = span.attributes
        query = string_attr(span, RETRIEVAL_QUERY) or io_text(attrs.get(INPUT_VALUE), C.USER)
        flat = C.flat_documents(attrs, DOCUMENTS_PREFIX)
        docs: list[Mapping[str, Any]] | None = list(flat) if flat is not None else None
        listed = C.documents(attrs.get(OUTPUT_VALUE))
        if docs is None:
            docs = listed if listed is not None else C.documents(attrs.get(RETRIEVAL_DOCUMENTS))
        elif listed is not None and len(listed) == len(docs):
            # The LangChain instrumentation leaves the document ids out of retrieval.documents.
            docs = [d if C.own_id(d) or not C.own_id(o) else {**d, "id": o["id"]}
                    for d, o in zip(docs, listed, strict=True)]
        return Retrieval(query, chunk_ids(span, docs))


def _generations(value: Any) -> list[C.Message] | None:
    """The messages of a LangChain LLM's ``output.value`` (``{"generations": [[{"message": ...}]]}``),
    read only when they hold reasoning (the flattened messages leave it out)."""
    if isinstance(value, str) and not (value.startswith('{"generations"') and '"reasoning' in value):
        return None  # not LangChain's, or no reasoning in it: not worth parsing
    parsed = C.loads(value)
    if not isinstance(parsed, Mapping) or not isinstance(parsed.get("generations"), (list, tuple)):
        return None
    found = []
    for batch in parsed["generations"]:
        for generation in batch if isinstance(batch, (list, tuple)) else ():
            if isinstance(generation, Mapping):
                message = C.to_message(generation.get("message"))
                if message is not None:
                    found.append(message)
    return found


OPENINFERENCE = OpenInferenceDialect()
