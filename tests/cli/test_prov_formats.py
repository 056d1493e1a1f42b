"""``otel-prov show`` and ``export`` in PROV-N and PROV-JSON, on stores of real sessions in both
profiles: what the ``prov`` package reads back, the one line on stderr of what was left out (the seed
profile's statements that are not valid PROV, with the way to a valid document), the suffixes and
names that pick the formats (``.json`` keeps meaning JSON, JSON-LD for export)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyoxigraph
import pytest
from prov.model import ProvDocument

from otel_prov.render import provdm
from tests.support.cli import cli, one_error_line
from tests.support.provdocs import ProvStore, record, triples

NOT_VALID = ("triples that are not valid PROV (2 prov:wasDerivedFrom with a prov:Activity where PROV needs "
             "an entity), as the seed profile records them: ")


@pytest.fixture(scope="module", params=["seed", "strict"])
def stored(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ProvStore:
    return record(tmp_path_factory.mktemp(f"prov-cli-{request.param}") / "store", request.param)


def _provn(text: str) -> ProvDocument:
    return ProvDocument.deserialize(content=text, format="provn", profile="strict")


def _json(text: str) -> ProvDocument:
    return ProvDocument.deserialize(content=text, format="json")


def test_show_writes_prov_n_and_prov_json_and_says_what_it_left_out(stored: ProvStore,
                                                                    capsysbinary: Any) -> None:
    """The agent's session (its document search a sub-trace) in both formats, the same document; in
    the seed profile one line on stderr: its first step and the sub-trace's Question are derived from
    an Activity (the Question), not valid PROV, left out; a strict store has nothing to leave out."""
    agent, store = stored.filled.agent.explain_id, str(stored.path)
    provn = cli(capsysbinary, "show", agent, "--store", store, "--format", "provn")
    prov_json = cli(capsysbinary, "show", agent, "--store", store, "--format", "prov-json")
    assert provn.code == prov_json.code == 0
    read = _provn(provn.out)
    assert read == _json(prov_json.out) and len(read.records) > 15
    assert {r.identifier.uri for r in read.get_records() if r.identifier is not None} >= {
        agent, f"{agent}/i1", f"{agent}/final"}
    if stored.profile == "seed":
        for name, r in (("PROV-N", provn), ("PROV-JSON", prov_json)):
            (line,) = r.err.splitlines()
            assert line.startswith(f"otel-prov: {name}: left out 2 {NOT_VALID}")
            assert "--profile strict (OTEL_PROV_PROFILE=strict) is valid PROV" in line
    else:
        assert provn.err == prov_json.err == ""
    # a person's approvals: qualified associations with their roles; the roles are no PROV element
    approved = cli(capsysbinary, "show", stored.approved.explain_id, "--store", store, "--format", "provn")
    assert "wasAssociatedWith(agent:approved-run/approval/" in approved.out
    assert "prov:role='role:auditor'" in approved.out
    (line,) = approved.err.splitlines()
    assert "triples of 2 nodes that are no PROV element (2 prov:Role), named only in attribute values" in line
    assert ("not valid PROV" in line) == (stored.profile == "seed")


def test_export_writes_every_session_or_the_ones_named(stored: ProvStore, capsysbinary: Any,
                                                         tmp_path: Path) -> None:
    """The whole graph (the same document in both formats, the one the renderer makes of the store's
    triples), or some sessions: a session's export is what show writes of it."""
    store = str(stored.path)
    provn = cli(capsysbinary, "export", "--store", store, "--format", "provn")
    prov_json = cli(capsysbinary, "export", "--store", store, "--format", "prov-json")
    assert provn.code == prov_json.code == 0
    doc = provdm.document(triples(stored.path))
    assert provn.out == provdm.provn(doc) and prov_json.out == provdm.prov_json(doc)
    assert _provn(provn.out) == _json(prov_json.out)
    (line,) = provn.err.splitlines()
    assert line == f"otel-prov: {provdm.left_out_note(doc, 'PROV-N')}"
    assert ("not valid PROV" in line) == (stored.profile == "seed")
    assert "3 rdf:Statement" in line  # the GraphRAG's selected edges
    agent = stored.filled.agent.explain_id
    shown = cli(capsysbinary, "show", agent, "--store", store, "--format", "provn")
    one = cli(capsysbinary, "export", "--store", store, "--session", agent, "--format", "provn")
    assert one.out == shown.out and one.err.replace("PROV-N", "X") == shown.err.replace("PROV-N", "X")
    out = tmp_path / "agent.provjson"
    assert cli(capsysbinary, "export", "--store", store, "--session", agent, "-o", str(out)).code == 0
    assert _json(out.read_text(encoding="utf-8")) == _provn(shown.out)


def test_suffixes_and_names_pick_the_prov_formats_and_json_keeps_its_meaning(
        stored: ProvStore, capsysbinary: Any, tmp_path: Path) -> None:
    store, agent = str(stored.path), stored.filled.docs.explain_id
    for command in (("export", "--store", store), ("show", agent, "--store", store)):
        provn, provjson = tmp_path / "out.provn", tmp_path / "out.provjson"
        assert cli(capsysbinary, *command, "-o", str(provn)).code == 0
        assert cli(capsysbinary, *command, "-o", str(provjson)).code == 0
        assert _provn(provn.read_text(encoding="utf-8")) == _json(provjson.read_text(encoding="utf-8"))
        for alias, name in (("prov-n", "provn"), ("PROVJSON", "prov-json")):
            aliased = cli(capsysbinary, *command, "--format", alias)
            assert aliased.out == cli(capsysbinary, *command, "--format", name).out
        # .json: show's JSON, export's JSON-LD, as before; PROV-JSON there when --format says so
        plain = tmp_path / "out.json"
        assert cli(capsysbinary, *command, "-o", str(plain)).code == 0
        if command[0] == "show":
            assert json.loads(plain.read_text(encoding="utf-8"))["id"] == agent
        else:
            assert list(pyoxigraph.parse(plain.read_bytes(), format=pyoxigraph.RdfFormat.JSON_LD))
        assert cli(capsysbinary, *command, "--format", "prov-json", "-o", str(plain)).code == 0
        assert _json(plain.read_text(encoding="utf-8")) == _provn(provn.read_text(encoding="utf-8"))
        # a suffix of another format, or of a PROV format no command writes, is refused
        one_error_line(cli(capsysbinary, *command, "--format", "provn", "-o", str(tmp_path / "x.ttl")),
                       "--format provn does not match the output file", code=2)
        one_error_line(cli(capsysbinary, *command, "-o", str(tmp_path / "x.provx")), "is PROV-XML (.provx)",
                       code=2)
        assert not (tmp_path / "x.ttl").exists() and not (tmp_path / "x.provx").exists()
    query = cli(capsysbinary, "query", "ASK { ?s ?p ?o }", "--store", store, "-o", str(tmp_path / "q.provn"))
    one_error_line(query, "is PROV-N (.provn), which this command does not write", code=2)
