"""The incremental per-trace mapper: the mapping with the little state it needs, the span trees of
framework ("GenAI") traces and the chat conversations across them.  One per exporter or receiver
(:mod:`otel_prov.ingest`).

Spans with our attributes are mapped one at a time by the pure :func:`.flows.map_span`.
Framework traces (no ``otel_prov.*`` attributes) need their tree to find each tool call's agent and
the model call that requested it, and to number the steps, and a tree arrives in pieces, children
first, over many batches.  So every span is remembered per trace -- a framework span the mapping
needs with what its dialect read of it (read once, on arrival), every other span as a skeleton (ids,
parent, name, start) -- and a trace's graph is recomputed (by the pure :func:`.agents.trace_mapped`)
when a span arrives that can change it.  Model calls outside any agent are handed to
:class:`.conversations.Conversations`, which maps each chat conversation again, once per batch, when
its calls change (a conversation spans traces).  The update removes what is no longer true and adds
what is new, so the store always holds the graph of the spans seen so far, whatever their order,
grouping and repetition.

Memory is bounded (:data:`MAX_TRACES`, :data:`MAX_SPANS`, :data:`MAX_SPANS_PER_TRACE`,
:data:`MAX_BYTES`).  Past a bound the least recently updated trace is forgotten -- traces without
framework spans first.  Its quads stay in the store; a GenAI trace that is forgotten is remembered as
such (its later spans are not mapped, so a half-known tree never rewrites a correct graph), its
conversations are frozen, and forgetting one whose spans still waited for their parents is reported
as a problem.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.profiles import TRUSTGRAPH, check_profile
from ..model.quads import Quad
from .agents import AgentsMapped, trace_mapped
from .blobs import BLOB_PREFIX, by_reference
from .conversations import LEFT_OUT, Conversations
from .dialects import Role
from .flows import Mapped, is_ours, map_span
from .limits import DEFAULT_MAX_ATTRIBUTE_BYTES, oversized
from .policy import ContentPolicy
from .spans import Event, LogRecord, SpanRecord, SpanView
from .tree import Kind, Read, framework_role, log_order, skeleton, trace_view, view_kind, view_size, with_logs
from .trustgraph import to_trustgraph

logger = logging.getLogger(__name__)

TIME_KEY = "otel_prov.event.time"
"""A log record's time, kept with its event (the events of a span are read in time order)."""


def _event_size(event: Event) -> int:
    return 64 + sum(len(k) + (len(v) if isinstance(v, str) else 16) for k, v in event[1].items())

MAX_TRACES = 10_000
"""Traces whose span trees are remembered."""
MAX_SPANS = 200_000
"""Spans remembered over all traces (a skeleton is about 300 bytes)."""
MAX_SPANS_PER_TRACE = 10_000
"""Spans remembered of one trace; later spans of a bigger trace are not used for GenAI mapping."""
MAX_BYTES = 64 * 1024 * 1024
"""Rough bytes remembered over all traces (skeletons, plus the text of agent and tool spans)."""

_SKELETON_SIZE = 300
"""Bytes a skeleton takes, roughly (the tuple, its ids, a short name, a small dict)."""

TRACE_TOO_BIG = ("trace with more spans than the mapper keeps per trace: "
                 "the rest are not used for GenAI mapping")
FORGOTTEN_WAITING = ("GenAI trace forgotten (mapper memory bound reached) while some of its spans "
                     "waited for their parents: those spans are not mapped")
MAPPING_FAILED = "mapping a GenAI trace failed (its graph is left as it was; see the first traceback)"
LATE_SPAN = "span of a GenAI trace already forgotten (mapper memory bound reached): not mapped"


