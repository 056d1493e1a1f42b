"""The explainability chain of a scenario, as plain data: what the mapping made of its spans (read
back through the read model, as ``otel-prov show`` reads it), and what the story says it must be.

:func:`mapped` maps spans, reads every top-level session back and reduces each to a :class:`Chain`;
:func:`expected` gives, per scenario, the chain the story (:mod:`.story`) played, with what each
instrumentation is known not to record marked :data:`NOT_CAPTURED`.  The tests compare the two;
``benchmarks/genai_coverage.py`` compares them field by field for the coverage table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import LogRecord, SpanRecord
from otel_prov.model.iris import activity_iri
from otel_prov.model.quads import nquads
from otel_prov.read.model import Trace, TraceStep
from otel_prov.read.reader import TraceReader
from otel_prov.stores.oxigraph import OxigraphStore

from . import story

NOT_CAPTURED = "(not captured)"
"""A value the graph marks ``otelprov:notCaptured``."""
REDACTED = "(redacted)"
"""A value the graph marks ``otelprov:redacted`` (and not captured): the spans held a redaction marker."""


@dataclass(frozen=True)
class Step:
    """An Analysis: thought, action, arguments (parsed JSON), observation, and the sessions it ran."""

    thought: str | None
    action: str | None
    arguments: Any
    observation: str | None
    subtraces: tuple[Chain, ...] = ()


@dataclass(frozen=True)
class Chain:
    """A session: its question, agent, steps in order and answer (an agent's Conclusion, a
    DocRAG's Synthesis), its chunks (DocRAG), the sessions derived from it."""

    type: str
    question: str | None
    agent: str | None = None
    steps: tuple[Step, ...] = ()
    answer: str | None = None
    chunks: tuple[str, ...] | str | None = None
    subtraces: tuple[Chain, ...] = ()
    delegated: bool = False
    """A sub-agent whose Question derives from the step that handed off to it."""


def _value(step: TraceStep, name: str) -> str | None:
    if step.redacted(name):
        return REDACTED
    return step.value(name) if step.captured(name) else NOT_CAPTURED


def _arguments(step: TraceStep) -> Any:
    text = _value(step, "arguments")
    if text is None or text in (NOT_CAPTURED, REDACTED):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return ("not JSON", text)


def chain_of(trace: Trace, parent_step: str | None = None) -> Chain:
    steps: list[Step] = []
    answer: str | None = None
    chunks: tuple[str, ...] | str | None = None
    for s in trace.steps:
        if s.kind == "Analysis":
            steps.append(Step(_value(s, "thought"), _value(s, "action"), _arguments(s),
                              _value(s, "observation"), tuple(chain_of(t, s.iri) for t in s.subtraces)))
        elif s.kind in ("Conclusion", "Synthesis"):
            answer = _value(s, "answer" if s.kind == "Conclusion" else "content")
        elif s.kind == "Exploration":
            chunks = (NOT_CAPTURED if not s.captured("selectedChunk")
                      else tuple(sorted(s.values.get("selectedChunk", []))))
    question = (REDACTED if "query" in trace.redacted else NOT_CAPTURED if "query" in trace.not_captured
                else trace.question)
    return Chain(trace.type, question, trace.agent, tuple(steps), answer, chunks,
                 tuple(chain_of(t) for t in trace.subtraces),
                 delegated=parent_step is not None and trace.type == "Agent"
                 and trace.derived_from in (parent_step, activity_iri(parent_step)))


def mapped(records: Sequence[SpanRecord], profile: str, logs: Sequence[LogRecord] = ()) -> list[Chain]:
    """The top-level sessions the spans (and the GenAI events sent as log records) map to, read
    back, oldest first."""
    update = TraceMapper(profile).map(records, logs)
    store = OxigraphStore(None)
    try:
        store.add(nquads(update.add), len(update.add))
        reader = TraceReader(store)
        rows = sorted(reader.sessions(), key=lambda r: r.time)
        return [chain_of(reader.trace(row.id)[0]) for row in rows]
    finally:
        store.close()


# -- what the story played ---------------------------------------------------------------------------


@dataclass
class Variant:
    """How an instrumentation records the story (defaults: everything, as played)."""

    question: str | None = story.QUESTION
    agent: str | None = story.AGENT
    thoughts: tuple[str | None, str | None] = (story.THOUGHT_1, story.THOUGHT_2)
    arguments: bool = True
    observations: bool = True
    answer: str | None = story.FINAL_ANSWER
    tool_1_result: str = story.TOOL_1_RESULT
    tool_1_subtraces: tuple[Chain, ...] = ()
    handoff_thought: str | None = story.HANDOFF_THOUGHT
    handoff_action: str = "transfer_to_researcher"
    handoff_arguments: Any = field(default_factory=dict)
    session_question: str | None = story.QUESTION
    session_answer: str | None = story.FINAL_ANSWER
    actions: tuple[str, str] = (story.TOOL_1, story.TOOL_2)
    hidden: str = NOT_CAPTURED
    """What the arguments and observations show when they are not recorded (``arguments=False``...):
    not captured, or redacted."""


def react(v: Variant) -> Chain:
    """The researcher: two tool calls and the answer."""
    args = (story.TOOL_1_ARGS, story.TOOL_2_ARGS) if v.arguments else (v.hidden, v.hidden)
    results = (v.tool_1_result, story.TOOL_2_RESULT) if v.observations else (v.hidden, v.hidden)
    return Chain("Agent", v.question, v.agent, (
        Step(v.thoughts[0], v.actions[0], args[0], results[0], v.tool_1_subtraces),
        Step(v.thoughts[1], v.actions[1], args[1], results[1]),
    ), v.answer)


def handoff(v: Variant) -> Chain:
    """The Agents SDK run: the triage agent (the session's own) hands off to the researcher."""
    researcher = react(v)
    researcher = Chain(researcher.type, researcher.question, researcher.agent, researcher.steps,
                       researcher.answer, delegated=True)
    return Chain("Agent", v.session_question, story.TRIAGE, (
        Step(v.handoff_thought, v.handoff_action, v.handoff_arguments, story.AGENT, (researcher,)),
    ), v.session_answer)


def docrag(answer: str | None, chunks: tuple[str, ...] = tuple(sorted(story.RETRIEVED)),
           question: str | None = story.RAG_QUERY) -> Chain:
    return Chain("DocRAG", question, None, (), answer, chunks)


def expected(name: str) -> list[Chain]:
    """The chains a scenario must map to (its top-level sessions, oldest first)."""
    nc = NOT_CAPTURED
    code_thoughts = (f"Thought: {story.THOUGHT_1}\n", f"Thought: {story.THOUGHT_2}\n")
    known: dict[str, list[Chain]] = {
        # A bare loop: one conversation across three traces; the agent has no name.
        "openai_v2_chat": [react(Variant(agent=None))],
        # Content off (the default): nothing links the three calls, nothing to map.
        "openai_v2_chat_no_content": [],
        "util_genai_agent": [react(Variant())],
        # The function call is dropped from the Responses output: the hand-off step is named after
        # its target, without arguments.
        "agents_otel_responses": [handoff(Variant(handoff_action="handoff to researcher",
                                                  handoff_arguments=None))],
        "agents_otel_chat": [handoff(Variant())],
        "agents_otel_responses_reasoning_only": [handoff(Variant())],
        "agents_otel_responses_no_content": [handoff(Variant(
            question=nc, thoughts=(nc, nc), arguments=False, observations=False, answer=nc,
            handoff_thought=nc, handoff_action="handoff to researcher", handoff_arguments=None,
            session_question=nc, session_answer=nc))],
        # A tool call without arguments ("{}") has no arguments attribute in OpenInference.
        "agents_openinference_responses": [handoff(Variant(handoff_arguments=None))],
        "agents_openinference_chat": [handoff(Variant(handoff_arguments=None))],
        "agents_openinference_responses_genai": [handoff(Variant(handoff_arguments=None))],
        "agents_openinference_responses_reasoning_only": [handoff(Variant(handoff_arguments=None))],
        "agents_traceloop_responses": [handoff(Variant())],
        # Chat Completions: no output messages at all; the outputs are read back from the next
        # call's input, but the last call's (the final answer) is nowhere.
        "agents_traceloop_chat": [handoff(Variant(answer=nc, session_answer=nc))],
        # Reasoning items are dropped: the thought is simply not there (the output was recorded).
        "agents_traceloop_responses_reasoning_only": [handoff(Variant(thoughts=(None, None),
                                                                      handoff_thought=None))],
        "langgraph_prebuilt": [react(Variant(agent="LangGraph"))],
        "langgraph_prebuilt_genai": [react(Variant(agent="LangGraph"))],
        "langchain_create_agent": [react(Variant())],
        "langchain_create_agent_genai": [react(Variant())],
        "langchain_create_agent_reasoning": [react(Variant())],
        "smolagents_toolcalling": [react(Variant())],
        "smolagents_toolcalling_genai": [react(Variant())],
        # A Model subclass gets no LLM span: the thoughts are not in the trace.
        "smolagents_toolcalling_subclass": [react(Variant(thoughts=(nc, nc)))],
        # CodeAgent: the thought is the model's whole text, "Thought: ..." and the code.
        "smolagents_code": [react(Variant(thoughts=code_thoughts))],
        "rag_chain": [docrag(story.RAG_ANSWER)],
        "rag_chain_genai": [docrag(story.RAG_ANSWER)],
        "rag_agent": [react(Variant(tool_1_result=story.RAG_ANSWER,
                                    tool_1_subtraces=(docrag(story.RAG_ANSWER),)))],
    }
    for base, on in FRAMEWORKS.items():
        known[base] = [react(on)] if on is not None else [docrag(story.RAG_ANSWER)]
        known[f"{base}_no_content"] = [_hidden(base, on, NOT_CAPTURED)]
        known[f"{base}_redacted"] = [_hidden(base, on, REDACTED)]
    known.update({
        # Strands' latest conventions (the inference-details events), Pydantic AI's version 6 (tool
        # results as "tool" messages): the same chain.
        "strands_agent_latest": known["strands_agent"],
        "pydantic_ai_agent_v6": known["pydantic_ai_agent"],
        "llamaindex_rag_genai": known["llamaindex_rag"],
        # Without the root span, nothing names the agent: the model calls and tool spans of the loop are
        # one trace each, tied into one conversation by their tool-call ids.
        "mcp_agent_no_root": [react(Variant(agent=None))],
        # The content in log records rather than on the spans: the same chains.
        "openai_v2_chat_events": known["openai_v2_chat"],
        "util_genai_agent_events": known["util_genai_agent"],
        # (OpenLLMetry's Anthropic events name the agent span, each within the time of its model call.)
        "anthropic_agent_events": known["anthropic_agent"],
        "logfire_agents_chat": known["logfire_agents"],
        # AG2's switch is for its model calls alone: its agent and tool spans keep their content.
        "ag2_agent_no_content": [react(Variant(thoughts=(nc, nc)))],
        # OpenLLMetry's CrewAI spans record the crew's task and output whatever the switch says; with the
        # model's messages gone, the steps are those of the crew's own transcript (its tasks' output
        # repr), where CrewAI keeps no text beside a tool call.
        "crewai_openllmetry_no_content": [react(Variant(thoughts=(None, None)))],
        # OpenLLMetry's LlamaIndex tool spans keep their arguments (tool.arguments) with content off.
        "llamaindex_openllmetry_no_content": [react(Variant(question=nc, agent=None, thoughts=(nc, nc),
                                                            observations=False, answer=nc))],
    })
    return known[name]


FRAMEWORKS: dict[str, Variant | None] = {
    # How each framework of tests/interop/envs records the story with content on (None: the RAG story).
    "pydantic_ai_agent": Variant(),
    "strands_agent": Variant(),
    # Semantic Kernel drops the model's text when it requests tools (its choice events carry the tool
    # calls alone), and names its functions after their plugin, as the model calls them.
    "semantic_kernel_agent": Variant(thoughts=(None, None), actions=(f"research-{story.TOOL_1}",
                                                                      f"research-{story.TOOL_2}")),
    "langchain_openllmetry_agent": Variant(),
    "mcp_agent": Variant(),
    "openlit_agent": Variant(),
    # No span names the agent (LlamaIndex: only reprs of its events; DSPy has no agent name).
    "llamaindex_agent": Variant(agent=None),
    "dspy_react": Variant(agent=None),
    "crewai_agent": Variant(),
    "beeai_agent": Variant(),
    # AutoGen's own spans record no content at all, whatever the mode (its content goes to its own
    # event logger, in no convention).
    "autogen_agent": Variant(question=NOT_CAPTURED, thoughts=(NOT_CAPTURED, NOT_CAPTURED), arguments=False,
                             observations=False, answer=NOT_CAPTURED),
    "llamaindex_rag": None,
    # AG2 records the model's tool calls without the text that came with them.
    "ag2_agent": Variant(thoughts=(None, None)),
    "logfire_agents": Variant(),
    "anthropic_agent": Variant(),
    "crewai_openllmetry": Variant(),
    # No span names the agent (only a class name: BaseWorkflowAgent).
    "llamaindex_openllmetry": Variant(agent=None),
}


def _hidden(base: str, on: Variant | None, mark: str) -> Chain:
    """A framework's chain with content capture off (``mark``: not captured) or redacted (the
    instrumentation's own hiding, or a redacting exporter: ``(redacted)``)."""
    if on is None:
        return docrag(mark, chunks=tuple(sorted(story.RETRIEVED)), question=mark)
    if base == "autogen_agent":
        return react(on)
    if base in ("openlit_agent", "anthropic_agent", "crewai_openllmetry"):
        # OpenLIT's MCP tool spans name no tool, the Anthropic loop's and OpenLLMetry's CrewAI tools are
        # not traced: the steps are only in the model's messages, which are gone (off) or a marker
        # (redacted).
        return Chain("Agent", mark, story.AGENT, (), mark)
    question = mark
    if base == "crewai_agent" and mark == REDACTED:
        question = story.QUESTION  # OpenInference's hiding leaves the crew's tasks (crew_tasks) as they are
    return react(Variant(question=question, agent=on.agent, thoughts=(mark, mark), arguments=False,
                         observations=False, answer=mark, actions=on.actions, hidden=mark))


def thought_matches(expected: str | None, actual: str | None) -> bool:
    """A CodeAgent's thought is its whole text: the expected text is its start."""
    if expected is None or actual is None or expected == actual:
        return expected == actual
    return expected.endswith("\n") and actual.startswith(expected)


def normalized(chains: Sequence[Chain], reference: Sequence[Chain]) -> list[Chain]:
    """``chains`` with each thought that :func:`thought_matches` its reference replaced by it
    (so that a CodeAgent's code does not have to be spelled out)."""
    out = []
    for chain, ref in zip(chains, reference, strict=False):
        steps = []
        for step, ref_step in zip(chain.steps, ref.steps + (None,) * len(chain.steps), strict=False):
            thought = step.thought
            if ref_step is not None and thought_matches(ref_step.thought, thought):
                thought = ref_step.thought
            subs = normalized(step.subtraces, ref_step.subtraces) if ref_step else list(step.subtraces)
            steps.append(Step(thought, step.action, step.arguments, step.observation, tuple(subs)))
        out.append(Chain(chain.type, chain.question, chain.agent, tuple(steps), chain.answer, chain.chunks,
                         tuple(normalized(chain.subtraces, ref.subtraces)), chain.delegated))
    out += chains[len(reference):]
    return out


# -- field by field: what a mapping got of what was played --------------------------------------------

FIELDS = ("question", "thought", "action", "arguments", "observation", "answer", "retrieval", "agent name",
          "delegation")
UNKNOWN = (None, NOT_CAPTURED, REDACTED, False)
"""What a field shows when it holds no value (absent, marked not captured or redacted)."""


def played(name: str) -> list[Chain]:
    """The run a scenario played, every value as the story has it (what a perfect mapping of a
    perfect instrumentation gives)."""
    base = name.removesuffix("_no_content").removesuffix("_redacted")
    if name.startswith("agents_"):
        return [handoff(Variant())]
    if name.startswith(("rag_chain", "llamaindex_rag")):
        return [docrag(story.RAG_ANSWER)]
    if name == "rag_agent":
        return [react(Variant(tool_1_result=story.RAG_ANSWER, tool_1_subtraces=(docrag(story.RAG_ANSWER),)))]
    if name.startswith("openai_v2_chat") or name == "mcp_agent_no_root":
        return [react(Variant(agent=None))]  # a bare loop: no agent, no name
    if name.startswith("langgraph_prebuilt"):
        return [react(Variant(agent="LangGraph"))]
    if name == "smolagents_code":
        return [react(Variant(thoughts=(f"Thought: {story.THOUGHT_1}\n", f"Thought: {story.THOUGHT_2}\n")))]
    if base == "semantic_kernel_agent":
        return [react(Variant(actions=(f"research-{story.TOOL_1}", f"research-{story.TOOL_2}")))]
    if base == "dspy_react":
        return [react(Variant(agent=None))]  # DSPy has no agent names
    return [react(Variant())]


def _agents(chains: Sequence[Chain]) -> list[Chain]:
    found = []
    for chain in chains:
        found.append(chain)
        for step in chain.steps:
            found += _agents(step.subtraces)
        found += _agents(chain.subtraces)
    return found


def field_values(chains: Sequence[Chain]) -> dict[str, list[Any]]:
    """Every value of each field, in chain order."""
    out: dict[str, list[Any]] = {f: [] for f in FIELDS}
    for chain in _agents(chains):
        if chain.type == "DocRAG":
            out["retrieval"].append((chain.question, chain.chunks, chain.answer))
            continue
        out["question"].append(chain.question)
        out["answer"].append(chain.answer)
        out["agent name"].append(chain.agent)
        for step in chain.steps:
            out["thought"].append(step.thought)
            out["action"].append(step.action)
            out["arguments"].append(step.arguments)
            out["observation"].append(step.observation)
            out["delegation"] += [sub.delegated for sub in step.subtraces if sub.type == "Agent"]
    return out


def same(field: str, want: Any, got: Any) -> bool:
    """Whether ``got`` is the value ``want`` (a CodeAgent's thought starts with it; a hand-off named
    after its target; no arguments written as ``{}`` or not at all)."""
    if field == "thought":
        return thought_matches(want, got)
    if field == "action" and isinstance(want, str) and want.startswith("transfer_to_"):
        return got in (want, "handoff to " + want.removeprefix("transfer_to_"))
    if field == "arguments" and want == {}:
        return got in ({}, None)
    return bool(want == got)


def unknown(field: str, got: Any) -> bool:
    """Whether a field holds no value (for a retrieval: each of its parts)."""
    if field == "retrieval" and isinstance(got, tuple):
        return all(g in UNKNOWN for g in got)
    return got in UNKNOWN


def wrong(field: str, want: Any, got: Any) -> bool:
    """A value that is there and is not the one played: never acceptable."""
    if field == "retrieval" and isinstance(want, tuple) and isinstance(got, tuple):
        return any(not unknown("", g) and g != w for w, g in zip(want, got, strict=True))
    return not same(field, want, got) and not unknown(field, got)


@dataclass
class Score:
    """Of the values a run played, how many a mapping got (``right``), of how many (``total``), and
    the wrong ones (``(field, played, got)``)."""

    right: int = 0
    total: int = 0
    wrongs: list[tuple[str, Any, Any]] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.right / self.total if self.total else 1.0


def score(want: Sequence[Chain], got: Sequence[Chain]) -> Score:
    """Every played value compared with the mapping's: a chain with a different shape (steps, sessions)
    counts each value of the longer side once."""
    result = Score()
    wanted, found = field_values(want), field_values(got)
    for name in FIELDS:
        w, g = wanted[name], found[name]
        for i in range(max(len(w), len(g))):
            if i >= len(w):
                if not unknown(name, g[i]):
                    result.wrongs.append((name, None, g[i]))  # a value nothing was played for
                continue
            result.total += 1
            if i >= len(g):
                continue
            if same(name, w[i], g[i]):
                result.right += 1
            elif wrong(name, w[i], g[i]):
                result.wrongs.append((name, w[i], g[i]))
    return result
