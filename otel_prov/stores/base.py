"""What a store is: where quads go (:class:`WriteStore`), where traces are read from
(:class:`ReadStore`), and how one is named (:class:`StoreSpec`).

Writes are N-Quads text made by the mapping (:mod:`otel_prov.model.quads`), and removals are quads,
applied in the order given.  Reads are SPARQL over the explainability graph, with results as plain
data (:class:`Term`, :class:`QueryResult`), so the read model, the renderers and the CLI never see
a backend's own types.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import pyoxigraph
import rdflib

from ..model.quads import Quad

IRI, LITERAL, BNODE, TRIPLE = "iri", "literal", "bnode", "triple"


@dataclass(frozen=True, slots=True)
class Term:
    """An RDF term read back from a store."""

    kind: str
    """:data:`IRI`, :data:`LITERAL`, :data:`BNODE` or :data:`TRIPLE` (an RDF 1.2 triple term: profile
    ``trustgraph``'s selected edges)."""
    value: str
    """The IRI, the literal's lexical form, the blank node's label, or the triple term in N-Triples
    (``<<( <s> <p> "o" )>>``)."""
    datatype: str | None = None
    """A literal's datatype IRI (None for a plain string or a language-tagged literal)."""
    language: str | None = None
    parts: tuple[Term, Term, Term] | None = None
    """A triple term's subject, predicate and object."""

    @property
    def is_iri(self) -> bool:
        return self.kind == IRI

    def __str__(self) -> str:
        return self.value



def triple_term(parts: Triple) -> Term:
    """The triple term of ``parts``."""
    return Term(TRIPLE, f"<<( {to_oxigraph(Term(TRIPLE, '', parts=parts))} )>>", parts=parts)


def to_oxigraph(term: Term) -> Any:
    """A term as pyoxigraph's again (a blank node keeps its label)."""
    if term.kind == IRI:
        return _named_node(term.value)
    if term.kind == BNODE:
        return pyoxigraph.BlankNode(term.value)
    if term.kind == TRIPLE:
        assert term.parts is not None
        return pyoxigraph.Triple(*map(to_oxigraph, term.parts))
    if term.language is not None:
        return pyoxigraph.Literal(term.value, language=term.language)
    if term.datatype is not None:
        return pyoxigraph.Literal(term.value, datatype=_named_node(term.datatype))
    return pyoxigraph.Literal(term.value)


@lru_cache(maxsize=65536)
def _named_node(value: str) -> pyoxigraph.NamedNode:
    return pyoxigraph.NamedNode(value)


def to_ntriples(term: Term) -> str:
    """A term in N-Triples (and SPARQL's syntax of data)."""
    return term.value if term.kind == TRIPLE else str(to_oxigraph(term))


Row = dict[str, Term]
"""One solution of a SELECT query: variable name -> value (unbound variables are absent)."""
Triple = tuple[Term, Term, Term]
QuadTerms = tuple[Term, Term, Term, Term]


@dataclass
class QueryResult:
    """The result of any SPARQL query: SELECT (``variables`` and ``rows``), ASK (``boolean``) or
    CONSTRUCT / DESCRIBE (``triples``)."""

    kind: str
    """``select``, ``ask`` or ``graph``."""
    variables: list[str] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    boolean: bool = False
    triples: list[Triple] = field(default_factory=list)


AUTO_SERVER = "auto"
SERVER_KINDS = ("oxigraph", "fuseki", "sparql")
"""What :attr:`Remote.server` may name besides :data:`AUTO_SERVER` (``stores/sparql.py``'s servers)."""


@dataclass(frozen=True, slots=True)
class Remote:
    """How to use a store on a server (an ``http:`` / ``https:`` store): credentials, TLS, the
    time one request may take, the kind of server, and a local directory for what the server
    cannot take.  Secrets are left out of ``repr``."""

    user: str | None = None
    password: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    """A bearer token (instead of ``user`` and ``password``)."""
    ca_file: Path | None = None
    """CA certificates (PEM) to verify the server with, instead of the system's."""
    client_cert: Path | None = None
    client_key: Path | None = None
    timeout: float = 60.0
    """Seconds one request may take (connecting: at most 10)."""
    server: str = AUTO_SERVER
    """``auto`` (detected at open), ``oxigraph``, ``fuseki`` or ``sparql`` (any SPARQL 1.1 server)."""
    bulk_load: bool = False
    """Write with the Oxigraph server's bulk loader (faster, not atomic)."""
    local_dir: Path | None = None
    """Where data the server cannot take is saved (rescue and rejected quads)."""


@dataclass(frozen=True, slots=True)
class StoreSpec:
    """Where a store is: ``scheme`` names its backend (:mod:`otel_prov.stores`); ``path`` is an
    on-disk location, ``location`` the text after the scheme; ``remote`` how to use a store on a
    server."""

    scheme: str
    path: Path | None = None
    location: str = ""
    remote: Remote | None = None

    @property
    def in_memory(self) -> bool:
        """A store that lives and dies with the process that opened it."""
        return self.scheme == "memory"

    @property
    def rescue_dir(self) -> Path | None:
        """Where data that cannot be written at close is saved (next to an on-disk store; for a
        store on a server, its local directory)."""
        if self.path is not None:
            return self.path.parent
        return self.remote.local_dir if self.remote is not None else None

    def __str__(self) -> str:
        if self.path is not None:
            return f"{self.scheme}:{self.path}"
        return f"{self.scheme}:{self.location}"


class WriteStore(Protocol):
    """A store the ingest pipeline writes to (from one thread at a time: the writer's)."""

    def add(self, data: bytes, count: int) -> None:
        """Store ``count`` quads given as N-Quads text made by the mapping (valid and escaped)."""
        ...

    def remove(self, quads: Sequence[Quad]) -> None: ...

    def close(self) -> None:
        """Make what was written durable as the backend promises, and release the store."""
        ...


class AppendStore(WriteStore, Protocol):
    """A :class:`WriteStore` whose ``add``, ``remove`` and :meth:`update` append to a log at once,
    in the caller's thread (they survive the death of the process when they return), and whose
    :meth:`sync` makes them durable (they survive a power cut).  The ingest pipeline writes to it
    directly, without a writer thread."""

    @property
    def position(self) -> int:
        """How far the log has been appended (pass it to :meth:`sync`)."""
        ...

    @property
    def failure(self) -> str | None:
        """Why the log cannot be written now (None: it can).  The store clears it by itself once
        it can be written again."""
        ...

    def update(self, remove: Sequence[Quad], data: bytes, count: int) -> None:
        """Removals, then ``count`` quads of N-Quads ``data``, appended in one write: all or
        nothing (``OSError``)."""
        ...

    def sync(self, upto: int | None = None, timeout: float | None = None) -> bool:
        """Whether everything appended up to ``upto`` (default: so far) became durable within
        ``timeout`` seconds; ``OSError`` if syncing failed."""
        ...

    def close(self, timeout: float | None = None) -> None:
        """Make everything durable and release the store, spending at most about ``timeout``
        seconds on work that can wait (folding)."""
        ...


class ReadStore(Protocol):
    """A store traces are read from.  Our prefixes (``tg:``, ``prov:``, ...) are predeclared."""

    def select(self, sparql: str) -> list[Row]: ...

    def ask(self, sparql: str) -> bool: ...

    def run_query(self, sparql: str) -> QueryResult:
        """A user's query (any form), the default graph being the union of all graphs."""
        ...

    def quads(self, graph: str | None = None) -> Iterator[QuadTerms]:
        """Every quad (of ``graph`` when given)."""
        ...

    def count(self, graph: str | None = None) -> int: ...

    def dump(self, fmt: str) -> bytes:
        """Everything as ``nquads`` or ``trig`` (the explainability graph alone as ``turtle`` or
        ``ntriples``)."""
        ...

    def to_dataset(self) -> rdflib.Dataset: ...

    def close(self) -> None: ...


def open_private(path: Path, *, append: bool = False) -> BinaryIO:
    """A file only its owner can read (``0600``), for data set aside next to a store (spans that
    could not be stored, quads a server refused): never through a symbolic link, and, unless
    ``append``, never one that exists already (:class:`FileExistsError`)."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_APPEND if append else os.O_EXCL
    return os.fdopen(os.open(path, flags, 0o600), "ab" if append else "wb")
