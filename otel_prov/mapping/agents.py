"""Framework instrumentations' agent traces (no ``otel_prov.*`` attributes) -> the agent flow.
Pure: spans in, quads out, no I/O, no state.

A framework instrumentation (the OpenTelemetry GenAI conventions, OpenInference, ...: the span
dialects of :mod:`.dialects`) emits an agent run as a span tree: an agent span with tool-call
descendants, among chat, turn and HTTP spans.  It maps to the agent flow:

- each agent span is a Question (``tg:query``: the dialect's question) and, when it has an answer,
  a Conclusion;
- each tool span is one Analysis of its NEAREST agent ancestor (``tg:action``, ``tg:arguments``,
  ``tg:observation``), numbered 1, 2, ... by (start time, span id).

The triples are made by the same handlers as our own spans (:func:`.flows.map_span`): each agent
or tool span is rewritten as the ``otel_prov`` span it stands for (same ids, times and status) and
mapped.  Numbering needs the tree (:mod:`.tree`), so a trace is always mapped as a whole; a span
whose chain of ancestors is not yet complete waits: it gives nothing until the missing spans arrive
-- except a parent in another process (a remote parent: propagated context), which may never be
exported to us; the span below it is taken as a root until it arrives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import attributes as A
from ..model.iris import (
    analysis_iri,
    is_question_iri,
    nested_agent_uuid,
    question_iri,
    session_activity_iri,
)
from ..model.profiles import STRICT, check_profile
from ..model.terms import iri, uuid_from_trace_id
from ..model.vocab import NT
from .dialects import dialect_of
from .flows import Mapped, is_ours, map_span
from .limits import ValueTooLarge
from .spans import SpanLike, SpanRecord
from .tree import Place, SpanTree

NO_QUERY = ("agent span without a query (no user text in gen_ai.input.messages, no input.value): "
            "tg:query left empty")


@dataclass
class AgentsMapped(Mapped):
    """:class:`Mapped`, plus the agent and tool spans that wait for missing ancestors."""

    waiting: int = 0
    remote_roots: int = 0
    """Spans taken as roots because their parent is remote and has not arrived (it may)."""
    too_large: dict[int, str] = field(default_factory=dict)
    """Agent and tool spans (by span id) left out because a value is too large for the store."""


class _TraceAgents:
    """One trace's agents and tool calls, numbered; writes their quads through ``map_span``."""

    def __init__(self, tree: SpanTree, profile: str, result: AgentsMapped) -> None:
        self.tree = tree
        self.profile = profile
        self.result = result
        agents = tree.at(Place.AGENT)
        self.tools: dict[int, list[SpanLike]] = {a.span_id: [] for a in agents}
        for tool in tree.at(Place.TOOL):
            self.tools[tree.up[tool.span_id].agent].append(tool)
        self.number = {t.span_id: n for ts in self.tools.values() for n, t in enumerate(ts, 1)}
        top = [a for a in agents if self._is_top(a)]
        owner = top[0].span_id if top else 0
        self.uuid = {a.span_id: uuid_from_trace_id(a.trace_id) if a.span_id == owner
                     else nested_agent_uuid(a.trace_id, a.span_id) for a in agents}
        self.agents = agents

    def _is_top(self, agent: SpanLike) -> bool:
        up = self.tree.up[agent.span_id]
        return up.agent == 0 and not up.under_prov

    def _derived_from(self, agent: SpanLike) -> str | None:
        """What a nested agent's Question derives from: the step of the enclosing agent it runs
        in, else that agent's Question (or, under our own spans, their step or Question)."""
        up = self.tree.up[agent.span_id]
        if up.agent:
            if up.tool:
                return analysis_iri(self.uuid[up.agent], self.number[up.tool])
            return question_iri(A.FLOW_AGENT, self.uuid[up.agent])
        return up.link

    def _common(self, agent: SpanLike) -> dict[str, Any]:
        attrs: dict[str, Any] = {A.FLOW: A.FLOW_AGENT}
        uuid = self.uuid[agent.span_id]
        if uuid != uuid_from_trace_id(agent.trace_id):
            attrs[A.SESSION_ID] = uuid
        name = dialect_of(agent).agent_name(agent)
        if name:
            attrs[A.GEN_AI_AGENT_NAME] = name
        return attrs

    def map(self) -> None:
        for agent in self.agents:
            self._map_agent(agent)
            for tool in self.tools[agent.span_id]:
                self._map_tool(agent, tool)

    def _map_agent(self, agent: SpanLike) -> None:
        problems = self.result.problems
        dialect = dialect_of(agent)
        query = dialect.question(agent, problems)
        if query is None:
            problems.append(NO_QUERY)
            query = ""
        attrs = {**self._common(agent), A.STEP: A.STEP_SESSION, A.QUESTION: query,
                 A.ITERATION: len(self.tools[agent.span_id])}
        answer = dialect.answer(agent, problems)
        if answer is not None:
            attrs[A.ANSWER] = answer
        derived = self._derived_from(agent)
        from_question = derived is not None and is_question_iri(derived)
        if derived and not (from_question and self.profile == STRICT):
            attrs[A.DERIVED_FROM] = derived
        self._emit(agent, attrs)
        if derived and from_question and self.profile == STRICT:
            # Strict: the enclosing session's activity generated this Question (map_span links a
            # step's activity, ``{step}/activity``; a session's activity is ``{question}/session``).
            q = iri(question_iri(A.FLOW_AGENT, self.uuid[agent.span_id]))
            self.result.quads.append((q, NT.wasGeneratedBy, iri(session_activity_iri(derived)), NT.graph))

    def _map_tool(self, agent: SpanLike, tool: SpanLike) -> None:
        call = dialect_of(tool).tool_call(tool)
        attrs = {**self._common(agent), A.STEP: A.STEP_ANALYSIS, A.ITERATION: self.number[tool.span_id],
                 A.ACTION: call.name}
        if call.arguments is not None:
            attrs[A.ARGUMENTS] = call.arguments
        if call.result is not None:
            attrs[A.OBSERVATION] = call.result
        self._emit(tool, attrs)

    def _emit(self, span: SpanLike, attrs: dict[str, Any]) -> None:
        """Maps the span as the ``otel_prov`` span it stands for: same ids, times and status."""
        ours = SpanRecord(trace_id=span.trace_id, span_id=span.span_id, name=span.name,
                          start_ns=span.start_ns, end_ns=span.end_ns, attributes=attrs,
                          parent_id=span.parent_id, parent_remote=span.parent_remote, error=span.error,
                          status_message=span.status_message)
        try:
            map_span(ours, self.profile, self.result)
        except ValueTooLarge as exc:
            self.result.too_large[span.span_id] = str(exc)


def map_agent_traces(spans: Sequence[SpanLike], profile: str) -> AgentsMapped:
    """The quads of the framework agents in some spans (of one or more traces).

    ``otel_prov`` spans are read only for their place in the tree (they are mapped on their own);
    agent and tool spans are ``mapped`` (counted by ``map_span``) or ``waiting``; every other span
    is ``ignored``."""
    check_profile(profile)
    result = AgentsMapped()
    by_trace: dict[int, list[SpanLike]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    for trace_id in sorted(by_trace):
        tree = SpanTree(by_trace[trace_id], result.problems)
        _TraceAgents(tree, profile, result).map()
        result.remote_roots += tree.remote_roots
        for span_id, place in tree.place.items():
            if place == Place.WAIT:
                result.waiting += 1
            elif place == Place.OTHER and not is_ours(tree.nodes[span_id]):
                result.ignored += 1
    return result
