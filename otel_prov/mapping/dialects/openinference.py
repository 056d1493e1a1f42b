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

from .. import values as V
from ..flows import attr_text
from ..spans import SpanLike
from . import Agent, LLMCall, Role, ToolCall
from . import content as C
from .genai import (
    CONVERSATION_ID,
    INPUT_VALUE,
    OI_AGENT_NAME,
    OI_SPAN_KIND,
    OI_TOOLS_PREFIX,
    OUTPUT_VALUE,
    SESSION_ID,
    TOOL_CALL_RESULT,
    TOOL_DEFINITIONS,
    GenAIDialect,
    first_plain,
    flat_groups_of,
    llm_call_of,
    meta_of,
    name_of,
    string_attr,
    transcript_of,
    with_results,
)

SPAN_KIND = OI_SPAN_KIND
AGENT_NAME = OI_AGENT_NAME
GRAPH_NODE = "graph.node.id"
TOOL_PARAMETERS = "tool.parameters"
CREW_TASKS = "crew_tasks"
"""OpenInference's CrewAI instrumentation: the crew's tasks, on its kickoff span."""
HANDOFF_PREFIX = "handoff to "
RUN_SUFFIX = ".run"
"""smolagents names an agent's span ``{agent}.run``."""

_ROLES = {"AGENT": Role.AGENT, "CHAIN": Role.CHAIN, "TOOL": Role.TOOL, "LLM": Role.LLM,
          "RETRIEVER": Role.RETRIEVER, "RERANKER": Role.RERANKER}


class OpenInferenceDialect(GenAIDialect):
    name = "openinference"
    keys = GenAIDialect.keys | {SPAN_KIND, AGENT_NAME, GRAPH_NODE, SESSION_ID, TOOL_PARAMETERS, CREW_TASKS}
    turns_below_agent = True

    def claims(self, span: SpanLike) -> bool:
        return string_attr(span, SPAN_KIND) is not None

    def role(self, span: SpanLike) -> Role:
        return _ROLES.get((string_attr(span, SPAN_KIND) or "").upper(), Role.OTHER)

    def agent(self, span: SpanLike, problems: list[str]) -> Agent:
        attrs = span.attributes
        name = string_attr(span, AGENT_NAME) or string_attr(span, GRAPH_NODE)
        named = name is not None
        if name is None:
            # smolagents names an agent's span ``{agent}.run``; LangGraph names its graph's span after
            # the graph; ``Class.method`` (LlamaIndex's ``FunctionAgent.run``) names no agent.
            name = name_of(span.name, (RUN_SUFFIX,) if self.role(span) is Role.AGENT else ())
        inputs = self.messages(span, False, problems)
        outputs = self.messages(span, True, problems)
        question = first_plain(V.QUERY, (C.last_text(inputs, C.USER) if inputs else None,
                                         attrs.get(INPUT_VALUE), _crew_task(attrs.get(CREW_TASKS))))
        answer = first_plain(V.ANSWER, (attrs.get(OUTPUT_VALUE),
                                        C.last_text(outputs, C.ASSISTANT) if outputs else None))
        captured = C.recorded(inputs) or C.recorded(outputs) or INPUT_VALUE in attrs or OUTPUT_VALUE in attrs
        return Agent(name, question, answer, named, captured, transcript_of(span))

    def argument_candidates(self, span: SpanLike) -> list[Any]:
        # gen_ai.tool.call.arguments, which OpenInference's GenAI conversion fills with the tool's
        # parameter schema, is not read; tool.parameters, a schema for most instrumentations, holds
        # the values for some (Agno's): read last, a schema is never plain arguments.
        return [span.attributes.get(INPUT_VALUE), span.attributes.get(TOOL_PARAMETERS)]

    def result_candidates(self, span: SpanLike) -> list[Any]:
        return [span.attributes.get(OUTPUT_VALUE), span.attributes.get(TOOL_CALL_RESULT)]

    def tool_call(self, span: SpanLike, problems: list[str]) -> ToolCall:
        found = super().tool_call(span, problems)
        if found.handoff is not None:
            return found
        parameters = tuple(C.parameter_names(span.attributes.get(TOOL_PARAMETERS)))
        return ToolCall(found.name, found.arguments, found.bare_argument, parameters, found.result,
                        found.call_id, None, found.captured)

    def llm_call(self, span: SpanLike, problems: list[str]) -> LLMCall:
        attrs = span.attributes
        groups = flat_groups_of(span)
        inputs = with_results(self.messages(span, False, problems, groups), attrs.get(INPUT_VALUE))
        outputs = self.messages(span, True, problems, groups)
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
        offered = TOOL_DEFINITIONS in attrs or bool(groups[OI_TOOLS_PREFIX])
        conversation = string_attr(span, CONVERSATION_ID) or string_attr(span, SESSION_ID)
        return llm_call_of(inputs, outputs, conversation, offered, meta_of(span, outputs))



def _crew_task(value: Any) -> str | None:
    """The question of a CrewAI crew (its ``crew_tasks``): the description of its one task (the model
    sees it only inside CrewAI's prompt); None for several tasks."""
    tasks = C.loads(value)
    if isinstance(tasks, (list, tuple)) and len(tasks) == 1 and isinstance(tasks[0], Mapping):
        description = tasks[0].get("description")
        return description if isinstance(description, str) else None
    return None


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
