"""smolagents, instrumented by OpenInference's smolagents instrumentation.

  --agent toolcalling   ToolCallingAgent: every step is a tool call, the last one to ``final_answer``
  --agent code          CodeAgent: the model writes "Thought: ..." and a <code> block calling the tools
  --model server        OpenAIServerModel against the scripted OpenAI-compatible server (default)
  --model subclass      a scripted ``smolagents.Model`` subclass (no HTTP; the instrumentation then
                        records no LLM span: it wraps only the model classes smolagents exports)

usage: python -m tests.interop.scenarios.smolagents_agent --out FILE --agent toolcalling|code
       [--model server|subclass]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

from typing import Any  # noqa: E402

import smolagents  # noqa: E402
from openinference.instrumentation import using_session  # noqa: E402
from openinference.instrumentation.smolagents import SmolagentsInstrumentor  # noqa: E402
from smolagents import tool  # noqa: E402  (the bare decorator: a qualified one warns)
from smolagents.models import ChatMessageToolCall, ChatMessageToolCallFunction  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402
from tests.interop.story import Step, ToolCall  # noqa: E402

AGENT = capture.option("agent")
MODEL = capture.option("model", "server")


@tool
def knowledge_query(question: str) -> str:
    """Answer a factual question from the knowledge base.

    Args:
        question: The question to look up.
    """
    return story.knowledge_query(question)


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: The arithmetic expression.
    """
    return story.calculator(expression)


def tool_calling_steps() -> list[Step]:
    steps = story.react_steps()[:2]
    final = ToolCall("final_answer", {"answer": story.FINAL_ANSWER}, "call_3")
    steps.append(Step(story.FINAL_THOUGHT, [final]))
    return steps


def code_steps() -> list[Step]:
    """CodeAgent answers are plain text: 'Thought: ...' and a <code> block."""

    def code(thought: str, body: str) -> Step:
        return Step(final=f"Thought: {thought}\n<code>\n{body}\n</code>")

    return [
        code(story.THOUGHT_1, 'capital = knowledge_query(question="capital of France")\nprint(capital)'),
        code(story.THOUGHT_2, 'density = calculator(expression="2102650 / 105.4")\nprint(density)'),
        code(story.FINAL_THOUGHT, f'final_answer("{story.FINAL_ANSWER}")'),
    ]


class ScriptedModel(smolagents.Model):
    """A Model subclass answering from the script (it overrides generate, as smolagents documents)."""

    def __init__(self, steps: list[Step]) -> None:
        super().__init__(model_id="scripted-model")
        self.steps = list(steps)

    def generate(self, messages: Any, stop_sequences: Any = None, response_format: Any = None,
                 tools_to_call_from: Any = None, **kwargs: Any) -> smolagents.ChatMessage:
        step = self.steps.pop(0)
        calls = [ChatMessageToolCall(id=c.call_id, type="function",
                                     function=ChatMessageToolCallFunction(name=c.name, arguments=c.arguments))
                 for c in step.tool_calls] or None
        return smolagents.ChatMessage(role=smolagents.MessageRole.ASSISTANT,
                                      content=step.final or step.thought, tool_calls=calls,
                                      token_usage=smolagents.TokenUsage(input_tokens=21, output_tokens=7))


def build_agent(model: Any) -> Any:
    common: dict[str, Any] = dict(tools=[knowledge_query, calculator], model=model, name=story.AGENT,
                                  description="Looks facts up and computes.", max_steps=5,
                                  verbosity_level=smolagents.LogLevel.OFF)
    if AGENT == "toolcalling":
        return smolagents.ToolCallingAgent(**common)
    if AGENT == "code":
        return smolagents.CodeAgent(**common)
    raise SystemExit(f"unknown --agent {AGENT}")


def main() -> None:
    provider, memory = capture.tracer_provider()
    instrumentor = SmolagentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    steps = tool_calling_steps() if AGENT == "toolcalling" else code_steps()
    server = None
    try:
        model: Any
        if MODEL == "server":
            server = ScriptedLLMServer(steps).__enter__()
            model = smolagents.OpenAIServerModel(model_id="scripted-model", api_base=server.url,
                                                 api_key="test-key", client_kwargs={"max_retries": 0})
        else:
            model = ScriptedModel(steps)
        with using_session("session-7"):
            answer = build_agent(model).run(story.QUESTION)
        assert answer == story.FINAL_ANSWER, answer
        assert (server.remaining if server else len(model.steps)) == 0
    finally:
        instrumentor.uninstrument()
        if server:
            server.__exit__(None, None, None)
    capture.finish(guard, provider, memory, str(capture.option("out")))


if __name__ == "__main__":
    main()
