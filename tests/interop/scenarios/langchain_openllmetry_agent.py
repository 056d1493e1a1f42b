"""LangChain ``create_agent`` (a LangGraph ReAct graph named "researcher") on ``ChatOpenAI`` against the
scripted server (Chat Completions), instrumented by OpenLLMetry's LangChain instrumentation
(Traceloop's ``opentelemetry-instrumentation-langchain``; a LangChain callback handler, so tool and
chain inputs are the callback's arguments).

  --content on        TRACELOOP_TRACE_CONTENT=true (the instrumentation's default)
  --content off       TRACELOOP_TRACE_CONTENT=false
  --content redacted  content on, and an exporter wrapper in this scenario writes "[REDACTED]" over
                      every content-bearing attribute (OpenLLMetry has no redaction option of its own)

usage: python -m tests.interop.scenarios.langchain_openllmetry_agent --out FILE [--content on|off|redacted]
"""

from __future__ import annotations

import os

from tests.interop import capture

guard = capture.start()

CONTENT = capture.option("content", "on")
if CONTENT not in ("on", "off", "redacted"):
    raise SystemExit(f"unknown --content {CONTENT}")
os.environ["TRACELOOP_TRACE_CONTENT"] = "false" if CONTENT == "off" else "true"
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGCHAIN_TRACING_V2"] = "false"

import re  # noqa: E402
from typing import Any  # noqa: E402

from langchain_core.messages import HumanMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from opentelemetry.instrumentation.langchain import LangchainInstrumentor  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402

REDACTED = "[REDACTED]"
CONTENT_KEYS = re.compile(
    r"^(gen_ai\.(input|output)\.messages|gen_ai\.system_instructions|gen_ai\.(prompt|completion)\..*"
    r"|gen_ai\.tool\.call\.(arguments|result)|gen_ai\.task\.(input|output)|traceloop\.entity\.(input|output))$")
"""The attributes that carry content in this instrumentation's spans (seen in --content on)."""


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


@tool
def knowledge_query(question: str) -> str:
    """Answer a factual question from the knowledge base."""
    return story.knowledge_query(question)


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return story.calculator(expression)


def main() -> None:
    provider, memory = capture.tracer_provider()
    if CONTENT == "redacted":
        redact_exports(memory)
    instrumentor = LangchainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        from langchain.agents import create_agent  # after instrument(): it wraps this factory

        with ScriptedLLMServer(story.react_steps()) as server:
            model = ChatOpenAI(base_url=server.url, api_key="x", model="scripted-model", max_retries=0)
            agent = create_agent(model, [knowledge_query, calculator], system_prompt="Answer with the tools.",
                                 name=story.AGENT)
            state = agent.invoke({"messages": [HumanMessage(story.QUESTION)]})
        answer = state["messages"][-1].content
        assert answer == story.FINAL_ANSWER, answer
        assert server.remaining == 0 and not server.errors, server.errors
    finally:
        instrumentor.uninstrument()
    capture.finish(guard, provider, memory, str(capture.option("out")))


if __name__ == "__main__":
    main()
