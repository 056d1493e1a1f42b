"""Framework instrumentations' traces (no ``otel_prov.*`` attributes) -> the agent flow, and the
DocRAG flow for their retrievals.  Pure: spans in, quads out, no I/O, no state.

A framework instrumentation (the span dialects of :mod:`.dialects`) emits an agent run as a span
tree (:mod:`.tree`): a run's top span (an agent, a workflow, or the chain that runs a graph) with
agent, tool-call, model-call and retrieval spans below, among turn, prompt and HTTP spans.  It maps to:

- **a session per run**: the top span is the Question (``tg:query``: the run's question -- the top
  span's, else its entry agent's, else its first model call's last user message) and, once it ended,
  the Conclusion (``tg:answer``: its answer, else its last agent's, else a ``final_answer`` tool's,
  else its last model call's text);
- **a workflow's agents**: a top span that does nothing itself (no tool or model call of its own) is
  a workflow; its first agent is the session's own agent (its steps are the session's), the agents it
  hands off to are **sub-agents**, each a Question derived from the hand-off step (the delegation
  link); an agent run inside a tool is a sub-agent derived from that tool's step;
- **one Analysis per tool call** of the nearest agent (``tg:action``, ``tg:arguments`` -- the actual
  arguments as JSON --, ``tg:observation``), numbered 1, 2, ... by (start time, span id), with
  ``tg:thought``: the text and reasoning of the model call that requested it, matched by tool call id
  where the spans carry one, else the latest earlier model call of the same agent that requested a
  call of that name, else the latest earlier model call.  A ``final_answer`` tool is the answer, not
  a step;
- **a DocRAG session per retrieval**: the query, the chunk ids, the synthesis (the chain's output, or
  the tool's result when the retrieval runs inside a tool); inside a step it is a sub-trace of that
  step.

What the trace does not record (content capture off, or an instrumentation that drops it) is marked
``otelprov:notCaptured`` on the node instead of being made up.  Model calls outside any agent are
left to :mod:`.conversations` (:attr:`AgentsMapped.free_calls`).

The triples are made by the same handlers as our own spans (:func:`.flows.map_span`): each node is
written as the ``otel_prov`` span it stands for (the ids, times and status of the span it comes
from).  Numbering needs the tree, so a trace is always mapped as a whole; a span whose chain of
ancestors is not yet complete waits: it gives nothing until the missing spans arrive -- except a
parent in another process (a remote parent), which may never be exported to us; the span below it
is taken as a root until it arrives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from .. import attributes as A
from ..model.iris import (
    analysis_iri,
    conclusion_iri,
    exploration_iri,
    is_question_iri,
    nested_agent_uuid,
    question_iri,
    session_activity_iri,
    software_agent_iri,
    synthesis_iri,
)
from ..model.profiles import STRICT, check_profile
from ..model.terms import iri, literal, uuid_from_trace_id
from ..model.vocab import NT
from .dialects import Agent, LLMCall, Request, Retrieval, ToolCall
from .dialects.content import dumps, loads
from .flows import Mapped, is_ours, map_span
from .limits import ValueTooLarge
from .spans import SpanLike, SpanRecord, SpanView
from .tree import Place, Read, SpanTree, trace_view

NO_QUERY = ("agent run without a question (no user text on its spans or its model calls): "
            "tg:query left empty, marked not captured")
FINAL_ANSWER_TOOLS = frozenset({"final_answer"})
"""Tools whose call is the agent's answer (smolagents), not a step."""

# What ``otelprov:notCaptured`` names: the missing property's local name.
QUERY, THOUGHT, ARGUMENTS, OBSERVATION, ANSWER, CONTENT, CHUNKS = (
    "query", "thought", "arguments", "observation", "answer", "content", "selectedChunk")


@dataclass
class AgentsMapped(Mapped):
    """:class:`Mapped`, plus the spans that wait for missing ancestors and the model calls outside
    any agent."""

    waiting: int = 0
    remote_roots: int = 0
    """Spans taken as roots because their parent is remote and has not arrived (it may)."""
    free_calls: list[SpanView] = field(default_factory=list)
    """Model calls outside any agent: calls of chat conversations (:mod:`.conversations`)."""
    too_large: dict[int, str] = field(default_factory=dict)
    """Spans (by span id) whose node was left out: a value too large for the store (:mod:`.limits`)."""


