"""The read model: sessions and traces as plain data, whatever store they were read from and
whatever renders them (the CLI, the renderers of :mod:`otel_prov.render`, a web view)."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any

from .. import attributes as A
from ..model.iris import flow_of_question
from ..model.terms import epoch_ns as epoch_ns  # shown here too: the read model's times

AGENT, GRAPH_RAG, DOC_RAG, UNKNOWN = "Agent", "GraphRAG", "DocRAG", "Unknown"
TYPES = {"agent": AGENT, "graphrag": GRAPH_RAG, "docrag": DOC_RAG}
"""``--type`` values and the type names shown."""

COMPLETE, UNFINISHED, FAILED = "complete", "unfinished", "error"
STATUS_NAMES = {"complete": COMPLETE, "failed": FAILED, "unfinished": UNFINISHED, FAILED: FAILED}
SORTS = ("time", "duration", "steps", "status")
"""The orders a listing can be sorted in (:attr:`SessionFilter.sort`)."""
"""The statuses as a filter names them (a failed session's status is shown as ``error``: that name
is taken too)."""
NOT_CAPTURED = "notCaptured"
"""The local name of ``otelprov:notCaptured``: what a node's span did not record."""
REDACTED = "redacted"
"""The local name of ``otelprov:redacted``: what a node's span recorded as a redaction marker."""
NOT_CAPTURED_TEXT = "(not captured)"
"""How a value the trace did not record is shown (``otelprov:notCaptured``)."""
REDACTED_TEXT = "(redacted)"
"""How a value the trace recorded only as a redaction marker is shown (``otelprov:redacted``)."""
OMITTED_TEXT = "(omitted)"
"""How a value the content policy left out is shown (``otelprov:contentPolicy "{property} omit"``)."""
RECORD_KEYS = frozenset({"traceId", "spanId", "startTime", "endTime", "generatedAtTime", "startedAtTime",
                         "endedAtTime"})
"""A step's values that say where and when it was recorded (its span's ids and times), not what it
did: never shown as its content, never a difference between two runs."""
ENDS = {AGENT: "Conclusion", GRAPH_RAG: "Synthesis", DOC_RAG: "Synthesis"}
"""The kind of step that finishes a session of each type."""
FLOW_TYPES = {A.FLOW_AGENT: AGENT, A.FLOW_GRAPH_RAG: GRAPH_RAG, A.FLOW_DOC_RAG: DOC_RAG}


class TraceNotFound(LookupError):
    """No node with that IRI in the explainability graph."""


class NotAnIri(TraceNotFound):
    """Text given as an IRI (a command's argument, a URL's path) that is not one: it names no
    node, and it is never written into a query."""

    def __init__(self, text: str, problem: str) -> None:
        self.text, self.problem = text, problem
        super().__init__(f"not an IRI: {text[:200]!r} ({problem}; expected e.g. {EXAMPLE_IRI})")


_IRIREF = re.compile(r'[A-Za-z][A-Za-z0-9+.\-]*:[^\x00-\x20<>"{}|^`\\]*')
"""What SPARQL allows between ``<`` and ``>`` (its IRIREF), with a scheme."""
_TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")
EXAMPLE_IRI = "urn:trustgraph:agent:UUID"


def check_iri(text: str) -> str:
    """``text`` if it is an absolute IRI (RFC 3987, as the store's SPARQL parser reads it), else
    :class:`NotAnIri` naming what is wrong.  Every IRI a reader is given goes through here before
    it is written into a query (``<...>``), so no caller can add to a query or break it."""
    import pyoxigraph  # its IRI parser (RFC 3987): exactly what the embedded store accepts

    problem = None
    try:
        pyoxigraph.NamedNode(text)
    except ValueError as exc:
        reason = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(exc)[:100])
        problem = reason[:1].lower() + reason[1:]
    if problem is None and not _IRIREF.fullmatch(text):
        problem = "a character SPARQL does not allow in an IRI"
    if problem is not None:
        raise NotAnIri(text, problem)
    return text


def is_trace_id(text: str) -> bool:
    """Whether ``text`` is an OpenTelemetry trace id (32 hexadecimal digits, any case, as Jaeger
    and ``otel-prov show`` print it)."""
    return _TRACE_ID.fullmatch(text.strip()) is not None


