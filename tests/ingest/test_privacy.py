"""The content policy through the SDK exporter into a real on-disk store: with redaction on, no secret
reaches a log segment, the index or a rescue file (every file of the store searched, and the same
search finds them with redaction off); the GenAI instrumentations' content switch; a redaction plug-in
installed as a package; ``otel-prov import`` maps with the same policy."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_prov import ConfigError, ProvLogExporter, ProvSpanExporter, load_dataset, settings
from otel_prov.ingest.exporter import ConfiguredProvSpanExporter
from otel_prov.ingest.pipeline import IngestPipeline
from otel_prov.mapping.spans import from_sdk
from otel_prov.model.vocab import OTELPROV, TG
from otel_prov.stores.oxigraph import OxigraphStore
from tests.support.cli import cli
from tests.support.privacy import (
    NEEDLES,
    PLUGIN_SECRET,
    QUESTION,
    SECRETS,
    files_holding,
    install_plugin,
    secret_spans,
)
from tests.support.serving import otlp_json, request_of


def _export(store: Path, **options: Any) -> ProvSpanExporter:
    """The secret spans made by a real SDK TracerProvider whose BatchSpanProcessor feeds the exporter
    (flushed: in the store's log segment, not folded yet)."""
    exporter = ProvSpanExporter(store=f"oxigraph:{store}", **options)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    secret_spans(provider)
    assert provider.force_flush(30_000) and exporter.force_flush(30_000)
    exporter._provider = provider  # type: ignore[attr-defined]  (shut down by _close)
    return exporter


def _close(exporter: ProvSpanExporter) -> None:
    exporter._provider.shutdown()  # type: ignore[attr-defined]


def _values(store: Path, predicate: Any) -> set[str]:
    return {str(o) for _, p, o, _ in load_dataset(str(store)).quads((None, predicate, None, None))}


def _leaks(store: Path) -> dict[str, list[str]]:
    found = {needle: [str(p.relative_to(store)) for p in files_holding(store, needle)] for needle in NEEDLES}
    return {needle: files for needle, files in found.items() if files}


def test_without_redaction_the_search_finds_every_secret_in_the_segment_and_the_index(tmp_path: Path) -> None:
    """The check can fail: unredacted, each secret is in the log segment, then in the index."""
    store = tmp_path / "store"
    exporter = _export(store)
    assert set(_leaks(store)) == set(NEEDLES)
    assert all(any(f.startswith("segments/") for f in files) for files in _leaks(store).values())
    _close(exporter)
    load_dataset(str(store))  # a reader folds the log into the index
    assert all(any(f.endswith((".sst", ".log")) for f in files) for files in _leaks(store).values())


def test_with_redaction_no_secret_reaches_a_segment_or_the_index(tmp_path: Path, monkeypatch) -> None:
    install_plugin(tmp_path / "plugin", monkeypatch)
    store = tmp_path / "store"
    exporter = _export(store, redact="on", content_policy="thought=truncate:40")
    assert exporter.policy.redactor is not None and "employee-id" in exporter.policy.redactor.names
    assert _leaks(store) == {}  # the log segment
    _close(exporter)
    answers = _values(store, TG.answer)
    assert _leaks(store) == {}  # the index
    assert any("[email]" in a and "[card]" in a and "[jwt]" in a and "[private-key]" in a for a in answers)
    redactions = _values(store, OTELPROV.redactions)
    assert "selectedChunk email=1,employee-id=1" in redactions
    assert any(r.startswith("observation ") and "iban=1" in r and "openai-key=1" in r for r in redactions)
    assert "thought truncate:40" in _values(store, OTELPROV.contentPolicy)
    assert any(v.startswith("thought ") for v in _values(store, OTELPROV.truncatedFrom))


def test_show_tells_a_reader_what_the_policy_did(tmp_path: Path, capsysbinary: Any) -> None:
    store = tmp_path / "store"
    _close(_export(store, redact="on", content_policy="thought=truncate:20,arguments=sha256,answer=omit"))
    listed = json.loads(cli(capsysbinary, "list", "--store", str(store), "--format", "json").out)
    session = next(r["id"] for r in listed if r["type"] == "Agent" and r["question"].startswith(QUESTION))
    shown = cli(capsysbinary, "show", session, "--store", str(store))
    assert shown.code == 0, shown.err
    assert "Thought: I saw [email]; [card\n" in shown.out
    assert "Content: arguments: SHA-256 of the text; thought: first 20 of 457 characters; redacted in " \
           "arguments: aws-key=2,card=2," in shown.out
    assert "Answer:\n  (omitted)\n" in shown.out


def test_keep_by_default_and_omit_where_the_genai_switch_says_not_captured(tmp_path: Path,
                                                                           monkeypatch) -> None:
    assert not ProvSpanExporter(store="memory:").policy.active  # today's graph, by default
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    assert not ProvSpanExporter(store="memory:").policy.active
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "false")
    store = tmp_path / "store"
    _close(_export(store))
    assert not files_holding(store, QUESTION) and not files_holding(store, SECRETS["iban"])
    assert _values(store, TG.query) == {""}  # the spec's mandatory literal, empty
    assert _values(store, TG.thought) == set()
    assert {"query omit", "thought omit", "answer omit"} <= _values(store, OTELPROV.contentPolicy)
    errors = _values(store, OTELPROV.statusMessage)
    assert any("PermissionError" in v for v in errors)  # an error is no message: kept
    monkeypatch.setenv(settings.CONTENT_POLICY.env, "question=keep")  # ours says otherwise, for a field
    kept = tmp_path / "kept"
    _close(_export(kept))
    assert any(QUESTION in q for q in _values(kept, TG.query)) and _values(kept, TG.thought) == set()