@dataclass
class Update:
    """What to do to the store after a batch of spans: remove, then add."""

    add: list[Quad] = field(default_factory=list)
    remove: list[Quad] = field(default_factory=list)
    mapped: int = 0
    """Spans of the batch that are part of a flow (ours, or a GenAI agent or tool call)."""
    ignored: int = 0
    """Spans of the batch that are part of no flow (chat, HTTP, ...)."""
    waiting: int = 0
    """Agent and tool spans of the batch's traces that still wait for missing parents."""
    problems: list[str] = field(default_factory=list)
    failed: list[tuple[SpanRecord, str]] = field(default_factory=list)
    """Spans the mapping raised on (a bug or input it cannot handle), with the error: nothing of
    them was written, and mapping them again would fail the same way."""
    blobs: dict[str, bytes] = field(default_factory=dict)
    """The values of ``add`` stored by reference (:mod:`.blobs`), by hex SHA-256: written to the blob
    store before the quads."""
    rewritten: dict[int, frozenset[Quad]] = field(default_factory=dict)
    """Framework traces whose graph this update rewrites, with the quads the mapper took to be in
    the store before (what :meth:`TraceMapper.unstored` needs if the update never gets there)."""
    rewritten_conversations: dict[tuple[int, int], frozenset[Quad]] = field(default_factory=dict)
    """The same for the chat conversations it rewrites (by their first call)."""
    conversation_ops: list[ConversationOp] = field(default_factory=list)
    """With ``TraceMapper(conversations=False)``: how the free model calls of the batch's traces
    changed, for the mapper that keeps the conversations (:meth:`TraceMapper.apply_conversations`)."""

    def without_quads(self) -> Update:
        """What :meth:`TraceMapper.unstored` needs of this update, kept by a request until its commit
        is confirmed: not its quads (a 63 MiB request's 870,000 quads, held to the end, took ``serve``
        ~350 MiB above its budget)."""
        return Update(rewritten=self.rewritten, rewritten_conversations=self.rewritten_conversations)


ConversationOp = tuple[int, tuple[SpanView, ...] | None]
"""``(trace id, its free model calls)``, or ``(trace id, None)``: the trace was forgotten."""


LOG_UNATTACHED = "GenAI event (log record) without a trace and span id: it cannot be joined to a span"
LATE_LOG = "GenAI event (log record) of a trace already forgotten (mapper memory bound reached): not mapped"
LOG_TOO_LARGE = "GenAI event (log record) with a value over the attribute limit: not mapped"


@dataclass
class _TraceState:
    nodes: dict[int, SpanView] = field(default_factory=dict)
    logs: dict[int, tuple[Event, ...]] = field(default_factory=dict)
    """The GenAI events that came as log records, by the span they belong to (which may not have
    arrived yet), in a canonical order (:func:`.tree.log_order`)."""
    relevant: int = 0
    size: int = 0
    waiting: int = 0
    remote_roots: int = 0
    quads: frozenset[Quad] = frozenset()
    problems: Counter[str] = field(default_factory=Counter)
    unsure: frozenset[Quad] | None = None
    """Set when an update of this trace may not have reached the store: every quad that may be
    there.  The next span of the trace rewrites it whole (removes all of these it does not keep,
    adds all it keeps)."""


