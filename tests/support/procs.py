"""Real processes for tests and benchmarks: ``otel-prov serve``, Jaeger and the Collector, each on
free 127.0.0.1 ports, with its output in a log file and a clean stop.

Binaries come from ``$OTEL_PROV_BIN_DIR`` (default ``~/.cache/otel-prov/bin``), where
``collector-config/build-binaries.sh`` puts them.  A missing binary fails the test when ``CI`` is
set (CI must never skip silently) and skips it with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
COLLECTOR_CONFIG = REPO / "collector-config" / "otelcol.yaml"
JAEGER_CONFIG = REPO / "collector-config" / "jaeger.yaml"
JAEGER_BADGER_CONFIG = REPO / "collector-config" / "jaeger-badger.yaml"

_LISTENING = re.compile(r"otel-prov serve: listening grpc=(\S+) http=(\S+)")
_CLEAN_ENV_PREFIXES = ("OTEL_", "OTELCOL_", "JAEGER_")


def bin_dir() -> Path:
    return Path(os.environ.get("OTEL_PROV_BIN_DIR") or Path.home() / ".cache" / "otel-prov" / "bin")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def find_binary(name: str) -> Path | None:
    path = bin_dir() / name
    return path if path.is_file() and os.access(path, os.X_OK) else None


def require_binary(name: str) -> Path:
    """The binary's path; in CI a missing binary fails the test, elsewhere it skips it."""
    import pytest

    path = find_binary(name)
    if path is not None:
        return path
    reason = (f"{bin_dir() / name} not found: build it with `bash collector-config/build-binaries.sh` "
              f"(or set OTEL_PROV_BIN_DIR)")
    if in_ci():
        pytest.fail(reason + " -- CI must run this test", pytrace=False)
    pytest.skip(reason)


def missing(reason: str) -> None:
    """Something a test needs is not here: the test fails under CI, and is skipped elsewhere."""
    import pytest

    if in_ci():
        pytest.fail(reason + " -- CI must run this test", pytrace=False)
    pytest.skip(reason)


