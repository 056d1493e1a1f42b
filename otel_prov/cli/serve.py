"""The ``otel-prov serve`` subcommand (registered by :mod:`otel_prov.cli` through :func:`add_parser`);
the server itself is :mod:`otel_prov.serve`.

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

from .. import settings
from ..errors import ConfigError, ProvError

logger = logging.getLogger(__name__)

HELP = "receive OTLP traces (gRPC and HTTP) and store their explainability graph"
PROFILE_CHOICES = (
    "seed (the spec's triples), strict (valid PROV-O) or trustgraph (TrustGraph 2.11's layout)")
DESCRIPTION = "Receive OTLP traces (gRPC and HTTP) and store their explainability graph"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``serve`` to an argparse subparsers object; the parser's default ``func`` runs it."""
    parser: argparse.ArgumentParser = subparsers.add_parser("serve", help=HELP, description=DESCRIPTION + (
        ". Every option falls back to the environment variable named in its help, then the default."))
    configure(parser)
    return parser


def configure(parser: argparse.ArgumentParser) -> None:
    for option, help_, default in _FLAGS:
        shown = f"; default {default}" if default is not None else ""
        parser.add_argument(str(option.flag), help=f"{help_} ({option.env}{shown})")
    unauthenticated = settings.SERVE_PUBLIC_WITHOUT_TOKEN
    parser.add_argument(str(unauthenticated.flag), action="store_const", const="true", default=None,
                        help="listen on an address other than loopback without a token (refused "
                             f"otherwise; {unauthenticated.env}=true)")
    parser.add_argument("--log-level", default="INFO", type=_log_level,
                        metavar="{" + ",".join(LOG_LEVELS) + "}", help="default INFO (any case)")
    parser.set_defaults(func=run)


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _log_level(text: str) -> str:
    level = text.strip().upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(LOG_LEVELS)})")
    return level


_FLAGS: tuple[tuple[settings.Option[Any], str, object], ...] = (
    (settings.STORE, "'oxigraph:PATH', a path, 'memory:', or the URL of a dataset on a SPARQL server "
     "(http(s)://...; OTEL_PROV_STORE_* for credentials and TLS)", "$XDG_DATA_HOME/otel-prov/store"),
    (settings.PROFILE, f"mapping profile: {PROFILE_CHOICES}", "seed"),
    (settings.SERVE_HOST, "address to bind", f"{settings.DEFAULT_HOST}: loopback only"),
    (settings.SERVE_GRPC_PORT, "OTLP/gRPC port, 0 = any free, 'off'", settings.DEFAULT_GRPC_PORT),
    (settings.SERVE_HTTP_PORT, "OTLP/HTTP port, 0 = any free, 'off'", settings.DEFAULT_HTTP_PORT),
    (settings.SERVE_TOKEN, "require 'authorization: Bearer TOKEN'; prefer the environment variable: "
     "arguments are visible to other users", None),
    (settings.SERVE_TLS_CERT, "PEM certificate chain for TLS", None),
    (settings.SERVE_TLS_KEY, "PEM private key for TLS", None),
    (settings.SERVE_MAX_INFLIGHT, "requests handled at once before refusing with UNAVAILABLE/503",
     settings.DEFAULT_MAX_INFLIGHT),
    (settings.SERVE_ACK_TIMEOUT, "seconds a request waits for its commit before answering UNAVAILABLE",
     f"{settings.DEFAULT_ACK_TIMEOUT:g}"),
    (settings.SERVE_DRAIN_TIMEOUT, "seconds to drain at SIGTERM", f"{settings.DEFAULT_DRAIN_TIMEOUT:g}"),
    (settings.SERVE_MEMORY_BUDGET, "MiB of request data held at once (bodies, decoded requests, N-Quads "
     "queued for the store); past it, UNAVAILABLE/503", settings.DEFAULT_MEMORY_BUDGET_MIB),
    (settings.SERVE_ALLOWED_HOSTS, "comma-separated host names an HTTP request may name in Host without a "
     "token, besides localhost and IP addresses (DNS-rebinding protection)", None),
    (settings.SERVE_WORKERS, "processes that map spans into an on-disk store (each trace in one); "
     "0 = one per CPU, at most 4; 1 = in the serve process", settings.DEFAULT_WORKERS),
    (settings.MAX_ATTRIBUTE_BYTES, "largest attribute value in bytes; a span with a larger one is rejected "
     "(partial_success), never truncated", settings.MAX_ATTRIBUTE_BYTES.default),
    (settings.CONTENT_POLICY, "what of each field's text is stored: keep, truncate:N, sha256 or omit, for "
     "every field or per field (thought=sha256,observation=truncate:500; docs/privacy.md)", "keep"),
    (settings.REDACT, "replace secrets and personal data by typed markers before storing: on, off, or "
     "detectors' names (email,card,...)", "off"),
    (settings.SERVE_PRUNE_OLDER_THAN, "retention: erase by itself the sessions that started longer ago "
     "than this (90d, 12h, 2w, 1y), held ones kept", None),
    (settings.SERVE_PRUNE_INTERVAL, "how often --prune-older-than runs", "1h"),
    (settings.BLOB_THRESHOLD, "a content value of more bytes is stored once as a blob beside the store "
     "(docs/store.md); 0 = never", "65536"),
    (settings.BLOB_DIR, "where the blobs go (default: blobs/ in an on-disk store; a store on a server keeps "
     "large values inline without one)", None),
)
"""Every option of ``serve`` with a flag: (option, help, the default shown)."""


