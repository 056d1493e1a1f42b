"""The ``otel-prov`` command: list, show, export and query the explainability graph; run the demo.

Every subcommand uses the store named by ``--store`` (else ``OTEL_PROV_STORE``, else the
exporter's default store); the reading ones (list, show, export, query) never create one.
Errors are one line on stderr and exit status 1 (2 for a usage error); never a traceback.

``serve`` lives in :mod:`otel_prov._serve_cli`, whose ``add_parser(subparsers)`` registers it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

import pyoxigraph

from . import _serve_cli
from ._cli_read import TYPES, TraceNotFound, TraceReader, prov_graph
from ._config import (
    ENV_COLLECTION,
    ENV_JAEGER_URL,
    ENV_PROFILE,
    ENV_STORE,
    StoreSpec,
    parse_collection,
    parse_store,
)
from ._errors import ProvError
from ._render import (
    session_json,
    session_table,
    table_lines,
    trace_json,
    trace_text,
    triples_turtle,
    visible,
)
from ._store import OxigraphStore, open_store_for_reading
from ._svg import to_dot, to_svg
from ._vocab import GRAPH_RETRIEVAL, PREFIXES

PROG = "otel-prov"
"""Modules that may add subcommands (``add_parser(subparsers)``); missing ones are skipped."""

_IRI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[^\s<>\"{}|\\^`]+")
_SYNTAX_AT = re.compile(r"error at (\d+):(\d+):\s*")
_STORE_HELP = (f"the store: 'oxigraph:PATH' or a path ({ENV_STORE}; default "
               "$XDG_DATA_HOME/otel-prov/store, the exporter's default)")
_COLLECTION_HELP = f"only sessions of this collection ({ENV_COLLECTION}; default: all)"


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 1."""


# -- helpers ----------------------------------------------------------------------------------------


def _store_spec(args: argparse.Namespace) -> StoreSpec:
    spec = parse_store(args.store)
    if spec.in_memory:
        raise CliError("the store 'memory:' lives inside the process that writes it; give an on-disk "
                       f"store with --store or {ENV_STORE}")
    return spec


