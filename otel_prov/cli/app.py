"""The ``otel-prov`` command: list, show, export and query the explainability graph; seal it and
verify the seals; run the demo; serve OTLP; serve the web view.

Every subcommand uses the store named by ``--store`` (else ``OTEL_PROV_STORE``, else the
exporter's default store); the reading ones (:mod:`.read`: list, show, export, query) never create
one.  Errors are one line on stderr, never a traceback; the exit status is 1 when an operation
failed, 2 for a usage error or a bad value (argparse's, a ConfigError, a missing input), 130 when
interrupted (:data:`.common.EXIT_USAGE` and the others).
Each subcommand is a module here that registers itself in :func:`build_parser`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .. import settings
from ..errors import ConfigError, ProvError
from ..model.profiles import PROFILES
from ..model.vocab import GRAPH_RETRIEVAL, GRAPH_SEALS
from ..read.audit import CODES, FAIL_ON
from ..read.model import SORTS, STATUS_NAMES, TYPES, TraceNotFound
from ..render import DIFF_FORMATS, EXPORT_FORMATS, FORMAT_ALIASES, LIST_FORMATS, TRACE_FORMATS
from ..render.lineage import FORMATS as EXPLAIN_FORMATS
from ..render.results import RESULT_FORMATS
from . import serve, ui
from .audit import cmd_audit
from .common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    CliError,
    format_choice,
    silence_stdout,
)
from .read import (
    DEFAULT_QUERY_TIMEOUT,
    DIFF_SUFFIXES,
    EXPORT_SUFFIXES,
    cmd_check,
    cmd_diff,
    cmd_explain,
    cmd_export,
    cmd_list,
    cmd_query,
    cmd_show,
)
from .seal import cmd_seal, cmd_verify

_STORE_HELP = (f"the store: 'oxigraph:PATH', a path, or a SPARQL server's dataset URL http(s)://... "
               f"({settings.STORE.env}; default $XDG_DATA_HOME/otel-prov/store, the exporter's default)")
_COLLECTION_HELP = f"only sessions of this collection ({settings.COLLECTION.env}; default: all)"


def cmd_import(args: argparse.Namespace) -> int:
    from .importing import cmd_import as run_import  # the mapping and the decoders only when asked

    return run_import(args)


def cmd_hold(args: argparse.Namespace) -> int:
    from .lifecycle import cmd_hold as run

    return run(args)


def cmd_delete(args: argparse.Namespace) -> int:
    from .lifecycle import cmd_delete as run

    return run(args)


def cmd_prune(args: argparse.Namespace) -> int:
    from .lifecycle import cmd_prune as run

    return run(args)


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo  # imports the examples (rdflib parsing) only when asked

    return run_demo(args)


def _common(parser: argparse.ArgumentParser, *, collection: bool = False) -> None:
    parser.add_argument("--store", help=_STORE_HELP)
    if collection:
        parser.add_argument("--collection", help=_COLLECTION_HELP)


def _blob_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--blob-dir", metavar="DIR",
                        help="where the store's large values are: a directory, or s3://BUCKET/PREFIX "
                             "(default: blobs/ in an on-disk store; "
                             f"{settings.BLOB_DIR.env})")


def _time_range(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--since", metavar="TIME",
                        help="only sessions started at or after TIME (ISO 8601, UTC unless it ends with "
                        "its offset: 2026-11-30, 2026-11-30T10:21, 2026-11-30T12:21+02:00)")
    parser.add_argument("--until", metavar="TIME", help="only sessions started at or before TIME "
                        "(2026-11-30: that whole day)")


def _add(sub: Any, name: str, func: Callable[[argparse.Namespace], int], help_: str,
         description: str = "", epilog: str = "") -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=help_, description=description or help_, epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(func=func)
    return parser


def _formats(names: Sequence[str], *, from_output: bool = False) -> dict[str, Any]:
    """A ``--format`` flag: the registry's names (and their usual aliases: ``ttl``, ``nq``), the first
    by default (``from_output``: unless ``--output``'s suffix names another)."""
    names = list(names)
    return {"type": format_choice(names), "choices": names, "metavar": "{" + ",".join(names) + "}",
            "default": None if from_output else names[0],
            "help": f"{'default: from --output suffix, else ' if from_output else 'default: '}{names[0]}; "
                    f"aliases: {', '.join(k for k, v in FORMAT_ALIASES.items() if v in names) or 'none'}"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="List, show, export and query the explainability graph (W3C PROV-O) that "
                    "otel-prov records from OpenTelemetry spans; 'otel-prov demo' runs the examples.",
        epilog=f"Environment: {settings.STORE.env}, {settings.COLLECTION.env}, {settings.JAEGER_URL.env}, "
               f"{settings.PROFILE.env}.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = _add(sub, "list", cmd_list, "list the recorded sessions, newest first",
             "List the recorded sessions (agent sessions, GraphRAG and DocRAG queries), newest first.\n"
             "Sub-traces (a RAG query run by an agent's tool) are shown by 'show', not listed here.")
    _common(p, collection=True)
    p.add_argument("--type", choices=sorted(TYPES), type=str.lower, help="only sessions of this type")
    p.add_argument("--status", choices=tuple(STATUS_NAMES), type=str.lower,
                   help="only sessions in this state (error: failed, as the list shows it)")
    _time_range(p)
    p.add_argument("--text", "-q", metavar="WORDS", help="only sessions whose question, thoughts, actions, "
                   "arguments, observations, answer or retrieved texts hold WORDS (case ignored)")
    p.add_argument("--tool", metavar="NAME", help="only sessions that called this tool")
    p.add_argument("--agent", metavar="NAME", help="only sessions of this agent")
    p.add_argument("--model", metavar="NAME", help="only sessions that called this model")
    p.add_argument("--service", metavar="NAME",
                   help="only sessions recorded by this service (its service.name)")
    p.add_argument("--sort", choices=SORTS, default="time", type=str.lower,
                   help="time (newest first, the default), duration (longest first), steps (most first), "
                        "status (failed, unfinished, complete)")
    p.add_argument("--limit", type=_positive, metavar="N",
                   help="at most N sessions (default 50; a line on stderr says how many more match)")
    p.add_argument("--format", **_formats(list(LIST_FORMATS)))

    p = _add(sub, "show", cmd_show, "show one trace: question, steps, answer",
             "Show one trace, given the IRI of its Question (or of any of its steps).\n"
             "text: TrustGraph's layout, with thoughts, sub-traces, unknown steps and the status;\n"
             "json: the same as data; turtle: its triples; provn / prov-json: its PROV statements\n"
             "(PROV-N, PROV-JSON); dot / svg: its provenance graph.",
             epilog=f"example: {PROG} show urn:trustgraph:agent:UUID --format svg --output trace.svg")
    p.add_argument("iri", help="the IRI of a Question (see 'otel-prov list') or of one of its steps")
    _common(p)
    p.add_argument("--format", **_formats(list(TRACE_FORMATS), from_output=True))
    p.add_argument("--inline", action="store_true",
                   help="each large value stored by reference (a blob) shown whole, not its preview")
    _blob_dir(p)
    p.add_argument("--jaeger-url", help=f"Jaeger UI base URL, to print the trace's link "
                   f"({settings.JAEGER_URL.env}; e.g. http://localhost:16686)")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")

    p = _add(sub, "diff", cmd_diff, "compare two sessions: the first divergence, each changed value",
             "Compare two sessions (typically two runs of the same question): their steps aligned (a step\n"
             "inserted or removed leaves the later ones equal), the first divergence, each changed value\n"
             "(question, thoughts, tools, arguments, observations, retrieved and selected items, answer,\n"
             "model, errors) and what lies downstream of it.  Times, durations and tokens are measured\n"
             "run against run, never differences.\n"
             "Exit status (as diff's): 0 identical, 1 different, 2 trouble (a usage error, a session or\n"
             "a store not found).",
             epilog=f"example: {PROG} diff urn:trustgraph:agent:UUID1 urn:trustgraph:agent:UUID2")
    p.add_argument("a", metavar="A", help="a session: its IRI (or a step's), its UUID, its trace id or the "
                   "first 6 or more digits of it")
    p.add_argument("b", metavar="B", help="the other session, named the same ways")
    _common(p)
    suffixes = ", ".join(f"{suffix} {name}" for suffix, name in DIFF_SUFFIXES.items())
    p.add_argument("--format", **{**_formats(list(DIFF_FORMATS), from_output=True),
                                  "help": f"default: from --output's suffix ({suffixes}), else text"})
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")

    p = _add(sub, "explain", cmd_explain, "what an answer (or any step) derives from, as a tree",
             "The lineage of an answer: every step, tool call and observation, selected edge and chunk,\n"
             "sub-trace and user input it derives from, as a tree (a node reached again is shown once\n"
             "more as '(see above)').  A session (its IRI, UUID or trace id) means its answer; any other\n"
             "node's IRI means that node.  --forward: what the node went on to influence.  Every\n"
             "relation between two nodes is followed as PROV reads it (docs/audit.md).",
             epilog=f"example: {PROG} explain 4bf92f3577b34da6a3ce929d0e0e4736")
    p.add_argument("iri", metavar="IRI|TRACE_ID", help="a session (its answer) or a node of one")
    _common(p)
    p.add_argument("--forward", action="store_true", help="what the node went on to influence")
    p.add_argument("--depth", type=_positive, metavar="N", help="at most N relations deep")
    p.add_argument("--format", **{**_formats(list(EXPLAIN_FORMATS), from_output=True),
                                  "help": "text (default), json, dot, svg; or from --output's suffix"})
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")

    p = _add(sub, "audit", cmd_audit, "how complete the record is, per session and for the whole",
             "A completeness report: for each session (those named, or as 'list' filters them) what the\n"
             "graph says is missing, cut or wrong in it -- unfinished, failed, no-result (a tool call\n"
             "without its observation), clock-skew, not-captured, redacted -- and for the whole: the\n"
             "sessions by status, the oldest and newest, the share with no finding.\n"
             "Exit status 0 when no session has a finding of --fail-on, 1 otherwise (2: a bad flag).",
             epilog=f"example: {PROG} audit --since 2026-11-01 --format json --fail-on failed,unfinished")
    p.add_argument("sessions", nargs="*", metavar="SESSION", help="sessions to audit (default: every one)")
    _common(p, collection=True)
    _time_range(p)
    p.add_argument("--fail-on", metavar="CODES",
                   help=f"comma-separated findings that make the exit status 1 (default {','.join(FAIL_ON)}; "
                        f"all: {','.join(CODES)}; none)")
    p.add_argument("--format", **{**_formats(["text", "json"], from_output=True),
                                  "help": "text (default) or json; or from --output's suffix"})
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")

    p = _add(sub, "export", cmd_export, "export the graph (or some sessions) as RDF",
             f"Export the explainability graph <{GRAPH_RETRIEVAL}> as RDF: everything, the sessions of\n"
             "one collection, or the given sessions (with their sub-traces).  Progress is shown on\n"
             "stderr for long exports when it is a terminal.")
    _common(p, collection=True)
    p.add_argument("--session", action="append", metavar="IRI",
                   help="only this session (its IRI, or its trace id; repeatable)")
    p.add_argument("--inline", action="store_true",
                   help="each large value stored by reference (a blob) written back whole as its literal "
                        "(docs/store.md)")
    _blob_dir(p)
    suffixes = ", ".join(f"{suffix} {name}" for suffix, name in EXPORT_SUFFIXES.items())
    aliases = [k for k, v in FORMAT_ALIASES.items() if v in EXPORT_FORMATS]
    p.add_argument("--format", **{**_formats(EXPORT_FORMATS, from_output=True),
                                  "help": f"default: from --output's suffix ({suffixes}), else "
                                          f"{EXPORT_FORMATS[0]}; aliases: {', '.join(aliases)}, json "
                                          "(JSON-LD); provn, prov-json: PROV-N, PROV-JSON"})
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")

    p = _add(sub, "query", cmd_query, "run a SPARQL query over the store",
             "Run a SPARQL query.  The prefixes tg:, prov:, otelprov:, rdf:, rdfs: and xsd: are\n"
             "predeclared, and the default graph is the union of all graphs (or use\n"
             f"GRAPH <{GRAPH_RETRIEVAL}> {{ ... }}).",
             epilog=f"example: {PROG} query 'SELECT ?q ?text WHERE {{ ?q tg:query ?text }}'")
    p.add_argument("sparql", nargs="?", help="the query text")
    _common(p)
    p.add_argument("--file", "-f", metavar="FILE", help="read the query from FILE ('-': stdin)")
    p.add_argument("--pack", metavar="NAME", help="run a canned query: PACK/QUERY ('--pack list': every one, "
                   "and what it asks; docs/audit.md)")
    p.add_argument("--format", choices=RESULT_FORMATS, default=None,
                   help="default: from --output's suffix (.json, .csv), else table (a CONSTRUCT gives "
                        "Turtle; JSON-LD with json; subject,predicate,object rows with csv)")
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--timeout", type=_seconds, default=DEFAULT_QUERY_TIMEOUT, metavar="SECONDS",
                   help=f"give up after SECONDS (default {DEFAULT_QUERY_TIMEOUT:g}); Ctrl-C stops it at once")
    p.add_argument("--allow-service", action="store_true",
                   help="let SERVICE send queries to other servers over the network (refused otherwise)")

    p = _add(sub, "check", cmd_check, "check an on-disk store: its index and its log",
             "Check an on-disk store: whether its index can be read, what of its log is not folded yet,\n"
             "damaged segments, files set aside.  Exit status 1 when something is wrong.  --repair\n"
             "writes what can be written again without losing anything (the index's lost CURRENT file,\n"
             "an interrupted rebuild).  --rebuild folds the log and rebuilds the index from what it\n"
             "holds: what delete and prune removed then leaves the store's files (they do it themselves\n"
             "when no other process indexes the store); the session index's rows are built again too.")
    p.add_argument("store_path", nargs="?", metavar="STORE", help=_STORE_HELP)
    _common(p)
    p.add_argument("--repair", action="store_true",
                   help="repair what can be repaired without losing anything")
    p.add_argument("--rebuild", action="store_true",
                   help="fold the log and rebuild the index and the session index from what it holds "
                        "(no other process may be indexing the store: stop serve first)")

    _seal_parsers(sub)

    p = _add(sub, "import", cmd_import, "import quads or spans from files into the store",
             "Import files into the store (created if missing), as many as given:\n"
             "  N-Quads or TriG (.nq, .trig): the rescue and rejected files serve and the exporter save\n"
             "    when a store could not take them (otel-prov-rescue-*.nq); a triple of the default graph\n"
             "    goes to urn:graph:retrieval;\n"
             "  OTLP/JSON (.json, .jsonl): one ExportTraceServiceRequest a line, as the Collector's file\n"
             "    exporter writes them; the spans are mapped as serve maps them;\n"
             "  Jaeger's JSON (a .json file starting {\"data\": ...): what its UI downloads and its API\n"
             "    answers; its spans made OTLP again, then mapped the same way.\n"
             "Importing twice changes nothing.  A file that cannot be read is one line, none of it is\n"
             "written, and the others are imported (exit status 1).")
    p.add_argument("files", nargs="+", metavar="FILE", help="the files to import")
    p.add_argument("--store", help=f"where to write: 'oxigraph:PATH', a path or http(s)://... "
                   f"({settings.STORE.env}; default $XDG_DATA_HOME/otel-prov/store)")
    p.add_argument("--format", choices=("nquads", "trig", "otlp-json", "jaeger-json"), type=str.lower,
                   help="the files' format (default: from each file's suffix, else its first byte)")
    p.add_argument("--profile", type=str.lower, choices=PROFILES,
                   help=f"the mapping profile of spans ({settings.PROFILE.env}; default seed)")
    p.add_argument("--content-policy", metavar="POLICY",
                   help="what of the spans' text is stored: keep, truncate:N, sha256 or omit, per field "
                        f"({settings.CONTENT_POLICY.env}; default keep; docs/privacy.md)")
    p.add_argument("--redact", metavar="DETECTORS",
                   help=f"replace secrets and personal data in the spans' text: on, off or detectors' names "
                        f"({settings.REDACT.env}; default off)")
    p.add_argument("--blob-threshold", metavar="BYTES",
                   help="spans' values of more bytes stored once as blobs beside the store "
                        f"({settings.BLOB_THRESHOLD.env}; default 65536; 0 = never; docs/store.md)")
    _blob_dir(p)

    p = _add(sub, "hold", cmd_hold, "place, release or list legal holds (kept from delete and prune)",
             "A hold keeps a session (with its sub-traces) or a whole collection from every removal:\n"
             "delete refuses it by name, prune keeps it.  Holds are recorded in the store (graph\n"
             "urn:graph:holds: who, when, why).")
    p.add_argument("action", choices=("add", "remove", "list"), type=str.lower)
    p.add_argument("sessions", nargs="*", metavar="SESSION", help="session IRIs or trace ids")
    p.add_argument("--collection", help="hold (or release) a whole collection")
    p.add_argument("--reason", help="why (recorded)")
    p.add_argument("--by", help="who (recorded; default: your user name)")
    p.add_argument("--format", choices=("table", "json"), type=str.lower, default="table",
                   help="hold list's format")
    p.add_argument("--store", help=_STORE_HELP)

    erasing = ("Each session goes with its sub-traces, from whatever the store is; each erasure is\n"
               "recorded (graph urn:graph:erasures: who, when, why, which session; never what it held).\n"
               "On an on-disk store the log is folded first and the index rebuilt after, so the text of\n"
               "what was removed leaves the store's files (unless another process, serve, indexes it:\n"
               "then it says so and exits 1; 'check --rebuild' finishes it later; docs/store.md).\n"
               "A held session is refused by name (exit 1).")
    p = _add(sub, "delete", cmd_delete, "erase sessions from the store (with their sub-traces)",
             "Erase sessions: the ones named, a collection's, or those whose recorded text holds some\n"
             "words (--where-text).\n" + erasing)
    p.add_argument("sessions", nargs="*", metavar="SESSION", help="session IRIs or trace ids")
    p.add_argument("--collection", help="every session of this collection")
    p.add_argument("--where-text", help="every session whose question, steps or answer hold these words")
    p.add_argument("--reason", help="why (recorded)")
    p.add_argument("--by", help="who (recorded; default: your user name)")
    p.add_argument("--dry-run", action="store_true", help="list what would be deleted; delete nothing")
    p.add_argument("--store", help=_STORE_HELP)
    _blob_dir(p)

    p = _add(sub, "prune", cmd_prune, "erase the sessions older than a given age (held ones kept)",
             "Erase the sessions that started more than DURATION ago (90d, 12h, 2w, 1y), of one\n"
             "collection or all; held ones are kept and counted.\n" + erasing)
    p.add_argument("--older-than", required=True, metavar="DURATION", help="90d, 12h, 2w, 1y, ...")
    p.add_argument("--collection", help="only this collection's sessions")
    p.add_argument("--reason", help="why (recorded; default 'retention: older than DURATION')")
    p.add_argument("--by", help="who (recorded; default: your user name)")
    p.add_argument("--dry-run", action="store_true", help="list what would be deleted; delete nothing")
    p.add_argument("--store", help=_STORE_HELP)
    _blob_dir(p)

    p = _add(sub, "demo", cmd_demo, "run the example agents and show what they recorded",
             "Run the three example flows (a ReAct agent with a calculator, a knowledge-graph lookup\n"
             "and a document search; a GraphRAG query; a document-RAG query) with the otel-prov\n"
             "exporter writing to the store, then print 'list' and 'show' for what they wrote.\n"
             "The agent's policy is deterministic and offline unless OTEL_PROV_EXAMPLE_MODEL names\n"
             "a model of an OpenAI-compatible endpoint (OPENAI_BASE_URL, OPENAI_API_KEY).")
    p.add_argument("--store", help=f"where to write: 'oxigraph:PATH', a path, 'memory:' or http(s)://... "
                   f"({settings.STORE.env}; default $XDG_DATA_HOME/otel-prov/store)")
    p.add_argument("--collection", help=f"collection the sessions are recorded in "
                   f"({settings.COLLECTION.env}; default 'default')")
    p.add_argument("--profile",
                   help=f"mapping profile: {serve.PROFILE_CHOICES} ({settings.PROFILE.env}; default seed)")
    p.add_argument("--jaeger-url",
                   help=f"Jaeger UI base URL for the trace links ({settings.JAEGER_URL.env})")
    p.add_argument("--quiet", "-q", action="store_true", help="print only the list, not each trace")
    p.add_argument("--otlp", nargs="?", const="", metavar="ENDPOINT",
                   help="also send the spans over OTLP/gRPC, e.g. to Jaeger (default endpoint: "
                        "OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4317)")
    p.add_argument("--ui", action="store_true",
                   help="then serve the web view of the store (as 'otel-prov ui'; Ctrl-C stops)")
    ui.add_flags(p, shared=False)

    serve.add_parser(sub)
    ui.add_parser(sub)
    return parser


