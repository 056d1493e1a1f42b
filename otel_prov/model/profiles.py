"""The profiles of the mapping (docs/model.md): ``seed``, the spec's triples as written, ``strict``,
valid PROV-O with the same IRIs, and ``trustgraph``, the seed rewritten to TrustGraph 2.11's layout
(its Grounding step, Observation entities, answers as documents) so that TrustGraph's own reader
follows every flow."""

from __future__ import annotations

SEED = "seed"
STRICT = "strict"
TRUSTGRAPH = "trustgraph"
PROFILES = (SEED, STRICT, TRUSTGRAPH)


def check_profile(value: str) -> str:
    """``value`` if it names a profile, else :class:`ValueError` naming the choices."""
    if value not in PROFILES:
        raise ValueError(f"unknown profile {value!r}: expected one of {', '.join(PROFILES)}")
    return value
