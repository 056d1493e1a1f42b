"""A person's approval or rejection of a step or an answer (``otel_prov.step = "approval"``) through the
pure mapping, in both profiles: the activity, its time, the person in a qualified association with
their role, the decision and the comment; two approvals of one step, a rejection, a missing ``by``,
a decision that is neither, a run that failed a step and still answered; and the strict profile
still valid PROV (OWL-RL over PROV-O, PROV-CONSTRAINTS' times)."""

from __future__ import annotations

from typing import Any

import pytest
import rdflib

from otel_prov import attributes as A
from otel_prov.mapping.flows import Mapped, map_spans
from otel_prov.mapping.spans import SpanRecord
from otel_prov.model.quads import Quad, dataset_from_nquads, nquads
from tests.support.prov import ONTOLOGY, closure_errors, time_order_violations

TRACE_ID = 0x1
PROV = "http://www.w3.org/ns/prov#"
OTELPROV = "https://w3id.org/otel-prov/ns#"
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
LABEL = "<http://www.w3.org/2000/01/rdf-schema#label>"
COMMENT = "<http://www.w3.org/2000/01/rdf-schema#comment>"
Q = "urn:trustgraph:agent:s"
STEP1, CONCLUSION = f"{Q}/i1", f"{Q}/final"
ALICE = "<urn:otel-prov:person:alice%40example.com>"
SECOND = 1_000_000_000


def span(step: str, span_id: int, start: int, end: int, flow: str = "agent", error: bool = False,
         **attrs: Any) -> SpanRecord:
    given = {A.FLOW: flow, A.STEP: step, A.SESSION_ID: "s", A.GEN_AI_AGENT_NAME: "bot"}
    given.update({getattr(A, key): value for key, value in attrs.items()})
    return SpanRecord(TRACE_ID, span_id, step, start * SECOND, end * SECOND, given, error=error,
                      status_message="ValueError: boom" if error else None)


def approval(span_id: int, at: int, of: str, **attrs: Any) -> SpanRecord:
    return span("approval", span_id, at, at, APPROVAL_OF=of, **attrs)


def run(*approvals: SpanRecord, failed_step: bool = False) -> list[SpanRecord]:
    """An agent run of session ``s``: two steps (the second failed, if asked) and an answer, 10 s to 40 s."""
    return [
        span("session", 1, 10, 40, QUESTION="q?", ANSWER="42", ITERATION=2),
        span("analysis", 2, 11, 20, ITERATION=1, THOUGHT="t1"),
        span("analysis", 3, 21, 30, ITERATION=2, error=failed_step),
        *approvals,
    ]


def objects(mapped: Mapped, subject: str, predicate: str) -> list[str]:
    return sorted(o for s, p, o, _ in mapped.quads if s == subject and p == predicate)


def node(span_id: int) -> str:
    return f"<{Q}/approval/{span_id:016x}>"


@pytest.mark.parametrize("profile", ["seed", "strict"])
def test_an_approval_is_an_activity_of_a_person_in_a_role(profile: str) -> None:
    mapped = map_spans(run(approval(9, 25, STEP1, APPROVAL_DECISION="approved",
                                    APPROVAL_BY="alice@example.com", APPROVAL_ROLE="reviewer",
                                    APPROVAL_COMMENT="looks right")), profile)
    assert mapped.problems == []
    a = node(9)
    assert objects(mapped, a, RDF_TYPE) == [f"<{PROV}Activity>", f"<{OTELPROV}Approval>"]
    assert objects(mapped, a, f"<{PROV}used>") == [f"<{STEP1}>"]
    assert objects(mapped, a, f"<{OTELPROV}decision>") == ['"approved"']
    time = '"1970-01-01T00:00:25Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>'
    assert objects(mapped, a, f"<{PROV}startedAtTime>") == [time]
    assert objects(mapped, a, f"<{PROV}endedAtTime>") == [time]
    assert objects(mapped, a, COMMENT) == ['"looks right"']
    assert objects(mapped, a, f"<{OTELPROV}spanId>") == ['"0000000000000009"']
    assert objects(mapped, a, f"<{PROV}wasAssociatedWith>") == [ALICE]
    assert objects(mapped, ALICE, RDF_TYPE) == [f"<{PROV}Agent>", f"<{PROV}Person>"]
    assert objects(mapped, ALICE, LABEL) == ['"alice@example.com"']
    association = f"<{Q}/approval/0000000000000009/association>"
    assert objects(mapped, a, f"<{PROV}qualifiedAssociation>") == [association]
    assert objects(mapped, association, RDF_TYPE) == [f"<{PROV}Association>"]
    assert objects(mapped, association, f"<{PROV}agent>") == [ALICE]
    role = "<urn:otel-prov:role:reviewer>"
    assert objects(mapped, association, f"<{PROV}hadRole>") == [role]
    assert objects(mapped, role, RDF_TYPE) == [f"<{PROV}Role>"]
    assert objects(mapped, role, LABEL) == ['"reviewer"']


