"""Reading content out of attribute values, shared by every dialect: messages (the GenAI conventions'
``parts``, OpenAI's chat format, OpenInference's and OpenLLMetry's flattened ``*.N.*`` keys, LangChain's
serialized messages, OpenAI Responses items), tool arguments (unwrapped to the actual arguments as
JSON), tool results (as text, not an envelope) and retrieved documents.

Every reader takes whatever a span holds and returns ``None`` (or an empty result) for what it cannot
read; none raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import values as V
from ..flows import attr_text
from . import Request, TranscriptStep

# -- JSON ---------------------------------------------------------------------------------------------


def loads(value: Any) -> Any:
    """``value`` parsed as JSON when it is text that looks like a JSON array or object; structured
    values (OTLP arrays and maps) as they are; anything else None."""
    if isinstance(value, (list, tuple, Mapping)):
        return value
    if not isinstance(value, str):
        return None
    head = value.lstrip()[:1]
    if head not in ("[", "{"):
        return None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def dumps(value: Any) -> str:
    """Compact, readable JSON text (non-ASCII kept)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


# -- messages -----------------------------------------------------------------------------------------

USER, ASSISTANT, TOOL, SYSTEM = "user", "assistant", "tool", "system"
_ROLES = {
    "user": USER, "human": USER, "humanmessage": USER,
    "assistant": ASSISTANT, "ai": ASSISTANT, "aimessage": ASSISTANT, "model": ASSISTANT,
    "tool": TOOL, "function": TOOL, "toolmessage": TOOL, "tool-response": TOOL, "ipython": TOOL,
    "system": SYSTEM, "developer": SYSTEM, "systemmessage": SYSTEM,
    "tool-call": ASSISTANT,
}


@dataclass(slots=True)
class Message:
    """One message, whatever the format it came in."""

    role: str
    texts: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[Request] = field(default_factory=list)
    """Tool calls the message requests (an assistant's)."""
    responses: list[tuple[str | None, str]] = field(default_factory=list)
    """Tool results it carries: (call id, text)."""
    finish_reason: str | None = None
    elided: bool = False
    """A part of it is there without its content (an instrumentation that records the messages'
    shape with content capture off): its text was not captured."""

    @property
    def text(self) -> str | None:
        return "\n".join(self.texts) if self.texts else None


def role_of(value: Any) -> str:
    return _ROLES.get(str(value).lower(), str(value).lower()) if value is not None else ""


