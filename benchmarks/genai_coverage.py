"""Coverage of the framework instrumentations: runs every scenario of tests/interop (the real
packages, offline), maps its spans, reads the graph back as ``otel-prov show`` does, and compares each
field of the explainability chain with the run the scenario played (tests/interop/story.py).

    python benchmarks/genai_coverage.py [--profile seed|strict] [--markdown] [--captures DIR]
                                        [NAME_SUBSTRING ...]

Prints one row per scenario and one column per field (question, thought, action, arguments,
observation, answer, retrieval, agent name, delegation):

  ✓              every value is the one played
  not captured   the graph marks it ``otelprov:notCaptured`` (the instrumentation did not record it)
  redacted       the graph marks it ``otelprov:redacted`` (the spans held a redaction marker)
  absent         not in the graph and not marked (the instrumentation drops it silently)
  k/n            k of the n values are the played ones (the others not captured, redacted or absent)
  ✗              a value differs from the one played (a wrong value, never acceptable)
  —              the run has none (no retrieval; one agent: no delegation)

Then the whole: of the runs with content on, the share of played values the graph holds, per family
and in all; and the count of wrong values (of every run).  ``--captures DIR`` keeps each scenario's
spans in DIR and reuses those an earlier run left
there.  Needs the interop extra (``bash .ci/setup --test``).  Exits 1 if a scenario fails to run or a
value is wrong.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.interop.chain import (  # noqa: E402
    FIELDS,
    NOT_CAPTURED,
    REDACTED,
    field_values,
    mapped,
    played,
    same,
    score,
    unknown,
    wrong,
)
from tests.interop.runner import SCENARIOS, Captured, ScenarioFailed, missing_packages  # noqa: E402

WRONG = "✗"


def cell(field: str, want: list[Any], got: list[Any]) -> str:
    if not want:
        return "—"
    if len(got) != len(want):
        return f"{WRONG} ({len(got)} for {len(want)})" if any(not unknown(field, g) for g in got) else \
            f"absent ({len(got)} for {len(want)})"
    pairs = list(zip(want, got, strict=True))
    if any(wrong(field, w, g) for w, g in pairs):
        return WRONG
    good = sum(same(field, w, g) for w, g in pairs)
    missing = [g for w, g in pairs if not same(field, w, g)]
    if good == len(want):
        return "✓"
    if good == 0:
        for mark, text in ((NOT_CAPTURED, "not captured"), (REDACTED, "redacted")):
            if all(g == mark for g in missing):
                return text
        return "absent"
    return f"{good}/{len(want)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=("seed", "strict"), default="seed")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table (for docs/genai.md)")
    parser.add_argument("--captures", type=Path, help="keep (and reuse) the scenarios' spans here")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    reason = missing_packages()
    if reason:
        print(f"genai_coverage: {reason}", file=sys.stderr)
        return 1
    rows, failed = [], False
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    with tempfile.TemporaryDirectory() as tmp:
        out = args.captures or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        captured = Captured(out, reuse=args.captures is not None)
        for name, scenario in SCENARIOS.items():
            if args.names and not any(n in name for n in args.names):
                continue
            try:
                got_chains = mapped(captured.spans(name), args.profile, captured.logs(name))
            except ScenarioFailed as exc:
                print(exc, file=sys.stderr)
                failed = True
                continue
            want_chains = played(name)
            want, got = field_values(want_chains), field_values(got_chains)
            if name.endswith("_no_content") and not any(got.values()):
                row = ["nothing (no content links the calls)"] + [""] * (len(FIELDS) - 1)
            else:
                row = [cell(f, want[f], got[f]) for f in FIELDS]
            result = score(want_chains, got_chains)
            hidden = name.endswith(("_no_content", "_redacted"))  # nothing to recover: counted apart
            for key in ((scenario.family, "all") if not hidden else ("hidden",)):
                totals[key][0] += result.right
                totals[key][1] += result.total
                totals[key][2] += len(result.wrongs)
            failed |= any(c.startswith(WRONG) for c in row) or bool(result.wrongs)
            rows.append((scenario.family, name, row))
    header = ("instrumentation", "scenario", *FIELDS)
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for family, name, row in rows:
            print("| " + " | ".join((family, f"`{name}`", *row)) + " |")
    else:
        widths = [max(len(str(r)) for r in col) for col in zip(header, *[(f, n, *c) for f, n, c in rows],
                                                                strict=True)]
        for line in (header, *[(f, n, *c) for f, n, c in rows]):
            print("  ".join(str(v).ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())
    print()
    names = {"all": "all families, content on", "hidden": "content off or redacted (wrong values only)"}
    for key, (right, total, wrongs) in sorted(totals.items(), key=lambda kv: (kv[0] in names, kv[0])):
        share = (f"{right} of {total} played values ({right / total:.1%}), "
                 if total and key != "hidden" else "")
        print(f"{names.get(key, key)}: {share}{wrongs} wrong" + ("  " if args.markdown else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
