"""``otel-prov seal`` and ``otel-prov verify`` on an on-disk store written by the real exporter
(tests/support/cli.py's example flows: an agent with a sub-trace, GraphRAG, DocRAG, a session in
another collection, an unfinished and a failed one), changed afterwards as an intruder would: through
the store's own write path."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pyoxigraph
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_prov import ProvSpanExporter
from otel_prov.examples.rag import graph_rag
from otel_prov.model.terms import literal
from otel_prov.model.vocab import GRAPH_RETRIEVAL, GRAPH_SEALS, OTELPROV
from otel_prov.read.seals import Seal, read_seals
from otel_prov.stores import open_for_reading, open_for_writing, parse_store
from otel_prov.stores.base import IRI, LITERAL, Term
from tests.support.cli import Filled, Result, cli, fill, one_error_line

TG = "https://trustgraph.ai/ns/"
PROV = "http://www.w3.org/ns/prov#"


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Filled:
    return fill(tmp_path_factory.mktemp("seal") / "store")


@pytest.fixture
def store(filled: Filled, tmp_path: Path) -> Path:
    """A copy of the filled store, for this test alone."""
    path = tmp_path / "store"
    shutil.copytree(filled.path, path)
    return path


def run(capsysbinary: Any, *argv: str) -> Result:
    return cli(capsysbinary, *argv)


def on(capsysbinary: Any, store: Path, command: str, *argv: str) -> Result:
    """``otel-prov COMMAND --store STORE ARGV``."""
    return cli(capsysbinary, command, "--store", str(store), *argv)


def report(result: Result) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(result.out)
    return found


def statuses(result: Result) -> dict[str, str]:
    return {s["session"]: s["status"] for s in report(result)["sessions"]}


def not_intact(result: Result) -> dict[str, str]:
    return {session: status for session, status in statuses(result).items() if status != "intact"}


def select(path: Path, sparql: str) -> list[dict[str, Term]]:
    opened = open_for_reading(parse_store(str(path)))
    try:
        return opened.select(sparql)
    finally:
        opened.close()


def seals_of(path: Path) -> dict[str, list[Seal]]:
    opened = open_for_reading(parse_store(str(path)))
    try:
        return read_seals(opened)
    finally:
        opened.close()


def graph_nquads(path: Path, graph: str) -> list[str]:
    opened = open_for_reading(parse_store(str(path)))
    try:
        quads = pyoxigraph.parse(opened.dump("nquads"), format=pyoxigraph.RdfFormat.N_QUADS)
        return sorted(str(q) for q in quads if str(q.graph_name) == f"<{graph}>")
    finally:
        opened.close()


def nt(term: Term) -> str:
    """A term read back, as N-Triples again."""
    if term.kind == IRI:
        return f"<{term.value}>"
    assert term.kind == LITERAL
    text = literal(term.value)
    if term.language:
        return f"{text}@{term.language}"
    return f"{text}^^<{term.datatype}>" if term.datatype else text


def change(path: Path, remove: list[tuple[str, str, str]], add: list[tuple[str, str, str]],
           graph: str = GRAPH_RETRIEVAL) -> None:
    """Quads removed and added (N-Triples terms) through the store's write path."""
    writer = open_for_writing(parse_store(str(path)))
    try:
        if remove:
            writer.remove([(s, p, o, f"<{graph}>") for s, p, o in remove])
        if add:
            writer.add("".join(f"{s} {p} {o} <{graph}> .\n" for s, p, o in add).encode(), len(add))
    finally:
        writer.close()


def own_quads(path: Path, subject: str) -> list[tuple[str, str, str]]:
    rows = select(path, f"SELECT ?p ?o WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ <{subject}> ?p ?o }} }}")
    return [(f"<{subject}>", f"<{row['p'].value}>", nt(row["o"])) for row in rows]


def top_sessions(filled: Filled) -> set[str]:
    return {filled.agent.explain_id, filled.graph.explain_id, filled.docs.explain_id, filled.other.explain_id,
            filled.unfinished, filled.failed}


# -- sealing ----------------------------------------------------------------------------------------


