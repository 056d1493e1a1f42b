"""SVG: a picture of one trace's provenance graph, drawn here in Python (a simple layered layout), so
that a picture needs nothing beyond the package.  (The same graph as Graphviz text: :mod:`.dot`.)

PROV's conventional shapes and colours: activities are blue rectangles, entities yellow ellipses,
agents orange "houses".  Arrows point from the newer node to the one it was derived from, generated
by, used or associated with, as in the PROV documents; the Question is at the top.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from ..read.graph import GraphNode, ProvGraph

FILL = {"entity": "#FFFC87", "activity": "#9FB1FC", "agent": "#FED37F"}
STROKE = {"entity": "#808080", "activity": "#0000FF", "agent": "#000000"}

_FONT = "Helvetica, Arial, sans-serif"
_CHAR_W = 6.8  # average advance of a 12px sans-serif character
_LINE_H = 15
_WRAP = 34
_DETAIL_LINES = 2
_ROW_GAP = 46
_COL_GAP = 28
_MARGIN = 20
_REL_CHAR_W = 5.6  # a 9px relation label: a generous average advance, so labels never touch
_REL_ASCENT, _REL_DESCENT = 8.0, 3.0
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
"""Characters XML 1.0 cannot hold (a thought or question may carry them): drawn as U+FFFD."""


def _xml(text: str) -> str:
    return escape(_NOT_XML.sub("\ufffd", text))


def node_lines(node: GraphNode) -> list[str]:
    detail = textwrap.wrap(" ".join(node.detail.split()), _WRAP) if node.detail else []
    if len(detail) > _DETAIL_LINES:
        detail = detail[:_DETAIL_LINES]
        detail[-1] = detail[-1][: _WRAP - 3].rstrip() + "..."
    return [node.title, *detail]


# -- layout ---------------------------------------------------------------------------------------


@dataclass
class _Box:
    node: GraphNode
    lines: list[str]
    w: float
    h: float
    rank: int = 0
    x: float = 0.0  # centre
    y: float = 0.0  # top


def _box(node: GraphNode) -> _Box:
    lines = node_lines(node)
    text_w = max(len(line) for line in lines) * _CHAR_W
    text_h = len(lines) * _LINE_H
    if node.shape == "entity":
        return _Box(node, lines, text_w * 1.22 + 24, text_h * 1.35 + 14)
    if node.shape == "agent":
        return _Box(node, lines, text_w + 28, text_h + 30)
    return _Box(node, lines, text_w + 24, text_h + 16)


def _ranks(graph: ProvGraph, boxes: dict[str, _Box]) -> None:
    """Longest path to a root along the links (older nodes higher); an agent sits on the row of
    the first activity associated with it."""
    targets: dict[str, list[str]] = {iri: [] for iri in boxes}
    for s, o, relation in graph.links:
        if relation != "wasAssociatedWith":
            targets[s].append(o)
    memo: dict[str, int] = {}
    for root in boxes:  # depth first with an explicit stack (a chain may be 10,000 nodes long)
        if root in memo:
            continue
        stack, on_stack = [(root, iter(targets[root]))], {root}
        while stack:
            iri, pending = stack[-1]
            nxt = next((o for o in pending if o not in memo and o not in on_stack), None)
            if nxt is not None:
                stack.append((nxt, iter(targets[nxt])))
                on_stack.add(nxt)
                continue
            stack.pop()
            on_stack.discard(iri)
            above = [memo[o] for o in targets[iri] if o in memo]
            memo[iri] = 1 + max(above) if above else 0
    for iri, box in boxes.items():
        box.rank = memo[iri]
    for iri, box in boxes.items():
        if box.node.shape == "agent":
            rows = [boxes[s].rank for s, o, r in graph.links if o == iri and r == "wasAssociatedWith"]
            box.rank = min(rows) if rows else 0


def _barycentre(box: _Box, boxes: dict[str, _Box], targets: dict[str, list[str]]) -> float:
    """The mean x of the nodes (on rows above) this one points to: where it would like to be."""
    placed = [boxes[o].x for o in targets[box.node.iri] if boxes[o].rank < box.rank]
    return sum(placed) / len(placed) if placed else 0.0


def _place(graph: ProvGraph, boxes: dict[str, _Box]) -> tuple[float, float]:
    rows: dict[int, list[_Box]] = {}
    for box in boxes.values():
        rows.setdefault(box.rank, []).append(box)
    targets: dict[str, list[str]] = {iri: [] for iri in boxes}
    side_by_side: dict[frozenset[str], str] = {}
    for s, o, relation in graph.links:
        targets[s].append(o)
        if boxes[s].rank == boxes[o].rank:
            side_by_side[frozenset((s, o))] = relation
    y = float(_MARGIN)
    for r in sorted(rows):
        row = rows[r]

        wanted = {b.node.iri: _barycentre(b, boxes, targets) for b in row}
        row.sort(key=lambda b: (b.node.shape == "agent", wanted[b.node.iri], b.node.iri))
        right, previous = float("-inf"), ""
        for box in row:
            # an arrow between neighbours on one row gets room for its label
            relation = side_by_side.get(frozenset((previous, box.node.iri)), "")
            gap = max(_COL_GAP, len(relation) * _REL_CHAR_W + 24)
            x = max(wanted[box.node.iri], right + gap + box.w / 2)
            box.x, right, previous = x, x + box.w / 2, box.node.iri
        height = max(b.h for b in row)
        for box in row:
            box.y = y + (height - box.h) / 2
        y += height + _ROW_GAP
    left = min(b.x - b.w / 2 for b in boxes.values())
    for box in boxes.values():
        box.x += _MARGIN - left
    width = max(b.x + b.w / 2 for b in boxes.values()) + _MARGIN
    return width, y - _ROW_GAP + _MARGIN


# -- SVG ------------------------------------------------------------------------------------------


def _shape(box: _Box) -> str:
    kind = box.node.shape
    style = f'fill="{FILL[kind]}" stroke="{STROKE[kind]}" stroke-width="1.2"'
    x0, y0, x1, y1 = box.x - box.w / 2, box.y, box.x + box.w / 2, box.y + box.h
    if kind == "entity":
        return f'<ellipse cx="{box.x:.1f}" cy="{box.y + box.h / 2:.1f}" rx="{box.w / 2:.1f}" ' \
               f'ry="{box.h / 2:.1f}" {style}/>'
    if kind == "agent":
        roof = 14
        points = [(x0, y0 + roof), (box.x, y0), (x1, y0 + roof), (x1, y1), (x0, y1)]
        return f'<polygon points="{" ".join(f"{px:.1f},{py:.1f}" for px, py in points)}" {style}/>'
    return f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" {style}/>'


def _text(box: _Box) -> str:
    top = box.y + box.h / 2 - len(box.lines) * _LINE_H / 2 + 11
    if box.node.shape == "agent":
        top += 6
    spans = []
    for i, line in enumerate(box.lines):
        weight = ' font-weight="bold"' if i == 0 else ""
        spans.append(f'<text x="{box.x:.1f}" y="{top + i * _LINE_H:.1f}" text-anchor="middle"{weight}>'
                     f"{_xml(line)}</text>")
    return "".join(spans)


Rect = tuple[float, float, float, float]
"""``(left, top, right, bottom)``."""


def node_rect(box: _Box) -> Rect:
    return (box.x - box.w / 2, box.y, box.x + box.w / 2, box.y + box.h)


def overlap(a: Rect, b: Rect, pad: float = 0.0) -> bool:
    """Whether two rectangles intersect (closer than ``pad``)."""
    return a[0] < b[2] + pad and b[0] < a[2] + pad and a[1] < b[3] + pad and b[1] < a[3] + pad


@dataclass
class Label:
    """A relation's name drawn beside its arrow (``anchor``: SVG text-anchor, ``y`` the baseline)."""

    text: str
    x: float
    y: float
    anchor: str

    @property
    def rect(self) -> Rect:
        w = len(self.text) * _REL_CHAR_W
        left = {"start": self.x, "end": self.x - w}.get(self.anchor, self.x - w / 2)
        return (left, self.y - _REL_ASCENT, left + w, self.y + _REL_DESCENT)


