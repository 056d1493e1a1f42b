#!/usr/bin/env python3
"""Document RAG over a few text documents ranked with BM25 (exploration, synthesis), recorded with otel-prov.

The code is in the installed package, ``otel_prov/examples/`` (so that ``otel-prov demo`` can run
it); this script is its command line.  See examples/README.md.

    python examples/doc_rag.py                     # records in the default store
    OTEL_TRACES_EXPORTER=otlp,prov opentelemetry-instrument python examples/doc_rag.py
"""

from otel_prov.examples.scripts import doc_rag_main

if __name__ == "__main__":
    raise SystemExit(doc_rag_main())