def _text_of(value: Any) -> str | None:
    """Content as text: a string, or the text blocks of a list of blocks."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        texts = [t for t in (_block_text(b) for b in value) if t is not None]
        return "\n".join(texts) if texts else None
    return None


def _block_text(block: Any) -> str | None:
    if isinstance(block, str):
        return block
    if isinstance(block, Mapping) and block.get("type", "text") in ("text", "output_text", "input_text"):
        for key in ("content", "text"):
            if isinstance(block.get(key), str):
                return str(block[key])
    return None


def _request(call_id: Any, name: Any, arguments: Any) -> Request | None:
    if not isinstance(name, str) or not name:
        return None
    args = None
    if arguments is not None:
        parsed = loads(arguments)
        args = dumps(parsed) if parsed is not None else (
            arguments if isinstance(arguments, str) else dumps(arguments))
    return Request(str(call_id) if call_id not in (None, "") else None, name, args)


def _add_keyed_block(msg: Message, block: Mapping[str, Any], nested: bool = False) -> bool:
    """A block named by its one key rather than a ``type`` (Bedrock Converse's ``{"text": ...}``,
    ``{"toolUse": {...}}``, ``{"toolResult": {...}}``, ``{"reasoningContent": ...}``; Gemini's
    ``{"function_call": {...}}``, ``{"function_response": {...}}``, ``{"text": ..., "thought": true}``).
    False when it is not one."""
    use = block.get("toolUse", block.get("tool_use"))
    if isinstance(use, Mapping):
        request = _request(use.get("toolUseId", use.get("id")), use.get("name"),
                           use.get("input", use.get("arguments")))
        if request is not None:
            msg.calls.append(request)
        return True
    result = block.get("toolResult", block.get("tool_result"))
    if isinstance(result, Mapping):
        text = result_text(result.get("content"))[0]
        if text is not None:
            msg.responses.append((_id(result.get("toolUseId", result.get("id"))), text))
        return True
    call = block.get("function_call", block.get("functionCall"))
    if isinstance(call, Mapping):
        request = _request(call.get("id"), call.get("name"), call.get("args", call.get("arguments")))
        if request is not None:
            msg.calls.append(request)
        return True
    response = block.get("function_response", block.get("functionResponse"))
    if isinstance(response, Mapping):
        text = result_text(response.get("response", response.get("content")))[0]
        if text is not None:
            msg.responses.append((_id(response.get("id")), text))
        return True
    if isinstance(block.get("tool_name"), str) and "arguments" in block:  # a call, by its fields
        request = _request(block.get("id"), block["tool_name"], block.get("arguments"))
        if request is not None:
            msg.calls.append(request)
        return True
    origin = block.get("origin")
    if "result" in block and isinstance(origin, Mapping):  # a call's result, with the call it answers
        text = result_text(block["result"])[0]
        if text is not None:
            msg.responses.append((_id(origin.get("id")), text))
        return True
    reasoning = block.get("reasoningContent", block.get("reasoning_content"))
    if reasoning is not None:
        inner = reasoning.get("reasoningText", reasoning) if isinstance(reasoning, Mapping) else reasoning
        text = inner.get("text") if isinstance(inner, Mapping) else inner
        if isinstance(text, str):
            msg.reasoning.append(text)
        return True
    if "type" not in block and isinstance(block.get("text"), str):
        (msg.reasoning if block.get("thought") is True else msg.texts).append(block["text"])
        return True
    if len(block) == 1 and not nested:  # one key naming the block, its fields inside (a serialized
        inner = next(iter(block.values()))  # dataclass: ``{"tool_call": {"tool_name": ..., ...}}``)
        if isinstance(inner, Mapping) and "type" not in inner:
            return _add_keyed_block(msg, inner, nested=True)
    return False


_ITEM_KINDS = frozenset({"reasoning", "function_call", "function_call_output", "message", "output_text",
                         "input_text", "text", "tool_call", "tool_use", "summary_text"})


def repr_item(text: str) -> Mapping[str, Any] | None:
    """A message item an instrumentation wrote as its Python repr (``ResponseReasoningItem(...)``,
    ``ResponseFunctionToolCall(...)``, ``{'text': ..., 'type': 'output_text'}``), as the mapping it stands
    for -- parsed, never evaluated -- when it is one (a ``type`` the messages know); else None."""
    head = text.lstrip()[:2]
    if not head or not (head[0].isalpha() or head == "{'"):
        return None
    parsed = V.parse_repr(text)
    item = _plain_data(parsed)
    if isinstance(item, Mapping) and item.get("type") in _ITEM_KINDS:
        return item
    return None


def _plain_data(value: Any, depth: int = 0) -> Any:
    """A parsed repr as plain data: an object as the mapping of its fields; private attribute names
    dumped as they are (``{"_role": ..., "_content": ...}``) as the names they stand for."""
    if depth > 16:
        return None
    if isinstance(value, V.Obj):
        value = value.fields
    if isinstance(value, Mapping):
        return {k: _plain_data(v, depth + 1) for k, v in V.public_fields(value).items()}
    if isinstance(value, (list, tuple)):
        return [_plain_data(v, depth + 1) for v in value]
    return value


def _add_block(msg: Message, block: Any) -> None:
    """One part / content block of a message."""
    if isinstance(block, str):
        msg.texts.append(block)
        return
    if not isinstance(block, Mapping):
        return
    if "type" not in block and _add_keyed_block(msg, block):
        return
    kind = block.get("type", "text")
    if kind == "text" and isinstance(block.get("content"), str) and block["content"][-1:] in ")}":
        item = repr_item(block["content"])
        if item is not None:  # an item written as its repr
            _add_block(msg, item)
            return
    if kind == "message":  # a Responses output message: its content blocks
        for part in block.get("content") or ():
            _add_block(msg, part)
        return
    if kind in ("text", "reasoning", "thinking") and not any(
            k in block for k in ("content", "text", "reasoning", "thinking", "summary")):
        msg.elided = True  # the part's shape without its content
        return
    if kind in ("reasoning", "thinking"):
        for key in ("content", "reasoning", "thinking", "text"):
            if isinstance(block.get(key), str):
                msg.reasoning.append(block[key])
                return
        summary = block.get("summary")
        if isinstance(summary, (list, tuple)):
            msg.reasoning.extend(s["text"] for s in summary if isinstance(s, Mapping)
                                 and isinstance(s.get("text"), str))
    elif kind in ("tool_call", "function_call", "tool_use"):
        request = _request(block.get("call_id") or block.get("id"), block.get("name"),
                           block.get("arguments", block.get("input", block.get("args"))))
        if request is not None:
            msg.calls.append(request)
    elif kind in ("tool_call_response", "function_call_output", "tool_result"):
        for key in ("response", "result", "output", "content"):
            if key in block:
                text = result_text(block[key])[0]
                if text is not None:
                    msg.responses.append((_id(block.get("call_id") or block.get("id")
                                              or block.get("tool_use_id")), text))
                break
    else:
        text = _block_text(block)
        if text is not None:
            msg.texts.append(text)


def _id(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def repr_message(text: str) -> Mapping[str, Any] | None:
    """A message an instrumentation wrote as its Python repr (Haystack's ``ChatMessage(_role=<ChatRole.
    USER: 'user'>, _content=[TextContent(text=...)])``), as the mapping it stands for -- parsed,
    never evaluated -- its private field names without their underscore; None when it is not one."""
    if not text[:1].isalpha() or not text.endswith(")"):
        return None
    item = _plain_data(V.parse_repr(text))
    if not isinstance(item, Mapping):
        return None
    fields = {str(k).lstrip("_"): v for k, v in item.items()}
    return fields if "role" in fields and ("content" in fields or "parts" in fields) else None


_REQUEST_NAME = frozenset({"name", "tool", "tool_name", "tool.name", "toolName", "function_name",
                           "functionName"})
_REQUEST_ARGS = frozenset({"args", "arguments", "input", "tool.args", "tool_args", "toolArgs", "tool_input",
                           "toolInput", "parameters", "params"})
_REQUEST_ID = frozenset({"id", "call_id", "tool_call_id", "toolCallId", "tool.call.id", "tool_id"})
_REQUEST_OTHER = frozenset({"type", "toolCallType", "tool_call_type"})
_REQUEST_TYPES = frozenset({"function", "tool_call", "tool-call", "function_call", "tool_use"})


def bare_request(obj: Mapping[str, Any]) -> Request | None:
    """A tool call written as an object of its own, with no message around it: a tool's name and its
    arguments (and maybe an id), under any of the usual keys (``{"tool.name": ..., "tool.args":
    ...}``, ``{"toolCallId": ..., "toolName": ..., "args": ...}``) and nothing else; else None."""
    keys = set(obj)
    names, args = keys & _REQUEST_NAME, keys & _REQUEST_ARGS
    allowed = _REQUEST_NAME | _REQUEST_ARGS | _REQUEST_ID | _REQUEST_OTHER
    if len(names) != 1 or len(args) != 1 or not keys <= allowed:
        return None
    kinds = [obj[k] for k in keys & _REQUEST_OTHER]
    if any(not isinstance(k, str) or k.lower() not in _REQUEST_TYPES for k in kinds):
        return None
    ids = [obj[k] for k in keys & _REQUEST_ID]
    return _request(ids[0] if len(ids) == 1 else None, obj[names.pop()], obj[args.pop()])


def to_message(obj: Any) -> Message | None:
    """One message in any of the formats above, else None."""
    if isinstance(obj, str):
        obj = repr_message(obj)
    if not isinstance(obj, Mapping):
        return None
    if "role" not in obj:
        request = bare_request(obj)
        if request is not None:
            return Message(ASSISTANT, calls=[request])
    if obj.get("lc") is not None and isinstance(obj.get("kwargs"), Mapping):  # LangChain constructor
        ids = obj.get("id")
        cls = ids[-1] if isinstance(ids, (list, tuple)) and ids else ""
        kwargs = obj["kwargs"]
        obj = {**kwargs, "type": kwargs.get("type") or str(cls).removesuffix("Message").lower()}
    elif isinstance(obj.get("data"), Mapping) and isinstance(obj.get("type"), str):  # LangChain dump
        obj = {**obj["data"], "type": obj["data"].get("type") or obj["type"]}
    kind = obj.get("type")
    if kind in ("reasoning", "function_call", "function_call_output") and "role" not in obj:
        msg = Message(TOOL if kind == "function_call_output" else ASSISTANT)  # a Responses item
        _add_block(msg, obj)
        return msg
    role = role_of(obj.get("role") if obj.get("role") is not None else kind)
    msg = Message(role)
    if isinstance(obj.get("finish_reason"), str):
        msg.finish_reason = obj["finish_reason"]
    parts = obj.get("parts")
    if isinstance(parts, (list, tuple)):
        for part in parts:
            _add_block(msg, part)
    content = obj.get("content")
    if isinstance(content, str) and content[:1] == "[":
        blocks = loads(content)  # content blocks written as JSON text (span events)
        if isinstance(blocks, list) and blocks and all(
                isinstance(b, Mapping) and _is_block(b) for b in blocks):
            content = blocks
    if role == TOOL:
        keyed = Message(TOOL)
        for block in content if isinstance(content, (list, tuple)) else ():
            if isinstance(block, Mapping) and "type" not in block:
                _add_keyed_block(keyed, block)
        if keyed.responses:
            msg.responses.extend(keyed.responses)
        else:
            text, _ = result_text(content)
            call_id = _id(obj.get("tool_call_id") or obj.get("call_id") or obj.get("id"))
            if text is not None:
                msg.responses.append((call_id, text))
    elif isinstance(content, str):
        msg.texts.append(content)
    elif isinstance(content, (list, tuple)):
        for block in content:
            _add_block(msg, block)
    calls = obj.get("tool_calls")
    for call in calls if isinstance(calls, (list, tuple)) else ():
        if not isinstance(call, Mapping):
            continue
        function: Mapping[str, Any] = call["function"] if isinstance(call.get("function"), Mapping) else call
        request = _request(call.get("id"), function.get("name"),
                           function.get("arguments", function.get("args")))
        if request is not None:
            msg.calls.append(request)
    if msg.role == USER and msg.responses and not msg.texts:
        msg.role = TOOL  # tool results sent in the user's turn (Anthropic's, Bedrock's): the tools'
    return msg


_BLOCK_KEYS = frozenset({"type", "text", "toolUse", "toolResult", "reasoningContent", "function_call",
                         "functionCall", "function_response", "functionResponse", "image", "document",
                         "content", "thought", "cachePoint"})


def _is_block(block: Mapping[str, Any]) -> bool:
    return bool(block) and (isinstance(block.get("type"), str) or set(block) <= _BLOCK_KEYS)


# The older per-message GenAI events (span events, or log records whose body holds the fields).
EVENT_ROLES = {"gen_ai.system.message": SYSTEM, "gen_ai.user.message": USER,
               "gen_ai.assistant.message": ASSISTANT, "gen_ai.tool.message": TOOL}
EVENT_CHOICE = "gen_ai.choice"


def event_messages(events: Sequence[tuple[str, Mapping[str, Any]]], output: bool) -> list[Message] | None:
    """The input (or, ``output``, the choices') messages of the per-message events, in order; None
    when there is none."""
    found: list[Message] = []
    seen = False
    for name, attrs in events:
        if output != (name == EVENT_CHOICE) or (name not in EVENT_ROLES and name != EVENT_CHOICE):
            continue
        seen = True
        fields: dict[str, Any] = dict(attrs)
        if output:
            inner = fields.get("message")
            if isinstance(inner, str) and inner[:1] in "[{":
                parsed = loads(inner)
                inner = parsed if parsed is not None else inner
            if isinstance(inner, Mapping):
                # the call's tool calls and finish reason beside its message (OpenLLMetry's)
                fields = {**{k: fields[k] for k in ("tool_calls", "finish_reason") if k in fields}, **inner}
                if isinstance(fields.get("content"), Mapping) and not fields["content"]:
                    del fields["content"]  # {} for no text
            elif isinstance(inner, (list, tuple)):
                fields = {"content": list(inner)}
            elif isinstance(inner, str):
                fields = {"content": inner}
            fields.setdefault("role", ASSISTANT)
        else:
            fields["role"] = EVENT_ROLES[name]
        for key in ("content", "tool_calls"):
            value = fields.get(key)
            if isinstance(value, str) and value[:1] in "[{":
                parsed = loads(value)
                if isinstance(parsed, (list, tuple)) and (key == "tool_calls" or all(
                        isinstance(b, Mapping) and _is_block(b) for b in parsed)):
                    fields[key] = parsed
        message = to_message(fields)
        if message is not None:
            if not any(k in attrs for k in ("content", "message", "tool_calls", "parts")):
                message.elided = True  # the event without its content (capture off)
            elif not (message.texts or message.reasoning or message.calls or message.responses):
                continue  # content that is no message (OpenLLMetry's tool definitions as a user event)
            found.append(message)
    return found if seen else None


def recorded_events(value: Any, output: bool) -> list[Message] | None:
    """The messages of GenAI event records written into one attribute (a JSON list of objects with
    ``event.name``: ``gen_ai.user.message``, ``gen_ai.choice``...), as :func:`event_messages` reads
    span events.  Without ``gen_ai.choice`` records the output is the assistant messages that end
    the list (a request ends with a user's or a tool's message: what follows is the response); None
    when the value is no such list."""
    data = loads(value) if isinstance(value, str) and value[:1] == "[" else value
    if not isinstance(data, (list, tuple)) or not data or not all(
            isinstance(d, Mapping) and isinstance(d.get("event.name"), str) for d in data):
        return None
    records = [(str(d["event.name"]), {k: v for k, v in d.items() if k != "event.name"}) for d in data]
    if any(name == EVENT_CHOICE for name, _ in records):
        return event_messages(records, output)
    found = event_messages(records, False)
    if found is None:
        return None
    cut = len(found)
    while cut > 0 and found[cut - 1].role == ASSISTANT:
        cut -= 1
    return found[cut:] if output else found[:cut]


def messages_of(value: Any, tail: bool = False) -> list[Message] | None:
    """Messages given as JSON text or a structured array (or one message, or LangChain's
    ``{"messages": [...]}``), each in any format; None when the value holds no list of messages.
    ``tail``: only what an input's readers need (:func:`_wanted`), read from the end."""
    data = loads(value)
    choices = data.get("choices") if isinstance(data, Mapping) and "messages" not in data else None
    if isinstance(choices, (list, tuple)):  # a chat completion's response (OpenAI's): its choices' messages
        data = [c["message"] for c in choices
                if isinstance(c, Mapping) and isinstance(c.get("message"), Mapping)]
    if isinstance(data, Mapping) and "messages" not in data:
        for key in ("replies", "contents"):  # a generator's output (Haystack's); a Gemini request
            if isinstance(data.get(key), (list, tuple)):
                data = {"messages": data[key]}
                break
        else:
            if isinstance(data.get("content"), Mapping) and "role" in data["content"]:
                data = data["content"]  # a Gemini response: its candidate's content
    if isinstance(data, Mapping) and "messages" in data:
        data = data["messages"]
        if isinstance(data, (list, tuple)) and len(data) == 1 and isinstance(data[0], (list, tuple)):
            data = data[0]  # an LLM's input: one list of messages per prompt
    if isinstance(data, Mapping):
        data = [data]
    if not isinstance(data, (list, tuple)):
        return None
    if not tail:
        return [m for m in (to_message(item) for item in data) if m is not None]
    items = [repr_message(item) if isinstance(item, str) else item for item in data]  # parsed once
    return _wanted([_raw_role(item) for item in items], lambda i: to_message(items[i]))


def _raw_role(item: Any) -> str:
    """The role of a message not read yet (as :func:`to_message` would find it)."""
    if isinstance(item, str):
        item = repr_message(item)
    if not isinstance(item, Mapping):
        return ""
    if "role" not in item and bare_request(item) is not None:
        return ASSISTANT
    if item.get("lc") is not None and isinstance(item.get("kwargs"), Mapping):
        ids = item.get("id")
        cls = ids[-1] if isinstance(ids, (list, tuple)) and ids else ""
        return role_of(item["kwargs"].get("type") or str(cls).removesuffix("Message").lower())
    if isinstance(item.get("data"), Mapping) and isinstance(item.get("type"), str):
        return role_of(item["data"].get("type") or item["type"])
    kind = item.get("type")
    if kind in ("reasoning", "function_call", "function_call_output") and "role" not in item:
        return TOOL if kind == "function_call_output" else ASSISTANT
    role = role_of(item.get("role") if item.get("role") is not None else kind)
    if role == USER and _only_results(item.get("parts", item.get("content"))):
        return TOOL  # tool results sent back as a user message (Anthropic's, Pydantic AI's, ADK's)
    return role


_RESULT_PARTS = frozenset({"tool_call_response", "tool_result", "function_call_output", "function_response"})


def _only_results(parts: Any) -> bool:
    """Whether a message's parts are all tool results."""
    if not isinstance(parts, (list, tuple)) or not parts:
        return False
    return all(isinstance(p, Mapping) and (p.get("type") in _RESULT_PARTS or (
        "type" not in p and ("toolResult" in p or "function_response" in p or "functionResponse" in p)))
        for p in parts)


def tail(messages: Sequence[Message]) -> list[Message]:
    """Of messages read whole, those an input's readers need (as :func:`messages_of` with ``tail``)."""
    return _wanted([m.role for m in messages], lambda i: messages[i])


def _wanted(roles: Sequence[str], read: Callable[[int], Message | None]) -> list[Message]:
    """Of an input's messages (their roles known), read only those an input's readers need: the
    tool results it ends with, the assistant messages before them (the previous output), and the
    last user message with text (the question); in order."""
    picked: list[Message] = []
    i = len(roles) - 1
    while i >= 0 and roles[i] == TOOL:
        i -= 1
    while i >= 0 and roles[i] == ASSISTANT:
        i -= 1
    for j in range(len(roles) - 1, i, -1):
        message = read(j)
        if message is not None:
            picked.append(message)
    for j in range(i, -1, -1):
        if roles[j] != USER:
            continue
        message = read(j)
        if message is not None and message.texts:
            picked.append(message)
            break
    picked.reverse()
    return picked


_FLAT_INDEX = re.compile(r"(\d+)\.(.+)")
"""``{i}.{rest}`` after a prefix (documents)."""
_FLAT_CONTENT = re.compile(r"(?:message\.)?contents\.(\d+)\.message_content\.(type|text)")
_FLAT_CALL = re.compile(
    r"(?:message\.)?tool_calls\.(\d+)\.(?:tool_call\.)?(?:function\.)?(id|name|arguments)")


FlatGroups = dict[str, dict[int, list[tuple[str, Any]]]]
"""Flattened keys by prefix, then by index: ``{prefix: {i: [(rest of the key, value), ...]}}``."""


def flat_groups(attributes: Mapping[str, Any], prefixes: Sequence[str]) -> FlatGroups:
    """One pass over the attributes: the keys ``{prefix}{i}.{rest}`` of each prefix, by index."""
    groups: FlatGroups = {p: {} for p in prefixes}
    first = tuple(prefixes)
    for key, value in attributes.items():
        if key.startswith(first):
            for prefix in prefixes:
                if key.startswith(prefix):
                    index, _, rest = key[len(prefix):].partition(".")
                    if index.isdigit() and rest:
                        groups[prefix].setdefault(int(index), []).append((rest, value))
                    break
    return groups


def flat_messages(attributes: Mapping[str, Any] | FlatGroups, prefix: str,
                  tail: bool = False) -> list[Message] | None:
    """Messages flattened into keys, ``{prefix}{i}.message.role`` / ``.content`` / ``.contents.{j}...``
    / ``.tool_calls.{k}.tool_call...`` (OpenInference) or ``{prefix}{i}.role`` / ``.content`` /
    ``.tool_calls.{k}.name`` (OpenLLMetry's ``gen_ai.prompt.`` / ``gen_ai.completion.``), in index
    order (indices need not start at 0 or be contiguous); None when there is no such key.  Reads
    the attributes, or their :func:`flat_groups`.  ``tail``: as for :func:`messages_of`."""
    grouped = (attributes[prefix] if isinstance(attributes.get(prefix), dict)
               else flat_groups(attributes, [prefix])[prefix])
    if not grouped:
        return None
    indices = sorted(grouped)
    if not tail:
        return [_flat_message(dict(grouped[i])) for i in indices]
    roles = [role_of(next((v for r, v in grouped[i] if r in ("message.role", "role")), None))
             for i in indices]
    return _wanted(roles, lambda n: _flat_message(dict(grouped[indices[n]])))


def _flat_message(fields: Mapping[str, Any]) -> Message:
    msg = Message(role_of(fields.get("message.role", fields.get("role"))))
    contents: dict[int, dict[str, Any]] = {}
    calls: dict[int, dict[str, Any]] = {}
    for rest, value in fields.items():
        if "contents." in rest:
            found_content = _FLAT_CONTENT.fullmatch(rest)
            if found_content:
                contents.setdefault(int(found_content.group(1)), {})[found_content.group(2)] = value
        elif "tool_calls." in rest:
            found_call = _FLAT_CALL.fullmatch(rest)
            if found_call:
                calls.setdefault(int(found_call.group(1)), {})[found_call.group(2)] = value
    text = fields.get("message.content", fields.get("content"))
    if msg.role == TOOL:
        result, _ = result_text(text)
        if result is None and contents:
            result = "\n".join(str(c.get("text")) for _, c in sorted(contents.items()) if c.get("text"))
        if result is not None:
            call_id = _id(fields.get("message.tool_call_id", fields.get("tool_call_id")))
            msg.responses.append((call_id, result))
    elif contents:
        for _, block in sorted(contents.items()):
            _add_block(msg, {"type": block.get("type", "text"), "text": block.get("text")})
    elif isinstance(text, str):
        msg.texts.append(text)
    for _, call in sorted(calls.items()):
        request = _request(call.get("id"), call.get("name"), call.get("arguments"))
        if request is not None:
            msg.calls.append(request)
    return msg


def recorded(messages: Sequence[Message] | None) -> bool:
    """Whether messages were recorded with their content (not only their shape: capture off)."""
    return messages is not None and not all(m.elided for m in messages)


def last_text(messages: Sequence[Message], role: str) -> str | None:
    """The text of the last message of ``role`` that has text."""
    for message in reversed(messages):
        if message.role == role and message.text is not None:
            return message.text
    return None


def trailing_responses(messages: Sequence[Message]) -> list[tuple[str | None, str]]:
    """The tool results the input ends with (those after its last assistant message): what the
    previous call asked for."""
    found: list[tuple[str | None, str]] = []
    for message in reversed(messages):
        if message.role == ASSISTANT:
            break
        found[:0] = message.responses
    return found


def last_output(messages: Sequence[Message]) -> list[Message]:
    """The assistant messages the input ends with, before its trailing tool results: the previous
    call's output, as the caller sent it back (some instrumentations record it only there)."""
    found: list[Message] = []
    for message in reversed(messages):
        if message.role == TOOL and not found:
            continue
        if message.role != ASSISTANT:
            break
        found.insert(0, message)
    return found


def said(messages: Sequence[Message]) -> tuple[tuple[str, str | None], ...]:
    """For each tool call an assistant message of ``messages`` requested by id: what the model said
    beside it (:func:`thought_of`; None: nothing).  Messages whose content was left out say nothing."""
    return tuple((request.id, thought_of(message.reasoning, message.texts))
                 for message in messages if message.role == ASSISTANT and not message.elided
                 for request in message.calls if request.id)


def output_of(messages: Sequence[Message]) -> tuple[list[str], list[str], list[Request]]:
    """An LLM call's output: its texts, reasoning and requested tool calls (every assistant message:
    some instrumentations split one answer over several)."""
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[Request] = []
    for message in messages:
        if message.role in (ASSISTANT, ""):
            texts += message.texts
            reasoning += message.reasoning
            calls += message.calls
    return texts, reasoning, calls


def final_texts(messages: Sequence[Message]) -> list[str]:
    """What an agent said last: the texts of its assistant messages after its last tool call or
    result (an agent's output may be its whole transcript: AG2's conversation).  None of the words
    said before an action are its answer."""
    texts: list[str] = []
    for message in messages:
        if message.role == TOOL or message.calls or message.responses:
            texts = []
        elif message.role in (ASSISTANT, ""):
            texts += message.texts
    return texts


# -- text protocols: a model's output that is itself structured --------------------------------------

_MARKER_FIELD = re.compile(r"^\[\[ ## (\w+) ## \]\]\s*$", re.MULTILINE)
"""A field of a field-marker output (DSPy's adapters): ``[[ ## name ## ]]`` on a line of its own."""
_REACT_LINE = re.compile(r"^(Thought|Action|Action Input|Final Answer|Observation)\s*:\s?", re.MULTILINE)
"""The ReAct prompt's lines: ``Thought: ...``, ``Action: ...``, ``Action Input: ...``, ``Final Answer:
...``."""
THOUGHT_FIELDS = ("next_thought", "thought", "thoughts", "reasoning", "rationale", "plan")
ANSWER_FIELDS = ("answer", "final_answer", "final answer", "response", "output", "result")
TOOL_FIELDS = ("next_tool_name", "tool_name", "action", "tool")
ARGS_FIELDS = ("next_tool_args", "tool_args", "action input", "action_input", "tool_input", "arguments",
               "args")
_DONE = ("completed", "")


@dataclass(frozen=True, slots=True)
class Protocol:
    """What a model said in a text protocol: its thought, its answer, the tool it chose."""

    thought: str | None
    answer: str | None
    request: Request | None


def text_protocol(text: str) -> Protocol | None:
    """A model's output written in a text protocol -- DSPy's field markers (``[[ ## next_thought ## ]]``),
    the ReAct prompt's ``Thought:`` / ``Action:`` / ``Action Input:`` / ``Final Answer:`` lines, a JSON
    object of such fields -- read as its parts; None when the text is not one (plain text)."""
    fields: dict[str, str] = {}
    if "[[ ## " in text:
        marks = list(_MARKER_FIELD.finditer(text))
        if not marks or text[: marks[0].start()].strip():
            return None
        for mark, following in zip(marks, [*marks[1:], None], strict=True):
            end = following.start() if following is not None else len(text)
            fields[mark.group(1).lower()] = text[mark.end():end].strip()
    elif _REACT_LINE.match(text.lstrip()):
        lines = list(_REACT_LINE.finditer(text))
        for line, following in zip(lines, [*lines[1:], None], strict=True):
            end = following.start() if following is not None else len(text)
            fields.setdefault(line.group(1).lower(), text[line.end():end].strip())
        if "observation" in fields or not ({"action", "final answer"} & fields.keys()):
            return None  # a transcript (the model wrote the tool's answer too), or a thought alone
    else:
        parsed = loads(text)
        if not isinstance(parsed, Mapping) or not any(k in parsed for k in (*THOUGHT_FIELDS, *TOOL_FIELDS)):
            return None
        if not any(k in parsed for k in TOOL_FIELDS) and not any(k in parsed for k in ANSWER_FIELDS):
            return None
        fields = {str(k).lower(): (v if isinstance(v, str) else dumps(v)) for k, v in parsed.items()}
    if not fields:
        return None
    thought = next((fields[k] for k in THOUGHT_FIELDS if fields.get(k)), None)
    answer = next((fields[k] for k in ANSWER_FIELDS if fields.get(k)), None)
    tool = next((fields[k] for k in TOOL_FIELDS if fields.get(k)), None)
    request = None
    if tool is not None and tool.lower() not in ("finish", "final_answer", "none"):
        raw = next((fields[k] for k in ARGS_FIELDS if k in fields), None)
        request = _request(None, tool, raw)
    if thought is None and answer is None and request is None:
        return None
    return Protocol(thought, answer, request)


def thought_of(reasoning: Iterable[str], texts: Iterable[str]) -> str | None:
    """What the model produced beside its tool calls: its reasoning, then its text, each piece once."""
    pieces: list[str] = []
    for piece in (*reasoning, *texts):
        if piece.strip() and piece not in pieces:
            pieces.append(piece)
    return "\n".join(pieces) if pieces else None


# -- tool arguments and results ----------------------------------------------------------------------


def arguments(value: Any) -> tuple[str | None, str | None]:
    """A tool's arguments as recorded, unwrapped: ``(JSON text, None)`` for structured arguments,
    ``(None, text)`` for a bare string (a one-argument tool, named by the caller), ``(None, None)``
    when absent.  Unwraps smolagents' ``{"args": [], "kwargs": {...}}`` and LangGraph's
    ``{"__type": "tool_call_with_context", "tool_call": {"args": ...}}``."""
    if value is None:
        return None, None
    parsed = loads(value)
    if parsed is None:
        if isinstance(value, str):
            try:
                parsed = json.loads(value)
            except (ValueError, RecursionError):
                return None, value
            if isinstance(parsed, str):
                return None, parsed
        else:
            return dumps(value) if not isinstance(value, (int, float, bool)) else str(value), None
    if isinstance(parsed, Mapping):
        if parsed.get("__type") == "tool_call_with_context" and isinstance(parsed.get("tool_call"), Mapping):
            parsed = parsed["tool_call"].get("args", {})
        elif "kwargs" in parsed and "args" in parsed and set(parsed) <= {"args", "kwargs",
                                                                         "sanitize_inputs_outputs"}:
            args, kwargs = parsed.get("args") or [], parsed.get("kwargs") or {}
            if args and not kwargs:
                if len(args) == 1 and isinstance(args[0], str):
                    return None, args[0]
                return dumps(list(args)), None
            parsed = kwargs
    return dumps(parsed), None


def parameter_names(schema: Any) -> list[str]:
    """The parameter names of a tool's schema (a JSON schema's ``properties``, or smolagents'
    ``{name: {...}}``)."""
    parsed = loads(schema)
    if not isinstance(parsed, Mapping):
        return []
    props = parsed.get("properties")
    if isinstance(props, Mapping):
        return [str(k) for k in props]
    if parsed.get("type") == "object":
        return []
    return [str(k) for k, v in parsed.items() if isinstance(v, Mapping)]


_CALL_ID_KEYS = ("tool_call_id", "call_id", "tool_id", "tool_use_id")


def result_text(value: Any) -> tuple[str | None, str | None]:
    """A tool's result as text, and the tool call id when the result says it: LangChain's
    ``ToolMessage`` (``{"type": "tool", "data": {"content": ..., "tool_call_id": ...}}``, its
    constructor form, or the bare ``{"content": ..., "type": "tool"}``) gives its content."""
    if value is None:
        return None, None
    parsed = loads(value)
    if isinstance(parsed, Mapping):
        message = parsed
        if message.get("lc") is not None and isinstance(message.get("kwargs"), Mapping):
            message = message["kwargs"]
        elif isinstance(message.get("data"), Mapping):
            message = message["data"]
        if message.get("type") == "tool" or "tool_call_id" in message:
            text = _text_of(message.get("content"))
            if text is None and message.get("content") is not None:
                text = attr_text(message.get("content"))
            if text is not None:
                return text, _id(message.get("tool_call_id"))
        call_id = next((_id(parsed[k]) for k in _CALL_ID_KEYS if isinstance(parsed.get(k), (str, int))), None)
        if call_id is not None:  # an envelope naming its call: ``{"tool_id": "call_1", "tool_output": ...}``
            return (value if isinstance(value, str) else attr_text(value)), call_id
    if isinstance(value, str):
        return value, None
    return attr_text(value), None


# -- retrieved documents --------------------------------------------------------------------------------

_ID_KEYS = ("id", "chunk_id", "doc_id", "document_id")


def own_id(document: Mapping[str, Any]) -> str | None:
    value = document.get("id")
    return str(value) if value not in (None, "") else None


def document_id(document: Mapping[str, Any]) -> str | None:
    """A document's id: its own, else one its metadata names."""
    if own_id(document) is not None:
        return own_id(document)
    metadata = loads(document.get("metadata", document.get("document.metadata")))
    if isinstance(metadata, Mapping):
        for key in _ID_KEYS:
            if metadata.get(key) not in (None, ""):
                return str(metadata[key])
    return None


def documents(value: Any) -> list[Mapping[str, Any]] | None:
    """Documents as a list of mappings: a JSON list, or ``{"documents": [...]}``; None otherwise."""
    parsed = loads(value)
    if isinstance(parsed, Mapping):
        parsed = parsed.get("documents")
    if not isinstance(parsed, (list, tuple)):
        return None
    return [d for d in parsed if isinstance(d, Mapping)]


def flat_documents(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]] | None:
    """``{prefix}{i}.document.{id,content,metadata,score}`` keys as one mapping per index."""
    grouped: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if key.startswith(prefix):
            match = _FLAT_INDEX.fullmatch(key[len(prefix):])
            if match:
                grouped.setdefault(int(match.group(1)), {})[match.group(2).removeprefix("document.")] = value
    return [grouped[i] for i in sorted(grouped)] if grouped else None


