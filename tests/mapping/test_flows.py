"""Our own spans (``otel_prov.*``) as a plain-API caller may send them, which the helper API never
does, value by value through the pure mapping (``mapping/flows.py``): values that are not text, an
error without a message, iterations and counts that are not integers >= their minimum, an edge count
taken from the edges, chunk ids in every shape, selected edges with bad items, unknown flows and
steps, a question or a parent missing or bad, a value too large.  Each expected term is written by
hand (docs/model.md's IRI patterns, N-Triples literals); each case was left unchecked by the other
tests, as the mutation run showed (docs/testing.md)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from otel_prov import attributes as A
from otel_prov.mapping.flows import Mapped, attr_text, map_span, map_spans, step_iri
from otel_prov.mapping.limits import MAX_TERM_BYTES, ValueTooLarge
from otel_prov.mapping.spans import SpanRecord

TRACE_ID, SPAN_ID = 0x1, 0x2
XSD_INTEGER = "<http://www.w3.org/2001/XMLSchema#integer>"
TG = "https://trustgraph.ai/ns/"
PROV = "http://www.w3.org/ns/prov#"
OTELPROV = "https://w3id.org/otel-prov/ns#"
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
Q = "<urn:trustgraph:agent:s>"
GQ = "<urn:trustgraph:question:s>"
EXPLORATION = "<urn:trustgraph:prov:exploration:s>"
FOCUS = "<urn:trustgraph:prov:focus:s>"


def span(flow: str, step: str, error: bool = False, message: str = "", **attrs: Any) -> SpanRecord:
    """A span of session ``s`` with the attributes given (keyword names as in ``attributes``)."""
    given = {A.FLOW: flow, A.STEP: step, A.SESSION_ID: "s"}
    given.update({getattr(A, key): value for key, value in attrs.items()})
    return SpanRecord(TRACE_ID, SPAN_ID, "span", 10, 20, given, error=error, status_message=message)


def objects(mapped: Mapped, subject: str, predicate: str) -> list[str]:
    return [o for s, p, o, _ in mapped.quads if s == subject and p == predicate]


def subjects(mapped: Mapped) -> set[str]:
    return {s for s, _, _, _ in mapped.quads}


def integer(n: int) -> str:
    return f'"{n}"^^{XSD_INTEGER}'


def test_an_error_without_a_message_is_recorded_as_error() -> None:
    node = "<urn:trustgraph:agent:s/i1>"
    failed = map_spans([span("agent", "analysis", error=True, ITERATION=1)])
    assert objects(failed, node, f"<{OTELPROV}statusMessage>") == ['"error"']
    failed = map_spans([span("agent", "analysis", error=True, message="boom", ITERATION=1)])
    assert objects(failed, node, f"<{OTELPROV}statusMessage>") == ['"boom"']
    fine = map_spans([span("agent", "analysis", ITERATION=1)])
    assert objects(fine, node, f"<{OTELPROV}statusMessage>") == []


def test_values_that_are_not_text_are_written_as_text() -> None:
    node = "<urn:trustgraph:agent:s/i1>"
    got = map_spans([span("agent", "analysis", ITERATION=1, ACTION=7, ARGUMENTS=("a", "b"),
                          THOUGHT="a\ud800b")])
    assert objects(got, node, f"<{TG}action>") == ['"7"']
    assert objects(got, node, f"<{TG}arguments>") == ['"[\\"a\\", \\"b\\"]"']  # a sequence as JSON
    assert objects(got, node, f"<{TG}thought>") == ['"a\ufffdb"']
    assert got.problems == ["text that is not valid Unicode (replaced by U+FFFD)"]
    loop: list[Any] = []
    loop.append(loop)
    assert attr_text(loop) == "[[...]]"  # what JSON cannot write: its repr, never a failure


@pytest.mark.parametrize("iteration", [0, -1, True, 2.5, "two", None])
def test_an_analysis_needs_an_integer_iteration_of_at_least_one(iteration: object) -> None:
    given = {} if iteration is None else {"ITERATION": iteration}
    got = map_spans([span("agent", "analysis", **given)])
    assert got.quads == []
    assert got.problems == [f"analysis span without a valid {A.ITERATION} (an integer >= 1)"]


def test_an_analysis_iteration_as_decimal_text_and_its_predecessor() -> None:
    second = map_spans([span("agent", "analysis", ITERATION="2")])
    assert objects(second, "<urn:trustgraph:agent:s/i2>", f"<{PROV}wasDerivedFrom>") == [
        "<urn:trustgraph:agent:s/i1>"]
    first = map_spans([span("agent", "analysis", ITERATION=1)])
    assert objects(first, "<urn:trustgraph:agent:s/i1>", f"<{PROV}wasDerivedFrom>") == [Q]


@pytest.mark.parametrize(("attrs", "count"), [
    ({"EDGE_COUNT": 5}, 5),
    ({"EDGE_COUNT": "4"}, 4),
    ({"EDGE_COUNT": 0}, 0),
    ({"EDGE_COUNT": 3, "EDGES": '[["a", "b", "c"]]'}, 3),  # the count given wins
    ({"EDGES": '[["a", "b", "c"], ["d", "e", "f"]]'}, 2),  # no count: the edges counted
    ({"EDGE_COUNT": -1, "EDGES": '[["a", "b", "c"]]'}, 1),  # a negative count is no count
])
def test_an_explorations_edge_count(attrs: dict[str, Any], count: int) -> None:
    got = map_spans([span("graphrag", "exploration", **attrs)])
    assert objects(got, EXPLORATION, f"<{TG}edgeCount>") == [integer(count)]
    assert got.problems == []


@pytest.mark.parametrize(("edges", "problems"), [
    (None, [f"graphrag exploration span without {A.EDGE_COUNT}"]),
    ('{"edges": 1}', [f"graphrag exploration span without {A.EDGE_COUNT}"]),
    ("[not json", [f"{A.EDGES} is not valid JSON", f"graphrag exploration span without {A.EDGE_COUNT}"]),
])
def test_an_exploration_without_a_count_records_none(edges: str | None, problems: list[str]) -> None:
    got = map_spans([span("graphrag", "exploration", **({} if edges is None else {"EDGES": edges}))])
    assert objects(got, EXPLORATION, f"<{TG}edgeCount>") == []
    assert f"<{TG}Exploration>" in objects(got, EXPLORATION, RDF_TYPE)
    assert got.problems == problems


@pytest.mark.parametrize(("chunk_ids", "chunks", "problems"), [
    ('["c1", "c2"]', ["c1", "c2"], []),
    (("c1", "c2"), ["c1", "c2"], []),
    ("c1", ["c1"], [f"{A.CHUNK_IDS} is not valid JSON"]),  # one id, as text
    ('"c1"', ['\\"c1\\"'], []),  # JSON, but not a list: the text as it is
    (7, ["7"], []),
    ("[]", [], []),
])
def test_a_docrag_explorations_chunk_ids_in_every_shape(chunk_ids: object, chunks: list[str],
                                                         problems: list[str]) -> None:
    node = "<urn:trustgraph:docrag:s/exploration>"
    got = map_spans([span("docrag", "exploration", CHUNK_IDS=chunk_ids)])
    assert objects(got, node, f"<{TG}chunkCount>") == [integer(len(chunks))]
    assert objects(got, node, f"<{TG}selectedChunk>") == [f'"{c}"' for c in chunks]
    assert got.problems == problems
    absent = map_spans([span("docrag", "exploration")])
    assert objects(absent, node, f"<{TG}chunkCount>") == []  # not recorded: no count made up


def test_a_focus_keeps_the_good_selected_edges_at_their_index() -> None:
    selected = ('["not an item", {"edge": ["a", "b"]}, {"edge": "a b c"},'
                ' {"edge": ["urn:s", "urn:p", "o"], "reasoning": "r"}]')
    got = map_spans([span("graphrag", "focus", SELECTED_EDGES=selected)])
    sel, stmt = "<urn:trustgraph:prov:edge:s:3>", "<urn:trustgraph:prov:edge:s:3/triple>"
    assert objects(got, FOCUS, f"<{TG}selectedEdge>") == [sel]
    assert objects(got, sel, f"<{TG}edge>") == [stmt]
    assert objects(got, sel, f"<{TG}reasoning>") == ['"r"']
    assert objects(got, stmt, "<http://www.w3.org/1999/02/22-rdf-syntax-ns#subject>") == ["<urn:s>"]
    assert objects(got, stmt, "<http://www.w3.org/1999/02/22-rdf-syntax-ns#object>") == ['"o"']
    assert got.problems == [f"{A.SELECTED_EDGES} item that is not {{edge: [s, p, o]}}"] * 3


@pytest.mark.parametrize("selected", ['{"edge": ["a", "b", "c"]}', "[not json", None])
def test_a_focus_without_a_list_of_edges_is_still_the_focus(selected: str | None) -> None:
    got = map_spans([span("graphrag", "focus", **({} if selected is None else {"SELECTED_EDGES": selected}))])
    assert objects(got, FOCUS, f"<{PROV}wasDerivedFrom>") == [EXPLORATION]
    assert objects(got, FOCUS, f"<{TG}selectedEdge>") == []
    assert got.problems[-1] == f"focus span without a JSON list in {A.SELECTED_EDGES}"


def test_unknown_flows_and_steps_are_counted_as_ignored_and_map_nothing() -> None:
    bad = [span("agent", "nope"), span("graphrag", "analysis"), span("agent", ["session"]),  # type: ignore[arg-type]
           span(["agent"], "session"), span(5, "session")]  # type: ignore[arg-type]
    good = [span("agent", "session", QUESTION="q"), span("agent", "tool")]
    not_ours = [SpanRecord(TRACE_ID, 3, "GET", 1, 2, {"http.request.method": "GET"})] * 2
    got = map_spans([*bad, *good, *not_ours])
    assert (got.mapped, got.ignored) == (2, 7)
    assert subjects(got) == {Q}
    pairs = ["'agent'/'nope'", "'graphrag'/'analysis'", "'agent'/['session']", "['agent']/'session'",
             "5/'session'"]
    assert got.problems == [f"unknown {A.FLOW}/{A.STEP} pair {pair}" for pair in pairs]


def test_a_session_without_a_question_has_an_empty_query_and_a_bad_parent_is_left_out() -> None:
    got = map_span(span("agent", "session", DERIVED_FROM="http://ex.org/a%"))  # no Mapped given: a new one
    assert objects(got, Q, f"<{TG}query>") == ['""']
    assert objects(got, Q, f"<{PROV}wasDerivedFrom>") == []
    assert got.problems == [f"session span without {A.QUESTION}",
                            f"{A.DERIVED_FROM} is not a valid absolute IRI"]
    assert got.mapped == 1


def test_a_value_too_large_adds_nothing_and_keeps_what_was_mapped_before() -> None:
    into = map_span(span("agent", "session", QUESTION="q"))
    before = list(into.quads)
    with pytest.raises(ValueTooLarge):
        map_span(span("agent", "conclusion", ANSWER="x" * (MAX_TERM_BYTES + 1)), into=into)
    assert into.quads == before


def test_the_step_a_framework_agent_derives_from() -> None:
    no_session = SpanRecord(0xABC, SPAN_ID, "s", 1, 2, {A.FLOW: "agent", A.STEP: "session"})
    by_trace = str(uuid.UUID(int=0xABC))  # docs/model.md: the trace id as a UUID
    assert step_iri(no_session) == f"urn:trustgraph:agent:{by_trace}"
    assert step_iri(span("graphrag", "question")) == "urn:trustgraph:question:s"
    assert step_iri(span("agent", "analysis", ITERATION=2)) == "urn:trustgraph:agent:s/i2"
    assert step_iri(span("agent", "analysis")) is None  # no iteration: no step to derive from
    assert step_iri(span("agent", "tool", ITERATION=2)) is None
    assert step_iri(span("agent", "conclusion", ITERATION=2)) is None
    assert step_iri(span("graphrag", "exploration", ITERATION=2)) is None
    assert step_iri(span("nope", "session")) is None


def test_the_profile_is_passed_to_every_span() -> None:
    question = [span("agent", "session", QUESTION="q")]
    assert objects(map_spans(question, "strict"), Q, RDF_TYPE)[0] == f"<{PROV}Entity>"
    assert objects(map_spans(question, "seed"), Q, RDF_TYPE)[0] == f"<{PROV}Activity>"
