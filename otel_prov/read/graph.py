"""A trace's provenance graph as data (nodes with PROV's shapes and short labels, and the PROV
relations between them), for the pictures of :mod:`otel_prov.render`.  Pure."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from rdflib import RDF, RDFS
from rdflib.namespace import PROV

from ..model.iris import is_session_activity
from ..model.vocab import OTELPROV, TG
from .build import Props, TraceTriple, first, index, kind_of, types_of
from .model import NOT_CAPTURED_TEXT, Approval, Trace, TraceStep, local_name


@dataclass(frozen=True)
class GraphNode:
    """A node of a trace's provenance graph (for DOT / SVG)."""

    iri: str
    shape: str
    """``activity``, ``entity`` or ``agent``: PROV's three classes."""
    title: str
    detail: str


@dataclass
class ProvGraph:
    nodes: list[GraphNode]
    links: list[tuple[str, str, str]]
    """``(from, to, relation local name)``, e.g. ``(analysis, question, "wasDerivedFrom")``."""


_RELATIONS = {str(PROV.wasDerivedFrom): "wasDerivedFrom", str(PROV.wasGeneratedBy): "wasGeneratedBy",
              str(PROV.used): "used", str(PROV.wasAssociatedWith): "wasAssociatedWith",
              str(PROV.wasInformedBy): "wasInformedBy", str(OTELPROV.informedBy): "informedBy"}
"""The relations drawn: PROV's, and the causal edges beside the chain (docs/model.md)."""


def prov_graph(trace: Trace, triples: Iterable[TraceTriple]) -> ProvGraph:
    """The trace's nodes (Question, steps, sub-traces; strict-profile activities and agents) with
    PROV's shapes and short labels, and the PROV relations between them."""
    props = index(triples)
    labels: dict[str, tuple[str, str]] = {}
    _label_trace(trace, labels)
    nodes: list[GraphNode] = []
    documents = {o.value for by_p in props.values() for o in by_p.get(str(TG.document), [])}
    for iri, by_p in props.items():
        types = set(types_of(by_p))
        if (types & {str(TG.EdgeSelection), str(RDF.Statement), str(PROV.Association), str(PROV.Role)}
                or iri in documents):  # details of a node drawn (an approval's association and role: on
            continue  # its label; a trustgraph document: its holder's text)
        if types & {str(PROV.Agent), str(PROV.SoftwareAgent)}:
            shape, title, detail = "agent", "Agent", first(by_p, RDFS.label) or local_name(iri)
        elif str(PROV.Activity) in types:
            shape = "activity"
            title, detail = labels.get(iri) or ("Activity", _activity_detail(iri, props, labels))
        else:
            shape = "entity"
            title, detail = labels.get(iri, (kind_of(by_p), ""))
        nodes.append(GraphNode(iri, shape, title, detail))
    known = {n.iri for n in nodes}
    links = sorted({(s, o.value, _RELATIONS[p]) for s, by_p in props.items() if s in known
                    for p in _RELATIONS for o in by_p.get(p, []) if o.value in known})
    nodes.sort(key=lambda n: n.iri)
    return ProvGraph(nodes, links)


def _activity_detail(iri: str, props: dict[str, Props],
                     labels: dict[str, tuple[str, str]]) -> str:
    """What a strict-profile activity generated ("generated Analysis 2"), else its local name."""
    made = sorted(labels[s][0] for s, by_p in props.items() if s in labels
                  and any(o.value == iri for o in by_p.get(str(PROV.wasGeneratedBy), [])))
    if is_session_activity(iri):
        return "the session" + (f" (generated {', '.join(made)})" if made else "")
    return f"generated {', '.join(made)}" if made else local_name(iri)


def _label_trace(trace: Trace, labels: dict[str, tuple[str, str]]) -> None:
    labels[trace.id] = (f"{trace.type} Question",
                        NOT_CAPTURED_TEXT if "query" in trace.not_captured else trace.question)
    for step in trace.steps:
        labels[step.iri] = (step_title(step), step_summary(step))
        for approval in step.approvals:
            labels[approval.iri] = ("Approval", approval_summary(approval))
        for sub in step.subtraces:
            _label_trace(sub, labels)
    for sub in trace.subtraces:
        _label_trace(sub, labels)


def approval_summary(approval: Approval) -> str:
    """A person's decision in a few words: ``approved by alice (reviewer)``."""
    who = approval.by if approval.by is not None else "(not recorded)"
    return f"{approval.decision or '?'} by {who}" + (f" ({approval.role})" if approval.role else "")


def step_title(step: TraceStep) -> str:
    return f"{step.kind} {step.number}" if step.kind == "Analysis" and step.number else step.kind


def step_summary(step: TraceStep) -> str:
    """One short line about a step (for pictures)."""
    if step.kind == "Analysis":
        action = step.value("action")
        if action:
            return f"{action}({_short_args(step.value('arguments'))})"
        return "answer" if step.value("thought") else ""
    if step.kind == "Exploration":
        if step.value("edgeCount") is not None:
            return f"{step.value('edgeCount')} edges"
        if step.value("chunkCount") is not None:
            return f"{step.value('chunkCount')} chunks"
    if step.kind == "Focus":
        return f"{len(step.edges)} selected edges"
    for name in ("answer", "content"):
        if step.value(name):
            return step.value(name) or ""
        if not step.captured(name):
            return NOT_CAPTURED_TEXT
    return ""


def _short_args(text: str | None) -> str:
    if not text:
        return ""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict):
        return ", ".join(f"{v}" if isinstance(v, str) else json.dumps(v) for v in value.values())
    return text
