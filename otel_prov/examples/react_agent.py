"""A ReAct agent (think, act, observe) with three real tools, recorded with otel-prov.

Tools: ``calculator`` (arithmetic through a syntax-tree walker, never ``eval``), ``kg_lookup``
(a SPARQL lookup in the bundled RDF knowledge graph) and ``search_documents`` (a document-RAG
query over the bundled documents: it runs the doc-RAG flow, which the graph records as a
sub-trace of the agent's step).

The policy that decides each step is pluggable:

- :class:`OfflinePolicy` (the default): deterministic rules, no model, no network.  It reads the
  question for an entity the knowledge graph knows and for what is asked about it.
- :class:`ChatPolicy`: any OpenAI-compatible chat-completions endpoint, chosen by setting
  ``OTEL_PROV_EXAMPLE_MODEL`` (the model name), with ``OPENAI_BASE_URL`` (default
  ``https://api.openai.com/v1``) and ``OPENAI_API_KEY``.  Uses ``urllib`` only.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from opentelemetry.trace import TracerProvider

from .. import agent_session, settings
from .rag import doc_rag
from .tools import calculate, knowledge_graph

AGENT_QUESTION = "What is the population density of the capital of France?"

ENV_MODEL = settings.EXAMPLE_MODEL.env
ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
DEFAULT_BASE_URL = "https://api.openai.com/v1"


# -- tools ------------------------------------------------------------------------------------------


def calculator(expression: str) -> float | int:
    """Evaluate an arithmetic expression, e.g. ``2102650 / 105.4``."""
    return calculate(str(expression))


def kg_lookup(entity: str, relation: str) -> list[str]:
    """The values of a relation of an entity in the knowledge graph, both named by their labels."""
    return knowledge_graph().lookup(str(entity), str(relation))


def search_documents(query: str, tracer_provider: TracerProvider | None = None) -> dict[str, Any]:
    """A document-RAG query (recorded as a sub-trace of the step that runs it)."""
    result = doc_rag(str(query), tracer_provider=tracer_provider)
    return {"answer": result.answer, "chunks": [hit["id"] for hit in result.retrieved]}


TOOL_HELP = {
    "calculator": 'calculator {"expression": "2 * (3 + 4)"}: arithmetic',
    "kg_lookup": 'kg_lookup {"entity": "France", "relation": "capital"}: a fact from the knowledge '
                 "graph; relations: " + ", ".join(sorted(knowledge_graph().relations())),
    "search_documents": 'search_documents {"query": "..."}: search text documents about European '
                        "cities and rivers",
}


# -- policies ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Act:
    """Run ``tool`` with ``arguments``."""

    thought: str
    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Finish:
    """Stop with ``answer``."""

    thought: str
    answer: str


@dataclass(frozen=True)
class Turn:
    """One completed cycle, as policies see the history."""

    act: Act
    observation: str


class Policy(Protocol):
    name: str

    def decide(self, question: str, history: Sequence[Turn]) -> Act | Finish: ...


class PolicyError(RuntimeError):
    """The policy could not decide (an unreachable endpoint, an unusable reply)."""


class OfflinePolicy:
    """Deterministic rules, no model: find the entity the question names (or the capital of the
    country it names), look up what is asked (population, area, river; density is population over
    area, computed with the calculator), check the documents once, then answer from the facts."""

    name = "offline (deterministic rules, no language model)"

    def decide(self, question: str, history: Sequence[Turn]) -> Act | Finish:
        q = question.lower()
        kg = knowledge_graph()
        facts = {(t.act.arguments.get("entity"), t.act.arguments.get("relation")): _values(t.observation)
                 for t in history if t.act.tool == "kg_lookup"}
        entities = kg.entities_in(question)
        if not entities:
            return Finish("The knowledge graph knows nothing this question names.",
                          "I cannot answer this from my tools.")
        subject = kg.label(entities[0])
        described = subject
        if "capital" in q and not _is_city(subject):
            capital = facts.get((subject, "capital"))
            if capital is None:
                return Act(f"The question is about the capital of {subject}; I look it up first.",
                           "kg_lookup", {"entity": subject, "relation": "capital"})
            if not capital:
                return Finish(f"{subject} has no capital in the knowledge graph.", "I do not know.")
            described = f"{capital[0]} (the capital of {subject})"
            subject = capital[0]
        wanted = [rel for key, rel in (("density", "population"), ("density", "area in square kilometres"),
                                       ("population", "population"), ("area", "area in square kilometres"),
                                       ("river", "river")) if key in q]
        for relation in dict.fromkeys(wanted):
            if (subject, relation) not in facts:
                return Act(f"I need the {relation} of {subject}.", "kg_lookup",
                           {"entity": subject, "relation": relation})
        result: dict[str, str] = {rel: ", ".join(facts[(subject, rel)]) for rel in dict.fromkeys(wanted)}
        if "density" in q:
            calc = next((t for t in history if t.act.tool == "calculator"), None)
            if calc is None:
                expression = f"round({result['population']} / {result['area in square kilometres']}, 1)"
                return Act("Density is population divided by area; I compute it.", "calculator",
                           {"expression": expression})
            result["density"] = f"{calc.observation} inhabitants per square kilometre"
        if not any(t.act.tool == "search_documents" for t in history):
            topic = " ".join(w for w in ("population", "density", "river", "area") if w in q) or "facts"
            return Act(f"I check the documents for context on {subject}.", "search_documents",
                       {"query": f"How densely populated is {subject}?" if "density" in q
                        else f"{subject} {topic}"})
        docs = next(t for t in history if t.act.tool == "search_documents")
        context = _values(docs.observation)
        facts_text = "; ".join(f"{rel} {value}" for rel, value in result.items())
        answer = f"{described}: {facts_text}." if facts_text else f"{described}."
        cited = re.match(r".*?\[[^\]]+\]", context[0]) if context else None
        if cited and subject.lower() in cited.group(0).lower():  # only a passage about the subject
            answer += f" The documents add: {cited.group(0)}"
        return Finish("I have every fact the question asks for.", answer)


def _is_city(label: str) -> bool:
    return bool(knowledge_graph().lookup(label, "country"))


def _values(observation: str) -> list[str]:
    """The values a tool returned (a JSON list, or the ``answer`` of a JSON object)."""
    try:
        value = json.loads(observation)
    except ValueError:
        return [observation]
    if isinstance(value, list):
        return [str(v) for v in value]
    if isinstance(value, dict) and "answer" in value:
        return [str(value["answer"])]
    return [str(value)]


_SYSTEM_PROMPT = """You are a ReAct agent. Answer the user's question using these tools:
{tools}
Reply with one JSON object and nothing else, either
{{"thought": "...", "action": "<tool>", "arguments": {{...}}}}  to call a tool, or
{{"thought": "...", "answer": "..."}}  when you can answer."""


class ChatPolicy:
    """An OpenAI-compatible chat-completions endpoint decides each step (JSON replies)."""

    def __init__(self, model: str, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None,
                 timeout: float = 60.0) -> None:
        self.model, self.base_url, self.api_key, self.timeout = model, base_url.rstrip("/"), api_key, timeout
        self.name = f"chat model {model} at {self.base_url}"

    @classmethod
    def from_env(cls) -> ChatPolicy | None:
        model = settings.EXAMPLE_MODEL.get()
        if not model:
            return None
        return cls(model, os.environ.get(ENV_BASE_URL, "").strip() or DEFAULT_BASE_URL,
                   os.environ.get(ENV_API_KEY, "").strip() or None)

    def decide(self, question: str, history: Sequence[Turn]) -> Act | Finish:
        messages = [{"role": "system", "content": _SYSTEM_PROMPT.format(tools="\n".join(TOOL_HELP.values()))},
                    {"role": "user", "content": question}]
        for turn in history:
            messages.append({"role": "assistant", "content": json.dumps(
                {"thought": turn.act.thought, "action": turn.act.tool, "arguments": turn.act.arguments})})
            messages.append({"role": "user", "content": f"Observation: {turn.observation}"})
        return _parse_reply(self._complete(messages))

    def _complete(self, messages: list[dict[str, str]]) -> str:
        body = json.dumps({"model": self.model, "messages": messages, "temperature": 0}).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                reply = json.load(response)
            return str(reply["choices"][0]["message"]["content"])
        except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise PolicyError(f"chat endpoint {self.base_url}: {exc}") from exc


def _parse_reply(text: str) -> Act | Finish:
    match = re.search(r"\{.*\}", text, re.DOTALL)
    try:
        reply = json.loads(match.group(0)) if match else None
    except ValueError:
        reply = None
    if not isinstance(reply, dict):
        raise PolicyError(f"the model's reply is not a JSON object: {text[:200]!r}")
    thought = str(reply.get("thought", ""))
    if "answer" in reply:
        return Finish(thought, str(reply["answer"]))
    if reply.get("action") in TOOL_HELP:
        arguments = reply.get("arguments")
        return Act(thought, str(reply["action"]), arguments if isinstance(arguments, dict) else {})
    raise PolicyError(f"the model chose no known tool and gave no answer: {text[:200]!r}")


def default_policy() -> Policy:
    """The chat policy when ``OTEL_PROV_EXAMPLE_MODEL`` is set, else the offline policy."""
    return ChatPolicy.from_env() or OfflinePolicy()


# -- the agent ----------------------------------------------------------------------------------


@dataclass
class AgentResult:
    question: str
    answer: str | None
    """None when the agent stopped without answering (the trace shows it as unfinished)."""
    explain_id: str
    trace_id: str | None
    policy: str
    turns: list[Turn] = field(default_factory=list)


def run_agent(question: str = AGENT_QUESTION, *, policy: Policy | None = None,
              tracer_provider: TracerProvider | None = None, collection: str = "default",
              max_steps: int = 8,
              on_step: Callable[[int, Act | Finish, str | None], None] | None = None) -> AgentResult:
    """Run the ReAct loop: each think/act/observe cycle is an ``iteration`` span, each tool call
    an ``execute_tool`` span; the answer concludes the session.  A tool error is observed (the
    policy sees it); a policy error ends the session without a conclusion."""
    policy = policy or default_policy()
    tools: Mapping[str, Callable[..., Any]] = {
        "calculator": calculator,
        "kg_lookup": kg_lookup,
        "search_documents": lambda query: search_documents(query, tracer_provider),
    }
    turns: list[Turn] = []
    with agent_session(question, collection=collection, agent_name="react-agent-example",
                       tracer_provider=tracer_provider) as session:
        answer = None
        for _ in range(max_steps):
            with session.iteration() as step:
                decision = policy.decide(question, turns)
                step.thought(decision.thought)
                if isinstance(decision, Finish):  # a cycle that only thinks, then answers
                    answer = decision.answer
                    if on_step:
                        on_step(step.number, decision, None)
                    break
                observation = _run_tool(step, tools, decision)
                turns.append(Turn(decision, observation))
                if on_step:
                    on_step(step.number, decision, observation)
        if answer is not None:
            session.conclude(answer)
    return AgentResult(question, answer, session.explain_id, session.trace_id, policy.name, turns)


def _run_tool(step: Any, tools: Mapping[str, Callable[..., Any]], act: Act) -> str:
    func = tools.get(act.tool)
    if func is None:
        step.action(act.tool, act.arguments)
        text = f"error: unknown tool {act.tool!r}; known tools: {', '.join(tools)}"
        step.observation(text)
        return text
    try:
        result = step.call_tool(act.tool, func, act.arguments)
    except (ValueError, TypeError) as exc:  # a bad expression or arguments: observed, not fatal
        text = f"error: {exc}"
        step.observation(text)
        return text
    return json.dumps(result, ensure_ascii=False)
