"""Real SPARQL servers for tests and benchmarks, each on a free 127.0.0.1 port with its data in a
temporary directory: the Oxigraph server (``pip install oxigraph``: the ``oxigraph`` binary next to
this interpreter) and Apache Jena Fuseki with TDB2 (the jar ``collector-config/scale/fetch-deps.sh``
fetches from Maven Central; ``bash .ci/setup --test`` runs it).  A missing one fails the test under
CI and skips it elsewhere (tests/support/procs.py).  Also: test certificates (a CA, a server and a client
certificate) made with ``openssl``, and an authenticating HTTPS reverse proxy, the stand-in for the
nginx or oauth2-proxy a user puts in front of a server that has no authentication of its own
(Oxigraph): bearer token and client certificate checked, everything else passed through.
"""

from __future__ import annotations

import base64
import http.client
import http.server
import os
import shutil
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from otel_prov.stores.server_sessions import GRAPH_SESSIONS
from tests.support.procs import REPO, Proc, free_port, from_script, missing, start, wait_until

FETCH_DEPS = REPO / "collector-config" / "scale" / "fetch-deps.sh"


def oxigraph_binary() -> Path:
    """The Oxigraph server's binary (the ``oxigraph`` package of the test extra)."""
    for candidate in (Path(sys.executable).parent / "oxigraph", shutil.which("oxigraph")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    missing("the oxigraph server binary is missing: pip install oxigraph (bash .ci/setup --test)")
    raise AssertionError("unreachable")


def fuseki_jar() -> Path:
    """Fuseki's jar, from fetch-deps.sh (a cache hit takes milliseconds)."""
    if shutil.which("java") is None:
        missing("java is needed to run Fuseki")
    return from_script(FETCH_DEPS, "fuseki", key="OTEL_PROV_FUSEKI_JAR", timeout=600)


@dataclass
class SparqlServer(Proc):
    url: str = ""
    """The dataset URL to give otel-prov."""
    port: int = 0
    kind: str = ""
    auth: tuple[str, str] | None = None
    """Credentials for the helpers below (basic)."""
    ca: Path | None = None
    """The CA to verify an HTTPS server with."""

    def request(self, path: str, data: bytes | None = None, content_type: str = "",
                accept: str = "") -> tuple[int, bytes]:
        req = urllib.request.Request(self.url + path, data=data, method="POST" if data is not None else "GET")
        if content_type:
            req.add_header("Content-Type", content_type)
        if accept:
            req.add_header("Accept", accept)
        if self.auth:
            token = base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
            req.add_header("Authorization", f"Basic {token}")
        context = ssl.create_default_context(cafile=self.ca) if self.url.startswith("https") else None
        try:
            with urllib.request.urlopen(req, timeout=60, context=context) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def update(self, sparql: str) -> None:
        status, body = self.request("/update", sparql.encode(), "application/sparql-update")
        assert status in (200, 204), (status, body)

    def clear(self) -> None:
        """Empty the dataset."""
        self.update("DROP ALL")

    def nquads(self) -> set[bytes]:
        """Every quad, as N-Quads lines (the server's own GSP export), but the session index's
        (tests/stores/test_server_sessions.py tests those)."""
        path = "/store" if self.kind == "oxigraph" else "/get"
        status, body = self.request(path, accept="application/n-quads")
        assert status == 200, (status, body)
        index = f"<{GRAPH_SESSIONS}> .".encode()
        return {line for line in body.splitlines() if line.strip() and not line.rstrip().endswith(index)}

    def stop(self) -> None:
        self.terminate(timeout=20)


def start_oxigraph(workdir: Path, *, location: Path | None = None, port: int | None = None,
                   timeout: float = 60.0) -> SparqlServer:
    """``oxigraph serve`` with a RocksDB store in ``location`` (default: a new directory)."""
    binary = oxigraph_binary()
    port = port or free_port()
    location = location or workdir / f"oxigraph-{port}"
    location.mkdir(parents=True, exist_ok=True)
    cmd = [str(binary), "serve", "--location", str(location), "--bind", f"127.0.0.1:{port}"]
    proc = start("oxigraph", cmd, workdir / f"oxigraph-{port}.log")
    server = SparqlServer(proc.name, proc.popen, proc.log, url=f"http://127.0.0.1:{port}", port=port,
                          kind="oxigraph")
    wait_until(lambda: server.request("/query?query=ASK%7B%7D")[0] == 200 if _open(port) else False,
               timeout, "the Oxigraph server", interval=0.1, proc=proc)
    return server


def start_fuseki(workdir: Path, *, name: str = "fuseki", args: tuple[str, ...] = (),
                 auth: tuple[str, str] | None = None, https: Pki | None = None,
                 timeout: float = 120.0) -> SparqlServer:
    """Fuseki serving a TDB2 dataset ``/ds`` with updates on; ``args`` adds options (``--passwd``,
    ``--shiro``...); with ``https`` it serves HTTPS with the PKI's server certificate."""
    jar = fuseki_jar()
    port = free_port()
    base = workdir / f"{name}-base"
    tdb = workdir / f"{name}-tdb2"
    tdb.mkdir(parents=True, exist_ok=True)
    extra = list(args)
    scheme = "http"
    if https is not None:
        conf = workdir / f"{name}-https.json"
        conf.write_text(f'{{ "keystore": "{https.server_p12}", "passwd": "{https.p12_password}" }}')
        extra += [f"--https={conf}", f"--httpsPort={port}", f"--port={free_port()}"]
        scheme = "https"
    else:
        extra += [f"--port={port}"]
    cmd = ["java", "-Xmx512m", "-jar", str(jar), "--localhost", *extra, "--tdb2", f"--loc={tdb}",
           "--update", "/ds"]
    proc = start(name, cmd, workdir / f"{name}.log", {"FUSEKI_BASE": str(base)})
    server = SparqlServer(proc.name, proc.popen, proc.log, url=f"{scheme}://127.0.0.1:{port}/ds", port=port,
                          kind="fuseki", auth=auth, ca=https.ca if https else None)
    wait_until(lambda: _open(port) and server.request("/query?query=ASK%7B%7D")[0] == 200, timeout,
               "Fuseki", interval=0.2, proc=proc)
    return server


def _open(port: int) -> bool:
    from tests.support.procs import port_open

    return port_open(port)


# -- certificates ---------------------------------------------------------------------------------


@dataclass
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    server_p12: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    """A CA that signed nothing here (a wrong OTEL_PROV_STORE_CA)."""
    p12_password: str = "changeit"


def make_pki(directory: Path) -> Pki:
    openssl = shutil.which("openssl")
    if openssl is None:
        missing("openssl is needed to make test certificates")
    directory.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        subprocess.run([str(openssl), *args], check=True, capture_output=True, cwd=directory)

    for name in ("ca", "other-ca"):
        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
            f"/CN=otel-prov test {name}", "-keyout", f"{name}.key", "-out", f"{name}.pem")
    (directory / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name, ext in (("server", ["-extfile", "server.ext"]), ("client", [])):
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
            "-out", f"{name}.csr")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-out", f"{name}.pem", *ext)
    run("pkcs12", "-export", "-in", "server.pem", "-inkey", "server.key", "-out", "server.p12",
        "-passout", "pass:changeit")
    d = directory
    return Pki(d / "ca.pem", d / "server.pem", d / "server.key", d / "server.p12", d / "client.pem",
               d / "client.key", d / "other-ca.pem")


