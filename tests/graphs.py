"""Graph comparison for tests: isomorphism, with a readable diff on failure."""

from __future__ import annotations

import rdflib
from rdflib.compare import graph_diff, to_isomorphic


def _as_graph(data: rdflib.Dataset | rdflib.Graph) -> rdflib.Graph:
    """A dataset as one graph of its quads' triples, each tagged by graph name (so graph names
    count in the comparison)."""
    if isinstance(data, rdflib.Dataset):
        g = rdflib.Graph()
        for s, p, o, ctx in data.quads((None, None, None, None)):
            name = ctx.identifier if isinstance(ctx, rdflib.Graph) else ctx
            g.add((s, p, o))
            g.add((s, rdflib.URIRef("urn:test:inGraph"), rdflib.Literal(f"{name}|{p}|{o.n3()}")))
        return g
    return data


def assert_isomorphic(expected: rdflib.Dataset | rdflib.Graph, actual: rdflib.Dataset | rdflib.Graph) -> None:
    e, a = to_isomorphic(_as_graph(expected)), to_isomorphic(_as_graph(actual))
    if e == a:
        return
    _, only_expected, only_actual = graph_diff(e, a)
    lines = ["graphs differ"]
    lines += ["  missing: " + " ".join(t.n3() for t in triple) for triple in sorted(only_expected)]
    lines += ["  extra:   " + " ".join(t.n3() for t in triple) for triple in sorted(only_actual)]
    raise AssertionError("\n".join(lines[:200]))
