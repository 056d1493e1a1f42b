"""PROV-N and PROV-JSON, the W3C PROV data model's own notations, made from the triples: PROV-O's
mapping of PROV-DM read backwards (docs/model.md, "PROV-N and PROV-JSON").  Pure: triples in, text out.

:func:`document` reads the triples into PROV statements and counts what it leaves out (what is not
valid PROV, as the seed profile's Question: a ``prov:Activity`` that entities are derived from; and
what no PROV statement can say, as the nodes that are no PROV element); :func:`provn` and
:func:`prov_json` write it; :func:`left_out_note` says in one line what was left out.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rdflib import RDF, RDFS, XSD, Namespace
from rdflib.namespace import PROV

from ..model import iris
from ..model.vocab import PREFIXES
from ..stores.base import BNODE, IRI, LITERAL, TRIPLE, Term, Triple

ENTITY, ACTIVITY, AGENT = "entity", "activity", "agent"
"""The three kinds of PROV element, each a statement of PROV-N (``entity(...)``)."""

PROV_DM = Namespace(str(PROV))
"""PROV-DM's attribute names (``prov:label``, ``prov:type``, ``prov:role``, ...): PROV-O has no
property of these names, so rdflib's closed namespace does not either."""

_TYPE, _LABEL, _STRING = str(RDF.type), str(RDFS.label), str(XSD.string)
_DATETIME = str(XSD.dateTime)
_P = str(PROV)

_CLASSES = {str(PROV.Entity): ENTITY, str(PROV.Plan): ENTITY, str(PROV.Collection): ENTITY,
            str(PROV.EmptyCollection): ENTITY, str(PROV.Bundle): ENTITY,
            str(PROV.Activity): ACTIVITY,
            str(PROV.Agent): AGENT, str(PROV.Person): AGENT, str(PROV.Organization): AGENT,
            str(PROV.SoftwareAgent): AGENT}
"""PROV-O's classes of elements and the statement each is (a subclass is also a ``prov:type``)."""
_SAID = {str(PROV.Entity), str(PROV.Activity), str(PROV.Agent)}
"""The classes the statement's keyword says: no ``prov:type`` of their own."""
_DISJOINT = {ENTITY: ACTIVITY, ACTIVITY: ENTITY}
"""PROV-CONSTRAINTS: nothing is both an entity and an activity."""

_ATTRIBUTES = {_LABEL: str(PROV_DM.label), str(PROV.value): str(PROV_DM.value),
               str(PROV.atLocation): str(PROV_DM.location)}
"""PROV-O properties that are PROV-DM attributes; any other property outside PROV-O's namespace is an
attribute of its own name."""

_DATETIME_TEXT = re.compile(
    r"-?[0-9]{4,}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2})?")
"""PROV-N's DATETIME: the only times it can write."""


@dataclass(frozen=True, eq=False)
class RelationKind:
    """One PROV relation: its PROV-N keyword (also its PROV-JSON key), its arguments' PROV-JSON names
    in PROV-N's order, the element each argument must be (None: any), and its PROV-O properties."""

    keyword: str
    args: tuple[str, ...]
    kinds: tuple[str | None, ...]
    timed: bool
    predicate: str
    """The unqualified property: its subject is the first argument, its object the second."""
    qualified: str | None = None
    """The qualified property: its subject is the first argument, its object the influence node."""
    influence: Mapping[str, int] = field(default_factory=dict)
    """On the influence node: property -> the argument it gives."""
    required: int = 2
    """How many leading arguments PROV-DM requires (the rest, with the time, PROV-N writes all or none
    of)."""
    prov_type: str | None = None
    """A derivation's subtype (``prov:Revision``): PROV-N writes a derivation with that ``prov:type``."""
    identified: bool = True
    """False for the three relations PROV-N writes without an identifier or attributes."""


