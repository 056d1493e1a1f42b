"""The blob store: large values stored by reference (docs/store.md, "Large values"), one file per
content, named by the SHA-256 of its bytes: ``DIR/sha256/ab/abcdef...`` (the first two hex digits a
folder).  The same bytes stored twice are one file: a file already there is left alone.  Written
through a temporary file, fsynced, then renamed, so a file under its name is always whole."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..errors import StoreError
from .base import StoreSpec

_HEX = re.compile(r"[0-9a-f]{64}\Z")
BLOBS_DIR = "blobs"
"""The blob directory inside an on-disk store's directory (the default)."""


def default_dir(spec: StoreSpec | None, explicit: Path | None = None) -> Path | None:
    """Where ``spec``'s blobs go: ``explicit`` (``--blob-dir``, ``OTEL_PROV_BLOB_DIR``), else
    ``blobs/`` inside an on-disk store; None (large values stay inline) for a store in memory or on
    a server without one."""
    if explicit is not None:
        return explicit
    if spec is not None and spec.path is not None:
        return spec.path / BLOBS_DIR
    return None


class BlobStore:
    """Content-addressed files under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, digest: str) -> Path:
        if not _HEX.match(digest):
            raise ValueError(f"not a SHA-256 in hex: {digest!r}")
        return self.root / "sha256" / digest[:2] / digest

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
        data = self.get(digest)
        if data is None:
            return "missing"
        return None if hashlib.sha256(data).hexdigest() == digest else "changed"

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
