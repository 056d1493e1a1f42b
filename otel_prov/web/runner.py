"""The web view's server: :class:`~otel_prov.serve.http_server.HttpServer`, the uvicorn server
``otel-prov serve`` runs its OTLP/HTTP transport on (deadlines for receiving a request, a
connection cap that closes idle connections to make room, a bounded stop), started and stopped
from any thread (``otel-prov ui``, the demo, tests).  The Host check and the token are the app's."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..serve.http_server import HttpLimits, HttpServer

logger = logging.getLogger(__name__)

LIMITS = HttpLimits(max_connections=64, idle_timeout=5.0)
"""Connections open at once (the oldest idle one makes room for a new one), and how long an idle
one is kept."""


@dataclass
class Running:
    """A started server: its address, and how to stop it."""

    server: HttpServer
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def stop(self) -> None:
        """Stop accepting, finish the answers under way (the server's graceful timeout at most),
        close the socket."""
        self.server.stop()


def start(app: Any, host: str, port: int) -> Running:
    """Serve ``app`` on ``host:port`` (0: any free port) in a daemon thread; returns once it
    listens.  ``OSError`` when the address cannot be bound."""
    server = HttpServer(app, host, port, limits=LIMITS, name=f"otel-prov-ui-{port}")
    logger.debug("web view listening on %s:%s", host, server.port)
    return Running(server, host.strip("[]"), server.port)