_DERIVATION = ("prov:generatedEntity", "prov:usedEntity", "prov:activity", "prov:generation", "prov:usage")
_DERIVATION_KINDS = (ENTITY, ENTITY, ACTIVITY, None, None)
_DERIVATION_INFLUENCE = {str(PROV.entity): 1, str(PROV.hadActivity): 2, str(PROV.hadGeneration): 3,
                         str(PROV.hadUsage): 4}


def _derivation(predicate: str, qualified: str, prov_type: str | None = None) -> RelationKind:
    return RelationKind("wasDerivedFrom", _DERIVATION, _DERIVATION_KINDS, False, predicate, qualified,
                        _DERIVATION_INFLUENCE, 2, prov_type)


RELATIONS = (
    RelationKind("wasGeneratedBy", ("prov:entity", "prov:activity"), (ENTITY, ACTIVITY), True,
                 str(PROV.wasGeneratedBy), str(PROV.qualifiedGeneration), {str(PROV.activity): 1}, 1),
    RelationKind("used", ("prov:activity", "prov:entity"), (ACTIVITY, ENTITY), True,
                 str(PROV.used), str(PROV.qualifiedUsage), {str(PROV.entity): 1}, 1),
    RelationKind("wasInformedBy", ("prov:informed", "prov:informant"), (ACTIVITY, ACTIVITY), False,
                 str(PROV.wasInformedBy), str(PROV.qualifiedCommunication), {str(PROV.activity): 1}),
    RelationKind("wasStartedBy", ("prov:activity", "prov:trigger", "prov:starter"),
                 (ACTIVITY, ENTITY, ACTIVITY), True, str(PROV.wasStartedBy), str(PROV.qualifiedStart),
                 {str(PROV.entity): 1, str(PROV.hadActivity): 2}, 1),
    RelationKind("wasEndedBy", ("prov:activity", "prov:trigger", "prov:ender"), (ACTIVITY, ENTITY, ACTIVITY),
                 True, str(PROV.wasEndedBy), str(PROV.qualifiedEnd),
                 {str(PROV.entity): 1, str(PROV.hadActivity): 2}, 1),
    RelationKind("wasInvalidatedBy", ("prov:entity", "prov:activity"), (ENTITY, ACTIVITY), True,
                 str(PROV.wasInvalidatedBy), str(PROV.qualifiedInvalidation), {str(PROV.activity): 1}, 1),
    _derivation(str(PROV.wasDerivedFrom), str(PROV.qualifiedDerivation)),
    _derivation(str(PROV.wasRevisionOf), str(PROV.qualifiedRevision), str(PROV.Revision)),
    _derivation(str(PROV.wasQuotedFrom), str(PROV.qualifiedQuotation), str(PROV.Quotation)),
    _derivation(str(PROV.hadPrimarySource), str(PROV.qualifiedPrimarySource), str(PROV.PrimarySource)),
    RelationKind("wasAttributedTo", ("prov:entity", "prov:agent"), (ENTITY, None), False,
                 str(PROV.wasAttributedTo), str(PROV.qualifiedAttribution), {str(PROV.agent): 1}),
    RelationKind("wasAssociatedWith", ("prov:activity", "prov:agent", "prov:plan"), (ACTIVITY, None, ENTITY),
                 False, str(PROV.wasAssociatedWith), str(PROV.qualifiedAssociation),
                 {str(PROV.agent): 1, str(PROV.hadPlan): 2}, 1),
    RelationKind("actedOnBehalfOf", ("prov:delegate", "prov:responsible", "prov:activity"),
                 (None, None, ACTIVITY), False, str(PROV.actedOnBehalfOf), str(PROV.qualifiedDelegation),
                 {str(PROV.agent): 1, str(PROV.hadActivity): 2}),
    RelationKind("wasInfluencedBy", ("prov:influencee", "prov:influencer"), (None, None), False,
                 str(PROV.wasInfluencedBy), str(PROV.qualifiedInfluence), {str(PROV.influencer): 1}),
    RelationKind("specializationOf", ("prov:specificEntity", "prov:generalEntity"), (ENTITY, ENTITY), False,
                 str(PROV.specializationOf), identified=False),
    RelationKind("alternateOf", ("prov:alternate1", "prov:alternate2"), (ENTITY, ENTITY), False,
                 str(PROV.alternateOf), identified=False),
    RelationKind("hadMember", ("prov:collection", "prov:entity"), (ENTITY, ENTITY), False,
                 str(PROV.hadMember), identified=False),
)
"""Every PROV relation PROV-O states, in PROV-N's order of statements."""
_BY_PREDICATE = {r.predicate: r for r in RELATIONS}
_BY_QUALIFIED = {r.qualified: r for r in RELATIONS if r.qualified is not None}
_ACTIVITY_TIMES = (str(PROV.startedAtTime), str(PROV.endedAtTime))
_ENTITY_TIMES = {str(PROV.generatedAtTime): _BY_PREDICATE[str(PROV.wasGeneratedBy)],
                 str(PROV.invalidatedAtTime): _BY_PREDICATE[str(PROV.wasInvalidatedBy)]}
