"""The HTTP transport of ``otel-prov serve``: ``POST /v1/traces`` and ``POST /v1/logs`` (OTLP/HTTP,
protobuf or JSON; the logs: the GenAI events some instrumentations send as log records) and
``GET /health``, a Starlette application on :class:`~.http_server.HttpServer` (uvicorn with our
limits: deadlines, a connection cap, the Host check).

Answers as OTLP/HTTP says: 200 with an ``ExportTraceServiceResponse`` (``partial_success`` for spans
that can never be accepted), 400 for an undecodable body, 401 without a valid bearer token, 403 for
a ``Host`` not allowed without a token, 413 for a body over 64 MiB (after decompression; chunked
bodies included), 415 for another content type or encoding, 503 with ``Retry-After`` when the
receiver is busy, over its memory budget, draining or its store is failing.  Error bodies are a
``google.rpc.Status`` in the request's encoding.

The body is read as it arrives, counted against the limit and the receiver's memory budget before
it is kept; decoding and ingesting run on worker threads, so the event loop (and ``/health``)
never waits for them.  A request holds the receiver's drain only once its body is in.
"""

from __future__ import annotations

import asyncio
import json
import logging
from concurrent import futures
from http import HTTPStatus
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from ..settings import ServeSettings
from .decode import DECODED_PER_BYTE as DECODED_PER_BYTE_PROTOBUF
from .decode import (
    DECODED_PER_JSON_BYTE,
    MAX_MESSAGE_BYTES,
    BadRequest,
    Gunzip,
    decode_json,
    decode_logs,
    decode_protobuf,
    too_large,
)
from .guards import single
from .http_server import HostCheck, HttpLimits, HttpServer
from .receiver import Answer, Outcome, Receiver
from .rpc_status import INVALID_ARGUMENT, UNAUTHENTICATED, UNAVAILABLE
from .rpc_status import status as rpc_status

logger = logging.getLogger(__name__)

TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
HEALTH_PATH = "/health"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"

DECODED_PER_BYTE = {PROTOBUF: DECODED_PER_BYTE_PROTOBUF, JSON: DECODED_PER_JSON_BYTE}
"""Memory a request takes per byte of its (decompressed) body while it is decoded."""

_EXTRA_WORKERS = 16
"""Threads beyond the in-flight bound, so that refusals are answered at once under load."""


class _Reservation:
    """The part of the receiver's memory budget one request holds; grows as its body arrives."""

    def __init__(self, receiver: Receiver) -> None:
        self._receiver = receiver
        self.held = 0

    def grow(self, nbytes: int) -> Outcome | None:
        refusal = self._receiver.take(nbytes)
        if refusal is None:
            self.held += nbytes
        return refusal

    def release(self) -> None:
        self._receiver.give(self.held)
        self.held = 0


class _Refused(Exception):
    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.message)
        self.outcome = outcome


class OtlpHttpApp:
    """The endpoints, around one receiver; blocking work on ``executor``."""

    def __init__(self, receiver: Receiver, executor: futures.Executor) -> None:
        self.receiver = receiver
        self.executor = executor
        self.app = Starlette(routes=[
            Route(TRACES_PATH, self.export, methods=["POST"]),
            Route(LOGS_PATH, self.export_logs, methods=["POST"]),
            Route(HEALTH_PATH, self.health, methods=["GET"]),
        ])

    async def _blocking(self, func: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, func, *args)

    async def health(self, request: Request) -> Response:
        info = self.receiver.health()
        status = HTTPStatus.OK if info["status"] == "ok" else HTTPStatus.SERVICE_UNAVAILABLE
        return Response(json.dumps(info), status, media_type=JSON)

    async def export(self, request: Request) -> Response:
        return await self._export(request, logs=False)

    async def export_logs(self, request: Request) -> Response:
        return await self._export(request, logs=True)

    async def _export(self, request: Request, logs: bool) -> Response:
        receiver = self.receiver
        content_type = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
        encoding = JSON if content_type == JSON else PROTOBUF
        reservation = _Reservation(receiver)
        try:
            header = single(request.headers.getlist("authorization"))
            if not receiver.authorized(header):
                return _answer(receiver.refuse_unauthenticated(header is not None), encoding, close=True)
            if content_type not in (PROTOBUF, JSON):
                raise BadRequest(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported content type",
                                 f"{content_type or 'none'} (use {PROTOBUF} or {JSON})")
            coding = (request.headers.get("content-encoding") or "identity").strip().lower()
            if coding not in ("gzip", "identity"):
                raise BadRequest(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported content encoding",
                                 f"{coding} (use gzip or none)")
            body = await self._read_body(request, coding == "gzip", encoding, reservation)
            if not receiver.begin():
                return _answer(receiver.draining_outcome(), encoding, close=True)
            try:
                if content_type == JSON:
                    decoded = await self._blocking(decode_json, body, logs)
                elif logs:
                    decoded = await self._blocking(decode_logs, body)
                else:
                    decoded = await self._blocking(decode_protobuf, body, receiver.problems)
                raw = body if content_type != JSON else None  # the workers read protobuf bytes
                del body
                outcome = await self._blocking(receiver.ingest, decoded, None, raw, logs)
                del decoded, raw
                return _answer(outcome, encoding, logs=logs)
            finally:
                receiver.end()
        except BadRequest as exc:
            receiver.refuse_invalid(exc.kind, exc.detail)
            return _error(exc.status, INVALID_ARGUMENT, str(exc), encoding, close=True)
        except _Refused as exc:
            return _answer(exc.outcome, encoding, close=True)
        except ClientDisconnect:  # nobody to answer; nothing was acknowledged
            logger.debug("otel-prov serve http: the client went away before its request was read")
            return Response(status_code=HTTPStatus.BAD_REQUEST)
        finally:
            reservation.release()

    async def _read_body(self, request: Request, gzipped: bool, encoding: str,
                         reservation: _Reservation) -> bytes:
        """The body, decompressed: never more than the limit, every byte kept reserved in the
        receiver's memory budget first (with what decoding it will take)."""
        per_byte = DECODED_PER_BYTE[encoding]
        length_text = request.headers.get("content-length")
        if length_text is not None:  # h11 checked it is a plain decimal number
            length = int(length_text)
            if length > MAX_MESSAGE_BYTES:
                raise too_large(f"{length} bytes (at most {MAX_MESSAGE_BYTES})")
            self._reserve(reservation, length if gzipped else length * per_byte)
        parts: list[bytes] = []
        received = 0
        inflater = Gunzip(MAX_MESSAGE_BYTES) if gzipped else None
        async for chunk in request.stream():
            received += len(chunk)
            if received > MAX_MESSAGE_BYTES:
                raise too_large(f"more than {MAX_MESSAGE_BYTES} bytes")
            if length_text is None and not gzipped:
                self._reserve(reservation, len(chunk) * per_byte)
            if inflater is not None:
                if length_text is None:
                    self._reserve(reservation, len(chunk))
                chunk = inflater.feed(chunk)
                self._reserve(reservation, len(chunk) * per_byte)
            if chunk:
                parts.append(chunk)
        if inflater is not None:
            inflater.finish()
        return b"".join(parts)

    def _reserve(self, reservation: _Reservation, nbytes: int) -> None:
        refusal = reservation.grow(nbytes)
        if refusal is not None:
            raise _Refused(refusal)