_T = TypeVar("_T")


def _read(view: SpanView, kind: type[_T], default: _T) -> _T:
    """What the view's dialect read of its span, if of ``kind``; else ``default``."""
    data = view.info.data if isinstance(view.info, Read) else None
    return data if isinstance(data, kind) else default


def agent_of(view: SpanView) -> Agent:
    return _read(view, Agent, Agent(None, None, None, False, False))


def tool_of(view: SpanView) -> ToolCall:
    return _read(view, ToolCall, ToolCall(view.name, captured=False))


def llm_of(view: SpanView) -> LLMCall:
    return _read(view, LLMCall, _NO_CALL)


def retrieval_of(view: SpanView) -> Retrieval:
    return _read(view, Retrieval, Retrieval(None, None))


_NO_CALL = LLMCall()


def _key(span: SpanLike) -> tuple[int, int]:
    return (span.start_ns, span.span_id)


# -- one step: a tool call and the model call that requested it -----------------------------------------


@dataclass
class Analysis:
    """An Analysis node to write: the span it comes from and what it records (None: absent)."""

    span: SpanLike
    action: str
    thought: str | None = None
    arguments: str | None = None
    observation: str | None = None
    missing: tuple[str, ...] = ()
    """What the trace does not record (``otelprov:notCaptured``)."""
    end_ns: int | None = None
    """When the step ended, if not when its span did."""


Calls = Mapping[int, LLMCall]
"""What each model call (by span id) says, completed from the calls after it (:func:`completed`)."""


def completed(llms: Sequence[SpanView]) -> dict[int, LLMCall]:
    """The model calls of a trace, each completed from the next one's input where the span leaves
    its output out: some instrumentations record a call's output only as the start of the next
    call's input (OpenLLMetry's Chat Completions path; the official openai-agents instrumentation
    drops the requested tool calls there)."""
    ordered = sorted(llms, key=_key)
    calls = {c.span_id: llm_of(c) for c in ordered}
    for this, after in zip(ordered, ordered[1:], strict=False):
        call, following = calls[this.span_id], llm_of(after)
        if not (following.prior_text or following.prior_requests):
            continue
        if not call.output_captured:
            calls[this.span_id] = replace(call, text=following.prior_text, requests=following.prior_requests,
                                          output_captured=True)
        elif not call.requests and following.prior_requests and following.prior_text == call.text:
            calls[this.span_id] = replace(call, requests=following.prior_requests)
    return calls


def match_requests(llms: Sequence[SpanView], tools: Sequence[SpanView], calls: Calls
                   ) -> dict[int, tuple[SpanView, Request | None]]:
    """For each tool span: the model call that requested it, and the request when known.  By tool
    call id where both carry one; else the latest earlier call with an unclaimed request of that
    name (a hand-off: of any ``transfer_to_*`` name or naming the target); else the latest earlier
    call."""
    by_id: dict[str, tuple[SpanView, Request]] = {}
    for llm in llms:
        for request in calls[llm.span_id].requests:
            if request.id:
                by_id.setdefault(request.id, (llm, request))
    claimed: set[tuple[int, int]] = set()
    found: dict[int, tuple[SpanView, Request | None]] = {}
    for tool in tools:
        call = tool_of(tool)
        if call.call_id and call.call_id in by_id:
            llm, request = by_id[call.call_id]
            claimed.add((llm.span_id, calls[llm.span_id].requests.index(request)))
            found[tool.span_id] = (llm, request)
            continue
        earlier = [llm for llm in llms if _key(llm) <= _key(tool)]
        match: tuple[SpanView, Request | None] | None = None
        for llm in reversed(earlier):
            for index, request in enumerate(calls[llm.span_id].requests):
                if (llm.span_id, index) in claimed or not _same_call(call, request):
                    continue
                claimed.add((llm.span_id, index))
                match = (llm, request)
                break
            if match:
                break
        if match is None and earlier:
            match = (earlier[-1], None)
        if match is not None:
            found[tool.span_id] = match
    return found


