"""The shared message readers (``mapping/dialects/content.py``): reading only the tail of an input
(``tail=True``, what the readers need: the tool results it ends with, the assistant messages before
them, and the last user message with text) gives exactly those messages of the whole input read
(``tail=False``), in every format the readers know, mixed: OpenAI chat, the GenAI conventions'
``parts``, LangChain's serialized constructors and dumps (with and without their ``type``), OpenAI
Responses items, and the flattened keys of OpenInference and OpenLLMetry.  The tail is found from
roles read cheaply before any message is read whole; this checks they are the roles the whole read
finds."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_prov.mapping.dialects import content as C

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.sampled_from(["", "hello", "the answer is 4", "é ☺"])
call_id = st.sampled_from(["call_1", "call_2", ""])
ROLES = {"user": ("user", "human"), "assistant": ("assistant", "ai"), "tool": ("tool",),
         "system": ("system", "developer")}
LC_CLASS = {"user": "HumanMessage", "assistant": "AIMessage", "tool": "ToolMessage",
            "system": "SystemMessage"}
LC_TYPE = {"user": "human", "assistant": "ai", "tool": "tool", "system": "system"}


@st.composite
def message(draw: st.DrawFn) -> dict[str, Any]:
    """One message of any role, in any of the formats."""
    role = draw(st.sampled_from(sorted(ROLES)))
    said, cid = draw(text), draw(call_id)
    fmt = draw(st.sampled_from(["openai", "parts", "lc", "lc-no-type", "dump", "dump-no-type", "responses"]))
    if fmt == "openai":
        msg: dict[str, Any] = {"role": draw(st.sampled_from(ROLES[role])), "content": said}
        if draw(st.booleans()):
            msg["kwargs"] = {}  # a stray key: not a LangChain constructor without "lc"
        if role == "tool":
            msg["tool_call_id"] = cid
        if role == "assistant" and draw(st.booleans()):
            msg["tool_calls"] = [{"id": cid, "function": {"name": "search", "arguments": "{}"}}]
        return msg
    if fmt == "parts":
        part = ({"type": "tool_call_response", "id": cid, "response": said} if role == "tool"
                else {"type": "text", "content": said})
        return {"role": draw(st.sampled_from(ROLES[role])), "parts": [part]}
    if fmt.startswith("lc"):
        kwargs: dict[str, Any] = {"content": said}
        if fmt == "lc":
            kwargs["type"] = LC_TYPE[role]
        if role == "tool":
            kwargs["tool_call_id"] = cid
        return {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", LC_CLASS[role]],
                "kwargs": kwargs}
    if fmt.startswith("dump"):
        data: dict[str, Any] = {"content": said}
        if fmt == "dump":
            data["type"] = LC_TYPE[role]
        if role == "tool":
            data["tool_call_id"] = cid
        return {"type": LC_TYPE[role], "data": data}
    # OpenAI Responses items: a tool result, a call, reasoning, or a message with its role
    if role == "tool":
        return {"type": "function_call_output", "call_id": cid, "output": said}
    if role == "assistant":
        return draw(st.sampled_from([
            {"type": "function_call", "call_id": cid, "name": "search", "arguments": "{}"},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": said}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": said}]},
        ]))
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": said}]}


def wanted(messages: list[C.Message]) -> list[C.Message]:
    """What an input's readers need, from the whole input (the rule of ``content._wanted``'s
    docstring): the tool results it ends with, the assistant messages before them, and before those
    the last user message with text; in order."""
    i = len(messages) - 1
    while i >= 0 and messages[i].role == C.TOOL:
        i -= 1
    while i >= 0 and messages[i].role == C.ASSISTANT:
        i -= 1
    question = next((m for m in reversed(messages[:i + 1]) if m.role == C.USER and m.texts), None)
    return ([question] if question else []) + messages[i + 1:]


@SETTINGS
@given(items=st.lists(message(), max_size=8), as_text=st.booleans(), wrapped=st.booleans())
def test_the_tail_of_an_input_is_the_tail_of_the_whole_read(items: list[dict[str, Any]], as_text: bool,
                                                             wrapped: bool) -> None:
    value: Any = {"messages": items} if wrapped else items
    if as_text:
        value = json.dumps(value)
    whole = C.messages_of(value)
    assert whole is not None and len(whole) == len(items)
    assert C.messages_of(value, tail=True) == wanted(whole)


@st.composite
def flat_input(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """Messages flattened as OpenInference (``llm.input_messages.{i}.message.*``) or OpenLLMetry
    (``gen_ai.prompt.{i}.*``) write them, indices not necessarily from 0 or contiguous."""
    oi = draw(st.booleans())
    prefix, key = ("llm.input_messages.", "message.") if oi else ("gen_ai.prompt.", "")
    attrs: dict[str, Any] = {}
    indices = sorted(draw(st.sets(st.integers(0, 20), max_size=8)))
    for i in indices:
        role = draw(st.sampled_from(sorted(ROLES)))
        attrs[f"{prefix}{i}.{key}role"] = draw(st.sampled_from(ROLES[role]))
        attrs[f"{prefix}{i}.{key}content"] = draw(text)
        if role == "tool":
            attrs[f"{prefix}{i}.{key}tool_call_id"] = draw(call_id)
    return attrs, prefix


@SETTINGS
@given(flat=flat_input())
def test_the_tail_of_a_flattened_input_is_the_tail_of_the_whole_read(
        flat: tuple[dict[str, Any], str]) -> None:
    attrs, prefix = flat
    whole = C.flat_messages(attrs, prefix)
    if whole is None:
        assert not attrs and C.flat_messages(attrs, prefix, tail=True) is None
        return
    assert C.flat_messages(attrs, prefix, tail=True) == wanted(whole)
    assert C.flat_messages(C.flat_groups(attrs, [prefix]), prefix, tail=True) == wanted(whole)


def test_roles_in_every_spelling() -> None:
    for spelling, role in [("Human", "user"), ("AIMessage", "assistant"), ("model", "assistant"),
                           ("function", "tool"), ("tool-response", "tool"), ("ipython", "tool"),
                           ("developer", "system"), ("SystemMessage", "system"), ("tool-call", "assistant"),
                           ("critic", "critic"), (None, "")]:
        assert C.role_of(spelling) == role, spelling


# -- each reader's contract, from its docstring, value by value ----------------------------------------


def M(role: str, texts: tuple[str, ...] = (), reasoning: tuple[str, ...] = (),
      calls: tuple[tuple[str | None, str, str | None], ...] = (),
      responses: tuple[tuple[str | None, str], ...] = ()) -> C.Message:
    return C.Message(role, list(texts), list(reasoning), [C.Request(*c) for c in calls], list(responses))


def test_to_message_in_every_format() -> None:
    assert C.to_message({"role": "user", "content": "hi"}) == M("user", ("hi",))
    blocks = [{"type": "text", "text": "a"}, "b", {"type": "image_url"}]
    assert C.to_message({"role": "assistant", "content": blocks}) == M("assistant", ("a", "b"))
    assert C.to_message({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "function": {"name": "search", "arguments": '{"q": "x"}'}},
        {"id": "", "name": "calc", "args": {"e": "1+1"}}, "junk", {"id": "c3"}]}) == \
        M("assistant", calls=(("c1", "search", '{"q": "x"}'), (None, "calc", '{"e": "1+1"}')))
    assert C.to_message({"role": "tool", "tool_call_id": "c1", "content": "42"}) == \
        M("tool", responses=(("c1", "42"),))
    assert C.to_message({"role": "tool", "call_id": "", "content": "42"}) == \
        M("tool", responses=((None, "42"),))
    assert C.to_message({"role": "assistant", "parts": [
        {"type": "reasoning", "content": "hmm"}, {"type": "text", "content": "ok"},
        {"type": "tool_call", "id": "c2", "name": "search", "arguments": {"q": "y"}}]}) == \
        M("assistant", ("ok",), ("hmm",), (("c2", "search", '{"q": "y"}'),))
    assert C.to_message({"role": "user", "parts": [
        {"type": "tool_call_response", "id": "c2", "response": "found"},
        {"type": "tool_result", "tool_use_id": "c3", "content": "more"}]}) == \
        M("tool", responses=(("c2", "found"), ("c3", "more")))  # results in the user's turn: the tools'
    mixed = [{"type": "text", "text": "and?"}, {"type": "tool_result", "tool_use_id": "c4", "content": "x"}]
    assert C.to_message({"role": "user", "content": mixed}) == \
        M("user", ("and?",), responses=(("c4", "x"),))  # with the user's words: the user's
    assert C.to_message({"type": "reasoning", "summary": [{"text": "s1"}, {"text": "s2"}, "x"]}) == \
        M("assistant", reasoning=("s1", "s2"))
    assert C.to_message({"role": "assistant", "content": [{"type": "thinking", "thinking": "deep"}]}) == \
        M("assistant", reasoning=("deep",))
    assert C.to_message({"type": "function_call", "call_id": "c4", "name": "f", "arguments": "{}"}) == \
        M("assistant", calls=(("c4", "f", "{}"),))
    assert C.to_message({"type": "function_call_output", "call_id": "c4", "output": "done"}) == \
        M("tool", responses=(("c4", "done"),))
    assert C.to_message({"lc": 1, "id": ["x", "AIMessage"], "kwargs": {"content": "yo"}}) == \
        M("assistant", ("yo",))
    assert C.to_message({"lc": 1, "id": [], "kwargs": {"content": "?", "type": "human"}}) == M("user", ("?",))
    assert C.to_message({"type": "human", "data": {"content": "q?"}}) == M("user", ("q?",))
    assert C.to_message("not a message") is None


def test_last_text_trailing_responses_last_output_output_and_thought() -> None:
    user, answer = M("user", ("q",)), M("assistant", ("a1",), ("r1",), (("c1", "t", None),))
    second, results = M("assistant", ("a2",)), M("tool", responses=(("c1", "x"), ("c2", "y")))
    messages = [user, answer, second, results, M("tool", responses=((None, "z"),))]
    assert C.last_text(messages, "assistant") == "a2"
    assert C.last_text(messages, "user") == "q"
    assert C.last_text([M("user")], "user") is None
    assert C.trailing_responses(messages) == [("c1", "x"), ("c2", "y"), (None, "z")]
    assert C.trailing_responses([user]) == []
    assert C.last_output(messages) == [answer, second]
    assert C.last_output([user, results]) == []
    assert C.output_of([answer, M("", ("plain",)), M("user", ("no",)), second]) == \
        (["a1", "plain", "a2"], ["r1"], [C.Request("c1", "t", None)])
    assert C.thought_of(["why", " ", "why"], ["so", "why"]) == "why\nso"
    assert C.thought_of([], [" "]) is None


def test_tool_arguments_unwrapped() -> None:
    assert C.arguments(None) == (None, None)
    assert C.arguments('{"q": "x"}') == ('{"q": "x"}', None)
    assert C.arguments({"q": "é"}) == ('{"q": "é"}', None)
    assert C.arguments('"just text"') == (None, "just text")
    assert C.arguments("not json") == (None, "not json")
    assert C.arguments("42") == ("42", None)  # JSON, not a bare string
    assert C.arguments(5) == ("5", None)
    assert C.arguments('{"args": [], "kwargs": {"city": "Paris"}}') == ('{"city": "Paris"}', None)
    assert C.arguments({"args": ["Paris"], "kwargs": {}}) == (None, "Paris")
    assert C.arguments({"args": [1, 2], "kwargs": {}, "sanitize_inputs_outputs": True}) == ("[1, 2]", None)
    assert C.arguments({"args": [], "kwargs": {}, "other": 1}) == \
        ('{"args": [], "kwargs": {}, "other": 1}', None)
    assert C.arguments({"__type": "tool_call_with_context", "tool_call": {"args": {"a": 1}, "id": "c"}}) == \
        ('{"a": 1}', None)
    assert C.arguments([1, "a"]) == ('[1, "a"]', None)


def test_parameter_names() -> None:
    assert C.parameter_names({"type": "object", "properties": {"a": {}, "b": {}}}) == ["a", "b"]
    assert C.parameter_names('{"type": "object"}') == []
    assert C.parameter_names({"q": {"type": "string"}, "n": "x"}) == ["q"]
    assert C.parameter_names("junk") == []


def test_tool_results_as_text() -> None:
    assert C.result_text(None) == (None, None)
    assert C.result_text("plain") == ("plain", None)
    assert C.result_text('{"type": "tool", "data": {"content": "42", "tool_call_id": "c1"}}') == ("42", "c1")
    assert C.result_text({"lc": 1, "kwargs": {"content": "42", "tool_call_id": "c1", "type": "tool"}}) == \
        ("42", "c1")
    assert C.result_text({"type": "tool", "content": [{"type": "text", "text": "a"},
                                                      {"type": "text", "text": "b"}]}) == ("a\nb", None)
    assert C.result_text({"type": "tool", "tool_call_id": "", "content": [{"type": "image"}]}) == \
        ('[{"type": "image"}]', None)
    assert C.result_text({"tool_call_id": "c9", "content": {"k": 1}}) == ('{"k": 1}', "c9")
    assert C.result_text({"a": 1}) == ('{"a": 1}', None)
    assert C.result_text('{"a": 1}') == ('{"a": 1}', None)
    assert C.result_text(5) == ("5", None)


def test_documents_and_their_ids() -> None:
    assert C.documents('[{"id": 1}, 2]') == [{"id": 1}]
    assert C.documents({"documents": [{"id": "a"}, "b"]}) == [{"id": "a"}]
    assert C.documents('{"x": 1}') is None
    assert C.documents("text") is None
    assert C.own_id({"id": 0}) == "0"
    assert C.own_id({"id": ""}) is None
    assert C.document_id({"id": 5, "metadata": {"chunk_id": "c"}}) == "5"
    assert C.document_id({"id": "", "metadata": {"chunk_id": "c"}}) == "c"
    assert C.document_id({"metadata": '{"doc_id": "d"}'}) == "d"
    assert C.document_id({"document.metadata": {"document_id": "e"}}) == "e"
    assert C.document_id({"metadata": {"doc_id": "d", "chunk_id": "c"}}) == "c"
    assert C.document_id({"metadata": {"id": "i", "chunk_id": "c"}}) == "i"
    assert C.document_id({"metadata": {"id": "", "chunk_id": None}}) is None
    assert C.document_id({}) is None
    flat = {"p.0.document.id": "a", "p.0.document.content": "x", "p.2.document.score": 0.5, "p.x.y": 1,
            "other.0.document.id": "b"}
    assert C.flat_documents(flat, "p.") == [{"id": "a", "content": "x"}, {"score": 0.5}]
    assert C.flat_documents({"other": 1}, "p.") is None


def test_flattened_messages_with_contents_and_calls() -> None:
    attrs = {
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.contents.0.message_content.type": "text",
        "llm.input_messages.0.message.contents.0.message_content.text": "part one",
        "llm.input_messages.0.message.contents.1.message_content.text": "part two",
        "llm.input_messages.1.message.role": "assistant",
        "llm.input_messages.1.message.tool_calls.0.tool_call.id": "c1",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "search",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": '{"q": 1}',
        "llm.input_messages.3.message.role": "tool",
        "llm.input_messages.3.message.tool_call_id": "c1",
        "llm.input_messages.3.message.contents.0.message_content.text": "result",
        "llm.input_messages.x.message.role": "user",
    }
    assert C.flat_messages(attrs, "llm.input_messages.") == [
        M("user", ("part one", "part two")), M("assistant", calls=(("c1", "search", '{"q": 1}'),)),
        M("tool", responses=(("c1", "result"),))]
    traceloop = {"gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "hi",
                 "gen_ai.completion.0.tool_calls.0.name": "f",
                 "gen_ai.completion.0.tool_calls.0.arguments": "{}"}
    assert C.flat_messages(traceloop, "gen_ai.completion.") == \
        [M("assistant", ("hi",), calls=((None, "f", "{}"),))]
    assert C.flat_messages({}, "gen_ai.completion.") is None
