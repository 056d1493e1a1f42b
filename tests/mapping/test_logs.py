"""The GenAI events sent as OTLP log records: joined to their spans by trace and span id whichever
arrives first -- through the SDK's log exporter (``ProvLogExporter``, and ``OTEL_LOGS_EXPORTER=prov``
under ``opentelemetry-instrument``), and through ``otel-prov serve``'s ``LogsService/Export`` (gRPC)
and ``POST /v1/logs`` (HTTP), with one mapper or two mapping workers.  Evaluations
(``gen_ai.evaluation.result``) become PROV: an evaluation of the answer.

The order-independence property (a log before its span, after it, across batches) is in
tests/mapping/test_properties.py over the real instrumentations' spans and logs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import grpc
import pytest
import requests
from opentelemetry._logs import LogRecord as ApiLogRecord
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_prov import ProvLogExporter, ProvSpanExporter
from otel_prov.mapping.mapper import LOG_UNATTACHED, TraceMapper
from otel_prov.mapping.spans import LogRecord, SpanRecord, log_record
from otel_prov.read.reader import TraceReader
from otel_prov.stores import open_for_reading, parse_store
from tests.interop.chain import chain_of, expected, mapped
from tests.interop.runner import REPO, Captured
from tests.support.procs import clean_env, start_collector, start_jaeger, start_serve, wait_until

NAMES = ("semantic_kernel_agent", "util_genai_agent_events")
"""Real runs whose content came as log records (Semantic Kernel's event logs; util-genai's
inference-details events)."""

TRACE = 0x5A5A5A5A5A5A5A5A5A5A5A5A5A5A5A5A
AGENT, CHAT, TOOL, FINAL = 1, 2, 3, 4
T0 = 1_796_032_800_000_000_000
MS = 1_000_000


def _span(span_id: int, name: str, op: str, start: int, end: int, parent: int = 0,
          **attrs: object) -> SpanRecord:
    return SpanRecord(TRACE, span_id, name, T0 + start * MS, T0 + end * MS,
                      {"gen_ai.operation.name": op, **attrs}, parent_id=parent)


def _event(span_id: int, name: str, at: int, body: object = None, **attrs: object) -> LogRecord:
    found = log_record(TRACE, span_id, T0 + at * MS, name, attrs, body)
    assert found is not None
    return found


def _spans() -> list[SpanRecord]:
    """An agent whose model calls record no content on their spans (it went to log records)."""
    return [
        _span(AGENT, "invoke_agent helper", "invoke_agent", 0, 100, **{"gen_ai.agent.name": "helper"}),
        _span(CHAT, "chat m", "chat", 1, 10, AGENT, **{"gen_ai.request.model": "m"}),
        _span(TOOL, "execute_tool lookup", "execute_tool", 11, 20, AGENT,
              **{"gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "c1"}),
        _span(FINAL, "chat m", "chat", 21, 30, AGENT, **{"gen_ai.request.model": "m"}),
    ]


def _logs() -> list[LogRecord]:
    """The older per-message events (their content in the body), as a Python logging bridge or the
    Events API sends them; and an evaluation of the answer."""
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
    return [
        _event(CHAT, "gen_ai.user.message", 1, {"content": "What is x?"}),
        _event(CHAT, "gen_ai.choice", 10, {"index": 0, "finish_reason": "tool_calls",
                                          "message": {"content": "I look it up", "tool_calls": [call]}}),
        _event(FINAL, "gen_ai.user.message", 21, {"content": "What is x?"}),
        _event(FINAL, "gen_ai.tool.message", 21, {"content": "x is 42", "id": "c1"}),
        _event(FINAL, "gen_ai.choice", 30, {"index": 0, "finish_reason": "stop",
                                           "message": {"content": "42."}}),
        _event(AGENT, "gen_ai.evaluation.result", 40, None, **{
            "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 0.9,
            "gen_ai.evaluation.score.label": "relevant", "gen_ai.evaluation.explanation": "on topic"}),
    ]


def _chain(store_quads: list[tuple[str, str, str, str]]) -> list[object]:
    from otel_prov.model.quads import nquads
    from otel_prov.stores.oxigraph import OxigraphStore

    store = OxigraphStore(None)
    try:
        store.add(nquads(store_quads), len(store_quads))
        reader = TraceReader(store)
        return [chain_of(reader.trace(row.id)[0]) for row in reader.sessions()]
    finally:
        store.close()


def test_events_in_log_records_complete_their_spans_whichever_comes_first() -> None:
    spans, logs = _spans(), _logs()
    whole = TraceMapper("seed").map(spans, logs)
    assert whole.problems == []
    [chain] = _chain(whole.add)
    assert (chain.question, chain.agent, chain.answer) == ("What is x?", "helper", "42.")
    [step] = chain.steps
    assert (step.thought, step.action, step.arguments, step.observation) == (
        "I look it up", "lookup", {"q": "x"}, "x is 42")
    for order in ([logs, spans], [spans[:2], logs[:3], spans[2:], logs[3:]], [logs[::-1], spans[::-1]]):
        mapper = TraceMapper("seed")
        quads: set[tuple[str, str, str, str]] = set()
        for batch in order:
            update = mapper.map([r for r in batch if isinstance(r, SpanRecord)],
                                [r for r in batch if isinstance(r, LogRecord)])
            quads -= set(update.remove)
            quads |= set(update.add)
        assert quads == set(whole.add)
    # A retried request sends the same records again: nothing changes.
    mapper = TraceMapper("seed")
    mapper.map(spans, logs)
    again = mapper.map(spans, logs)
    assert (again.add, again.remove) == ([], [])


EVAL = "urn:trustgraph:agent:5a5a5a5a-5a5a-5a5a-5a5a-5a5a5a5a5a5a/final/evaluation/1"


def test_an_evaluation_is_an_entity_derived_from_what_it_evaluates() -> None:
    """docs/model.md: ``{node}/evaluation/{n}``, an ``otelprov:Evaluation`` derived from the node the
    evaluated span was written as (the agent's span: its Conclusion), its name, score, label and
    explanation; strict: generated by an activity that used that node."""
    conclusion = EVAL.removesuffix("/evaluation/1")
    for profile in ("seed", "strict"):
        quads = TraceMapper(profile).map(_spans(), _logs()).add
        mine = {(p, o) for s, p, o, _ in quads if s == f"<{EVAL}>"}
        ns = "https://w3id.org/otel-prov/ns#"
        assert {
            ("<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", "<http://www.w3.org/ns/prov#Entity>"),
            ("<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", f"<{ns}Evaluation>"),
            ("<http://www.w3.org/ns/prov#wasDerivedFrom>", f"<{conclusion}>"),
            (f"<{ns}evaluationName>", '"relevance"'),
            (f"<{ns}evaluationScore>", '"9.0E-1"^^<http://www.w3.org/2001/XMLSchema#double>'),
            (f"<{ns}evaluationLabel>", '"relevant"'),
            (f"<{ns}evaluationExplanation>", '"on topic"'),
            (f"<{ns}traceId>", f'"{TRACE:032x}"'),
            (f"<{ns}spanId>", f'"{AGENT:016x}"'),
        } <= mine
        activity = ("<http://www.w3.org/ns/prov#wasGeneratedBy>", f"<{EVAL}/activity>")
        assert (activity in mine) == (profile == "strict")


def test_log_records_that_are_no_genai_event_or_name_no_span_are_not_kept() -> None:
    assert log_record(TRACE, CHAT, 0, None, {"code.function.name": "f"}, "processing 1 tool call") is None
    orphan = log_record(0, 0, 0, "gen_ai.user.message", {}, {"content": "hi"})
    assert orphan is not None
    update = TraceMapper("seed").map([], [orphan])
    assert (update.add, update.problems) == ([], [LOG_UNATTACHED])
    # The event's name may come as the ``event.name`` attribute, its body as JSON text (Semantic Kernel).
    found = log_record(TRACE, CHAT, 5, "", {"event.name": "gen_ai.user.message"}, '{"content": "hi"}')
    assert found is not None and (found.name, found.attributes["content"]) == ("gen_ai.user.message", "hi")


# -- through the SDK ---------------------------------------------------------------------------------


def test_the_sdk_log_exporter_shares_the_span_exporters_store(tmp_path: Path) -> None:
    """ProvSpanExporter and ProvLogExporter on one store share one pipeline: the log records, sent as
    they are emitted (before their spans end), complete the spans exported later."""
    store = f"oxigraph:{tmp_path / 'store'}"
    spans_out, logs_out = ProvSpanExporter(store=store), ProvLogExporter(store=store)
    assert logs_out._pipeline is spans_out._pipeline  # noqa: SLF001 - what this test is about
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans_out))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs_out))
    tracer, logger = tracer_provider.get_tracer("t"), logger_provider.get_logger("t")
    with tracer.start_as_current_span("invoke_agent helper", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}):
        with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}) as chat:
            ctx = chat.get_span_context()
            for name, body in (("gen_ai.user.message", {"content": "What is x?"}),
                               ("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                                                  "message": {"content": "42."}})):
                logger.emit(ApiLogRecord(trace_id=ctx.trace_id, span_id=ctx.span_id,
                                         trace_flags=ctx.trace_flags, event_name=name, body=body))
        logger.emit(ApiLogRecord(body="an application's own log line"))
    assert logs_out.stats()["records"] == 2 and logs_out.stats()["ignored"] == 1
    tracer_provider.shutdown()
    logger_provider.shutdown()  # the last one out closes the store
    assert spans_out._pipeline.closed  # noqa: SLF001
    reader = TraceReader(open_for_reading(parse_store(store)))
    try:
        [row] = reader.sessions()
        chain = chain_of(reader.trace(row.id)[0])
    finally:
        reader.store.close()
    assert (chain.question, chain.agent, chain.answer, chain.steps) == ("What is x?", "helper", "42.", ())


def test_opentelemetry_instrument_with_prov_for_traces_and_logs(tmp_path: Path, interop: Captured) -> None:
    """A real openai-v2 tool loop under ``opentelemetry-instrument`` with content capture as events
    (EVENT_ONLY: the messages are in log records, not on the spans), ``OTEL_TRACES_EXPORTER=prov`` and
    ``OTEL_LOGS_EXPORTER=prov``: the store holds the whole chain."""
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent('''
        import json
        import openai
        from tests.interop import story
        from tests.interop.llm_server import ScriptedLLMServer
        from tests.interop.scenarios.openai_v2 import TOOL_SPECS, TOOLS, run_loop

        with ScriptedLLMServer(story.react_steps()) as server:
            client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
            answer = run_loop(client, lambda c: TOOLS[c.function.name](**json.loads(c.function.arguments)))
        assert answer == story.FINAL_ANSWER, answer
    '''))
    store = tmp_path / "store"
    env = clean_env({
        "OTEL_TRACES_EXPORTER": "prov", "OTEL_LOGS_EXPORTER": "prov", "OTEL_METRICS_EXPORTER": "none",
        "OTEL_PROV_STORE": f"oxigraph:{store}", "OTEL_SERVICE_NAME": "agent",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY", "PYTHONPATH": str(REPO),
    })
    instrument = Path(sys.executable).with_name("opentelemetry-instrument")
    done = subprocess.run([str(instrument), sys.executable, str(script)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    reader = TraceReader(open_for_reading(parse_store(f"oxigraph:{store}")))
    try:
        chains = [chain_of(reader.trace(row.id)[0]) for row in reader.sessions()]
    finally:
        reader.store.close()
    assert chains == expected("openai_v2_chat")


# -- through otel-prov serve ----------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_takes_logs_over_grpc_and_http(tmp_path: Path, interop: Captured, workers: int) -> None:
    """The real runs' spans over gRPC, their log records over gRPC (one run) and OTLP/HTTP (the
    other), logs first: the store holds what the pure mapping of spans and logs gives."""
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log", "--workers", str(workers))
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{serve.grpc_port}")
        logs_stub = logs_service_pb2_grpc.LogsServiceStub(channel)
        traces_stub = trace_service_pb2_grpc.TraceServiceStub(channel)
        first, second = NAMES
        logs_request = interop.logs_request(first)
        assert logs_request is not None
        logs_stub.Export(logs_request, timeout=30)
        http_logs = interop.logs_request(second)
        assert http_logs is not None
        answer = requests.post(f"http://127.0.0.1:{serve.http_port}/v1/logs", timeout=30,
                               data=http_logs.SerializeToString(),
                               headers={"Content-Type": "application/x-protobuf"})
        assert answer.status_code == 200, answer.text
        for name in NAMES:
            traces_stub.Export(interop.request(name), timeout=30)
        health = requests.get(f"http://127.0.0.1:{serve.http_port}/health", timeout=5).json()
        assert health["log_records_acknowledged"] == sum(len(interop.logs(n)) for n in NAMES)
        channel.close()
    finally:
        assert serve.terminate() == 0, serve.tail()
    reader = TraceReader(open_for_reading(parse_store(f"oxigraph:{tmp_path / 'store'}")))
    try:
        got = sorted((chain_of(reader.trace(row.id)[0]) for row in reader.sessions()), key=repr)
    finally:
        reader.store.close()
    want = sorted((c for n in NAMES for c in mapped(interop.spans(n), "seed", interop.logs(n))), key=repr)
    assert got == want
    assert got == sorted((c for n in NAMES for c in expected(n)), key=repr)


def test_the_collector_configs_logs_pipeline_brings_the_events_to_serve(tmp_path: Path,
                                                                        interop: Captured) -> None:
    """collector-config/otelcol.yaml run by the real Collector: a run whose content came only as log
    records (OpenLLMetry's Anthropic events, each naming the agent span while its model call ran),
    its logs sent before its spans, reaches serve through the Collector's logs pipeline and maps to
    the whole chain."""
    name = "anthropic_agent_events"
    jaeger = start_jaeger(tmp_path)
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log")
    collector = start_collector(tmp_path, jaeger_otlp=jaeger.otlp_grpc, prov_otlp=serve.grpc_port)
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{collector.otlp_grpc}")
        logs_request = interop.logs_request(name)
        assert logs_request is not None
        logs_service_pb2_grpc.LogsServiceStub(channel).Export(logs_request, timeout=30)
        trace_service_pb2_grpc.TraceServiceStub(channel).Export(interop.request(name), timeout=30)
        channel.close()

        def arrived() -> bool:
            health = requests.get(f"http://127.0.0.1:{serve.http_port}/health", timeout=5).json()
            return bool(health["log_records_acknowledged"] >= len(interop.logs(name))
                        and health["spans_acknowledged"] >= len(interop.spans(name)))

        wait_until(arrived, 60, "serve to acknowledge the run's spans and log records", interval=0.2,
                   proc=serve)
    finally:
        assert collector.terminate() == 0, collector.tail()
        assert serve.terminate() == 0, serve.tail()
        jaeger.terminate()
    reader = TraceReader(open_for_reading(parse_store(f"oxigraph:{tmp_path / 'store'}")))
    try:
        got = [chain_of(reader.trace(row.id)[0]) for row in reader.sessions()]
    finally:
        reader.store.close()
    assert got == expected(name)
    assert got[0].steps and all(step.observation for step in got[0].steps)


def test_serve_logs_refused_like_traces(tmp_path: Path) -> None:
    """The same limits and answers as traces: undecodable protobuf 400 / INVALID_ARGUMENT, a wrong
    content type 415, no bearer token 401 when serve has one."""
    env = dict(os.environ, OTEL_PROV_SERVE_TOKEN="s3cret")
    serve = start_serve(tmp_path / "store", tmp_path / "serve.log", env=env)
    try:
        url = f"http://127.0.0.1:{serve.http_port}/v1/logs"
        auth = {"Authorization": "Bearer s3cret"}
        bad = requests.post(url, data=b"\xff\xff\xff", timeout=10,
                            headers={**auth, "Content-Type": "application/x-protobuf"})
        assert bad.status_code == 400
        assert requests.post(url, data=b"x", timeout=10, headers={**auth, "Content-Type": "text/plain"}
                             ).status_code == 415
        assert requests.post(url, data=b"", timeout=10,
                             headers={"Content-Type": "application/x-protobuf"}).status_code == 401
        ok = requests.post(url, data=json.dumps({"resourceLogs": []}), timeout=10,
                           headers={**auth, "Content-Type": "application/json"})
        assert ok.status_code == 200, ok.text
        channel = grpc.insecure_channel(f"127.0.0.1:{serve.grpc_port}")
        call = channel.unary_unary("/opentelemetry.proto.collector.logs.v1.LogsService/Export")
        with pytest.raises(grpc.RpcError) as refused:
            call(b"\xff\xff\xff", metadata=(("authorization", "Bearer s3cret"),), timeout=10)
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        channel.close()
    finally:
        assert serve.terminate() == 0, serve.tail()
