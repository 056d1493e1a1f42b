"""Strands Agents, instrumented by its own OpenTelemetry tracing (``strands.telemetry.tracer``): an
Agent named "researcher" with the two @tool tools and strands' OpenAIModel on the scripted server
(Chat Completions, streamed: the model's default).  Strands traces to the global tracer provider, set
here to capture's before the agent is made; it emits no log records.

Strands reads its switches from OTEL_SEMCONV_STABILITY_OPT_IN (comma-separated tokens), set here
before the import:

  --semconv legacy      no token (the default): content as span events, one per message
                        (gen_ai.user.message, gen_ai.assistant.message, gen_ai.tool.message,
                        gen_ai.choice), each with a "content"/"message" attribute
  --semconv latest      gen_ai_latest_experimental: content as one
                        gen_ai.client.inference.operation.details event per span
                        (gen_ai.input.messages / gen_ai.output.messages / gen_ai.system_instructions),
                        and gen_ai.tool.call.arguments / .result attributes on the tool spans
  --semconv attributes  gen_ai_latest_experimental + gen_ai_span_attributes_only: the latest
                        conventions' content as span attributes instead of events

  --content on        content recorded (strands always records it)
  --content redacted  strands' own redaction: the token "gen_ai_unredacted_attributes=" (an empty
                      allow-list), which writes "[REDACTED]" for every sensitive value
  --content off       strands has no switch to leave content out: the scenario's own exporter
                      (tests/interop/scenarios/native_redaction.py, drop=True) removes the
                      content-bearing attributes and event attributes, as a user's filter would

usage: python -m tests.interop.scenarios.strands_agent --out FILE [--content on|off|redacted]
       [--semconv legacy|latest|attributes]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import os  # noqa: E402

CONTENT = capture.option("content", "on")
SEMCONV = capture.option("semconv", "legacy")

_TOKENS = {"legacy": [], "latest": ["gen_ai_latest_experimental"],
           "attributes": ["gen_ai_latest_experimental", "gen_ai_span_attributes_only"]}
if SEMCONV not in _TOKENS:
    raise SystemExit(f"unknown --semconv {SEMCONV}")
if CONTENT not in ("on", "off", "redacted"):
    raise SystemExit(f"unknown --content {CONTENT}")
_opt_in = list(_TOKENS[str(SEMCONV)])
if CONTENT == "redacted":
    _opt_in.append("gen_ai_unredacted_attributes=")
os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = ",".join(_opt_in)

from opentelemetry import trace  # noqa: E402
from strands import Agent, tool  # noqa: E402
from strands.models.openai import OpenAIModel  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402

CONTENT_KEYS = {
    # span attributes
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "system_prompt",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
    # attributes of the legacy per-message events
    "content", "message", "tool.result",
}
"""The keys that carry content (prompts, completions, tool arguments and results), for --content off."""


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


def main() -> None:
    if CONTENT == "off":
        from tests.interop.scenarios.native_redaction import redacting_tracer_provider

        provider, memory = redacting_tracer_provider(lambda key: key in CONTENT_KEYS, drop=True)
    else:
        provider, memory = capture.tracer_provider()
    trace.set_tracer_provider(provider)
    with ScriptedLLMServer(story.react_steps()) as server:
        model = OpenAIModel(client_args={"base_url": server.url, "api_key": "test-key", "max_retries": 0},
                            model_id="scripted-model")
        agent = Agent(model=model, tools=[knowledge_query, calculator], name=story.AGENT,
                      system_prompt="Answer with the tools.", callback_handler=None)
        result = agent(story.QUESTION)
        answer = str(result).strip()
        assert answer == story.FINAL_ANSWER, answer
        assert server.remaining == 0 and not server.errors, server.errors
    capture.finish(guard, provider, memory, str(capture.option("out")))


if __name__ == "__main__":
    main()
