"""``otel-prov serve``'s server: the gRPC and HTTP transports around one :class:`~.receiver.Receiver`."""

from __future__ import annotations

import logging
import socket
import time

from ..settings import ServeSettings
from ..stores import backlog_probe, open_for_writing
from .grpc_transport import GrpcTransport
from .http_server import HttpLimits
from .http_transport import HttpTransport
from .receiver import Receiver
from .retention import Pruner
from .workers import WorkerPool

logger = logging.getLogger(__name__)


def open_receiver(settings: ServeSettings) -> Receiver:
    """The receiver of ``settings``: with mapping workers (``--workers N``) on an on-disk store,
    else mapping in this process."""
    pool = None
    if settings.mapping_workers > 1:
        pool = WorkerPool(settings.store, settings.profile, settings.mapping_workers,
                          max_attribute_bytes=settings.max_attribute_bytes, policy=settings.policy,
                          blob_dir=settings.blob_store_dir, blob_threshold=settings.blob_threshold,
                          log_level=logging.getLevelName(logging.getLogger("otel_prov").getEffectiveLevel()))
    return Receiver(
        open_for_writing(settings.store) if pool is None else None,
        settings.profile,
        pool=pool,
        token=settings.token,
        max_inflight=settings.max_inflight,
        max_pending_bytes=settings.max_pending_bytes,
        ack_timeout=settings.ack_timeout,
        rescue_dir=settings.store.rescue_dir,
        max_attribute_bytes=settings.max_attribute_bytes,
        memory_budget=settings.memory_budget,
        backlog=backlog_probe(settings.store),
        policy=settings.policy,
        blob_dir=settings.blob_store_dir,
        blob_threshold=settings.blob_threshold,
    )


class Server:
    """Starts the gRPC and HTTP transports of ``settings`` around one :class:`Receiver`."""

    def __init__(self, settings: ServeSettings, receiver: Receiver | None = None, *,
                 http_limits: HttpLimits | None = None) -> None:
        self.settings = settings
        check_ports_free(settings)
        self.receiver = receiver or open_receiver(settings)
        self.grpc: GrpcTransport | None = None
        self.http: HttpTransport | None = None
        self.pruner: Pruner | None = None
        self._stopped = False
        try:
            if settings.grpc_port is not None:
                self.grpc = GrpcTransport(self.receiver, settings)
            if settings.http_port is not None:
                self.http = HttpTransport(self.receiver, settings, http_limits)
                self.receiver.transport_stats["http_connections"] = self.http.stats
            if settings.prune_older_than is not None:
                self.pruner = Pruner(settings)
        except BaseException:
            self.stop(0)
            raise

    @property
    def grpc_address(self) -> str | None:
        return self.settings.address(self.grpc.port) if self.grpc else None

    @property
    def http_address(self) -> str | None:
        return self.settings.address(self.http.port) if self.http else None

    def stop(self, drain_timeout: float | None = None) -> bool:
        """Drain in-flight requests, stop both transports, store what is queued, release the store.
        Returns whether every in-flight request was answered and everything was stored."""
        if self._stopped:
            return True
        self._stopped = True
        timeout = self.settings.drain_timeout if drain_timeout is None else drain_timeout
        started = time.monotonic()
        if self.pruner is not None:
            self.pruner.stop(min(timeout, 10.0))  # a batch cut short: the rest at the next start
        drained = self.receiver.drain(timeout)
        if self.grpc is not None:
            self.grpc.stop(grace=1.0)
        if self.http is not None:
            self.http.stop()
        if not drained:
            logger.error("otel-prov serve: requests still in flight after %.1f s of draining", timeout)
        # Closing is bounded by what is left of the drain timeout (at least MIN_CLOSE seconds to sync
        # the log): a fold the store could not finish is left to the next start, never lost.
        stored = self.receiver.close(max(MIN_CLOSE, timeout - (time.monotonic() - started)))
        return drained and stored


MIN_CLOSE = 5.0
"""Seconds closing may take after a drain that used all of its time (the log's last sync)."""


def check_ports_free(settings: ServeSettings) -> None:
    """An :class:`OSError` naming the port, the option that set it and what to do, when a port
    serve is told to use is taken -- before anything starts (grpcio would log its own line first,
    and one transport would be up while the other fails)."""
    for name, port, option in (("gRPC", settings.grpc_port, "--grpc-port / OTEL_PROV_SERVE_GRPC_PORT"),
                               ("HTTP", settings.http_port, "--http-port / OTEL_PROV_SERVE_HTTP_PORT")):
        if not port:  # off, or any free port
            continue
        host = settings.host.strip("[]")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as exc:
                raise OSError(f"cannot listen for {name} on {settings.address(port)}: "
                              f"{exc.strerror or exc} ({option}: choose another port, or stop what "
                              f"uses it; 0 picks a free one)") from None
