"""Two sessions compared (``otel-prov diff``, the web view's ``/diff``).  Pure: two
:class:`~.model.Trace` in, a :class:`TraceDiff` out.

Each session is read as a sequence of entries: its Question, then its steps in order, each followed
by the sub-traces it started (their Questions and steps).  The two sequences are aligned, then the
values of each aligned pair are compared:

- **Alignment.** Entries whose values are all equal anchor it (the longest matching blocks, as
  :mod:`difflib` finds them); between the anchors, entries of the same kind that call the same tool
  are paired in order (an LCS on ``(kind, tool)``: their values differ), and the others are in one
  run only.  A step inserted or removed therefore leaves the steps after it equal.  The two
  Questions are always paired.
- **Parallel calls** (consecutive steps whose spans overlap in time, as a model's parallel tool calls
  do) are taken in the order of their values, not of their numbers: the same calls started in
  another order are the same calls.
- **Values** are compared exactly, as recorded.  A value the trace did not capture, or captured only
  as a redaction marker, is compared as that, never as the empty string.  Ids, times, durations and
  tokens are never differences (two runs always differ in them): they are measured, run against
  run (:attr:`TraceDiff.totals`, :meth:`Pair.deltas`).
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.vocab import RAW_TERMS
from .graph import step_title
from .model import (
    NOT_CAPTURED,
    NOT_CAPTURED_TEXT,
    RECORD_KEYS,
    REDACTED,
    REDACTED_TEXT,
    Trace,
    TraceStep,
    epoch_ns,
)

TEXT, NOT_CAPTURED_STATE, REDACTED_STATE, ABSENT = "value", "notCaptured", "redacted", "absent"
"""What a compared value is: recorded text, not captured, redacted, or not there at all."""
EQUAL, CHANGED, ONLY_A, ONLY_B = "equal", "changed", "onlyInA", "onlyInB"
"""What an aligned pair of entries is."""
QUESTION = "Question"
MEASURES = ("inToken", "outToken", "reasoningTokens", "llmDurationMs", "toolDurationMs")
"""A step's values that are measured run against run, never compared (with its ``durationMs``)."""
_NOT_VALUES = RECORD_KEYS | frozenset(MEASURES) | {
    NOT_CAPTURED, REDACTED, "selectedEdge", "chunkSelection", *RAW_TERMS.values()}
"""A step's values that are not compared: ids and times, measures, what was not captured (folded
into each value's state), the IRIs of its edge and chunk selections (compared by what they hold),
the raw values kept for an auditor."""
FIELD_ORDER = ("type", "agent", "query", "thought", "action", "arguments", "observation", "edgeCount",
               "chunkCount", "selectedChunk", "chunkScores", "selectedEdges", "content", "answer",
               "llmModel", "modelProvider", "finishReason", "toolError", "statusMessage")
"""The order values are listed in (the others after these, by name)."""


@dataclass(frozen=True, order=True)
class Value:
    """One compared value: its state and, for recorded text, the text (several for a property with
    several values, e.g. the chunks a step selected)."""

    state: str
    texts: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """As a reader sees it: the text (several joined by newlines), else ``(not captured)``,
        ``(redacted)`` or ``(none)``."""
        if self.state == TEXT:
            return "\n".join(self.texts)
        return _MARKS.get(self.state, "(none)")


NONE = Value(ABSENT)
_MARKS = {NOT_CAPTURED_STATE: NOT_CAPTURED_TEXT, REDACTED_STATE: REDACTED_TEXT}


