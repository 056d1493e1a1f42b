"""collector-config/ports.sh: one line moves every port the configs here read, consistently."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

CONFIG = Path(__file__).resolve().parents[2] / "collector-config"


def ports(offset: str) -> dict[str, str]:
    out = subprocess.run(["bash", str(CONFIG / "ports.sh"), offset], capture_output=True, text=True,
                         check=True).stdout
    return dict(re.findall(r"([A-Z_]+)=(\S+)", out))


def test_every_endpoint_and_port_the_configs_read_is_moved() -> None:
    read = set()
    for name in ("otelcol.yaml", "jaeger.yaml"):
        read |= set(re.findall(r"\$\{env:([A-Z_]*(?:ENDPOINT|PORT))[:}]", (CONFIG / name).read_text()))
    assert read, "no endpoint found in the configs: the scan is broken"
    values = ports("30000")
    assert read <= set(values)
    # The pipeline fits together: the Collector sends where Jaeger and serve listen.
    assert values["OTELCOL_JAEGER_ENDPOINT"] == values["JAEGER_OTLP_GRPC_ENDPOINT"]
    assert values["OTELCOL_PROV_ENDPOINT"] == f"127.0.0.1:{values['OTEL_PROV_SERVE_GRPC_PORT']}"
    assert values["OTEL_EXPORTER_OTLP_ENDPOINT"] == f"http://{values['OTELCOL_OTLP_GRPC_ENDPOINT']}"
    assert values["OTELCOL_OTLP_GRPC_ENDPOINT"] == "127.0.0.1:34317"
    assert values["OTEL_PROV_JAEGER_URL"].endswith(":46686")
    listening = ("OTELCOL_OTLP_GRPC_ENDPOINT", "OTELCOL_OTLP_HTTP_ENDPOINT", "OTELCOL_METRICS_PORT",
                 "JAEGER_OTLP_GRPC_ENDPOINT", "JAEGER_OTLP_HTTP_ENDPOINT", "JAEGER_QUERY_HTTP_ENDPOINT",
                 "JAEGER_QUERY_GRPC_ENDPOINT", "OTEL_PROV_SERVE_GRPC_PORT", "OTEL_PROV_SERVE_HTTP_PORT",
                 "OTEL_PROV_UI_PORT")
    assert len({values[name].rsplit(":", 1)[-1] for name in listening}) == len(listening)  # no clash


def test_the_default_offset_keeps_the_usual_ports() -> None:
    values = ports("0")
    assert values["OTELCOL_OTLP_GRPC_ENDPOINT"] == "127.0.0.1:4317"
    assert values["OTEL_PROV_SERVE_GRPC_PORT"] == "24317" and values["OTEL_PROV_UI_PORT"] == "8080"


@pytest.mark.parametrize("offset", ["-1", "abc", "50000"])
def test_a_bad_offset_is_one_clear_line(offset: str) -> None:
    run = subprocess.run(["bash", str(CONFIG / "ports.sh"), offset], capture_output=True, text=True)
    assert run.returncode == 2 and run.stdout == "" and offset in run.stderr


def test_jaeger_ui_sh_takes_a_release_archive_whatever_its_layout(tmp_path: Path) -> None:
    """collector-config/jaeger-ui.sh takes a Jaeger UI build or release archive from wherever the user
    has one: index.html and static/ found at any depth, then served by Jaeger with the link config."""
    import tarfile

    from tests.support.browser import jaeger_ui_tgz
    from tests.support.procs import free_port, http_get, require_binary, start, wait_until

    require_binary("jaeger")
    unpacked = tmp_path / "unpacked"
    with tarfile.open(jaeger_ui_tgz()) as tgz:
        tgz.extractall(unpacked, filter="data")
    build = next(p.parent for p in unpacked.rglob("index.html"))
    nested = tmp_path / "release.tar.gz"
    with tarfile.open(nested, "w:gz") as out:  # the layout of a release: the build three levels down
        out.add(build, arcname="jaeger-ui-v1/packages/jaeger-ui/build")
    query = free_port()
    env = {"JAEGER_OTLP_GRPC_ENDPOINT": f"127.0.0.1:{free_port()}",
           "JAEGER_OTLP_HTTP_ENDPOINT": f"127.0.0.1:{free_port()}",
           "JAEGER_QUERY_HTTP_ENDPOINT": f"127.0.0.1:{query}",
           "JAEGER_QUERY_GRPC_ENDPOINT": f"127.0.0.1:{free_port()}", "JAEGER_LOG_LEVEL": "warn",
           "JAEGER_UI_TGZ": str(nested), "OTEL_PROV_JAEGER_UI_DIR": str(tmp_path / "work"),
           "OTEL_PROV_BIN_DIR": str(require_binary("jaeger").parent)}
    jaeger = start("jaeger", ["bash", str(CONFIG / "jaeger-ui.sh")], tmp_path / "jaeger.log", env)
    try:
        wait_until(lambda: http_get(f"http://127.0.0.1:{query}/api/services", 1.0)[0] == 200, 60,
                   "Jaeger with the UI", proc=jaeger)
        status, page = http_get(f"http://127.0.0.1:{query}/search", 5.0)
        assert status == 200 and b"static/" in page  # the UI's index, not the placeholder page
    finally:
        jaeger.terminate()
