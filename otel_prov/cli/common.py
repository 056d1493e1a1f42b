"""What every subcommand shares: the user-facing error, opening the store to read, writing output."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

from .. import settings
from ..read.model import EXAMPLE_IRI, NotAnIri, is_trace_id, is_trace_id_prefix, is_uuid
from ..read.model import check_iri as _check_iri
from ..render import FORMAT_ALIASES
from ..stores import (
    Blobs,
    ReadStore,
    StoreSpec,
    default_dir,
    open_blobs,
    open_for_reading,
)

PROG = "otel-prov"

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
"""The exit statuses (docs/cli.md): done; an operation failed (an unknown IRI, a missing store, a
SPARQL error, a file that cannot be written); a usage error or a bad value (of an argument, a flag
or an environment variable; a missing input), as argparse's own; interrupted (Ctrl-C)."""


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 1."""

    status = EXIT_FAILED


class UsageError(CliError):
    """A bad value (of an argument, a flag or a variable) or a missing input: exit status 2, as
    argparse's usage errors (a :class:`~otel_prov.errors.ConfigError` is one too)."""

    status = EXIT_USAGE


def store_spec(args: argparse.Namespace) -> StoreSpec:
    """The store a reading command reads (``--store``, else ``OTEL_PROV_STORE``, else the default)."""
    spec = settings.STORE.get(args.store, via="flag")
    if spec.in_memory:
        raise UsageError("the store 'memory:' lives inside the process that writes it; give an on-disk "
                         f"store with --store or {settings.STORE.env}")
    return spec


def blob_store(args: argparse.Namespace) -> Blobs | None:
    """Where the store's large values are (``--blob-dir``, else ``OTEL_PROV_BLOB_DIR``, else ``blobs/``
    in an on-disk store; None: a store on a server without one)."""
    where = default_dir(store_spec(args), settings.BLOB_DIR.get(getattr(args, "blob_dir", None), via="flag"))
    return open_blobs(where) if where is not None else None


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


def check_iri(value: str, *, trace_id: bool = False) -> str:
    """An IRI given on the command line (``<...>`` allowed), checked as the read model checks every
    IRI (:func:`otel_prov.read.model.check_iri`); with ``trace_id``, a trace id (32 hex digits) too.
    Anything else is a :class:`UsageError`."""
    value = value.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    if trace_id and (is_trace_id(value) or is_trace_id_prefix(value) or is_uuid(value)):
        return value
    try:
        return _check_iri(value)
    except NotAnIri as exc:
        if not trace_id:
            raise UsageError(f"{exc}; see '{PROG} list'") from None
        wanted = (f"expected a session's IRI ({EXAMPLE_IRI}), its UUID, or a trace id (or 6 or more of "
                  f"its first hexadecimal digits); see '{PROG} list'")
        if not value:
            raise UsageError(f"no id given: {wanted}") from None
        if ":" not in value:
            raise UsageError(f"not an id: {value[:200]!r}: {wanted}") from None
        raise UsageError(f"neither an IRI nor a trace id: {value[:200]!r} ({exc.problem}; expected e.g. "
                         f"{EXAMPLE_IRI}, or 32 hexadecimal digits; see '{PROG} list')") from None


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


def silence_stdout() -> None:
    """After a failed write to stdout (a closed pipe): no flush of what is left at exit (it would fail
    again, with a traceback)."""
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    except OSError:
        pass


def option(args: argparse.Namespace, setting: settings.Option[Any]) -> Any:
    """A setting's value for this command: its flag if given, else its variable, else its default."""
    name = (setting.flag or "").lstrip("-").replace("-", "_")
    return setting.get(getattr(args, name, None), via="flag")




def format_choice(names: Sequence[str]) -> Callable[[str], str]:
    """An argparse type for ``--format``: one of ``names`` or one of its usual aliases."""
    def read(text: str) -> str:
        name = FORMAT_ALIASES.get(text.strip().lower(), text.strip().lower())
        if name == "json" and name not in names and "jsonld" in names:
            name = "jsonld"  # where there is no plain JSON, JSON means the JSON of RDF
        if name not in names:
            aliases = ", ".join(k for k, v in FORMAT_ALIASES.items() if v in names)
            raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(names)}"
                                             f"{'; also ' + aliases if aliases else ''})")
        return name
    return read


OTHER_SUFFIXES = {".nt": "N-Triples", ".ntriples": "N-Triples", ".rdf": "RDF/XML", ".owl": "RDF/XML",
                  ".xml": "XML", ".n3": "N3", ".trix": "TriX", ".srx": "SPARQL results XML",
                  ".tsv": "tab-separated values", ".ttl": "Turtle", ".trig": "TriG", ".nq": "N-Quads",
                  ".jsonld": "JSON-LD", ".json": "JSON", ".csv": "CSV", ".svg": "SVG", ".dot": "DOT",
                  ".provn": "PROV-N", ".provjson": "PROV-JSON", ".provx": "PROV-XML"}
"""Suffixes of formats a command may not write: an output file named so in a format it does not
write is refused, never written in another format under that name."""


def resolve_format(given: str | None, output: str | None, suffixes: dict[str, str], default: str,
                   also: Mapping[str, str] | None = None) -> str:
    """The format: ``--format`` if given, else the one ``--output``'s suffix names, else ``default``; a
    ``--format`` that another format's suffix contradicts (``--format turtle -o x.svg``) is a
    :class:`UsageError`, unless ``also`` gives the format that suffix too (``prov-json``: ``.json``)."""
    suffix = os.path.splitext(output or "")[1].lower() if output not in (None, "-") else ""
    named = suffixes.get(suffix)
    if named is None and suffix in OTHER_SUFFIXES:
        formats = ", ".join(sorted(set(suffixes.values())))
        raise UsageError(f"the output file {output!r} is {OTHER_SUFFIXES[suffix]} ({suffix}), which this "
                         f"command does not write: its formats are {formats} ({', '.join(sorted(suffixes))})")
    if given is None:
        return named or default
    if named is not None and named != given and (also or {}).get(given) != suffix:
        raise UsageError(f"--format {given} does not match the output file {output!r} ({suffix} is "
                         f"{named}): give one or the other")
    return given


class Progress:
    """``exporting: N/M quads (P%)`` on stderr (or another verb), only when stderr is a terminal and
    the work is long."""

    def __init__(self, total: int, stream: IO[str] | None = None, min_total: int = 20000, *,
                 doing: str = "exporting", done: str = "exported") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = total
        self.enabled = total >= min_total and self.stream.isatty()
        self.doing, self.done = doing, done
        self._last = 0.0

    def wrap(self, items: Iterable[Any]) -> Iterator[Any]:
        count = 0
        for count, item in enumerate(items, 1):
            if count % 1000 == 0:
                self.update(count)
            yield item
        self.finish(count)

    def update(self, count: int) -> None:
        """``count`` of :attr:`total` done (shown at most every 0.2 s)."""
        if self.enabled and time.monotonic() - self._last > 0.2:
            self._last = time.monotonic()
            self.stream.write(f"\r{self.doing}: {count}/{self.total} quads ({100 * count // self.total}%)")
            self.stream.flush()

    def finish(self, count: int) -> None:
        if self.enabled:
            self.stream.write(f"\r{self.done} {count} quads.{' ' * 20}\n")
            self.stream.flush()
