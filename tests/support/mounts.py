"""Real file-system faults for tests: a full disk, a read-only directory, a frozen (stuck) file
system.  No mocks: as root (CI here runs as root) they are a small tmpfs, a read-only bind mount and
an ext4 image on a loop device frozen with ``fsfreeze``; without the right to mount, a full disk is a
file size limit (``RLIMIT_FSIZE``: writes past it fail with ``EFBIG``) and a read-only directory is
``chmod a-w`` (which binds a user that is not root).  A frozen file system has no fallback: the test
is skipped, and fails under ``CI``.

Every mount is undone at the end of its ``with`` block (thawed first), whatever happened.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import resource
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.support.procs import in_ci


def _run(*cmd: str) -> None:
    subprocess.run(list(cmd), check=True, capture_output=True, timeout=60)


@functools.cache
def can_mount() -> bool:
    """Whether this process may mount (root with ``CAP_SYS_ADMIN``): tried once, on a tmpfs."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    where = tempfile.mkdtemp(prefix="otel-prov-mount-check-")
    try:
        _run("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", where)
        _run("umount", where)
        return True
    except (subprocess.CalledProcessError, OSError):
        return False
    finally:
        os.rmdir(where)


def require_mount(what: str) -> None:
    """Skip (fail under ``CI``) a test that needs to mount."""
    import pytest

    if can_mount():
        return
    reason = f"{what} needs root (mount): not available here"
    if in_ci():
        pytest.fail(reason + " -- CI must run this test", pytrace=False)
    pytest.skip(reason)


@contextlib.contextmanager
def tmpfs(size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (e.g. ``48m``) mounted on a new directory."""
    where = Path(tempfile.mkdtemp(prefix="otel-prov-tmpfs-"))
    _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=60)
        with contextlib.suppress(OSError):
            where.rmdir()


class FullDisk:
    """The file system of ``directory`` made full and freed again: a filler file takes every free
    block of a tmpfs (:meth:`fill`) and is deleted (:meth:`free`).  Without the right to mount,
    ``RLIMIT_FSIZE`` of this process is lowered to 0 (no regular file may grow; ``SIGXFSZ``
    ignored) and raised back."""

    def __init__(self, directory: Path, *, mounted: bool) -> None:
        self.directory = directory
        self.mounted = mounted
        self._limit: tuple[int, int] | None = None
        self._handler: object = None

    def fill(self) -> None:
        if self.mounted:
            fd = os.open(self.directory / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                for size in (1 << 20, 65536, 4096, 512, 1):  # down to the last partial block
                    chunk = b"\0" * size
                    while True:
                        try:
                            os.write(fd, chunk)
                        except OSError as exc:
                            if exc.errno != errno.ENOSPC:
                                raise
                            break
            finally:
                os.close(fd)
            return
        self._handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        self._limit = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, self._limit[1]))

    def free(self) -> None:
        if self.mounted:
            (self.directory / "filler").unlink(missing_ok=True)
            return
        if self._limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, self._limit)
            signal.signal(signal.SIGXFSZ, self._handler)  # type: ignore[arg-type]
            self._limit = None


@contextlib.contextmanager
def small_disk(tmp_path: Path, size: str = "48m") -> Iterator[FullDisk]:
    """A directory on a small file system of its own (a tmpfs when this process may mount, else
    ``tmp_path`` with a file size limit), and the means to fill and free it."""
    if can_mount():
        with tmpfs(size) as where:
            disk = FullDisk(where, mounted=True)
            try:
                yield disk
            finally:
                disk.free()
        return
    disk = FullDisk(tmp_path, mounted=False)
    try:
        yield disk
    finally:
        disk.free()


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """``directory`` (and everything under it) read-only for this process while the block runs:
    a read-only bind mount of it on itself as root (descriptors opened before keep writing, as
    they do after a ``chmod``), ``chmod a-w`` on it and its subdirectories otherwise."""
    if can_mount():
        _run("mount", "--bind", str(directory), str(directory))
        try:
            _run("mount", "-o", "remount,bind,ro", str(directory))
            yield
        finally:
            subprocess.run(["umount", str(directory)], capture_output=True, timeout=60)
        return
    dirs = [directory, *(p for p in directory.rglob("*") if p.is_dir())]
    modes = {d: stat.S_IMODE(d.stat().st_mode) for d in dirs}
    for d in dirs:
        d.chmod(modes[d] & ~0o222)
    try:
        yield
    finally:
        for d in dirs:
            d.chmod(modes[d])


@contextlib.contextmanager
def loop_ext4(size_mib: int = 64) -> Iterator[Path]:
    """An ext4 file system in an image file on a loop device (it can be frozen; a tmpfs cannot)."""
    image = Path(tempfile.mkdtemp(prefix="otel-prov-image-")) / "fs.img"
    with open(image, "wb") as fh:
        fh.truncate(size_mib << 20)
    _run("mkfs.ext4", "-q", "-F", str(image))
    where = Path(tempfile.mkdtemp(prefix="otel-prov-ext4-"))
    _run("mount", "-o", "loop", str(image), str(where))
    try:
        yield where
    finally:
        subprocess.run(["fsfreeze", "-u", str(where)], capture_output=True, timeout=60)
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=60)
        with contextlib.suppress(OSError):
            where.rmdir()
        shutil.rmtree(image.parent, ignore_errors=True)


def freeze(where: Path) -> None:
    """Freeze a file system: every write to it blocks (in the kernel) until :func:`thaw`."""
    _run("fsfreeze", "-f", str(where))


def thaw(where: Path) -> None:
    subprocess.run(["fsfreeze", "-u", str(where)], capture_output=True, timeout=60)


def tree_state(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every file and directory under ``root``: (inode, size, mtime in ns) -- what a reader must
    leave exactly as it found it."""
    out: dict[str, tuple[int, int, int]] = {}
    for path in [root, *root.rglob("*")]:
        st = path.lstat()
        out[str(path.relative_to(root))] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out
