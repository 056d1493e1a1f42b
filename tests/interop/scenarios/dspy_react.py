"""DSPy: ``dspy.ReAct("question -> answer")`` with the two tools (plain functions, made dspy.Tools by
ReAct) and ``dspy.LM("openai/scripted-model")`` on the scripted server (Chat Completions, cache off),
instrumented by OpenInference's DSPy instrumentation (LM.__call__, Predict.forward, Module.__call__,
Adapter.__call__, Tool.__call__ spans).

DSPy's ReAct does not use the API's tool calls: its ChatAdapter asks for, and parses, text with field
markers, so the scripted model answers four times in that format: next_thought / next_tool_name /
next_tool_args (JSON) for each tool, then for ReAct's own "finish" tool, then the extract step's
ChainOfThought (reasoning, answer).  DSPy's cache goes to a temporary directory and is switched off.

  --engine auto      dspy.LM's default engine: DSPy's vendored native client (dspy._vendor.lm15),
                     which takes "openai/..." with api_base; LiteLLM is not even imported
  --engine litellm   the LiteLLM compatibility engine, kept offline (LITELLM_LOCAL_MODEL_COST_MAP,
                     LITELLM_OFFLINE_MODE); the same spans (the instrumentation wraps dspy.LM)

  --content on|off|redacted   see tests/interop/scenarios/openinference_content.py
                              (redacted: OPENINFERENCE_HIDE_INPUTS / _OUTPUTS; off: an exporter of
                              the scenario's own drops the content attributes)

usage: python -m tests.interop.scenarios.dspy_react --out FILE [--content on|off|redacted]
       [--engine auto|litellm]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import atexit  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

from tests.interop.scenarios import openinference_content  # noqa: E402

CONTENT = openinference_content.configure()
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["LITELLM_OFFLINE_MODE"] = "true"
os.environ["LITELLM_TELEMETRY"] = "False"
os.environ["DSPY_CACHEDIR"] = tempfile.mkdtemp(prefix="dspy-cache-")
atexit.register(shutil.rmtree, os.environ["DSPY_CACHEDIR"], True)
ENGINE = capture.option("engine", "auto")
if ENGINE not in ("auto", "litellm"):
    raise SystemExit(f"unknown --engine {ENGINE}")

import dspy  # noqa: E402
from openinference.instrumentation.dspy import DSPyInstrumentor  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402
from tests.interop.story import Step  # noqa: E402


def knowledge_query(question: str) -> str:
    """Answer a factual question from the knowledge base."""
    return story.knowledge_query(question)


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return story.calculator(expression)


def fields(**values: str) -> str:
    """The text DSPy's ChatAdapter parses: each output field after its marker, then completed."""
    parts = [f"[[ ## {name} ## ]]\n{value}\n\n" for name, value in values.items()]
    return "".join(parts) + "[[ ## completed ## ]]"


def steps() -> list[Step]:
    """The story in DSPy's format: two tool turns, ReAct's "finish" turn, the extract's answer."""
    return [
        Step(final=fields(next_thought=story.THOUGHT_1, next_tool_name=story.TOOL_1,
                          next_tool_args=json.dumps(story.TOOL_1_ARGS))),
        Step(final=fields(next_thought=story.THOUGHT_2, next_tool_name=story.TOOL_2,
                          next_tool_args=json.dumps(story.TOOL_2_ARGS))),
        Step(final=fields(next_thought=story.FINAL_THOUGHT, next_tool_name="finish", next_tool_args="{}")),
        Step(final=fields(reasoning=story.FINAL_THOUGHT, answer=story.FINAL_ANSWER)),
    ]


def main() -> None:
    provider, memory = openinference_content.tracer_provider(CONTENT)
    instrumentor = DSPyInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
        with ScriptedLLMServer(steps()) as server:
            lm = dspy.LM("openai/scripted-model", api_base=server.url, api_key="test-key", cache=False,
                         num_retries=0, engine=ENGINE)
            dspy.configure(lm=lm, adapter=dspy.ChatAdapter())
            agent = dspy.ReAct("question -> answer", tools=[knowledge_query, calculator], max_iters=5)
            prediction = agent(question=story.QUESTION)
            assert server.remaining == 0 and not server.errors, (server.remaining, server.errors)
        assert prediction.answer == story.FINAL_ANSWER, prediction.answer
        trajectory = prediction.trajectory
        assert trajectory["observation_0"] == story.TOOL_1_RESULT, trajectory
        assert trajectory["observation_1"] == story.TOOL_2_RESULT, trajectory
        assert ("litellm" in sys.modules) == (ENGINE == "litellm"), "the engine is not the one chosen"
    finally:
        instrumentor.uninstrument()
    capture.finish(guard, provider, memory, str(capture.option("out")))


if __name__ == "__main__":
    main()
