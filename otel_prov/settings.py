"""Every option of otel-prov, in one place: its environment variable, its flag, its default, and how
its text is read.

One precedence rule for all of them: an explicit value (a keyword argument of the Python API, or a
command-line flag) > the option's environment variable > the default.  An empty variable counts as
unset.  A bad value is a :class:`~otel_prov.errors.ConfigError` that names where it came from (the
flag, the argument or the variable) and what would do.  :data:`ENV_VARS` lists every variable (the
tests clear them all).  The docs' option tables are generated from here (:func:`markdown_table`),
so each option's text is written once.
"""

from __future__ import annotations

import ipaddress
import os
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

from .errors import ConfigError
from .mapping.limits import DEFAULT_BLOB_THRESHOLD, DEFAULT_MAX_ATTRIBUTE_BYTES, MAX_ATTRIBUTE_BYTES_CEILING
from .mapping.policy import FIELDS, KEEP_ALL, MESSAGE_FIELDS, OMIT, ContentPolicy, Rule, parse_rules
from .mapping.redaction import BUILTIN, NAME, Detector, Redactor
from .model.profiles import PROFILES, SEED, check_profile
from .stores import (
    REMOTE_SCHEMES,
    BlobPlace,
    Remote,
    StoreSpec,
    blob_place,
    default_dir,
    default_store,
    parse_store,
)
from .stores.base import AUTO_SERVER, SERVER_KINDS

T = TypeVar("T")

OFF = "off"
"""A port set to this turns that transport off."""


@dataclass(frozen=True)
class Option(Generic[T]):
    """One option: ``env`` is its variable, ``flag`` its command-line flag (``None``: no flag),
    ``parse`` reads its text (raising :class:`ValueError` with the reason), ``default`` is its
    value when nothing is given (a callable is called each time)."""

    env: str
    flag: str | None
    parse: Callable[[str], T]
    default: T | Callable[[], T]
    doc: str = ""
    """What it does, as the docs' option tables say it (Markdown; generated from here)."""
    shown: str | None = None
    """The default as the docs show it (None: the default's own text; "none" for None, "off" for False)."""

    @property
    def shown_default(self) -> str:
        if self.shown is not None:
            return self.shown
        value: Any = self.default
        if value is None:
            return "none"
        if value is False:
            return "off"
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return f"`{value}`"

    @property
    def argument(self) -> str:
        """The keyword argument of the Python API that gives this option."""
        return (self.flag or self.env.removeprefix("OTEL_PROV_").lower()).lstrip("-").replace("-", "_")

    def get(self, given: Any = None, *, via: str = "argument") -> T:
        """The option's value: ``given`` (``None`` = not given) from a keyword argument (``via``
        ``"argument"``) or a flag (``via="flag"``), else the environment variable, else the default."""
        if given is not None:
            if not isinstance(given, (str, int, float, os.PathLike)) or isinstance(given, bool):
                return cast(T, given)  # already a value (a StoreSpec, ...)
            text = os.fspath(given) if isinstance(given, os.PathLike) else str(given)
            where = f"{self.flag} {text!r}" if via == "flag" and self.flag else f"{self.argument}={text!r}"
            return self._parse(text, where)
        text = os.environ.get(self.env, "").strip()
        if text:
            return self._parse(text, f"{self.env}={text!r}")
        return self.default() if callable(self.default) else self.default

    def _parse(self, text: str, where: str) -> T:
        try:
            return self.parse(text)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None


# -- readers ----------------------------------------------------------------------------------------


def _text(value: str) -> str:
    return value.strip()


def _web_url(value: str) -> str:
    """An http(s) base URL (the Jaeger UI's, the web view's), without a trailing slash."""
    url = value.strip()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError("expected a base URL such as http://localhost:16686")
    return url.rstrip("/")


def _profile(value: str) -> str:
    value = value.strip().lower()
    try:
        return check_profile(value)
    except ValueError:
        raise ValueError(f"unknown profile {value!r}: expected one of {', '.join(PROFILES)}") from None


def _store(value: str) -> StoreSpec:
    return parse_store(value)


_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")


@dataclass(frozen=True)
class StoreOption(Option[StoreSpec]):
    """The store: an ``http:`` / ``https:`` store also gets the options of a store on a server
    (:func:`remote_settings`), read from the environment."""

    def get(self, given: Any = None, *, via: str = "argument") -> StoreSpec:
        spec = super().get(given, via=via)
        if spec.scheme in REMOTE_SCHEMES and spec.remote is None:
            return replace(spec, remote=remote_settings())
        return spec

    def _parse(self, text: str, where: str) -> StoreSpec:
        return super()._parse(text, _USERINFO.sub("***@", where))  # never print a password


def _server(value: str) -> str:
    value = value.strip().lower()
    if value != AUTO_SERVER and value not in SERVER_KINDS:
        raise ValueError(f"expected {AUTO_SERVER} or one of {', '.join(SERVER_KINDS)}")
    return value


def _file(value: str) -> Path:
    path = _path(value)
    if not path.is_file():
        raise ValueError("no such file")
    return path


