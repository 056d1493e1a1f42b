"""Our vocabulary and IRI patterns against TrustGraph's own code (trustgraph-base 2.11.1, installed by
`.ci/setup --test` without its service dependencies: `trustgraph.provenance` needs none)."""

from __future__ import annotations

import pytest

from tests.support.procs import in_ci

try:
    import trustgraph.provenance as tg
    import trustgraph.provenance.namespaces as tg_ns
except ImportError:  # plain `.ci/setup` (the fast layer): skipped here, never under CI
    if in_ci():
        raise
    pytest.skip("trustgraph-base is not installed (bash .ci/setup --test installs it)",
                allow_module_level=True)

from otel_prov import GRAPH_RETRIEVAL, TG
from otel_prov.model.iris import (
    DOC_RAG_PREFIX,
    EDGE_PREFIX,
    EXPLORATION_PREFIX,
    FOCUS_PREFIX,
    SYNTHESIS_PREFIX,
    analysis_iri,
    question_iri,
)
from otel_prov.model.vocab import TG_TERMS

# The spec's literal answers (tg:answer on a Conclusion, tg:content on a Synthesis) predate
# TrustGraph 2.11, which stores answers as separate documents (tg:document).
NOT_IN_TRUSTGRAPH_2_11 = {"answer", "content"}


# Classes whose name is also a predicate's (``tg:Thought``, ``tg:thought``): TrustGraph's constant
# has a _TYPE suffix.
TYPE_SUFFIXED = {"Thought", "Reflection"}


def _name(term: str) -> str:
    name = "TG_" + "".join("_" + c if c.isupper() else c.upper() for c in term).lstrip("_")
    return name + "_TYPE" if term in TYPE_SUFFIXED else name


def test_namespace_and_graph() -> None:
    assert str(TG) == tg.TG == "https://trustgraph.ai/ns/"
    assert GRAPH_RETRIEVAL == tg.GRAPH_RETRIEVAL


@pytest.mark.parametrize("term", TG_TERMS)
def test_every_term_we_write_is_trustgraphs(term: str) -> None:
    ours = str(TG[term])
    if term in NOT_IN_TRUSTGRAPH_2_11:
        assert not hasattr(tg_ns, _name(term))
        return
    assert getattr(tg_ns, _name(term)) == ours


def test_iri_patterns() -> None:
    u = "0f8e2a44-1d3c-4b6e-9a7f-2c5d8e1b3a90"
    assert question_iri("agent", u) == tg.agent_session_uri(u)
    assert question_iri("graphrag", u) == tg.question_uri(u)
    assert question_iri("docrag", u) == tg.docrag_question_uri(u)
    assert analysis_iri(u, 3) == tg.agent_iteration_uri(u, 3)
    assert f"{question_iri('agent', u)}/final" == tg.agent_final_uri(u)
    assert EXPLORATION_PREFIX + u == tg.exploration_uri(u)
    assert FOCUS_PREFIX + u == tg.focus_uri(u)
    assert SYNTHESIS_PREFIX + u == tg.synthesis_uri(u)
    assert f"{DOC_RAG_PREFIX}{u}/exploration" == tg.docrag_exploration_uri(u)
    assert f"{DOC_RAG_PREFIX}{u}/synthesis" == tg.docrag_synthesis_uri(u)
    from trustgraph.provenance.uris import edge_selection_uri
    assert f"{EDGE_PREFIX}{u}:0" == edge_selection_uri(u, 0)
