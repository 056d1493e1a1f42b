#!/usr/bin/env bash
# build-binaries.sh: build the two real binaries otel-prov runs against, from
# the Go module proxy, into a cache directory outside the repo:
#
#   $OTEL_PROV_BIN_DIR/jaeger        Jaeger v2 (module github.com/jaegertracing/jaeger)
#   $OTEL_PROV_BIN_DIR/otelcol-prov  our Collector distribution, built by the
#                                    OpenTelemetry Collector Builder (ocb) from
#                                    collector-config/builder-config.yaml
#
# OTEL_PROV_BIN_DIR defaults to $HOME/.cache/otel-prov/bin.
#
# Idempotent: a binary is reused when it exists and its stamp file
# (<binary>.stamp) matches what would be built now (module versions, Go
# version, build flags and, for the Collector, the sha256 of the manifest).
# Otherwise it is rebuilt. Nothing is ever written into the repo: the
# throwaway Go modules and the generated Collector sources live under
# $OTEL_PROV_BIN_DIR/.build, the builder tool under $OTEL_PROV_BIN_DIR/.tools.
# The default GOMODCACHE/GOCACHE are used, so later runs (and rebuilds) reuse
# downloads and compiled packages.
#
# Usage: collector-config/build-binaries.sh [--jaeger-only|--collector-only] [--force]
#        collector-config/build-binaries.sh --print-dir
#
# Progress goes to stderr; on success stdout gets one KEY=PATH line per
# binary (OTEL_PROV_JAEGER_BIN=..., OTEL_PROV_OTELCOL_BIN=...).
# Exit status: 0 when every requested binary is ready, 1 when a build failed,
# 2 on bad usage or a missing/too old Go toolchain.
# Measured on 2 cores: cold (empty module/build caches for these modules)
# Collector 1m22s, Jaeger 3m57s; warm-GOCACHE rebuilds 6s and 22s; reuse <0.1s.

set -euo pipefail

# ---- pinned versions (bump together with builder-config.yaml) -------------
JAEGER_MODULE=github.com/jaegertracing/jaeger
JAEGER_PKG=$JAEGER_MODULE/cmd/jaeger
# Jaeger v2 is released from the v1.x tags of the v1 module path:
# v1.76.0 is Jaeger v2.13.0 (the label is what `jaeger version` prints).
JAEGER_VERSION=${OTEL_PROV_JAEGER_VERSION:-v1.76.0}
JAEGER_V2_LABEL=${OTEL_PROV_JAEGER_V2_LABEL:-v2.13.0}
OTELCOL_BUILDER_MODULE=go.opentelemetry.io/collector/cmd/builder
OTELCOL_BUILDER_VERSION=${OTEL_PROV_OTELCOL_BUILDER_VERSION:-v0.165.0}
OTELCOL_NAME=otelcol-prov
# Bump when the build recipe below changes, to invalidate existing stamps.
RECIPE_REV=1

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
MANIFEST=${OTEL_PROV_BUILDER_CONFIG:-$SCRIPT_DIR/builder-config.yaml}
BIN_DIR=${OTEL_PROV_BIN_DIR:-$HOME/.cache/otel-prov/bin}

log() { printf '[build-binaries] %s\n' "$*" >&2; }
die() {
	local code=$1
	shift
	printf '[build-binaries] ERROR: %s\n' "$*" >&2
	exit "$code"
}

usage() {
	cat <<EOF
Usage: ${0##*/} [--jaeger-only | --collector-only] [--force]
       ${0##*/} --print-dir

Builds into \${OTEL_PROV_BIN_DIR:-\$HOME/.cache/otel-prov/bin} (now: $BIN_DIR):
  jaeger        $JAEGER_PKG@$JAEGER_VERSION (Jaeger $JAEGER_V2_LABEL)
  $OTELCOL_NAME  Collector from $MANIFEST
                via $OTELCOL_BUILDER_MODULE@$OTELCOL_BUILDER_VERSION
A binary is reused when present and its .stamp matches; otherwise rebuilt.

  --jaeger-only     build/check only the Jaeger binary
  --collector-only  build/check only the Collector binary
  --force           rebuild even when the cached binary matches
  --print-dir       print the cache directory and exit (builds nothing)
  -h, --help        this help

Environment: OTEL_PROV_BIN_DIR, OTEL_PROV_BUILDER_CONFIG (manifest path),
OTEL_PROV_JAEGER_VERSION + OTEL_PROV_JAEGER_V2_LABEL,
OTEL_PROV_OTELCOL_BUILDER_VERSION.
On success stdout gets OTEL_PROV_JAEGER_BIN=... / OTEL_PROV_OTELCOL_BIN=...
EOF
}

want_jaeger=1
want_collector=1
force=0
while (($#)); do
	case $1 in
	--jaeger-only) want_collector=0 ;;
	--collector-only) want_jaeger=0 ;;
	--force) force=1 ;;
	--print-dir)
		printf '%s\n' "$BIN_DIR"
		exit 0
		;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		usage >&2
		die 2 "unknown argument: $1"
		;;
	esac
	shift