def _same_call(call: ToolCall, request: Request) -> bool:
    if call.handoff is None:
        return request.name == call.name
    return request.name.startswith("transfer_to") or (bool(call.handoff) and call.handoff in request.name)


def tool_step(tool: SpanView, matched: tuple[SpanView, Request | None] | None, calls: Calls,
              handoff_target: str | None = None) -> Analysis:
    """The Analysis of one tool span, its thought and arguments completed from the model call that
    requested it."""
    call = tool_of(tool)
    llm, request = matched if matched else (None, None)
    arguments = call.arguments
    if arguments is None and request is not None and request.arguments is not None:
        arguments = request.arguments
    if arguments is None and call.bare_argument is not None:
        arguments = _named(call.bare_argument, call, request)
    action = call.name
    result = call.result
    if call.handoff is not None:
        target = call.handoff or handoff_target
        action = request.name if request else (f"handoff to {target}" if target else "handoff")
        result = result or target
    missing = []
    thought = None
    if llm is not None and calls[llm.span_id].output_captured:
        thought = calls[llm.span_id].thought
    else:
        missing.append(THOUGHT)
    if arguments is None and not call.captured:
        missing.append(ARGUMENTS)
    if result is None and not call.captured:
        missing.append(OBSERVATION)
    return Analysis(tool, action, thought, arguments, result, tuple(missing))


def _named(bare: str, call: ToolCall, request: Request | None) -> str:
    """A bare-string argument as JSON: named after the tool's one parameter when known."""
    if request is not None and request.arguments is not None:
        parsed = loads(request.arguments)
        if isinstance(parsed, dict) and len(parsed) == 1:
            return dumps({next(iter(parsed)): bare})
    if len(call.parameters) == 1:
        return dumps({call.parameters[0]: bare})
    return dumps(bare)


# -- the writer -----------------------------------------------------------------------------------------


class Writer:
    """Writes nodes as the ``otel_prov`` spans they stand for, plus the markers only framework
    traces need (``otelprov:notCaptured``)."""

    def __init__(self, profile: str, result: AgentsMapped) -> None:
        self.profile = profile
        self.strict = profile == STRICT
        self.result = result

    def emit(self, span: SpanLike, attrs: dict[str, Any], end_ns: int | None = None,
             start_ns: int | None = None) -> bool:
        """Maps ``span`` as the ``otel_prov`` span it stands for: same ids, times and status.  False
        (nothing written, the span noted in ``too_large``) if a value is too large for the store."""
        ours = SpanRecord(trace_id=span.trace_id, span_id=span.span_id, name=span.name,
                          start_ns=span.start_ns if start_ns is None else start_ns,
                          end_ns=span.end_ns if end_ns is None else end_ns, attributes=attrs,
                          parent_id=span.parent_id, parent_remote=span.parent_remote, error=span.error,
                          status_message=span.status_message)
        try:
            map_span(ours, self.profile, self.result)
        except ValueTooLarge as exc:
            self.result.too_large[span.span_id] = str(exc)
            return False
        return True

    def not_captured(self, node: str, names: Sequence[str]) -> None:
        for name in names:
            self.result.quads.append((iri(node), NT.notCaptured, literal(name), NT.graph))

    def step(self, uuid: str, number: int, step: Analysis, common: dict[str, Any]) -> None:
        """Analysis ``number`` of the session ``uuid``."""
        attrs: dict[str, Any] = {A.FLOW: A.FLOW_AGENT, A.STEP: A.STEP_ANALYSIS, A.ITERATION: number,
                                 A.ACTION: step.action, **common}
        if uuid != uuid_from_trace_id(step.span.trace_id):
            attrs[A.SESSION_ID] = uuid
        for key, value in ((A.THOUGHT, step.thought), (A.ARGUMENTS, step.arguments),
                           (A.OBSERVATION, step.observation)):
            if value is not None:
                attrs[key] = value
        if self.emit(step.span, attrs, step.end_ns):
            self.not_captured(analysis_iri(uuid, number), step.missing)

    def session(self, span: SpanLike, flow: str, uuid: str, query: str | None, derived: str | None,
                extra: dict[str, Any], end_ns: int | None = None, start_ns: int | None = None,
                answer_missing: bool = False) -> str:
        """A session's Question (and, for an agent with :data:`A.ANSWER` in ``extra``, its
        Conclusion, marked not captured with ``answer_missing``); ``derived``: the node it derives
        from (a step, or a Question)."""
        attrs: dict[str, Any] = {A.FLOW: flow, A.STEP: A.STEP_SESSION, A.QUESTION: query or "", **extra}
        if uuid != uuid_from_trace_id(span.trace_id):
            attrs[A.SESSION_ID] = uuid
        from_question = derived is not None and is_question_iri(derived)
        if derived and not (from_question and self.strict):
            attrs[A.DERIVED_FROM] = derived
        question = question_iri(flow, uuid)
        if not self.emit(span, attrs, end_ns, start_ns):
            return question
        if flow == A.FLOW_AGENT and extra.get(A.ANSWER) == "" and answer_missing:
            self.not_captured(conclusion_iri(uuid), [ANSWER])
        if derived and from_question and self.strict:
            # Strict: the enclosing session's activity generated this Question (map_span links a
            # step's activity, ``{step}/activity``; a session's activity is ``{question}/session``).
            self.result.quads.append((iri(question), NT.wasGeneratedBy, iri(session_activity_iri(derived)),
                                      NT.graph))
        if query is None:
            self.not_captured(question, [QUERY])
        name = extra.get(A.GEN_AI_AGENT_NAME)
        if name:
            self.result.quads.append((iri(question), NT.agentName, literal(str(name)), NT.graph))
        return question


