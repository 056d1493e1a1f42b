"""End to end with real processes: Jaeger (collector-config/jaeger.yaml), ``otel-prov serve`` and the
Collector running collector-config/otelcol.yaml itself, all on free 127.0.0.1 ports.

1. The example ReAct agent exports OTLP to the Collector, which fans out to Jaeger and to
   ``otel-prov serve``: Jaeger's HTTP API returns the trace with every span, parent reference and
   tag; the PROV store holds the same session under the same trace id; ``otel-prov show`` prints it
   with the Jaeger link.
2. The in-process path: ``OTEL_TRACES_EXPORTER=otlp,prov`` under ``opentelemetry-instrument``,
   straight to Jaeger and to the embedded store.

Binaries come from collector-config/build-binaries.sh; in CI a missing one fails (tests/support/procs.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyoxigraph
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import spans_to_dataset
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import records_from_otlp
from otel_prov.model.quads import nquads
from otel_prov.model.vocab import GRAPH_RETRIEVAL, OTELPROV, TG
from otel_prov.stores.logstore import open_reader
from otel_prov.stores.oxigraph import OxigraphStore
from tests.support.graphs import assert_isomorphic
from tests.support.procs import (
    Jaeger,
    Proc,
    clean_env,
    http_get,
    require_binary,
    start_collector,
    start_jaeger,
    start_serve,
    wait_until,
)
from tests.support.stores import read_back

TIMEOUT = 60.0


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    """Processes to stop at the end, whatever happens."""
    started: list[Proc] = []
    yield started
    for proc in reversed(started):
        proc.terminate(timeout=15)


def run_example_agent(provider: TracerProvider) -> Any:
    """The example ReAct agent (offline policy) on ``provider``."""
    from otel_prov.examples.react_agent import run_agent

    result = run_agent(tracer_provider=provider)
    assert result.answer, "the example agent did not answer"
    return result


# -- checks ---------------------------------------------------------------------------------------


def _tag_value(tag: dict[str, Any]) -> Any:
    return tag["value"]


def assert_jaeger_has(jaeger: Jaeger, trace_id: str, spans: Sequence[ReadableSpan]) -> None:
    """Jaeger returns the trace with every span, its parent reference and its attributes as tags."""

    def complete() -> dict[str, Any] | None:
        trace = jaeger.trace(trace_id)
        return trace if trace and len(trace["spans"]) >= len(spans) else None

    trace = wait_until(complete, TIMEOUT, f"Jaeger to hold all {len(spans)} spans of trace {trace_id}",
                       interval=0.2, proc=jaeger)
    by_id = {s["spanID"]: s for s in trace["spans"]}
    assert len(by_id) == len(spans)
    for span in spans:
        got = by_id.get(f"{span.context.span_id:016x}")
        assert got is not None, f"span {span.name!r} missing from Jaeger"
        assert got["operationName"] == span.name
        parents = [r["spanID"] for r in got.get("references", []) if r["refType"] == "CHILD_OF"]
        if span.parent is not None:
            assert parents == [f"{span.parent.span_id:016x}"], span.name
        else:
            assert parents == [], span.name
        tags = {t["key"]: _tag_value(t) for t in got["tags"]}
        for key, value in (span.attributes or {}).items():
            assert key in tags, f"tag {key!r} of span {span.name!r} missing from Jaeger"
            if isinstance(value, (tuple, list)):
                assert json.loads(tags[key]) == list(value), key
            else:
                assert tags[key] == value, (span.name, key)


def read_store(path: Path) -> OxigraphStore:
    return open_reader(path)  # folds the log into the index, as every reader does


def assert_store_has(store: OxigraphStore, spans: Sequence[ReadableSpan], trace_id: str,
                     session_iri: str, iterations: int) -> None:
    """The store holds exactly the graph the in-process mapping gives for these spans, and the
    session's Analyses and Conclusion carry the trace id."""
    assert_isomorphic(spans_to_dataset(spans), store.to_dataset())
    rows = list(store.query(f"""
        SELECT ?type (COUNT(DISTINCT ?node) AS ?n) WHERE {{
          GRAPH <{GRAPH_RETRIEVAL}> {{
            ?node a ?type ; <{OTELPROV.traceId}> "{trace_id}" .
            FILTER(?type IN (<{TG.Analysis}>, <{TG.Conclusion}>, <{TG.AgentQuestion}>))
          }}
        }} GROUP BY ?type"""))
    counts = {str(row["type"].value): int(row["n"].value) for row in rows}
    assert counts.get(str(TG.Analysis), 0) >= iterations, counts
    assert counts.get(str(TG.Conclusion)) == 1, counts
    assert store.query(f"ASK {{ GRAPH <{GRAPH_RETRIEVAL}> {{ <{session_iri}> ?p ?o }} }}")


