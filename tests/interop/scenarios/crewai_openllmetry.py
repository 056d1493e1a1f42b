"""CrewAI: one Agent (role "researcher") with the two tools as CrewAI tools, one Task asking the
question, a Crew running it, as in tests/interop/scenarios/crewai_agent.py (``crewai.LLM(model=
"openai/scripted-model", base_url=...)``: CrewAI's NATIVE OpenAI provider, the openai SDK, Chat
Completions), instrumented by OpenLLMetry (Traceloop) instead of OpenInference:
opentelemetry-instrumentation-crewai (Crew.kickoff, Agent.execute_task, Task.execute_sync, LLM.call)
and opentelemetry-instrumentation-openai for the model calls.  CrewAI's own telemetry and tracing are
off (CREWAI_DISABLE_TELEMETRY=true, CREWAI_TRACING_ENABLED=false, CREWAI_TESTING=true), its storage
goes to a temporary directory, removed at the end.

  --content on|off|redacted   see tests/interop/scenarios/openllmetry_content.py
                      (off: TRACELOOP_TRACE_CONTENT=false, honoured by the openai instrumentation: the
                      crewai instrumentation has no content switch and records its attributes anyway;
                      redacted: content on and the scenario's own exporter writes "[REDACTED]")

usage: python -m tests.interop.scenarios.crewai_openllmetry --out FILE [--content on|off|redacted]
"""

from __future__ import annotations

from tests.interop import capture

guard = capture.start()

import os  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

from tests.interop.scenarios import openllmetry_content  # noqa: E402

CONTENT = openllmetry_content.configure()
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_DISABLE_TRACKING"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["CREWAI_TESTING"] = "true"  # no first-run "view your traces?" prompt, no .crewai/last_run.json
os.environ.pop("OTEL_SDK_DISABLED", None)
os.environ["OPENAI_API_KEY"] = "test-key"
STORAGE = tempfile.mkdtemp(prefix="crewai-")
os.environ["CREWAI_STORAGE_DIR"] = STORAGE  # its sqlite task outputs and user data, not under ~/.local

from crewai import LLM, Agent, Crew, Process, Task  # noqa: E402
from crewai.tools import tool  # noqa: E402
from opentelemetry.instrumentation.crewai import CrewAIInstrumentor  # noqa: E402
from opentelemetry.instrumentation.openai import OpenAIInstrumentor  # noqa: E402

from tests.interop import story  # noqa: E402
from tests.interop.llm_server import ScriptedLLMServer  # noqa: E402


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
    agent = Agent(role=story.AGENT, goal="Answer questions with the tools.",
                  backstory="A careful research assistant.", tools=[knowledge_query, calculator], llm=llm,
                  allow_delegation=False, max_iter=5, verbose=False)
    task = Task(description=story.QUESTION, expected_output="The population density, in one sentence.",
                agent=agent)
    crew = Crew(agents=[agent], tasks=[task], process=Process.sequential, verbose=False)
    return str(crew.kickoff().raw)


def main() -> None:
    provider, memory = openllmetry_content.tracer_provider(CONTENT)
    instrumentors = [CrewAIInstrumentor(), OpenAIInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider)
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
