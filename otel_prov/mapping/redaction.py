"""Redaction of secrets and personal data in the text a trace records: detectors find them, a
:class:`Redactor` replaces each with a typed marker (``[email]``, ``[card]``...) and counts them.

A detector is any object with a ``name`` (its marker's type: lowercase letters, digits and ``-``)
and a ``find(text)`` method giving the ``(start, end)`` of each thing to replace -- the built-in ones
below (:data:`BUILTIN`), or a plug-in's (the entry point group ``otel_prov.redactors``, loaded by
:mod:`otel_prov.settings`).  Built-in detectors look at a value only when a cheap test says it may
hold what they find (an ``@`` for an e-mail address, a digit for a card number), their patterns are
bounded (no backtracking on hostile text), and each shape found is checked where it can be: a card
number by Luhn's check and its issuer's first digit, an IBAN by its country's length and ISO 7064
mod 97, an IP address by :mod:`ipaddress`, a JWT by its header.  Near misses stay: a 16-digit order
number that fails Luhn, a date, a version number after ``version``, a time.

Pure: no I/O; results are cached (a framework trace is mapped again as its spans arrive).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType
from typing import Protocol, runtime_checkable

NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
"""What a detector's name may be: it is written inside the marker and in the graph's counts."""


@runtime_checkable
class Detector(Protocol):
    """What finds one kind of secret or personal data (the plug-in interface)."""

    name: str
    """The marker's type: each thing found becomes ``[{name}]``, counted under ``name``."""

    def find(self, text: str) -> Iterable[tuple[int, int]]:
        """The ``(start, end)`` of each thing to replace in ``text`` (any order; overlaps allowed)."""
        ...


def marker(name: str) -> str:
    return f"[{name}]"


Trigger = str
"""Something every find of a built-in detector holds, cheap to look for: a regular expression that
starts with a literal character (``"sk-"``, ``"_(?<=gh[pousr]_)"``: the regex engine looks for a
literal as fast as ``str.find``, a character class ten times slower; no ``|`` outside a group), or
:data:`NUMERIC`.  A
:class:`Redactor` looks for its detectors' triggers in each value (those starting with the same
character in one search) and runs a detector only on a value where one of its triggers is: most
values hold none.  A plug-in without ``triggers`` runs on every value."""


class Pattern:
    """A detector made of a regular expression (the span of ``group``), with an optional check of
    what it matched and of the text around it, run only when one of ``hints`` is in the text."""

    def __init__(self, name: str, pattern: str, *, triggers: Sequence[Trigger] = (),
                 hints: Sequence[str] = (), check: Callable[[str, re.Match[str]], bool] | None = None,
                 group: int = 0) -> None:
        self.name = name
        self.triggers = tuple(triggers)
        self.regex = re.compile(pattern)
        self.hints = tuple(hints)
        self.check = check
        self.group = group

    def find(self, text: str) -> Iterator[tuple[int, int]]:
        if self.hints and not any(hint in text for hint in self.hints):
            return
        for match in self.regex.finditer(text):
            if self.check is None or self.check(text, match):
                yield match.span(self.group)

    def __repr__(self) -> str:
        return f"Pattern({self.name!r})"


# -- e-mail addresses ----------------------------------------------------------------------------------

EMAIL = Pattern(
    "email",
    r"[A-Za-z0-9](?<![\w.%+-][A-Za-z0-9])[A-Za-z0-9._%+-]{0,63}@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,24}(?![\w-])",
    triggers=["@"], hints=("@",))


# -- numbers: phone numbers, payment cards -------------------------------------------------------------

NUMERIC: Trigger = "<numeric>"
"""Six or more digits and separators (`` .-()/``) from digit to digit: every phone number, card number,
IPv4 address and IBAN (whose account part is digits) has such a run; a year or a price has not.  Looked
for in the value's UTF-8 with each digit made ``0`` and each separator ``.`` (``bytes.translate``), so
the search starts from a literal."""
_NUMERIC_CLASSES = bytes(ord("0") if chr(b).isdigit() and b < 128 else ord(".") if chr(b) in " .-()/" else 32
                         for b in range(256))
_NUMERIC_RUN = re.compile(rb"0[0.]{4,}0")


NUMERIC_MARGIN = 48
"""Characters around a numeric run that a detector it triggers may need: an IBAN's country code and
the letters of its account (at most 34 characters, and spaces), a version number's word before."""


def has_numeric_run(text: str) -> bool:
    """Whether ``text`` holds a :data:`NUMERIC` run."""
    return _NUMERIC_RUN.search(text.encode("utf-8", "replace").translate(_NUMERIC_CLASSES)) is not None


