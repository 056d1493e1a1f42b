"""The helper API: what a session could not record as given is counted where the user can read it
(``session.problems``), and each kind is logged once per process; people's approvals (``step.approval``,
``session.approval``) through the real SDK and exporter into a store."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import agent_session, doc_rag_session, graph_rag_session, instrument, spans_to_dataset
from otel_prov import attributes as A
from otel_prov.ingest.problems import ProblemLog
from otel_prov.read.reader import TraceReader
from otel_prov.stores import open_for_reading, parse_store
from tests.support.approvals import COMMENT, record_approved_run


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


@pytest.mark.parametrize("profile", ["seed", "strict"])
def test_approvals_through_the_sdk_and_the_exporter_into_a_store(tmp_path: Path, profile: str) -> None:
    """``step.approval`` (during and after the step) and ``session.approval`` (after the session) through
    a real SDK and exporter into a real store, read back on the steps they decided on."""
    run = record_approved_run(f"oxigraph:{tmp_path / 's'}", profile)
    assert all(a is not None and a.startswith(run.explain_id + "/approval/") for a in run.approvals)
    store = open_for_reading(parse_store(str(tmp_path / "s")))
    try:
        trace, _ = TraceReader(store).trace(run.explain_id)
    finally:
        store.close()
    first, failed, answer = trace.steps
    assert [s.kind for s in trace.steps] == ["Analysis", "Analysis", "Conclusion"]
    assert [(a.iri, a.decision, a.by, a.role, a.comment) for a in first.approvals] == [
        (run.approvals[0], "approved", "alice@example.com", "approver", None),
        (run.approvals[1], "rejected", "bob", "auditor", COMMENT)]
    assert first.approvals[0].person == "urn:otel-prov:person:alice%40example.com"
    assert failed.error and failed.approvals == []
    assert [(a.iri, a.decision, a.comment) for a in answer.approvals] == [
        (run.approvals[2], "approved", "good answer")]
    assert all(a.time for s in trace.steps for a in s.approvals)


def test_an_answer_approved_before_it_is_given_is_left_out(
        captured: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, memory = captured
    with agent_session("q", session_id="early", tracer_provider=provider) as agent:
        assert agent.approval("alice") is None
        agent.conclude("a")
        assert agent.approval("alice", approved=False) is not None
    with doc_rag_session("q", session_id="early-doc", tracer_provider=provider) as doc:
        assert doc.approval("alice") is None
        doc.exploration(["c1"])
        synthesis = doc.synthesis("a")
        approval = doc.approval("alice", role="editor")
    assert agent.problems == {instrument.NO_ANSWER_YET: 1} and doc.problems == {instrument.NO_ANSWER_YET: 1}
    spans = [s for s in memory.get_finished_spans() if s.name == "approval"]
    assert [dict(s.attributes or {}).get(A.APPROVAL_DECISION) for s in spans] == ["rejected", "approved"]
    assert dict(spans[1].attributes or {})[A.APPROVAL_OF] == synthesis
    assert A.APPROVAL_COMMENT not in (spans[1].attributes or {})  # not given: not set
    assert approval is not None and approval.startswith(doc.explain_id + "/approval/")
