"""Command-line entry points of the examples (the scripts in the repository's ``examples/``).

Where the spans go:

- under ``opentelemetry-instrument`` (or any program that set a global SDK ``TracerProvider``),
  to that provider's exporters, e.g. ``OTEL_TRACES_EXPORTER=otlp,prov`` for Jaeger and the store;
- otherwise, or with ``--store``, to a ``ProvSpanExporter`` of their own writing to ``--store``
  (default ``OTEL_PROV_STORE``, else the default store), so ``otel-prov list`` shows them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ..errors import ProvError
from ..ingest.exporter import ProvSpanExporter


@contextmanager
def example_provider(store: str | None, service: str) -> Iterator[TracerProvider | None]:
    """The provider to pass to the flows: None (the global one) when a global SDK provider is set
    and no ``store`` is asked for, else an own provider with a :class:`ProvSpanExporter`."""
    global_provider = trace.get_tracer_provider()
    if store is None and isinstance(global_provider, TracerProvider):
        print("spans go to the global tracer provider (opentelemetry-instrument)", file=sys.stderr)
        try:
            yield None
        finally:
            global_provider.force_flush()
        return
    exporter = ProvSpanExporter(store=store)
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        yield provider
    finally:
        provider.shutdown()
    if str(exporter.store_spec) == "memory:":
        print("recorded in memory: (gone with this process; give --store PATH to keep it)",
              file=sys.stderr)
        return
    hint = "otel-prov list" + (f" --store {exporter.store_spec}" if store else "")
    print(f"recorded in {exporter.store_spec} (see: {hint})", file=sys.stderr)


def _parser(description: str, default_question: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("question", nargs="?", default=default_question,
                        help=f"the question (default: {default_question!r})")
    parser.add_argument("--store", help="write to this store ('oxigraph:PATH', a path, 'memory:') with an "
                        "own exporter, even under opentelemetry-instrument")
    parser.add_argument("--collection", default="default",
                        help="collection of the session (default: default)")
    return parser


def _run(argv: Sequence[str] | None, description: str, default_question: str, service: str,
         flow: Callable[[argparse.Namespace, TracerProvider | None], Any]) -> int:
    parser = _parser(description, default_question)
    args = parser.parse_args(argv)
    if not args.question.strip():  # nothing to explain: not recorded
        print(f"{parser.prog}: error: the question is empty: ask one, or leave it out for the default "
              f"({default_question!r})", file=sys.stderr)
        return 2
    try:
        with example_provider(args.store, service) as provider:
            result = flow(args, provider)
    except ProvError as exc:
        print(f"{service}: {exc}", file=sys.stderr)
        return 1
    if result.answer is None:
        print("no answer (the trace is recorded as unfinished)")
    else:
        print(f"answer: {result.answer}")
    kept = args.store and str(args.store).strip() not in ("memory:", "memory")
    print(f"explain: otel-prov show {result.explain_id}" + (f" --store {args.store}" if kept else ""))
    if result.trace_id:
        print(f"trace id: {result.trace_id}")
    return 0


def agent_main(argv: Sequence[str] | None = None) -> int:
    from .react_agent import AGENT_QUESTION, PolicyError, default_policy, run_agent

    def flow(args: argparse.Namespace, provider: TracerProvider | None) -> Any:
        policy = default_policy()
        print(f"policy: {policy.name}")

        def show(n: int, decision: Any, observation: str | None) -> None:
            print(f"[{n}] thought: {decision.thought}")
            if observation is not None:
                print(f"    action: {decision.tool} {decision.arguments}\n    observation: {observation}")

        try:
            return run_agent(args.question, policy=policy, tracer_provider=provider,
                             collection=args.collection, on_step=show)
        except PolicyError as exc:
            print(f"react_agent: the policy failed: {exc}", file=sys.stderr)
            raise SystemExit(1) from exc

    return _run(argv, "A ReAct agent with a calculator, a knowledge-graph lookup and a document search, "
                "recorded with otel-prov.  The policy is deterministic and offline unless "
                "OTEL_PROV_EXAMPLE_MODEL names a model (OPENAI_BASE_URL, OPENAI_API_KEY).",
                AGENT_QUESTION, "react-agent-example", flow)


def graph_rag_main(argv: Sequence[str] | None = None) -> int:
    from .rag import GRAPH_RAG_QUESTION, graph_rag

    def flow(args: argparse.Namespace, provider: TracerProvider | None) -> Any:
        result = graph_rag(args.question, tracer_provider=provider, collection=args.collection)
        print(f"explored {len(result.retrieved)} edges, selected {len(result.selected)}")
        return result

    return _run(argv, "GraphRAG over the bundled knowledge graph, recorded with otel-prov.",
                GRAPH_RAG_QUESTION, "graph-rag-example", flow)


def doc_rag_main(argv: Sequence[str] | None = None) -> int:
    from .rag import DOC_RAG_QUESTION, doc_rag

    def flow(args: argparse.Namespace, provider: TracerProvider | None) -> Any:
        result = doc_rag(args.question, tracer_provider=provider, collection=args.collection)
        print("retrieved: " + ", ".join(f"{hit['id']} ({hit['score']})" for hit in result.retrieved))
        return result

    return _run(argv, "Document RAG (BM25) over the bundled documents, recorded with otel-prov.",
                DOC_RAG_QUESTION, "doc-rag-example", flow)