def test_seal_records_every_session_apart_and_sealing_again_changes_nothing(
        filled: Filled, store: Path, capsysbinary: Any) -> None:
    before = graph_nquads(store, GRAPH_RETRIEVAL)
    r = on(capsysbinary, store, "seal")
    assert r.code == 0 and r.err == "", r
    assert r.out.splitlines() == [f"6 sessions: 6 sealed; 6 seals written to <{GRAPH_SEALS}> of "
                                  f"oxigraph:{store} (RDFC-1.0/SHA-256)"]
    # the explainability graph is untouched: the seals are in their own graph
    assert graph_nquads(store, GRAPH_RETRIEVAL) == before
    seals = seals_of(store)
    assert set(seals) == top_sessions(filled)  # the agent's sub-trace is part of the agent's session
    assert all(len(found) == 1 for found in seals.values())
    sealed = graph_nquads(store, GRAPH_SEALS)
    agent_seal = seals[filled.agent.explain_id][0]
    assert agent_seal.collection == "default" and agent_seal.session_time
    node = f"<{agent_seal.iri}>"
    mine = [line for line in sealed if line.startswith(node)]
    assert f"{node} <{OTELPROV.sealedSession}> <{filled.agent.explain_id}> <{GRAPH_SEALS}>" in mine
    assert any(f"{PROV}generatedAtTime> \"{agent_seal.time}\"^^" in line for line in mine)
    assert any("<http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://www.w3.org/ns/prov#Entity>" in line
               for line in mine)

    # again: idempotent (nothing written)
    r = on(capsysbinary, store, "seal", "--format", "json")
    assert r.code == 0 and report(r)["counts"] == {"unchanged": 6}
    assert graph_nquads(store, GRAPH_SEALS) == sealed

    r = on(capsysbinary, store, "verify")
    assert r.code == 0 and r.err == ""
    assert r.out == "verified 6 sessions: all 6 intact (RDFC-1.0/SHA-256)\n"


def test_the_digest_is_sha256_of_the_rdfc_canonical_nquads_of_what_export_writes(
        filled: Filled, store: Path, capsysbinary: Any) -> None:
    on(capsysbinary, store, "seal")
    for session in (filled.agent.explain_id, filled.graph.explain_id):
        exported = on(capsysbinary, store, "export", "--session", session, "--format", "nquads")
        quads = pyoxigraph.parse(exported.out.encode(), format=pyoxigraph.RdfFormat.N_QUADS)
        dataset = pyoxigraph.Dataset(quads)
        dataset.canonicalize(pyoxigraph.CanonicalizationAlgorithm.RDFC_1_0)
        canonical = "".join(sorted(f"{quad} .\n" for quad in dataset)).encode()
        # the graph has no blank node: its canonical form is its N-Quads lines, sorted
        assert canonical == "".join(sorted(set(exported.out.splitlines(keepends=True)))).encode()
        r = on(capsysbinary, store, "verify", "--session", session, "--format", "json")
        found = report(r)["sessions"]
        assert [f["session"] for f in found] == [session]
        assert found[0]["digest"] == hashlib.sha256(canonical).hexdigest() == found[0]["sealed"]["digest"]
        assert found[0]["quads"] == len(dataset)
    # the agent's document search (a sub-trace) is in the agent session's graph
    exported = on(capsysbinary, store, "export", "--session", filled.agent.explain_id,
                   "--format", "nquads")
    assert "How densely populated is Paris?" in exported.out


# -- what verify finds -------------------------------------------------------------------------------