# -- an authenticating reverse proxy ----------------------------------------------------------------


class AuthProxy:
    """HTTPS on a free 127.0.0.1 port, requiring a client certificate signed by ``pki.ca`` and
    ``Authorization: Bearer <token>``; passes every request on to ``upstream`` (plain HTTP)."""

    def __init__(self, upstream: str, token: str, pki: Pki) -> None:
        self.upstream = upstream.split("://", 1)[1]
        self.token = token
        self.refused = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _relay(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.headers.get("Authorization") != f"Bearer {proxy.token}":
                    proxy.refused += 1
                    self._answer(401, b"bearer token required", {"WWW-Authenticate": "Bearer"})
                    return
                conn = http.client.HTTPConnection(proxy.upstream, timeout=120)
                try:
                    headers = {k: v for k, v in self.headers.items()
                               if k.lower() not in ("authorization", "host", "connection")}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    kept = {k: v for k, v in resp.getheaders()
                            if k.lower() not in ("transfer-encoding", "connection", "content-length")}
                    self._answer(resp.status, data, kept)
                finally:
                    conn.close()

            def _answer(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response_only(status)  # no Server header of its own: the server's passes
                self.send_header("Date", self.date_time_string())
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _relay

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pki.server_cert, pki.server_key)
        context.load_verify_locations(pki.ca)
        context.verify_mode = ssl.CERT_REQUIRED
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="auth-proxy", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def question_count(url: str) -> int:
    """How many Questions (sessions and sub-traces) the store at ``url`` holds, read by otel-prov."""
    from otel_prov.settings import STORE
    from otel_prov.stores import open_for_reading

    store = open_for_reading(STORE.get(url))
    try:
        rows = store.select("SELECT (COUNT(?q) AS ?n) WHERE { GRAPH ?g { ?q a tg:Question } }")
        return int(rows[0]["n"].value)
    finally:
        store.close()


def wait_gone(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while _open(port) and time.monotonic() < deadline:
        time.sleep(0.1)
