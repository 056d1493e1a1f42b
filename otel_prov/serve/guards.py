"""The two checks every HTTP surface (``serve``'s OTLP/HTTP, ``otel-prov ui``) and ``serve``'s gRPC
make of a request, written once: the Host check (DNS rebinding) and the bearer token."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Collection

HOST_REFUSED_STATUS = 403
HOST_REFUSED = "Host not allowed (DNS rebinding protection); see --allowed-hosts"


def host_name(host: str) -> str:
    """The name of a ``Host`` header, without its port and brackets, lowercase (``[::1]:8080`` ->
    ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else ""
    name, _, _port = host.partition(":")
    return name.rstrip(".")


def host_acceptable(host: str, allowed: Collection[str] = ()) -> bool:
    """Whether a request's ``Host`` header may reach a server that guards against DNS rebinding: an IP
    address, ``localhost`` (or a name under it), or one of ``allowed`` (lowercase names).  A page that
    rebinds its own name to this machine's address sends that name: refused."""
    name = host_name(host)
    if not name:
        return False
    if name == "localhost" or name.endswith(".localhost") or name in allowed:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def bearer_matches(header: str | None, token: bytes) -> bool:
    """Whether an ``authorization`` header is ``Bearer <token>`` (compared in constant time; the
    scheme's case does not matter)."""
    if not header:
        return False
    scheme, _, value = header.strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode("utf-8"), token)


def single(values: list[str]) -> str | None:
    """The one value of a header given once; None when it is absent; ``""`` (which no token matches)
    when it is given more than once -- a request with two ``authorization`` headers is never decided
    by whichever one a server happens to read."""
    if not values:
        return None
    return values[0] if len(values) == 1 else ""
