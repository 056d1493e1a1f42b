"""The span dialects: each reads only the keys it declares, and none raises, whatever a span holds --
a dialect meeting a shape it does not expect maps what it can, counts a problem, and the rest of the
batch maps as if the span were fine."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_prov.mapping import tree
from otel_prov.mapping.dialects import DIALECTS, Role, dialect_of
from otel_prov.mapping.dialects.content import arguments, messages_of, result_text
from otel_prov.mapping.dialects.genai import GENAI, NOT_MESSAGES
from otel_prov.mapping.dialects.openinference import OPENINFERENCE
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import SpanRecord
from tests.interop.runner import SCENARIOS, Captured
from tests.support.mapping import map_agent_traces

TRACE = 0x5CE0E9A71D8C4B0F9A1E2D3C4B5A6978


class Recording(Mapping[str, Any]):
    """Span attributes that remember every key looked up (``items()`` is a scan, not a lookup)."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = dict(data)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self.data[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read.add(key)
        return key in self.data

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return self.data.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def items(self) -> Any:
        return self.data.items()  # a scan for prefixed keys: checked against the prefixes below

    def __len__(self) -> int:
        return len(self.data)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_dialects_read_only_the_keys_they_declare(interop: Captured, name: str) -> None:
    for span in interop.spans(name):
        dialect = dialect_of(span)
        attrs = Recording(span.attributes)
        recorded = SpanRecord(span.trace_id, span.span_id, span.name, span.start_ns, span.end_ns, attrs,
                              span.parent_id, span.parent_remote, span.error, span.status_message,
                              span.events)
        role = dialect.role(recorded)
        problems: list[str] = []
        if role in (Role.AGENT, Role.CHAIN):
            dialect.agent(recorded, problems)
        elif role is Role.TOOL:
            dialect.tool_call(recorded, problems)
        elif role is Role.LLM:
            dialect.llm_call(recorded, problems)
        elif role is Role.RETRIEVER:
            dialect.retrieval(recorded, problems)
        undeclared = {k for k in attrs.read if k not in dialect.keys and not k.startswith(dialect.prefixes)}
        assert undeclared == set(), f"{dialect.name} reads undeclared keys on {span.name!r}"
        assert problems == []


# -- hostile shapes -------------------------------------------------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["role", "parts", "content", "type", "text", "tool_calls", "id", "name", "arguments",
                         "function", "response", "result", "messages", "summary", "kwargs", "args", "data",
                         "lc", "documents", "metadata", "tool_call_id", "generations", "message", "task"]),
        inner, max_size=4),
    max_leaves=12)
"""JSON-like values built from the keys the readers look for."""

_values = st.one_of(
    st.text(max_size=20), st.integers(), st.floats(), st.booleans(), st.binary(max_size=8),
    _json_values.map(lambda v: json.dumps(v)),
    _json_values.filter(lambda v: isinstance(v, (list, dict))).map(
        lambda v: tuple(v) if isinstance(v, list) else v),  # OTLP arrays and maps
    st.sampled_from([
        "[" * 5000 + "]" * 5000,
        "ResponseFunctionToolCall(arguments='{\\'x",
        "ResponseReasoningItem(summary=[Summary(text='unterminated",
        "{'text': 'a dict repr', 'type': 'output_text'}", "{'broken': ", "null", "[null, 1, \"x\"]",
        '{"messages": [[{"lc": 1, "kwargs": 5}]]}', '{"generations": [[{"message": []}]]}',
        '{"args": ["a", "b"], "kwargs": {}}', '{"__type": "tool_call_with_context", "tool_call": 7}',
    ]),
)
_keys = sorted({k for d in DIALECTS for k in d.keys} | {
    f"{prefix}{i}.{rest}" for prefix in ("llm.input_messages.", "llm.output_messages.", "gen_ai.prompt.",
                                         "gen_ai.completion.", "retrieval.documents.")
    for i in ("0", "1", "x")
    for rest in ("message.role", "message.content", "message.contents.0.message_content.text",
                 "message.tool_calls.0.tool_call.function.name", "role", "content", "document.id",
                 "document.metadata", "tool_calls.0.name")})
