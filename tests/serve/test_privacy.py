"""The content policy through ``otel-prov serve`` into a real on-disk store: spans sent over gRPC and
HTTP by the real OTLP exporters, redaction on (a plug-in's detector too, loaded again in each mapping
worker), and no secret in any file of the store -- the same search finds them all without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_prov import ConfigError, load_dataset, settings
from otel_prov.model.vocab import OTELPROV
from otel_prov.serve.server import Server
from otel_prov.settings import ServeSettings, serve_settings
from otel_prov.stores import StoreSpec
from tests.support.privacy import NEEDLES, files_holding, install_plugin, secret_spans
from tests.support.procs import Proc, start_serve
from tests.support.serving import export_over_grpc, otlp_json, request_of, stub


def _objects(store: Path, predicate: object) -> set[str]:
    return {str(o) for _, _, o, _ in load_dataset(str(store)).quads((None, predicate, None, None))}


def _leaks(store: Path) -> set[str]:
    return {needle for needle in NEEDLES if files_holding(store, needle)}


def _send(server: Server) -> None:
    spans = secret_spans()
    export_over_grpc(server, spans[: len(spans) // 2])
    http = HttpExporter(endpoint=f"http://{server.http_address}/v1/traces", timeout=10)
    try:
        assert http.export(spans[len(spans) // 2:]) is SpanExportResult.SUCCESS
    finally:
        http.shutdown()


@pytest.mark.parametrize("redact", ["off", "on"])
def test_serve_stores_no_secret_with_redaction_on(tmp_path: Path, monkeypatch, redact: str) -> None:
    install_plugin(tmp_path / "plugin", monkeypatch)
    store = tmp_path / "store"
    server = Server(ServeSettings(store=StoreSpec("oxigraph", store), profile="seed", grpc_port=0,
                                  http_port=0, drain_timeout=10.0,
                                  policy=settings.policy("arguments=sha256", redact)))
    try:
        _send(server)
        if redact == "on":
            assert _leaks(store) == set()  # the log segment
    finally:
        assert server.stop(30)
    redactions = _objects(store, OTELPROV.redactions)
    if redact == "off":  # the search can fail: every secret is in the store's files
        assert _leaks(store) == set(NEEDLES) and not redactions
        return
    assert _leaks(store) == set()  # the index
    assert "selectedChunk email=1,employee-id=1" in redactions


def test_serve_flags_and_mapping_workers_redact_the_same(tmp_path: Path, monkeypatch,
                                                         procs: list[Proc]) -> None:
    """``otel-prov serve --workers 2 --redact on --content-policy ...``: each worker process maps with
    the policy (the plug-in loaded there again); spans over gRPC and OTLP/JSON."""
    install_plugin(tmp_path / "plugin", monkeypatch)
    store = tmp_path / "store"
    serve = start_serve(store, tmp_path / "serve.log", "--workers", "2", "--redact", "on",
                        "--content-policy", "thought=truncate:12")
    procs.append(serve)
    spans = secret_spans()
    channel, client = stub(serve.grpc_port)
    with channel:
        client.Export(request_of(spans[:3]), timeout=30)
    body = json.dumps(otlp_json(request_of(spans[3:])))
    response = requests.post(f"http://{serve.http}/v1/traces", data=body,
                             headers={"Content-Type": "application/json"}, timeout=30)
    assert response.status_code == 200, response.text
    assert serve.terminate(timeout=60) == 0, serve.tail()
    assert _leaks(store) == set()
    assert "thought truncate:12" in _objects(store, OTELPROV.contentPolicy)
    assert any("employee-id=1" in o for o in _objects(store, OTELPROV.redactions))


def test_serve_settings_read_the_policy_from_flags_over_the_environment(monkeypatch) -> None:
    monkeypatch.setenv(settings.CONTENT_POLICY.env, "sha256")
    monkeypatch.setenv(settings.REDACT.env, "email")
    config = serve_settings(store="memory:")
    assert config.policy.rule("thought").kind == "sha256" and config.policy.key[1] == ("email",)
    config = serve_settings(via="flag", store="memory:", content_policy="keep", redact="off")
    assert not config.policy.active
    with pytest.raises(ConfigError, match="--redact 'cards': unknown detector 'cards'"):
        serve_settings(via="flag", store="memory:", redact="cards")