def run(args: argparse.Namespace) -> int:
    _configure_logging(args.log_level)
    try:
        config = settings.serve_settings(
            via="flag", store=args.store, profile=args.profile, host=args.host, grpc_port=args.grpc_port,
            http_port=args.http_port, token=args.token, tls_cert=args.tls_cert, tls_key=args.tls_key,
            max_inflight=args.max_inflight, ack_timeout=args.ack_timeout,
            drain_timeout=args.drain_timeout, max_attribute_bytes=args.max_attribute_bytes,
            memory_budget=args.memory_budget, public_without_token=args.public_without_token,
            allowed_hosts=args.allowed_hosts, workers=args.workers,
            content_policy=args.content_policy, redact=args.redact,
            prune_older_than=args.prune_older_than, prune_interval=args.prune_interval,
            blob_threshold=args.blob_threshold, blob_dir=args.blob_dir,
        )
        stop = threading.Event()
        _on_signals(stop)
        from ..serve.server import Server  # grpcio, uvicorn: only when serving
        from ..serve.worker import tune_gc

        server = Server(config)
    except (ProvError, OSError) as exc:
        print(f"otel-prov: error: {exc}", file=sys.stderr)  # the prefix of every command's errors
        return 2 if isinstance(exc, ConfigError) else 1  # a bad value: a usage error, as argparse's
    if stop.is_set():  # SIGINT / SIGTERM while starting: nothing was acknowledged yet
        server.stop(0)
        print("otel-prov serve: interrupted while starting", file=sys.stderr)
        return 130
    parts = [f"grpc={server.grpc_address}" if server.grpc_address else "grpc=off",
             f"http={server.http_address}" if server.http_address else "http=off",
             f"store={config.store}"]
    tune_gc()
    print("otel-prov serve: listening " + " ".join(parts), flush=True)
    cpus = os.cpu_count() or 1
    if config.workers > cpus:
        logger.warning("otel-prov serve: --workers %d on %d CPU%s: more mapping processes than CPUs only "
                       "compete for them (and each takes memory); %d or fewer", config.workers, cpus,
                       "" if cpus == 1 else "s", cpus)
    if config.store.in_memory:
        logger.warning("otel-prov serve: the store is in memory (memory:): everything received is lost "
                       "when serve stops, and no other command can read it; give --store PATH to keep it")
    if not config.loopback and config.token is None:
        logger.warning("otel-prov serve: listening on %s without a token, as %s says: anyone who can "
                       "reach it can write to the store", config.host,
                       settings.SERVE_PUBLIC_WITHOUT_TOKEN.flag)
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
    # uvicorn logs a line per malformed request (a flood of them would flood the log); they are
    # counted in /health (http_connections.malformed) instead.  Its errors still show.
    logging.getLogger("uvicorn.error").setLevel(logging.ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m otel_prov.cli.serve`` (the same as ``otel-prov serve``)."""
    parser = argparse.ArgumentParser(prog="otel-prov serve", description=DESCRIPTION)
    configure(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
