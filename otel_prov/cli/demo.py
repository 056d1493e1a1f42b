"""``otel-prov demo``: run the example flows with the exporter writing to a store, then print
``list`` and ``show`` of what they wrote; with ``--otlp`` the same spans also go to an OTLP endpoint
(Jaeger), and with ``--ui`` the web view of the store is served afterwards."""

from __future__ import annotations

import argparse
import sys
from typing import cast

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter

from .. import settings
from ..examples.rag import doc_rag, graph_rag
from ..examples.react_agent import default_policy, run_agent
from ..ingest.exporter import ProvSpanExporter
from ..read.reader import TraceReader
from ..render.text import session_table, trace_text
from ..stores import ReadStore, StoreSpec, open_for_reading
from . import ui
from .common import CliError, option, write


def _say(text: str = "") -> None:
    print(text, file=sys.stderr, flush=True)


def _otlp(endpoint: str) -> SpanExporter:
    """The OTLP/gRPC exporter (``endpoint`` empty: ``OTEL_EXPORTER_OTLP_ENDPOINT`` or its default)."""
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise CliError("--otlp needs the package opentelemetry-exporter-otlp-proto-grpc") from exc
    return OTLPSpanExporter(endpoint=endpoint or None, timeout=10)


def run_demo(args: argparse.Namespace) -> int:
    """Progress goes to stderr, the ``list`` and ``show`` output to stdout."""
    collection = option(args, settings.COLLECTION) or "default"
    jaeger = option(args, settings.JAEGER_URL)
    view = ui.config_from(args) if args.ui else None  # bad view options fail before anything runs
    exporter = ProvSpanExporter(store=option(args, settings.STORE), profile=option(args, settings.PROFILE))
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-prov-demo"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if args.otlp is not None:
        provider.add_span_processor(BatchSpanProcessor(_otlp(args.otlp)))
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
        # Every command printed works as printed: it names the store the demo was given.
        at = f" --store {args.store}" if args.store and not spec.in_memory else ""
        out = [f"$ otel-prov list{at}", session_table(rows).rstrip("\n")]
        if len(everything) > len(rows):
            out.append(f"({len(everything) - len(rows)} earlier sessions in this store: otel-prov list{at})")
        if not args.quiet:
            for iri in ids:
                trace, _ = reader.trace(iri)
                out += ["", f"$ otel-prov show {iri}{at}", trace_text(trace, jaeger).rstrip("\n")]
        if view is None and not spec.in_memory:
            out += ["", f"Next: otel-prov show IRI{at} --format svg --output trace.svg   (a picture)",
                    f"      otel-prov query{at} 'SELECT ?q ?text WHERE {{ ?q tg:query ?text }}'",
                    f"      otel-prov ui{at}   (the web view)"]
        write("\n".join(out) + "\n", None)
    finally:
        for opened_store in opened:
            opened_store.close()
        provider.shutdown()  # the store is released (and every span sent) before the view reads it
    stats = exporter.stats()
    if stats["store_failures"]:
        _say(f"otel-prov demo: {stats['store_failures']} store writes failed")
        return 1
    if view is not None:
        return ui.serve_view(view)
    return 0
