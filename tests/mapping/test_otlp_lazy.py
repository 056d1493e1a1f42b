"""A request walked on the wire and decoded a slice at a time (:class:`otel_prov.mapping.otlp.LazyRequest`):
the same spans as decoding it whole, in slices; many tiny messages refused or rejected before they are
decoded (decoded whole, a 63 MiB request of empty spans took 5.8 GiB; ``benchmarks/bench_abuse.py
--only tiny`` gives the peak RSS now)."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_prov import agent_session
from otel_prov.mapping import otlp
from otel_prov.mapping.spans import InvalidSpan, from_otlp, otlp_slices


def _spans(service: str, sessions: int) -> list:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for n in range(sessions):
        with agent_session(f"question {n}?", tracer_provider=provider) as session:
            with session.iteration() as step:
                step.action("lookup", {"n": n})
                step.observation(f"found {n}")
            session.conclude(f"answer {n}")
    provider.shutdown()
    return list(memory.get_finished_spans())


def _field(number: int, data: bytes) -> bytes:
    return otlp.wrap(number, data)


def test_a_request_read_a_slice_at_a_time_gives_the_spans_of_the_whole() -> None:
    """Two services (two resource spans), 1,800 spans: the same spans, the same service names, as the
    request decoded whole; slices of at most 1,000 spans."""
    spans = _spans("alpha", 400) + _spans("beta", 200)
    body = encode_spans(spans).SerializeToString()
    whole = otlp.ExportTraceServiceRequest.FromString(body)
    lazy = otlp.LazyRequest(body)
    assert len(lazy.resource_spans) == len(whole.resource_spans) == 2
    parts = list(otlp_slices(lazy.resource_spans, 1 << 30))
    expected = list(otlp_slices(whole.resource_spans, 1 << 30))
    assert [r for p in parts for r in p.records] == [r for p in expected for r in p.records]
    assert {r.service for p in parts for r in p.records} == {"alpha", "beta"}
    sizes = [len(list(s.spans)) for rs in lazy.resource_spans for s in rs.scope_spans]
    assert max(sizes) <= otlp.SLICE_SPANS and sum(sizes) == len(spans) == 1800


def test_text_that_is_not_utf8_is_repaired_in_its_slice_and_its_resource() -> None:
    spans = _spans("gamma", 3)
    request = otlp.ExportTraceServiceRequest.FromString(encode_spans(spans).SerializeToString())
    request.resource_spans[0].scope_spans[0].spans[0].name = "caf\u00e9"
    service = next(kv for kv in request.resource_spans[0].resource.attributes if kv.key == "service.name")
    service.value.string_value = "gamm\u00e9"
    body = request.SerializeToString().replace("\u00e9".encode(), b"\xe9!")  # same length
    repaired: list[bool] = []
    lazy = otlp.LazyRequest(body, lambda: repaired.append(True))
    records = [r for p in otlp_slices(lazy.resource_spans, 1 << 30) for r in p.records]
    assert len(records) == len(spans) and len(repaired) == 2  # the resource, then the slice
    assert "caf\ufffd!" in {r.name for r in records}
    assert {r.service for r in records} == {"gamm\ufffd!"}


def test_a_request_of_more_spans_than_the_bound_is_refused_before_it_is_decoded() -> None:
    body = _field(1, _field(2, b"\x12\x00" * (otlp.MAX_REQUEST_PARTS + 1)))
    with pytest.raises(otlp.WireError, match="more than 1,000,000 spans"):
        otlp.LazyRequest(body)


@pytest.mark.parametrize("body", [b"\x0a\x05ab", b"\x0b", b"\x0a\x80"], ids=["short", "group", "varint"])
def test_a_body_that_is_not_a_request_on_the_wire_is_refused(body: bytes) -> None:
    with pytest.raises(otlp.WireError):
        otlp.LazyRequest(body)


def test_a_span_of_too_many_attributes_is_rejected_alone_undecoded() -> None:
    """One span of 600,000 empty attributes (1.2 MB: a span over a slice's bytes has its parts
    counted) beside ordinary spans: it is rejected by name, undecoded; the rest read."""
    ordinary = _spans("delta", 2)
    good = encode_spans(ordinary).SerializeToString()
    trace_id, span_id = bytes(range(1, 17)), bytes(range(1, 9))
    big = (_field(1, trace_id) + _field(2, span_id) + _field(5, b"bloated")
           + b"\x4a\x00" * 600_000)
    body = good + _field(1, _field(2, _field(2, big)))
    lazy = otlp.LazyRequest(body)
    parts = list(otlp_slices(lazy.resource_spans, 1 << 30))
    records = [r for p in parts for r in p.records]
    rejected = [m for p in parts for m in p.rejected]
    assert len(records) == len(ordinary) and rejected == [
        "span 'bloated': more than 100,000 attributes, events and links (not decoded)"]
    refused = next(s for rs in lazy.resource_spans for ss in rs.scope_spans for s in ss.spans
                   if isinstance(s, otlp._Refused))
    with pytest.raises(InvalidSpan):
        from_otlp(refused)
