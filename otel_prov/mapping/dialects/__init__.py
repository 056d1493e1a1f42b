"""Span dialects: how each family of framework instrumentation writes an agent run into spans.

A dialect is one module with one object implementing :class:`Dialect`: it says whether it speaks for
a span (its marker attribute), what the span is (:class:`Role`), and reads the question, answer and
tool call out of it, declaring every attribute key it reads (:attr:`Dialect.keys`: a trace's tree
keeps only those of a span).  :func:`dialect_of` dispatches, in one place, in the order of
:data:`DIALECTS` (the most specific marker first; the GenAI conventions are the fallback).

Where to add one: CONTRIBUTING.md ("A span dialect").
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..spans import SpanLike


class Role(enum.Enum):
    """What a framework span is to the explainability model."""

    AGENT = "agent"
    """An agent run: a Question, and a Conclusion once answered."""
    TOOL = "tool"
    """A tool call of the nearest agent above: one Analysis step."""
    OTHER = "other"
    """Anything else (chat, turns, HTTP, ...): needed only for its place in the tree."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """What a tool span says of its call (``None``: not recorded on the span)."""

    name: str
    arguments: str | None
    result: str | None


class Dialect(Protocol):
    name: str
    """A short name, for docs and problems."""
    keys: frozenset[str]
    """Every attribute key the dialect reads of an agent or tool span."""
    turns_below_agent: bool
    """An agent span of this dialect below another agent is one of that agent's turns, not a
    nested agent (OpenInference marks turns ``AGENT`` too)."""

    def claims(self, span: SpanLike) -> bool:
        """Whether the span is written in this dialect."""
        ...

    def role(self, span: SpanLike) -> Role: ...

    def keep(self, attributes: Mapping[str, Any], role: Role) -> dict[str, Any]:
        """What a trace's tree keeps of an agent or tool span's attributes (at most :attr:`keys`,
        large values reduced to what the reading methods need); reading the kept attributes gives
        the same results as reading the span."""
        ...

    def agent_name(self, span: SpanLike) -> str | None: ...

    def question(self, span: SpanLike, problems: list[str]) -> str | None:
        """The user's question of an agent span (None: not recorded)."""
        ...

    def answer(self, span: SpanLike, problems: list[str]) -> str | None:
        """The final answer of an agent span, as text (None: not recorded)."""
        ...

    def tool_call(self, span: SpanLike) -> ToolCall: ...


def _dialects() -> tuple[Dialect, ...]:
    from .genai import GENAI
    from .openinference import OPENINFERENCE

    return (OPENINFERENCE, GENAI)


DIALECTS: tuple[Dialect, ...] = _dialects()
"""Every dialect, most specific first; the last one (the GenAI conventions) claims every span."""


def dialect_of(span: SpanLike) -> Dialect:
    """The dialect a span is written in."""
    for dialect in DIALECTS:
        if dialect.claims(span):
            return dialect
    return DIALECTS[-1]
