"""The web view's pages and JSON API (Starlette, Jinja2 with autoescape on).

Read-only: every request opens the store through its read protocol
(:func:`otel_prov.stores.open_for_reading`, which never creates a store) and closes it before
answering, so new sessions show up while agents run and no lock is kept between requests.  Every
text a model or a tool wrote is escaped (Jinja2 autoescape) after control characters are made
visible (:func:`otel_prov.render.text.visible`); the Content-Security-Policy allows no inline
script besides.

Pages: ``/`` (sessions), ``/sessions/{iri}`` (one session; ``?format=`` downloads it),
``/diff?a=&b=`` (two sessions side by side), ``/trace/{trace_id}`` (a Jaeger trace id -> its
session), ``/sparql``.  JSON: ``/api/...`` (docs/ui.md).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import re
import shlex
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

import jinja2
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from ..errors import StoreError, StoreNotFound
from ..model.iris import blob_iri
from ..model.vocab import GRAPH_RETRIEVAL, NT, PREFIXES
from ..read.blobs import Resolver, notes_of
from ..read.diff import EQUAL, TraceDiff, diff
from ..read.graph import step_summary, step_title
from ..read.lineage import Lineage
from ..read.model import (
    SORTS,
    STATUS_NAMES,
    TYPES,
    SessionFilter,
    TraceNotFound,
    TraceStep,
    check_bound,
    format_ms,
)
from ..read.queries import QueryRefused, check_query, syntax_message
from ..read.reader import DASHBOARD_SESSIONS, Dashboard, TraceReader, dashboard
from ..render import FORMAT_ALIASES, TRACE_FORMATS, Shown, render_trace
from ..render.data import diff_dict, session_dicts, sessions_csv, trace_dict
from ..render.lineage import to_text as lineage_text
from ..render.links import jaeger_link
from ..render.results import render_result
from ..render.text import (
    HIDDEN,
    MEASURE_LABELS,
    both_ranges,
    chunk_text,
    delta_text,
    diff_label,
    divergence_text,
    downstream_text,
    pair_title,
    question_text,
    term,
    visible,
)
from ..render.timeline import step_anchor, timeline
from ..serve.guards import HOST_REFUSED, HOST_REFUSED_STATUS, bearer_matches, host_acceptable, single
from ..settings import UiSettings, is_loopback
from ..stores import ReadStore, default_dir, open_blobs, open_for_reading
from ..stores.base import QueryResult
from . import isolated

logger = logging.getLogger(__name__)

PAGE_SIZE = 50
"""Sessions on one page of the list."""
STEPS_PER_PAGE = 500
"""Steps on one page of a session (a long agent run is paged)."""
PICTURE_MAX_NODES = 400
"""Above this many nodes the picture is not drawn in the page (it stays downloadable)."""
DIFF_SHOWN = 500
"""Entries that differ shown on the comparison page (the rest: its JSON, or ``otel-prov diff``)."""
MAX_QUERIES = 2
"""SPARQL queries running at once (one that outlives its timeout keeps its place until it ends)."""
MAX_QUERY_BYTES = 1 << 20
"""A posted query larger than this is not read."""
MAX_OFFSET = 1 << 62
"""The largest ``offset`` asked of the store (SPARQL engines read ``OFFSET`` as a 64-bit number)."""
DOWNLOADS = tuple(TRACE_FORMATS)
"""Every format ``show`` has, each linked on the session page."""
COOKIE = "otel_prov_ui"
EXAMPLE_QUERY = """SELECT ?session ?question ?time WHERE {
  ?session a tg:Question ; tg:query ?question .
  OPTIONAL { ?session prov:startedAtTime|prov:generatedAtTime ?time }
} ORDER BY DESC(?time) LIMIT 20"""
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; "
                               "form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


LINEAGE_DEPTH = 40
"""Relations deep the session page's "Why this answer" goes (``otel-prov explain`` goes all the way)."""


def session_url(iri: str) -> str:
    """The page of a session (any IRI: percent signs, ``#`` and ``?`` are escaped)."""
    return "/sessions/" + quote(iri, safe=":/")


def _shown(text: Any) -> str:
    """Model or tool text for a page: control characters visible (escaping is Jinja2's)."""
    return visible("" if text is None else str(text))


