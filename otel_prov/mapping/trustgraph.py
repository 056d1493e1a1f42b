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
  the seed wrote it, after the content policy: a value not captured makes no document);
- an iteration's thought is a Thought entity, as TrustGraph records it: ``tg:thought
  <{session}/i{n}/thought>`` in place of the text, that node ``a prov:Entity, tg:Reflection,
  tg:Thought``, ``prov:wasDerivedFrom`` the iteration, its text in its document
  ``<{session}/i{n}/thought/document>`` (a thought not captured makes no Thought);
- the literals of TrustGraph's predicates are plain strings, as TrustGraph writes them: counts,
  tokens, durations and scores (``"8"``, not ``"8"^^xsd:integer``).  PROV's times keep their
  ``xsd:dateTime`` (PROV-O's range);
- a reranked DocRAG's Synthesis, which the seed derives from the session's Focus, is also
  ``prov:wasDerivedFrom`` the Exploration the Focus selected from: TrustGraph's DocRAG has no Focus,
  and its reader looks for the Synthesis after the Exploration;
- a GraphRAG Focus's selected edge is an RDF 1.2 triple term, as TrustGraph records it:
  ``tg:edge <<( s p o )>>`` in place of the seed's ``rdf:Statement`` node (which is left out).  Only
  an edge stated as the span gave it: a statement the content policy cut, hashed or emptied, whose
  text was redacted or stored by reference (a note on the node says so), or whose subject or
  predicate is not an IRI (a triple term cannot hold it), stays the seed's statement, notes and all:
  a triple term never states an edge the agent did not see.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ..model.iris import (
    DOC_RAG_EXPLORATION_SUFFIX,
    DOC_RAG_FOCUS_SUFFIX,
    DOC_RAG_PREFIX,
    EXPLORATION_PREFIX,
    SYNTHESIS_PREFIX,
)
from ..model.quads import Quad
from ..model.vocab import NT

_TG = "https://trustgraph.ai/ns/"
TG_GROUNDING = f"<{_TG}Grounding>"
TG_OBSERVATION_TYPE = f"<{_TG}Observation>"
TG_TOOL_USE = f"<{_TG}ToolUse>"
TG_ANSWER_TYPE = f"<{_TG}Answer>"
TG_DOCUMENT = f"<{_TG}document>"
TG_REFLECTION = f"<{_TG}Reflection>"
TG_THOUGHT_TYPE = f"<{_TG}Thought>"

GROUNDING_PREFIX = "urn:trustgraph:prov:grounding:"
DOC_RAG_GROUNDING_SUFFIX = "/grounding"
OBSERVATION_SUFFIX = "/observation"
THOUGHT_SUFFIX = "/thought"
DOCUMENT_SUFFIX = "/document"

_QUESTION = re.compile(r"<urn:trustgraph:(?:agent|question|docrag):[^/>]+>")
_QUESTION_TYPES = frozenset({NT.tg_AgentQuestion, NT.tg_GraphRagQuestion, NT.tg_DocRagQuestion})
_ITERATION = re.compile(r"<(urn:trustgraph:agent:[^/>]+/i[0-9]+)>")
_FINAL = re.compile(r"<urn:trustgraph:agent:([^/>]+)/final>")
_TEXTS = frozenset({NT.tg_observation, NT.tg_answer, NT.tg_content})
_TG_PREDICATE = "<" + _TG
_TYPED = re.compile(r'("(?:[^"\\]|\\.)*")\^\^<[^>]*>')
_PARTS = (NT.subject, NT.predicate, NT.object)


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
    quads = list(quads)
    edges = _triple_terms(quads)
    out: list[Quad] = []
    added: set[Quad] = set()

    def add(s: str, p: str, o: str, g: str) -> None:
        quad = (s, p, o, g)
        if quad not in added:
            added.add(quad)
            out.append(quad)

    for s, p, o, g in quads:
        if s in edges:
            continue  # a statement stated as a triple term (below)
        if p == NT.tg_edge and o in edges:
            add(s, p, edges[o], g)
            continue
        if p.startswith(_TG_PREDICATE) and o.endswith(">") and o.startswith('"'):
            typed = _TYPED.fullmatch(o)
            if typed:
                o = typed.group(1)  # TrustGraph's plain string
        if p == NT.tg_thought and o.startswith('"') and _ITERATION.fullmatch(s):
            thought = f"<{_bare(s)}{THOUGHT_SUFFIX}>"
            add(s, p, thought, g)
            for kind in (NT.Entity, TG_REFLECTION, TG_THOUGHT_TYPE):
                add(thought, NT.type, kind, g)
            add(thought, NT.label, '"Thought"', g)
            add(thought, NT.wasDerivedFrom, s, g)
            _document(add, thought[1:-1], o, g)
            continue
        if (p == NT.wasDerivedFrom and _synthesis(_bare(s)) and o.startswith("<" + DOC_RAG_PREFIX)
                and o.endswith(DOC_RAG_FOCUS_SUFFIX + ">")):
            # a reranked DocRAG: TrustGraph's DocRAG has no Focus, its Synthesis derives from the
            # Exploration (the Focus's, whose chunks the Focus selected)
            add(s, p, o, g)
            add(s, p, o[:-len(DOC_RAG_FOCUS_SUFFIX) - 1] + DOC_RAG_EXPLORATION_SUFFIX + ">", g)
            continue
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
            _document(add, holder, o, g)
    return out


def _triple_terms(quads: list[Quad]) -> dict[str, str]:
    """The statements of selected edges (``tg:edge``'s objects) that are the edge as the span gave
    it, and each one's triple term ``<<( s p o )>>``: typed ``rdf:Statement``, one IRI subject, one IRI
    predicate and one object, and nothing else said of it (a note of the content policy, a
    redaction or a blob is on the node when its text is not the plain one)."""
    statements = {o for _, p, o, _ in quads if p == NT.tg_edge and o.startswith("<")}
    if not statements:
        return {}
    said: dict[str, dict[str, set[str]]] = {}
    for s, p, o, _ in quads:
        if s in statements:
            said.setdefault(s, {}).setdefault(p, set()).add(o)
    out = {}
    for statement, props in said.items():
        parts = [props.get(p, set()) for p in _PARTS]
        if (set(props) != {NT.type, *_PARTS} or props[NT.type] != {NT.Statement}
                or any(len(values) != 1 for values in parts)):
            continue
        subject, predicate, obj = (next(iter(values)) for values in parts)
        if subject.startswith("<") and predicate.startswith("<") and not obj.startswith("_:"):
            out[statement] = f"<<( {subject} {predicate} {obj} )>>"
    return out


def _document(add: Callable[[str, str, str, str], None], holder: str, text: str, g: str) -> None:
    """``holder``'s document ``<{holder}/document>``: a ``prov:Entity`` with ``text`` as ``tg:content``."""
    document = f"<{holder}{DOCUMENT_SUFFIX}>"
    add(f"<{holder}>", TG_DOCUMENT, document, g)
    add(document, NT.type, NT.Entity, g)
    add(document, NT.tg_content, text, g)
