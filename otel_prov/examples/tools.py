"""The example agents' tools: a calculator, a knowledge-graph lookup and a document search.

All three are real and work offline over the data bundled in ``otel_prov/examples/data/``: a
small RDF knowledge graph (``knowledge.ttl``, queried with rdflib and SPARQL) and a few text
documents (split into paragraph chunks, ranked with BM25).
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import rdflib
from rdflib import RDFS

DATA = resources.files(__package__) / "data"


def data_path(*parts: str) -> Path:
    """A bundled data file as a path (the package is installed from a directory)."""
    return Path(str(DATA.joinpath(*parts)))


# -- calculator -----------------------------------------------------------------------------------

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "round": round, "abs": abs, "sqrt": math.sqrt, "min": min, "max": max,
}
_MAX_EXPONENT = 100
_MAX_LENGTH = 200


class CalculatorError(ValueError):
    """An expression the calculator does not accept."""


def calculate(expression: str) -> float | int:
    """Evaluate an arithmetic expression (numbers, ``+ - * / // % **``, parentheses and
    ``round abs sqrt min max``) by walking its syntax tree: nothing is ever ``eval``-ed."""
    if len(expression) > _MAX_LENGTH:
        raise CalculatorError(f"expression longer than {_MAX_LENGTH} characters")
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not an arithmetic expression: {expression!r}") from exc
    result: float | int = _eval(tree.body)
    if isinstance(result, float) and result.is_integer() and abs(result) < 2**53:
        return int(result)
    return result


def _eval(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise CalculatorError(f"exponent {right} too large (at most {_MAX_EXPONENT})")
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError as exc:
            raise CalculatorError("division by zero") from exc
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id in _FUNCTIONS and not node.keywords:
        return _FUNCTIONS[node.func.id](*(_eval(arg) for arg in node.args))
    raise CalculatorError(f"unsupported element in expression: {ast.dump(node)[:60]}")


# -- knowledge graph ------------------------------------------------------------------------------

_LOOKUP = """
SELECT ?value ?label WHERE {
  ?entity rdfs:label ?entityLabel .
  FILTER(LCASE(STR(?entityLabel)) = LCASE(STR(?name)))
  ?relation rdfs:label ?relationLabel .
  FILTER(LCASE(STR(?relationLabel)) = LCASE(STR(?rel)))
  ?entity ?relation ?value .
  OPTIONAL { ?value rdfs:label ?label }
}
"""


@dataclass(frozen=True, slots=True)
class Edge:
    """One edge of the knowledge graph, with its IRIs / literal values and readable labels."""

    s: str
    p: str
    o: str
    labels: tuple[str, str, str]

    def as_list(self) -> list[str]:
        return [self.s, self.p, self.o]

    def text(self) -> str:
        return " ".join(self.labels)


class KnowledgeGraph:
    """The bundled RDF knowledge graph, queried with SPARQL through rdflib."""

    def __init__(self, path: Path | None = None) -> None:
        self.graph = rdflib.Graph()
        self.graph.parse(path or data_path("knowledge.ttl"), format="turtle")

    def label(self, term: rdflib.term.Node) -> str:
        value = self.graph.value(term, RDFS.label)
        return str(value) if value is not None else str(term)

    def lookup(self, entity: str, relation: str) -> list[str]:
        """The values of ``relation`` for ``entity`` (both given by their labels)."""
        rows = self.graph.query(_LOOKUP, initNs={"rdfs": RDFS}, initBindings={
            "name": rdflib.Literal(entity), "rel": rdflib.Literal(relation)})
        found = []
        for row in rows:
            assert isinstance(row, rdflib.query.ResultRow)
            found.append(str(row.label if row.label is not None else row.value))
        return found

    def entities_in(self, text: str) -> list[rdflib.URIRef]:
        """Entities whose label occurs in ``text`` as whole words (longest labels first)."""
        lowered = text.lower()
        found = []
        for subject, label in self.graph.subject_objects(RDFS.label):
            if not isinstance(subject, rdflib.URIRef) or self._is_relation(subject):
                continue
            if re.search(r"\b" + re.escape(str(label).lower()) + r"\b", lowered):
                found.append((len(str(label)), str(subject), subject))
        return [s for _, _, s in sorted(found, reverse=True)]

    def relations(self) -> dict[str, str]:
        """Relation label -> relation IRI."""
        return {str(label): str(p) for p, label in self.graph.subject_objects(RDFS.label)
                if self._is_relation(p)}

    def _is_relation(self, term: rdflib.term.Node) -> bool:
        return (None, term, None) in self.graph

    def edges_around(self, seeds: Iterable[rdflib.URIRef], hops: int = 1) -> list[Edge]:
        """Every edge (except labels) touching the seeds, expanded ``hops`` times."""
        frontier, seen_nodes, edges = set(seeds), set(seeds), {}
        for _ in range(hops):
            next_frontier = set()
            for node in frontier:
                for s, p, o in [*self.graph.triples((node, None, None)),
                                *self.graph.triples((None, None, node))]:
                    if p == RDFS.label:
                        continue
                    edge = Edge(str(s), str(p), str(o), (self.label(s), self.label(p), self.label(o)))
                    edges[(edge.s, edge.p, edge.o)] = edge
                    for end in (s, o):
                        if isinstance(end, rdflib.URIRef) and end not in seen_nodes:
                            seen_nodes.add(end)
                            next_frontier.add(end)
            frontier = next_frontier
        return sorted(edges.values(), key=lambda e: (e.s, e.p, e.o))


# -- documents ------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an and are as at be by for from has have how in is it its of on or that the this to was "
    "what when where which who why with does did many much there their".split()
)


def tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS]


@dataclass(frozen=True, slots=True)
class Chunk:
    id: str
    """``{document}#{n}``: the document's file name without extension, and the paragraph number."""
    text: str


