"""The scale-out path end to end, every process real and on free 127.0.0.1 ports, started by
``collector-config/scale/run-local.sh`` itself:

    agents --OTLP--> front Collector --kafka exporter, key = trace id--> Kafka (one KRaft broker)
        group otel-prov: 2 consumer Collectors --> 2 ``otel-prov serve`` --> one SPARQL server
                                                   (the Oxigraph server, or Fuseki TDB2)
        group jaeger:    Jaeger v2 reading the same topic

A few hundred sessions of the example flows (real SDK spans, sent by the SDK's OTLP exporter in
batches that split some traces over two requests); half-way, one receiver (its ``otel-prov serve``
and its consumer Collector) is killed with SIGKILL.  Then every session is in the shared store
exactly as the embedded path maps the same spans (the graphs are isomorphic: nothing missing,
nothing extra), and Jaeger has every span of every trace: what the dead receiver had not
acknowledged, Kafka delivered again to the other one, and writing it again changed nothing.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from rdflib import RDF, URIRef

from otel_prov import load_dataset, spans_to_dataset
from otel_prov.examples.rag import DOC_RAG_QUESTION, doc_rag, graph_rag
from otel_prov.examples.react_agent import run_agent
from tests.support.graphs import assert_isomorphic
from tests.support.procs import REPO, Proc, http_get, require_binary, start, wait_until
from tests.support.sparql_servers import fuseki_jar, oxigraph_binary, question_count

RUN_LOCAL = REPO / "collector-config" / "scale" / "run-local.sh"
TG_QUESTION = URIRef("https://trustgraph.ai/ns/Question")
SESSIONS_PER_FLOW = 100  # x 3 flows (the agent's also runs a DocRAG sub-trace)
RECEIVERS = 2


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive ports free on 127.0.0.1."""
    for _ in range(200):
        base = random.randint(20000, 60000 - count)
        sockets = []
        try:
            for port in range(base, base + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sockets.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no run of free ports")


@pytest.fixture
def spans() -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "scale-agents"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for k in range(SESSIONS_PER_FLOW):
        run_agent(tracer_provider=provider, collection=f"c{k % 3}")
        graph_rag(tracer_provider=provider)
        doc_rag("Where does the Spree flow?" if k % 2 else DOC_RAG_QUESTION, tracer_provider=provider)
    provider.shutdown()
    return list(memory.get_finished_spans())


def batches(spans: list[ReadableSpan], size: int = 40) -> list[list[ReadableSpan]]:
    """Spans in the order they finished, ``size`` at a time, as a BatchSpanProcessor sends them: a
    trace that ends across a boundary is split over two requests."""
    return [spans[i:i + size] for i in range(0, len(spans), size)]


class RunLocal:
    """run-local.sh with everything on free ports; stopped (in its own order) at the end."""

    def __init__(self, workdir: Path, sparql: str) -> None:
        self.run_dir = workdir / "run"
        ports = {name: free_ports(1) for name in (
            "FRONT_OTLP_GRPC_PORT", "FRONT_OTLP_HTTP_PORT", "FRONT_METRICS_PORT", "KAFKA_PORT",
            "KAFKA_CONTROLLER_PORT", "JAEGER_QUERY_HTTP_PORT", "JAEGER_QUERY_GRPC_PORT", "OXIGRAPH_PORT",
            "FUSEKI_PORT")}
        ports["CONSUMER_METRICS_PORT_BASE"] = free_ports(RECEIVERS)
        ports["SERVE_GRPC_PORT_BASE"] = free_ports(RECEIVERS)
        self.ports = ports
        self.store = (f"http://127.0.0.1:{ports['OXIGRAPH_PORT']}" if sparql == "oxigraph"
                      else f"http://127.0.0.1:{ports['FUSEKI_PORT']}/ds")
        env = {name: str(port) for name, port in ports.items()}
        env.update({
            "OTEL_PROV_OTELCOL_BIN": str(require_binary("otelcol-prov")),
            "OTEL_PROV_JAEGER_BIN": str(require_binary("jaeger")),
            "OXIGRAPH_BIN": str(oxigraph_binary()) if sparql == "oxigraph" else "",
            "FUSEKI_HEAP_OPTS": "-Xmx512m",
            "OTEL_PROV_CMD": f"{sys.executable} -m otel_prov.cli",
            "KAFKA_HEAP_OPTS": "-Xms128m -Xmx384m",
        })
        for name in ("OTEL_PROV_DEPS_DIR", "OTEL_PROV_MAVEN_REPO"):  # fetch-deps.sh's caches, if moved
            if os.environ.get(name):
                env[name] = os.environ[name]
        cmd = ["bash", str(RUN_LOCAL), "--consumers", str(RECEIVERS), "--sparql", sparql,
               "--run-dir", str(self.run_dir)]
        self.proc: Proc = start("run-local", cmd, workdir / "run-local.log", env)
        self.started = time.monotonic()
        wait_until(lambda: "READY " in self.proc.log.read_text(errors="replace"), 240,
                   "run-local.sh to start everything", interval=0.2, proc=self.proc)
        self.ready_after = time.monotonic() - self.started

    @property
    def front(self) -> str:
        return f"127.0.0.1:{self.ports['FRONT_OTLP_GRPC_PORT']}"

    @property
    def jaeger(self) -> str:
        return f"http://127.0.0.1:{self.ports['JAEGER_QUERY_HTTP_PORT']}"

    def pid(self, name: str) -> int:
        return int((self.run_dir / "pids" / f"{name}.pid").read_text())

    def kill9(self, name: str) -> None:
        os.kill(self.pid(name), signal.SIGKILL)

    def stop(self) -> None:
        if self.proc.popen.poll() is None:
            self.proc.popen.send_signal(signal.SIGTERM)
            try:
                self.proc.popen.wait(150)
            except subprocess.TimeoutExpired:
                self.proc.popen.kill()
                self.proc.popen.wait(10)
        # whatever the script could not stop (it was killed): its --stop mode, from the pid files
        subprocess.run(["bash", str(RUN_LOCAL), "--stop", str(self.run_dir)], capture_output=True,
                       timeout=180)

    def tail(self, name: str, lines: int = 30) -> str:
        path = self.run_dir / "logs" / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


@pytest.fixture(params=["oxigraph", "fuseki"])
def pipeline(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunLocal]:
    require_binary("otelcol-prov")
    require_binary("jaeger")
    if request.param == "fuseki":
        fuseki_jar()  # java and the jar: fails under CI, skips elsewhere, when missing
    run = RunLocal(tmp_path, request.param)
    try:
        yield run
    finally:
        run.stop()


def send(front: str, batch: list[ReadableSpan]) -> None:
    """Until the front Collector acknowledges (= Kafka has it): its answer is the agent's only
    promise, so an unacknowledged batch is sent again, as an SDK's retry would."""
    exporter = OTLPSpanExporter(endpoint=front, insecure=True, timeout=30)
    try:
        deadline = time.monotonic() + 120
        while exporter.export(batch) is not SpanExportResult.SUCCESS:
            assert time.monotonic() < deadline, "the front Collector did not accept a batch in 120 s"
            time.sleep(0.5)
    finally:
        exporter.shutdown()


def test_two_receivers_one_shared_store_one_killed_mid_run(pipeline: RunLocal,
                                                           spans: list[ReadableSpan]) -> None:
    expected = spans_to_dataset(spans)
    expected_questions = len(list(expected.quads((None, RDF.type, TG_QUESTION, None))))
    assert expected_questions >= 3 * SESSIONS_PER_FLOW
    endpoints = (pipeline.run_dir / "endpoints.txt").read_text()
    assert f"store:   {pipeline.store}, shared by every serve" in endpoints

    todo = batches(spans)
    half = len(todo) // 2
    for batch in todo[:half]:
        send(pipeline.front, batch)
    # one receiver dies: its serve and its consumer Collector, without a chance to finish anything
    wait_until(lambda: question_count(pipeline.store) > 0, 60, "the first sessions in the shared store")
    pipeline.kill9("serve-1")
    pipeline.kill9("consumer-1")
    killed_at = question_count(pipeline.store)
    for batch in todo[half:]:
        send(pipeline.front, batch)

    def all_stored() -> bool:
        return question_count(pipeline.store) >= expected_questions

    try:
        wait_until(all_stored, 180, f"{expected_questions} questions in the shared store")
    except TimeoutError:
        pytest.fail(f"{question_count(pipeline.store)} of {expected_questions} questions stored\n"
                    f"serve-2:\n{pipeline.tail('serve-2')}\nconsumer-2:\n{pipeline.tail('consumer-2')}")
    assert killed_at < expected_questions  # the kill was mid-run

    # every session exactly as the embedded path maps the same spans: none missing, none extra
    assert_isomorphic(expected, load_dataset(pipeline.store))
    assert question_count(pipeline.store) == expected_questions

    # Jaeger, fed from the same topic, has every span of every trace
    per_trace = Counter(f"{s.context.trace_id:032x}" for s in spans)

    def jaeger_complete() -> list[str]:
        missing = []
        for trace_id, count in per_trace.items():
            status, body = http_get(f"{pipeline.jaeger}/api/traces/{trace_id}")
            data = json.loads(body).get("data") if status == 200 else None
            if not data or len(data[0]["spans"]) != count:
                missing.append(trace_id)
        return missing

    deadline = time.monotonic() + 60
    while (missing := jaeger_complete()) and time.monotonic() < deadline:
        time.sleep(1)
    assert not missing, f"{len(missing)} of {len(per_trace)} traces incomplete in Jaeger"