_AT_TIME, _HAD_ROLE = str(PROV.atTime), str(PROV.hadRole)
_NO_ELEMENT = "no PROV element"
_SUBTYPES = {r.prov_type for r in RELATIONS if r.prov_type}
"""Influence classes that stay a ``prov:type`` (a derivation's subtypes); PROV-O's other classes of
an influence node are said by the relation itself."""

Attribute = tuple[str, Term]
"""An attribute: its name (an IRI) and its value (a literal, or an IRI: written as a qualified name,
``prov:type='tg:Analysis'``, as the ``prov`` package reads PROV-O's IRIs)."""


@dataclass(frozen=True)
class Element:
    kind: str
    """:data:`ENTITY`, :data:`ACTIVITY` or :data:`AGENT`."""
    id: str
    attributes: tuple[Attribute, ...] = ()
    start: str | None = None
    """An activity's start time (``xsd:dateTime`` text)."""
    end: str | None = None


@dataclass(frozen=True)
class Relation:
    kind: RelationKind
    args: tuple[str | None, ...]
    """The arguments' IRIs in PROV-N's order (None: ``-``)."""
    id: str | None = None
    """The qualified influence node's IRI, when there is one."""
    time: str | None = None
    attributes: tuple[Attribute, ...] = ()


@dataclass
class LeftOut:
    """What :func:`document` did not put in the document, in triples."""

    invalid: Counter[str] = field(default_factory=Counter)
    """Triples that are not valid PROV, by reason (the seed profile's)."""
    unsaid: Counter[str] = field(default_factory=Counter)
    """Triples that no PROV statement says, by what they are about."""
    unsaid_nodes: Counter[str] = field(default_factory=Counter)
    """The nodes that are no PROV element, by their type."""


@dataclass
class Document:
    elements: list[Element]
    relations: list[Relation]
    left_out: LeftOut


# -- triples to statements ----------------------------------------------------------------------------


def _short(iri: str) -> str:
    for prefix, namespace in PREFIXES.items():
        if iri.startswith(namespace):
            return f"{prefix}:{iri[len(namespace):]}"
    return f"<{iri}>"


def _is_time(term: Term) -> bool:
    return (term.kind == LITERAL and term.datatype == _DATETIME
            and _DATETIME_TEXT.fullmatch(term.value) is not None)


