"""The HTTP transport of stores on a server (:mod:`.sparql`): one connection pool, authentication,
TLS and timeouts, and every failure as one clear :class:`~otel_prov.errors.StoreError` line.

urllib3 (the transport under ``requests``; no dependencies of its own) gives a thread-safe pool of
keep-alive connections, TLS with a CA bundle and a client certificate, and separate connect and
read timeouts; the standard library's ``http.client`` has none of that pooling, and ``httpx`` would
bring five packages for features (HTTP/2, async) a store writer does not use.

Redirects are not followed (a redirect would carry the credentials elsewhere: the message names
the new URL to configure instead).  A connection the server closed while idle in the pool is
retried once; any other failure is the caller's to retry (the ingest writer does, with back-off).
Secrets never appear in a message: the URL has no credentials (:func:`~otel_prov.stores.check_url`)
and headers are never printed.
"""

from __future__ import annotations

import logging
import os
import re
import ssl
import urllib.parse
from collections.abc import Mapping
from typing import Any

import urllib3
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
)

from ..errors import StoreError
from .base import Remote

logger = logging.getLogger(__name__)

MAX_CONNECT_TIMEOUT = 10.0
_ERROR_BODY_CHARS = 300
_USER_AGENT = "otel-prov"


class HttpStatusError(StoreError):
    """The server answered with an error status (``status``); ``detail`` is its answer (the first
    4 KiB, on one line)."""

    def __init__(self, message: str, status: int, detail: str) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class HttpConnection:
    """Requests to one server, with the credentials and TLS settings of ``remote``.  Thread-safe."""

    def __init__(self, base_url: str, remote: Remote) -> None:
        self.base_url = base_url
        self.remote = remote
        headers = {"User-Agent": _USER_AGENT}
        if remote.token:
            headers["Authorization"] = f"Bearer {remote.token}"
        elif remote.user is not None:
            headers.update(urllib3.make_headers(basic_auth=f"{remote.user}:{remote.password or ''}"))
        self._headers = headers
        self.timeout = urllib3.Timeout(connect=min(remote.timeout, MAX_CONNECT_TIMEOUT), read=remote.timeout)
        tls: dict[str, Any] = {}
        if base_url.startswith("https:"):
            tls = {"cert_reqs": ssl.CERT_REQUIRED}
            if remote.ca_file is not None:
                tls["ca_certs"] = str(remote.ca_file)
            if remote.client_cert is not None:
                tls["cert_file"] = str(remote.client_cert)
                if remote.client_key is not None:
                    tls["key_file"] = str(remote.client_key)
        self._pool_options: dict[str, Any] = {"num_pools": 2, "maxsize": 4, "headers": headers,
                                               "retries": False, **tls}
        self._pool = urllib3.PoolManager(**self._pool_options)
        self._pid = os.getpid()
        if remote.token or remote.user is not None:
            host = urllib.parse.urlsplit(base_url).hostname or ""
            if base_url.startswith("http:") and host not in ("127.0.0.1", "localhost", "::1"):
                logger.warning("otel-prov: sending credentials to %s over plain HTTP (use https)", base_url)

    def request(self, method: str, url: str, *, body: bytes | None = None,
                fields: Mapping[str, str | list[str]] | None = None, params: Mapping[str, str] | None = None,
                headers: Mapping[str, str] | None = None, stream: bool = False,
                what: str = "") -> urllib3.BaseHTTPResponse:
        """One request; an error status is :class:`HttpStatusError`, no answer a :class:`StoreError`
        (``what`` says what was being done, for the message).  ``fields`` are sent as an HTML form
        (a list value repeats the field), ``params`` in the URL's query.  With ``stream`` the caller
        reads and releases the answer."""
        what = what or f"{method} {url}"
        if fields is not None:
            body = _encode(fields).encode("ascii")
            headers = {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
        if params:
            url = f"{url}?{_encode(params)}"
        all_headers = {**self._headers, **(headers or {})}
        if self._pid != os.getpid():  # forked: the pooled connections are the parent's sockets
            self._pool, self._pid = urllib3.PoolManager(**self._pool_options), os.getpid()
        for attempt in (1, 2):
            try:
                response = self._pool.request(method, url, body=body, headers=all_headers,
                                              timeout=self.timeout, redirect=False,
                                              preload_content=not stream)
                break
            except ProtocolError as exc:  # a pooled connection the server had closed: once more
                if attempt == 2:
                    raise StoreError(f"{what}: the connection to {self.base_url} was lost "
                                     f"({_reason(exc)})") from None
            except HTTPError as exc:
                raise StoreError(f"{what}: {self._explain(exc)}") from None
        if response.status >= 300:
            self._fail(response, what, url)
        return response

    def _fail(self, response: urllib3.BaseHTTPResponse, what: str, url: str) -> None:
        status = response.status
        detail = response.data[:4096].decode("utf-8", "replace") if response.data else ""
        response.release_conn()
        detail = " ".join(detail.split())
        shown = detail[:_ERROR_BODY_CHARS] + ("..." if len(detail) > _ERROR_BODY_CHARS else "")
        if status in (401, 403):
            if self.remote.token or self.remote.user is not None:
                hint = ("the server refused the credentials: check OTEL_PROV_STORE_USER / "
                        "OTEL_PROV_STORE_PASSWORD or OTEL_PROV_STORE_TOKEN, and that they may do this")
            else:
                hint = ("the server needs credentials: set OTEL_PROV_STORE_USER and "
                        "OTEL_PROV_STORE_PASSWORD, or OTEL_PROV_STORE_TOKEN")
            message = f"{what}: HTTP {status} from {url}; {hint}"
        elif 300 <= status < 400:
            location = response.headers.get("Location", "?")
            message = (f"{what}: {url} redirects (HTTP {status}) to {location}; give that URL as the store "
                       "(redirects are not followed: they would carry the credentials)")
        elif status == 404:
            message = f"{what}: nothing at {url} (HTTP 404): check the dataset URL"
        else:
            message = f"{what}: HTTP {status} from {url}" + (f": {shown}" if shown else "")
        raise HttpStatusError(message, status, detail)

    def _explain(self, exc: HTTPError) -> str:
        if isinstance(exc, SSLError):
            return (f"TLS with {self.base_url} failed ({_reason(exc)}); check the server's certificate, "
                    "OTEL_PROV_STORE_CA (the CA that signed it) and OTEL_PROV_STORE_CLIENT_CERT / _KEY")
        if isinstance(exc, NameResolutionError):
            return f"cannot resolve the host of {self.base_url}; check the store URL"
        if isinstance(exc, NewConnectionError):  # before ConnectTimeoutError: urllib3 derives it from that
            return f"cannot reach {self.base_url} ({_reason(exc)}); check the URL and that the server runs"
        if isinstance(exc, ConnectTimeoutError):
            return f"no connection to {self.base_url} within {self.timeout.connect_timeout} s"
        if isinstance(exc, ReadTimeoutError):
            waited = _WAITED.search(str(exc))
            seconds = float(waited.group(1)) if waited else self.remote.timeout
            if self.base_url.startswith("https:") and _speaks_plain_http(self.base_url):
                return (f"no TLS handshake with {self.base_url} within {seconds:g} s: the server speaks "
                        "plain HTTP; give the URL with http://")
            return (f"no answer from {self.base_url} within {seconds:g} s "
                    "(OTEL_PROV_STORE_TIMEOUT)")
        return f"request to {self.base_url} failed ({_reason(exc)})"

    def close(self) -> None:
        self._pool.clear()


_WAITED = re.compile(r"timeout=([0-9.]+)\)")
"""How long urllib3 waited, in its ReadTimeoutError ("Read timed out. (read timeout=10)")."""


def _speaks_plain_http(https_url: str) -> bool:
    """Whether the server behind an https URL answers plain HTTP (a TLS handshake with it hangs:
    it reads the ClientHello as a request and waits for the rest)."""
    plain = "http:" + https_url.removeprefix("https:")
    try:
        urllib3.PoolManager(retries=False).request("HEAD", plain, timeout=urllib3.Timeout(2.0))
    except HTTPError:
        return False
    return True


def _encode(fields: Mapping[str, str | list[str]]) -> str:
    """``key=value&...``; a key with an empty value is written alone (``?lenient``)."""
    pairs = [(k, v) for k, vs in fields.items() for v in ([vs] if isinstance(vs, str) else vs)]
    return "&".join(urllib.parse.quote(k, safe="-_.") + ("=" + urllib.parse.quote(v, safe="-_.") if v else "")
                    for k, v in pairs)


def _reason(exc: BaseException) -> str:
    """The innermost reason of a urllib3 error, without its object addresses."""
    reason: BaseException = exc
    while True:
        inner = getattr(reason, "reason", None) or reason.__cause__ or reason.__context__
        if not isinstance(inner, BaseException) or inner is reason:
            break
        reason = inner
    text = str(reason)
    if isinstance(reason, ConnectionRefusedError) or "Connection refused" in text:
        return "connection refused"
    if isinstance(reason, ssl.SSLError) and reason.reason:
        return str(reason.reason).lower().replace("_", " ")
    return text.split(": ", 1)[-1] if "object at 0x" in text else text
