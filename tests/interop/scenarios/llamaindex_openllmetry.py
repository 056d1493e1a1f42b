"""LlamaIndex: a ``FunctionAgent`` (llama_index.core.agent.workflow) named "researcher" with the two
tools as ``FunctionTool``s and ``OpenAILike`` (llama-index-llms-openai-like, is_function_calling_model)
on the scripted server (Chat Completions, streamed: FunctionAgent's default), as in
tests/interop/scenarios/llamaindex_agent.py, instrumented by OpenLLMetry's LlamaIndex instrumentation
(opentelemetry-instrumentation-llamaindex, Traceloop: a span handler and an event handler on
LlamaIndex's dispatcher) instead of OpenInference.

  --content on|off|redacted   see tests/interop/scenarios/openllmetry_content.py
                      (off: TRACELOOP_TRACE_CONTENT=false; redacted: content on and the scenario's own
                      exporter writes "[REDACTED]": OpenLLMetry has no redaction of its own)
  --events            LlamaIndexInstrumentor(use_legacy_attributes=False): the LLM messages as OTLP log
                      records (GenAI events) instead of span attributes, written to OUT.logs

usage: python -m tests.interop.scenarios.llamaindex_openllmetry --out FILE [--content on|off|redacted]
       [--events]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

from tests.interop.scenarios import openllmetry_content  # noqa: E402

CONTENT = openllmetry_content.configure()
EVENTS = capture.flag("events")

import asyncio  # noqa: E402

from llama_index.core.agent.workflow import AgentOutput, FunctionAgent  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402
from llama_index.llms.openai_like import OpenAILike  # noqa: E402
from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402


def knowledge_query(question: str) -> str:
    """Answer a factual question from the knowledge base."""
    return story.knowledge_query(question)


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return story.calculator(expression)


async def run(server: ScriptedLLMServer) -> AgentOutput:
    llm = OpenAILike(model="scripted-model", api_base=server.url, api_key="test-key", max_retries=0,
                     is_chat_model=True, is_function_calling_model=True, context_window=8192)
    tools = [FunctionTool.from_defaults(fn=knowledge_query, name=story.TOOL_1,
                                        description=story.TOOL_DESCRIPTIONS[story.TOOL_1]),
             FunctionTool.from_defaults(fn=calculator, name=story.TOOL_2,
                                        description=story.TOOL_DESCRIPTIONS[story.TOOL_2])]
    agent = FunctionAgent(name=story.AGENT, description="Looks facts up and computes numbers.",
                          tools=tools, llm=llm, system_prompt="Answer with the tools.")
    handler = agent.run(user_msg=story.QUESTION)
    return await handler


def main() -> None:
    provider, memory = openllmetry_content.tracer_provider(CONTENT)
    logs = openllmetry_content.logger_provider(CONTENT)
    instrumentor = LlamaIndexInstrumentor(use_legacy_attributes=not EVENTS)
    instrumentor.instrument(tracer_provider=provider, logger_provider=logs[0])
    try:
        with ScriptedLLMServer(story.react_steps()) as server:
            output = asyncio.run(run(server))
            assert server.remaining == 0 and not server.errors, (server.remaining, server.errors)
        answer = output.response.content
        assert answer == story.FINAL_ANSWER, answer
        assert output.current_agent_name == story.AGENT, output.current_agent_name
    finally:
        instrumentor.uninstrument()
    capture.finish(guard, provider, memory, str(capture.option("out")), logs=logs)


if __name__ == "__main__":
    main()
