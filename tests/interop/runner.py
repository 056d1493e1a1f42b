"""The scenarios, and how to run one: in its own Python process (frameworks patch globally; the OTel
and the Traceloop openai-agents instrumentations install the same import package and each is put on
PYTHONPATH from its own directory), with a clean environment, its spans read back as OTLP.

    python -m tests.interop.runner [NAME ...]      # run them, print each one's span tree
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_prov.mapping.spans import LogRecord, SpanRecord, otlp_logs, records_from_otlp

REPO = Path(__file__).resolve().parents[2]
ALT = Path(sys.prefix) / "interop"
"""Where ``.ci/setup --test`` installs the two clashing openai-agents instrumentations."""
OTEL_AGENTS = ALT / "otel-agents-v2"
TRACELOOP_AGENTS = ALT / "traceloop-agents"
ENVS = REPO / "tests" / "interop" / "envs"
"""One pinned requirements file per framework that needs packages of its own (``NAME.txt``)."""
ENV_DIR = ALT / "envs"
"""Where ``.ci/setup --test`` makes a virtualenv per requirements file (``envs/NAME``)."""

SPAN_ONLY = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
NO_CONTENT = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "NO_CONTENT"}
EVENT_ONLY = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"}
GENAI = {"OPENINFERENCE_ENABLE_GENAI_SEMCONV": "true"}
SCRUB = ("OTEL_", "OPENINFERENCE_", "OPENAI_", "TRACELOOP_", "LANGSMITH_", "LANGCHAIN_", "HF_", "PYTHON")
"""Variables that would change what the frameworks or instrumentations do: not inherited."""
TIMEOUT = 180


@dataclass(frozen=True)
class Scenario:
    name: str
    module: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    path: Path | None = None
    """A directory put first on PYTHONPATH (one of the two openai-agents instrumentations)."""
    family: str = ""
    """The instrumentation, as the coverage table names it."""
    venv: str | None = None
    """The framework's own virtualenv (``tests/interop/envs/{venv}.txt``, made by ``.ci/setup
    --test`` in ``.venv/interop/envs/{venv}``); None: the project's."""

    @property
    def python(self) -> str:
        return str(ENV_DIR / self.venv / "bin" / "python") if self.venv else sys.executable


def _agents(name: str, instr: str, *args: str, env: dict[str, str] | None = None) -> Scenario:
    path = {"otel": OTEL_AGENTS, "traceloop": TRACELOOP_AGENTS}.get(instr)
    family = {"otel": "OTel openai-agents-v2", "openinference": "OpenInference openai-agents",
              "traceloop": "OpenLLMetry openai-agents"}[instr]
    return Scenario(name, "agents_sdk", ("--instr", instr, *args), env or {}, path, family)


def _modes(name: str, family: str, venv: str, module: str | None = None) -> list[Scenario]:
    """A framework's scenario with content capture on (``name``), off (``name_no_content``) and
    redacted (``name_redacted``), as the scenario module's ``--content`` option sets them."""
    return [Scenario(f"{name}{suffix}", module or name, ("--content", mode), family=family, venv=venv)
            for suffix, mode in (("", "on"), ("_no_content", "off"), ("_redacted", "redacted"))]


SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("openai_v2_chat", "openai_v2", (), SPAN_ONLY, family="OTel openai-v2 (bare loop)"),
    Scenario("openai_v2_chat_no_content", "openai_v2", (), {}, family="OTel openai-v2 (bare loop)"),
    # Content as log records (the inference-details event) instead of span attributes.
    Scenario("openai_v2_chat_events", "openai_v2", (), EVENT_ONLY, family="OTel openai-v2 (bare loop)"),
    Scenario("util_genai_agent_events", "openai_v2", ("--util-genai",), EVENT_ONLY,
             family="OTel util-genai agent API"),
    Scenario("util_genai_agent", "openai_v2", ("--util-genai",), SPAN_ONLY,
             family="OTel util-genai agent API"),
    _agents("agents_otel_responses", "otel"),
    _agents("agents_otel_chat", "otel", "--api", "chat_completions"),
    _agents("agents_otel_responses_reasoning_only", "otel", "--thought-as", "reasoning"),
    _agents("agents_otel_responses_no_content", "otel", env=NO_CONTENT),
    _agents("agents_openinference_responses", "openinference"),
    _agents("agents_openinference_chat", "openinference", "--api", "chat_completions"),
    _agents("agents_openinference_responses_genai", "openinference", env=GENAI),
    _agents("agents_openinference_responses_reasoning_only", "openinference", "--thought-as", "reasoning"),
    _agents("agents_traceloop_responses", "traceloop"),
    _agents("agents_traceloop_chat", "traceloop", "--api", "chat_completions"),
    _agents("agents_traceloop_responses_reasoning_only", "traceloop", "--thought-as", "reasoning"),
    Scenario("langgraph_prebuilt", "langgraph_agent", ("--flavor", "prebuilt"),
             family="OpenInference LangGraph"),
    Scenario("langgraph_prebuilt_genai", "langgraph_agent", ("--flavor", "prebuilt"), GENAI,
             family="OpenInference LangGraph"),
    Scenario("langchain_create_agent", "langgraph_agent", ("--flavor", "create_agent"),
             family="OpenInference LangChain create_agent"),
    Scenario("langchain_create_agent_genai", "langgraph_agent", ("--flavor", "create_agent"), GENAI,
             family="OpenInference LangChain create_agent"),
    Scenario("langchain_create_agent_reasoning", "langgraph_agent",
             ("--flavor", "create_agent", "--reasoning-blocks"),
             family="OpenInference LangChain create_agent"),
    Scenario("smolagents_toolcalling", "smolagents_agent", ("--agent", "toolcalling"),
             family="OpenInference smolagents"),
    Scenario("smolagents_toolcalling_genai", "smolagents_agent", ("--agent", "toolcalling"), GENAI,
             family="OpenInference smolagents"),
    Scenario("smolagents_toolcalling_subclass", "smolagents_agent",
             ("--agent", "toolcalling", "--model", "subclass"),
             family="OpenInference smolagents"),
    Scenario("smolagents_code", "smolagents_agent", ("--agent", "code"), family="OpenInference smolagents"),
    Scenario("rag_chain", "rag_retriever", ("--mode", "chain"), family="OpenInference LangChain RETRIEVER"),
    Scenario("rag_chain_genai", "rag_retriever", ("--mode", "chain"), GENAI,
             family="OpenInference LangChain RETRIEVER"),
    Scenario("rag_agent", "rag_retriever", ("--mode", "agent"), family="OpenInference LangChain RETRIEVER"),
    # Frameworks in virtualenvs of their own (tests/interop/envs), each with content on, off, redacted.
    *_modes("llamaindex_agent", "OpenInference LlamaIndex", "llamaindex"),
    *_modes("llamaindex_rag", "OpenInference LlamaIndex (query engine)", "llamaindex"),
    *_modes("dspy_react", "OpenInference DSPy", "dspy"),
    *_modes("pydantic_ai_agent", "Pydantic AI (native)", "pydantic_ai"),
    *_modes("strands_agent", "Strands Agents (native)", "strands"),
    *_modes("semantic_kernel_agent", "Semantic Kernel (native)", "semantic_kernel"),
    *_modes("langchain_openllmetry_agent", "OpenLLMetry LangChain", "langchain_openllmetry"),
    *_modes("mcp_agent", "OpenLLMetry MCP", "mcp"),
    *_modes("openlit_agent", "OpenLIT", "openlit"),
    *_modes("crewai_agent", "OpenInference CrewAI", "crewai"),
    *_modes("autogen_agent", "AutoGen (native)", "autogen"),
    *_modes("beeai_agent", "OpenInference BeeAI", "beeai"),
    *_modes("ag2_agent", "AG2 (native)", "ag2"),
    *_modes("logfire_agents", "Logfire openai-agents", "logfire"),
    Scenario("logfire_agents_chat", "logfire_agents", ("--content", "on", "--api", "chat_completions"),
             family="Logfire openai-agents", venv="logfire"),
    # A hand-written Anthropic SDK loop under a user's own 'invoke_agent researcher' span.
    *_modes("anthropic_agent", "OpenLLMetry Anthropic", "anthropic", "anthropic_loop"),
    # Content as log records (GenAI events) instead of span attributes.
    Scenario("anthropic_agent_events", "anthropic_loop", ("--content", "on", "--events"),
             family="OpenLLMetry Anthropic", venv="anthropic"),
    *_modes("crewai_openllmetry", "OpenLLMetry CrewAI", "crewai"),
    *_modes("llamaindex_openllmetry", "OpenLLMetry LlamaIndex", "llamaindex"),
    Scenario("strands_agent_latest", "strands_agent", ("--content", "on", "--semconv", "latest"),
             family="Strands Agents (native)", venv="strands"),
    Scenario("pydantic_ai_agent_v6", "pydantic_ai_agent", ("--content", "on", "--version", "6"),
             family="Pydantic AI (native)", venv="pydantic_ai"),
    Scenario("llamaindex_rag_genai", "llamaindex_rag", ("--content", "on"), GENAI,
             family="OpenInference LlamaIndex (query engine)", venv="llamaindex"),
    Scenario("mcp_agent_no_root", "mcp_agent", ("--content", "on", "--no-root"), family="OpenLLMetry MCP",
             venv="mcp"),
]}


class ScenarioFailed(RuntimeError):
    pass


