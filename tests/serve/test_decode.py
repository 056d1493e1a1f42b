"""OTLP/JSON read a span at a time (serve/decode.py): the same request as the protobuf it was made
from, whatever the keys' spelling and order; bad documents refused in one line."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

from otel_prov.mapping.limits import MAX_VALUE_DEPTH, TOO_DEEP_MARKER
from otel_prov.serve import decode
from otel_prov.serve.decode import BadRequest, decode_json, json_spans_to_protobuf
from tests.support.serving import agent_spans, otlp_json, request_of


def _request() -> ExportTraceServiceRequest:
    """Three resources (one without a resource), two scopes each, spans spread over them, a link."""
    pool = list(request_of(agent_spans(8, steps=3)).resource_spans[0].scope_spans[0].spans)
    assert len(pool) > 30
    request = ExportTraceServiceRequest()
    for r in range(3):
        rs: ResourceSpans = request.resource_spans.add()
        if r != 1:
            rs.resource.attributes.append(KeyValue(key="service.name"))
            rs.resource.attributes[0].value.string_value = f"service-{r}"
            rs.schema_url = f"https://example.org/schema/{r}"
        for s in range(2):
            scope = rs.scope_spans.add()
            scope.scope.name = f"scope-{r}-{s}"
            scope.schema_url = f"https://example.org/scope/{r}/{s}"
            scope.spans.extend(pool[(r * 2 + s)::6])
    span: Span = request.resource_spans[2].scope_spans[1].spans[0]
    link = span.links.add()
    link.trace_id, link.span_id = pool[0].trace_id, pool[0].span_id
    return request


def _hex_links(document: dict[str, Any]) -> dict[str, Any]:
    import base64

    for rs in document["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for link in span.get("links", []):
                    for key in ("traceId", "spanId"):
                        link[key] = base64.b64decode(link[key]).hex()
    return document


SNAKE = {"resourceSpans": "resource_spans", "scopeSpans": "scope_spans", "schemaUrl": "schema_url"}


def _snake(value: Any) -> Any:
    if isinstance(value, dict):
        return {SNAKE.get(k, k): _snake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake(v) for v in value]
    return value


def _reordered(document: dict[str, Any]) -> dict[str, Any]:
    """Each resource's and scope's own fields after its list, and keys this reader does not know."""
    out: dict[str, Any] = {"unknownTop": {"resourceSpans": [{"nested": [1, {"x": []}]}]}, "resourceSpans": []}
    for rs in document["resourceSpans"]:
        scopes = [{"spans": ss["spans"], "extra": {"spans": "not these"},
                   **{k: v for k, v in ss.items() if k != "spans"}} for ss in rs["scopeSpans"]]
        out["resourceSpans"].append({"scopeSpans": scopes, "other": [{"scopeSpans": 1}],
                                     **{k: v for k, v in rs.items() if k != "scopeSpans"}})
    return out


@pytest.mark.parametrize("shape", ["as written", "snake_case keys", "fields after the lists"])
def test_otlp_json_read_a_span_at_a_time_is_the_request_it_was_made_from(
        shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode, "JSON_SPANS_AT_ONCE", 3)  # many batches, some across a scope's end
    request = _request()
    document = _hex_links(otlp_json(request))
    if shape == "snake_case keys":
        document = _snake(document)
    elif shape == "fields after the lists":
        document = _reordered(document)
    body = json.dumps(document).encode()
    assert ExportTraceServiceRequest.FromString(json_spans_to_protobuf(body)) == request
    decoded = decode_json(body)
    spans = [span for rs in decoded.resource_spans for ss in rs.scope_spans for span in ss.spans]
    sent = [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]
    assert [span.SerializeToString() for span in spans] == [span.SerializeToString() for span in sent]


def test_values_nested_too_deep_are_cut_as_the_whole_document_was() -> None:
    value: dict[str, Any] = {"stringValue": "bottom"}
    for _ in range(MAX_VALUE_DEPTH + 5):
        value = {"arrayValue": {"values": [value]}}
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "deep",
            "attributes": [{"key": "deep", "value": value}]}
    resource = {"attributes": [{"key": "deep", "value": value}]}
    body = json.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]})
    data = json_spans_to_protobuf(body.encode())
    assert data.count(TOO_DEEP_MARKER.encode()) == 2 and b"bottom" not in data  # the span's, the resource's
    assert decode_json(body.encode()) is not None  # and it reads (shallow) as any request does


@pytest.mark.parametrize(("body", "says"), [
    (b"[]", "not a JSON object"),
    (b"{not json", "undecodable"),
    (b'{"resourceSpans": {}}', "'resourceSpans' must be a list"),
    (b'{"resourceSpans": [{"scopeSpans": {"spans": []}}]}', "'scopeSpans' must be a list"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": 3}]}]}', "'spans' must be a list"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [1]}]}]}', "expected a JSON object"),
    (b'{"resourceSpans": [7]}', "expected a JSON object"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}', "is not hex"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 5, "kind": "NOPE"}]}]}]}', "undecodable"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "cut"', "undecodable"),
])
def test_a_document_that_is_not_otlp_json_is_refused_in_one_line(body: bytes, says: str) -> None:
    with pytest.raises(BadRequest) as refused:
        decode_json(body)
    assert refused.value.status == 400 and refused.value.kind == "undecodable OTLP/JSON"
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_an_empty_request_is_an_empty_request() -> None:
    for body in (b"{}", b'{"resourceSpans": []}', b'{"resourceSpans": [{"scopeSpans": [{"spans": []}]}]}'):
        assert [span for rs in decode_json(body).resource_spans for ss in rs.scope_spans
                for span in ss.spans] == []