class _Opened:
    """An existing store opened for reading, closed on exit."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.spec = _store_spec(args)
        self.store: OxigraphStore | None = None

    def __enter__(self) -> pyoxigraph.Store:
        self.store = open_store_for_reading(self.spec)
        return self.store.inner

    def __exit__(self, *exc: object) -> None:
        if self.store is not None:
            self.store.close()


def _check_iri(value: str) -> str:
    value = value.strip()
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    if not _IRI.fullmatch(value):
        raise CliError(f"not an IRI: {value!r} (expected e.g. urn:trustgraph:agent:UUID; see "
                       f"'{PROG} list')")
    return value


def _write(text: str | bytes, output: str | None) -> None:
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


def _jaeger(args: argparse.Namespace) -> str | None:
    return getattr(args, "jaeger_url", None) or os.environ.get(ENV_JAEGER_URL, "").strip() or None


def _collection(args: argparse.Namespace) -> str | None:
    return parse_collection(getattr(args, "collection", None))


# -- list -------------------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    kind = TYPES[args.type] if args.type else None
    with _Opened(args) as store:
        rows = TraceReader(store).sessions(kind=kind, collection=_collection(args), limit=args.limit)
    _write(session_json(rows) if args.format == "json" else session_table(rows), None)
    return 0


# -- show -------------------------------------------------------------------------------------------


def cmd_show(args: argparse.Namespace) -> int:
    iri = _check_iri(args.iri)
    with _Opened(args) as store:
        reader = TraceReader(store)
        try:
            trace, triples = reader.trace(iri)
        except TraceNotFound as exc:
            raise CliError(str(exc)) from exc
    jaeger = _jaeger(args)
    fmt = args.format
    if fmt == "json":
        out = trace_json(trace, jaeger)
    elif fmt == "turtle":
        out = triples_turtle(triples)
    elif fmt in ("dot", "svg"):
        graph = prov_graph(trace, triples)
        title = f"{trace.type} session: {trace.question}"
        out = to_dot(graph, title) if fmt == "dot" else to_svg(graph, title)
    else:
        out = trace_text(trace, jaeger)
    _write(out, args.output)
    return 0


# -- export -----------------------------------------------------------------------------------------

_EXPORT_FORMATS = {
    "turtle": pyoxigraph.RdfFormat.TURTLE,
    "trig": pyoxigraph.RdfFormat.TRIG,
    "nquads": pyoxigraph.RdfFormat.N_QUADS,
    "jsonld": pyoxigraph.RdfFormat.JSON_LD,
}


class _Progress:
    """``exported N/M quads`` on stderr, only when stderr is a terminal and the export is long."""

    def __init__(self, total: int, stream: IO[str] | None = None, min_total: int = 20000) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = total
        self.enabled = total >= min_total and self.stream.isatty()
        self._last = 0.0

    def wrap(self, items: Iterable[Any]) -> Iterator[Any]:
        count = 0
        for count, item in enumerate(items, 1):
            if self.enabled and count % 1000 == 0 and time.monotonic() - self._last > 0.2:
                self._last = time.monotonic()
                self.stream.write(f"\rexporting: {count}/{self.total} quads ({100 * count // self.total}%)")
                self.stream.flush()
            yield item
        if self.enabled:
            self.stream.write(f"\rexported {count} quads.{' ' * 20}\n")
            self.stream.flush()


def _graph_quads(store: pyoxigraph.Store) -> tuple[int, Iterable[pyoxigraph.Quad]]:
    graph = pyoxigraph.NamedNode(GRAPH_RETRIEVAL)
    solutions = store.query(
        f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{GRAPH_RETRIEVAL}> {{ ?s ?p ?o }} }}")
    assert isinstance(solutions, pyoxigraph.QuerySolutions)
    count = next(iter(solutions))
    return int(count["n"].value), store.quads_for_pattern(None, None, None, graph)


def _session_quads(store: pyoxigraph.Store, iris: Iterable[str]) -> list[pyoxigraph.Quad]:
    reader, graph, seen, quads = TraceReader(store), pyoxigraph.NamedNode(GRAPH_RETRIEVAL), set(), []
    for iri in iris:
        try:
            question = reader.find_question(iri)
        except TraceNotFound as exc:
            raise CliError(str(exc)) from exc
        for s, p, o in reader.triples(question):
            quad = pyoxigraph.Quad(pyoxigraph.NamedNode(s), pyoxigraph.NamedNode(p), o, graph)
            if quad not in seen:
                seen.add(quad)
                quads.append(quad)
    return sorted(quads, key=str)


def cmd_export(args: argparse.Namespace) -> int:
    fmt = _EXPORT_FORMATS[args.format]
    collection = _collection(args)
    items: Iterable[pyoxigraph.Quad]
    with _Opened(args) as store:
        if args.session:
            quads = _session_quads(store, [_check_iri(s) for s in args.session])
            total, items = len(quads), quads
        elif collection is not None:
            ids = [row.id for row in TraceReader(store).sessions(collection=collection)]
            quads = _session_quads(store, ids)
            total, items = len(quads), quads
        else:
            total, items = _graph_quads(store)
        progress = _Progress(total)
        stream: Iterable[Any] = progress.wrap(items)
        if not fmt.supports_datasets:
            stream = (q.triple for q in stream)
        _serialize(stream, fmt, args.output)
    return 0


def _serialize(items: Iterable[Any], fmt: pyoxigraph.RdfFormat, output: str | None) -> None:
    if output is None or output == "-":
        pyoxigraph.serialize(items, sys.stdout.buffer, fmt, prefixes=PREFIXES)
        sys.stdout.buffer.flush()
        return
    try:
        with open(output, "wb") as handle:
            pyoxigraph.serialize(items, handle, fmt, prefixes=PREFIXES)
    except OSError as exc:
        raise CliError(f"cannot write {output}: {exc.strerror or exc}") from exc


# -- query ------------------------------------------------------------------------------------------


def _read_query(args: argparse.Namespace) -> str:
    if args.file is not None:
        if args.sparql is not None:
            raise CliError("give the query as an argument or with --file, not both")
        if args.file == "-":
            return sys.stdin.read()
        try:
            with open(args.file, encoding="utf-8") as handle:
                return handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise CliError(f"cannot read {args.file}: {reason}") from exc
    if args.sparql is None:
        raise CliError("no query: give it as an argument, or with --file FILE ('-' for stdin)")
    return str(args.sparql)


def _cell(term: Any) -> str:
    if term is None:
        return ""
    if isinstance(term, (pyoxigraph.Literal, pyoxigraph.NamedNode)):
        return str(term.value)
    return str(term)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = table_lines(header, [[" ".join(cell.split()) for cell in row] for row in rows])
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return visible("\n".join(lines) + "\n")


def cmd_query(args: argparse.Namespace) -> int:
    text = _read_query(args)
    with _Opened(args) as store:
        try:
            result = store.query(text, prefixes=PREFIXES, use_default_graph_as_union=True)
        except SyntaxError as exc:
            message = str(exc)
            where = _SYNTAX_AT.match(message)
            if where:
                message = f"at line {where.group(1)}, column {where.group(2)}: {message[where.end():]}"
            raise CliError(f"SPARQL syntax error {message}") from exc
        except (OSError, RuntimeError, ValueError) as exc:  # evaluation: SERVICE, LOAD, ...
            raise CliError(f"the query failed: {exc}") from exc
        try:
            out = _query_output(result, args.format)  # results are computed while read
        except (OSError, RuntimeError, ValueError) as exc:
            raise CliError(f"the query failed: {exc}") from exc
    _write(out, args.output)
    return 0


def _query_output(result: Any, fmt: str) -> str | bytes:
    if isinstance(result, pyoxigraph.QueryBoolean):
        value = bool(result)
        return json.dumps({"boolean": value}) + "\n" if fmt == "json" else f"{str(value).lower()}\n"
    if isinstance(result, pyoxigraph.QueryTriples):
        return pyoxigraph.serialize(list(result), format=pyoxigraph.RdfFormat.TURTLE
                                    if fmt == "table" else pyoxigraph.RdfFormat.N_TRIPLES,
                                    prefixes=PREFIXES if fmt == "table" else None) or b""
    if fmt == "json":
        return result.serialize(format=pyoxigraph.QueryResultsFormat.JSON) or b""
    if fmt == "csv":
        return result.serialize(format=pyoxigraph.QueryResultsFormat.CSV) or b""
    names = [v.value for v in result.variables]
    rows = [[_cell(solution[name]) for name in names] for solution in result]
    return _table(names, rows)


# -- demo -------------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    from ._cli_demo import run_demo  # imports the examples (rdflib parsing) only when asked

    return run_demo(args, _write)


# -- the parser -----------------------------------------------------------------------------------


def _common(parser: argparse.ArgumentParser, *, collection: bool = False) -> None:
    parser.add_argument("--store", help=_STORE_HELP)
    if collection:
        parser.add_argument("--collection", help=_COLLECTION_HELP)


def _add(sub: Any, name: str, func: Callable[[argparse.Namespace], int], help_: str,
         description: str = "", epilog: str = "") -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=help_, description=description or help_, epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(func=func)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="List, show, export and query the explainability graph (W3C PROV-O) that "
                    "otel-prov records from OpenTelemetry spans; 'otel-prov demo' runs the examples.",
        epilog=f"Environment: {ENV_STORE}, {ENV_COLLECTION}, {ENV_JAEGER_URL}, {ENV_PROFILE}.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = _add(sub, "list", cmd_list, "list the recorded sessions, newest first",
             "List the recorded sessions (agent sessions, GraphRAG and DocRAG queries), newest first.\n"
             "Sub-traces (a RAG query run by an agent's tool) are shown by 'show', not listed here.")
    _common(p, collection=True)
    p.add_argument("--type", choices=sorted(TYPES), help="only sessions of this type")
    p.add_argument("--limit", type=_positive, metavar="N", help="at most N sessions")
    p.add_argument("--format", choices=("table", "json"), default="table", help="default: table")

    p = _add(sub, "show", cmd_show, "show one trace: question, steps, answer",
             "Show one trace, given the IRI of its Question (or of any of its steps).\n"
             "text: TrustGraph's layout, with thoughts, sub-traces, unknown steps and the status;\n"
             "json: the same as data; turtle: its triples; dot / svg: its provenance graph.",
             epilog=f"example: {PROG} show urn:trustgraph:agent:UUID --format svg --output trace.svg")
    p.add_argument("iri", help="the IRI of a Question (see 'otel-prov list') or of one of its steps")
    _common(p)
    p.add_argument("--format", choices=("text", "json", "turtle", "dot", "svg"), default="text",
                   help="default: text")
    p.add_argument("--jaeger-url", help=f"Jaeger UI base URL, to print the trace's link ({ENV_JAEGER_URL}; "
                   "e.g. http://localhost:16686)")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")

    p = _add(sub, "export", cmd_export, "export the graph (or some sessions) as RDF",
             f"Export the explainability graph <{GRAPH_RETRIEVAL}> as RDF: everything, the sessions of\n"
             "one collection, or the given sessions (with their sub-traces).  Progress is shown on\n"
             "stderr for long exports when it is a terminal.")
    _common(p, collection=True)
    p.add_argument("--session", action="append", metavar="IRI", help="only this session (repeatable)")
    p.add_argument("--format", choices=tuple(_EXPORT_FORMATS), default="turtle", help="default: turtle")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")

    p = _add(sub, "query", cmd_query, "run a SPARQL query over the store",
             "Run a SPARQL query.  The prefixes tg:, prov:, otelprov:, rdf:, rdfs: and xsd: are\n"
             "predeclared, and the default graph is the union of all graphs (or use\n"
             f"GRAPH <{GRAPH_RETRIEVAL}> {{ ... }}).",
             epilog=f"example: {PROG} query 'SELECT ?q ?text WHERE {{ ?q tg:query ?text }}'")
    p.add_argument("sparql", nargs="?", help="the query text")
    _common(p)
    p.add_argument("--file", "-f", metavar="FILE", help="read the query from FILE ('-': stdin)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="default: table (CONSTRUCT gives Turtle, or N-Triples with json/csv)")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")

    p = _add(sub, "demo", cmd_demo, "run the example agents and show what they recorded",
             "Run the three example flows (a ReAct agent with a calculator, a knowledge-graph lookup\n"
             "and a document search; a GraphRAG query; a document-RAG query) with the otel-prov\n"
             "exporter writing to the store, then print 'list' and 'show' for what they wrote.\n"
             "The agent's policy is deterministic and offline unless OTEL_PROV_EXAMPLE_MODEL names\n"
             "a model of an OpenAI-compatible endpoint (OPENAI_BASE_URL, OPENAI_API_KEY).")
    p.add_argument("--store", help=f"where to write: 'oxigraph:PATH', a path, or 'memory:' ({ENV_STORE}; "
                   "default $XDG_DATA_HOME/otel-prov/store)")
    p.add_argument("--collection", help=f"collection the sessions are recorded in ({ENV_COLLECTION}; "
                   "default 'default')")
    p.add_argument("--profile", help=f"mapping profile: seed or strict ({ENV_PROFILE}; default seed)")
    p.add_argument("--jaeger-url", help=f"Jaeger UI base URL for the trace links ({ENV_JAEGER_URL})")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the list, not each trace")

    _serve_cli.add_parser(sub)
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (CliError, ProvError, TraceNotFound) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `otel-prov export | head`
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
