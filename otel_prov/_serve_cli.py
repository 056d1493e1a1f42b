"""The ``otel-prov serve`` subcommand (registered by :mod:`otel_prov.cli` through :func:`add_parser`).

Runs until SIGTERM or SIGINT, then drains: new requests are refused as retryable, those in flight
are answered once their quads are stored, the store is closed, and the process exits 0 (1 if
something could not be drained or stored).  Once both transports listen it prints one line to
stdout: ``otel-prov serve: listening grpc=HOST:PORT http=HOST:PORT store=SPEC``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from ._config import ENV_PROFILE, ENV_STORE
from ._errors import ProvError
from ._serve import (
    DEFAULT_ACK_TIMEOUT,
    DEFAULT_DRAIN_TIMEOUT,
    DEFAULT_GRPC_PORT,
    DEFAULT_HOST,
    DEFAULT_HTTP_PORT,
    DEFAULT_MAX_INFLIGHT,
    ENV_ACK_TIMEOUT,
    ENV_DRAIN_TIMEOUT,
    ENV_GRPC_PORT,
    ENV_HOST,
    ENV_HTTP_PORT,
    ENV_MAX_INFLIGHT,
    ENV_TLS_CERT,
    ENV_TLS_KEY,
    ENV_TOKEN,
    Server,
    settings_from,
)

logger = logging.getLogger(__name__)

HELP = "receive OTLP traces (gRPC and HTTP) and store their explainability graph"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``serve`` to an argparse subparsers object; the parser's default ``func`` runs it."""
    parser: argparse.ArgumentParser = subparsers.add_parser("serve", help=HELP, description=HELP + (
        ". Every option falls back to the environment variable named in its help, then the default."))
    configure(parser)
    return parser


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", help=f"'oxigraph:PATH', a path, or 'memory:' ({ENV_STORE}; default "
                        "$XDG_DATA_HOME/otel-prov/store)")
    parser.add_argument("--profile", help=f"mapping profile: seed or strict ({ENV_PROFILE}; default seed)")
    parser.add_argument("--host", help=f"address to bind ({ENV_HOST}; default {DEFAULT_HOST}: loopback only)")
    parser.add_argument("--grpc-port", help=f"OTLP/gRPC port, 0 = any free, 'off' ({ENV_GRPC_PORT}; "
                        f"default {DEFAULT_GRPC_PORT})")
    parser.add_argument("--http-port", help=f"OTLP/HTTP port, 0 = any free, 'off' ({ENV_HTTP_PORT}; "
                        f"default {DEFAULT_HTTP_PORT})")
    parser.add_argument("--token", help=f"require 'authorization: Bearer TOKEN' ({ENV_TOKEN}; prefer the "
                        "environment variable: arguments are visible to other users)")
    parser.add_argument("--tls-cert", help=f"PEM certificate chain for TLS ({ENV_TLS_CERT})")
    parser.add_argument("--tls-key", help=f"PEM private key for TLS ({ENV_TLS_KEY})")
    parser.add_argument("--max-inflight", type=int, help=f"requests handled at once before refusing "
                        f"with UNAVAILABLE/503 ({ENV_MAX_INFLIGHT}; default {DEFAULT_MAX_INFLIGHT})")
    parser.add_argument("--ack-timeout", type=float, help=f"seconds a request waits for its commit "
                        f"before answering UNAVAILABLE ({ENV_ACK_TIMEOUT}; default {DEFAULT_ACK_TIMEOUT:g})")
    parser.add_argument("--drain-timeout", type=float, help=f"seconds to drain at SIGTERM "
                        f"({ENV_DRAIN_TIMEOUT}; default {DEFAULT_DRAIN_TIMEOUT:g})")
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR (default INFO)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    _configure_logging(args.log_level)
    try:
        settings = settings_from(
            store=args.store, profile=args.profile, host=args.host, grpc_port=args.grpc_port,
            http_port=args.http_port, token=args.token, tls_cert=args.tls_cert, tls_key=args.tls_key,
            max_inflight=args.max_inflight, ack_timeout=args.ack_timeout,
            drain_timeout=args.drain_timeout,
        )
        stop = threading.Event()
        _on_signals(stop)
        server = Server(settings)
    except (ProvError, OSError) as exc:
        print(f"otel-prov serve: {exc}", file=sys.stderr)
        return 1
    parts = [f"grpc={server.grpc_address}" if server.grpc_address else "grpc=off",
             f"http={server.http_address}" if server.http_address else "http=off",
             f"store={settings.store}"]
    print("otel-prov serve: listening " + " ".join(parts), flush=True)
    if settings.host not in ("127.0.0.1", "localhost", "::1") and settings.token is None:
        logger.warning("otel-prov serve: listening on %s without a token (--token / %s): anyone who "
                       "can reach it can write to the store", settings.host, ENV_TOKEN)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        logger.info("otel-prov serve: stopping (draining in-flight requests)")
        ok = server.stop()
        logger.info("otel-prov serve: stopped; %s", json.dumps(server.receiver.health(), sort_keys=True))
    return 0 if ok else 1


def _on_signals(stop: threading.Event) -> None:
    """The first SIGTERM/SIGINT drains; a second one exits at once (what is queued is lost)."""

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            print("otel-prov serve: second signal, exiting without draining", file=sys.stderr, flush=True)
            os._exit(1)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def _configure_logging(level: str) -> None:
    """The command is an application: it may attach a handler (to stderr) if none is configured."""
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    for name in ("otel_prov", __name__):  # __main__ under python -m
        logging.getLogger(name).setLevel(level.upper())


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m otel_prov._serve_cli`` (the same as ``otel-prov serve``)."""
    parser = argparse.ArgumentParser(prog="otel-prov serve", description=HELP)
    configure(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
