"""A dataset on a SPARQL 1.1 server as the store: ``OTEL_PROV_STORE=http://HOST:PORT[/DATASET]``.

The URL names a dataset; the endpoints are derived from it for the kind of server (:data:`SERVERS`),
detected when the store is opened (the ``Server`` / ``Fuseki-Request-Id`` header of a first query)
or set with ``OTEL_PROV_STORE_SERVER``:

==========  ==========================  ==========================  ==================================
server      queries (SPARQL protocol)   removals (SPARQL update)    additions, and reading a graph
==========  ==========================  ==========================  ==================================
oxigraph    ``URL/query``               ``URL/update``              N-Quads ``POST URL/store``; GSP
                                                                    ``GET URL/store?graph=IRI``
fuseki      ``URL/query``               ``URL/update``              N-Quads ``POST URL`` (the dataset);
                                                                    GSP ``GET URL/get?graph=IRI``
sparql      ``URL``                     ``URL``                     ``INSERT DATA``; ``CONSTRUCT``
==========  ==========================  ==========================  ==================================

N-Quads go to the dataset only, never to ``?graph=``: Fuseki answers 201 to N-Quads POSTed to a graph
and stores nothing (collector-config/scale/NOTES.md).  Writes come from the ingest writer (one
thread, merged batches, retried with back-off while the server fails); a write larger than
:data:`MAX_POST_BYTES` is sent in parts.  Resending is harmless (a dataset is a set of quads), which
is what makes the writer's retries and the scale-out path's redeliveries safe.  A part the server
refuses as bad data (HTTP 400, or 413 too large) is halved until the quads it refuses are found:
those are saved to ``otel-prov-rejected-PID.nq`` in the local directory and logged, the rest is
stored, so one bad quad never blocks the writer.

Reads are SPARQL queries (JSON results) with our prefixes declared, and Graph Store Protocol GETs
(N-Triples / N-Quads, parsed by pyoxigraph) for exports.  A user's query (:meth:`run_query`) sees
the union of all graphs as its default graph, as on the embedded store: the protocol's
``default-graph-uri`` and ``named-graph-uri`` for every graph of the dataset but the session index's.

The session index (what ``list`` reads on a big store) is kept in the dataset, in a graph of its own
that exports, counts and users' queries leave out: :mod:`.server_sessions`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyoxigraph
import rdflib

from ..errors import StoreError, StoreNotFound
from ..model.quads import Quad, dataset_from_nquads, delete_data, in_parts, insert_data, nquads
from ..model.vocab import GRAPH_RETRIEVAL, PREFIXES
from .base import AUTO_SERVER, SERVER_KINDS, QuadTerms, QueryResult, Remote, Row, StoreSpec, open_private
from .http import HttpConnection, HttpStatusError
from .server_sessions import GRAPH_SESSIONS, RowKeeper, ServerListing, erasing, marks, new_stamp
from .sessions import keys_of
from .terms import from_json, from_quad, from_triple

logger = logging.getLogger(__name__)

MAX_POST_BYTES = 8 * 1024 * 1024
"""A write larger than this is sent in parts (cut at line ends): one request stays well inside the
timeout, and a proxy's body limit is rarely below it."""
MAX_UPDATE_QUADS = 5000
"""Quads in one ``INSERT DATA`` / ``DELETE DATA`` request."""

