#!/usr/bin/env bash
# Makes one virtualenv per framework scenario that needs packages of its own:
# .venv/interop/envs/NAME from tests/interop/envs/NAME.txt (pinned). A virtualenv whose requirements
# file has not changed since it was made is kept (a stamp of the file's hash); the others are made
# anew. Frameworks pin their dependencies differently (openai, pydantic, opentelemetry-sdk), so each
# gets its own; a scenario only needs its framework, the OpenTelemetry SDK and the OTLP encoder (the
# spans are read back by the project's own interpreter: tests/interop/runner.py).
#   bash tests/interop/envs/setup.sh [NAME ...]      # default: every requirements file
set -euo pipefail
cd "$(dirname "$0")/../../.."
PYTHON=${PYTHON:-python3}
JOBS=${OTEL_PROV_INTEROP_JOBS:-3}

make_env() {
	local req=$1 name dir stamp
	name=$(basename "$req" .txt)
	dir=.venv/interop/envs/$name
	stamp=$(sha256sum "$req" | cut -c1-16)
	if [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; then
		echo "interop env $name: up to date"
		return 0
	fi
	rm -rf "$dir"
	"$PYTHON" -m venv "$dir"
	"$dir/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >"$dir.log" 2>&1 || {
		echo "interop env $name: pip install -r $req failed; the end of $dir.log:" >&2
		tail -n 30 "$dir.log" >&2
		return 1
	}
	echo "$stamp" >"$dir/.stamp"
	echo "interop env $name: made"
}

mkdir -p .venv/interop/envs
if [ $# -gt 0 ]; then
	files=()
	for name in "$@"; do files+=("tests/interop/envs/$name.txt"); done
else
	files=(tests/interop/envs/*.txt)
fi
pids=() failed=0
for req in "${files[@]}"; do
	[ -f "$req" ] || { echo "no such requirements file: $req" >&2; exit 1; }
	make_env "$req" &
	pids+=($!)
	if [ ${#pids[@]} -ge "$JOBS" ]; then
		wait "${pids[0]}" || failed=1
		pids=("${pids[@]:1}")
	fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
exit $failed
