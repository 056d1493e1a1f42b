"""otel-prov's errors: one root, a few kinds.  Messages name the bad value and what to do."""

from __future__ import annotations


class ProvError(Exception):
    """Root of every error otel-prov raises."""


class ConfigError(ProvError, ValueError):
    """A setting (argument or environment variable) has a value otel-prov cannot use."""


class StoreError(ProvError):
    """The store cannot be opened, read or written."""


class StoreNotFound(StoreError):
    """A read was asked of a store that does not exist (reads never create one)."""