def _when(value: str | None) -> str:
    """``2026-11-30T10:21:06.024003318Z`` as ``2026-11-30 10:21:06 UTC``."""
    if not value:
        return ""
    head = value.rstrip("Z").partition(".")[0].replace("T", " ")
    return f"{head} UTC" if value.endswith("Z") else head


def _pretty(arguments: str | None) -> str:
    if not arguments:
        return ""
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


def _templates() -> Jinja2Templates:
    # autoescape=True for every template whatever its name (Jinja2Templates(directory=...) would
    # escape only .html/.htm/.xml names).
    env = jinja2.Environment(loader=jinja2.PackageLoader("otel_prov.web", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(anchor=step_anchor, shown=_shown, when=_when, pretty=_pretty, session_url=session_url,
                       title=step_title, summary=step_summary, term=term, shell=shlex.quote, ms=format_ms)
    env.filters.update(label=diff_label, pair_title=pair_title)
    env.globals.update(hidden=HIDDEN, question_text=question_text, chunk_text=chunk_text,
                       both_ranges=both_ranges, delta_text=delta_text, measure_labels=MEASURE_LABELS,
                       blob_notes=lambda step: notes_of(step.values.get("byReference", [])))
    return Jinja2Templates(env=env)


class View:
    """The pages and the API over one store (``config.store``), opened afresh for each request."""

    def __init__(self, config: UiSettings) -> None:
        self.config = config
        self.templates = _templates()
        self.queries = threading.BoundedSemaphore(MAX_QUERIES)
        self.cookie = hashlib.sha256(f"otel-prov-ui:{config.token}".encode()).hexdigest() \
            if config.token else ""

    # -- plumbing ---------------------------------------------------------------------------------

    @contextmanager
    def store(self) -> Iterator[ReadStore]:
        opened = open_for_reading(self.config.store)
        try:
            yield opened
        finally:
            opened.close()

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        context.setdefault("store_name", str(self.config.store))
        context.setdefault("nav", "")
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def problem(self, request: Request, status: int, title: str, message: str, *,
                api: bool = False, **extra: Any) -> Response:
        if api:
            return JSONResponse({"error": message}, status_code=status)
        return self.page(request, "error.html", status, title=title, message=message, **extra)

    # -- the list ---------------------------------------------------------------------------------

    def _filters(self, request: Request) -> tuple[dict[str, Any], dict[str, Any]]:
        """The request's filters as given, and as :meth:`TraceReader.sessions` takes them;
        :class:`BadParameter` for a value that means nothing (as the CLI refuses it)."""
        params = request.query_params
        wanted = {name: params.get(name, "") for name in FILTERS}
        for name in ("type", "status", "sort"):  # names, whatever their case (the list shows "Agent")
            wanted[name] = wanted[name].lower()
        if wanted["type"] and wanted["type"] not in TYPES:
            raise BadParameter(f"type={wanted['type'][:40]!r}: one of {', '.join(sorted(TYPES))}")
        if wanted["sort"] and wanted["sort"] not in SORTS:
            raise BadParameter(f"sort={wanted['sort'][:40]!r}: one of {', '.join(SORTS)}")
        if wanted["status"] and wanted["status"] not in STATUS_NAMES:
            raise BadParameter(f"status={wanted['status'][:40]!r}: one of {', '.join(STATUSES)}")
        for name in ("since", "until"):
            try:
                check_bound(name, wanted[name])
            except ValueError as exc:
                raise BadParameter(str(exc)) from None
        where = SessionFilter(since=wanted["since"] or None, until=wanted["until"] or None,
                              text=wanted["q"].strip() or None,
                              status=STATUS_NAMES.get(wanted["status"]),
                              tool=wanted["tool"] or None, agent=wanted["agent"] or None,
                              model=wanted["model"] or None, service=wanted["service"] or None,
                              sort=wanted["sort"] or "time")
        return wanted, {"kind": TYPES.get(wanted["type"]),
                        "collection": wanted["collection"] or None, "where": where}

    def list_page(self, request: Request) -> Response:
        # a parameter that is not a filter (a misspelt one: ?text= for ?q=) is named on the page
        ignored = sorted(set(request.query_params) - LIST_PAGE_PARAMETERS)
        ignored = ignored[:10] + (["..."] if len(ignored) > 10 else [])
        try:
            wanted, filters = self._filters(request)
            page = _number(request, "page", 1, 1, 1 << 30)
        except BadParameter as exc:
            return self.problem(request, 400, "Bad filter", str(exc))
        try:
            with self.store() as store:
                reader = TraceReader(store)
                stamp = reader.stamp()  # before what this page shows: live refresh starts from it
                total = reader.count_sessions(**filters)  # (a server's index: every session's, the stamp's)
                last = max(1, math.ceil(total / PAGE_SIZE))
                page = min(max(page, 1), last)
                shown = reader.sessions(**filters, limit=PAGE_SIZE, offset=(page - 1) * PAGE_SIZE)
                all_count = total if not any(wanted.values()) else reader.count_sessions()
                collections = reader.collections()
        except StoreNotFound as exc:
            empty = dict.fromkeys(FILTERS, "")
            return self.page(request, "list.html", nav="sessions", missing=str(exc), rows=[], total=0,
                             all_count=0, wanted=empty, collections=[], types=TYPES, pages=None,
                             stamp="none", ignored=ignored, filters=FILTERS)
        query = {k: v for k, v in wanted.items() if v}

        def link(n: int) -> str:
            return "/?" + urlencode({**query, "page": n})

        pages = {"page": page, "last": last, "prev": link(page - 1) if page > 1 else None,
                 "next": link(page + 1) if page < last else None}
        return self.page(request, "list.html", nav="sessions", missing=None, rows=shown, total=total,
                         all_count=all_count, wanted=wanted, collections=collections, types=TYPES,
                         pages=pages, first=(page - 1) * PAGE_SIZE, stamp=stamp, ignored=ignored,
                         filters=FILTERS)

    def api_sessions(self, request: Request) -> Response:
        try:
            unknown = sorted(set(request.query_params) - API_SESSIONS_PARAMETERS)
            if unknown:  # not ignored: a misspelt filter would list every session as if it matched
                raise BadParameter(f"unknown parameter {unknown[0][:40]!r}: the filters are "
                                   f"{', '.join(FILTERS)} (q: words the session holds); also offset, "
                                   "limit, format")
            _, filters = self._filters(request)
            offset = _number(request, "offset", 0, 0, MAX_OFFSET, cap=True)
            limit = _number(request, "limit", PAGE_SIZE, 1, 1000)
        except BadParameter as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        try:
            with self.store() as store:
                reader = TraceReader(store)
                rows = reader.sessions(**filters, limit=limit, offset=offset)
                total = reader.count_sessions(**filters)
        except StoreNotFound as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        fmt = request.query_params.get("format", "json")
        if fmt == "csv":  # the list as a spreadsheet reads it
            return Response(sessions_csv(rows), media_type="text/csv; charset=utf-8",
                            headers={"Content-Disposition": 'attachment; filename="sessions.csv"'})
        if fmt != "json":
            return JSONResponse({"error": f"format={fmt[:40]!r}: json or csv"}, status_code=400)
        return JSONResponse({"sessions": session_dicts(rows), "total": total, "offset": offset,
                             "limit": limit})

    def _dashboard(self, request: Request) -> Dashboard:
        _, filters = self._filters(request)
        with self.store() as store:
            return dashboard(TraceReader(store), collection=filters["collection"], where=filters["where"])

    def dashboard_page(self, request: Request) -> Response:
        try:
            wanted, _ = self._filters(request)
            board = self._dashboard(request)
        except BadParameter as exc:
            return self.problem(request, 400, "Bad filter", str(exc))
        except StoreNotFound as exc:
            return self.problem(request, 404, "No store yet", str(exc))
        busiest = max((n for _, n, _ in board.by_day), default=1)
        query = urlencode({k: v for k, v in wanted.items() if v})
        return self.page(request, "dashboard.html", nav="dashboard", board=board, wanted=wanted,
                         busiest=busiest, query=query, limit=DASHBOARD_SESSIONS)

    def api_dashboard(self, request: Request) -> Response:
        try:
            board = self._dashboard(request)
        except BadParameter as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except StoreNotFound as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return JSONResponse({
            "sessions": board.sessions, "byStatus": board.by_status,
            "byDay": [{"day": d, "sessions": n, "failedOrUnfinished": bad} for d, n, bad in board.by_day],
            "tools": [{"tool": t, "calls": n} for t, n in board.tools],
            "models": [{"model": m, "calls": n, "inputTokens": i, "outputTokens": o}
                       for m, n, i, o in board.models],
            "slowest": session_dicts(board.slowest)})

    def api_changes(self, request: Request) -> Response:
        """A stamp that changes whenever the graph does (what the pages poll to refresh)."""
        try:
            with self.store() as store:
                stamp = TraceReader(store).stamp()
        except StoreNotFound:
            stamp = "none"
        return JSONResponse({"stamp": stamp})

    # -- one session ------------------------------------------------------------------------------

    def _read(self, iri: str) -> Shown:
        with self.store() as store:
            trace, triples = TraceReader(store).trace(iri)
        return Shown(trace, triples, self.config.jaeger_url)

    def blob(self, request: Request) -> Response:
        """A large value stored by reference, whole, as text (only a blob the graph refers to, and only
        while its bytes still hash to its name)."""
        digest = request.path_params["digest"]
        if not re.fullmatch(r"[0-9a-f]{64}", digest):
            return PlainTextResponse("not a SHA-256 (64 lowercase hex digits)\n", status_code=404)
        try:
            with self.store() as store:
                named = store.ask(f"ASK {{ GRAPH <{GRAPH_RETRIEVAL}> "
                                  f"{{ ?x {NT.blob} <{blob_iri(digest)}> }} }}")
        except StoreNotFound as exc:
            return PlainTextResponse(f"{exc}\n", status_code=404)
        if not named:
            return PlainTextResponse(f"no session refers to blob sha256:{digest}\n", status_code=404)
        where = default_dir(self.config.store, self.config.blob_dir)
        resolver = Resolver(open_blobs(where) if where is not None else None)
        text = resolver.text(digest)
        if text is None:
            return PlainTextResponse(f"blob sha256:{digest} is {resolver.problems[digest]}\n",
                                     status_code=410)
        return PlainTextResponse(text, media_type="text/plain; charset=utf-8")

    def session_page(self, request: Request) -> Response:
        iri = request.path_params["iri"]
        fmt = request.query_params.get("format")
        if fmt is not None:
            fmt = FORMAT_ALIASES.get(fmt.lower(), fmt.lower())  # ?format=ttl, as the CLI takes it
        if fmt is not None and fmt not in TRACE_FORMATS:
            return self.problem(request, 400, "Unknown format",
                                f"unknown format {fmt[:40]!r}: one of {', '.join(TRACE_FORMATS)} (or ttl, "
                                "json-ld)")
        try:
            shown = self._read(iri)
        except (TraceNotFound, StoreNotFound) as exc:
            return self.problem(request, 404, "No such session", str(exc))
        if shown.trace.id != iri and fmt is None:
            return RedirectResponse(session_url(shown.trace.id), status_code=303)
        if fmt is not None:
            spec = TRACE_FORMATS[fmt]
            name = shown.trace.id.rsplit(":", 1)[-1].replace("/", "-") + spec.suffix
            return Response(render_trace(fmt, shown), media_type=spec.media_type,
                            headers={"Content-Disposition": f'attachment; filename="{name}"'})
        trace = shown.trace
        first = max(_int(request.query_params.get("steps"), 0), 0)
        steps = trace.steps[first:first + STEPS_PER_PAGE]
        paging = None
        if len(trace.steps) > STEPS_PER_PAGE:
            base = session_url(trace.id)
            paging = {"first": first + 1, "last": first + len(steps), "total": len(trace.steps),
                      "prev": f"{base}?steps={max(first - STEPS_PER_PAGE, 0)}" if first > 0 else None,
                      "next": f"{base}?steps={first + STEPS_PER_PAGE}"
                      if first + STEPS_PER_PAGE < len(trace.steps) else None}
        nodes = len(shown.graph.nodes)
        picture = Markup(render_trace("svg", shown)) if nodes <= PICTURE_MAX_NODES else None  # noqa: S704 - our SVG escapes every text
        downloads = [(f, f"{session_url(trace.id)}?format={f}", TRACE_FORMATS[f].suffix) for f in DOWNLOADS]
        lineage = Lineage(trace, shown.triples)
        answer = lineage.answer_of(trace.id)
        tree = lineage.tree(answer, depth=LINEAGE_DEPTH) if answer is not None else None
        why = lineage_text(tree, "") if tree is not None else None
        deeper = tree is not None and any(node.cut for node in tree.walk())
        return self.page(request, "session.html", trace=trace, steps=steps, paging=paging, picture=picture,
                         why=why.lstrip("\n") if why else None, deeper=deeper, lineage_depth=LINEAGE_DEPTH,
                         nodes=nodes, jaeger=jaeger_link(self.config.jaeger_url, trace.trace_id),
                         downloads=downloads, is_step=_is_analysis, bars=timeline(trace))

    def api_session(self, request: Request) -> Response:
        try:
            shown = self._read(request.path_params["iri"])
        except (TraceNotFound, StoreNotFound) as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return JSONResponse(trace_dict(shown.trace, self.config.jaeger_url))

    def _session_of_trace(self, ref: str) -> tuple[str, str]:
        """The whole trace id that ``ref`` names (itself, or a unique prefix of it, as the CLI takes
        it), and the session recorded from that trace."""
        with self.store() as store:
            reader = TraceReader(store)
            trace_id = reader.trace_id_of(ref)
            return trace_id, reader.session_of_trace(trace_id)

    def trace_page(self, request: Request) -> Response:
        trace_id = request.path_params["trace_id"]
        try:
            _, iri = self._session_of_trace(trace_id)
        except (TraceNotFound, StoreNotFound) as exc:
            return self.problem(request, 404, "No session for this trace", str(exc), trace_id=trace_id)
        return RedirectResponse(session_url(iri), status_code=303)

    def api_trace(self, request: Request) -> Response:
        try:
            trace_id, iri = self._session_of_trace(request.path_params["trace_id"])
        except (TraceNotFound, StoreNotFound) as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return JSONResponse({"traceId": trace_id, "session": iri, "url": session_url(iri)})

    # -- two sessions compared ---------------------------------------------------------------------

    @staticmethod
    def _compared(request: Request) -> tuple[str, str] | None:
        """The two sessions a comparison names: ``?a=&b=`` (the session page's "Compare with"), or
        ``?s=`` twice (the list's two ticked rows); None when it names none;
        :class:`BadParameter` when it does not name two."""
        params = request.query_params
        picked = [v.strip() for v in params.getlist("s") if v.strip()]
        given = [params.get("a", "").strip(), params.get("b", "").strip()]
        if not picked and not any(given):
            return None
        if picked and not any(given) and len(picked) == 2:
            return picked[0], picked[1]
        if picked:
            raise BadParameter(f"select two sessions to compare ({len(picked)} selected)")
        if not all(given):
            raise BadParameter(f"give two sessions to compare: {'a' if not given[0] else 'b'}= is empty")
        return given[0], given[1]

    def _diff(self, a: str, b: str) -> TraceDiff:
        """The two sessions (each named as the CLI takes it) read and compared; :class:`TraceNotFound`
        saying which of them is missing."""
        traces = []
        with self.store() as store:
            reader = TraceReader(store)
            for side, ref in (("A", a), ("B", b)):
                try:
                    traces.append(reader.trace(ref)[0])
                except TraceNotFound as exc:
                    raise TraceNotFound(f"{side}: {exc}") from None
        return diff(*traces)

    def diff_page(self, request: Request) -> Response:
        try:
            named = self._compared(request)
        except BadParameter as exc:
            return self.page(request, "diff.html", 400, found=None, a=request.query_params.get("a", ""),
                             b=request.query_params.get("b", ""), error=str(exc))
        if named is None:
            return self.page(request, "diff.html", found=None, a="", b="", error=None)
        try:
            found = self._diff(*named)
        except (TraceNotFound, StoreNotFound) as exc:
            return self.page(request, "diff.html", 404, found=None, a=named[0], b=named[1], error=str(exc))
        runs, shown = [], 0
        for start, run in found.runs():
            if run[0].status != EQUAL:
                shown += 1
                if shown > DIFF_SHOWN:
                    break
            runs.append((start, run))
        api = "/api/diff?" + urlencode({"a": found.a.id, "b": found.b.id})
        return self.page(request, "diff.html", found=found, a=found.a.id, b=found.b.id, error=None, runs=runs,
                         cut=shown > DIFF_SHOWN, api=api, divergence=divergence_text(found),
                         downstream=downstream_text(found))

    def api_diff(self, request: Request) -> Response:
        try:
            named = self._compared(request)
            if named is None:
                raise BadParameter("give two sessions to compare: ?a=...&b=... (IRIs, UUIDs or trace ids)")
        except BadParameter as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        try:
            found = self._diff(*named)
        except (TraceNotFound, StoreNotFound) as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return JSONResponse(diff_dict(found))

    # -- SPARQL -----------------------------------------------------------------------------------

    def _run(self, text: str) -> tuple[QueryResult | None, bool, str | None, int]:
        """The query's result (rows cut at the row limit), whether it was cut, an error, a status."""
        try:
            check_query(text)
        except QueryRefused as exc:
            return None, False, str(exc), 400
        if not self.queries.acquire(blocking=False):
            return None, False, f"{MAX_QUERIES} queries are still running: try again later", 503
        try:
            result, cut = isolated.run_query(self.config.store, text, timeout=self.config.query_timeout,
                                             row_limit=self.config.row_limit)
        except isolated.QueryTimedOut:
            return None, False, (f"the query did not finish within {self.config.query_timeout:g} s "
                                 "(--query-timeout); it was stopped"), 504
        except isolated.QueryTooLarge as error:
            return None, False, str(error), 507
        except SyntaxError as error:
            return None, False, syntax_message(text, str(error)), 400
        except StoreNotFound as error:
            return None, False, str(error), 404
        except isolated.StoreUnreadable as error:  # not the query's fault: the store cannot be read
            return None, False, str(error), 503
        except StoreError as error:
            return None, False, str(error), 400
        finally:
            self.queries.release()
        return result, cut, None, 200

    async def _query_text(self, request: Request) -> str | None:
        """The query of a GET (``?query=``) or of a posted urlencoded form, whose body is read only up
        to :data:`MAX_QUERY_BYTES` (its declared length checked first): :class:`_TooLarge` past it."""
        if request.method == "POST":  # a urlencoded form (read here: no multipart parser needed)
            declared = request.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_QUERY_BYTES:
                raise _TooLarge
            chunks: list[bytes] = []
            size = 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > MAX_QUERY_BYTES:
                    raise _TooLarge
                chunks.append(chunk)
            values = parse_qs(b"".join(chunks).decode("utf-8", "replace")).get("query")
            return values[0] if values else None
        return request.query_params.get("query")

    async def _query_or_refusal(self, request: Request) -> tuple[str | None, str | None]:
        try:
            return await self._query_text(request), None
        except _TooLarge:
            return None, f"the query is larger than {MAX_QUERY_BYTES >> 20} MiB: not read"

    async def sparql_page(self, request: Request) -> Response:
        text, refused = await self._query_or_refusal(request)
        context: dict[str, Any] = {"nav": "sparql", "prefixes": PREFIXES, "query": text or EXAMPLE_QUERY,
                                   "result": None, "cut": False, "error": refused,
                                   "timeout": self.config.query_timeout, "row_limit": self.config.row_limit}
        status = 413 if refused else 200
        if text and _from_another_site(request):
            context["error"] = CROSS_SITE + ": press Run to run it here"
            status = 403
        elif text:
            result, cut, error, status = await _in_thread(self._run, text)
            context.update(result=result, cut=cut, error=error)
        return self.page(request, "sparql.html", status, **context)

    async def api_sparql(self, request: Request) -> Response:
        text, refused = await self._query_or_refusal(request)
        if refused:
            return JSONResponse({"error": refused}, status_code=413)
        if not text:
            return JSONResponse({"error": "no query: give it as ?query=... (or POST a form field query)"},
                                status_code=400)
        if _from_another_site(request):
            return JSONResponse({"error": CROSS_SITE}, status_code=403)
        fmt = request.query_params.get("format", "json")
        if fmt not in ("json", "csv"):
            return JSONResponse({"error": f"format={fmt[:40]!r}: json or csv"}, status_code=400)
        result, cut, error, status = await _in_thread(self._run, text)
        if result is None:
            return JSONResponse({"error": error}, status_code=status)
        if fmt == "csv":
            return Response(render_result(result, "csv"), media_type="text/csv; charset=utf-8",
                            headers={"Content-Disposition": 'attachment; filename="results.csv"'})
        body = render_result(result, "json")
        if result.kind == "graph":
            return Response(body, media_type="application/ld+json")
        data = json.loads(body)
        if cut:
            data["truncated"] = True
        return JSONResponse(data, media_type="application/sparql-results+json")

    # -- the rest ---------------------------------------------------------------------------------

    def api_index(self, request: Request) -> Response:
        return JSONResponse({"endpoints": {
            "/api/sessions": "sessions, newest first: ?type=agent|graphrag|docrag&collection=&since=&until="
                             "&q=&status=complete|failed|unfinished&tool=&agent=&model=&service="
                             "&sort=time|duration|steps|status&offset=&limit=",
            "/api/sessions/{iri}": "one session (the same JSON as 'otel-prov show --format json')",
            "/api/diff?a=&b=": "two sessions compared (the same JSON as 'otel-prov diff --format json')",
            "/api/trace/{trace_id}": "the session recorded from a Jaeger trace id",
            "/api/sparql?query=": "SPARQL 1.1 query results JSON (rows cut at the row limit: truncated); "
                                  "&format=csv: CSV",
            "/api/changes": "a stamp that changes whenever the store does",
            "/api/dashboard": "many runs at once: counts by status and day, tools, models and tokens, the "
                              "slowest (the list's filters)",
            "/api/sessions?format=csv": "the list as CSV",
        }, "docs": "docs/ui.md"})


CROSS_SITE = "query not run: the request came from a page of another site"
FILTERS = ("type", "collection", "since", "until", "q", "status", "tool", "agent", "model", "service",
           "sort")
"""The list's and the API's filters (query parameters)."""
API_SESSIONS_PARAMETERS = frozenset(FILTERS) | {"offset", "limit", "format", "token"}
"""What ``/api/sessions`` takes; any other parameter is refused (400)."""
LIST_PAGE_PARAMETERS = frozenset(FILTERS) | {"page", "token"}
"""What the list page takes; it names any other parameter as not applied (at most 10 of them)."""
STATUSES = ("complete", "failed", "unfinished")


class _TooLarge(Exception):
    """A posted body larger than :data:`MAX_QUERY_BYTES` (not read further)."""


def _from_another_site(request: Request) -> bool:
    """Whether a browser made this request for a page of another site (its fetch metadata, or the
    ``Origin`` of a posted form): such a request may not make the view run a query (a page anywhere
    could otherwise keep the view's query slots and CPUs busy, the view needing no token on loopback).
    Requests without these headers (curl, scripts) and the view's own pages are not affected."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site not in ("same-origin", "none")
    origin = request.headers.get("origin")
    return request.method == "POST" and origin is not None \
        and origin != f"{request.url.scheme}://{request.headers.get('host', '')}"


def _is_analysis(step: TraceStep) -> bool:
    return step.kind == "Analysis"


class BadParameter(ValueError):
    """A query parameter whose value means nothing (the answer is 400 with its one-line reason)."""


def _number(request: Request, name: str, default: int, low: int, high: int, *, cap: bool = False) -> int:
    """A whole-number query parameter between ``low`` and ``high`` (``default`` when absent; with
    ``cap``, one above ``high`` is read as ``high``: an offset past every row is an empty page)."""
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadParameter(f"{name}={text[:40]!r}: expected a whole number") from None
    if cap and value > high:
        return high
    if not low <= value <= high:
        raise BadParameter(f"{name}={value}: expected {low} or more" if cap else
                           f"{name}={value}: expected {low} to {high}")
    return value


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


async def _in_thread(func: Callable[..., Any], *args: Any) -> Any:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(func, *args)


def _guard(view: View) -> Callable[[Request, Callable[[Request], Awaitable[Response]]], Awaitable[Response]]:
    """Host check (a page on another site cannot reach a loopback view through DNS rebinding),
    the token (a bearer header, or the cookie ``?token=`` sets), and the security headers."""
    allowed = frozenset(name.lower() for name in view.config.allowed_hosts)
    # As serve's: every request names an IP address, localhost or an allowed name -- on loopback
    # always, elsewhere unless a token guards the view ("*" allows any name).
    checking = "*" not in allowed and (is_loopback(view.config.host) or not view.config.token)

    async def guard(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if checking and not host_acceptable(request.headers.get("host", ""), allowed):
            response: Response = PlainTextResponse(HOST_REFUSED, status_code=HOST_REFUSED_STATUS)
        else:
            response = await _authorised(view, request, call_next)
        response.headers.update(_HEADERS)
        return response

    return guard


async def _authorised(view: View, request: Request,
                      call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    token = view.config.token
    if not token or request.url.path.startswith("/static/"):
        return await call_next(request)
    given = request.query_params.get("token")
    if given is not None:
        if not hmac.compare_digest(given.encode(), token.encode()):
            return _unauthorised(view, request, "wrong token")
        rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
        path = "/" + request.url.path.lstrip("/\\")  # never "//host": a redirect to another site
        response = RedirectResponse(path + (f"?{rest}" if rest else ""), status_code=303)
        response.set_cookie(COOKIE, view.cookie, httponly=True, samesite="lax", path="/")
        return response
    if bearer_matches(single(request.headers.getlist("authorization")), token.encode()):
        return await call_next(request)
    if hmac.compare_digest(request.cookies.get(COOKIE, "").encode(), view.cookie.encode()):
        return await call_next(request)
    return _unauthorised(view, request, "this view needs a token")


def _unauthorised(view: View, request: Request, message: str) -> Response:
    headers = {"WWW-Authenticate": "Bearer"}
    if request.url.path.startswith("/api"):
        return JSONResponse({"error": message}, status_code=401, headers=headers)
    response = view.page(request, "error.html", 401, title="Token needed", message=message, ask_token=True,
                         store_name="")
    response.headers.update(headers)
    return response


def create_app(config: UiSettings) -> Starlette:
    """The web view over ``config.store`` (which need not exist yet)."""
    view = View(config)
    static = resources.files("otel_prov.web") / "static"
    routes = [
        Route("/", view.list_page),
        Route("/sessions/{iri:path}", view.session_page),
        Route("/blobs/sha256/{digest}", view.blob),
        Route("/trace/{trace_id}", view.trace_page),
        Route("/diff", view.diff_page),
        Route("/api/diff", view.api_diff),
        Route("/sparql", view.sparql_page, methods=["GET", "POST"]),
        Route("/api", view.api_index),
        Route("/api/sessions", view.api_sessions),
        Route("/api/sessions/{iri:path}", view.api_session),
        Route("/api/trace/{trace_id}", view.api_trace),
        Route("/api/sparql", view.api_sparql, methods=["GET", "POST"]),
        Route("/api/changes", view.api_changes),
        Route("/dashboard", view.dashboard_page),
        Route("/api/dashboard", view.api_dashboard),
        Mount("/static", StaticFiles(directory=str(static)), name="static"),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return view.problem(request, 404, "Not found", f"nothing at {request.url.path}",
                            api=request.url.path.startswith("/api"))

    async def not_allowed(request: Request, exc: Exception) -> Response:
        methods = sorted(m.strip() for m in (getattr(exc, "headers", None) or {}).get("Allow", "").split(","))
        allowed = {"Allow": ", ".join(methods)} if any(methods) else {}  # Starlette's order varies
        response = view.problem(request, 405, "Method not allowed",
                                f"{request.method[:20]} is not allowed on {request.url.path}"
                                + (f" (only {allowed['Allow']})" if "Allow" in allowed else ""),
                                api=request.url.path.startswith("/api"))
        response.headers.update(allowed)
        return response

    async def store_failed(request: Request, exc: Exception) -> Response:
        """The store could not be read for this request (a server down, a damaged store): a page
        (or ``{"error": ...}``) saying so, and one log line; never a traceback."""
        logger.warning("web view: %s %s: the store cannot be read: %s", request.method, request.url.path, exc)
        return view.problem(request, 503, "The store cannot be read", f"{exc}",
                            api=request.url.path.startswith("/api"))

    async def failed(request: Request, exc: Exception) -> Response:
        """Anything else: a page (or JSON) saying so; the server logs the traceback."""
        response = view.problem(request, 500, "Internal error",
                                f"this request failed ({type(exc).__name__}); the details are in the log "
                                "of otel-prov ui", api=request.url.path.startswith("/api"))
        response.headers.update(_HEADERS)  # answered outside the guard
        return response

    return Starlette(routes=routes, middleware=[Middleware(BaseHTTPMiddleware, dispatch=_guard(view))],
                     exception_handlers={404: not_found, 405: not_allowed, StoreError: store_failed,
                                         Exception: failed})
