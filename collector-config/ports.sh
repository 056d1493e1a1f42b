#!/usr/bin/env bash
# ports.sh: move every port of the local set-up (the Collector, Jaeger, otel-prov serve and ui, and
# where agents send) by one offset, when the defaults collide with other software on this host.
#
#   eval "$(bash collector-config/ports.sh 30000)"   # 4317 -> 34317, 16686 -> 46686, ...
#   eval "$(bash collector-config/ports.sh 0)"       # the defaults again
#
# It prints `export NAME=VALUE` lines for the variables every config here reads
# (collector-config/otelcol.yaml, jaeger.yaml, jaeger-ui.sh, otel-prov serve and ui, the OTLP exporter
# of an agent under opentelemetry-instrument); start everything from that shell afterwards.
set -euo pipefail
base=${1:-0}
if ! [[ $base =~ ^[0-9]+$ ]] || ((base > 65535 - 24318)); then
	echo "ports.sh: the offset must be a whole number from 0 to $((65535 - 24318)), not '$base'" >&2
	exit 2
fi
p() { echo $((base + $1)); }
host=127.0.0.1
cat <<VARS
export OTELCOL_OTLP_GRPC_ENDPOINT=$host:$(p 4317) OTELCOL_OTLP_HTTP_ENDPOINT=$host:$(p 4318)
export OTEL_EXPORTER_OTLP_ENDPOINT=http://$host:$(p 4317)
export OTELCOL_METRICS_PORT=$(p 8888)
export JAEGER_OTLP_GRPC_ENDPOINT=$host:$(p 14317) JAEGER_OTLP_HTTP_ENDPOINT=$host:$(p 14318)
export OTELCOL_JAEGER_ENDPOINT=$host:$(p 14317)
export JAEGER_QUERY_HTTP_ENDPOINT=$host:$(p 16686) JAEGER_QUERY_GRPC_ENDPOINT=$host:$(p 16685)
export OTEL_PROV_JAEGER_URL=http://$host:$(p 16686)
export OTEL_PROV_SERVE_GRPC_PORT=$(p 24317) OTEL_PROV_SERVE_HTTP_PORT=$(p 24318)
export OTELCOL_PROV_ENDPOINT=$host:$(p 24317)
export OTEL_PROV_UI_PORT=$(p 8080) OTEL_PROV_UI_URL=http://$host:$(p 8080)
VARS