_markers = st.sampled_from([
    {"gen_ai.operation.name": op} for op in ("invoke_agent", "execute_tool", "chat", "retrieval", "unknown",
                                             "agent_handoff", "invoke_workflow")
] + [{"openinference.span.kind": k} for k in ("AGENT", "CHAIN", "TOOL", "LLM", "RETRIEVER", "weird")]
  + [{"traceloop.span.kind": k} for k in ("workflow", "agent", "tool", "handoff", "task")]
  + [{"gen_ai.agent.description": "OpenAI Agents instrumentation", "gen_ai.operation.name": "chat"}])
_attributes = st.builds(lambda marker, rest: {**rest, **marker}, _markers,
                        st.dictionaries(st.sampled_from(_keys), _values, max_size=6))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(_attributes, min_size=1, max_size=5), profile=st.sampled_from(["seed", "strict"]))
def test_no_shape_makes_the_mapping_raise_or_drop_the_rest(shapes: list[dict[str, Any]],
                                                           profile: str) -> None:
    """Spans of a run whose attributes hold anything (a span each, nested in the order drawn), in the
    batch of a well-formed run: no exception, no failed span, the well-formed run maps as alone."""
    hostile = [SpanRecord(TRACE, n, f"span {n}", n, 100 - n, attrs, parent_id=n - 1)
               for n, attrs in enumerate(shapes, 1)]
    good = _good_run()
    alone = TraceMapper(profile).map(good)
    update = TraceMapper(profile).map(hostile + good)
    assert update.failed == [] and all(isinstance(p, str) for p in update.problems)
    # The guard around the dialects (a span whose reading raised is left out) never had to act.
    assert not [p for p in update.problems if p.endswith("could not read (left out)")]
    assert set(alone.add) <= set(update.add)
    result = map_agent_traces(hostile, profile)
    assert all(isinstance(p, str) for p in result.problems)


def _good_run() -> list[SpanRecord]:
    trace = TRACE + 1
    agent = SpanRecord(trace, 1, "invoke_agent a", 0, 10, {"gen_ai.operation.name": "invoke_agent",
                                                            "gen_ai.agent.name": "a", "input.value": "q?"})
    tool = SpanRecord(trace, 2, "execute_tool t", 1, 2, {"gen_ai.operation.name": "execute_tool",
                                                         "gen_ai.tool.call.arguments": '{"x": 1}'},
                      parent_id=1)
    return [agent, tool]


def test_unreadable_messages_are_a_counted_problem_and_the_fallback_is_used() -> None:
    agent = SpanRecord(TRACE, 1, "invoke_agent a", 0, 10, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": "{not json",
        "gen_ai.output.messages": 42, "input.value": "the question", "output.value": "the answer"})
    problems: list[str] = []
    found = dialect_of(agent).agent(agent, problems)
    assert (found.question, found.answer) == ("the question", "the answer")
    assert problems == [NOT_MESSAGES.format(key="gen_ai.input.messages"),
                        NOT_MESSAGES.format(key="gen_ai.output.messages")]


