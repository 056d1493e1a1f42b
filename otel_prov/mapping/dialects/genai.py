"""The OpenTelemetry GenAI semantic conventions (``gen_ai.*``): ``invoke_agent`` / ``invoke_workflow``,
``execute_tool``, ``chat`` (and the other model operations) and ``retrieval`` spans.

The fallback dialect: it claims every span no more specific dialect claims; a span is what
``gen_ai.operation.name`` says or, when that is absent or ``unknown``, what its name starts with.
Messages are read where each version of the conventions put them: ``gen_ai.input.messages`` /
``gen_ai.output.messages`` (JSON, current), the same keys on the
``gen_ai.client.inference.operation.details`` event, the deprecated ``gen_ai.prompt`` /
``gen_ai.completion`` (attributes, or the ``gen_ai.content.prompt`` / ``gen_ai.content.completion``
events) and their indexed form ``gen_ai.prompt.{i}.*`` / ``gen_ai.completion.{i}.*``.
``input.value`` / ``output.value`` / ``tool.name`` are read as fallbacks (spans converted from other
conventions carry them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..flows import attr_text
from ..spans import SpanLike
from . import Agent, LLMCall, Retrieval, Role, ToolCall
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
# Deprecated, still emitted: the whole prompt / completion as JSON, or flattened per message.
PROMPT = "gen_ai.prompt"
COMPLETION = "gen_ai.completion"
PROMPT_PREFIX = "gen_ai.prompt."
COMPLETION_PREFIX = "gen_ai.completion."
EVENT_DETAILS = "gen_ai.client.inference.operation.details"
EVENT_PROMPT = "gen_ai.content.prompt"
EVENT_COMPLETION = "gen_ai.content.completion"
# Read as fallbacks (OpenInference's names).
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"
OI_TOOL_NAME = "tool.name"

OP_INVOKE_AGENT = "invoke_agent"
OP_INVOKE_WORKFLOW = "invoke_workflow"
OP_EXECUTE_TOOL = "execute_tool"
OP_RETRIEVAL = "retrieval"
OP_UNKNOWN = "unknown"
"""Some instrumentations (openai-agents-v2) write this; the span name then says what the span is."""
LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_AGENT_OPERATIONS = (OP_INVOKE_AGENT, OP_INVOKE_WORKFLOW)

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


def event_attr(span: SpanLike, event: str, key: str) -> Any:
    """``key`` of the first event named ``event`` the span carries (None if none)."""
    for name, attributes in getattr(span, "events", ()):
        if name == event and key in attributes:
            return attributes[key]
    return None


def io_text(value: Any, role: str) -> str | None:
    """The text of an ``input.value`` / ``output.value``: messages (a list, or LangChain's
    ``{"messages": [...]}``) give the last ``role`` message's text; ``{"task": ...}`` (smolagents),
    ``{"input": ...}`` / ``{"question": ...}`` / ``{"query": ...}`` / ``{"output": ...}`` /
    ``{"answer": ...}`` their text; anything else is taken as it is."""
    parsed = C.loads(value)
    if parsed is None:
        return attr_text(value)
    if isinstance(parsed, dict):
        for key in ("task", "input", "question", "query", "output", "answer", "final_output"):
            if isinstance(parsed.get(key), str):
                return str(parsed[key])
    messages = C.messages_of(parsed)
    if messages:
        text = C.last_text(messages, role)
        if text is not None:
            return text
    return attr_text(value)


class GenAIDialect:
    name: str = "genai"
    keys: frozenset[str] = frozenset({
        OPERATION_NAME, AGENT_NAME, WORKFLOW_NAME, CONVERSATION_ID, TOOL_NAME, TOOL_CALL_ID,
        TOOL_CALL_ARGUMENTS, TOOL_CALL_RESULT, TOOL_DEFINITIONS, INPUT_MESSAGES, OUTPUT_MESSAGES,
        RETRIEVAL_QUERY, RETRIEVAL_DOCUMENTS, PROMPT, COMPLETION, INPUT_VALUE, OUTPUT_VALUE, OI_TOOL_NAME,
    })
    prefixes: tuple[str, ...] = (PROMPT_PREFIX, COMPLETION_PREFIX)
    turns_below_agent: bool = False

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
        op = self.operation(span)
        if op in _AGENT_OPERATIONS or span.name.startswith(OP_INVOKE_AGENT):
            return Role.AGENT
        if op == OP_EXECUTE_TOOL:
            return Role.TOOL
        if op in LLM_OPERATIONS:
            return Role.LLM
        if op == OP_RETRIEVAL:
            return Role.RETRIEVER
        return Role.OTHER

    # -- messages -------------------------------------------------------------------------------

    def clean(self, messages: list[C.Message]) -> list[C.Message]:
        """A hook for instrumentations whose messages need fixing (see :mod:`.openai_agents`)."""
        return messages

    def messages(self, span: SpanLike, output: bool, problems: list[str]) -> list[C.Message] | None:
        """The input (from its last user message on: see :func:`.content.messages_of`) or output
        messages, from wherever this version of the conventions put them; None when the span
        records none."""
        key, old, event, prefix = (
            (OUTPUT_MESSAGES, COMPLETION, EVENT_COMPLETION, COMPLETION_PREFIX) if output
            else (INPUT_MESSAGES, PROMPT, EVENT_PROMPT, PROMPT_PREFIX))
        attrs = span.attributes
        for name, value in ((key, attrs.get(key)), (key, event_attr(span, EVENT_DETAILS, key)),
                            (old, attrs.get(old)), (old, event_attr(span, event, old))):
            if value is None:
                continue
            messages = C.messages_of(value, tail=not output)
            if messages is None:
                problems.append(NOT_MESSAGES.format(key=name))
                continue
            return self.clean(messages)
        flat = C.flat_messages(attrs, prefix, tail=not output)
        return self.clean(flat) if flat is not None else None

    # -- readers ----------------------------------------------------------------------------------

    def agent_name(self, span: SpanLike) -> str | None:
        for key in (AGENT_NAME, WORKFLOW_NAME):
            name = string_attr(span, key)
            if name:
                return name
        for prefix in _AGENT_OPERATIONS:
            if span.name.startswith(prefix):
                return span.name[len(prefix):].strip() or None
        return span.name or None

    def agent(self, span: SpanLike, problems: list[str]) -> Agent:
        inputs = self.messages(span, False, problems)
        outputs = self.messages(span, True, problems)
        question = C.last_text(inputs, C.USER) if inputs else None
        if question is None:
            question = io_text(span.attributes.get(INPUT_VALUE), C.USER)
        answer = C.output_of(outputs)[0] if outputs else []
        text = "\n".join(answer) if answer else io_text(span.attributes.get(OUTPUT_VALUE), C.ASSISTANT)
        captured = inputs is not None or outputs is not None or any(
            k in span.attributes for k in (INPUT_VALUE, OUTPUT_VALUE))
        return Agent(self.agent_name(span), question, text, True, captured)

    def tool_name(self, span: SpanLike) -> str:
        for key in (TOOL_NAME, OI_TOOL_NAME):
            value = string_attr(span, key)
            if value:
                return value
        if span.name.startswith(OP_EXECUTE_TOOL):
            return span.name[len(OP_EXECUTE_TOOL):].strip() or span.name
        return span.name

    def raw_arguments(self, span: SpanLike) -> Any:
        attrs = span.attributes
        return attrs.get(TOOL_CALL_ARGUMENTS, attrs.get(INPUT_VALUE))

    def tool_call(self, span: SpanLike, problems: list[str]) -> ToolCall:
        attrs = span.attributes
        raw_args = self.raw_arguments(span)
        arguments, bare = C.arguments(raw_args)
        raw_result = attrs.get(TOOL_CALL_RESULT, attrs.get(OUTPUT_VALUE))
        result, result_id = C.result_text(raw_result)
        call_id = string_attr(span, TOOL_CALL_ID) or result_id
        return ToolCall(self.tool_name(span), arguments, bare, (), result, call_id, None,
                        raw_args is not None or raw_result is not None)

    def llm_call(self, span: SpanLike, problems: list[str]) -> LLMCall:
        inputs = self.messages(span, False, problems)
        outputs = self.messages(span, True, problems)
        return llm_call_of(inputs, outputs, string_attr(span, CONVERSATION_ID),
                           TOOL_DEFINITIONS in span.attributes)

    def retrieval(self, span: SpanLike, problems: list[str]) -> Retrieval:
        query = text_attr(span, RETRIEVAL_QUERY) or io_text(span.attributes.get(INPUT_VALUE), C.USER)
        docs = C.documents(span.attributes.get(RETRIEVAL_DOCUMENTS))
        return Retrieval(query, chunk_ids(span, docs))


def llm_call_of(inputs: Sequence[C.Message] | None, outputs: Sequence[C.Message] | None,
                conversation: str | None, offered_tools: bool) -> LLMCall:
    """An :class:`LLMCall` from its input and output messages."""
    texts, reasoning, requests = C.output_of(outputs) if outputs else ([], [], [])
    prior_texts, _, prior_requests = C.output_of(C.last_output(inputs)) if inputs else ([], [], [])
    return LLMCall(
        text="\n".join(texts) if texts else None,
        reasoning="\n".join(reasoning) if reasoning else None,
        requests=tuple(requests),
        results=tuple(C.trailing_responses(inputs)) if inputs else (),
        question=C.last_text(inputs, C.USER) if inputs else None,
        conversation=conversation,
        offered_tools=offered_tools,
        output_captured=outputs is not None,
        prior_text="\n".join(prior_texts) if prior_texts else None,
        prior_requests=tuple(prior_requests),
    )


def chunk_ids(span: SpanLike, docs: Sequence[Any] | None) -> tuple[str, ...] | None:
    """Each document's id (its own, or one its metadata names), else ``{span id}/{position}``."""
    if docs is None:
        return None
    return tuple(C.document_id(d) or f"{span.span_id:016x}/{n}" for n, d in enumerate(docs, 1))


GENAI = GenAIDialect()
