"""The generic reading: the conventions every agent instrumentation writes in, read together, so that
a family with no dialect module of its own maps as well as the conventions let it.

- **What a span is** (:meth:`GenAIDialect.role`): ``gen_ai.operation.name`` (the OpenTelemetry GenAI
  conventions: ``invoke_agent`` and ``invoke_workflow``, ``execute_tool``, the model operations,
  ``retrieval``; ``unknown`` or absent: the span name says), else OpenInference's
  ``openinference.span.kind``, else OpenLLMetry's ``traceloop.span.kind`` (``workflow``, ``agent``,
  ``tool``) and ``llm.request.type``, else a vector database's query (``db.system`` naming one,
  ``db.vector.*``), else the span name (``invoke_agent X``, ``execute_tool X``, ``chat X``).
- **Messages, wherever a version of the conventions put them** (:meth:`GenAIDialect.messages`):
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON attributes, or on the
  ``gen_ai.client.inference.operation.details`` event), the per-message events of the older conventions
  (``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
  ``gen_ai.tool.message``, ``gen_ai.choice``: span events or log records), the deprecated
  ``gen_ai.prompt`` / ``gen_ai.completion`` (attributes or ``gen_ai.content.*`` events) and their indexed
  form ``gen_ai.prompt.{i}.*``, OpenInference's flattened ``llm.input_messages.{i}.message.*``; in any
  message format :mod:`.content` reads.  A value that is a redaction marker is kept as a message whose
  text is the marker (the writer records it as redacted).
- **Values, from every place that may hold them, the first that is the plain thing**
  (:func:`otel_prov.mapping.values.check`): a tool's arguments from ``gen_ai.tool.call.arguments``,
  ``input.value``, ``traceloop.entity.input``, its input event; its result from
  ``gen_ai.tool.call.result``, ``output.value``, ``traceloop.entity.output``, its output event; an agent's
  question and answer from its messages, else its input and output values.
- **A model call's metadata**: model, provider, input / output / reasoning tokens, finish reason, under
  each convention's keys.

The dialects of :mod:`.openinference`, :mod:`.traceloop` and :mod:`.openai_agents` add only what their
families do beyond the conventions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from .. import values as V
from ..flows import attr_text
from ..spans import SpanLike
from . import Agent, LLMCall, Meta, Retrieval, Role, ToolCall, TranscriptStep
from . import content as C

OPERATION_NAME = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
WORKFLOW_NAME = "gen_ai.workflow.name"
CONVERSATION_ID = "gen_ai.conversation.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
RETRIEVAL_QUERY = "gen_ai.retrieval.query.text"
RETRIEVAL_DOCUMENTS = "gen_ai.retrieval.documents"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
PROVIDER_NAME = "gen_ai.provider.name"
SYSTEM = "gen_ai.system"
"""The provider's older key."""
FINISH_REASONS = "gen_ai.response.finish_reasons"
FINISH_REASON = "gen_ai.response.finish_reason"
INPUT_TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt",
                "llm.usage.prompt_tokens")
OUTPUT_TOKENS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion",
                 "llm.usage.completion_tokens")
REASONING_TOKENS = ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.reasoning_tokens",
                    "llm.token_count.completion_details.reasoning", "llm.usage.reasoning_tokens")
MODEL_KEYS = (RESPONSE_MODEL, REQUEST_MODEL, "llm.response.model_name", "llm.model_name",
              "llm.request.model_name", "llm.response.model", "llm.request.model")
OI_FINISH_REASON = "llm.finish_reason"
MEMORY_QUERY = "gen_ai.memory.query.text"
MEMORY_RECORDS = "gen_ai.memory.records"
PROVIDER_KEYS = (PROVIDER_NAME, SYSTEM, "llm.provider", "llm.system")
# Deprecated, still emitted: the whole prompt / completion as JSON, or flattened per message.
PROMPT = "gen_ai.prompt"
COMPLETION = "gen_ai.completion"
PROMPT_PREFIX = "gen_ai.prompt."
COMPLETION_PREFIX = "gen_ai.completion."
EVENT_DETAILS = "gen_ai.client.inference.operation.details"
EVENT_PROMPT = "gen_ai.content.prompt"
EVENT_COMPLETION = "gen_ai.content.completion"
# The other conventions' names, read by the generic reading too.
OI_SPAN_KIND = "openinference.span.kind"
TL_SPAN_KIND = "traceloop.span.kind"
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"
OI_TOOL_NAME = "tool.name"
OI_TOOL_CALL_ID = "tool_call.id"
OI_AGENT_NAME = "agent.name"
EVENTS_ATTR = "events"
"""The GenAI event records of a call written into one attribute (Logfire's ``events``)."""
TOOL_ARGUMENT_KEYS = ("tool.arguments", "tool_call.function.arguments")
"""Beside a tool's name (``tool.name``), its arguments (OpenLLMetry's LlamaIndex instrumentation,
OpenInference's tool-call keys)."""
TASK_SUFFIXES = (".task.description", ".task.input", ".task.question", ".task.query")
"""A task an agent was given (``crewai.task.description``): what it was asked."""
OI_INPUT_PREFIX = "llm.input_messages."
OI_OUTPUT_PREFIX = "llm.output_messages."
OI_TOOLS_PREFIX = "llm.tools."
OI_DOCUMENTS_PREFIX = "retrieval.documents."
RERANK_INPUT_PREFIX = "reranker.input_documents."
RERANK_OUTPUT_PREFIX = "reranker.output_documents."
RERANK_QUERY = "reranker.query"
SESSION_ID = "session.id"
TL_ENTITY_INPUT = "traceloop.entity.input"
TL_ENTITY_OUTPUT = "traceloop.entity.output"
TL_ENTITY_NAME = "traceloop.entity.name"
TL_WORKFLOW_NAME = "traceloop.workflow.name"
LLM_REQUEST_TYPE = "llm.request.type"
DB_SYSTEM = ("db.system.name", "db.system")
DB_OPERATION = ("db.operation.name", "db.operation")
DB_QUERY_TEXT = ("db.query.text", "db.vector.query.text")
DB_VECTOR_PREFIX = "db.vector."
DB_RESULT_EVENT = "db.query.result"

