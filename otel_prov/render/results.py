"""SPARQL query results (``otel-prov query``): a table for people, the standard SPARQL 1.1 JSON and
CSV result formats for programs; a CONSTRUCT's triples as Turtle (table), JSON-LD (json) or CSV
rows of subject, predicate and object (csv)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from ..stores.base import BNODE, IRI, TRIPLE, QueryResult, Term
from .rdf import graph_text
from .text import table_lines, visible

RESULT_FORMATS = ("table", "json", "csv")


def render_result(result: QueryResult, fmt: str) -> str | bytes:
    if result.kind == "ask":
        if fmt == "json":
            return json.dumps({"head": {}, "boolean": result.boolean}) + "\n"
        return f"{str(result.boolean).lower()}\n"
    if result.kind == "graph":
        if fmt == "csv":
            return _triples_csv(result)
        return graph_text(result.triples, fmt)
    if fmt == "json":
        return _json(result)
    if fmt == "csv":
        return _csv(result)
    rows = [[_cell(row[name].value) if name in row else "" for name in result.variables]
            for row in result.rows]
    lines = table_lines(result.variables, rows)
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return visible("\n".join(lines) + "\n")


CELL_WIDTH = 100
"""A table cell longer than this is cut, ending ``...`` (json and csv keep every value whole)."""


def _cell(value: str) -> str:
    text = " ".join(value.split())
    return text if len(text) <= CELL_WIDTH else text[:CELL_WIDTH - 3] + "..."


def _binding(term: Term) -> dict[str, Any]:
    if term.kind == IRI:
        return {"type": "uri", "value": term.value}
    if term.kind == BNODE:
        return {"type": "bnode", "value": term.value}
    if term.kind == TRIPLE and term.parts is not None:  # SPARQL 1.2's form
        s, p, o = map(_binding, term.parts)
        return {"type": "triple", "value": {"subject": s, "predicate": p, "object": o}}
    out: dict[str, Any] = {"type": "literal", "value": term.value}
    if term.language is not None:
        out["xml:lang"] = term.language
    elif term.datatype is not None:
        out["datatype"] = term.datatype
    return out


def _json(result: QueryResult) -> str:
    """SPARQL 1.1 Query Results JSON Format (SPARQL 1.2's for a triple term)."""
    bindings = [{name: _binding(row[name]) for name in result.variables if name in row}
                for row in result.rows]
    document = {"head": {"vars": result.variables}, "results": {"bindings": bindings}}
    return json.dumps(document, ensure_ascii=False) + "\n"


def _csv_value(term: Term) -> str:
    return f"_:{term.value}" if term.kind == BNODE else term.value


def _triples_csv(result: QueryResult) -> str:
    """A CONSTRUCT's triples as CSV rows ``subject,predicate,object`` (the SPARQL CSV conventions),
    sorted."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["subject", "predicate", "object"])
    for row in sorted([_csv_value(term) for term in triple] for triple in result.triples):
        writer.writerow(row)
    return out.getvalue()


def _csv(result: QueryResult) -> str:
    """SPARQL 1.1 Query Results CSV Format (CRLF line ends, blank nodes as ``_:label``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(result.variables)
    for row in result.rows:
        writer.writerow(["" if name not in row else _csv_value(row[name]) for name in result.variables])
    return out.getvalue()