def _port(value: str) -> int | None:
    text = str(value).strip()
    if text.lower() == OFF:
        return None
    try:
        port = int(text)
    except ValueError:
        raise ValueError(f"expected a port number 0-65535 or '{OFF}'") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"expected a port 0-65535 (0 = any free port) or '{OFF}'")
    return port


def _at_least(minimum: float, kind: Callable[[str], float], what: str,
              maximum: float | None = None) -> Callable[[str], Any]:
    """A reader of numbers (``kind``: ``float`` or ``int``) that are at least ``minimum`` (and at
    most ``maximum``, if given)."""

    def read(value: str) -> Any:
        try:
            number = kind(value)
        except ValueError:
            raise ValueError(f"expected {what}") from None
        if not number >= minimum:
            raise ValueError(f"expected {what} >= {minimum:g}")
        if maximum is not None and number > maximum:
            raise ValueError(f"expected {what} from {minimum:g} to {maximum:g}")
        return number

    return read


def _bytes_between(minimum: int, maximum: int) -> Callable[[str], int]:
    """A reader of a byte count from ``minimum`` to ``maximum``."""
    at_least = _count(minimum)

    def read(value: str) -> int:
        number = int(at_least(value))
        if number > maximum:
            raise ValueError(f"expected a whole number of bytes <= {maximum}")
        return number

    return read


def _number(minimum: float) -> Callable[[str], float]:
    return _at_least(minimum, float, "a number")


def _count(minimum: int) -> Callable[[str], int]:
    return _at_least(minimum, int, "a whole number")


def _flag(value: str) -> bool:
    text = value.strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _names(value: str) -> tuple[str, ...]:
    return tuple(name.strip().lower() for name in value.split(",") if name.strip())


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d|w|y)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400,
                 "y": 365 * 86400}


def parse_duration(value: str) -> timedelta:
    """``90d``, ``12h``, ``30m``, ``2w``, ``1y`` (365 days), ``45s``; a :class:`ValueError` saying so
    otherwise."""
    match = _DURATION.match(value or "")
    if not match:
        raise ValueError(f"{value!r} is not a duration (for example 90d, 12h, 2w, 1y)")
    return timedelta(seconds=float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()])


def _path(value: str) -> Path:
    return Path(os.path.expanduser(value.strip()))


def _blob_place(value: str) -> BlobPlace:
    place = blob_place(value.strip())
    return _path(str(place)) if isinstance(place, Path) else place


# -- the options ------------------------------------------------------------------------------------

DEFAULT_HOST = "127.0.0.1"
DEFAULT_GRPC_PORT = 4317
DEFAULT_HTTP_PORT = 4318
DEFAULT_MAX_INFLIGHT = 64
DEFAULT_ACK_TIMEOUT = 30.0
DEFAULT_DRAIN_TIMEOUT = 30.0
DEFAULT_MEMORY_BUDGET_MIB = 512

# The variable, the flag (None: none), how its text is read, the default, what it does (the docs'
# tables are generated from these: tests/system/test_docs.py).
STORE: StoreOption = StoreOption(
    "OTEL_PROV_STORE", "--store", _store, default_store,
    "`oxigraph:PATH` (the persistent embedded store, created on first write, never on a read), `memory:`, "
    "a path, or the URL of a dataset on a SPARQL 1.1 server: `http(s)://HOST:7878` (Oxigraph server), "
    "`http(s)://HOST:3030/DATASET` (Fuseki)",
    "`oxigraph:$XDG_DATA_HOME/otel-prov/store` (`~/.local/share/otel-prov/store`)")
PROFILE: Option[str] = Option(
    "OTEL_PROV_PROFILE", "--profile", _profile, SEED,
    "`seed` (the spec's triples), `strict` (valid PROV-O) or `trustgraph` (TrustGraph 2.11's layout, "
    "which its own reader follows)")
COLLECTION: Option[str | None] = Option(
    "OTEL_PROV_COLLECTION", "--collection", _text, None,
    "the collection the CLI reads (`demo`: the one it writes, default `default`)", "all collections")
JAEGER_URL: Option[str | None] = Option(
    "OTEL_PROV_JAEGER_URL", "--jaeger-url", _web_url, None,
    "the Jaeger UI's base URL: `otel-prov show` prints the trace's link, the web view links to it")
SERVE_HOST: Option[str] = Option(
    "OTEL_PROV_SERVE_HOST", "--host", _text, DEFAULT_HOST, "the address both transports bind")
SERVE_GRPC_PORT: Option[int | None] = Option(
    "OTEL_PROV_SERVE_GRPC_PORT", "--grpc-port", _port, DEFAULT_GRPC_PORT,
    "OTLP/gRPC port; `0` = any free port, `off` = no gRPC")
SERVE_HTTP_PORT: Option[int | None] = Option(
    "OTEL_PROV_SERVE_HTTP_PORT", "--http-port", _port, DEFAULT_HTTP_PORT,
    "OTLP/HTTP port (and `/health`); `0` = any free port, `off` = no HTTP")
SERVE_TOKEN: Option[str | None] = Option(
    "OTEL_PROV_SERVE_TOKEN", "--token", _text, None,
    "require `authorization: Bearer TOKEN`; prefer the variable")
SERVE_TLS_CERT: Option[Path | None] = Option(
    "OTEL_PROV_SERVE_TLS_CERT", "--tls-cert", _path, None,
    "PEM certificate chain (with `--tls-key`: TLS on both ports)")
