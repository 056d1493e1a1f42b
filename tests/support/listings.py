"""The listing checks a session index must pass (the embedded store's SQLite index, a SPARQL server's
rows): every filter, sort and page lists what the graph lists."""

from __future__ import annotations

from collections.abc import Callable

from otel_prov.read.model import COMPLETE, FAILED, UNFINISHED, SessionFilter, SessionRow
from otel_prov.read.reader import TraceReader
from otel_prov.stores.base import ReadStore

Same = Callable[..., list[SessionRow]]
"""Lists with the index and from the graph with the same arguments, asserts both equal (and their
counts), returns the listing."""


def names_in(store: ReadStore) -> dict[str, list[str]]:
    """The tools, models, agents and services the graph names (what the name filters test)."""
    return {field: sorted({row["o"] for row in TraceReader(store).select(
        f"SELECT DISTINCT ?o WHERE {{ GRAPH ?g {{ ?s {predicate} ?o }} }}")})
        for field, predicate in (("tool", "tg:action"), ("model", "tg:llmModel"),
                                 ("agent", "otelprov:agentName"), ("service", "otelprov:serviceName"))}


def check_every_listing(same: Same, names: dict[str, list[str]]) -> list[SessionRow]:
    """Every type, collection, status, sort, page, text, name and time filter: listed the same."""
    everything = same()
    assert len(everything) >= 10
    assert {r.status for r in everything} == {COMPLETE, FAILED, UNFINISHED}
    for kind in sorted({r.type for r in everything}):
        assert same(kind=kind)
    for collection in sorted({r.collection for r in everything if r.collection}):
        assert same(collection=collection)
    same(collection="no such collection")
    for status in (COMPLETE, FAILED, UNFINISHED):
        assert same(where=SessionFilter(status=status))
    for sort in ("time", "duration", "steps", "status"):
        assert len(same(where=SessionFilter(sort=sort))) == len(everything)
        for offset in (0, 3, 9):
            assert same(where=SessionFilter(sort=sort), limit=4, offset=offset)
    found = {text: len(same(where=SessionFilter(text=text)))
             for text in ("berlin", "PARIS", "population", "eiffel", "zzz-no-such-text", "search")}
    assert found["berlin"] and found["PARIS"] and not found["zzz-no-such-text"]
    for field, values in names.items():
        assert values, field  # the data has some of each
        hits = [len(same(where=SessionFilter(**{field: value})))  # type: ignore[arg-type]
                for value in [*values, "no-such-name"]]
        assert all(hits[:-1]) and hits[-1] == 0, (field, values, hits)
    times = sorted(r.time for r in everything if r.time)
    for since, until in ((times[0], None), (None, times[-1]), (times[3], times[-3]), (times[-1][:10], None)):
        same(where=SessionFilter(since=since, until=until))
    same(kind=everything[0].type, collection=everything[0].collection,
         where=SessionFilter(status=everything[0].status, sort="duration"), limit=2)
    return everything
