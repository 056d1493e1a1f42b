"""OpenLIT (``openlit.init``, its own instrumentations) on a small agent: the openai client loop on the
scripted server (Chat Completions with tools) under a root span "invoke_agent researcher"
(gen_ai.operation.name=invoke_agent, gen_ai.agent.name=researcher, as a user of the GenAI conventions
would open it), the two tools served by an MCP FastMCP server in this process (the SDK's in-memory
streams) and called through ``ClientSession.call_tool``: OpenLIT instruments the openai client and
both MCP sides, so the tool calls get spans.  With --tools python the tools are plain Python calls in
the loop (OpenLIT then sees only the model calls).

openlit 1.45 takes no tracer: it reuses the global SDK TracerProvider and LoggerProvider when they are
set, so capture's are set globally before ``openlit.init``.  Its events (OTLP log records) are kept.
Nothing reaches the network: pricing_json is a local file (written here), metrics are off
(disable_metrics), no otlp_endpoint, collect_gpu_stats off.

  --content on        openlit.init(capture_message_content=True)
  --content off       openlit.init(capture_message_content=False)
  --content redacted  content on, and exporter wrappers here write "[REDACTED]" over every
                      content-bearing span attribute and log record (body and attributes): OpenLIT's
                      own options are truncation (max_content_length) and guards, not redaction
  --no-root           no invoke_agent span
  --tools mcp|python  the tools through MCP (default) or as plain Python calls

usage: python -m tests.interop.scenarios.openlit_agent --out FILE [--content on|off|redacted]
       [--no-root] [--tools mcp|python]
"""

from __future__ import annotations

import os

from tests.interop import capture

guard = capture.start()

CONTENT = capture.option("content", "on")
if CONTENT not in ("on", "off", "redacted"):
    raise SystemExit(f"unknown --content {CONTENT}")
TOOLS = capture.option("tools", "mcp")
if TOOLS not in ("mcp", "python"):
    raise SystemExit(f"unknown --tools {TOOLS}")
for key in list(os.environ):
    if key.startswith("OPENLIT_"):
        del os.environ[key]

import asyncio  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from opentelemetry import _logs, trace  # noqa: E402

from tests.interop import story  # noqa: E402

REDACTED = "[REDACTED]"
CONTENT_KEYS = re.compile(
    r"^(gen_ai\.(input|output)\.messages|gen_ai\.system_instructions|gen_ai\.(prompt|completion)(\..*)?"
    r"|gen_ai\.content\..*|gen_ai\.tool\.call\.(arguments|result)|gen_ai\.tool\.(args|result|arguments)"
    r"|mcp\.(request|response)\.(payload|params|value|result|arguments|content)|mcp\.tool\.(arguments|result)"
    r"|gen_ai\.mcp\..*(arguments|result|content|payload))$")
"""The attributes that carry content in OpenLIT's spans and events (seen in --content on)."""
PRICING = {"chat": {"scripted-model": {"promptPrice": 0.001, "completionPrice": 0.002}}, "embeddings": {},
           "images": {}, "audio": {}}
"""OpenLIT's pricing table (same shape as its pricing.json), for the scripted model only."""

TOOL_SPECS = [
    {"type": "function", "function": {
        "name": name, "description": story.TOOL_DESCRIPTIONS[name],
        "parameters": {"type": "object", "properties": {param: {"type": "string"}}, "required": [param]}}}
    for name, param in ((story.TOOL_1, "question"), (story.TOOL_2, "expression"))
]
PY_TOOLS = {story.TOOL_1: story.knowledge_query, story.TOOL_2: story.calculator}


def scrub(attributes: Any) -> dict[str, Any]:
    return {k: (REDACTED if CONTENT_KEYS.match(k) else v) for k, v in (attributes or {}).items()}


def redact_exports(memory: Any, log_memory: Any) -> None:
    """What a user's own redaction does at the exporters: every content-bearing span attribute and
    event attribute, and every log record's body and content attributes, become "[REDACTED]"."""
    from opentelemetry.sdk.trace import Event, ReadableSpan

    def redacted(span: ReadableSpan) -> ReadableSpan:
        return ReadableSpan(
            name=span.name, context=span.context, parent=span.parent, resource=span.resource,
            attributes=scrub(span.attributes),
            events=[Event(e.name, scrub(e.attributes), e.timestamp) for e in span.events],
            links=span.links, kind=span.kind, status=span.status, start_time=span.start_time,
            end_time=span.end_time, instrumentation_scope=span.instrumentation_scope)

    export = memory.export
    memory.export = lambda spans: export([redacted(s) for s in spans])

    def redacted_log(data: Any) -> Any:
        record = data.log_record
        if record.body:  # OpenLIT leaves it "" (the content is in the attributes)
            record.body = REDACTED
        record.attributes = scrub(record.attributes)
        return data

    export_logs = log_memory.export
    log_memory.export = lambda batch: export_logs([redacted_log(d) for d in batch])


