"""The built-in redaction detectors (``otel_prov.mapping.redaction``): each catches the real shapes --
many in one text, at its start and end, inside JSON arguments -- and leaves their near misses alone
(a 16-digit number that fails Luhn, an order id, a version number that looks like an IP address, a date
that looks like a phone number); a redactor's one-pass trigger never hides what a detector finds."""

from __future__ import annotations

import base64
import ipaddress
import json
import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_prov.mapping.redaction import BUILTIN, IBAN_LENGTHS, Redactor, iban_valid, luhn, marker

REDACTOR = Redactor(list(BUILTIN.values()))
RNG = random.Random(20)


def _luhn_digit(body: str) -> str:
    return next(d for d in "0123456789" if luhn(body + d))


def card(rng: random.Random, prefix: str = "4", length: int = 16) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    return body + _luhn_digit(body)


def iban(rng: random.Random, country: str) -> str:
    bban = "".join(rng.choice(string.digits + (string.ascii_uppercase if i % 5 == 1 else ""))
                   for i in range(IBAN_LENGTHS[country] - 4))
    moved = int("".join(str(int(c, 36)) for c in bban + country + "00"))
    return f"{country}{98 - moved % 97:02d}{bban}"


def grouped(text: str, size: int = 4, sep: str = " ") -> str:
    return sep.join(text[i:i + size] for i in range(0, len(text), size))


