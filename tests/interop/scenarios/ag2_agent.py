"""AG2 (the classic ``autogen`` API of ag2 0.14: the ConversableAgent family) with AG2's own
OpenTelemetry tracing (``autogen.opentelemetry``: instrument_agent, instrument_llm_wrapper).  Two
agents: an AssistantAgent named "researcher" (the LLM: the scripted server through an
OpenAI-compatible ``base_url``, Chat Completions) proposes the tool calls; the two tools are
registered for execution on a UserProxyAgent "user_proxy" (human_input_mode NEVER, no code
execution), which sends the question and stops when the researcher answers without tool calls.  AG2
runs in a temporary working directory (where it would put a cache or a coding directory), without
Docker.

  --content on        instrument_llm_wrapper(capture_messages=True) (AG2's only content switch: the LLM
                      spans' messages; the agent, conversation and tool spans carry their messages,
                      arguments and results whatever the switch)
  --content off       instrument_llm_wrapper(capture_messages=False) (AG2's default)
  --content redacted  capture_messages=True, and the scenario's own exporter writes "[REDACTED]" over
                      every content-bearing attribute (:data:`CONTENT_KEYS`;
                      tests/interop/scenarios/native_redaction.py): AG2 has no redaction option

usage: python -m tests.interop.scenarios.ag2_agent --out FILE [--content on|off|redacted]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import os  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

CONTENT = capture.option("content", "on")
if CONTENT not in ("on", "off", "redacted"):
    raise SystemExit(f"unknown --content {CONTENT}")
os.environ.setdefault("AUTOGEN_USE_DOCKER", "False")
os.environ["OPENAI_API_KEY"] = "test-key"
CWD, WORKDIR = os.getcwd(), tempfile.mkdtemp(prefix="ag2-")
os.chdir(WORKDIR)

from typing import Annotated, Any  # noqa: E402

import autogen  # noqa: E402
from autogen.opentelemetry import instrument_agent, instrument_llm_wrapper  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402

CONTENT_KEYS = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result", "gen_ai.system_instructions", "ag2.chats.summaries"}
"""The attributes that carry content in AG2's spans (seen with --content on)."""

SYSTEM = "You are a research assistant. Use the tools, then answer in one sentence."


def knowledge_query(question: Annotated[str, "The question"]) -> str:
    return story.knowledge_query(question)


def calculator(expression: Annotated[str, "The arithmetic expression"]) -> str:
    return story.calculator(expression)


def no_tool_calls(message: dict[str, Any]) -> bool:
    return not message.get("tool_calls") and bool(message.get("content"))


def run(server: ScriptedLLMServer, provider: Any) -> str:
    llm_config = autogen.LLMConfig({"api_type": "openai", "model": "scripted-model", "base_url": server.url,
                                    "api_key": "test-key", "max_retries": 0}, cache_seed=None)
    researcher = autogen.AssistantAgent(story.AGENT, system_message=SYSTEM, llm_config=llm_config)
    user_proxy = autogen.UserProxyAgent("user_proxy", human_input_mode="NEVER", code_execution_config=False,
                                        is_termination_msg=no_tool_calls, max_consecutive_auto_reply=5)
    for func in (knowledge_query, calculator):
        autogen.register_function(func, caller=researcher, executor=user_proxy, name=func.__name__,
                                  description=story.TOOL_DESCRIPTIONS[func.__name__])
    instrument_agent(researcher, tracer_provider=provider)
    instrument_agent(user_proxy, tracer_provider=provider)
    result = user_proxy.initiate_chat(researcher, message=story.QUESTION, summary_method="last_msg")
    return str(result.summary)


def main() -> None:
    if CONTENT == "redacted":
        from tests.interop.scenarios.native_redaction import redacting_tracer_provider

        provider, memory = redacting_tracer_provider(lambda key: key in CONTENT_KEYS)
    else:
        provider, memory = capture.tracer_provider()
    instrument_llm_wrapper(tracer_provider=provider, capture_messages=CONTENT != "off")
    try:
        with ScriptedLLMServer(story.react_steps()) as server:
            answer = run(server, provider)
        assert answer == story.FINAL_ANSWER, answer
        assert server.remaining == 0 and not server.errors, server.errors
    finally:
        os.chdir(CWD)
        shutil.rmtree(WORKDIR, ignore_errors=True)
    capture.finish(guard, provider, memory, str(capture.option("out")))


if __name__ == "__main__":
    main()
