"""``otel-prov audit``: how complete the record is, per session and for the whole
(:mod:`otel_prov.read.audit`)."""

from __future__ import annotations

import argparse
import json

from ..read.audit import CODES, FAIL_ON, SessionAudit, Summary, audit_trace, summarize
from ..read.build import build_trace
from ..read.model import SessionFilter, TraceNotFound
from ..read.reader import TraceReader
from .common import EXIT_FAILED, EXIT_OK, CliError, Reading, UsageError, check_iri, resolve_format, write
from .read import check_time_range

AUDIT_SUFFIXES = {".txt": "text", ".json": "json"}
NO_TIME = "(no time recorded)"


def fail_on(text: str | None) -> set[str]:
    if text is None:
        return set(FAIL_ON)
    codes = {c.strip().lower() for c in text.split(",") if c.strip()}
    unknown = codes - set(CODES) - {"none"}
    if unknown:
        raise UsageError(f"--fail-on: unknown {', '.join(sorted(unknown))} (choose from {', '.join(CODES)}, "
                         "or none)")
    return codes - {"none"}


def cmd_audit(args: argparse.Namespace) -> int:
    fmt = resolve_format(args.format, args.output, AUDIT_SUFFIXES, "text")
    failing = fail_on(args.fail_on)
    check_time_range(args)
    with Reading(args) as store:
        reader = TraceReader(store)
        try:
            if args.sessions:
                questions = list(dict.fromkeys(reader.question_of(check_iri(s, trace_id=True))
                                               for s in args.sessions))
            else:
                where = SessionFilter(since=args.since, until=args.until)
                questions = [row.id for row in reader.sessions(collection=args.collection, where=where)]
        except (TraceNotFound, ValueError) as exc:
            raise CliError(str(exc)) from exc
        audits = []
        for question, triples in reader.session_triples(questions):
            plain = [(s.value, p.value, o) for s, p, o in triples]
            audits.append(audit_trace(build_trace(question, plain), plain))
    summary = summarize(audits)
    if fmt == "json":
        text = json.dumps({"summary": summary.as_json(), "failOn": sorted(failing),
                           "sessions": [a.as_json() for a in audits]}, indent=2, ensure_ascii=False) + "\n"
    else:
        text = _text(summary, audits)
    write(text, args.output)
    return EXIT_FAILED if any(a.codes() & failing for a in audits) else EXIT_OK


def _text(summary: Summary, audits: list[SessionAudit]) -> str:
    if not summary.sessions:
        return "no sessions\n"
    share = summary.share_complete or 0.0
    lines = [f"{summary.sessions} session{'s' if summary.sessions != 1 else ''}: "
             + ", ".join(f"{n} {status}" for status, n in sorted(summary.by_status.items())),
             f"oldest {summary.oldest or NO_TIME}, newest {summary.newest or NO_TIME}",
             f"complete, with no finding: {summary.complete} of {summary.sessions} ({share:.1%})"]
    if summary.by_code:
        lines.append("sessions with a finding: "
                     + ", ".join(f"{code} {n}" for code, n in summary.by_code.items()))
    for audit in audits:
        if not audit.findings:
            continue
        lines += ["", f"{audit.id}  {audit.type}  {audit.status}  {audit.time or ''}".rstrip()]
        lines += [f"  {f.code}: {f.text}" for f in audit.findings]
    return "\n".join(lines) + "\n"