SERVE_TLS_KEY: Option[Path | None] = Option(
    "OTEL_PROV_SERVE_TLS_KEY", "--tls-key", _path, None, "PEM private key")
SERVE_MAX_INFLIGHT: Option[int] = Option(
    "OTEL_PROV_SERVE_MAX_INFLIGHT", "--max-inflight", _count(1), DEFAULT_MAX_INFLIGHT,
    "requests handled at once; more are answered UNAVAILABLE/503")
SERVE_ACK_TIMEOUT: Option[float] = Option(
    "OTEL_PROV_SERVE_ACK_TIMEOUT", "--ack-timeout", _number(0.1), DEFAULT_ACK_TIMEOUT,
    "seconds a request waits for its commit before UNAVAILABLE (a client's gRPC deadline shortens it)")
SERVE_DRAIN_TIMEOUT: Option[float] = Option(
    "OTEL_PROV_SERVE_DRAIN_TIMEOUT", "--drain-timeout", _number(0), DEFAULT_DRAIN_TIMEOUT,
    "seconds SIGTERM waits for in-flight requests and the store to close (at least 5 more to sync the "
    "log; what is left to fold is folded at the next start)")
SERVE_MEMORY_BUDGET: Option[int] = Option(
    "OTEL_PROV_SERVE_MEMORY_BUDGET", "--memory-budget", _count(16), DEFAULT_MEMORY_BUDGET_MIB,
    "MiB of request data held at once (bodies, decoded requests, N-Quads queued); past it, UNAVAILABLE/503")
"""MiB of request data serve holds at once (bodies, decoded requests, N-Quads queued for the store)."""
DEFAULT_WORKERS = 1
"""The default of ``--workers``: 1, mapping in the serve process (workers are opt-in: ``0`` is one
per CPU, at most :data:`MAX_AUTO_WORKERS`)."""
MAX_AUTO_WORKERS = 4
MAX_WORKERS = 64
"""The most mapping processes ``--workers`` starts (each is a Python process with its own memory)."""
SERVE_WORKERS: Option[int] = Option(
    "OTEL_PROV_SERVE_WORKERS", "--workers", _at_least(0, int, "a whole number", MAX_WORKERS), DEFAULT_WORKERS,
    "processes that map into an on-disk store (\"Mapping workers\"); `1` = in the serve process (always, "
    "for `memory:`); `0` = one per CPU, at most 4; at most 64")
"""Processes that map (an on-disk store; ``memory:`` is mapped in the serve process); 0: one per
CPU, at most :data:`MAX_AUTO_WORKERS`."""
SERVE_PUBLIC_WITHOUT_TOKEN: Option[bool] = Option(
    "OTEL_PROV_SERVE_PUBLIC_WITHOUT_TOKEN", "--public-without-token", _flag, False,
    "listen beyond loopback without a token")
"""Listen on an address other than loopback without a token (refused otherwise)."""
SERVE_ALLOWED_HOSTS: Option[tuple[str, ...]] = Option(
    "OTEL_PROV_SERVE_ALLOWED_HOSTS", "--allowed-hosts", _names, (),
    "comma-separated host names HTTP requests may name without a token (IP addresses and `localhost` "
    "always)", "none")
"""Host names (besides localhost and IP addresses) an HTTP request may name without a token."""
SERVE_PRUNE_OLDER_THAN: Option[timedelta | None] = Option(
    "OTEL_PROV_SERVE_PRUNE_OLDER_THAN", "--prune-older-than", parse_duration, None,
    "retention: erase by itself, every `--prune-interval`, the sessions that started longer ago than "
    "this (`90d`, `12h`, `2w`, `1y`); held ones kept ([store.md](store.md), \"Retention and erasure\")",
    "off")
"""Serve's own retention: the sessions older than this are erased by it, on a schedule."""
SERVE_PRUNE_INTERVAL: Option[timedelta] = Option(
    "OTEL_PROV_SERVE_PRUNE_INTERVAL", "--prune-interval", parse_duration, timedelta(hours=1),
    "how often `--prune-older-than` runs (the first time a minute after serve starts)", "`1h`")
DEFAULT_UI_PORT = 8080
UI_HOST: Option[str] = Option(
    "OTEL_PROV_UI_HOST", "--host", _text, DEFAULT_HOST,
    "the address the view binds; a non-loopback address needs a token, or `--public-without-token`")
UI_PORT: Option[int] = Option(
    "OTEL_PROV_UI_PORT", "--port", _count(0), DEFAULT_UI_PORT,
    "`0`: any free port (the printed URL says which)")
UI_TOKEN: Option[str | None] = Option(
    "OTEL_PROV_UI_TOKEN", "--token", _text, None,
    "required on every request: `Authorization: Bearer TOKEN`, or once `?token=TOKEN` in a browser (it "
    "sets an HttpOnly cookie and redirects); prefer the variable. The URL printed at start never holds it")
UI_QUERY_TIMEOUT: Option[float] = Option(
    "OTEL_PROV_UI_QUERY_TIMEOUT", "--query-timeout", _number(0.1), 10.0, "seconds a SPARQL query may run")
