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
  call of that name, else the latest earlier model call.  A tool call the model requested that no
  tool span shows is a step too (its observation from a later call's input, by id, else by order).
  A tool span inside another tool span of the same name is that call (an MCP client's and server's);
  one holding tool spans of other names is bookkeeping (a merged-tools span), its children the steps.
  A ``final_answer`` tool is the answer, not a step;
- **a DocRAG session per retrieval**: the query, the chunk ids (and scores), the chunks a reranker
  selected (a Focus), the synthesis (the chain's output, or the tool's result when the retrieval runs
  inside a tool); inside a step it is a sub-trace of that step.  A run that retrieves and calls no
  tools is a DocRAG session whatever its top span says; a retrieval inside a retrieval is part of it.

What the trace does not record (content capture off, or an instrumentation that drops it) is marked
``otelprov:notCaptured`` on the node instead of being made up.  Model calls outside any agent are
left to :mod:`.conversations` (:attr:`AgentsMapped.free_calls`).

The triples are made by the same handlers as our own spans (:func:`.flows.map_span`), through
:class:`.nodes.NodeWriter` (every content value through :mod:`.values`' rule): each node is
written as the ``otel_prov`` span it stands for (the ids, times and status of the span it comes
from).  Numbering needs the tree, so a trace is always mapped as a whole; a span whose chain of
ancestors is not yet complete waits: it gives nothing until the missing spans arrive -- except a
parent in another process (a remote parent), which may never be exported to us; the span below it
is taken as a root until it arrives.
"""


from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .. import attributes as A
from ..model.iris import (
    activity_iri,
    analysis_iri,
    conclusion_iri,
    doc_focus_iri,
    exploration_iri,
    is_analysis_iri,
    nested_agent_uuid,
    question_iri,
    software_agent_iri,
    synthesis_iri,
)
from ..model.profiles import STRICT
from ..model.terms import iri, uuid_from_trace_id
from ..model.vocab import NT
from . import values as V
from .dialects import Agent, Evaluation, LLMCall, Request, Retrieval, ToolCall, TranscriptStep
from .dialects.content import loads
from .flows import is_ours
from .nodes import (
    ARGUMENTS,
    CHUNKS,
    NO_QUERY,
    OBSERVATION,
    THOUGHT,
    AgentsMapped,
    Analysis,
    NodeWriter,
    cost_attrs,
    first_given,
)
from .spans import SpanLike, SpanView
from .tree import Place, Read, SpanTree, agent_of, llm_of, retrieval_of, tool_of

__all__ = ["NO_QUERY", "AgentsMapped", "Analysis", "trace_mapped"]

FINAL_ANSWER_TOOLS = frozenset({"final_answer", "final_result", "finish", "submit_final_answer"})
"""Tools that end the run, not steps: their argument is the answer when it is one text
(smolagents' ``final_answer``); their result never is (DSPy's ``finish`` answers "Completed.")."""
TERMINATORS = FINAL_ANSWER_TOOLS
UNEVALUATED = "evaluation (gen_ai.evaluation.result) of a span that stands for no node: not recorded"

def _key(span: SpanLike) -> tuple[int, int]:
    return (span.start_ns, span.span_id)


def _plain(prop: str, value: str | None) -> bool:
    return value is not None and V.check(prop, value).plain


# -- one step: a tool call and the model call that requested it -----------------------------------------


Calls = Mapping[int, LLMCall]
"""What each model call (by span id) says, completed from the calls after it (:func:`completed`)."""


def completed(llms: Sequence[SpanView], reads: Mapping[int, LLMCall] | None = None) -> dict[int, LLMCall]:
    """The model calls of a trace (``reads``: what each says, when not its view's), each completed
    from the next one's input where the span leaves its output out: some instrumentations record a
    call's output only as the start of the next call's input (OpenLLMetry's Chat Completions path; the
    official openai-agents instrumentation drops the requested tool calls there).  An output the next
    input repeats from an earlier call is not this call's (a framework's span that made no call)."""
    ordered = sorted(llms, key=_key)
    calls = {c.span_id: (reads or {}).get(c.span_id) or llm_of(c) for c in ordered}
    produced: set[str] = set()
    for this, after in zip(ordered, [*ordered[1:], None], strict=False):
        call = calls[this.span_id]
        following = calls[after.span_id] if after is not None else None
        if following is not None and (following.prior_text or following.prior_requests):
            repeated = any(r.id and r.id in produced for r in following.prior_requests)
            if not call.output_captured and not repeated:
                call = calls[this.span_id] = replace(call, text=following.prior_text,
                                                     requests=following.prior_requests, output_captured=True)
            elif not call.requests and following.prior_requests and following.prior_text == call.text \
                    and not repeated:
                call = calls[this.span_id] = replace(call, requests=following.prior_requests)
        produced.update(r.id for r in call.requests if r.id)
    return calls


def merged_call(outer: LLMCall, inner: Sequence[LLMCall]) -> LLMCall:
    """One model call seen by nested spans: its output (text, reasoning, requests, metadata) from the
    first span that recorded it, its input from the first that recorded each part."""
    spans = [outer, *inner]
    output = next((c for c in spans if c.output_captured), outer)
    return replace(
        output,
        results=next((c.results for c in spans if c.results), ()),
        question=next((c.question for c in spans if c.question is not None), None),
        conversation=next((c.conversation for c in spans if c.conversation), None),
        offered_tools=any(c.offered_tools for c in spans),
        prior_text=next((c.prior_text for c in spans if c.prior_text is not None), None),
        prior_requests=next((c.prior_requests for c in spans if c.prior_requests), ()),
        meta=next((c.meta for c in spans if c.meta.model or c.meta.input_tokens is not None), output.meta),
    )


Claimed = set[tuple[int, int]]
"""The requests (model call span id, index) a tool span executes."""


def match_requests(llms: Sequence[SpanView], tools: Sequence[SpanView], calls: Calls,
                   claimed: Claimed | None = None, tool_calls: Mapping[int, ToolCall] | None = None
                   ) -> dict[int, tuple[SpanView, Request | None]]:
    """For each tool span: the model call that requested it, and the request when known.  By tool
    call id where both carry one; else the latest earlier call with an unclaimed request of that
    name (a hand-off: of any ``transfer_to_*`` name or naming the target); else the latest earlier
    call that had ended by the time the tool did (a span that holds a whole loop's model attributes,
    overwritten call after call, would give every step the last call's words).  ``claimed``
    collects the requests matched."""
    by_id: dict[str, tuple[SpanView, Request]] = {}
    for llm in llms:
        for request in calls[llm.span_id].requests:
            if request.id:
                by_id.setdefault(request.id, (llm, request))
    claimed = claimed if claimed is not None else set()
    found: dict[int, tuple[SpanView, Request | None]] = {}
    for tool in tools:
        call = tool_calls[tool.span_id] if tool_calls is not None else tool_of(tool)
        if call.call_id and call.call_id in by_id:
            llm, request = by_id[call.call_id]
            claimed.add((llm.span_id, calls[llm.span_id].requests.index(request)))
            found[tool.span_id] = (llm, request)
            continue
        earlier = [llm for llm in llms if _key(llm) <= _key(tool)]
        match: tuple[SpanView, Request | None] | None = None
        for llm in reversed(earlier):
            open_ = [(index, request) for index, request in enumerate(calls[llm.span_id].requests)
                     if (llm.span_id, index) not in claimed and _same_call(call, request)]
            # Parallel calls of one tool: the request whose arguments are the span's own, never
            # another's (which would pair one call's arguments with another's result).
            verdicts = [(_agrees(call, r) if len(open_) > 1 else None, i, r) for i, r in open_]
            agreeing = [(i, r) for agrees, i, r in verdicts if agrees is True]
            unknown = [(i, r) for agrees, i, r in verdicts if agrees is None]
            chosen = (agreeing or unknown)[:1]
            if chosen:
                index, request = chosen[0]
                claimed.add((llm.span_id, index))
                match = (llm, request)
                break
        ended = [llm for llm in earlier if _before(llm, tool)]
        if match is None and ended:
            match = (ended[-1], None)
        if match is not None:
            found[tool.span_id] = match
    return found


def _before(llm: SpanLike, tool: SpanLike) -> bool:
    """Whether the model call ``llm`` ended by the time ``tool`` did (could have requested it)."""
    return not (llm.end_ns and tool.end_ns) or llm.end_ns <= tool.end_ns


def _agrees(call: ToolCall, request: Request) -> bool | None:
    """Whether a tool span's own arguments are the request's: True, False, or None when either side
    does not say (no arguments recorded)."""
    asked = loads(request.arguments) if request.arguments else None
    if asked is None:
        return None
    if call.arguments is not None:
        own = loads(call.arguments)
        return None if own is None else own == asked
    if call.bare_argument is not None and isinstance(asked, dict) and len(asked) == 1:
        return str(next(iter(asked.values()))) == call.bare_argument
    return None


def _same_call(call: ToolCall, request: Request) -> bool:
    if call.handoff is None:
        return request.name == call.name
    return request.name.startswith("transfer_to") or (bool(call.handoff) and call.handoff in request.name)


def tool_step(tool: SpanView, call: ToolCall, matched: tuple[SpanView, Request | None] | None, calls: Calls,
              handoff_target: str | None = None) -> Analysis:
    """The Analysis of one tool span (``call``: what it says), its thought and arguments completed
    from the model call that requested it."""
    llm, request = matched if matched else (None, None)
    arguments = call.arguments
    if not _plain(ARGUMENTS, arguments) and request is not None and _plain(ARGUMENTS, request.arguments):
        arguments = request.arguments
    if arguments is None and call.bare_argument is not None:
        arguments = _named(call.bare_argument, call, request) or call.bare_argument
    action = call.name
    result = call.result
    if call.handoff is not None:
        target = call.handoff or handoff_target
        action = request.name if request else (f"handoff to {target}" if target else "handoff")
        result = result or target
    missing = []
    thought = None
    found = calls[llm.span_id] if llm is not None else None
    if found is not None and found.output_captured:
        thought = found.thought
    else:
        missing.append(THOUGHT)
    if arguments is None and not call.captured:
        missing.append(ARGUMENTS)
    if result is None and not (call.captured and tool.error):
        # A tool that ran returned something: a result its span does not hold was not captured
        # (its arguments may be recorded whatever the content switch says). A failed call has none.
        missing.append(OBSERVATION)
    return Analysis(tool, action, thought, arguments, result, tuple(missing), llm=llm, call=found)


def _named(bare: str, call: ToolCall, request: Request | None) -> str | None:
    """A bare-string argument as JSON, named after the tool's one parameter when known (else None:
    the arguments are not an object)."""
    if request is not None and request.arguments is not None:
        parsed = loads(request.arguments)
        if isinstance(parsed, dict) and len(parsed) == 1:
            return V.dumps({next(iter(parsed)): bare})
    if len(call.parameters) == 1:
        return V.dumps({call.parameters[0]: bare})
    return None


@dataclass(frozen=True)
class Requested:
    """A tool call the model requested that no tool span shows: a step from the messages alone."""

    llm: SpanView
    index: int
    request: Request

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.llm.end_ns or self.llm.start_ns, self.llm.span_id, self.index)


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
    rerankers: list[SpanView] = field(default_factory=list)
    turns: list[SpanView] = field(default_factory=list)
    """Its unnamed agent spans (turns, a crew's task): what they say of the question and answer is
    the run's when its own spans do not say it."""
    members: list[Run] = field(default_factory=list)
    parent: Run | None = None
    via: int = 0
    """The span id of the parent's tool this run runs in (0: none)."""
    uuid: str = ""
    number: dict[int, int] = field(default_factory=dict)
    """Tool span id -> its Analysis number."""
    requested: list[tuple[int, Requested]] = field(default_factory=list)
    """The steps only the model's messages show, with their numbers."""
    transcript: tuple[TranscriptStep, ...] = ()
    """The steps only its own record of its conversation shows (no tool span or model call does),
    numbered 1, 2, ..."""
    final_tools: list[SpanView] = field(default_factory=list)
    rag: bool = False
    """A run that retrieves and calls no tools: a DocRAG session."""

    @property
    def name(self) -> str | None:
        """The agent's name: the entry agent's for a workflow, else the top span's."""
        for read in reversed(self.reads):
            if read.name:
                return read.name
        return None

    @property
    def steps(self) -> int:
        return len(self.number) + len(self.requested) + len(self.transcript)

    def captured(self, calls: Calls) -> bool:
        return any(r.captured for r in self.reads) or any(calls[c.span_id].output_captured for c in self.llms)

    def question(self, calls: Calls) -> str | V.Verdict | None:
        """The run's question: the first plain one its own spans record, else the user's message of
        its first model call unless that reads as a prompt a framework made of the question
        (:func:`prompt_like`: then not captured, the message kept raw); else the first recorded (not
        plain: the writer marks it not captured)."""
        own = [r.question for r in self.reads] + [agent_of(t).question for t in self.turns]
        found = next((q for q in own if _plain(V.QUERY, q)), None)
        if found is not None:
            return found
        asked = [calls[c.span_id].question for c in self.llms]
        for text in asked:
            if text is not None and _plain(V.QUERY, text):
                return V.Verdict(None, text) if prompt_like(text) else text
        return next((q for q in [*own, *asked] if q is not None), None)

    def answer(self, calls: Calls) -> tuple[str | None, SpanView | None]:
        """The run's answer, and the model call that gave it (when one did)."""
        candidates = self._answers(calls)
        final = self.final_call(calls)
        words = calls[final.span_id].text if final is not None else None
        for text, source in candidates:
            if _plain(V.ANSWER, text):
                if words is not None and text != words and words.strip() and (
                        text.strip() == words.strip() or text.rstrip().endswith(words.strip())):
                    # The model's own words, not a framework's rendering of them (a trailing newline;
                    # every turn's text run together, the answer last).
                    return words, final
                return text, source
        return candidates[0] if candidates else (None, None)

    def _answers(self, calls: Calls) -> list[tuple[str, SpanView | None]]:
        found: list[tuple[str, SpanView | None]] = []
        final = self.final_call(calls)
        source = final if final is not None else None
        if self.reads[0].answer is not None:
            found.append((self.reads[0].answer, source))
        if self.members:
            last = max(self.members, key=lambda m: (m.top.end_ns, m.top.span_id))
            text, src = last.answer(calls)
            if text is not None:
                found.append((text, src))
        found += [(r.answer, source) for r in self.reads[1:] if r.answer is not None]
        for tool in reversed(self.final_tools):
            answer = _final_answer(tool_of(tool))
            if answer is not None:
                found.append((answer, None))
        if final is not None and calls[final.span_id].text is not None:
            found.append((str(calls[final.span_id].text), final))
        # The output of the last turn that gave one, when it came after every tool.
        said = [t for t in self.turns if agent_of(t).answer is not None]
        last_turn = max(said, key=lambda t: (t.end_ns, t.span_id), default=None)
        if last_turn is not None and all(t.end_ns <= last_turn.end_ns for t in self.tools):
            found.append((str(agent_of(last_turn).answer), source))
        return found

    def final_call(self, calls: Calls) -> SpanView | None:
        """The model call that answered: the last, when it came after every tool and requested none
        (started after it; or ended after it, given tools' results: a span that holds a whole loop's
        model attributes, overwritten call after call, ends with the last call's)."""
        if not self.llms:
            return None
        final = self.llms[-1]
        call = calls[final.span_id]
        if call.requests or not all(_key(t) < _key(final) or (call.results and 0 < t.end_ns <= final.end_ns)
                                    for t in self.tools):
            return None
        return final


_LABEL = re.compile(r"\s*(?:[A-Z][A-Za-z]*(?: [A-Za-z]+){0,3}):[ \t]+\S")
"""A line that starts with a label (``Current Task: ...``, ``Your task: ...``)."""


def prompt_like(text: str) -> bool:
    """Whether a model call's user message reads as a prompt a framework built around the user's
    question (CrewAI's ``Current Task: {task} ... This is the expected criteria for your final answer:
    ...``) rather than the question itself: it starts with a labelled line and says more after it."""
    return _LABEL.match(text) is not None and "\n" in text.strip()


def _final_answer(call: ToolCall) -> str | None:
    """A terminating tool's answer: its one text argument (never its result: that is the
    framework's acknowledgement)."""
    parsed = loads(call.arguments) if call.arguments else None
    if isinstance(parsed, dict) and len(parsed) == 1:
        value = next(iter(parsed.values()))
        if isinstance(value, str):
            return value
    return call.bare_argument


def _outer_tools(tree: SpanTree, tools: Sequence[SpanView]) -> tuple[set[int], dict[int, int]]:
    """Tool spans inside tool spans: the outer ones that are bookkeeping (they hold tool spans of
    other names: a merged-tools span), and, for the inner ones that are the outer call itself (the
    same name: an MCP client's span and its server's), the outer span they belong to."""
    inner: dict[int, list[SpanView]] = {}
    for tool in tools:
        parent_tool = tree.up[tool.span_id].tool
        if parent_tool:
            inner.setdefault(parent_tool, []).append(tool)
    containers: set[int] = set()
    same: dict[int, int] = {}
    for outer_id, children in inner.items():
        outer = tree.nodes[outer_id]
        if all(tool_of(c).name == tool_of(outer).name for c in children) and len(children) == 1:
            same[children[0].span_id] = outer_id
        else:
            containers.add(outer_id)
    return containers, same


def _merged_tool(outer: ToolCall, inner: ToolCall) -> ToolCall:
    """One call seen by two spans: each value from the span that has it plain."""
    arguments = (outer.arguments if _plain(ARGUMENTS, outer.arguments)
                 else (inner.arguments or outer.arguments))
    result = outer.result if _plain(OBSERVATION, outer.result) else (inner.result or outer.result)
    return replace(outer, arguments=arguments, result=result,
                   bare_argument=outer.bare_argument or inner.bare_argument,
                   parameters=outer.parameters or inner.parameters, call_id=outer.call_id or inner.call_id,
                   captured=outer.captured or inner.captured)


class _TraceRuns:
    """One trace's runs, steps and retrievals; writes their quads."""

    def __init__(self, tree: SpanTree, profile: str, result: AgentsMapped) -> None:
        self.tree = tree
        self.writer = NodeWriter(profile, result)
        self.strict = profile == STRICT
        self.result = result
        up = tree.up
        all_tools = tree.at(Place.TOOL)
        containers, same = _outer_tools(tree, all_tools)
        self.tool_calls: dict[int, ToolCall] = {t.span_id: tool_of(t) for t in all_tools}
        for inner_id, outer_id in same.items():
            self.tool_calls[outer_id] = _merged_tool(self.tool_calls[outer_id], self.tool_calls[inner_id])
        hidden = containers | set(same)
        """Tool spans that are no step of their own."""
        places = (Place.TOOL, Place.LLM, Place.RETRIEVER, Place.RERANKER, Place.TURN, Place.AGENT)
        agents = sorted(tree.at(Place.AGENT) + tree.at(Place.CHAIN), key=_key)
        owned: dict[int, dict[str, list[SpanView]]] = {c.span_id: {p: [] for p in places} for c in agents}
        for place in places:
            for span in tree.at(place):
                owner = up[span.span_id].agent
                if owner not in owned or (place == Place.TOOL and span.span_id in hidden):
                    continue
                if place in (Place.RETRIEVER, Place.RERANKER) and up[span.span_id].tool:
                    continue  # a retrieval inside a tool: that step's sub-trace
                owned[owner][place].append(span)
        self.run_of: dict[int, Run] = {}
        runs: list[Run] = []
        for c in agents:
            mine = owned[c.span_id]
            kind = tree.place[c.span_id]
            if not self._agentic(mine) and (mine[Place.RETRIEVER] or kind == Place.CHAIN):
                if not mine[Place.RETRIEVER]:
                    continue  # a chain that neither acts nor retrieves: nothing to explain
                run = Run(c, [agent_of(c)], kind, rag=True)
            else:
                run = Run(c, [agent_of(c)], kind)
            self.run_of[c.span_id] = run
            runs.append(run)
        # A workflow (a run doing nothing itself) takes its first agent as its own.
        # A workflow (a run doing nothing itself) takes its first agent as its own, and that one its
        # own first if it does nothing itself either (a crew, its task, the task's agent); agents
        # taking turns in a conversation (an agent invoked more than once) are all the workflow's.
        merged: set[int] = set()
        for run in runs:
            current = run.top.span_id
            while run.top.span_id not in merged and not run.rag:
                mine = owned[current]
                members = [m for m in mine[Place.AGENT]
                           if not up[m.span_id].tool and m.span_id in self.run_of]
                if mine[Place.TOOL] or mine[Place.LLM] or not members:
                    break
                names = [agent_of(m).name for m in members if agent_of(m).name]
                turns = members if len(set(names)) < len(names) else members[:1]
                run.reads.append(self.run_of[members[0].span_id].reads[0])
                for member in turns:
                    self.run_of[member.span_id] = run
                    merged.add(member.span_id)
                if len(turns) > 1:
                    run.turns += turns
                    break
                current = members[0].span_id
        runs = [r for r in runs if r.top.span_id not in merged]
        self.spans_of: dict[Run, list[int]] = {}
        """The agent spans of each run (its top, and those merged into it)."""
        for agent_id, its_run in self.run_of.items():
            self.spans_of.setdefault(its_run, []).append(agent_id)
        for run in runs:
            for span_id in self.spans_of[run]:
                mine = owned[span_id]
                run.tools += mine[Place.TOOL]
                run.llms += mine[Place.LLM]
                run.retrievers += mine[Place.RETRIEVER]
                run.rerankers += mine[Place.RERANKER]
                run.turns += mine[Place.TURN]
            for spans in (run.tools, run.llms, run.retrievers, run.rerankers, run.turns):
                spans.sort(key=_key)
            run.final_tools = [t for t in run.tools if self.tool_calls[t.span_id].name in FINAL_ANSWER_TOOLS]
            run.tools = [t for t in run.tools if t not in run.final_tools]
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
        self.node_of: dict[int, str] = {}
        """The node each span was written as (what an evaluation on that span evaluates)."""
        merged_calls = {outer: merged_call(llm_of(tree.nodes[outer]), [llm_of(tree.nodes[i]) for i in inner])
                        for outer, inner in tree.inner_llms.items()}
        self.calls = completed([c for r in runs for c in r.llms], merged_calls)
        executed = {call.call_id for call in self.tool_calls.values() if call.call_id}
        executed_names = {call.name for call in self.tool_calls.values()}
        self.matched: dict[Run, dict[int, tuple[SpanView, Request | None]]] = {}
        for run in runs:
            claimed: Claimed = set()
            self.matched[run] = match_requests(run.llms, run.tools, self.calls, claimed, self.tool_calls)
            idle = [self.tool_calls[t.span_id] for t in run.tools
                    if self.matched[run].get(t.span_id, (None, None))[1] is None]
            # Steps from the model's messages alone: in a run with no tool span, or whose tool spans
            # carry their call ids (so that a request no span answers to is known not to have one).
            by_id = all(self.tool_calls[t.span_id].call_id for t in run.tools)
            requested = ([] if run.rag or not by_id
                         else self._requested(run, claimed, executed, executed_names, idle))
            steps: list[tuple[tuple[int, int, int], SpanView | Requested]] = [
                (key, t) for key, t in self._tool_keys(run)]
            steps += [(r.key, r) for r in requested]
            steps.sort(key=lambda pair: pair[0])
            for n, (_, step) in enumerate(steps, 1):
                if isinstance(step, Requested):
                    run.requested.append((n, step))
                else:
                    run.number[step.span_id] = n
            if not steps and not run.rag:
                run.transcript = next((r.transcript for r in run.reads if r.transcript), ())

    def _tool_keys(self, run: Run) -> list[tuple[tuple[int, int, int], SpanView]]:
        """Each tool span's place among the run's steps: by start time; tools started at the same
        time (parallel calls, a clock of milliseconds) in the order the model requested them, then by
        span id."""
        def position(tool: SpanView) -> int:
            llm, request = self.matched[run].get(tool.span_id, (None, None))
            if llm is None or request is None:
                return 1 << 30
            requests = self.calls[llm.span_id].requests
            return next((i for i, r in enumerate(requests) if r is request), 1 << 30)

        ordered = sorted(run.tools, key=lambda t: (t.start_ns, position(t), t.span_id))
        return [((t.start_ns, rank, -1), t) for rank, t in enumerate(ordered)]

    def _requested(self, run: Run, claimed: Claimed, executed: set[str], executed_names: set[str],
                   idle: list[ToolCall]) -> list[Requested]:
        """The tool calls the run's model requested that no tool span executes: by id where the
        request has one, else only when no tool span of that name is in the trace; and a request a
        tool span of the run matched to nothing may stand for (``idle``: by name, in any order) is
        that span's."""
        found = []
        idle = list(idle)
        # A request repeated by several spans (an output read back from the next input) is one: done
        # when any of its copies is.
        seen = {self.calls[llm].requests[i].id or self.calls[llm].requests[i] for llm, i in claimed}
        for llm in run.llms:
            call = self.calls[llm.span_id]
            for index, request in enumerate(call.requests):
                key = request.id or request
                if key in seen:
                    continue
                seen.add(key)
                if (llm.span_id, index) in claimed or request.name in TERMINATORS:
                    continue
                if request.id in executed or (not request.id and request.name in executed_names):
                    continue
                executor = next((c for c in idle if _same_call(c, request)
                                 and (not c.call_id or c.call_id == request.id)), None)
                if executor is not None:
                    idle.remove(executor)
                    continue
                found.append(Requested(llm, index, request))
        return found

    @staticmethod
    def _agentic(mine: dict[str, list[SpanView]]) -> bool:
        """A run acts when it calls tools, has agent or turn spans, or offers its model tools."""
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
                self._rag_run(run)
            else:
                self._agent(run, links[run], targets)
        consumed = {s.span_id for r in self.runs if r.rag for s in r.retrievers}
        for retriever in self.tree.at(Place.RETRIEVER):
            if retriever.span_id not in consumed:
                self._retrieval(retriever)
        self._evaluations()
        if self.strict:
            self._linked_activities()

    def _linked_activities(self) -> None:
        """Strict: a step's span that links to another step's span of the trace (its tool call):
        the step's activity ``prov:wasInformedBy`` the other's (every node keeps its links as
        ``otelprov:linkedSpan``, in both profiles)."""
        for view in self.tree.nodes.values():
            source = self.node_of.get(view.span_id)
            if source is None or not is_analysis_iri(source):
                continue
            for trace_id, span_id in getattr(view, "links", ()):
                target = self.node_of.get(span_id) if trace_id == view.trace_id else None
                if target is not None and target != source and is_analysis_iri(target):
                    self.writer.add(iri(activity_iri(source)), NT.wasInformedBy, iri(activity_iri(target)))

    def _evaluations(self) -> None:
        """Each evaluation of a span, of the node the span was written as (else of the nearest
        span above that was written as one)."""
        by_target: dict[str, list[tuple[Evaluation, SpanView]]] = {}
        for view in self.tree.nodes.values():
            read = view.info if isinstance(view.info, Read) else None
            if read is None or not read.evaluations:
                continue
            target: str | None = None
            current: SpanView | None = view
            seen: set[int] = set()
            while current is not None and current.span_id not in seen:
                seen.add(current.span_id)
                target = self.node_of.get(current.span_id)
                if target is not None:
                    break
                current = self.tree.nodes.get(current.parent_id)
            if target is None:
                self.result.problems.append(UNEVALUATED)
                continue
            by_target.setdefault(target, []).extend((e, view) for e in read.evaluations)
        for target, found in by_target.items():
            found.sort(key=lambda pair: (pair[0].time_ns, pair[1].span_id, pair[0].name, pair[0].label or "",
                                         pair[0].score if pair[0].score is not None else -1.0))
            for n, (evaluation, view) in enumerate(found, 1):
                self.writer.evaluation(target, n, evaluation, view)

    def _links(self) -> dict[Run, tuple[str | None, Run | None, SpanView | None]]:
        """What each run's Question derives from: the step it runs in, the hand-off step that
        delegated to it (with the run that handed off), the enclosing run's Question, or (a top run)
        the step of ours it runs in.  A hand-off names its target, else it is the next agent's."""
        handoffs = sorted(((t, r) for r in self.runs for t in r.tools
                           if self.tool_calls[t.span_id].handoff is not None), key=lambda pair: _key(pair[0]))
        links: dict[Run, tuple[str | None, Run | None, SpanView | None]] = {}
        for run in sorted(self.runs, key=lambda r: _key(r.top)):
            parent = run.parent
            if parent is None:
                links[run] = (self.tree.up[run.top.span_id].link, None, None)
            elif run.via and run.via in parent.number:
                links[run] = (analysis_iri(parent.uuid, parent.number[run.via]), None, None)
            else:
                links[run] = (question_iri(A.FLOW_DOC_RAG if parent.rag else A.FLOW_AGENT, parent.uuid),
                              None, None)
                if run in parent.members:
                    earlier = [(t, r) for t, r in handoffs if _key(t) <= _key(run.top) and r is not run]
                    named = [(t, r) for t, r in earlier if self.tool_calls[t.span_id].handoff == run.name]
                    unnamed = [(t, r) for t, r in earlier if not self.tool_calls[t.span_id].handoff]
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
        query = run.question(self.calls)
        if query is None and run.captured(self.calls):
            self.result.problems.append(NO_QUERY)
        derived, delegator, _ = link
        finished = run.top.end_ns > 0 and not run.top.error
        answer, source = run.answer(self.calls)
        extra: dict[str, Any] = {A.ITERATION: run.steps, **self._common(run)}
        if source is not None:
            extra.update(cost_attrs(source, self.calls[source.span_id].meta))
        ids, given = self._causes(run)
        if source is not None and finished and given.get(source.span_id):
            extra[A.INFORMED_BY] = [ids[i] for i in given[source.span_id] if i in ids]
        conclusion = (answer, answer is None) if finished or answer is not None else None
        # A run whose top span returned before its steps finished (an async workflow's handler) ends
        # with its last step: its Conclusion is never generated before what it derives from.
        last = max((s.end_ns for s in (*run.tools, *run.llms)), default=0)
        end_ns = last if run.top.end_ns and last > run.top.end_ns else None
        question = writer.session(run.top, A.FLOW_AGENT, run.uuid, query, derived, extra, end_ns=end_ns,
                                  answer=conclusion)
        end = conclusion_iri(run.uuid) if conclusion is not None else question
        for span_id in self.spans_of[run]:
            self.node_of[span_id] = end
        if source is not None and conclusion is not None:
            self.node_of[source.span_id] = end
        if self.strict and delegator is not None and delegator.name and run.name \
                and delegator.name != run.name:
            # PROV's delegation: the agent handed off to acted on behalf of the one handing off.
            writer.add(iri(software_agent_iri(run.name)), NT.actedOnBehalfOf,
                       iri(software_agent_iri(delegator.name)))
        matched = self.matched[run]
        common = self._common(run)
        for tool in run.tools:
            step = tool_step(tool, self.tool_calls[tool.span_id], matched.get(tool.span_id), self.calls,
                             targets.get(tool.span_id))
            if step.observation is None:
                self._result_from_input(run, step, tool, matched.get(tool.span_id))
            if THOUGHT in step.missing:
                self._thought_from_input(run, step, tool)
            number = run.number[tool.span_id]
            step.call_id = self._call_id(tool, matched.get(tool.span_id))
            if step.llm is not None:
                step.informed = tuple(ids[i] for i in given.get(step.llm.span_id, ()) if i in ids)
            writer.step(run.uuid, number, step, common)
            self.node_of[tool.span_id] = analysis_iri(run.uuid, number)
            if step.llm is not None:
                self.node_of.setdefault(step.llm.span_id, analysis_iri(run.uuid, number))
        for number, requested in run.requested:
            step = self._requested_step(run, requested)
            step.call_id = requested.request.id or None
            step.informed = tuple(ids[i] for i in given.get(requested.llm.span_id, ()) if i in ids)
            writer.step(run.uuid, number, step, common)
            self.node_of.setdefault(requested.llm.span_id, analysis_iri(run.uuid, number))
        # The transcript says nothing of when each step ran: each is at the run's end, when it was
        # recorded (no duration of its own).
        at = run.top._replace(start_ns=run.top.end_ns or run.top.start_ns)
        for number, said in enumerate(run.transcript, 1):
            request = said.request
            missing = tuple(prop for prop, value in ((ARGUMENTS, request.arguments),
                                                     (OBSERVATION, said.result)) if value is None)
            step = Analysis(at, request.name, said.thought, request.arguments, said.result, missing,
                            tool_span=False)
            writer.step(run.uuid, number, step, common)

    def _call_id(self, tool: SpanView, matched: tuple[SpanView, Request | None] | None) -> str | None:
        """A tool span's call id: its own, else the request's it was matched to by name."""
        request = matched[1] if matched else None
        return self.tool_calls[tool.span_id].call_id or (request.id if request else None) or None

    def _causes(self, run: Run) -> tuple[dict[str, str], dict[int, list[str]]]:
        """The run's causal edges by tool call id: each call id's step (its Analysis IRI), and for
        each of its model calls (in order) the ids its input gave it first (:func:`first_given`)."""
        ids: dict[str, str] = {}
        matched = self.matched[run]
        for tool in run.tools:
            call_id = self._call_id(tool, matched.get(tool.span_id))
            if call_id:
                ids.setdefault(call_id, analysis_iri(run.uuid, run.number[tool.span_id]))
        for number, requested in run.requested:
            if requested.request.id:
                ids.setdefault(requested.request.id, analysis_iri(run.uuid, number))
        return ids, first_given(((llm.span_id, self.calls[llm.span_id].results) for llm in run.llms), ids)

    def _result_from_input(self, run: Run, step: Analysis, tool: SpanView,
                           matched: tuple[SpanView, Request | None] | None) -> None:
        """A tool span that does not record its result: the result as the next model call was given it
        (its input's tool message, by tool call id)."""
        request = matched[1] if matched else None
        call_id = self.tool_calls[tool.span_id].call_id or (request.id if request else None)
        if not call_id:
            return
        for llm in run.llms:
            if _key(llm) < _key(tool):
                continue
            text = next((t for rid, t in self.calls[llm.span_id].results if rid == call_id), None)
            if text is not None:
                step.observation = text
                step.missing = tuple(m for m in step.missing if m != OBSERVATION)
                return

    def _thought_from_input(self, run: Run, step: Analysis, tool: SpanView) -> None:
        """A step whose requesting call's span does not say what the model said: what a model call's
        input repeats of the assistant message that requested it (by tool call id)."""
        call_id = self.tool_calls[tool.span_id].call_id
        if not call_id:
            return
        for llm in run.llms:
            for rid, thought in self.calls[llm.span_id].said:
                if rid == call_id:
                    step.thought = thought
                    step.missing = tuple(m for m in step.missing if m != THOUGHT)
                    return

    def _requested_step(self, run: Run, requested: Requested) -> Analysis:
        """A step only the model's messages show: its observation from a later call's input, by id,
        else by order (the next call's tool results, in the order of the requests)."""
        llm, request = requested.llm, requested.request
        call = self.calls[llm.span_id]
        later = [c for c in run.llms if _key(c) > _key(llm)]
        result: tuple[str, SpanView] | None = None
        if request.id:
            result = next(((text, c) for c in later for rid, text in self.calls[c.span_id].results
                           if rid == request.id), None)
        elif later:
            # No id on the request: the next call's tool results answer this call's requests in order
            # (all of them, or those without an id).
            results = self.calls[later[0].span_id].results
            mine = [r for _, r in run.requested if r.llm is llm]
            untagged = [text for rid, text in results if not rid]
            answers = untagged if len(untagged) == len(mine) else [text for _, text in results]
            position = mine.index(requested) if requested in mine else -1
            if 0 <= position < len(answers) and len(answers) == len(mine):
                result = (answers[position], later[0])
        missing = [] if call.output_captured else [THOUGHT]
        if result is None:
            missing.append(OBSERVATION)
        if request.arguments is None:
            missing.append(ARGUMENTS)
        return Analysis(llm, request.name, call.thought if call.output_captured else None, request.arguments,
                        result[0] if result else None, tuple(missing),
                        result[1].start_ns if result else llm.end_ns, llm=llm, call=call, tool_span=False)

    # -- retrieval ----------------------------------------------------------------------------------

    def _rag_run(self, run: Run) -> None:
        """A run that retrieves and does not act: a DocRAG session (its retrievals are the
        Exploration, its rerankings the Focus, the answer its Synthesis)."""
        retriever = run.retrievers[0]
        found = _joined([retrieval_of(r) for r in run.retrievers])
        query = first_plain_of(V.QUERY, [*(r.question for r in run.reads), found.query])
        parent = self.tree.up[run.top.span_id]
        derived = parent.link
        outer = self.run_of.get(parent.agent)
        if outer is not None and outer is not run:
            derived = (analysis_iri(outer.uuid, outer.number[parent.tool]) if parent.tool in outer.number
                       else question_iri(A.FLOW_AGENT, outer.uuid))
        self.writer.session(run.top, A.FLOW_DOC_RAG, run.uuid, query, derived, {})
        self._exploration(run.uuid, retriever, found)
        focused = self._focus(run.uuid, [r for r in run.rerankers if r.start_ns >= retriever.start_ns])
        answer: str | None = run.reads[0].answer
        source: SpanLike = run.top
        if not _plain(V.CONTENT, answer):
            after = [c for c in run.llms
                     if c.start_ns >= retriever.end_ns and _plain(V.CONTENT, llm_of(c).text)]
            if after:
                source, answer = after[0], llm_of(after[0]).text
        for span in run.retrievers:
            self.node_of[span.span_id] = exploration_iri(A.FLOW_DOC_RAG, run.uuid)
        self.node_of[run.top.span_id] = question_iri(A.FLOW_DOC_RAG, run.uuid)
        if answer is not None or run.top.end_ns > 0:
            self._synthesis(run.uuid, source, answer, focused)
            self.node_of[run.top.span_id] = synthesis_iri(A.FLOW_DOC_RAG, run.uuid)
            if source is not run.top:
                self.node_of[source.span_id] = synthesis_iri(A.FLOW_DOC_RAG, run.uuid)

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
                derived = question_iri(A.FLOW_DOC_RAG if run.rag else A.FLOW_AGENT, run.uuid)
        uuid = self._uuid(retriever)
        self.writer.session(retriever, A.FLOW_DOC_RAG, uuid, found.query, derived, {})
        self._exploration(uuid, retriever, found)
        self.node_of[retriever.span_id] = exploration_iri(A.FLOW_DOC_RAG, uuid)
        rerankers = [r for r in self.tree.at(Place.RERANKER) if self.tree.up[r.span_id].agent == up.agent
                     and self.tree.up[r.span_id].tool == up.tool and r.start_ns >= retriever.start_ns]
        focused = self._focus(uuid, rerankers) if tool is not None else False
        if tool is not None:
            call = self.tool_calls.get(tool.span_id, tool_of(tool))
            if call.result is not None or call.captured:
                self._synthesis(uuid, tool, call.result, focused)
        elif run is None and retriever.parent_id:
            # A pipeline of no convention (retrieve, then generate): the first model call beside the
            # retrieval, after it, that answered in text is its synthesis.
            after = [c for c in self.tree.at(Place.LLM) if c.parent_id == retriever.parent_id
                     and c.start_ns >= retriever.end_ns and _plain(V.CONTENT, llm_of(c).text)]
            if after:
                self._synthesis(uuid, after[0], llm_of(after[0]).text, focused)
                self.node_of[after[0].span_id] = synthesis_iri(A.FLOW_DOC_RAG, uuid)

    def _exploration(self, uuid: str, span: SpanLike, found: Retrieval) -> None:
        emitted = self.writer.emit(span, _chunks_step(A.STEP_EXPLORATION, uuid, span, found))
        if emitted and found.chunks is None:
            self.writer.not_captured(exploration_iri(A.FLOW_DOC_RAG, uuid), [CHUNKS])

    def _focus(self, uuid: str, rerankers: Sequence[SpanView]) -> bool:
        """The chunks the (last) reranking selected, with their scores: the session's Focus.  False
        when there is none."""
        if not rerankers:
            return False
        reranker = rerankers[-1]
        found = retrieval_of(reranker)
        if not self.writer.emit(reranker, _chunks_step(A.STEP_FOCUS, uuid, reranker, found)):
            return False
        if found.chunks is None:
            self.writer.not_captured(doc_focus_iri(uuid), [CHUNKS])
        return True

    def _synthesis(self, uuid: str, span: SpanLike, content: str | None, focused: bool = False) -> None:
        self.writer.synthesis(A.FLOW_DOC_RAG, uuid, span, content, content is None, focused)


def _chunks_step(step: str, uuid: str, span: SpanLike, found: Retrieval) -> dict[str, Any]:
    """The attributes of a DocRAG step that lists chunks (its Exploration, its Focus): the chunk ids
    and their scores, and the session's id when the span's trace id is not the session's."""
    attrs: dict[str, Any] = {A.FLOW: A.FLOW_DOC_RAG, A.STEP: step}
    if uuid != uuid_from_trace_id(span.trace_id):
        attrs[A.SESSION_ID] = uuid
    if found.chunks is not None:
        attrs[A.CHUNK_IDS] = list(found.chunks)
        if found.scores is not None:
            attrs[A.CHUNK_SCORES] = list(found.scores)
    return attrs


def first_plain_of(prop: str, values: Sequence[str | None]) -> str | None:
    """The first of ``values`` that is plain for ``prop``, else the first recorded."""
    return next((v for v in values if _plain(prop, v)), next((v for v in values if v is not None), None))


def _joined(found: Sequence[Retrieval]) -> Retrieval:
    """Several retrievals of one session as one Exploration: the first query, every chunk once."""
    if len(found) == 1:
        return found[0]
    chunks: list[str] = []
    scores: list[float | None] = []
    known = any(r.chunks is not None for r in found)
    for r in found:
        for n, chunk in enumerate(r.chunks or ()):
            if chunk not in chunks:
                chunks.append(chunk)
                scores.append(r.scores[n] if r.scores else None)
    query = first_plain_of(V.QUERY, [r.query for r in found])
    return Retrieval(query, tuple(chunks) if known else None,
                     tuple(scores) if any(s is not None for s in scores) else None)


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