@dataclass(frozen=True)
class Entry:
    """A session's Question, a step, or a sub-trace's Question or step, as the diff sees it."""

    iri: str
    kind: str
    """``Question``, or the step's kind (``Analysis``, ``Focus``, ...)."""
    title: str
    """``Question``, ``Analysis 3``; inside a sub-trace, the step that started it first:
    ``Analysis 5 > DocRAG Exploration``."""
    depth: int
    """0: the session's own; 1: of a sub-trace it started; ..."""
    fields: dict[str, Value]
    measures: dict[str, float]
    """``durationMs`` and :data:`MEASURES`, where recorded."""

    @property
    def tool(self) -> str | None:
        action = self.fields.get("action")
        return action.text if action is not None and action.state == TEXT else None

    @property
    def key(self) -> tuple[Hashable, ...]:
        """What two entries must share to be paired: depth, kind and tool (a Question: its type)."""
        detail = self.fields.get("type" if self.kind == QUESTION else "action", NONE)
        return (self.depth, self.kind, detail)

    @property
    def signature(self) -> tuple[Hashable, ...]:
        """Everything compared: equal signatures, equal entries."""
        return (self.key, tuple(sorted(self.fields.items())))


@dataclass(frozen=True)
class Pair:
    """Two aligned entries (or one, in one run only) and the names of the values that differ."""

    a: Entry | None
    b: Entry | None
    changed: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        if self.a is None:
            return ONLY_B
        if self.b is None:
            return ONLY_A
        return CHANGED if self.changed else EQUAL

    @property
    def entry(self) -> Entry:
        """A's entry, else B's (a pair has at least one)."""
        found = self.a if self.a is not None else self.b
        if found is None:
            raise ValueError("a pair of no entries")
        return found

    @property
    def names(self) -> list[str]:
        """The names of every value either side has, in :data:`FIELD_ORDER`."""
        found = {*(self.a.fields if self.a else ()), *(self.b.fields if self.b else ())}
        return ordered(found)

    def value(self, side: str, name: str) -> Value:
        entry = self.a if side == "a" else self.b
        return entry.fields.get(name, NONE) if entry is not None else NONE

    def deltas(self) -> dict[str, tuple[float | None, float | None]]:
        """Each measure either side recorded: (A's, B's)."""
        a = self.a.measures if self.a else {}
        b = self.b.measures if self.b else {}
        return {name: (a.get(name), b.get(name)) for name in ("durationMs", *MEASURES)
                if name in a or name in b}


@dataclass
class TraceDiff:
    """Two sessions, their entries aligned."""

    a: Trace
    b: Trace
    pairs: list[Pair] = field(default_factory=list)
    entries: tuple[list[Entry], list[Entry]] = field(default_factory=lambda: ([], []))
    """A's entries and B's, in their order."""

    @property
    def identical(self) -> bool:
        """Whether every value is equal (ids, times, durations and tokens aside)."""
        return self.first is None

    @property
    def first(self) -> int | None:
        """The index (in :attr:`pairs`) of the first divergence: the first pair not equal."""
        return next((i for i, p in enumerate(self.pairs) if p.status != EQUAL), None)

    @property
    def downstream(self) -> list[Pair]:
        """Everything after the first divergence in the chain: each step derives from the one
        before it and a sub-trace from the step that started it, so all of it comes after the
        divergence (the view does not record which later step read which result: nothing finer is
        claimed)."""
        first = self.first
        return [] if first is None else self.pairs[first + 1:]

    def runs(self) -> list[tuple[int, list[Pair]]]:
        """The pairs in order, each run of consecutive equal pairs together (what a reader skims),
        with the index of its first pair."""
        found: list[tuple[int, list[Pair]]] = []
        for i, pair in enumerate(self.pairs):
            if found and pair.status == EQUAL and found[-1][1][-1].status == EQUAL:
                found[-1][1].append(pair)
            else:
                found.append((i, [pair]))
        return found

    def durations_changed(self, top: int = 3, at_least: float = 1.0) -> list[tuple[Pair, float, float]]:
        """The ``top`` paired steps whose duration changed most, by ``at_least`` milliseconds:
        (pair, A's, B's milliseconds)."""
        found = [(p, a, b) for p in self.pairs if p.entry.kind != QUESTION
                 for a, b in [p.deltas().get("durationMs", (None, None))]
                 if a is not None and b is not None and abs(b - a) >= at_least]
        return sorted(found, key=lambda item: -abs(item[2] - item[1]))[:top]

    def count(self, status: str, pairs: Iterable[Pair] | None = None) -> int:
        return sum(p.status == status for p in (self.pairs if pairs is None else pairs))

    @property
    def totals(self) -> dict[str, tuple[float | None, float | None]]:
        """Measured over each whole session: its duration, its steps, and the sum of its steps'
        tokens and model and tool times (as recorded on each step: a model call that requested
        several parallel tool calls counts on each)."""
        found: dict[str, tuple[float | None, float | None]] = {
            "durationMs": (self.a.duration_ms, self.b.duration_ms),
            "steps": (float(self.a.step_count), float(self.b.step_count)),
        }
        for name in MEASURES:
            if any(name in e.measures for side in self.entries for e in side):
                a, b = (sum(e.measures.get(name, 0.0) for e in side) for side in self.entries)
                found[name] = (a, b)
        return found