OP_INVOKE_AGENT = "invoke_agent"
OP_INVOKE_WORKFLOW = "invoke_workflow"
OP_EXECUTE_TOOL = "execute_tool"
OP_RETRIEVAL = "retrieval"
RETRIEVAL_OPERATIONS = frozenset({OP_RETRIEVAL, "search_memory", "vector_db_retrieve"})
"""A retrieval of documents (or of memory records: their ``search_memory``)."""
OP_HANDOFF = "agent_handoff"
HANDOFF_OPERATIONS = frozenset({OP_HANDOFF, "handoff"})
"""A hand-off's operation: the GenAI conventions' ``agent_handoff``, OpenLLMetry's ``handoff``."""
"""A hand-off from one agent to another (the OpenAI Agents SDK's instrumentations)."""
HANDOFF_FROM = "gen_ai.handoff.from_agent"
HANDOFF_TO = "gen_ai.handoff.to_agent"
HANDOFF_PREFIX = "handoff to "
OP_UNKNOWN = "unknown"
"""Some instrumentations (openai-agents-v2) write this; the span name then says what the span is."""
LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "responses", "completion"})
_AGENT_OPERATIONS = (OP_INVOKE_AGENT, OP_INVOKE_WORKFLOW)
_OI_ROLES = {"AGENT": Role.AGENT, "CHAIN": Role.CHAIN, "TOOL": Role.TOOL, "LLM": Role.LLM,
             "RETRIEVER": Role.RETRIEVER, "RERANKER": Role.RERANKER}
_TL_ROLES = {"workflow": Role.AGENT, "agent": Role.AGENT, "tool": Role.TOOL, "handoff": Role.TOOL}
_LLM_REQUEST_TYPES = frozenset({"chat", "completion"})
VECTOR_DBS = frozenset({"chroma", "chromadb", "pinecone", "qdrant", "weaviate", "milvus", "lancedb", "marqo",
                        "pgvector", "faiss", "elasticsearch", "opensearch", "redis", "vespa", "turbopuffer",
                        "astra", "mongodb_atlas", "azure_ai_search", "vectorstore"})
_QUERY_OPERATIONS = ("query", "search", "similarity_search", "retrieve", "get_relevant_documents", "knn")

NOT_MESSAGES = "{key} is not a JSON list of messages"


def string_attr(span: SpanLike, key: str) -> str | None:
    value = span.attributes.get(key)
    return value if isinstance(value, str) else None


def text_attr(span: SpanLike, *keys: str) -> str | None:
    """The first of ``keys`` the span has, as text."""
    for key in keys:
        value = attr_text(span.attributes.get(key))
        if value is not None:
            return value
    return None


def int_attr(span: SpanLike, keys: Iterable[str]) -> int | None:
    """The first of ``keys`` the span has as a whole number (or its decimal text)."""
    attrs = span.attributes
    for key in keys:
        value = attrs.get(key)
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().isdigit():
            return int(value.strip())
    return None


def events_of(span: SpanLike) -> Sequence[tuple[str, Mapping[str, Any]]]:
    return getattr(span, "events", ())


def event_attr(span: SpanLike, event: str, key: str) -> Any:
    """``key`` of the first event named ``event`` the span carries (None if none)."""
    for name, attributes in events_of(span):
        if name == event and key in attributes:
            return attributes[key]
    return None


def first_plain(prop: str, candidates: Iterable[Any]) -> str | None:
    """Of the values found for ``prop`` (in order of preference), the first that is the plain thing,
    as the plain value (unwrapped: :func:`.values.check`); else the first found, as recorded (the
    writer then records it as not captured, or redacted); None if none."""
    found = None
    for value in candidates:
        if value is None:
            continue
        verdict = V.check(prop, value)
        if verdict.plain:
            return verdict.value
        if found is None:
            found = _text(value)
    return found


_CALL_SUFFIXES = (".tool", ".__call__", ".call", ".acall", ".run", ".arun", "._run", "._arun", ".invoke",
                  ".ainvoke", ".forward", ".aforward", ".execute", ".aexecute")
"""How instrumentations name a span after the thing called: ``{name}.tool``, ``{name}.__call__``."""


_CODE_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def code_path(name: str) -> bool:
    """Whether a name is a place in code (``FunctionAgent.workflow``, ``BaseWorkflowAgent.task``: a
    class's method, as decorators name their spans), not the name of an agent or tool."""
    return len(name) <= 200 and _CODE_PATH.fullmatch(name) is not None


def name_of(span_name: str, suffixes: Sequence[str]) -> str | None:
    """The name of what a span stands for, from its span name: without one of ``suffixes``, and only
    when what is left is a name, not a code location (``FunctionAgent.run`` names a class's method,
    not the agent)."""
    name = span_name
    for suffix in suffixes:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return name if name and "." not in name else None


# -- spans in no convention: the words of their names and keys ------------------------------------------

_CONVENTION_KEYS = ("gen_ai.", "llm.", "openinference.", "traceloop.", "input.", "output.", "tool.", "db.",
                    "http.", "url.", "rpc.", "messaging.", "otel_prov.")
_WORDS = re.compile(r"[a-z0-9]+")
_TOOL_WORDS = frozenset({"tool", "tools", "toolcall", "function"})
_LLM_WORDS = frozenset({"llm", "chat", "completion", "completions", "generate", "generation", "inference"})
_RUN_WORDS = frozenset({"run", "invoke", "execute", "call", "arun", "ainvoke"})
INPUT_SUFFIXES = (".input", ".inputs", ".arguments", ".args", ".request")
OUTPUT_SUFFIXES = (".output", ".outputs", ".result", ".response")
TOOL_NAME_SUFFIXES = (".tool.name", ".tool_name")
VENDOR_TOOL_INPUT = (".tool_call_args", ".tool_args", ".tool_input")
VENDOR_TOOL_OUTPUT = (".tool_response", ".tool_result", ".tool_output")
VENDOR_LLM_INPUT = (".llm_request", ".llm_input")
VENDOR_LLM_OUTPUT = (".llm_response", ".llm_output")
"""A vendor's own keys beside the conventions' (Google ADK's ``gcp.vertex.agent.*``): read last."""


_WHO = frozenset({SYSTEM, PROVIDER_NAME})
"""Keys that say whose model a span is about, and nothing of what it is."""
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)(?:![rsa])?(?::[^{}]{0,20})?\}")
"""A field of a message template (``Function: {name}``, ``Agent run: {name!r}``)."""
BARE_KEYS = frozenset({"input", "inputs", "output", "outputs", "arguments", "args", "result", "response",
                       "request"})
