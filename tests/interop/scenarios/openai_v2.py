"""OTel openai-v2: a bare tool loop with the openai client (no parent span: one trace per LLM call).

Content capture follows OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT (the runner sets it, or
leaves the default, no content); with EVENT_ONLY the content goes to log records (the
``gen_ai.client.inference.operation.details`` event), captured too.  With --util-genai the loop runs
inside util-genai's own agent API: workflow -> invoke_local_agent -> (the instrumentation's chat
spans) + execute_tool spans.

usage: python -m tests.interop.scenarios.openai_v2 --out FILE [--util-genai]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import json  # noqa: E402
from typing import Any  # noqa: E402

import openai  # noqa: E402
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402

TOOLS = {story.TOOL_1: story.knowledge_query, story.TOOL_2: story.calculator}
TOOL_SPECS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": story.TOOL_DESCRIPTIONS[name],
            "parameters": {"type": "object", "properties": {param: {"type": "string"}}, "required": [param]},
        },
    }
    for name, param in ((story.TOOL_1, "question"), (story.TOOL_2, "expression"))
]


def run_loop(client: openai.OpenAI, run_tool: Any) -> str:
    messages: list[Any] = [
        {"role": "system", "content": "You are a research assistant. Use the tools."},
        {"role": "user", "content": story.QUESTION},
    ]
    for _ in range(5):
        completion = client.chat.completions.create(model="scripted-model", messages=messages,
                                                    tools=TOOL_SPECS)  # type: ignore[arg-type]
        message = completion.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": run_tool(call)})
    raise RuntimeError("loop did not finish")


def run_with_util_genai(provider: Any, client: openai.OpenAI) -> str:
    """util-genai's agent API around the same loop (what a hand-instrumented agent does)."""
    from opentelemetry.util.genai.handler import TelemetryHandler
    from opentelemetry.util.genai.types import InputMessage, OutputMessage, Text

    handler = TelemetryHandler(tracer_provider=provider)
    with handler.workflow(story.WORKFLOW) as workflow:
        workflow.input_messages = [InputMessage(role="user", parts=[Text(content=story.QUESTION)])]
        with handler.invoke_local_agent(agent_name=story.AGENT, request_model="scripted-model") as agent:
            agent.conversation_id = "conv-42"  # util-genai 1.1b0: an attribute, not a keyword
            agent.input_messages = [InputMessage(role="user", parts=[Text(content=story.QUESTION)])]

            def run_tool(call: Any) -> str:
                with handler.tool(call.function.name, tool_type="function") as tool:
                    tool.tool_call_id = call.id
                    arguments = json.loads(call.function.arguments)
                    tool.arguments = arguments
                    result: str = TOOLS[call.function.name](**arguments)
                    tool.tool_result = result
                    return result

            answer = run_loop(client, run_tool)
            agent.output_messages = [OutputMessage(role="assistant", parts=[Text(content=answer)],
                                                   finish_reason="stop")]
        workflow.output_messages = [OutputMessage(role="assistant", parts=[Text(content=answer)],
                                                  finish_reason="stop")]
    return answer


def main() -> None:
    provider, memory = capture.tracer_provider()
    logs = capture.logger_provider()
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, logger_provider=logs[0])
    try:
        with ScriptedLLMServer(story.react_steps()) as server:
            client = openai.OpenAI(base_url=server.url, api_key="test-key", max_retries=0)
            if capture.flag("util-genai"):
                answer = run_with_util_genai(provider, client)
            else:
                answer = run_loop(client, lambda call: TOOLS[call.function.name](
                    **json.loads(call.function.arguments)))
            client.close()
        assert answer == story.FINAL_ANSWER, answer
        assert server.remaining == 0 and not server.errors, server.errors
    finally:
        instrumentor.uninstrument()
    capture.finish(guard, provider, memory, str(capture.option("out")), logs)


if __name__ == "__main__":
    main()
