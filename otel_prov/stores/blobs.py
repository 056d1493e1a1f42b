"""The blob store: large values stored by reference (docs/store.md, "Large values"), one file per
content, named by the SHA-256 of its bytes: ``DIR/sha256/ab/abcdef...`` (the first two hex digits a
folder).  The same bytes stored twice are one file: a file already there is left alone.  Written
through a temporary file, fsynced, then renamed, so a file under its name is always whole.

Or one object per content in an S3-compatible bucket (``s3://BUCKET/PREFIX``), under the same names
(``PREFIX/sha256/ab/abcdef...``): :class:`S3BlobStore`, through boto3 (the ``s3`` extra), which
takes the endpoint, the region and the credentials the standard way (``AWS_ENDPOINT_URL_S3``,
``AWS_REGION``, ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``, a profile, an instance role)."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import StoreError
from .base import StoreSpec

_HEX = re.compile(r"[0-9a-f]{64}\Z")
BLOBS_DIR = "blobs"
"""The blob directory inside an on-disk store's directory (the default)."""


S3_SCHEME = "s3://"
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")


@dataclass(frozen=True)
class S3Place:
    """A bucket (and a key prefix in it) that blobs go to: ``s3://BUCKET[/PREFIX]``."""

    bucket: str
    prefix: str = ""
    """"" or ending with ``/``."""

    def __str__(self) -> str:
        return f"{S3_SCHEME}{self.bucket}/{self.prefix}"


BlobPlace = Path | S3Place
"""Where blobs go: a directory, or a bucket."""


def blob_place(text: str) -> BlobPlace:
    """``--blob-dir`` / ``OTEL_PROV_BLOB_DIR``: a directory, or ``s3://BUCKET[/PREFIX]``;
    :class:`ValueError` for an S3 URL that names no valid bucket."""
    if not text.lower().startswith(S3_SCHEME):
        return Path(text)
    bucket, _, prefix = text[len(S3_SCHEME):].partition("/")
    if not _BUCKET.match(bucket):
        raise ValueError(f"{text!r}: not an S3 bucket name (3-63 lowercase letters, digits, dots and "
                         "hyphens): give s3://BUCKET or s3://BUCKET/PREFIX")
    prefix = prefix.strip("/")
    return S3Place(bucket, prefix + "/" if prefix else "")


def default_dir(spec: StoreSpec | None, explicit: BlobPlace | None = None) -> BlobPlace | None:
    """Where ``spec``'s blobs go: ``explicit`` (``--blob-dir``, ``OTEL_PROV_BLOB_DIR``), else
    ``blobs/`` inside an on-disk store; None (large values stay inline) for a store in memory or on
    a server without one."""
    if explicit is not None:
        return explicit
    if spec is not None and spec.path is not None:
        return spec.path / BLOBS_DIR
    return None


class Blobs(Protocol):
    """What a blob store does (:class:`BlobStore`: files; :class:`S3BlobStore`: a bucket)."""

    @property
    def where(self) -> BlobPlace: ...

    def put(self, digest: str, data: bytes) -> bool: ...
    def put_all(self, blobs: Mapping[str, bytes]) -> int: ...
    def get(self, digest: str) -> bytes | None: ...
    def check(self, digest: str) -> str | None: ...
    def digests(self) -> Iterator[str]: ...
    def remove(self, digest: str) -> bool: ...


def open_blobs(place: BlobPlace) -> Blobs:
    """The blob store at ``place``."""
    return S3BlobStore(place) if isinstance(place, S3Place) else BlobStore(place)


def _checked(digest: str) -> str:
    if not _HEX.match(digest):
        raise ValueError(f"not a SHA-256 in hex: {digest!r}")
    return digest


def _verdict(data: bytes | None, digest: str) -> str | None:
    if data is None:
        return "missing"
    return None if hashlib.sha256(data).hexdigest() == digest else "changed"


