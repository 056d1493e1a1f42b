#!/usr/bin/env python3
"""A ReAct agent (think, act, observe) with a calculator, a lookup in a small RDF knowledge graph
and a document search, recorded with otel-prov.

The code is in the installed package, ``otel_prov/examples/`` (so that ``otel-prov demo`` can run
it); this script is its command line.  See examples/README.md.

    python examples/react_agent.py                     # records in the default store
    OTEL_TRACES_EXPORTER=otlp,prov opentelemetry-instrument python examples/react_agent.py
"""

from otel_prov.examples.scripts import agent_main

if __name__ == "__main__":
    raise SystemExit(agent_main())
