"""The ``trustgraph`` profile (docs/model.md): the seed's quads rewritten to TrustGraph 2.11's layout,
so that TrustGraph's own reader (``trustgraph.api.explainability.ExplainabilityClient``) follows
every flow to its end.  Pure, and a function of the quads alone (every IRI it adds is derived from
one the seed wrote), so a span's, a trace's or a conversation's quads are rewritten alike wherever
they are mapped, and a trace mapped again is rewritten again to the same quads.

What it changes (everything else of the seed stays as it is, so otel-prov's own readers read it):

- every Question is a ``prov:Entity``, not a ``prov:Activity`` (TrustGraph types its questions so);
- a GraphRAG or DocRAG Exploration, which the seed has ``prov:wasGeneratedBy`` the Question, is
  also ``prov:wasDerivedFrom`` a ``tg:Grounding`` step, itself ``prov:wasDerivedFrom`` the Question:
  ``urn:trustgraph:prov:grounding:{uuid}`` (GraphRAG), ``urn:trustgraph:docrag:{uuid}/grounding``
  (DocRAG), TrustGraph's own IRIs.  Our spans carry no concepts: the Grounding has no
  ``tg:concept`` (not captured, never guessed);
- each agent iteration ``{session}/i{n}`` gets its Observation entity ``{session}/i{n}/observation``
  (``tg:Observation``, ``prov:wasDerivedFrom`` the iteration, the tool's ``tg:toolDurationMs`` when
  the span recorded it), and what the seed has derived from iteration n (the next iteration, the
  Conclusion) is derived from that Observation instead; an iteration is also a ``tg:ToolUse``;
- an observation, a Conclusion's answer and a Synthesis's content are also a document:
  ``tg:document <{node}/document>``, a ``prov:Entity`` with the text as ``tg:content`` (the text as
  the seed wrote it, after the content policy: a value not captured makes no document).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..model.iris import DOC_RAG_PREFIX, EXPLORATION_PREFIX, SYNTHESIS_PREFIX
from ..model.quads import Quad
from ..model.vocab import NT

_TG = "https://trustgraph.ai/ns/"
TG_GROUNDING = f"<{_TG}Grounding>"
TG_OBSERVATION_TYPE = f"<{_TG}Observation>"
TG_TOOL_USE = f"<{_TG}ToolUse>"
TG_ANSWER_TYPE = f"<{_TG}Answer>"
TG_DOCUMENT = f"<{_TG}document>"

GROUNDING_PREFIX = "urn:trustgraph:prov:grounding:"
DOC_RAG_GROUNDING_SUFFIX = "/grounding"
OBSERVATION_SUFFIX = "/observation"
DOCUMENT_SUFFIX = "/document"

_QUESTION = re.compile(r"<urn:trustgraph:(?:agent|question|docrag):[^/>]+>")
_QUESTION_TYPES = frozenset({NT.tg_AgentQuestion, NT.tg_GraphRagQuestion, NT.tg_DocRagQuestion})
_ITERATION = re.compile(r"<(urn:trustgraph:agent:[^/>]+/i[0-9]+)>")
_FINAL = re.compile(r"<urn:trustgraph:agent:([^/>]+)/final>")
_TEXTS = frozenset({NT.tg_observation, NT.tg_answer, NT.tg_content})


def _bare(term: str) -> str:
    return term[1:-1] if term.startswith("<") and term.endswith(">") else ""


def grounding_iri(exploration: str) -> str | None:
    """The Grounding step before ``exploration`` (an IRI), or None if it is no Exploration's."""
    if exploration.startswith(EXPLORATION_PREFIX):
        return GROUNDING_PREFIX + exploration[len(EXPLORATION_PREFIX):]
    if exploration.startswith(DOC_RAG_PREFIX) and exploration.endswith("/exploration"):
        return exploration[:-len("/exploration")] + DOC_RAG_GROUNDING_SUFFIX
    return None


def _synthesis(node: str) -> bool:
    if node.endswith(DOCUMENT_SUFFIX):
        return False
    return node.startswith(SYNTHESIS_PREFIX) or (
        node.startswith(DOC_RAG_PREFIX) and node.endswith("/synthesis"))


def _same_session(subject: str, iteration: str) -> bool:
    """``subject`` (an iteration or a Conclusion, N-Triples) is of ``iteration``'s session."""
    session = iteration.rsplit("/i", 1)[0]
    return subject.startswith("<" + session + "/")


def to_trustgraph(quads: Iterable[Quad]) -> list[Quad]:
    """``quads`` (the seed profile's) in TrustGraph 2.11's layout (the module's docstring)."""
    out: list[Quad] = []
    added: set[Quad] = set()

    def add(s: str, p: str, o: str, g: str) -> None:
        quad = (s, p, o, g)
        if quad not in added:
            added.add(quad)
            out.append(quad)

    for s, p, o, g in quads:
        if p == NT.wasDerivedFrom:
            target = _ITERATION.fullmatch(o)
            if target and _same_session(s, target.group(1)) and (
                    _ITERATION.fullmatch(s) or _FINAL.fullmatch(s)):
                add(s, p, f"<{target.group(1)}{OBSERVATION_SUFFIX}>", g)
                continue
        if p == NT.type and o == NT.Activity and _QUESTION.fullmatch(s):
            continue  # the Question is an entity (below), not an activity
        add(s, p, o, g)
        if p == NT.type:
            if o in _QUESTION_TYPES:
                add(s, NT.type, NT.Entity, g)
            elif o == NT.tg_Analysis and _ITERATION.fullmatch(s):
                observation = f"<{_bare(s)}{OBSERVATION_SUFFIX}>"
                add(s, NT.type, TG_TOOL_USE, g)
                add(observation, NT.type, NT.Entity, g)
                add(observation, NT.type, TG_OBSERVATION_TYPE, g)
                add(observation, NT.wasDerivedFrom, s, g)
            elif o == NT.tg_Conclusion:
                add(s, NT.type, TG_ANSWER_TYPE, g)
        elif p == NT.wasGeneratedBy:
            grounding = grounding_iri(_bare(s))
            if grounding is not None:
                node = f"<{grounding}>"
                add(node, NT.type, NT.Entity, g)
                add(node, NT.type, TG_GROUNDING, g)
                add(node, NT.wasDerivedFrom, o, g)
                add(s, NT.wasDerivedFrom, node, g)
        elif p == NT.tg_toolDurationMs and _ITERATION.fullmatch(s):
            add(f"<{_bare(s)}{OBSERVATION_SUFFIX}>", p, o, g)
        elif p in _TEXTS and o.startswith('"'):
            if p == NT.tg_observation and _ITERATION.fullmatch(s):
                holder = f"{_bare(s)}{OBSERVATION_SUFFIX}"
            elif (p == NT.tg_answer and _FINAL.fullmatch(s)) or (
                    p == NT.tg_content and _synthesis(_bare(s))):
                holder = _bare(s)
            else:
                continue
            document = f"<{holder}{DOCUMENT_SUFFIX}>"
            add(f"<{holder}>", TG_DOCUMENT, document, g)
            add(document, NT.type, NT.Entity, g)
            add(document, NT.tg_content, o, g)
    return out
