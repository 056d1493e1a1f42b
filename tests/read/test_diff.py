"""Two sessions compared (read/diff.py), on real runs read back from a real store: the example agent
run again, with a step inserted, a thought said another way, its document search elsewhere, another
question; a long run changed at its 11th step; framework traces of twelve parallel calls of one tool,
of a failed step before the answer, and of values not captured, empty or redacted."""

from __future__ import annotations

import pytest

from otel_prov.read.diff import (
    CHANGED,
    EQUAL,
    NOT_CAPTURED_STATE,
    ONLY_A,
    ONLY_B,
    REDACTED_STATE,
    TEXT,
    TraceDiff,
    Value,
    diff,
)
from otel_prov.read.model import Trace
from otel_prov.read.reader import TraceReader
from otel_prov.stores import open_for_reading, parse_store
from tests.support.runs import CITIES, EXTRA, RETHOUGHT, Runs, record_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return record_runs(tmp_path_factory.mktemp("diff") / "store")


def read(runs: Runs, iri: str) -> Trace:
    store = open_for_reading(parse_store(str(runs.path)))
    try:
        return TraceReader(store).trace(iri)[0]
    finally:
        store.close()


def compare(runs: Runs, a: str, b: str) -> TraceDiff:
    return diff(read(runs, a), read(runs, b))


def not_equal(found: TraceDiff) -> list[tuple[str, str | None, str | None, tuple[str, ...]]]:
    return [(p.status, p.a.title if p.a else None, p.b.title if p.b else None, p.changed)
            for p in found.pairs if p.status != EQUAL]


AGENT_TITLES = ["Question", *(f"Analysis {n}" for n in range(1, 6)),
                *(f"Analysis 5 > DocRAG {kind}" for kind in ("Question", "Exploration", "Synthesis")),
                "Analysis 6", "Conclusion"]
"""The example agent's entries: its steps, its document search's sub-trace after the step that ran it."""


def test_the_same_question_run_twice_is_identical_though_its_times_differ(runs: Runs) -> None:
    found = compare(runs, runs.agent, runs.again)
    assert found.identical and found.first is None and found.downstream == []
    assert [p.a.title for p in found.pairs if p.a] == AGENT_TITLES
    assert all(p.status == EQUAL and p.a and p.b and p.a.iri != p.b.iri for p in found.pairs)
    durations = found.totals["durationMs"]
    assert durations[0] is not None and durations[1] is not None and durations[0] != durations[1]
    assert found.totals["steps"] == (6, 6)
    assert diff(found.a, found.a).identical


def test_an_inserted_step_leaves_the_steps_after_it_equal(runs: Runs) -> None:
    found = compare(runs, runs.agent, runs.inserted)
    assert not_equal(found) == [(ONLY_B, None, "Analysis 2", ())]
    assert found.first == 2
    inserted = found.pairs[2]
    assert inserted.value("b", "arguments") == Value(TEXT, ('{"entity": "France", "relation": "capital"}',))
    assert inserted.value("b", "thought").texts == (EXTRA.thought,)
    after = found.downstream
    assert [p.status for p in after] == [EQUAL] * 9
    assert [(p.a.title, p.b.title) for p in after[:2] if p.a and p.b] == [("Analysis 2", "Analysis 3"),
                                                                         ("Analysis 3", "Analysis 4")]
    assert after[-1].a and after[-1].a.title == "Conclusion"
    # the other way round, the step is removed
    assert not_equal(compare(runs, runs.inserted, runs.agent)) == [(ONLY_A, "Analysis 2", None, ())]


def test_a_thought_said_another_way_is_the_one_difference(runs: Runs) -> None:
    found = compare(runs, runs.agent, runs.rethought)
    assert not_equal(found) == [(CHANGED, "Analysis 4", "Analysis 4", ("thought",))]
    pair = found.pairs[found.first or 0]
    assert pair.value("b", "thought").texts == (RETHOUGHT,)
    assert pair.value("a", "thought").texts != (RETHOUGHT,)
    assert [p.a.title for p in found.downstream if p.a] == AGENT_TITLES[5:]


def test_a_divergence_runs_on_into_the_sub_trace_the_step_started(runs: Runs) -> None:
    found = compare(runs, runs.agent, runs.elsewhere)
    assert not_equal(found) == [
        (CHANGED, "Analysis 5", "Analysis 5", ("arguments", "observation")),
        (CHANGED, "Analysis 5 > DocRAG Question", "Analysis 5 > DocRAG Question", ("query",)),
        (CHANGED, "Analysis 5 > DocRAG Exploration", "Analysis 5 > DocRAG Exploration", ("selectedChunk",)),
        (CHANGED, "Analysis 5 > DocRAG Synthesis", "Analysis 5 > DocRAG Synthesis", ("content",)),
        (CHANGED, "Conclusion", "Conclusion", ("answer",)),
    ]
    assert found.pairs[found.first or 0].value("b", "arguments").texts == (
        '{"query": "Which river flows through Berlin?"}',)
    assert [p.a.title for p in found.downstream if p.a] == AGENT_TITLES[6:]
    assert found.count(EQUAL, found.downstream) == 1  # Analysis 6 thinks the same