def test_verify_names_a_flipped_literal_a_removed_step_an_added_quad_a_removed_and_a_new_session(
        filled: Filled, store: Path, capsysbinary: Any) -> None:
    on(capsysbinary, store, "seal")
    agent = filled.agent.explain_id
    # a flipped literal: the first step's observation of the agent
    observation = next(q for q in own_quads(store, f"{agent}/i1") if q[1] == f"<{TG}observation>")
    change(store, [observation], [(observation[0], observation[1], literal("[\"Lyon\"]"))])
    # a removed step: the GraphRAG query's Focus (its edge selections left where they are)
    graph, docs = filled.graph.explain_id, filled.docs.explain_id
    focus = select(store, f"SELECT ?f WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ ?f a tg:Focus ; "
                          f"prov:wasDerivedFrom/prov:wasGeneratedBy <{graph}> }} }}")[0]["f"]
    change(store, own_quads(store, focus.value), [])
    # an added quad: a thought the DocRAG query never had
    change(store, [], [(f"<{docs}>", f"<{TG}thought>", literal("an afterthought"))])
    # a removed session: every quad of the session in the collection "other"
    other = filled.other.explain_id
    exported = on(capsysbinary, store, "export", "--session", other, "--format", "nquads")
    change(store, [(str(q.subject), str(q.predicate), str(q.object)) for q in pyoxigraph.parse(
        exported.out.encode(), format=pyoxigraph.RdfFormat.N_QUADS)], [])
    # a new session, recorded after the seal
    exporter = ProvSpanExporter(store=str(store))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    new = graph_rag("Which river flows through Paris?", tracer_provider=provider).explain_id
    provider.shutdown()

    r = on(capsysbinary, store, "verify", "--format", "json")
    assert r.code == 1
    assert statuses(r) == {agent: "changed", graph: "changed", docs: "changed", other: "removed",
                           new: "unsealed", filled.unfinished: "intact", filled.failed: "intact"}
    assert report(r)["ok"] is False
    assert report(r)["counts"] == {"intact": 2, "changed": 3, "removed": 1, "unsealed": 1, "unsigned": 0,
                                   "bad-signature": 0}

    r = on(capsysbinary, store, "verify")
    assert r.code == 1 and r.err == ""
    lines = r.out.splitlines()
    assert lines[-1] == "verified 7 sessions: 2 intact, 3 changed, 1 removed, 1 unsealed (RDFC-1.0/SHA-256)"
    assert sorted(line.split()[0:2] for line in lines[:-1]) == sorted(
        [["changed", f"{agent}:"], ["changed", f"{graph}:"], ["changed", f"{docs}:"],
         ["removed", f"{other}:"], ["unsealed", f"{new}:"]])
    # scoped: the collection "other" is the removed session alone (its seal says where it was)
    r = on(capsysbinary, store, "verify", "--collection", "other", "--format", "json")
    assert r.code == 1 and statuses(r) == {other: "removed"}
    r = on(capsysbinary, store, "verify", "--session", other, "--format", "json")
    assert r.code == 1 and statuses(r) == {other: "removed"}
    r = on(capsysbinary, store, "verify", "--session", filled.failed)
    assert (r.code, r.out) == (0, "verified 1 session: intact (RDFC-1.0/SHA-256)\n")

    # sealing now seals the new one, and leaves the changed ones to verify unless --reseal
    r = on(capsysbinary, store, "seal", "--format", "json")
    assert r.code == 0
    assert statuses(r) == {agent: "changed", graph: "changed", docs: "changed", new: "sealed",
                           filled.unfinished: "unchanged", filled.failed: "unchanged"}
    r = on(capsysbinary, store, "seal", "--session", agent)
    assert r.code == 0 and r.out.startswith(f"changed   {agent}: its graph changed since it was sealed at ")
    r = on(capsysbinary, store, "seal", "--session", agent, "--reseal", "--format", "json")
    assert statuses(r) == {agent: "resealed"}
    r = on(capsysbinary, store, "verify", "--session", agent, "--format", "json")
    assert r.code == 0 and report(r)["sessions"][0]["seals"] == 2  # the latest seal counts


def test_a_removed_step_of_a_sub_trace_changes_its_parent_session(filled: Filled, store: Path,
                                                                  capsysbinary: Any) -> None:
    on(capsysbinary, store, "seal")
    agent = filled.agent.explain_id
    sub = select(store, f"SELECT ?q WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ ?q tg:query ?t ; "
                        f"prov:wasDerivedFrom ?step . ?step prov:wasDerivedFrom+ <{agent}> }} }}")
    question = sub[0]["q"].value
    change(store, own_quads(store, f"{question}/synthesis"), [])
    r = on(capsysbinary, store, "verify", "--format", "json")
    assert r.code == 1 and not_intact(r) == {agent: "changed"}
    # a sub-trace named is its parent session
    r = on(capsysbinary, store, "verify", "--session", question, "--format", "json")
    assert statuses(r) == {agent: "changed"}