@dataclass
class _Link:
    source: _Box
    target: _Box
    relation: str
    path: str
    at: Callable[[float], tuple[float, float]]
    """The point of the path at ``t`` (0: the source end, 1: the arrow's head)."""
    label: Label | None = None


def _link(s: _Box, o: _Box, relation: str, between: bool = False) -> _Link:
    """From the top of the newer node ``s`` to the bottom of ``o``; side by side on one row, or
    over the row when other nodes are ``between`` them."""
    if o.rank < s.rank - 1 and abs(o.x - s.x) < (s.w + o.w) / 2:
        # Over rows, to a node of its own column (a causal edge past the chain's next step): a
        # curve out to the right, wider the more rows it passes, never through the nodes between.
        bulge = 40.0 + 24.0 * (s.rank - o.rank)
        x1, y1 = s.x + s.w / 2, s.y + s.h / 2
        x2, y2 = o.x + o.w / 2, o.y + o.h / 2
        c1, c2 = max(x1, x2) + bulge, max(x1, x2) + bulge
        path = f"M{x1:.1f},{y1:.1f} C{c1:.1f},{y1:.1f} {c2:.1f},{y2:.1f} {x2 + 2:.1f},{y2:.1f}"

        def at(t: float) -> tuple[float, float]:
            a, b, c, d = (1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t ** 2, t ** 3
            return a * x1 + b * c1 + c * c2 + d * x2, (a + b) * y1 + (c + d) * y2
    elif o.rank < s.rank:
        x1, y1, x2, y2 = s.x, s.y, o.x, o.y + o.h
        mid = (y1 + y2) / 2
        path = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2 + 2:.1f}"

        def at(t: float) -> tuple[float, float]:
            a, b, c, d = (1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t ** 2, t ** 3
            return (a + b) * x1 + (c + d) * x2, a * y1 + (b + c) * mid + d * y2
    elif between:  # on one row with nodes in between: an arc over the row
        x1, y1, x2, y2 = s.x, s.y, o.x, o.y
        top = min(y1, y2) - _ROW_GAP * 0.6
        path = f"M{x1:.1f},{y1:.1f} Q{(x1 + x2) / 2:.1f},{top:.1f} {x2:.1f},{y2 - 2:.1f}"

        def at(t: float) -> tuple[float, float]:
            return ((1 - t) ** 2 * x1 + 2 * (1 - t) * t * (x1 + x2) / 2 + t ** 2 * x2,
                    (1 - t) ** 2 * y1 + 2 * (1 - t) * t * top + t ** 2 * y2)
    else:
        side = 1 if o.x > s.x else -1
        x1, y1 = s.x + side * s.w / 2, s.y + s.h / 2
        x2, y2 = o.x - side * o.w / 2, o.y + o.h / 2
        path = f"M{x1:.1f},{y1:.1f} L{x2 - side * 2:.1f},{y2:.1f}"

        def at(t: float) -> tuple[float, float]:
            return x1 + (x2 - x1) * t, y1 + (y2 - y1) * t
    return _Link(s, o, relation, path, at)


_SPOTS = (0.5, 0.35, 0.65, 0.25, 0.75, 0.15, 0.85, 0.1, 0.9)
"""Where along an arrow its label is tried, in order."""
_NUDGES = (0.0, -8.0, 8.0, -16.0, 16.0)


class _Taken:
    """The rectangles already placed, bucketed in a grid of cells, so that whether a label overlaps
    one looks at its neighbourhood only (a chain of 10,000 steps: linear, not quadratic)."""

    _CELL = 256.0

    def __init__(self) -> None:
        self._cells: dict[tuple[int, int], list[Rect]] = {}

    def _keys(self, r: Rect, pad: float) -> list[tuple[int, int]]:
        c = self._CELL
        return [(i, j) for i in range(int((r[0] - pad) // c), int((r[2] + pad) // c) + 1)
                for j in range(int((r[1] - pad) // c), int((r[3] + pad) // c) + 1)]

    def add(self, r: Rect) -> None:
        for key in self._keys(r, 0.0):
            self._cells.setdefault(key, []).append(r)

    def hits(self, r: Rect, pad: float) -> bool:
        return any(overlap(r, other, pad) for key in self._keys(r, pad) for other in self._cells.get(key, ()))


def _points(link: _Link) -> list[Rect]:
    """Points along an arrow, a few pixels apart (as rectangles of no size)."""
    (x1, y1), (x2, y2) = link.at(0.0), link.at(1.0)
    n = max(8, int(1.6 * ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5 / _PATH_STEP))
    return [(x, y, x, y) for x, y in (link.at(i / n) for i in range(n + 1))]


_PATH_STEP = 4.0
"""How far apart :func:`_points` samples an arrow: less than a label's height, so none slips through."""


def _place_labels(links: list[_Link], boxes: Sequence[_Box]) -> None:
    """Each relation's name at the first spot beside its arrow that overlaps no node, no label placed
    before it and no arrow; failing that, one that crosses another arrow but not its own; failing
    that, any that overlaps no node or label; an arrow with no such spot is drawn without one (its
    name is its tooltip)."""
    taken, paths = _Taken(), _Taken()
    for b in boxes:
        taken.add(node_rect(b))
    sampled = [_points(link) for link in links]
    for points in sampled:
        for point in points:
            paths.add(point)
    for link, own in zip(links, sampled, strict=True):
        link.label = _label(link, own, taken, paths)
        if link.label is not None:
            taken.add(link.label.rect)


def _label(link: _Link, own: list[Rect], taken: _Taken, paths: _Taken) -> Label | None:
    def clear(r: Rect) -> bool:
        return not taken.hits(r, 4.0)

    def off_own(r: Rect) -> bool:
        return clear(r) and not any(overlap(r, p, 1.5) for p in own)

    return (_spot(link, lambda r: off_own(r) and not paths.hits(r, 1.5))
            or _spot(link, off_own) or _spot(link, clear))


def _spot(link: _Link, free: Callable[[Rect], bool]) -> Label | None:
    for nudge in _NUDGES:
        for t in _SPOTS:
            x, y = link.at(t)
            for label in (Label(link.relation, x + 4, y + 3 + nudge, "start"),
                          Label(link.relation, x - 4, y + 3 + nudge, "end"),
                          Label(link.relation, x, y - 4 + nudge, "middle"),
                          Label(link.relation, x, y + 11 + nudge, "middle")):
                if free(label.rect):
                    return label
    return None


def _arrow(link: _Link) -> str:
    line = (f'<path d="{link.path}" fill="none" stroke="#555" stroke-width="1.1" '
            f'marker-end="url(#arrow)"><title>{_xml(link.relation)}</title></path>')
    if link.label is None:
        return line
    label = link.label
    anchor = f' text-anchor="{label.anchor}"' if label.anchor != "start" else ""
    return line + f'<text x="{label.x:.1f}" y="{label.y:.1f}"{anchor} class="rel">{_xml(label.text)}</text>'


def _legend(y: float, shapes: set[str]) -> tuple[str, float]:
    items = [(k, label) for k, label in (("activity", "Activity"), ("entity", "Entity"), ("agent", "Agent"))
             if k in shapes]
    parts, x = [], float(_MARGIN)
    for kind, label in items:
        box = _Box(GraphNode("", kind, "", ""), [label], 70, 26 if kind != "agent" else 34)
        box.x, box.y = x + 35, y
        parts.append(_shape(box))
        parts.append(f'<text x="{box.x:.1f}" y="{y + box.h / 2 + (8 if kind == "agent" else 4):.1f}" '
                     f'text-anchor="middle">{label}</text>')
        x += 86
    return "".join(parts), y + 40


@dataclass
class Layout:
    """Where everything of a picture goes (the drawn boxes, for tests as for :func:`to_svg`)."""

    boxes: dict[str, _Box]
    links: list[_Link]
    width: float
    height: float
    head: float

    @property
    def labels(self) -> list[Label]:
        return [link.label for link in self.links if link.label is not None]


def _between(s: _Box, o: _Box, boxes: Iterable[_Box]) -> bool:
    """Whether another node sits between two nodes of one row."""
    if s.rank != o.rank:
        return False
    low, high = sorted((s.x, o.x))
    return any(b.rank == s.rank and low < b.x < high for b in boxes)


def layout(graph: ProvGraph, title: str = "") -> Layout:
    boxes = {n.iri: _box(n) for n in graph.nodes}
    head = 30.0 if title else 0.0
    if boxes:
        _ranks(graph, boxes)
        width, height = _place(graph, boxes)
    else:
        width, height = 300.0, 2.0 * _MARGIN
    for box in boxes.values():
        box.y += head
    links = [_link(boxes[s], boxes[o], relation, _between(boxes[s], boxes[o], boxes.values()))
             for s, o, relation in graph.links]
    _place_labels(links, list(boxes.values()))
    right = max([width - _MARGIN, *(link.label.rect[2] for link in links if link.label),
                 *(max(link.at(t)[0] for t in (0.25, 0.5, 0.75)) for link in links)])
    return Layout(boxes, links, right + _MARGIN, height, head)


def to_svg(graph: ProvGraph, title: str = "") -> str:
    """A standalone SVG document of the graph (no external tool involved)."""
    plan = layout(graph, title)
    legend, bottom = _legend(plan.height + plan.head, {n.shape for n in graph.nodes})
    width = max(plan.width, 300.0, len(title) * 8.2 + 2 * _MARGIN)
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{bottom:.0f}" '
        f'viewBox="0 0 {width:.0f} {bottom:.0f}" font-family="{_FONT}" font-size="12">',
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" "
        "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#555\"/>"
        "</marker><style>.rel{font-size:9px;fill:#555;paint-order:stroke;stroke:#fff;stroke-width:3px}"
        "</style></defs>",
        f'<rect width="{width:.0f}" height="{bottom:.0f}" fill="white"/>',
    ]
    if title:
        body.append(f'<text x="{_MARGIN}" y="{_MARGIN + 4}" font-size="14" font-weight="bold">'
                    f"{_xml(title)}</text>")
    body.extend(_arrow(link) for link in plan.links)
    for box in plan.boxes.values():
        body.append(f'<g class="node {box.node.shape}"><title>{_xml(box.node.iri)}</title>'
                    f"{_shape(box)}{_text(box)}</g>")
    body.append(legend)
    body.append("</svg>")
    return "\n".join(body) + "\n"
