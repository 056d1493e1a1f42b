"""The HTTP transport of ``otel-prov serve``: ``POST /v1/traces`` (OTLP/HTTP, protobuf or JSON) and
``GET /health``.

Answers as OTLP/HTTP says: 200 with an ``ExportTraceServiceResponse`` (``partial_success`` for spans
that can never be accepted), 400 for an undecodable body, 401 without a valid bearer token, 413 for a
body over 64 MiB (after decompression), 415 for another content type or encoding, 503 with
``Retry-After`` when the receiver is busy, draining or its store is failing.  Error bodies are a
``google.rpc.Status`` in the request's encoding.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import ssl
import threading
import zlib
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from ..settings import ServeSettings
from .receiver import MAX_MESSAGE_BYTES, Answer, Outcome, Receiver
from .rpc_status import INVALID_ARGUMENT, UNAUTHENTICATED, UNAVAILABLE
from .rpc_status import status as rpc_status

logger = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"
HEALTH_PATH = "/health"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_READ_CHUNK = 1024 * 1024
_TLS_HANDSHAKE_TIMEOUT = 10.0
_IDLE_TIMEOUT = 120.0
"""Seconds a kept-alive connection may stay idle."""

_ID_FIELDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


class BadRequest(Exception):
    def __init__(self, status: HTTPStatus, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.status = status
        self.kind = kind
        self.detail = detail


# -- decoding -------------------------------------------------------------------------------------


def hex_ids_to_base64(document: Any) -> None:
    """OTLP/JSON writes trace and span ids as hex; protobuf's JSON parser reads bytes as base64.
    Rewrites them in place (spans and span links) so ``json_format`` decodes the right bytes."""
    if not isinstance(document, dict):
        raise ValueError("the body is not a JSON object")
    for rs in _list(document, "resourceSpans", "resource_spans"):
        for ss in _list(rs, "scopeSpans", "scope_spans"):
            for span in _list(ss, "spans"):
                _convert_ids(span)
                for link in _list(span, "links"):
                    _convert_ids(link)


def _list(obj: Any, *keys: str) -> list[Any]:
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, found {type(obj).__name__}")
    for key in keys:
        value = obj.get(key)
        if value is not None:
            if not isinstance(value, list):
                raise ValueError(f"{key!r} must be a list")
            return value
    return []


def _convert_ids(obj: Any) -> None:
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, found {type(obj).__name__}")
    for key in _ID_FIELDS:
        value = obj.get(key)
        if isinstance(value, str) and value:
            try:
                raw = bytes.fromhex(value)
            except ValueError:
                raise ValueError(f"{key} {value!r} is not hex") from None
            obj[key] = base64.b64encode(raw).decode("ascii")


def decode_json(body: bytes) -> ExportTraceServiceRequest:
    try:
        document = json.loads(body)
        hex_ids_to_base64(document)
        request = ExportTraceServiceRequest()
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
        return request
    except (ValueError, json_format.ParseError, TypeError, RecursionError) as exc:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable OTLP/JSON", str(exc)[:500]) from None


def decode_protobuf(body: bytes) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError) as exc:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable protobuf", str(exc)) from None
    return request


def gunzip(body: bytes, limit: int = MAX_MESSAGE_BYTES) -> bytes:
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
        if len(out) > limit:
            raise BadRequest(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request too large",
                             f"more than {limit} bytes after gzip decompression")
        out += inflater.flush()
    except zlib.error as exc:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable gzip body", str(exc)) from None
    if not inflater.eof:
        raise BadRequest(HTTPStatus.BAD_REQUEST, "undecodable gzip body", "truncated gzip stream")
    return out


# -- the handler ----------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "otel-prov"
    sys_version = ""
    timeout = _IDLE_TIMEOUT
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        logger.debug("otel-prov serve http: " + format, *args)

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == HEALTH_PATH:
            info = self.server.receiver.health()
            status = HTTPStatus.OK if info["status"] == "ok" else HTTPStatus.SERVICE_UNAVAILABLE
            self._send(status, JSON, json.dumps(info).encode("utf-8"))
        else:
            self._send(HTTPStatus.NOT_FOUND, "text/plain", b"not found\n")

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != TRACES_PATH:
            self._discard_body()
            self._send(HTTPStatus.NOT_FOUND, "text/plain", b"not found\n")
            return
        receiver = self.server.receiver
        content_type = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        encoding = JSON if content_type == JSON else PROTOBUF
        if not receiver.begin():
            self._discard_body()
            self._answer(receiver.draining_outcome(), encoding)
            return
        try:
            self._export(receiver, content_type, encoding)
        finally:
            receiver.end()

    def _export(self, receiver: Receiver, content_type: str, encoding: str) -> None:
        header = self.headers.get("Authorization")
        try:
            if not receiver.authorized(header):
                self._discard_body()
                self._answer(receiver.refuse_unauthenticated(header is not None), encoding)
                return
            if content_type not in (PROTOBUF, JSON):
                raise BadRequest(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported content type",
                                 f"{content_type or 'none'} (use {PROTOBUF} or {JSON})")
            body = self._read_body()
            coding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
            if coding == "gzip":
                body = gunzip(body)
            elif coding != "identity":
                raise BadRequest(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported content encoding",
                                 f"{coding} (use gzip or none)")
            request = decode_json(body) if content_type == JSON else decode_protobuf(body)
        except BadRequest as exc:
            receiver.refuse_invalid(exc.kind, exc.detail)
            self._error(exc.status, INVALID_ARGUMENT, str(exc), encoding)
            return
        self._answer(receiver.ingest(request), encoding)

    # -- bodies -----------------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked()
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            self.close_connection = True
            raise BadRequest(HTTPStatus.LENGTH_REQUIRED, "no Content-Length", "send Content-Length")
        try:
            length = int(length_text)
        except ValueError:
            self.close_connection = True
            raise BadRequest(HTTPStatus.BAD_REQUEST, "bad Content-Length", length_text) from None
        if length > MAX_MESSAGE_BYTES:
            self.close_connection = True
            raise BadRequest(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request too large",
                             f"{length} bytes (at most {MAX_MESSAGE_BYTES})")
        return self._read_exact(length)

    def _read_exact(self, length: int) -> bytes:
        parts: list[bytes] = []
        remaining = length
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, _READ_CHUNK))
            if not chunk:
                self.close_connection = True
                raise BadRequest(HTTPStatus.BAD_REQUEST, "truncated body",
                                 f"{length - remaining} of {length} bytes received")
            parts.append(chunk)
            remaining -= len(chunk)
        return b"".join(parts)

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                self.close_connection = True
                raise BadRequest(HTTPStatus.BAD_REQUEST, "bad chunked body", repr(line[:40])) from None
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            total += size
            if total > MAX_MESSAGE_BYTES:
                self.close_connection = True
                raise BadRequest(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request too large",
                                 f"more than {MAX_MESSAGE_BYTES} bytes")
            parts.append(self._read_exact(size))
            self.rfile.readline(8)  # the CRLF after the chunk

    def _discard_body(self) -> None:
        """Read (and drop) a body we will not use, so the connection can be reused."""
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower() or not \
                0 <= length <= MAX_MESSAGE_BYTES:
            self.close_connection = True
            return
        while length > 0:
            chunk = self.rfile.read(min(length, _READ_CHUNK))
            if not chunk:
                break
            length -= len(chunk)

    # -- answers ----------------------------------------------------------------------------------

    def _answer(self, outcome: Outcome, encoding: str) -> None:
        if outcome.answer is Answer.OK:
            response = ExportTraceServiceResponse()
            if outcome.rejected_spans:
                response.partial_success.CopyFrom(ExportTracePartialSuccess(
                    rejected_spans=outcome.rejected_spans, error_message=outcome.message))
            self._send(HTTPStatus.OK, encoding, _encode(response, encoding))
        elif outcome.answer is Answer.UNAVAILABLE:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, UNAVAILABLE, outcome.message, encoding,
                        {"Retry-After": str(outcome.retry_after_seconds)})
        elif outcome.answer is Answer.UNAUTHENTICATED:
            self._error(HTTPStatus.UNAUTHORIZED, UNAUTHENTICATED, outcome.message, encoding,
                        {"WWW-Authenticate": "Bearer"})
        else:
            self._error(HTTPStatus.BAD_REQUEST, INVALID_ARGUMENT, outcome.message, encoding)

    def _error(self, status: HTTPStatus, code: int, message: str, encoding: str,
               headers: dict[str, str] | None = None) -> None:
        body = _encode(rpc_status(code, message), encoding)
        self._send(status, encoding, body, headers)

    def _send(self, status: HTTPStatus, content_type: str, body: bytes,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)


def _encode(message: Message, encoding: str) -> bytes:
    if encoding == JSON:
        return str(json_format.MessageToJson(message, indent=None)).encode("utf-8")
    return bytes(message.SerializeToString())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], receiver: Receiver,
                 tls: ssl.SSLContext | None) -> None:
        self.receiver = receiver
        self.tls = tls
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        if self.tls is not None:  # the handshake runs in the request's thread, not the accept loop
            try:
                request.settimeout(_TLS_HANDSHAKE_TIMEOUT)
                request = self.tls.wrap_socket(request, server_side=True)
                request.settimeout(None)
            except (OSError, ssl.SSLError) as exc:
                logger.debug("otel-prov serve http: TLS handshake with %s failed: %s", client_address, exc)
                self.shutdown_request(request)
                return
        super().process_request_thread(request, client_address)


class HttpTransport:
    def __init__(self, receiver: Receiver, settings: ServeSettings) -> None:
        tls = None
        if settings.tls_cert and settings.tls_key:
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(str(settings.tls_cert), str(settings.tls_key))
        host = settings.host.strip("[]")
        assert settings.http_port is not None
        self._server = _Server((host, settings.http_port), receiver, tls)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="otel-prov-http", daemon=True)
        self._thread.start()
        logger.info("otel-prov serve: HTTP on %s:%d", settings.host, self.port)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
