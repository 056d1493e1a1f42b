"""The rule every content value of a framework trace passes before it is written: a value becomes
``tg:query``, ``tg:thought``, ``tg:arguments``, ``tg:observation``, ``tg:answer`` or ``tg:content`` only
when it is the plain thing the agent saw -- the user's text, the arguments as a JSON object, the
tool's result as its text or JSON, the answer's text.  Anything else is *not captured* (the raw value
kept apart, never shown as the value), and a redaction marker is *redacted*, never content.

One function, :func:`check`, says which, for any value a dialect found.  It unwraps by structure, never
by family: content-block lists (``[{"type": "text", "text": ...}]``), envelopes with one content key
and only bookkeeping beside it (``{"result": ...}``, ``{"status": ..., "content": [...]}``), message
objects (``{"role": ..., "content": ...}``, LangChain's serialized messages), ``{"messages": [...]}``
states, kwargs wrappers (``{"args": [], "kwargs": {...}}``), callback inputs (``{"input_str": ...}``),
tool-call objects (``{"name": ..., "args": {...}}``), and Python reprs that parse safely (``ast``,
never ``eval``: ``StopEvent(result=AgentOutput(response=ChatMessage(...)))``).  What is left that is
not plainly text (a whole workflow state, a pipeline's input JSON, an object that does not unwrap, a
JSON schema where arguments should be, positional arguments) is not captured.

Pure: no I/O; results are cached (a trace is mapped again as its spans arrive).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

QUERY, THOUGHT, ARGUMENTS, OBSERVATION, ANSWER, CONTENT = (
    "query", "thought", "arguments", "observation", "answer", "content")
"""The properties the rule covers (the local names of ``tg:``'s predicates)."""
PROPERTIES = (QUERY, THOUGHT, ARGUMENTS, OBSERVATION, ANSWER, CONTENT)

MAX_DEPTH = 12
"""Envelopes unwrapped at most this deep (deeper: not captured)."""
MAX_PARSED = 1 << 20
"""Text longer than this is not parsed as JSON or a repr to be unwrapped (it is not captured if it
looks like one)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """What :func:`check` says of a value: ``value`` to write (None: nothing to write), ``raw``: the
    value as recorded when it is not the plain thing (kept apart), ``redacted``: it held a
    redaction marker."""

    value: str | None
    raw: str | None = None
    redacted: bool = False

    @property
    def plain(self) -> bool:
        return self.value is not None


ABSENT = Verdict(None)
"""No value recorded (not a verdict on content: the caller decides whether that is "not captured")."""


# -- redaction markers ------------------------------------------------------------------------------

_WORDS = r"redacted|filtered|masked|scrubbed|censored|hidden|removed|omitted|sensitive|anonymi[sz]ed|elided"
_WRAPPED = re.compile(
    rf"\[\s*(?:{_WORDS})\b[\w\s:'\",.-]{{0,60}}\]|<\s*(?:{_WORDS})\b[\w\s:'\",.-]{{0,60}}>|__(?:{_WORDS})__"
    rf"|\*{{2,8}}\s?(?:{_WORDS})\s?\*{{2,8}}|\{{\s*(?:{_WORDS})\s*\}}", re.IGNORECASE)
"""A marker in brackets, angles, braces, double underscores or stars: ``[REDACTED]``,
``<redacted>``, ``__REDACTED__``, ``***REDACTED***``, ``[FILTERED]``, ``[hidden content]``,
``[Scrubbed due to 'output']`` (Logfire's)...
(Bounded, with no nested repetition: a value from the wire never makes it backtrack.)"""
_WHOLE = re.compile(rf"\s*(?:(?:{_WORDS})|\*{{3,}}|#{{3,}}|x{{6,}}|X{{6,}})\s*", re.IGNORECASE)
"""A value that is nothing but a marker word (``REDACTED``), or a mask (``****`` -- the Collector's
redaction processor --, ``###``)."""
_MASK = re.compile(r"\s*(?:redacted|\*{3,}|#{3,}|x{6,}|X{6,})\s*", re.IGNORECASE)
"""Inside a structure only ``redacted`` and masks stand alone as markers: an argument that is
``"hidden"`` or ``"removed"`` is a value (``{"visibility": "hidden"}``), and a key is a marker only in
a marker's brackets."""


def is_marker(text: str) -> bool:
    """Whether ``text`` is, or holds, a redaction marker."""
    return _WHOLE.fullmatch(text) is not None or _WRAPPED.search(text) is not None


def _has_marker(value: Any, depth: int = 0) -> bool:
    """Whether a marker is anywhere in ``value``; :class:`_Fail` when it nests too deep to tell (then
    the value is not known to be free of one: not plain)."""
    if depth > MAX_DEPTH:
        raise _Fail
    if isinstance(value, str):
        if _WRAPPED.search(value) is not None or (_WHOLE if depth == 0 else _MASK).fullmatch(value):
            return True
        parsed = parse(value)  # a marker inside JSON text, or a repr
        return parsed is not NOT_PARSED and not isinstance(parsed, str) and _has_marker(parsed, depth + 1)
    if isinstance(value, Mapping):
        return any(_has_marker(v, depth + 1) or (isinstance(k, str) and _WRAPPED.search(k) is not None)
                   for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_marker(v, depth + 1) for v in value)
    if isinstance(value, Obj):
        return _has_marker(value.fields, depth + 1) or _has_marker(value.args, depth + 1)
    return False


# -- parsing: JSON, Python reprs ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Obj:
    """A Python object as its repr shows it: ``Name(arg, key=value, ...)``."""

    name: str
    args: tuple[Any, ...]
    fields: Mapping[str, Any]


class _NotLiteral(Exception):
    pass


_ENUM = re.compile(r"<(?:[A-Za-z_][\w.]*): ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|-?\d+(?:\.\d+)?)>")
"""An enum member's repr, ``<MessageRole.ASSISTANT: 'assistant'>``: read as its value."""
_REPR_HEAD = re.compile(r"[A-Za-z_][\w.]*\(")


def _from_ast(node: ast.AST, depth: int = 0) -> Any:
    """A literal, container or call expression as data; anything else raises."""
    if depth > 64:
        raise _NotLiteral
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_from_ast(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise _NotLiteral
            k = _from_ast(key, depth + 1)
            out[k if isinstance(k, str) else json.dumps(k, default=str)] = _from_ast(value, depth + 1)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _from_ast(node.operand, depth + 1)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
        raise _NotLiteral
    if isinstance(node, ast.Call):
        name = _dotted(node.func)
        fields = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise _NotLiteral
            fields[kw.arg] = _from_ast(kw.value, depth + 1)
        return Obj(name, tuple(_from_ast(a, depth + 1) for a in node.args), fields)
    if isinstance(node, ast.Name) and node.id in ("nan", "inf"):
        return None
    raise _NotLiteral


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise _NotLiteral


def parse_repr(text: str) -> Any:
    """A Python repr (literals, containers, ``Name(key=value)`` calls, enum members) as data --
    parsed, never evaluated; :data:`NOT_PARSED` when it is not one."""
    if len(text) > MAX_PARSED:
        return NOT_PARSED
    cleaned = _ENUM.sub(lambda m: m.group(1), text)
    try:
        tree = ast.parse(cleaned.strip(), mode="eval")
        return _from_ast(tree.body)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError, _NotLiteral):
        return NOT_PARSED


NOT_PARSED: Any = object()
"""What :func:`parse` and :func:`parse_repr` give for text that is neither JSON nor a repr."""

_FIELD_HEAD = re.compile(r"[A-Za-z_]\w{0,63}=(?!=)")
_FIELD_SPLIT = re.compile(r" (?=[A-Za-z_]\w{0,63}=(?!=))")


def parse_fields(text: str) -> Any:
    """An object written as its fields (``str()`` of a pydantic model: ``status='success'
    result='Paris' error=None``) as an :class:`Obj` without a name; :data:`NOT_PARSED` unless every
    field's value is a literal, there are two or more, and one is a quoted string, None, True or
    False (so ``x=1 y=2`` stays text)."""
    if len(text) > MAX_PARSED or not _FIELD_HEAD.match(text):
        return NOT_PARSED
    fields: dict[str, Any] = {}
    telling = False
    for part in _FIELD_SPLIT.split(text):
        key, _, value = part.partition("=")
        parsed = parse_repr(value) if value else NOT_PARSED
        if parsed is NOT_PARSED or key in fields or not key.isidentifier():
            return NOT_PARSED
        fields[key] = parsed
        telling = telling or parsed is None or isinstance(parsed, bool) or value[:1] in "'\""
    return Obj("", (), fields) if len(fields) >= 2 and telling else NOT_PARSED


def parse(text: str) -> Any:
    """``text`` as data when it is JSON (an object, array or string) or a Python repr of data;
    :data:`NOT_PARSED` for anything else (plain text)."""
    stripped = text.strip()
    head = stripped[:1]
    if not head or len(stripped) > MAX_PARSED:
        return NOT_PARSED
    if head in "[{\"":
        try:
            return json.loads(stripped)
        except (ValueError, RecursionError):
            pass
        if head in "[{" or head == '"':
            return parse_repr(stripped)
        return NOT_PARSED
    if head == "'" or (_REPR_HEAD.match(stripped) and stripped.endswith(")")) or (
            stripped[:2] in ("b'", 'b"') and stripped[-1:] == stripped[1]):  # a bytes literal
        return parse_repr(stripped)
    return parse_fields(stripped)


def looks_structured(text: str) -> bool:
    """Whether text is JSON or a repr of data rather than plain text."""
    return parse(text) is not NOT_PARSED


_CODE = re.compile(r"\s*(?:[A-Z][\w.]*\((?:\)|[A-Za-z_]\w*=|'|\"|\[|\{|<)|[A-Za-z_][\w.]*\(\w+=)")
"""The head of an object's repr, ``StopEvent(result=...``, ``ToolCall(tool_name=...``."""
_ADDRESS = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")


_FIELDS_LIKE = re.compile(
    r"[A-Za-z_]\w{0,63}=(?:'|\"|None\b|True\b|False\b|\[|\{)[^\n]{0,4096}? [A-Za-z_]\w{0,63}=")
"""The head of an object written as its fields (``status='success' result=...``)."""


def looks_like_repr(text: str) -> bool:
    """Whether text is an object's repr (cut short, or too odd to parse), not anyone's words."""
    return (_CODE.match(text) is not None or _ADDRESS.search(text) is not None
            or _FIELDS_LIKE.match(text) is not None)


# -- unwrapping ------------------------------------------------------------------------------------

_USER_KEYS = ("query", "question", "input", "task", "prompt", "user_input", "user_message", "message",
              "messages", "text", "content", "request", "goal", "instruction", "instructions", "query_str",
              "input_text", "user_query", "parts", "body", "value", "input_args", "inputs", "args", "kwargs")
_OUTPUT_KEYS = ("result", "output", "answer", "response", "content", "text", "final_output", "final_answer",
                "output_text", "value", "return_value", "message", "messages", "completion", "reply",
                "blocks", "parts", "body", "data", "results", "returnvalue", "tool_result", "observation",
                "generated_text", "response_text", "final_response", "summary", "choices", "tool_output",
                "structuredcontent")
"""Keys an envelope holds its content under (a user's input, a tool's or model's output)."""
_META = re.compile(
    r"(?:.*_)?(?:ids?|type|types|kind|role|name|names|status|index|error|errors|is_?error|meta|metadata|"
    r"annotations|tool_?call_?id|tool_?use_?id|call_?id|block_?type|mime_?type|format|finish_?reason|"
    r"usage|timestamp|created(?:_at)?|model|raw|raw_?input|raw_?output|raw_?response|additional_?kwargs|"
    r"response_?metadata|artifact|logprobs|tool_?name|tool_?kwargs|tool_?calls|citations|refusal|audio|"
    r"current_?agent_?name|agent_?name|sender|source|signature|cache_?control|lc|graph|config|version|"
    r"extra|tags|event|events|token_?usage|duration|elapsed|latency|cost|object|hash|score|uuid|"
    r"retry_?messages|structured_?response|sanitize_inputs_outputs|isrerror|title|description|"
    r"kwargs|color|run_?id|parent_?run_?id|callbacks|serialized|options|settings|"
    r"(?:start|end)_?(?:char_?)?idx|excluded_\w+|\w+_template|\w+_separator)",
    re.IGNORECASE)
"""Bookkeeping keys: what may stand beside an envelope's content without being content."""


def _meta(key: Any) -> bool:
    """Whether ``key`` is a bookkeeping key (a long key never is: nor is it matched, so a key from
    the wire costs no more than its first characters)."""
    return isinstance(key, str) and len(key) <= 64 and _META.fullmatch(key) is not None
_TEXT_BLOCKS = frozenset({"text", "output_text", "input_text", "content_text", "summary_text", None})
_TOOL_CALL_TYPES = frozenset({"tool_call", "function_call", "tool_use", "function", "toolcall", "tool-call"})
_ROLE_KEYS = ("role", "type", "sender", "author")
_USER_ROLES = frozenset({"user", "human", "humanmessage", "usermessage"})
_ASSISTANT_ROLES = frozenset({"assistant", "ai", "aimessage", "model", "assistantmessage", "bot"})
_TOOL_ROLES = frozenset({"tool", "function", "toolmessage", "tool-response", "ipython"})

USER, ASSISTANT, TOOL = "user", "assistant", "tool"


class _Fail(Exception):
    """The value does not unwrap to the plain thing."""


def _empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, (list, tuple, Mapping)) and not value)


def _fields(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return public_fields(value)
    if isinstance(value, Obj):
        return public_fields(value.fields)
    return None


def public_fields(fields: Mapping[str, Any]) -> Mapping[str, Any]:
    """An object's private attributes dumped as they are (Haystack's ``{"_role": ..., "_content":
    ...}``) under the names they stand for: every key ``_name``, none ``__name``."""
    if fields and all(isinstance(k, str) and k[:1] == "_" and k[1:2] not in ("_", "") for k in fields):
        return {k[1:]: v for k, v in fields.items()}
    return fields


def _role(fields: Mapping[str, Any]) -> str | None:
    for key in _ROLE_KEYS:
        role = fields.get(key)
        if isinstance(role, str):
            low = role.lower()
            if low in _USER_ROLES:
                return USER
            if low in _ASSISTANT_ROLES:
                return ASSISTANT
            if low in _TOOL_ROLES:
                return TOOL
            if low in ("system", "developer", "systemmessage"):
                return "system"
    return None


def _is_message(fields: Mapping[str, Any]) -> bool:
    return _role(fields) is not None and any(k in fields for k in ("content", "parts", "text", "blocks"))


def _serialized(value: Any) -> Any:
    """LangChain's serialized forms as the plain mapping they stand for: ``{"lc": 1, "kwargs": {...},
    "id": [..., "AIMessage"]}`` and ``{"type": "ai", "data": {...}}``."""
    fields = _fields(value)
    if fields is None:
        return value
    if fields.get("lc") is not None and isinstance(fields.get("kwargs"), Mapping):
        ids = fields.get("id")
        cls = ids[-1] if isinstance(ids, (list, tuple)) and ids else ""
        kwargs = fields["kwargs"]
        return {**kwargs, "type": kwargs.get("type") or str(cls).removesuffix("Message").lower()}
    data = fields.get("data")
    if isinstance(data, Mapping) and isinstance(fields.get("type"), str) and set(fields) <= {"type", "data"}:
        return {**data, "type": data.get("type") or fields["type"]}
    return value


def _as_text(value: Any, role: str | None, depth: int) -> str:
    """The plain text ``value`` holds for a reader of ``role`` (a user's input, an output), else
    raises :class:`_Fail`."""
    if depth > MAX_DEPTH:
        raise _Fail
    if isinstance(value, str):
        parsed = parse(value) if depth < MAX_DEPTH else NOT_PARSED
        if parsed is NOT_PARSED:
            if looks_like_repr(value):
                raise _Fail
            return value
        return _as_text(parsed, role, depth + 1)
    if isinstance(value, (bool, bytes)) or value is None:
        raise _Fail
    if isinstance(value, (int, float)):
        if role == USER:
            raise _Fail
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return _list_text(value, role, depth)
    value = _serialized(value)
    fields = _fields(value)
    if fields is None:
        raise _Fail
    if _is_message(fields):
        found = _role(fields)
        if role is not None and found not in (role, TOOL if role == ASSISTANT else role):
            raise _Fail
        for key in ("content", "parts", "blocks", "text"):
            if not _empty(fields.get(key)):
                return _as_text(fields[key], role, depth + 1)
        raise _Fail
    block_type = fields.get("type", fields.get("block_type"))
    if (isinstance(block_type, str) or block_type is None) and "text" in fields and \
            isinstance(fields["text"], str) and all(_meta(k) for k in fields if k != "text"):
        if block_type in _TEXT_BLOCKS or (isinstance(block_type, str) and block_type.endswith("text")):
            return fields["text"]
        raise _Fail
    if isinstance(value, Obj) and not fields and len(value.args) == 1:
        return _as_text(value.args[0], role, depth + 1)
    keys = _OUTPUT_KEYS if role != USER else _USER_KEYS
    if len(fields) == 1 and not isinstance(value, Obj):
        (name, inner), = fields.items()
        if isinstance(name, str) and name.lower() not in keys and isinstance(inner, Mapping):
            # a named component's state (a pipeline's ``{"researcher": {"messages": [...]}}``)
            return _as_text(inner, role, depth + 1)
    content = [k for k in fields if isinstance(k, str) and k.lower() in keys and not _empty(fields[k])]
    others = [k for k in fields if k not in content and not _empty(fields[k])]
    if len(content) > 1:
        # ``text`` beside ``content`` (a block with both), ``messages`` beside ``input``: one of a pair
        # that says the same thing is fine; two different contents are ambiguous.
        texts = set()
        for key in content:
            try:
                texts.add(_as_text(fields[key], role, depth + 1))
            except _Fail:
                raise _Fail from None
        if len(texts) != 1:
            raise _Fail
        return texts.pop()
    if len(content) == 1:
        text = _as_text(fields[content[0]], role, depth + 1)
        for key in others:  # beside the content, bookkeeping or the same text again (``last_message``)
            if not _bookkeeping(key, fields[key]) and _as_text(fields[key], role, depth + 1) != text:
                raise _Fail
        return text
    raise _Fail


def _bookkeeping(key: Any, value: Any) -> bool:
    """Whether a field beside an envelope's content is bookkeeping: a bookkeeping key, or a flag or
    number (an option: ``"stream": false``, ``"index": 0``)."""
    return (_meta(key)
            or isinstance(value, (bool, int, float)))


def _list_text(items: Sequence[Any], role: str | None, depth: int) -> str:
    """A list as text: content blocks (every item text), or messages (the last of the role)."""
    if not items:
        raise _Fail
    messages = [_serialized(i) for i in items]
    if all((f := _fields(m)) is not None and _is_message(f) for m in messages):
        wanted = role if role is not None else ASSISTANT
        for message in reversed(messages):
            fields = _fields(message)
            assert fields is not None
            found = _role(fields)
            if found == wanted or (wanted == ASSISTANT and found == TOOL and role is None):
                try:
                    return _as_text(message, None, depth + 1)
                except _Fail:
                    continue
        raise _Fail
    texts = []
    for item in items:
        fields = _fields(item)
        if isinstance(item, str):
            texts.append(item)
        elif fields is not None and fields.get("type") in _TOOL_CALL_TYPES:
            continue  # a tool call beside the text (an output): not text, not content
        elif fields is not None:
            texts.append(_as_text(item, role, depth + 1))
        else:
            raise _Fail
    if not texts:
        raise _Fail
    return "\n".join(texts)


_CALL_KEYS = frozenset({"name", "id", "type", "tool_call_id", "call_id"})
"""What stands beside ``args`` in a tool-call object."""
_ARG_KEYS = ("arguments", "args", "kwargs", "input", "inputs", "parameters", "params", "tool_input",
             "tool_kwargs", "tool_args", "function_args", "call_args", "input_arguments")
"""Keys an envelope or a tool-call object holds the arguments under."""


def is_schema(value: Any) -> bool:
    """A JSON schema of parameters (``{"type": "object", "properties": ...}``, or ``{name: {"type":
    ..., "description": ...}}`` as some frameworks write one): not arguments."""
    if not isinstance(value, Mapping) or not value:
        return False
    if "properties" in value and value.get("type") in ("object", None) and isinstance(value.get("properties"),
                                                                                     Mapping):
        return True
    if value.get("type") == "object" and set(value) <= {"type", "required", "additionalProperties", "title",
                                                         "description", "$defs", "definitions"}:
        return True
    return all(isinstance(v, Mapping) and "type" in v and set(v) <= _SCHEMA_KEYS for v in value.values())


_SCHEMA_KEYS = frozenset({"type", "description", "nullable", "default", "enum", "items", "title", "format",
                          "anyOf", "oneOf", "required", "properties", "additionalProperties", "minimum",
                          "maximum", "examples"})


def _as_arguments(value: Any, depth: int) -> Mapping[str, Any]:
    """The arguments ``value`` holds, as a mapping, else raises :class:`_Fail`."""
    if depth > MAX_DEPTH:
        raise _Fail
    if isinstance(value, str):
        parsed = parse(value)
        if parsed is NOT_PARSED or isinstance(parsed, str) and depth >= MAX_DEPTH:
            raise _Fail
        return _as_arguments(parsed, depth + 1)
    value = _serialized(value)
    if isinstance(value, Obj):
        found = [k for k in value.fields
                 if k.lower() in _ARG_KEYS and isinstance(value.fields[k], (Mapping, str, Obj))]
        if len(found) == 1:
            return _as_arguments(value.fields[found[0]], depth + 1)
        raise _Fail
    if not isinstance(value, Mapping):
        raise _Fail
    if is_schema(value):
        raise _Fail
    keys = set(value)
    if value.get("__type") == "tool_call_with_context" and isinstance(value.get("tool_call"), Mapping):
        return _as_arguments(value["tool_call"], depth + 1)
    if keys & {"input_str", "inputs"} and keys <= {"input_str", "inputs", "tool_call_id", "run_id",
                                                   "parent_run_id", "tags", "metadata", "name", "serialized",
                                                   "kwargs", "color", "callbacks"}:
        # A callback's input: its ``inputs`` mapping, else its ``input_str`` read back.
        if isinstance(value.get("inputs"), Mapping) and value["inputs"]:
            return _as_arguments(value["inputs"], depth + 1)
        if isinstance(value.get("input_str"), str):
            return _as_arguments(value["input_str"], depth + 1)
        raise _Fail
    if "kwargs" in keys or "args" in keys:
        rest = {k for k in keys - {"args", "kwargs"} if not _empty(value[k])}
        args, kwargs = value.get("args"), value.get("kwargs")
        if isinstance(args, Mapping) and "kwargs" not in keys and not rest - _CALL_KEYS:
            return _as_arguments(args, depth + 1)  # a tool-call object: {"name", "args", "id"}
        if not rest or all(_meta(k) for k in rest):
            if isinstance(kwargs, (Mapping, str)) and _empty(args):
                return _as_arguments(kwargs, depth + 1) if kwargs else {}
            if _empty(kwargs) and isinstance(args, (list, tuple)) and len(args) == 1 and \
                    isinstance(_serialized(args[0]), Mapping):
                return _as_arguments(args[0], depth + 1)
            if _empty(kwargs) and _empty(args):
                return {}
            raise _Fail  # positional arguments: not an object
    found = [k for k in keys if k.lower() in _ARG_KEYS and not _empty(value[k])]
    others = [k for k in keys if k not in found and not _empty(value[k])]
    if len(found) == 1 and all(_meta(k) for k in others):
        # ``{"input": {...}, "options": null}``, ``{"tool_name": ..., "arguments": {...}}``: an envelope
        # when what it holds is an object (``{"input": "Paris"}`` may be a tool's own parameter).
        inner = value[found[0]]
        parsed = parse(inner) if isinstance(inner, str) else inner
        if isinstance(_serialized(parsed), (Mapping, Obj)):
            return _as_arguments(parsed, depth + 1)
        if others:
            raise _Fail
    function = value.get("function")
    if isinstance(function, Mapping) and ("arguments" in function or "args" in function):
        return _as_arguments(function.get("arguments", function.get("args")), depth + 1)
    return value


def _as_result(value: Any, depth: int) -> str:
    """A tool's result as its text, or as JSON when it is data; raises :class:`_Fail` for an envelope
    or object that does not unwrap."""
    if isinstance(value, str):
        parsed = parse(value)
        if parsed is NOT_PARSED:
            if looks_like_repr(value):
                raise _Fail
            return value
        value = parsed
    try:
        return _as_text(value, ASSISTANT, depth)
    except _Fail:
        pass
    value = _serialized(value)
    if isinstance(value, (Obj, str, bytes)):
        raise _Fail
    fields = _fields(value)
    if fields is not None:
        enveloped = any(isinstance(k, str) and k.lower() in _OUTPUT_KEYS for k in fields) and all(
            isinstance(k, str) and (k.lower() in _OUTPUT_KEYS or _meta(k) or _empty(fields[k]))
            for k in fields)
        if _is_message(fields) or enveloped:
            raise _Fail  # an envelope whose content is not text
    elif isinstance(value, (list, tuple)):
        if any(_contains_obj(v) for v in value) or any(
                (f := _fields(v)) is not None and (_is_message(f) or f.get("type") in _TOOL_CALL_TYPES | {
                    "image", "image_url", "audio", "file", "resource", "blob", "uri"})
                for v in value):
            raise _Fail
    if _contains_obj(value):
        raise _Fail
    return _dumps(value)


def _contains_obj(value: Any, depth: int = 0) -> bool:
    """Whether data holds an object that is a framework's serialization, not a tool's data: a Python
    repr's object, a LangChain serialized object, a message."""
    if isinstance(value, Obj):
        return True
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, Mapping):
        if (value.get("lc") is not None and "kwargs" in value) or value.get("type") == "constructor" \
                or _is_message(value):
            return True
        return any(_contains_obj(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_contains_obj(v, depth + 1) for v in value)
    return False


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def dumps(value: Any) -> str:
    """JSON text as the graph writes arguments (compact, readable, non-ASCII kept)."""
    return _dumps(value)


# -- the rule ----------------------------------------------------------------------------------------


def _raw(value: Any) -> str:
    return value if isinstance(value, str) else _dumps(value)


@lru_cache(maxsize=8192)
def _check_text(prop: str, raw: str) -> Verdict:
    if not raw:
        return ABSENT
    role = {QUERY: USER, ANSWER: ASSISTANT, CONTENT: ASSISTANT}.get(prop)
    try:
        if prop == ARGUMENTS:
            args = _as_arguments(raw, 0)
            if _has_marker(args):
                return Verdict(None, raw, True)
            if _contains_obj(args):
                raise _Fail
            return Verdict(_dumps(dict(args)))
        text = _as_result(raw, 0) if prop == OBSERVATION else _as_text(raw, role, 0)
    except (_Fail, RecursionError):
        return Verdict(None, raw, is_marker(raw))
    try:
        marked = is_marker(text) or (prop == OBSERVATION and looks_structured(text)
                                     and _has_marker(parse(text)))
    except _Fail:
        return Verdict(None, raw)  # too deep to tell whether a marker is in it
    if marked:
        return Verdict(None, raw, True)
    if not text.strip() and text != raw:
        return Verdict(None, raw)  # an envelope of nothing
    return Verdict(text)


def check(prop: str, value: Any) -> Verdict:
    """What may be written as the property ``prop`` (one of :data:`PROPERTIES`) for ``value`` as a
    dialect found it (text, or structured data): the plain value, or a verdict of not captured (with
    the raw value) or redacted.  Never raises."""
    if value is None:
        return ABSENT
    if isinstance(value, (bytes, bytearray)):
        return Verdict(None, repr(bytes(value)))  # bytes are no one's text
    if not isinstance(value, str):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and prop in (OBSERVATION, ANSWER):
            return Verdict(json.dumps(value))
        try:
            value = _dumps(value)
        except (TypeError, ValueError, RecursionError):
            return Verdict(None, repr(value))
    return _check_text(prop, value)
