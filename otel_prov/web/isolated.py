"""A user's SPARQL query run in a process of its own, killed when it runs out of time.

A query engine cannot be interrupted from another thread: a query the web view gave up on would go
on using a core until it ended by itself (minutes, for a careless join), and hold one of the view's
few query slots meanwhile.  In a child process it ends at its deadline, whatever it was doing.  The
child starts fresh (``spawn``: the view's threads are not copied into it), opens the store to read
as every reader does, and sends back the result, cut at the row limit.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection
from typing import Any

from ..errors import StoreError, StoreNotFound
from ..read import queries
from ..stores import StoreSpec, open_for_reading
from ..stores.base import QueryResult

_CONTEXT = multiprocessing.get_context("spawn")


class QueryTimedOut(Exception):
    """The query did not finish in time; its process was stopped."""


class StoreUnreadable(StoreError):
    """The store could not be opened to run the query (not the query's fault)."""


def run_query(spec: StoreSpec, sparql: str, *, timeout: float, row_limit: int) -> tuple[QueryResult, bool]:
    """The query's result (at most ``row_limit`` rows or triples) and whether it was cut.  Raises
    :class:`SyntaxError`, :class:`~otel_prov.errors.StoreNotFound`, :class:`StoreUnreadable`,
    :class:`StoreError`, or :class:`QueryTimedOut` (the child was killed).  ``SELECT *``'s columns
    come in the query's order (:func:`otel_prov.read.queries.run_query`)."""
    receive, send = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(target=_child, args=(send, spec, sparql, row_limit), daemon=True,
                             name="otel-prov-ui-query")
    child.start()
    send.close()
    try:
        kind, value = _next(receive, START_TIMEOUT, "the query's process did not start")
        if kind == "ready":  # the store is open: the query's own time starts now
            if not receive.poll(timeout):
                raise QueryTimedOut(f"the query did not finish within {timeout:g} s")
            kind, value = _next(receive, 0, "")
    except StoreError:
        child.join(5)
        if child.exitcode is not None and child.exitcode < 0 or child.exitcode == MEMORY_EXIT:
            raise QueryTooLarge(f"the query needed more than {QUERY_MEMORY >> 20} MiB of memory; it was "
                                "stopped") from None
        raise
    finally:
        receive.close()
        if child.is_alive():
            child.kill()
        child.join(5)
    if kind == "memory":
        raise QueryTooLarge(value)
    if kind == "result":
        result, cut = value
        return result, cut
    errors = {"syntax": SyntaxError, "not-found": StoreNotFound, "unreadable": StoreUnreadable}
    error = errors.get(kind, StoreError)
    raise error(value)


QUERY_MEMORY = 1 << 30
"""The memory a query may take beyond what its process holds once the store is open (an address-space
limit): a careless join fails in its own process, never takes the machine's memory."""
MEMORY_EXIT = 70


class QueryTooLarge(StoreError):
    """The query needed more memory than :data:`QUERY_MEMORY`; its process was stopped."""


def _limit_memory() -> None:
    """This process's address space: what it maps now, plus :data:`QUERY_MEMORY`."""
    import resource

    try:
        with open("/proc/self/statm") as statm:
            mapped = int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return  # not Linux: no limit
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    wanted = mapped + QUERY_MEMORY
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


START_TIMEOUT = 30.0
"""Seconds a query's process may take to start and open the store (not counted in its timeout)."""


def _next(receive: Connection, wait: float, late: str) -> tuple[str, Any]:
    if wait and not receive.poll(wait):
        raise StoreError(f"{late} within {wait:g} s")
    try:
        message: tuple[str, Any] = receive.recv()
    except EOFError:
        raise StoreError("the query's process ended without an answer") from None
    return message


def _child(send: Connection, spec: StoreSpec, sparql: str, row_limit: int) -> None:
    answer: tuple[str, Any]
    try:
        try:
            store = open_for_reading(spec)
        except StoreError as exc:
            if isinstance(exc, StoreNotFound):
                raise
            send.send(("unreadable", str(exc)))
            send.close()
            return
        _limit_memory()
        send.send(("ready", None))
        try:
            result = queries.run_query(store, sparql)
        finally:
            store.close()
        cut = len(result.rows) > row_limit or len(result.triples) > row_limit
        result.rows, result.triples = result.rows[:row_limit], result.triples[:row_limit]
        answer = ("result", (result, cut))
    except MemoryError:
        answer = ("memory", f"the query needed more than {QUERY_MEMORY >> 20} MiB of memory; it was stopped")
    except SyntaxError as exc:
        answer = ("syntax", str(exc))
    except StoreNotFound as exc:
        answer = ("not-found", str(exc))
    except Exception as exc:  # every failure is the request's answer, never the child's traceback
        answer = ("error", str(exc) if isinstance(exc, StoreError) else f"the query failed: {exc}")
    send.send(answer)
    send.close()
