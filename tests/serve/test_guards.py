"""The one Host check and the one bearer-token check every HTTP surface and ``serve``'s gRPC use
(``otel_prov/serve/guards.py``)."""

from __future__ import annotations

import pytest

from otel_prov.serve.guards import bearer_matches, host_acceptable


@pytest.mark.parametrize(("host", "allowed", "ok"), [
    ("localhost:8080", (), True), ("LOCALHOST", (), True), ("app.localhost:1", (), True),
    ("127.0.0.1:4318", (), True), ("[::1]:4318", (), True), ("10.1.2.3", (), True),
    ("attacker.example:8080", (), False), ("localhost.attacker.example", (), False),
    ("prov.internal:4318", ("prov.internal",), True), ("prov.internal.", ("prov.internal",), True),
    ("", (), False), ("[::1", (), False),
])
def test_the_host_check_takes_addresses_localhost_and_the_allowed_names_only(
        host: str, allowed: tuple[str, ...], ok: bool) -> None:
    assert host_acceptable(host, allowed) is ok


@pytest.mark.parametrize(("header", "ok"), [
    ("Bearer s3cret", True), ("bearer  s3cret ", True), ("BEARER s3cret", True),
    ("Bearer s3cre", False), ("Bearer s3cret2", False), ("Basic s3cret", False), ("s3cret", False),
    ("", False), (None, False),
])
def test_the_token_check_takes_only_the_bearer_token(header: str | None, ok: bool) -> None:
    assert bearer_matches(header, b"s3cret") is ok
