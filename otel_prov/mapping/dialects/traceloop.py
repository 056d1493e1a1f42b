"""OpenLLMetry (Traceloop): ``traceloop.span.kind`` marks the spans of its framework instrumentations
and decorators (``workflow``, ``agent``, ``tool``, ``handoff``, ``task``), next to the GenAI keys.

- ``workflow`` (the OpenAI Agents SDK's ``Agent Workflow``, ``@workflow``) is the root of a run: the
  session, whose agents (``{name}.agent``) are its entry agent and the agents handed off to.
- ``handoff`` spans (``{from} → {to}.handoff``) are a step of the agent handing off; the target is
  ``gen_ai.handoff.to_agent`` when given (the OpenAI Agents instrumentation leaves it out: the next
  agent is then the target).
- ``traceloop.entity.input`` / ``traceloop.entity.output`` (the decorators' JSON) are read where the
  GenAI keys are absent.  Model calls (``openai.response``, ...) carry only GenAI keys, or the older
  indexed ``gen_ai.prompt.{i}.*`` / ``gen_ai.completion.{i}.*``: the GenAI dialect reads those.
"""

from __future__ import annotations

import json
from typing import Any

from ..spans import SpanLike
from . import Agent, Role, ToolCall
from . import content as C
from .genai import OPERATION_NAME, GenAIDialect, io_text, string_attr

SPAN_KIND = "traceloop.span.kind"
WORKFLOW_NAME = "traceloop.workflow.name"
ENTITY_NAME = "traceloop.entity.name"
ENTITY_INPUT = "traceloop.entity.input"
ENTITY_OUTPUT = "traceloop.entity.output"
HANDOFF_TO = "gen_ai.handoff.to_agent"
HANDOFF_FROM = "gen_ai.handoff.from_agent"

KIND_WORKFLOW, KIND_AGENT, KIND_TOOL, KIND_HANDOFF = "workflow", "agent", "tool", "handoff"
_ROLES = {KIND_WORKFLOW: Role.AGENT, KIND_AGENT: Role.AGENT, KIND_TOOL: Role.TOOL, KIND_HANDOFF: Role.TOOL}
_SUFFIXES = (".agent", ".workflow", ".tool")


class TraceloopDialect(GenAIDialect):
    name = "traceloop"
    keys = GenAIDialect.keys | {SPAN_KIND, WORKFLOW_NAME, ENTITY_NAME, ENTITY_INPUT, ENTITY_OUTPUT,
                                HANDOFF_TO, HANDOFF_FROM}

    def claims(self, span: SpanLike) -> bool:
        return string_attr(span, SPAN_KIND) is not None

    def _kind(self, span: SpanLike) -> str:
        return (string_attr(span, SPAN_KIND) or "").lower()

    def role(self, span: SpanLike) -> Role:
        role = _ROLES.get(self._kind(span))
        return role if role is not None else super().role(span)

    def agent_name(self, span: SpanLike) -> str | None:
        for key in ("gen_ai.agent.name", WORKFLOW_NAME, ENTITY_NAME):
            name = string_attr(span, key)
            if name:
                return name
        name = span.name
        for suffix in _SUFFIXES:
            name = name.removesuffix(suffix)
        return name or None

    def agent(self, span: SpanLike, problems: list[str]) -> Agent:
        found = super().agent(span, problems)
        question = found.question or _input_text(span.attributes.get(ENTITY_INPUT))
        answer = found.answer or io_text(_unquoted(span.attributes.get(ENTITY_OUTPUT)), C.ASSISTANT)
        captured = found.captured or ENTITY_INPUT in span.attributes or ENTITY_OUTPUT in span.attributes
        return Agent(found.name, question, answer, True, captured)

    def tool_call(self, span: SpanLike, problems: list[str]) -> ToolCall:
        if self._kind(span) == KIND_HANDOFF or string_attr(span, OPERATION_NAME) == KIND_HANDOFF:
            target = string_attr(span, HANDOFF_TO) or ""
            return ToolCall("handoff", handoff=target, result=target or None)
        found = super().tool_call(span, problems)
        if found.captured:
            return found
        arguments, bare = C.arguments(span.attributes.get(ENTITY_INPUT))
        result, call_id = C.result_text(_unquoted(span.attributes.get(ENTITY_OUTPUT)))
        name = found.name.removesuffix(".tool")
        return ToolCall(name, arguments, bare, (), result, call_id, None,
                        arguments is not None or bare is not None or result is not None)

    def tool_name(self, span: SpanLike) -> str:
        name = super().tool_name(span)
        return name.removesuffix(".tool") if name == span.name else name


def _input_text(value: Any) -> str | None:
    """The decorators' input (``{"args": [...], "kwargs": {...}}``) as the question: its one string
    argument, else the text :func:`.genai.io_text` finds."""
    arguments, bare = C.arguments(value)
    if bare is not None:
        return bare
    parsed = C.loads(arguments)
    if isinstance(parsed, dict) and len(parsed) == 1 and isinstance(next(iter(parsed.values())), str):
        return str(next(iter(parsed.values())))
    return io_text(value, C.USER)


def _unquoted(value: Any) -> Any:
    """The decorators write a result as JSON: a string result is a JSON string."""
    if isinstance(value, str) and value.startswith('"'):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        return parsed if isinstance(parsed, str) else value
    return value


TRACELOOP = TraceloopDialect()
