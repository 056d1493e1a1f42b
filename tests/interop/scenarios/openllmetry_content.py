"""The ``--content on|off|redacted`` switch of the OpenLLMetry (Traceloop) scenarios that share it
(anthropic_loop, crewai_openllmetry, llamaindex_openllmetry); imports nothing of a framework, so it is
called before the framework import.

  --content on        TRACELOOP_TRACE_CONTENT=true (OpenLLMetry's documented switch; its default)
  --content off       TRACELOOP_TRACE_CONTENT=false
  --content redacted  content on, plus a user's own redaction (OpenLLMetry has no redaction option of
                      its own): tests/interop/scenarios/native_redaction.py writes "[REDACTED]" over
                      every content-bearing span attribute (:func:`is_content`) and over the content
                      fields of the GenAI events sent as log records (:data:`EVENT_FIELDS`)

OpenLLMetry's own telemetry (TRACELOOP_TELEMETRY) and metrics are switched off in every mode.

    CONTENT = openllmetry_content.configure()          # before the framework import
    provider, memory = openllmetry_content.tracer_provider(CONTENT)
    logs = openllmetry_content.logger_provider(CONTENT)
"""

from __future__ import annotations

import os
import re
from typing import Any

from tests.interop import capture

MODES = ("on", "off", "redacted")

CONTENT_KEYS = re.compile(
    r"^(gen_ai\.(input|output)\.messages|gen_ai\.system_instructions|gen_ai\.(prompt|completion)\..*"
    r"|gen_ai\.tool\.call\.(arguments|result)|gen_ai\.task\.(input|output)|gen_ai\.agent\.(goal|backstory)"
    r"|traceloop\.entity\.(input|output)|tool\.arguments"
    r"|crewai\.(crew|agent|task)\.(goal|backstory|description|expected_output|result|tasks_output|tasks|agents)"
    r"|crewai\.llm\.result"
    r"|crewai\..*\.(output|raw|context|tools_input|inputs))$")
"""The attributes that carry content in OpenLLMetry's spans: messages, prompts, completions, tool-call
arguments and results, entity inputs and outputs, LlamaIndex's ``tool.arguments``; CrewAI's task
description (the question) and expected output, the agent's goal and backstory (its prompt), the
crew's task and agent lists (which embed them) and the results."""

EVENT_FIELDS = frozenset({"content", "message", "tool_calls", "arguments", "result", "parts"})
"""The fields of a GenAI event's body that carry content (``gen_ai.choice``'s ``message``, a
message event's ``content``, ...); ``index``, ``finish_reason``, ``role``, ``id`` are kept."""


def is_content(key: str) -> bool:
    return bool(CONTENT_KEYS.match(key))


def configure() -> str:
    """Reads ``--content`` and sets OpenLLMetry's variables (before the instrumentation's import)."""
    content = capture.option("content", "on") or "on"
    if content not in MODES:
        raise SystemExit(f"unknown --content {content}")
    os.environ["TRACELOOP_TRACE_CONTENT"] = "false" if content == "off" else "true"
    os.environ["TRACELOOP_TELEMETRY"] = "false"
    os.environ["TRACELOOP_METRICS_ENABLED"] = "false"
    return content


def tracer_provider(content: str) -> tuple[Any, Any]:
    """capture's provider, or for ``redacted`` one whose exporter redacts the content attributes."""
    if content == "redacted":
        from tests.interop.scenarios.native_redaction import redacting_tracer_provider

        return redacting_tracer_provider(is_content)
    return capture.tracer_provider()


def logger_provider(content: str) -> tuple[Any, Any]:
    """capture's logger provider, or for ``redacted`` one that redacts the events' content fields."""
    if content == "redacted":
        from tests.interop.scenarios.native_redaction import redacting_logger_provider

        return redacting_logger_provider(lambda record: True, EVENT_FIELDS)
    return capture.logger_provider()