def build_server() -> Any:
    from mcp.server.fastmcp import FastMCP

    server = FastMCP("research-tools")

    @server.tool()
    def knowledge_query(question: str) -> str:
        """Answer a factual question from the knowledge base."""
        return story.knowledge_query(question)

    @server.tool()
    def calculator(expression: str) -> str:
        """Evaluate an arithmetic expression."""
        return story.calculator(expression)

    return server


@contextlib.asynccontextmanager
async def connected_session(server: Any) -> Any:
    """A ClientSession on the server over the SDK's in-memory streams: what the SDK's own
    ``mcp.shared.memory.create_connected_server_and_client_session`` does, which cannot be used under
    openlit 1.45 (its MCP instrumentation wraps that async context manager with a coroutine wrapper:
    "TypeError: 'coroutine' object does not support the asynchronous context manager protocol")."""
    import anyio
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    lowlevel = server._mcp_server  # what the SDK's helper runs, too
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: lowlevel.run(server_streams[0], server_streams[1],
                                                  lowlevel.create_initialization_options()))
            async with ClientSession(*client_streams) as session:
                await session.initialize()
                yield session
            tasks.cancel_scope.cancel()


async def agent_loop(client: Any, specs: list[Any], run_tool: Any, tracer: Any) -> str:
    root = (tracer.start_as_current_span(f"invoke_agent {story.AGENT}", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": story.AGENT,
        "gen_ai.provider.name": "openai", "gen_ai.request.model": "scripted-model"})
            if tracer else contextlib.nullcontext())
    with root:
        messages: list[Any] = [
            {"role": "system", "content": "You are a research assistant. Use the tools."},
            {"role": "user", "content": story.QUESTION},
        ]
        for _ in range(5):
            completion = await client.chat.completions.create(model="scripted-model", messages=messages,
                                                              tools=specs)
            message = completion.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                text = await run_tool(call.function.name, json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    raise RuntimeError("loop did not finish")


async def run(provider: Any) -> str:
    from openai import AsyncOpenAI

    from tests.interop.llm_server import ScriptedLLMServer

    tracer = None if capture.flag("no-root") else provider.get_tracer("tests.interop.openlit_agent")
    with ScriptedLLMServer(story.react_steps()) as llm:
        client = AsyncOpenAI(base_url=llm.url, api_key="test-key", max_retries=0)
        if TOOLS == "mcp":
            async with connected_session(build_server()) as session:
                listed = await session.list_tools()
                specs = [{"type": "function", "function": {
                    "name": t.name, "description": t.description or "", "parameters": t.inputSchema}}
                    for t in listed.tools]

                async def call_mcp(name: str, arguments: dict[str, Any]) -> str:
                    result = await session.call_tool(name, arguments)
                    return "".join(c.text for c in result.content if c.type == "text")

                answer = await agent_loop(client, specs, call_mcp, tracer)
        else:
            async def call_python(name: str, arguments: dict[str, Any]) -> str:
                return str(PY_TOOLS[name](**arguments))

            answer = await agent_loop(client, TOOL_SPECS, call_python, tracer)
        await client.close()
    assert llm.remaining == 0 and not llm.errors, llm.errors
    return answer


def main() -> None:
    provider, memory = capture.tracer_provider()
    log_provider, log_memory = capture.logger_provider()
    if CONTENT == "redacted":
        redact_exports(memory, log_memory)
    trace.set_tracer_provider(provider)  # openlit.init reuses the global SDK providers
    _logs.set_logger_provider(log_provider)

    import openlit

    with tempfile.TemporaryDirectory() as tmp:
        pricing = Path(tmp) / "pricing.json"
        pricing.write_text(json.dumps(PRICING))
        openlit.init(service_name="otel-prov-interop", environment="test",
                     capture_message_content=CONTENT != "off", pricing_json=str(pricing),
                     disable_metrics=True, collect_gpu_stats=False, collect_system_metrics=False)
    answer = asyncio.run(run(provider))
    assert answer == story.FINAL_ANSWER, answer
    capture.finish(guard, provider, memory, str(capture.option("out")), logs=(log_provider, log_memory))


if __name__ == "__main__":
    main()
