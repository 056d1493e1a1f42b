"""``otel-prov import FILE...``: quads and spans from files into the store.

- N-Quads and TriG (what ``serve`` and the exporter save when a store could not take them:
  ``otel-prov-rescue-*.nq``, ``otel-prov-rejected-*.nq``): parsed strictly, each quad stored as it
  is; a triple of the default graph goes to the explainability graph ``urn:graph:retrieval``.
- OTLP/JSON, one ``ExportTraceServiceRequest`` a line (what the Collector's file exporter writes) or
  one per file: the spans of all its lines mapped together, as ``serve`` maps them.

Importing is idempotent: a store is a set of quads, and the mapping gives the same quads for the same
spans.  Each file is read whole, then written in parts; a file that cannot be read is one line and
the next file is read (exit status 1 at the end); nothing of a file is written unless all of it
parses."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

import pyoxigraph

from ..errors import StoreError
from ..mapping.mapper import TraceMapper
from ..mapping.spans import records_from_otlp
from ..model.quads import nquads
from ..model.vocab import GRAPH_RETRIEVAL
from ..serve.decode import BadRequest, decode_json
from ..stores import open_for_writing
from .common import EXIT_FAILED, EXIT_OK, option, store_spec

FORMATS = {"nquads": pyoxigraph.RdfFormat.N_QUADS, "trig": pyoxigraph.RdfFormat.TRIG}
SUFFIXES = {".nq": "nquads", ".nquads": "nquads", ".trig": "trig", ".json": "otlp-json",
            ".jsonl": "otlp-json", ".ndjson": "otlp-json"}
PART_QUADS = 50_000
"""Quads written at once."""


def file_format(path: Path, given: str | None, head: bytes) -> str:
    """``given``, else the format its suffix names, else OTLP/JSON when it starts with ``{``, else
    N-Quads."""
    if given:
        return given
    by_suffix = SUFFIXES.get(path.suffix.lower())
    if by_suffix:
        return by_suffix
    return "otlp-json" if head.lstrip()[:1] == b"{" else "nquads"


def quads_of_rdf(data: bytes, fmt: str) -> list[pyoxigraph.Quad]:
    """Every quad of an N-Quads or TriG text (``SyntaxError`` naming the line); the default graph's
    triples put in the explainability graph."""
    graph = pyoxigraph.NamedNode(GRAPH_RETRIEVAL)
    out = []
    for quad in pyoxigraph.parse(input=data, format=FORMATS[fmt]):
        if isinstance(quad.graph_name, pyoxigraph.DefaultGraph):
            quad = pyoxigraph.Quad(quad.subject, quad.predicate, quad.object, graph)
        out.append(quad)
    return out


def quads_of_otlp_json(data: bytes, profile: str) -> tuple[bytes, int, int, list[str]]:
    """The N-Quads of the spans of OTLP/JSON ``data`` (one request a line, or one request), mapped
    together: (N-Quads, quads, spans, messages of the spans rejected).  ``ValueError`` naming the line
    of a request that is not OTLP/JSON."""
    records, rejected = [], []
    lines = [data] if data.lstrip()[:1] == b"{" and b"\n{" not in data.strip() else data.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            request = decode_json(line)
        except BadRequest as exc:
            raise ValueError(f"line {number}: {exc.kind}: {exc.detail}") from None
        found, refused = records_from_otlp(request.resource_spans)
        records.extend(found)
        rejected.extend(refused)
    update = TraceMapper(profile).map(records)
    rejected.extend(error for _, error in update.failed)
    return nquads(update.add), len(update.add), len(records), rejected


def _parts(quads: list[pyoxigraph.Quad]) -> Iterator[tuple[bytes, int]]:
    for start in range(0, len(quads), PART_QUADS):
        part = quads[start:start + PART_QUADS]
        yield pyoxigraph.serialize(part, format=pyoxigraph.RdfFormat.N_QUADS) or b"", len(part)


def cmd_import(args: argparse.Namespace) -> int:
    from .. import settings

    spec = store_spec(args)
    profile = option(args, settings.PROFILE)
    loaded: list[tuple[Path, list[tuple[bytes, int]], str]] = []
    failed = False
    for name in args.files:
        path = Path(name)
        try:
            data = path.read_bytes()
            fmt = file_format(path, args.format, data[:64])
            if fmt == "otlp-json":
                text, count, spans, rejected = quads_of_otlp_json(data, profile)
                summary = f"{count} quads from {spans} spans"
                if rejected:
                    summary += f" ({len(rejected)} spans rejected: {rejected[0]})"
                loaded.append((path, [(text, count)] if count else [], summary))
            else:
                quads = quads_of_rdf(data, fmt)
                loaded.append((path, list(_parts(quads)), f"{len(quads)} quads"))
        except (OSError, SyntaxError, ValueError) as exc:
            print(f"otel-prov import: {name}: not imported: {exc}", file=sys.stderr)
            failed = True
    if not loaded:
        return EXIT_FAILED
    store = open_for_writing(spec)
    try:
        for path, parts, summary in loaded:
            for text, count in parts:
                store.add(text, count)
            print(f"imported {path}: {summary}", file=sys.stderr)
    finally:
        try:
            store.close()
        except StoreError as exc:
            print(f"otel-prov import: the store did not close cleanly: {exc}", file=sys.stderr)
            failed = True
    return EXIT_FAILED if failed else EXIT_OK
