"""RDF terms as N-Triples text: the one place where IRIs and literals are made and escaped.

The mapping produces quads as 4-tuples of N-Triples terms (``"<iri>"``, ``'"text"'``,
``'"5"^^<...#integer>'``), which is what every store we write to reads fastest.
"""

from __future__ import annotations

import calendar
import re
import uuid as _uuid
from datetime import datetime, timezone
from functools import lru_cache
from urllib.parse import quote

import pyoxigraph
from rdflib import XSD

_XSD_DOUBLE = "<http://www.w3.org/2001/XMLSchema#double>"
_XSD_INTEGER = f"<{XSD.integer}>"
_XSD_DATETIME = f"<{XSD.dateTime}>"

# Characters that may not appear in an IRI (RFC 3987 excludes them; N-Triples rejects them).
_IRI_ILLEGAL = re.compile(r'[\x00-\x20<>"{}|\\^`\x7f-\x9f]')
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# IRIs used as values (edges of a knowledge graph) follow TrustGraph's rule.
_VALUE_IRI_SCHEMES = ("http://", "https://", "urn:")


CACHED_IRI_CHARS = 512
"""IRIs up to this length are cached (ours: a session's IRIs recur in most of its spans' quads); a
longer one (a knowledge-graph value from a span, up to the attribute limit) is not kept."""


def iri(value: str) -> str:
    """An IRI term.  Characters illegal in an IRI are percent-encoded; a value without a scheme
    raises :class:`ValueError` (callers pass only IRIs they built)."""
    return _cached_iri(value) if len(value) <= CACHED_IRI_CHARS else _iri(value)


@lru_cache(maxsize=4096)
def _cached_iri(value: str) -> str:
    return _iri(value)


def _iri(value: str) -> str:
    if not _SCHEME.match(value):
        raise ValueError(f"not an absolute IRI: {value!r}")
    return "<" + encode_iri_chars(value) + ">"


def encode_iri_chars(value: str) -> str:
    value = clean_text(value)
    if _IRI_ILLEGAL.search(value):
        value = _IRI_ILLEGAL.sub(lambda m: quote(m.group(0), safe=""), value)
    return value


def iri_segment(value: str) -> str:
    """Text made safe to stand for ``{uuid}`` inside one of our IRIs: everything but unreserved
    characters is percent-encoded, so ``/`` and ``:`` in a session id cannot change an IRI's shape.
    A UUID passes unchanged."""
    return quote(clean_text(value), safe="-._~")


def clean_text(value: str) -> str:
    """Text that can be written as UTF-8: lone surrogates (undecodable bytes) become U+FFFD."""
    if has_invalid_text(value):
        return _SURROGATE.sub("\ufffd", value)
    return value


def has_invalid_text(value: str) -> bool:
    # Fast paths (this runs on every text of every span): ASCII text, and text that encodes as
    # UTF-8, hold no lone surrogate; only text that fails to encode is searched.
    if value.isascii():
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.search(value) is not None
    return False


def literal(value: str) -> str:
    """A plain (``xsd:string``) literal; the text round-trips exactly (N-Triples escaping)."""
    if not value.isascii():
        value = clean_text(value)
    # N-Triples escapes for \\ " LF CR, by C-speed scans; the backslash first, so the
    # backslashes added next are not escaped again.
    if "\\" in value:
        value = value.replace("\\", "\\\\")
    if '"' in value:
        value = value.replace('"', '\\"')
    if "\n" in value:
        value = value.replace("\n", "\\n")
    if "\r" in value:
        value = value.replace("\r", "\\r")
    return '"' + value + '"'


_ESCAPED = re.compile(r'\\[\\"nr]')
_UNESCAPED = {"\\\\": "\\", '\\"': '"', "\\n": "\n", "\\r": "\r"}


