"""Text: the session table of ``otel-prov list`` and one trace as ``otel-prov show`` prints it
(TrustGraph's layout, with thoughts, unknown steps, sub-traces and the status shown).  Every text a
model or a tool wrote is passed through :func:`visible` before it reaches a terminal."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence

from ..model.vocab import RAW_TERMS
from ..read.diff import CHANGED, EQUAL, ONLY_A, ONLY_B, Pair, TraceDiff
from ..read.graph import approval_summary, step_title
from ..read.model import (
    AGENT,
    DOC_RAG,
    FAILED,
    NOT_CAPTURED_TEXT,
    RECORD_KEYS,
    REDACTED_TEXT,
    SelectedEdge,
    SessionRow,
    Trace,
    TraceStep,
    format_ms,
    local_name,
)
from .links import jaeger_link

QUESTION_WIDTH = 45
"""The list's Question column is cut to this many characters (as TrustGraph's)."""
EMPTY = "No explainability sessions found."
HIDDEN = {*RECORD_KEYS, "statusMessage", "notCaptured", "redacted", "chunkSelection", *RAW_TERMS.values()}
"""A step's values not shown as its content (ids, times; the error and what was not captured are
shown apart)."""
SHOWN_AS = {"thought": "Thought", "action": "Action", "arguments": "Arguments",
            "observation": "Observation"}


# -- list -----------------------------------------------------------------------------------------


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """Text safe to print on a terminal: control characters other than newline and tab (an ESC
    sequence in a model's output, say) are shown as ``\\x1b``-style escapes, not executed."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def shown_time(value: str | None) -> str:
    """A time as text shows it: nanoseconds always written out (``...:06.100000000Z``), so a column
    of times lines up; the graph holds the canonical literal, which drops trailing zeros."""
    if not value:
        return ""
    head, dot, frac = value.removesuffix("Z").partition(".")
    if not value.endswith("Z") or not frac.isdigit() and dot:
        return value  # not the form otel-prov writes: shown as it is
    return f"{head}.{frac.ljust(9, '0')}Z"


def display_width(text: str) -> int:
    """The columns ``text`` takes on a terminal: wide (CJK) characters two, combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)


def _cut(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` columns (with ``...``)."""
    text = " ".join(text.split())
    if display_width(text) <= width:
        return text
    kept, used = [], 0
    for char in text:
        used += display_width(char)
        if used > width - 3:
            break
        kept.append(char)
    return "".join(kept) + "..."


def session_table(rows: Sequence[SessionRow]) -> str:
    """``Session ID | Type | Question | Time | Steps | Duration | Status``."""
    if not rows:
        return EMPTY + "\n"
    header = ("Session ID", "Type", "Question", "Time", "Steps", "Duration", "Status")
    body = [(r.id, r.type, _cut(visible(r.question), QUESTION_WIDTH), shown_time(r.time),
             "" if r.steps is None else str(r.steps),
             "" if r.duration_ms is None else format_ms(r.duration_ms), r.status) for r in rows]
    return visible("\n".join(table_lines(header, body)) + "\n")


def table_lines(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns separated by `` | ``, padded to their widest cell (in terminal columns: a CJK character
    takes two), a rule under the header."""
    widths = [max([display_width(h), *(display_width(row[i]) for row in rows)]) for i, h in enumerate(header)]
    lines = [" | ".join(cell + " " * (w - display_width(cell)) for cell, w in zip(row, widths, strict=True))
             .rstrip() for row in [list(header), *rows]]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return lines


# -- show: text -----------------------------------------------------------------------------------


def _indent(text: str, prefix: str) -> list[str]:
    return [prefix + line if line else prefix.rstrip() for line in text.splitlines() or [""]]


def _field(name: str, value: str, indent: str = "  ") -> list[str]:
    lines = value.splitlines() or [""]
    if len(lines) == 1:
        return [f"{indent}{name}: {lines[0]}"]
    return [f"{indent}{name}:", *_indent(value, indent + "  ")]


def _pretty_json(text: str) -> str | None:
    try:
        return json.dumps(json.loads(text), indent=4, ensure_ascii=False)
    except ValueError:
        return None


def term(value: str) -> str:
    """A knowledge-graph term as shown: an IRI by its local name, a literal quoted."""
    return local_name(value) if value.startswith(("http://", "https://", "urn:")) else json.dumps(value)


def _edge_text(index: int, edge: SelectedEdge) -> list[str]:
    what = f"({', '.join(term(v) for v in edge.edge)})" if edge.edge else f"(no edge recorded on {edge.iri})"
    lines = [f"  {index}. {what}"]
    if edge.reasoning:
        lines.append(f"     Reasoning: {edge.reasoning}")
    return lines


def _analysis(step: TraceStep) -> list[str]:
    lines = []
    for name, label in SHOWN_AS.items():
        value = step.shown(name)
        if value is None:
            if name == "action":
                lines.append(f"  Action: {'(none: this cycle answered)' if step.value('thought') else 'N/A'}")
            continue
        if name == "arguments" and step.value(name) is not None:
            pretty = _pretty_json(value)
            if pretty is not None:
                lines.append("  Arguments:")
                lines += _indent(pretty, "    ")
                continue
        lines += _field(label, value)
    return lines


def chunk_text(step: TraceStep) -> str:
    """A DocRAG step's chunks, each with its score where recorded (``doc-1 (0.91)``), by rank."""
    if step.chunk_scores:
        return ", ".join(c.chunk if c.score is None else f"{c.chunk} ({c.score:g})"
                         for c in step.chunk_scores)
    return ", ".join(step.values.get("selectedChunk", []))


def _chunks(step: TraceStep, verb: str) -> list[str]:
    chunks = step.values.get("selectedChunk", [])
    if not step.captured("selectedChunk"):
        return [f"{verb} chunks from document store: {NOT_CAPTURED_TEXT}"]
    count = step.value("chunkCount") or len(chunks)
    lines = [f"{verb} {count} chunks from document store"]
    if chunks:
        lines.append(f"  Chunks: {chunk_text(step)}")
    return lines


def _evaluation(step: TraceStep) -> list[str]:
    lines = [f"  Name: {step.value('evaluationName') or '?'}"]
    for key, label in (("evaluationScore", "Score"), ("evaluationLabel", "Label")):
        if step.value(key) is not None:
            lines.append(f"  {label}: {step.value(key)}")
    explanation = step.shown("evaluationExplanation")
    if explanation is not None:
        lines += _field("Explanation", explanation)
    return lines


def _approvals(step: TraceStep) -> list[str]:
    lines = []
    for approval in step.approvals:
        when = f", {shown_time(approval.time)}" if approval.time else ""
        lines.append(f"  Approval: {approval_summary(approval)}{when}")
        if approval.comment:
            lines += _field("Comment", approval.comment, "    ")
    return lines


def _step_lines(step: TraceStep, trace: Trace, jaeger: str | None, depth: int) -> list[str]:
    docs = trace.type == DOC_RAG or step.value("chunkCount") is not None
    title = {"Focus": "Focus (Chunk Selection)" if docs else "Focus (Edge Selection)"}.get(
        step.kind, step_title(step))
    lines = [f"--- {title} ---"]
    if step.kind == "Analysis":
        lines += _analysis(step)
    elif step.kind == "Exploration":
        if docs:
            lines += _chunks(step, "Retrieved")
        else:
            lines.append(f"Retrieved {step.value('edgeCount') or 0} edges from knowledge graph")
    elif step.kind == "Focus" and docs:
        lines += _chunks(step, "Selected")
    elif step.kind == "Focus":
        lines.append(f"Selected {len(step.edges)} edges:")
        for i, edge in enumerate(step.edges, 1):
            lines.append("")
            lines += _edge_text(i, edge)
    elif step.kind in ("Conclusion", "Synthesis"):
        answer = step.shown("answer" if step.kind == "Conclusion" else "content")
        lines += ["Answer:", *_indent(answer or "(empty)", "  ")]
    elif step.kind == "Evaluation":
        lines += _evaluation(step)
    else:  # a step this viewer does not know: show what it has
        shown = {k: v for k, v in step.values.items() if k not in HIDDEN}
        lines.append(f"  Node: {step.iri}")
        for name, values in sorted(shown.items()):
            for value in values:
                lines += _field(name, value)
    if step.kind != "Evaluation":
        lines += [f"  {label}: {text}" for label, text in step.facts()]
    if step.error:
        lines.append(f"  Error: {step.error}")
    lines += _approvals(step)
    for sub in step.subtraces:
        lines.append(f"  Sub-trace ({sub.type}, derived from this step):")
        lines += _indent("\n".join(trace_lines(sub, jaeger, depth + 1)), "    ")
    lines.append("")
    return lines


def question_text(trace: Trace) -> str:
    """A session's question as shown: the text, else ``(redacted)`` / ``(not captured)``."""
    if "query" in trace.redacted:
        return REDACTED_TEXT
    return NOT_CAPTURED_TEXT if "query" in trace.not_captured else trace.question


def trace_lines(trace: Trace, jaeger: str | None = None, depth: int = 0) -> list[str]:
    """The text of ``otel-prov show``, as lines."""
    lines = [f"=== {trace.type} Session: {trace.id} ===", ""]
    lines += _field("Question", question_text(trace), "")
    if trace.agent:
        lines.append(f"Agent: {trace.agent}")
    if trace.service:
        lines.append(f"Service: {trace.service}")
    if trace.time:
        lines.append(f"Time: {shown_time(trace.time)}")
    if trace.trace_id:
        lines.append(f"Trace ID: {trace.trace_id}")
        link = jaeger_link(jaeger, trace.trace_id)
        if link and depth == 0:
            lines.append(f"Jaeger: {link}")
    if trace.collection and depth == 0:
        lines.append(f"Collection: {trace.collection}")
    if trace.derived_from:
        lines.append(f"Derived from: {trace.derived_from}")
    for error in trace.errors:
        lines.append(f"Error: {error}")
    lines.append("")
    for step in trace.steps:
        lines += _step_lines(step, trace, jaeger, depth)
    for sub in trace.subtraces:
        lines.append(f"--- Sub-trace ({sub.type}) ---")
        lines += _indent("\n".join(trace_lines(sub, jaeger, depth + 1)), "  ")
        lines.append("")
    if not trace.steps:
        lines += ["No trace steps recorded", ""]
    end = "Conclusion" if trace.type == AGENT else "Synthesis"
    if not trace.finished and trace.status == FAILED:
        lines += ["--- Unfinished ---", f"No {end} recorded: the session stopped with an error (see above).",
                  ""]
    elif not trace.finished:
        lines += ["--- Unfinished ---",
                  f"No {end} recorded: the session is still running, or it stopped before answering.", ""]
    elif trace.status == FAILED:
        lines += ["--- Error ---", "A step recorded an error (see above).", ""]
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def trace_text(trace: Trace, jaeger: str | None = None) -> str:
    return visible("\n".join(trace_lines(trace, jaeger)) + "\n")


# -- diff: text -----------------------------------------------------------------------------------

DIFF_LABELS = {
    "type": "Type", "agent": "Agent", "query": "Question", "thought": "Thought", "action": "Action",
    "arguments": "Arguments", "observation": "Observation", "edgeCount": "Edges retrieved",
    "chunkCount": "Chunks retrieved", "selectedChunk": "Chunks", "chunkScores": "Chunk ranks",
    "selectedEdges": "Selected edges", "content": "Answer", "answer": "Answer", "llmModel": "Model",
    "modelProvider": "Model provider", "finishReason": "Finish reason", "toolError": "Tool error",
    "statusMessage": "Error", "evaluationName": "Evaluation", "evaluationScore": "Score",
    "evaluationLabel": "Label", "evaluationExplanation": "Explanation",
}
"""How a compared value is named (the others by their predicate's local name)."""
MEASURE_LABELS = {"durationMs": "Duration", "steps": "Steps", "inToken": "Input tokens",
                  "outToken": "Output tokens", "reasoningTokens": "Reasoning tokens",
                  "llmDurationMs": "Model time", "toolDurationMs": "Tool time"}
STATUS_MARKS = {EQUAL: "=", CHANGED: "!", ONLY_A: "-", ONLY_B: "+"}
"""The mark of each kind of pair at the start of its line (as ``diff``'s: ``-`` A only, ``+`` B only)."""
_ALONE = {ONLY_A: "only in A", ONLY_B: "only in B"}


def diff_label(name: str) -> str:
    return DIFF_LABELS.get(name, name)


def measure_text(name: str, value: float | None) -> str:
    if value is None:
        return "not recorded"
    return format_ms(value) if name.endswith("Ms") else f"{value:g}"


def delta_text(name: str, a: float | None, b: float | None) -> str:
    """``A 331 ms, B 258 ms (-73 ms)``: two runs' measure and B's difference from A."""
    text = f"A {measure_text(name, a)}, B {measure_text(name, b)}"
    if a is None or b is None:
        return text
    if a == b:
        return text + " (the same)"
    return text + f" ({'+' if b > a else '-'}{measure_text(name, abs(b - a))})"


def pair_title(pair: Pair) -> str:
    """``Analysis 3 (kg_lookup)``, or ``A's Analysis 3 / B's Analysis 4 (kg_lookup)`` when they differ."""
    a, b = pair.a, pair.b
    if a is not None and b is not None:
        title = a.title if a.title == b.title else f"A's {a.title} / B's {b.title}"
    else:
        title = f"{'A' if a is not None else 'B'}'s {pair.entry.title}"
    tool = pair.entry.tool
    return f"{title} ({tool})" if tool else title


def side_range(pairs: Sequence[Pair], side: str) -> str:
    """The first and last of one run's entries among ``pairs``: ``Analysis 2 to Conclusion``."""
    titles = [entry.title for p in pairs if (entry := p.a if side == "a" else p.b) is not None]
    if not titles:
        return "nothing"
    return titles[0] if len(titles) == 1 else f"{titles[0]} to {titles[-1]}"


def both_ranges(pairs: Sequence[Pair]) -> str:
    """``Analysis 1 to Analysis 4``, or ``A's ..., B's ...`` when the two runs' titles differ."""
    a, b = side_range(pairs, "a"), side_range(pairs, "b")
    return a if a == b else f"A's {a}, B's {b}"


def divergence_text(found: TraceDiff) -> str:
    """What the first divergence is, in one sentence (empty when the runs are identical)."""
    if found.first is None:
        return ""
    pair = found.pairs[found.first]
    if pair.changed == ("query",):  # a Question's text: "Question: Question differs" says it twice
        return f"{pair_title(pair)}: its text differs"
    what = _ALONE.get(pair.status) or (", ".join(diff_label(n) for n in pair.changed)
                                        + (" differ" if len(pair.changed) > 1 else " differs"))
    return f"{pair_title(pair)}: {what}"


def downstream_text(found: TraceDiff) -> str:
    """What comes after the first divergence, in each run, and how it compares."""
    after = found.downstream
    if not after:
        return "nothing: it is the last entry of both runs"
    sizes = [sum(1 for p in after if (p.a if side == "a" else p.b) is not None) for side in "ab"]
    counts = ", ".join(f"{found.count(status, after)} {name}" for status, name in (
        (EQUAL, "equal"), (CHANGED, "changed"), (ONLY_A, "only in A"), (ONLY_B, "only in B")))
    return (f"A's {side_range(after, 'a')} ({_entries(sizes[0])}), B's {side_range(after, 'b')} "
            f"({_entries(sizes[1])}): {counts}")


def _entries(n: int) -> str:
    return f"{n} {'entry' if n == 1 else 'entries'}"


def _sides_lines(pair: Pair, name: str) -> list[str]:
    lines = [f"    {diff_label(name)}:"]
    for side in "ab":
        text = pair.value(side, name).text.splitlines() or [""]
        lines.append(f"      {side.upper()}: {text[0]}")
        lines += [f"         {line}" if line else "" for line in text[1:]]
    return lines


def _diff_header(trace: Trace, side: str) -> str:
    about = [trace.type, trace.status]
    if trace.time:
        about.append(f"started {shown_time(trace.time)}")
    if trace.trace_id:
        about.append(f"trace {trace.trace_id}")
    return f"{side}: {trace.id} ({', '.join(about)})"


def _pair_lines(pair: Pair) -> list[str]:
    alone = _ALONE.get(pair.status)
    lines = [f"{STATUS_MARKS[pair.status]} {pair_title(pair)}" + (f": {alone}" if alone else "")]
    if pair.status == CHANGED:
        for name in pair.changed:
            lines += _sides_lines(pair, name)
    else:
        for name in pair.names:
            lines += _field(diff_label(name), pair.entry.fields[name].text, "    ")
    return lines


def diff_lines(found: TraceDiff) -> list[str]:
    """The text of ``otel-prov diff``, as lines."""
    lines = [_diff_header(found.a, "A"), _diff_header(found.b, "B")]
    question = found.pairs[0]
    if "query" not in question.changed:
        lines += _field("Question (both)", question.value("a", "query").text, "")
    lines.append("")
    if found.identical:
        lines += ["The runs are identical: every value is equal (times, durations and tokens are not "
                  "compared: see below).", ""]
    else:
        lines += [f"The runs differ. First divergence: {divergence_text(found)}.",
                  f"Downstream of it (after it in the chain): {downstream_text(found)}.", ""]
    lines.append("--- Entries (= equal, ! changed, - only in A, + only in B) ---")
    for _, run in found.runs():
        if run[0].status == EQUAL:
            lines.append(f"= {both_ranges(run)} ({len(run)} equal)")
        else:
            lines += _pair_lines(run[0])
    lines += ["", "--- Times, durations, tokens (not compared: two runs always differ in these) ---"]
    started = [shown_time(t.time) or "not recorded" for t in (found.a, found.b)]
    lines.append(f"Started: A {started[0]}, B {started[1]}")
    for name, (a, b) in found.totals.items():
        lines.append(f"{MEASURE_LABELS.get(name, name)}: {delta_text(name, a, b)}")
    moved = found.durations_changed()
    if moved:
        lines.append("Durations that changed most:")
        lines += [f"  {pair_title(p)}: {delta_text('durationMs', a, b)}" for p, a, b in moved]
    return lines


def diff_text(found: TraceDiff) -> str:
    return visible("\n".join(diff_lines(found)) + "\n")
