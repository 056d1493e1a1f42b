"""The model's building blocks (``otel_prov.model``) against docs/model.md, value by value: IRI
patterns and their parsers, the session id rule, percent-encoding, literal escaping, times to the
nanosecond, the profiles, the vocabulary's terms.  Every expected value is written here by hand (or
with the standard library, for a uuid5), never computed by the code under test."""

from __future__ import annotations

import uuid

import pyoxigraph
import pytest

from otel_prov.model import iris, profiles, quads, terms
from otel_prov.model.vocab import GRAPH_RETRIEVAL, NT, OTELPROV_NS, PREFIXES

XSD = "http://www.w3.org/2001/XMLSchema#"


# -- terms -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("ns", "text"), [
    (0, "1970-01-01T00:00:00Z"),
    (1, "1970-01-01T00:00:00.000000001Z"),
    (1_500_000_000, "1970-01-01T00:00:01.5Z"),
    (999_999_999, "1970-01-01T00:00:00.999999999Z"),
    (1_000_000_000, "1970-01-01T00:00:01Z"),
    (1_700_000_000_123_456_789, "2023-11-14T22:13:20.123456789Z"),
    (1_700_000_000_120_000_000, "2023-11-14T22:13:20.12Z"),
    (1_709_164_800 * 10**9 + 86_399_999_999_999, "2024-02-29T23:59:59.999999999Z"),
])
def test_times_are_utc_to_the_nanosecond_without_trailing_zeros(ns: int, text: str) -> None:
    assert terms.isoformat_ns(ns) == text
    assert terms.datetime_from_ns(ns) == f'"{text}"^^<{XSD}dateTime>'


def test_an_integer_and_a_plain_literal() -> None:
    assert terms.integer(42) == f'"42"^^<{XSD}integer>'
    assert terms.integer(0) == f'"0"^^<{XSD}integer>'
    assert terms.literal("plain") == '"plain"'
    assert terms.literal("") == '""'


@pytest.mark.parametrize(("text", "nt"), [
    ('say "hi"', r'"say \"hi\""'),
    ("back\\slash", r'"back\\slash"'),
    ("line\nfeed", r'"line\nfeed"'),
    ("carriage\rreturn", r'"carriage\rreturn"'),
    ("\r\n", r'"\r\n"'),
    ('\\"', r'"\\\""'),
    ("tab\tand\u2028 stay, 😀 too", '"tab\tand\u2028 stay, 😀 too"'),
])
def test_literals_escape_exactly_what_n_triples_needs_and_round_trip(text: str, nt: str) -> None:
    assert terms.literal(text) == nt
    line = f"<urn:s> <urn:p> {nt} .".encode()
    parsed = next(iter(pyoxigraph.parse(line, format=pyoxigraph.RdfFormat.N_TRIPLES)))
    assert parsed.object.value == text


def test_text_that_is_not_valid_unicode_gets_u_fffd() -> None:
    assert terms.has_invalid_text("bad \udcff byte")
    assert not terms.has_invalid_text("fine é 😀")
    assert not terms.has_invalid_text("ascii")
    assert terms.clean_text("bad \udcff byte \ud800") == "bad \ufffd byte \ufffd"
    assert terms.clean_text("fine é 😀") == "fine é 😀"
    assert terms.literal("x\udcffy") == '"x\ufffdy"'


def test_iris_percent_encode_what_an_iri_may_not_hold() -> None:
    assert terms.iri("http://ex.org/a") == "<http://ex.org/a>"
    assert terms.iri('http://ex.org/a b<c>"d{e}|f\\g^h`i') == \
        "<http://ex.org/a%20b%3Cc%3E%22d%7Be%7D%7Cf%5Cg%5Eh%60i>"
    assert terms.iri("urn:x\x00\x1f\x7f\x9f") == "<urn:x%00%1F%7F%C2%9F>"
    assert terms.iri("urn:é/ü") == "<urn:é/ü>"  # an IRI holds Unicode
    assert terms.iri("urn:x\udcff") == "<urn:x\ufffd>"
    with pytest.raises(ValueError, match="not an absolute IRI: 'no-scheme'"):
        terms.iri("no-scheme")
    with pytest.raises(ValueError):
        terms.iri("1http://x")


def test_a_segment_encodes_all_but_unreserved_characters() -> None:
    assert terms.iri_segment("a/b:c d~e.f_g-h") == "a%2Fb%3Ac%20d~e.f_g-h"
    assert terms.iri_segment("0af76519-16cd-43dd-8448-eb211c80319c") == "0af76519-16cd-43dd-8448-eb211c80319c"
    assert terms.iri_segment("é%") == "%C3%A9%25"
    assert terms.iri_segment("x\udcff") == "x%EF%BF%BD"


