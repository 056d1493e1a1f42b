"""Chat conversations: model calls outside any agent -> one agent session per conversation, across
traces.  A bare tool loop with the openai client (``opentelemetry-instrumentation-openai-v2``) makes
one trace per model call; nothing but the messages ties them together.

**The rule.**  Two model calls that are in no agent are calls of one conversation when they carry the
same ``gen_ai.conversation.id`` (OpenInference: ``session.id``), or when a tool call id that one call
requests (its output) is answered in the tool results another call's input ends with -- and so on,
transitively.  A conversation is an agent session when it requested at least one tool call or has a
conversation id:

- its Question is the earliest call's (by start time, then trace and span id): IRI
  ``urn:trustgraph:agent:{uuid5(first call's trace id/span id)}``, whatever the order the calls
  arrive in; ``tg:query`` the last user message of that call's input;
- each tool call a call requested is an Analysis, in order (call start, then request order):
  ``tg:thought`` the text and reasoning of that call, ``tg:action`` / ``tg:arguments`` the request,
  ``tg:observation`` the result found (by tool call id) in a later call's input (not there yet:
  marked not captured); its span is the requesting call's, ending when the answering call starts;
- the Conclusion is the last call's text when that call requested nothing.

Without content capture (the openai-v2 default) a call records no messages, so nothing links the
traces: each call stays a lone model call and maps to nothing.

:class:`Conversations` keeps the calls of every conversation seen (the :class:`~.mapper.TraceMapper`
holds one), so that a conversation's graph is recomputed whatever order and grouping its traces
arrive in.  Behind ``otel-prov serve`` every trace of a conversation must reach the same receiver
(one ``serve``, or load balancing that keeps them together): two receivers would each map part of it.
Within one ``serve``, the mappers of its workers hand their conversation changes to one of them
(:meth:`~.mapper.TraceMapper.apply_conversations`), which keeps every conversation.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import attributes as A
from ..model.iris import analysis_iri, nested_agent_uuid
from ..model.quads import Quad
from .nodes import OBSERVATION, THOUGHT, AgentsMapped, Analysis, NodeWriter, cost_attrs, first_given
from .spans import SpanView
from .tree import llm_of

CallId = tuple[int, int]
"""(trace id, span id) of a model call."""
LEFT_OUT = "span of a GenAI trace left out: {reason}"
LATE_CALL = ("model call of a conversation already forgotten (mapper memory bound reached): "
             "not mapped")


def call_id(call: SpanView) -> CallId:
    return (call.trace_id, call.span_id)


def _order(call: SpanView) -> tuple[int, int, int]:
    return (call.start_ns, call.trace_id, call.span_id)


def links(call: SpanView) -> frozenset[str]:
    """What ties a call to the other calls of its conversation."""
    found = llm_of(call)
    keys = {f"id:{r.id}" for r in found.requests if r.id}
    keys.update(f"id:{i}" for i, _ in found.results if i)
    if found.conversation:
        keys.add(f"conversation:{found.conversation}")
    return frozenset(keys)


def components(calls: Iterable[SpanView]) -> list[list[SpanView]]:
    """The conversations among ``calls``: groups tied by :func:`links`, each in call order."""
    calls = list({call_id(c): c for c in calls}.values())
    parent = list(range(len(calls)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[str, int] = {}
    for i, call in enumerate(calls):
        for key in links(call):
            j = first.setdefault(key, i)
            parent[find(i)] = find(j)
    groups: dict[int, list[SpanView]] = {}
    for i, call in enumerate(calls):
        groups.setdefault(find(i), []).append(call)
    found = [sorted(group, key=_order) for group in groups.values()]
    return sorted(found, key=lambda group: _order(group[0]))


def is_session(calls: Sequence[SpanView]) -> bool:
    return any(llm_of(c).requests or llm_of(c).conversation for c in calls)


def map_conversation(calls: Sequence[SpanView], profile: str, result: AgentsMapped) -> None:
    """The quads of one conversation (its calls in order) into ``result``."""
    if not calls or not is_session(calls):
        return
    writer = NodeWriter(profile, result)
    first, last = calls[0], calls[-1]
    uuid = nested_agent_uuid(first.trace_id, first.span_id)
    answered: dict[str, tuple[str, SpanView]] = {}
    for call in calls:
        for request_id, text in llm_of(call).results:
            if request_id:
                answered.setdefault(request_id, (text, call))
    steps: list[Analysis] = []
    ids: dict[str, str] = {}  # the causal edges, by tool call id (docs/model.md, "Causal edges")
    for call in calls:
        found = llm_of(call)
        for request in found.requests:
            result_of = answered.get(request.id or "")
            missing = [] if found.output_captured else [THOUGHT]
            if result_of is None:
                missing.append(OBSERVATION)
            steps.append(Analysis(call, request.name, found.thought if found.output_captured else None,
                                  request.arguments, result_of[0] if result_of else None, tuple(missing),
                                  result_of[1].start_ns if result_of else call.end_ns, llm=call, call=found,
                                  tool_span=False, call_id=request.id or None))
            if request.id:
                ids.setdefault(request.id, analysis_iri(uuid, len(steps)))
    given = first_given((((c.trace_id, c.span_id), llm_of(c).results) for c in calls), ids)  # across traces
    for step in steps:
        step.informed = tuple(ids[i] for i in given.get((step.span.trace_id, step.span.span_id), ()))
    extra: dict[str, Any] = {A.ITERATION: len(steps)}
    conclusion = None
    if not llm_of(last).requests:
        answer = llm_of(last).text
        conclusion = (answer, answer is None)
        extra.update(cost_attrs(last, llm_of(last).meta))
        if given.get((last.trace_id, last.span_id)):
            extra[A.INFORMED_BY] = [ids[i] for i in given[(last.trace_id, last.span_id)]]
    writer.session(first, A.FLOW_AGENT, uuid, llm_of(first).question, None, extra, end_ns=last.end_ns,
                   answer=conclusion)
    for number, step in enumerate(steps, 1):
        writer.step(uuid, number, step, {})


# -- across batches: the calls of every conversation seen ----------------------------------------------


@dataclass
class Conversations:
    """The free model calls of every trace the mapper remembers, indexed by what links them, with the
    quads each conversation was last mapped to.  Not thread-safe (the mapper's lock guards it)."""

    max_forgotten: int = 10_000
    calls: dict[CallId, SpanView] = field(default_factory=dict)
    _by_key: dict[str, set[CallId]] = field(default_factory=dict)
    _of_trace: dict[int, set[CallId]] = field(default_factory=dict)
    _root_of: dict[CallId, CallId] = field(default_factory=dict)
    _quads: dict[CallId, frozenset[Quad]] = field(default_factory=dict)
    _members: dict[CallId, set[CallId]] = field(default_factory=dict)
    _forgotten: OrderedDict[str, None] = field(default_factory=OrderedDict)
    _unsure: dict[CallId, frozenset[Quad]] = field(default_factory=dict)
    """Conversations (by first call) an update of which may not have reached the store: every quad
    the store may hold of them.  Their next mapping rewrites them whole."""

    def unstored(self, rewritten: dict[CallId, frozenset[Quad]]) -> None:
        """An update that rewrote these conversations (their quads before it) may not have reached
        the store: their next mapping (a retried request, or a new call) says everything."""
        for root, before in rewritten.items():
            if root in self._quads:
                self._unsure[root] = self._unsure.get(root, frozenset()) | before | self._quads[root]

    def set_calls(self, trace_id: int, free: Sequence[SpanView], problems: list[str]) -> set[CallId]:
        """Sets the free calls of one trace; returns the calls whose conversations must be mapped
        again (:meth:`remap`: once for a whole batch of traces)."""
        new = {call_id(c): c for c in free}
        old = self._of_trace.get(trace_id, set())
        touched: set[CallId] = set()
        for cid in old - new.keys():
            touched |= self._members.get(self._root_of.get(cid, cid), set())
            self._drop(cid)
        for cid, call in new.items():
            keys = links(call)
            if keys & self._forgotten.keys():
                self._forget_keys(keys)
                problems.append(LATE_CALL)
                continue
            known = self.calls.get(cid)
            if known is not None and known != call:  # more of it known now (its log records came)
                touched |= self._members.get(self._root_of.get(cid, cid), set())
                self._drop(cid)
            if cid not in self.calls:
                self.calls[cid] = call
                for key in keys:
                    self._by_key.setdefault(key, set()).add(cid)
            touched.add(cid)
        self._of_trace[trace_id] = {cid for cid in new if cid in self.calls}
        if not self._of_trace[trace_id]:
            del self._of_trace[trace_id]
        return touched

    def forget(self, trace_id: int) -> None:
        """The trace leaves the mapper's memory: its conversations are frozen (their quads stay in
        the store; later calls linked to them are not mapped)."""
        for cid in list(self._of_trace.pop(trace_id, ())):
            if cid not in self.calls:
                continue
            root = self._root_of.get(cid)
            members = self._members.pop(root, {cid}) if root is not None else {cid}
            if root is not None:
                self._quads.pop(root, None)
                self._unsure.pop(root, None)
            for member in members | {cid}:
                call = self.calls.get(member)
                if call is not None:
                    self._forget_keys(links(call))
                    self._drop(member)
                    self._of_trace.get(member[0], set()).discard(member)

    def _forget_keys(self, keys: Iterable[str]) -> None:
        for key in keys:
            self._forgotten[key] = None
        while len(self._forgotten) > self.max_forgotten:
            self._forgotten.popitem(last=False)

    def _drop(self, cid: CallId) -> None:
        call = self.calls.pop(cid, None)
        if call is not None:
            for key in links(call):
                holders = self._by_key.get(key)
                if holders is not None:
                    holders.discard(cid)
                    if not holders:
                        del self._by_key[key]
        root = self._root_of.pop(cid, None)
        if root is not None and root in self._members:
            self._members[root].discard(cid)

    def _component(self, start: CallId, seen: set[CallId]) -> list[CallId]:
        found, frontier = [], [start]
        seen.add(start)
        while frontier:
            cid = frontier.pop()
            found.append(cid)
            for key in links(self.calls[cid]):
                for other in self._by_key.get(key, ()):
                    if other not in seen:
                        seen.add(other)
                        frontier.append(other)
        return found

    def remap(self, touched: set[CallId], profile: str, problems: list[str],
              policed: Callable[[list[Quad]], list[Quad]] | None = None,
              ) -> tuple[list[Quad], list[Quad], dict[CallId, frozenset[Quad]]]:
        """Maps again the conversations of the ``touched`` calls (and of the calls that left them),
        each conversation's quads through ``policed`` (the content policy); returns the quads to add
        and to remove, and (by first call) the quads of each conversation mapped before
        (:meth:`unstored`)."""
        starts = {cid for cid in touched if cid in self.calls}
        seen: set[CallId] = set()
        old_roots = {self._root_of[c] for c in touched if c in self._root_of}
        old_roots |= {c for c in touched if c in self._quads}
        new_quads: dict[CallId, frozenset[Quad]] = {}
        new_members: dict[CallId, set[CallId]] = {}
        for start in sorted(starts):
            if start in seen:
                continue
            members = self._component(start, seen)
            old_roots |= {self._root_of[m] for m in members if m in self._root_of}
            calls = sorted((self.calls[m] for m in members), key=_order)
            root = call_id(calls[0])
            result = AgentsMapped()
            map_conversation(calls, profile, result)
            problems.extend(result.problems)
            problems.extend(LEFT_OUT.format(reason=r) for r in result.too_large.values())
            new_quads[root] = frozenset(result.quads if policed is None else policed(result.quads))
            new_members[root] = set(members)
        before = frozenset().union(*(self._quads.get(r, frozenset()) for r in old_roots))
        after = frozenset().union(*new_quads.values())
        unsure = frozenset().union(*(self._unsure.pop(r, frozenset()) for r in old_roots))
        for root in old_roots:
            self._quads.pop(root, None)
            for member in self._members.pop(root, set()):
                self._root_of.pop(member, None)
        for root, quads in new_quads.items():
            self._quads[root] = quads
            self._members[root] = new_members[root]
            for member in new_members[root]:
                self._root_of[member] = root
        rewritten = {root: before for root in new_quads}
        if unsure:  # the store may hold any of these: say everything
            return sorted(after), sorted((before | unsure) - after), rewritten
        return sorted(after - before), sorted(before - after), rewritten