def numeric_windows(text: str) -> list[tuple[int, int]]:
    """Where in ``text`` (ASCII) its numeric runs are, :data:`NUMERIC_MARGIN` characters wider on
    each side, the windows that overlap joined.  Every find of a detector only :data:`NUMERIC`
    triggers lies inside one with the characters it looks at around it (a find needs six characters
    of a run, so no other run's digits can stand at a window's edge)."""
    windows: list[tuple[int, int]] = []
    for run in _NUMERIC_RUN.finditer(text.encode("ascii").translate(_NUMERIC_CLASSES)):
        low, high = max(0, run.start() - NUMERIC_MARGIN), min(len(text), run.end() + NUMERIC_MARGIN)
        if windows and low <= windows[-1][1]:
            windows[-1] = (windows[-1][0], high)
        else:
            windows.append((low, high))
    return windows
_DIGIT = re.compile(r"[0-9]")


def _digits(text: str) -> str:
    return "".join(_DIGIT.findall(text))


def _phone(text: str, match: re.Match[str]) -> bool:
    return 8 <= len(_digits(match.group(0))) <= 15


_NUMBER_END = r"(?![\w]|[ .\-/][0-9])"
"""A number ends where no word and no other group of digits goes on (``0044 0532 0130 01`` is one number)."""
PHONE = Pattern(
    "phone",
    # international: +CC, then groups each after one separator (or a group in parentheses)
    r"\+(?<![\w+]\+)(?<![0-9][ .\-]\+)[1-9][0-9]{0,14}(?:[ .\-]?\([0-9]{1,5}\)|[ .\-][0-9]{1,14}){0,6}"
    + _NUMBER_END
    # North American: (555) 123-4567, 555-123-4567, 555.123.4567, 555 123 4567
    + r"|[(0-9](?<![\w+.\-/][(0-9])(?<![0-9][ .\-][(0-9])"
    r"(?:(?<=\()[0-9]{3}\)[ .\-]?|(?<=[0-9])[0-9]{2}[ .\-])[0-9]{3}[ .\-][0-9]{4}" + _NUMBER_END
    # national, after a trunk 0: 030 12345678, 0170-1234567, 020 7946 0958; French pairs 01 23 45 67 89
    + r"|0(?<![\w+.\-/]0)(?<![0-9][ .\-]0)"
    r"(?:[0-9]{2,4}[ /\-][0-9]{3,8}(?:[ \-][0-9]{2,6})?|[1-9](?:[ .][0-9]{2}){4})" + _NUMBER_END,
    triggers=[NUMERIC], check=_phone)


def luhn(digits: str) -> bool:
    """Luhn's check (ISO/IEC 7812): every second digit from the right doubled."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        n = ord(char) - 48
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


_CARD_GROUPS = {(4, 4, 4, 4), (4, 4, 4, 4, 1), (4, 4, 4, 4, 2), (4, 4, 4, 4, 3), (4, 6, 5), (4, 6, 4),
                (4, 4, 4, 1), (4, 4, 5)}
"""How card numbers are written in groups: 16-19 digits in fours, American Express's 4-6-5, Diners'
4-6-4, the old 13-digit forms."""


def card_number(digits: str) -> bool:
    """13 to 19 digits starting with a card network's digit (2 and 5 Mastercard, 3, 4, 6) whose Luhn
    check holds."""
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and luhn(digits)


class Card:
    """Payment card numbers, whole (``4111111111111111``) or in groups (``4111 1111 1111 1111``,
    ``3782 822463 10005``), by Luhn's check: in a longer run of digits the first groups that make a
    card (a card number and its expiry, ``4111111111111111 12/26``), never part of a longer number."""

    name = "card"
    triggers = (NUMERIC,)
    _RUN = re.compile(r"[0-9](?<![\w.][0-9])(?<![0-9][ \-][0-9])(?:[ \-]?[0-9])*")

    def find(self, text: str) -> Iterator[tuple[int, int]]:
        for run in self._RUN.finditer(text):
            found, start = run.group(0), run.start()
            if run.end() < len(text) and (text[run.end()].isalnum() or text[run.end()] == "_"):
                continue
            separators = set(found) - set("0123456789")
            if len(separators) > 1:
                continue
            groups = found.split(separators.pop()) if separators else [found]
            for count in range(len(groups), 0, -1):
                sizes = tuple(len(group) for group in groups[:count])
                if (count == 1 or sizes in _CARD_GROUPS) and card_number("".join(groups[:count])):
                    yield start, start + sum(sizes) + count - 1
                    break


# -- IBANs ---------------------------------------------------------------------------------------------

IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
    "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "LY": 25,
    "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28, "NL": 18,
    "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "QA": 29, "RO": 24, "RS": 22, "RU": 33, "SA": 24,
    "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25, "SV": 28, "TL": 23,
    "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}
"""The length of each country's IBAN (the SWIFT IBAN registry)."""