_TRACE_PREFIX = re.compile(r"[0-9a-fA-F]{6,31}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def is_trace_id_prefix(text: str) -> bool:
    """Whether ``text`` is the start of a trace id, as people paste it (Jaeger's search page shows
    the first 7 digits): 6 to 31 hexadecimal digits."""
    return _TRACE_PREFIX.fullmatch(text.strip()) is not None


def is_uuid(text: str) -> bool:
    """Whether ``text`` is a bare UUID (the last part of a session's IRI)."""
    return _UUID.fullmatch(text.strip()) is not None


def flow_of_type(kind: str) -> str:
    """The flow (``otel_prov.flow``) of a type name (``Agent``, ``GraphRAG``, ``DocRAG``)."""
    return next(flow for flow, name in FLOW_TYPES.items() if name == kind)


def type_from_iri(iri: str) -> str | None:
    """A session's type from its Question's IRI pattern (the spec's first rule), else None."""
    flow = flow_of_question(iri)
    return FLOW_TYPES[flow] if flow is not None else None


def local_name(iri: str) -> str:
    return re.split(r"[#/]", iri)[-1] or iri


@dataclass(frozen=True)
class SessionRow:
    """One line of ``otel-prov list``."""

    id: str
    type: str
    question: str
    time: str
    trace_id: str | None = None
    collection: str | None = None
    status: str = COMPLETE

    steps: int | None = None
    """Its Analysis steps (an agent) or retrieval steps (Exploration, Focus: a RAG query)."""
    duration_ms: float | None = None
    """From its first node's start to its last node's end (None: the times are not recorded)."""

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "question": self.question, "time": self.time,
                "traceId": self.trace_id, "collection": self.collection, "status": self.status,
                "steps": self.steps, "durationMs": self.duration_ms}


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions to show beyond type and collection: a time range (ISO 8601 texts, UTC; a
    bound may be cut short, ``2026-11-30`` or ``2026-11-30T10:21``) and words the question holds."""

    since: str | None = None
    until: str | None = None
    text: str | None = None
    """Words any recorded text of the session holds: its question, a thought, an action, arguments,
    an observation, the answer, a retrieved or synthesised text (case ignored)."""
    status: str | None = None
    """``complete``, ``failed`` or ``unfinished``."""
    tool: str | None = None
    """A tool one of its steps called (its name, exactly)."""
    agent: str | None = None
    """The agent's name (exactly)."""
    model: str | None = None
    """A model one of its steps called (its name, exactly)."""
    service: str | None = None
    """The service that recorded it (its resource's ``service.name``, exactly)."""
    sort: str = "time"
    """The order: ``time`` (newest first), ``duration`` (longest first), ``steps`` (most first),
    ``status`` (failed, unfinished, complete)."""

    @property
    def since_bound(self) -> str:
        """The earliest time kept, as the leading part of a time's text (kept: ``time >= bound``)."""
        return _bound(self.since or "")

    @property
    def until_bound(self) -> str:
        """The latest time kept, as the leading part of a time's text (kept: the time's first
        ``len(bound)`` characters ``<= bound``, so ``2026-11-30`` keeps that whole day)."""
        return _bound(self.until or "")

    def keeps_time(self, time: str | None) -> bool:
        """Whether a session whose time is ``time`` is in the range, as the listing's query decides
        (a session without a time is kept only without a range)."""
        if not self.since and not self.until:
            return True
        if not time:
            return False
        until = self.until_bound
        return (not self.since or time >= self.since_bound) and (not self.until or time[:len(until)] <= until)


_ISO_BOUND = re.compile(r"\d{4}(?:-\d\d(?:-\d\d(?:[T ]\d\d(?::\d\d(?::\d\d(?:\.\d{1,9})?)?)?"
                        r"(?:[Zz]|[+-]\d\d:?\d\d)?)?)?)?[Zz]?")
_OFFSET = re.compile(r"([+-])(\d\d):?(\d\d)$")


def check_bound(name: str, value: str | None) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is an ISO 8601 time, possibly cut short
    (``2026``, ``2026-11-30``, ``2026-11-30T10:21``; UTC unless it ends with its offset,
    ``2026-11-30T12:21+02:00``)."""
    text = value.strip() if value else ""
    offset = _OFFSET.search(text) if "T" in text or " " in text else None
    local = text[:offset.start()] if offset else text
    numbers = [int(n) for n in re.findall(r"\d+", local.split(".")[0])]
    limits = (None, 12, 31, 23, 59, 59)  # year, month, day, hour, minute, second
    in_range = all(limit is None or (1 if i in (1, 2) else 0) <= n <= limit
                   for i, (n, limit) in enumerate(zip(numbers, limits, strict=False)))
    if offset is not None:
        in_range = in_range and int(offset.group(2)) <= 23 and int(offset.group(3)) <= 59
    if text and (_ISO_BOUND.fullmatch(text) is None or not in_range):
        raise ValueError(f"{name}={text[:40]!r}: expected an ISO 8601 time (UTC unless it names its "
                         "offset), e.g. 2026-11-30, 2026-11-30T10:21 or 2026-11-30T12:21+02:00")


def _bound(value: str) -> str:
    """An ISO bound as the leading part of a time's seconds text (``T`` for a space, no ``Z``; a time
    with an offset from UTC turned into UTC, to the precision given)."""
    text = value.strip().rstrip("Zz").replace(" ", "T")
    offset = _OFFSET.search(text)
    if offset is None or "T" not in text:
        return text.partition(".")[0]
    local = text[:offset.start()].partition(".")[0]
    parts = [int(n) for n in re.findall(r"\d+", local)]  # year, month, day, hour[, minute[, second]]
    sign = -1 if offset.group(1) == "-" else 1
    shift = datetime.timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3))) * sign
    year, month, day, hour, minute, second = (parts + [0, 0])[:6]
    local_time = datetime.datetime(year, month, day, hour, minute, second, tzinfo=datetime.timezone(shift))
    utc = local_time.astimezone(datetime.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S")[:len("2026-11-30T10:21:00") - 3 * (6 - len(parts))]


@dataclass(frozen=True)
class SelectedEdge:
    """A GraphRAG Focus's selected edge: ``(s, p, o)`` and why it was kept."""

    iri: str
    edge: tuple[str, str, str] | None
    reasoning: str | None


