"""Every IRI pattern of the model, built and parsed back here (plain text, not N-Triples).

The seed model's patterns are TrustGraph's (docs/model.md):

==============  ========================================================================
Question        ``urn:trustgraph:agent:{uuid}`` / ``:question:{uuid}`` / ``:docrag:{uuid}``
Analysis n      ``urn:trustgraph:agent:{uuid}/i{n}``
Conclusion      ``urn:trustgraph:agent:{uuid}/final``
Exploration     ``urn:trustgraph:prov:exploration:{uuid}`` (DocRAG: ``{question}/exploration``)
Focus           ``urn:trustgraph:prov:focus:{uuid}``
Synthesis       ``urn:trustgraph:prov:synthesis:{uuid}`` (DocRAG: ``{question}/synthesis``)
Edge selection  ``urn:trustgraph:prov:edge:{uuid}:{index}``, its statement ``.../triple``
==============  ========================================================================

Ours: a DocRAG session's Focus (the chunks a reranker selected) ``{question}/focus``, a chunk selection
``{exploration or focus}/chunk/{n}``, an evaluation ``{node}/evaluation/{n}``.  The strict profile adds
``{step}/activity`` (the activity that generated a step), ``{question}/session`` (the session's
activity), ``urn:otel-prov:agent:{name}`` and ``urn:otel-prov:model:{name}`` (a model, the software
agent a model call's step is associated with).  A person's approval of a step or an answer is
``{question}/approval/{span id}``, its qualified association ``{approval}/association``, the person
``urn:otel-prov:person:{name}`` and the role ``urn:otel-prov:role:{name}``.  ``otel-prov seal`` records
each seal as ``urn:otel-prov:seal:{uuid}`` in the graph ``urn:graph:seals`` (docs/audit.md).
"""

from __future__ import annotations

import re
import uuid as _uuid
from urllib.parse import quote

from .. import attributes as A
from .terms import hex_span_id, hex_trace_id, iri_segment, uuid_from_trace_id
from .vocab import OTELPROV_NS

AGENT_PREFIX = "urn:trustgraph:agent:"
GRAPH_RAG_PREFIX = "urn:trustgraph:question:"
DOC_RAG_PREFIX = "urn:trustgraph:docrag:"
EXPLORATION_PREFIX = "urn:trustgraph:prov:exploration:"
FOCUS_PREFIX = "urn:trustgraph:prov:focus:"
SYNTHESIS_PREFIX = "urn:trustgraph:prov:synthesis:"
EDGE_PREFIX = "urn:trustgraph:prov:edge:"
SOFTWARE_AGENT_PREFIX = "urn:otel-prov:agent:"
MODEL_PREFIX = "urn:otel-prov:model:"
SEAL_PREFIX = "urn:otel-prov:seal:"
PERSON_PREFIX = "urn:otel-prov:person:"
ROLE_PREFIX = "urn:otel-prov:role:"

ANALYSIS_SUFFIX = "/i"
"""Analysis n is ``{question}/i{n}``."""
CONCLUSION_SUFFIX = "/final"
DOC_RAG_EXPLORATION_SUFFIX = "/exploration"
DOC_RAG_SYNTHESIS_SUFFIX = "/synthesis"
DOC_RAG_FOCUS_SUFFIX = "/focus"
CHUNK_SUFFIX = "/chunk/"
EVALUATION_SUFFIX = "/evaluation/"
STATEMENT_SUFFIX = "/triple"
"""An edge selection's reified statement is ``{selection}/triple``."""
ACTIVITY_SUFFIX = "/activity"
"""Strict: the activity that generated a step is ``{step}/activity``."""
SESSION_SUFFIX = "/session"
"""Strict: a session's activity is ``{question}/session``."""
APPROVAL_SUFFIX = "/approval/"
"""A person's approval is ``{question}/approval/{span id}``."""
ASSOCIATION_SUFFIX = "/association"
"""An approval's qualified association (its person and role) is ``{approval}/association``."""

QUESTION_PREFIXES = {
    A.FLOW_AGENT: AGENT_PREFIX,
    A.FLOW_GRAPH_RAG: GRAPH_RAG_PREFIX,
    A.FLOW_DOC_RAG: DOC_RAG_PREFIX,
}

_NESTED_NAMESPACE = _uuid.uuid5(_uuid.NAMESPACE_URL, OTELPROV_NS + "nested-agent")
"""Namespace of the ``{uuid}`` of an agent that does not own its trace: uuid5(trace id/span id)."""
_ITERATION = re.compile(re.escape(ANALYSIS_SUFFIX) + r"(\d+)$")


# -- the {uuid} of a session ------------------------------------------------------------------------


def session_uuid(session_id: object, trace_id: int) -> str:
    """The ``{uuid}`` of a session: its session id made IRI-safe, else its trace id as a UUID."""
    if session_id is not None and str(session_id).strip():
        return iri_segment(str(session_id))
    return uuid_from_trace_id(trace_id)


def nested_agent_uuid(trace_id: int, span_id: int) -> str:
    """The ``{uuid}`` of an agent span that does not own its trace id (a nested agent, or a later
    top-level one): a name-based UUID (v5) of the trace id and span id."""
    return str(_uuid.uuid5(_NESTED_NAMESPACE, f"{hex_trace_id(trace_id)}/{hex_span_id(span_id)}"))


# -- builders ---------------------------------------------------------------------------------------


def question_iri(flow: str, uuid: str) -> str:
    """The Question IRI of a session."""
    return QUESTION_PREFIXES[flow] + uuid


def analysis_iri(uuid: str, n: int) -> str:
    return f"{AGENT_PREFIX}{uuid}{ANALYSIS_SUFFIX}{n}"


