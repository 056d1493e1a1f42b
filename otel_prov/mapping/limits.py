"""How large a span's values may be, and how deep: what the store can hold, checked before anything is
acknowledged.  Pure.

- **Size.** Oxigraph's N-Quads parser holds one term in a buffer of at most 16 MiB: a quad with a
  longer literal or IRI can never be written, and a write carrying it fails every time it is
  retried.  So a span is checked twice: its attribute values (and name, status message) against
  the configurable ``max_attribute_bytes`` (:data:`DEFAULT_MAX_ATTRIBUTE_BYTES`) before it is
  mapped, and every term it maps to against :data:`MAX_TERM_BYTES` (escaping and JSON can make a
  term several times longer than the text it came from).  A span over either is *rejected*: none
  of its quads are written, the receiver answers it in ``partial_success``, the exporter counts it.
  It is not truncated: a span that is acknowledged is stored as it was sent, never cut short.
  (Truncating is the application's choice, made for every exporter alike with the SDK's
  ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``.)
- **Depth.** An OTLP ``AnyValue`` may nest arrays and key-value lists without bound.  Values are
  kept down to :data:`MAX_VALUE_DEPTH` levels; what lies deeper is replaced by
  :data:`TOO_DEEP_MARKER` and counted (:data:`TOO_DEEP`), and the span is mapped as usual.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model.quads import Quad

MIB = 1024 * 1024
MAX_TERM_BYTES = 15 * MIB
"""The longest term (literal or IRI, as N-Triples text in UTF-8) written to the store: below the
16 MiB buffer of Oxigraph's parser, with room to spare."""
DEFAULT_MAX_ATTRIBUTE_BYTES = 4 * MIB
"""The default of ``OTEL_PROV_MAX_ATTRIBUTE_BYTES``: the largest attribute value a span may carry
(text in UTF-8; an array or key-value list counted whole)."""
MAX_ATTRIBUTE_BYTES_CEILING = MAX_TERM_BYTES // 2
"""The largest ``max_attribute_bytes`` allowed: text at most doubles when escaped as a literal."""

MAX_VALUE_DEPTH = 64
"""Levels of nested arrays and key-value lists kept in an attribute value."""
TOO_DEEP_MARKER = f"[otel-prov: nested deeper than {MAX_VALUE_DEPTH} levels, not kept]"
TOO_DEEP = (f"attribute value nested deeper than {MAX_VALUE_DEPTH} levels "
            "(the deeper part replaced by a marker)")


class ValueTooLarge(ValueError):
    """A span whose values, or the terms it maps to, are too large for the store."""


def value_bytes(value: Any, stop: int) -> int:
    """The size of an attribute value in bytes (UTF-8 text; a sequence or mapping: its keys and
    items added up), counted until it exceeds ``stop``.  Iterative: any depth."""
    total = 0
    stack = [value]
    while stack and total <= stop:
        item = stack.pop()
        if isinstance(item, str):
            # A character is at most 4 bytes in UTF-8: encode only text that may be too long.
            total += len(item) if item.isascii() or len(item) * 4 <= stop - total else _utf8_len(item)
        elif isinstance(item, (bytes, bytearray)):
            total += len(item)
        elif isinstance(item, Mapping):
            for key, sub in item.items():
                stack.append(key)
                stack.append(sub)
        elif isinstance(item, Sequence):
            stack.extend(item)
        else:
            total += 16  # a number, a bool, None
    return total


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def oversized(name: str, attributes: Mapping[str, Any], status_message: str, limit: int) -> str | None:
    """Why a span's values are too large (``limit`` bytes per value), or None."""
    if len(name) > limit // 4 and _utf8_len(name) > limit:
        return f"span name of {_utf8_len(name)} bytes is over the limit of {limit} bytes"
    if len(status_message) > limit // 4 and _utf8_len(status_message) > limit:
        return f"status message over the limit of {limit} bytes"
    for key, value in attributes.items():
        if isinstance(value, str) and (value.isascii() and len(value) <= limit or len(value) * 4 <= limit):
            continue  # the common case, without a call
        if isinstance(value, (int, float, bool)) or value is None:
            continue
        size = value_bytes(value, limit)
        if size > limit:
            return (f"attribute {key[:100]!r} is over the limit of {limit} bytes per value "
                    f"(OTEL_PROV_MAX_ATTRIBUTE_BYTES)")
    return None


def check_terms(quads: Sequence[Quad], start: int = 0) -> None:
    """Raises :class:`ValueTooLarge` if a term of ``quads[start:]`` is longer than :data:`MAX_TERM_BYTES`."""
    cheap = MAX_TERM_BYTES // 4
    for s, _, o, _ in quads[start:]:
        if len(o) > cheap or len(s) > cheap:
            for term in (s, o):
                if len(term) > cheap and _utf8_len(term) > MAX_TERM_BYTES:
                    raise ValueTooLarge(f"a value maps to a term of {_utf8_len(term)} bytes, over the "
                                        f"store's limit of {MAX_TERM_BYTES} bytes")

DEFAULT_BLOB_THRESHOLD = 64 * 1024
"""UTF-8 bytes above which a content value is stored by reference, as a blob (:mod:`.blobs`)."""