# -- runs ---------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Run:
    """One agent run (or the chain that runs one): a session, or a sub-agent of one."""

    top: SpanView
    reads: list[Agent]
    kind: str = Place.AGENT
    tools: list[SpanView] = field(default_factory=list)
    llms: list[SpanView] = field(default_factory=list)
    retrievers: list[SpanView] = field(default_factory=list)
    members: list[Run] = field(default_factory=list)
    parent: Run | None = None
    via: int = 0
    """The span id of the parent's tool this run runs in (0: none)."""
    uuid: str = ""
    number: dict[int, int] = field(default_factory=dict)
    """Tool span id -> its Analysis number."""
    final_tools: list[SpanView] = field(default_factory=list)
    rag: bool = False
    """A chain that retrieves and calls no tools: a DocRAG session."""

    @property
    def name(self) -> str | None:
        """The agent's name: the entry agent's for a workflow, else the top span's."""
        for read in reversed(self.reads):
            if read.name:
                return read.name
        return None

    def captured(self, calls: Calls) -> bool:
        return any(r.captured for r in self.reads) or any(calls[c.span_id].output_captured for c in self.llms)

    def question(self) -> str | None:
        for read in self.reads:
            if read.question is not None:
                return read.question
        for llm in self.llms:
            if llm_of(llm).question is not None:
                return llm_of(llm).question
        return None

    def answer(self, calls: Calls) -> str | None:
        if self.reads[0].answer is not None:
            return self.reads[0].answer
        if self.members:
            last = max(self.members, key=lambda m: (m.top.end_ns, m.top.span_id))
            found = last.answer(calls)
            if found is not None:
                return found
        for read in self.reads[1:]:
            if read.answer is not None:
                return read.answer
        for tool in reversed(self.final_tools):
            answer = _final_answer(tool_of(tool))
            if answer is not None:
                return answer
        if self.llms:
            final = self.llms[-1]
            call = calls[final.span_id]
            after_tools = all(_key(t) < _key(final) for t in self.tools)
            if not call.requests and call.text is not None and after_tools:
                return call.text
        return None


def _final_answer(call: ToolCall) -> str | None:
    parsed = loads(call.arguments) if call.arguments else None
    if isinstance(parsed, dict) and len(parsed) == 1:
        value = next(iter(parsed.values()))
        if isinstance(value, str):
            return value
    return call.bare_argument or call.result


