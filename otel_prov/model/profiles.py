"""The two profiles of the mapping (docs/model.md): ``seed``, the spec's triples as written, and
``strict``, valid PROV-O with the same IRIs."""

from __future__ import annotations

SEED = "seed"
STRICT = "strict"
PROFILES = (SEED, STRICT)


def check_profile(value: str) -> str:
    """``value`` if it names a profile, else :class:`ValueError` naming the choices."""
    if value not in PROFILES:
        raise ValueError(f"unknown profile {value!r}: expected one of {', '.join(PROFILES)}")
    return value