@dataclass
class TraceStep:
    """One node derived from the Question (an Analysis, an Exploration, ...), with its values."""

    iri: str
    kind: str
    """The ``tg:`` class local name (``Analysis``, ``Focus``, ...), else the local name of another
    type it has, else ``Unknown``."""
    values: dict[str, list[str]] = field(default_factory=dict)
    """Predicate local name -> values (``thought``, ``action``, ``edgeCount``, ...)."""
    number: int | None = None
    """An Analysis's iteration number."""
    edges: list[SelectedEdge] = field(default_factory=list)
    chunk_scores: list[ChunkScore] = field(default_factory=list)
    """A DocRAG Exploration's or Focus's chunks with their ranks and scores, where recorded."""
    subtraces: list[Trace] = field(default_factory=list)
    """Sessions started by this step (a RAG query run by an agent's tool)."""
    approvals: list[Approval] = field(default_factory=list)
    """People's approvals and rejections of this step (or answer), in time order."""

    def value(self, name: str) -> str | None:
        found = self.values.get(name)
        return found[0] if found else None

    def captured(self, name: str) -> bool:
        """False when the trace did not record ``name`` (``otelprov:notCaptured``)."""
        return name not in self.values.get(NOT_CAPTURED, [])

    def redacted(self, name: str) -> bool:
        """True when the trace recorded ``name`` as a redaction marker (``otelprov:redacted``)."""
        return name in self.values.get(REDACTED, [])

    def shown(self, name: str) -> str | None:
        """``name``'s value as a reader sees it: the value, else ``(redacted)`` or ``(not
        captured)``, else None (the node has no such property)."""
        value = self.value(name)
        if value:
            return value
        if self.redacted(name):
            return REDACTED_TEXT
        if f"{name} omit" in self.values.get("contentPolicy", []):
            return OMITTED_TEXT
        # (the spec's mandatory literals stay, empty, where the value was not captured: "")
        return value if self.captured(name) else NOT_CAPTURED_TEXT

    @property
    def error(self) -> str | None:
        return self.value("statusMessage")

    @property
    def duration_ms(self) -> float | None:
        """How long the span the step was written from took (``otelprov:startTime`` to ``endTime``)."""
        return duration_ms(self.value("startTime"), self.value("endTime"))

    def facts(self) -> list[tuple[str, str]]:
        """What an agent-tracing tool shows of a step beside its content: its model (and provider),
        tokens, finish reason, durations, a tool's error -- as (label, text), only what is recorded."""
        found: list[tuple[str, str]] = []
        model, provider = self.value("llmModel"), self.value("modelProvider")
        if model or provider:
            found.append(("Model", f"{model or '?'} ({provider})" if provider else str(model)))
        tokens = [f"{self.value(k)} {label}" for k, label in (
            ("inToken", "in"), ("outToken", "out"), ("reasoningTokens", "reasoning")) if self.value(k)]
        if tokens:
            found.append(("Tokens", ", ".join(tokens)))
        if self.value("finishReason"):
            found.append(("Finish reason", str(self.value("finishReason"))))
        took = self.duration_ms
        if took is not None and took >= 1:  # under a millisecond (an event-like step): not worth a line
            found.append(("Duration", format_ms(took)))
        for key, label in (("llmDurationMs", "Model time"), ("toolDurationMs", "Tool time")):
            if self.value(key):
                found.append((label, format_ms(float(self.value(key) or 0))))
        if self.value("toolError") and self.value("toolError") != self.error:  # else its Error line says it
            found.append(("Tool error", str(self.value("toolError"))))
        content = self.content_policy()
        if content:
            found.append(("Content", content))
        return found

    def content_policy(self) -> str:
        """What the content policy did to the step's values (docs/privacy.md), as a reader is told it:
        ``thought: SHA-256 of the text; observation: first 200 of 1,234 characters; redacted in
        observation: email=2``; "" when it changed nothing."""
        said = {}
        for note in self.values.get("contentPolicy", []):
            name, _, rule = note.partition(" ")
            said[name] = {"sha256": "SHA-256 of the text", "omit": "omitted"}.get(rule, rule)
        for note in self.values.get("truncatedFrom", []):
            name, _, length = note.partition(" ")
            limit = said.get(name, "").removeprefix("truncate:")
            cut = length.isdigit() and limit.isdigit()
            said[name] = f"first {limit} of {int(length):,} characters" if cut else f"cut from {length}"
        for note in self.values.get("byReference", []):
            name, _, blob = note.partition(" ")
            size = next((int(n.partition(" ")[2]) for n in self.values.get("blobBytes", [])
                         if n.partition(" ")[0] == blob and n.partition(" ")[2].isdigit()), None)
            of = f"{size:,} bytes, " if size is not None else ""
            said[name] = f"its beginning shown ({of}blob {blob}; show --inline prints it whole)"
        parts = [f"{name}: {what}" for name, what in sorted(said.items())
                 if not what.startswith("truncate:")]  # under the limit: whole
        parts += [f"redacted in {note.replace(' ', ': ', 1)}"
                  for note in sorted(self.values.get("redactions", []))]
        return "; ".join(parts)


