"""``otel-prov ui``: the read-only web view of the store (:mod:`otel_prov.web`), until Ctrl-C or
SIGTERM.  Once it listens it prints one line to stdout: ``otel-prov ui: serving URL (store SPEC)``."""

from __future__ import annotations

import argparse
import signal
import socket
import threading
from typing import Any

from .. import settings
from ..errors import StoreError, StoreNotFound
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
    (settings.UI_ALLOWED_HOSTS, "comma-separated host names requests may name besides IP addresses and "
                                "localhost (DNS rebinding protection; * for any)"),
    (settings.BLOB_DIR, "where the store's large values are (default: blobs/ in an on-disk store)"),
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
        if not shared and option in (settings.STORE, settings.JAEGER_URL, settings.BLOB_DIR):
            continue
        parser.add_argument(str(option.flag), help=f"{help_} ({option.env})")
    parser.add_argument("--public-without-token", action="store_true",
                        help="allow a non-loopback --host without a token (anyone who can reach it can "
                             "read every recorded session)")


def config_from(args: argparse.Namespace) -> settings.UiSettings:
    return settings.ui_settings(
        via="flag", store=args.store, host=args.host, port=args.port, token=args.token,
        jaeger_url=args.jaeger_url, query_timeout=args.query_timeout, row_limit=args.row_limit,
        public_without_token=args.public_without_token, allowed_hosts=args.allowed_hosts,
        blob_dir=getattr(args, "blob_dir", None))


def cmd_ui(args: argparse.Namespace) -> int:
    config = config_from(args)
    check_store(config)
    return serve_view(config)


def check_store(config: settings.UiSettings) -> None:
    """Refuse at start a store that cannot be read (a file, a damaged store, a server that refuses):
    every page would fail.  A store not created yet is fine (the view says so until it is)."""
    from ..stores import open_for_reading

    try:
        open_for_reading(config.store).close()
    except StoreNotFound:
        pass
    except StoreError as exc:
        raise CliError(str(exc)) from exc


def check_address(config: settings.UiSettings) -> None:
    """A :class:`CliError` now if the view could not listen where it is asked to (the port taken,
    an address not of this host), for commands that serve the view only after other work
    (``demo --ui``).  The port is bound and released at once, as the server will bind it."""
    if config.port == 0:
        return
    try:
        infos = socket.getaddrinfo(config.host, config.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
            probe.bind(address)
    except OSError as exc:
        raise _cannot_listen(config, exc) from exc


def _cannot_listen(config: settings.UiSettings, exc: OSError) -> CliError:
    return CliError(f"cannot listen on {config.host}:{config.port}: {exc.strerror or exc} "
                    f"(choose another with {settings.UI_PORT.flag} or {settings.UI_PORT.env})")


def serve_view(config: settings.UiSettings, stop: threading.Event | None = None) -> int:
    """Serve the view until ``stop`` is set, or SIGINT / SIGTERM (from the main thread).  The URL
    printed never holds the token (stdout is often a log): it says that one is needed instead."""
    try:
        from ..web import create_app, runner  # Starlette, uvicorn: only when serving

        running = runner.start(create_app(config), config.host, config.port)
    except OSError as exc:
        raise _cannot_listen(config, exc) from exc
    stop = stop or _stop_on_signals()
    needs = "; a token is required: open it once with ?token=... in a browser" if config.token else ""
    print(f"otel-prov ui: serving {running.url}/ (store {config.store}{needs}; Ctrl-C stops)", flush=True)
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
