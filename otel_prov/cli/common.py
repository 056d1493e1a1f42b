"""What every subcommand shares: the user-facing error, opening the store to read, writing output."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from .. import settings
from ..stores import ReadStore, StoreSpec, open_for_reading

PROG = "otel-prov"

_IRI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[^\s<>\"{}|\\^`]+")


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 1."""


def store_spec(args: argparse.Namespace) -> StoreSpec:
    """The store a reading command reads (``--store``, else ``OTEL_PROV_STORE``, else the default)."""
    spec = settings.STORE.get(args.store, via="flag")
    if spec.in_memory:
        raise CliError("the store 'memory:' lives inside the process that writes it; give an on-disk "
                       f"store with --store or {settings.STORE.env}")
    return spec


class Reading:
    """An existing store opened for reading, closed on exit: ``with Reading(args) as store:``."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.spec = store_spec(args)
        self.store: ReadStore | None = None

    def __enter__(self) -> ReadStore:
        self.store = open_for_reading(self.spec)
        return self.store

    def __exit__(self, *exc: object) -> None:
        if self.store is not None:
            self.store.close()


def check_iri(value: str) -> str:
    value = value.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    if not _IRI.fullmatch(value):
        raise CliError(f"not an IRI: {value!r} (expected e.g. urn:trustgraph:agent:UUID; see "
                       f"'{PROG} list')")
    return value


def write(text: str | bytes, output: str | None) -> None:
    """To stdout (``output`` None or ``-``) or to a file."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    if output is None or output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        with open(output, "wb") as handle:
            handle.write(data)
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}") from exc


def option(args: argparse.Namespace, setting: settings.Option[Any]) -> Any:
    """A setting's value for this command: its flag if given, else its variable, else its default."""
    name = (setting.flag or "").lstrip("-").replace("-", "_")
    return setting.get(getattr(args, name, None), via="flag")