def _seal_parsers(sub: Any) -> None:
    """``seal`` and ``verify``: the sessions as ``list`` takes them (or named), the keys, the report."""
    for name, func, help_, description in (
        ("seal", cmd_seal, "seal each session's graph: a canonical digest recorded in urn:graph:seals",
         "Seal each session's graph: the SHA-256 of its quads canonicalized with RDFC-1.0, recorded in the\n"
         f"graph <{GRAPH_SEALS}> (with an HMAC and an Ed25519 signature when keys are given).  A\n"
         "session already sealed as it is, with these keys, is left alone; one whose graph changed since\n"
         "its seal is not sealed over unless --reseal (otel-prov verify names it)."),
        ("verify", cmd_verify, "name every session whose graph changed, went or came since it was sealed",
         "Compute each session's digest again and compare it with its latest seal: intact, changed,\n"
         "removed, unsealed (recorded after the last seal), and with keys, unsigned or bad-signature.\n"
         "Exit status 0 when every session in scope is intact, 1 otherwise (2: a bad flag)."),
    ):
        p = _add(sub, name, func, help_, description,
                 epilog="the sessions: as 'otel-prov list' filters them, or those named; docs/audit.md")
        _common(p, collection=True)
        _time_range(p)
        p.add_argument("--session", action="append", metavar="ID",
                       help="only this session (its IRI, trace id or UUID; repeatable)")
        if name == "verify":
            _blob_dir(p)
        p.add_argument("--hmac-key", metavar="FILE",
                       help="a file holding a secret key (16 bytes or more): "
                            + ("an HMAC-SHA256 of each seal" if name == "seal" else "check the seals' HMAC"))
        p.add_argument("--ed25519-key", metavar="FILE",
                       help="an Ed25519 private key (PEM): sign each seal" if name == "seal" else
                            "an Ed25519 public (or private) key (PEM): check the seals' signatures")
        if name == "seal":
            p.add_argument("--reseal", action="store_true",
                           help="seal the sessions whose graph changed since their seal as they are now")
        p.add_argument("--format", choices=("text", "json"), type=str.lower, default=None,
                       help="default: from --output's suffix (.json), else text")
        p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")


