"""Spans in, quads out.

- :mod:`.spans`: one span shape, read from an SDK span or an OTLP protobuf span (:mod:`.otlp`: a
  request read shallow, so values nested to any depth decode);
- :mod:`.limits`: how large and how deep a span's values may be (what the store can hold);
- :mod:`.flows`: our own attributes' flows (agent, GraphRAG, DocRAG), one handler per kind of span;
- :mod:`.dialects`: how each framework instrumentation writes an agent run (one module each);
- :mod:`.tree` and :mod:`.agents`: framework traces' span trees, mapped to the agent flow;
- :mod:`.policy` and :mod:`.redaction`: what of the content reaches the store (each field kept,
  truncated, hashed or omitted; secrets and personal data replaced by typed markers);
- :mod:`.mapper`: :class:`~.mapper.TraceMapper`, the incremental per-trace mapper (the only state).

Everything but the mapper is pure; the mapper does no I/O.
"""
