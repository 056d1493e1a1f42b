"""One settings module: every variable listed, one precedence rule, errors that name their source."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from otel_prov import ConfigError, settings
from otel_prov.stores import StoreSpec

PACKAGE = Path(settings.__file__).parent


def test_every_variable_the_package_reads_is_listed() -> None:
    named = set()
    for path in PACKAGE.rglob("*.py"):
        named |= set(re.findall(r"\"(OTEL_PROV_[A-Z_]+)\"", path.read_text(encoding="utf-8")))
    assert named, "no OTEL_PROV_ variable found: the scan is broken"
    assert named <= set(settings.ENV_VARS)
    assert len(settings.ENV_VARS) == len(set(settings.ENV_VARS))


def test_explicit_value_beats_variable_beats_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert settings.PROFILE.get() == "seed"
    monkeypatch.setenv(settings.PROFILE.env, "strict")
    assert settings.PROFILE.get() == "strict"
    assert settings.PROFILE.get("seed") == "seed"
    assert settings.PROFILE.get("seed", via="flag") == "seed"
    monkeypatch.setenv(settings.PROFILE.env, "  ")  # blank counts as unset
    assert settings.PROFILE.get() == "seed"

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert settings.STORE.get() == StoreSpec("oxigraph", tmp_path / "otel-prov" / "store")
    monkeypatch.setenv(settings.STORE.env, "memory:")
    assert settings.STORE.get().in_memory
    assert settings.STORE.get(tmp_path / "s").path == tmp_path / "s"

    monkeypatch.setenv(settings.SERVE_GRPC_PORT.env, "off")
    assert settings.SERVE_GRPC_PORT.get() is None
    assert settings.SERVE_GRPC_PORT.get("0", via="flag") == 0
    assert settings.SERVE_GRPC_PORT.get(5) == 5


def test_a_bad_value_names_where_it_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"^--profile 'bogus': unknown profile"):
        settings.PROFILE.get("bogus", via="flag")
    with pytest.raises(ConfigError, match=r"^profile='bogus': unknown profile"):
        settings.PROFILE.get("bogus")
    monkeypatch.setenv(settings.PROFILE.env, "bogus")
    with pytest.raises(ConfigError, match=r"^OTEL_PROV_PROFILE='bogus': unknown profile"):
        settings.PROFILE.get()
    with pytest.raises(ConfigError, match=r"^--grpc-port 'abc': expected a port"):
        settings.SERVE_GRPC_PORT.get("abc", via="flag")
    with pytest.raises(ConfigError, match=r"^--max-inflight '0': expected a whole number >= 1"):
        settings.SERVE_MAX_INFLIGHT.get("0", via="flag")
    with pytest.raises(ConfigError, match=r"unknown store 'nosuch:x'"):
        settings.STORE.get("nosuch:x")
    with pytest.raises(ConfigError, match=r"'oxigraph:' names no path"):  # it read the default store
        settings.STORE.get("oxigraph:")
    # serve --workers 99 on 2 CPUs started 99 processes: a bound, and the warning below it
    with pytest.raises(ConfigError, match=r"^--workers '65': expected a whole number from 0 to 64"):
        settings.SERVE_WORKERS.get("65", via="flag")
    assert settings.SERVE_WORKERS.get("64", via="flag") == 64