def otel_prov(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "otel_prov.cli", *args], capture_output=True, text=True,
                          timeout=120, env=clean_env())


def assert_show_links_jaeger(store: Path, session_iri: str, jaeger: Jaeger, trace_id: str,
                             answer: str) -> None:
    shown = otel_prov("show", session_iri, "--store", f"oxigraph:{store}", "--jaeger-url", jaeger.api)
    assert shown.returncode == 0, shown.stderr
    assert f"{jaeger.api}/trace/{trace_id}" in shown.stdout
    assert answer.split()[0] in shown.stdout


# -- 1. through the Collector ---------------------------------------------------------------------


def test_agent_through_the_collector_to_jaeger_and_otel_prov(tmp_path: Path, procs: list[Proc]) -> None:
    require_binary("otelcol-prov")
    jaeger = start_jaeger(tmp_path)
    procs.append(jaeger)
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log", env={"OTEL_PROV_SERVE_TOKEN": "e2e"})
    procs.append(serve)
    collector = start_collector(tmp_path, jaeger_otlp=jaeger.otlp_grpc, prov_otlp=serve.grpc_port,
                                token="e2e")
    procs.append(collector)

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "e2e-react-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
        endpoint=f"127.0.0.1:{collector.otlp_grpc}", insecure=True, timeout=10), schedule_delay_millis=100))
    result = run_example_agent(provider)
    provider.shutdown()  # flushes the OTLP exporter
    spans = [s for s in memory.get_finished_spans() if f"{s.context.trace_id:032x}" == result.trace_id]
    assert len(spans) == len(memory.get_finished_spans()) >= 4
    iterations = len(result.turns)

    assert_jaeger_has(jaeger, result.trace_id, spans)

    def acknowledged() -> bool:
        status, body = http_get(f"http://{serve.http}/health", 2.0)
        return status == 200 and json.loads(body)["spans_acknowledged"] >= len(spans)

    wait_until(acknowledged, TIMEOUT, "otel-prov serve to acknowledge every span", interval=0.1, proc=serve)
    assert collector.terminate() == 0, collector.tail()
    assert serve.terminate() == 0, serve.tail()
    store = read_store(serve.store)
    try:
        assert_store_has(store, spans, result.trace_id, result.explain_id, iterations)
    finally:
        store.close()
    assert_show_links_jaeger(serve.store, result.explain_id, jaeger, result.trace_id, result.answer)


# -- 2. in process: OTEL_TRACES_EXPORTER=otlp,prov ------------------------------------------------

_SCRIPT = textwrap.dedent("""\
    import json, sys
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from otel_prov.examples.react_agent import run_agent

    memory = InMemorySpanExporter()  # next to the configured exporters: what was sent
    trace.get_tracer_provider().add_span_processor(SimpleSpanProcessor(memory))
    result = run_agent()
    spans = {f"{s.context.span_id:016x}": (s.name, f"{s.parent.span_id:016x}" if s.parent else None)
             for s in memory.get_finished_spans()}
    json.dump({"trace_id": result.trace_id, "explain_id": result.explain_id, "answer": result.answer,
               "iterations": len(result.turns), "spans": spans}, sys.stdout)
    with open(sys.argv[1], "wb") as out:  # the spans themselves, as OTLP
        out.write(encode_spans(memory.get_finished_spans()).SerializeToString())
""")


def _instrument_command() -> list[str]:
    beside = Path(sys.executable).parent / "opentelemetry-instrument"
    found = str(beside) if beside.exists() else shutil.which("opentelemetry-instrument")
    if found is None:
        pytest.fail("opentelemetry-instrument not found (pip install opentelemetry-distro)", pytrace=False)
    return [found]


