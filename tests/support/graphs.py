"""Graph comparison for tests: isomorphism, with a readable diff on failure."""

from __future__ import annotations

import rdflib
from rdflib.compare import graph_diff, to_isomorphic

_IN_GRAPH = rdflib.URIRef("urn:test:inGraph")


def _as_graph(data: rdflib.Dataset | rdflib.Graph) -> rdflib.Graph:
    """A dataset as one graph of its quads' triples, each tagged by graph name (so graph names
    count in the comparison)."""
    if isinstance(data, rdflib.Dataset):
        g = rdflib.Graph()
        for s, p, o, ctx in data.quads((None, None, None, None)):
            name = ctx.identifier if isinstance(ctx, rdflib.Graph) else ctx
            g.add((s, p, o))
            g.add((s, _IN_GRAPH, rdflib.Literal(f"{name}|{p}|{o.n3()}")))
        return g
    return data


def assert_isomorphic(expected: rdflib.Dataset | rdflib.Graph, actual: rdflib.Dataset | rdflib.Graph) -> None:
    e, a = to_isomorphic(_as_graph(expected)), to_isomorphic(_as_graph(actual))
    if e == a:
        return
    _, only_expected, only_actual = graph_diff(e, a)
    def shown(g: rdflib.Graph) -> list[str]:
        return [" ".join(t.n3() for t in triple) for triple in sorted(g) if triple[1] != _IN_GRAPH]

    lines = ["graphs differ"]
    lines += ["  missing: " + line for line in shown(only_expected)]
    lines += ["  extra:   " + line for line in shown(only_actual)]
    raise AssertionError("\n".join(lines[:200]))


def only_graph(dataset: rdflib.Dataset, name: str) -> rdflib.Dataset:
    """The quads of ``dataset`` in its graph ``name`` only, as a dataset."""
    out = rdflib.Dataset()
    for s, p, o, g in dataset.quads((None, None, None, None)):
        if str(getattr(g, "identifier", g)) == name:
            out.add((s, p, o, rdflib.URIRef(name)))
    return out
