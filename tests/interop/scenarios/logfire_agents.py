"""OpenAI Agents SDK (openai-agents): one Agent named "researcher" with the two tools as function tools,
run by ``Runner.run`` on the scripted server (the Responses API, the SDK's default, where the thought
is an assistant message item before the function_call items; or Chat Completions), instrumented by
Pydantic Logfire: ``logfire.configure(send_to_logfire=False, console=False, metrics=False,
additional_span_processors=[SimpleSpanProcessor(<the in-memory exporter>)])`` and
``logfire.instrument_openai_agents()`` (Logfire wraps the SDK's trace provider; its spans go through
Logfire's own TracerProvider to the scenario's processor).  The SDK's own trace processor (it exports
to OpenAI's servers) is removed: ``agents.set_trace_processors([])`` (not set_tracing_disabled, which
would silence Logfire too).

  --content on        Logfire's default: everything recorded (its default scrubbing, for secrets such
                      as 'password' / 'api_key', finds nothing in the story)
  --content off       Logfire has no switch that leaves content out of the Agents SDK spans: the
                      scenario's own exporter (tests/interop/scenarios/native_redaction.py, drop=True)
                      removes every content-bearing attribute (:data:`LOGFIRE_CONTENT`), as a user's
                      filter would
  --content redacted  Logfire's OWN redaction: scrubbing=logfire.ScrubbingOptions(extra_patterns=
                      :data:`SCRUB_PATTERNS`), patterns naming the content-bearing keys; Logfire writes
                      "[Scrubbed due to '<match>']" and lists what it scrubbed in logfire.scrubbed
  --api responses|chat_completions   the model API (default responses)

usage: python -m tests.interop.scenarios.logfire_agents --out FILE [--content on|off|redacted]
       [--api responses|chat_completions]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import os  # noqa: E402

CONTENT = capture.option("content", "on")
if CONTENT not in ("on", "off", "redacted"):
    raise SystemExit(f"unknown --content {CONTENT}")
API = capture.option("api", "responses")
if API not in ("responses", "chat_completions"):
    raise SystemExit(f"unknown --api {API}")
os.environ["LOGFIRE_SEND_TO_LOGFIRE"] = "false"
os.environ["LOGFIRE_CONSOLE"] = "false"
os.environ.pop("OPENAI_AGENTS_DISABLE_TRACING", None)

import asyncio  # noqa: E402
from types import SimpleNamespace  # noqa: E402
from typing import Any  # noqa: E402

import agents  # noqa: E402
import logfire  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402

LOGFIRE_CONTENT = {"input", "output", "raw_input", "response", "events", "request_data",
                   "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                   "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"}
"""The attributes that carry content in Logfire's Agents SDK spans (seen with --content on): the
SDK's span data (function input / output, response input), Logfire's 'response' object, its
'events' (the conversation), 'request_data' (Chat Completions), and the GenAI messages."""

SCRUB_PATTERNS = [r"^(input|output|raw_input|response|events|request_data)$"]
"""For --content redacted: Logfire's scrubbing searches every key (at every depth of the JSON
attributes) with these patterns and scrubs the value of a matching key."""


@agents.function_tool
def knowledge_query(question: str) -> str:
    """Answer a factual question from the knowledge base."""
    return story.knowledge_query(question)


@agents.function_tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return story.calculator(expression)


async def run(server: ScriptedLLMServer) -> str:
    client = AsyncOpenAI(base_url=server.url, api_key="test-key", max_retries=0)
    agents.set_default_openai_client(client, use_for_tracing=False)
    agents.set_default_openai_api(API)  # type: ignore[arg-type]
    researcher: agents.Agent[Any] = agents.Agent(
        name=story.AGENT, instructions="Answer with the tools.", tools=[knowledge_query, calculator],
        model="scripted-model")
    try:
        result = await agents.Runner.run(researcher, story.QUESTION,
                                         run_config=agents.RunConfig(workflow_name=story.WORKFLOW))
    finally:
        await client.close()
    return str(result.final_output)


def main() -> None:
    agents.set_trace_processors([])
    memory = InMemorySpanExporter()
    exporter: Any = memory
    if CONTENT == "off":
        from tests.interop.scenarios.native_redaction import RedactingExporter

        exporter = RedactingExporter(memory, lambda key: key in LOGFIRE_CONTENT, drop=True)
    scrubbing: Any = (logfire.ScrubbingOptions(extra_patterns=SCRUB_PATTERNS) if CONTENT == "redacted"
                      else None)
    logfire.configure(send_to_logfire=False, console=False, metrics=False, service_name="otel-prov-interop",
                      additional_span_processors=[SimpleSpanProcessor(exporter)], scrubbing=scrubbing,
                      inspect_arguments=False)
    logfire.instrument_openai_agents()
    with ScriptedLLMServer(story.react_steps(), responses_thought="message") as server:
        answer = asyncio.run(run(server))
    assert answer == story.FINAL_ANSWER, answer
    assert server.remaining == 0 and not server.errors, server.errors
    # Logfire's spans go through its own provider: capture.finish flushes that one.
    capture.finish(guard, SimpleNamespace(force_flush=logfire.force_flush), memory,
                   str(capture.option("out")))


if __name__ == "__main__":
    main()
