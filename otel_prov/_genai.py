"""Standard GenAI agent traces (no ``otel_prov.*`` attributes) -> the seed model.  Pure: spans in,
quads out, no I/O, no state.

A framework instrumentation (OpenTelemetry GenAI conventions, OpenInference) emits an agent run as a
span tree: an ``invoke_agent`` span (or an OpenInference ``AGENT`` span at the top) with
``execute_tool`` (OpenInference ``TOOL``) descendants, among chat, turn and HTTP spans.  It maps to
the agent flow of the seed model:

- each agent span is a Question (``tg:query``: the last user message of ``gen_ai.input.messages``,
  else ``input.value``) and, when it has an answer (the last assistant message of
  ``gen_ai.output.messages``, else ``output.value``), a Conclusion;
- each tool span is one Analysis of its NEAREST agent ancestor (``tg:action``, ``tg:arguments``,
  ``tg:observation``), numbered 1, 2, ... by (start time, span id).

The triples are made by the same handlers as our own spans (:func:`otel_prov._mapping.map_span`):
each agent or tool span is rewritten as the ``otel_prov`` span it stands for (same ids, times and
status) and mapped.  Numbering needs the tree, so a trace is always mapped as a whole; a span whose
chain of ancestors is not yet complete (a parent that has not arrived) waits: it gives nothing until
the missing spans arrive -- except a parent in another process (a remote parent: propagated context),
which may never be exported to us; the span below it is taken as a root until it arrives.
"""

from __future__ import annotations

import json
import uuid as _uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple, TypeAlias

from rdflib.namespace import PROV

from . import attributes as A
from ._mapping import (
    PROFILES,
    STRICT,
    Mapped,
    analysis_iri,
    attr_text,
    map_span,
    question_iri,
    session_uuid,
)
from ._spans import SpanRecord
from ._terms import hex_span_id, hex_trace_id, iri, uuid_from_trace_id
from ._vocab import AGENT_PREFIX, DOC_RAG_PREFIX, GRAPH_RAG_PREFIX, GRAPH_RETRIEVAL, OTELPROV_NS

OP_INVOKE_AGENT = "invoke_agent"
OP_EXECUTE_TOOL = "execute_tool"
_OP_UNKNOWN = "unknown"
"""Some instrumentations (openai-agents-v2) write this; the span name then says what the span is."""
OI_AGENT = "AGENT"
OI_TOOL = "TOOL"

_NESTED_NAMESPACE = _uuid.uuid5(_uuid.NAMESPACE_URL, OTELPROV_NS + "nested-agent")
"""Namespace of the ``{uuid}`` of an agent that does not own its trace: uuid5(trace id/span id)."""

NO_QUERY = ("agent span without a query (no user text in gen_ai.input.messages, no input.value): "
            "tg:query left empty")
PARENT_LOOP = "span whose chain of parents loops (waits forever)"

_EMPTY: Mapping[str, Any] = MappingProxyType({})
_GRAPH = iri(GRAPH_RETRIEVAL)
_GENERATED_BY = iri(str(PROV.wasGeneratedBy))
_PROV_KEYS = (A.FLOW, A.STEP, A.SESSION_ID, A.ITERATION)
"""What a tree needs of an ``otel_prov`` span: that it is one, and the IRI of its step."""
_READ_KEYS = (
    A.GEN_AI_OPERATION_NAME, A.OPENINFERENCE_SPAN_KIND, A.GEN_AI_AGENT_NAME,
    A.GEN_AI_TOOL_NAME, A.TOOL_NAME, A.GEN_AI_TOOL_CALL_ARGUMENTS, A.GEN_AI_TOOL_CALL_RESULT,
    A.INPUT_VALUE, A.OUTPUT_VALUE,
)
"""Every attribute of an agent or tool span the mapping reads (besides the messages)."""


class SpanView(NamedTuple):
    """What a trace's tree keeps of a span: the fields of a :class:`SpanRecord` (a tuple, several
    times cheaper to make), with only the attributes the mapping needs."""

    trace_id: int
    span_id: int
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any]
    parent_id: int
    parent_remote: bool
    error: bool
    status_message: str


Node: TypeAlias = "SpanRecord | SpanView"
"""A span as the tree reads it: the span itself, or its view."""