def test_the_same_in_both_profiles_and_the_default_role() -> None:
    spans = [approval(9, 25, CONCLUSION, APPROVAL_DECISION="rejected", APPROVAL_BY="bob")]
    seed, strict = map_spans(spans, "seed"), map_spans(spans, "strict")
    assert sorted(seed.quads) == sorted(strict.quads)
    association = f"<{Q}/approval/0000000000000009/association>"
    assert objects(seed, association, f"<{PROV}hadRole>") == ["<urn:otel-prov:role:approver>"]
    assert objects(seed, "<urn:otel-prov:role:approver>", LABEL) == ['"approver"']
    assert objects(seed, node(9), f"<{OTELPROV}decision>") == ['"rejected"']
    assert objects(seed, node(9), COMMENT) == []  # not given, not stated (never "")


def test_two_approvals_of_one_step_are_two_activities() -> None:
    mapped = map_spans([approval(9, 25, STEP1, APPROVAL_DECISION="approved",
                                 APPROVAL_BY="alice@example.com"),
                        approval(10, 26, STEP1, APPROVAL_DECISION="rejected", APPROVAL_BY="bob")])
    assert objects(mapped, node(9), f"<{OTELPROV}decision>") == ['"approved"']
    assert objects(mapped, node(10), f"<{OTELPROV}decision>") == ['"rejected"']
    assert objects(mapped, node(10), f"<{PROV}wasAssociatedWith>") == ["<urn:otel-prov:person:bob>"]
    assert objects(mapped, node(9), f"<{PROV}used>") == objects(mapped, node(10), f"<{PROV}used>")


def test_without_by_the_decision_is_kept_and_no_one_is_named() -> None:
    for by in ({}, {"APPROVAL_BY": "  "}):
        mapped = map_spans([approval(9, 25, STEP1, APPROVAL_DECISION="approved", APPROVAL_ROLE="x",
                                     **by)])
        assert mapped.problems == [
            "approval span without otel_prov.approval.by (who decided is not recorded)"]
        assert objects(mapped, node(9), f"<{OTELPROV}decision>") == ['"approved"']
        predicates = {p for s, p, o, _ in mapped.quads}
        assert not predicates & {f"<{PROV}wasAssociatedWith>", f"<{PROV}qualifiedAssociation>",
                                 f"<{PROV}hadRole>", LABEL}


@pytest.mark.parametrize("attrs", [{"APPROVAL_DECISION": "maybe"}, {"APPROVAL_DECISION": ""}, {},
                                   {"APPROVAL_DECISION": "Approved"}])
def test_a_decision_that_is_neither_refuses_that_span_alone(attrs: dict[str, Any]) -> None:
    good = approval(10, 26, STEP1, APPROVAL_DECISION="approved", APPROVAL_BY="bob")
    mapped = map_spans([approval(9, 25, STEP1, APPROVAL_BY="bob", **attrs), good])
    assert mapped.problems == ["approval span whose otel_prov.approval.decision is not one of approved, "
                               "rejected (not mapped)"]
    assert not [q for q in mapped.quads if q[0].startswith(node(9)[:-1])]
    assert objects(mapped, node(10), f"<{OTELPROV}decision>") == ['"approved"']
    assert mapped.mapped == 2


@pytest.mark.parametrize("of", [None, "", "not an iri", "urn:x:%zz"])
def test_an_approval_of_no_valid_iri_is_not_mapped(of: str | None) -> None:
    attrs = {} if of is None else {"APPROVAL_OF": of}
    mapped = map_spans([span("approval", 9, 25, 25, APPROVAL_DECISION="approved", APPROVAL_BY="bob",
                             **attrs)])
    assert mapped.quads == []
    assert mapped.problems == [
        "approval span without a valid absolute IRI in otel_prov.approval.of (not mapped)"]


def test_a_rag_synthesis_is_approved_under_its_questions_iri() -> None:
    synthesis = "urn:trustgraph:docrag:s/synthesis"
    mapped = map_spans([approval(9, 25, synthesis, flow="docrag", APPROVAL_DECISION="approved",
                                 APPROVAL_BY="bob")])
    a = "<urn:trustgraph:docrag:s/approval/0000000000000009>"
    assert objects(mapped, a, f"<{PROV}used>") == [f"<{synthesis}>"]


def _dataset(quads: list[Quad]) -> rdflib.Dataset:
    return dataset_from_nquads(nquads(quads))


@pytest.fixture(scope="module")
def ontology() -> list[tuple[rdflib.term.Node, ...]]:
    return [(s, p, o) for s, p, o, _ in rdflib.Dataset().parse(ONTOLOGY, format="nquads").quads()]


def test_strict_stays_valid_prov_with_approvals_in_a_run_that_failed_a_step(ontology) -> None:
    spans = run(approval(9, 25, STEP1, APPROVAL_DECISION="approved", APPROVAL_BY="alice@example.com"),
                approval(10, 26, STEP1, APPROVAL_DECISION="rejected", APPROVAL_BY="bob",
                         APPROVAL_ROLE="auditor", APPROVAL_COMMENT="no"),
                approval(11, 45, CONCLUSION, APPROVAL_DECISION="approved", APPROVAL_BY="alice@example.com"),
                approval(12, 46, CONCLUSION, APPROVAL_DECISION="approved"),
                failed_step=True)
    mapped = map_spans(spans, "strict")
    ds = _dataset(mapped.quads)
    assert closure_errors(ds, ontology) == []
    assert time_order_violations(ds) == []
    # the answer's approval used an entity generated before it
    assert objects(mapped, node(11), f"<{PROV}used>") == [f"<{CONCLUSION}>"]