def literal_text(term: str) -> str:
    """The text of a plain literal :func:`literal` made (its N-Triples escapes undone): the inverse
    of :func:`literal` on valid text."""
    body = term[1:-1]
    if "\\" not in body:
        return body
    return _ESCAPED.sub(lambda m: _UNESCAPED[m.group(0)], body)


def integer(value: int) -> str:
    return f'"{int(value)}"^^{_XSD_INTEGER}'


def double(value: float) -> str:
    """An ``xsd:double`` literal in the canonical form stores give back (``1.0E0``...)."""
    mantissa, _, exponent = f"{value:.15E}".partition("E")
    mantissa = mantissa.rstrip("0")
    if mantissa.endswith("."):
        mantissa += "0"
    return f'"{mantissa}E{int(exponent)}"^^{_XSD_DOUBLE}'


def datetime_from_ns(ns: int) -> str:
    """An ``xsd:dateTime`` literal in UTC, in the canonical form stores give back (nanosecond
    precision, trailing zeros removed)."""
    return f'"{isoformat_ns(ns)}"^^{_XSD_DATETIME}'


def isoformat_ns(ns: int) -> str:
    seconds, frac = divmod(int(ns), 1_000_000_000)
    text = _iso_seconds(seconds)
    if frac:
        text += ("." + f"{frac:09d}").rstrip("0")
    return text + "Z"


@lru_cache(maxsize=256)
def _iso_seconds(seconds: int) -> str:
    """A second as ``YYYY-MM-DDTHH:MM:SS`` (UTC).  Cached: a trace's spans mostly fall within a few
    seconds, and ``strftime`` costs a few microseconds."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def checked_iri(value: str) -> str:
    """:func:`iri` for an IRI that comes from a span (an edge, a parent step), not one we built:
    after encoding, it is also checked as a whole (a stray ``%``, a second ``#``, a bad host), and
    one that is still not valid raises :class:`ValueError`.  (The store parses our N-Quads
    leniently, so nothing else would stop a malformed IRI.)"""
    term = iri(value)
    pyoxigraph.NamedNode(term[1:-1])  # raises ValueError on an invalid IRI
    return term


def value_term(value: str) -> str:
    """A knowledge-graph value given as text: an IRI when it starts with ``http://``,
    ``https://`` or ``urn:`` (TrustGraph's rule) and is a valid IRI once encoded, otherwise a
    plain literal."""
    if value.startswith(_VALUE_IRI_SCHEMES):
        try:
            return checked_iri(value)
        except ValueError:
            pass
    return literal(value)


@lru_cache(maxsize=1024)
def uuid_from_trace_id(trace_id: int) -> str:
    """A 128-bit trace id formatted as a UUID (``8-4-4-4-12`` lowercase hex)."""
    if not 0 <= trace_id < 1 << 128:
        return str(_uuid.UUID(int=trace_id))  # raises as before
    h = f"{trace_id:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def hex_trace_id(trace_id: int) -> str:
    return f"{trace_id:032x}"


def hex_span_id(span_id: int) -> str:
    return f"{span_id:016x}"


def trace_id_literal(trace_id: int) -> str:
    """``literal(hex_trace_id(trace_id))`` (hex digits need no escaping)."""
    return f'"{trace_id:032x}"'


def span_id_literal(span_id: int) -> str:
    """``literal(hex_span_id(span_id))``."""
    return f'"{span_id:016x}"'


def epoch_ns(text: str | None) -> int | None:
    """An ``xsd:dateTime`` text as otel-prov writes it, as nanoseconds since the epoch (None: not
    of that form).  (Texts do not compare as times: ``10:00:00.1Z`` sorts before ``10:00:00Z``.)"""
    if not text:
        return None
    match = _DATETIME.fullmatch(text.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, frac = match.groups()
    whole = calendar.timegm((int(year), int(month), int(day), int(hour), int(minute), int(second)))
    return whole * 1_000_000_000 + int((frac or "").ljust(9, "0")[:9])


_DATETIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:Z|\+00:00)")