def test_a_dialect_that_raises_loses_only_its_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dialect must not raise; if one does (a bug), the span is left out and counted, the rest of
    its trace and batch maps."""
    def boom(*_: Any) -> Any:
        raise RuntimeError("dialect bug")

    monkeypatch.setattr(type(OPENINFERENCE), "llm_call", boom)
    agent = SpanRecord(TRACE, 1, "a.run", 0, 10, {"openinference.span.kind": "AGENT", "input.value": "q",
                                                  "output.value": "done"})
    llm = SpanRecord(TRACE, 2, "llm", 1, 2, {"openinference.span.kind": "LLM"}, parent_id=1)
    tool = SpanRecord(TRACE, 3, "t", 3, 4, {"openinference.span.kind": "TOOL", "tool.name": "t",
                                            "input.value": '{"a": 1}', "output.value": "ok"}, parent_id=1)
    update = TraceMapper("seed").map([agent, llm, tool])
    assert update.failed == [] and update.problems == [tree.READ_FAILED.format(dialect="openinference")]
    actions = {q[2] for q in update.add if q[1] == "<https://trustgraph.ai/ns/action>"}
    assert actions == {'"t"'}


# -- the shared readers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "want"), [
    ('{"args": [], "sanitize_inputs_outputs": true, "kwargs": {"question": "q"}}',
     ('{"question": "q"}', None)),
    ('{"args": ["About 19,949"], "kwargs": {}}', (None, "About 19,949")),
    ('{"args": [1, 2], "kwargs": {}}', ("[1, 2]", None)),
    ("capital of France", (None, "capital of France")),
    ('"quoted"', (None, "quoted")),
    ('{"__type": "tool_call_with_context", "tool_call": {"args": {"q": 1}, "id": "c"}, "state": {}}',
     ('{"q": 1}', None)),
    ('{"city":"Paris"}', ('{"city": "Paris"}', None)),
    ("42", ("42", None)),
    (None, (None, None)),
])
def test_arguments_are_unwrapped_to_the_actual_arguments(raw: Any,
                                                         want: tuple[str | None, str | None]) -> None:
    assert arguments(raw) == want


@pytest.mark.parametrize(("raw", "want"), [
    ('{"type": "tool", "data": {"content": "Paris", "tool_call_id": "call_1", "status": "success"}}',
     ("Paris", "call_1")),
    ('{"content": "Faust was written by Goethe.", "type": "tool"}', ("Faust was written by Goethe.", None)),
    ('{"lc": 1, "type": "constructor", "kwargs": {"content": [{"type": "text", "text": "a"}], "type": "tool",'
     ' "tool_call_id": "c"}}', ("a", "c")),
    ('{"temp_c": 18}', ('{"temp_c": 18}', None)),
    ("plain", ("plain", None)),
])
def test_results_are_text_not_an_envelope(raw: str, want: tuple[str, str | None]) -> None:
    assert result_text(raw) == want


def test_python_reprs_of_message_items_are_read_back() -> None:
    """The official OpenAI Agents instrumentation writes the Responses items it cannot convert as their
    Python repr in text parts: the generic reading parses them (never evaluates them) as the items."""
    outputs = json.dumps([{"role": "assistant", "parts": [
        {"type": "text", "content": "ResponseReasoningItem(id='rs_2', "
                                    "summary=[Summary(text='I need \\'it\\'',"
                                    " type='summary_text')], type='reasoning', content=None)"},
        {"type": "text", "content": "ResponseFunctionToolCall(arguments='{\"q\": \"x\"}', call_id='call_1', "
                                    "name='lookup', type='function_call', id='fc_1', status='completed')"}]}])
    inputs = json.dumps([{"role": "assistant", "parts": [
        {"type": "text", "content": "{'annotations': [], 'text': 'earlier text', 'type': 'output_text'}"}]}])
    chat = SpanRecord(TRACE, 1, "chat m", 0, 1, {"gen_ai.operation.name": "chat",
                                                 "gen_ai.agent.description": "OpenAI Agents instrumentation",
                                                 "gen_ai.output.messages": outputs,
                                                 "gen_ai.input.messages": inputs})
    assert dialect_of(chat) is GENAI
    call = GENAI.llm_call(chat, [])
    assert (call.reasoning, call.text) == ("I need 'it'", None)
    assert [(r.id, r.name, r.arguments) for r in call.requests] == [("call_1", "lookup", '{"q": "x"}')]
    assert call.prior_text == "earlier text"


def test_messages_in_every_format() -> None:
    langchain_state = {"messages": [{"type": "human", "data": {"content": "q"}},
                                    {"type": "ai", "data": {"content": "a", "tool_calls": [
                                        {"name": "t", "args": {"x": 1}, "id": "c1"}]}}]}
    messages = messages_of(json.dumps(langchain_state))
    assert messages is not None
    assert [(m.role, m.texts) for m in messages] == [("user", ["q"]), ("assistant", ["a"])]
    assert [(r.id, r.name, r.arguments) for r in messages[1].calls] == [("c1", "t", '{"x": 1}')]
    responses_items = [{"type": "reasoning", "summary": [{"text": "why", "type": "summary_text"}]},
                       {"type": "function_call", "call_id": "c2", "name": "u", "arguments": "{}"},
                       {"type": "function_call_output", "call_id": "c2", "output": "done"}]
    found = messages_of(responses_items)
    assert found is not None
    assert [m.reasoning for m in found][0] == ["why"] and found[1].calls[0].name == "u"
    assert found[2].responses == [("c2", "done")]
    assert messages_of("not messages") is None and messages_of(5) is None
