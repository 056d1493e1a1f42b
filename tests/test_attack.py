"""Attacks on otel-prov's network surfaces and its store that the hardening pass (test_abuse.py,
test_faults.py) did not cover: each test is one finding, tried as an attacker, a careless operator or
an unlucky deployment would, on 127.0.0.1 only, bounded in count and time.  Real servers, real
clients, real stores and real processes."""

from __future__ import annotations

import grpc
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue, KeyValueList

from otel_prov import spans_to_dataset
from otel_prov.mapping import otlp
from tests import test_serve
from tests.graphs import assert_isomorphic
from tests.test_serve import EXPORT, Make, agent_spans, request_of, stored

make_server = test_serve.make_server
"""The fixture: the receiver's real gRPC and HTTP servers on port 0 around an in-memory store."""


# -- serve: hostile OTLP --------------------------------------------------------------------------


def _with_corrupt_nested_value(body: bytes, nested: bytes) -> tuple[bytes, int]:
    """``body`` with one more span (a copy of its first, another span id) whose attribute holds a
    key-value list of ``nested`` bytes, as a client writes it (protobuf reads it shallow: the nested
    bytes are only parsed when the span is mapped); and how many spans the request has."""
    request = otlp.ExportTraceServiceRequest.FromString(body)
    spans = request.resource_spans[0].scope_spans[0].spans
    bad = spans.add()
    bad.CopyFrom(spans[0])
    bad.span_id = b"\x0b" * 8
    value = bad.attributes.add()
    value.key = "bad"
    value.value.kvlist_value = nested
    return request.SerializeToString(), len(spans)


def test_a_corrupt_nested_value_rejects_its_span_for_good_not_the_request_for_ever(make_server: Make) -> None:
    """A nested value (an array or key-value list) is parsed only when its span is mapped.  Corrupt
    bytes there (or invalid UTF-8 in a nested string) were an "internal error": UNAVAILABLE / 503 with
    a retry delay, so the Collector retried the request for ever and none of it was stored.  It is
    one span that can never be accepted: rejected alone (partial success), the others stored."""
    server = make_server()
    spans = agent_spans()
    text = KeyValueList(values=[KeyValue(key="k", value=AnyValue(string_value="x"))]).SerializeToString()
    cases = {"corrupt wire format": b"\xff\xff\xff\xff", "invalid UTF-8": text.replace(b"x", b"\xff")}
    for what, nested in cases.items():
        body, count = _with_corrupt_nested_value(request_of(spans).SerializeToString(), nested)
        assert count == len(spans) + 1
        with grpc.insecure_channel(server.grpc_address) as channel:
            raw = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
            answer = ExportTraceServiceResponse.FromString(raw(body, timeout=20)).partial_success
        assert answer.rejected_spans == 1 and "not valid protobuf" in answer.error_message, (what, answer)
        resp = requests.post(f"http://{server.http_address}/v1/traces", data=body, timeout=20,
                             headers={"Content-Type": "application/x-protobuf"})
        assert resp.status_code == 200, (what, resp.status_code, resp.content[:200])
        assert ExportTraceServiceResponse.FromString(resp.content).partial_success.rejected_spans == 1
    assert_isomorphic(spans_to_dataset(spans), stored(server))  # the other spans, stored
    health = server.receiver.health()
    assert health["status"] == "ok" and health["acknowledged_requests"] == 4, health
    assert not any("unexpected" in kind for kind in health["problems"]), health["problems"]
