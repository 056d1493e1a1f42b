"""``otel-prov serve --prune-older-than``: serve erases by itself, on its schedule, the sessions
older than the limit, keeps the held and the recent ones, records each erasure, and says so in its
log; ``otel-prov prune`` does the same once.  Sessions are real SDK spans, aged by shifting their
times (the SDK stamps the clock's time)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_prov import ProvSpanExporter
from tests.support.cli import cli
from tests.support.erasing import aged, agent
from tests.support.procs import start_serve, wait_until


def _trace(spans: list[ReadableSpan]) -> str:
    return f"{spans[0].context.trace_id:032x}"  # type: ignore[union-attr]


def _listed(capsysbinary: Any, store: Path) -> dict[str, dict[str, Any]]:
    r = cli(capsysbinary, "list", "--store", str(store), "--format", "json", "--limit", "1000")
    assert r.code == 0, r.err
    return {row["traceId"]: row for row in json.loads(r.out)}


def _erased_by(capsysbinary: Any, store: Path) -> list[str]:
    r = cli(capsysbinary, "query", "--store", str(store), "--format", "json",
            "SELECT ?who ?why WHERE { GRAPH <urn:graph:erasures> { ?e a otelprov:Erasure ; "
            "prov:wasAssociatedWith ?p ; rdfs:comment ?why . ?p rdfs:label ?who } }")
    assert r.code == 0, r.err
    return [f"{row['who']}: {row['why']}" for row in json.loads(r.out)["results"]["bindings"]
            for row in [{k: v["value"] for k, v in row.items()}]]


def test_prune_erases_what_is_older_and_keeps_the_recent_and_the_held(tmp_path: Path,
                                                                       capsysbinary: Any) -> None:
    store = tmp_path / "store"
    old = [aged(agent(f"old {k}"), 40) for k in range(11)]
    held = aged(agent("old but held"), 400)
    recent = [aged(agent(f"recent {k}"), 2) for k in range(3)]
    exporter = ProvSpanExporter(store=store)
    for spans in [*old, held, *recent]:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    listed = _listed(capsysbinary, store)
    assert cli(capsysbinary, "hold", "add", listed[_trace(held)]["id"], "--store", str(store)).code == 0
    r = cli(capsysbinary, "prune", "--older-than", "30d", "--store", str(store))
    assert r.code == 0 and r.err.count("deleted ") == 11 and "1 held session kept" in r.err, r.err
    assert set(_listed(capsysbinary, store)) == {_trace(s) for s in [held, *recent]}


def test_serve_prunes_by_itself(tmp_path: Path, capsysbinary: Any) -> None:
    store = tmp_path / "store"
    old = [aged(agent(f"old {k}"), 40) for k in range(12)]
    held = aged(agent("old but held"), 90)
    exporter = ProvSpanExporter(store=store)
    for spans in [*old, held]:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    question = _listed(capsysbinary, store)[_trace(held)]["id"]
    held_now = cli(capsysbinary, "hold", "add", question, "--store", str(store), "--reason", "litigation")
    assert held_now.code == 0, held_now.err
    serve = start_serve(store, tmp_path / "serve.log", "--prune-older-than", "30d", "--prune-interval", "1s")
    try:
        fresh = [agent(f"fresh {k}") for k in range(3)]
        older_fed = aged(agent("fed old"), 31)
        client = OTLPSpanExporter(endpoint=f"127.0.0.1:{serve.grpc_port}", insecure=True, timeout=10)
        for spans in [*fresh, older_fed]:
            assert client.export(spans) is SpanExportResult.SUCCESS
        client.shutdown()
        wait_until(lambda: _listed(capsysbinary, store).keys() == {_trace(s) for s in [held, *fresh]},
                   60, "serve to prune the old sessions", proc=serve)
        wait_until(lambda: "pruned" in serve.tail(), 20, "serve to say it pruned", proc=serve)
    finally:
        assert serve.terminate() == 0, serve.tail()
    log = serve.tail(200)
    assert "pruned 12 session(s) older than 30d, 1 held kept" in log or "pruned 13 session(s)" in log, log
    assert "their text stays in the store's files until 'otel-prov check --rebuild'" in log
    assert set(_listed(capsysbinary, store)) == {_trace(s) for s in [held, *fresh]}
    erased = _erased_by(capsysbinary, store)
    assert len(erased) == 13 and set(erased) == {"otel-prov serve: retention: older than 30d"}, erased