# -- keys -------------------------------------------------------------------------------------------


def test_hmac_a_wrong_key_a_forged_seal_and_an_unsigned_one_are_named(
        filled: Filled, store: Path, tmp_path: Path, capsysbinary: Any) -> None:
    key, other = tmp_path / "seal.key", tmp_path / "other.key"
    key.write_bytes(b"k" * 32)
    other.write_bytes(b"o" * 32)
    r = on(capsysbinary, store, "seal", "--hmac-key", str(key))
    assert r.code == 0 and r.out.endswith("(RDFC-1.0/SHA-256, HMAC-SHA256)\n")
    r = on(capsysbinary, store, "verify", "--hmac-key", str(key))
    assert r.code == 0
    assert r.out == "verified 6 sessions: all 6 intact (RDFC-1.0/SHA-256; HMAC-SHA256 checked)\n"
    r = on(capsysbinary, store, "verify")
    assert r.code == 0 and r.out.splitlines()[-1] == (
        "note: the seals carry HMAC-SHA256 authentication, not checked: give --hmac-key to check it")
    r = on(capsysbinary, store, "verify", "--hmac-key", str(other), "--format", "json")
    assert r.code == 1 and set(statuses(r).values()) == {"bad-signature"}
    # sealing again with the same key writes nothing; with another, seals again
    r = on(capsysbinary, store, "seal", "--hmac-key", str(key), "--format", "json")
    assert report(r)["counts"] == {"unchanged": 6}

    # an intruder changes a session and seals it again, as it is now, without the key
    agent, graph = filled.agent.explain_id, filled.graph.explain_id
    answer = next(q for q in own_quads(store, f"{agent}/final") if q[1] == f"<{TG}answer>")
    change(store, [answer], [(answer[0], answer[1], literal("Lyon."))])
    assert on(capsysbinary, store, "seal", "--session", agent, "--reseal").code == 0
    # ... and changes another one and its seal's digest to match
    change(store, [], [(f"<{graph}>", f"<{TG}thought>", literal("an afterthought"))])
    r = on(capsysbinary, store, "verify", "--session", graph, "--format", "json")
    now = report(r)["sessions"][0]["digest"]
    seal = seals_of(store)[graph][-1]
    change(store, [(f"<{seal.iri}>", f"<{OTELPROV.digest}>", literal(seal.digest))],
           [(f"<{seal.iri}>", f"<{OTELPROV.digest}>", literal(now))], graph=GRAPH_SEALS)
    r = on(capsysbinary, store, "verify")
    assert r.code == 0  # without the key, the manifest is taken as it is
    r = on(capsysbinary, store, "verify", "--hmac-key", str(key))
    assert r.code == 1
    assert sorted(r.out.splitlines()[:2]) == [
        f"bad-signature {graph}: its latest seal's HMAC does not match the key given (another key made it, "
        "or the seal was altered)",
        f"unsigned      {agent}: its latest seal has no HMAC (--hmac-key was given)"]
    assert r.out.splitlines()[2] == ("verified 6 sessions: 4 intact, 1 unsigned, 1 bad-signature "
                                     "(RDFC-1.0/SHA-256; HMAC-SHA256 checked)")


def _ed25519_keys(tmp_path: Path, name: str) -> tuple[Path, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private, public = tmp_path / f"{name}.pem", tmp_path / f"{name}.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def test_ed25519_signatures_and_another_key(filled: Filled, store: Path, tmp_path: Path,
                                            capsysbinary: Any) -> None:
    private, public = _ed25519_keys(tmp_path, "seal")
    _, stranger = _ed25519_keys(tmp_path, "stranger")
    r = on(capsysbinary, store, "seal", "--ed25519-key", str(private))
    assert r.code == 0 and r.out.endswith("(RDFC-1.0/SHA-256, Ed25519)\n")
    seal = seals_of(store)[filled.graph.explain_id][-1]
    assert seal.signature is not None and len(base64.b64decode(seal.signature)) == 64
    for key in (public, private):
        r = on(capsysbinary, store, "verify", "--ed25519-key", str(key))
        assert r.code == 0 and r.out.endswith("all 6 intact (RDFC-1.0/SHA-256; Ed25519 checked)\n")
    r = on(capsysbinary, store, "verify", "--ed25519-key", str(stranger), "--format", "json")
    assert r.code == 1 and set(statuses(r).values()) == {"bad-signature"}
    # a seal's recorded collection altered: its signature no longer holds
    change(store, [(f"<{seal.iri}>", f"<{OTELPROV.sessionCollection}>", literal("default"))],
           [(f"<{seal.iri}>", f"<{OTELPROV.sessionCollection}>", literal("elsewhere"))], graph=GRAPH_SEALS)
    r = on(capsysbinary, store, "verify", "--ed25519-key", str(public), "--format", "json")
    assert not_intact(r) == {filled.graph.explain_id: "bad-signature"}
    # a public key cannot sign
    r = on(capsysbinary, store, "seal", "--ed25519-key", str(public))
    one_error_line(r, f"{public} is not an Ed25519 private key in PEM")


