"""BeeAI framework: a ``RequirementAgent`` named "researcher" with the two tools (``@tool``), its
OpenAI chat model (``OpenAIChatModel``, which goes through LiteLLM) pointed at the scripted server
(Chat Completions), instrumented by OpenInference's BeeAI instrumentation (it listens to BeeAI's
emitter and builds the spans when a run ends).

``final_answer_as_tool=False``: the model's last answer is plain text, which the agent turns into its
own ``final_answer`` tool call (the story's script as it is: two tool calls, then the answer).
LiteLLM's remote model-cost map is not fetched (LITELLM_LOCAL_MODEL_COST_MAP=True).

  --content on|off|redacted   as tests/interop/scenarios/openinference_content.py says (redacted:
                      OpenInference's own OPENINFERENCE_HIDE_INPUTS/OUTPUTS; off: the scenario's own
                      exporter drops the content attributes), with the BeeAI instrumentation's own
                      content-bearing attributes (the agent span's metadata.steps.N.input.* /
                      .output and metadata.result.*) added to the dropped ones for off: the hide
                      options leave them as they are

usage: python -m tests.interop.scenarios.beeai_agent --out FILE [--content on|off|redacted]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import asyncio  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402

from tests.interop.scenarios import openinference_content  # noqa: E402

CONTENT = openinference_content.configure()
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["LITELLM_TELEMETRY"] = "False"

from beeai_framework.adapters.openai import OpenAIChatModel  # noqa: E402
from beeai_framework.agents.requirement import RequirementAgent  # noqa: E402
from beeai_framework.tools import StringToolOutput, tool  # noqa: E402
from openinference.instrumentation.beeai import BeeAIInstrumentor  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402

BEEAI_CONTENT = re.compile(r"metadata\.(steps\.\d+\.(input|output)|result)(\.|$)")
"""The BeeAI instrumentation's own attributes that carry content: each step's tool input and output,
and the run's result, flattened onto the agent span (seen with --content on)."""


def is_content(key: str) -> bool:
    return openinference_content.is_content(key) or BEEAI_CONTENT.match(key) is not None


@tool
def knowledge_query(question: str) -> StringToolOutput:
    """Answer a factual question from the knowledge base."""
    return StringToolOutput(story.knowledge_query(question))


@tool
def calculator(expression: str) -> StringToolOutput:
    """Evaluate an arithmetic expression."""
    return StringToolOutput(story.calculator(expression))


async def run(server: ScriptedLLMServer) -> str:
    llm = OpenAIChatModel("scripted-model", base_url=server.url, api_key="test-key")
    agent = RequirementAgent(llm=llm, tools=[knowledge_query, calculator], name=story.AGENT,
                             description="Looks facts up and computes.", final_answer_as_tool=False)
    output = await agent.run(story.QUESTION)
    return output.last_message.text


def main() -> None:
    if CONTENT == "off":
        from tests.interop.scenarios.native_redaction import redacting_tracer_provider

        provider, memory = redacting_tracer_provider(is_content, drop=True)
    else:
        provider, memory = capture.tracer_provider()
    instrumentor = BeeAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with ScriptedLLMServer(story.react_steps()) as server:
            answer = asyncio.run(run(server))
        assert answer == story.FINAL_ANSWER, answer
        assert server.remaining == 0 and not server.errors, server.errors
    finally:
        instrumentor.uninstrument()
    capture.finish(guard, provider, memory, str(capture.option("out")))


if __name__ == "__main__":
    main()