class _Reader:
    """One pass over the triples, subject by subject (sorted: the same document whatever their order)."""

    def __init__(self, triples: Iterable[Triple]) -> None:
        self.props: dict[Term, dict[tuple[Term, Term], None]] = defaultdict(dict)
        for s, p, o in triples:
            self.props[s][(p, o)] = None
        self.kinds: dict[str, set[str]] = defaultdict(set)
        self.influences: set[Term] = set()
        for s, pairs in self.props.items():
            for p, o in pairs:
                if p.value == _TYPE and o.value in _CLASSES:
                    self.kinds[s.value].add(_CLASSES[o.value])
                elif p.value in _BY_QUALIFIED and o.kind != LITERAL:
                    self.influences.add(o)
        self.elements: list[Element] = []
        self.relations: list[Relation] = []
        self.left_out = LeftOut()

    def read(self) -> Document:
        for subject in sorted(self.props, key=lambda t: (t.kind, t.value)):
            if subject not in self.influences:
                self._subject(subject)
        self.elements.sort(key=lambda e: (e.id, e.kind))
        self.relations.sort(key=_relation_order)
        return Document(self.elements, self.relations, self.left_out)

    def _invalid(self, reason: str, count: int = 1) -> None:
        self.left_out.invalid[reason] += count

    def _conflict(self, kind: RelationKind, args: Iterable[str | None]) -> str | None:
        """Why these arguments break PROV's typing (an activity where an entity must be), or None."""
        for expected, arg in zip(kind.kinds, args, strict=False):
            if expected is not None and arg is not None and _DISJOINT[expected] in self.kinds.get(arg, ()):
                return (f"{_short(kind.predicate)} with a prov:{_DISJOINT[expected].capitalize()} where PROV "
                        f"needs an {expected}")
        return None

    def _subject(self, subject: Term) -> None:
        pairs = list(self.props[subject])
        kinds = self.kinds.get(subject.value, set()) if subject.kind == IRI else set()
        if {ENTITY, ACTIVITY} <= kinds:
            self._invalid("a node typed both prov:Entity and prov:Activity",
                          len(pairs) + sum(len(self.props.get(o, ())) for p, o in pairs
                                           if p.value in _BY_QUALIFIED and o in self.influences))
            return
        element = bool(kinds)
        attributes: list[Attribute] = []
        times: dict[str, list[Term]] = defaultdict(list)
        unqualified: list[tuple[RelationKind, Term]] = []
        own: list[Relation] = []
        unsaid: list[tuple[Term, Term]] = []
        for p, o in pairs:
            predicate = p.value
            if predicate == _TYPE and element:
                if o.value not in _SAID:
                    attributes.append((str(PROV_DM.type), o))
            elif predicate in _BY_PREDICATE and subject.kind == IRI and o.kind == IRI:
                unqualified.append((_BY_PREDICATE[predicate], o))
            elif predicate in _BY_QUALIFIED and o in self.influences and subject.kind == IRI:
                self._qualified(subject, _BY_QUALIFIED[predicate], o, own)
            elif predicate in _ACTIVITY_TIMES or predicate in _ENTITY_TIMES:
                self._time(subject, kinds, p, o, times, unsaid)
            elif element and o.kind not in (BNODE, TRIPLE) and (
                    predicate in _ATTRIBUTES or not predicate.startswith(_P)):
                attributes.append((_ATTRIBUTES.get(predicate, predicate), o))
            else:
                unsaid.append((p, o))
        self._relations(subject.value, unqualified, times, own)
        self.relations += own
        if element:
            self._elements(subject.value, kinds, attributes, times)
        if unsaid and not element:
            types = sorted(o.value for p, o in pairs if p.value == _TYPE)
            self.left_out.unsaid_nodes[_short(types[0]) if types else "untyped"] += 1
            self.left_out.unsaid[_NO_ELEMENT] += len(unsaid) + sum(  # with a blank node's qualified ones
                len(self.props.get(o, ())) for p, o in unsaid if o in self.influences)
        else:
            for p, o in unsaid:
                self.left_out.unsaid[f"{_short(p.value)} (a blank node)" if BNODE in (o.kind, p.kind)
                                     else f"{_short(p.value)} (no PROV-DM attribute)"] += 1

    def _time(self, subject: Term, kinds: set[str], p: Term, o: Term, times: dict[str, list[Term]],
              unsaid: list[tuple[Term, Term]]) -> None:
        needs = ACTIVITY if p.value in _ACTIVITY_TIMES else ENTITY
        if _DISJOINT[needs] in kinds:
            self._invalid(f"{_short(p.value)} on a prov:{_DISJOINT[needs].capitalize()}")
        elif needs not in kinds or subject.kind != IRI:
            unsaid.append((p, o))  # on a node no statement declares (or an agent)
        elif not _is_time(o):
            self._invalid(f"{_short(p.value)} that is not an xsd:dateTime")
        else:
            times[p.value].append(o)

    def _qualified(self, subject: Term, kind: RelationKind, node: Term, own: list[Relation]) -> None:
        args: list[str | None] = [subject.value] + [None] * (len(kind.args) - 1)
        time: str | None = None
        attributes: list[Attribute] = []
        pairs = self.props.get(node, {})
        problem: str | None = None
        for p, o in pairs:
            predicate = p.value
            if predicate in kind.influence and o.kind == IRI:
                index = kind.influence[predicate]
                if args[index] is not None:
                    problem = f"{_short(kind.qualified or '')} with two {_short(predicate)}"
                args[index] = o.value
            elif predicate == _AT_TIME and kind.timed and _is_time(o) and time is None:
                time = o.value
            elif predicate == _TYPE and (o.value in _SUBTYPES or not o.value.startswith(_P)):
                attributes.append((str(PROV_DM.type), o))
            elif predicate == _TYPE:
                continue  # the relation's own class (prov:Association, prov:Influence, ...)
            elif predicate == _HAD_ROLE and o.kind == IRI:
                attributes.append((str(PROV_DM.role), o))
            elif o.kind not in (BNODE, TRIPLE) and (predicate in _ATTRIBUTES or not predicate.startswith(_P)):
                attributes.append((_ATTRIBUTES.get(predicate, predicate), o))
            else:
                problem = problem or f"{_short(kind.qualified or '')} with {_short(predicate)}"
        missing = [name for name, arg in zip(kind.args[:kind.required], args, strict=False) if arg is None]
        if missing:
            problem = f"{_short(kind.qualified or '')} without its {missing[0]}"
        problem = problem or self._conflict(kind, args)
        if problem:
            self._invalid(problem, 1 + len(pairs))
            return
        if kind.prov_type and (str(PROV_DM.type), Term(IRI, kind.prov_type)) not in attributes:
            attributes.append((str(PROV_DM.type), Term(IRI, kind.prov_type)))
        ident = node.value if node.kind == IRI else None
        own.append(Relation(kind, tuple(args), ident, time, _sorted(attributes)))

    def _relations(self, subject: str, unqualified: list[tuple[RelationKind, Term]],
                   times: dict[str, list[Term]], own: list[Relation]) -> None:
        """``subject``'s unqualified relations (those its qualified ones do not say already), and the
        generation (invalidation) its time says, into ``own``."""
        stated = {(r.kind, r.args[1]) for r in own}
        for kind, o in unqualified:
            problem = self._conflict(kind, (subject, o.value))
            if problem:
                self._invalid(problem)
            elif (kind, o.value) not in stated:  # else said by its qualified form
                stated.add((kind, o.value))
                attributes = ((str(PROV_DM.type), Term(IRI, kind.prov_type)),) if kind.prov_type else ()
                args = (subject, o.value) + (None,) * (len(kind.args) - 2)
                own.append(Relation(kind, args, attributes=attributes))
        for predicate, kind in _ENTITY_TIMES.items():
            found = times.pop(predicate, [])
            untimed = [i for i, r in enumerate(own) if r.kind == kind and r.time is None]
            if len(found) == 1 and len(untimed) == 1:  # the one generation (invalidation) at its time
                r = own[untimed[0]]
                own[untimed[0]] = Relation(kind, r.args, r.id, found[0].value, r.attributes)
                continue
            own += [Relation(kind, (subject, None), time=time.value) for time in found]

    def _elements(self, subject: str, kinds: set[str], attributes: list[Attribute],
                  times: dict[str, list[Term]]) -> None:
        start, end = (times.get(p, []) for p in _ACTIVITY_TIMES)
        for name, found in (("prov:startedAtTime", start), ("prov:endedAtTime", end)):
            if len(found) > 1:
                self._invalid(f"an activity with more than one {name}", len(found))
        for kind in sorted(kinds):
            if kind == ACTIVITY:
                self.elements.append(Element(
                    kind, subject, _sorted(attributes), start[0].value if len(start) == 1 else None,
                    end[0].value if len(end) == 1 else None))
            else:
                self.elements.append(Element(kind, subject, _sorted(attributes)))


