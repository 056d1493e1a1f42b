"""The real framework instrumentations, run offline (tests/interop), give the whole explainability
chain: for every scenario and both profiles, the question, every thought / action / arguments /
observation in order, the answer, the agent names, the delegation links and the sub-traces, as
``otel-prov show`` reads them back; what an instrumentation does not record is marked, never made
up (tests/interop/chain.py says, per scenario, what the story played and what is known missing).

The spans come from the real packages each test session (the ``interop`` fixture runs each scenario
once, in its own process, against a scripted model on 127.0.0.1); nothing here is hand-written.
"""

from __future__ import annotations

import json
import pprint
from pathlib import Path

import grpc
import pytest
import rdflib
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

from otel_prov import spans_to_dataset
from otel_prov.cli import main
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.model.profiles import PROFILES
from tests.interop import story
from tests.interop.chain import (
    FIELDS,
    Chain,
    Score,
    expected,
    field_values,
    mapped,
    normalized,
    same,
    score,
    unknown,
)
from tests.interop.runner import SCENARIOS, Captured, tree_text
from tests.support.procs import start_serve
from tests.support.prov import ONTOLOGY, closure_errors, time_order_violations

PROV = rdflib.Namespace("http://www.w3.org/ns/prov#")


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_whole_chain(interop: Captured, name: str, profile: str) -> None:
    spans = interop.spans(name)
    want = expected(name)
    got = normalized(mapped(spans, profile, interop.logs(name)), want)
    assert got == want, (f"{name} ({profile}) maps to\n{pprint.pformat(got, width=120)}\n"
                         f"expected\n{pprint.pformat(want, width=120)}\nspans:\n{tree_text(spans)}")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_no_problems_and_nothing_left_waiting(interop: Captured, name: str) -> None:
    """Every span of a finished run has its place: none waits, no reading problem."""
    result = TraceMapper("seed").map(interop.spans(name), interop.logs(name))
    assert (result.waiting, result.problems) == (0, [])


def test_strict_profile_is_valid_prov(interop: Captured) -> None:
    """The strict graphs of every scenario together: consistent with the PROV-O ontology (OWL-RL),
    times in PROV-CONSTRAINTS' order, delegation as prov:actedOnBehalfOf."""
    # Each scenario mapped on its own: the scripted model's tool-call ids (call_1, ...) repeat from
    # one scenario to the next, and would tie their free model calls into one conversation.
    ds = rdflib.Dataset()
    for name in sorted(SCENARIOS):
        for quad in spans_to_dataset(interop.spans(name), "strict").quads((None, None, None, None)):
            ds.add(quad)
    ontology = rdflib.Dataset()
    ontology.parse(ONTOLOGY, format="nquads")
    assert closure_errors(ds, [q[:3] for q in ontology.quads((None, None, None, None))]) == []
    assert time_order_violations(ds) == []
    delegations = {(str(s), str(o)) for s, _, o, _ in ds.quads((None, PROV.actedOnBehalfOf, None, None))}
    assert delegations == {("urn:otel-prov:agent:researcher", "urn:otel-prov:agent:triage")}


# -- through a real `otel-prov serve`, in pieces, then `otel-prov show` ----------------------------------


def _one_span_requests(request: ExportTraceServiceRequest) -> list[ExportTraceServiceRequest]:
    """The request split into one request per span (resource and scope kept)."""
    found = []
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                found.append(ExportTraceServiceRequest(resource_spans=[ResourceSpans(
                    resource=rs.resource, scope_spans=[ScopeSpans(scope=ss.scope, spans=[span])])]))
    return found


