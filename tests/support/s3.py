"""A real S3-compatible server for the tests of blobs in a bucket: the Versity S3 Gateway (Apache-2.0,
an S3 server over a directory), built from the Go module proxy by ``collector-config/build-versitygw.sh``
(``bash .ci/setup --test`` runs it; a cache hit takes milliseconds), on a free 127.0.0.1 port with its
objects in a temporary directory.  Missing: the test fails under CI and is skipped elsewhere."""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.procs import REPO, Proc, free_port, from_script, missing, start, wait_until

BUILD = REPO / "collector-config" / "build-versitygw.sh"
ACCESS, SECRET = "otelprovtest", "otel-prov-test-secret"


def versitygw_binary() -> Path:
    if shutil.which("go") is None:
        missing("Go is needed to build the Versity S3 Gateway")
    return from_script(BUILD, key="OTEL_PROV_VERSITYGW_BIN")


@dataclass
class S3Server(Proc):
    endpoint: str = ""
    root: Path = field(default_factory=Path)

    @property
    def env(self) -> dict[str, str]:
        """What a process needs to reach it through boto3's own settings (no otel-prov option)."""
        return {"AWS_ENDPOINT_URL_S3": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS,
                "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1"}

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS,
                            aws_secret_access_key=SECRET, region_name="us-east-1")

    def bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))

    def stop(self) -> None:
        self.terminate(timeout=20)


def start_s3(workdir: Path, timeout: float = 60.0) -> S3Server:
    binary = versitygw_binary()
    port = free_port()
    root = workdir / f"s3-{port}"
    root.mkdir(parents=True)
    cmd = [str(binary), "--access", ACCESS, "--secret", SECRET, "--port", f"127.0.0.1:{port}", "posix",
           str(root)]
    proc = start("versitygw", cmd, workdir / f"s3-{port}.log")
    server = S3Server(proc.name, proc.popen, proc.log, endpoint=f"http://127.0.0.1:{port}", root=root)

    def answers() -> bool:
        try:
            urllib.request.urlopen(server.endpoint, timeout=2)  # noqa: S310 - loopback
        except urllib.error.HTTPError:
            return True  # 403 without credentials: it is serving
        except OSError:
            return False
        return True

    wait_until(answers, timeout, "the Versity S3 Gateway", interval=0.1, proc=proc)
    return server
