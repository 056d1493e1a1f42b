"""OpenAI Agents SDK: a triage agent hands off to a "researcher" agent, which calls both tools.

Instrumented by one of three instrumentations (the runner puts the right one on PYTHONPATH: two of
them install the same import package, ``opentelemetry.instrumentation.openai_agents``):

  otel           opentelemetry-instrumentation-openai-agents-v2   (OpenTelemetry contrib)
  openinference  openinference-instrumentation-openai-agents
  traceloop      opentelemetry-instrumentation-openai-agents      (Traceloop / OpenLLMetry)

The model is the scripted server, through the Responses API (the SDK's default) or Chat Completions.

usage: python -m tests.interop.scenarios.agents_sdk --out FILE --instr otel|openinference|traceloop
       [--api responses|chat_completions] [--thought-as both|reasoning|message]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import asyncio  # noqa: E402
from typing import Any  # noqa: E402

import agents  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402

INSTR = capture.option("instr")
API = capture.option("api", "responses")
THOUGHT_AS = capture.option("thought-as", "both")


@agents.function_tool
def knowledge_query(question: str) -> str:
    """Answer a factual question from the knowledge base."""
    return story.knowledge_query(question)


@agents.function_tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return story.calculator(expression)


def build_agents() -> agents.Agent[Any]:
    researcher: agents.Agent[Any] = agents.Agent(
        name=story.AGENT, handoff_description="Looks facts up and computes numbers.",
        instructions="Answer with the tools.", tools=[knowledge_query, calculator], model="scripted-model")
    return agents.Agent(name=story.TRIAGE, instructions="Hand research questions to the researcher.",
                        handoffs=[researcher], model="scripted-model")


async def run(server: ScriptedLLMServer) -> str:
    client = AsyncOpenAI(base_url=server.url, api_key="test-key", max_retries=0)
    agents.set_default_openai_client(client, use_for_tracing=False)
    agents.set_default_openai_api(API)  # type: ignore[arg-type]
    config = agents.RunConfig(workflow_name=story.WORKFLOW, group_id="conv-42")
    try:
        result = await agents.Runner.run(build_agents(), story.QUESTION, run_config=config)
    finally:
        await client.close()
    return str(result.final_output)


def instrumentor() -> Any:
    if INSTR == "openinference":
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
        return OpenAIAgentsInstrumentor()
    if INSTR in ("otel", "traceloop"):
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor as Instrumentor
        return Instrumentor()
    raise SystemExit(f"unknown --instr {INSTR}")


def main() -> None:
    # The SDK's own trace processor exports to OpenAI's servers: drop it before the instrumentor adds
    # its own.  (set_tracing_disabled would silence the instrumentors too: they hang off the same tracing.)
    agents.set_trace_processors([])
    provider, memory = capture.tracer_provider()
    instr = instrumentor()
    instr.instrument(tracer_provider=provider)
    handoff_tool = agents.handoff(build_agents().handoffs[0]).tool_name  # type: ignore[arg-type]
    try:
        with ScriptedLLMServer(story.react_steps(handoff_tool), responses_thought=str(THOUGHT_AS)) as server:
            if INSTR == "openinference":
                from openinference.instrumentation import using_session

                with using_session("session-7"):
                    answer = asyncio.run(run(server))
            else:
                answer = asyncio.run(run(server))
        assert answer == story.FINAL_ANSWER, answer
        assert server.remaining == 0 and not server.errors, server.errors
    finally:
        instr.uninstrument()
    capture.finish(guard, provider, memory, str(capture.option("out")))


if __name__ == "__main__":
    main()
