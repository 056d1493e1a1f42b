"""The SDK exporter on real spans and real stores: entry point, flush/shutdown guarantees, bad input."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path

import pyoxigraph
import pytest
import rdflib
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import (
    ConfigError,
    ProvSpanExporter,
    StoreError,
    StoreNotFound,
    agent_session,
    graph_rag_session,
    load_dataset,
    spans_to_dataset,
)
from otel_prov import attributes as A
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import from_sdk
from otel_prov.model.quads import nquads
from tests.support.graphs import assert_isomorphic
from tests.support.stores import read_back

TG = "https://trustgraph.ai/ns/"


def _run_agent(provider: TracerProvider, question: str = "Capital of France?", **kwargs: object) -> str:
    with agent_session(question, tracer_provider=provider, **kwargs) as session:  # type: ignore[arg-type]
        with session.iteration() as step:
            step.thought("look it up")
            step.call_tool("lookup", lambda q: "Paris", {"q": "France"})
        session.conclude("Paris")
    return session.explain_id


def quads_of(spans: Sequence[ReadableSpan]) -> set[pyoxigraph.Quad]:
    """The graph of these spans, as the pure mapping makes it (terms as text)."""
    update = TraceMapper("seed").map([from_sdk(s) for s in spans])
    return set(pyoxigraph.parse(nquads(update.add), format=pyoxigraph.RdfFormat.N_QUADS))


def _count(store_path: Path, sparql: str) -> int:
    """Counts with a fresh process: proves the data is on disk (in the log, folded by this reader
    into the index) and the store was released."""
    code = ("import sys; from pathlib import Path; from otel_prov.stores.logstore import open_reader; "
            "s = open_reader(Path(sys.argv[1])); print(len(list(s.query(sys.argv[2])))); s.close()")
    out = subprocess.run([sys.executable, "-c", code, str(store_path), sparql],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


def test_entry_point_builds_the_exporter_from_the_environment(monkeypatch, tmp_path) -> None:
    store = tmp_path / "store"
    monkeypatch.setenv("OTEL_PROV_STORE", f"oxigraph:{store}")
    (ep,) = [e for e in entry_points(group="opentelemetry_traces_exporter") if e.name == "prov"]
    exporter = ep.load()()  # the SDK builds it with no arguments
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    iri = _run_agent(provider)
    provider.shutdown()
    query = f"SELECT ?q WHERE {{ GRAPH <urn:graph:retrieval> {{ <{iri}> <{TG}query> ?q }} }}"
    assert _count(store, query) == 1
    assert _count(store, f"SELECT ?a WHERE {{ GRAPH ?g {{ ?a a <{TG}Analysis> }} }}") == 1


def test_default_store_location_is_documented_xdg_path(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    exporter = ProvSpanExporter()
    exporter.shutdown()
    assert (tmp_path / "otel-prov" / "store" / "CURRENT").exists()


def test_force_flush_returns_when_everything_is_stored(tmp_path) -> None:
    exporter = ProvSpanExporter(store=f"oxigraph:{tmp_path / 's'}")
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    iris = [_run_agent(provider, f"question {i}") for i in range(50)]
    assert provider.force_flush()  # the SDK's BatchSpanProcessor hands everything to export() ...
    assert exporter.force_flush()  # ... and the exporter returns once it is all in the store
    rows = list(exporter.store.query(
        f"SELECT ?s WHERE {{ GRAPH <urn:graph:retrieval> {{ ?s a <{TG}Conclusion> }} }}"))
    assert {str(r["s"].value) for r in rows} == {f"{i}/final" for i in iris}
    provider.shutdown()


def test_shutdown_is_idempotent_and_releases_the_store(tmp_path) -> None:
    path = tmp_path / "s"
    exporter = ProvSpanExporter(store=path)
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _run_agent(provider)
    exporter.shutdown()
    exporter.shutdown()
    assert exporter.export([]) is SpanExportResult.FAILURE
    # Another process can open the store right away, and finds everything.
    assert _count(path, f"SELECT ?s WHERE {{ GRAPH ?g {{ ?s a <{TG}Question> }} }}") == 1
    # ... and so can this one, through rdflib.
    ds = load_dataset(f"oxigraph:{path}")
    assert_isomorphic(spans_to_dataset(memory.get_finished_spans()), ds)
    # ... and, term by term (times to the nanosecond), the graph of the spans it was given.
    with read_back(path) as store:
        assert set(store.quads_for_pattern(None, None, None, None)) == quads_of(memory.get_finished_spans())


def test_two_exporters_in_one_process_write_one_store(tmp_path) -> None:
    """Many writers, one store (it used to be 'one writer at a time'): each appends to its own log
    segment; whichever holds the index folds both."""
    path = tmp_path / "s"
    first, second = ProvSpanExporter(store=path), ProvSpanExporter(store=path)
    providers = []
    for exporter in (first, second):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        providers.append(provider)
    iris = {_run_agent(providers[i % 2], f"q{i}") for i in range(6)}
    for provider in providers:
        provider.shutdown()
    rows = load_dataset(f"oxigraph:{path}").query(
        f"SELECT ?s WHERE {{ GRAPH ?g {{ ?s a <{TG}Question> }} }}")
    assert {str(r[0]) for r in rows} == iris  # type: ignore[index]


def test_unwritable_store_path_is_a_clear_error_at_construction(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match=r"cannot create the store directory .*file/store"):
        ProvSpanExporter(store=f"oxigraph:{blocker / 'store'}")


def test_bad_settings_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="unknown profile 'bogus'"):
        ProvSpanExporter(store="memory:", profile="bogus")
    with pytest.raises(ConfigError, match="unknown store 'sqlite:x'"):
        ProvSpanExporter(store="sqlite:x")


def test_reading_a_missing_store_never_creates_it(tmp_path) -> None:
    with pytest.raises(StoreNotFound):
        load_dataset(f"oxigraph:{tmp_path / 'nothing'}")
    assert not (tmp_path / "nothing").exists()


def test_any_rdflib_dataset_can_be_the_store(captured) -> None:
    provider, memory = captured
    dataset = rdflib.Dataset()
    exporter = ProvSpanExporter(store=dataset)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _run_agent(provider)
    assert exporter.force_flush()
    assert_isomorphic(spans_to_dataset(memory.get_finished_spans()), dataset)
    exporter.shutdown()


def test_export_is_thread_safe(tmp_path) -> None:
    exporter = ProvSpanExporter(store="memory:")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                _run_agent(provider, f"t{n} q{i}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert exporter.force_flush()
    rows = list(exporter.store.query(f"SELECT ?s WHERE {{ GRAPH ?g {{ ?s a <{TG}Conclusion> }} }}"))
    assert len(rows) == 80
    exporter.shutdown()


def test_bad_input_never_raises_keeps_text_and_writes_only_valid_iris(captured, caplog) -> None:
    provider, memory = captured
    exporter = ProvSpanExporter(store="memory:")
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    huge = "x" * 2_000_000 + '"\\\n\r\t end'
    weird = 'tab\there "quotes" \\ back\nslash \u2028 emoji \U0001F600 nul\x00'
    caplog.set_level(logging.WARNING)
    with agent_session(weird, session_id='a b<c>/d"e{f}|g^h`i\\j', tracer_provider=provider) as s:
        with s.iteration() as step:
            step.thought(huge)
            step.action("tool", {"obj": object(), "set": {1, 2}})
            step.observation("bad \udcff byte")
        with s.iteration() as step:
            step.action("tool", {"obj": object()})  # the same problem again: logged once
        s.conclude(weird)
    assert exporter.force_flush()
    # Every IRI is valid: Oxigraph re-parses the whole store strictly.
    dump = exporter.store.dump("nquads")
    check = pyoxigraph.Store()
    check.load(dump, format=pyoxigraph.RdfFormat.N_QUADS)
    # ... and it holds exactly the graph of the spans (none lost to the bad input).
    assert set(check) == quads_of(memory.get_finished_spans())
    iri = s.explain_id
    assert iri.startswith("urn:trustgraph:agent:a%20b%3Cc%3E%2Fd%22e%7Bf%7D%7Cg%5Eh%60i%5Cj")
    values = {(str(r["p"].value), r["o"].value) for r in exporter.store.query(
        f"SELECT ?p ?o WHERE {{ GRAPH ?g {{ ?s ?p ?o FILTER(STRSTARTS(STR(?s), '{iri}')) }} }}")}
    assert (f"{TG}query", weird) in values
    assert (f"{TG}thought", huge) in values
    assert (f"{TG}answer", weird) in values
    assert (f"{TG}observation", "bad \ufffd byte") in values
    args = [o for p, o in values if p == f"{TG}arguments"]
    assert len(args) == 2 and all(json.loads(a)["obj"].startswith("<object object") for a in args)
    messages = [r.getMessage() for r in caplog.records]
    assert sum("not JSON-serialisable" in m for m in messages) == 1
    assert sum("not valid Unicode" in m for m in messages) == 1
    assert exporter.stats()["problems"]["text that is not valid Unicode (replaced by U+FFFD)"] >= 1
    exporter.shutdown()


def test_a_scalar_where_a_list_is_expected_maps_and_loses_nothing_else(captured) -> None:
    """Plain-API spans may carry a single chunk id as an int: the span maps, and the rest of its
    batch is stored (a mapping error would lose the whole batch)."""
    provider, memory = captured
    tracer = provider.get_tracer("plain")
    attrs = {A.FLOW: A.FLOW_DOC_RAG, A.STEP: A.STEP_EXPLORATION, A.SESSION_ID: "d-1", A.CHUNK_IDS: 7}
    tracer.start_span("retrieval", attributes=attrs).end()
    _run_agent(provider, session_id="a-1")
    exporter = ProvSpanExporter(store="memory:")
    assert exporter.export(memory.get_finished_spans()) is SpanExportResult.SUCCESS
    assert exporter.force_flush()
    rows = {(str(r["s"].value), str(r["p"].value), r["o"].value) for r in exporter.store.query(
        "SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }")}
    assert ("urn:trustgraph:docrag:d-1/exploration", f"{TG}selectedChunk", "7") in rows
    assert ("urn:trustgraph:docrag:d-1/exploration", f"{TG}chunkCount", "1") in rows
    assert any(s == "urn:trustgraph:agent:a-1/final" for s, _, _ in rows)
    exporter.shutdown()


def test_otlp_map_with_bytes_maps_as_text() -> None:
    """An OTLP value JSON cannot hold (bytes inside a map) is written with repr, not an error."""
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    def kv(key: str, value: AnyValue) -> KeyValue:
        return KeyValue(key=key, value=value)

    thought = AnyValue()
    thought.kvlist_value.values.append(kv("raw", AnyValue(bytes_value=b"\x00\xff")))
    span = Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="iteration 1", attributes=[
        kv(A.FLOW, AnyValue(string_value=A.FLOW_AGENT)), kv(A.STEP, AnyValue(string_value=A.STEP_ANALYSIS)),
        kv(A.SESSION_ID, AnyValue(string_value="s-1")), kv(A.ITERATION, AnyValue(int_value=1)),
        kv(A.THOUGHT, thought)])
    ds = spans_to_dataset([span])
    thoughts = [str(o) for _, _, o, _ in ds.quads((None, rdflib.URIRef(f"{TG}thought"), None, None))]
    assert thoughts == [json.dumps({"raw": repr(b"\x00\xff")})]


def test_edges_that_are_not_valid_iris_become_literals(captured) -> None:
    """Only IRIs Oxigraph accepts strictly are written as IRIs (the store parses leniently)."""
    provider, memory = captured
    bad = ["http://ex/a#b#c", "urn:x%zz", "http://[bad/x"]
    with graph_rag_session("q?", session_id="g-bad", tracer_provider=provider) as s:
        s.exploration([bad])
        s.focus([(bad, "why")])
        s.synthesis("a")
    exporter = ProvSpanExporter(store="memory:")
    assert exporter.export(memory.get_finished_spans()) is SpanExportResult.SUCCESS
    assert exporter.force_flush()
    dump = exporter.store.dump("nquads")
    pyoxigraph.Store().load(dump, format=pyoxigraph.RdfFormat.N_QUADS)  # strict: raises on a bad IRI
    rdf = str(rdflib.RDF)
    objects = {r["o"] for r in exporter.store.query(
        f"SELECT ?o WHERE {{ GRAPH ?g {{ ?t a <{rdf}Statement> ; ?p ?o FILTER(?p != <{rdf}type>) }} }}")}
    assert objects == {pyoxigraph.Literal(v) for v in bad}
    exporter.shutdown()


def test_an_exception_marks_the_span_and_leaves_a_valid_partial_trace(captured) -> None:
    provider, memory = captured
    exporter = ProvSpanExporter(store="memory:")
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def broken(q: str) -> str:
        raise RuntimeError("tool exploded")

    with pytest.raises(RuntimeError, match="tool exploded"):
        with agent_session("will fail", session_id="boom", tracer_provider=provider) as s:
            with s.iteration() as step:
                step.thought("first")
                step.observation("ok")
            with s.iteration() as step:
                step.call_tool("broken", broken, {"q": "x"})
    assert exporter.force_flush()
    rows = {(str(r["s"].value), str(r["p"].value), r["o"].value) for r in exporter.store.query(
        "SELECT ?s ?p ?o WHERE { GRAPH ?g { ?s ?p ?o } }")}
    subjects = {s for s, _, _ in rows}
    base = "urn:trustgraph:agent:boom"
    assert {base, f"{base}/i1", f"{base}/i2"} <= subjects
    assert f"{base}/final" not in subjects
    status = "https://w3id.org/otel-prov/ns#statusMessage"
    assert (f"{base}/i2", status, "RuntimeError: tool exploded") in rows
    assert (base, status, "RuntimeError: tool exploded") in rows
    assert not any(s == f"{base}/i1" and p == status for s, p, _ in rows)
    exporter.shutdown()


def test_a_span_the_mapping_raises_on_loses_only_itself(captured, monkeypatch) -> None:
    """A stand-in for a mapping bug (no real input is known to make the mapping raise): the rest of
    the batch is stored, the failure counted."""
    from otel_prov.mapping import mapper as _mapper

    real = _mapper.map_span

    def map_span(rec, *args, **kwargs):
        if rec.name == "iteration 1":
            raise RuntimeError("mapping bug (test)")
        return real(rec, *args, **kwargs)

    monkeypatch.setattr(_mapper, "map_span", map_span)
    provider, memory = captured
    _run_agent(provider)
    exporter = ProvSpanExporter(store="memory:")
    assert exporter.export(memory.get_finished_spans()) is SpanExportResult.SUCCESS
    assert exporter.force_flush()
    types = {str(r["t"].value) for r in exporter.store.query(
        "SELECT ?t WHERE { GRAPH ?g { ?s a ?t } }")}
    assert f"{TG}Conclusion" in types and f"{TG}Question" in types
    assert f"{TG}Analysis" not in types
    problems = exporter.stats()["problems"]
    assert problems == {"span rejected, not stored (RuntimeError: mapping bug (test))": 1}
    exporter.shutdown()


def test_shutdown_releases_an_export_waiting_for_a_failing_store(tmp_path, monkeypatch) -> None:
    """A store that keeps failing fills the writer's queue; an export() waiting for room must not
    hold shutdown() forever, and what could not be stored is rescued to a file, not dropped.  (The
    in-memory store: an on-disk one appends to its log without a queue, next test.)"""
    from otel_prov.ingest import writer as _writer

    monkeypatch.setattr(_writer, "MAX_PENDING_BYTES", 1)
    monkeypatch.chdir(tmp_path)  # no directory next to a memory store: the rescue file goes here
    exporter = ProvSpanExporter(store="memory:")

    def failing(data: bytes, count: int) -> None:
        raise OSError("disk full (test)")

    monkeypatch.setattr(exporter.store, "add", failing)
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    results: list[object] = []

    def app() -> None:
        for i in range(3):
            results.append(_run_agent(provider, f"q{i}"))

    thread = threading.Thread(target=app)
    thread.start()
    thread.join(2)
    assert thread.is_alive()  # blocked in export(): back-pressure on a full queue
    exporter.shutdown()       # returns: releases the waiting export
    thread.join(10)
    assert not thread.is_alive() and len(results) == 3
    # The rescue file holds what was queued and could not be stored: whole batches (each span's
    # quads, all of them), nothing else.
    rescued: set[pyoxigraph.Quad] = set()
    for path in tmp_path.glob("otel-prov-rescue-*.nq"):
        rescued |= set(pyoxigraph.parse(path=str(path), format=pyoxigraph.RdfFormat.N_QUADS))
    whole = [quads_of([span]) for span in memory.get_finished_spans()]
    kept = [q for q in whole if q <= rescued]
    assert kept and set().union(*kept) == rescued


def test_a_log_that_cannot_be_written_fails_the_export_and_keeps_nothing_half(tmp_path, monkeypatch,
                                                                             caplog) -> None:
    """An append that fails (a full disk) is cut back out of the segment, counted and logged; the
    export returns FAILURE at once and the application goes on; later appends work again."""
    from otel_prov.stores import segments

    path = tmp_path / "s"
    exporter = ProvSpanExporter(store=path)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    kept = _run_agent(provider, "kept")
    real_write = segments._write_all

    def half_then_fail(fd: int, data: bytes) -> None:
        real_write(fd, data[: len(data) // 2])
        raise OSError(28, "No space left on device (test)")

    monkeypatch.setattr(segments, "_write_all", half_then_fail)
    with caplog.at_level(logging.ERROR):
        lost = _run_agent(provider, "lost")
    monkeypatch.setattr(segments, "_write_all", real_write)
    after = _run_agent(provider, "after")
    stats = exporter.stats()
    provider.shutdown()
    assert stats["store_failures"] > 0
    assert any("log cannot be written" in k for k in stats["problems"])
    assert "No space left" in caplog.text
    questions = {str(r[0]) for r in load_dataset(f"oxigraph:{path}").query(  # type: ignore[index]
        f"SELECT ?s WHERE {{ GRAPH ?g {{ ?s a <{TG}Question> }} }}")}
    assert kept in questions and after in questions and lost not in questions


def test_a_store_held_by_a_running_exporter_is_read_as_a_snapshot(tmp_path, capsys) -> None:
    from otel_prov.cli import main

    path = tmp_path / "s"
    exporter = ProvSpanExporter(store=path)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    iri = _run_agent(provider)
    assert exporter.force_flush()
    try:  # the exporter still holds the store
        ds = load_dataset(f"oxigraph:{path}")
        assert any(str(q[0]) == iri for q in ds.quads((None, None, None, None)))
        assert main(["list", "--store", str(path), "--format", "json"]) == 0
        assert iri in capsys.readouterr().out
        assert main(["show", iri, "--store", str(path)]) == 0
        assert "Paris" in capsys.readouterr().out
    finally:
        exporter.shutdown()
