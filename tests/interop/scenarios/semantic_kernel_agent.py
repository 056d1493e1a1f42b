"""Semantic Kernel, instrumented by its own (experimental) OpenTelemetry diagnostics: a
ChatCompletionAgent named "researcher" with a plugin of the two kernel functions, auto function
calling, and OpenAIChatCompletion on an AsyncOpenAI client for the scripted server (Chat
Completions, not streamed).

Semantic Kernel traces to the global tracer provider and writes the message content through Python
``logging`` (logger.info with an ``event.name`` extra), which the SDK's LoggingHandler turns into
OTLP log records; both are set here to capture's, as Semantic Kernel's telemetry samples do.  Its
switches are environment variables, set here before the import:

  --content on        SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true
  --content off       SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS=true (spans, no content)
  --content redacted  as on, and the scenario's own redaction (Semantic Kernel has none): the span
                      exporter of tests/interop/scenarios/native_redaction.py and a log exporter that
                      replaces the content-bearing log bodies with "[REDACTED]"

The plugin is named "research"; Semantic Kernel advertises its functions to the model as
"research-knowledge_query" and "research-calculator", so the script calls them by those names.

usage: python -m tests.interop.scenarios.semantic_kernel_agent --out FILE [--content on|off|redacted]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import asyncio  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
from typing import Annotated, Any  # noqa: E402

CONTENT = capture.option("content", "on")
if CONTENT not in ("on", "off", "redacted"):
    raise SystemExit(f"unknown --content {CONTENT}")
os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"] = "true"
os.environ["SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE"] = \
    "false" if CONTENT == "off" else "true"

from opentelemetry import trace  # noqa: E402

CONTENT_KEYS = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result"}
"""The span attributes that carry content (agent input and output, tool arguments and results)."""


def is_content_record(record: Any) -> bool:
    """The log records that carry content: the GenAI events (an ``event.name`` attribute: the
    messages and choices) and the kernel's "Calling <function> function with args: {...}" line."""
    body = record.body if isinstance(record.body, str) else ""
    return "event.name" in (record.attributes or {}) or body.startswith("Calling ")


if CONTENT == "redacted":
    from tests.interop.scenarios.native_redaction import redacting_logger_provider, redacting_tracer_provider

    _provider, _memory = redacting_tracer_provider(lambda key: key in CONTENT_KEYS)
    _logs = redacting_logger_provider(is_content_record)
else:
    _provider, _memory = capture.tracer_provider()
    _logs = capture.logger_provider()
trace.set_tracer_provider(_provider)  # before Semantic Kernel makes its module-level tracers

from openai import AsyncOpenAI  # noqa: E402
from semantic_kernel import Kernel  # noqa: E402
from semantic_kernel.agents import ChatCompletionAgent  # noqa: E402
from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion  # noqa: E402
from semantic_kernel.functions import kernel_function  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402
from tests.interop.story import Step, ToolCall  # noqa: E402

PLUGIN = "research"


class ResearchPlugin:
    @kernel_function(name=story.TOOL_1, description=story.TOOL_DESCRIPTIONS[story.TOOL_1])
    def knowledge_query(self, question: Annotated[str, "The question to look up."]) -> str:
        return story.knowledge_query(question)

    @kernel_function(name=story.TOOL_2, description=story.TOOL_DESCRIPTIONS[story.TOOL_2])
    def calculator(self, expression: Annotated[str, "The arithmetic expression."]) -> str:
        return story.calculator(expression)


def steps() -> list[Step]:
    """The story, with the tool names as Semantic Kernel advertises them (plugin-function)."""
    out = []
    for step in story.react_steps():
        calls = [ToolCall(f"{PLUGIN}-{c.name}", c.arguments, c.call_id) for c in step.tool_calls]
        out.append(Step(step.thought, calls, step.final))
    return out


async def run(server: ScriptedLLMServer) -> str:
    client = AsyncOpenAI(base_url=server.url, api_key="test-key", max_retries=0)
    service = OpenAIChatCompletion(ai_model_id="scripted-model", async_client=client)
    kernel = Kernel()
    kernel.add_plugin(ResearchPlugin(), plugin_name=PLUGIN)
    agent = ChatCompletionAgent(kernel=kernel, service=service, name=story.AGENT,
                                instructions="Answer with the tools.")
    try:
        # Positional: the agent span records its input only from the positional argument (with
        # messages=... its gen_ai.input.messages is "[]").
        response = await agent.get_response(story.QUESTION)
    finally:
        await client.close()
    return str(response.message.content)


def main() -> None:
    provider, memory, logs = _provider, _memory, _logs
    from opentelemetry.sdk._logs import LoggingHandler

    # As Semantic Kernel's telemetry samples do: its loggers' records, INFO and up, as OTLP logs.

    handler = LoggingHandler(level=logging.INFO, logger_provider=logs[0])
    handler.addFilter(logging.Filter("semantic_kernel"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        with ScriptedLLMServer(steps()) as server:
            answer = asyncio.run(run(server))
            assert answer == story.FINAL_ANSWER, answer
            assert server.remaining == 0 and not server.errors, server.errors
    finally:
        root.removeHandler(handler)
    capture.finish(guard, provider, memory, str(capture.option("out")), logs=logs)


if __name__ == "__main__":
    main()