"""A framework's own keys for what a span took and gave, with no prefix (``input`` / ``output``)."""


FLAT_PREFIXES = (OI_INPUT_PREFIX, OI_OUTPUT_PREFIX, OI_TOOLS_PREFIX, PROMPT_PREFIX, COMPLETION_PREFIX)
"""Where the conventions flatten messages into keys (``llm.input_messages.0.message.role``)."""
_last_flat: tuple[Mapping[str, Any], C.FlatGroups] = ({}, {})


def flat_groups_of(span: SpanLike) -> C.FlatGroups:
    """:func:`.content.flat_groups` of a span's attributes for every one of :data:`FLAT_PREFIXES`, in
    one pass: the span read last keeps them (its readers ask for its input and its output)."""
    global _last_flat
    attrs, groups = _last_flat
    if attrs is not span.attributes:
        attrs = span.attributes
        groups = C.flat_groups(attrs, FLAT_PREFIXES)
        _last_flat = (attrs, groups)
    return groups


def unmarked(span: SpanLike) -> bool:
    """A span in no convention the generic reading knows (no GenAI, OpenInference, OpenLLMetry, HTTP,
    RPC, database or otel-prov key; a provider's name alone says nothing of what it is): a
    framework's own tracing."""
    return not any(key.startswith(_CONVENTION_KEYS) and key not in _WHO for key in span.attributes)


def name_words(span: SpanLike) -> list[str]:
    """The words of a span's name (a message template's fields left out: ``Agent run: {name!r}`` is
    "agent run")."""
    return _WORDS.findall(_PLACEHOLDER.sub(" ", span.name).lower())


def template_value(span: SpanLike) -> str | None:
    """The value a span name that is a message template with one field fills in (``Function:
    {name}`` with ``name = knowledge_query``: the tool's name), else None.  (The key is the one the
    name gives: found by a scan of the attributes, as a framework's own keys are.)"""
    fields = _PLACEHOLDER.findall(span.name)
    if len(fields) != 1:
        return None
    for key, value in span.attributes.items():
        if key == fields[0]:
            return value if isinstance(value, str) and value else None
    return None


_METHOD_CALL = re.compile(r"([A-Za-z_]\w*)\.([A-Za-z_]\w*)(?:\(\))?")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")


def tool_class(span: SpanLike) -> str | None:
    """The class a span named after a run method of a tool class stands for (``CalculatorTool.run()``,
    ``KnowledgeBaseTool.try_run()``: a framework that traces its own methods), else None: the last word
    of the class's name is a tool word, and it is more than that word (``Tool.run()``: the base class)."""
    found = _METHOD_CALL.fullmatch(span.name)
    if found is None:
        return None
    cls, method = found.group(1), _WORDS.findall(found.group(2).lower())
    words = [w.lower() for w in _CAMEL.findall(cls)]
    runs = bool(method) and method[-1] in _RUN_WORDS
    return cls if runs and len(words) >= 2 and words[-1] in _TOOL_WORDS else None


def own_key(key: str, suffixes: tuple[str, ...]) -> bool:
    """Whether a key is a framework's own for one of ``suffixes``: it ends with it, or is it bare."""
    return key.endswith(suffixes) or ("." + key in suffixes and key in BARE_KEYS)


_KIND_WORDS = frozenset({"kind", "type", "spantype"})
_MODEL_WORDS = _LLM_WORDS | {"model", "generator", "llms"}
_KINDS = {"agent": Role.AGENT, "tool": Role.TOOL, "retriever": Role.RETRIEVER, "retrieval": Role.RETRIEVER,
          "reranker": Role.RERANKER}


def kind_key(span: SpanLike) -> tuple[str, str] | None:
    """A key of a framework's own that says what kind of thing a span is (``mlflow.spanType``,
    ``langfuse.observation.type``, ``haystack.component.type``), and its value; None if none."""
    for key, value in span.attributes.items():
        if isinstance(value, str) and value and len(value) <= 100 and \
                "".join(_KEY_WORDS.findall(key.rsplit(".", 1)[-1])).lower() in _KIND_WORDS:
            return key, value
    return None


def kind_role(span: SpanLike) -> Role:
    """What a span in no convention says it is under a key of its own (:func:`kind_key`): ``AGENT``,
    ``TOOL``, ``RETRIEVER``, ``RERANKER`` (also as the last word of a class's name: ``Agent``,
    ``InMemoryBM25Retriever``); a model (``CHAT_MODEL``, ``generation``, ``OpenAIChatGenerator``) only
    when its output holds a model's message -- a word is not enough (``ChatPromptBuilder``)."""
    found = kind_key(span)
    if found is None:
        return Role.OTHER
    words = [w.lower() for w in _KEY_WORDS.findall(found[1])]
    if not words:
        return Role.OTHER
    role = _KINDS.get(words[-1])
    if role is not None:
        return role
    if set(words) & _MODEL_WORDS:
        for value in worded_attrs(span, OUTPUT_WORDS):
            messages = C.messages_of(value)
            if messages and any(m.role == C.ASSISTANT for m in messages):
                return Role.LLM
    return Role.OTHER


def kind_name(span: SpanLike) -> str | None:
    """The name beside a span's kind key (``haystack.component.name`` beside ``.type``)."""
    found = kind_key(span)
    if found is None:
        return None
    value = span.attributes.get(found[0].rsplit(".", 1)[0] + ".name") if "." in found[0] else None
    if not isinstance(value, str) or not value:
        return None
    value = json_text(value)
    return value if not code_path(value) else None


def unmarked_role(span: SpanLike) -> Role:
    """What a span in no convention is, by the last words of its name: ``....agent.run`` an agent;
    ``haystack.agent.step.tool`` a tool call and ``....llm`` a model call when it also records an input
    or output under a key of its own (``{prefix}.input`` / ``.output``; a tool: or its name); else
    nothing."""
    if not unmarked(span):
        return Role.OTHER
    declared = kind_role(span)
    if declared is not Role.OTHER:
        return declared
    words = name_words(span)
    if not words:
        return Role.OTHER
    last = words[-1]
    if last in _RUN_WORDS and len(words) >= 2 and words[-2] == "agent":
        return Role.AGENT
    keys = span.attributes.keys()
    recorded = any(own_key(k, (*INPUT_SUFFIXES, *OUTPUT_SUFFIXES)) for k in keys)
    if last in _TOOL_WORDS and (recorded or any(k.endswith(TOOL_NAME_SUFFIXES) for k in keys)
                                or template_value(span)):
        return Role.TOOL
    if last in _LLM_WORDS and recorded:
        return Role.LLM
    if tool_class(span) is not None:
        return Role.TOOL
    return Role.OTHER


