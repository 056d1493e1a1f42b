"""Real framework instrumentations, run offline: the agent frameworks (OpenAI Agents SDK, LangGraph,
smolagents, LangChain retrievers, the openai client) against a scripted model, instrumented by the
real OpenTelemetry / OpenInference / OpenLLMetry packages, their spans captured with the real SDK.

- :mod:`.story`: the one run every scenario plays (question, thoughts, tool calls, answer);
- :mod:`.llm_server`: a scripted OpenAI-compatible HTTP server on 127.0.0.1;
- :mod:`.lc_fake`: a scripted LangChain chat model;
- :mod:`.capture`: a network guard and the span dump (OTLP protobuf, as a Collector would send it);
- :mod:`.scenarios`: one module per framework, each run in its own process (frameworks patch globally,
  and two of the instrumentations install the same import package);
- :mod:`.runner`: the table of scenarios and how to run one.

The packages come from the ``interop`` extra (``.ci/setup --test``).
"""
