"""``otel-prov hold``, ``delete`` and ``prune`` on a real on-disk store filled by the real exporter:
what is removed and what is kept, holds refused by name, erasures recorded without their content."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from otel_prov import ProvSpanExporter, load_dataset, spans_to_dataset
from otel_prov.cli.lifecycle import parse_duration
from otel_prov.stores import parse_store
from otel_prov.stores.logstore import open_reader
from tests.support.cli import cli
from tests.support.erasing import agent, files_holding, token
from tests.support.graphs import assert_isomorphic, only_graph
from tests.support.serving import agent_spans


def _store(path: Path, *groups: list[ReadableSpan]) -> None:
    exporter = ProvSpanExporter(store=path)
    for spans in groups:
        exporter.export(spans)
    exporter.shutdown()


def _sessions(capsysbinary: Any, store: Path) -> list[dict[str, Any]]:
    listed = cli(capsysbinary, "list", "--store", str(store), "--format", "json", "--limit", "1000")
    assert listed.code == 0, listed.err
    rows: list[dict[str, Any]] = json.loads(listed.out)
    return rows


def _ids(capsysbinary: Any, store: Path) -> set[str]:
    return {row["id"] for row in _sessions(capsysbinary, store)}


def _question(capsysbinary: Any, store: Path, spans: list[ReadableSpan]) -> str:
    trace = f"{spans[0].context.trace_id:032x}"  # type: ignore[union-attr]
    return next(row["id"] for row in _sessions(capsysbinary, store) if row["traceId"] == trace)


def _graph(store: Path, name: str) -> list[tuple[str, str, str]]:
    reader = open_reader(store)
    try:
        return [(str(q.subject), str(q.predicate), str(q.object))
                for q in reader.inner.quads_for_pattern(None, None, None, None)
                if str(q.graph_name) == f"<{name}>"]
    finally:
        reader.close()


def test_delete_removes_a_session_whole_keeps_the_others_and_records_the_erasure(
        tmp_path: Path, capsysbinary: Any) -> None:
    store = tmp_path / "store"
    keep = [agent_spans(1) for _ in range(11)]  # more than ten other sessions
    gone = agent_spans(1)
    _store(store, *keep, gone)
    question = _question(capsysbinary, store, gone)
    r = cli(capsysbinary, "delete", f"{gone[0].context.trace_id:032x}", "--store", str(store),  # type: ignore[union-attr]
            "--reason", "a person asked", "--by", "auditor@example.org")
    assert r.code == 0, r.err
    assert f"deleted {question} (" in r.err
    assert_isomorphic(spans_to_dataset([s for spans in keep for s in spans]),
                      only_graph(load_dataset(str(store)), "urn:graph:retrieval"))
    erasures = _graph(store, "urn:graph:erasures")
    said = {o for _, _, o in erasures}
    assert f"<{question}>" in said and '"a person asked"' in said and '"auditor@example.org"' in said
    invalidated = "<http://www.w3.org/ns/prov#wasInvalidatedBy>"
    assert any(p == invalidated and s == f"<{question}>" for s, p, _ in erasures)
    assert not any("question 0" in o or "thought" in o for _, _, o in erasures)  # no content recorded
    again = cli(capsysbinary, "delete", question, "--store", str(store))
    assert again.code == 1 and "no trace" in again.err  # it is gone


def test_delete_keeps_what_a_remaining_session_shares_in_the_strict_profile(
        tmp_path: Path, capsysbinary: Any) -> None:
    """The strict profile's software agent is one node for every session of an agent: deleting one
    session removed its type and label under the others."""
    store = tmp_path / "store"
    keep, gone = [agent(f"keep {k}") for k in range(3)], agent("gone")
    exporter = ProvSpanExporter(store=store, profile="strict")
    for spans in (*keep, gone):
        exporter.export(spans)
    exporter.shutdown()
    assert cli(capsysbinary, "delete", _question(capsysbinary, store, gone), "--store", str(store)).code == 0
    assert_isomorphic(spans_to_dataset([s for spans in keep for s in spans], profile="strict"),
                      only_graph(load_dataset(str(store)), "urn:graph:retrieval"))


def test_a_held_session_is_refused_by_name_until_released(tmp_path: Path, capsysbinary: Any) -> None:
    store = tmp_path / "store"
    held, other = agent_spans(1), agent_spans(1)
    _store(store, held, other)
    question = _question(capsysbinary, store, held)
    r = cli(capsysbinary, "hold", "add", question, "--store", str(store), "--reason", "litigation 42")
    assert r.code == 0 and f"held {question}: urn:otel-prov:hold:" in r.err, r.err
    listed = cli(capsysbinary, "hold", "list", "--store", str(store), "--format", "json")
    assert [(h["session"], h["reason"]) for h in json.loads(listed.out)] == [(question, "litigation 42")]
    before = _ids(capsysbinary, store)
    refused = cli(capsysbinary, "delete", *before, "--store", str(store))
    assert refused.code == 1 and f"{question} is held (urn:otel-prov:hold:" in refused.err
    assert "litigation 42" in refused.err
    assert _ids(capsysbinary, store) == {question}  # the other one went
    pruned = cli(capsysbinary, "prune", "--older-than", "0s", "--store", str(store))
    assert pruned.code == 0 and "1 held session kept" in pruned.err
    assert _ids(capsysbinary, store) == {question}
    released = cli(capsysbinary, "hold", "remove", question, "--store", str(store))
    assert released.code == 0 and f"released {question}" in released.err
    assert cli(capsysbinary, "hold", "list", "--store", str(store)).out == ""
    assert cli(capsysbinary, "delete", question, "--store", str(store)).code == 0
    assert _ids(capsysbinary, store) == set()


def test_a_collection_hold_keeps_every_session_of_it(tmp_path: Path, capsysbinary: Any) -> None:
    store = tmp_path / "store"
    _store(store, agent("a", "legal"), agent("b", "legal"), agent("c"))
    rows = _sessions(capsysbinary, store)
    legal = {r["id"] for r in rows if r["collection"] == "legal"}
    assert len(legal) == 2 and len(rows) == 3
    assert cli(capsysbinary, "hold", "add", "--collection", "legal", "--store", str(store)).code == 0
    r = cli(capsysbinary, "prune", "--older-than", "0s", "--store", str(store))
    assert r.code == 0 and "2 held sessions kept" in r.err, r.err
    assert _ids(capsysbinary, store) == legal
    assert cli(capsysbinary, "delete", "--collection", "legal", "--store", str(store)).code == 1


def test_delete_where_text_and_a_dry_run(tmp_path: Path, capsysbinary: Any) -> None:
    store = tmp_path / "store"
    marked = agent("where is Atlantis")
    _store(store, marked, *[agent(f"how far is city {k}") for k in range(11)])
    target = _question(capsysbinary, store, marked)
    everything = _ids(capsysbinary, store)
    dry = cli(capsysbinary, "delete", "--where-text", "ATLANTIS", "--store", str(store), "--dry-run")
    assert dry.code == 0 and len(dry.out.splitlines()) == 1, dry
    assert dry.out.startswith(f"would delete {target} (")
    assert _ids(capsysbinary, store) == everything  # a dry run deletes nothing
    done = cli(capsysbinary, "delete", "--where-text", "answer to where is atlantis", "--store", str(store))
    assert done.code == 0, done.err
    assert _ids(capsysbinary, store) == everything - {target}
    missing = cli(capsysbinary, "delete", "--where-text", "no session says this", "--store", str(store))
    assert missing.code == 0 and "nothing to delete" in missing.err


def test_usage_errors(tmp_path: Path, capsysbinary: Any) -> None:
    store = tmp_path / "store"
    _store(store, agent_spans(1))
    assert cli(capsysbinary, "delete", "--store", str(store)).code == 2
    assert cli(capsysbinary, "prune", "--older-than", "soon", "--store", str(store)).code == 2
    assert cli(capsysbinary, "hold", "add", "--store", str(store)).code == 2
    assert parse_duration("90d").days == 90 and parse_duration("12h").total_seconds() == 43200
    assert parse_duration("1y").days == 365 and parse_duration(" 2w ").days == 14
    assert os.path.isdir(store) and parse_store(str(store)).path == store


def test_delete_erases_the_text_from_every_file_of_the_store(tmp_path: Path, capsysbinary: Any) -> None:
    """The erased session's words were still in the index's string table after a delete and a
    compaction (Oxigraph never collects it): the index is now rebuilt without them.  The others'
    words are found after it (tests/support/erasing.py: why tokens)."""
    store = tmp_path / "store"
    secret, kept = token(), [token() for _ in range(11)]
    keep = [agent(f"keep {word}") for word in kept]
    gone = agent(f"erase {secret} jane.doe@example.org")
    _store(store, *keep, gone)
    assert cli(capsysbinary, "check", "--rebuild", str(store)).code == 0  # everything folded: the index
    assert files_holding(store, secret)  # holds it, on disk
    r = cli(capsysbinary, "delete", _question(capsysbinary, store, gone), "--store", str(store),
            "--reason", "erasure request")
    assert r.code == 0, r.err
    assert "erased from the store's files" in r.err
    assert files_holding(store, secret) == []
    assert all(files_holding(store, word) for word in kept)  # the search sees into the files
    assert len(_sessions(capsysbinary, store)) == 11
