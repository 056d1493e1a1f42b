"""The official OpenTelemetry instrumentation of the OpenAI Agents SDK
(``opentelemetry-instrumentation-openai-agents-v2``): the GenAI conventions, with its quirks.

- Its spans carry ``gen_ai.agent.description = "OpenAI Agents instrumentation"`` (the marker; the
  workflow root does not, and is read as a GenAI ``invoke_agent`` span without an agent name); turn
  and task spans are ``unknown``; ``gen_ai.agent.name`` on non-agent spans is a placeholder.
- Hand-offs are ``agent_handoff`` spans (``gen_ai.handoff.from_agent`` / ``to_agent``): a step of
  the agent handing off.
- Responses API items the instrumentation cannot convert are written as their Python ``repr`` in
  text parts: ``ResponseReasoningItem(... summary=[Summary(text='...')])`` (the thought),
  ``ResponseFunctionToolCall(arguments='...', call_id='...', name='...')`` (a requested tool call),
  and an assistant's earlier text in the input as a ``dict`` repr
  (``{'text': '...', 'type': 'output_text', ...}``).  They are read back as reasoning, requests and text.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from ..spans import SpanLike
from . import Request, Role, ToolCall
from . import content as C
from .genai import OPERATION_NAME, GenAIDialect, string_attr

AGENT_DESCRIPTION = "gen_ai.agent.description"
MARKER = "OpenAI Agents instrumentation"
HANDOFF_FROM = "gen_ai.handoff.from_agent"
HANDOFF_TO = "gen_ai.handoff.to_agent"
OP_HANDOFF = "agent_handoff"

_STR = r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
_TEXT = re.compile(r"\btext=" + _STR)
_CALL_FIELDS = {name: re.compile(rf"\b{name}=" + _STR) for name in ("arguments", "call_id", "name")}
_REPR = re.compile(r"(Response\w+)\(")


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _strings(pattern: re.Pattern[str], text: str) -> list[str]:
    found = (_literal(m.group(1)) for m in pattern.finditer(text))
    return [s for s in found if isinstance(s, str)]


def _fix(message: C.Message) -> C.Message:
    """A message whose text parts are Python reprs, read back as what they stand for."""
    texts: list[str] = []
    for text in message.texts:
        stripped = text.strip()
        kind = _REPR.match(stripped)
        if kind is None:
            parsed = _literal(stripped) if stripped.startswith("{'") else None
            block = (C.to_message({"role": message.role, "content": [parsed]})
                     if isinstance(parsed, dict) else None)
            texts.extend(block.texts if block is not None and block.texts else [text])
            continue
        name = kind.group(1)
        if name == "ResponseReasoningItem":
            message.reasoning.extend(_strings(_TEXT, stripped))
        elif name == "ResponseFunctionToolCall":
            fields = {key: _strings(pattern, stripped) for key, pattern in _CALL_FIELDS.items()}
            if fields["name"]:
                message.calls.append(Request(next(iter(fields["call_id"]), None), fields["name"][0],
                                             next(iter(fields["arguments"]), None)))
        elif name == "ResponseOutputMessage":
            texts.extend(_strings(_TEXT, stripped))
        else:
            texts.append(text)
    message.texts = texts
    return message


class OpenAIAgentsDialect(GenAIDialect):
    name = "openai-agents"
    keys = GenAIDialect.keys | {AGENT_DESCRIPTION, HANDOFF_FROM, HANDOFF_TO}

    def claims(self, span: SpanLike) -> bool:
        return (span.attributes.get(AGENT_DESCRIPTION) == MARKER
                or span.attributes.get(OPERATION_NAME) == OP_HANDOFF)

    def role(self, span: SpanLike) -> Role:
        if string_attr(span, OPERATION_NAME) == OP_HANDOFF:
            return Role.TOOL
        return super().role(span)

    def clean(self, messages: list[C.Message]) -> list[C.Message]:
        return [_fix(m) for m in messages]

    def tool_call(self, span: SpanLike, problems: list[str]) -> ToolCall:
        if string_attr(span, OPERATION_NAME) != OP_HANDOFF:
            return super().tool_call(span, problems)
        target = string_attr(span, HANDOFF_TO) or ""
        return ToolCall("handoff", handoff=target, result=target or None)


OPENAI_AGENTS = OpenAIAgentsDialect()