class _TraceRuns:
    """One trace's runs, steps and retrievals; writes their quads."""

    def __init__(self, tree: SpanTree, profile: str, result: AgentsMapped) -> None:
        self.tree = tree
        self.writer = Writer(profile, result)
        self.strict = profile == STRICT
        self.result = result
        up = tree.up
        containers = sorted(tree.at(Place.AGENT) + tree.at(Place.CHAIN), key=_key)
        owned: dict[int, dict[str, list[SpanView]]] = {c.span_id: {p: [] for p in (
            Place.TOOL, Place.LLM, Place.RETRIEVER, Place.TURN, Place.AGENT)} for c in containers}
        for place in (Place.TOOL, Place.LLM, Place.RETRIEVER, Place.TURN, Place.AGENT):
            for span in tree.at(place):
                owner = up[span.span_id].agent
                if owner in owned and (place != Place.RETRIEVER or not up[span.span_id].tool):
                    owned[owner][place].append(span)
        self.run_of: dict[int, Run] = {}
        runs: list[Run] = []
        for c in containers:
            mine = owned[c.span_id]
            kind = tree.place[c.span_id]
            if kind == Place.CHAIN and not self._agentic(mine):
                if not mine[Place.RETRIEVER]:
                    continue  # a chain that neither acts nor retrieves: nothing to explain
                run = Run(c, [agent_of(c)], kind, rag=True)
            else:
                run = Run(c, [agent_of(c)], kind)
            self.run_of[c.span_id] = run
            runs.append(run)
        # A workflow (a run doing nothing itself) takes its first agent as its own.
        merged: set[int] = set()
        for run in runs:
            if run.top.span_id in merged:
                continue
            mine = owned[run.top.span_id]
            members = [m for m in mine[Place.AGENT] if not up[m.span_id].tool]
            if run.rag or mine[Place.TOOL] or mine[Place.LLM] or not members:
                continue
            entry = members[0]
            run.reads.append(self.run_of[entry.span_id].reads[0])
            self.run_of[entry.span_id] = run
            merged.add(entry.span_id)
        runs = [r for r in runs if r.top.span_id not in merged]
        for run in runs:
            spans = [s for s, r in self.run_of.items() if r is run]
            for span_id in spans:
                mine = owned[span_id]
                run.tools += mine[Place.TOOL]
                run.llms += mine[Place.LLM]
                run.retrievers += mine[Place.RETRIEVER]
            run.tools.sort(key=_key)
            run.llms.sort(key=_key)
            run.retrievers.sort(key=_key)
            run.final_tools = [t for t in run.tools if tool_of(t).name in FINAL_ANSWER_TOOLS]
            steps = [t for t in run.tools if t not in run.final_tools]
            run.number = {t.span_id: n for n, t in enumerate(steps, 1)}
            run.tools = steps
        for run in runs:
            owner_up = up[run.top.span_id]
            parent = self.run_of.get(owner_up.agent)
            if parent is not None:
                run.parent, run.via = parent, owner_up.tool
                if not owner_up.tool and parent is not run:
                    parent.members.append(run)
        self.runs = runs
        tops = [r for r in runs if not up[r.top.span_id].agent and not up[r.top.span_id].under_prov]
        top_retrievers = [r for r in tree.at(Place.RETRIEVER)
                          if not up[r.span_id].agent and not up[r.span_id].under_prov]
        first = min([r.top for r in tops] + top_retrievers, key=_key, default=None)
        self.trace_owner = first.span_id if first is not None else 0
        for run in runs:
            run.uuid = self._uuid(run.top)
        self.free_calls = [c for c in tree.at(Place.LLM)
                           if not up[c.span_id].agent and not up[c.span_id].under_prov]
        self.calls = completed([c for r in runs for c in r.llms])

    @staticmethod
    def _agentic(mine: dict[str, list[SpanView]]) -> bool:
        """A chain runs an agent when it calls tools, has agent or turn spans, or offers its model
        tools."""
        if mine[Place.TOOL] or mine[Place.AGENT] or mine[Place.TURN]:
            return True
        return any(llm_of(c).offered_tools or llm_of(c).requests for c in mine[Place.LLM])

    def _uuid(self, span: SpanLike) -> str:
        if span.span_id == self.trace_owner:
            return uuid_from_trace_id(span.trace_id)
        return nested_agent_uuid(span.trace_id, span.span_id)

    # -- writing ------------------------------------------------------------------------------------

    def map(self) -> None:
        self.result.free_calls.extend(self.free_calls)
        links = self._links()
        targets = {tool.span_id: run.name for run, (_, _, tool) in links.items()
                   if tool is not None and run.name}
        for run in self.runs:
            if run.rag:
                self._rag_chain(run)
            else:
                self._agent(run, links[run], targets)
        consumed = {r.retrievers[0].span_id for r in self.runs if r.rag and r.retrievers}
        for retriever in self.tree.at(Place.RETRIEVER):
            if retriever.span_id not in consumed:
                self._retrieval(retriever)

    def _links(self) -> dict[Run, tuple[str | None, Run | None, SpanView | None]]:
        """What each run's Question derives from: the step it runs in, the hand-off step that
        delegated to it (with the run that handed off), the enclosing run's Question, or (a top run)
        the step of ours it runs in.  A hand-off names its target, else it is the next agent's."""
        handoffs = sorted(((t, r) for r in self.runs for t in r.tools if tool_of(t).handoff is not None),
                          key=lambda pair: _key(pair[0]))
        links: dict[Run, tuple[str | None, Run | None, SpanView | None]] = {}
        for run in sorted(self.runs, key=lambda r: _key(r.top)):
            parent = run.parent
            if parent is None:
                links[run] = (self.tree.up[run.top.span_id].link, None, None)
            elif run.via and run.via in parent.number:
                links[run] = (analysis_iri(parent.uuid, parent.number[run.via]), None, None)
            else:
                links[run] = (question_iri(A.FLOW_AGENT, parent.uuid), None, None)
                if run in parent.members:
                    earlier = [(t, r) for t, r in handoffs if _key(t) <= _key(run.top) and r is not run]
                    named = [(t, r) for t, r in earlier if tool_of(t).handoff == run.name]
                    unnamed = [(t, r) for t, r in earlier if not tool_of(t).handoff]
                    for tool, owner in (named or unnamed)[-1:]:
                        handoffs.remove((tool, owner))
                        links[run] = (analysis_iri(owner.uuid, owner.number[tool.span_id]), owner, tool)
        return links

    def _common(self, run: Run) -> dict[str, Any]:
        name = run.name
        return {A.GEN_AI_AGENT_NAME: name} if name else {}

    def _agent(self, run: Run, link: tuple[str | None, Run | None, SpanView | None],
               targets: Mapping[int, str]) -> None:
        writer = self.writer
        query = run.question()
        if query is None and run.captured(self.calls):
            self.result.problems.append(NO_QUERY)
        derived, delegator, _ = link
        finished = run.top.end_ns > 0 and not run.top.error
        answer = run.answer(self.calls)
        extra: dict[str, Any] = {A.ITERATION: len(run.tools), **self._common(run)}
        if finished or answer is not None:
            extra[A.ANSWER] = answer or ""
        writer.session(run.top, A.FLOW_AGENT, run.uuid, query, derived, extra, answer_missing=answer is None)
        if self.strict and delegator is not None and delegator.name and run.name \
                and delegator.name != run.name:
            # PROV's delegation: the agent handed off to acted on behalf of the one handing off.
            self.result.quads.append((iri(software_agent_iri(run.name)), NT.actedOnBehalfOf,
                                      iri(software_agent_iri(delegator.name)), NT.graph))
        matched = match_requests(run.llms, run.tools, self.calls)
        for tool in run.tools:
            step = tool_step(tool, matched.get(tool.span_id), self.calls, targets.get(tool.span_id))
            writer.step(run.uuid, run.number[tool.span_id], step, self._common(run))

    # -- retrieval ----------------------------------------------------------------------------------

    def _rag_chain(self, run: Run) -> None:
        """A chain that retrieves: a DocRAG session (its first retrieval is the Exploration)."""
        retriever = run.retrievers[0]
        found = retrieval_of(retriever)
        query = run.reads[0].question or found.query
        derived = self.tree.up[run.top.span_id].link
        self.writer.session(run.top, A.FLOW_DOC_RAG, run.uuid, query, derived, {})
        self._exploration(run.uuid, retriever, found)
        answer = run.reads[0].answer
        source: SpanLike = run.top
        if answer is None:
            after = [c for c in run.llms if c.start_ns >= retriever.end_ns and llm_of(c).text]
            if after:
                source, answer = after[0], llm_of(after[0]).text
        if answer is not None or run.top.end_ns > 0:
            self._synthesis(run.uuid, source, answer)

    def _retrieval(self, retriever: SpanView) -> None:
        """A retrieval on its own: a DocRAG session, a sub-trace of the step (or agent, or our own
        step) it runs in; its synthesis is the result of the tool it runs in."""
        up = self.tree.up[retriever.span_id]
        found = retrieval_of(retriever)
        run = self.run_of.get(up.agent)
        derived: str | None = up.link
        tool: SpanView | None = None
        if run is not None:
            if up.tool and up.tool in run.number:
                derived = analysis_iri(run.uuid, run.number[up.tool])
                tool = self.tree.nodes[up.tool]
            else:
                derived = question_iri(A.FLOW_AGENT, run.uuid)
        uuid = self._uuid(retriever)
        self.writer.session(retriever, A.FLOW_DOC_RAG, uuid, found.query, derived, {})
        self._exploration(uuid, retriever, found)
        if tool is not None:
            result = tool_of(tool).result
            if result is not None or tool_of(tool).captured:
                self._synthesis(uuid, tool, result)

    def _exploration(self, uuid: str, span: SpanLike, found: Retrieval) -> None:
        attrs: dict[str, Any] = {A.FLOW: A.FLOW_DOC_RAG, A.STEP: A.STEP_EXPLORATION}
        if uuid != uuid_from_trace_id(span.trace_id):
            attrs[A.SESSION_ID] = uuid
        if found.chunks is not None:
            attrs[A.CHUNK_IDS] = list(found.chunks)
        if self.writer.emit(span, attrs) and found.chunks is None:
            self.writer.not_captured(exploration_iri(A.FLOW_DOC_RAG, uuid), [CHUNKS])

    def _synthesis(self, uuid: str, span: SpanLike, content: str | None) -> None:
        attrs: dict[str, Any] = {A.FLOW: A.FLOW_DOC_RAG, A.STEP: A.STEP_SYNTHESIS, A.CONTENT: content or ""}
        if uuid != uuid_from_trace_id(span.trace_id):
            attrs[A.SESSION_ID] = uuid
        if self.writer.emit(span, attrs) and content is None:
            self.writer.not_captured(synthesis_iri(A.FLOW_DOC_RAG, uuid), [CONTENT])