_N_QUADS = "application/n-quads"
_N_TRIPLES = "application/n-triples"
_RESULTS_JSON = "application/sparql-results+json"
_PROLOGUE = " ".join(f"PREFIX {prefix}: <{namespace}>" for prefix, namespace in PREFIXES.items()) + " "
"""Our prefixes, on the query's first line (so the user's line numbers stay right)."""
_SESSIONS_NODE = pyoxigraph.NamedNode(GRAPH_SESSIONS)
_POSITION = re.compile(r"(error at 1:|line 1, column )(\d+)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Server:
    """Where a kind of server takes each request, relative to the dataset URL."""

    name: str
    query: str
    update: str
    quads: str | None
    """Where N-Quads of the dataset are POSTed (None: ``INSERT DATA`` instead)."""
    graph_store: str | None
    """The Graph Store Protocol endpoint (``GET ?graph=IRI``; the whole dataset without it), or None."""
    quads_params: dict[str, str] = field(default_factory=dict)


OXIGRAPH = Server("oxigraph", "/query", "/update", "/store", "/store",
                  # lenient: skip IRI validation, as the embedded store does (our quads are valid)
                  quads_params={"lenient": ""})
FUSEKI = Server("fuseki", "/query", "/update", "", "/get")  # /get: the read-only GSP endpoint
SPARQL = Server("sparql", "", "", None, None)
BULK_PARAMS = {"no_transaction": "", "lenient": ""}
"""Oxigraph's bulk loader (OTEL_PROV_STORE_BULK_LOAD): several times faster; not atomic, so a failed
write may leave part of itself, which the retry completes (quads are a set), and readers may see a
write half done."""
SERVERS = {server.name: server for server in (OXIGRAPH, FUSEKI, SPARQL)}
"""The kinds of server ``OTEL_PROV_STORE_SERVER`` names (``auto``: detected): ``base.SERVER_KINDS``."""
assert tuple(SERVERS) == SERVER_KINDS


class SparqlStore:
    """A dataset on a SPARQL server: a :class:`~otel_prov.stores.base.WriteStore` (from the ingest
    writer's thread) and a :class:`~otel_prov.stores.base.ReadStore`."""

    def __init__(self, url: str, server: Server, http: HttpConnection, *,
                 local_dir: Path | None = None) -> None:
        self.url = url
        self.server = server
        self.http = http
        self.local_dir = local_dir
        self.rejected = 0
        """Quads the server refused as bad data (saved to :attr:`rejected_file`)."""
        self.rejected_file: Path | None = None
        self._reject_lock = threading.Lock()
        self.keeper: RowKeeper | None = None
        """A writer's thread keeping the session index's rows (:mod:`.server_sessions`)."""

    def __str__(self) -> str:
        return f"{self.url} ({self.server.name})"

    def endpoint(self, path: str | None) -> str:
        return self.url + (path or "")

    # -- writing --------------------------------------------------------------------------------

    def add(self, data: bytes, count: int) -> None:
        """Store N-Quads (every quad in a named graph, as the mapping makes them), each part followed
        by the marks of the sessions it touches (:mod:`.server_sessions`)."""
        stamp, touched = new_stamp(), set()
        for part in in_parts([data], MAX_POST_BYTES):
            marked, keys = marks(part, stamp)
            self._add_part(part + marked)
            touched |= keys
        if self.keeper is not None:
            self.keeper.noted(touched)

    def _add_part(self, part: bytes) -> None:
        try:
            if self.server.quads is not None:
                self.http.request("POST", self.endpoint(self.server.quads), body=part,
                                  headers={"Content-Type": _N_QUADS}, params=self.server.quads_params,
                                  what="storing quads")
            else:
                for update in _updates(insert_data, _parse_quads(part)):
                    self._update(update, "storing quads")
        except HttpStatusError as exc:
            if exc.status not in (400, 413):
                raise
            self._bisect(part, exc)

    def _bisect(self, part: bytes, error: HttpStatusError) -> None:
        """The server refused ``part`` as bad (400) or too large (413): store each half on its own,
        down to the single quads it refuses, which are saved and logged."""
        lines = part.splitlines(keepends=True)
        if len(lines) <= 1:
            self._reject(part, error)
            return
        middle = len(lines) // 2
        for half in (b"".join(lines[:middle]), b"".join(lines[middle:])):
            self._add_part(half)

    def _reject(self, line: bytes, error: HttpStatusError) -> None:
        with self._reject_lock:
            directory = self.local_dir or Path.cwd()
            path = directory / f"otel-prov-rejected-{os.getpid()}.nq"
            try:
                directory.mkdir(parents=True, exist_ok=True)
                with open_private(path, append=True) as handle:
                    handle.write(line if line.endswith(b"\n") else line + b"\n")
            except OSError as exc:  # not saved: keep it in the writer's queue (retried, rescued at close)
                raise StoreError(f"{self.url} refused a quad ({error.detail[:300] or error.status}) and it "
                                 f"could not be saved to {path}: {exc.strerror or exc}") from exc
            self.rejected += 1
            self.rejected_file = path
            if self.rejected == 1 or self.rejected % 100 == 0:
                logger.error("otel-prov: %s refused %d quad(s) so far as bad data, kept in %s (the others "
                             "are stored); the last: HTTP %d %s", self.url, self.rejected, path, error.status,
                             error.detail[:300])

    def remove(self, quads: Sequence[Quad]) -> None:
        """Remove quads; the rows of the sessions they are of go in the same update, and their
        sessions are marked (:mod:`.server_sessions`)."""
        touched: set[str] = set()
        for start in range(0, len(quads), MAX_UPDATE_QUADS):
            touched |= self._remove_part(quads[start:start + MAX_UPDATE_QUADS])
        if self.keeper is not None:
            self.keeper.noted(touched)

    def _remove_part(self, quads: Sequence[Quad]) -> set[str]:
        """``DELETE DATA``; one the server refuses as bad is halved down to the quads it cannot read,
        which cannot be in the store either (the writer would otherwise retry it for ever)."""
        keys = keys_of([nquads(quads)])
        try:
            self._update(delete_data(quads) + erasing(keys, new_stamp()), "removing quads")
        except HttpStatusError as exc:
            if exc.status not in (400, 413):
                raise
            if len(quads) > 1:
                return self._remove_part(quads[:len(quads) // 2]) | self._remove_part(quads[len(quads) // 2:])
            logger.error("otel-prov: %s refused to remove a quad it cannot read (so it does not hold it): "
                         "HTTP %d %s", self.url, exc.status, exc.detail[:300])
        return keys

    def update(self, update: str, what: str) -> None:
        """A SPARQL update (one transaction on the server)."""
        self._update(update, what)

    def _update(self, update: str, what: str) -> None:
        self.http.request("POST", self.endpoint(self.server.update), body=update.encode("utf-8"),
                          headers={"Content-Type": "application/sparql-update"}, what=what)

    def check_writable(self) -> None:
        """An empty write: refused credentials or a read-only dataset fail here, at open."""
        what = f"checking that {self.url} can be written"
        if self.server.quads is not None:
            self.http.request("POST", self.endpoint(self.server.quads), body=b"",
                              headers={"Content-Type": _N_QUADS}, params=self.server.quads_params,
                              what=what)
        else:
            self._update("INSERT DATA { }", what)

    # -- reading --------------------------------------------------------------------------------

    def _query(self, sparql: str, accept: str, *, union: bool = False, stream: bool = False,
               what: str = "querying") -> Any:
        fields: dict[str, str | list[str]] = {"query": _PROLOGUE + sparql}
        if union:  # every graph named (not the server's union graph: the session index's is left out)
            graphs = self._graph_names()
            fields["default-graph-uri"] = graphs
            fields["named-graph-uri"] = graphs
        return self.http.request("POST", self.endpoint(self.server.query), fields=fields,
                                 headers={"Accept": accept}, stream=stream, what=what)

    def _json(self, sparql: str, what: str = "querying") -> dict[str, Any]:
        response = self._query(sparql, _RESULTS_JSON, what=what)
        return _decode_json(response.data, self.url)

    def _graph_names(self) -> list[str]:
        """The dataset's graphs, but the session index's."""
        rows = self._json("SELECT DISTINCT ?g WHERE { GRAPH ?g { } }", "listing the graphs")
        return [b["g"]["value"] for b in rows["results"]["bindings"]
                if b.get("g", {}).get("type") == "uri" and b["g"]["value"] != GRAPH_SESSIONS]

    def session_listing(self) -> ServerListing | None:
        """The session index's listing as this reader sees it now (None: listed from the graph)."""
        return ServerListing.open(self)

    def select(self, sparql: str) -> list[Row]:
        return _rows(self._json(sparql))[1]

    def ask(self, sparql: str) -> bool:
        return bool(self._json(sparql).get("boolean"))

    def run_query(self, sparql: str) -> QueryResult:
        """Raises :class:`SyntaxError` on a syntax error, :class:`StoreError` when evaluation fails."""
        try:
            response = self._query(sparql, f"{_RESULTS_JSON}, {_N_TRIPLES};q=0.9", union=True,
                                   what="running the query")
        except HttpStatusError as exc:
            if exc.status == 400:
                raise SyntaxError(_user_position(exc.detail) or "the server refused the query") from None
            raise StoreError(f"the query failed: {exc}") from None
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind == _N_TRIPLES:
            triples = [from_triple(t)
                       for t in pyoxigraph.parse(input=response.data, format=pyoxigraph.RdfFormat.N_TRIPLES)]
            return QueryResult("graph", triples=triples)
        document = _decode_json(response.data, self.url)
        if "boolean" in document:
            return QueryResult("ask", boolean=bool(document["boolean"]))
        names, rows = _rows(document)
        return QueryResult("select", variables=names, rows=rows)

    def quads(self, graph: str | None = None) -> Iterator[QuadTerms]:
        for quad in self._parsed_quads(graph):
            yield from_quad(quad)

    def _parsed_quads(self, graph: str | None) -> Iterator[pyoxigraph.Quad]:
        """Every quad (of ``graph``), streamed from the server and parsed by pyoxigraph."""
        if self.server.graph_store is None:  # any SPARQL server: CONSTRUCT each graph
            for name in [graph] if graph is not None else self._graph_names():
                node = pyoxigraph.NamedNode(name)
                response = self._query(f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH <{name}> {{ ?s ?p ?o }} }}",
                                       _N_TRIPLES, stream=True, what="reading a graph")
                for t in _parse_response(response, pyoxigraph.RdfFormat.N_TRIPLES):
                    yield pyoxigraph.Quad(t.subject, t.predicate, t.object, node)
            return
        url, fmt = self.endpoint(self.server.graph_store), pyoxigraph.RdfFormat.N_QUADS
        fields = {}
        if graph is not None:
            fields, fmt = {"graph": graph}, pyoxigraph.RdfFormat.N_TRIPLES
        try:
            response = self.http.request("GET", url, params=fields, headers={"Accept": fmt.media_type},
                                         stream=True, what="reading the store")
        except HttpStatusError as exc:
            if exc.status == 404 and graph is not None:  # no such graph: nothing in it
                return
            raise
        for quad in _parse_response(response, fmt):
            if graph is None and quad.graph_name == _SESSIONS_NODE:
                continue
            if graph is not None:
                quad = pyoxigraph.Quad(quad.subject, quad.predicate, quad.object, pyoxigraph.NamedNode(graph))
            yield quad

    def count(self, graph: str | None = None) -> int:
        where = (f"GRAPH <{graph}> {{ ?s ?p ?o }}" if graph is not None
                 else f"GRAPH ?g {{ ?s ?p ?o }} FILTER(?g != <{GRAPH_SESSIONS}>)")
        return int(self.select(f"SELECT (COUNT(*) AS ?n) WHERE {{ {where} }}")[0]["n"].value)

    def dump(self, fmt: str) -> bytes:
        if fmt in ("turtle", "ntriples"):
            rdf_format = pyoxigraph.RdfFormat.TURTLE if fmt == "turtle" else pyoxigraph.RdfFormat.N_TRIPLES
            items: Any = (pyoxigraph.Triple(q.subject, q.predicate, q.object)
                          for q in self._parsed_quads(GRAPH_RETRIEVAL))
        else:
            rdf_format = pyoxigraph.RdfFormat.TRIG if fmt == "trig" else pyoxigraph.RdfFormat.N_QUADS
            items = self._parsed_quads(None)
        return pyoxigraph.serialize(items, format=rdf_format, prefixes=PREFIXES) or b""

    def to_dataset(self) -> rdflib.Dataset:
        return dataset_from_nquads(self.dump("nquads"))

    def close(self) -> None:
        if self.keeper is not None:
            self.keeper.close(5.0)  # also on a quick close: a thread outliving its writer holds a connection
        self.http.close()


# -- helpers --------------------------------------------------------------------------------------


def _parse_quads(data: bytes) -> list[Quad]:
    """N-Quads as quads of N-Triples terms (pyoxigraph writes each term back in canonical form)."""
    quads = []
    for q in pyoxigraph.parse(input=data, format=pyoxigraph.RdfFormat.N_QUADS, lenient=True):
        graph = "" if isinstance(q.graph_name, pyoxigraph.DefaultGraph) else str(q.graph_name)
        quads.append((str(q.subject), str(q.predicate), str(q.object), graph))
    return quads


def _updates(build: Any, quads: Sequence[Quad]) -> Iterator[str]:
    for start in range(0, len(quads), MAX_UPDATE_QUADS):
        yield build(quads[start:start + MAX_UPDATE_QUADS])


def _parse_response(response: Any, fmt: pyoxigraph.RdfFormat) -> Iterator[pyoxigraph.Quad]:
    try:
        yield from pyoxigraph.parse(input=response, format=fmt, lenient=True)
    except SyntaxError as exc:
        raise StoreError(f"the server's answer could not be read as {fmt.name}: {exc}") from None
    finally:
        response.release_conn()


def _decode_json(data: bytes, url: str) -> dict[str, Any]:
    try:
        document = json.loads(data)
    except ValueError as exc:
        raise StoreError(f"{url} did not answer with SPARQL JSON results ({exc}); is it a SPARQL "
                         "endpoint? (OTEL_PROV_STORE_SERVER)") from None
    if not isinstance(document, dict):
        raise StoreError(f"{url} did not answer with SPARQL JSON results")
    return document


def _rows(document: dict[str, Any]) -> tuple[list[str], list[Row]]:
    names = list(document.get("head", {}).get("vars", []))
    rows = [{name: from_json(value) for name, value in binding.items()}
            for binding in document.get("results", {}).get("bindings", [])]
    return names, rows


def _user_position(message: str) -> str:
    """A syntax error's message with the column of line 1 counted from the user's text (our
    prefixes were put before it)."""
    return _POSITION.sub(lambda m: f"{m.group(1)}{max(1, int(m.group(2)) - len(_PROLOGUE))}", message)


# -- opening --------------------------------------------------------------------------------------


def _open(spec: StoreSpec) -> SparqlStore:
    url = str(spec)
    remote = spec.remote or Remote()
    http = HttpConnection(url, remote)
    try:
        server = detect(url, http) if remote.server == AUTO_SERVER else SERVERS[remote.server]
        if remote.bulk_load:
            if server.name != OXIGRAPH.name:
                raise StoreError(f"OTEL_PROV_STORE_BULK_LOAD is for the Oxigraph server; {url} is "
                                 f"{server.name}: unset it")
            server = replace(server, quads_params=BULK_PARAMS)
        store = SparqlStore(url, server, http, local_dir=remote.local_dir)
        store.ask("ASK { }")  # readable: the endpoint answers and the credentials are accepted
    except HttpStatusError as exc:
        http.close()
        if exc.status == 404:
            raise StoreNotFound(f"no SPARQL dataset at {url}: {exc}; the URL names a dataset: http://HOST:7878"
                                " for Oxigraph, http://HOST:3030/DATASET for Fuseki") from None
        raise
    except BaseException:
        http.close()
        raise
    return store


def detect(url: str, http: HttpConnection) -> Server:
    """The kind of server at ``url``: asks ``URL/query``, then ``URL`` itself."""
    what = f"opening the SPARQL store {url}"
    fields = {"query": "ASK { }"}
    try:
        response = http.request("POST", url + "/query", fields=fields, headers={"Accept": _RESULTS_JSON},
                                what=what)
    except HttpStatusError as first:
        if first.status in (401, 403):
            raise
        try:
            http.request("POST", url, fields=fields, headers={"Accept": _RESULTS_JSON}, what=what)
        except HttpStatusError as second:
            if second.status in (401, 403):
                raise
            raise StoreNotFound(
                f"no SPARQL dataset at {url}: {url}/query answered HTTP {first.status} and {url} HTTP "
                f"{second.status}; the URL names a dataset: http://HOST:7878 for Oxigraph, "
                "http://HOST:3030/DATASET for Fuseki") from None
        return SPARQL
    software = response.headers.get("Server", "").lower()
    if software.startswith("oxigraph"):
        return OXIGRAPH
    if "Fuseki-Request-Id" in response.headers or "fuseki" in software:
        return FUSEKI
    return replace(SPARQL, query="/query", update="/update")


def open_for_writing(spec: StoreSpec, *, quick_close: bool = False) -> SparqlStore:
    """Open, and check that the store takes writes (credentials, a read-only dataset);
    ``quick_close`` changes nothing (the server keeps what was written; closing waits up to 5 s for
    the session index's rows of what this writer marked)."""
    store = _open(spec)
    try:
        store.check_writable()
    except BaseException:
        store.close()
        raise
    store.keeper = RowKeeper(lambda: _open(spec), str(store))
    store.keeper.start()
    logger.info("otel-prov: writing to the SPARQL store %s", store)
    return store


def open_for_reading(spec: StoreSpec) -> SparqlStore:
    return _open(spec)

