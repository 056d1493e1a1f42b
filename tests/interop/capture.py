"""What every scenario process does around its framework: refuse the network, capture the spans with
the real SDK, and write them out as one OTLP ``ExportTraceServiceRequest`` (the bytes a Collector
would send ``otel-prov serve``).

Started at the very top of a scenario, before any framework import: ``guard = start()``; at the end
``finish(guard, exporter, path)``, which fails (exit status 3) if anything tried to reach a host other
than loopback."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

_LOOPBACK = {"localhost", "127.0.0.1", "::1", "ip6-localhost"}


def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    return isinstance(host, str) and (host in _LOOPBACK or host.startswith("127."))


class NetworkGuard:
    """Refuses, and records, every connection or DNS look-up that is not for a loopback address."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
        real_getaddrinfo = socket.getaddrinfo

        def check(kind: str, family: Any, address: Any) -> None:
            if family == getattr(socket, "AF_UNIX", object()):
                return
            host = address[0] if isinstance(address, tuple) else address
            if not _is_loopback(host):
                self.attempts.append(f"{kind} {address!r}")
                raise OSError(f"network guard: {kind} to {address!r} refused (only loopback is allowed)")

        def connect(sock: socket.socket, address: Any) -> Any:
            check("connect", sock.family, address)
            return real_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> Any:
            check("connect_ex", sock.family, address)
            return real_connect_ex(sock, address)

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if host is not None:
                check("getaddrinfo", None, (host,))
            return real_getaddrinfo(host, *args, **kwargs)

        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]


def start() -> NetworkGuard:
    return NetworkGuard()


def tracer_provider() -> tuple[Any, Any]:
    """A TracerProvider (not set globally) whose finished spans are kept in memory."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-prov-interop"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def logger_provider() -> tuple[Any, Any]:
    """A LoggerProvider (not set globally) whose log records are kept in memory: for the
    instrumentations that send content as OTLP log records (events); :func:`finish` writes them."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "otel-prov-interop"}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    return provider, memory


def finish(guard: NetworkGuard, provider: Any, memory: Any, out: str,
           logs: tuple[Any, Any] | None = None) -> None:
    """Writes the finished spans to ``out`` as OTLP protobuf (and the log records of ``logs``, a
    :func:`logger_provider`, to ``out + ".logs"``); exits 3 if the network was tried."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    provider.force_flush()
    spans = list(memory.get_finished_spans())
    Path(out).write_bytes(encode_spans(spans).SerializeToString())
    if logs is not None:
        from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

        logs[0].force_flush()
        records = list(logs[1].get_finished_logs())
        Path(out + ".logs").write_bytes(encode_logs(records).SerializeToString())
    if guard.attempts:
        print("network attempts: " + "; ".join(guard.attempts), file=sys.stderr)
        sys.exit(3)
    print(f"{len(spans)} spans in {len({s.context.trace_id for s in spans})} trace(s) -> {out}")


def option(name: str, default: str | None = None) -> str | None:
    """``--name VALUE`` from the command line."""
    flag = f"--{name}"
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default


def flag(name: str) -> bool:
    return f"--{name}" in sys.argv