def _sorted(attributes: Iterable[Attribute]) -> tuple[Attribute, ...]:
    def order(a: Attribute) -> tuple[str, ...]:
        return a[0], a[1].kind, a[1].value, a[1].datatype or "", a[1].language or ""

    return tuple(sorted(dict.fromkeys(attributes), key=order))


def _relation_order(r: Relation) -> tuple[Any, ...]:
    return (RELATIONS.index(r.kind), tuple(a or "" for a in r.args), r.time or "", r.id or "",
            [(n, v.value) for n, v in r.attributes])


def document(triples: Iterable[Triple]) -> Document:
    """The PROV statements the triples make, and what was left out of them."""
    return _Reader(triples).read()


# -- names ------------------------------------------------------------------------------------------

NAMESPACES = {
    **{k: v for k, v in PREFIXES.items() if k not in ("prov", "xsd")},
    "agent": iris.AGENT_PREFIX, "question": iris.GRAPH_RAG_PREFIX, "docrag": iris.DOC_RAG_PREFIX,
    "exploration": iris.EXPLORATION_PREFIX, "focus": iris.FOCUS_PREFIX, "synthesis": iris.SYNTHESIS_PREFIX,
    "edge": iris.EDGE_PREFIX, "otelagent": iris.SOFTWARE_AGENT_PREFIX, "model": iris.MODEL_PREFIX,
    "person": iris.PERSON_PREFIX, "role": iris.ROLE_PREFIX, "seal": iris.SEAL_PREFIX,
}
"""The prefixes declared for the IRIs otel-prov makes (``prov`` and ``xsd`` are PROV-N's own); any other
IRI gets ``ns1``, ``ns2``, ... for its namespace."""
_PREDECLARED = {"prov": str(PROV), "xsd": str(XSD)}