def missing_packages() -> str | None:
    """Why the scenarios cannot run here (the interop extra or the two side directories are not
    installed), or None."""
    import importlib.util

    for module in ("agents", "langgraph", "smolagents", "openinference.instrumentation.langchain",
                   "opentelemetry.instrumentation.openai_v2"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (bash .ci/setup --test installs the interop extra)"
    for path in (OTEL_AGENTS, TRACELOOP_AGENTS):
        if not (path / "opentelemetry" / "instrumentation" / "openai_agents").is_dir():
            return f"{path} is missing (bash .ci/setup --test installs it)"
    for scenario in SCENARIOS.values():
        if scenario.venv and not Path(scenario.python).exists():
            return f"{scenario.python} is missing (bash .ci/setup --test makes it)"
    return None


def run(scenario: Scenario, out_dir: Path) -> tuple[list[SpanRecord], float]:
    """The scenario's spans (read back from the OTLP bytes it wrote) and its wall time in seconds."""
    out = out_dir / f"{scenario.name}.otlp"
    logs = Path(str(out) + ".logs")
    logs.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB)}
    env.update(scenario.env)
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (scenario.path, REPO) if p)
    env["HF_HUB_OFFLINE"] = "1"
    command = [scenario.python, "-m", f"tests.interop.scenarios.{scenario.module}", "--out", str(out),
               *scenario.args]
    start = time.perf_counter()
    proc = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise ScenarioFailed(f"scenario {scenario.name} failed (exit {proc.returncode}):\n"
                             f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    request = ExportTraceServiceRequest.FromString(out.read_bytes())
    records, rejected = records_from_otlp(request.resource_spans)
    if rejected:
        raise ScenarioFailed(f"scenario {scenario.name}: spans rejected: {rejected}")
    return records, wall


class Captured:
    """The scenarios' spans, each scenario run once (on first use), kept in ``out``."""

    def __init__(self, out: Path, *, reuse: bool = False) -> None:
        self.out = out
        self.reuse = reuse
        """Read a scenario's spans from ``out`` when an earlier run left them there (the mutation run,
        tests/mutation/mutation.sh: the scenarios run once, not once per mutant)."""
        self._spans: dict[str, list[SpanRecord]] = {}
        self._logs: dict[str, list[LogRecord]] = {}

    def spans(self, name: str) -> list[SpanRecord]:
        if name not in self._spans:
            recorded = self.out / f"{name}.otlp"
            if self.reuse and recorded.exists():
                request = ExportTraceServiceRequest.FromString(recorded.read_bytes())
                self._spans[name] = records_from_otlp(request.resource_spans)[0]
            else:
                self._spans[name] = run(SCENARIOS[name], self.out)[0]
        return self._spans[name]

    def logs(self, name: str) -> list[LogRecord]:
        """The GenAI events the scenario sent as OTLP log records (none for most)."""
        if name not in self._logs:
            self.spans(name)
            request = self.logs_request(name)
            self._logs[name] = otlp_logs(request.resource_logs).records if request is not None else []
        return self._logs[name]

    def logs_request(self, name: str) -> ExportLogsServiceRequest | None:
        """The scenario's log records as the one OTLP request it wrote, or None."""
        self.spans(name)
        path = self.out / f"{name}.otlp.logs"
        return ExportLogsServiceRequest.FromString(path.read_bytes()) if path.exists() else None

    def request(self, name: str) -> ExportTraceServiceRequest:
        """The scenario's spans as the one OTLP request it wrote."""
        self.spans(name)
        return ExportTraceServiceRequest.FromString((self.out / f"{name}.otlp").read_bytes())


def tree_text(records: list[SpanRecord], attributes: bool = False) -> str:
    """The span tree, one span a line (with its attributes), for reading and for failure messages."""
    ids = {r.span_id for r in records}
    children: dict[int, list[SpanRecord]] = {}
    for r in records:
        children.setdefault(r.parent_id if r.parent_id in ids else 0, []).append(r)
    lines: list[str] = []

    def show(rec: SpanRecord, depth: int) -> None:
        marks = " ".join(f"{k}={rec.attributes[k]}" for k in
                         ("gen_ai.operation.name", "openinference.span.kind", "traceloop.span.kind")
                         if k in rec.attributes)
        lines.append(f"{'  ' * depth}- {rec.name!r} {marks} ({rec.span_id:016x})")
        if attributes:
            for key, value in rec.attributes.items():
                text = value if isinstance(value, str) else repr(value)
                lines.append(f"{'  ' * depth}    {key} = {text[:400]}")
        for child in sorted(children.get(rec.span_id, []), key=lambda c: (c.start_ns, c.span_id)):
            show(child, depth + 1)

    for root in sorted(children.get(0, []), key=lambda c: (c.start_ns, c.span_id)):
        show(root, 0)
    return "\n".join(lines)


def main() -> int:
    wanted = [a for a in sys.argv[1:] if not a.startswith("-")]
    verbose = "-v" in sys.argv
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in SCENARIOS.values():
            if wanted and not any(w in scenario.name for w in wanted):
                continue
            try:
                records, wall = run(scenario, Path(tmp))
            except ScenarioFailed as exc:
                print(exc)
                failed += 1
                continue
            print(f"== {scenario.name}: {len(records)} spans, {wall:.1f} s")
            print(tree_text(records, verbose))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
