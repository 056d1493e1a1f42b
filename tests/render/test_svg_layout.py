"""The provenance picture is readable: no relation label overlaps a node, another label or its own
arrow, in both profiles (the strict one draws activities and agents, with many more arrows).  The
same check on the boxes the browser draws is in test_browser.py."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest

from otel_prov.read.graph import prov_graph
from otel_prov.read.reader import TraceReader
from otel_prov.render.svg import layout, node_rect, overlap
from otel_prov.stores import open_for_reading, parse_store
from tests.support.webdata import long_session, record


@pytest.mark.parametrize("profile", ["seed", "strict"])
def test_labels_overlap_nothing(tmp_path: Path, profile: str) -> None:
    recorded = record(tmp_path / "store", profile=profile)
    store = open_for_reading(parse_store(str(recorded.path)))
    try:
        reader = TraceReader(store)
        checked = 0
        for iri in (recorded.agent.explain_id, recorded.graph.explain_id, recorded.docs.explain_id,
                    recorded.failed, recorded.hostile):
            trace, triples = reader.trace(iri)
            graph = prov_graph(trace, triples)
            plan = layout(graph, f"{trace.type} session: {trace.question}")
            assert len(plan.labels) == len(graph.links), "every arrow has its label"
            nodes = [node_rect(b) for b in plan.boxes.values()]
            for label in plan.labels:
                assert not any(overlap(label.rect, n) for n in nodes), (iri, label)
            for a, b in combinations(plan.labels, 2):
                assert not overlap(a.rect, b.rect), (iri, a, b)
            for link in plan.links:
                assert link.label is not None
                on_arrow = [link.at(i / 200) for i in range(201)]
                assert not any(overlap(link.label.rect, (x, y, x, y)) for x, y in on_arrow), (iri, link.label)
            for a, b in combinations(nodes, 2):
                assert not overlap(a, b), (iri, a, b)
            checked += len(plan.labels)
        assert checked >= (60 if profile == "strict" else 19)
    finally:
        store.close()


def test_a_long_chain_is_drawn(tmp_path: Path) -> None:
    iri = long_session(tmp_path / "store", 2000)
    store = open_for_reading(parse_store(str(tmp_path / "store")))
    try:
        trace, triples = TraceReader(store).trace(iri)
    finally:
        store.close()
    plan = layout(prov_graph(trace, triples))
    assert len(plan.boxes) == 2002 and max(b.rank for b in plan.boxes.values()) == 2001


def test_a_causal_edge_past_the_next_step_curves_around_the_nodes_between() -> None:
    """Analysis 3 informedBy Analysis 1 (a result given past the chain's next step): the arrow
    leaves the column and comes back, so it never crosses Analysis 2 (nor reads as its edge)."""
    from otel_prov.read.graph import GraphNode, ProvGraph

    names = ["q", "a1", "a2", "a3"]
    nodes = [GraphNode(n, "entity", n, "") for n in names]
    links = [("a1", "q", "wasDerivedFrom"), ("a2", "a1", "wasDerivedFrom"), ("a3", "a2", "wasDerivedFrom"),
             ("a3", "a1", "informedBy")]
    plan = layout(ProvGraph(nodes, links))
    middle = node_rect(plan.boxes["a2"])
    [skip] = [link for link in plan.links if link.relation == "informedBy"]
    points = [skip.at(t / 20) for t in range(21)]
    assert not any(middle[0] <= x <= middle[2] and middle[1] <= y <= middle[3] for x, y in points)
    assert max(x for x, _ in points) <= plan.width  # inside the picture
