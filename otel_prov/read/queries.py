"""A user's SPARQL (``otel-prov query``, the web view's SPARQL page): what is allowed, and what a
syntax error means, in one line a person can act on.

Only queries run (SELECT, ASK, CONSTRUCT, DESCRIBE): an update is refused before it reaches the
store; SERVICE (a query sent to another server) only when the caller allows it.  :func:`run_query`
runs one on any store, with the columns of ``SELECT *`` in the query's order.
"""

from __future__ import annotations

import re

from ..model.vocab import PREFIXES
from ..stores.base import QueryResult, ReadStore

_NOT_CODE = re.compile("|".join((
    r"#[^\n]*",  # a comment
    r'<[^<>"{}|^`\\\s]*>',  # an IRI
    r'"""(?:[^"\\]|\\.|"(?!""))*"""', r"'''(?:[^'\\]|\\.|'(?!''))*'''",  # long strings
    r'"(?:[^"\\\n]|\\.)*"', r"'(?:[^'\\\n]|\\.)*'",  # strings
)))
_SERVICE = re.compile(r"(?<![\w?$:.-])SERVICE(?![\w:-])", re.IGNORECASE)
_PROLOGUE = re.compile(r"\s*(?:(?:BASE\s*<[^>]*>|PREFIX\s+[\w.-]*:\s*<[^>]*>)\s*)*", re.IGNORECASE)
_FIRST_WORD = re.compile(r"[A-Za-z]+")
QUERY_FORMS = ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")
UPDATE_FORMS = ("INSERT", "DELETE", "LOAD", "CLEAR", "CREATE", "DROP", "COPY", "MOVE", "ADD", "WITH")
_AT = re.compile(r"error at (\d+):(\d+):\s*")
_KEYWORD = re.compile(r"\b[A-Z][A-Z_0-9]{1,}\b")
_CHAR_CLASS = re.compile(r"\[[^\]]*\]")
_MARK = re.compile(r'"([^"\sA-Za-z]{1,3})"')
_RARE_MARKS = frozenset({"{|", "|}", "~", "<<", ">>", "<<(", ")>>"})
"""SPARQL 1.2's annotation and triple-term syntax: not what a person who left a pattern open meant."""
MAX_LISTED = 6
"""An expected-list longer than this (an engine listing every function a FILTER may start with) is
said in words."""
_LINE_COL = re.compile(r"line (\d+), column (\d+)", re.IGNORECASE)
_PREFIXED = re.compile(r"(?<![\w<])([A-Za-z][\w.-]*)?:[\w.-]*$")


class QueryRefused(ValueError):
    """A query that is not run (an update, or SERVICE without permission)."""


def uses_service(sparql: str) -> bool:
    """Whether a query has the ``SERVICE`` keyword (outside comments, strings and IRIs; not a
    variable or a prefixed name)."""
    return _SERVICE.search(_NOT_CODE.sub(" ", sparql)) is not None


def _blank(match: re.Match[str]) -> str:
    """A comment, string or IRI reduced to its shape (so PREFIX declarations still read)."""
    text = match.group(0)
    return " " if text.startswith("#") else "<>" if text.startswith("<") else '""'


MAX_NESTING = 128
"""The deepest nesting of ``{ [ (`` a query may have: the engines parse recursively, and a query
nested some thousands deep (10 KB of text) overflows their stack (a segmentation fault)."""


def deepest(code: str) -> int:
    """How deep ``{``, ``[`` and ``(`` nest in a query's code (strings, IRIs and comments blanked)."""
    depth = most = 0
    for char in code:
        if char in "{[(":
            depth += 1
            most = max(most, depth)
        elif char in "}])":
            depth = max(0, depth - 1)
    return most


def check_query(sparql: str, *, allow_service: bool = False) -> None:
    """:class:`QueryRefused` for an update (this is a read-only view of the store), an empty
    query, a query nested deeper than :data:`MAX_NESTING`, or SERVICE unless allowed."""
    code = _NOT_CODE.sub(_blank, sparql)
    body = code[_PROLOGUE.match(code).end():]  # type: ignore[union-attr]  # the pattern always matches
    word = _FIRST_WORD.match(body.lstrip())
    first = word.group(0).upper() if word else ""
    if first in UPDATE_FORMS:
        raise QueryRefused(f"updates are not allowed here ({first}): the store is only read; "
                           f"a query starts with {', '.join(QUERY_FORMS)}")
    if not body.strip():
        raise QueryRefused("the query is empty")
    if first not in QUERY_FORMS:
        shown = body.strip().split()[0][:30]
        raise QueryRefused(f"a query starts with {', '.join(QUERY_FORMS)} (after any PREFIX or BASE), "
                           f"not {shown!r}")
    depth = deepest(code)
    if depth > MAX_NESTING:
        raise QueryRefused(f"the query nests {depth} levels deep (groups, brackets, parentheses); at most "
                           f"{MAX_NESTING} are run")
    if not allow_service and uses_service(sparql):
        raise QueryRefused("the query uses SERVICE, which sends queries to other servers over the "
                           "network: refused unless allowed (otel-prov query --allow-service)")


