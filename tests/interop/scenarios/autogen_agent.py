"""AutoGen AgentChat: an ``AssistantAgent`` named "researcher" with the two tools, its
``OpenAIChatCompletionClient`` pointed at the scripted server (Chat Completions), traced by AutoGen's
NATIVE OpenTelemetry spans (autogen-core's ``trace_create_agent_span`` / ``trace_invoke_agent_span`` /
``trace_tool_span``, which use the GLOBAL tracer provider when the agent runs without a runtime: the
scenario sets capture's provider globally).

``max_tool_iterations=5`` (the default, 1, returns after the first tool call) and
``reflect_on_tool_use=False``: the model's third answer, text without tool calls, ends the loop and
is the final answer (a TextMessage), so the story plays as two tool calls then the answer.

AutoGen's spans carry no content at all (no messages, arguments or results) and AutoGen has no
switch for it; its content goes to its own structured event logger (``autogen_core.EVENT_LOGGER_NAME``:
an ``LLMCall`` event per model call, a ``ToolCall`` event per tool run, each ``str()``-ing to JSON).

  --content off       the native spans only (AutoGen's default: no content anywhere)
  --content on        and the event logger bridged to OTLP log records by the OpenTelemetry SDK's
                      ``LoggingHandler`` (body: the event's JSON text; trace/span ids of the current span)
  --content redacted  as on, with a logging filter of the scenario's own (as a user's would) writing
                      "[REDACTED]" over the events' content fields (messages, response, arguments, result)

usage: python -m tests.interop.scenarios.autogen_agent --out FILE [--content on|off|redacted]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import asyncio  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402

CONTENT = capture.option("content", "on")
if CONTENT not in ("on", "off", "redacted"):
    raise SystemExit(f"unknown --content {CONTENT}")
os.environ.pop("AUTOGEN_DISABLE_RUNTIME_TRACING", None)

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.messages import TextMessage  # noqa: E402
from autogen_core import EVENT_LOGGER_NAME  # noqa: E402
from autogen_ext.models.openai import OpenAIChatCompletionClient  # noqa: E402
from opentelemetry import trace  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402

REDACTED = "[REDACTED]"
CONTENT_FIELDS = ("messages", "response", "arguments", "result")
"""The fields of AutoGen's LLMCall / ToolCall events that carry content (seen with --content on)."""


def knowledge_query(question: str) -> str:
    """Answer a factual question from the knowledge base."""
    return story.knowledge_query(question)


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return story.calculator(expression)


class RedactEvents(logging.Filter):
    """A user's own redaction of AutoGen's events: their content fields become "[REDACTED]"."""

    def filter(self, record: logging.LogRecord) -> bool:
        kwargs = getattr(record.msg, "kwargs", None)
        if isinstance(kwargs, dict):
            record.msg = json.dumps({k: (REDACTED if k in CONTENT_FIELDS else v) for k, v in kwargs.items()})
            record.args = None
        return True


async def run(server: ScriptedLLMServer) -> str:
    client = OpenAIChatCompletionClient(
        model="scripted-model", base_url=server.url, api_key="test-key", max_retries=0,
        model_info={"vision": False, "function_calling": True, "json_output": False,
                    "family": "unknown", "structured_output": False})
    agent = AssistantAgent(
        story.AGENT, model_client=client, tools=[knowledge_query, calculator],
        description="Looks facts up and computes.", system_message="Answer with the tools.",
        max_tool_iterations=5, reflect_on_tool_use=False)
    result = await agent.run(task=story.QUESTION)
    await client.close()
    last = result.messages[-1]
    assert isinstance(last, TextMessage), result.messages
    return last.content


def main() -> None:
    provider, memory = capture.tracer_provider()
    trace.set_tracer_provider(provider)
    logs = None
    if CONTENT != "off":
        from opentelemetry.sdk._logs import LoggingHandler

        logs = capture.logger_provider()
        handler = LoggingHandler(level=logging.INFO, logger_provider=logs[0])
        if CONTENT == "redacted":
            handler.addFilter(RedactEvents())
        events = logging.getLogger(EVENT_LOGGER_NAME)
        events.setLevel(logging.INFO)
        events.addHandler(handler)
        events.propagate = False
    with ScriptedLLMServer(story.react_steps()) as server:
        answer = asyncio.run(run(server))
    assert answer == story.FINAL_ANSWER, answer
    assert server.remaining == 0 and not server.errors, server.errors
    capture.finish(guard, provider, memory, str(capture.option("out")), logs=logs)


if __name__ == "__main__":
    main()
