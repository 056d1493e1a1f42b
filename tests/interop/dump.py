"""Prints what a scenario recorded, for reading: its span tree with every attribute and event, and
its OTLP log records (``FILE.logs``, when the scenario wrote any) under the span they name.

    python -m tests.interop.dump FILE.otlp [--width N]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_prov.mapping.spans import any_value


def _value(v: Any, width: int) -> str:
    text = v if isinstance(v, str) else repr(v)
    return text if len(text) <= width else text[:width] + f"... ({len(text)} chars)"


def dump(path: Path, width: int = 1500) -> str:
    request = ExportTraceServiceRequest.FromString(path.read_bytes())
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    scopes = {s.span_id: ss.scope.name for rs in request.resource_spans for ss in rs.scope_spans
              for s in ss.spans}
    logs: dict[bytes, list[Any]] = {}
    logs_path = Path(str(path) + ".logs")
    if logs_path.exists():
        for rl in ExportLogsServiceRequest.FromString(logs_path.read_bytes()).resource_logs:
            for sl in rl.scope_logs:
                for rec in sl.log_records:
                    logs.setdefault(bytes(rec.span_id), []).append(rec)
    ids = {s.span_id for s in spans}
    children: dict[bytes, list[Any]] = {}
    for s in spans:
        children.setdefault(s.parent_span_id if s.parent_span_id in ids else b"", []).append(s)
    lines: list[str] = []

    def show(span: Any, depth: int) -> None:
        pad = "  " * depth
        took = (span.end_time_unix_nano - span.start_time_unix_nano) / 1e6
        status = f" status={span.status.code}:{span.status.message}" if span.status.code else ""
        lines.append(f"{pad}- {span.name!r} kind={span.kind} scope={scopes[span.span_id]} "
                     f"id={span.span_id.hex()} trace={span.trace_id.hex()[:8]} {took:.1f}ms{status}")
        for kv in span.attributes:
            lines.append(f"{pad}    {kv.key} = {_value(any_value(kv.value), width)}")
        for ev in span.events:
            lines.append(f"{pad}    [event] {ev.name}")
            for kv in ev.attributes:
                lines.append(f"{pad}        {kv.key} = {_value(any_value(kv.value), width)}")
        for rec in logs.pop(bytes(span.span_id), []):
            body = _value(MessageToDict(rec.body), width)
            lines.append(f"{pad}    [log] event_name={rec.event_name!r} body={body}")
            for kv in rec.attributes:
                lines.append(f"{pad}        {kv.key} = {_value(any_value(kv.value), width)}")
        for child in sorted(children.get(span.span_id, []),
                            key=lambda c: (c.start_time_unix_nano, c.span_id)):
            show(child, depth + 1)

    for root in sorted(children.get(b"", []), key=lambda c: (c.start_time_unix_nano, c.span_id)):
        show(root, 0)
    for span_id, recs in logs.items():
        lines.append(f"[logs of no span in the file: span id {span_id.hex() or '(none)'}]")
        for rec in recs:
            body = _value(MessageToDict(rec.body), width)
            lines.append(f"    [log] event_name={rec.event_name!r} body={body}")
            for kv in rec.attributes:
                lines.append(f"        {kv.key} = {_value(any_value(kv.value), width)}")
    return "\n".join(lines)


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    width = int(sys.argv[sys.argv.index("--width") + 1]) if "--width" in sys.argv else 1500
    if "--width" in sys.argv:
        args.remove(str(width))
    for name in args:
        print(dump(Path(name), width))
    return 0


if __name__ == "__main__":
    sys.exit(main())
