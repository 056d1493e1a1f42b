"""``otel-prov serve`` and large values by reference: in the serve process and in mapping workers
(``--workers 2``), real SDK spans over gRPC into an on-disk store; each large value is one file under
``blobs/`` (the same value twice, one file), the store's other files hold its preview only."""

from __future__ import annotations

import hashlib
from pathlib import Path

from otel_prov.serve.server import Server
from otel_prov.settings import ServeSettings
from otel_prov.stores import StoreSpec
from tests.support.blobs import big_spans, blob_files, payload
from tests.support.privacy import files_holding
from tests.support.procs import Proc, start_serve
from tests.support.serving import export_over_grpc, request_of, stub


def _check(store: Path, texts: list[tuple[str, str]]) -> None:
    names = {hashlib.sha256(t.encode()).hexdigest() for t, _ in texts}
    assert sorted(p.name for p in blob_files(store / "blobs")) == sorted(names)
    for text, inner in texts:
        digest = hashlib.sha256(text.encode()).hexdigest()
        assert files_holding(store, inner) == [store / "blobs" / "sha256" / digest[:2] / digest]


def test_serve_in_process_stores_large_values_as_blobs(tmp_path: Path) -> None:
    (a, a_inner), (b, b_inner) = payload(), payload(70)
    store = tmp_path / "store"
    server = Server(ServeSettings(store=StoreSpec("oxigraph", store), profile="seed", grpc_port=0,
                                  http_port=None, drain_timeout=10.0))
    try:
        export_over_grpc(server, big_spans([a, b, a]))
    finally:
        assert server.stop(30)
    _check(store, [(a, a_inner), (b, b_inner)])


def test_serve_mapping_workers_store_large_values_as_blobs(tmp_path: Path, procs: list[Proc]) -> None:
    (a, a_inner), (b, b_inner) = payload(), payload(70)
    store = tmp_path / "store"
    serve = start_serve(store, tmp_path / "serve.log", "--workers", "2")
    procs.append(serve)
    channel, client = stub(serve.grpc_port)
    with channel:
        client.Export(request_of(big_spans([a, b, a, b])), timeout=30)
    assert serve.terminate(timeout=60) == 0, serve.tail()
    _check(store, [(a, a_inner), (b, b_inner)])
