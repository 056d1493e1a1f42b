"""Completeness of the record (``otel-prov audit``): for each session, what the graph says is
missing, cut or wrong in it, and for the whole, counts.  Pure, over sessions read back
(:class:`~.model.Trace`).

Each finding has a code (the exit status is decided on them: ``--fail-on``):

- ``unfinished``: the session's end (an agent's Conclusion, a RAG query's Synthesis) is not recorded;
- ``failed``: an error status on the session or one of its steps (the message is given);
- ``no-result``: an agent's step called a tool and no observation is recorded, not even as not captured;
- ``clock-skew``: a node that ends before it starts, a step that starts before its session or ends
  after its session's end, steps whose starts go backwards;
- ``not-captured``: a value the trace did not record (``otelprov:notCaptured``);
- ``redacted``: a value recorded as a redaction marker, or cut, hashed or left out by the content
  policy (``otelprov:redacted``, ``otelprov:contentPolicy``).

What the graph cannot say is not guessed: a span whose parent never arrived leaves no mark in the
graph (``orphan`` spans are not checked); the times are the spans' own clocks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..model.vocab import OTELPROV, TG
from .build import Props, TraceTriple, index, types_of
from .model import AGENT, Trace, TraceStep, epoch_ns, local_name

_NOT_CAPTURED, _REDACTED = str(OTELPROV.notCaptured), str(OTELPROV.redacted)
_POLICY, _REDACTIONS = str(OTELPROV.contentPolicy), str(OTELPROV.redactions)

CODES = ("unfinished", "failed", "no-result", "clock-skew", "not-captured", "redacted")
FAIL_ON = ("unfinished", "failed", "no-result", "clock-skew")
"""The findings that make ``audit`` exit 1 unless ``--fail-on`` says otherwise."""
SKEW_NS = 1_000_000
"""A step may start before its session or end after it by this much (1 ms) without a finding:
spans' times are rounded differently by different SDKs."""


@dataclass(frozen=True)
class Finding:
    code: str
    text: str
    node: str | None = None


@dataclass
class SessionAudit:
    id: str
    type: str
    time: str | None
    trace_id: str | None
    collection: str | None
    status: str
    findings: list[Finding] = field(default_factory=list)

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "time": self.time, "traceId": self.trace_id,
                "collection": self.collection, "status": self.status,
                "findings": [{"code": f.code, "text": f.text, **({"node": f.node} if f.node else {})}
                             for f in self.findings]}


def _title(step: TraceStep) -> str:
    return f"{step.kind} {step.number}" if step.number else step.kind


def audit_trace(trace: Trace, triples: Iterable[TraceTriple]) -> SessionAudit:
    """The findings of one session (and of the sub-traces its steps ran, named as theirs), from the
    session read back and its triples (what the content policy and the mapping noted on any node:
    a step, an edge selection, a statement)."""
    found = SessionAudit(trace.id, trace.type, trace.time, trace.trace_id, trace.collection, trace.status)
    names = _names(trace, "")
    _check(trace, found.findings, "")
    for node, by_p in index(triples).items():
        title = names.get(node) or _kind(by_p, node)
        for term in by_p.get(_NOT_CAPTURED, []):
            found.findings.append(Finding("not-captured", f"{title}: {term.value} was not captured", node))
        for term in by_p.get(_REDACTED, []):
            found.findings.append(Finding("redacted", f"{title}: {term.value} is a redaction marker", node))
        for term in by_p.get(_POLICY, []):
            found.findings.append(Finding("redacted", f"{title}: the content policy applied ({term.value})",
                                          node))
        for term in by_p.get(_REDACTIONS, []):
            found.findings.append(Finding("redacted", f"{title}: redacted ({term.value})", node))
    return found


def _names(trace: Trace, where: str) -> dict[str, str]:
    """How a finding names each node of the session it knows: its steps, its questions."""
    names = {trace.id: f"{where}the question"}
    for step in trace.steps:
        names[step.iri] = where + _title(step)
        for sub in step.subtraces:
            names |= _names(sub, f"{where}{_title(step)} > {sub.type} sub-trace: ")
    for sub in trace.subtraces:
        names |= _names(sub, f"{where}{sub.type} sub-trace: ")
    return names


def _kind(by_p: Props, iri: str) -> str:
    kinds = [local_name(t) for t in types_of(by_p) if t.startswith(str(TG))]
    return f"{kinds[0] if kinds else 'node'} {iri}"


def _check(trace: Trace, out: list[Finding], where: str) -> None:
    if not trace.finished:
        out.append(Finding("unfinished", f"{where}no {'Conclusion' if trace.type == AGENT else 'Synthesis'} "
                           "recorded", trace.id))
    for message in trace.errors:
        out.append(Finding("failed", f"{where}the session failed: {message}", trace.id))
    session_start, session_end = epoch_ns(trace.time), epoch_ns(trace.end_time)
    last_start: int | None = None
    for step in trace.steps:
        title = where + _title(step)
        if step.error:
            out.append(Finding("failed", f"{title} failed: {step.error}", step.iri))
        if step.kind == "Analysis" and step.value("action") and "observation" not in step.values \
                and step.captured("observation") and not step.redacted("observation"):
            out.append(Finding("no-result", f"{title} called {step.value('action')} and no observation "
                               "is recorded", step.iri))
        start, end = epoch_ns(step.value("startTime")), epoch_ns(step.value("endTime"))
        if start is not None and end is not None and end < start:
            out.append(Finding("clock-skew", f"{title} ends before it starts", step.iri))
        if start is not None and session_start is not None and start < session_start - SKEW_NS:
            out.append(Finding("clock-skew", f"{title} starts before its session", step.iri))
        if end is not None and session_end is not None and end > session_end + SKEW_NS:
            out.append(Finding("clock-skew", f"{title} ends after its session", step.iri))
        if start is not None and last_start is not None and start < last_start - SKEW_NS:
            out.append(Finding("clock-skew", f"{title} starts before the step it follows", step.iri))
        last_start = start if start is not None else last_start
        for sub in step.subtraces:
            _check(sub, out, f"{title} > {sub.type} sub-trace: ")
    if session_start is not None and session_end is not None and session_end < session_start:
        out.append(Finding("clock-skew", f"{where}the session ends before it starts", trace.id))
    for sub in trace.subtraces:
        _check(sub, out, f"{where}{sub.type} sub-trace: ")


@dataclass
class Summary:
    sessions: int
    by_status: dict[str, int]
    by_code: dict[str, int]
    """Sessions with at least one finding of each code."""
    complete: int
    """Sessions without any finding."""
    oldest: str | None
    newest: str | None

    @property
    def share_complete(self) -> float | None:
        return self.complete / self.sessions if self.sessions else None

    def as_json(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "byStatus": self.by_status, "withFinding": self.by_code,
                "complete": self.complete, "shareComplete": self.share_complete,
                "oldest": self.oldest, "newest": self.newest}


def summarize(audits: list[SessionAudit]) -> Summary:
    times = sorted(a.time for a in audits if a.time)
    codes: Counter[str] = Counter(code for a in audits for code in a.codes())
    return Summary(len(audits), dict(Counter(a.status for a in audits)),
                   {code: codes[code] for code in CODES if codes[code]},
                   sum(not a.findings for a in audits), times[0] if times else None,
                   times[-1] if times else None)