class BlobStore:
    """Content-addressed files under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @property
    def where(self) -> BlobPlace:
        return self.root

    def path(self, digest: str) -> Path:
        return self.root / "sha256" / _checked(digest)[:2] / digest

    def put(self, digest: str, data: bytes) -> bool:
        """Store ``data`` as the blob ``digest`` (checked); False when it was there already."""
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"the bytes given for blob {digest} hash to something else")
        target = self.path(digest)
        if target.exists():
            return False
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=target.parent)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, target)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            _fsync_dir(target.parent)
        except OSError as exc:
            raise StoreError(f"cannot write blob {digest} under {self.root}: {exc}") from exc
        return True

    def put_all(self, blobs: Mapping[str, bytes]) -> int:
        """Store each of ``blobs``; how many files were new."""
        return sum(self.put(digest, data) for digest, data in blobs.items())

    def get(self, digest: str) -> bytes | None:
        """The bytes of blob ``digest`` as the file holds them (None: no such file)."""
        try:
            return self.path(digest).read_bytes()
        except FileNotFoundError:
            return None

    def check(self, digest: str) -> str | None:
        """What is wrong with blob ``digest``: ``"missing"``, ``"changed"`` (its bytes hash to
        another name), or None."""
        return _verdict(self.get(digest), digest)

    def digests(self) -> Iterator[str]:
        """Every blob's name in the store."""
        base = self.root / "sha256"
        if not base.is_dir():
            return
        for folder in sorted(base.iterdir()):
            if folder.is_dir():
                yield from sorted(f.name for f in folder.iterdir() if _HEX.match(f.name))

    def remove(self, digest: str) -> bool:
        try:
            self.path(digest).unlink()
        except FileNotFoundError:
            return False
        return True


MEDIA_TYPE = "text/plain; charset=utf-8"


class S3BlobStore:
    """Content-addressed objects in an S3-compatible bucket: ``PREFIX/sha256/ab/abcdef...``.  An
    object already there is left alone (looked up first); a put sends the SHA-256 it must have,
    so a server that supports checksums refuses bytes damaged on the way."""

    def __init__(self, place: S3Place, client: Any = None) -> None:
        self.place = place
        if client is None:
            try:
                import boto3
                from botocore.config import Config
            except ImportError as exc:
                raise StoreError(f"blobs in {place} need boto3: pip install 'otel-prov[s3]'") from exc
            # Bounded: an export must end within the SDK's timeout whatever the server does.
            client = boto3.client("s3", config=Config(connect_timeout=5, read_timeout=20,
                                                      retries={"max_attempts": 3, "mode": "standard"}))
        self.client = client

    @property
    def where(self) -> BlobPlace:
        return self.place

    def key(self, digest: str) -> str:
        return f"{self.place.prefix}sha256/{_checked(digest)[:2]}/{digest}"

    def _failed(self, what: str, exc: Exception) -> StoreError:
        return StoreError(f"cannot {what} in {self.place}: {exc}")

    def _missing(self, exc: Exception) -> bool:
        code = str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))
        return code in ("404", "NoSuchKey", "NotFound")

    def _exists(self, digest: str) -> bool:
        try:
            self.client.head_object(Bucket=self.place.bucket, Key=self.key(digest))
        except Exception as exc:
            if self._missing(exc):
                return False
            raise self._failed(f"look up blob {digest}", exc) from exc
        return True

    def put(self, digest: str, data: bytes) -> bool:
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"the bytes given for blob {digest} hash to something else")
        if self._exists(digest):
            return False
        try:
            self.client.put_object(Bucket=self.place.bucket, Key=self.key(digest), Body=data,
                                   ContentType=MEDIA_TYPE,
                                   ChecksumSHA256=base64.b64encode(bytes.fromhex(digest)).decode("ascii"))
        except Exception as exc:
            raise self._failed(f"write blob {digest}", exc) from exc
        return True

    def put_all(self, blobs: Mapping[str, bytes]) -> int:
        return sum(self.put(digest, data) for digest, data in blobs.items())

    def get(self, digest: str) -> bytes | None:
        try:
            answer = self.client.get_object(Bucket=self.place.bucket, Key=self.key(digest))
            data: bytes = answer["Body"].read()
        except Exception as exc:
            if self._missing(exc):
                return None
            raise self._failed(f"read blob {digest}", exc) from exc
        return data

    def check(self, digest: str) -> str | None:
        return _verdict(self.get(digest), digest)

    def digests(self) -> Iterator[str]:
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.place.bucket, Prefix=f"{self.place.prefix}sha256/")
            for page in pages:
                for item in page.get("Contents", []):
                    name = str(item["Key"]).rsplit("/", 1)[-1]
                    if _HEX.match(name):
                        yield name
        except Exception as exc:
            raise self._failed("list the blobs", exc) from exc

    def remove(self, digest: str) -> bool:
        if not self._exists(digest):
            return False
        try:
            self.client.delete_object(Bucket=self.place.bucket, Key=self.key(digest))
        except Exception as exc:
            raise self._failed(f"remove blob {digest}", exc) from exc
        return True


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