def _token(rng: random.Random, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64(value: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def shapes(rng: random.Random) -> dict[str, list[str]]:
    """Twelve real shapes of each kind, in the forms they are written in."""
    cards = []
    for i in range(12):
        number = card(rng, *[("4", 16), ("51", 16), ("2221", 16), ("34", 15), ("6011", 16), ("4", 19)][i % 6])
        if len(number) == 15:
            cards.append(f"{number[:4]} {number[4:10]} {number[10:]}" if i % 2 else number)
        else:
            cards.append([number, grouped(number), grouped(number, sep="-")][i % 3])
    countries = ["DE", "GB", "FR", "NL", "ES", "IT", "CH", "BE", "NO", "MT", "PL", "SE"]
    ibans = [iban(rng, c) if i % 2 else grouped(iban(rng, c)) for i, c in enumerate(countries)]
    phones = ["+1 (555) 123-4567", "+44 20 7946 0958", "+491701234567", "(555) 123-4567", "555-123-4567",
              "555.123.4567", "030 12345678", "0170-1234567", "020 7946 0958", "01 23 45 67 89",
              "+33 1 23 45 67 89", "+81-3-1234-5678"]
    emails = [f"{_token(rng, 6).lower()}.{i}@{_token(rng, 5).lower()}.{['com', 'co.uk', 'io', 'de'][i % 4]}"
              for i in range(10)] + ["first.last+tag@sub.example.org", "o'brien_x@example-mail.net"]
    ips = [str(ipaddress.IPv4Address(rng.getrandbits(32) | 1 << 24)) for _ in range(6)] + [
        "10.0.0.1", "192.168.1.254", str(ipaddress.IPv6Address(rng.getrandbits(128))), "fe80::1",
        "2001:db8:85a3::8a2e:370:7334", "::ffff:192.0.2.1"]
    header, payload = _b64({"alg": "HS256", "typ": "JWT"}), _b64({"sub": "1234567890", "iat": 1516239022})
    pem = ("-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(_token(rng, 64) for _ in range(4))
           + "\n-----END RSA PRIVATE KEY-----")
    return {
        "card": cards, "iban": ibans, "phone": phones, "email": emails, "ip": ips,
        "openai-key": [f"sk-{['', 'proj-', 'svcacct-'][i % 3]}{_token(rng, 40 + i)}" for i in range(12)],
        "anthropic-key": [f"sk-ant-api03-{_token(rng, 80, string.ascii_letters + string.digits + '-_')}"
                          for _ in range(12)],
        "aws-key": ["AKIA" + _token(rng, 16, string.ascii_uppercase + string.digits) for _ in range(10)]
        + ["ASIA" + _token(rng, 16, string.ascii_uppercase + string.digits),
           "aws_secret_access_key=" + _token(rng, 40, string.ascii_letters + string.digits + "/+")],
        "github-token": [f"gh{'pousr'[i % 5]}_{_token(rng, 36)}" for i in range(11)]
        + ["github_pat_" + _token(rng, 82, string.ascii_letters + string.digits + "_")],
        "slack-token": [f"xox{'bpa'[i % 3]}-{rng.randint(10**9, 10**10)}-{_token(rng, 24)}"
                        for i in range(11)]
        + [f"https://hooks.slack.com/services/T{_token(rng, 8)}/B{_token(rng, 8)}/{_token(rng, 24)}"],
        "google-key": ["AIza" + _token(rng, 35, string.ascii_letters + string.digits + "-_")
                       for _ in range(12)],
        "stripe-key": [f"{['sk', 'rk'][i % 2]}_{['live', 'test'][i % 2]}_{_token(rng, 24 + i)}"
                       for i in range(11)]
        + ["whsec_" + _token(rng, 32)],
        "private-key": [pem.replace("RSA", kind) for kind in ("RSA", "EC", "DSA", "OPENSSH", "ENCRYPTED")] * 2
        + [pem.replace("RSA ", ""), "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + _token(rng, 64)
           + "\n-----END PGP PRIVATE KEY BLOCK-----"],
        "jwt": [f"{header}.{payload}.{_token(rng, 43, string.ascii_letters + string.digits + '-_')}"
                for _ in range(11)] + [f"{header}.{payload}."],
    }


SHAPES = shapes(RNG)


def test_shapes_are_valid() -> None:
    assert all(luhn(c.replace(" ", "").replace("-", "")) for c in SHAPES["card"])
    assert all(iban_valid(i.replace(" ", "")) for i in SHAPES["iban"])
    assert luhn("4111111111111111") and not luhn("4111111111111112")
    assert iban_valid("DE89370400440532013000") and iban_valid("GB82WEST12345698765432")
    assert not iban_valid("DE89370400440532013001") and not iban_valid("XX89370400440532013000")


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_each_kind_many_in_one_text_at_its_start_and_end(kind: str) -> None:
    found = SHAPES[kind]
    assert len(found) >= 12
    text = " and then ".join(found) + ", that is all. Or " + found[0]
    redacted, counts = REDACTOR.redact(text)
    assert counts == {kind: len(found) + 1}, (redacted, counts)
    assert redacted.startswith(marker(kind)) and redacted.endswith(marker(kind))
    for value in found:
        assert value not in redacted


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_each_kind_inside_json_arguments(kind: str) -> None:
    values = SHAPES[kind][:11]
    arguments = json.dumps({"to": values[0], "items": [{"value": v, "n": i} for i, v in enumerate(values)],
                            "note": f"send {values[-1]} now"})
    redacted, counts = REDACTOR.redact(arguments)
    assert counts == {kind: len(values) + 2}, (redacted, counts)
    parsed = json.loads(redacted)  # still JSON: a marker replaces the text inside a string
    assert parsed["to"] == marker(kind) and parsed["note"] == f"send {marker(kind)} now"
    assert [item["value"] for item in parsed["items"]] == [marker(kind)] * len(values)


NEAR_MISSES = [
    "order 4111111111111112 shipped",  # 16 digits, Luhn fails
    "tracking 1234567812345678 and 9999 9999 9999 9999",  # Luhn fails / no network's first digit
    "ORD-2024-000123, invoice INV-4111-1111-1111-1112, ticket #100234567",
    "timestamp 1733300000000000000 ns, 1733300000 s",
    "released 2024-01-15, due 15.01.2024 or 01/15/2024, at 10:30:45",
    "between 2024-01-15 and 2024-02-15, 12-31-2023",
    "version 1.2.3.4, v1.2.3.4, pip install pkg==1.2.3.4, Version: 10.0.0.1",
    "Python 3.11.4.1 and firmware 2.10.0.15",
    "999.1.1.1 and 01.02.03.04 and 1.2.3",
    "MAC 00:1A:2B:3C:4D:5E, std::vector<int>, a::b, ratio 16:9:4",
    "scikit sk-learn, task-force, ask-me, risk_level, desk_test_case",
    "user@localhost, @mention, pkg@1.2.3, name at example dot com",
    "DE89 3704 0044 0532 0130 01 is not an IBAN (bad check digits)",
    "AKIA short: AKIA1234, eyJ not a token, eyJhb.eyJ.x",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqh\n-----END PUBLIC KEY-----",
    "price 1,234,567.89 USD, 12 345 678 units, ISBN 978-3-16-148410-0",
    "year 2024 2025 2026 and 3.14159 26535",
    "call extension 1234 or room 555",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_left_alone(text: str) -> None:
    assert REDACTOR.redact(text) == (text, {})


def test_overlaps_the_first_and_longest_wins() -> None:
    number = "DE89 3704 0044 0532 0130 00"  # its digit groups could be read as a card or a phone
    assert REDACTOR.redact(f"pay to {number}.") == (f"pay to {marker('iban')}.", {"iban": 1})


def test_what_stands_next_to_a_secret_stays() -> None:
    number = SHAPES["card"][0]
    assert REDACTOR.redact(f"{number} 12/26, cvc 123") == ("[card] 12/26, cvc 123", {"card": 1})
    assert REDACTOR.redact("https://admin:pw@10.0.0.1:8080/x") == ("https://admin:pw@[ip]:8080/x", {"ip": 1})
    assert REDACTOR.redact("Bearer " + SHAPES["jwt"][0] + ";") == ("Bearer [jwt];", {"jwt": 1})


def test_a_redactor_with_some_detectors_finds_only_theirs() -> None:
    only = Redactor([BUILTIN["email"], BUILTIN["card"]])
    text = f"{SHAPES['email'][0]} {SHAPES['card'][0]} {SHAPES['ip'][0]}"
    assert only.redact(text)[1] == {"email": 1, "card": 1}
    assert only.names == ("email", "card")


class _Every:
    """A plug-in-like detector without triggers: runs on every value."""

    name = "digit"

    def find(self, text: str) -> list[tuple[int, int]]:
        return [(i, i + 1) for i, c in enumerate(text) if c == "7"]


def test_a_detector_without_triggers_runs_on_every_value() -> None:
    redactor = Redactor([BUILTIN["email"], _Every()])
    assert redactor.redact("plain words, 7 days") == ("plain words, [digit] days", {"digit": 1})


_PIECES = st.sampled_from([*(v for values in SHAPES.values() for v in values[:3]), *NEAR_MISSES, " ", "-",
                           ":", "@", "_", "0", "4", " 2024 ", "A", "J", "P", "T", "eyJ", "sk-", "::", "."])


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES | st.text(max_size=12), max_size=12))
def test_the_triggers_and_windows_never_hide_a_find(pieces: list[str]) -> None:
    """Whatever the text, the triggers run every detector that would find something, and a detector
    run only around the numeric runs finds what it finds in the whole text."""
    text = "".join(pieces)
    every = tuple(range(len(REDACTOR.detectors)))
    assert REDACTOR.redact(text) == REDACTOR._redact(text, every)
    assert REDACTOR.may_hold(text) or REDACTOR._redact(text, every)[1] == {}
