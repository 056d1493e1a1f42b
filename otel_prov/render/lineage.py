"""``otel-prov explain``'s formats: a lineage tree (:mod:`otel_prov.read.lineage`) as text, JSON,
Graphviz DOT or SVG (the same pictures as ``show``'s, of the nodes of the lineage only)."""

from __future__ import annotations

import json

from ..read.graph import GraphNode, ProvGraph
from ..read.lineage import RAN, Lineage, LineageNode
from . import dot, svg
from .text import visible

FORMATS = ("text", "json", "dot", "svg")
WIDTH = 100
"""Characters of a value shown in the text tree (the whole value is in the JSON)."""


MAX_INDENT = 30
"""Characters of indentation at most: deeper nodes are drawn at that depth (a chain of thousands of
steps stays readable, and its text grows with its nodes, not with their square)."""


def _one_line(text: str) -> str:
    text = visible(" ".join(text.split()))
    return text if len(text) <= WIDTH else text[: WIDTH - 3] + "..."


def to_text(root: LineageNode, heading: str, *, forward: bool = False) -> str:
    """The tree, one node a line and its values below it; forward, a relation reads from the node
    to its parent in the tree ("wasDerivedFrom it: Focus": the Focus was derived from it)."""
    lines = [visible(heading), ""]
    stack: list[tuple[LineageNode, str, str, str]] = [(root, "", "", "")]
    while stack:
        node, lead, branch, below = stack.pop()
        via = f"{node.via}{' it' if forward and node.via != RAN else ''}: " if node.via else ""
        mark = " (see above)" if node.repeat else " (deeper: --depth)" if node.cut else ""
        lines.append(f"{lead}{branch}{via}{visible(node.kind)}  {visible(node.iri)}{mark}")
        if node.repeat:
            continue
        bar = "│ " if node.children else "  "
        lines += [f"{lead}{below}{bar}{name}: {_one_line(value)}" for name, value in node.values]
        inner = lead + below if len(lead + below) < MAX_INDENT else lead
        for k, child in reversed(list(enumerate(node.children))):
            last = k == len(node.children) - 1
            stack.append((child, inner, "└─ " if last else "├─ ", "   " if last else "│  "))
    return "\n".join(lines) + "\n"


def to_json(root: LineageNode, *, start: str, direction: str, session: str) -> str:
    """The tree as a flat list of nodes, depth first, each naming its parent's index (``parent``:
    None for the start): a lineage thousands of nodes deep nests no JSON."""
    index: dict[int, int] = {}
    nodes: list[dict[str, object]] = []
    parents: dict[int, int] = {}
    for node in root.walk():
        index[id(node)] = len(nodes)
        item: dict[str, object] = {"iri": node.iri, "kind": node.kind, "parent": parents.get(id(node))}
        if node.via:
            item["via"] = node.via
        if node.values:
            item["values"] = [{"property": name, "value": value} for name, value in node.values]
        if node.repeat:
            item["seenAbove"] = True
        if node.cut:
            item["deeper"] = True
        nodes.append(item)
        for child in node.children:
            parents[id(child)] = index[id(node)]
    return json.dumps({"session": session, "start": start, "direction": direction, "nodes": nodes},
                      indent=2, ensure_ascii=False) + "\n"


def picture(lineage: Lineage, root: LineageNode, forward: bool) -> ProvGraph:
    """The provenance graph of the lineage's nodes alone, with the relations the tree followed."""
    known = {n.iri: n for n in lineage.graph.nodes}
    nodes: dict[str, GraphNode] = {}
    links: list[tuple[str, str, str]] = []
    for node in root.walk():
        if node.iri not in nodes:
            detail = "; ".join(_one_line(v) for _, v in node.values)[:160]
            nodes[node.iri] = known.get(node.iri) or GraphNode(node.iri, "entity", node.kind, detail)
        for child in node.children:
            newer, older = (child.iri, node.iri) if forward and child.via != RAN else (node.iri, child.iri)
            link = (newer, older, child.via or "")
            if link not in links:
                links.append(link)
    return ProvGraph(list(nodes.values()), links)


def render(fmt: str, lineage: Lineage, root: LineageNode, *, forward: bool, heading: str) -> str:
    if fmt == "json":
        return to_json(root, start=root.iri, direction="forward" if forward else "backward",
                       session=lineage.trace.id)
    if fmt == "dot":
        return dot.to_dot(picture(lineage, root, forward), heading)
    if fmt == "svg":
        return svg.to_svg(picture(lineage, root, forward), heading)
    return to_text(root, heading, forward=forward)