UI_ALLOWED_HOSTS: Option[tuple[str, ...]] = Option(
    "OTEL_PROV_UI_ALLOWED_HOSTS", "--allowed-hosts", _names, (),
    "comma-separated host names a request may name (IP addresses and `localhost` always; `*`: any); checked "
    "unless the view is public with a token", "none")
UI_ROW_LIMIT: Option[int] = Option(
    "OTEL_PROV_UI_ROW_LIMIT", "--row-limit", _count(1), 1000, "rows of a SPARQL result shown")
MAX_ATTRIBUTE_BYTES: Option[int] = Option(
    "OTEL_PROV_MAX_ATTRIBUTE_BYTES", "--max-attribute-bytes",
    _bytes_between(1024, MAX_ATTRIBUTE_BYTES_CEILING), DEFAULT_MAX_ATTRIBUTE_BYTES,
    "the largest attribute value a span may carry: a span with a larger one is not stored (rejected, "
    "counted, never truncated: [limits.md](limits.md))", "`4194304` (4 MiB)")
"""The largest attribute value a span may carry (UTF-8 bytes; an array or map counted whole): a span
with a larger one is rejected, never truncated (:mod:`otel_prov.mapping.limits`)."""
BLOB_THRESHOLD: Option[int] = Option(
    "OTEL_PROV_BLOB_THRESHOLD", "--blob-threshold", _count(0), DEFAULT_BLOB_THRESHOLD,
    "a content value (question, thought, arguments, observation, answer, ...) of more UTF-8 bytes is "
    "stored once as a content-addressed blob beside the store, the graph keeping its hash, size and a "
    "preview ([store.md](store.md#large-values)); `0` = never", "`65536` (64 KiB)")
"""Above this many bytes a content value is stored by reference (:mod:`otel_prov.mapping.blobs`)."""
BLOB_DIR: Option[BlobPlace | None] = Option(
    "OTEL_PROV_BLOB_DIR", "--blob-dir", _blob_place, None,
    "where the blobs go: a directory, or `s3://BUCKET/PREFIX` (an S3-compatible bucket: the `s3` extra; "
    "endpoint and credentials as boto3 takes them, `AWS_ENDPOINT_URL_S3`, `AWS_ACCESS_KEY_ID`...); "
    "default `blobs/` inside an on-disk store's directory; a store on a server or in memory has none "
    "unless this names one (its large values then stay inline)")
"""Where the blobs of large values go (:func:`otel_prov.stores.blobs.default_dir`)."""
EXPORT_WAIT_CHOICES = ("auto", "always", "never")


def _export_wait(value: str) -> str:
    value = value.strip().lower()
    if value not in EXPORT_WAIT_CHOICES:
        raise ValueError(f"expected one of {', '.join(EXPORT_WAIT_CHOICES)}")
    return value


EXPORT_WAIT: Option[str] = Option(
    "OTEL_PROV_EXPORT_WAIT", None, _export_wait, "auto",
    "a store on a server: whether the exporter's `export()` waits for the server to have the spans before "
    "it answers SUCCESS (at most `OTEL_PROV_EXPORT_WAIT_TIMEOUT`; FAILURE past it): `auto` when the SDK's "
    "`BatchSpanProcessor` calls it (its own thread: the application's are never held), `always`, or "
    "`never` (SUCCESS once queued in memory, which a `kill -9` loses)")
EXPORT_WAIT_TIMEOUT: Option[float] = Option(
    "OTEL_PROV_EXPORT_WAIT_TIMEOUT", None, _number(0.1), 30.0,
    "seconds `export()` waits for a store on a server (the SDK's own export timeout is 30 s)")
# A store on a server (OTEL_PROV_STORE=http(s)://...): environment variables only, so that secrets
# stay out of command lines.
STORE_SERVER: Option[str] = Option(
    "OTEL_PROV_STORE_SERVER", None, _server, "auto",
    "a store on a server: `oxigraph`, `fuseki`, or `sparql` (any SPARQL 1.1 server whose query and update "
    "endpoint is the URL itself); `auto` tells Oxigraph and Fuseki apart by their answer")
STORE_USER: Option[str | None] = Option(
    "OTEL_PROV_STORE_USER", None, _text, None, "HTTP basic authentication to the server: the user")
STORE_PASSWORD: Option[str | None] = Option(
    "OTEL_PROV_STORE_PASSWORD", None, str, None, "HTTP basic authentication to the server: the password")
STORE_TOKEN: Option[str | None] = Option(
    "OTEL_PROV_STORE_TOKEN", None, _text, None,
    "`Authorization: Bearer` to the server (instead of user and password)")
STORE_CA: Option[Path | None] = Option(
    "OTEL_PROV_STORE_CA", None, _file, None,
    "PEM file of the CA(s) that signed the server's certificate (`https:`)", "the system's CAs")
STORE_CLIENT_CERT: Option[Path | None] = Option(
    "OTEL_PROV_STORE_CLIENT_CERT", None, _file, None,
    "a client certificate (PEM) for servers that require one")
STORE_CLIENT_KEY: Option[Path | None] = Option(
    "OTEL_PROV_STORE_CLIENT_KEY", None, _file, None, "the client certificate's private key (PEM)")