def conclusion_iri(uuid: str) -> str:
    return f"{AGENT_PREFIX}{uuid}{CONCLUSION_SUFFIX}"


def exploration_iri(flow: str, uuid: str) -> str:
    if flow == A.FLOW_DOC_RAG:
        return f"{DOC_RAG_PREFIX}{uuid}{DOC_RAG_EXPLORATION_SUFFIX}"
    return EXPLORATION_PREFIX + uuid


def focus_iri(uuid: str) -> str:
    return FOCUS_PREFIX + uuid


def doc_focus_iri(uuid: str) -> str:
    """A DocRAG session's Focus: the chunks its reranker selected."""
    return f"{DOC_RAG_PREFIX}{uuid}{DOC_RAG_FOCUS_SUFFIX}"


def chunk_selection_iri(node: str, n: int) -> str:
    """The ``n``-th chunk (1, 2, ...) an Exploration retrieved or a Focus selected, with its score."""
    return f"{node}{CHUNK_SUFFIX}{n}"


def evaluation_iri(node: str, n: int) -> str:
    """The ``n``-th evaluation (1, 2, ...) of ``node`` (an answer, a step)."""
    return f"{node}{EVALUATION_SUFFIX}{n}"


def synthesis_iri(flow: str, uuid: str) -> str:
    if flow == A.FLOW_DOC_RAG:
        return f"{DOC_RAG_PREFIX}{uuid}{DOC_RAG_SYNTHESIS_SUFFIX}"
    return SYNTHESIS_PREFIX + uuid


def edge_selection_iri(uuid: str, index: int) -> str:
    return f"{EDGE_PREFIX}{uuid}:{index}"


def statement_iri(selection: str) -> str:
    return selection + STATEMENT_SUFFIX


def activity_iri(step: str) -> str:
    """Strict: the activity that generated ``step``."""
    return step + ACTIVITY_SUFFIX


def session_activity_iri(question: str) -> str:
    """Strict: the session's activity, which used its Question."""
    return question + SESSION_SUFFIX


def software_agent_iri(name: str) -> str:
    return SOFTWARE_AGENT_PREFIX + iri_segment(name)


def model_iri(name: str) -> str:
    """Strict: a model, as the software agent of the model calls made to it."""
    return MODEL_PREFIX + iri_segment(name)


def approval_iri(question: str, span_id: int) -> str:
    """A person's approval (or rejection) recorded by the span ``span_id`` of the session of ``question``."""
    return f"{question}{APPROVAL_SUFFIX}{hex_span_id(span_id)}"


def association_iri(approval: str) -> str:
    """An approval's qualified association: who decided, in which role."""
    return approval + ASSOCIATION_SUFFIX


def person_iri(name: str) -> str:
    """The IRI of the person called ``name`` (who approved a step, placed a hold or erased a session)."""
    return PERSON_PREFIX + quote(name, safe="")


def role_iri(name: str) -> str:
    """The role called ``name`` (``approver``, ``reviewer``, ...) a person acted in."""
    return ROLE_PREFIX + quote(name, safe="")


_SEAL_NAMESPACE = _uuid.uuid5(_uuid.NAMESPACE_URL, OTELPROV_NS + "Seal")


def seal_iri(session: str, digest: str, time: str) -> str:
    """A seal of ``session``'s graph, whose digest was ``digest`` at ``time``: the same seal, the
    same IRI."""
    return SEAL_PREFIX + str(_uuid.uuid5(_SEAL_NAMESPACE, f"{session}\n{digest}\n{time}"))


# -- parsers ----------------------------------------------------------------------------------------


def flow_of_question(value: str) -> str | None:
    """The flow whose Question pattern ``value`` starts with (a step's IRI starts with its
    Question's), or None."""
    for flow, prefix in QUESTION_PREFIXES.items():
        if value.startswith(prefix):
            return flow
    return None


def is_question_iri(value: str) -> bool:
    """Whether ``value`` is exactly a Question IRI (not one of its steps)."""
    flow = flow_of_question(value)
    return flow is not None and "/" not in value[len(QUESTION_PREFIXES[flow]):]


def is_analysis_iri(value: str) -> bool:
    """Whether ``value`` is an Analysis IRI, ``urn:trustgraph:agent:{uuid}/i{n}``."""
    return value.startswith(AGENT_PREFIX) and iteration_of(value) is not None


def iteration_of(value: str) -> int | None:
    """The ``n`` of an Analysis IRI ``.../i{n}``, else None."""
    match = _ITERATION.search(value)
    return int(match.group(1)) if match else None


def is_session_activity(value: str) -> bool:
    return value.endswith(SESSION_SUFFIX)


def edge_index(value: str) -> int | None:
    """The ``index`` of an edge selection IRI ``...:{index}``, else None."""
    tail = value.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else None


BLOB_PREFIX = "urn:otel-prov:blob:sha256:"
"""A blob's IRI: this and the hex SHA-256 of its bytes (docs/store.md, "Large values")."""
_BLOB_HEX = re.compile(r"[0-9a-f]{64}\Z")



def blob_iri(digest: str) -> str:
    """The IRI of the blob whose SHA-256 is ``digest`` (hex)."""
    return BLOB_PREFIX + digest


def digest_of(iri: str) -> str | None:
    """The hex SHA-256 a blob's IRI names (``None``: not a blob's IRI)."""
    if iri.startswith("<") and iri.endswith(">"):
        iri = iri[1:-1]
    if not iri.startswith(BLOB_PREFIX):
        return None
    digest = iri[len(BLOB_PREFIX):]
    return digest if _BLOB_HEX.match(digest) else None
