"""The canned query packs of ``otel-prov query --pack NAME`` (docs/audit.md, "Query packs").

Each query is a file here, ``PACK.NAME.rq`` (named ``PACK/NAME`` on the command line), whose first
comment lines say what it is: ``# title:``, ``# asks:`` (the question it answers), ``# from:``
(where the question comes from).  Three packs: ``trustgraph`` (TrustGraph's explainability
questions), ``records`` (the record-keeping questions: periods of use, data sources, which input led
to which output, who approved), ``lineage`` (questions of the First Provenance Challenge).  Every
query reads the explainability graph of either profile.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class PackQuery:
    name: str
    """``pack/query``."""
    title: str
    asks: str
    source: str
    text: str


def queries() -> list[PackQuery]:
    """Every query of every pack, by name."""
    found = []
    for entry in sorted(resources.files(__name__).iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".rq"):
            continue
        pack, _, rest = entry.name.removesuffix(".rq").partition(".")
        text = entry.read_text(encoding="utf-8")
        head = {key.strip(): value.strip() for line in text.splitlines() if line.startswith("# ")
                for key, sep, value in [line[2:].partition(":")] if sep}
        found.append(PackQuery(f"{pack}/{rest}", head.get("title", rest), head.get("asks", ""),
                               head.get("from", ""), text))
    return found


def find(name: str) -> PackQuery:
    """The query named ``name`` (``pack/query``, or ``pack.query``); :class:`KeyError` naming the
    choices otherwise."""
    wanted = name.strip().replace(".", "/", 1)
    for query in queries():
        if query.name == wanted:
            return query
    raise KeyError(f"no query pack {name!r}: choose from {', '.join(q.name for q in queries())} "
                   "('--pack list' says what each asks)")