DEFAULT_STORE_TIMEOUT = 60.0
STORE_TIMEOUT: Option[float] = Option(
    "OTEL_PROV_STORE_TIMEOUT", None, _number(0.1), DEFAULT_STORE_TIMEOUT,
    "seconds one request to the server may take (connecting: at most 10)")
STORE_BULK_LOAD: Option[bool] = Option(
    "OTEL_PROV_STORE_BULK_LOAD", None, _flag, False,
    "write with the Oxigraph server's bulk loader: several times faster, not atomic ([sizing.md](sizing.md))")
"""The Oxigraph server's bulk loader for writes: about 5x faster, not atomic (docs/sizing.md)."""
EXAMPLE_MODEL: Option[str | None] = Option(
    "OTEL_PROV_EXAMPLE_MODEL", None, _text, None,
    "the example agents ask this model of an OpenAI-compatible endpoint (`OPENAI_BASE_URL`, "
    "`OPENAI_API_KEY`) instead of following their offline policy")
"""The examples' agent asks this model of an OpenAI-compatible endpoint (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``) instead of following its offline policy."""

# -- what of the content is stored (docs/privacy.md) --------------------------------------------------

REDACTORS_GROUP = "otel_prov.redactors"
"""The entry point group of redaction plug-ins: each entry point names a detector (an object with a
``name`` and ``find(text)``, or a class or function that makes one; docs/privacy.md)."""
_ON, _OFF = ("on", "true", "yes", "1", "all"), ("off", "false", "no", "0", "none")


def plugin_detectors() -> dict[str, Detector]:
    """The installed plug-ins' detectors (entry point group :data:`REDACTORS_GROUP`), by name;
    :class:`ValueError` naming a plug-in that does not load or is not a detector."""
    from importlib.metadata import entry_points

    found: dict[str, Detector] = {}
    for point in sorted(entry_points(group=REDACTORS_GROUP), key=lambda p: p.name):
        try:
            loaded = point.load()
            detector = loaded() if isinstance(loaded, type) or not isinstance(loaded, Detector) else loaded
        except Exception as exc:
            raise ValueError(f"the redaction plug-in {point.name!r} ({point.value}) does not load: "
                             f"{type(exc).__name__}: {exc}") from None
        if not isinstance(detector, Detector) or detector.name != point.name:
            raise ValueError(f"the redaction plug-in {point.name!r} ({point.value}) is not a detector "
                             f"named {point.name!r} (an object with name and find(text))")
        if point.name in BUILTIN or not NAME.fullmatch(point.name):
            raise ValueError(f"the redaction plug-in {point.name!r} ({point.value}): a detector's name is "
                             "lowercase letters, digits and '-', and not a built-in one's")
        found[point.name] = detector
    return found


def _detectors(value: str) -> tuple[Detector, ...]:
    names = [name.strip().lower() for name in value.split(",") if name.strip()]
    if len(names) == 1 and names[0] in _OFF:
        return ()
    plugins = plugin_detectors() if any(name not in BUILTIN for name in names) or names[0] in _ON else {}
    every = {**BUILTIN, **plugins}
    if len(names) == 1 and names[0] in _ON:
        return tuple(every.values())
    unknown = [name for name in names if name not in every]
    if unknown:
        raise ValueError(f"unknown detector {unknown[0]!r}: expected on, off, or some of "
                         f"{', '.join(every)}")
    return tuple(every[name] for name in every if name in names)  # built-ins first, as on


def _genai_capture(value: str) -> bool | None:
    """The GenAI instrumentations' switch: False when it says content is not captured (``false``,
    ``NO_CONTENT``), True when it is (``true``, ``SPAN_ONLY``, ``EVENT_ONLY``, ``SPAN_AND_EVENT``);
    another value is not ours to judge: no effect."""
    text = value.strip().lower()
    if text in ("false", "no_content"):
        return False
    if text in ("true", "span_only", "event_only", "span_and_event"):
        return True
    return None


CONTENT_POLICY: Option[dict[str, Rule]] = Option(
    "OTEL_PROV_CONTENT_POLICY", "--content-policy", parse_rules, dict,
    "what of each field's text is stored: `keep`, `truncate:N` (its first N characters), `sha256` (the "
    "SHA-256 of its text, hex) or `omit`, for every field or per field (`thought=sha256,observation="
    "truncate:500`, `omit,question=keep`; fields: " + ", ".join(FIELDS) + "); recorded on each node "
    "([privacy.md](privacy.md))",
    "`keep` (`omit` where `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` says no content)")
REDACT: Option[tuple[Detector, ...]] = Option(
    "OTEL_PROV_REDACT", "--redact", _detectors, (),
    "replace secrets and personal data by typed markers (`[email]`) before anything is stored: `on` (every "
    "built-in detector and installed plug-in), `off`, or some of " + ", ".join(BUILTIN) + " and the "
    "plug-ins' names, comma-separated ([privacy.md](privacy.md))", "off")
GENAI_CAPTURE_CONTENT: Option[bool | None] = Option(
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None, _genai_capture, None,
    "the OpenTelemetry GenAI instrumentations' content switch: `false` or `NO_CONTENT` (content not "
    "captured) make `omit` the rule of every field but `error` that `OTEL_PROV_CONTENT_POLICY` does not "
    "name, so nothing it says was not captured is stored; other values change nothing", "unset")