# -- answers --------------------------------------------------------------------------------------


def _answer(outcome: Outcome, encoding: str, *, close: bool = False, logs: bool = False) -> Response:
    if outcome.answer is Answer.OK and logs:
        return _send(HTTPStatus.OK, encoding, _encode(ExportLogsServiceResponse(), encoding), close=close)
    if outcome.answer is Answer.OK:
        response = ExportTraceServiceResponse()
        if outcome.rejected_spans:
            response.partial_success.CopyFrom(ExportTracePartialSuccess(
                rejected_spans=outcome.rejected_spans, error_message=outcome.message))
        return _send(HTTPStatus.OK, encoding, _encode(response, encoding), close=close)
    if outcome.answer is Answer.UNAVAILABLE:
        return _error(HTTPStatus.SERVICE_UNAVAILABLE, UNAVAILABLE, outcome.message, encoding,
                      {"Retry-After": str(outcome.retry_after_seconds)}, close=close)
    if outcome.answer is Answer.UNAUTHENTICATED:
        return _error(HTTPStatus.UNAUTHORIZED, UNAUTHENTICATED, outcome.message, encoding,
                      {"WWW-Authenticate": "Bearer"}, close=close)
    return _error(HTTPStatus.BAD_REQUEST, INVALID_ARGUMENT, outcome.message, encoding, close=close)


def _error(status: HTTPStatus, code: int, message: str, encoding: str,
           headers: dict[str, str] | None = None, *, close: bool = False) -> Response:
    return _send(status, encoding, _encode(rpc_status(code, message), encoding), headers, close=close)


def _send(status: HTTPStatus, content_type: str, body: bytes, headers: dict[str, str] | None = None,
          *, close: bool = False) -> Response:
    """A response; ``close``: the body may not have been read, so the connection cannot be reused."""
    all_headers = dict(headers or {})
    if close:
        all_headers["Connection"] = "close"
    return Response(body, int(status), headers=all_headers, media_type=content_type)


def _encode(message: Message, encoding: str) -> bytes:
    if encoding == JSON:
        return str(json_format.MessageToJson(message, indent=None)).encode("utf-8")
    return bytes(message.SerializeToString())


class HttpTransport:
    """OTLP/HTTP on ``settings.host:settings.http_port``.  Without a token, requests must name this
    host by an IP address, ``localhost`` or ``settings.allowed_hosts`` (DNS-rebinding protection);
    with a token, the token protects it and any Host is accepted."""

    def __init__(self, receiver: Receiver, settings: ServeSettings, limits: HttpLimits | None = None) -> None:
        self._executor = futures.ThreadPoolExecutor(
            max_workers=settings.max_inflight + _EXTRA_WORKERS, thread_name_prefix="otel-prov-http")
        otlp = OtlpHttpApp(receiver, self._executor)
        self.host_check = HostCheck(otlp.app, settings.allowed_hosts, enabled=settings.token is None)
        assert settings.http_port is not None
        tls = (settings.tls_cert, settings.tls_key) if settings.tls_cert and settings.tls_key else None
        try:
            self.server = HttpServer(self.host_check, settings.host, settings.http_port, limits=limits,
                                     tls=tls, name="otel-prov-http")
        except OSError as exc:
            self._executor.shutdown(wait=False)
            raise OSError(f"cannot listen for HTTP on {settings.address(settings.http_port)} "
                          f"({exc.strerror or exc}); is the port in use?") from None
        except BaseException:
            self._executor.shutdown(wait=False)
            raise
        self.port: int = self.server.port
        logger.info("otel-prov serve: HTTP on %s:%d", settings.host, self.port)

    def stats(self) -> dict[str, int]:
        return {**self.server.connections.counts(), "wrong_host": self.host_check.refused}

    def stop(self) -> None:
        self.server.stop()
        self._executor.shutdown(wait=False)
