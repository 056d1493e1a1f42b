"""Large values by reference (docs/store.md, "Large values"): pure, like the rest of the mapping.

A content literal (the properties of :data:`.policy.FIELDS`) whose UTF-8 text is larger than the
threshold is stored once, beside the store, as a content-addressed blob named by the SHA-256 of its
bytes; the graph keeps, applied after the content policy (so a blob only ever holds what the policy
lets through):

- on the node, the property's literal cut to its first :data:`PREVIEW_CHARS` characters (every reader
  shows a beginning; a reader that knows blobs shows it whole) and
  ``otelprov:byReference "{property} sha256:{hex}"`` (which property's whole value is which blob) and
  ``otelprov:blob <urn:otel-prov:blob:sha256:{hex}>``;
- on the blob, ``a prov:Entity, otelprov:Blob``, ``otelprov:sha256 "{hex}"``, ``otelprov:byteSize N``,
  ``otelprov:mediaType "text/plain; charset=utf-8"`` and ``otelprov:preview``.

The bytes travel beside the quads (:func:`by_reference` returns them): the pipeline writes them to
the blob store before the quads are stored, so no quad names a blob that is not there.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from ..model.iris import BLOB_PREFIX as BLOB_PREFIX
from ..model.iris import blob_iri as blob_iri
from ..model.iris import digest_of as digest_of
from ..model.quads import Quad
from ..model.terms import integer, literal, literal_text
from ..model.vocab import NT
from .limits import DEFAULT_BLOB_THRESHOLD as DEFAULT_BLOB_THRESHOLD
from .policy import FIELDS

PREVIEW_CHARS = 200
"""Characters of a blob's text kept in the graph."""
MEDIA_TYPE = "text/plain; charset=utf-8"
_LOCAL = {predicate: predicate[1:-1].rsplit("#", 1)[-1].rsplit("/", 1)[-1]
          for predicates in FIELDS.values() for predicate in predicates}
"""Each content predicate (N-Triples) and its local name, as the notes name it."""
_NOTE = re.compile(r"(\S+) sha256:([0-9a-f]{64})\Z")


def parse_note(text: str) -> tuple[str, str] | None:
    """An ``otelprov:byReference`` value: ``(property's local name, hex)``, or ``None``."""
    found = _NOTE.match(text)
    return (found.group(1), found.group(2)) if found else None


def by_reference(quads: Iterable[Quad], threshold: int,
                 blobs: dict[str, bytes]) -> list[Quad]:
    """``quads`` with each content literal over ``threshold`` bytes replaced by its preview and a
    reference to its blob (and the blob's description, once per blob and graph); the blobs' bytes are
    added to ``blobs`` (by hex SHA-256).  ``threshold`` 0: nothing changes."""
    if threshold <= 0:
        return quads if isinstance(quads, list) else list(quads)
    out: list[Quad] = []
    described: set[tuple[str, str]] = set()
    for quad in quads:
        s, p, o, g = quad
        local = _LOCAL.get(p)
        # A character is at most 4 bytes of UTF-8, and the N-Triples form is at least as long as the
        # text in characters: most values end here, unencoded.
        if local is None or 4 * len(o) <= threshold or o[0] != '"' or o[-1] != '"':
            out.append(quad)
            continue
        text = literal_text(o)
        data = text.encode("utf-8")
        if len(data) <= threshold:
            out.append(quad)
            continue
        digest = hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        iri = "<" + blob_iri(digest) + ">"
        preview = literal(text[:PREVIEW_CHARS])
        out.append((s, p, preview, g))
        out.append((s, NT.byReference, literal(f"{local} sha256:{digest}"), g))
        out.append((s, NT.blob, iri, g))
        if (iri, g) not in described:
            described.add((iri, g))
            out.extend([
                (iri, NT.type, NT.Entity, g),
                (iri, NT.type, NT.Blob, g),
                (iri, NT.sha256, literal(digest), g),
                (iri, NT.byteSize, integer(len(data)), g),
                (iri, NT.mediaType, literal(MEDIA_TYPE), g),
                (iri, NT.preview, preview, g),
            ])
    return out
