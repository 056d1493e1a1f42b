"""``otel-prov import FILE...``: quads and spans from files into the store.

- N-Quads and TriG (what ``serve`` and the exporter save when a store could not take them:
  ``otel-prov-rescue-*.nq``, ``otel-prov-rejected-*.nq``): parsed strictly, each quad stored as it
  is; a triple of the default graph goes to the explainability graph ``urn:graph:retrieval``.
- OTLP/JSON, one ``ExportTraceServiceRequest`` a line (what the Collector's file exporter writes) or
  one per file: the spans of all its lines mapped together, as ``serve`` maps them.
- Jaeger's JSON (``{"data": [trace, ...]}``: what its UI downloads and its ``/api/traces`` answers),
  its spans made into OTLP again (:func:`jaeger_to_otlp`), then mapped the same way.

Importing is idempotent: a store is a set of quads, and the mapping gives the same quads for the same
spans.  Each file is read whole, then written in parts; a file that cannot be read is one line and
the next file is read (exit status 1 at the end); nothing of a file is written unless all of it
parses."""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from ..errors import StoreError
from ..mapping.mapper import TraceMapper
from ..mapping.policy import ContentPolicy
from ..mapping.spans import records_from_otlp
from ..model.quads import nquads
from ..model.vocab import GRAPH_RETRIEVAL
from ..serve.decode import BadRequest, decode_json
from ..stores import default_dir, open_blobs, open_for_writing
from .common import EXIT_FAILED, EXIT_OK, Progress, option, store_spec

FORMATS = {"nquads": pyoxigraph.RdfFormat.N_QUADS, "trig": pyoxigraph.RdfFormat.TRIG}
SUFFIXES = {".nq": "nquads", ".nquads": "nquads", ".trig": "trig", ".json": "otlp-json",
            ".jsonl": "otlp-json", ".ndjson": "otlp-json"}
SPAN_FORMATS = ("otlp-json", "jaeger-json")
"""Formats of spans (the others are RDF); a ``.json`` file in Jaeger's shape is read as Jaeger's."""
PART_QUADS = 50_000
"""Quads written at once."""


def file_format(path: Path, given: str | None, head: bytes) -> str:
    """``given``, else the format its suffix names, else OTLP/JSON when it starts with ``{``, else
    N-Quads."""
    if given:
        return given
    by_suffix = SUFFIXES.get(path.suffix.lower())
    if by_suffix:
        return by_suffix
    return "otlp-json" if head.lstrip()[:1] == b"{" else "nquads"


def quads_of_rdf(data: bytes, fmt: str) -> list[pyoxigraph.Quad]:
    """Every quad of an N-Quads or TriG text (``SyntaxError`` naming the line); the default graph's
    triples put in the explainability graph."""
    graph = pyoxigraph.NamedNode(GRAPH_RETRIEVAL)
    out = []
    for quad in pyoxigraph.parse(input=data, format=FORMATS[fmt]):
        if isinstance(quad.graph_name, pyoxigraph.DefaultGraph):
            quad = pyoxigraph.Quad(quad.subject, quad.predicate, quad.object, graph)
        out.append(quad)
    return out


def quads_of_spans(data: bytes, profile: str, fmt: str = "otlp-json",
                   policy: ContentPolicy | None = None, blob_threshold: int = 0,
                   blobs: dict[str, bytes] | None = None) -> tuple[bytes, int, int, list[str]]:
    """The N-Quads of the spans of OTLP/JSON ``data`` (one request a line, or one request) or of
    Jaeger's JSON (``fmt`` ``jaeger-json``, or a document in its shape), mapped together under the
    content ``policy``: (N-Quads, quads, spans, messages of the spans rejected).  ``ValueError``
    naming the line of a request that is not OTLP/JSON, or what is not Jaeger's JSON.  Values over
    ``blob_threshold`` bytes are stored by reference, their bytes added to ``blobs``."""
    records, rejected = [], []
    jaeger = jaeger_document(data) if fmt == "jaeger-json" or _JAEGER_HEAD.match(data[:256]) else None
    if fmt == "jaeger-json" and jaeger is None:
        raise ValueError("not Jaeger's JSON (an object whose \"data\" is a list of traces)")
    if jaeger is not None:
        requests = [jaeger_to_otlp(jaeger)]
    else:
        lines = [data] if data.lstrip()[:1] == b"{" and b"\n{" not in data.strip() else data.splitlines()
        requests = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                requests.append(decode_json(line))
            except BadRequest as exc:
                raise ValueError(f"line {number}: {exc.kind}: {exc.detail}") from None
    for request in requests:
        found, refused = records_from_otlp(request.resource_spans)
        records.extend(found)
        rejected.extend(refused)
    update = TraceMapper(profile, policy=policy, blob_threshold=blob_threshold).map(records)
    if blobs is not None:
        blobs.update(update.blobs)
    rejected.extend(error for _, error in update.failed)
    return nquads(update.add), len(update.add), len(records), rejected