@dataclass
class GenAIMapped(Mapped):
    """:class:`Mapped`, plus the agent and tool spans that wait for missing ancestors."""

    waiting: int = 0
    remote_roots: int = 0
    """Spans taken as roots because their parent is remote and has not arrived (it may)."""


# -- what a span is ---------------------------------------------------------------------------------


def _ours(rec: Node) -> bool:
    """Whether the span carries our attributes (it is mapped on its own, not here)."""
    return A.FLOW in rec.attributes


def _str(rec: Node, key: str) -> str | None:
    value = rec.attributes.get(key)
    return value if isinstance(value, str) else None


def _oi_kind(rec: Node) -> str | None:
    kind = _str(rec, A.OPENINFERENCE_SPAN_KIND)
    return kind.upper() if kind is not None else None


def _is_agent_candidate(rec: Node) -> bool:
    """An agent span, or (OpenInference ``AGENT``) one if no agent is above it."""
    if _ours(rec):
        return False
    kind = _oi_kind(rec)
    if kind is not None:
        return kind == OI_AGENT
    return _str(rec, A.GEN_AI_OPERATION_NAME) == OP_INVOKE_AGENT or rec.name.startswith(OP_INVOKE_AGENT)


def _is_tool_candidate(rec: Node) -> bool:
    if _ours(rec):
        return False
    kind = _oi_kind(rec)
    if kind is not None:
        return kind == OI_TOOL
    op = _str(rec, A.GEN_AI_OPERATION_NAME)
    return op == OP_EXECUTE_TOOL or (op in (None, _OP_UNKNOWN) and rec.name.startswith(OP_EXECUTE_TOOL))


def genai_relevant(rec: Node) -> bool:
    """Whether the span may be an agent or a tool call of a standard GenAI trace (its content is
    needed; every other span is needed only for its place in the tree)."""
    return _is_agent_candidate(rec) or _is_tool_candidate(rec)


OURS, RELEVANT, OTHER = "ours", "relevant", "other"
"""What ``trace_view`` says a span is: ours, a possible agent or tool call, anything else."""


def trace_view(rec: Node) -> tuple[SpanView, str]:
    """What a trace's tree must keep of a span, and what the span is (:data:`OURS`,
    :data:`RELEVANT` or :data:`OTHER`).

    Relevant spans keep the attributes the mapping reads (messages reduced to the one message
    read); every other span keeps a skeleton: ids, parent, name, start, and for an ``otel_prov``
    span the keys that name its step.  ``map_genai_trace`` gives the same result on views as on
    the spans themselves."""
    source = rec.attributes
    if A.FLOW in source:
        kept = {}
        for key in _PROV_KEYS:
            value = source.get(key)
            if value is not None:
                kept[key] = value
        return _skeleton(rec, kept), OURS
    if genai_relevant(rec):
        attrs = {k: source[k] for k in _READ_KEYS if k in source}
        for key, role in ((A.GEN_AI_INPUT_MESSAGES, "user"), (A.GEN_AI_OUTPUT_MESSAGES, "assistant")):
            if key in source:
                reduced = _reduce_messages(source[key], role)
                if reduced is not None:
                    attrs[key] = reduced
        return _view(rec, attrs), RELEVANT
    return _skeleton(rec, _EMPTY), OTHER


def view_kind(view: Node) -> str:
    """What a span is, from its view."""
    if A.FLOW in view.attributes:
        return OURS
    return RELEVANT if genai_relevant(view) else OTHER


def _view(rec: Node, attrs: Mapping[str, Any]) -> SpanView:
    return SpanView(rec.trace_id, rec.span_id, rec.name, rec.start_ns, rec.end_ns, attrs, rec.parent_id,
                    rec.parent_remote, rec.error, rec.status_message)


def _skeleton(rec: Node, attrs: Mapping[str, Any]) -> SpanView:
    return SpanView(rec.trace_id, rec.span_id, rec.name, rec.start_ns, 0, attrs, rec.parent_id,
                    rec.parent_remote, False, "")


def view_size(rec: SpanView) -> int:
    """A rough size in bytes of a span's view (for the mapper's memory bound)."""
    size = 200 + len(rec.name)
    for value in rec.attributes.values():
        size += len(value) if isinstance(value, str) else 16
    return size


# -- messages ---------------------------------------------------------------------------------------


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping) and part.get("type", "text") == "text":
        for key in ("content", "text"):
            value = part.get(key)
            if isinstance(value, str):
                return value
    return None