done
if ((want_jaeger == 0 && want_collector == 0)); then
	die 2 "--jaeger-only and --collector-only are mutually exclusive"
fi

# ---- toolchain checks -------------------------------------------------------
command -v go >/dev/null 2>&1 ||
	die 2 "'go' not found in PATH: install Go >= 1.24 (needed for 'go get -tool'), then re-run"
GO_VERSION=$(go env GOVERSION) || die 2 "'go env GOVERSION' failed"
go_minor=$(printf '%s\n' "$GO_VERSION" | sed -n 's/^go1\.\([0-9][0-9]*\).*/\1/p')
if [[ -z $go_minor ]] || ((go_minor < 24)); then
	die 2 "Go >= 1.24 is required, found '$GO_VERSION'"
fi
GO_PLATFORM="$(go env GOOS)/$(go env GOARCH)"

sha256_of() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	else
		shasum -a 256 "$1" | cut -d' ' -f1
	fi
}

# Sane, reproducible Go settings. The caller's GOFLAGS are replaced, not
# extended, so e.g. -mod=vendor cannot leak into the throwaway modules.
export GOFLAGS="-trimpath -buildvcs=false"
export CGO_ENABLED=0
# Never let a go.work somewhere above the cache dir join the build.
export GOWORK=off

mkdir -p "$BIN_DIR" "$BIN_DIR/.build" "$BIN_DIR/.tools"
BIN_DIR=$(cd -- "$BIN_DIR" && pwd)

# One build at a time per cache dir (a second run waits, then reuses).
if command -v flock >/dev/null 2>&1; then
	exec 9>"$BIN_DIR/.lock"
	if ! flock -n 9; then
		log "another build-binaries.sh holds $BIN_DIR/.lock; waiting for it"
		flock 9
	fi
fi

fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# is_fresh BIN EXPECTED_STAMP_CONTENT
is_fresh() {
	local bin=$1 want=$2
	((force == 0)) || return 1
	[[ -x $bin && -f $bin.stamp ]] || return 1
	[[ "$(cat -- "$bin.stamp")" == "$want" ]]
}

# ---- Jaeger -------------------------------------------------------------------
jaeger_ldflags() {
	# Same -X build info as Jaeger's own Makefile (BUILD_INFO_V2), plus -s -w.
	local vpkg=$JAEGER_MODULE/internal/version date=$1
	printf '%s' "-s -w -X $vpkg.latestVersion=$JAEGER_V2_LABEL -X $vpkg.commitSHA=$JAEGER_MODULE@$JAEGER_VERSION -X $vpkg.date=$date"
}

jaeger_stamp() {
	cat <<EOF
recipe=$RECIPE_REV
module=$JAEGER_MODULE@$JAEGER_VERSION
package=$JAEGER_PKG
label=$JAEGER_V2_LABEL
go=$GO_VERSION $GO_PLATFORM
goflags=$GOFLAGS cgo=$CGO_ENABLED
EOF
}

