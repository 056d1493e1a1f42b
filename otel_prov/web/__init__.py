"""``otel-prov ui``: a read-only web view of the explainability graph -- the sessions, one session
with its steps, sub-traces and provenance picture, a SPARQL page, and the same data as JSON under
``/api`` -- cross-linked with the Jaeger UI (``/trace/{trace_id}``).  See docs/ui.md."""

from __future__ import annotations

from .app import create_app, session_url

__all__ = ["create_app", "session_url"]
