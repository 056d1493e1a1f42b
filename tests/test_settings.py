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


def test_the_content_policy_precedence_ends_with_the_genai_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    """An argument or flag > OTEL_PROV_CONTENT_POLICY > the GenAI instrumentations' switch (for the
    fields ours does not name, errors aside) > keep; redaction: argument > OTEL_PROV_REDACT > off."""
    switch = settings.GENAI_CAPTURE_CONTENT.env
    assert settings.policy().text == ",".join(f"{f}=keep" for f in settings.FIELDS)
    assert settings.policy().redactor is None
    for said in ("true", "SPAN_ONLY", "event_only", "SPAN_AND_EVENT", "a value of the future"):
        monkeypatch.setenv(switch, said)
        assert not settings.policy().active, said
    for said in ("false", "NO_CONTENT", "no_content"):
        monkeypatch.setenv(switch, said)
        assert settings.policy().rule("thought").kind == "omit"
        assert settings.policy().rule("error").kind == "keep"
    monkeypatch.setenv(settings.CONTENT_POLICY.env, "answer=sha256")
    assert settings.policy().rule("answer").kind == "sha256"
    assert settings.policy().rule("question").kind == "omit"  # not named: the switch's
    monkeypatch.setenv(settings.CONTENT_POLICY.env, "truncate:80")  # every field named: the switch is moot
    assert {settings.policy().rule(f).limit for f in settings.FIELDS} == {80}
    assert settings.policy("keep").rule("answer").kind == "keep"
    monkeypatch.setenv(settings.REDACT.env, "email,card")
    assert settings.policy().redactor.names == ("email", "card")  # type: ignore[union-attr]
    assert settings.policy(redact="off").redactor is None
    with pytest.raises(ConfigError, match=r"^--content-policy 'thought=hash': 'hash': expected keep"):
        settings.policy("thought=hash", via="flag")
    monkeypatch.setenv(settings.REDACT.env, "on,email")
    with pytest.raises(ConfigError, match=r"^OTEL_PROV_REDACT='on,email': unknown detector 'on'"):
        settings.policy()