def policy(content_policy: Any = None, redact: Any = None, *, via: str = "argument") -> ContentPolicy:
    """The content policy (docs/privacy.md): each field's rule from ``content_policy`` (a flag or
    argument, else ``OTEL_PROV_CONTENT_POLICY``); a field it does not name follows its bare rule, else
    ``omit`` when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says content is not captured,
    else ``keep``; redaction from ``redact`` (else ``OTEL_PROV_REDACT``)."""
    rules = CONTENT_POLICY.get(content_policy, via=via)
    not_captured = GENAI_CAPTURE_CONTENT.get() is False

    def rule(name: str) -> Rule:
        if name in rules or "*" in rules:
            return rules.get(name, rules.get("*", KEEP_ALL))
        return Rule(OMIT) if not_captured and name in MESSAGE_FIELDS else KEEP_ALL

    detectors = REDACT.get(redact, via=via)
    return ContentPolicy({name: rule(name) for name in FIELDS}, Redactor(detectors) if detectors else None)


OPTIONS: tuple[Option[Any], ...] = (
    STORE, PROFILE, COLLECTION, JAEGER_URL,
    SERVE_HOST, SERVE_GRPC_PORT, SERVE_HTTP_PORT, SERVE_TOKEN, SERVE_TLS_CERT, SERVE_TLS_KEY,
    SERVE_MAX_INFLIGHT, SERVE_ACK_TIMEOUT, SERVE_DRAIN_TIMEOUT, SERVE_MEMORY_BUDGET, SERVE_WORKERS,
    SERVE_PUBLIC_WITHOUT_TOKEN, SERVE_ALLOWED_HOSTS, SERVE_PRUNE_OLDER_THAN, SERVE_PRUNE_INTERVAL,
    MAX_ATTRIBUTE_BYTES,
    UI_HOST, UI_PORT, UI_TOKEN, UI_QUERY_TIMEOUT, UI_ROW_LIMIT, UI_ALLOWED_HOSTS, EXAMPLE_MODEL,
    STORE_SERVER, STORE_USER, STORE_PASSWORD, STORE_TOKEN, STORE_CA, STORE_CLIENT_CERT, STORE_CLIENT_KEY,
    STORE_TIMEOUT, STORE_BULK_LOAD, EXPORT_WAIT, EXPORT_WAIT_TIMEOUT,
    CONTENT_POLICY, REDACT, GENAI_CAPTURE_CONTENT, BLOB_THRESHOLD, BLOB_DIR,
)
ENV_VARS: tuple[str, ...] = tuple(option.env for option in OPTIONS)
"""Every environment variable otel-prov reads (besides ``XDG_DATA_HOME`` for the default store)."""

TABLES: dict[str, tuple[Option[Any], ...]] = {
    "exporter and CLI": (STORE, PROFILE, COLLECTION, JAEGER_URL, MAX_ATTRIBUTE_BYTES, CONTENT_POLICY, REDACT,
                         GENAI_CAPTURE_CONTENT, STORE_SERVER,
                         STORE_USER, STORE_PASSWORD, STORE_TOKEN, STORE_CA, STORE_CLIENT_CERT,
                         STORE_CLIENT_KEY, STORE_TIMEOUT, STORE_BULK_LOAD, EXPORT_WAIT, EXPORT_WAIT_TIMEOUT,
                         BLOB_THRESHOLD, BLOB_DIR),
    "serve": (STORE, PROFILE, SERVE_HOST, SERVE_GRPC_PORT, SERVE_HTTP_PORT, SERVE_TOKEN, SERVE_TLS_CERT,
              SERVE_TLS_KEY, SERVE_MAX_INFLIGHT, SERVE_ACK_TIMEOUT, SERVE_DRAIN_TIMEOUT, SERVE_MEMORY_BUDGET,
              SERVE_WORKERS, MAX_ATTRIBUTE_BYTES, CONTENT_POLICY, REDACT, GENAI_CAPTURE_CONTENT,
              SERVE_ALLOWED_HOSTS, SERVE_PUBLIC_WITHOUT_TOKEN, SERVE_PRUNE_OLDER_THAN, SERVE_PRUNE_INTERVAL,
              BLOB_THRESHOLD, BLOB_DIR),
    "ui": (STORE, UI_HOST, UI_PORT, UI_TOKEN, JAEGER_URL, UI_QUERY_TIMEOUT, UI_ROW_LIMIT, UI_ALLOWED_HOSTS,
           BLOB_DIR),
    "examples": (EXAMPLE_MODEL,),
}
"""The options each part reads, as the docs' tables list them (each table generated by
:func:`markdown_table`; the pages: docs/configuration.md, docs/collector.md, docs/ui.md,
examples/README.md)."""


def markdown_table(name: str) -> str:
    """The Markdown table of the options of :data:`TABLES` ``[name]``: variable, flag, default, what it
    does -- one text per option, whichever page shows it."""
    rows = ["| Variable | Flag | Default | Meaning |", "|---|---|---|---|"]
    for option in TABLES[name]:
        flag = f"`{option.flag}`" if option.flag else ""
        rows.append(f"| `{option.env}` | {flag} | {option.shown_default} | {option.doc} |")
    return "\n".join(rows) + "\n"



