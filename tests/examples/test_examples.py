"""The examples: their tools, their spans, the chat policy against a real local HTTP endpoint, and
the scripts run as processes (on their own, and under ``opentelemetry-instrument``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from otel_prov import attributes as A
from otel_prov.examples.rag import doc_rag, graph_rag
from otel_prov.examples.react_agent import (
    ChatPolicy,
    OfflinePolicy,
    PolicyError,
    default_policy,
    run_agent,
)
from otel_prov.examples.tools import CalculatorError, calculate, document_index, knowledge_graph
from otel_prov.read.reader import TraceReader
from otel_prov.stores import open_for_reading, parse_store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BIN = Path(sys.executable).parent


# -- tools ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("expression,value", [
    ("2102650 / 105.4", 2102650 / 105.4), ("round(2102650 / 105.4, 1)", 19949.2), ("2 ** 10", 1024),
    ("-(3 + 4) * 2", -14), ("7 // 2 + 7 % 2", 4), ("sqrt(16) + abs(-1)", 5), ("max(1, 5, 3)", 5),
])
def test_calculator(expression: str, value: float) -> None:
    assert calculate(expression) == pytest.approx(value)


@pytest.mark.parametrize("expression", [
    "__import__('os').system('true')", "open('/etc/passwd')", "(1).__class__", "2 ** 1000", "1 / 0",
    "x + 1", "'a' * 3", "[1, 2]", "lambda: 1", "1 if 1 else 2", "9" * 300,
])
def test_calculator_rejects(expression: str) -> None:
    with pytest.raises(CalculatorError):
        calculate(expression)


def test_knowledge_graph_lookup() -> None:
    kg = knowledge_graph()
    assert kg.lookup("France", "capital") == ["Paris"]
    assert kg.lookup("paris", "Population") == ["2102650"]
    assert kg.lookup("Atlantis", "capital") == []
    assert kg.lookup('France" } ; DROP', "capital") == []  # bound as a literal, not spliced
    assert [kg.label(e) for e in kg.entities_in("Is Paris in France?")] == ["France", "Paris"]


def test_bm25_ranking() -> None:
    index = document_index()
    hits = index.search("How densely populated is Paris?")
    assert hits[0][0].id == "paris#1"
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert index.search("Eiffel tower height")[0][0].id.startswith("eiffel-tower#")
    assert index.search("zzz qqq") == []


# -- spans ------------------------------------------------------------------------------------------


def _by_name(memory: InMemorySpanExporter) -> dict[str, list[Any]]:
    spans: dict[str, list[Any]] = {}
    for span in memory.get_finished_spans():
        spans.setdefault(span.name, []).append(span)
    return spans


def test_agent_spans(captured: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, memory = captured
    result = run_agent(tracer_provider=provider)
    assert result.answer and "19949.2" in result.answer
    assert result.policy.startswith("offline")
    spans = _by_name(memory)
    root = spans["invoke_agent react-agent-example"][0]
    assert root.attributes[A.ANSWER] == result.answer
    cycles = len(result.turns) + 1
    assert [spans[f"iteration {n}"][0].attributes[A.ITERATION] for n in range(1, cycles + 1)] == \
        list(range(1, cycles + 1))
    tools = [s for name, group in spans.items() if name.startswith("execute_tool ") for s in group]
    assert len(tools) == len(result.turns)
    assert sorted(s.attributes[A.GEN_AI_TOOL_NAME] for s in tools) == sorted(t.act.tool for t in result.turns)
    for span in tools:  # each tool call is inside its cycle
        assert span.parent is not None and span.parent.span_id in {
            s.context.span_id for name, group in spans.items() if name.startswith("iteration") for s in group}
    # the document search ran a DocRAG session inside the agent's trace
    sub = spans["invoke_agent doc-rag-example"][0]
    assert sub.context.trace_id == root.context.trace_id
    assert sub.attributes[A.DERIVED_FROM].endswith("/i" + str(
        next(n for n, t in enumerate(result.turns, 1) if t.act.tool == "search_documents")))


def test_agent_tool_error_is_observed(captured: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, memory = captured

    class DivideByZero:
        name = "test"

        def decide(self, question: str, history: Any) -> Any:
            from otel_prov.examples.react_agent import Act, Finish
            if not history:
                return Act("divide", "calculator", {"expression": "1 / 0"})
            return Finish("give up", f"failed: {history[0].observation}")

    result = run_agent("x", policy=DivideByZero(), tracer_provider=provider)
    assert result.answer == "failed: error: division by zero"
    tool = _by_name(memory)["execute_tool calculator"][0]
    assert tool.status.status_code == StatusCode.ERROR
    assert _by_name(memory)["iteration 1"][0].attributes[A.OBSERVATION] == "error: division by zero"


def test_rag_spans(captured: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, memory = captured
    g = graph_rag(tracer_provider=provider)
    spans = _by_name(memory)
    exploration = spans["retrieval default"][0]
    assert exploration.attributes[A.EDGE_COUNT] == len(g.retrieved) == 8
    assert json.loads(exploration.attributes[A.EDGES]) == g.retrieved
    focus = json.loads(spans["focus"][0].attributes[A.SELECTED_EDGES])
    assert [item["edge"] for item in focus] == g.selected
    assert all(item["reasoning"].startswith("shares ") for item in focus)
    assert spans["synthesis"][0].attributes[A.CONTENT] == g.answer
    assert "France capital Paris" in g.answer

    memory.clear()
    d = doc_rag(tracer_provider=provider)
    spans = _by_name(memory)
    assert list(spans["retrieval default"][0].attributes[A.CHUNK_IDS]) == [h["id"] for h in d.retrieved]
    assert d.retrieved[0]["id"] == "eiffel-tower#1" and "[eiffel-tower#" in d.answer


# -- the chat policy, against a real HTTP server -------------------------------------------------


class _Endpoint:
    """An OpenAI-compatible chat-completions endpoint on 127.0.0.1 replying from a script."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.requests = list(replies), []  # type: ignore[var-annotated]
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.requests.append((self.path, dict(self.headers), body))
                content = endpoint.replies.pop(0) if endpoint.replies else "{}"
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(data.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint() -> Iterator[Any]:
    made: list[_Endpoint] = []

    def make(replies: list[str]) -> _Endpoint:
        made.append(_Endpoint(replies))
        return made[-1]

    yield make
    for e in made:
        e.close()


def test_chat_policy_drives_the_agent(endpoint: Any, captured: Any,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    server = endpoint([
        'I will compute. {"thought": "compute it", "action": "calculator", '
        '"arguments": {"expression": "6 * 7"}}',
        '{"thought": "done", "answer": "42"}',
    ])
    monkeypatch.setenv("OTEL_PROV_EXAMPLE_MODEL", "test-model")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    policy = default_policy()
    assert isinstance(policy, ChatPolicy) and policy.name == f"chat model test-model at {server.url}"
    provider, memory = captured
    result = run_agent("What is six times seven?", policy=policy, tracer_provider=provider)
    assert result.answer == "42"
    assert [t.observation for t in result.turns] == ["42"]
    path, headers, body = server.requests[1]
    assert path == "/v1/chat/completions" and headers["Authorization"] == "Bearer sk-test"
    assert body["model"] == "test-model" and body["messages"][1]["content"] == "What is six times seven?"
    assert body["messages"][-1]["content"] == "Observation: 42"
    assert "kg_lookup" in body["messages"][0]["content"]


def test_chat_policy_failures(endpoint: Any, captured: Any) -> None:
    provider, memory = captured
    server = endpoint(["I don't know JSON"])
    with pytest.raises(PolicyError, match="not a JSON object"):
        run_agent("q", policy=ChatPolicy("m", server.url), tracer_provider=provider)
    with pytest.raises(PolicyError, match="chat endpoint"):
        run_agent("q", policy=ChatPolicy("m", "http://127.0.0.1:9", timeout=5), tracer_provider=provider)
    roots = [s for s in memory.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert len(roots) == 2 and all(s.status.status_code == StatusCode.ERROR for s in roots)


def test_offline_policy_is_the_default_without_a_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_PROV_EXAMPLE_MODEL", raising=False)
    assert isinstance(default_policy(), OfflinePolicy)


# -- the scripts, as processes ---------------------------------------------------------------------


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update(extra)
    return env


def _sessions(store: Path) -> list[Any]:
    opened = open_for_reading(parse_store(str(store)))
    try:
        return TraceReader(opened).sessions()
    finally:
        opened.close()


@pytest.mark.parametrize("script,kind", [("react_agent.py", "Agent"), ("graph_rag.py", "GraphRAG"),
                                         ("doc_rag.py", "DocRAG")])
def test_script_writes_its_own_store(script: str, kind: str, tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = subprocess.run([sys.executable, str(EXAMPLES / script), "--store", str(store)],
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    explain = [line for line in done.stdout.splitlines() if line.startswith("explain: otel-prov show ")]
    assert len(explain) == 1
    assert f"recorded in oxigraph:{store}" in done.stderr
    sessions = _sessions(store)
    assert [(s.type, s.status) for s in sessions] == [(kind, "complete")]
    # The line is a command that works as printed: it names the store the script was given.
    assert explain[0] == f"explain: otel-prov show {sessions[0].id} --store {store}"
    if script == "react_agent.py":
        assert "policy: offline (deterministic rules, no language model)" in done.stdout


def test_script_default_store(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLES / "doc_rag.py"), "Where is the Louvre?"],
                          capture_output=True, text=True, env=_env(XDG_DATA_HOME=str(tmp_path)), timeout=120)
    assert done.returncode == 0, done.stderr
    assert [s.question for s in _sessions(tmp_path / "otel-prov" / "store")] == ["Where is the Louvre?"]


def test_script_under_opentelemetry_instrument(tmp_path: Path) -> None:
    instrument = BIN / "opentelemetry-instrument"
    assert instrument.exists(), "opentelemetry-distro (a test dependency) provides opentelemetry-instrument"
    store = tmp_path / "instrumented"
    env = _env(OTEL_TRACES_EXPORTER="prov", OTEL_PROV_STORE=str(store), OTEL_METRICS_EXPORTER="none",
               OTEL_LOGS_EXPORTER="none", OTEL_SERVICE_NAME="react-agent-example",
               PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run([str(instrument), sys.executable, str(EXAMPLES / "react_agent.py")],
                          capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "spans go to the global tracer provider (opentelemetry-instrument)" in done.stderr
    sessions = _sessions(store)
    assert [(s.type, s.status) for s in sessions] == [("Agent", "complete")]
    trace_id = next(line for line in done.stdout.splitlines() if line.startswith("trace id: "))
    assert sessions[0].trace_id == trace_id.removeprefix("trace id: ")


@pytest.mark.parametrize("script", ["react_agent.py", "graph_rag.py", "doc_rag.py"])
def test_script_refuses_an_empty_question(script: str, tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = subprocess.run([sys.executable, str(EXAMPLES / script), "  ", "--store", str(store)],
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"{script}: error: the question is empty: ask one, or leave it out for the "
                                  "default ('") and done.stderr.count("\n") == 1, done.stderr
    assert not store.exists()  # nothing recorded