# PROV-N's PN_LOCAL (its grammar's productions 51-55: SPARQL's, with more characters escaped or allowed)
_BASE_CHARS = ("A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d"
               "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff")
_NAME_CHARS = _BASE_CHARS + "_0-9\u00b7\u0300-\u036f\u203f-\u2040-"
_RAW = re.compile(rf"[{_NAME_CHARS}/@~&+*?#$!.]|%[0-9A-Fa-f]{{2}}")
_ESCAPED = frozenset("=',-:;[]().")
_FIRST = re.compile(rf"[{_BASE_CHARS}_0-9/@~&+*?#$!]|%[0-9A-Fa-f]{{2}}")


def provn_local(local: str) -> str | None:
    """``local`` as PROV-N's local part of a qualified name (``uuid\\:0``), or None when it cannot be
    one (a character PROV-N has neither in names nor among its escapes)."""
    out, i = [], 0
    while i < len(local):
        match = (_FIRST if i == 0 else _RAW).match(local, i)
        char = local[i]
        if match is not None and not (char == "." and match.end() == len(local)):
            out.append(match.group())
            i = match.end()
        elif char in _ESCAPED:
            out.append("\\" + char)
            i += 1
        else:
            return None
    return "".join(out)


class Names:
    """The qualified name of each IRI a document uses, and the prefixes they need (the project's
    namespaces, then one generated for each other namespace, in order of their IRIs)."""

    def __init__(self, iris_used: Iterable[str]) -> None:
        known = sorted({**_PREDECLARED, **NAMESPACES}.items(), key=lambda kv: -len(kv[1]))
        self.names: dict[str, tuple[str, str]] = {}
        self.declared: dict[str, str] = {}
        others: dict[str, list[str]] = defaultdict(list)
        for iri in sorted(set(iris_used)):
            found = next(((prefix, iri[len(ns):]) for prefix, ns in known
                          if iri.startswith(ns) and provn_local(iri[len(ns):]) is not None), None)
            if found is None:
                others[_namespace(iri)].append(iri)
                continue
            self.names[iri] = found
            if found[0] not in _PREDECLARED:
                self.declared[found[0]] = NAMESPACES[found[0]]
        for n, (namespace, members) in enumerate(sorted(others.items()), 1):
            prefix = f"ns{n}"
            self.declared[prefix] = namespace
            for iri in members:
                self.names[iri] = (prefix, iri[len(namespace):])
        self.declared = dict(sorted(self.declared.items()))

    def provn(self, iri: str) -> str:
        prefix, local = self.names[iri]
        return f"{prefix}:{provn_local(local)}"

    def json(self, iri: str) -> str:
        prefix, local = self.names[iri]
        return f"{prefix}:{local}"


