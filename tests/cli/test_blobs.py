"""Large values by reference read back through the CLI, on a real on-disk store of real SDK spans:
show and export --inline give the whole text back, verify catches a changed and a missing blob (per
session), delete removes a blob no other session refers to and keeps a shared one, and after delete no
file of the store holds the erased text."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from otel_prov import load_dataset
from otel_prov.model.vocab import TG
from tests.support.blobs import blob_files, payload, run
from tests.support.cli import cli
from tests.support.privacy import files_holding


def _blob(store: Path, text: str) -> Path:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return store / "blobs" / "sha256" / digest[:2] / digest


def test_show_gives_the_preview_and_its_size_and_inline_the_whole_text(tmp_path: Path, capsysbinary) -> None:
    text, inner = payload()
    store = tmp_path / "store"
    [session] = run(f"oxigraph:{store}", [text])
    shown = cli(capsysbinary, "show", session, "--store", str(store))
    assert shown.code == 0, shown
    assert inner not in shown.out
    digest = hashlib.sha256(text.encode()).hexdigest()
    said = f"observation: its beginning shown ({len(text.encode()):,} bytes, blob sha256:{digest}"
    assert said in shown.out
    whole = cli(capsysbinary, "show", session, "--store", str(store), "--inline", "--format", "json")
    assert whole.code == 0, whole
    steps = json.loads(whole.out)["steps"]
    assert [step["observation"] for step in steps if "observation" in step] == [text]
    assert "its beginning shown" not in whole.out


def test_export_inline_puts_the_whole_text_back_as_the_literal(tmp_path: Path, capsysbinary) -> None:
    text, inner = payload()
    store = tmp_path / "store"
    run(f"oxigraph:{store}", [text])
    plain, whole = tmp_path / "plain.nq", tmp_path / "whole.nq"
    assert cli(capsysbinary, "export", "--store", str(store), "-o", str(plain)).code == 0
    assert cli(capsysbinary, "export", "--store", str(store), "--inline", "-o", str(whole)).code == 0
    assert inner not in plain.read_text() and inner in whole.read_text()
    ds = load_dataset(str(store))
    ds.parse(whole, format="nquads")  # the same quads but the observation's literal
    exported = {str(o) for _, _, o, _ in ds.quads((None, TG.observation, None, None))}
    assert text in exported


def test_verify_names_the_session_of_a_changed_and_of_a_missing_blob(tmp_path: Path, capsysbinary) -> None:
    (first, _), (second, _) = payload(), payload(80)
    store = tmp_path / "store"
    one, two = run(f"oxigraph:{store}", [first, second, "small"])[:2]
    assert cli(capsysbinary, "seal", "--store", str(store)).code == 0
    ok = cli(capsysbinary, "verify", "--store", str(store))
    assert ok.code == 0, ok
    changed = _blob(store, first)
    changed.chmod(0o600)
    changed.write_bytes(changed.read_bytes().replace(b"a", b"b", 1))
    _blob(store, second).unlink()
    bad = cli(capsysbinary, "verify", "--store", str(store), "--format", "json")
    assert bad.code == 1
    found = {s["session"]: s for s in json.loads(bad.out)["sessions"]}
    assert found[one]["status"] == "changed" and "changed" in found[one]["detail"]
    assert found[two]["status"] == "changed" and "missing" in found[two]["detail"]
    assert [s["status"] for q, s in found.items() if q not in (one, two)] == ["intact"]


def test_delete_removes_an_unshared_blob_keeps_a_shared_one_and_leaves_no_text(tmp_path: Path,
                                                                              capsysbinary) -> None:
    (shared, shared_word), (alone, alone_word) = payload(), payload(90)
    store = tmp_path / "store"
    a, b, c = run(f"oxigraph:{store}", [shared, shared, alone])
    assert files_holding(store, alone_word) == [_blob(store, alone)]
    assert cli(capsysbinary, "delete", a, c, "--store", str(store)).code == 0
    assert blob_files(store / "blobs") == [_blob(store, shared)]
    assert files_holding(store, alone_word) == []
    assert files_holding(store, shared_word) == [_blob(store, shared)]
    whole = cli(capsysbinary, "show", b, "--store", str(store), "--inline")
    assert whole.code == 0 and shared_word in whole.out
    assert cli(capsysbinary, "delete", b, "--store", str(store)).code == 0
    assert blob_files(store / "blobs") == []


def test_import_of_spans_stores_large_values_as_blobs(tmp_path: Path, capsysbinary) -> None:
    """Spans as OTLP/JSON imported: the value is a blob beside the store, show --inline gives it whole;
    with --blob-threshold 0 it stays inline."""
    from tests.support.blobs import big_spans
    from tests.support.serving import otlp_json, request_of

    text, inner = payload()
    spans = tmp_path / "spans.json"
    spans.write_text(json.dumps(otlp_json(request_of(big_spans([text])))))
    store = tmp_path / "store"
    assert cli(capsysbinary, "import", str(spans), "--store", str(store)).code == 0
    assert blob_files(store / "blobs") == [_blob(store, text)]
    assert files_holding(store, inner) == [_blob(store, text)]
    listed = cli(capsysbinary, "list", "--store", str(store), "--format", "json")
    [session] = [row["id"] for row in json.loads(listed.out)]
    whole = cli(capsysbinary, "show", session, "--store", str(store), "--inline")
    assert whole.code == 0 and inner in whole.out
    inline = tmp_path / "inline"
    assert cli(capsysbinary, "import", str(spans), "--store", str(inline), "--blob-threshold", "0").code == 0
    assert not (inline / "blobs").exists()
    ds = load_dataset(str(inline))
    assert {str(o) for _, _, o, _ in ds.quads((None, TG.observation, None, None))} == {text}


def test_delete_also_removes_a_blob_no_node_refers_to(tmp_path: Path, capsysbinary) -> None:
    """A blob described in the graph but named by no node (what a framework trace mapped again with
    another value leaves: the mapper never removes a blob's description, another session may share
    it) goes with the next delete, its description, its preview's text and its file."""
    from otel_prov.mapping.blobs import by_reference
    from otel_prov.model.quads import nquads
    from otel_prov.model.terms import literal
    from otel_prov.model.vocab import NT
    from otel_prov.stores import BlobStore

    text, inner = payload()
    token = text[:24]
    store = tmp_path / "store"
    [kept, doomed] = run(f"oxigraph:{store}", ["small", "small too"])
    blobs: dict[str, bytes] = {}
    value = ("<urn:gone>", NT.tg_observation, literal(text), "<urn:graph:retrieval>")
    quads = by_reference([value], 1000, blobs)
    orphan = [q for q in quads if q[0] != "<urn:gone>"]
    (tmp_path / "orphan.nq").write_bytes(nquads(orphan))
    BlobStore(store / "blobs").put_all(blobs)
    assert cli(capsysbinary, "import", str(tmp_path / "orphan.nq"), "--store", str(store)).code == 0
    assert files_holding(store, token) != [] and blob_files(store / "blobs") == [_blob(store, text)]
    assert cli(capsysbinary, "delete", doomed, "--store", str(store)).code == 0
    assert blob_files(store / "blobs") == []
    assert files_holding(store, token) == [] and files_holding(store, inner) == []
    assert cli(capsysbinary, "show", kept, "--store", str(store)).code == 0