def test_served_in_pieces_and_shown(interop: Captured, tmp_path: Path,
                                    capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """A Collector delivers spans in any order, in pieces: the bare openai-v2 loop (three traces,
    one conversation), the Agents SDK hand-off with content capture off, and the RAG agent, one span
    per request, children first and the three runs interleaved, through a real ``otel-prov serve``;
    ``otel-prov show`` then prints each whole chain, "(not captured)" where the spans said nothing."""
    names = ["openai_v2_chat", "agents_otel_responses_no_content", "rag_agent"]
    queues = [_one_span_requests(interop.request(n))[::-1] for n in names]
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{serve.grpc_port}") as channel:
            export = trace_service_pb2_grpc.TraceServiceStub(channel).Export
            while any(queues):
                for queue in queues:
                    if queue:
                        export(queue.pop(), timeout=30)
    finally:
        code = serve.terminate(timeout=30)
    assert code == 0, serve.tail()
    store = f"oxigraph:{tmp_path / 'store'}"

    def show(iri: str) -> str:
        assert main(["show", iri, "--store", store]) == 0
        return capsysbinary.readouterr().out.decode("utf-8")

    assert main(["list", "--store", store, "--format", "json"]) == 0
    rows = json.loads(capsysbinary.readouterr().out)
    assert len(rows) == 3
    texts = [show(row["id"]) for row in rows]
    (no_content,) = [t for t in texts if "Question: (not captured)" in t]
    (rag,) = [t for t in texts if "Sub-trace (DocRAG" in t]
    (chat,) = [t for t in texts if t not in (no_content, rag)]
    for text in (chat, rag):
        for needle in (f"Question: {story.QUESTION}", f"Thought: {story.THOUGHT_1}",
                       f"Thought: {story.THOUGHT_2}", f"Observation: {story.TOOL_2_RESULT}",
                       story.FINAL_ANSWER):
            assert needle in text, text
    assert "Chunks: doc-lyon, doc-paris" in rag
    assert no_content.count("Question: (not captured)") == 2  # the session and its sub-agent
    assert no_content.count("Thought: (not captured)") == 3
    assert no_content.count("Arguments: (not captured)") == 2
    assert no_content.count("Observation: (not captured)") == 2
    assert no_content.count("(not captured)") == 2 + 3 + 2 + 2 + 2  # and the two answers
    assert "Action: handoff to researcher" in no_content
    assert "Agent: triage" in no_content and "Agent: researcher" in no_content


def test_show_prints_every_step_of_each_chain(interop: Captured) -> None:
    """The text ``otel-prov show`` prints for the hand-off run: the question, each step in order,
    the sub-agent under the step that handed off to it, the answers."""
    from otel_prov.model.quads import nquads
    from otel_prov.read.reader import TraceReader
    from otel_prov.render.text import trace_text
    from otel_prov.stores.oxigraph import OxigraphStore

    update = TraceMapper("seed").map(interop.spans("agents_openinference_responses"))
    store = OxigraphStore(None)
    store.add(nquads(update.add), len(update.add))
    reader = TraceReader(store)
    (row,) = reader.sessions()
    text = trace_text(reader.trace(row.id)[0])
    store.close()
    order = [f"Question: {story.QUESTION}", "Agent: triage", f"Thought: {story.HANDOFF_THOUGHT}",
             "Action: transfer_to_researcher", "Observation: researcher", "Agent: researcher",
             f"Thought: {story.THOUGHT_1}", f"Action: {story.TOOL_1}", f"Observation: {story.TOOL_1_RESULT}",
             f"Thought: {story.THOUGHT_2}", f"Action: {story.TOOL_2}", f"Observation: {story.TOOL_2_RESULT}",
             story.FINAL_ANSWER, story.FINAL_ANSWER]
    at = 0
    for needle in order:
        found = text.find(needle, at)
        assert found >= 0, f"{needle!r} not after position {at} in\n{text}"
        at = found + len(needle)


def test_web_view_marks_what_was_not_captured(interop: Captured, tmp_path: Path) -> None:
    """The web view's session page says "(not captured)" where ``otel-prov show`` does, and names
    the agents."""
    import requests

    from otel_prov.model.quads import nquads
    from otel_prov.settings import UiSettings
    from otel_prov.stores import parse_store
    from otel_prov.stores.oxigraph import OxigraphStore
    from otel_prov.web import session_url
    from tests.support.webdata import serve

    update = TraceMapper("seed").map(interop.spans("agents_otel_responses_no_content"))
    store = OxigraphStore(tmp_path / "store")
    store.add(nquads(update.add), len(update.add))
    session = next(s for s, p, _, _ in update.add if p == "<https://trustgraph.ai/ns/query>"
                   and not any(q[0] == s and q[1] == "<http://www.w3.org/ns/prov#wasDerivedFrom>"
                               for q in update.add))[1:-1]
    store.close()
    running = serve(UiSettings(store=parse_store(str(tmp_path / "store")), port=0))
    try:
        page = requests.get(running.url + session_url(session), timeout=30).text
    finally:
        running.stop()
    assert '<p class="text question" id="question">(not captured)</p>' in page
    assert '<p class="text question">(not captured)</p>' in page  # the sub-agent's
    assert page.count('<dd class="none">(not captured)</dd>') == 3 + 2 + 2  # thoughts, arguments, results
    assert "<dt>Agent</dt><dd>triage</dd>" in page


# -- the generic reading alone --------------------------------------------------------------------------


OWN_DIALECT = ("OpenInference", "OpenLLMetry", "OTel openai-agents-v2")
"""The families a dialect module of their own reads (mapping/dialects/): the others are the generic
reading's anyway."""


def _recovered(want: list[Chain], got: list[Chain]) -> Score:
    """Of the values the instrumentation records (``want``: what the family's own dialect gives),
    how many the mapping got, and the wrong ones."""
    known = Score()
    result = score(want, got)
    wanted, found = field_values(want), field_values(got)
    for name in FIELDS:
        for i, w in enumerate(wanted[name]):
            if unknown(name, w):
                continue
            known.total += 1
            if i < len(found[name]) and same(name, w, found[name][i]):
                known.right += 1
    known.wrongs = [w for w in result.wrongs if not unknown(w[0], w[1])]
    return known


def test_the_generic_reading_alone_recovers_each_family(interop: Captured,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18: the families with a dialect of their own (OpenInference, OpenLLMetry, the official
    openai-agents instrumentation), read by the generic reading alone (their dialect switched off): at
    least 80% of the chain each, over their frameworks, and no wrong value in any scenario."""
    from otel_prov.mapping import dialects
    from otel_prov.mapping.dialects.genai import GENAI

    monkeypatch.setattr(dialects, "DIALECTS", (GENAI,))
    by_family: dict[str, Score] = {}
    wrongs = {}
    for name, scenario in sorted(SCENARIOS.items()):
        if not scenario.family.startswith(OWN_DIALECT):
            continue
        got = normalized(mapped(interop.spans(name), "seed", interop.logs(name)), expected(name))
        found = _recovered(expected(name), got)
        if found.wrongs:
            wrongs[name] = found.wrongs
        family = next(f for f in OWN_DIALECT if scenario.family.startswith(f))
        total = by_family.setdefault(family, Score())
        total.right, total.total = total.right + found.right, total.total + found.total
    assert wrongs == {}
    shares = {family: round(s.share, 2) for family, s in by_family.items()}
    assert all(share >= 0.8 for share in shares.values()), shares
    assert set(shares) == set(OWN_DIALECT), shares  # the families were all there