class TraceMapper:
    """Thread-safe.  One per exporter or receiver."""

    def __init__(self, profile: str, *, max_traces: int = MAX_TRACES, max_spans: int = MAX_SPANS,
                 max_spans_per_trace: int = MAX_SPANS_PER_TRACE, max_bytes: int = MAX_BYTES,
                 max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES, conversations: bool = True,
                 policy: ContentPolicy | None = None, blob_threshold: int = 0) -> None:
        self.profile = check_profile(profile)
        self.blob_threshold = max(0, blob_threshold)
        """A content value of more bytes is stored by reference (:mod:`.blobs`); 0: never."""
        self.policy = policy if policy is not None and policy.active else None
        """What of the content reaches the store (:mod:`.policy`): applied to the quads of each span,
        trace and conversation as they are mapped, before they are remembered or handed on."""
        self.max_attribute_bytes = max_attribute_bytes
        """A span with a larger attribute value is rejected (:mod:`.limits`)."""
        self.max_traces = max_traces
        self.max_spans = max_spans
        self.max_spans_per_trace = max_spans_per_trace
        self.max_bytes = max_bytes
        self._plain: OrderedDict[int, _TraceState] = OrderedDict()
        """Traces without agent or tool spans (so far), least recently updated first."""
        self._genai: OrderedDict[int, _TraceState] = OrderedDict()
        self._forgotten: OrderedDict[int, None] = OrderedDict()
        self._conversations = Conversations(max_forgotten=max_traces)
        self.keeps_conversations = conversations
        """False: chat conversations (which span traces) are kept by another mapper, which gets
        this one's :attr:`Update.conversation_ops` (``otel-prov serve``'s workers: each maps a share
        of the traces, one of them keeps every conversation)."""
        self._shipped: set[int] = set()
        """Traces whose free model calls were handed out (without conversations)."""
        self._spans = 0
        self._bytes = 0
        self.forgotten_traces = 0
        self.dropped_spans = 0
        self._failed = 0
        self._lock = threading.Lock()

    def map(self, records: Iterable[SpanRecord], logs: Iterable[LogRecord] = ()) -> Update:
        """The update of the store for a batch of spans and of the GenAI events sent as log records
        (``logs``: joined to their spans by trace and span id, whichever arrives first)."""
        direct = Mapped()
        by_trace: dict[int, list[SpanRecord]] = {}
        logs_by_trace: dict[int, list[LogRecord]] = {}
        log_problems: list[str] = []
        for log in logs:
            if not log.trace_id or not log.span_id:
                log_problems.append(LOG_UNATTACHED)
            elif oversized("", log.attributes, "", self.max_attribute_bytes) is not None:
                log_problems.append(LOG_TOO_LARGE)
            else:
                logs_by_trace.setdefault(log.trace_id, []).append(log)
        failed: list[tuple[SpanRecord, str]] = []
        limit = self.max_attribute_bytes
        for rec in records:
            too_large = oversized(rec.name, rec.attributes, rec.status_message, limit)
            for _, event in rec.events if too_large is None else ():  # the GenAI events kept: read too
                too_large = too_large or oversized("", event, "", limit)
            if too_large is not None:  # it could never be stored: rejected before it is remembered
                failed.append((rec, too_large))
                continue
            if is_ours(rec):
                before = len(direct.quads)
                try:
                    map_span(rec, self.profile, direct)
                except Exception as exc:  # keep the batch: only this span is lost, and counted
                    del direct.quads[before:]
                    failed.append((rec, f"{type(exc).__name__}: {exc}"))
                    continue
            by_trace.setdefault(rec.trace_id, []).append(rec)
        blobs: dict[str, bytes] = {}
        update = Update(add=self._policed(direct.quads, blobs), mapped=direct.mapped, ignored=direct.ignored,
                        problems=direct.problems + log_problems, failed=failed, blobs=blobs)
        if by_trace or logs_by_trace:
            with self._lock:
                touched: set[tuple[int, int]] = set()
                for trace_id in list(dict.fromkeys([*by_trace, *logs_by_trace])):
                    self._update_trace(trace_id, by_trace.get(trace_id, []), update, touched,
                                       logs_by_trace.get(trace_id, ()))
                    self._evict(trace_id, update)
                if touched:
                    self._remap_conversations(touched, update)
        return update

    def unstored(self, update: Update) -> None:
        """``update`` may not have reached the store (appending it failed, or its commit was not
        confirmed).  The next span of each framework trace it rewrote rewrites that trace whole --
        a retried request too, whose spans are all known by then -- so what the store holds ends
        right whichever part of the update got there.  (Our own flows need nothing: their spans
        map the same again.)"""
        with self._lock:
            for trace_id, before in update.rewritten.items():
                trace = self._genai.get(trace_id) or self._plain.get(trace_id)
                if trace is None:  # forgotten meanwhile: its quads stay as they are
                    continue
                trace.unsure = (trace.unsure or frozenset()) | before | trace.quads
            self._conversations.unstored(update.rewritten_conversations)

    def apply_conversations(self, ops: Iterable[ConversationOp]) -> Update:
        """Another mapper's :attr:`Update.conversation_ops`, applied to the conversations this one
        keeps: the update that maps again the conversations they changed."""
        update = Update()
        with self._lock:
            touched: set[tuple[int, int]] = set()
            try:
                for trace_id, calls in ops:
                    if calls is None:
                        self._conversations.forget(trace_id)
                    else:
                        touched |= self._conversations.set_calls(trace_id, calls, update.problems)
            except Exception:
                self._mapping_failed(update)
                return update
            if touched:
                self._remap_conversations(touched, update)
        return update

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "traces": len(self._plain) + len(self._genai),
                "genai_traces": len(self._genai),
                "spans": self._spans,
                "bytes": self._bytes,
                "forgotten_traces": self.forgotten_traces,
                "dropped_spans": self.dropped_spans,
            }

    # -- one trace --------------------------------------------------------------------------------

    def _update_trace(self, trace_id: int, recs: list[SpanRecord], update: Update,
                      touched: set[tuple[int, int]], logs: Sequence[LogRecord] = ()) -> None:
        if trace_id in self._forgotten:
            for rec in recs:
                if framework_role(rec) is not Role.OTHER:
                    update.problems.append(LATE_SPAN)
                elif not is_ours(rec):
                    update.ignored += 1
            update.problems.extend(LATE_LOG for _ in logs)
            return
        trace = self._touch(trace_id)
        new_relevant = new_structure = False
        if logs and self._add_logs(trace, logs):
            # New content for a span the mapping reads (a log arriving after its span) changes the
            # graph; one for a span not here yet waits for it.
            new_relevant = any(view_kind(trace.nodes[log.span_id]) == Kind.RELEVANT
                               for log in logs if log.span_id in trace.nodes)
            if any(log.span_id not in trace.nodes for log in logs) and trace_id in self._plain:
                self._genai[trace_id] = self._plain.pop(trace_id)  # events of a GenAI trace
        for rec in recs:
            known = trace.nodes.get(rec.span_id)
            if known is None:
                if len(trace.nodes) >= self.max_spans_per_trace:
                    update.problems.append(TRACE_TOO_BIG)
                    self.dropped_spans += 1
                    continue
                known, kind = trace_view(rec, update.problems)
                size = view_size(known) if kind == Kind.RELEVANT else _SKELETON_SIZE
                trace.nodes[rec.span_id] = known
                trace.size += size
                self._bytes += size
                self._spans += 1
                if kind == Kind.RELEVANT:
                    trace.relevant += 1
                    new_relevant = True
                else:
                    new_structure = True
            else:
                kind = view_kind(known)
            if kind == Kind.RELEVANT:
                update.mapped += 1
            elif kind == Kind.OTHER:
                update.ignored += 1
        if trace.relevant and trace_id in self._plain:
            self._genai[trace_id] = self._plain.pop(trace_id)
        # A skeleton can change the graph only by filling a gap: under a waiting span, or above a
        # span taken as a root because its (remote) parent was missing.
        if new_relevant or trace.unsure is not None or (
                new_structure and (trace.waiting or trace.remote_roots)):
            self._recompute(trace_id, trace, update, touched, recs)
        update.waiting += trace.waiting

    def _add_logs(self, trace: _TraceState, logs: Sequence[LogRecord]) -> bool:
        """Keep the events of ``logs`` with the trace (each once: a retried request sends them again);
        whether any is new."""
        changed = False
        by_span: dict[int, list[Event]] = {}
        for log in logs:
            by_span.setdefault(log.span_id, []).append((log.name, {**log.attributes, TIME_KEY: log.time_ns}))
        for span_id, events in by_span.items():
            known = trace.logs.get(span_id, ())
            merged = log_order([*known, *events])
            if merged != known:
                size = sum(_event_size(e) for e in merged) - sum(_event_size(e) for e in known)
                trace.logs[span_id] = merged
                trace.size += size
                self._bytes += size
                changed = True
        return changed

    def _touch(self, trace_id: int) -> _TraceState:
        for traces in (self._genai, self._plain):
            trace = traces.get(trace_id)
            if trace is not None:
                traces.move_to_end(trace_id)
                return trace
        trace = self._plain[trace_id] = _TraceState()
        return trace

    def _recompute(self, trace_id: int, trace: _TraceState, update: Update,
                   touched: set[tuple[int, int]], recs: list[SpanRecord]) -> None:
        try:
            result = AgentsMapped()
            trace_mapped(self._views(trace), self.profile, result)
            if result.too_large:
                # Those spans can never be stored: they become skeletons (kept for the tree's
                # shape, never mapped again), the batch's are rejected, and the trace is mapped
                # without them.
                self._reject_too_large(trace, result.too_large, update, recs)
                result = AgentsMapped()
                trace_mapped(self._views(trace), self.profile, result)
            if self.keeps_conversations:
                touched |= self._conversations.set_calls(trace_id, result.free_calls, update.problems)
            elif result.free_calls or trace_id in self._shipped:
                update.conversation_ops.append((trace_id, tuple(result.free_calls)))
                if result.free_calls:
                    self._shipped.add(trace_id)
                else:
                    self._shipped.discard(trace_id)
        except Exception:  # a bug must not stop our own spans or other traces: keep the old graph
            self._mapping_failed(update)
            return
        new = frozenset(self._policed(result.quads, update.blobs))
        update.rewritten.setdefault(trace_id, trace.quads)
        if trace.unsure is not None:  # the store may hold any of these: say everything
            update.remove.extend(_kept_blobs((trace.quads | trace.unsure) - new))
            update.add.extend(new)
            trace.unsure = None
        else:
            update.remove.extend(_kept_blobs(trace.quads - new))
            update.add.extend(new - trace.quads)
        trace.quads = new
        trace.waiting = result.waiting
        trace.remote_roots = result.remote_roots
        # Problems of a trace are reported once, not at every recomputation.
        counts = Counter(result.problems)
        update.problems.extend((counts - trace.problems).elements())
        trace.problems |= counts

    @staticmethod
    def _views(trace: _TraceState) -> list[SpanView]:
        """The trace's views, each with the content its log records add (:func:`.tree.with_logs`)."""
        if not trace.logs:
            return list(trace.nodes.values())
        logs = rehomed(trace.nodes, trace.logs)
        return [with_logs(view, logs[span_id]) if span_id in logs else view
                for span_id, view in trace.nodes.items()]

    @staticmethod
    def _reject_too_large(trace: _TraceState, too_large: dict[int, str], update: Update,
                          recs: list[SpanRecord]) -> None:
        in_batch = {rec.span_id: rec for rec in recs}
        for span_id, reason in too_large.items():
            view = trace.nodes[span_id]
            trace.nodes[span_id] = skeleton(view)._replace(name="")  # no role by its name either
            trace.relevant -= 1
            rec = in_batch.get(span_id)
            if rec is not None:
                update.failed.append((rec, reason))
                update.mapped -= 1
            else:
                update.problems.append(LEFT_OUT.format(reason=reason))

    def _remap_conversations(self, touched: set[tuple[int, int]], update: Update) -> None:
        """The chat conversations the batch changed, mapped again once (their calls may span
        several traces of the batch)."""
        try:
            add, remove, before = self._conversations.remap(touched, self.profile, update.problems,
                                                            lambda quads: self._policed(quads, update.blobs))
        except Exception:
            self._mapping_failed(update)
            return
        update.remove.extend(remove)
        update.add.extend(add)
        update.rewritten_conversations.update(before)

    def _policed(self, quads: list[Quad], blobs: dict[str, bytes]) -> list[Quad]:
        """``quads`` as they reach the store: the content policy applied, then large values by
        reference (their bytes added to ``blobs``), then (profile ``trustgraph``) rewritten to
        TrustGraph's layout (a document's text is the policed one)."""
        out = quads if self.policy is None else self.policy.apply(quads)
        if self.blob_threshold:
            out = by_reference(out, self.blob_threshold, blobs)
        return to_trustgraph(out) if self.profile == TRUSTGRAPH else out

    def _mapping_failed(self, update: Update) -> None:
        if not self._failed:
            logger.exception("otel-prov mapper: mapping a GenAI trace failed (logged once)")
        self._failed += 1
        update.problems.append(MAPPING_FAILED)

    # -- memory bound -------------------------------------------------------------------------------

    def _over(self) -> bool:
        return (len(self._plain) + len(self._genai) > self.max_traces
                or self._spans > self.max_spans or self._bytes > self.max_bytes)

    def _evict(self, keep: int, update: Update) -> None:
        while self._over():
            victim = None
            for traces in (self._plain, self._genai):
                victim = next((t for t in traces if t != keep), None)
                if victim is not None:
                    self._forget(victim, traces.pop(victim), update)
                    break
            if victim is None:
                return

    def _forget(self, trace_id: int, trace: _TraceState, update: Update) -> None:
        self._spans -= len(trace.nodes)
        self._bytes -= trace.size
        self.forgotten_traces += 1
        if self.keeps_conversations:
            self._conversations.forget(trace_id)
        elif trace_id in self._shipped:
            self._shipped.discard(trace_id)
            update.conversation_ops.append((trace_id, None))
        if trace.relevant:
            self._forgotten[trace_id] = None
            while len(self._forgotten) > self.max_traces:
                self._forgotten.popitem(last=False)
        if trace.waiting:
            update.problems.append(FORGOTTEN_WAITING)
        logger.debug("otel-prov mapper: memory bound reached, forgot trace %032x (%d spans, %d quads)",
                     trace_id, len(trace.nodes), len(trace.quads))


