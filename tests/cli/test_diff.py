"""``otel-prov diff A B`` on real runs in a real store (tests/support/runs.py): its exit statuses (as
``diff``'s: 0 identical, 1 different, 2 trouble), the ids it takes, its text and its JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from otel_prov.cli import read as read_commands
from otel_prov.read.reader import TraceReader
from otel_prov.stores import open_for_reading, parse_store
from tests.support.cli import cli, one_error_line
from tests.support.procs import REPO
from tests.support.runs import EXTRA, RETHOUGHT, Runs, record_runs

SCHEMA = json.loads((REPO / "docs" / "schema" / "diff.schema.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return record_runs(tmp_path_factory.mktemp("cli-diff") / "store")


def diff(capsysbinary: Any, runs: Runs, *argv: str) -> Any:
    return cli(capsysbinary, "diff", *argv, "--store", str(runs.path))


def test_exit_status_0_identical_1_different(runs: Runs, capsysbinary: Any) -> None:
    same = diff(capsysbinary, runs, runs.agent, runs.again)
    assert (same.code, same.err) == (0, "")
    assert "The runs are identical" in same.out
    different = diff(capsysbinary, runs, runs.agent, runs.rethought)
    assert (different.code, different.err) == (1, "")
    assert "The runs differ. First divergence: Analysis 4 (calculator): Thought differs." in different.out
    # times, durations and tokens alone never make runs differ
    assert diff(capsysbinary, runs, runs.parallel, runs.parallel_costlier).code == 0


@pytest.mark.parametrize("argv,needle", [
    (["urn:trustgraph:agent:00000000-0000-0000-0000-000000000000", "{agent}"], "A: no trace"),
    (["{agent}", "0123456789abcdef0123456789abcdef"], "B: no session recorded from trace"),
    (["{agent}", "not an id"], "not an id"),
    (["{agent}", "{agent}", "--output", "{tmp}/diff.svg"], "SVG"),
    (["{agent}", "{agent}", "--format", "json", "--output", "{tmp}/diff.txt"], "does not match"),
    (["{agent}", "{agent}", "--output", "{tmp}/no/such/dir/diff.txt"], "cannot write"),
])
def test_exit_status_2_for_trouble_in_one_line(runs: Runs, capsysbinary: Any, tmp_path: Path, argv: list[str],
                                               needle: str) -> None:
    given = [a.format(agent=runs.agent, tmp=tmp_path) for a in argv]
    one_error_line(diff(capsysbinary, runs, *given), needle, code=2)


def test_a_missing_store_or_argument_is_trouble_too(runs: Runs, tmp_path: Path, capsysbinary: Any) -> None:
    missing = cli(capsysbinary, "diff", runs.agent, runs.again, "--store", str(tmp_path / "nothing"))
    one_error_line(missing, "no store at", code=2)
    assert not (tmp_path / "nothing").exists()
    with pytest.raises(SystemExit) as exit_info:
        cli(capsysbinary, "diff", runs.agent)
    assert exit_info.value.code == 2


def test_ids_as_people_paste_them(runs: Runs, capsysbinary: Any) -> None:
    store = open_for_reading(parse_store(str(runs.path)))
    try:
        trace = TraceReader(store).trace(runs.inserted)[0]
    finally:
        store.close()
    assert trace.trace_id is not None
    uuid = runs.inserted.rsplit(":", 1)[1]
    for ref in (runs.inserted, f"<{runs.inserted}>", trace.trace_id, trace.trace_id[:8].upper(), uuid,
                trace.steps[2].iri):
        r = diff(capsysbinary, runs, runs.agent, ref)
        assert r.code == 1, (ref, r.err)
        assert f"B: {runs.inserted} (Agent, complete" in r.out


def test_text_names_the_divergence_what_lies_downstream_and_the_times_apart(runs: Runs,
                                                                            capsysbinary: Any) -> None:
    out = diff(capsysbinary, runs, runs.agent, runs.inserted).out
    lines = out.splitlines()
    assert lines[0].startswith(f"A: {runs.agent} (Agent, complete, started ")
    assert lines[2] == "Question (both): What is the population density of the capital of France?"
    assert "The runs differ. First divergence: B's Analysis 2 (kg_lookup): only in B." in lines
    downstream = ("Downstream of it (after it in the chain): A's Analysis 2 to Conclusion (9 entries), "
                  "B's Analysis 3 to Conclusion (9 entries): 9 equal, 0 changed, 0 only in A, 0 only in B.")
    assert downstream in lines
    entries = lines[lines.index("--- Entries (= equal, ! changed, - only in A, + only in B) ---") + 1:]
    assert entries[:3] == ["= Question to Analysis 1 (2 equal)", "+ B's Analysis 2 (kg_lookup): only in B",
                           f"    Thought: {EXTRA.thought}"]
    assert "= A's Analysis 2 to Conclusion, B's Analysis 3 to Conclusion (9 equal)" in entries
    times = lines[lines.index("--- Times, durations, tokens (not compared: two runs always differ in these) "
                              "---"):]
    assert times[1].startswith("Started: A 20") and ", B 20" in times[1]
    assert times[2].startswith("Duration: A ") and times[3] == "Steps: A 6, B 7 (+1)"
    changed = diff(capsysbinary, runs, runs.agent, runs.rethought).out.splitlines()
    at = changed.index("! Analysis 4 (calculator)")
    assert changed[at + 1:at + 4] == ["    Thought:",
                                      "      A: Density is population divided by area; I compute it.",
                                      f"      B: {RETHOUGHT}"]


def test_not_captured_and_redacted_are_said_so(runs: Runs, capsysbinary: Any) -> None:
    out = diff(capsysbinary, runs, runs.question_not_captured, runs.question_empty).out.splitlines()
    assert "The runs differ. First divergence: Question: its text differs." in out
    at = out.index("! Question")
    assert out[at + 1:at + 4] == ["    Question:", "      A: (not captured)", "      B: "]
    out = diff(capsysbinary, runs, runs.thought_not_captured, runs.thought_redacted).out.splitlines()
    at = out.index("! Analysis 1 (temp)")
    assert out[at + 1:at + 4] == ["    Thought:", "      A: (not captured)", "      B: (redacted)"]


def test_json_follows_its_schema(runs: Runs, capsysbinary: Any, tmp_path: Path) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    for a, b in ((runs.agent, runs.again), (runs.agent, runs.inserted), (runs.agent, runs.elsewhere),
                 (runs.failed_then_answered, runs.answered), (runs.parallel, runs.parallel_costlier),
                 (runs.question_not_captured, runs.question_redacted)):
        r = diff(capsysbinary, runs, a, b, "--format", "json")
        jsonschema.validate(json.loads(r.out), SCHEMA)
    found = json.loads(diff(capsysbinary, runs, runs.agent, runs.inserted, "--format", "json").out)
    assert (found["identical"], found["a"]["id"], found["b"]["id"]) == (False, runs.agent, runs.inserted)
    first = found["firstDivergence"]
    assert (first["index"], first["status"], first["a"]) == (2, "onlyInB", None)
    assert first["b"]["title"] == "Analysis 2"
    assert first["values"]["arguments"]["b"] == {"state": "value", "values": [json.dumps(EXTRA.arguments)]}
    assert first["values"]["arguments"]["a"] == {"state": "absent"}
    assert (found["downstream"]["equal"], found["downstream"]["onlyInB"]) == (9, 0)
    assert found["downstream"]["b"][0].endswith("/i3") and len(found["downstream"]["a"]) == 9
    assert [e["status"] for e in found["entries"]].count("equal") == 11
    assert found["measures"]["steps"] == {"a": 6, "b": 7, "delta": 1}
    assert found["measures"]["durationMs"]["delta"] is not None
    # --output's suffix picks the format
    assert diff(capsysbinary, runs, runs.agent, runs.inserted, "--output", str(tmp_path / "d.json")).code == 1
    assert json.loads((tmp_path / "d.json").read_text())["firstDivergence"]["index"] == 2
    costlier = json.loads(diff(capsysbinary, runs, runs.parallel, runs.parallel_costlier, "--format",
                               "json").out)
    assert costlier["identical"] is True and costlier["firstDivergence"] is None
    assert costlier["measures"]["inToken"] == {"a": 130, "b": 650, "delta": 520}
    analysis = next(e for e in costlier["entries"] if e["a"]["kind"] == "Analysis")
    assert analysis["measures"]["inToken"] == {"a": 10, "b": 50, "delta": 40}


def test_as_a_process(runs: Runs) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    for other, status in ((runs.again, 0), (runs.elsewhere, 1), ("urn:trustgraph:agent:none", 2)):
        run = subprocess.run([sys.executable, "-m", "otel_prov.cli", "diff", runs.agent, other, "--store",
                              str(runs.path)], capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == status, run.stderr
        assert "Traceback" not in run.stderr


def test_a_closed_pipe_keeps_the_status(runs: Runs, capsysbinary: Any,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``otel-prov diff A B | head``: the reader went away, the status still says what was found."""
    def closed(text: str | bytes, output: str | None) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(read_commands, "write", closed)
    monkeypatch.setattr(read_commands, "silence_stdout", lambda: None)  # keep pytest's capture
    r = diff(capsysbinary, runs, runs.agent, runs.elsewhere)
    assert (r.code, r.err) == (1, "")
    assert diff(capsysbinary, runs, runs.agent, runs.again).code == 0
