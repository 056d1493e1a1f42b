"""``otel-prov show`` of a run with people's approvals (``tests/support/approvals.py``): each step's and
the answer's, who, decision, role, time and comment, as text and as JSON that follows the documented
schema."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from otel_prov.read.model import epoch_ns
from tests.support.approvals import COMMENT, ApprovedRun, record_approved_run
from tests.support.cli import cli

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "schema" / "trace.schema.json"
TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z"


@pytest.fixture(scope="module", params=["seed", "strict"])
def recorded(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ApprovedRun]:
    path = tmp_path_factory.mktemp("approvals") / "store"
    return path, record_approved_run(str(path), request.param)


def _section(lines: list[str], title: str) -> list[str]:
    start = lines.index(title)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("--- ")), len(lines))
    return lines[start + 1:end]


def test_show_text_lists_each_steps_and_the_answers_approvals(recorded: tuple[Path, ApprovedRun],
                                                              capsysbinary: Any) -> None:
    path, run = recorded
    r = cli(capsysbinary, "show", run.explain_id, "--store", str(path))
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    first = [line for line in _section(lines, "--- Analysis 1 ---")
             if "Approval" in line or "Comment" in line]
    assert len(first) == 3
    assert re.fullmatch(rf"  Approval: approved by alice@example\.com \(approver\), {TIME}", first[0])
    assert re.fullmatch(rf"  Approval: rejected by bob \(auditor\), {TIME}", first[1])
    assert first[2] == f"    Comment: {COMMENT}"
    assert not [line for line in _section(lines, "--- Analysis 2 ---") if "Approval" in line]
    answer = _section(lines, "--- Conclusion ---")
    assert answer[:2] == ["Answer:", "  Paris"]
    assert re.fullmatch(rf"  Approval: approved by alice@example\.com \(approver\), {TIME}", answer[2])
    assert answer[3] == "    Comment: good answer"


def test_show_json_has_the_approvals_in_the_documented_schema(recorded: tuple[Path, ApprovedRun],
                                                              capsysbinary: Any) -> None:
    path, run = recorded
    r = cli(capsysbinary, "show", run.explain_id, "--store", str(path), "--format", "json")
    shown = json.loads(r.out)
    jsonschema.validate(shown, json.loads(SCHEMA.read_text()))
    first, failed, answer = shown["steps"]
    assert [{k: a[k] for k in ("id", "decision", "by", "person", "role", "comment")}
            for a in first["approvals"]] == [
        {"id": run.approvals[0], "decision": "approved", "by": "alice@example.com",
         "person": "urn:otel-prov:person:alice%40example.com", "role": "approver", "comment": None},
        {"id": run.approvals[1], "decision": "rejected", "by": "bob", "person": "urn:otel-prov:person:bob",
         "role": "auditor", "comment": COMMENT}]
    assert "approvals" not in failed  # none: no key (sessions without approvals print as before)
    assert [(a["decision"], a["comment"]) for a in answer["approvals"]] == [("approved", "good answer")]
    assert all(a["time"] for s in (first, answer) for a in s["approvals"])


def test_list_duration_leaves_out_the_approvals(recorded: tuple[Path, ApprovedRun],
                                                capsysbinary: Any) -> None:
    """The answer is approved after the session: the session's duration (list's, as show's) is its run."""
    path, run = recorded
    rows = json.loads(cli(capsysbinary, "list", "--store", str(path), "--format", "json").out)
    r = cli(capsysbinary, "show", run.explain_id, "--store", str(path), "--format", "json")
    answer_approved = json.loads(r.out)["steps"][-1]["approvals"][0]["time"]
    (row,) = rows
    assert row["status"] == "error" and row["steps"] == 2
    start, approved = epoch_ns(row["time"]), epoch_ns(answer_approved)
    assert start is not None and approved is not None
    assert row["durationMs"] is not None and row["durationMs"] < (approved - start) / 1e6


def test_the_picture_draws_each_approval_with_its_person(recorded: tuple[Path, ApprovedRun],
                                                         capsysbinary: Any) -> None:
    """An approval is an activity labelled with its decision, who and role (its association and role
    are on that label, not nodes of their own), used the step, associated with the person."""
    path, run = recorded
    dot = cli(capsysbinary, "show", run.explain_id, "--store", str(path), "--format", "dot").out
    ids = dict(re.findall(r'  (n\d+) \[label="[^"]*", [^\]]*tooltip="([^"]+)"\]', dot))
    node = {iri: n for n, iri in ids.items()}
    assert re.search(rf'{node[run.approvals[1]]} \[label="Approval\\nrejected by bob \(auditor\)"', dot)
    assert f'{node[run.approvals[1]]} -> {node[run.steps[0]]} [label="used"]' in dot
    bob = node["urn:otel-prov:person:bob"]
    assert f'{node[run.approvals[1]]} -> {bob} [label="wasAssociatedWith"]' in dot
    assert f'{node[run.approvals[2]]} -> {node[run.explain_id + "/final"]} [label="used"]' in dot
    assert "Unknown" not in dot and "/association" not in dot and "urn:otel-prov:role:" not in dot


def test_the_query_docs_model_md_gives_answers_every_decision(recorded: tuple[Path, ApprovedRun],
                                                              capsysbinary: Any) -> None:
    """The SPARQL of docs/model.md's "Approvals" (what explain and the query pack build on) runs as
    written."""
    path, run = recorded
    model = (Path(__file__).resolve().parents[2] / "docs" / "model.md").read_text()
    section = model[model.index("## Approvals"):]
    sparql = section[section.index("```sparql\n") + 10:section.index("```", section.index("```sparql") + 9)]
    r = cli(capsysbinary, "query", sparql, "--store", str(path), "--format", "json")
    assert r.code == 0, r.err
    rows = [{name: term["value"] for name, term in row.items()}
            for row in json.loads(r.out)["results"]["bindings"]]  # SPARQL 1.1 results JSON
    got = sorted((row["node"], row["decision"], row["who"], row["role"], row.get("comment")) for row in rows)
    assert got == sorted([
        (run.steps[0], "approved", "alice@example.com", "approver", None),
        (run.steps[0], "rejected", "bob", "auditor", COMMENT),
        (run.explain_id + "/final", "approved", "alice@example.com", "approver", "good answer")])
