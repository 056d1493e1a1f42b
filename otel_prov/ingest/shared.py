"""One ingest pipeline shared by the span exporter and the log exporter of a process.

The GenAI events an instrumentation sends as log records are joined to their spans by the mapper,
so a process's ``ProvSpanExporter`` and ``ProvLogExporter`` (``OTEL_TRACES_EXPORTER=prov`` and
``OTEL_LOGS_EXPORTER=prov``: the SDK's configurator builds each on its own) must feed one
:class:`~otel_prov.mapping.mapper.TraceMapper`, over one open store.  :func:`lease` pairs them: an
exporter of one kind joins the pipeline of an exporter of the other kind on the same store (same
location and profile) that has no partner yet; otherwise it opens its own.  Two exporters of the same
kind never share (two span exporters on ``memory:`` keep two stores, as before).  The store is closed
when the last exporter of the pipeline shuts down.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

import rdflib

from ..errors import ConfigError
from ..mapping.policy import ContentPolicy
from ..stores import BlobPlace, StoreSpec, default_dir, open_blobs, open_for_writing
from .pipeline import IngestPipeline

SPANS, LOGS = "spans", "logs"


@dataclass(eq=False)
class _Shared:
    pipeline: IngestPipeline
    key: tuple[Any, ...]
    holders: set[str] = field(default_factory=set)


@dataclass(eq=False)
class Lease:
    """An exporter's hold on a (possibly shared) pipeline."""

    pipeline: IngestPipeline
    kind: str
    _shared: _Shared

    def release(self, timeout: float | None) -> bool:
        """Let go of the pipeline: the last holder closes it (stores what is left, within
        ``timeout``).  Returns whether everything was stored (True for a holder that does not close)."""
        with _LOCK:
            self._shared.holders.discard(self.kind)
            last = not self._shared.holders
            if last and _OPEN.get(self._shared.key) is self._shared:
                del _OPEN[self._shared.key]
        return self.pipeline.close(timeout) if last else True


_LOCK = threading.Lock()
_OPEN: dict[tuple[Any, ...], _Shared] = {}


def _key(spec: StoreSpec | rdflib.Dataset, profile: str, policy: ContentPolicy) -> tuple[Any, ...]:
    return (("dataset", id(spec)) if isinstance(spec, rdflib.Dataset) else ("store", str(spec)), profile,
            policy.key)


def lease(kind: str, spec: StoreSpec | rdflib.Dataset, profile: str, *, name: str,
          max_attribute_bytes: int, policy: ContentPolicy | None = None,
          blob_threshold: int = 0, blob_dir: BlobPlace | None = None) -> Lease:
    """A pipeline for an exporter of ``kind`` (:data:`SPANS` or :data:`LOGS`): the one the other kind
    opened on the same store, when it has no partner of this kind yet; else a new one (the store
    opened here: :class:`~otel_prov.StoreError` if it cannot be)."""
    policy = policy or ContentPolicy()
    key = _key(spec, profile, policy)
    where = default_dir(spec if isinstance(spec, StoreSpec) else None, blob_dir)
    blobs = (where, blob_threshold) if where is not None and blob_threshold else (None, 0)
    with _LOCK:
        shared = _OPEN.get(key)
        if shared is not None and kind not in shared.holders and not shared.pipeline.closed:
            theirs = shared.pipeline.blobs
            if blobs != ((theirs.where, shared.pipeline.mapper.blob_threshold) if theirs else (None, 0)):
                raise ConfigError(f"the {kind} exporter's large values (blob_threshold, blob_dir) are not "
                                  f"those of the exporter already writing to {key[0][1]}: set one "
                                  "(OTEL_PROV_BLOB_THRESHOLD, OTEL_PROV_BLOB_DIR) for both")
            shared.holders.add(kind)
            return Lease(shared.pipeline, kind, shared)
        for (other_spec, other_profile, other_policy), held in _OPEN.items():
            if other_spec != key[0] or kind in held.holders:
                continue
            if other_profile != profile:
                raise ConfigError(f"the {kind} exporter's profile {profile!r} is not the "
                                  f"{other_profile!r} of the exporter already writing to {other_spec[1]}: "
                                  "set one profile (OTEL_PROV_PROFILE) for both")
            if other_policy != policy.key:
                raise ConfigError(f"the {kind} exporter's content policy is not the one of the exporter "
                                  f"already writing to {other_spec[1]}: set one (OTEL_PROV_CONTENT_POLICY, "
                                  "OTEL_PROV_REDACT) for both")
        opened = open_for_writing(spec, quick_close=True)  # shutdown() need not wait for the index
        rescue_dir = spec.rescue_dir if isinstance(spec, StoreSpec) else None
        pipeline = IngestPipeline(opened, profile, name=name, rescue_dir=rescue_dir,
                                  max_attribute_bytes=max_attribute_bytes, policy=policy,
                                  blobs=open_blobs(blobs[0]) if blobs[0] is not None else None,
                                  blob_threshold=blobs[1])
        shared = _Shared(pipeline, key, {kind})
        if key not in _OPEN:
            _OPEN[key] = shared
        return Lease(pipeline, kind, shared)


def _forget_in_child() -> None:
    """A forked child does not join its parent's pipelines (their stores are the parent's); the lock
    may have been held by a thread that is not in the child."""
    global _LOCK
    _LOCK = threading.Lock()
    _OPEN.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