def test_iris_from_spans_are_checked_whole() -> None:
    assert terms.checked_iri("http://ex.org/a b") == "<http://ex.org/a%20b>"
    assert terms.checked_iri("urn:trustgraph:agent:x/i1") == "<urn:trustgraph:agent:x/i1>"
    assert terms.checked_iri("x:y") == "<x:y>"  # a one-letter scheme: the whole IRI is checked
    for bad in ("http://ex.org/%zz", "http://a#b#c", "http://[bad", "http://ex.org/a%"):
        with pytest.raises(ValueError):
            terms.checked_iri(bad)


@pytest.mark.parametrize(("value", "term"), [
    ("http://ex.org/Paris", "<http://ex.org/Paris>"),
    ("https://ex.org/a b", "<https://ex.org/a%20b>"),
    ("urn:x:1", "<urn:x:1>"),
    ("urn:a", "<urn:a>"),  # docs/model.md: starts with urn: and is a valid IRI
    ("http://a#b#c", '"http://a#b#c"'),  # not a valid IRI once encoded: a literal, its text intact
    ("http://ex.org/%zz", '"http://ex.org/%zz"'),
    ("ftp://ex.org/x", '"ftp://ex.org/x"'),
    ("mailto:a@b", '"mailto:a@b"'),
    ("Paris", '"Paris"'),
    ("", '""'),
])
def test_a_knowledge_graph_value_is_an_iri_by_trustgraphs_rule_else_a_literal(value: str, term: str) -> None:
    assert terms.value_term(value) == term


def test_ids_as_hex_and_a_trace_id_as_a_uuid() -> None:
    assert terms.hex_trace_id(0xABC) == "00000000000000000000000000000abc"
    assert terms.hex_span_id(0xABC) == "0000000000000abc"
    assert terms.uuid_from_trace_id(1) == "00000000-0000-0000-0000-000000000001"
    assert terms.uuid_from_trace_id(0) == "00000000-0000-0000-0000-000000000000"
    w3c_example = 0x4BF92F3577B34DA6A3CE929D0E0E4736
    assert terms.uuid_from_trace_id(w3c_example) == "4bf92f35-77b3-4da6-a3ce-929d0e0e4736"
    assert terms.uuid_from_trace_id(2**128 - 1) == "ffffffff-ffff-ffff-ffff-ffffffffffff"
    for bad in (-1, 2**128):
        with pytest.raises(ValueError):
            terms.uuid_from_trace_id(bad)


# -- IRIs ------------------------------------------------------------------------------------------------


def test_every_iri_pattern_of_docs_model() -> None:
    assert iris.question_iri("agent", "u") == "urn:trustgraph:agent:u"
    assert iris.question_iri("graphrag", "u") == "urn:trustgraph:question:u"
    assert iris.question_iri("docrag", "u") == "urn:trustgraph:docrag:u"
    assert iris.analysis_iri("u", 3) == "urn:trustgraph:agent:u/i3"
    assert iris.conclusion_iri("u") == "urn:trustgraph:agent:u/final"
    assert iris.exploration_iri("graphrag", "u") == "urn:trustgraph:prov:exploration:u"
    assert iris.exploration_iri("docrag", "u") == "urn:trustgraph:docrag:u/exploration"
    assert iris.focus_iri("u") == "urn:trustgraph:prov:focus:u"
    assert iris.synthesis_iri("graphrag", "u") == "urn:trustgraph:prov:synthesis:u"
    assert iris.synthesis_iri("docrag", "u") == "urn:trustgraph:docrag:u/synthesis"
    assert iris.edge_selection_iri("u", 0) == "urn:trustgraph:prov:edge:u:0"
    assert iris.statement_iri("urn:trustgraph:prov:edge:u:0") == "urn:trustgraph:prov:edge:u:0/triple"
    assert iris.activity_iri("urn:trustgraph:agent:u/i1") == "urn:trustgraph:agent:u/i1/activity"
    assert iris.session_activity_iri("urn:trustgraph:agent:u") == "urn:trustgraph:agent:u/session"
    assert iris.software_agent_iri("my agent/1") == "urn:otel-prov:agent:my%20agent%2F1"


