"""Shared fixtures: real SDK tracer providers, in-memory capture of real spans, graph comparison."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import Phase, settings
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov.settings import ENV_VARS

INTEROP_SPANS = "OTEL_PROV_TESTS_INTEROP_SPANS"
"""A directory where the real-instrumentation scenarios' spans are kept between test runs (set by
tests/mutation/mutation.sh, which runs the tests once per mutant); unset, each test session runs them."""

if os.environ.get("HYPOTHESIS_PROFILE") == "mutation":
    # tests/mutation/mutation.sh runs the tests once per mutant: a failing example is enough to kill it, so
    # hypothesis neither shrinks nor explains it (which took up to a minute a mutant), and keeps no
    # database between the forked runs.
    settings.register_profile("mutation", phases=[Phase.explicit, Phase.generate], database=None)
    settings.load_profile("mutation")

if TYPE_CHECKING:
    from tests.interop.runner import Captured
    from tests.support.procs import Proc
    from tests.support.serving import Make

FAST = frozenset({
    "test_approvals", "test_content_readers", "test_dialect_readers", "test_flows", "test_genai",
    "test_golden",
    "test_guards", "test_imports", "test_mapper_bounds", "test_model", "test_public_api", "test_settings",
    "test_shapes", "test_strict", "test_svg_layout", "test_timeline", "test_trustgraph_vocab", "test_values",
    "test_trustgraph_profile",
    "test_redaction", "test_policy", "test_by_reference",
})
"""The fast layer (``pytest -m fast``, ~20 s): the modules that start no server, no real framework and
no subprocess -- the mapping core, the values rule, the model, the read side, the import rules."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.stem in FAST:
            item.add_marker(pytest.mark.fast)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test depends on the ambient environment or writes to the user's default store."""
    for name in (*ENV_VARS, "OTEL_TRACES_EXPORTER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg")))


@pytest.fixture
def captured() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A real TracerProvider whose finished spans are kept in memory."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    yield provider, memory
    provider.shutdown()


@pytest.fixture(scope="session")
def interop(tmp_path_factory: pytest.TempPathFactory) -> Captured:
    """The spans of the real-instrumentation scenarios (tests/interop), each run once per test
    session.  Without the interop packages: skipped, or failed under CI (``CI=true``)."""
    from tests.interop.runner import Captured, missing_packages
    from tests.support.procs import in_ci

    reason = missing_packages()
    if reason is not None:
        if in_ci():
            pytest.fail(reason + " -- CI must run the interop tests", pytrace=False)
        pytest.skip(reason)
    kept = os.environ.get(INTEROP_SPANS)
    if kept:
        return Captured(Path(kept), reuse=True)
    return Captured(tmp_path_factory.mktemp("interop"))


@pytest.fixture
def make_server() -> Iterator[Make]:
    """Makes the receiver's real gRPC and HTTP servers on port 0 around an in-memory store (or the one
    given); each is stopped after the test."""
    from tests.support.serving import server_maker

    yield from server_maker()


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    """Processes to stop at the end, whatever happens: SIGTERM, then SIGKILL if one does not exit."""
    started: list[Proc] = []
    yield started
    for proc in started:
        proc.terminate(timeout=15)


@pytest.fixture
def killed_procs() -> Iterator[list[Proc]]:
    """Processes killed (SIGKILL) at the end if they are still running: children that may be stuck."""
    started: list[Proc] = []
    yield started
    for proc in started:
        if proc.popen.poll() is None:
            proc.kill9()
