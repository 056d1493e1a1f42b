"""An agent run with people's approvals, recorded through the helper API (``step.approval``,
``session.approval``), shared by the tests of the helper, ``show`` and the web view."""

from __future__ import annotations

from dataclasses import dataclass, field

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_prov import ProvSpanExporter, agent_session

COMMENT = '<script>alert("x")</script> & "fine"'
"""A comment a page must escape."""


@dataclass
class ApprovedRun:
    explain_id: str
    steps: list[str] = field(default_factory=list)
    approvals: list[str | None] = field(default_factory=list)


def record_approved_run(store: str, profile: str = "seed") -> ApprovedRun:
    """Into ``store``: an agent whose first step is approved by alice and rejected by bob (an
    auditor, with :data:`COMMENT`), whose second step failed, and whose answer alice approves after
    the session."""
    exporter = ProvSpanExporter(store=store, profile=profile)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        with agent_session("Capital of France?", session_id="approved-run",
                           tracer_provider=provider) as session:
            run = ApprovedRun(session.explain_id)
            with session.iteration() as step:
                step.thought("look it up")
                step.action("lookup", {"country": "France"})
                step.observation("Paris")
                run.steps.append(step.explain_id)
                run.approvals.append(step.approval("alice@example.com"))
            run.approvals.append(step.approval("bob", approved=False, role="auditor", comment=COMMENT))
            try:
                with session.iteration() as step:
                    run.steps.append(step.explain_id)
                    step.thought("check it")
                    raise ValueError("lookup failed")
            except ValueError:
                pass
            session.conclude("Paris")
        run.approvals.append(session.approval("alice@example.com", comment="good answer"))
    finally:
        provider.shutdown()
    return run