def trace_mapped(views: Sequence[SpanView], profile: str, result: AgentsMapped) -> None:
    """Maps one trace's views into ``result`` (free model calls into ``result.free_calls``)."""
    tree = SpanTree(views, result.problems)
    _TraceRuns(tree, profile, result).map()
    result.remote_roots += tree.remote_roots
    for span_id, place in tree.place.items():
        if place == Place.WAIT:
            result.waiting += 1
        elif place == Place.OTHER and not is_ours(tree.nodes[span_id]):
            result.ignored += 1


def map_agent_traces(spans: Sequence[SpanLike], profile: str) -> AgentsMapped:
    """The quads of the framework runs in some spans (of one or more traces), chat conversations
    included (:mod:`.conversations`: across the traces given).

    ``otel_prov`` spans are read only for their place in the tree (they are mapped on their own);
    framework spans are ``mapped`` (counted by ``map_span``) or ``waiting``; every other span is
    ``ignored``."""
    from .conversations import components, map_conversation

    check_profile(profile)
    result = AgentsMapped()
    by_trace: dict[int, list[SpanView]] = {}
    for span in spans:
        view, _ = trace_view(span, result.problems)
        by_trace.setdefault(span.trace_id, []).append(view)
    for trace_id in sorted(by_trace):
        trace_mapped(by_trace[trace_id], profile, result)
    for component in components(result.free_calls):
        map_conversation(component, profile, result)
    return result