def test_the_uuid_of_a_session() -> None:
    trace_id = 0x0AF7651916CD43DD8448EB211C80319C
    assert iris.session_uuid(None, trace_id) == "0af76519-16cd-43dd-8448-eb211c80319c"
    for blank in ("", " ", "\t\n"):
        assert iris.session_uuid(blank, trace_id) == "0af76519-16cd-43dd-8448-eb211c80319c"
    assert iris.session_uuid("s 1/é", trace_id) == "s%201%2F%C3%A9"
    assert iris.session_uuid(7, trace_id) == "7"
    namespace = uuid.uuid5(uuid.NAMESPACE_URL, "https://w3id.org/otel-prov/ns#nested-agent")
    expected = str(uuid.uuid5(namespace, "0af7651916cd43dd8448eb211c80319c/00000000000000a1"))
    assert iris.nested_agent_uuid(trace_id, 0xA1) == expected


def test_the_parsers_read_back_what_the_builders_make() -> None:
    assert iris.flow_of_question("urn:trustgraph:agent:u/i2") == "agent"
    assert iris.flow_of_question("urn:trustgraph:question:u") == "graphrag"
    assert iris.flow_of_question("urn:trustgraph:docrag:u/synthesis") == "docrag"
    assert iris.flow_of_question("urn:trustgraph:prov:focus:u") is None
    assert iris.is_question_iri("urn:trustgraph:agent:u")
    assert iris.is_question_iri("urn:trustgraph:docrag:u")
    assert not iris.is_question_iri("urn:trustgraph:agent:u/i1")
    assert not iris.is_question_iri("urn:trustgraph:prov:exploration:u")
    assert iris.iteration_of("urn:trustgraph:agent:u/i12") == 12
    assert iris.iteration_of("urn:trustgraph:agent:u/i1/activity") is None
    assert iris.iteration_of("urn:trustgraph:agent:u/final") is None
    assert iris.iteration_of("urn:trustgraph:agent:u/i") is None
    assert iris.is_session_activity("urn:trustgraph:agent:u/session")
    assert not iris.is_session_activity("urn:trustgraph:agent:u/sessions")
    assert iris.edge_index("urn:trustgraph:prov:edge:u:3") == 3
    assert iris.edge_index("urn:trustgraph:prov:edge:u:13") == 13
    assert iris.edge_index("urn:trustgraph:prov:edge:u:x") is None
    assert iris.edge_index("edge") is None  # no colon at all


# -- profiles, vocabulary, quads ------------------------------------------------------------------------


def test_profiles() -> None:
    assert profiles.PROFILES == ("seed", "strict", "trustgraph")
    assert profiles.check_profile("seed") == "seed"
    assert profiles.check_profile("strict") == "strict"
    assert profiles.check_profile("trustgraph") == "trustgraph"
    with pytest.raises(ValueError, match="unknown profile 'Seed': expected one of seed, strict, trustgraph"):
        profiles.check_profile("Seed")


def test_the_vocabulary_as_written() -> None:
    assert GRAPH_RETRIEVAL == "urn:graph:retrieval"
    assert NT.graph == "<urn:graph:retrieval>"
    assert OTELPROV_NS == "https://w3id.org/otel-prov/ns#"
    assert NT.wasDerivedFrom == "<http://www.w3.org/ns/prov#wasDerivedFrom>"
    assert NT.type == "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
    assert NT.label == "<http://www.w3.org/2000/01/rdf-schema#label>"
    assert NT.tg_selectedEdge == "<https://trustgraph.ai/ns/selectedEdge>"
    assert NT.notCaptured == "<https://w3id.org/otel-prov/ns#notCaptured>"
    assert PREFIXES["tg"] == "https://trustgraph.ai/ns/" and PREFIXES["prov"] == "http://www.w3.org/ns/prov#"


def test_quads_as_n_quads_and_as_a_delete() -> None:
    quad = ("<urn:s>", "<urn:p>", '"o é"', "<urn:graph:retrieval>")
    assert quads.nquads([quad, quad]) == '<urn:s> <urn:p> "o é" <urn:graph:retrieval> .\n'.encode() * 2
    assert quads.nquads([]) == b""
    assert quads.delete_data([quad]) == \
        'DELETE DATA {\nGRAPH <urn:graph:retrieval> { <urn:s> <urn:p> "o é" }\n}'
    assert quads.insert_data([quad, ("<urn:s>", "<urn:p>", "<urn:o>", "")]) == \
        'INSERT DATA {\nGRAPH <urn:graph:retrieval> { <urn:s> <urn:p> "o é" }\n<urn:s> <urn:p> <urn:o> .\n}'
    ds = quads.dataset_from_nquads(quads.nquads([quad]))
    assert len(ds) == 1 and dict(ds.namespaces())["tg"].toPython() == "https://trustgraph.ai/ns/"