def test_in_process_otlp_and_prov_exporters(tmp_path: Path, procs: list[Proc]) -> None:
    from importlib.metadata import entry_points

    if not any(ep.name == "prov" for ep in entry_points(group="opentelemetry_traces_exporter")):
        pytest.fail("the 'prov' exporter entry point is not installed: pip install -e .", pytrace=False)
    jaeger = start_jaeger(tmp_path)
    procs.append(jaeger)
    store = tmp_path / "store"
    script = tmp_path / "agent.py"
    script.write_text(_SCRIPT)
    env = clean_env({
        "OTEL_TRACES_EXPORTER": "otlp,prov",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_SERVICE_NAME": "e2e-in-process",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{jaeger.otlp_grpc}",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "true",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_PROV_STORE": f"oxigraph:{store}",
    })
    started = time.monotonic()
    sent_spans = tmp_path / "spans.otlp"
    run = subprocess.run([*_instrument_command(), sys.executable, str(script), str(sent_spans)],
                         capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    # The prov exporter stored exactly the graph of the spans the agent made (term by term: ids,
    # nanosecond times), as the mapping makes it from the same spans read back as OTLP.
    request = ExportTraceServiceRequest.FromString(sent_spans.read_bytes())
    records, rejected = records_from_otlp(request.resource_spans)
    assert records and not rejected
    expected = set(pyoxigraph.parse(nquads(TraceMapper("seed").map(records).add),
                                    format=pyoxigraph.RdfFormat.N_QUADS))
    with read_back(store) as stored:
        assert set(stored.quads_for_pattern(None, None, None, None)) == expected
    trace_id = result["trace_id"]
    # Jaeger: the trace, complete (span count from the PROV side's spanIds, checked below).
    prov = read_store(store)
    try:
        span_ids = {str(row["s"].value) for row in prov.query(
            f'SELECT DISTINCT ?s WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ '
            f'?n <{OTELPROV.traceId}> "{trace_id}" ; <{OTELPROV.spanId}> ?s }} }}')}
        rows = list(prov.query(f"""
            SELECT (COUNT(DISTINCT ?a) AS ?analyses) (COUNT(DISTINCT ?c) AS ?conclusions) WHERE {{
              GRAPH <{GRAPH_RETRIEVAL}> {{
                {{ ?a a <{TG.Analysis}> ; <{OTELPROV.traceId}> "{trace_id}" }} UNION
                {{ ?c a <{TG.Conclusion}> ; <{OTELPROV.traceId}> "{trace_id}" }}
              }} }}"""))
    finally:
        prov.close()
    assert int(rows[0]["analyses"].value) >= result["iterations"]
    assert int(rows[0]["conclusions"].value) == 1
    sent: dict[str, list[str | None]] = result["spans"]
    assert span_ids and span_ids <= set(sent), "the store's spanIds are not spans the agent sent"

    def in_jaeger() -> dict[str, Any] | None:
        trace = jaeger.trace(trace_id)
        return trace if trace and set(sent) <= {s["spanID"] for s in trace["spans"]} else None

    trace = wait_until(in_jaeger, TIMEOUT, "Jaeger to hold the in-process trace", interval=0.2, proc=jaeger)
    for got in trace["spans"]:
        name, parent = sent[got["spanID"]]
        assert got["operationName"] == name
        assert [r["spanID"] for r in got.get("references", []) if r["refType"] == "CHILD_OF"] == \
            ([parent] if parent else [])
    service = {p["serviceName"] for p in trace["processes"].values()}
    assert service == {"e2e-in-process"}
    assert time.monotonic() - started < 120
    assert_show_links_jaeger(store, result["explain_id"], jaeger, trace_id, result["answer"])



# -- 3. the Collector's queue and retry against a receiver that is down, then busy ----------------


def _agent_requests(n_sessions: int, per_request: int) -> tuple[list[bytes], int]:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from otel_prov import agent_session

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "e2e-load"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for k in range(n_sessions):
        with agent_session(f"question {k}?", tracer_provider=provider) as session:
            for i in range(3):
                with session.iteration() as step:
                    step.thought(f"thought {k}.{i}")
                    step.action("calculator", {"expression": f"{k}+{i}"})
                    step.observation(str(k + i))
            session.conclude(f"answer {k}")
    spans = list(memory.get_finished_spans())
    provider.shutdown()
    requests = [encode_spans(spans[i:i + per_request]).SerializeToString()
                for i in range(0, len(spans), per_request)]
    return requests, len(spans)


def health_of(serve: Proc) -> dict[str, Any]:
    status, body = http_get(f"http://{serve.http}/health", 2.0)
    return json.loads(body) if status == 200 else {}


def test_collector_retries_while_serve_is_down_then_busy(tmp_path: Path, procs: list[Proc]) -> None:
    """The Collector holds the PROV batches while ``serve`` is not running, and honours its
    UNAVAILABLE + RetryInfo when it is busy (``--max-inflight 1``, its one request a large one sent
    directly): every span ends up stored, none is dropped (the exporter's failure counters stay 0)."""
    import grpc

    from tests.support.procs import free_port

    require_binary("otelcol-prov")
    jaeger = start_jaeger(tmp_path)
    procs.append(jaeger)
    prov_port = free_port()
    collector = start_collector(tmp_path, jaeger_otlp=jaeger.otlp_grpc, prov_otlp=prov_port)
    procs.append(collector)
    requests, n_spans = _agent_requests(2000, 250)
    half = len(requests) // 4
    # One large request sent to serve directly keeps its one request in flight for a while: every
    # batch the Collector sends meanwhile is refused (UNAVAILABLE + RetryInfo) and must be retried.
    (large,), n_large = _agent_requests(5000, 10**9)
    with grpc.insecure_channel(f"127.0.0.1:{collector.otlp_grpc}") as channel:
        export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                                     request_serializer=None, response_deserializer=None)
        for body in requests[:half]:  # while serve is down: queued and retried by the Collector
            export(body, timeout=10)
        time.sleep(1.0)
        serve = start_serve(tmp_path / "store", tmp_path / "serve.log", "--max-inflight", "1",
                            grpc_port=prov_port)
        procs.append(serve)
        held = 250 * half  # the spans the Collector held: 250 a request
        wait_until(lambda: health_of(serve).get("spans_acknowledged", 0) >= held, TIMEOUT,
                   "serve to store what the Collector held", interval=0.1, proc=serve)
        own_refusals = 0

        def send_large() -> None:  # as a client honouring RetryInfo: the Collector may be in flight
            nonlocal own_refusals
            deadline = time.monotonic() + 120
            while True:
                try:
                    send(large, timeout=120)
                    return
                except grpc.RpcError as exc:
                    if exc.code() is not grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                        raise
                    own_refusals += 1
                    time.sleep(0.05)

        with grpc.insecure_channel(f"127.0.0.1:{prov_port}") as direct:
            send = direct.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                                      request_serializer=None, response_deserializer=None)
            with ThreadPoolExecutor(max_workers=1) as pool:
                answer = pool.submit(send_large)
                wait_until(lambda: health_of(serve).get("in_flight", 0) >= 1 or answer.done(), TIMEOUT,
                           "the large request to be in flight", interval=0.01, proc=serve)
                for body in requests[half:]:  # sent on by the Collector while serve is busy
                    export(body, timeout=10)
                answer.result()

    everything = n_spans + n_large  # the Collector's, and the large request's
    wait_until(lambda: health_of(serve).get("spans_acknowledged", 0) >= everything, TIMEOUT,
               f"otel-prov serve to acknowledge all {everything} spans", interval=0.2, proc=serve)
    info = health_of(serve)
    assert info["spans_acknowledged"] == everything
    refused = info["refused"].get("request refused: too many requests in flight", 0)
    assert refused > own_refusals, "the Collector never sent concurrently: back-pressure was not exercised"
    for metric in ("otelcol_exporter_send_failed_spans", "otelcol_exporter_enqueue_failed_spans"):
        assert collector.metric(metric) == 0, metric
    assert collector.metric("otelcol_exporter_sent_spans") >= 2 * n_spans  # Jaeger and PROV


