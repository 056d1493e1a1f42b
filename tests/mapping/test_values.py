"""The one rule every content value passes (otel_prov/mapping/values.py): the plain thing, or not
captured with the raw value kept apart, or redacted -- never an envelope, a repr or a marker as
content.

The table is of shapes real instrumentations record (quoted from the interop dumps), each with what
the rule must make of it; the properties say that whatever wraps a value, the rule gives that value
or nothing, and that a marker anywhere is never content.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_prov.mapping import values as V

NC = "not captured"
RED = "redacted"


def verdict(prop: str, value: Any) -> str | None:
    got = V.check(prop, value)
    if got.redacted:
        assert got.value is None and got.raw is not None
        return RED
    if got.value is None:
        return NC if got.raw is not None else None
    assert got.raw is None
    return got.value


ARGS = {"question": "capital of France"}

CASES = [
    # -- plain values are kept as they are
    (V.QUERY, "What is the capital of France?", "What is the capital of France?"),
    (V.OBSERVATION, "Paris", "Paris"),
    (V.OBSERVATION, "19949.2", "19949.2"),
    (V.OBSERVATION, 19949.2, "19949.2"),
    (V.ARGUMENTS, json.dumps(ARGS), json.dumps(ARGS)),
    (V.ARGUMENTS, ARGS, json.dumps(ARGS)),
    (V.ARGUMENTS, "{}", "{}"),
    (V.ANSWER, "About 19,949 people per km².", "About 19,949 people per km²."),
    (V.OBSERVATION, '{"temperature": 21, "unit": "C"}', '{"temperature": 21, "unit": "C"}'),
    (V.OBSERVATION, "[1, 2, 3]", "[1, 2, 3]"),
    # a tool's own parameter named like an envelope key is an argument, not an envelope
    (V.ARGUMENTS, '{"input": "Paris"}', '{"input": "Paris"}'),
    (V.ARGUMENTS, '{"query": "x", "top_k": 3}', '{"query": "x", "top_k": 3}'),
    # an object written as its fields (a pydantic model's str()), or that does not split cleanly
    (V.OBSERVATION, "status='success' result='Paris' error=None images=None", "Paris"),
    (V.OBSERVATION, "name='x' value='it is a=b'", NC),
    (V.OBSERVATION, "x=1 y=2", "x=1 y=2"),
    # private attributes dumped, a named component's state, the same text twice
    (V.QUERY, {"_role": "user", "_content": [{"text": "Hi"}], "_meta": {}}, "Hi"),
    (V.ANSWER, {"researcher": {"messages": [{"role": "user", "content": "Q"},
                                            {"role": "assistant", "content": "A"}],
                               "last_message": {"role": "assistant", "content": "A"}}}, "A"),
    (V.ANSWER, {"researcher": {"messages": [{"role": "assistant", "content": "A"}],
                               "last_message": {"role": "assistant", "content": "B"}}}, NC),
    # a word a marker is made of is a value inside arguments, and a key is never a marker bare
    (V.ARGUMENTS, '{"visibility": "hidden"}', '{"visibility": "hidden"}'),
    (V.ARGUMENTS, '{"REDACTED": "0"}', '{"REDACTED": "0"}'),
    # text that merely mentions brackets or code is text
    (V.ANSWER, "Use f(x) = 2x [see note]", "Use f(x) = 2x [see note]"),
    (V.THOUGHT, "I need the capital first", "I need the capital first"),
    # -- envelopes unwrap to what they hold
    (V.OBSERVATION, '{"result": "Paris"}', "Paris"),
    (V.OBSERVATION, {"status": "success", "content": [{"type": "text", "text": "Paris"}]}, "Paris"),
    (V.OBSERVATION, '[{"type": "text", "text": "Paris"}]', "Paris"),
    (V.OBSERVATION, {"content": [{"type": "text", "text": "Paris"}], "isError": False}, "Paris"),
    (V.OBSERVATION, {"content": "Paris", "tool_call_id": "call_1", "type": "tool", "name": "kq"}, "Paris"),
    (V.OBSERVATION, {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", "ToolMessage"],
                     "kwargs": {"content": "Paris", "tool_call_id": "call_1", "type": "tool"}}, "Paris"),
    (V.OBSERVATION, "ToolOutput(content='Paris', tool_name='knowledge_query', raw_input={'args': ()},"
                    " raw_output='Paris', is_error=False)", "Paris"),
    (V.ANSWER, "StopEvent(result=AgentOutput(response=ChatMessage(role=<MessageRole.ASSISTANT: 'assistant'>,"
               " content='About 19,949 people per km².', additional_kwargs={})))",
     "About 19,949 people per km²."),
    (V.ANSWER, json.dumps([{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "A."}]), "A."),
    (V.ANSWER, {"messages": [{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "A."}]},
     "A."),
    (V.QUERY, {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Q?"}]},
     "Q?"),
    (V.QUERY, '{"input": "Q?"}', "Q?"),
    (V.QUERY, [{"role": "user", "parts": [{"type": "text", "content": "Q?"}]}], "Q?"),
    (V.ARGUMENTS, '{"args": [], "kwargs": {"question": "capital of France"}}', json.dumps(ARGS)),
    (V.ARGUMENTS, {"name": "knowledge_query", "args": ARGS, "id": "call_1", "type": "tool_call"},
     json.dumps(ARGS)),
    (V.ARGUMENTS, {"input_str": json.dumps(ARGS), "tool_call_id": "call_1"}, json.dumps(ARGS)),
    (V.ARGUMENTS, {"input_str": "{'question': 'capital of France'}", "run_id": "r"}, json.dumps(ARGS)),
    (V.ARGUMENTS, {"type": "function", "function": {"name": "kq", "arguments": json.dumps(ARGS)}},
     json.dumps(ARGS)),
    (V.ARGUMENTS, "{'question': 'capital of France'}", json.dumps(ARGS)),
    # -- what does not unwrap is not captured (the raw value kept apart)
    (V.ARGUMENTS, {"type": "object", "properties": {"question": {"type": "string"}}}, NC),
    (V.ARGUMENTS, {"question": {"type": "string", "description": "what to look up"}}, NC),
    (V.ARGUMENTS, '{"args": ["capital of France"], "kwargs": {}}', NC),  # positional: no names
    (V.ARGUMENTS, "capital of France", NC),
    (V.OBSERVATION, "<tools.Result object at 0x7f3a2c1b9d30>", NC),
    (V.OBSERVATION, "ToolResult(content=[TextContent(type='text', text='Paris'), Image(url='x')]", NC),
    (V.OBSERVATION, {"content": [{"type": "image", "url": "https://x/y.png"}]}, NC),
    (V.OBSERVATION, b"Paris", NC),
    (V.ANSWER, {"state": {"step": 3}, "answer": "A.", "plan": ["x"]}, NC),
    (V.ANSWER, {"result": "A.", "output": "B."}, NC),  # two different contents: ambiguous
    (V.QUERY, '{"query": "Q?", "documents": ["d1", "d2"], "top_k": 3, "filters": {"a": 1}}', NC),
    (V.QUERY, [{"role": "assistant", "content": "only the model spoke"}], NC),
    (V.ANSWER, {"result": ""}, NC),  # an envelope of nothing
    # -- redaction markers are redacted, never content, wherever they stand
    (V.QUERY, "[REDACTED]", RED),
    (V.QUERY, "__REDACTED__", RED),
    (V.OBSERVATION, "****", RED),
    (V.OBSERVATION, '{"result": "[REDACTED]"}', RED),
    (V.ANSWER, [{"role": "assistant", "content": "<redacted>"}], RED),
    (V.ARGUMENTS, '{"question": "[FILTERED]"}', RED),
    (V.THOUGHT, "***REDACTED***", RED),
    (V.CONTENT, "[hidden content]", RED),
    # -- nothing recorded is no verdict at all
    (V.QUERY, None, None),
    (V.QUERY, "", None),
]


@pytest.mark.parametrize(("prop", "value", "want"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_shape(prop: str, value: Any, want: str | None) -> None:
    assert verdict(prop, value) == want


def test_the_raw_value_is_kept_apart_as_recorded() -> None:
    raw = '{"args": ["capital of France"], "kwargs": {}}'
    assert V.check(V.ARGUMENTS, raw) == V.Verdict(None, raw)
    got = V.check(V.OBSERVATION, {"content": [{"type": "image", "url": "u"}]})
    assert got.value is None and json.loads(got.raw or "") == {"content": [{"type": "image", "url": "u"}]}


def test_parse_repr_never_evaluates() -> None:
    assert V.parse_repr("__import__('os').system('true')") is V.NOT_PARSED
    assert V.parse_repr("open('/etc/passwd').read()") is V.NOT_PARSED  # a call on a call: no
    assert V.parse_repr("(lambda: 1)()") is V.NOT_PARSED
    got = V.parse_repr("Msg(role=<Role.USER: 'user'>, parts=[Text('hi')], n=-2)")
    assert got == V.Obj("Msg", (), {"role": "user", "parts": [V.Obj("Text", ("hi",), {})], "n": -2})


def test_deep_and_huge_values_are_not_captured_and_never_raise() -> None:
    deep: Any = "Paris"
    for _ in range(V.MAX_DEPTH + 5):
        deep = {"result": deep}
    assert verdict(V.OBSERVATION, deep) == NC
    huge = json.dumps({"result": "x" * (V.MAX_PARSED + 1)})
    assert verdict(V.OBSERVATION, huge) == huge  # too big to unwrap: kept whole only as a tool's JSON ...
    assert verdict(V.ANSWER, "[" * 100_000) in (NC, "[" * 100_000)  # ... and nothing raises
    assert verdict(V.ARGUMENTS, "{" * 100_000) == NC


# -- properties ----------------------------------------------------------------------------------------

words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40)
plain = words.filter(lambda t: t.strip() != "" and not V.looks_structured(t) and not V.is_marker(t)
                     and not V.looks_like_repr(t))
"""Text no one could take for anything but text."""
MARKERS = st.sampled_from(["[REDACTED]", "__REDACTED__", "<redacted>", "****", "[FILTERED]", "REDACTED",
                           "***REDACTED***", "[redacted: pii]"])


def wrappers(prop: str) -> st.SearchStrategy[Any]:
    """Functions that wrap a text the way instrumentations do (JSON dumps of some, Python reprs of
    others), nested any number of times.  (A text block's text is text: a JSON string in one is
    what someone wrote, not an envelope.)"""
    role = "user" if prop == V.QUERY else "assistant"
    once = st.sampled_from([
        lambda v: {"result": v},
        lambda v: {"content": v, "type": "text_block", "id": "x1"},
        lambda v: [{"type": "text", "text": v}] if isinstance(v, str) and not V.looks_structured(v)
        else {"output": v},
        lambda v: {"role": role, "content": v},
        lambda v: {"messages": [{"role": "system", "content": "sys"}, {"role": role, "content": v}]},
        lambda v: {"output": v, "metadata": {"k": 1}, "status": "ok"},
        lambda v: json.dumps(v) if not isinstance(v, str) else {"result": v},
        lambda v: f"Result(value={v!r})",
        lambda v: {"lc": 1, "type": "constructor", "id": ["AIMessage"], "kwargs": {"content": v}},
    ])
    return st.lists(once, max_size=4)


def wrap(value: Any, layers: list[Any]) -> Any:
    for layer in layers:
        value = layer(value)
    return value


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([V.QUERY, V.THOUGHT, V.OBSERVATION, V.ANSWER, V.CONTENT]), plain, st.data())
def test_a_wrapped_text_comes_out_as_that_text_or_not_at_all(prop: str, text: str,
                                                              data: st.DataObject) -> None:
    """Whatever envelopes a text is in, the rule writes that very text, or nothing."""
    wrapped = wrap(text, data.draw(wrappers(prop)))
    if data.draw(st.booleans()):
        wrapped = json.dumps(wrapped)  # as an attribute holds it
    assert verdict(prop, wrapped) in (text, NC)


def test_a_marker_nested_deeper_than_the_rule_looks_is_never_content() -> None:
    """A mask four Python reprs deep inside the arguments' JSON (found by the property below): too deep
    to tell whether a marker is in it, so not plain -- never written as the arguments."""
    deep = "****"
    for _ in range(4):
        deep = f"Result(value={deep!r})"
    assert verdict(V.ARGUMENTS, {"question": deep}) in (RED, NC)
    nested: Any = deep
    for _ in range(12):
        nested = [nested]
    assert verdict(V.OBSERVATION, json.dumps({"result": {"value": nested}})) in (RED, NC)
    shallow = {"question": "Result(value='Paris')"}  # a repr that is the argument itself: kept
    assert verdict(V.ARGUMENTS, shallow) == json.dumps(shallow)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(V.PROPERTIES), MARKERS, st.data())
def test_a_marker_anywhere_is_never_content(prop: str, marker: str, data: st.DataObject) -> None:
    wrapped = wrap(marker, data.draw(wrappers(prop)))
    if prop == V.ARGUMENTS:
        wrapped = {"question": wrapped}
    assert verdict(prop, wrapped) in (RED, NC)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(st.characters(categories=("L",)), min_size=1, max_size=8),
                       st.one_of(plain, st.integers(), st.booleans()), min_size=1, max_size=12), st.data())
def test_wrapped_arguments_come_out_as_those_arguments_or_not_at_all(args: dict[str, Any],
                                                                    data: st.DataObject) -> None:
    envelope = data.draw(st.sampled_from([
        lambda a: a,
        lambda a: json.dumps(a),
        lambda a: {"args": [], "kwargs": a},
        lambda a: {"name": "tool", "args": a, "id": "call_9"},
        lambda a: {"input_str": json.dumps(a), "run_id": "r"},
        lambda a: {"type": "function", "function": {"name": "t", "arguments": json.dumps(a)}},
        lambda a: repr(a),
    ]))
    got = verdict(V.ARGUMENTS, envelope(args))
    assert got == NC or (got is not None and json.loads(got) == args) or V.is_schema(args)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(V.PROPERTIES), st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20),
              st.binary(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20))
def test_the_rule_never_raises_and_says_one_thing(prop: str, value: Any) -> None:
    got = V.check(prop, value)
    assert got.value is None or (got.raw is None and not got.redacted)
    assert not (got.redacted and got.raw is None)


def test_long_hostile_values_are_judged_like_short_ones() -> None:
    """Values from the wire that would make a backtracking pattern crawl (runs of ``_``, ``*``,
    brackets, a key as long as a value) get their verdict like any other."""
    n = 50_000
    assert verdict(V.ANSWER, "[redacted" + "_a" * n + "!") == "[redacted" + "_a" * n + "!"
    assert verdict(V.ANSWER, "*" * n + "a") == "*" * n + "a"
    assert verdict(V.OBSERVATION, {"result": "Paris", "call_" * n + "!": 1}) == "Paris"  # a flag beside it
    data = {"result": "Paris", "call_" * n: "x"}  # no bookkeeping key: the tool's own data
    assert verdict(V.OBSERVATION, data) == json.dumps(data)
    assert verdict(V.QUERY, "<redacted" + " " * n) == "<redacted" + " " * n
    assert V.is_marker("[redacted: pii]") and V.is_marker("[Scrubbed due to 'output']")