def syntax_message(sparql: str, error: str) -> str:
    """A SPARQL engine's syntax error as one line: where (line, column, the text there) and what
    was expected, without the character classes some engines list.  Oxigraph's errors start
    ``error at LINE:COLUMN:``; other servers' (Jena's ``... at line L, column C``) keep their words."""
    where = _AT.match(error)
    other = None if where else _LINE_COL.search(error)
    detail = error[where.end():] if where else error
    line = col = 0
    if where or other:
        found = where or other
        assert found is not None
        line, col = int(found.group(1)), int(found.group(2))
    near = ""
    lines = sparql.splitlines()
    if line and 0 < line <= len(lines):
        text = lines[line - 1]
        before = text[: max(col - 1, 0)]
        start = max(0, len(before) - 20)
        while 0 < start < len(before) and not before[start - 1].isspace():
            start += 1  # from the start of a word
        near = " ".join((before[start:] + text[max(col - 1, 0): col + 19]).split())
        prefixed = _PREFIXED.search(before)
        if "Prefix not found" in detail and prefixed is not None:
            name = prefixed.group(1) or ""
            known = ", ".join(f"{p}:" for p in PREFIXES)
            return (f"undeclared prefix '{name}:' at line {line}, column {col} (declare it with "
                    f"PREFIX {name}: <...>, or use one of {known})")
    if where:
        what = _expected(detail)
    else:  # another engine's own words, on one line
        what = " ".join(detail.split())[:200] or "unexpected text"
    place = f" at line {line}, column {col}" if line else ""
    near_text = f" near {near!r}" if near else ""
    return f"SPARQL syntax error{place}{near_text}: {what}"


def _expected(detail: str) -> str:
    """What Oxigraph says it expected (``expected one of ",", "}", GROUP, [character classes]``), in
    a few words: its punctuation and keywords, character classes as ``a name`` or ``a number``, and
    a long list of keywords as ``an expression or a keyword``."""
    classes = _CHAR_CLASS.findall(detail)
    rest = _CHAR_CLASS.sub(" ", detail)
    marks = list(dict.fromkeys(f"'{m}'" for m in _MARK.findall(rest) if m not in _RARE_MARKS))
    keywords = sorted(set(_KEYWORD.findall(_MARK.sub(" ", rest))))
    kinds = [kind for kind, sign in (("a name", "'A'"), ("a number", "'0'"))
             if any(sign in c for c in classes)]
    words = keywords if len(keywords) <= MAX_LISTED else ["an expression or a keyword"]
    items = marks + words + kinds
    if not items:
        return "unexpected text"
    if len(items) == 1:
        return f"expected {items[0]}"
    return f"expected one of {', '.join(items[:-1])} or {items[-1]}"


_SELECT_ALL = re.compile(r"SELECT\s+(?:(?:DISTINCT|REDUCED)\s+)?\*", re.IGNORECASE)
_VARIABLE = re.compile(r"[?$]([A-Za-z0-9_\u00b7\u00c0-\U000effff]+)")


def run_query(store: ReadStore, sparql: str) -> QueryResult:
    """A user's query run on any store (:meth:`ReadStore.run_query`), its result as people expect
    it: the columns of ``SELECT *`` in the order the variables first appear in the query (engines
    give their own order; Oxigraph's is alphabetical)."""
    result = store.run_query(sparql)
    if result.kind == "select" and len(result.variables) > 1:
        result.variables = select_order(sparql, result.variables)
    return result


def select_order(sparql: str, variables: list[str]) -> list[str]:
    """``variables`` in the order they first appear in a ``SELECT *`` query (outside comments,
    strings and IRIs; any not found keep their order, last); a query that names its columns keeps
    the engine's order, which is the query's own."""
    code = _NOT_CODE.sub(_blank, sparql)
    body = code[_PROLOGUE.match(code).end():]  # type: ignore[union-attr]  # the pattern always matches
    if not _SELECT_ALL.match(body.lstrip()):
        return variables
    first: dict[str, int] = {}
    for position, match in enumerate(_VARIABLE.finditer(body)):
        first.setdefault(match.group(1), position)
    last = len(first)
    return sorted(variables, key=lambda name: (first.get(name, last), variables.index(name)))