def iban_valid(iban: str) -> bool:
    """An IBAN (no spaces, upper case) of its country's length whose ISO 7064 mod 97-10 check holds."""
    if IBAN_LENGTHS.get(iban[:2]) != len(iban) or not iban[2:4].isdigit() or not iban.isalnum():
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(char, 36)) for char in moved)) % 97 == 1


class Iban:
    """IBANs, written whole (``DE89370400440532013000``) or in groups (``DE89 3704 0044 0532 0130
    00``): the country's length of letters and digits after the country code, then the mod 97 check."""

    name = "iban"
    triggers = (NUMERIC,)
    _START = re.compile(r"[A-Z](?<![A-Za-z0-9][A-Z])[A-Z][0-9]{2}")

    def find(self, text: str) -> Iterator[tuple[int, int]]:
        for start in self._START.finditer(text):
            length = IBAN_LENGTHS.get(text[start.start():start.start() + 2])
            if length is None:
                continue
            end, taken, gap = start.end(), 4, False
            while taken < length and end < len(text):  # the country's length of letters and digits
                char = text[end]
                if char == " " and not gap:
                    gap = True
                elif ("0" <= char <= "9" or "A" <= char <= "Z") and char.isascii():
                    taken, gap = taken + 1, False
                else:
                    break
                end += 1
            if taken == length and not (end < len(text) and text[end].isalnum()) and \
                    iban_valid(text[start.start():end].replace(" ", "")):
                yield start.start(), end


# -- IP addresses --------------------------------------------------------------------------------------

_VERSION_BEFORE = re.compile(r"(?:version|ver|release|build|firmware|revision|rev|python|node)[\s:=]*\Z",
                             re.IGNORECASE)


def _ipv4(text: str, match: re.Match[str]) -> bool:
    if any(len(octet) > 1 and octet[0] == "0" or int(octet) > 255 for octet in match.group(0).split(".")):
        return False
    before = text[max(0, match.start() - 12):match.start()]
    return not before.endswith(("==", ">=", "<=", "~=", "^")) and _VERSION_BEFORE.search(before) is None


_IPV4 = Pattern("ip", r"[0-9](?<![\w.\-][0-9])[0-9]{0,2}(?:\.[0-9]{1,3}){3}(?![\w\-]|\.[0-9])", check=_ipv4)
_IPV6_CHARS = frozenset("0123456789abcdefABCDEF:.")


