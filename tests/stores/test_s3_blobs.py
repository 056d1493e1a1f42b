"""Blobs in an S3-compatible bucket (``--blob-dir s3://BUCKET/PREFIX``), against a real S3 server (the
Versity S3 Gateway, tests/support/s3.py): each content one object, read back, checked, listed and
removed; bad places refused with a clear error; and the whole path, real SDK spans through the
exporter into an on-disk store whose large values go to the bucket: ``show --inline``, ``verify``
and ``delete`` read, check and remove them there, and ``serve``'s mapping workers write them there."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SpanExportResult

from otel_prov import ProvSpanExporter
from otel_prov.errors import StoreError
from otel_prov.read.reader import TraceReader
from otel_prov.stores import S3Place, blob_place, open_blobs, open_for_reading, parse_store
from otel_prov.stores.blobs import S3BlobStore
from tests.support.blobs import big_spans, payload, run
from tests.support.cli import cli
from tests.support.privacy import files_holding
from tests.support.procs import Proc, start_serve
from tests.support.s3 import S3Server, start_s3
from tests.support.serving import request_of, stub


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = start_s3(tmp_path_factory.mktemp("s3"))
    yield server
    server.stop()


@pytest.fixture
def aws(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """boto3's own settings in this process's environment, as a user sets them."""
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    return s3


def cli_sessions(store: Path) -> list[str]:
    """The sessions the store lists (none when nothing was ever stored)."""
    if not store.exists():
        return []
    opened = open_for_reading(parse_store(str(store)))
    try:
        return [row.id for row in TraceReader(opened).sessions()]
    finally:
        opened.close()


def _key(prefix: str, text: str) -> str:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return f"{prefix}sha256/{digest[:2]}/{digest}"


def test_blob_places() -> None:
    assert blob_place("s3://bucket") == S3Place("bucket", "")
    assert blob_place("s3://my.bucket/a/b/") == S3Place("my.bucket", "a/b/")
    assert str(blob_place("s3://my.bucket/a/b")) == "s3://my.bucket/a/b/"
    assert blob_place("/var/blobs") == Path("/var/blobs")
    for bad in ("s3://", "s3://Upper_Case", "s3://a"):
        with pytest.raises(ValueError, match="not an S3 bucket name"):
            blob_place(bad)


def test_each_content_is_one_object_read_back_checked_listed_and_removed(aws: S3Server) -> None:
    bucket = aws.bucket("unit")
    blobs = open_blobs(blob_place(f"s3://{bucket}/team/blobs"))
    assert isinstance(blobs, S3BlobStore)
    texts = [payload(70)[0], payload(80)[0]]
    digests = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
    assert blobs.put_all({d: t.encode() for d, t in zip(digests, texts, strict=True)}) == 2
    assert blobs.put(digests[0], texts[0].encode()) is False  # the same bytes again: one object
    assert aws.keys(bucket) == sorted(_key("team/blobs/", t) for t in texts)
    assert blobs.get(digests[1]) == texts[1].encode()
    assert sorted(blobs.digests()) == sorted(digests)
    assert [blobs.check(d) for d in digests] == [None, None]
    aws.client().put_object(Bucket=bucket, Key=_key("team/blobs/", texts[0]), Body=b"changed")
    assert blobs.check(digests[0]) == "changed"
    assert blobs.remove(digests[1]) is True and blobs.remove(digests[1]) is False
    assert blobs.check(digests[1]) == "missing" and blobs.get(digests[1]) is None
    with pytest.raises(ValueError, match="hash to something else"):
        blobs.put(digests[1], b"other bytes")


def test_a_bucket_that_is_not_there_is_a_clear_error(aws: S3Server) -> None:
    blobs = open_blobs(blob_place("s3://no-such-bucket/x"))
    with pytest.raises(StoreError, match=r"cannot .* in s3://no-such-bucket/x/"):
        blobs.put(hashlib.sha256(b"x").hexdigest(), b"x")


def test_an_export_whose_bucket_fails_stores_nothing_and_says_so(aws: S3Server, tmp_path: Path) -> None:
    store = tmp_path / "store"
    exporter = ProvSpanExporter(store=store, blob_dir=blob_place("s3://not-created"))
    try:
        assert exporter.export(big_spans([payload()[0]])) is SpanExportResult.FAILURE
    finally:
        exporter.shutdown()
    assert cli_sessions(store) == []


def test_the_exporter_show_verify_and_delete_use_the_bucket(aws: S3Server, tmp_path: Path,
                                                          capsysbinary) -> None:
    bucket = aws.bucket("sessions")
    place = f"s3://{bucket}/prod"
    (shared, shared_word), (alone, alone_word) = payload(), payload(90)
    store = tmp_path / "store"
    a, b, c = run(f"oxigraph:{store}", [shared, shared, alone], blob_dir=blob_place(place))
    assert aws.keys(bucket) == sorted([_key("prod/", shared), _key("prod/", alone)])
    assert files_holding(store, alone_word) == []  # the store holds the preview only
    assert not (store / "blobs").exists()
    whole = cli(capsysbinary, "show", c, "--store", str(store), "--blob-dir", place, "--inline",
                "--format", "json")
    assert whole.code == 0, whole.err
    assert [s["observation"] for s in json.loads(whole.out)["steps"] if "observation" in s] == [alone]
    assert cli(capsysbinary, "seal", "--store", str(store)).code == 0
    assert cli(capsysbinary, "verify", "--store", str(store), "--blob-dir", place).code == 0
    aws.client().put_object(Bucket=bucket, Key=_key("prod/", alone), Body=b"tampered")
    bad = cli(capsysbinary, "verify", "--store", str(store), "--blob-dir", place, "--format", "json")
    assert bad.code == 1
    found = {s["session"]: s["status"] for s in json.loads(bad.out)["sessions"]}
    assert found == {a: "intact", b: "intact", c: "changed"}
    assert cli(capsysbinary, "delete", a, c, "--store", str(store), "--blob-dir", place).code == 0
    assert aws.keys(bucket) == [_key("prod/", shared)]  # b still refers to it
    assert shared_word in cli(capsysbinary, "show", b, "--store", str(store), "--blob-dir", place,
                              "--inline").out


def test_serve_mapping_workers_write_blobs_to_the_bucket(aws: S3Server, tmp_path: Path,
                                                        procs: list[Proc]) -> None:
    bucket = aws.bucket("served")
    (a, _), (b, _) = payload(), payload(70)
    store = tmp_path / "store"
    serve = start_serve(store, tmp_path / "serve.log", "--workers", "2", "--blob-dir", f"s3://{bucket}",
                        env=aws.env)
    procs.append(serve)
    channel, client = stub(serve.grpc_port)
    with channel:
        client.Export(request_of(big_spans([a, b, a, b])), timeout=30)
    assert serve.terminate(timeout=60) == 0, serve.tail()
    assert aws.keys(bucket) == sorted([_key("", a), _key("", b)])
