"""The content policy (``otel_prov.mapping.policy``), a pure function of the mapping's quads: each field
kept, truncated, hashed (the SHA-256 of the exact text) or omitted, redaction before it, and on each
node what was done; values not captured stay not captured; the mapper applies it to each span, trace
and conversation before it remembers or hands on a quad, so its diffs never hold the original."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import pytest
import rdflib
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from otel_prov import agent_session, doc_rag_session, graph_rag_session
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.policy import FIELDS, ContentPolicy, Rule, parse_rule, parse_rules
from otel_prov.mapping.redaction import BUILTIN, Redactor
from otel_prov.mapping.spans import SpanRecord, from_sdk
from otel_prov.model.quads import Quad, dataset_from_nquads, nquads
from otel_prov.model.terms import literal, literal_text
from tests.support.genai import TRACE_ID
from tests.support.prov import ONTOLOGY, closure_errors

TG = "https://trustgraph.ai/ns/"
OP = "https://w3id.org/otel-prov/ns#"
SECRET = "alice@example.com"
QUESTION = f'Mail {SECRET} the "plan"\nand\\or the résumé?'
THOUGHT = "I should look this up in the archive before I answer. " * 8


def _flows(provider: TracerProvider) -> None:
    with agent_session(QUESTION, tracer_provider=provider) as session:
        with session.iteration() as step:
            step.thought(THOUGHT)
            step.call_tool("lookup", lambda **kw: f"found {SECRET} and 4111 1111 1111 1111",
                           {"who": SECRET, "n": 3})
        session.conclude(f"Sent to {SECRET}.")
    with graph_rag_session("Who knows Bob?", tracer_provider=provider) as rag:
        edge = ("http://ex.org/Bob", "http://ex.org/mail", SECRET)
        rag.exploration([edge])
        rag.focus([(edge, f"{SECRET} is Bob's address")])
        rag.synthesis(f"Write to {SECRET}.")
    with doc_rag_session("docs?", tracer_provider=provider) as doc:
        doc.exploration([f"mailto-{SECRET}", "doc-2"])
        doc.synthesis("an answer")
    with pytest.raises(ValueError):
        with agent_session("fails", tracer_provider=provider) as session:
            with session.iteration():
                raise ValueError(f"no mailbox for {SECRET}")


@pytest.fixture
def spans(captured: tuple[TracerProvider, object]) -> list[ReadableSpan]:
    provider, memory = captured
    _flows(provider)
    return list(memory.get_finished_spans())  # type: ignore[attr-defined]


def mapped(spans: Sequence[ReadableSpan], policy: ContentPolicy | None = None,
           profile: str = "seed") -> list[Quad]:
    return TraceMapper(profile, policy=policy).map([from_sdk(s) for s in spans]).add


def values(quads: Sequence[Quad], predicate: str) -> set[str]:
    return {literal_text(o) for _, p, o, _ in quads if p == f"<{predicate}>"}


def policy(text: str, redact: bool = False) -> ContentPolicy:
    rules = parse_rules(text)
    return ContentPolicy({name: rules.get(name, rules.get("*", Rule())) for name in FIELDS},
                         Redactor(list(BUILTIN.values())) if redact else None)


# -- the rules' text ---------------------------------------------------------------------------------


def test_rules_are_read_per_field_with_a_rule_for_the_rest() -> None:
    assert parse_rules("") == {}
    assert parse_rules(" sha256 ") == {"*": Rule("sha256")}
    assert parse_rules("omit, question=keep,observation=TRUNCATE:500") == {
        "*": Rule("omit"), "question": Rule("keep"), "observation": Rule("truncate", 500)}
    assert str(parse_rule("truncate:7")) == "truncate:7" and str(parse_rule("omit")) == "omit"
    for bad, said in [("truncate", "needs a length"), ("truncate:0", "needs a length"),
                      ("hash", "expected keep"),
                      ("thougth=omit", "unknown field 'thougth'"), ("omit,sha256", "two rules"),
                      ("thought=omit,thought=keep", "given twice"), ("keep:3", "expected keep")]:
        with pytest.raises(ValueError, match=said):
            parse_rules(bad)
    assert policy("thought=sha256").text.startswith("question=keep,thought=sha256,")
    assert not ContentPolicy().active and not policy("keep").active and policy("error=omit").active


# -- what each rule does ---------------------------------------------------------------------------------


def test_keep_everything_unredacted_is_todays_graph(spans: list[ReadableSpan]) -> None:
    assert sorted(mapped(spans, policy("keep"))) == sorted(mapped(spans))


def test_sha256_is_the_hash_of_the_exact_text_an_auditor_can_check(spans: list[ReadableSpan]) -> None:
    quads = mapped(spans, policy("sha256"))
    hashed = values(quads, TG + "query")
    for original in (QUESTION, "Who knows Bob?", "docs?", "fails"):
        assert hashlib.sha256(original.encode("utf-8")).hexdigest() in hashed
    assert hashlib.sha256(THOUGHT.encode()).hexdigest() in values(quads, TG + "thought")
    arguments = values(mapped(spans), TG + "arguments").pop()
    assert values(quads, TG + "arguments") == {hashlib.sha256(arguments.encode()).hexdigest()}
    assert not any(SECRET in o for _, _, o, _ in quads)
    assert "query sha256" in values(quads, OP + "contentPolicy")
    assert {"thought sha256", "arguments sha256", "observation sha256", "answer sha256", "content sha256",
            "selectedChunk sha256", "reasoning sha256", "object sha256", "statusMessage sha256",
            "toolError sha256"} <= values(quads, OP + "contentPolicy")


def test_truncate_keeps_the_first_characters_and_says_from_how_many(spans: list[ReadableSpan]) -> None:
    quads = mapped(spans, policy("thought=truncate:20,question=truncate:10"))
    assert values(quads, TG + "thought") == {THOUGHT[:20]}
    assert QUESTION[:10] in values(quads, TG + "query")
    assert values(quads, OP + "truncatedFrom") >= {f"thought {len(THOUGHT)}", f"query {len(QUESTION)}"}
    assert "fails" in values(quads, TG + "query")  # within the limit: whole, and nothing said of it
    cut = {s for s, _, o, _ in quads if o == literal("query truncate:10")}
    assert len(cut) == 2  # of the four questions, the two longer than 10 characters
    assert "thought truncate:20" in values(quads, OP + "contentPolicy")
    assert values(quads, TG + "observation") == values(mapped(spans), TG + "observation")


def test_omit_leaves_optional_values_out_and_mandatory_ones_empty(spans: list[ReadableSpan]) -> None:
    quads = mapped(spans, policy("omit"))
    assert values(quads, TG + "thought") == values(quads, TG + "observation") == set()
    assert values(quads, TG + "arguments") == values(quads, TG + "selectedChunk") == set()
    assert values(quads, TG + "query") == values(quads, TG + "answer") == {""}
    assert values(quads, TG + "content") == {""}
    assert values(quads, "http://www.w3.org/1999/02/22-rdf-syntax-ns#object") == {""}
    assert "http://ex.org/Bob" in {o[1:-1] for _, p, o, _ in quads if p.endswith("#subject>")}  # IRIs stay
    assert {"thought omit", "query omit", "object omit"} <= values(quads, OP + "contentPolicy")
    assert values(quads, TG + "action") == {"lookup"}  # not content: the tool's name, ids, times
    assert len([q for q in quads if q[1] == f"<{OP}traceId>"]) == len(
        [q for q in mapped(spans) if q[1] == f"<{OP}traceId>"])


def test_redaction_replaces_and_counts_on_every_field(spans: list[ReadableSpan]) -> None:
    quads = mapped(spans, policy("keep", redact=True))
    assert not any(SECRET in o or "4111 1111" in o for _, _, o, _ in quads)
    assert values(quads, TG + "observation") == {"found [email] and [card]"}
    assert json.loads(values(quads, TG + "arguments").pop()) == {"who": "[email]", "n": 3}
    assert {"query email=1", "observation card=1,email=1", "arguments email=1", "answer email=1",
            "reasoning email=1", "object email=1", "content email=1", "selectedChunk email=1",
            "statusMessage email=1", "toolError email=1"} <= values(quads, OP + "redactions")
    assert values(quads, OP + "contentPolicy") == set()  # keep: no rule to note


def test_a_hash_is_of_the_text_as_recorded_and_redaction_still_counted(spans: list[ReadableSpan]) -> None:
    quads = mapped(spans, policy("answer=sha256", redact=True))
    assert hashlib.sha256(f"Sent to {SECRET}.".encode()).hexdigest() in values(quads, TG + "answer")
    assert "answer email=1" in values(quads, OP + "redactions")


def test_one_value_written_twice_is_counted_once() -> None:
    node, query = "<urn:trustgraph:agent:x>", f"<{TG}query>"
    twice = [(node, query, literal(f"{SECRET} {SECRET}"), "<g>")] * 2
    out = policy("keep", redact=True).apply(twice)
    assert out.count((node, query, literal("[email] [email]"), "<g>")) == 2
    assert (node, f"<{OP}redactions>", literal("query email=2"), "<g>") in out


# -- not captured stays not captured ---------------------------------------------------------------------


def test_a_value_not_captured_is_never_hashed_into_one_that_looks_recorded() -> None:
    agent = SpanRecord(TRACE_ID, 1, "invoke_agent a", 0, 10, {
        "gen_ai.operation.name": "invoke_agent", "input.value": {"to": SECRET, "n": (1, 2)}})
    tool = SpanRecord(TRACE_ID, 2, "execute_tool t", 1, 2, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": (SECRET, 1)}, parent_id=1)
    before = TraceMapper("seed").map([agent, tool]).add
    assert values(before, TG + "query") == {""}
    assert values(before, OP + "notCaptured") >= {"query", "arguments"}
    quads = TraceMapper("seed", policy=policy("sha256")).map([agent, tool]).add
    assert values(quads, TG + "query") == {""}  # empty as not captured, not the hash of ""
    assert values(quads, TG + "arguments") == set()
    assert values(quads, OP + "notCaptured") == values(before, OP + "notCaptured")
    raw = values(before, OP + "rawArguments").pop()
    assert values(quads, OP + "rawArguments") == {hashlib.sha256(raw.encode()).hexdigest()}
    assert "rawArguments sha256" in values(quads, OP + "contentPolicy")
    redacted = TraceMapper("seed", policy=policy("keep", redact=True)).map([agent, tool]).add
    assert SECRET not in str(redacted) and "rawQuery email=1" in values(redacted, OP + "redactions")


# -- the mapper: every span, trace and conversation, before it is remembered -------------------------------


def _tool_trace(trace_id: int, secret: str) -> list[SpanRecord]:
    agent = SpanRecord(trace_id, 1, "invoke_agent a", 0, 100, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a",
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text",
                                                                           "content": f"ask {secret}"}]}])})
    tools = [SpanRecord(trace_id, 2 + i, f"execute_tool t{i}", 10 * i + 1, 10 * i + 5, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{i}",
        "gen_ai.tool.call.arguments": json.dumps({"to": secret, "i": i}),
        "gen_ai.tool.call.result": f"mailed {secret} #{i}"}, parent_id=1) for i in range(4)]
    return [*tools, agent]


def test_framework_traces_in_pieces_give_the_policed_graph_and_no_diff_holds_the_original() -> None:
    rules = policy("observation=truncate:9,arguments=sha256", redact=True)
    records = [r for t in range(3) for r in _tool_trace(TRACE_ID + t, f"user{t}@example.com")]
    whole = set(rules.apply(TraceMapper("seed").map(records).add))
    mapper = TraceMapper("seed", policy=rules)
    store: set[Quad] = set()
    for start in range(0, len(records), 2):  # children first, a piece at a time: traces recomputed
        update = mapper.map(records[start:start + 2])
        assert "example.com" not in str(update.add) + str(update.remove)
        store -= set(update.remove)
        store |= set(update.add)
    assert store == whole
    assert {"observation email=1", "arguments email=1"} <= values(list(store), OP + "redactions")
    assert "mailed [e" in values(list(store), TG + "observation")


def test_the_strict_profile_with_a_policy_stays_valid_prov(spans: list[ReadableSpan]) -> None:
    ontology_ds = rdflib.Dataset()
    ontology_ds.parse(ONTOLOGY, format="nquads")
    ontology = [q[:3] for q in ontology_ds.quads((None, None, None, None))]
    quads = mapped(spans, policy("thought=truncate:5,answer=sha256,arguments=omit", redact=True), "strict")
    assert values(quads, OP + "contentPolicy") and values(quads, OP + "redactions")
    assert closure_errors(dataset_from_nquads(nquads(quads)), ontology) == []


_REDACTOR = Redactor(list(BUILTIN.values()))
_PIECES = st.sampled_from([
    "alice@example.com", "4111 1111 1111 1111", "sk-proj-Zq8xY3vB7nM1kL4pR6tW9aE2sD", "fe80::1", "10.0.0.1",
    "+44 20 7946 0958", "AKIAIOSFODNN7EXAMPLE", "\n", "\r", "\\", '"', " 2024 ", "é",
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN\n-----END PRIVATE KEY-----"])


@settings(max_examples=200, deadline=None)
@given(st.lists(_PIECES | st.text(max_size=8), max_size=10))
def test_the_literal_is_read_as_it_is_written_and_nothing_is_missed(pieces: list[str]) -> None:
    """The policy looks for the detectors' triggers in the N-Triples literal (escapes and all) before
    it reads the text: what it writes is always the full redaction of the text."""
    text = "".join(pieces)
    quad = ("<urn:n>", f"<{TG}thought>", literal(text), "<g>")
    out = ContentPolicy(redactor=_REDACTOR).apply([quad])
    whole, counts = _REDACTOR._redact(text, tuple(range(len(_REDACTOR.detectors))))
    assert out[0] == (*quad[:2], literal(whole), "<g>") if text else out == [quad]
    assert len(out) == (2 if counts else 1)