def _message_text(message: Any) -> str | None:
    """The text parts of one message (``parts`` of the current conventions, or ``content`` as a
    string or a list of parts), joined by newlines; reasoning and tool parts are not text."""
    if not isinstance(message, Mapping):
        return None
    texts: list[str | None] = []
    for key in ("parts", "content"):
        value = message.get(key)
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, (list, tuple)):
            texts.extend(_part_text(p) for p in value)
    found = [t for t in texts if t is not None]
    return "\n".join(found) if found else None


def _parse_messages(value: Any) -> list[Any] | None:
    """Messages given as JSON text or (OTLP) as a structured array; None if not readable."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    if isinstance(value, Mapping):
        value = [value]
    return list(value) if isinstance(value, (list, tuple)) else None


def _last_text(messages: Sequence[Any], role: str) -> str | None:
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == role:
            text = _message_text(message)
            if text is not None:
                return text
    return None


def _reduce_messages(value: Any, role: str) -> Any:
    messages = _parse_messages(value)
    if messages is None:
        return value  # kept as it is: the mapping reports it
    text = _last_text(messages, role)
    if text is None:
        return None
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}], ensure_ascii=False)


def _message_attr(rec: Node, key: str, role: str, problems: list[str]) -> str | None:
    if key not in rec.attributes:
        return None
    messages = _parse_messages(rec.attributes[key])
    if messages is None:
        problems.append(f"{key} is not a JSON list of messages")
        return None
    return _last_text(messages, role)


def _text(rec: Node, key: str) -> str | None:
    return attr_text(rec.attributes.get(key))


# -- the tree -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Up:
    """What a span's ancestors make of it (``None`` stands for "not known yet")."""

    agent: int = 0
    """The nearest agent above (span id), 0 if none or if an ``otel_prov`` span is nearer."""
    tool: int = 0
    """The nearest tool call of that agent above, 0 if none."""
    under_prov: bool = False
    """An ``otel_prov`` span is nearer than any agent."""
    link: str | None = None
    """Under an ``otel_prov`` span: the IRI of its step (what an agent below derives from)."""


_ROOT = _Up()
_AGENT, _TOOL, _WAIT, _OTHER = "agent", "tool", "wait", "other"


def _prov_link(rec: Node) -> str | None:
    attrs = rec.attributes
    flow, step = attrs.get(A.FLOW), attrs.get(A.STEP)
    if flow not in A.FLOWS:
        return None
    uuid = session_uuid(attrs.get(A.SESSION_ID), rec.trace_id)
    if step in (A.STEP_SESSION, A.STEP_QUESTION):
        return question_iri(str(flow), uuid)
    if step == A.STEP_ANALYSIS and flow == A.FLOW_AGENT:
        n = attrs.get(A.ITERATION)
        try:
            number = int(n) if not isinstance(n, bool) and isinstance(n, (int, str)) else 0
        except ValueError:
            number = 0
        return analysis_iri(uuid, number) if number >= 1 else None
    return None


class _Tree:
    """Classifies every span of one trace: agent, tool call (of which agent), waiting, other."""

    def __init__(self, spans: Iterable[Node], problems: list[str]) -> None:
        self.nodes: dict[int, Node] = {}
        for rec in spans:
            self.nodes.setdefault(rec.span_id, rec)
        self.role: dict[int, str] = {}
        self.up: dict[int, _Up] = {}
        self._below: dict[int, _Up | None] = {}
        self._problems = problems
        self.remote_roots = 0
        for span_id in self.nodes:
            self._resolve(span_id)

    def _above(self, rec: Node) -> _Up | None:
        if rec.parent_id == 0:
            return _ROOT
        if rec.parent_remote and rec.parent_id not in self.nodes:
            # The parent is in another process, whose spans may never reach us: a root until
            # (if ever) it arrives.
            self.remote_roots += 1
            return _ROOT
        return self._below.get(rec.parent_id)  # missing parent, or a loop: not known

    def _resolve(self, span_id: int) -> None:
        chain: list[int] = []
        seen: set[int] = set()
        current = span_id
        while current not in self._below:
            if current in seen:
                self._problems.append(PARENT_LOOP)
                break
            seen.add(current)
            chain.append(current)
            parent = self.nodes[current].parent_id
            if parent == 0 or parent not in self.nodes:
                break
            current = parent
        for node in reversed(chain):
            rec = self.nodes[node]
            self._below[node] = self._classify(rec, self._above(rec))

    def _classify(self, rec: Node, up: _Up | None) -> _Up | None:
        """Records the span's role; returns what it makes of its children."""
        span_id = rec.span_id
        if _ours(rec):
            self.role[span_id] = _OTHER
            link = _prov_link(rec)
            if link is None:
                if up is None:
                    return None
                link = up.link if up.under_prov else None
            return _Up(under_prov=True, link=link)
        agent_candidate = _is_agent_candidate(rec)
        if agent_candidate or _is_tool_candidate(rec):
            if up is None:
                self.role[span_id] = _WAIT
                return None
            if agent_candidate:
                # An OpenInference AGENT span below an agent is one of its turns, not an agent.
                if _oi_kind(rec) is None or up.agent == 0:
                    self.role[span_id] = _AGENT
                    self.up[span_id] = up
                    return _Up(agent=span_id)
            elif up.agent != 0:
                self.role[span_id] = _TOOL
                self.up[span_id] = up
                return _Up(agent=up.agent, tool=span_id)
        self.role[span_id] = _OTHER
        return up

    def of_role(self, role: str) -> list[Node]:
        found = [self.nodes[s] for s, r in self.role.items() if r == role]
        return sorted(found, key=lambda r: (r.start_ns, r.span_id))


