"""The OpenTelemetry GenAI semantic conventions (``gen_ai.*``): ``invoke_agent`` and ``execute_tool``
spans, messages as JSON (the current ``parts`` form and the older ``content`` form).

The fallback dialect: it claims every span no more specific dialect claims; a span is an agent or a
tool call by ``gen_ai.operation.name`` or, when that is absent or ``unknown``, by its name.
``input.value`` / ``output.value`` / ``tool.name`` are read as fallbacks (spans converted from other
conventions carry them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..flows import attr_text
from ..spans import SpanLike
from . import Role, ToolCall

OPERATION_NAME = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
# Read as fallbacks (OpenInference's names).
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"
OI_TOOL_NAME = "tool.name"

OP_INVOKE_AGENT = "invoke_agent"
OP_EXECUTE_TOOL = "execute_tool"
OP_UNKNOWN = "unknown"
"""Some instrumentations (openai-agents-v2) write this; the span name then says what the span is."""

NOT_MESSAGES = "{key} is not a JSON list of messages"


def string_attr(span: SpanLike, key: str) -> str | None:
    value = span.attributes.get(key)
    return value if isinstance(value, str) else None


def text_attr(span: SpanLike, *keys: str) -> str | None:
    """The first of ``keys`` the span has, as text."""
    for key in keys:
        value = attr_text(span.attributes.get(key))
        if value is not None:
            return value
    return None


# -- messages ---------------------------------------------------------------------------------------


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping) and part.get("type", "text") == "text":
        for key in ("content", "text"):
            value = part.get(key)
            if isinstance(value, str):
                return value
    return None


def message_text(message: Any) -> str | None:
    """The text parts of one message (``parts`` of the current conventions, or ``content`` as a
    string or a list of parts), joined by newlines; reasoning and tool parts are not text."""
    if not isinstance(message, Mapping):
        return None
    texts: list[str | None] = []
    for key in ("parts", "content"):
        value = message.get(key)
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, (list, tuple)):
            texts.extend(_part_text(p) for p in value)
    found = [t for t in texts if t is not None]
    return "\n".join(found) if found else None


def parse_messages(value: Any) -> list[Any] | None:
    """Messages given as JSON text or (OTLP) as a structured array; None if not readable."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    if isinstance(value, Mapping):
        value = [value]
    return list(value) if isinstance(value, (list, tuple)) else None


def last_text(messages: Sequence[Any], role: str) -> str | None:
    """The text of the last message of ``role`` that has text."""
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == role:
            text = message_text(message)
            if text is not None:
                return text
    return None


def reduce_messages(value: Any, role: str) -> Any:
    """Messages reduced to the one :func:`last_text` reads (unreadable ones kept as they are, for
    the reading to report; None when there is no such text)."""
    messages = parse_messages(value)
    if messages is None:
        return value
    text = last_text(messages, role)
    if text is None:
        return None
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}], ensure_ascii=False)


def message_attr(span: SpanLike, key: str, role: str, problems: list[str]) -> str | None:
    """The text of the last ``role`` message of the messages in ``key``."""
    if key not in span.attributes:
        return None
    messages = parse_messages(span.attributes[key])
    if messages is None:
        problems.append(NOT_MESSAGES.format(key=key))
        return None
    return last_text(messages, role)


# -- the dialect ------------------------------------------------------------------------------------


class GenAIDialect:
    name = "genai"
    keys = frozenset({
        OPERATION_NAME, AGENT_NAME, TOOL_NAME, TOOL_CALL_ARGUMENTS, TOOL_CALL_RESULT,
        INPUT_MESSAGES, OUTPUT_MESSAGES, INPUT_VALUE, OUTPUT_VALUE, OI_TOOL_NAME,
    })
    turns_below_agent = False
    _MESSAGES = ((INPUT_MESSAGES, "user"), (OUTPUT_MESSAGES, "assistant"))

    def claims(self, span: SpanLike) -> bool:
        return True

    def role(self, span: SpanLike) -> Role:
        op = string_attr(span, OPERATION_NAME)
        if op == OP_INVOKE_AGENT or span.name.startswith(OP_INVOKE_AGENT):
            return Role.AGENT
        if op == OP_EXECUTE_TOOL or (op in (None, OP_UNKNOWN) and span.name.startswith(OP_EXECUTE_TOOL)):
            return Role.TOOL
        return Role.OTHER

    def keep(self, attributes: Mapping[str, Any], role: Role) -> dict[str, Any]:
        kept = {k: attributes[k] for k in self.keys if k in attributes}
        for key, message_role in self._MESSAGES:
            if key in kept:
                reduced = reduce_messages(kept.pop(key), message_role)
                if reduced is not None:
                    kept[key] = reduced
        return kept

    def agent_name(self, span: SpanLike) -> str | None:
        name = string_attr(span, AGENT_NAME)
        if name:
            return name
        if span.name.startswith(OP_INVOKE_AGENT):
            return span.name[len(OP_INVOKE_AGENT):].strip() or None
        return span.name or None

    def question(self, span: SpanLike, problems: list[str]) -> str | None:
        query = message_attr(span, INPUT_MESSAGES, "user", problems)
        return query if query is not None else text_attr(span, INPUT_VALUE)

    def answer(self, span: SpanLike, problems: list[str]) -> str | None:
        answer = message_attr(span, OUTPUT_MESSAGES, "assistant", problems)
        return answer if answer is not None else text_attr(span, OUTPUT_VALUE)

    def tool_call(self, span: SpanLike) -> ToolCall:
        return ToolCall(self.tool_name(span), self.arguments(span),
                        text_attr(span, TOOL_CALL_RESULT, OUTPUT_VALUE))

    def tool_name(self, span: SpanLike) -> str:
        for key in (TOOL_NAME, OI_TOOL_NAME):
            value = string_attr(span, key)
            if value:
                return value
        if span.name.startswith(OP_EXECUTE_TOOL):
            return span.name[len(OP_EXECUTE_TOOL):].strip() or span.name
        return span.name

    def arguments(self, span: SpanLike) -> str | None:
        return text_attr(span, TOOL_CALL_ARGUMENTS, INPUT_VALUE)


GENAI = GenAIDialect()
