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

from .. import values as V
from ..spans import SpanLike
from . import Agent, Role
from . import content as C
from .genai import (
    TL_ENTITY_INPUT,
    TL_ENTITY_NAME,
    TL_ENTITY_OUTPUT,
    TL_SPAN_KIND,
    TL_WORKFLOW_NAME,
    GenAIDialect,
    code_path,
    io_text,
    name_of,
    string_attr,
)

SPAN_KIND = TL_SPAN_KIND
WORKFLOW_NAME = TL_WORKFLOW_NAME
ENTITY_NAME = TL_ENTITY_NAME
ENTITY_INPUT = TL_ENTITY_INPUT
ENTITY_OUTPUT = TL_ENTITY_OUTPUT
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
            if name and key == ENTITY_NAME and code_path(name):
                return None  # a decorated method (``FunctionAgent.workflow``): its span name is the same
            if name:
                return name
        return name_of(span.name, _SUFFIXES)

    def agent(self, span: SpanLike, problems: list[str]) -> Agent:
        found = super().agent(span, problems)
        question, answer = found.question, found.answer
        if question is None or not V.check(V.QUERY, question).plain:
            question = _input_text(span.attributes.get(ENTITY_INPUT)) or question
        if answer is None or not V.check(V.ANSWER, answer).plain:
            answer = io_text(_unquoted(span.attributes.get(ENTITY_OUTPUT)), C.ASSISTANT) or answer
        named = found.named or self._kind(span) in (KIND_WORKFLOW, KIND_AGENT)
        return Agent(found.name, question, answer, named, found.captured, found.transcript)


def _input_text(value: Any) -> str | None:
    """The decorators' input (``{"args": ["..."], "kwargs": {}}``) as the question: its one string
    argument, else the text :func:`.genai.io_text` finds (None when that is not plain)."""
    parsed = C.loads(value)
    if isinstance(parsed, dict) and set(parsed) <= {"args", "kwargs"}:
        args, kwargs = parsed.get("args") or [], parsed.get("kwargs") or {}
        strings = [a for a in args if isinstance(a, str)] + [
            v for v in kwargs.values() if isinstance(v, str)] \
            if isinstance(args, list) and isinstance(kwargs, dict) else []
        if len(strings) == 1 and len(args) + len(kwargs) == 1:
            return strings[0]
    text = io_text(value, C.USER)
    return text if text is not None and V.check(V.QUERY, text).plain else None


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
