#!/usr/bin/env bash
# Mutation testing of the pure mapping core (otel_prov/model/, otel_prov/mapping/) with mutmut 3:
# every small change mutmut can make to the code (an operator, a constant, a string, a call's argument
# dropped, ...) is tried, and the mapping's tests are run against it; a mutant the tests do not notice
# "survives".  Not part of the default test command (it runs the tests once per mutant: hours for the
# whole core on two cores).  docs/testing.md has the last run's score and what survived, and why.
#
#   bash tests/mutation/mutation.sh                       # the whole core
#   bash tests/mutation/mutation.sh 'otel_prov/model/*'   # only files matching these globs
#
# Environment: MUTATION_DIR (the work directory, default /tmp/otel-prov-mutation: a copy of the
# checkout, mutmut's mutants/ and its cache, so a second run resumes), MUTATION_TESTS (the test files,
# space-separated, instead of the list below), MUTATION_JOBS (parallel
# mutants, default 2), MUTATION_TIMEOUT (seconds for the whole run, default 14400; what is left
# unrun is reported as "not checked").
#
# Per mutant, mutmut runs only the tests that call the mutated function (it records which ones once,
# at the start), out of the pure-mapping tests below; the real-instrumentation scenarios' spans are
# recorded once and read back (OTEL_PROV_TESTS_INTEROP_SPANS) instead of run per mutant.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
PY=$REPO/.venv/bin/python
WORK=${MUTATION_DIR:-/tmp/otel-prov-mutation}
JOBS=${MUTATION_JOBS:-2}
BUDGET=${MUTATION_TIMEOUT:-14400}
MUTMUT_VERSION=3.8.1

if [ ! -x "$PY" ]; then
    echo "mutation: no .venv here: run 'bash .ci/setup --test' first" >&2
    exit 1
fi
if ! "$PY" -c "import mutmut" 2>/dev/null || [ "$("$PY" -c 'import importlib.metadata as m; print(m.version("mutmut"))')" != "$MUTMUT_VERSION" ]; then
    echo "mutation: installing mutmut $MUTMUT_VERSION into .venv"
    "$PY" -m pip install -q "mutmut==$MUTMUT_VERSION"
fi

# The globs to mutate (fnmatch, relative to the checkout).
if [ $# -gt 0 ]; then ONLY=("$@"); else ONLY=('otel_prov/model/*' 'otel_prov/mapping/*'); fi

# The tests that exercise the mapping without servers or subprocesses (test_golden's serve test, which
# starts otel-prov serve, is left out: a subprocess would import the unmutated package).
TESTS=(tests/mapping/test_golden.py tests/mapping/test_structure.py tests/model/test_model.py
       tests/mapping/test_flows.py tests/mapping/test_mapper_bounds.py tests/mapping/test_content_readers.py
       tests/mapping/test_dialect_readers.py tests/mapping/test_genai.py tests/mapping/test_dialects.py
       tests/model/test_strict.py tests/model/test_trustgraph_vocab.py)
if [ -n "${MUTATION_TESTS:-}" ]; then read -r -a TESTS <<< "$MUTATION_TESTS"; fi

# A copy of the checkout as it is (tracked and untracked files, not ignored ones): mutmut writes
# mutants/ and its cache beside the code it mutates.
mkdir -p "$WORK"
(git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' \
    | tar --null -T - -cf - ) | tar -xf - -C "$WORK"

toml_list() { local out="" x; for x in "$@"; do out+="\"$x\", "; done; echo "[${out%, }]"; }
cat >> "$WORK/pyproject.toml" <<EOF

[tool.mutmut]
source_paths = ["otel_prov"]
only_mutate = $(toml_list "${ONLY[@]}")
pytest_add_cli_args = ["-q", "-p", "no:cacheprovider", "-k", "not serve", "-W", "ignore::DeprecationWarning"]
pytest_add_cli_args_test_selection = $(toml_list "${TESTS[@]}")
timeout_multiplier = 5.0
timeout_constant = 10.0
process_isolation = "forkserver"
EOF

SPANS=$WORK/interop-spans
mkdir -p "$SPANS"
echo "mutation: recording the real-instrumentation scenarios' spans once ($SPANS)"
(cd "$WORK" && "$PY" -c "
import sys
from pathlib import Path
from tests.interop.runner import SCENARIOS, Captured
captured = Captured(Path(sys.argv[1]), reuse=True)
for name in SCENARIOS:
    captured.spans(name)
" "$SPANS")

export OTEL_PROV_TESTS_INTEROP_SPANS=$SPANS
export HYPOTHESIS_PROFILE=mutation
cd "$WORK"
echo "mutation: mutmut run (${ONLY[*]}; $JOBS at once; at most ${BUDGET}s)"
start=$(date +%s)
status=0
timeout --signal=INT "$BUDGET" "$PY" -m mutmut run --max-children "$JOBS" > "$WORK/run.log" 2>&1 || status=$?
end=$(date +%s)
"$PY" -m mutmut results --all true > "$WORK/results.txt" 2>&1 || true
echo "mutation: exit $status after $((end - start)) s; log $WORK/run.log, every mutant's verdict $WORK/results.txt"
"$PY" - "$WORK/results.txt" <<'EOF'
import collections
import sys

verdicts = collections.Counter()
survivors = []
for line in open(sys.argv[1], encoding="utf-8"):
    name, sep, verdict = line.strip().rpartition(": ")
    if not sep:
        continue
    verdicts[verdict] += 1
    if verdict == "survived":
        survivors.append(name)
killed = verdicts["killed"] + verdicts["timeout"] + verdicts["segfault"]
checked = killed + verdicts["survived"]
print("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
if checked:
    print(f"score: {killed}/{checked} killed = {100 * killed / checked:.1f}%")
for name in survivors:
    print("survived:", name)
EOF

# Which survivors change an emitted triple (tests/mutation/mutation_oracle.py): mutmut's verdict says only
# that no test noticed; this says whether the graph changes at all, on a corpus of spans.
grep ": survived$" "$WORK/results.txt" > "$WORK/survivors.txt" || true
if [ -s "$WORK/survivors.txt" ]; then
    echo "mutation: mapping a corpus with each survivor ($WORK/oracle.txt)"
    (cd "$WORK/mutants" && "$PY" "$REPO/tests/mutation/mutation_oracle.py" "$WORK/mutants" "$SPANS" \
        "$WORK/survivors.txt" > "$WORK/oracle.txt" 2>&1) || echo "mutation: the oracle failed (see $WORK/oracle.txt)"
    grep -v ": same graph$" "$WORK/oracle.txt" || true
fi
