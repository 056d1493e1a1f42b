"""The embedded store's index rebuilt from what it holds (:mod:`otel_prov.stores.rebuild`): on a real
on-disk store filled by the real exporter, what it holds is unchanged; a swap interrupted at any
point is finished by the next writer or by ``check --repair``, and a reader meanwhile says so in
one line; readers next to a process that rebuilds again and again never fail nor see less."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_prov import ProvSpanExporter
from otel_prov.errors import StoreError
from otel_prov.stores import logstore, rebuild
from otel_prov.stores.oxigraph import OxigraphStore
from tests.support.procs import REPO
from tests.support.serving import agent_spans
from tests.support.stores import fold, read_back


def _filled(path: Path, sessions: int = 12) -> set[str]:
    exporter = ProvSpanExporter(store=path)
    for _ in range(sessions):
        assert exporter.export(agent_spans(1)) is SpanExportResult.SUCCESS
    exporter.shutdown()
    return _stored(path)


def _stored(path: Path) -> set[str]:
    with read_back(path) as index:
        return {str(q) for q in index}


def _index_files(path: Path) -> list[str]:
    return sorted(n for n in os.listdir(path) if n not in rebuild.KEPT)


def _built(path: Path) -> None:
    """The first step of a rebuild done: the new index beside the old one (which stays in place)."""
    fold(path)
    index = OxigraphStore(path)
    try:
        rebuild.build(path, index.inner)
    finally:
        index.close()


def test_a_rebuild_keeps_everything_and_leaves_nothing_beside_the_index(tmp_path: Path) -> None:
    store = tmp_path / "store"
    want = _filled(store)
    before = set(_index_files(store))
    assert logstore.fold(store, compact=True) is not None
    assert _stored(store) == want
    assert not {rebuild.MARK, rebuild.NEW, rebuild.OLD} & set(os.listdir(store))
    assert set(_index_files(store)) != before  # a new index: new files, not the old ones


def _interrupted_out(path: Path) -> None:
    """A swap stopped halfway through moving the old index's files aside."""
    _built(path)
    (path / rebuild.MARK).write_text("out\n")
    (path / rebuild.OLD).mkdir()
    names = _index_files(path)
    for name in names[: len(names) // 2]:
        os.replace(path / name, path / rebuild.OLD / name)


def _interrupted_in(path: Path) -> None:
    """A swap stopped halfway through moving the new index's files in (CURRENT not yet)."""
    _built(path)
    (path / rebuild.MARK).write_text("in\n")
    (path / rebuild.OLD).mkdir()
    for name in _index_files(path):
        os.replace(path / name, path / rebuild.OLD / name)
    names = sorted(n for n in os.listdir(path / rebuild.NEW) if n != "CURRENT")
    for name in names[: len(names) // 2]:
        os.replace(path / rebuild.NEW / name, path / name)


@pytest.mark.parametrize("stop", [_interrupted_out, _interrupted_in])
def test_an_interrupted_swap_is_said_by_readers_and_finished_by_the_next_writer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: object) -> None:
    store = tmp_path / "store"
    want = _filled(store)
    stop(store)  # type: ignore[operator]
    monkeypatch.setattr(rebuild, "WAIT", 0.2)
    monkeypatch.setattr(rebuild.wait, "__defaults__", (0.2,))
    with pytest.raises(StoreError, match="its rebuild was interrupted .* check --repair"):
        _stored(store)
    more = agent_spans(1)
    exporter = ProvSpanExporter(store=store)  # a writer: it opens the index, and finishes the swap
    assert exporter.export(more) is SpanExportResult.SUCCESS
    exporter.shutdown()
    after = _stored(store)
    assert want < after and len(after) > len(want)
    assert not {rebuild.MARK, rebuild.NEW, rebuild.OLD} & set(os.listdir(store))


def test_check_repair_finishes_an_interrupted_swap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    from otel_prov.cli import main

    store = tmp_path / "store"
    want = _filled(store)
    _interrupted_out(store)
    monkeypatch.setattr(rebuild.wait, "__defaults__", (0.2,))
    capsysbinary.readouterr()
    assert main(["check", str(store)]) == 1
    assert b"its rebuild was interrupted" in capsysbinary.readouterr().out
    assert main(["check", "--repair", str(store)]) == 0
    assert b"repaired: an interrupted index rebuild, finished" in capsysbinary.readouterr().out
    assert _stored(store) == want


def test_a_build_interrupted_before_its_swap_is_cleared_and_nothing_changes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    want = _filled(store)
    _built(store)
    assert (store / rebuild.NEW / "CURRENT").exists()
    assert _stored(store) == want  # readers read the old index, in place
    fold(store)  # a writer opens the index: what the build left is removed
    assert not (store / rebuild.NEW).exists()
    assert _stored(store) == want


def test_a_mark_of_an_unknown_phase_is_refused_and_nothing_is_changed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _filled(store, 2)
    _built(store)
    (store / rebuild.MARK).write_text("sideways\n")
    files = _index_files(store)
    with pytest.raises(StoreError, match="not a phase of an index rebuild"):
        fold(store)
    assert _index_files(store) == files and (store / rebuild.NEW / "CURRENT").exists()


def test_check_rebuild_and_readers_next_to_a_process_that_rebuilds_again_and_again(
        tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """Another process rebuilds the index thirty times in a row while this one reads it as fast as it
    can: every read sees every quad, none fails."""
    from otel_prov.cli import main

    store = tmp_path / "store"
    want = _filled(store, 15)
    capsysbinary.readouterr()
    assert main(["check", "--rebuild", str(store)]) == 0
    assert b"rebuilt: the log folded, the index rebuilt from what it holds" in capsysbinary.readouterr().out
    assert _stored(store) == want
    code = ("import sys; from pathlib import Path; from otel_prov.stores.logstore import fold\n"
            "for _ in range(30): assert fold(Path(sys.argv[1]), compact=True) is not None\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    rebuilder = subprocess.Popen([sys.executable, "-c", code, str(store)], env=env)
    reads, deadline = 0, time.monotonic() + 120
    try:
        while rebuilder.poll() is None and time.monotonic() < deadline:
            assert _stored(store) == want
            reads += 1
    finally:
        rebuilder.kill() if rebuilder.poll() is None else None
        rebuilder.wait()
    assert rebuilder.returncode == 0 and reads > 0
    assert _stored(store) == want
