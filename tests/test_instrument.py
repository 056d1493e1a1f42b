"""The helper API's problems: what a session could not record as given is counted where the user can
read it (``session.problems``), and each kind is logged once per process."""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import agent_session, doc_rag_session, graph_rag_session, instrument, spans_to_dataset
from otel_prov.ingest.problems import ProblemLog


def test_a_session_counts_what_it_could_not_record(captured: tuple[TracerProvider, InMemorySpanExporter],
                                                   caplog: pytest.LogCaptureFixture,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    provider, memory = captured
    used = instrument._problems  # logs each kind once per process: a fresh one, as in a new process
    fresh = ProblemLog(used._logger, used._what, used._counted)
    monkeypatch.setattr(instrument, "_problems", fresh)
    good = ("http://ex.org/a", "http://ex.org/p", "b")
    caplog.set_level(logging.WARNING, logger="otel_prov.instrument")
    with graph_rag_session("q", session_id="problems", tracer_provider=provider) as s:
        s.exploration([good, ("only", "two"), None])
        s.focus([(good, "kept"), ("no reasoning pair",), {"edge": 5}, 7])
        s.synthesis("a")
    assert s.problems == {instrument.NOT_AN_EDGE: 2, instrument.NOT_A_FOCUS_ITEM: 3}
    with graph_rag_session("q2", session_id="clean", tracer_provider=provider) as clean:
        clean.exploration([good])
        clean.focus([(good, "kept")])
    assert clean.problems == {}  # counted per session
    with agent_session("q3", session_id="agent", tracer_provider=provider) as agent:
        with agent.iteration() as step:
            step.call_tool("tool", lambda **kw: {"value": object()}, {"when": object()})
    assert agent.problems == {instrument.NOT_JSON: 2}
    with doc_rag_session("q4", session_id="doc", tracer_provider=provider) as doc:
        doc.exploration(["c1"])
    assert doc.problems == {}
    # logged once per kind, saying where the counts are
    lines = [r.getMessage() for r in caplog.records if r.name == "otel_prov.instrument"]
    assert sorted(lines) == sorted(
        f"otel-prov: {kind} (logged once; every occurrence is counted in its session's .problems)"
        for kind in (instrument.NOT_AN_EDGE, instrument.NOT_A_FOCUS_ITEM, instrument.NOT_JSON))
    # what was given well is recorded
    assert spans_to_dataset(memory.get_finished_spans())


def test_sessions_no_tracer_provider_records_are_said_once(caplog: pytest.LogCaptureFixture,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an SDK tracer provider the helper API records nothing, yet hands back an explain_id
    that ``show`` cannot find: said once per process, with how to set one; a recording provider says
    nothing."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    monkeypatch.setattr(instrument, "_warned_not_recorded", False)
    caplog.set_level(logging.WARNING, logger="otel_prov.instrument")
    with agent_session("q", tracer_provider=trace.NoOpTracerProvider()) as session:
        session.conclude("a")
    with agent_session("q again", tracer_provider=trace.NoOpTracerProvider()) as again:
        again.conclude("a")
    said = [r.getMessage() for r in caplog.records if "not recorded" in r.getMessage()]
    assert len(said) == 1 and "no OpenTelemetry SDK tracer provider is set" in said[0]
    assert session.problems == again.problems == {instrument.NOT_RECORDED: 1}  # counted on each session
    monkeypatch.setattr(instrument, "_warned_not_recorded", False)
    caplog.clear()
    with agent_session("q", tracer_provider=TracerProvider(sampler=ALWAYS_OFF)):
        pass
    assert [r.getMessage() for r in caplog.records if "its sampler did not sample it" in r.getMessage()]
    monkeypatch.setattr(instrument, "_warned_not_recorded", False)
    caplog.clear()
    with agent_session("q", tracer_provider=TracerProvider()) as recorded:
        pass
    assert not [r for r in caplog.records if "not recorded" in r.getMessage()]
    assert not recorded.problems