NOT_RUNS = frozenset({"create_agent", "embeddings", "embed", "create_thread", "create_assistant"})
"""GenAI operations that name an agent without running it."""
_RETRIEVE_WORDS = frozenset({"retrieve", "retrieval", "retriever"})
_AGENT_WORDS = frozenset({"agent", "workflow"})


def operation_role(op: str) -> Role:
    """What an operation no convention defines is, by its words (any-agent's ``call_llm``, MCP's
    ``tools/call``, ``run_agent``): a model's word is a model call; a tool's with a word of running
    (``tools/call``, not ``list_tools``) a tool call; an agent's with one an agent's run; a word of
    retrieving a retrieval; else nothing."""
    words = set(_WORDS.findall(op.lower()))
    if words & _LLM_WORDS:
        return Role.LLM
    if words & _RETRIEVE_WORDS:
        return Role.RETRIEVER
    if words & _RUN_WORDS:
        if words & _TOOL_WORDS:
            return Role.TOOL
        if words & _AGENT_WORDS:
            return Role.AGENT
    return Role.OTHER


def other_role(span: SpanLike, op: str | None) -> Role:
    """What a span no convention's kind places is, by what it carries: an operation no convention
    defines on a span naming an agent is that agent's run (AG2's ``conversation``); a span naming a
    tool (``gen_ai.tool.name``, ``tool.name``) is a call of it; else nothing."""
    if op is not None and op != OP_UNKNOWN and op not in NOT_RUNS and op not in LLM_OPERATIONS and \
            string_attr(span, AGENT_NAME):
        return Role.AGENT
    if string_attr(span, TOOL_NAME) or string_attr(span, OI_TOOL_NAME):
        return Role.TOOL
    return Role.OTHER


def transcript_of(span: SpanLike) -> tuple[TranscriptStep, ...]:
    """The steps an agent span's own record of its conversation shows: the first of its output
    values (``output.value``, ``traceloop.entity.output``, any key ending ``output`` or ``outputs``:
    CrewAI's ``crewai.crew.tasks_output``) that holds a conversation with a tool call."""
    attrs = span.attributes
    for key, value in attrs.items():
        if isinstance(value, str) and key.endswith(("output", "outputs")) and "messages" in value:
            found = C.transcript(value)
            if found:
                return tuple(found)
    return ()


def suffix_attr(span: SpanLike, suffixes: tuple[str, ...], any_span: bool = False) -> Any:
    """The value of the first key of a span in no convention (``any_span``: of any span) that ends
    with one of ``suffixes`` (``haystack.agent.step.tool.input``, ``gcp.vertex.agent.tool_call_args``),
    else None."""
    if not any_span and not unmarked(span):
        return None
    for key, value in span.attributes.items():
        if own_key(key, suffixes):
            if isinstance(value, str) and value.strip() in ("{}", "[]", ""):
                return None  # a placeholder (Google ADK's with content capture off), not a value
            return value
    return None


INPUT_WORDS = frozenset({"input", "inputs", "args", "arguments", "params", "parameters", "prompt"})
OUTPUT_WORDS = frozenset({"output", "outputs", "result", "results", "response", "return", "returns"})
_SAID_WORDS = frozenset({"text", "content", "toolcalls", "calls", "messages", "message"})
"""What a model's output is made of, under its namespace (``ai.response.text``, ``ai.response.toolCalls``)."""
_KEY_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+|[0-9]+")


@lru_cache(maxsize=4096)
def last_word(key: str) -> str:
    """The last word of an attribute's key (``gen_ai.tool.args``: args; ``mlflow.spanInputs``:
    inputs)."""
    words = _KEY_WORDS.findall(key.rsplit(".", 1)[-1])
    return words[-1].lower() if words else ""


_READ_FIRST = frozenset({INPUT_VALUE, OUTPUT_VALUE, TOOL_CALL_ARGUMENTS, TOOL_CALL_RESULT})


def worded_attrs(span: SpanLike, words: frozenset[str]) -> list[Any]:
    """The values of every key of a span, in any namespace, whose last word is one of ``words``
    (``gen_ai.tool.args``, ``ai.toolCall.result``, ``mlflow.spanOutputs``): where a framework of no
    convention keeps what a call took or gave.  Read after the conventions' keys; each value still
    passes :func:`.values.check`."""
    found = []
    for key, value in span.attributes.items():
        if key in _READ_FIRST or last_word(key) not in words or any(p.isdigit() for p in key.split(".")):
            continue  # (``steps.0.output``: an item of a list flattened into keys, not the span's own)
        if isinstance(value, str) and value.strip() in ("{}", "[]", ""):
            continue  # a placeholder, not a value
        found.append(value)
    return found


def said_attrs(span: SpanLike) -> list[C.Message] | None:
    """A model call's output spread over keys of a response namespace of a framework's own: its text
    (``ai.response.text``) and its tool calls (``ai.response.toolCalls``, objects of their own), as one
    assistant message; None if there is none."""
    message = C.Message(C.ASSISTANT)
    for key, value in span.attributes.items():
        if key.startswith("gen_ai.") or not isinstance(value, str) or not value.strip():
            continue
        words = [w.lower() for w in _KEY_WORDS.findall(key)]
        if len(words) < 2 or not set(words[:-1]) & {"response", "output", "completion"}:
            continue
        last = "".join(words[-2:]) if words[-2:] == ["tool", "calls"] else words[-1]
        if last not in _SAID_WORDS and last != "toolcalls":
            continue
        found = C.messages_of(value)
        if found:
            for m in found:
                message.texts += m.texts
                message.calls += m.calls
        elif last in ("text", "content") and not V.looks_structured(value):
            message.texts.append(value)
    return [message] if message.texts or message.calls else None