# -- the mapping ----------------------------------------------------------------------------------------


def _is_question_iri(value: str) -> bool:
    return any(value.startswith(prefix) and "/" not in value[len(prefix):]
               for prefix in (AGENT_PREFIX, GRAPH_RAG_PREFIX, DOC_RAG_PREFIX))


def nested_agent_uuid(trace_id: int, span_id: int) -> str:
    """The ``{uuid}`` of an agent span that does not own its trace id (a nested agent, or a later
    top-level one): a name-based UUID (v5) of the trace id and span id."""
    return str(_uuid.uuid5(_NESTED_NAMESPACE, f"{hex_trace_id(trace_id)}/{hex_span_id(span_id)}"))


def _agent_name(rec: Node) -> str | None:
    name = _str(rec, A.GEN_AI_AGENT_NAME)
    if name:
        return name
    if rec.name.startswith(OP_INVOKE_AGENT):
        return rec.name[len(OP_INVOKE_AGENT):].strip() or None
    return rec.name or None


def _tool_name(rec: Node) -> str:
    for key in (A.GEN_AI_TOOL_NAME, A.TOOL_NAME):
        value = _str(rec, key)
        if value:
            return value
    if rec.name.startswith(OP_EXECUTE_TOOL):
        return rec.name[len(OP_EXECUTE_TOOL):].strip() or rec.name
    return rec.name


def _first(rec: Node, keys: Sequence[str]) -> str | None:
    for key in keys:
        value = _text(rec, key)
        if value is not None:
            return value
    return None


