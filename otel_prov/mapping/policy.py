"""The content policy: what of the text a trace records reaches the store (docs/privacy.md).

Each field -- the question, thoughts, tool arguments, observations, answers, retrieved and selected
texts, evaluation explanations, errors -- is kept (the default), truncated to its first N characters,
replaced by the SHA-256 of its exact text (hex), or omitted; with redaction on (:mod:`.redaction`), what
the detectors find is replaced by typed markers first (a hash is always of the text as recorded).

It is a pure function of the quads the mapping made: :meth:`ContentPolicy.apply` rewrites the literal
of each content property (:data:`FIELDS`) and records on the node what it did, so a reader knows a
value was cut, hashed, left out or redacted:

- ``otelprov:contentPolicy "{property} {rule}"`` (``"thought sha256"``, ``"observation truncate:200"``,
  ``"arguments omit"``): the rule that changed the node's value of that property (a value within a
  truncation's limit is whole: nothing is said);
- ``otelprov:truncatedFrom "{property} {length}"``: the value was cut; its length in characters;
- ``otelprov:redactions "{property} {kind}={count},..."`` (``"observation email=2,card=1"``): what
  redaction replaced in it (summed over the property's values on the node).

``{property}`` is the predicate's local name (``query``, ``rawArguments``, ``object``...), as
``otelprov:notCaptured`` names it.  The mapper applies it to all the quads of a span, a framework
trace or a conversation at once, before it remembers them or hands them on, so its diffs, the store,
the log segments and the rescue files only ever hold what the policy let through.  A value not
captured stays not captured: an empty literal is left as it is (never hashed into a value that looks
recorded), and a raw value (``otelprov:rawThought``...) stays raw under its field's rule.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from ..model.quads import Quad
from ..model.terms import literal, literal_text
from ..model.vocab import NT
from .redaction import Redactor

KEEP, TRUNCATE, SHA256, OMIT = "keep", "truncate", "sha256", "omit"
KINDS = (KEEP, TRUNCATE, SHA256, OMIT)

FIELDS: dict[str, tuple[str, ...]] = {
    "question": (NT.tg_query, NT.raw_query),
    "thought": (NT.tg_thought, NT.raw_thought),
    "arguments": (NT.tg_arguments, NT.raw_arguments),
    "observation": (NT.tg_observation, NT.raw_observation),
    "answer": (NT.tg_answer, NT.raw_answer, NT.tg_content, NT.raw_content),
    "retrieval": (NT.tg_selectedChunk, NT.tg_reasoning, NT.subject, NT.predicate, NT.object),
    "evaluation": (NT.evaluationExplanation,),
    "error": (NT.statusMessage, NT.tg_toolError),
}
"""Each field a rule is given for, and the predicates whose literals it covers (IRIs, numbers and
times are never content: an edge's IRI, a chunk's score stay)."""
MESSAGE_FIELDS = tuple(name for name in FIELDS if name != "error")
"""The fields the GenAI instrumentations' content switch
(``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``) covers: what the model and the tools were
given and said (an error's status message is recorded whatever it says)."""
KEPT_EMPTY = frozenset({NT.tg_query, NT.tg_answer, NT.tg_content, NT.subject, NT.predicate, NT.object})
"""Properties a node must have (the spec's mandatory literals, an edge statement's terms): omitted,
they stay, empty, as a value not captured does."""
_FIELD_OF = {predicate: name for name, predicates in FIELDS.items() for predicate in predicates}
_LOCAL = {predicate: predicate[1:-1].rsplit("#", 1)[-1].rsplit("/", 1)[-1] for predicate in _FIELD_OF}


@dataclass(frozen=True, slots=True)
class Rule:
    """What happens to a field's values: ``kind`` one of :data:`KINDS`, ``limit`` for ``truncate``."""

    kind: str = KEEP
    limit: int = 0

    def __str__(self) -> str:
        return f"{TRUNCATE}:{self.limit}" if self.kind == TRUNCATE else self.kind


KEEP_ALL = Rule()


def parse_rule(text: str) -> Rule:
    """``keep``, ``truncate:N`` (N >= 1 characters), ``sha256`` or ``omit``; else :class:`ValueError`."""
    kind, _, limit = text.strip().lower().partition(":")
    if kind == TRUNCATE:
        if not limit.strip().isdigit() or int(limit) < 1:
            raise ValueError(f"{text.strip()!r}: truncate needs a length, e.g. truncate:500")
        return Rule(TRUNCATE, int(limit))
    if kind not in KINDS or limit:
        raise ValueError(f"{text.strip()!r}: expected keep, truncate:N, sha256 or omit")
    return Rule(kind)


def parse_rules(text: str) -> dict[str, Rule]:
    """A policy's text: comma-separated ``FIELD=RULE`` (fields: :data:`FIELDS`), and at most one bare
    ``RULE`` for every field not named (``omit,question=keep``); the fields it names, by name, the bare
    rule under ``*``.  :class:`ValueError` names what is wrong."""
    rules: dict[str, Rule] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, equals, rule = item.partition("=")
        name = name.strip().lower() if equals else "*"
        if name != "*" and name not in FIELDS:
            raise ValueError(f"unknown field {name!r}: expected {', '.join(FIELDS)} (or * for the rest)")
        if name in rules:
            raise ValueError(f"{name!r} given twice" if name != "*" else "two rules for every field")
        rules[name] = parse_rule(rule if equals else item)
    return rules


@lru_cache(maxsize=256)
def _noted(local: str, rule: str) -> str:
    return literal(f"{local} {rule}")


@dataclass(slots=True)
class _Note:
    """What the policy did to one property of one node."""

    graph: str
    rule: Rule = KEEP_ALL
    lengths: set[int] | None = None
    redactions: Counter[str] | None = None


@dataclass(frozen=True)
class ContentPolicy:
    """A rule per field (:data:`FIELDS`; a field not named: ``keep``) and, with a ``redactor``,
    redaction before them."""

    rules: Mapping[str, Rule] = field(default_factory=dict)
    redactor: Redactor | None = None

    def rule(self, name: str) -> Rule:
        return self.rules.get(name, KEEP_ALL)

    @property
    def active(self) -> bool:
        """Whether it changes anything (keeping everything, unredacted, is today's graph)."""
        return self.redactor is not None or any(rule.kind != KEEP for rule in self.rules.values())

    @property
    def text(self) -> str:
        """Every field's rule, as :func:`parse_rules` reads it (``question=keep,thought=sha256,...``)."""
        return ",".join(f"{name}={self.rule(name)}" for name in FIELDS)

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        """What tells two policies apart: their rules and their detectors' names."""
        return self.text, self.redactor.names if self.redactor is not None else ()

    @cached_property
    def _rules(self) -> dict[str, Rule]:
        """Each content predicate's rule."""
        return {predicate: self.rule(name) for predicate, name in _FIELD_OF.items()}

    def apply(self, quads: Iterable[Quad]) -> list[Quad]:
        """``quads`` with each content literal as the policy has it, and what it did on each node."""
        out: list[Quad] = []
        done: dict[tuple[str, str, str], str | None] = {}
        notes: dict[tuple[str, str], _Note] = {}
        rules, redactor = self._rules, self.redactor
        for quad in quads:
            rule = rules.get(quad[1])
            o = quad[2]
            if rule is None or len(o) < 3 or o[0] != '"' or o[-1] != '"':  # not content, an IRI, or ""
                out.append(quad)
                continue
            if rule.kind == KEEP and (redactor is None or not redactor.may_hold(o)):
                out.append(quad)  # the common case: nothing to do (the triggers read the literal as it is)
                continue
            s, p, _, g = quad
            key = (s, p, o)
            if key in done:  # the same value twice (two spans write a Question's query): counted once
                new = done[key]
            else:
                new = done[key] = self._value(s, p, o, rule, notes, g)
            if new is not None:
                out.append(quad if new is o else (s, p, new, g))
        for (s, local), note in notes.items():
            if note.rule.kind != KEEP:
                out.append((s, NT.contentPolicy, _noted(local, str(note.rule)), note.graph))
            for length in sorted(note.lengths or ()):
                out.append((s, NT.truncatedFrom, literal(f"{local} {length}"), note.graph))
            if note.redactions:
                counts = ",".join(f"{kind}={n}" for kind, n in sorted(note.redactions.items()))
                out.append((s, NT.redactions, literal(f"{local} {counts}"), note.graph))
        return out

    def _value(self, s: str, p: str, o: str, rule: Rule, notes: dict[tuple[str, str], _Note],
               graph: str) -> str | None:
        """The literal ``o`` of ``p`` on ``s`` becomes (None: left out), noted in ``notes``."""
        if rule.kind == OMIT:
            notes.setdefault((s, _LOCAL[p]), _Note(graph)).rule = rule
            return '""' if p in KEPT_EMPTY else None
        redactor = self.redactor
        text = literal_text(o)
        shown = text
        if redactor is not None:
            shown, counts = redactor.redact(text)
            if counts:
                note = notes.setdefault((s, _LOCAL[p]), _Note(graph))
                note.redactions = note.redactions or Counter()
                note.redactions.update(counts)
        if rule.kind == KEEP:
            return o if shown is text else literal(shown)
        if rule.kind == SHA256:
            notes.setdefault((s, _LOCAL[p]), _Note(graph)).rule = rule
            return '"' + hashlib.sha256(text.encode("utf-8")).hexdigest() + '"'
        if len(shown) > rule.limit:  # a value within the limit is whole: nothing to say
            note = notes.setdefault((s, _LOCAL[p]), _Note(graph))
            note.rule = rule
            note.lengths = (note.lengths or set()) | {len(text)}
            shown = shown[:rule.limit]
        return o if shown is text else literal(shown)
