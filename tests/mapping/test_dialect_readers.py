"""Each dialect's readers on the smallest spans that say one thing, value by value (the docstrings of
``mapping/dialects/``): where a retrieval's query and chunk ids come from (the GenAI conventions,
OpenInference's flattened documents with the ids LangChain leaves out, its JSON fallbacks), what
OpenLLMetry's decorators record of an agent, and ``io_text``'s shapes.  The real instrumentations'
spans are in test_interop.py; these pin the readers' fallbacks that no recorded scenario reaches."""

from __future__ import annotations

import json
from typing import Any

from otel_prov.mapping.dialects import Agent, Retrieval, dialect_of
from otel_prov.mapping.dialects import content as C
from otel_prov.mapping.dialects.genai import GENAI, io_text
from otel_prov.mapping.dialects.openinference import OPENINFERENCE
from otel_prov.mapping.dialects.traceloop import TRACELOOP
from otel_prov.mapping.spans import SpanRecord

SPAN_ID = 0xABC


def span(attributes: dict[str, Any], name: str = "span") -> SpanRecord:
    return SpanRecord(1, SPAN_ID, name, 0, 1, attributes)


def test_genai_retrieval() -> None:
    docs = '[{"id": "d1"}, {"metadata": {"chunk_id": "c2"}}, {}]'
    got = GENAI.retrieval(span({"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": "q",
                                "input.value": "not this", "gen_ai.retrieval.documents": docs}), [])
    assert got == Retrieval("q", ("d1", "c2", "0000000000000abc/3"))
    got = GENAI.retrieval(span({"input.value": '{"query": "from input"}'}), [])
    assert got == Retrieval("from input", None)
    assert GENAI.retrieval(span({}), []) == Retrieval(None, None)


def test_openinference_retrieval_documents_from_every_place() -> None:
    oi = {"openinference.span.kind": "RETRIEVER", "input.value": "what is prov?"}
    flat = {"retrieval.documents.0.document.id": "a", "retrieval.documents.1.document.content": "no id",
            "retrieval.documents.1.document.metadata": '{"doc_id": "m"}'}
    r = span({**oi, **flat})
    assert dialect_of(r) is OPENINFERENCE
    assert OPENINFERENCE.retrieval(r, []) == Retrieval("what is prov?", ("a", "m"))
    # LangChain leaves the ids out of retrieval.documents; output.value lists them, in order.
    no_ids = {"retrieval.documents.0.document.content": "x", "retrieval.documents.1.document.content": "y"}
    listed = json.dumps({"documents": [{"id": "i0"}, {"id": "i1"}]})
    got = OPENINFERENCE.retrieval(span({**oi, **no_ids, "output.value": listed}), [])
    assert got == Retrieval("what is prov?", ("i0", "i1"))
    # A list of another length does not say which is which: positions.
    got = OPENINFERENCE.retrieval(span({**oi, **no_ids, "output.value": json.dumps([{"id": "z"}])}), [])
    assert got.chunks == ("0000000000000abc/1", "0000000000000abc/2")
    # No flattened documents: output.value, else the GenAI conventions' documents (OpenInference's
    # GenAI mode writes those).
    got = OPENINFERENCE.retrieval(span({**oi, "output.value": json.dumps([{"id": "o1"}])}), [])
    assert got.chunks == ("o1",)
    got = OPENINFERENCE.retrieval(span({**oi, "gen_ai.retrieval.documents": json.dumps([{"id": "j1"}])}), [])
    assert got.chunks == ("j1",)
    got = OPENINFERENCE.retrieval(span({**oi, "gen_ai.retrieval.query.text": "explicit"}), [])
    assert got == Retrieval("explicit", None)


def test_openllmetry_decorators_agent() -> None:
    attrs = {"traceloop.span.kind": "agent", "traceloop.entity.name": "planner",
             "traceloop.entity.input": json.dumps({"args": ["plan a trip"], "kwargs": {}}),
             "traceloop.entity.output": json.dumps("done")}
    r = span(attrs, "planner.agent")
    assert dialect_of(r) is TRACELOOP
    got = TRACELOOP.agent(r, [])
    assert (got.question, got.answer, got.captured) == ("plan a trip", "done", True)
    one_kwarg = {**attrs, "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"goal": "a goal"}})}
    assert TRACELOOP.agent(span(one_kwarg), []).question == "a goal"
    only_output = {k: v for k, v in attrs.items() if k != "traceloop.entity.input"}
    got = TRACELOOP.agent(span(only_output), [])
    assert (got.question, got.answer, got.captured) == (None, "done", True)
    nothing = {"traceloop.span.kind": "agent", "traceloop.entity.name": "planner"}
    got = TRACELOOP.agent(span(nothing), [])
    assert isinstance(got, Agent) and (got.question, got.answer, got.captured) == (None, None, False)


def test_io_text_shapes() -> None:
    assert io_text("plain", C.USER) == "plain"
    for key in ("task", "input", "question", "query", "prompt", "input_args"):
        assert io_text(json.dumps({key: "t"}), C.USER) == "t", key
    for key in ("output", "answer", "final_output", "result", "response"):
        assert io_text(json.dumps({key: "t"}), C.ASSISTANT) == "t", key
    # Two different texts: which is the question is not known; the value is given back as it was (the
    # writer records it as not captured, with the raw value apart).
    both = json.dumps({"task": "first", "input": "second"})
    assert io_text(both, C.USER) == both
    messages = [{"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"},
                {"role": "user", "content": "u2"}]
    assert io_text(json.dumps(messages), C.USER) == "u2"
    assert io_text(json.dumps({"messages": messages}), C.ASSISTANT) == "a1"
    assert io_text(5, C.USER) == "5"