class IpAddress:
    """IPv4 addresses (an octet over 255 or with a leading zero is none, nor a version number: after
    ``version``, ``v``, ``==``...) and IPv6 addresses (by :mod:`ipaddress`; a time ``10:30:45``
    or a MAC address is none)."""

    name = "ip"
    triggers = (NUMERIC, ":[0-9A-Fa-f]{0,4}:")

    def find(self, text: str) -> Iterator[tuple[int, int]]:
        yield from _IPV4.find(text)
        colon = text.find("::") if text.count(":") < 2 else text.find(":")
        while colon != -1:  # IPv6: around each colon, the longest run of hex digits, colons and dots
            start, end = colon, colon
            while start > 0 and text[start - 1] in _IPV6_CHARS:
                start -= 1
            while end < len(text) and text[end] in _IPV6_CHARS:
                end += 1
            while end > colon and text[end - 1] == ".":  # a sentence's full stop
                end -= 1
            found = text[start:end]
            if (not (start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"))
                    and not (end < len(text) and (text[end].isalnum() or text[end] == "_"))
                    and ("::" in found or found.count(":") == 7) and _DIGIT.search(found)):
                try:
                    ipaddress.IPv6Address(found)
                except ValueError:
                    pass
                else:
                    yield start, end
            colon = text.find(":", max(end, colon + 1))


# -- API keys and tokens -------------------------------------------------------------------------------

_KEY_END = r"(?![\w-])"
OPENAI_KEY = Pattern(
    "openai-key", r"sk-(?<![\w-]sk-)(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}" + _KEY_END,
    triggers=["sk-"], hints=("sk-",))
ANTHROPIC_KEY = Pattern(
    "anthropic-key", r"sk-ant-(?<![\w-]sk-ant-)[A-Za-z0-9_\-]{20,}" + _KEY_END,
    triggers=["sk-"], hints=("sk-ant-",))
_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA")
AWS_KEY = Pattern(
    "aws-key",
    rf"A(?<![A-Za-z0-9]A)(?:{'|'.join(p[1:] for p in _AWS_PREFIXES)})[A-Z0-9]{{16}}(?![A-Za-z0-9])"
    r"|(?i:aws_secret(?:_access)?_key)[\"']?\s*[:=]\s*[\"']?(?-i:[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    triggers=["A(?:" + "|".join(p[1:] for p in _AWS_PREFIXES) + ")", r"_(?<=[aA][wW][sS]_)"],
    hints=(*_AWS_PREFIXES, "aws_", "AWS_", "Aws_"))
GITHUB_TOKEN = Pattern(
    "github-token", r"g(?<![\w-]g)(?:h[pousr]_[A-Za-z0-9]{36,255}|ithub_pat_[A-Za-z0-9_]{22,255})" + _KEY_END,
    triggers=[r"_(?:(?<=gh[pousr]_)|(?<=github_))"],
    hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"))
SLACK_TOKEN = Pattern(
    "slack-token",
    r"x(?<![\w-]x)(?:ox[abposr]-[A-Za-z0-9-]{10,250}|app-[0-9]-[A-Za-z0-9-]{10,250})" + _KEY_END
    + r"|https://hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+",
    triggers=[r"-(?:(?<=xox[abposr]-)|(?<=xapp-))", "/services/T"],
    hints=("xox", "xapp-", "hooks.slack.com"))
GOOGLE_KEY = Pattern("google-key", r"A(?<![\w-]A)Iza[0-9A-Za-z_\-]{35}" + _KEY_END,
                     triggers=["AIza"], hints=("AIza",))
STRIPE_KEY = Pattern(
    "stripe-key",
    r"[srw](?<![\w-][srw])(?:(?<=[sr])k_(?:live|test)_[0-9A-Za-z]{10,247}|(?<=w)hsec_[0-9A-Za-z]{20,247})"
    + _KEY_END,
    triggers=[r"_(?:(?<=[sr]k_)|(?<=whsec_))"],
    hints=("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"))


# -- private keys and JWTs -----------------------------------------------------------------------------


class PrivateKey:
    """A PEM private key block (``-----BEGIN ... PRIVATE KEY-----`` to its ``END`` line, its lines
    broken by newlines or by ``\\n`` inside JSON), or, cut short, its header and the base64 after it."""

    name = "private-key"
    triggers = ("PRIVATE KEY",)
    _BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
    _END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
    _BODY = re.compile(r"(?:(?!-----)(?:[A-Za-z0-9+/=:,\- \t\r\n]|\\[nrt])){0,65536}")

    def find(self, text: str) -> Iterator[tuple[int, int]]:
        position = 0
        while True:
            begin = self._BEGIN.search(text, position)
            if begin is None:
                return
            body = self._BODY.match(text, begin.end())
            end = body.end() if body else begin.end()
            closing = self._END.match(text, end)
            if closing is not None:
                end = closing.end()
            yield begin.start(), end
            position = end


def _jwt_header(text: str, match: re.Match[str]) -> bool:
    header = match.group(1)
    try:
        decoded = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    except (ValueError, binascii.Error):
        return False
    return isinstance(decoded, dict) and ("alg" in decoded or "typ" in decoded)


JWT = Pattern("jwt", r"(e(?<![\w-]e)yJ[A-Za-z0-9_\-]{2,4096})\.eyJ[A-Za-z0-9_\-]{2,65536}"
              r"\.[A-Za-z0-9_\-]{0,4096}" + _KEY_END, triggers=["eyJ"], hints=("eyJ",),
              check=_jwt_header)


BUILTIN: dict[str, Detector] = {detector.name: detector for detector in (
    PrivateKey(), JWT, ANTHROPIC_KEY, OPENAI_KEY, AWS_KEY, GITHUB_TOKEN, SLACK_TOKEN, GOOGLE_KEY, STRIPE_KEY,
    EMAIL, Iban(), Card(), IpAddress(), PHONE)}
"""The built-in detectors by name, in the order they win a tie (the same start and length)."""


# -- replacing what they find --------------------------------------------------------------------------

CACHED_CHARS = 64 * 1024
"""Values up to this long have their redaction cached (a framework trace is mapped again as its spans
arrive); longer ones are scanned each time."""


class Redactor:
    """Replaces what ``detectors`` find with their markers, counted by kind.  Where two finds overlap,
    the one that starts first wins (at the same start, the longer; then the detector listed first)."""

    def __init__(self, detectors: Sequence[Detector]) -> None:
        self.detectors = tuple(detectors)
        by_first: dict[str, dict[Trigger, set[int]]] = {}  # "" for NUMERIC
        always: list[int] = []
        for rank, detector in enumerate(self.detectors):
            triggers: Sequence[Trigger] = getattr(detector, "triggers", ())
            if not triggers:
                always.append(rank)
            for trigger in triggers:
                first = "" if trigger == NUMERIC else trigger[0]
                by_first.setdefault(first, {}).setdefault(trigger, set()).add(rank)
        self._always = frozenset(always)
        self._literals: list[tuple[str, frozenset[int]]] = []
        """Triggers that are plain text, looked for with ``in`` (no call: the fastest)."""
        self._checks: list[tuple[str, Callable[[str], object], frozenset[int]]] = []
        """The other triggers: a search per first character (run only where that character is), and
        the numeric run."""
        numeric: frozenset[int] = frozenset()
        for first, found in by_first.items():
            ranks = frozenset().union(*found.values())
            patterns = list(found)
            if not first:
                numeric = ranks
            elif len(patterns) == 1 and not set(patterns[0]) & set("\\.^$*+?{}[]|()"):
                self._literals.append((patterns[0], ranks))
            else:  # one search per first character
                self._checks.append((first, re.compile("|".join(patterns)).search, ranks))
        self._numeric = numeric
        """The detectors :data:`NUMERIC` triggers: where nothing else triggers them, they run only
        around the value's numeric runs (:data:`NUMERIC_MARGIN` characters on each side)."""
        self._cached = lru_cache(maxsize=4096)(self._redact)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(detector.name for detector in self.detectors)

    def may_hold(self, text: str) -> bool:
        """Whether a detector may find something in ``text`` (False: none would).  The triggers hold
        as well in a literal's N-Triples text, whose escapes touch none of their characters."""
        if self._always:
            return True
        for literal, _ in self._literals:
            if literal in text:
                return True
        for first, check, _ in self._checks:
            if first in text and check(text):
                return True
        return bool(self._numeric) and has_numeric_run(text)

    def redact(self, text: str) -> tuple[str, Mapping[str, int]]:
        """``text`` with each thing found replaced by its marker, and how many of each kind."""
        whole, windowed = self._plan(text)
        if not whole and not windowed:
            return text, _NONE
        if len(text) > CACHED_CHARS:
            return self._redact(text, whole, windowed)
        return self._cached(text, whole, windowed)

    def _plan(self, text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The detectors to run on the whole of ``text`` (their trigger is in it, or they have none),
        and those to run only around its numeric runs (only :data:`NUMERIC` triggers them)."""
        fired = set(self._always)
        for literal, ranks in self._literals:
            if literal in text:
                fired |= ranks
        for first, check, ranks in self._checks:
            if not ranks <= fired and first in text and check(text):
                fired |= ranks
        windowed: frozenset[int] = frozenset()
        if self._numeric and not self._numeric <= fired and has_numeric_run(text):
            windowed = self._numeric - fired
            if not text.isascii():  # the runs are found in UTF-8 bytes: their places differ
                fired |= windowed
                windowed = frozenset()
        return tuple(sorted(fired)), tuple(sorted(windowed))

    def _redact(self, text: str, whole: tuple[int, ...], windowed: tuple[int, ...] = (),
                ) -> tuple[str, Mapping[str, int]]:
        finds: list[tuple[int, int, int, str]] = []
        for rank in whole:
            detector = self.detectors[rank]
            for start, end in detector.find(text):
                if 0 <= start < end <= len(text):
                    finds.append((start, -end, rank, detector.name))
        for low, high in numeric_windows(text) if windowed else ():
            part = text[low:high]
            for rank in windowed:
                detector = self.detectors[rank]
                for start, end in detector.find(part):
                    if 0 <= start < end <= len(part):
                        finds.append((low + start, -(low + end), rank, detector.name))
        if not finds:
            return text, _NONE
        finds.sort()
        parts: list[str] = []
        counts: Counter[str] = Counter()
        done = 0
        for start, negative_end, _, name in finds:
            if start < done:
                continue
            parts.append(text[done:start])
            parts.append(marker(name))
            counts[name] += 1
            done = -negative_end
        parts.append(text[done:])
        return "".join(parts), MappingProxyType(dict(counts))


_NONE: Mapping[str, int] = MappingProxyType({})
