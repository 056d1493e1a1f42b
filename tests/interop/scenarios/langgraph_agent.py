"""A LangGraph ReAct agent with a scripted chat model, instrumented by OpenInference's LangChain
instrumentation (OPENINFERENCE_ENABLE_GENAI_SEMCONV=true, set by the runner, adds the GenAI keys).

  --flavor prebuilt      langgraph.prebuilt.create_react_agent (deprecated, still common)
  --flavor create_agent  langchain.agents.create_agent(name="researcher")
  --reasoning-blocks     the thought comes as a {"type": "reasoning"} content block, not as text

usage: python -m tests.interop.scenarios.langgraph_agent --out FILE --flavor prebuilt|create_agent
       [--reasoning-blocks]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import warnings  # noqa: E402
from typing import Any  # noqa: E402

from langchain_core.messages import HumanMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from openinference.instrumentation.langchain import LangChainInstrumentor  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.lc_fake import ScriptedChatModel  # noqa: E402

FLAVOR = capture.option("flavor")


@tool
def knowledge_query(question: str) -> str:
    """Answer a factual question from the knowledge base."""
    return story.knowledge_query(question)


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return story.calculator(expression)


def build_agent(model: ScriptedChatModel) -> Any:
    tools = [knowledge_query, calculator]
    if FLAVOR == "prebuilt":
        from langgraph.prebuilt import create_react_agent

        with warnings.catch_warnings():  # "moved to langchain.agents": the old entry point on purpose
            warnings.simplefilter("ignore")
            return create_react_agent(model, tools, prompt="Answer with the tools.",
                                      checkpointer=InMemorySaver())
    if FLAVOR == "create_agent":
        from langchain.agents import create_agent

        return create_agent(model, tools, system_prompt="Answer with the tools.", name=story.AGENT,
                            checkpointer=InMemorySaver())
    raise SystemExit(f"unknown --flavor {FLAVOR}")


def main() -> None:
    provider, memory = capture.tracer_provider()
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        model = ScriptedChatModel(steps=story.react_steps(),
                                  reasoning_blocks=capture.flag("reasoning-blocks"))
        config: Any = {"configurable": {"thread_id": "thread-1"}, "metadata": {"user_id": "alice"}}
        state = build_agent(model).invoke({"messages": [HumanMessage(story.QUESTION)]}, config=config)
        answer = state["messages"][-1].content
        assert answer == story.FINAL_ANSWER, answer
        assert model.remaining == 0
    finally:
        instrumentor.uninstrument()
    capture.finish(guard, provider, memory, str(capture.option("out")))


if __name__ == "__main__":
    main()