def ordered(names: Iterable[str]) -> list[str]:
    rank = {name: i for i, name in enumerate(FIELD_ORDER)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))


def diff(a: Trace, b: Trace) -> TraceDiff:
    """``a`` and ``b`` compared: their entries aligned, each pair's differing values named."""
    first, second = entries(a), entries(b)
    pairs = [_compare(first[0], second[0])]
    pairs += align(first[1:], second[1:])
    return TraceDiff(a, b, pairs, (first, second))


# -- the entries of a session ------------------------------------------------------------------------


def entries(trace: Trace) -> list[Entry]:
    """The session's Question, then its steps (parallel calls in the order of their values), each
    followed by the sub-traces it started; then the sub-traces of the Question itself."""
    found: list[Entry] = []
    _add(trace, 0, "", found)
    return found


def _add(trace: Trace, depth: int, parent: str, out: list[Entry]) -> None:
    prefix = f"{parent} > {trace.type} " if parent else ""
    out.append(Entry(trace.id, QUESTION, f"{prefix}{QUESTION}", depth, _question_fields(trace),
                     {"durationMs": d} if (d := trace.duration_ms) is not None else {}))
    steps = [(step, _step_entry(step, depth, prefix)) for step in trace.steps]
    for step, entry in _parallel_in_order(steps):
        out.append(entry)
        for sub in step.subtraces:
            _add(sub, depth + 1, entry.title, out)
    for sub in trace.subtraces:
        _add(sub, depth + 1, f"{prefix}{QUESTION}", out)


def _question_fields(trace: Trace) -> dict[str, Value]:
    if "query" in trace.redacted:
        query = Value(REDACTED_STATE)
    elif "query" in trace.not_captured:
        query = Value(NOT_CAPTURED_STATE)
    else:
        query = Value(TEXT, (trace.question,))
    fields = {"type": Value(TEXT, (trace.type,)), "query": query}
    if trace.agent is not None:
        fields["agent"] = Value(TEXT, (trace.agent,))
    if trace.errors:
        fields["statusMessage"] = Value(TEXT, tuple(trace.errors))
    return fields


def recorded(step: TraceStep, name: str) -> Value:
    """``name``'s value on ``step`` as it was recorded: redacted, not captured, its text, or none."""
    if step.redacted(name):
        return Value(REDACTED_STATE)
    if not step.captured(name):
        return Value(NOT_CAPTURED_STATE)
    values = step.values.get(name)
    return NONE if values is None else Value(TEXT, tuple(values))


def _step_entry(step: TraceStep, depth: int, prefix: str) -> Entry:
    names = {*step.values, *step.values.get(NOT_CAPTURED, ()), *step.values.get(REDACTED, ())}
    fields = {name: recorded(step, name) for name in names - _NOT_VALUES}
    if step.edges:
        fields["selectedEdges"] = Value(TEXT, tuple(
            ("(" + ", ".join(e.edge) + ")" if e.edge else "(no edge recorded)")
            + (f" -- {e.reasoning}" if e.reasoning else "") for e in step.edges))
    if step.chunk_scores:
        fields["chunkScores"] = Value(TEXT, tuple(
            f"{c.rank if c.rank is not None else '?'}. {c.chunk}" + (f" ({c.score:g})" if c.score is not None
                                                                    else "") for c in step.chunk_scores))
    measures: dict[str, float] = {}
    if step.duration_ms is not None:
        measures["durationMs"] = step.duration_ms
    for name in MEASURES:
        try:
            measures[name] = float(step.value(name) or "")
        except ValueError:
            pass
    return Entry(step.iri, step.kind, prefix + step_title(step), depth, fields, measures)


