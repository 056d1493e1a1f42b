"""Pydantic AI, instrumented by its own OpenTelemetry instrumentation (no Logfire): an Agent named
"researcher" with the two tools, an OpenAIChatModel on the scripted server (Chat Completions),
``Agent.instrument_all(InstrumentationSettings(tracer_provider=..., include_content=..., version=...))``.
Pydantic AI puts everything in span attributes (no span events, no log records): the messages as
``gen_ai.input.messages`` / ``gen_ai.output.messages`` on the model-request spans and
``pydantic_ai.all_messages`` on the agent-run span, tool arguments and results on the tool spans.

  --content on        include_content=True (the default)
  --content off       include_content=False
  --content redacted  include_content=True, and a redacting exporter of the scenario's own
                      (Pydantic AI has no redaction option): tests/interop/scenarios/native_redaction.py
  --version N         the data format version, 2..6 (default: Pydantic AI's default, 5)

usage: python -m tests.interop.scenarios.pydantic_ai_agent --out FILE [--content on|off|redacted]
       [--version N]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import asyncio  # noqa: E402
from typing import Any  # noqa: E402

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.models.instrumented import InstrumentationSettings  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402

CONTENT = capture.option("content", "on")
VERSION = capture.option("version")

CONTENT_KEYS = {
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
    "pydantic_ai.all_messages", "final_result", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
    "tool_arguments", "tool_response", "model_request_parameters",
}
"""The attributes that carry content (prompts, completions, tool arguments and results;
``model_request_parameters`` holds the instructions' text too)."""


def build_agent(server: ScriptedLLMServer) -> Agent[None, str]:
    provider = OpenAIProvider(base_url=server.url, api_key="test-key")
    model = OpenAIChatModel("scripted-model", provider=provider)
    agent: Agent[None, str] = Agent(model, name=story.AGENT, instructions="Answer with the tools.")

    @agent.tool_plain
    def knowledge_query(question: str) -> str:
        """Answer a factual question from the knowledge base."""
        return story.knowledge_query(question)

    @agent.tool_plain
    def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression."""
        return story.calculator(expression)

    return agent


def main() -> None:
    if CONTENT == "redacted":
        from tests.interop.scenarios.native_redaction import redacting_tracer_provider

        provider, memory = redacting_tracer_provider(lambda key: key in CONTENT_KEYS)
    elif CONTENT in ("on", "off"):
        provider, memory = capture.tracer_provider()
    else:
        raise SystemExit(f"unknown --content {CONTENT}")
    settings: dict[str, Any] = {"tracer_provider": provider, "include_content": CONTENT != "off"}
    if VERSION:
        settings["version"] = int(VERSION)
    Agent.instrument_all(InstrumentationSettings(**settings))
    with ScriptedLLMServer(story.react_steps()) as server:
        result = asyncio.run(build_agent(server).run(story.QUESTION))
        assert result.output == story.FINAL_ANSWER, result.output
        assert server.remaining == 0 and not server.errors, server.errors
    capture.finish(guard, provider, memory, str(capture.option("out")))


if __name__ == "__main__":
    main()
