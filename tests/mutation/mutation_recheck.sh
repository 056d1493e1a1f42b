#!/usr/bin/env bash
# Re-run surviving mutants against tests written after a mutation run (tests/mutation/mutation.sh), without
# running mutmut again: each mutant is switched on by name (MUTANT_UNDER_TEST) in the run's
# mutants/ directory, where the tests given are copied first.  Prints "killed" or "survived" per mutant.
#
#   bash tests/mutation/mutation_recheck.sh SURVIVORS_FILE TEST_FILE...   (MUTATION_DIR as for mutation.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
WORK=${MUTATION_DIR:-/tmp/otel-prov-mutation}
survivors=$1
shift
for test in "$@"; do cp "$REPO/$test" "$WORK/mutants/$test"; done
cd "$WORK/mutants"
while read -r line; do
    name=${line%%:*}
    name=${name// /}
    [ -n "$name" ] || continue
    if MUTANT_UNDER_TEST=$name OTEL_PROV_TESTS_INTEROP_SPANS=$WORK/interop-spans timeout 300 \
        "$REPO/.venv/bin/python" -m pytest -x -q -p no:cacheprovider -p no:randomly "$@" > /dev/null 2>&1; then
        echo "$name: survived"
    else
        echo "$name: killed"
    fi
done < "$survivors"
