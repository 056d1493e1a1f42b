"""Large values by reference through the SDK exporter into a real on-disk store (and a SPARQL server
with a blob directory): a 100 KiB observation is one file under ``blobs/``, named by its SHA-256; the
graph keeps its preview, hash, size and media type; two sessions with the same payload share one file;
what is past the preview is in no file of the store but the blob; strict stays valid PROV."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import rdflib

from otel_prov import load_dataset
from otel_prov.mapping.blobs import PREVIEW_CHARS, blob_iri
from otel_prov.model.vocab import OTELPROV, TG
from tests.support.blobs import blob_files, payload, run
from tests.support.privacy import files_holding
from tests.support.prov import ONTOLOGY, closure_errors


def test_a_100_kib_observation_is_stored_once_as_a_file_named_by_its_hash(tmp_path: Path) -> None:
    text, inner = payload()
    store = tmp_path / "store"
    run(f"oxigraph:{store}", [text])
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert blob_files(store / "blobs") == [store / "blobs" / "sha256" / digest[:2] / digest]
    assert (store / "blobs" / "sha256" / digest[:2] / digest).read_bytes() == text.encode()
    ds = load_dataset(str(store))
    observations = {str(o) for _, _, o, _ in ds.quads((None, TG.observation, None, None))}
    assert observations == {text[:PREVIEW_CHARS]}
    blob = rdflib.URIRef(blob_iri(digest))
    described = {(p, o) for _, p, o, _ in ds.quads((blob, None, None, None))}
    assert (OTELPROV.sha256, rdflib.Literal(digest)) in described
    assert (OTELPROV.byteSize, rdflib.Literal(len(text.encode()))) in described
    assert (OTELPROV.mediaType, rdflib.Literal("text/plain; charset=utf-8")) in described
    assert (OTELPROV.preview, rdflib.Literal(text[:PREVIEW_CHARS])) in described
    notes = {str(o) for _, _, o, _ in ds.quads((None, OTELPROV.byReference, None, None))}
    assert notes == {f"observation sha256:{digest}"}
    # Past the preview, the text is in the blob alone (not in the log, the index or anywhere else).
    assert [p.relative_to(store) for p in files_holding(store, inner)] == [
        Path("blobs") / "sha256" / digest[:2] / digest]


def test_two_sessions_with_the_same_payload_give_one_file(tmp_path: Path) -> None:
    text, _ = payload()
    other, _ = payload(70)
    store = tmp_path / "store"
    run(f"oxigraph:{store}", [text, text, other])
    names = sorted(p.name for p in blob_files(store / "blobs"))
    assert names == sorted({hashlib.sha256(t.encode()).hexdigest() for t in (text, other)})
    assert not list((store / "blobs").rglob(".tmp-*"))
    ds = load_dataset(str(store))
    assert len(set(ds.quads((None, OTELPROV.blob, None, None)))) == 3


def test_a_value_within_the_threshold_and_threshold_zero_stay_inline(tmp_path: Path) -> None:
    text, _ = payload()
    small = "x" * 1000
    run(f"oxigraph:{tmp_path / 'a'}", [small], blob_threshold=2000)
    run(f"oxigraph:{tmp_path / 'b'}", [text], blob_threshold=0)
    assert not (tmp_path / "a" / "blobs").exists() and not (tmp_path / "b" / "blobs").exists()
    for store, value in ((tmp_path / "a", small), (tmp_path / "b", text)):
        ds = load_dataset(str(store))
        assert {str(o) for _, _, o, _ in ds.quads((None, TG.observation, None, None))} == {value}


def test_the_threshold_and_directory_come_from_the_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OTEL_PROV_BLOB_THRESHOLD", "1000")
    monkeypatch.setenv("OTEL_PROV_BLOB_DIR", str(tmp_path / "elsewhere"))
    value = "y" * 1500
    run(f"oxigraph:{tmp_path / 'store'}", [value])
    digest = hashlib.sha256(value.encode()).hexdigest()
    assert blob_files(tmp_path / "elsewhere") == [tmp_path / "elsewhere" / "sha256" / digest[:2] / digest]
    assert not (tmp_path / "store" / "blobs").exists()


def test_a_store_without_a_directory_keeps_values_inline(tmp_path: Path) -> None:
    text, _ = payload()
    ds = rdflib.Dataset()
    run(ds, [text])
    assert {str(o) for _, _, o, _ in ds.quads((None, TG.observation, None, None))} == {text}


@pytest.mark.parametrize("profile", ["strict"])
def test_strict_with_blobs_is_still_consistent_with_prov_o(tmp_path: Path, profile: str) -> None:
    text, _ = payload()
    run(f"oxigraph:{tmp_path / 'store'}", [text], profile=profile)
    ds = load_dataset(str(tmp_path / "store"))
    assert len(set(ds.quads((None, OTELPROV.blob, None, None)))) == 1
    ontology = rdflib.Dataset()
    ontology.parse(ONTOLOGY, format="nquads")
    assert closure_errors(ds, [q[:3] for q in ontology.quads((None, None, None, None))]) == []


def test_a_sparql_server_with_a_blob_dir_and_without_one(tmp_path: Path, capsysbinary) -> None:
    """On a real Oxigraph server: with a blob directory the value is a file there and the server holds
    its preview (show --inline and delete find it through --blob-dir); without one it stays inline."""
    from tests.support.cli import cli
    from tests.support.sparql_servers import start_oxigraph

    text, inner = payload()
    server = start_oxigraph(tmp_path)
    try:
        blobs = tmp_path / "blobs"
        [session] = run(server.url, [text], blob_dir=str(blobs))
        digest = hashlib.sha256(text.encode()).hexdigest()
        assert blob_files(blobs) == [blobs / "sha256" / digest[:2] / digest]
        held = b"\n".join(server.nquads())
        assert inner.encode() not in held and digest.encode() in held
        where = ("--store", server.url, "--blob-dir", str(blobs))
        whole = cli(capsysbinary, "show", session, *where, "--inline")
        assert whole.code == 0 and inner in whole.out
        assert cli(capsysbinary, "delete", session, *where).code == 0
        assert blob_files(blobs) == []
        run(server.url, [text])  # no blob directory for a server: inline
        assert inner.encode() in b"\n".join(server.nquads())
    finally:
        server.stop()


def test_the_log_exporter_joins_only_a_span_exporter_of_the_same_blob_settings(tmp_path: Path) -> None:
    from otel_prov import ConfigError, ProvLogExporter, ProvSpanExporter

    store = f"oxigraph:{tmp_path / 's'}"
    spans = ProvSpanExporter(store=store)
    try:
        with pytest.raises(ConfigError, match="OTEL_PROV_BLOB_THRESHOLD"):
            ProvLogExporter(store=store, blob_threshold=1000)
        with pytest.raises(ConfigError, match="OTEL_PROV_BLOB_DIR"):
            ProvLogExporter(store=store, blob_dir=str(tmp_path / "elsewhere"))
        logs = ProvLogExporter(store=store, blob_threshold=65536)
        assert logs._pipeline is spans._pipeline
        logs.shutdown()
    finally:
        spans.shutdown()
