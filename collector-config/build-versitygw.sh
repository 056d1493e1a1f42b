#!/usr/bin/env bash
# build-versitygw.sh: build the Versity S3 Gateway (Apache-2.0; an S3 server over a POSIX
# directory), the S3-compatible server the tests of the blob store's S3 backend run against,
# from the Go module proxy into a cache directory outside the repo:
#
#   $OTEL_PROV_BIN_DIR/versitygw     (default $HOME/.cache/otel-prov/bin)
#
# Idempotent: reused when the binary exists and its stamp (module version, Go version, flags)
# matches; otherwise rebuilt. On success stdout gets OTEL_PROV_VERSITYGW_BIN=PATH.
# Measured on 2 shared cores: cold (empty module cache) 1m19s; reuse <0.1s.
# Exit status: 0 ready, 1 build failed, 2 no Go.

set -euo pipefail

MODULE=github.com/versity/versitygw
VERSION=${OTEL_PROV_VERSITYGW_VERSION:-v1.8.0}
BIN_DIR=${OTEL_PROV_BIN_DIR:-$HOME/.cache/otel-prov/bin}
RECIPE_REV=1

log() { printf '[build-versitygw] %s\n' "$*" >&2; }
command -v go >/dev/null 2>&1 || {
	log "ERROR: 'go' not found in PATH: install Go, then re-run"
	exit 2
}
export GOFLAGS="-trimpath -buildvcs=false" CGO_ENABLED=0 GOWORK=off
mkdir -p "$BIN_DIR"
BIN_DIR=$(cd -- "$BIN_DIR" && pwd)
bin=$BIN_DIR/versitygw
stamp="recipe=$RECIPE_REV
module=$MODULE@$VERSION
go=$(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)
goflags=$GOFLAGS cgo=$CGO_ENABLED"

exec 9>"$BIN_DIR/.lock-versitygw"
flock 9
if [[ -x $bin && -f $bin.stamp && "$(cat -- "$bin.stamp")" == "$stamp" ]]; then
	log "up to date ($MODULE@$VERSION), reusing $bin"
else
	start=$SECONDS
	log "building $MODULE/cmd/versitygw@$VERSION (cold: about a minute or two)"
	tmp=$BIN_DIR/.build/versitygw
	rm -rf -- "$tmp" && mkdir -p -- "$tmp"
	if ! GOBIN=$tmp go install "$MODULE/cmd/versitygw@$VERSION" || ! "$tmp/versitygw" --version >/dev/null 2>&1; then
		log "ERROR: the build failed after $((SECONDS - start)) s (see the go output above)"
		exit 1
	fi
	mv -f -- "$tmp/versitygw" "$bin"
	printf '%s\n' "$stamp" >"$bin.stamp"
	log "built $bin in $((SECONDS - start)) s"
fi
printf 'OTEL_PROV_VERSITYGW_BIN=%s\n' "$bin"
