"""``otel-prov serve``: an OTLP trace receiver that writes the explainability graph.

- :mod:`.receiver`: the transport-independent core (admission, ingest through the pipeline shared
  with the SDK exporter, acknowledgement after commit, drain);
- :mod:`.grpc_transport`, :mod:`.http_transport`: OTLP/gRPC and OTLP/HTTP;
- :mod:`.rpc_status`: ``google.rpc.Status`` / ``RetryInfo`` for the error answers;
- :mod:`.server`: both transports around one receiver.  The command is :mod:`otel_prov.cli.serve`.
"""
