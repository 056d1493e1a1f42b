"""``otel-prov audit`` on a real store: each kind of finding from sessions made to have it (real SDK
spans), none on sessions without it, the summary, the exit status and its ``--fail-on``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import ProvSpanExporter, agent_session
from otel_prov.examples.rag import graph_rag
from otel_prov.examples.react_agent import PolicyError, run_agent
from tests.support.cli import StopAfter, cli
from tests.support.erasing import aged


def _recorded(make: Any) -> list[ReadableSpan]:
    memory, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    make(provider)
    provider.shutdown()
    return list(memory.get_finished_spans())


def _no_result(provider: TracerProvider) -> None:
    """A tool called, its result never recorded; the run still answers."""
    with agent_session("How tall is the tower?", tracer_provider=provider) as session:
        with session.iteration() as step:
            step.thought("I measure it.")
            step.action("measure", {"what": "tower"})
        session.conclude("330 m")


def _failed(provider: TracerProvider) -> None:
    with pytest.raises(PolicyError):
        run_agent("What is the area of Italy?", policy=StopAfter(1), tracer_provider=provider)


def _skewed() -> list[ReadableSpan]:
    """A session whose steps' spans were stamped by a clock a day ahead of its root span's."""
    spans = _recorded(lambda p: run_agent("What is the capital of France?", tracer_provider=p, max_steps=3))
    return [s if s.parent is None else aged([s], -1)[0] for s in spans]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("audit") / "store"
    made = {"good": _recorded(lambda p: run_agent(tracer_provider=p)),
            "rag": _recorded(lambda p: graph_rag(tracer_provider=p)),
            "no-result": _recorded(_no_result), "failed": _recorded(_failed), "skewed": _skewed()}
    exporter = ProvSpanExporter(store=path)
    for spans in made.values():
        assert exporter.export(spans).name == "SUCCESS"
    exporter.shutdown()
    hashed = _recorded(lambda p: graph_rag("Which river flows through Paris?", tracer_provider=p,
                                           collection="hashed"))
    policed = ProvSpanExporter(store=path, content_policy="retrieval=sha256")
    assert policed.export(hashed).name == "SUCCESS"
    policed.shutdown()
    made["hashed"] = hashed
    traces = {name: f"{spans[0].context.trace_id:032x}" for name, spans in made.items()}  # type: ignore[union-attr]
    return {"path": str(path), "traces": traces}


def _report(capsysbinary: Any, store: dict[str, Any], *args: str) -> tuple[int, dict[str, Any]]:
    r = cli(capsysbinary, "audit", "--store", store["path"], "--format", "json", *args)
    assert r.code in (0, 1), r.err
    return r.code, json.loads(r.out)


def _by_trace(report: dict[str, Any]) -> dict[str, set[str]]:
    return {s["traceId"]: {f["code"] for f in s["findings"]} for s in report["sessions"]}


def test_each_finding_where_it_was_made_and_nowhere_else(store: dict[str, Any], capsysbinary: Any) -> None:
    code, report = _report(capsysbinary, store)
    found, t = _by_trace(report), store["traces"]
    assert found[t["good"]] == set() and found[t["rag"]] == set()
    assert found[t["no-result"]] == {"no-result"}
    assert found[t["failed"]] == {"failed", "unfinished"}
    assert found[t["skewed"]] == {"clock-skew"}
    assert found[t["hashed"]] == {"redacted"}
    assert code == 1
    summary = report["summary"]
    assert summary["sessions"] == 6 and summary["complete"] == 2 and summary["shareComplete"] == 2 / 6
    assert summary["withFinding"] == {"unfinished": 1, "failed": 1, "no-result": 1, "clock-skew": 1,
                                      "redacted": 1}
    times = sorted(s["time"] for s in report["sessions"])
    assert (summary["oldest"], summary["newest"]) == (times[0], times[-1])
    skew = next(s for s in report["sessions"] if s["traceId"] == t["skewed"])["findings"]
    assert skew and all("after its session" in f["text"] for f in skew), skew


def test_fail_on_one_session_and_a_collection(store: dict[str, Any], capsysbinary: Any) -> None:
    t = store["traces"]
    assert _report(capsysbinary, store, "--fail-on", "none")[0] == 0
    assert _report(capsysbinary, store, "--fail-on", "redacted")[0] == 1
    assert _report(capsysbinary, store, t["good"])[0] == 0
    code, one = _report(capsysbinary, store, t["no-result"])
    assert code == 1 and [s["traceId"] for s in one["sessions"]] == [t["no-result"]]
    code, hashed = _report(capsysbinary, store, "--collection", "hashed")
    assert code == 0 and [s["traceId"] for s in hashed["sessions"]] == [t["hashed"]]
    assert cli(capsysbinary, "audit", "--store", store["path"], "--fail-on", "typos").code == 2


def test_the_text_report(store: dict[str, Any], capsysbinary: Any, tmp_path: Path) -> None:
    r = cli(capsysbinary, "audit", "--store", store["path"])
    assert r.code == 1
    lines = r.out.splitlines()
    assert lines[0].startswith("6 sessions: ") and "complete, with no finding: 2 of 6 (33.3%)" in r.out
    assert "  no-result: Analysis 1 called measure and no observation is recorded" in lines
    out = tmp_path / "audit.json"
    assert cli(capsysbinary, "audit", "--store", store["path"], "-o", str(out)).code == 1
    assert json.loads(out.read_text())["summary"]["sessions"] == 6