def tool_name_attr(span: SpanLike) -> str | None:
    """A tool's name under a key of a framework's own that says so by its words (``ai.toolCall.name``,
    ``x.tool_name``, ``x.toolName``): its last word is ``name`` and a word before it is the tool's."""
    for key, value in span.attributes.items():
        if not isinstance(value, str) or not value or key.startswith("gen_ai.") or len(value) > 200:
            continue
        words = [w.lower() for w in _KEY_WORDS.findall(key)]
        if len(words) >= 2 and words[-1] == "name" and set(words[:-1]) & _TOOL_WORDS:
            return json_text(value)
    return None


def json_text(value: str) -> str:
    """A name written as JSON text (``'"knowledge_query"'``: MLflow writes every value so) as itself."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        if isinstance(decoded, str):
            return decoded
    return value


def marker_message(value: Any, role: str) -> list[C.Message] | None:
    """A messages attribute that is a redaction marker, as one message whose text is the marker."""
    if isinstance(value, str) and V.is_marker(value):
        return [C.Message(role, texts=[value])]
    return None


def io_text(value: Any, role: str) -> str | None:
    """The text an input or output value holds (:func:`.values.check`'s unwrapping), else the value
    as recorded (the writer records what is not plain as not captured)."""
    if value is None:
        return None
    prop = V.QUERY if role == C.USER else V.ANSWER
    verdict = V.check(prop, value)
    if verdict.plain:
        return verdict.value
    return attr_text(value)


def is_vector_query(span: SpanLike) -> bool:
    """A vector database's query span (OpenLLMetry's vector-database instrumentations, the OpenTelemetry
    database conventions): a ``db.system`` naming a vector store, or ``db.vector.*`` keys, with a query
    operation (or the query's result events)."""
    attrs = span.attributes
    system = next((attrs[k] for k in DB_SYSTEM if isinstance(attrs.get(k), str)), None)
    vector = (system is not None and system.lower() in VECTOR_DBS) or any(
        k.startswith(DB_VECTOR_PREFIX) for k in attrs)
    if not vector:
        return False
    operation = next((attrs[k] for k in DB_OPERATION if isinstance(attrs.get(k), str)), "") or span.name
    return any(op in operation.lower() for op in _QUERY_OPERATIONS) or any(
        name == DB_RESULT_EVENT for name, _ in events_of(span))


class GenAIDialect:
    name: str = "genai"
    keys: frozenset[str] = frozenset({
        OPERATION_NAME, AGENT_NAME, WORKFLOW_NAME, CONVERSATION_ID, TOOL_NAME, TOOL_CALL_ID,
        TOOL_CALL_ARGUMENTS, TOOL_CALL_RESULT, TOOL_DEFINITIONS, INPUT_MESSAGES, OUTPUT_MESSAGES,
        RETRIEVAL_QUERY, RETRIEVAL_DOCUMENTS, PROMPT, COMPLETION, INPUT_VALUE, OUTPUT_VALUE, OI_TOOL_NAME,
        OI_TOOL_CALL_ID, OI_AGENT_NAME, OI_SPAN_KIND, TL_SPAN_KIND, TL_ENTITY_INPUT, TL_ENTITY_OUTPUT,
        TL_ENTITY_NAME, TL_WORKFLOW_NAME, LLM_REQUEST_TYPE, SESSION_ID, RERANK_QUERY, REQUEST_MODEL,
        RESPONSE_MODEL, PROVIDER_NAME, SYSTEM, FINISH_REASONS, FINISH_REASON, OI_FINISH_REASON, MEMORY_QUERY,
        MEMORY_RECORDS, HANDOFF_TO, HANDOFF_FROM, "graph.node.id", EVENTS_ATTR, *TOOL_ARGUMENT_KEYS,
        *INPUT_TOKENS, *OUTPUT_TOKENS,
        *REASONING_TOKENS, *MODEL_KEYS, *PROVIDER_KEYS, *DB_SYSTEM, *DB_OPERATION, *DB_QUERY_TEXT,
    })
    prefixes: tuple[str, ...] = (PROMPT_PREFIX, COMPLETION_PREFIX, OI_INPUT_PREFIX, OI_OUTPUT_PREFIX,
                                 OI_TOOLS_PREFIX, OI_DOCUMENTS_PREFIX, RERANK_INPUT_PREFIX,
                                 RERANK_OUTPUT_PREFIX, DB_VECTOR_PREFIX)
    turns_below_agent: bool = True

    def claims(self, span: SpanLike) -> bool:
        return True

    def operation(self, span: SpanLike) -> str | None:
        op = string_attr(span, OPERATION_NAME)
        if op in (None, OP_UNKNOWN):
            for prefix in (*_AGENT_OPERATIONS, OP_EXECUTE_TOOL):
                if span.name.startswith(prefix):
                    return prefix
        return op

    def role(self, span: SpanLike) -> Role:
        role = self._role(span)
        return role if role is not Role.OTHER else other_role(span, self.operation(span))

    def _role(self, span: SpanLike) -> Role:
        op = self.operation(span)
        if op in _AGENT_OPERATIONS:
            return Role.AGENT
        if op == OP_EXECUTE_TOOL or op in HANDOFF_OPERATIONS:
            return Role.TOOL
        if op in LLM_OPERATIONS:
            return Role.LLM
        if op in RETRIEVAL_OPERATIONS:
            return Role.RETRIEVER
        if op is not None and op != OP_UNKNOWN and op not in NOT_RUNS:
            by_words = operation_role(op)
            if by_words is not Role.OTHER:
                return by_words
        if op is None or op == OP_UNKNOWN:
            kind = string_attr(span, OI_SPAN_KIND)
            if kind is not None:
                return _OI_ROLES.get(kind.upper(), Role.OTHER)
            tl_kind = (string_attr(span, TL_SPAN_KIND) or "").lower()
            if tl_kind in _TL_ROLES:
                return _TL_ROLES[tl_kind]
            if string_attr(span, LLM_REQUEST_TYPE) in _LLM_REQUEST_TYPES:
                return Role.LLM
            if is_vector_query(span):
                return Role.RETRIEVER
            if op is None and (string_attr(span, REQUEST_MODEL) or string_attr(span, SYSTEM)) and (
                    _WORDS.findall(span.name.lower())[-1:] in (["llm"], ["chat"], ["completion"])
                    or int_attr(span, (*INPUT_TOKENS, *OUTPUT_TOKENS)) is not None):
                # A model call named as one (ADK's ``call_llm``), or one that says what it used, its
                # operation unsaid.
                return Role.LLM
            if op is None:
                return unmarked_role(span)
        return Role.OTHER

    # -- messages -------------------------------------------------------------------------------

    def clean(self, messages: list[C.Message]) -> list[C.Message]:
        """A hook for instrumentations whose messages need fixing (see :mod:`.openai_agents`)."""
        return messages

    def messages(self, span: SpanLike, output: bool, problems: list[str],
                 groups: C.FlatGroups | None = None, model: bool = False) -> list[C.Message] | None:
        """The input (from its last user message on: see :func:`.content.messages_of`) or output
        messages, from wherever this version of the conventions put them; None when the span
        records none."""
        key, old, event, prefix, oi_prefix = (
            (OUTPUT_MESSAGES, COMPLETION, EVENT_COMPLETION, COMPLETION_PREFIX, OI_OUTPUT_PREFIX) if output
            else (INPUT_MESSAGES, PROMPT, EVENT_PROMPT, PROMPT_PREFIX, OI_INPUT_PREFIX))
        role = C.ASSISTANT if output else C.USER
        attrs = span.attributes
        for name, value in ((key, attrs.get(key)), (key, self._details(span, key)),
                            (old, attrs.get(old)), (old, event_attr(span, event, old))):
            if value is None:
                continue
            marked = marker_message(value, role)
            if marked is not None:
                return marked
            messages = C.messages_of(value, tail=not output)
            if messages is None:
                problems.append(NOT_MESSAGES.format(key=name))
                continue
            return self.clean(messages)
        from_events = C.event_messages(events_of(span), output)
        if from_events is None:
            recorded = attrs.get(EVENTS_ATTR)
            marked = marker_message(recorded, role) if recorded is not None else None
            if marked is not None:
                return marked  # the events' attribute redacted whole (Logfire's scrubbing)
            from_events = C.recorded_events(recorded, output)
        if from_events is not None:
            return self.clean(from_events if output else C.tail(from_events))
        groups = groups if groups is not None else flat_groups_of(span)
        for flat_prefix in (oi_prefix, prefix):
            flat = C.flat_messages(groups, flat_prefix, tail=not output)
            if flat is not None:
                return self.clean(flat)
        for own in (suffix_attr(span, OUTPUT_SUFFIXES if output else INPUT_SUFFIXES, True),
                    suffix_attr(span, VENDOR_LLM_OUTPUT if output else VENDOR_LLM_INPUT, True)):
            if own is not None:  # a framework's own keys: ``{prefix}.input``, ``{vendor}.llm_request``
                found = C.messages_of(own, tail=not output)
                if found:
                    return self.clean(found)
        for own in worded_attrs(span, OUTPUT_WORDS if output else INPUT_WORDS):
            found = C.messages_of(own, tail=not output)
            if found:
                return self.clean(found)
            if model and output and isinstance(own, str) and own.strip() and not V.looks_structured(own):
                return [C.Message(C.ASSISTANT, texts=[own])]  # a model call's text, as plain text
        if model and output:
            said = said_attrs(span)
            if said is not None:
                return said
        if model and not output:
            for key, value in span.attributes.items():  # ``ai.prompt.messages``: a request's messages
                words = [w.lower() for w in _KEY_WORDS.findall(key)]
                if not key.startswith("gen_ai.") and words[-1:] == ["messages"] and \
                        set(words[:-1]) & {"prompt", "input", "request"}:
                    found = C.messages_of(value, tail=True)
                    if found:
                        return self.clean(found)
        return None

    def _details(self, span: SpanLike, key: str) -> Any:
        """``key`` on the inference-details events (some instrumentations write one event per key;
        the input may be split over several: the last one holds the messages so far)."""
        found = None
        for name, attributes in events_of(span):
            if name == EVENT_DETAILS and key in attributes:
                found = attributes[key]
        return found

    # -- readers ----------------------------------------------------------------------------------

    def agent_name(self, span: SpanLike) -> str | None:
        for key in (AGENT_NAME, OI_AGENT_NAME, WORKFLOW_NAME, TL_WORKFLOW_NAME, TL_ENTITY_NAME):
            name = string_attr(span, key)
            if name and not (key == TL_ENTITY_NAME and code_path(name)):
                return name
        for prefix in _AGENT_OPERATIONS:
            if span.name.startswith(prefix):
                return span.name[len(prefix):].strip() or None
        if _PLACEHOLDER.search(span.name):
            return template_value(span)
        return kind_name(span) or name_of(span.name, (".agent", ".workflow"))

    def agent(self, span: SpanLike, problems: list[str]) -> Agent:
        attrs = span.attributes
        inputs = self.messages(span, False, problems)
        outputs = self.messages(span, True, problems)
        question = first_plain(V.QUERY, (C.last_text(inputs, C.USER) if inputs else None,
                                         attrs.get(INPUT_VALUE), attrs.get(TL_ENTITY_INPUT),
                                         suffix_attr(span, INPUT_SUFFIXES),
                                         suffix_attr(span, TASK_SUFFIXES, True),
                                         *(worded_attrs(span, INPUT_WORDS) if unmarked(span) else ())))
        answer_texts = C.final_texts(outputs) if outputs else []
        answer = first_plain(V.ANSWER, ("\n".join(answer_texts) if answer_texts else None,
                                        attrs.get(OUTPUT_VALUE), attrs.get(TL_ENTITY_OUTPUT),
                                        suffix_attr(span, OUTPUT_SUFFIXES),
                                        *(worded_attrs(span, OUTPUT_WORDS) if unmarked(span) else ())))
        captured = C.recorded(inputs) or C.recorded(outputs) or any(
            k in attrs for k in (INPUT_VALUE, OUTPUT_VALUE, TL_ENTITY_INPUT, TL_ENTITY_OUTPUT))
        return Agent(self.agent_name(span), question, answer, self.named(span), captured,
                     transcript_of(span))

    def named(self, span: SpanLike) -> bool:
        """Whether the span names an agent of its own: an attribute does, or the GenAI span name
        ``invoke_agent {name}`` (an unnamed agent span directly below an agent is one of its turns)."""
        if any(string_attr(span, k) for k in (AGENT_NAME, OI_AGENT_NAME, WORKFLOW_NAME, TL_WORKFLOW_NAME,
                                               "graph.node.id")):
            return True
        entity = string_attr(span, TL_ENTITY_NAME)
        if entity and not code_path(entity):
            return True
        return any(span.name.startswith(p + " ") for p in _AGENT_OPERATIONS)

    def tool_name(self, span: SpanLike) -> str:
        for key in (TOOL_NAME, OI_TOOL_NAME, TL_ENTITY_NAME):
            value = string_attr(span, key)
            if value:
                return value
        own = suffix_attr(span, TOOL_NAME_SUFFIXES)
        if isinstance(own, str) and own:
            return own
        named = tool_name_attr(span)
        if named:
            return named
        if span.name.startswith(OP_EXECUTE_TOOL):
            return span.name[len(OP_EXECUTE_TOOL):].strip() or span.name
        if _PLACEHOLDER.search(span.name):
            return template_value(span) or span.name
        return name_of(span.name, _CALL_SUFFIXES) or tool_class(span) or span.name

    def argument_candidates(self, span: SpanLike) -> list[Any]:
        """Where a tool's arguments may be, in order of preference."""
        attrs = span.attributes
        found = [attrs.get(TOOL_CALL_ARGUMENTS), *(attrs.get(k) for k in TOOL_ARGUMENT_KEYS),
                 attrs.get(INPUT_VALUE), attrs.get(TL_ENTITY_INPUT),
                 suffix_attr(span, INPUT_SUFFIXES), suffix_attr(span, VENDOR_TOOL_INPUT, True),
                 *worded_attrs(span, INPUT_WORDS)]
        for message in C.event_messages(events_of(span), False) or ():
            found += [m for m in message.texts] + [r for _, r in message.responses]
        return found

    def result_candidates(self, span: SpanLike) -> list[Any]:
        attrs = span.attributes
        found = [attrs.get(TOOL_CALL_RESULT), attrs.get(OUTPUT_VALUE), attrs.get(TL_ENTITY_OUTPUT),
                 suffix_attr(span, OUTPUT_SUFFIXES), suffix_attr(span, VENDOR_TOOL_OUTPUT, True),
                 *worded_attrs(span, OUTPUT_WORDS)]
        for message in C.event_messages(events_of(span), True) or ():
            found += message.texts + [r for _, r in message.responses]
        return found

    def handoff(self, span: SpanLike) -> str | None:
        """A hand-off's target ("" when the span does not name it), or None when the span is no
        hand-off: an ``agent_handoff`` operation (or OpenLLMetry's ``handoff`` kind) with
        ``gen_ai.handoff.to_agent``, or a tool span named ``handoff to {agent}`` with no tool name."""
        if string_attr(span, OPERATION_NAME) in HANDOFF_OPERATIONS or \
                string_attr(span, TL_SPAN_KIND) == "handoff":
            return string_attr(span, HANDOFF_TO) or ""
        if span.name.startswith(HANDOFF_PREFIX) and not (string_attr(span, TOOL_NAME)
                                                        or string_attr(span, OI_TOOL_NAME)):
            return span.name[len(HANDOFF_PREFIX):].strip() or string_attr(span, OUTPUT_VALUE) or ""
        return None

    def tool_call(self, span: SpanLike, problems: list[str]) -> ToolCall:
        target = self.handoff(span)
        if target is not None:
            return ToolCall("handoff", handoff=target, result=target or None)
        args = [a for a in self.argument_candidates(span) if a is not None]
        results = [r for r in self.result_candidates(span) if r is not None]
        arguments = first_plain(V.ARGUMENTS, args)
        bare = None
        if arguments is not None and not V.check(V.ARGUMENTS, arguments).plain:  # none is plain
            bare = next((a for a in args if isinstance(a, str) and not V.looks_structured(a)
                         and not V.is_marker(a)), None)
            if bare is not None:
                arguments = None
        result = first_plain(V.OBSERVATION, results)
        result_id = next((i for r in results if (i := C.result_text(r)[1])), None)
        call_id = string_attr(span, TOOL_CALL_ID) or string_attr(span, OI_TOOL_CALL_ID) or result_id
        # A parameter schema where arguments could be is no content (capture off keeps the schemas).
        content = [a for a in args if not V.is_schema(V.parse(a) if isinstance(a, str) else a)]
        return ToolCall(self.tool_name(span), arguments, bare, (), result, call_id, None,
                        bool(content or results))

    def llm_call(self, span: SpanLike, problems: list[str]) -> LLMCall:
        inputs = with_results(self.messages(span, False, problems, model=True),
                              span.attributes.get(INPUT_VALUE))
        outputs = self.messages(span, True, problems, model=True)
        offered = TOOL_DEFINITIONS in span.attributes or any(
            k.startswith(OI_TOOLS_PREFIX) for k in span.attributes)
        conversation = string_attr(span, CONVERSATION_ID) or string_attr(span, SESSION_ID)
        return llm_call_of(inputs, outputs, conversation, offered, meta_of(span, outputs))

    def retrieval(self, span: SpanLike, problems: list[str]) -> Retrieval:
        attrs = span.attributes
        query = first_plain(V.QUERY, (attrs.get(RETRIEVAL_QUERY), attrs.get(MEMORY_QUERY),
                                      attrs.get(RERANK_QUERY),
                                      attrs.get(INPUT_VALUE),
                                      attrs.get(TL_ENTITY_INPUT),
                                      *(attrs.get(k) for k in DB_QUERY_TEXT),
                                      *worded_attrs(span, INPUT_WORDS)))
        docs = with_ids(retrieved_documents(span), C.documents(attrs.get(OUTPUT_VALUE)))
        return Retrieval(query, chunk_ids(span, docs), scores_of(docs))


def _text(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else attr_text(value)


def retrieved_documents(span: SpanLike) -> list[Mapping[str, Any]] | None:
    """The documents a retrieval (or reranking) span returned, from the first place that lists them:
    the GenAI ``gen_ai.retrieval.documents``, OpenInference's ``retrieval.documents.{i}.document.*``
    (a reranker's ``reranker.output_documents``), a vector query's ``db.query.result`` events, the output
    value (a list of documents, ``{"documents": [...]}``, ``{"nodes": [...]}``)."""
    attrs = span.attributes
    for prefix in (RERANK_OUTPUT_PREFIX, OI_DOCUMENTS_PREFIX):
        flat = C.flat_documents(attrs, prefix)
        if flat is not None:
            return list(flat)
    for key in (RETRIEVAL_DOCUMENTS, MEMORY_RECORDS):
        listed = C.documents(attrs.get(key))
        if listed is not None:
            return listed
    results = [dict(attrs_) for name, attrs_ in events_of(span) if name == DB_RESULT_EVENT]
    if results:
        return [{k.removeprefix("db.query.result."): v for k, v in r.items()} for r in results]
    for value in (attrs.get(OUTPUT_VALUE), attrs.get(TL_ENTITY_OUTPUT), *worded_attrs(span, OUTPUT_WORDS)):
        listed = C.documents(value)
        if listed is not None:
            return listed
    return None


def with_results(inputs: list[C.Message] | None, value: Any) -> list[C.Message] | None:
    """A model call's input messages, completed from its input value (the messages as the framework
    passed them) when they end with tool messages whose content was left out (OpenInference's
    Haystack instrumentation flattens a tool message without its result)."""
    lost = inputs is not None and bool(inputs) and inputs[-1].role == C.TOOL and not inputs[-1].responses
    if not lost or value is None:
        return inputs
    found = C.messages_of(value, tail=True)
    if found and C.trailing_responses(found):
        return found
    return inputs


def with_ids(docs: list[Mapping[str, Any]] | None, listed: list[Mapping[str, Any]] | None
             ) -> list[Mapping[str, Any]] | None:
    """Documents without ids of their own, given those of the same documents listed elsewhere on the
    span (the LangChain instrumentation leaves the ids out of ``retrieval.documents`` but its output
    value lists them)."""
    if docs is None or listed is None or len(listed) != len(docs) or docs is listed:
        return docs
    return [d if C.own_id(d) or not C.own_id(o) else {**d, "id": o["id"]}
            for d, o in zip(docs, listed, strict=True)]


def llm_call_of(inputs: Sequence[C.Message] | None, outputs: Sequence[C.Message] | None,
                conversation: str | None, offered_tools: bool, meta: Meta | None = None) -> LLMCall:
    """An :class:`LLMCall` from its input and output messages."""
    texts, reasoning, requests = C.output_of(outputs) if outputs else ([], [], [])
    prior_texts, _, prior_requests = C.output_of(C.last_output(inputs)) if inputs else ([], [], [])
    results = C.trailing_responses(inputs) if inputs else []
    if any(rid is None for rid, _ in results) and len(results) == len(prior_requests) and all(
            r.id for r in prior_requests):
        # Tool results without their call's id answer the calls the assistant message before them
        # made, in order.
        results = [(rid or req.id, text) for (rid, text), req in zip(results, prior_requests, strict=True)]
    answered = {rid for rid, _ in results if rid}
    if answered:  # a call given a tool's result did not request that tool (stale attributes)
        requests = [r for r in requests if not r.id or r.id not in answered]
    protocol = C.text_protocol("\n".join(texts)) if texts else None
    if protocol is not None:  # the model answered in a text protocol: its parts, not its wording
        texts = [protocol.answer] if protocol.answer is not None and protocol.request is None else []
        reasoning = [*reasoning, protocol.thought] if protocol.thought else reasoning
        if protocol.request is not None and not requests:
            requests = [protocol.request]
    return LLMCall(
        text="\n".join(texts) if texts else None,
        reasoning="\n".join(reasoning) if reasoning else None,
        requests=tuple(requests),
        results=tuple(results),
        question=C.last_text(inputs, C.USER) if inputs else None,
        conversation=conversation,
        offered_tools=offered_tools,
        output_captured=C.recorded(outputs) and not any(m.elided for m in outputs or () if m.role != C.TOOL),
        prior_text="\n".join(prior_texts) if prior_texts else None,
        prior_requests=tuple(prior_requests),
        said=C.said(inputs) if inputs else (),
        meta=meta or Meta(),
    )


_NULLS = frozenset({"None", "none", "null", "undefined"})
"""A value written as the text of a null (``str(None)``): no value."""


def meta_of(span: SpanLike, outputs: Sequence[C.Message] | None = None) -> Meta:
    """A model call's model, provider, token counts and finish reason, under any convention's keys."""
    attrs = span.attributes
    reason = attrs.get(FINISH_REASONS, attrs.get(FINISH_REASON, attrs.get(OI_FINISH_REASON)))
    if isinstance(reason, (list, tuple)):
        reason = next((r for r in reason if isinstance(r, str)), None)
    if not isinstance(reason, str) or not reason:
        reason = next((m.finish_reason for m in outputs or () if m.finish_reason), None)
    if isinstance(reason, str) and "." in reason and reason.split(".")[0].istitle():
        reason = reason.rsplit(".", 1)[1].lower()  # an enum's repr (FinishReason.TOOL_CALLS)
    return Meta(
        model=next((v for k in MODEL_KEYS if (v := string_attr(span, k)) and v not in _NULLS), None),
        provider=next((v for k in PROVIDER_KEYS if (v := string_attr(span, k)) and v not in _NULLS), None),
        input_tokens=int_attr(span, INPUT_TOKENS),
        output_tokens=int_attr(span, OUTPUT_TOKENS),
        reasoning_tokens=int_attr(span, REASONING_TOKENS),
        finish_reason=reason if isinstance(reason, str) and reason else None,
    )


def chunk_ids(span: SpanLike, docs: Sequence[Any] | None) -> tuple[str, ...] | None:
    """Each document's id (its own, or one its metadata names), else ``{span id}/{position}``."""
    if docs is None:
        return None
    return tuple(C.document_id(d) or f"{span.span_id:016x}/{n}" for n, d in enumerate(docs, 1))


def scores_of(docs: Sequence[Any] | None) -> tuple[float | None, ...] | None:
    """Each document's score (``score``, ``relevance_score``; a distance is not a score), when any
    document has one."""
    if not docs:
        return None
    found: list[float | None] = []
    for doc in docs:
        value = None
        if isinstance(doc, Mapping):
            for key in ("score", "relevance_score", "document.score"):
                raw = doc.get(key)
                if isinstance(raw, (int, float)) and not isinstance(raw, bool):
                    value = float(raw)
                    break
                if isinstance(raw, str):
                    try:
                        value = float(raw)
                        break
                    except ValueError:
                        continue
        found.append(value)
    return tuple(found) if any(v is not None for v in found) else None


GENAI = GenAIDialect()