# -- Jaeger's JSON ---------------------------------------------------------------------------------

_KINDS = {"internal": Span.SPAN_KIND_INTERNAL, "server": Span.SPAN_KIND_SERVER,
          "client": Span.SPAN_KIND_CLIENT, "producer": Span.SPAN_KIND_PRODUCER,
          "consumer": Span.SPAN_KIND_CONSUMER}
_SPECIAL_TAGS = {"span.kind", "otel.status_code", "otel.status_description", "otel.scope.name",
                 "otel.scope.version", "otel.library.name", "otel.library.version", "error",
                 "internal.span.format"}
"""Tags Jaeger made of what OTLP holds in fields of its own (kind, status, scope), read back there."""


_JAEGER_HEAD = re.compile(rb'\s*\{\s*"data"\s*:')
"""How Jaeger's JSON starts (its API and its UI's download): ``{"data": [...``; OTLP/JSON has no
``data``."""


def jaeger_document(data: bytes) -> dict[str, Any] | None:
    """``data`` as Jaeger's JSON, or None when it is not in its shape."""
    try:
        document = json.loads(data)
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        return None
    return document


def jaeger_to_otlp(document: dict[str, Any]) -> ExportTraceServiceRequest:
    """Jaeger's traces as the OTLP request they came from, as near as Jaeger keeps it: a resource per
    process (its service name and tags), a scope per ``otel.scope.name``, each span's ids, name,
    times (microseconds), parent (its first ``CHILD_OF`` reference; the others, and ``FOLLOWS_FROM``,
    as links), kind, status, tags as attributes and logs as events.  Jaeger wrote an attribute that
    was a list or a map as its JSON text: it is read as that text.  ``ValueError`` on what is not."""
    request = ExportTraceServiceRequest()
    for number, trace in enumerate(document["data"], 1):
        if not isinstance(trace, dict) or not isinstance(trace.get("spans"), list):
            raise ValueError(f"trace {number}: no list of spans")
        processes = trace.get("processes") or {}
        scopes: dict[tuple[str, str, str], Any] = {}
        for span in trace["spans"]:
            try:
                tags = {t["key"]: _tag_value(t) for t in span.get("tags") or []}
                scope_key = (str(span.get("processID", "")), str(tags.get("otel.scope.name", tags.get(
                    "otel.library.name", ""))), str(tags.get("otel.scope.version", tags.get(
                        "otel.library.version", ""))))
                if scope_key not in scopes:
                    resource = request.resource_spans.add()
                    process = processes.get(scope_key[0]) or {}
                    _attributes(resource.resource.attributes,
                                {"service.name": process.get("serviceName", ""),
                                 **{t["key"]: _tag_value(t) for t in process.get("tags") or []}})
                    scopes[scope_key] = resource.scope_spans.add()
                    scopes[scope_key].scope.name, scopes[scope_key].scope.version = scope_key[1:]
                _span(scopes[scope_key].spans.add(), span, tags)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise ValueError(f"trace {number}: span {str(span.get('spanID', '?'))[:40]!r} is not "
                                 f"Jaeger's JSON ({type(exc).__name__}: {exc})") from None
    return request


def _span(out: Span, span: dict[str, Any], tags: dict[str, Any]) -> None:
    out.trace_id = bytes.fromhex(str(span["traceID"]).zfill(32))
    out.span_id = bytes.fromhex(str(span["spanID"]).zfill(16))
    out.name = str(span.get("operationName", ""))
    start = int(span["startTime"]) * 1000
    out.start_time_unix_nano, out.end_time_unix_nano = start, start + int(span.get("duration", 0)) * 1000
    parent_found = False
    for ref in span.get("references") or []:
        trace_id = bytes.fromhex(str(ref["traceID"]).zfill(32))
        span_id = bytes.fromhex(str(ref["spanID"]).zfill(16))
        if ref.get("refType") == "CHILD_OF" and not parent_found and trace_id == out.trace_id:
            out.parent_span_id, parent_found = span_id, True
        else:
            link = out.links.add()
            link.trace_id, link.span_id = trace_id, span_id
    out.kind = _KINDS.get(str(tags.get("span.kind", "internal")).lower(), Span.SPAN_KIND_INTERNAL)
    code = str(tags.get("otel.status_code", "")).upper()
    if code == "ERROR" or (not code and tags.get("error") is True):
        out.status.code = Status.STATUS_CODE_ERROR
        out.status.message = str(tags.get("otel.status_description", ""))
    elif code == "OK":
        out.status.code = Status.STATUS_CODE_OK
    _attributes(out.attributes, {k: v for k, v in tags.items() if k not in _SPECIAL_TAGS})
    for log in span.get("logs") or []:
        fields = {f["key"]: _tag_value(f) for f in log.get("fields") or []}
        event = out.events.add()
        event.time_unix_nano = int(log.get("timestamp", 0)) * 1000
        event.name = str(fields.pop("event", ""))
        _attributes(event.attributes, fields)


