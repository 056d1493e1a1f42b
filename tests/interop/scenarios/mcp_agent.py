"""An MCP tool server (the SDK's FastMCP, with the two tools) called by a small agent loop: the openai
client on the scripted server (Chat Completions with the tools the server lists), each tool call made
through an MCP ``ClientSession.call_tool``.  Instrumented by OpenLLMetry (Traceloop):
``opentelemetry-instrumentation-mcp`` (client ``tools/call`` spans, and the server transport's
response spans) and ``opentelemetry-instrumentation-openai`` (the model calls).

The loop opens a root span "invoke_agent researcher" (gen_ai.operation.name=invoke_agent,
gen_ai.agent.name=researcher) around the model calls and the tool calls, as a user of the GenAI
conventions would; the MCP session is opened (initialize, tools/list) before it.

  --transport stdio   the server is a subprocess on stdio (this module with --serve) that writes its
                      own spans, merged into --out (default)
  --transport memory  the server runs in this process, on the SDK's in-memory streams
  --no-root           no invoke_agent span: each model call and each tool call is its own trace
  --content on        TRACELOOP_TRACE_CONTENT=true (the instrumentations' default)
  --content off       TRACELOOP_TRACE_CONTENT=false
  --content redacted  content on, and an exporter wrapper here (in the server too) writes
                      "[REDACTED]" over every content-bearing attribute (OpenLLMetry has no
                      redaction option of its own)

usage: python -m tests.interop.scenarios.mcp_agent --out FILE [--content on|off|redacted]
       [--transport stdio|memory] [--no-root]
"""

from __future__ import annotations

import os

from tests.interop import capture

guard = capture.start()

CONTENT = capture.option("content", "on")
if CONTENT not in ("on", "off", "redacted"):
    raise SystemExit(f"unknown --content {CONTENT}")
TRANSPORT = capture.option("transport", "stdio")
if TRANSPORT not in ("stdio", "memory"):
    raise SystemExit(f"unknown --transport {TRANSPORT}")
os.environ["TRACELOOP_TRACE_CONTENT"] = "false" if CONTENT == "off" else "true"
os.environ["TRACELOOP_METRICS_ENABLED"] = "false"

import asyncio  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from opentelemetry.instrumentation.mcp import McpInstrumentor  # noqa: E402

from tests.interop import story  # noqa: E402

SERVER_SERVICE = "otel-prov-interop-mcp-server"
"""The service.name of the stdio server subprocess's spans (the client's: capture's)."""
REDACTED = "[REDACTED]"
CONTENT_KEYS = re.compile(
    r"^(gen_ai\.(input|output)\.messages|gen_ai\.system_instructions|gen_ai\.(prompt|completion)\..*"
    r"|gen_ai\.tool\.call\.(arguments|result)|traceloop\.entity\.(input|output)|mcp\.response\.value)$")
"""The attributes that carry content in these instrumentations' spans (seen in --content on)."""


def redact_exports(memory: Any) -> None:
    """What a user's own redaction does at the exporter: every content-bearing attribute (and event
    attribute) of every span is replaced by "[REDACTED]" before it is stored."""
    from opentelemetry.sdk.trace import Event, ReadableSpan

    def scrub(attributes: Any) -> dict[str, Any]:
        return {k: (REDACTED if CONTENT_KEYS.match(k) else v) for k, v in (attributes or {}).items()}

    def redacted(span: ReadableSpan) -> ReadableSpan:
        return ReadableSpan(
            name=span.name, context=span.context, parent=span.parent, resource=span.resource,
            attributes=scrub(span.attributes),
            events=[Event(e.name, scrub(e.attributes), e.timestamp) for e in span.events],
            links=span.links, kind=span.kind, status=span.status, start_time=span.start_time,
            end_time=span.end_time, instrumentation_scope=span.instrumentation_scope)

    export = memory.export
    memory.export = lambda spans: export([redacted(s) for s in spans])


def server_tracer_provider() -> tuple[Any, Any]:
    """capture.tracer_provider(), with the server process's own service.name."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": SERVER_SERVICE}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def instrumented_provider(server: bool = False) -> tuple[Any, Any, McpInstrumentor]:
    provider, memory = server_tracer_provider() if server else capture.tracer_provider()
    if CONTENT == "redacted":
        redact_exports(memory)
    instrumentor = McpInstrumentor()
    instrumentor.instrument(tracer_provider=provider)  # before mcp's transports are imported
    return provider, memory, instrumentor


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


def serve() -> None:
    """The stdio server subprocess: serves until the client closes stdin, then writes its spans."""
    provider, memory, _ = instrumented_provider(server=True)
    build_server().run("stdio")
    with contextlib.redirect_stdout(sys.stderr):  # stdout is the protocol channel
        capture.finish(guard, provider, memory, str(capture.option("out")))


async def agent_loop(session: Any, client: Any, tracer: Any) -> str:
    listed = await session.list_tools()
    specs = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                               "parameters": t.inputSchema}} for t in listed.tools]
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
                result = await session.call_tool(call.function.name, json.loads(call.function.arguments))
                text = "".join(c.text for c in result.content if c.type == "text")
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    raise RuntimeError("loop did not finish")


async def run(provider: Any, server_out: Path) -> str:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from openai import AsyncOpenAI

    from tests.interop.llm_server import ScriptedLLMServer

    tracer = None if capture.flag("no-root") else provider.get_tracer("tests.interop.mcp_agent")
    with ScriptedLLMServer(story.react_steps()) as llm:
        client = AsyncOpenAI(base_url=llm.url, api_key="test-key", max_retries=0)
        if TRANSPORT == "memory":
            from mcp.shared.memory import create_connected_server_and_client_session

            async with create_connected_server_and_client_session(build_server()) as session:
                answer = await agent_loop(session, client, tracer)
        else:
            params = StdioServerParameters(
                command=sys.executable, cwd=os.getcwd(), env=dict(os.environ),
                args=["-m", "tests.interop.scenarios.mcp_agent", "--serve", "--out", str(server_out),
                      "--content", CONTENT])
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                answer = await agent_loop(session, client, tracer)
        await client.close()
    assert llm.remaining == 0 and not llm.errors, llm.errors
    return answer


def merge(out: Path, server_out: Path) -> None:
    """Appends the server subprocess's spans (its own resource) to the client's OTLP request."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    if not server_out.exists():
        raise SystemExit(f"the MCP server subprocess wrote no spans ({server_out})")
    request = ExportTraceServiceRequest.FromString(out.read_bytes())
    served = ExportTraceServiceRequest.FromString(server_out.read_bytes())
    request.resource_spans.extend(served.resource_spans)
    out.write_bytes(request.SerializeToString())
    count = sum(len(ss.spans) for rs in served.resource_spans for ss in rs.scope_spans)
    print(f"+ {count} spans of the MCP server subprocess merged -> {out}")


def main() -> None:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    provider, memory, instrumentor = instrumented_provider()
    openai_instrumentor = OpenAIInstrumentor()
    openai_instrumentor.instrument(tracer_provider=provider)
    out = Path(str(capture.option("out")))
    with tempfile.TemporaryDirectory() as tmp:
        server_out = Path(tmp) / "server.otlp"
        try:
            answer = asyncio.run(run(provider, server_out))
            assert answer == story.FINAL_ANSWER, answer
        finally:
            openai_instrumentor.uninstrument()
            instrumentor.uninstrument()
        capture.finish(guard, provider, memory, str(out))
        if TRANSPORT == "stdio":
            merge(out, server_out)


if __name__ == "__main__":
    serve() if capture.flag("serve") else main()