# -- 4. OTLP/HTTP from the Collector's otlp_http exporter ------------------------------------------

_HTTP_PIPELINE = """\
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${env:IN_PORT}
processors:
  batch:
    timeout: 100ms
exporters:
  otlp_http/prov:
    endpoint: http://127.0.0.1:${env:PROV_HTTP_PORT}
    headers:
      authorization: "Bearer ${env:OTEL_PROV_SERVE_TOKEN}"
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [otlp_http/prov]
"""


def test_collector_otlp_http_exporter_to_serve(tmp_path: Path, procs: list[Proc]) -> None:
    """serve's HTTP transport with a real Go client (gzip by default, bearer token)."""
    import grpc

    from tests.support.procs import free_port, port_open, start

    binary = require_binary("otelcol-prov")
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log", env={"OTEL_PROV_SERVE_TOKEN": "tok"})
    procs.append(serve)
    config = tmp_path / "http-pipeline.yaml"
    config.write_text(_HTTP_PIPELINE)
    in_port = free_port()
    collector = start("collector", [str(binary), "--config", str(config)], tmp_path / "collector.log",
                      {"IN_PORT": str(in_port), "PROV_HTTP_PORT": str(serve.http_port),
                       "OTEL_PROV_SERVE_TOKEN": "tok"})
    procs.append(collector)
    wait_until(lambda: port_open(in_port), TIMEOUT, "the Collector", proc=collector)
    requests, n_spans = _agent_requests(50, 100)
    with grpc.insecure_channel(f"127.0.0.1:{in_port}") as channel:
        export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                                     request_serializer=None, response_deserializer=None)
        for body in requests:
            export(body, timeout=10)

    def acknowledged() -> int:
        status, body = http_get(f"http://{serve.http}/health", 2.0)
        return int(json.loads(body)["spans_acknowledged"]) if status == 200 else 0

    wait_until(lambda: acknowledged() >= n_spans, TIMEOUT, "serve to acknowledge the spans over HTTP",
               interval=0.1, proc=serve)
    status, body = http_get(f"http://{serve.http}/health", 2.0)
    assert json.loads(body)["refused"] == {}
