"""Settings: keyword arguments with environment fallbacks, parsed in one place.

Precedence: explicit argument > environment variable > default.  Documented in README.md
("Configuration").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ._errors import ConfigError
from ._mapping import PROFILES, SEED

ENV_STORE = "OTEL_PROV_STORE"
ENV_PROFILE = "OTEL_PROV_PROFILE"
ENV_COLLECTION = "OTEL_PROV_COLLECTION"
ENV_JAEGER_URL = "OTEL_PROV_JAEGER_URL"

MEMORY = "memory:"
OXIGRAPH = "oxigraph:"


def default_store_path() -> Path:
    """``$XDG_DATA_HOME/otel-prov/store``, else ``~/.local/share/otel-prov/store``."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "otel-prov" / "store"


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """Where quads go: an on-disk Oxigraph store at ``path``, or memory (``path`` is None)."""

    path: Path | None

    @property
    def in_memory(self) -> bool:
        return self.path is None

    def __str__(self) -> str:
        return MEMORY if self.path is None else f"{OXIGRAPH}{self.path}"


def parse_store(value: str | os.PathLike[str] | None) -> StoreSpec:
    """``oxigraph:PATH`` (or a bare path), ``memory:``, or None for the environment / default."""
    if value is None:
        value = os.environ.get(ENV_STORE, "").strip() or None
    if value is None:
        return StoreSpec(default_store_path())
    text = os.fspath(value)
    if text == MEMORY or text == "memory":
        return StoreSpec(None)
    if text.startswith(OXIGRAPH):
        text = text[len(OXIGRAPH):]
        if not text:
            return StoreSpec(default_store_path())
    elif ":" in text.split(os.sep, 1)[0] and not os.path.isabs(text):
        raise ConfigError(
            f"unknown store {text!r}: use 'oxigraph:PATH' (on disk) or 'memory:' ({ENV_STORE})"
        )
    return StoreSpec(Path(os.path.expanduser(text)))


def parse_profile(value: str | None) -> str:
    if value is None:
        value = os.environ.get(ENV_PROFILE, "").strip() or SEED
    value = value.strip().lower()
    if value not in PROFILES:
        raise ConfigError(
            f"unknown profile {value!r} ({ENV_PROFILE}): expected one of {', '.join(PROFILES)}"
        )
    return value


def parse_collection(value: str | None) -> str | None:
    if value is None:
        value = os.environ.get(ENV_COLLECTION, "").strip() or None
    return value
