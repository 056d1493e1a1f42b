"""A hand-written tool loop on the Anthropic SDK (``anthropic.Anthropic().messages.create`` with the two
tools; the ``tool_use`` blocks are run and their results sent back as ``tool_result`` blocks), run
under one span of the scenario's own, as a user who names the agent writes it: 'invoke_agent
researcher' (INTERNAL; gen_ai.operation.name=invoke_agent, gen_ai.agent.name=researcher; no content on
it), so the model calls are its children.  Instrumented by OpenLLMetry's Anthropic instrumentation
(opentelemetry-instrumentation-anthropic, Traceloop: one 'anthropic.chat' span per model call; the
tools are not traced), against the scripted Messages API server (tests/interop/anthropic_server.py).

  --content on|off|redacted   see tests/interop/scenarios/openllmetry_content.py
                      (off: TRACELOOP_TRACE_CONTENT=false; redacted: content on and the scenario's own
                      exporter writes "[REDACTED]": OpenLLMetry has no redaction of its own)
  --no-root           no agent span: each model call is a trace of its own, as a user of the bare SDK
                      gets
  --stream            ``messages.stream(...)`` (the SSE path of the SDK and of the instrumentation)
  --events            AnthropicInstrumentor(use_attributes=False): the content as OTLP log records
                      (GenAI events) instead of span attributes, written to OUT.logs

usage: python -m tests.interop.scenarios.anthropic_loop --out FILE [--content on|off|redacted]
       [--no-root] [--stream] [--events]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

from tests.interop.scenarios import openllmetry_content  # noqa: E402

CONTENT = openllmetry_content.configure()
ROOT = not capture.flag("no-root")
STREAM = capture.flag("stream")
EVENTS = capture.flag("events")

from contextlib import nullcontext  # noqa: E402
from typing import Any  # noqa: E402

import anthropic  # noqa: E402
from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor  # noqa: E402
from opentelemetry.trace import SpanKind  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.anthropic_server import ScriptedAnthropicServer  # noqa: E402

TOOLS = {story.TOOL_1: story.knowledge_query, story.TOOL_2: story.calculator}
TOOL_SPECS = [
    {"name": name, "description": story.TOOL_DESCRIPTIONS[name],
     "input_schema": {"type": "object", "properties": {param: {"type": "string"}}, "required": [param]}}
    for name, param in ((story.TOOL_1, "question"), (story.TOOL_2, "expression"))
]
SYSTEM = "You are a research assistant. Use the tools."
TRACER = "tests.interop.scenarios.anthropic_loop"


def ask(client: anthropic.Anthropic, messages: list[Any]) -> Any:
    kwargs: dict[str, Any] = dict(model="scripted-model", max_tokens=512, system=SYSTEM, messages=messages,
                                  tools=TOOL_SPECS)
    if STREAM:
        with client.messages.stream(**kwargs) as stream:
            for _ in stream:
                pass
            return stream.get_final_message()
    return client.messages.create(**kwargs)


def run_loop(client: anthropic.Anthropic) -> str:
    messages: list[Any] = [{"role": "user", "content": story.QUESTION}]
    for _ in range(5):
        response = ask(client, messages)
        if response.stop_reason != "tool_use":
            return "".join(b.text for b in response.content if b.type == "text")
        uses = [b for b in response.content if b.type == "tool_use"]
        messages.append({"role": "assistant",
                         "content": [b.model_dump(exclude_none=True) for b in response.content]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b.id, "content": TOOLS[b.name](**b.input)} for b in uses]})
    raise RuntimeError("the loop did not finish")


def main() -> None:
    provider, memory = openllmetry_content.tracer_provider(CONTENT)
    logs = openllmetry_content.logger_provider(CONTENT)
    instrumentor = AnthropicInstrumentor(use_attributes=not EVENTS)
    instrumentor.instrument(tracer_provider=provider, logger_provider=logs[0])
    try:
        with ScriptedAnthropicServer(story.react_steps()) as server:
            client = anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=0)
            agent_span: Any = nullcontext()
            if ROOT:
                agent_span = provider.get_tracer(TRACER).start_as_current_span(
                    f"invoke_agent {story.AGENT}", kind=SpanKind.INTERNAL,
                    attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": story.AGENT})
            with agent_span:
                answer = run_loop(client)
        assert answer == story.FINAL_ANSWER, answer
        assert server.remaining == 0 and not server.errors, server.errors
        results = [b["content"] for r in server.requests for m in r["body"]["messages"]
                   if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"]
        assert results[-2:] == [story.TOOL_1_RESULT, story.TOOL_2_RESULT], results
    finally:
        instrumentor.uninstrument()
    capture.finish(guard, provider, memory, str(capture.option("out")), logs=logs)


if __name__ == "__main__":
    main()
