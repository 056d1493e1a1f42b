"""``otel-prov import``: the rescue files serve and the exporter save, TriG, and spans as OTLP/JSON
lines (as the Collector's file exporter writes them), into a real on-disk store, read back."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from otel_prov import load_dataset, spans_to_dataset
from otel_prov.mapping.mapper import TraceMapper
from otel_prov.mapping.spans import from_sdk
from otel_prov.model.quads import nquads
from tests.support.cli import cli
from tests.support.genai import S, make
from tests.support.graphs import assert_isomorphic
from tests.support.serving import agent_spans

A = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}
T = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather"}


def _genai() -> list[ReadableSpan]:
    """A framework agent trace (an agent span and two tool calls)."""
    return make(S("invoke_agent planner", 0, 50, A, [S("execute_tool weather", 2, 10, T),
                                                      S("execute_tool weather", 12, 20, T)]))


def _otlp_json_line(spans: list[ReadableSpan]) -> str:
    """One ExportTraceServiceRequest as OTLP/JSON on one line, ids in hex (as the Collector writes
    them; protobuf's own JSON writes bytes in base64)."""
    document: Any = json_format.MessageToDict(encode_spans(spans))
    for rs in document["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(document)


def _quads(store: Path) -> int:
    return len(list(load_dataset(str(store)).quads()))


def test_a_rescue_file_is_imported_once_whatever_the_times(tmp_path: Path, capsysbinary: Any) -> None:
    spans = agent_spans(3)
    rescue = tmp_path / "otel-prov-rescue-1234-5678.nq"  # what the writer saves: the mapping's N-Quads
    rescue.write_bytes(nquads(TraceMapper("seed").map([from_sdk(s) for s in spans]).add))
    store = tmp_path / "store"
    r = cli(capsysbinary, "import", str(rescue), "--store", str(store))
    assert r.code == 0 and f"imported {rescue}: " in r.err, r.err
    assert_isomorphic(spans_to_dataset(spans), load_dataset(str(store)))
    listed = cli(capsysbinary, "list", "--store", str(store), "--format", "json")
    assert len(json.loads(listed.out)) == 3
    before = _quads(store)
    assert cli(capsysbinary, "import", str(rescue), "--store", str(store)).code == 0
    assert _quads(store) == before  # idempotent


def test_trig_of_the_default_graph_goes_to_the_explainability_graph(tmp_path: Path,
                                                                      capsysbinary: Any) -> None:
    trig = tmp_path / "hand.trig"
    trig.write_text('<urn:trustgraph:x> <urn:p> "in the default graph" .\n'
                    '<urn:g> { <urn:trustgraph:y> <urn:p> "in its own graph" . }\n')
    store = tmp_path / "store"
    assert cli(capsysbinary, "import", str(trig), "--store", str(store)).code == 0
    graphs = {str(q[3]): str(q[2]) for q in load_dataset(str(store)).quads()}
    assert graphs == {"urn:graph:retrieval": "in the default graph", "urn:g": "in its own graph"}


def test_otlp_json_lines_are_mapped_together_as_serve_maps_them(tmp_path: Path, capsysbinary: Any) -> None:
    """Our helpers' sessions and a framework trace whose spans are split over two lines (two requests
    of the Collector's file exporter): the same graph as the spans mapped at once."""
    ours, theirs = agent_spans(2), _genai()
    lines = [_otlp_json_line(ours + theirs[:1]), _otlp_json_line(theirs[1:])]
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(lines) + "\n")
    store = tmp_path / "store"
    r = cli(capsysbinary, "import", str(path), "--store", str(store))
    assert r.code == 0 and f"from {len(ours) + len(theirs)} spans" in r.err, r.err
    assert_isomorphic(spans_to_dataset(ours + theirs), load_dataset(str(store)))


def test_a_file_that_cannot_be_read_is_one_line_and_the_others_are_imported(
        tmp_path: Path, capsysbinary: Any) -> None:
    good = tmp_path / "good.nq"
    good.write_bytes(nquads(TraceMapper("seed").map([from_sdk(s) for s in agent_spans(1)]).add))
    bad = tmp_path / "bad.nq"
    bad.write_text('<urn:trustgraph:z> <urn:p> "fine" <urn:graph:retrieval> .\nnot a quad\n')
    store = tmp_path / "store"
    r = cli(capsysbinary, "import", str(bad), str(good), str(tmp_path / "missing.nq"), "--store", str(store))
    assert r.code == 1
    errors = [line for line in r.err.splitlines() if line.startswith("otel-prov import: ")]
    assert len(errors) == 2 and "bad.nq: not imported:" in errors[0] and "missing.nq" in errors[1]
    assert f"imported {good}" in r.err
    assert "fine" not in {str(q[2]) for q in load_dataset(str(store)).quads()}  # none of the bad file


@pytest.mark.parametrize("text", ['{"resourceSpans": 7}', '{"resourceSpans": [{"scopeSpans": [{"spans": '
                                  '[{"traceId": "zz"}]}]}]}'])
def test_a_line_that_is_not_otlp_json_names_its_line(tmp_path: Path, capsysbinary: Any, text: str) -> None:
    path = tmp_path / "spans.json"
    path.write_text(text + "\n")
    r = cli(capsysbinary, "import", str(path), "--store", str(tmp_path / "store"))
    assert r.code == 1 and "spans.json: not imported: line 1: undecodable OTLP/JSON" in r.err, r.err


# -- Jaeger's JSON ----------------------------------------------------------------------------------


def test_jaeger_json_from_a_real_jaeger_is_mapped_as_the_spans_it_holds(tmp_path: Path,
                                                                       capsysbinary: Any) -> None:
    """Spans sent to a real Jaeger (OTLP/gRPC), read back from its API as its UI downloads them,
    imported: the same graph as the spans mapped directly, whatever was lost on the way (Jaeger
    keeps kinds, statuses and scopes as tags: they are read back)."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    from tests.support.procs import start_jaeger, wait_until

    spans = agent_spans(3) + _genai()
    jaeger = start_jaeger(tmp_path)
    try:
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{jaeger.otlp_grpc}", insecure=True)
        assert exporter.export(spans).name == "SUCCESS"
        exporter.shutdown()
        trace_ids = sorted({f"{s.context.trace_id:032x}" for s in spans})  # type: ignore[union-attr]
        traces = wait_until(lambda: [t for t in map(jaeger.trace, trace_ids) if t is not None]
                            if all(jaeger.trace(t) for t in trace_ids) else None, 30, "the traces in Jaeger")
    finally:
        jaeger.terminate()
    assert sum(len(t["spans"]) for t in traces) == len(spans)
    download = tmp_path / "jaeger-traces.json"
    download.write_text(json.dumps({"data": traces}))
    store = tmp_path / "store"
    r = cli(capsysbinary, "import", str(download), "--store", str(store))
    assert r.code == 0 and f"from {len(spans)} spans" in r.err, r.err
    want, got = _ends_apart(spans_to_dataset(spans)), _ends_apart(load_dataset(str(store)))
    assert_isomorphic(want[0], got[0])
    assert want[1].keys() == got[1].keys()  # Jaeger keeps a start and a duration in microseconds:
    assert all(0 <= (want[1][k] - got[1][k]).total_seconds() <= 1e-6 for k in want[1])  # an end 1 µs early
    again = cli(capsysbinary, "import", str(download), "--store", str(store), "--format", "jaeger-json")
    assert again.code == 0
    assert _ends_apart(load_dataset(str(store)))[1] == got[1]  # importing twice: the same
    assert_isomorphic(got[0], _ends_apart(load_dataset(str(store)))[0])


def _ends_apart(dataset: Any) -> tuple[Any, dict[str, Any]]:
    """The dataset without its end times, and the end times by node."""
    import rdflib

    end = rdflib.URIRef("https://w3id.org/otel-prov/ns#endTime")
    ends = {str(s): o.toPython() for s, p, o, _ in dataset.quads((None, end, None, None))}
    rest = rdflib.Dataset()
    for s, p, o, g in dataset.quads((None, None, None, None)):
        if p != end:
            rest.add((s, p, o, g))
    return rest, ends


@pytest.mark.parametrize(("text", "says"), [
    ('{"data": [{"spans": 7}]}', "trace 1: no list of spans"),
    ('{"data": [{"spans": [{"spanID": "ab"}]}]}', "span 'ab' is not Jaeger's JSON"),
    ('{"data": [{"spans": [{"traceID": "zz", "spanID": "ab", "startTime": 1}]}]}', "is not Jaeger's JSON"),
])
def test_what_is_not_jaeger_json_is_one_line_and_nothing_written(tmp_path: Path, capsysbinary: Any,
                                                                 text: str, says: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    store = tmp_path / "store"
    r = cli(capsysbinary, "import", str(bad), "--store", str(store))
    assert r.code == 1 and says in r.err and len(r.err.strip().splitlines()) == 1, r.err
    assert not store.exists()
    forced = tmp_path / "otlp.json"
    forced.write_text(_otlp_json_line(agent_spans(1)))
    r = cli(capsysbinary, "import", str(forced), "--store", str(store), "--format", "jaeger-json")
    assert r.code == 1 and "not Jaeger's JSON" in r.err


def test_progress_on_a_terminal_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from otel_prov.cli import importing
    from otel_prov.cli.app import main

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    rescue = tmp_path / "otel-prov-rescue-1-2.nq"
    rescue.write_text("".join(f'<urn:x:{i}> <urn:p> "{i}" <urn:graph:retrieval> .\n' for i in range(25_000)))
    monkeypatch.setattr(importing, "PART_QUADS", 5_000)
    for stream, shown in ((Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        assert main(["import", str(rescue), "--store", str(tmp_path / "store")]) == 0
        said = stream.getvalue()
        assert (f"\rimporting {rescue}: 5000/25000 quads (20%)" in said) is shown, said
        assert (f"\r{rescue}: written 25000 quads." in said) is shown
        assert said.rstrip().endswith(f"imported {rescue}: 25000 quads")
    assert _quads(tmp_path / "store") == 25_000


def test_what_a_real_collectors_file_exporter_wrote_is_imported(tmp_path: Path, capsysbinary: Any) -> None:
    """Spans sent to a real Collector (OTLP/gRPC, in several requests) whose file exporter writes
    OTLP/JSON lines: imported, the same graph as the spans mapped directly; importing twice changes
    nothing."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    from tests.support.procs import free_port, port_open, require_binary, start, wait_until

    spans = agent_spans(12) + _genai()
    out = tmp_path / "collector-traces.jsonl"
    port = free_port()
    config = tmp_path / "otelcol-file.yaml"
    config.write_text(f"""
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{port}
exporters:
  file:
    path: {out}
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
""")
    collector = start("collector", [str(require_binary("otelcol-prov")), "--config", str(config)],
                      tmp_path / "collector.log")
    try:
        wait_until(lambda: port_open(port), 60, "the Collector's OTLP receiver", proc=collector)
        exporter = OTLPSpanExporter(endpoint=f"127.0.0.1:{port}", insecure=True)
        for start_at in range(0, len(spans), 9):
            assert exporter.export(spans[start_at:start_at + 9]).name == "SUCCESS"
        exporter.shutdown()

        def written() -> int:  # the spans of the lines written whole so far
            text = out.read_text() if out.exists() else ""
            return sum(len(ss.get("spans", [])) for line in text[:text.rfind("\n") + 1].splitlines()
                       if line.strip() for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"])

        wait_until(lambda: written() == len(spans), 30, "the file exporter to write every span",
                   proc=collector)
    finally:
        collector.terminate()
    assert len(out.read_text().splitlines()) > 1  # one request a line
    store = tmp_path / "store"
    r = cli(capsysbinary, "import", str(out), "--store", str(store))
    assert r.code == 0 and f"from {len(spans)} spans" in r.err, r.err
    assert_isomorphic(spans_to_dataset(spans), load_dataset(str(store)))
    before = _quads(store)
    assert cli(capsysbinary, "import", str(out), "--store", str(store)).code == 0
    assert _quads(store) == before