def remote_settings() -> Remote:
    """How to use a store on a server, from the ``OTEL_PROV_STORE_*`` variables."""
    user, password, token = STORE_USER.get(), STORE_PASSWORD.get(), STORE_TOKEN.get()
    if token and (user or password):
        raise ConfigError(f"give either {STORE_TOKEN.env} (bearer) or {STORE_USER.env} and "
                          f"{STORE_PASSWORD.env} (basic), not both")
    if (user is None) != (password is None):
        raise ConfigError(f"basic authentication needs both {STORE_USER.env} and {STORE_PASSWORD.env}")
    cert, key = STORE_CLIENT_CERT.get(), STORE_CLIENT_KEY.get()
    if key is not None and cert is None:
        raise ConfigError(f"{STORE_CLIENT_KEY.env} without {STORE_CLIENT_CERT.env}")
    default = default_store().path
    return Remote(user=user, password=password, token=token, ca_file=STORE_CA.get(), client_cert=cert,
                  client_key=key, timeout=STORE_TIMEOUT.get(), server=STORE_SERVER.get(),
                  bulk_load=STORE_BULK_LOAD.get(), local_dir=default.parent if default is not None else None)


# -- otel-prov serve --------------------------------------------------------------------------------

DEFAULT_MAX_PENDING_BYTES = 128 * 1024 * 1024
"""Past this many N-Quads bytes not yet written, serve refuses new requests (retryable)."""
DEFAULT_MEMORY_BUDGET = DEFAULT_MEMORY_BUDGET_MIB * 1024 * 1024
"""The default of ``--memory-budget``, in bytes."""


@dataclass(frozen=True, slots=True)
class ServeSettings:
    """Everything ``otel-prov serve`` needs; a port of ``None`` turns that transport off, 0 picks a
    free one."""

    store: StoreSpec
    profile: str
    host: str = DEFAULT_HOST
    grpc_port: int | None = DEFAULT_GRPC_PORT
    http_port: int | None = DEFAULT_HTTP_PORT
    token: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    max_inflight: int = DEFAULT_MAX_INFLIGHT
    max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES
    ack_timeout: float = DEFAULT_ACK_TIMEOUT
    drain_timeout: float = DEFAULT_DRAIN_TIMEOUT
    max_attribute_bytes: int = DEFAULT_MAX_ATTRIBUTE_BYTES
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    """Bytes (the option is in MiB)."""
    public_without_token: bool = False
    allowed_hosts: tuple[str, ...] = ()
    workers: int = DEFAULT_WORKERS
    """Mapping processes (:mod:`otel_prov.serve.workers`); 1: mapping in the serve process; 0: one
    per CPU (at most :data:`MAX_AUTO_WORKERS`)."""
    policy: ContentPolicy = field(default_factory=ContentPolicy)
    """What of the content reaches the store (:func:`policy`)."""
    prune_older_than: timedelta | None = None
    """Serve's own retention (None: off)."""
    prune_interval: timedelta = timedelta(hours=1)
    blob_threshold: int = DEFAULT_BLOB_THRESHOLD
    """Content values of more bytes are stored by reference (docs/store.md, "Large values")."""
    blob_dir: BlobPlace | None = None
    """Where (None: ``blobs/`` in an on-disk store; a store on a server then keeps them inline)."""

    @property
    def blob_store_dir(self) -> BlobPlace | None:
        """The blob directory serve writes to: None when values stay inline."""
        if not self.blob_threshold:
            return None
        return default_dir(self.store, self.blob_dir)

    @property
    def mapping_workers(self) -> int:
        """How many processes map: :attr:`workers`, or one per CPU; 1 for a store that lives in
        this process (``memory:``) or is not a log on disk."""
        if self.store.scheme != "oxigraph" or self.store.path is None:
            return 1
        return self.workers or min(os.cpu_count() or 1, MAX_AUTO_WORKERS)

    @property
    def loopback(self) -> bool:
        """Whether both transports listen on loopback only."""
        return is_loopback(self.host)

    def address(self, port: int | None) -> str:
        """``host:port`` (an IPv6 host in brackets)."""
        host = self.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"{host}:{port}"


