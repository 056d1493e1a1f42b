"""PROV checks shared by the tests of the strict profile: the official PROV-O ontology (test data),
the OWL-RL closure's inconsistencies, and the times that break PROV-CONSTRAINTS' ordering."""

from __future__ import annotations

from pathlib import Path

import owlrl
import rdflib

ONTOLOGY = Path(__file__).resolve().parents[1] / "data" / "prov-o.nq"


def closure_errors(dataset: rdflib.Dataset, ontology) -> list[str]:
    graph = rdflib.Graph()
    for s, p, o, _ in dataset.quads((None, None, None, None)):
        graph.add((s, p, o))
    for triple in ontology:
        graph.add(triple)
    closure = owlrl.OWLRL_Semantics(graph, False, False, rdfs=False)
    closure.closure()
    return list(closure.error_messages)


def time_order_violations(ds: rdflib.Dataset) -> list[object]:
    """The nodes whose times break PROV-CONSTRAINTS' ordering (an activity ending before it starts,
    an entity generated before its activity started or before what it derives from)."""
    return list(ds.query("""
        PREFIX prov: <http://www.w3.org/ns/prov#>
        SELECT ?x WHERE { GRAPH ?g {
          { ?x prov:startedAtTime ?s ; prov:endedAtTime ?e FILTER(?e < ?s) }
          UNION
          { ?x prov:wasGeneratedBy ?a ; prov:generatedAtTime ?t . ?a prov:startedAtTime ?s FILTER(?t < ?s) }
          UNION
          { ?x prov:wasDerivedFrom ?y ; prov:generatedAtTime ?t . ?y prov:generatedAtTime ?u FILTER(?t < ?u) }
        } }"""))
