"""An HTTP server for otel-prov's HTTP surfaces: uvicorn (its h11 protocol: strict HTTP/1.1 parsing
of request lines, headers, ``Content-Length`` and chunk sizes) on a thread of its own, with the
limits uvicorn lacks, around any ASGI application.  ``otel-prov serve`` runs its OTLP/HTTP
transport on it (:mod:`.http_transport`); a web view can run on it too.

What :class:`HttpLimits` adds to uvicorn:

- **deadlines for receiving a request**: a connection must send a request's headers within
  ``header_timeout`` of its first byte and its body within ``body_timeout`` of the headers; it may
  wait ``idle_timeout`` for its first request, or between two.  Past a deadline it is closed (a
  client that stalls, or sends a byte a minute, holds nothing for long);
- **a connection cap**: past ``max_connections``, a new connection makes room by closing the
  oldest connection that is idle (or still sending headers), else the one sending its body the
  slowest if that is slower than ``min_body_rate`` (after ``body_grace``); if every connection has
  a request being answered or sent at a fair rate, the new one is closed at once.  File descriptors
  stay bounded, and neither a flood of idle connections nor one of bodies trickled a byte at a time
  can lock out a new client (a health check);
- **a Host check** (:class:`HostCheck`): an HTTP request naming a host that is not an IP address,
  ``localhost`` or an allowed name is refused with 403, so a web page whose name was rebound to
  this machine's address (DNS rebinding) cannot use it;
- **a bounded shutdown**: :meth:`HttpServer.stop` closes at once the connections that are
  still sending a request, and waits at most ``graceful_timeout`` for the answers being sent.

The server binds its socket itself (a port in use is an ``OSError`` from the constructor; port 0
picks a free one, :attr:`HttpServer.port`), and never configures logging.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .guards import HOST_REFUSED, HOST_REFUSED_STATUS, host_acceptable

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class HttpLimits:
    max_connections: int = 256
    """Connections open at once (the oldest idle one is closed to make room for a new one)."""
    header_timeout: float = 10.0
    """Seconds from a request's first byte to the end of its headers."""
    body_timeout: float = 60.0
    """Seconds from the end of a request's headers to the end of its body."""
    min_body_rate: float = 16 * 1024
    """Bytes a second: a connection sending its body slower than this (on average since its
    headers) may be closed to make room for a new connection when the server is full."""
    body_grace: float = 2.0
    """Seconds a body is given before its rate is judged."""
    idle_timeout: float = 30.0
    """Seconds a connection may wait for its first request, or for the next one."""
    accept_backlog: int = 64
    """The listening socket's queue, and how many connections asyncio accepts in one go (before
    the connections closed to make room have released their file descriptors)."""
    max_header_bytes: int = 64 * 1024
    """The request line and headers: larger is answered 400 (h11, while they arrive) or 431 (all
    arrived at once)."""
    max_headers: int = 100
    """Header fields in a request; more is answered 431."""
    graceful_timeout: float = 5.0
    """Seconds :meth:`HttpServer.stop` waits for answers being sent."""


# -- the protocol: uvicorn's h11 protocol with deadlines and a cap --------------------------------

_IDLE, _HEADERS, _BODY, _APP = "idle", "headers", "body", "app"
"""A connection's phase: waiting for a request, receiving its headers, its body, or the application
has the whole request (no deadline: the application answers in its own time)."""


class _Connections:
    """The open connections of one server, oldest first, and what is closing them."""

    def __init__(self, limits: HttpLimits) -> None:
        self.limits = limits
        self.open: dict[_LimitedH11, None] = {}
        self.evicted = 0
        """Idle connections closed to make room for a new one."""
        self.evicted_slow = 0
        """Connections sending a body slower than ``min_body_rate``, closed to make room."""
        self.timed_out = 0
        """Connections closed because a request (or the first one) did not arrive in time."""
        self.refused = 0
        """New connections closed at once: every open one had a request in progress."""
        self.malformed = 0
        """Requests h11 could not parse (answered 400, connection closed)."""

    def counts(self) -> dict[str, int]:
        return {"open": len(self.open), "evicted_idle": self.evicted, "evicted_slow": self.evicted_slow,
                "timed_out": self.timed_out,
                "refused": self.refused, "malformed": self.malformed}