@dataclass(frozen=True)
class Approval:
    """A person's approval or rejection of a step or an answer (``otelprov:Approval``)."""

    iri: str
    decision: str
    """``approved`` or ``rejected``."""
    time: str | None
    by: str | None = None
    """Who decided (the person's label); None when the span did not say."""
    person: str | None = None
    """The person's IRI (``urn:otel-prov:person:...``)."""
    role: str | None = None
    comment: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"id": self.iri, "decision": self.decision, "by": self.by, "person": self.person,
                "role": self.role, "time": self.time, "comment": self.comment}


@dataclass(frozen=True)
class ChunkScore:
    """A chunk a DocRAG step selected, its rank and score (``tg:ChunkSelection``)."""

    chunk: str
    rank: int | None
    score: float | None


def duration_ms(start: str | None, end: str | None) -> float | None:
    """Milliseconds between two ``xsd:dateTime`` texts as otel-prov writes them (UTC, up to
    nanoseconds); None when either is missing or not of that form."""
    a, b = epoch_ns(start), epoch_ns(end)
    return None if a is None or b is None or b < a else (b - a) / 1e6


def format_ms(ms: float) -> str:
    """A duration as a person reads it: ``850 ms``, ``1.2 s``, ``3 min 5 s``."""
    if ms < 1000:
        return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


@dataclass
class Trace:
    """One session read back: its Question and the steps derived from it, in order."""

    id: str
    type: str
    question: str
    time: str | None
    collection: str | None
    trace_id: str | None
    derived_from: str | None
    steps: list[TraceStep] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Error status messages recorded on the Question."""
    subtraces: list[Trace] = field(default_factory=list)
    """Sessions derived from the Question itself (not from one of its steps)."""
    agent: str | None = None
    """The agent's name (``otelprov:agentName``), when recorded."""
    service: str | None = None
    """The service that recorded it (``otelprov:serviceName``), when recorded."""
    not_captured: list[str] = field(default_factory=list)
    """What the trace did not record of the Question (``otelprov:notCaptured``: ``query``)."""
    redacted: list[str] = field(default_factory=list)
    """What it recorded as a redaction marker (``otelprov:redacted``: ``query``)."""
    end_time: str | None = None
    """When its session (root) span ended (``otelprov:endTime`` of the Question), when recorded."""

    @property
    def duration_ms(self) -> float | None:
        """From its start (or its first step's) to its end (or its last step's end), as ``list``'s
        Duration; None when no time is recorded."""
        starts = [epoch_ns(t) for t in (self.time, *(s.value("startTime") for s in self.steps))]
        ends = [epoch_ns(t) for t in (self.end_time, *(s.value("endTime") for s in self.steps))]
        first = min((t for t in starts if t is not None), default=None)
        last = max((t for t in ends if t is not None), default=None)
        return None if first is None or last is None or last < first else (last - first) / 1e6

    @property
    def step_count(self) -> int:
        """Its steps as ``list`` counts them: an agent's Analysis steps, a RAG query's Exploration
        and Focus."""
        counted = ("Analysis",) if self.type == AGENT else ("Exploration", "Focus")
        return sum(s.kind in counted for s in self.steps)

    @property
    def finished(self) -> bool:
        """Whether the session's end (an agent's Conclusion, a RAG query's Synthesis) is recorded."""
        return any(s.kind == ENDS.get(self.type) for s in self.steps)

    @property
    def status(self) -> str:
        if self.errors or any(s.error for s in self.steps):
            return FAILED
        return COMPLETE if self.finished else UNFINISHED