def from_script(script: Path, *args: str, key: str, timeout: float = 900) -> Path:
    """The path a build or fetch script prints as ``KEY=PATH`` (a cache hit takes milliseconds);
    :func:`missing` when it fails."""
    done = subprocess.run(["bash", str(script), *args], capture_output=True, text=True, timeout=timeout)
    for line in done.stdout.splitlines():
        if line.startswith(f"{key}="):
            return Path(line.split("=", 1)[1])
    missing(f"{script.name} {' '.join(args)} failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    raise AssertionError("unreachable")


def free_port() -> int:
    """A port free on 127.0.0.1 now (for programs that cannot report the port they bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child: ours without ambient OpenTelemetry / Collector settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_CLEAN_ENV_PREFIXES)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05,
               proc: Proc | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.popen.poll() is not None:
            raise RuntimeError(f"{proc.name} exited ({proc.popen.returncode}) while waiting for {what}:\n"
                               f"{proc.tail()}")
        if time.monotonic() > deadline:
            tail = f":\n{proc.tail()}" if proc is not None else ""
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}{tail}")
        time.sleep(interval)


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return 0, b""


def peak_rss_kib(pid: int) -> int:
    """``VmHWM`` of a running process, in KiB (0 if unknown)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (serve and its mapping workers)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def tree_peak_rss_kib(pid: int) -> int:
    """The sum of ``VmHWM`` over ``pid`` and its descendants, in KiB (each process's own peak: an
    upper bound of the peak of the whole)."""
    return sum(peak_rss_kib(p) for p in process_tree(pid))


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def terminate(self, timeout: float = 20.0) -> int:
        """SIGTERM, wait; SIGKILL if it does not exit in time.  Returns the exit code."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
        return self.popen.returncode

    def kill9(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)


def start(name: str, cmd: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> Proc:
    fh = open(log, "ab")  # noqa: SIM115 - the child owns it; closed below in the parent
    try:
        popen = subprocess.Popen(list(cmd), stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=clean_env(env), cwd=log.parent, start_new_session=True)
    finally:
        fh.close()
    return Proc(name, popen, log)


# -- otel-prov serve ------------------------------------------------------------------------------


def serve_command() -> list[str]:
    """``otel-prov serve`` as this interpreter runs it (through the CLI once it has the hook)."""
    try:
        from otel_prov import cli  # noqa: F401
    except ImportError:
        return [sys.executable, "-m", "otel_prov.cli.serve"]
    return [sys.executable, "-m", "otel_prov.cli", "serve"]


@dataclass
class Serve(Proc):
    grpc: str = ""
    http: str = ""
    store: Path = field(default_factory=Path)

    @property
    def grpc_port(self) -> int:
        return int(self.grpc.rsplit(":", 1)[1])

    @property
    def http_port(self) -> int:
        return int(self.http.rsplit(":", 1)[1])


def start_serve(store: Path | str, log: Path, *args: str, env: Mapping[str, str] | None = None,
                timeout: float = 30.0, grpc_port: int = 0, prefix: Sequence[str] = ()) -> Serve:
    """``otel-prov serve`` on free ports (it binds port 0 and reports what it got), or on the given
    gRPC port; ``store`` is an embedded store's directory, or any store's name (a URL); ``prefix``: a
    command that runs it (``prlimit ...``)."""
    spec = store if isinstance(store, str) else f"oxigraph:{store}"
    cmd = [*prefix, *serve_command(), "--store", spec, "--grpc-port", str(grpc_port),
           "--http-port", "0", *args]
    proc = start("otel-prov serve", cmd, log, env)

    def listening() -> re.Match[str] | None:
        return _LISTENING.search(log.read_text(errors="replace")) if log.exists() else None

    match = wait_until(listening, timeout, "otel-prov serve to listen", proc=proc)
    return Serve(proc.name, proc.popen, log, grpc=match.group(1), http=match.group(2),
                 store=store if isinstance(store, Path) else Path())


# -- Jaeger ---------------------------------------------------------------------------------------


@dataclass
class Jaeger(Proc):
    otlp_grpc: int = 0
    otlp_http: int = 0
    query_http: int = 0

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.query_http}"

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        status, body = http_get(f"{self.api}/api/traces/{trace_id}")
        if status != 200:
            return None
        data = json.loads(body).get("data") or []
        return data[0] if data else None


def start_jaeger(workdir: Path, *, max_traces: int = 100_000, timeout: float = 60.0,
                 config: Path = JAEGER_CONFIG) -> Jaeger:
    """Jaeger v2 running collector-config/jaeger.yaml (in-memory storage), its listen addresses set
    through the environment variables the file reads."""
    binary = require_binary("jaeger")
    ports = {"otlp_grpc": free_port(), "otlp_http": free_port(), "query_http": free_port()}
    env = {
        "JAEGER_OTLP_GRPC_ENDPOINT": f"127.0.0.1:{ports['otlp_grpc']}",
        "JAEGER_OTLP_HTTP_ENDPOINT": f"127.0.0.1:{ports['otlp_http']}",
        "JAEGER_QUERY_HTTP_ENDPOINT": f"127.0.0.1:{ports['query_http']}",
        "JAEGER_QUERY_GRPC_ENDPOINT": f"127.0.0.1:{free_port()}",
        "JAEGER_MAX_TRACES": str(max_traces),
        "JAEGER_LOG_LEVEL": "warn",
        "JAEGER_BADGER_DIR": str(workdir / "jaeger-badger"),
    }
    proc = start("jaeger", [str(binary), "--config", str(config)], workdir / "jaeger.log", env)
    jaeger = Jaeger(proc.name, proc.popen, proc.log, **ports)
    wait_until(lambda: http_get(f"{jaeger.api}/api/services", 1.0)[0] == 200 and port_open(jaeger.otlp_grpc),
               timeout, "Jaeger's query API and OTLP receiver", proc=proc)
    return jaeger


# -- the Collector --------------------------------------------------------------------------------


@dataclass
class Collector(Proc):
    otlp_grpc: int = 0
    otlp_http: int = 0
    metrics: int = 0

    def metric(self, name: str) -> float:
        """Sum of a Prometheus metric over its labels (0 if absent)."""
        status, body = http_get(f"http://127.0.0.1:{self.metrics}/metrics", 2.0)
        total = 0.0
        for line in body.decode(errors="replace").splitlines():
            if line.startswith(name) and (line[len(name):len(name) + 1] in ("{", " ")):
                total += float(line.rsplit(" ", 1)[1])
        return total


def start_collector(workdir: Path, *, jaeger_otlp: int, prov_otlp: int, token: str | None = None,
                    config: Path = COLLECTOR_CONFIG, timeout: float = 60.0) -> Collector:
    """The Collector running collector-config/otelcol.yaml itself, its endpoints set through the
    environment variables the file reads."""
    binary = require_binary("otelcol-prov")
    ports = {"otlp_grpc": free_port(), "otlp_http": free_port(), "metrics": free_port()}
    env = {
        "OTELCOL_OTLP_GRPC_ENDPOINT": f"127.0.0.1:{ports['otlp_grpc']}",
        "OTELCOL_OTLP_HTTP_ENDPOINT": f"127.0.0.1:{ports['otlp_http']}",
        "OTELCOL_JAEGER_ENDPOINT": f"127.0.0.1:{jaeger_otlp}",
        "OTELCOL_PROV_ENDPOINT": f"127.0.0.1:{prov_otlp}",
        "OTELCOL_METRICS_PORT": str(ports["metrics"]),
        "OTELCOL_LOG_LEVEL": "warn",
    }
    if token:
        env["OTEL_PROV_SERVE_TOKEN"] = token
    proc = start("collector", [str(binary), "--config", str(config)], workdir / "collector.log", env)
    collector = Collector(proc.name, proc.popen, proc.log, **ports)
    wait_until(lambda: port_open(collector.otlp_grpc) and port_open(collector.otlp_http), timeout,
               "the Collector's OTLP receiver", proc=proc)
    return collector


def folder_pids(store: Path) -> list[int]:
    """Pids of the background folders (``python -m otel_prov.stores.folder STORE ...``) of ``store``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"otel_prov.stores.folder" in argv and str(store).encode() in argv:
            pids.append(int(entry.name))
    return pids