def test_another_question_diverges_at_the_question(runs: Runs) -> None:
    found = compare(runs, runs.agent, runs.other_question)
    assert found.first == 0 and found.pairs[0].changed == ("query",)
    assert len(found.downstream) == len(found.pairs) - 1
    assert found.pairs[0].value("b", "query").texts == ("What is the population of Berlin?",)


def test_more_than_ten_steps_in_their_order(runs: Runs) -> None:
    found = compare(runs, runs.long, runs.long_changed)
    assert [e.title for e in found.entries[0]] == ["Question", *(f"Analysis {n}" for n in range(1, 13)),
                                                   "Conclusion"]
    assert not_equal(found) == [(CHANGED, "Analysis 11", "Analysis 11", ("arguments", "observation"))]
    pair = found.pairs[found.first or 0]
    assert (pair.value("a", "observation").texts, pair.value("b", "observation").texts) == (("11",), ("110",))
    assert [p.a.title for p in found.downstream if p.a] == ["Analysis 12", "Conclusion"]


def test_parallel_calls_of_one_tool_are_the_same_calls_in_any_order(runs: Runs) -> None:
    first, reordered = read(runs, runs.parallel), read(runs, runs.parallel_reordered)
    cities = [[s.value("arguments") for s in t.steps if s.kind == "Analysis"] for t in (first, reordered)]
    assert len(cities[0]) == 12 and cities[0] != cities[1]  # numbered in another order
    assert sorted(cities[0], key=str) == sorted(cities[1], key=str)
    assert diff(first, reordered).identical
    changed = compare(runs, runs.parallel, runs.parallel_changed)
    assert [(s, c) for s, _, _, c in not_equal(changed)] == [(CHANGED, ("observation",))]
    pair = changed.pairs[changed.first or 0]
    city = Value(TEXT, ('{"city": "city-07"}',))
    assert pair.value("a", "arguments") == pair.value("b", "arguments") == city
    assert pair.value("b", "observation").texts == ("city-07: 31 C",)
    assert len(changed.downstream) == len(CITIES) - CITIES.index("city-07")  # the later calls, the answer


def test_a_run_that_failed_a_step_and_still_answered(runs: Runs) -> None:
    found = compare(runs, runs.failed_then_answered, runs.answered)
    assert (found.a.status, found.b.status) == ("error", "complete")
    assert not_equal(found) == [(ONLY_A, "Analysis 1", None, ())]
    failed = found.pairs[found.first or 0]
    assert failed.value("a", "statusMessage").texts == ("TimeoutError: upstream",)
    assert failed.value("a", "toolError").state == TEXT
    assert [(p.a.title, p.b.title) for p in found.downstream if p.a and p.b] == [
        ("Analysis 2", "Analysis 1"), ("Conclusion", "Conclusion")]


def test_a_value_not_captured_or_redacted_is_never_the_empty_string(runs: Runs) -> None:
    not_captured, empty = read(runs, runs.question_not_captured), read(runs, runs.question_empty)
    assert not_captured.question == empty.question == ""  # the graph's tg:query is "" in both
    found = diff(not_captured, empty)
    assert not found.identical and found.pairs[0].changed == ("query",)
    assert found.pairs[0].value("a", "query") == Value(NOT_CAPTURED_STATE)
    assert found.pairs[0].value("b", "query") == Value(TEXT, ("",))
    redacted = compare(runs, runs.question_not_captured, runs.question_redacted)
    assert redacted.pairs[0].value("b", "query") == Value(REDACTED_STATE)
    assert redacted.pairs[0].changed == ("query",)
    assert compare(runs, runs.question_empty, runs.question_empty).identical
    thoughts = compare(runs, runs.thought_not_captured, runs.thought_redacted)
    assert not_equal(thoughts) == [(CHANGED, "Analysis 1", "Analysis 1", ("thought",))]
    pair = thoughts.pairs[thoughts.first or 0]
    shown = (pair.value("a", "thought").text, pair.value("b", "thought").text)
    assert shown == ("(not captured)", "(redacted)")


def test_tokens_and_durations_are_measured_never_compared(runs: Runs) -> None:
    found = compare(runs, runs.parallel, runs.parallel_costlier)
    assert found.identical
    assert found.totals["inToken"] == (130, 650)  # 12 calls and the answer, 10 (50) tokens on each
    assert found.totals["outToken"] == (65, 65)
    step = next(p for p in found.pairs if p.entry.kind == "Analysis")
    assert step.deltas()["inToken"] == (10, 50)
    assert "durationMs" in step.deltas()