def _parallel_in_order(steps: list[tuple[TraceStep, Entry]]) -> list[tuple[TraceStep, Entry]]:
    """``steps`` with each run of parallel steps (an Analysis whose span started before the one
    before it ended, or with it) sorted by their values."""
    ordered_steps: list[tuple[TraceStep, Entry]] = []
    group: list[tuple[TraceStep, Entry]] = []
    group_end: int | None = None
    group_start: int | None = None
    for step, entry in steps:
        start, end = epoch_ns(step.value("startTime")), epoch_ns(step.value("endTime"))
        overlaps = start is not None and (start == group_start or group_end is not None and start < group_end)
        parallel = overlaps and group and step.kind == group[-1][0].kind == "Analysis"
        if not parallel:
            ordered_steps += sorted(group, key=_by_values)
            group, group_end = [], None
            group_start = start
        group.append((step, entry))
        if end is not None:
            group_end = end if group_end is None else max(group_end, end)
    ordered_steps += sorted(group, key=_by_values)
    return ordered_steps


def _by_values(item: tuple[TraceStep, Entry]) -> Any:
    """A step's place among parallel ones: by its values (a signature orders: its parts are
    numbers, texts and values)."""
    return item[1].signature


# -- alignment -------------------------------------------------------------------------------------------


def _compare(a: Entry, b: Entry) -> Pair:
    names = ordered({*a.fields, *b.fields})
    return Pair(a, b, tuple(n for n in names if a.fields.get(n, NONE) != b.fields.get(n, NONE)))


def _ids(items: Sequence[Hashable], numbers: dict[Hashable, int]) -> list[int]:
    """Each item as a small number (equal items, equal numbers): difflib then hashes ints, not the
    entries' long tuples, over and over."""
    return [numbers.setdefault(item, len(numbers)) for item in items]


def align(a: Sequence[Entry], b: Sequence[Entry]) -> list[Pair]:
    """``a`` and ``b`` aligned: fully equal entries anchor the alignment; between the anchors,
    entries with the same :attr:`Entry.key` are paired in order (an LCS), the others are in one run
    only (A's first, then B's)."""
    numbers: dict[Hashable, int] = {}
    first, second = _ids([e.signature for e in a], numbers), _ids([e.signature for e in b], numbers)
    head = 0
    while head < min(len(a), len(b)) and first[head] == second[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and first[-1 - tail] == second[-1 - tail]:
        tail += 1
    pairs = [Pair(a[i], b[i]) for i in range(head)]
    middle = difflib.SequenceMatcher(None, first[head:len(a) - tail], second[head:len(b) - tail],
                                     autojunk=False)
    for op, i1, i2, j1, j2 in middle.get_opcodes():
        x, y = a[head + i1:head + i2], b[head + j1:head + j2]
        pairs += [Pair(*both) for both in zip(x, y, strict=True)] if op == "equal" else _by_key(x, y)
    pairs += [Pair(a[len(a) - tail + i], b[len(b) - tail + i]) for i in range(tail)]
    return pairs


def _by_key(a: Sequence[Entry], b: Sequence[Entry]) -> list[Pair]:
    """Entries no anchor paired: those of the same kind and tool paired in order, the rest alone."""
    numbers: dict[Hashable, int] = {}
    keys = _ids([e.key for e in a], numbers), _ids([e.key for e in b], numbers)
    matcher = difflib.SequenceMatcher(None, *keys, autojunk=False)
    pairs: list[Pair] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            pairs += [_compare(x, y) for x, y in zip(a[i1:i2], b[j1:j2], strict=True)]
        else:
            pairs += [Pair(x, None) for x in a[i1:i2]] + [Pair(None, y) for y in b[j1:j2]]
    return pairs