def serve_settings(*, via: str = "argument", store: Any = None, profile: Any = None, host: Any = None,
                   grpc_port: Any = None, http_port: Any = None, token: Any = None, tls_cert: Any = None,
                   tls_key: Any = None, max_inflight: Any = None, ack_timeout: Any = None,
                   drain_timeout: Any = None, max_attribute_bytes: Any = None, memory_budget: Any = None,
                   public_without_token: Any = None, allowed_hosts: Any = None,
                   workers: Any = None, content_policy: Any = None, redact: Any = None,
                   prune_older_than: Any = None, prune_interval: Any = None, blob_threshold: Any = None,
                   blob_dir: Any = None) -> ServeSettings:
    """The settings of ``otel-prov serve``: each value given (``None`` = not given, ``via``: from
    keyword arguments or flags) over its environment variable over its default."""
    cert = SERVE_TLS_CERT.get(tls_cert, via=via)
    key = SERVE_TLS_KEY.get(tls_key, via=via)
    if bool(cert) != bool(key):
        raise ConfigError(f"TLS needs both a certificate and a key ({SERVE_TLS_CERT.flag}/"
                          f"{SERVE_TLS_CERT.env} and {SERVE_TLS_KEY.flag}/{SERVE_TLS_KEY.env}); "
                          "only one was given")
    for path in (cert, key):
        if path is not None and not path.is_file():
            raise ConfigError(f"TLS file {str(path)!r} does not exist")
    settings = ServeSettings(
        store=STORE.get(store, via=via),
        profile=PROFILE.get(profile, via=via),
        host=SERVE_HOST.get(host, via=via),
        grpc_port=SERVE_GRPC_PORT.get(grpc_port, via=via),
        http_port=SERVE_HTTP_PORT.get(http_port, via=via),
        token=SERVE_TOKEN.get(token, via=via),
        tls_cert=cert,
        tls_key=key,
        max_inflight=SERVE_MAX_INFLIGHT.get(max_inflight, via=via),
        ack_timeout=SERVE_ACK_TIMEOUT.get(ack_timeout, via=via),
        drain_timeout=SERVE_DRAIN_TIMEOUT.get(drain_timeout, via=via),
        max_attribute_bytes=MAX_ATTRIBUTE_BYTES.get(max_attribute_bytes, via=via),
        memory_budget=SERVE_MEMORY_BUDGET.get(memory_budget, via=via) * 1024 * 1024,
        public_without_token=SERVE_PUBLIC_WITHOUT_TOKEN.get(public_without_token, via=via),
        allowed_hosts=SERVE_ALLOWED_HOSTS.get(allowed_hosts, via=via),
        workers=SERVE_WORKERS.get(workers, via=via),
        policy=policy(content_policy, redact, via=via),
        prune_older_than=SERVE_PRUNE_OLDER_THAN.get(prune_older_than, via=via),
        prune_interval=SERVE_PRUNE_INTERVAL.get(prune_interval, via=via),
        blob_threshold=BLOB_THRESHOLD.get(blob_threshold, via=via),
        blob_dir=BLOB_DIR.get(blob_dir, via=via),
    )
    if settings.grpc_port is None and settings.http_port is None:
        raise ConfigError("both transports are off: give a gRPC or an HTTP port")
    check_exposure(settings.host, settings.token, allowed=settings.public_without_token,
                   flag=f"{SERVE_PUBLIC_WITHOUT_TOKEN.flag} ({SERVE_PUBLIC_WITHOUT_TOKEN.env}=true)",
                   token_option=SERVE_TOKEN)
    return settings


# -- binding beyond this machine ----------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable from this machine only."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None, *, allowed: bool, flag: str,
                   token_option: Option[Any]) -> None:
    """Refuse to listen beyond loopback without a token unless the operator said so (``allowed``,
    given by ``flag``): anyone who can reach the address would be let in."""
    if is_loopback(host) or token or allowed:
        return
    raise ConfigError(f"refusing to listen on {host} without a token: anyone who can reach it would be "
                      f"let in; set {token_option.env} (or {token_option.flag}), or pass {flag} to "
                      "allow it")


# -- otel-prov ui -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UiSettings:
    """Everything ``otel-prov ui`` needs (read-only: the store is never created or written)."""

    store: StoreSpec
    host: str = DEFAULT_HOST
    port: int = DEFAULT_UI_PORT
    token: str | None = None
    jaeger_url: str | None = None
    query_timeout: float = 10.0
    row_limit: int = 1000
    allowed_hosts: tuple[str, ...] = ()
    blob_dir: BlobPlace | None = None
    """Where the store's large values are (None: ``blobs/`` in an on-disk store)."""


def ui_settings(*, via: str = "argument", store: Any = None, host: Any = None, port: Any = None,
                token: Any = None, jaeger_url: Any = None, query_timeout: Any = None,
                row_limit: Any = None, public_without_token: bool = False,
                allowed_hosts: Any = None, blob_dir: Any = None) -> UiSettings:
    """The settings of ``otel-prov ui``: each value given over its environment variable over its
    default; a non-loopback host needs a token (or ``public_without_token``)."""
    given: dict[str, tuple[Option[Any], Any]] = {
        "store": (STORE, store), "host": (UI_HOST, host), "port": (UI_PORT, port), "token": (UI_TOKEN, token),
        "jaeger_url": (JAEGER_URL, jaeger_url), "query_timeout": (UI_QUERY_TIMEOUT, query_timeout),
        "row_limit": (UI_ROW_LIMIT, row_limit), "allowed_hosts": (UI_ALLOWED_HOSTS, allowed_hosts),
        "blob_dir": (BLOB_DIR, blob_dir)}
    config = UiSettings(**{name: option.get(value, via=via) for name, (option, value) in given.items()})
    if config.port > 65535:
        raise ConfigError(f"{UI_PORT.flag}: expected a port 0-65535 (0 = any free port)")
    if config.store.in_memory:
        raise ConfigError("the store 'memory:' lives inside the process that writes it; give an on-disk "
                          f"store with --store or {STORE.env}")
    check_exposure(config.host, config.token, allowed=public_without_token,
                   flag="--public-without-token", token_option=UI_TOKEN)
    return config
