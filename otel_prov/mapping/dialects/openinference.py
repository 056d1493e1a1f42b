"""OpenInference (Arize; the LangChain/LangGraph, smolagents, OpenAI Agents, LlamaIndex
instrumentations): ``openinference.span.kind`` marks every span; ``input.value`` / ``output.value``
hold a span's input and output, ``tool.name`` a tool's name.

An ``AGENT`` span below an agent is one of its turns, not a nested agent.  OpenInference's GenAI
conversion writes the tool's parameter *schema* into ``gen_ai.tool.call.arguments``: the arguments
are read from ``input.value`` only.  Everything else is read as in the GenAI conventions (the
``gen_ai.*`` keys first, when the conversion wrote them).
"""

from __future__ import annotations

from ..spans import SpanLike
from . import Role
from .genai import INPUT_VALUE, GenAIDialect, string_attr, text_attr

SPAN_KIND = "openinference.span.kind"
KIND_AGENT = "AGENT"
KIND_TOOL = "TOOL"


class OpenInferenceDialect(GenAIDialect):
    name = "openinference"
    keys = GenAIDialect.keys | {SPAN_KIND}
    turns_below_agent = True

    def claims(self, span: SpanLike) -> bool:
        return string_attr(span, SPAN_KIND) is not None

    def role(self, span: SpanLike) -> Role:
        kind = (string_attr(span, SPAN_KIND) or "").upper()
        return Role.AGENT if kind == KIND_AGENT else Role.TOOL if kind == KIND_TOOL else Role.OTHER

    def arguments(self, span: SpanLike) -> str | None:
        return text_attr(span, INPUT_VALUE)


OPENINFERENCE = OpenInferenceDialect()