def _namespace(iri: str) -> str:
    """``iri`` up to its last ``/``, ``#`` or ``:`` when the rest can be a PROV-N local name, else all
    of it (its name is then ``nsN:``)."""
    cut = max(iri.rfind(c, 0, len(iri) - 1) for c in "/#:") + 1
    return iri[:cut] if cut > 0 and provn_local(iri[cut:]) is not None else iri


def _iris(doc: Document) -> Iterable[str]:
    for element in doc.elements:
        yield element.id
        yield from _attribute_iris(element.attributes)
    for relation in doc.relations:
        yield from (a for a in relation.args if a is not None)
        if relation.id is not None:
            yield relation.id
        yield from _attribute_iris(relation.attributes)


def _attribute_iris(attributes: Iterable[Attribute]) -> Iterable[str]:
    for name, value in attributes:
        yield name
        if value.kind == IRI:
            yield value.value
        elif value.datatype not in (None, _STRING):
            yield value.datatype or ""


# -- PROV-N ---------------------------------------------------------------------------------------

_PROVN_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_PROVN_SPECIAL = re.compile(r'[\\"\n\r\t\b\f]')


def provn_string(text: str) -> str:
    """``text`` as a PROV-N string literal: its quotes, backslashes and line breaks escaped (ECHAR)."""
    return '"' + _PROVN_SPECIAL.sub(lambda m: _PROVN_ESCAPES[m.group()], text) + '"'


def _provn_value(names: Names, value: Term) -> str:
    if value.kind == IRI:
        return f"'{names.provn(value.value)}'"
    if value.language:
        return f"{provn_string(value.value)}@{value.language}"
    if value.datatype not in (None, _STRING):
        return f"{provn_string(value.value)} %% {names.provn(value.datatype or '')}"
    return provn_string(value.value)


def _provn_attributes(names: Names, attributes: Iterable[Attribute]) -> str:
    said = ", ".join(f"{names.provn(n)}={_provn_value(names, v)}" for n, v in attributes)
    return f", [{said}]" if said else ""


def _provn_statement(names: Names, statement: Element | Relation) -> str:
    def ref(iri: str | None) -> str:
        return "-" if iri is None else names.provn(iri)

    if isinstance(statement, Element):
        given = statement.start or statement.end
        times = f", {statement.start or '-'}, {statement.end or '-'}" if given else ""
        return f"{statement.kind}({names.provn(statement.id)}{times}" \
               f"{_provn_attributes(names, statement.attributes)})"
    kind = statement.kind
    ident = f"{names.provn(statement.id)}; " if statement.id is not None else ""
    tail = [ref(a) for a in statement.args[kind.required:]] + ([statement.time or "-"] if kind.timed else [])
    said = [ref(a) for a in statement.args[:kind.required]] + (tail if set(tail) - {"-"} else [])
    args = ", ".join(said)  # the optional arguments only when one is given
    return f"{kind.keyword}({ident}{args}{_provn_attributes(names, statement.attributes)})"