# -- a run's transcript: the steps an agent span's own record of its conversation shows ---------------

MAX_TRANSCRIPT_NODES = 2_000
"""Values visited at most when looking for a transcript in one attribute."""


def transcript(value: Any) -> list[TranscriptStep] | None:
    """The tool calls a run's own record of its conversation shows (an agent span's output holding
    its messages: Haystack's ``{"researcher": {"messages": [...]}}``, CrewAI's ``[TaskOutput(...,
    messages=[...])]``), each with the text the model said with it and the result the conversation
    gave it (by tool call id, else by order); None when the value holds no conversation with a tool
    call.  The first list of messages found (breadth first, bounded) that has an assistant's tool call
    is the transcript."""
    data = V.parse(value) if isinstance(value, str) else value
    if data is V.NOT_PARSED or isinstance(data, str):
        return None
    queue: list[Any] = [_plain_data(data)]
    seen = 0
    while queue and seen < MAX_TRANSCRIPT_NODES:
        item = queue.pop(0)
        seen += 1
        if isinstance(item, Mapping):
            queue.extend(item.values())
            continue
        if not isinstance(item, list) or not item:
            continue
        if all(isinstance(m, Mapping) for m in item):
            messages = [to_message(m) for m in item]
            if all(m is not None for m in messages) and any(m.calls for m in messages if m is not None):
                return _steps([m for m in messages if m is not None])
        queue.extend(item)
    return None


def _steps(messages: Sequence[Message]) -> list[TranscriptStep]:
    steps: list[TranscriptStep] = []
    for i, message in enumerate(messages):
        if message.role not in (ASSISTANT, "") or not message.calls:
            continue
        answers: list[tuple[str | None, str]] = []
        for later in messages[i + 1:]:
            if later.role in (ASSISTANT, "") and (later.calls or later.texts):
                break
            answers += later.responses
        by_id = {rid: text for rid, text in answers if rid}
        untagged = [text for rid, text in answers if not rid]
        thought = "\n".join(t for t in message.texts if t.strip()) or None
        for n, request in enumerate(message.calls):
            result = by_id.get(request.id) if request.id else None
            if result is None and len(untagged) == len(message.calls):
                result = untagged[n]
            steps.append(TranscriptStep(thought, request, result))
    return steps