def _protocol_class(connections: _Connections) -> type[H11Protocol]:
    class Protocol(_LimitedH11):
        pass

    Protocol.connections_of_server = connections
    return Protocol


class _LimitedH11(H11Protocol):
    connections_of_server: _Connections

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._phase = _IDLE
        self._timer: asyncio.TimerHandle | None = None
        self._body_since = 0.0
        self._body_bytes = 0
        book = self.connections_of_server
        book.open[self] = None
        if len(book.open) > book.limits.max_connections and not self._make_room(book):
            book.refused += 1
            transport.close()
            return
        self._arm(book.limits.idle_timeout)

    def _make_room(self, book: _Connections) -> bool:
        for phase in (_IDLE, _HEADERS):
            for other in book.open:
                if other is not self and other._phase == phase and not other.transport.is_closing():
                    book.evicted += 1
                    other._close()
                    return True
        slowest = min((other for other in book.open if other is not self and other._phase == _BODY
                       and not other.transport.is_closing()), key=lambda other: other._body_rate(),
                      default=None)
        if slowest is not None and slowest._body_rate() < book.limits.min_body_rate:
            book.evicted_slow += 1
            slowest._close()
            return True
        return False

    def _body_rate(self) -> float:
        """Bytes a second of the body being received; infinite during its grace."""
        elapsed = self.loop.time() - self._body_since
        if elapsed < self.connections_of_server.limits.body_grace:
            return float("inf")
        return self._body_bytes / elapsed

    def connection_lost(self, exc: Exception | None) -> None:
        self.connections_of_server.open.pop(self, None)
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._phase == _BODY:
            self._body_bytes += len(data)
        super().data_received(data)
        self._track()

    def eof_received(self) -> bool:  # type: ignore[override]
        """The client closed its half of the connection: a request that is all in is still answered
        (asyncio would close the connection at once), and the connection closed after it."""
        if self._phase == _APP and self.cycle is not None and not self.cycle.response_complete:
            self._eof = True
            return True
        return False

    def on_response_complete(self) -> None:
        self._disarm()
        self._phase = _IDLE
        if getattr(self, "_eof", False):
            self.transport.close()  # after what is written is sent
            return
        # uvicorn arms its keep-alive timer (our idle timeout); a pipelined request is handled now.
        super().on_response_complete()
        self._track()

    def send_400_response(self, msg: str) -> None:
        self.connections_of_server.malformed += 1
        super().send_400_response(msg)

    def _track(self) -> None:
        """Follows the request being received, and arms the deadline of its phase."""
        if self.transport.is_closing():
            return
        state = self.conn.their_state
        limits = self.connections_of_server.limits
        if state is h11.SEND_BODY:
            if self._phase != _BODY:
                self._phase = _BODY
                self._body_since, self._body_bytes = self.loop.time(), 0
                self._arm(limits.body_timeout)
        elif state is h11.IDLE:
            if self._phase == _IDLE and self.conn.trailing_data[0]:
                self._phase = _HEADERS
                self._arm(limits.header_timeout)
        elif self._phase != _APP:  # DONE, MUST_CLOSE, ...: the whole request is in
            self._phase = _APP
            self._disarm()

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        timer = getattr(self, "_timer", None)
        if timer is not None:
            timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self._phase == _APP or self.transport.is_closing():
            return
        self.connections_of_server.timed_out += 1
        if self._phase != _IDLE:
            logger.debug("http: closing a connection that did not send its request in time (%s)", self._phase)
        self._close()

    def _close(self) -> None:
        """Close now: nothing is owed to a connection without a request being answered (and a TLS
        close would wait for the peer's close_notify)."""
        self._disarm()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.transport.abort()

    def shutdown(self) -> None:
        if self._phase == _APP and self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False  # answered, then closed
        else:
            self._close()


async def refuse(send: Send, status: int, text: bytes) -> None:
    """Answer ``status`` with a line of text, and close the connection (the body was not read)."""
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close"),
        (b"content-length", str(len(text)).encode())]})
    await send({"type": "http.response.body", "body": text})


