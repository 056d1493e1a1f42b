"""``otel-prov explain``'s formats: a lineage tree (:mod:`otel_prov.read.lineage`) as text, JSON,
Graphviz DOT or SVG (the same pictures as ``show``'s, of the nodes of the lineage only)."""

from __future__ import annotations

import json

from ..read.graph import GraphNode, ProvGraph
from ..read.lineage import RAN, Lineage, LineageNode
from . import dot, svg

FORMATS = ("text", "json", "dot", "svg")
WIDTH = 100
"""Characters of a value shown in the text tree (the whole value is in the JSON)."""


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= WIDTH else text[: WIDTH - 3] + "..."


def to_text(root: LineageNode, heading: str, *, forward: bool = False) -> str:
    """The tree, one node a line and its values below it; forward, a relation reads from the node
    to its parent in the tree ("wasDerivedFrom it: Focus": the Focus was derived from it)."""
    lines = [heading, ""]

    def out(node: LineageNode, lead: str, branch: str, below: str) -> None:
        via = f"{node.via}{' it' if forward and node.via != RAN else ''}: " if node.via else ""
        mark = " (see above)" if node.repeat else " (deeper: --depth)" if node.cut else ""
        lines.append(f"{lead}{branch}{via}{node.kind}  {node.iri}{mark}")
        if node.repeat:
            return
        bar = "│ " if node.children else "  "
        for name, value in node.values:
            lines.append(f"{lead}{below}{bar}{name}: {_one_line(value)}")
        for k, child in enumerate(node.children):
            last = k == len(node.children) - 1
            out(child, lead + below, "└─ " if last else "├─ ", "   " if last else "│  ")

    out(root, "", "", "")
    return "\n".join(lines) + "\n"


def to_data(node: LineageNode) -> dict[str, object]:
    data: dict[str, object] = {"iri": node.iri, "kind": node.kind}
    if node.via:
        data["via"] = node.via
    if node.values:
        data["values"] = [{"property": name, "value": value} for name, value in node.values]
    if node.repeat:
        data["seenAbove"] = True
    if node.cut:
        data["deeper"] = True
    if node.children:
        data["children"] = [to_data(c) for c in node.children]
    return data


def to_json(root: LineageNode, *, start: str, direction: str, session: str) -> str:
    return json.dumps({"session": session, "start": start, "direction": direction,
                       "tree": to_data(root)}, indent=2, ensure_ascii=False) + "\n"


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
