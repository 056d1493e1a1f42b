"""Large values by reference in the mapping (``otel_prov.mapping.blobs``), pure: the threshold counts
UTF-8 bytes, the preview is the value's beginning, the bytes handed on are exactly the text, the same
value twice is one blob, the content policy comes first (a redacted secret is never in a blob, a
truncated value may fit), a framework trace mapped again does not remove a blob's description."""

from __future__ import annotations

import hashlib

from otel_prov.mapping.blobs import PREVIEW_CHARS, by_reference, parse_note
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.policy import ContentPolicy, parse_rules
from otel_prov.mapping.redaction import BUILTIN, Redactor
from otel_prov.mapping.spans import from_sdk
from otel_prov.model.terms import literal, literal_text
from otel_prov.model.vocab import NT
from tests.support.blobs import big_spans

G = "<urn:graph:retrieval>"


def _spans(observations: list[str]) -> list:
    return [from_sdk(span) for span in big_spans(observations)]


def test_the_threshold_counts_utf8_bytes_and_the_preview_is_the_beginning() -> None:
    text = "é" * 600  # 600 characters, 1,200 bytes
    quads = [("<urn:x>", NT.tg_observation, literal(text), G)]
    blobs: dict[str, bytes] = {}
    assert by_reference(quads, 1200, blobs) == quads and blobs == {}
    out = by_reference(quads, 1199, blobs)
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert blobs == {digest: text.encode()}
    assert ("<urn:x>", NT.tg_observation, literal(text[:PREVIEW_CHARS]), G) in out
    notes = [literal_text(o) for s, p, o, _ in out if p == NT.byReference]
    assert [parse_note(n) for n in notes] == [("observation", digest)]
    assert f'"{len(text.encode())}"' in next(o for _, p, o, _ in out if p == NT.byteSize)
    assert by_reference(quads, 0, {}) == quads


def test_not_content_and_iris_are_left_alone() -> None:
    long = "x" * 5000
    quads = [("<urn:x>", NT.statusMessage.replace("statusMessage", "agentName"), literal(long), G),
             ("<urn:x>", NT.tg_observation, "<urn:" + long + ">", G)]
    blobs: dict[str, bytes] = {}
    assert by_reference(quads, 100, blobs) == quads and blobs == {}


def test_the_mapper_hands_the_bytes_on_once_per_value_after_the_policy() -> None:
    big = "the same long output line. " * 4000
    update = TraceMapper("seed", blob_threshold=65536).map(_spans([big, big]))
    assert list(update.blobs.values()) == [big.encode()]
    assert sum(1 for q in update.add if q[1] == NT.blob) == 2
    # Redaction comes first: the secret is in no blob; a truncated value is under the threshold.
    secret = "mail alice@example.com now. " + big
    policy = ContentPolicy(redactor=Redactor(list(BUILTIN.values())))
    redacted = TraceMapper("seed", blob_threshold=65536, policy=policy).map(_spans([secret]))
    [data] = redacted.blobs.values()
    assert b"alice@example.com" not in data and b"[email]" in data
    cut = ContentPolicy(parse_rules("observation=truncate:1000"))
    assert TraceMapper("seed", blob_threshold=65536, policy=cut).map(_spans([big])).blobs == {}