class _Trace:
    """One trace's agents and tool calls, numbered; writes their quads through ``map_span``."""

    def __init__(self, tree: _Tree, profile: str, result: GenAIMapped) -> None:
        self.tree = tree
        self.profile = profile
        self.result = result
        agents = tree.of_role(_AGENT)
        self.tools: dict[int, list[Node]] = {a.span_id: [] for a in agents}
        for tool in tree.of_role(_TOOL):
            self.tools[tree.up[tool.span_id].agent].append(tool)
        self.number = {t.span_id: n for ts in self.tools.values() for n, t in enumerate(ts, 1)}
        top = [a for a in agents if self._is_top(a)]
        owner = top[0].span_id if top else 0
        self.uuid = {a.span_id: uuid_from_trace_id(a.trace_id) if a.span_id == owner
                     else nested_agent_uuid(a.trace_id, a.span_id) for a in agents}
        self.agents = agents

    def _is_top(self, agent: Node) -> bool:
        up = self.tree.up[agent.span_id]
        return up.agent == 0 and not up.under_prov

    def _derived_from(self, agent: Node) -> str | None:
        """What a nested agent's Question derives from: the step of the enclosing agent it runs
        in, else that agent's Question (or, under our own spans, their step or Question)."""
        up = self.tree.up[agent.span_id]
        if up.agent:
            if up.tool:
                return analysis_iri(self.uuid[up.agent], self.number[up.tool])
            return question_iri(A.FLOW_AGENT, self.uuid[up.agent])
        return up.link

    def _common(self, agent: Node) -> dict[str, Any]:
        attrs: dict[str, Any] = {A.FLOW: A.FLOW_AGENT}
        uuid = self.uuid[agent.span_id]
        if uuid != uuid_from_trace_id(agent.trace_id):
            attrs[A.SESSION_ID] = uuid
        name = _agent_name(agent)
        if name:
            attrs[A.GEN_AI_AGENT_NAME] = name
        return attrs

    def map(self) -> None:
        for agent in self.agents:
            self._map_agent(agent)
            for tool in self.tools[agent.span_id]:
                self._map_tool(agent, tool)

    def _map_agent(self, agent: Node) -> None:
        problems = self.result.problems
        query = _message_attr(agent, A.GEN_AI_INPUT_MESSAGES, "user", problems)
        if query is None:
            query = _text(agent, A.INPUT_VALUE)
        if query is None:
            problems.append(NO_QUERY)
            query = ""
        attrs = {**self._common(agent), A.STEP: A.STEP_SESSION, A.QUESTION: query,
                 A.ITERATION: len(self.tools[agent.span_id])}
        answer = _message_attr(agent, A.GEN_AI_OUTPUT_MESSAGES, "assistant", problems)
        if answer is None:
            answer = _text(agent, A.OUTPUT_VALUE)
        if answer is not None:
            attrs[A.ANSWER] = answer
        derived = self._derived_from(agent)
        from_question = derived is not None and _is_question_iri(derived)
        if derived and not (from_question and self.profile == STRICT):
            attrs[A.DERIVED_FROM] = derived
        self._emit(agent, attrs)
        if derived and from_question and self.profile == STRICT:
            # Strict: the enclosing session's activity generated this Question (map_span links a
            # step's activity, ``{step}/activity``; a session's activity is ``{question}/session``).
            q = iri(question_iri(A.FLOW_AGENT, self.uuid[agent.span_id]))
            self.result.quads.append((q, _GENERATED_BY, iri(derived + "/session"), _GRAPH))

    def _map_tool(self, agent: Node, tool: Node) -> None:
        attrs = {**self._common(agent), A.STEP: A.STEP_ANALYSIS, A.ITERATION: self.number[tool.span_id],
                 A.ACTION: _tool_name(tool)}
        if _oi_kind(tool) is not None:  # OpenInference's GenAI keys hold the parameter schema
            arguments = _first(tool, (A.INPUT_VALUE,))
        else:
            arguments = _first(tool, (A.GEN_AI_TOOL_CALL_ARGUMENTS, A.INPUT_VALUE))
        observation = _first(tool, (A.GEN_AI_TOOL_CALL_RESULT, A.OUTPUT_VALUE))
        if arguments is not None:
            attrs[A.ARGUMENTS] = arguments
        if observation is not None:
            attrs[A.OBSERVATION] = observation
        self._emit(tool, attrs)

    def _emit(self, rec: Node, attrs: dict[str, Any]) -> None:
        """Maps the span as the ``otel_prov`` span it stands for: same ids, times and status."""
        ours = SpanRecord(trace_id=rec.trace_id, span_id=rec.span_id, name=rec.name, start_ns=rec.start_ns,
                          end_ns=rec.end_ns, attributes=attrs, parent_id=rec.parent_id,
                          parent_remote=rec.parent_remote, error=rec.error, status_message=rec.status_message)
        map_span(ours, self.profile, self.result)


def map_genai_trace(spans: Sequence[Node], profile: str) -> GenAIMapped:
    """The quads of the standard GenAI agents in some spans (of one or more traces).

    ``otel_prov`` spans are read only for their place in the tree (they are mapped on their own);
    agent and tool spans are ``mapped`` (counted by ``map_span``) or ``waiting``; every other span
    is ``ignored``."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: expected one of {', '.join(PROFILES)}")
    result = GenAIMapped()
    by_trace: dict[int, list[Node]] = {}
    for rec in spans:
        by_trace.setdefault(rec.trace_id, []).append(rec)
    for trace_id in sorted(by_trace):
        tree = _Tree(by_trace[trace_id], result.problems)
        _Trace(tree, profile, result).map()
        result.remote_roots += tree.remote_roots
        for span_id, role in tree.role.items():
            if role == _WAIT:
                result.waiting += 1
            elif role == _OTHER and not _ours(tree.nodes[span_id]):
                result.ignored += 1
    return result