def _kept_blobs(quads: Iterable[Quad]) -> list[Quad]:
    """``quads`` but a blob's description (another session may refer to the same blob; what no
    session refers to any more is erased by ``delete`` and ``prune``)."""
    return [q for q in quads if not q[0].startswith("<" + BLOB_PREFIX)]


def _is_model_call(view: SpanView) -> bool:
    info = view.info
    return isinstance(info, Read) and info.role is Role.LLM


def rehomed(nodes: Mapping[int, SpanView],
            logs: Mapping[int, tuple[Event, ...]]) -> dict[int, tuple[Event, ...]]:
    """``logs`` (events by the span id their records name), with the events a model call sent while
    another span was current moved to it: an instrumentation that emits a call's events after the
    call's span is no longer current (OpenLLMetry's Anthropic events name the agent span above)
    leaves several calls' messages and choices on one span, where read together they would be one
    call that said everything.  An event moves to a model call below the span it names when its time
    lies within that call alone; an event within none, or within several at once, stays where it was
    sent."""
    children: dict[int, list[SpanView]] = {}
    for view in nodes.values():
        if _is_model_call(view):
            children.setdefault(view.parent_id, []).append(view)
    if not children:
        return dict(logs)
    out: dict[int, list[Event]] = {}
    for span_id, events in logs.items():
        calls = [] if span_id in nodes and _is_model_call(nodes[span_id]) else children.get(span_id, [])
        for event in events:
            at = event[1].get(TIME_KEY)
            within = [c for c in calls if isinstance(at, int) and c.start_ns <= at <= c.end_ns]
            out.setdefault(within[0].span_id if len(within) == 1 else span_id, []).append(event)
    return {span_id: log_order(events) for span_id, events in out.items()}
