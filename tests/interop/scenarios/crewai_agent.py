"""CrewAI: one Agent (role "researcher") with the two tools as CrewAI tools, one Task asking the
question, a Crew running it; ``crewai.LLM(model="openai/scripted-model", base_url=...)`` goes to
CrewAI's NATIVE OpenAI provider (the openai SDK, Chat Completions; no LiteLLM), which supports
function calling, so the model's answers are native tool calls (thought in ``content``) and a plain
final text, as in the story.

Instrumented by OpenInference's CrewAI instrumentation (crew, task, agent and tool spans) and
OpenInference's OpenAI instrumentation (the LLM spans: CrewAI's own instrumentation records none in
its default, wrapper mode).  CrewAI's own telemetry and tracing are off (CREWAI_DISABLE_TELEMETRY=true,
CREWAI_TRACING_ENABLED=false, and CREWAI_TESTING=true, which keeps its first-run "view your traces?"
prompt away from a terminal); OTEL_SDK_DISABLED is left unset (it would turn the SDK off, and CrewAI
reads it as "telemetry off" too).  Its storage goes to a temporary directory, removed at the end.

  --listener          the CrewAI instrumentation's event-listener mode (``use_event_listener=True``):
                      spans built from CrewAI's event bus, LLM spans of its own (the OpenAI
                      instrumentation is then not used)
  --content on|off|redacted   as tests/interop/scenarios/openinference_content.py says (redacted:
                      OpenInference's own OPENINFERENCE_HIDE_INPUTS/OUTPUTS; off: the scenario's own
                      exporter drops the content attributes), with CrewAI's own content-bearing
                      attributes added to the dropped ones for off (:data:`CREWAI_CONTENT`): the hide
                      options leave them as they are

usage: python -m tests.interop.scenarios.crewai_agent --out FILE [--content on|off|redacted] [--listener]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import os  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

from tests.interop.scenarios import openinference_content  # noqa: E402

CONTENT = openinference_content.configure()
LISTENER = capture.flag("listener")
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_DISABLE_TRACKING"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["CREWAI_TESTING"] = "true"  # no first-run "view your traces?" prompt, no .crewai/last_run.json
os.environ.pop("OTEL_SDK_DISABLED", None)
STORAGE = tempfile.mkdtemp(prefix="crewai-")
os.environ["CREWAI_STORAGE_DIR"] = STORAGE  # its sqlite task outputs and user data, not under ~/.local

from crewai import LLM, Agent, Crew, Process, Task  # noqa: E402
from crewai.tools import tool  # noqa: E402
from openinference.instrumentation.crewai import CrewAIInstrumentor  # noqa: E402
from openinference.instrumentation.openai import OpenAIInstrumentor  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402

CREWAI_CONTENT = {"crew_inputs", "crew_agents", "crew_tasks", "task_description", "task_expected_output",
                  "agent.goal", "agent.backstory", "tool.task_name"}
"""CrewAI's own attributes that carry content (the task text is the question; goal and backstory are
the agent's prompt), in the wrapper and the event-listener spans (seen with --content on)."""


def is_content(key: str) -> bool:
    return openinference_content.is_content(key) or key in CREWAI_CONTENT


@tool(story.TOOL_1)
def knowledge_query(question: str) -> str:
    """Answer a factual question from the knowledge base."""
    return story.knowledge_query(question)


@tool(story.TOOL_2)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return story.calculator(expression)


def run(server: ScriptedLLMServer) -> str:
    llm = LLM(model="openai/scripted-model", base_url=server.url, api_key="test-key", max_retries=0)
    agent = Agent(role=story.AGENT, goal="Answer questions with facts and arithmetic.",
                  backstory="A careful researcher.", tools=[knowledge_query, calculator], llm=llm,
                  allow_delegation=False, max_iter=5, verbose=False)
    task = Task(description=story.QUESTION, expected_output="The population density.", agent=agent)
    crew = Crew(agents=[agent], tasks=[task], process=Process.sequential, verbose=False)
    return str(crew.kickoff().raw)


def main() -> None:
    if CONTENT == "off":
        from tests.interop.scenarios.native_redaction import redacting_tracer_provider

        provider, memory = redacting_tracer_provider(is_content, drop=True)
    else:
        provider, memory = capture.tracer_provider()
    instrumentors = [CrewAIInstrumentor()] if LISTENER else [CrewAIInstrumentor(), OpenAIInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider, use_event_listener=LISTENER)
    try:
        with ScriptedLLMServer(story.react_steps()) as server:
            answer = run(server)
        assert answer == story.FINAL_ANSWER, answer
        assert server.remaining == 0 and not server.errors, server.errors
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
        shutil.rmtree(STORAGE, ignore_errors=True)
    capture.finish(guard, provider, memory, str(capture.option("out")))


if __name__ == "__main__":
    main()
