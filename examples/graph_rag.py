#!/usr/bin/env python3
"""GraphRAG over a small RDF knowledge graph (exploration, focus, synthesis), recorded with otel-prov.

The code is in the installed package, ``otel_prov/examples/`` (so that ``otel-prov demo`` can run
it); this script is its command line.  See examples/README.md.

    python examples/graph_rag.py                     # records in the default store
    OTEL_TRACES_EXPORTER=otlp,prov opentelemetry-instrument python examples/graph_rag.py
"""

from otel_prov.examples.scripts import graph_rag_main

if __name__ == "__main__":
    raise SystemExit(graph_rag_main())
