"""A uvicorn server in a thread, on a socket bound here (so the port is known before it starts),
with connection limits; started and stopped from any thread (``otel-prov ui``, the demo, tests).

(When ``serve``'s HTTP transport moves to uvicorn it brings a shared runner; this one is the web
view's until then.)"""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import uvicorn

logger = logging.getLogger(__name__)

MAX_CONNECTIONS = 64
"""Connections served at once; past this uvicorn answers 503."""
KEEP_ALIVE_SECONDS = 5


@dataclass
class Running:
    """A started server: its address, and how to stop it."""

    server: uvicorn.Server
    thread: threading.Thread
    sock: socket.socket
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, finish the requests under way (up to ``timeout``), close the socket."""
        self.server.should_exit = True
        self.thread.join(timeout)
        if self.thread.is_alive():
            self.server.force_exit = True
            self.thread.join(timeout)
        self.sock.close()


def start(app: Any, host: str, port: int, *, timeout: float = 10.0) -> Running:
    """Serve ``app`` on ``host:port`` (0: any free port) in a daemon thread; returns once it
    listens.  ``OSError`` when the address cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    bound = int(sock.getsockname()[1])
    config = uvicorn.Config(app, log_level="warning", lifespan="off", ws="none", access_log=False,
                            limit_concurrency=MAX_CONNECTIONS, timeout_keep_alive=KEEP_ALIVE_SECONDS,
                            server_header=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True,
                              name=f"otel-prov-ui-{bound}")
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise OSError(f"the web server did not start on {host}:{bound}")
        time.sleep(0.01)
    logger.debug("web view listening on %s:%s", host, bound)
    return Running(server, thread, sock, host.strip("[]"), bound)
