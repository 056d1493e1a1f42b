"""A newcomer's first minutes, literally as README.md says: a fresh clone, its first command, its
Python example, then `otel-prov show` of what it printed -- nothing activated that the README does
not say to, a fresh HOME-like data directory, no environment of ours."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.procs import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _block(heading: str, language: str) -> str:
    """The first fenced ``language`` block after ``heading``."""
    section = README[README.index(heading):]
    match = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert match, f"no {language} block under {heading!r} in README.md"
    return match.group(1)


def _newcomer_env(home: Path) -> dict[str, str]:
    """A shell as a newcomer has it: PATH and HOME, nothing of otel-prov's or OpenTelemetry's."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "PIP_INDEX_URL", "PIP_FIND_LINKS", "PIP_TRUSTED_HOST")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / ".local" / "share"),
               PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")))
    return env


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone of this repository's committed state (what a newcomer gets)."""
    dest = tmp_path_factory.mktemp("newcomer") / "otel-prov"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(dest)], check=True, timeout=120)
    return dest


def test_the_quickstart_as_written(clone: Path, tmp_path: Path) -> None:
    first = _block("## Quickstart", "bash").splitlines()[0].split("#", 1)[0].strip()
    assert first == "bash .ci/setup && .venv/bin/otel-prov demo", "README's first command changed"
    home = tmp_path / "home"
    home.mkdir()
    run = subprocess.run(["bash", "-c", first], cwd=clone, env=_newcomer_env(home), capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    listed = re.findall(r"^(urn:trustgraph:\S+)\s+\| (Agent|GraphRAG|DocRAG)\s", run.stdout, re.M)
    assert sorted(kind for _, kind in listed) == ["Agent", "DocRAG", "GraphRAG"]
    store = home / ".local" / "share" / "otel-prov" / "store"
    assert store.is_dir(), "the demo wrote somewhere else than the default store README names"
    # README's next step: `otel-prov show IRI`, with the same .venv/bin prefix.
    iri = listed[0][0]
    shown = subprocess.run([str(clone / ".venv" / "bin" / "otel-prov"), "show", iri], cwd=clone,
                           env=_newcomer_env(home), capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and shown.stdout.startswith("=== "), shown.stderr


def test_the_readme_python_example_runs_as_written(clone: Path, tmp_path: Path) -> None:
    """The 'Instrument an agent' snippet, run by the clone's Python after `bash .ci/setup`."""
    home = tmp_path / "home"
    home.mkdir()
    env = _newcomer_env(home)
    if not (clone / ".venv" / "bin" / "python").exists():
        subprocess.run(["bash", ".ci/setup"], cwd=clone, env=env, check=True, timeout=900,
                       capture_output=True)
    script = tmp_path / "agent.py"
    script.write_text(_block("## Instrument an agent", "python"), encoding="utf-8")
    run = subprocess.run([str(clone / ".venv" / "bin" / "python"), str(script)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    iri = run.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"urn:trustgraph:agent:[0-9a-f-]{36}", iri)
    shown = subprocess.run([str(clone / ".venv" / "bin" / "otel-prov"), "show", iri], env=env,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "Question: What is the capital of France?" in shown.stdout
    assert "Thought: I need to query the knowledge base" in shown.stdout
    assert "  Paris" in shown.stdout.splitlines()  # the answer


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_setup_interrupted_says_so_and_exits_130(tmp_path: Path, how: str) -> None:
    """Ctrl-C (SIGINT to the terminal's process group) or SIGTERM (to the script) during a step of
    .ci/setup: the step's command is stopped, one line, exit 130 -- not "FAILED: pip-install" and a
    log tail.  The step's command is a stand-in for pip that waits, run by the script as committed."""
    import signal
    import time

    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci" / "setup").write_bytes((REPO / ".ci" / "setup").read_bytes())
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    started = tmp_path / "pip.pid"
    fake = venv_bin / "python"
    # as pip does: Ctrl-C or SIGTERM ends it with status 1 (KeyboardInterrupt), not by the signal
    fake.write_text(f"#!/bin/sh\ntrap 'exit 1' INT TERM\necho \"$$\" > {started}\nsleep 120 &\nwait $!\n")
    fake.chmod(0o755)
    proc = subprocess.Popen(["bash", ".ci/setup"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={"PATH": os.environ["PATH"]})
    try:
        deadline = time.monotonic() + 30
        while not (started.exists() and started.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.05)
        pip = int(started.read_text())
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "setup: interrupted" and "FAILED" not in err, err
    assert not Path(f"/proc/{pip}").exists() or "zombie" in _state(pip), "the step's command was left running"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:", 1)[1].splitlines()[0].lower()
    except (OSError, IndexError):
        return "zombie"