def test_a_plugin_that_does_not_load_is_an_error_and_nothing_is_stored_unredacted(
        tmp_path: Path, monkeypatch, caplog) -> None:
    plugin = install_plugin(tmp_path / "plugin", monkeypatch)
    unknown = "unknown detector 'badge': expected on, off, or some of .*employee-id"
    with pytest.raises(ConfigError, match=unknown):
        ProvSpanExporter(store="memory:", redact="email,badge")
    (plugin / "otel_prov_test_redactor.py").write_text("raise ImportError('broken on purpose')\n")
    monkeypatch.delitem(sys.modules, "otel_prov_test_redactor")  # imported above: import it again
    with pytest.raises(ConfigError, match="redaction plug-in 'employee-id'.*broken on purpose"):
        ProvSpanExporter(store=f"oxigraph:{tmp_path / 'a'}", redact="on")
    monkeypatch.setenv(settings.REDACT.env, "on")
    with caplog.at_level(logging.ERROR):
        degraded = ConfiguredProvSpanExporter(store=f"oxigraph:{tmp_path / 'b'}")  # OTEL_TRACES_EXPORTER=prov
    assert degraded.degraded and "broken on purpose" in caplog.text
    degraded.export(secret_spans())
    assert not (tmp_path / "b").exists() or not _leaks(tmp_path / "b")


def test_the_log_exporter_joins_only_a_span_exporter_of_the_same_policy(tmp_path: Path) -> None:
    spans = ProvSpanExporter(store=f"oxigraph:{tmp_path / 's'}", redact="email")
    try:
        with pytest.raises(ConfigError, match="content policy"):
            ProvLogExporter(store=f"oxigraph:{tmp_path / 's'}", redact="off")
        logs = ProvLogExporter(store=f"oxigraph:{tmp_path / 's'}", redact="email")
        assert logs._pipeline is spans._pipeline
        logs.shutdown()
    finally:
        spans.shutdown()


class _Failing(OxigraphStore):
    def add(self, data: bytes, count: int) -> None:
        raise OSError("No space left on device (test)")


def test_a_rescue_file_holds_only_what_the_policy_let_through(tmp_path: Path) -> None:
    pipeline = IngestPipeline(_Failing(None), "seed", name="test", rescue_dir=tmp_path / "rescue",
                              policy=settings.policy("answer=sha256", "on"))
    pipeline.submit([from_sdk(s) for s in secret_spans()])
    assert not pipeline.close(timeout=30)
    rescued = list((tmp_path / "rescue").glob("otel-prov-rescue-*.nq"))
    assert len(rescued) == 1 and b"[email]" in rescued[0].read_bytes()
    assert _leaks(tmp_path / "rescue") == {PLUGIN_SECRET: [rescued[0].name]}  # no plug-in was asked for


def test_import_maps_spans_with_the_same_policy(tmp_path: Path, capsysbinary: Any) -> None:
    lines = tmp_path / "spans.jsonl"
    lines.write_text(json.dumps(otlp_json(request_of(secret_spans()))) + "\n")
    store = tmp_path / "store"
    r = cli(capsysbinary, "import", str(lines), "--store", str(store), "--redact", "on",
            "--content-policy", "question=sha256")
    assert r.code == 0, r.err
    assert _leaks(store) == {PLUGIN_SECRET: _leaks(store)[PLUGIN_SECRET]}  # the plug-in is not installed
    assert "query sha256" in _values(store, OTELPROV.contentPolicy)
    bad = cli(capsysbinary, "import", str(lines), "--store", str(tmp_path / "x"), "--content-policy", "hash")
    assert bad.code == 2 and "--content-policy 'hash'" in bad.err and not (tmp_path / "x").exists()
