"""``otel-prov show``'s text: what a person reads of each step."""

from __future__ import annotations

from otel_prov.read.model import Trace, TraceStep
from otel_prov.render.text import trace_text


def _failed_step(tool_error: str, status: str) -> Trace:
    step = TraceStep("urn:trustgraph:agent:x/i1", "Analysis",
                     {"action": ["calculator"], "toolError": [tool_error], "statusMessage": [status]},
                     number=1)
    return Trace("urn:trustgraph:agent:x", "Agent", "What is 1/0?", None, None, None, None, [step])


def test_a_tool_error_is_said_once() -> None:
    """A failed tool's error was printed twice, as "Tool error" and as the step's "Error"."""
    error = "ZeroDivisionError: division by zero"
    text = trace_text(_failed_step(error, error))
    assert text.count("ZeroDivisionError: division by zero") == 1
    assert "  Error: ZeroDivisionError: division by zero" in text
    # two different messages: both are said
    text = trace_text(_failed_step("ZeroDivisionError: division by zero", "the run stopped"))
    assert "Tool error: ZeroDivisionError: division by zero" in text and "  Error: the run stopped" in text
