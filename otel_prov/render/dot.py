"""Graphviz DOT: one trace's provenance graph as text (render it with ``dot -Tsvg``), in the same
shapes and colours as :mod:`.svg`."""

from __future__ import annotations

from ..read.graph import ProvGraph
from .svg import FILL, STROKE, node_lines

_DOT_SHAPE = {"entity": "ellipse", "activity": "box", "agent": "house"}


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph: ProvGraph, title: str = "") -> str:
    """Graphviz DOT text (render with ``dot -Tsvg``)."""
    ids = {n.iri: f"n{i}" for i, n in enumerate(graph.nodes)}
    out = ["digraph provenance {", "  rankdir=BT;",
           f"  graph [fontname={_dot_quote('Helvetica')}, label={_dot_quote(title)}, labelloc=t];",
           f"  node [fontname={_dot_quote('Helvetica')}, fontsize=11, style=filled];",
           f"  edge [fontname={_dot_quote('Helvetica')}, fontsize=9, color={_dot_quote('#555555')}];"]
    for node in graph.nodes:
        label = "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in node_lines(node))
        out.append(f'  {ids[node.iri]} [label="{label}", shape={_DOT_SHAPE[node.shape]}, '
                   f'fillcolor={_dot_quote(FILL[node.shape])}, color={_dot_quote(STROKE[node.shape])}, '
                   f'tooltip={_dot_quote(node.iri)}];')
    for s, o, relation in graph.links:
        out.append(f"  {ids[s]} -> {ids[o]} [label={_dot_quote(relation)}];")
    out.append("}")
    return "\n".join(out) + "\n"