def _at_least(kind: Callable[[str], Any], low: float, *, strictly: bool = False,
              high: float | None = None) -> Callable[[str], Any]:
    """An argparse type: a number (``int`` or ``float``) at least (or more than) ``low``, and at
    most ``high``."""

    def read(text: str) -> Any:
        try:
            value = kind(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"not a number: {text[:40]!r}") from None
        if value < low or (strictly and value == low):
            raise argparse.ArgumentTypeError(f"must be {'more than' if strictly else 'at least'} {low:g}: "
                                             f"{text}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:.0f}: {text[:40]}")
        return value

    return read


MAX_LIMIT = 1_000_000
"""The largest ``--limit`` (a SPARQL ``LIMIT`` the stores take as a 64-bit number)."""
_seconds = _at_least(float, 0, strictly=True, high=86_400 * 365)
_positive = _at_least(int, 1, high=MAX_LIMIT)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    given = list(sys.argv[1:] if argv is None else argv)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if given and given[0].startswith("-") and given[0] not in ("-h", "--help", "--version"):
        command = next((a for a in given if a in sub.choices), None)
        if command is not None:  # argparse would take the option's value for the command
            parser.error(f"{given[0].split('=')[0]} goes after the command: "
                         f"otel-prov {command} {' '.join(a for a in given if a != command)}")
    args, extra = parser.parse_known_args(given)
    if extra:  # the subcommand's own usage, not the top-level one
        sub.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return int(args.func(args))
    except (CliError, ProvError, TraceNotFound) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        if isinstance(exc, ConfigError):  # a bad value of a flag or a variable: a usage error
            return EXIT_USAGE
        return exc.status if isinstance(exc, CliError) else EXIT_FAILED
    except BrokenPipeError:  # `otel-prov export | head`
        silence_stdout()
        return EXIT_OK
    except OSError as exc:  # writing the output failed (a full device), ...: one line, never a traceback
        silence_stdout()
        where = f" ({exc.filename})" if exc.filename else " (the output)"
        print(f"{PROG}: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