def _tag_value(tag: dict[str, Any]) -> Any:
    """A tag's value as Python: Jaeger types ``string``, ``bool``, ``int64``, ``float64``, ``binary``."""
    kind, value = str(tag.get("type", "string")).lower(), tag.get("value", "")
    if kind == "bool":
        return value if isinstance(value, bool) else str(value).lower() == "true"
    if kind == "int64":
        return int(value)
    if kind == "float64":
        return float(value)
    if kind == "binary":
        return base64.b64decode(str(value))
    return "" if value is None else str(value)


def _attributes(out: Any, values: dict[str, Any]) -> None:
    for key, value in values.items():
        attribute = out.add()
        attribute.key = key
        if isinstance(value, bool):
            attribute.value.bool_value = value
        elif isinstance(value, int):
            attribute.value.int_value = value
        elif isinstance(value, float):
            attribute.value.double_value = value
        elif isinstance(value, bytes):
            attribute.value.bytes_value = value
        else:
            attribute.value.string_value = value


def _parts(quads: list[pyoxigraph.Quad]) -> Iterator[tuple[bytes, int]]:
    for start in range(0, len(quads), PART_QUADS):
        part = quads[start:start + PART_QUADS]
        yield pyoxigraph.serialize(part, format=pyoxigraph.RdfFormat.N_QUADS) or b"", len(part)


def cmd_import(args: argparse.Namespace) -> int:
    from .. import settings

    spec = store_spec(args)
    profile = option(args, settings.PROFILE)
    policy = settings.policy(args.content_policy, args.redact, via="flag")
    where = default_dir(spec, settings.BLOB_DIR.get(args.blob_dir, via="flag"))
    threshold = settings.BLOB_THRESHOLD.get(args.blob_threshold, via="flag") if where is not None else 0
    blobs: dict[str, bytes] = {}
    loaded: list[tuple[Path, list[tuple[bytes, int]], str]] = []
    failed = False
    for name in args.files:
        path = Path(name)
        try:
            data = path.read_bytes()
            fmt = file_format(path, args.format, data[:64])
            if fmt in SPAN_FORMATS:
                text, count, spans, rejected = quads_of_spans(data, profile, fmt, policy, threshold, blobs)
                summary = f"{count} quads from {spans} spans"
                if rejected:
                    summary += f" ({len(rejected)} spans rejected: {rejected[0]})"
                loaded.append((path, [(text, count)] if count else [], summary))
            else:
                quads = quads_of_rdf(data, fmt)
                loaded.append((path, list(_parts(quads)), f"{len(quads)} quads"))
        except (OSError, SyntaxError, ValueError) as exc:
            print(f"otel-prov import: {name}: not imported: {exc}", file=sys.stderr)
            failed = True
    if not loaded:
        return EXIT_FAILED
    if blobs and where is not None:  # before any quad that names them
        try:
            open_blobs(where).put_all(blobs)
        except StoreError as exc:
            print(f"otel-prov import: nothing imported: {exc}", file=sys.stderr)
            return EXIT_FAILED
    store = open_for_writing(spec)
    try:
        for path, parts, summary in loaded:
            progress = Progress(sum(count for _, count in parts), doing=f"importing {path}",
                                done=f"{path}: written")
            written = 0
            for text, count in parts:
                store.add(text, count)
                written += count
                progress.update(written)
            progress.finish(written)
            print(f"imported {path}: {summary}", file=sys.stderr)
    finally:
        try:
            store.close()
        except StoreError as exc:
            print(f"otel-prov import: the store did not close cleanly: {exc}", file=sys.stderr)
            failed = True
    return EXIT_FAILED if failed else EXIT_OK
