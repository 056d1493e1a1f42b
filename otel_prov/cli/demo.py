"""``otel-prov demo``: run the example flows with the exporter writing to a store, then print
``list`` and ``show`` of what they wrote; with ``--otlp`` the same spans also go to an OTLP endpoint
(Jaeger), and with ``--ui`` the web view of the store is served afterwards."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from typing import cast

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from .. import settings
from ..examples.rag import doc_rag, graph_rag
from ..examples.react_agent import default_policy, run_agent
from ..ingest.exporter import ProvSpanExporter
from ..read.model import SessionRow
from ..read.reader import TraceReader
from ..render.text import session_table, trace_text
from ..stores import ReadStore, StoreSpec, open_for_reading
from . import ui
from .common import CliError, option, write


def _say(text: str = "") -> None:
    print(text, file=sys.stderr, flush=True)


OTLP_DEFAULT = "http://localhost:4317"


class _Otlp(SpanExporter):
    """The OTLP/gRPC exporter of ``--otlp`` (``endpoint`` empty: the OpenTelemetry variables, else
    their default), counting the spans it delivered and those it could not, to say where they went."""

    def __init__(self, endpoint: str) -> None:
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise CliError("--otlp needs the package opentelemetry-exporter-otlp-proto-grpc") from exc
        self.endpoint = endpoint or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") \
            or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or OTLP_DEFAULT
        self.inner = OTLPSpanExporter(endpoint=endpoint or None, timeout=10)
        self.sent = self.failed = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result == SpanExportResult.SUCCESS:
            self.sent += len(spans)
        else:
            self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def report(self) -> str:
        where = f"over OTLP/gRPC to {self.endpoint} (service otel-prov-demo)"
        if self.failed:
            return (f"otel-prov demo: {self.failed} of {self.failed + self.sent} spans could not be sent "
                    f"{where}: is Jaeger (or a Collector) listening there?")
        return f"otel-prov demo: {self.sent} spans sent {where}"


def run_demo(args: argparse.Namespace) -> int:
    """Progress goes to stderr, the ``list`` and ``show`` output to stdout."""
    collection = option(args, settings.COLLECTION) or "default"
    jaeger = option(args, settings.JAEGER_URL)
    view: settings.UiSettings | None = None
    view_flags = ("host", "port", "token", "query_timeout", "row_limit", "allowed_hosts")
    if args.ui or any(getattr(args, name, None) is not None for name in view_flags):
        view = ui.config_from(args)  # bad view options fail before anything runs, --ui or not
    view = view if args.ui else None
    if view is not None:
        ui.check_address(view)  # and so does a port in use
    exporter = ProvSpanExporter(store=option(args, settings.STORE), profile=option(args, settings.PROFILE))
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-prov-demo"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otlp = _Otlp(args.otlp) if args.otlp is not None else None
    if otlp is not None:
        provider.add_span_processor(BatchSpanProcessor(otlp))
    policy = default_policy()
    opened: list[ReadStore] = []
    try:
        _say(f"otel-prov demo: writing to {exporter.store_spec} (profile {exporter.profile})")
        _say(f"  1. a ReAct agent with three tools, policy: {policy.name}")
        agent = run_agent(policy=policy, tracer_provider=provider, collection=collection)
        _say("  2. a GraphRAG query over the bundled knowledge graph")
        graph = graph_rag(tracer_provider=provider, collection=collection)
        _say("  3. a document-RAG query over the bundled documents (BM25)")
        docs = doc_rag(tracer_provider=provider, collection=collection)
        _say()
        if not exporter.force_flush():
            _say("otel-prov demo: the store did not confirm every write in time")
            return 1
        spec = cast(StoreSpec, exporter.store_spec)
        if spec.in_memory:  # the exporter's own store reads too
            store = cast(ReadStore, exporter.store)
        else:  # a reader, as `otel-prov list` opens it: it sees the log folded into the index
            store = open_for_reading(spec)
            opened.append(store)
        reader = TraceReader(store)
        ids = [agent.explain_id, graph.explain_id, docs.explain_id]
        everything = reader.sessions()
        rows = [row for row in everything if row.id in ids]
        write("\n".join(_shown(args, spec, reader, ids, rows, len(everything), jaeger)) + "\n", None)
    finally:
        for opened_store in opened:
            opened_store.close()
        provider.shutdown()  # the store is released (and every span sent) before the view reads it
    if otlp is not None:
        _say(otlp.report())
    stats = exporter.stats()
    if stats["store_failures"]:
        _say(f"otel-prov demo: {stats['store_failures']} store writes failed")
        return 1
    if view is not None:
        return ui.serve_view(view)
    return 0


def _shown(args: argparse.Namespace, spec: StoreSpec, reader: TraceReader, ids: list[str],
           rows: list[SessionRow], total: int, jaeger: str | None) -> list[str]:
    """What the demo prints of its sessions.  Every command printed works as printed: it names the
    store the demo was given (and the Jaeger URL); a store in memory has no commands to print."""
    shows = [] if args.quiet else [(iri, trace_text(reader.trace(iri)[0], jaeger).rstrip("\n"))
                                   for iri in ids]
    table = session_table(rows).rstrip("\n")
    if spec.in_memory:
        out = ["The store is in memory (memory:): it ends with the demo, so no command can read it "
               "again; --store PATH keeps the sessions.", "", "Sessions:", table]
        for _, text in shows:
            out += ["", text]
        return out
    at = f" --store {shlex.quote(args.store)}" if args.store else ""
    linked = f" --jaeger-url {shlex.quote(args.jaeger_url)}" if args.jaeger_url else ""
    out = [f"$ otel-prov list{at}", table]
    if total > len(rows):
        earlier = total - len(rows)
        sessions = "session" if earlier == 1 else "sessions"
        out.append(f"({earlier} earlier {sessions} in this store: otel-prov list{at})")
    for iri, text in shows:
        out += ["", f"$ otel-prov show {iri}{at}{linked}", text]
    if not args.ui:
        out += ["", f"Next: otel-prov show IRI{at} --format svg --output trace.svg   (a picture)",
                f"      otel-prov query{at} 'SELECT ?q ?text WHERE {{ ?q tg:query ?text }}'",
                f"      otel-prov ui{at}{linked}   (the web view)"]
    return out