class DocumentIndex:
    """The bundled documents, one chunk per paragraph, ranked with Okapi BM25."""

    def __init__(self, directory: Path | None = None, *, k1: float = 1.5, b: float = 0.75) -> None:
        directory = directory or data_path("docs")
        self.chunks: list[Chunk] = []
        for path in sorted(directory.glob("*.txt")):
            paragraphs = [p for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")) if p.strip()]
            for n, paragraph in enumerate(paragraphs, 1):
                self.chunks.append(Chunk(f"{path.stem}#{n}", " ".join(paragraph.split())))
        self._tf = [Counter(tokens(c.text)) for c in self.chunks]
        self._len = [sum(tf.values()) for tf in self._tf]
        self._avg = sum(self._len) / max(len(self._len), 1)
        df = Counter(term for tf in self._tf for term in tf)
        n = len(self.chunks)
        self._idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.k1, self.b = k1, b

    def score(self, query: str, index: int) -> float:
        tf, length = self._tf[index], self._len[index]
        total = 0.0
        for term in set(tokens(query)):
            f = tf.get(term, 0)
            if f:
                norm = f + self.k1 * (1 - self.b + self.b * length / self._avg)
                total += self._idf[term] * f * (self.k1 + 1) / norm
        return total

    def search(self, query: str, k: int = 3) -> list[tuple[Chunk, float]]:
        """The ``k`` best chunks with a positive score, best first."""
        scored = [(self.score(query, i), i) for i in range(len(self.chunks))]
        ranked = sorted((s, -i) for s, i in scored if s > 0)[::-1][:k]
        return [(self.chunks[-i], round(s, 4)) for s, i in ranked]


def best_sentence(text: str, query: str) -> str:
    """The sentence of ``text`` sharing most words with ``query`` (the first one on a tie)."""
    wanted = set(tokens(query))
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    return max(sentences, key=lambda s: len(wanted & set(tokens(s))), default=text)


@lru_cache(maxsize=1)
def knowledge_graph() -> KnowledgeGraph:
    return KnowledgeGraph()


@lru_cache(maxsize=1)
def document_index() -> DocumentIndex:
    return DocumentIndex()