# Upstream's go.mod replace directives do not apply when Jaeger is built as a
# dependency; copy the module-to-module ones (e.g. Shopify/sarama) into our
# throwaway module so the dependency graph matches Jaeger's own release build.
apply_upstream_replaces() {
	local upstream_mod=$1 line old new
	while IFS= read -r line; do
		[[ -n $line ]] || continue
		old=${line%% => *}
		new=${line#* => }
		old=${old// /@}
		case $new in
		./* | ../* | /*)
			log "  skipping upstream local-path replace: $line"
			continue
			;;
		esac
		new=${new// /@}
		log "  applying upstream replace: $old => $new"
		go mod edit -replace="$old=$new" || return 1
	done < <(awk '
		/^replace[ \t]*\(/ { inblock = 1; next }
		inblock && /^\)/   { inblock = 0; next }
		inblock            { sub(/\/\/.*/, ""); gsub(/^[ \t]+|[ \t]+$/, ""); if ($0 != "") print; next }
		/^replace[ \t]/    { sub(/\/\/.*/, ""); sub(/^replace[ \t]+/, ""); gsub(/[ \t]+$/, ""); print }
	' "$upstream_mod" | sed -E 's/[ \t]+/ /g')
}

# Runs inside the throwaway module dir. Every step is checked explicitly:
# errexit does not apply in functions called from an `||` list.
jaeger_compile() {
	local bin=$1 upstream_mod date
	go mod init otel-prov.local/jaeger-build >/dev/null 2>&1 || return 1
	log "jaeger: go get -tool $JAEGER_PKG@$JAEGER_VERSION"
	go get -tool "$JAEGER_PKG@$JAEGER_VERSION" || return 1
	upstream_mod=$(go list -m -f '{{.GoMod}}' "$JAEGER_MODULE") || return 1
	apply_upstream_replaces "$upstream_mod" || return 1
	log "jaeger: go mod tidy"
	go mod tidy || return 1
	date=$(go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' "$JAEGER_MODULE") || return 1
	log "jaeger: go build -o $bin (compiling; this is the slow part)"
	go build -ldflags="$(jaeger_ldflags "${date:-unknown}")" -o "$bin.tmp" "$JAEGER_PKG" || return 1
}

build_jaeger() {
	local bin=$BIN_DIR/jaeger stamp start mod_dir
	stamp=$(jaeger_stamp)
	if is_fresh "$bin" "$stamp"; then
		log "jaeger: up to date ($JAEGER_MODULE@$JAEGER_VERSION = Jaeger $JAEGER_V2_LABEL), reusing $bin"
		return 0
	fi
	start=$SECONDS
	log "jaeger: building $JAEGER_PKG@$JAEGER_VERSION (Jaeger $JAEGER_V2_LABEL) with $GO_VERSION; cold builds take several minutes"
	rm -f -- "$bin.stamp" "$bin.tmp" || return 1
	mod_dir=$BIN_DIR/.build/jaeger-module
	rm -rf -- "$mod_dir" && mkdir -p -- "$mod_dir" || return 1
	if ! (cd -- "$mod_dir" && jaeger_compile "$bin"); then
		rm -f -- "$bin.tmp"
		log "jaeger: BUILD FAILED after $(fmt_secs $((SECONDS - start))) (see the go output above)"
		return 1
	fi
	if ! "$bin.tmp" version >/dev/null 2>&1; then
		rm -f -- "$bin.tmp"
		log "jaeger: built binary does not run ('jaeger version' failed)"
		return 1
	fi
	mv -f -- "$bin.tmp" "$bin" && printf '%s\n' "$stamp" >"$bin.stamp" || return 1
	log "jaeger: built $bin in $(fmt_secs $((SECONDS - start)))"
}

# ---- Collector ----------------------------------------------------------------
collector_stamp() {
	cat <<EOF
recipe=$RECIPE_REV
builder=$OTELCOL_BUILDER_MODULE@$OTELCOL_BUILDER_VERSION
manifest_sha256=$(sha256_of "$MANIFEST")
go=$GO_VERSION $GO_PLATFORM
goflags=$GOFLAGS cgo=$CGO_ENABLED
EOF
}

install_builder() {
	local dir=$BIN_DIR/.tools/builder-$OTELCOL_BUILDER_VERSION
	BUILDER=$dir/builder
	if [[ -x $BUILDER ]]; then
		log "collector: reusing ocb $OTELCOL_BUILDER_VERSION at $BUILDER"
		return 0
	fi
	log "collector: go install $OTELCOL_BUILDER_MODULE@$OTELCOL_BUILDER_VERSION (GOBIN=$dir)"
	mkdir -p -- "$dir" || return 1
	GOBIN=$dir go install "$OTELCOL_BUILDER_MODULE@$OTELCOL_BUILDER_VERSION"
	[[ -x $BUILDER ]]
}

build_collector() {
	local bin=$BIN_DIR/$OTELCOL_NAME stamp start work manifest_copy built
	[[ -f $MANIFEST ]] || {
		log "collector: manifest not found: $MANIFEST"
		return 1
	}
	stamp=$(collector_stamp)
	if is_fresh "$bin" "$stamp"; then
		log "collector: up to date (manifest unchanged, ocb $OTELCOL_BUILDER_VERSION), reusing $bin"
		return 0
	fi
	start=$SECONDS
	log "collector: building $OTELCOL_NAME from $MANIFEST with $GO_VERSION"
	rm -f -- "$bin.stamp" || return 1
	install_builder || {
		log "collector: could not install the Collector builder (ocb $OTELCOL_BUILDER_VERSION)"
		return 1
	}
	work=$BIN_DIR/.build/$OTELCOL_NAME
	rm -rf -- "$work" || return 1
	manifest_copy=$BIN_DIR/.build/builder-config.yaml
	# Point dist.output_path at the cache (the manifest's own value is a placeholder).
	awk -v out="$work" '
		/^[^ \t#]/ { indist = ($0 ~ /^dist:/) }
		indist && /^[ \t]+output_path:/ { match($0, /^[ \t]+/); printf "%soutput_path: \"%s\"\n", substr($0, 1, RLENGTH), out; n++; next }
		{ print }
		END { if (n != 1) exit 3 }
	' "$MANIFEST" >"$manifest_copy" || {
		log "collector: could not rewrite dist.output_path in $MANIFEST (need exactly one 'output_path:' line under 'dist:')"
		return 1
	}
	built=$(awk '/^[^ \t#]/ { indist = ($0 ~ /^dist:/) } indist && /^[ \t]+name:/ { sub(/^[ \t]+name:[ \t]*/, ""); gsub(/["\x27]/, ""); sub(/[ \t]*#.*/, ""); print; exit }' "$MANIFEST")
	[[ $built == "$OTELCOL_NAME" ]] || {
		log "collector: dist.name in $MANIFEST is '$built', expected '$OTELCOL_NAME'"
		return 1
	}
	log "collector: $BUILDER --config=$manifest_copy (generates sources in $work, then go build)"
	if ! "$BUILDER" --config="$manifest_copy" || [[ ! -x $work/$OTELCOL_NAME ]]; then
		log "collector: BUILD FAILED after $(fmt_secs $((SECONDS - start))): the Collector builder did not produce $work/$OTELCOL_NAME."
		log "collector: fallback: Jaeger's own binary is an OpenTelemetry Collector distribution and can run the pipeline."
		return 1
	fi
	if ! "$work/$OTELCOL_NAME" --version >/dev/null 2>&1; then
		log "collector: built binary does not run ('$OTELCOL_NAME --version' failed)"
		return 1
	fi
	cp -f -- "$work/$OTELCOL_NAME" "$bin.tmp" &&
		mv -f -- "$bin.tmp" "$bin" &&
		printf '%s\n' "$stamp" >"$bin.stamp" || return 1
	log "collector: built $bin in $(fmt_secs $((SECONDS - start)))"
}

# ---- main ---------------------------------------------------------------------
log "cache dir: $BIN_DIR (go: $GO_VERSION $GO_PLATFORM, GOMODCACHE=$(go env GOMODCACHE))"
total_start=$SECONDS
failed=()
# Collector first: it is the quicker of the two, so a broken manifest shows early.
if ((want_collector)); then
	build_collector || failed+=("$OTELCOL_NAME")
fi
if ((want_jaeger)); then
	build_jaeger || failed+=(jaeger)
fi

if ((${#failed[@]})); then
	die 1 "failed to build: ${failed[*]} (after $(fmt_secs $((SECONDS - total_start))))"
fi
log "done in $(fmt_secs $((SECONDS - total_start)))"
if ((want_jaeger)); then
	log "jaeger:       $BIN_DIR/jaeger"
	printf 'OTEL_PROV_JAEGER_BIN=%s\n' "$BIN_DIR/jaeger"
fi
if ((want_collector)); then
	log "$OTELCOL_NAME: $BIN_DIR/$OTELCOL_NAME"
	printf 'OTEL_PROV_OTELCOL_BIN=%s\n' "$BIN_DIR/$OTELCOL_NAME"
fi