def provn(doc: Document) -> str:
    """The document in PROV-N (W3C Recommendation, 2013): prefixes, elements, relations."""
    names = Names(_iris(doc))
    lines = ["document"]
    lines += [f"  prefix {prefix} <{namespace}>" for prefix, namespace in names.declared.items()]
    if doc.elements or doc.relations:
        lines.append("")
    statements: list[Element | Relation] = [*doc.elements, *doc.relations]
    lines += [f"  {_provn_statement(names, s)}" for s in statements]
    lines.append("endDocument")
    return "\n".join(lines) + "\n"


# -- PROV-JSON --------------------------------------------------------------------------------------


def _json_value(names: Names, value: Term) -> Any:
    if value.kind == IRI:
        return {"$": names.json(value.value), "type": "xsd:QName"}
    if value.language:
        return {"$": value.value, "lang": value.language}
    if value.datatype not in (None, _STRING):
        return {"$": value.value, "type": names.json(value.datatype or "")}
    return value.value


def _json_attributes(names: Names, attributes: Iterable[Attribute]) -> dict[str, Any]:
    grouped: dict[str, list[Any]] = defaultdict(list)
    for name, value in attributes:
        grouped[names.json(name)].append(_json_value(names, value))
    return {k: v[0] if len(v) == 1 else v for k, v in grouped.items()}


def prov_json(doc: Document) -> str:
    """The document in PROV-JSON (W3C Member Submission, 2013): ``prefix``, then one object per kind
    of statement, relations without an identifier keyed ``_:r1``, ``_:r2``, ..."""
    names = Names(_iris(doc))
    out: dict[str, Any] = {"prefix": dict(names.declared)}
    for element in doc.elements:
        body: dict[str, Any] = {}
        if element.start is not None:
            body["prov:startTime"] = element.start
        if element.end is not None:
            body["prov:endTime"] = element.end
        body.update(_json_attributes(names, element.attributes))
        out.setdefault(element.kind, {})[names.json(element.id)] = body
    for n, relation in enumerate(doc.relations, 1):
        kind = relation.kind
        body = {key: names.json(arg) for key, arg in zip(kind.args, relation.args, strict=True)
                if arg is not None}
        if relation.time is not None:
            body["prov:time"] = relation.time
        body.update(_json_attributes(names, relation.attributes))
        key = names.json(relation.id) if relation.id is not None else f"_:r{n}"
        out.setdefault(kind.keyword, {})[key] = body
    return json.dumps(out, ensure_ascii=False, indent=2) + "\n"


# -- what was left out --------------------------------------------------------------------------------


def _counted(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {what}" for what, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _triples(n: int) -> str:
    return f"{n} triple{'s' if n != 1 else ''}"


def left_out_note(doc: Document, name: str) -> str | None:
    """One line saying what the ``name`` document (``PROV-N``) left out of the triples, or None."""
    left = doc.left_out
    parts = []
    if left.invalid:
        invalid = sum(left.invalid.values())
        parts.append(f"{_triples(invalid)} that are not valid PROV ({_counted(left.invalid)}), "
                     "as the seed profile records them: a store recorded with --profile strict "
                     "(OTEL_PROV_PROFILE=strict) is valid PROV")
    unsaid = Counter(left.unsaid)
    nodes = sum(left.unsaid_nodes.values())
    if nodes:
        parts.append(f"{_triples(unsaid.pop(_NO_ELEMENT))} of {nodes} node{'s' if nodes != 1 else ''} that "
                     f"are no PROV element ({_counted(left.unsaid_nodes)}), named only in attribute values")
    if unsaid:
        parts.append(f"{_triples(sum(unsaid.values()))} that no PROV statement says ({_counted(unsaid)})")
    if not parts:
        return None
    return f"{name}: left out {'; '.join(parts)}; export --format turtle has every triple"


PROV_FORMATS: dict[str, tuple[str, Callable[[Document], str]]] = {
    "provn": ("PROV-N", provn),
    "prov-json": ("PROV-JSON", prov_json),
}
"""The PROV data model's formats, by the name ``--format`` takes: their title and their writer (their
media types and suffixes: :data:`otel_prov.render.TRACE_FORMATS`)."""