def test_ed25519_without_the_cryptography_package_is_one_line(store: Path, tmp_path: Path,
                                                              capsysbinary: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    private, _ = _ed25519_keys(tmp_path, "seal")
    for module in [name for name in sys.modules if name.split(".")[0] == "cryptography"]:
        monkeypatch.setitem(sys.modules, module, None)
    r = on(capsysbinary, store, "seal", "--ed25519-key", str(private))
    one_error_line(r, "--ed25519-key needs the 'cryptography' package", "pip install 'otel-prov[sign]'")
    # HMAC needs nothing more
    key = tmp_path / "seal.key"
    key.write_bytes(b"k" * 16)
    assert on(capsysbinary, store, "seal", "--hmac-key", str(key)).code == 0


# -- scope and errors -------------------------------------------------------------------------------


def test_scope_as_list_takes_it(filled: Filled, store: Path, capsysbinary: Any) -> None:
    r = on(capsysbinary, store, "seal", "--collection", "other", "--format", "json")
    assert statuses(r) == {filled.other.explain_id: "sealed"}
    r = on(capsysbinary, store, "verify", "--collection", "other")
    assert r.code == 0
    r = on(capsysbinary, store, "verify", "--format", "json")
    assert r.code == 1 and list(statuses(r).values()).count("unsealed") == 5
    r = on(capsysbinary, store, "seal", "--session", filled.graph.trace_id or "", "--format",
            "json")
    assert statuses(r) == {filled.graph.explain_id: "sealed"}
    r = on(capsysbinary, store, "seal", "--since", "2999-01-01")
    assert (r.code, r.out) == (0, "nothing to seal: no session in scope\n")
    r = on(capsysbinary, store, "verify", "--until", "2000")
    assert (r.code, r.out) == (0, "nothing to verify: no session and no seal in scope\n")
    r = on(capsysbinary, store, "seal", "--since", "2000", "--until", "2999")
    assert r.code == 0 and r.out.startswith("6 sessions: 4 sealed, 2 unchanged since sealed;")


def test_errors_are_one_line(store: Path, tmp_path: Path, capsysbinary: Any) -> None:
    one_error_line(on(capsysbinary, store, "verify", "--since", "yesterday"),
                   "--since='yesterday': expected an ISO 8601 time", code=2)
    short = tmp_path / "short.key"
    short.write_bytes(b"secret\n")
    one_error_line(on(capsysbinary, store, "seal", "--hmac-key", str(short)),
                   f"the HMAC key in {short} is 7 bytes: at least 16")
    one_error_line(on(capsysbinary, store, "verify", "--hmac-key", str(tmp_path / "none")),
                   f"cannot read {tmp_path / 'none'}: No such file or directory")
    one_error_line(on(capsysbinary, store, "verify", "--ed25519-key", str(short)),
                   "is not an Ed25519 public or private key in PEM")
    one_error_line(run(capsysbinary, "seal", "--store", str(tmp_path / "nowhere")), "no store at")
    one_error_line(on(capsysbinary, store, "verify", "--session",
                       "urn:trustgraph:agent:00000000-0000-0000-0000-000000000000"), "no trace")
    one_error_line(on(capsysbinary, store, "verify", "--output", "x.csv"),
                   "which this command does not write", code=2)
