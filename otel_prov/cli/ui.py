"""``otel-prov ui``: the read-only web view of the store (:mod:`otel_prov.web`), until Ctrl-C or
SIGTERM.  Once it listens it prints one line to stdout: ``otel-prov ui: serving URL (store SPEC)``."""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from .. import settings
from .common import CliError

HELP = "serve a read-only web view of the store (sessions, steps, pictures, SPARQL, JSON API)"

_FLAGS: tuple[tuple[settings.Option[Any], str], ...] = (
    (settings.STORE, "the store to read: 'oxigraph:PATH' or a path (never created; default "
                     "$XDG_DATA_HOME/otel-prov/store)"),
    (settings.UI_HOST, f"address to bind (default {settings.DEFAULT_HOST}: this machine only)"),
    (settings.UI_PORT, f"port (default {settings.DEFAULT_UI_PORT}; 0: any free port)"),
    (settings.UI_TOKEN, "require this token (a bearer header, or ?token= once in a browser); prefer the "
                        "environment variable: arguments are visible to other users"),
    (settings.JAEGER_URL, "Jaeger UI base URL, to link each session to its trace (e.g. "
                          "http://127.0.0.1:16686)"),
    (settings.UI_QUERY_TIMEOUT, "seconds a SPARQL query may run (default 10)"),
    (settings.UI_ROW_LIMIT, "rows of a SPARQL result shown (default 1000)"),
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "ui", help=HELP, description=HELP + ".  Every option falls back to the environment variable named "
        "in its help, then the default.  The store is opened afresh for each request, so sessions show "
        "up while agents run.")
    add_flags(parser)
    parser.set_defaults(func=cmd_ui)
    return parser


def add_flags(parser: argparse.ArgumentParser, *, shared: bool = True) -> None:
    """The view's flags; without the ``shared`` ones (``--store``, ``--jaeger-url``) when the
    command has them already (``demo``)."""
    for option, help_ in _FLAGS:
        if not shared and option in (settings.STORE, settings.JAEGER_URL):
            continue
        parser.add_argument(str(option.flag), help=f"{help_} ({option.env})")
    parser.add_argument("--public-without-token", action="store_true",
                        help="allow a non-loopback --host without a token (anyone who can reach it can "
                             "read every recorded session)")


def config_from(args: argparse.Namespace) -> settings.UiSettings:
    return settings.ui_settings(
        via="flag", store=args.store, host=args.host, port=args.port, token=args.token,
        jaeger_url=args.jaeger_url, query_timeout=args.query_timeout, row_limit=args.row_limit,
        public_without_token=args.public_without_token)


def cmd_ui(args: argparse.Namespace) -> int:
    return serve_view(config_from(args))


def serve_view(config: settings.UiSettings, stop: threading.Event | None = None) -> int:
    """Serve the view until ``stop`` is set, or SIGINT / SIGTERM (from the main thread)."""
    try:
        from ..web import create_app, runner  # Starlette, uvicorn: only when serving

        running = runner.start(create_app(config), config.host, config.port)
    except OSError as exc:
        raise CliError(f"cannot listen on {config.host}:{config.port}: {exc.strerror or exc}") from exc
    stop = stop or _stop_on_signals()
    url = running.url + "/" + (f"?token={config.token}" if config.token else "")
    print(f"otel-prov ui: serving {url} (store {config.store}; Ctrl-C stops)", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        running.stop()
    return 0


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
    return stop