class _HeaderLimit:
    """ASGI middleware: a request with more than ``max_headers`` header fields, or more than
    ``max_header_bytes`` of them, is answered 431 and its connection closed (h11 bounds headers
    that arrive in pieces, not a header section that arrives whole)."""

    def __init__(self, app: ASGIApp, limits: HttpLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = scope["headers"]
            if (len(headers) > self.limits.max_headers
                    or sum(len(k) + len(v) + 4 for k, v in headers) > self.limits.max_header_bytes):
                await refuse(send, 431, b"Request header fields too large\n")
                return
        await self.app(scope, receive, send)


# -- the Host check -------------------------------------------------------------------------------


class HostCheck:
    """ASGI middleware: an HTTP request's ``Host`` must be an IP address, ``localhost`` or one of
    ``allowed`` (``*`` allows any), else 403.  A page that rebinds its own name to this machine's
    address sends its own name as ``Host``: refused.  Lifespan and other scopes pass through."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str] = (), *, enabled: bool = True) -> None:
        self.app = app
        self.allowed = frozenset(name.lower() for name in allowed)
        self.enabled = enabled and "*" not in self.allowed
        self.refused = 0

    def acceptable(self, host: str) -> bool:
        return host_acceptable(host, self.allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.enabled and scope["type"] == "http":
            host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
            if not self.acceptable(host):
                self.refused += 1
                await refuse(send, HOST_REFUSED_STATUS, HOST_REFUSED.encode() + b"\n")
                return
        await self.app(scope, receive, send)


# -- the server -----------------------------------------------------------------------------------


class HttpServer:
    """``app`` served on ``host:port`` by uvicorn on a daemon thread, with ``limits``; TLS with
    ``tls`` (certificate chain, key: PEM files).  Listening when the constructor returns."""

    def __init__(self, app: ASGIApp, host: str, port: int, *, limits: HttpLimits | None = None,
                 tls: tuple[Path, Path] | None = None, name: str = "otel-prov-http") -> None:
        self.limits = limits or HttpLimits()
        self.connections = _Connections(self.limits)
        self._socket = _bind(host.strip("[]"), port, self.limits.accept_backlog)
        self.port: int = self._socket.getsockname()[1]
        config = uvicorn.Config(
            _HeaderLimit(app, self.limits), http=_protocol_class(self.connections), lifespan="off",
            log_config=None, access_log=False, proxy_headers=False, backlog=self.limits.accept_backlog,
            server_header=False, date_header=False,
            timeout_keep_alive=max(1, round(self.limits.idle_timeout)),
            timeout_graceful_shutdown=max(1, round(self.limits.graceful_timeout)),
            h11_max_incomplete_event_size=self.limits.max_header_bytes,
            ssl_certfile=str(tls[0]) if tls else None, ssl_keyfile=str(tls[1]) if tls else None,
        )
        config.load()  # a bad certificate or key raises here, not in the thread
        self._server = uvicorn.Server(config)
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        while not self._server.started and self._thread.is_alive():
            self._thread.join(0.01)
        if not self._server.started:
            self._socket.close()
            raise OSError(f"the HTTP server did not start: {self._failed}")

    @property
    def open_connections(self) -> int:
        return len(self.connections.open)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported by the constructor, or logged after a start
            self._failed = exc
            if self._server.started:
                logger.error("otel-prov http: the server stopped: %s", exc)

    async def _serve(self) -> None:
        try:
            await self._server.serve(sockets=[self._socket])
        finally:  # what the graceful shutdown left open is closed with the loop, not leaked
            for connection in list(self.connections.open):
                connection.transport.abort()
            await asyncio.sleep(0)

    def stop(self) -> None:
        """Stop accepting, close the connections still sending a request, wait (at most
        ``graceful_timeout``) for the answers being sent, close the rest."""
        self._server.should_exit = True
        self._thread.join(self.limits.graceful_timeout + 5)
        self._socket.close()


def _bind(host: str, port: int, backlog: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock
