#!/usr/bin/env bash
# Jaeger (jaeger.yaml) with the real Jaeger UI, its trace pages linking to otel-prov's web view.
#
#   bash collector-config/jaeger-ui.sh          # UI and API on 127.0.0.1:16686, OTLP on 4317/4318
#   otel-prov demo --ui --otlp --jaeger-url http://127.0.0.1:16686
#
# A `go build` of Jaeger has no UI assets. This script unpacks a jaeger-ui build and points Jaeger at
# it, or runs a Jaeger that has its UI:
#   JAEGER_BIN        a Jaeger release binary (jaeger-2.x-linux-amd64.tar.gz from Jaeger's releases: its
#                     UI is built in): run with the UI config only, nothing unpacked; else
#   JAEGER_UI_TGZ     a jaeger-ui build or release archive (.tgz/.tar.gz holding index.html and static/
#                     at any depth; default: ../shared/vendor/jaeger-ui-1.76.0/jaeger-ui-build.tgz
#                     beside the repository, where this project's machines have it), or
#   JAEGER_UI_ASSETS  an unpacked build directory (index.html + static/), used as it is.
# Elsewhere, run the official image instead (jaegertracing/jaeger, which has the UI) and mount
# jaeger-ui.json as its UI config (docs/ui.md).
#   OTEL_PROV_UI_URL  where the web view is (default http://127.0.0.1:8080): written into the
#                     UI config's link (jaeger-ui.json) as the target of "Open in otel-prov".
#   OTEL_PROV_JAEGER_UI_DIR  where to unpack and write the config (default ~/.cache/otel-prov/jaeger-ui)
# Jaeger's listen addresses: the JAEGER_* variables of jaeger.yaml. The binary comes from
# build-binaries.sh (OTEL_PROV_BIN_DIR, default ~/.cache/otel-prov/bin).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN_DIR="${OTEL_PROV_BIN_DIR:-$HOME/.cache/otel-prov/bin}"
WORK="${OTEL_PROV_JAEGER_UI_DIR:-$HOME/.cache/otel-prov/jaeger-ui}"
UI_URL="${OTEL_PROV_UI_URL:-http://127.0.0.1:8080}"
UI_URL="${UI_URL%/}"

mkdir -p "$WORK"
write_config() {  # the link of jaeger-ui.json, pointed at this web view (the file's default: 127.0.0.1:8080)
  local escaped
  escaped=$(printf '%s' "$UI_URL" | sed 's/[&#\\]/\\&/g')
  sed "s#http://127.0.0.1:8080#$escaped#" "$HERE/jaeger-ui.json" > "$WORK/ui-config.json.tmp"
  mv "$WORK/ui-config.json.tmp" "$WORK/ui-config.json"
}
if [ -n "${JAEGER_BIN:-}" ]; then  # a release binary: its UI is built in
  [ -x "$JAEGER_BIN" ] || { echo "jaeger-ui.sh: JAEGER_BIN=$JAEGER_BIN is not an executable" >&2; exit 1; }
  write_config
  export JAEGER_UI_CONFIG="$WORK/ui-config.json"
  echo "jaeger-ui.sh: Jaeger ($JAEGER_BIN) on http://${JAEGER_QUERY_HTTP_ENDPOINT:-127.0.0.1:16686}, linking to $UI_URL" >&2
  exec "$JAEGER_BIN" --config "$HERE/jaeger.yaml"
fi
if [ ! -x "$BIN_DIR/jaeger" ]; then
  echo "jaeger-ui.sh: no $BIN_DIR/jaeger: build it with 'bash collector-config/build-binaries.sh'," \
       "or give a release binary as JAEGER_BIN" >&2
  exit 1
fi
if [ -n "${JAEGER_UI_ASSETS:-}" ]; then
  ASSETS="$JAEGER_UI_ASSETS"
else
  VENDORED="shared/vendor/jaeger-ui-1.76.0/jaeger-ui-build.tgz"
  TGZ="${JAEGER_UI_TGZ:-$HERE/../../$VENDORED}"
  if [ -z "${JAEGER_UI_TGZ:-}" ] && [ ! -f "$TGZ" ]; then  # a git worktree: beside the main checkout
    COMMON=$(git -C "$HERE" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
    [ -n "$COMMON" ] && TGZ="$(dirname "$(dirname "$COMMON")")/$VENDORED"
  fi
  if [ ! -f "$TGZ" ]; then
    echo "jaeger-ui.sh: no Jaeger UI build at $TGZ: set JAEGER_UI_TGZ (a jaeger-ui build .tgz) or" \
         "JAEGER_UI_ASSETS (an unpacked one), or run the official image jaegertracing/jaeger" \
         "with collector-config/jaeger-ui.json (docs/ui.md)" >&2
    exit 1
  fi
  if [ ! -f "$WORK/ui/index.html" ] || [ "$TGZ" -nt "$WORK/ui/index.html" ]; then
    rm -rf "$WORK/ui" "$WORK/unpacked"
    mkdir -p "$WORK/unpacked"
    tar -xzf "$TGZ" -C "$WORK/unpacked"
    # A build (build/index.html) or a release archive (index.html deeper): the directory that holds
    # index.html and static/.
    FOUND=$(find "$WORK/unpacked" -maxdepth 6 -name index.html -exec dirname {} \; | while read -r d; do
              [ -d "$d/static" ] && echo "$d"; done | head -n 1)
    if [ -z "$FOUND" ]; then
      echo "jaeger-ui.sh: $TGZ holds no index.html beside a static/ directory: not a jaeger-ui build" >&2
      exit 1
    fi
    mv "$FOUND" "$WORK/ui"
    rm -rf "$WORK/unpacked"
    touch "$WORK/ui/index.html"
  fi
  ASSETS="$WORK/ui"
fi
if [ ! -f "$ASSETS/index.html" ]; then
  echo "jaeger-ui.sh: $ASSETS has no index.html: not a jaeger-ui build" >&2
  exit 1
fi
write_config

export JAEGER_UI_ASSETS="$ASSETS" JAEGER_UI_CONFIG="$WORK/ui-config.json"
echo "jaeger-ui.sh: Jaeger UI on http://${JAEGER_QUERY_HTTP_ENDPOINT:-127.0.0.1:16686}, linking to $UI_URL" >&2
exec "$BIN_DIR/jaeger" --config "$HERE/jaeger.yaml"
