#!/usr/bin/env bash
# run-local.sh: the whole scale-out path on one machine, every server on 127.0.0.1:
#
#   agents --OTLP--> front Collector (front.yaml) --kafka exporter--> Kafka broker (KRaft, one node)
#     --group otel-prov--> N x consumer Collector (consumer.yaml) --OTLP/gRPC--> N x otel-prov serve
#     --group jaeger-----> Jaeger v2 (jaeger-kafka.yaml, in-memory storage, query API/UI)
#   [optional] a SPARQL server (Oxigraph server or Fuseki) as the one shared store
#
# Starts them in dependency order, prints the endpoints, and stops everything (front first, so that
# what it holds reaches Kafka; then consumers, Jaeger, serves, SPARQL server, broker) on Ctrl-C,
# SIGTERM or when the script exits. Logs, pid files and data go to a run directory (kept).
#
# Usage: collector-config/scale/run-local.sh [--consumers N] [--sparql none|oxigraph|fuseki]
#                                            [--no-jaeger] [--run-dir DIR]
#        collector-config/scale/run-local.sh --stop RUN_DIR
#          stops what a run left behind (if its script was killed with SIGKILL), from RUN_DIR/pids
#
# Binaries: otelcol-prov and jaeger from collector-config/build-binaries.sh (built if missing;
# OTEL_PROV_BIN_DIR, or OTEL_PROV_OTELCOL_BIN / OTEL_PROV_JAEGER_BIN to use given ones); the Kafka
# broker jars (and Fuseki) from fetch-deps.sh (OTEL_PROV_DEPS_DIR); otel-prov from the repo's
# .venv, or OTEL_PROV_CMD; `oxigraph` (pip install oxigraph) for --sparql oxigraph.
#
# Ports (environment, defaults):
#   FRONT_OTLP_GRPC_PORT 4317, FRONT_OTLP_HTTP_PORT 4318   where agents send OTLP
#   FRONT_METRICS_PORT 8888                                  front Collector's own metrics
#   CONSUMER_METRICS_PORT_BASE 8890                          consumer i: base+i-1
#   SERVE_GRPC_PORT_BASE 24317                               otel-prov serve i: base+i-1 (HTTP off)
#   KAFKA_PORT 9092, KAFKA_CONTROLLER_PORT 9093              broker, KRaft controller
#   JAEGER_QUERY_HTTP_PORT 16686, JAEGER_QUERY_GRPC_PORT 16685
#   OXIGRAPH_PORT 7878, FUSEKI_PORT 3030                     with --sparql
# Other: SCALE_CONSUMERS (2), KAFKA_PARTITIONS (8), KAFKA_TOPIC (otlp_spans),
#   KAFKA_MAX_MESSAGE_BYTES (8388608), KAFKA_HEAP_OPTS (-Xms256m -Xmx512m),
#   FUSEKI_HEAP_OPTS (-Xmx1g), SCALE_RUN_DIR, SCALE_SPARQL (none),
#   SCALE_STORE_URL (see below), OTEL_PROV_SERVE_TOKEN (passed to serve and consumers).
#
# ---- THE STORE ---------------------------------------------------------------------------------
# With --sparql oxigraph|fuseki, every `otel-prov serve` writes to that ONE shared SPARQL server
# (otel-prov serve --store http://127.0.0.1:$OXIGRAPH_PORT, or .../ds for Fuseki): traces that
# Kafka redelivers after a consumer dies are then no-ops, whoever writes them. SCALE_STORE_URL
# overrides the URL (a server started elsewhere; its credentials through OTEL_PROV_STORE_USER /
# _PASSWORD / _TOKEN / _CA, which the serves inherit). Without either, each serve gets its OWN
# embedded store, oxigraph:$RUN_DIR/serve-<i>/store, which is enough to check where each trace went.
# -------------------------------------------------------------------------------------------------
#
# The last stdout line "READY <run dir>" says everything is up; pids are in <run dir>/pids/*.pid.

set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
CONFIG_DIR=$(cd -- "$SCRIPT_DIR/.." && pwd)
REPO_DIR=$(cd -- "$CONFIG_DIR/.." && pwd)
HOST=127.0.0.1

N=${SCALE_CONSUMERS:-2}
SPARQL=${SCALE_SPARQL:-none}
WITH_JAEGER=1
RUN_DIR=${SCALE_RUN_DIR:-}
STOP_DIR=

# A closed stderr (e.g. `run-local.sh 2>&1 | tee log` where tee got the same Ctrl-C) must not
# stop the clean-up half-way: write errors are ignored.
log() { printf '[run-local %s] %s\n' "$(date +%T)" "$*" >&2 2>/dev/null || true; }
die() {
	printf '[run-local] ERROR: %s\n' "$*" >&2
	exit 1
}

while (($#)); do
	case $1 in
	--consumers)
		N=${2:?--consumers needs a number}
		shift
		;;
	--sparql)
		SPARQL=${2:?--sparql needs none, oxigraph or fuseki}
		shift
		;;
	--no-jaeger) WITH_JAEGER=0 ;;
	--run-dir)
		RUN_DIR=${2:?--run-dir needs a directory}
		shift
		;;
	--stop)
		STOP_DIR=${2:?--stop needs the run directory}
		shift
		;;
	-h | --help)
		sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) die "unknown argument: $1 (see --help)" ;;
	esac
	shift
done
[[ $N =~ ^[1-9][0-9]*$ ]] || die "--consumers must be a positive number, not '$N'"
case $SPARQL in none | oxigraph | fuseki) ;; *) die "--sparql: none, oxigraph or fuseki, not '$SPARQL'" ;; esac

FRONT_OTLP_GRPC_PORT=${FRONT_OTLP_GRPC_PORT:-4317}
FRONT_OTLP_HTTP_PORT=${FRONT_OTLP_HTTP_PORT:-4318}
FRONT_METRICS_PORT=${FRONT_METRICS_PORT:-8888}
CONSUMER_METRICS_PORT_BASE=${CONSUMER_METRICS_PORT_BASE:-8890}
SERVE_GRPC_PORT_BASE=${SERVE_GRPC_PORT_BASE:-24317}
KAFKA_PORT=${KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
KAFKA_PARTITIONS=${KAFKA_PARTITIONS:-8}
KAFKA_TOPIC=${KAFKA_TOPIC:-otlp_spans}
KAFKA_MAX_MESSAGE_BYTES=${KAFKA_MAX_MESSAGE_BYTES:-8388608}
KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}
JAEGER_QUERY_HTTP_PORT=${JAEGER_QUERY_HTTP_PORT:-16686}
JAEGER_QUERY_GRPC_PORT=${JAEGER_QUERY_GRPC_PORT:-16685}
OXIGRAPH_PORT=${OXIGRAPH_PORT:-7878}
FUSEKI_PORT=${FUSEKI_PORT:-3030}
FUSEKI_HEAP_OPTS=${FUSEKI_HEAP_OPTS:--Xmx1g}
SCALE_STORE_URL=${SCALE_STORE_URL:-}
if [[ -z $SCALE_STORE_URL && $SPARQL == oxigraph ]]; then SCALE_STORE_URL=http://$HOST:$OXIGRAPH_PORT; fi
if [[ -z $SCALE_STORE_URL && $SPARQL == fuseki ]]; then SCALE_STORE_URL=http://$HOST:$FUSEKI_PORT/ds; fi
BROKERS=$HOST:$KAFKA_PORT

if ((N > KAFKA_PARTITIONS)); then
	log "warning: $N consumers but $KAFKA_PARTITIONS partitions: $((N - KAFKA_PARTITIONS)) consumer(s) will idle"
fi

# ---- process handling ----------------------------------------------------------------------------
# Every component runs in its own session (setsid), so a Ctrl-C reaches only this script, which then
# stops them in order.
declare -a STARTED=()
declare -A T_START=()
start() { # start NAME LOGFILE CMD...; extra environment via `env` in CMD
	local name=$1 logf=$2
	shift 2
	setsid "$@" >"$logf" 2>&1 </dev/null &
	echo $! >"$RUN_DIR/pids/$name.pid"
	STARTED+=("$name")
	T_START[$name]=$(date +%s.%N)
}
# pid_of NAME: its pid, only while that process is still the one started here (its command line
# names this run's directory or these config files, or it runs in this run's directory), so a stale
# pid file never hits another process.
pid_of() {
	local p
	p=$(cat "$RUN_DIR/pids/$1.pid" 2>/dev/null) && [[ -n $p ]] || return 1
	local cmdline state
	if [[ -r /proc/$p/cmdline ]]; then
		cmdline=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || cmdline=
		# Empty for a moment while the process execs (a fast server is checked right then; taking it
		# for a stranger made run-local report it dead and stop everything), and for a zombie.
		if [[ -z $cmdline ]]; then
			state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$p/status" 2>/dev/null) || state=
			[[ -n $state && $state != Z ]] || return 1
		else
			grep -qF -e "$RUN_DIR" -e "$SCRIPT_DIR" <<<"$cmdline" ||
				[[ $(readlink "/proc/$p/cwd" 2>/dev/null) == "$RUN_DIR"/* ]] || return 1
		fi
	fi
	printf '%s\n' "$p"
}
alive() {
	local p
	p=$(pid_of "$1") && [[ -n $p ]] && kill -0 "$p" 2>/dev/null
}
elapsed() { printf '%.1f' "$(echo "$(date +%s.%N) - ${T_START[$1]}" | bc)"; }

# wait_ready NAME TIMEOUT CHECK...: run CHECK until it succeeds; fail if NAME dies or time runs out.
wait_ready() {
	local name=$1 timeout=$2 deadline
	shift 2
	deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		alive "$name" || {
			log "$name exited during startup; last lines of its log:"
			tail -n 20 "$RUN_DIR/logs/$name.log" >&2 || true
			return 1
		}
		((SECONDS < deadline)) || {
			log "$name not ready after ${timeout}s; last lines of its log:"
			tail -n 20 "$RUN_DIR/logs/$name.log" >&2 || true
			return 1
		}
		sleep 0.1
	done
	local t
	t=$(elapsed "$name")
	echo "$name $t" >>"$RUN_DIR/startup-times.txt"
	log "$name ready in ${t}s (pid $(pid_of "$name"))"
}
log_has() { grep -q -- "$2" "$RUN_DIR/logs/$1.log"; }

stop_one() { # stop_one NAME GRACE_SECONDS: SIGTERM to its process group, SIGKILL after the grace
	local name=$1 grace=$2 p i
	p=$(pid_of "$name") || return 0
	[[ -n $p ]] || return 0
	kill -0 "$p" 2>/dev/null || return 0
	kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
	for ((i = 0; i < grace * 10; i++)); do
		kill -0 "$p" 2>/dev/null || return 0
		sleep 0.1
	done
	log "$name did not stop in ${grace}s: SIGKILL"
	kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
}
stop_group() { # stop_group GRACE NAME...: SIGTERM all at once, then wait for each
	local grace=$1 n
	shift
	for n in "$@"; do
		local p
		p=$(pid_of "$n") || continue
		kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
	done
	for n in "$@"; do stop_one "$n" "$grace"; done
}

STOPPING=0
ARMED=0
cleanup() {
	((STOPPING == 0)) || return 0
	STOPPING=1
	trap '' INT TERM HUP PIPE
	set +e
	# Only what this invocation started (or, with --stop, what the given run dir lists): an early
	# failure (e.g. a port in use because that run dir's components still run) stops nothing.
	((ARMED)) || return 0
	[[ -n $RUN_DIR && -d $RUN_DIR/pids ]] || return 0
	log "stopping (front, consumers + jaeger, serves, sparql, broker)"
	local consumers=() serves=() f
	for f in "$RUN_DIR"/pids/consumer-*.pid; do [[ -e $f ]] && consumers+=("$(basename "$f" .pid)"); done
	for f in "$RUN_DIR"/pids/serve-*.pid; do [[ -e $f ]] && serves+=("$(basename "$f" .pid)"); done
	stop_one front 20
	stop_group 20 "${consumers[@]}" jaeger
	stop_group 40 "${serves[@]}"
	stop_group 20 oxigraph fuseki
	stop_one kafka 30
	log "stopped; run dir kept: $RUN_DIR"
}
if [[ -n $STOP_DIR ]]; then
	RUN_DIR=$(cd -- "$STOP_DIR" && pwd) || die "no such run directory: $STOP_DIR"
	[[ -d $RUN_DIR/pids ]] || die "$RUN_DIR has no pids/ directory"
	ARMED=1
	cleanup
	exit 0
fi
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# ---- tools -------------------------------------------------------------------------------------
command -v java >/dev/null || die "java not found (Java 17+)"
if [[ -n ${OTEL_PROV_CMD:-} ]]; then
	read -r -a PROV_CMD <<<"$OTEL_PROV_CMD"
elif [[ -x $REPO_DIR/.venv/bin/otel-prov ]]; then
	PROV_CMD=("$REPO_DIR/.venv/bin/otel-prov")
elif command -v otel-prov >/dev/null; then
	PROV_CMD=(otel-prov)
else
	die "otel-prov not found: run 'bash .ci/setup' or set OTEL_PROV_CMD"
fi

OTELCOL_BIN=${OTEL_PROV_OTELCOL_BIN:-}
JAEGER_BIN=${OTEL_PROV_JAEGER_BIN:-}
if [[ -z $OTELCOL_BIN || ($WITH_JAEGER == 1 && -z $JAEGER_BIN) ]]; then
	build_args=()
	[[ -n $OTELCOL_BIN ]] && build_args=(--jaeger-only)
	[[ $WITH_JAEGER == 0 || -n $JAEGER_BIN ]] && build_args=(--collector-only)
	log "checking binaries: build-binaries.sh ${build_args[*]:-} (builds what is missing; minutes when cold)"
	built=$(bash "$CONFIG_DIR/build-binaries.sh" "${build_args[@]}") || die "build-binaries.sh failed"
	[[ -n $OTELCOL_BIN ]] || OTELCOL_BIN=$(sed -n 's/^OTEL_PROV_OTELCOL_BIN=//p' <<<"$built")
	[[ -n $JAEGER_BIN || $WITH_JAEGER == 0 ]] || JAEGER_BIN=$(sed -n 's/^OTEL_PROV_JAEGER_BIN=//p' <<<"$built")
fi
"$OTELCOL_BIN" components 2>/dev/null | grep -q 'name: kafka' ||
	die "$OTELCOL_BIN has no kafka components: rebuild it from collector-config/builder-config.yaml"

fetch_what=(kafka)
[[ $SPARQL == fuseki ]] && fetch_what+=(fuseki)
deps=$(bash "$SCRIPT_DIR/fetch-deps.sh" "${fetch_what[@]}") || die "fetch-deps.sh failed"
KAFKA_LIB=$(sed -n 's/^OTEL_PROV_KAFKA_LIB=//p' <<<"$deps")
FUSEKI_JAR=$(sed -n 's/^OTEL_PROV_FUSEKI_JAR=//p' <<<"$deps")
if [[ $SPARQL == oxigraph ]]; then
	OXIGRAPH_BIN=${OXIGRAPH_BIN:-$(command -v oxigraph || true)}
	[[ -z $OXIGRAPH_BIN && -x $REPO_DIR/.venv/bin/oxigraph ]] && OXIGRAPH_BIN=$REPO_DIR/.venv/bin/oxigraph
	[[ -n $OXIGRAPH_BIN ]] || die "oxigraph not found: pip install oxigraph (or set OXIGRAPH_BIN)"
fi

# ---- ports and run dir ---------------------------------------------------------------------------
port_busy() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }
ports=("$FRONT_OTLP_GRPC_PORT" "$FRONT_OTLP_HTTP_PORT" "$FRONT_METRICS_PORT" "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT")
for ((i = 1; i <= N; i++)); do
	ports+=($((CONSUMER_METRICS_PORT_BASE + i - 1)) $((SERVE_GRPC_PORT_BASE + i - 1)))
done
((WITH_JAEGER)) && ports+=("$JAEGER_QUERY_HTTP_PORT" "$JAEGER_QUERY_GRPC_PORT")
[[ $SPARQL == oxigraph ]] && ports+=("$OXIGRAPH_PORT")
[[ $SPARQL == fuseki ]] && ports+=("$FUSEKI_PORT")
dupes=$(printf '%s\n' "${ports[@]}" | sort | uniq -d | tr '\n' ' ')
[[ -z $dupes ]] || die "port(s) configured twice: $dupes"
for p in "${ports[@]}"; do
	! port_busy "$p" || die "port $HOST:$p is already in use (set the matching *_PORT variable)"
done

if [[ -z $RUN_DIR ]]; then
	RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/otel-prov-scale.XXXXXX")
fi
mkdir -p "$RUN_DIR/pids" "$RUN_DIR/logs"
RUN_DIR=$(cd -- "$RUN_DIR" && pwd)
# The ports are free, so nothing of an earlier run in this directory is still serving.
rm -f -- "$RUN_DIR"/pids/*.pid "$RUN_DIR/startup-times.txt"
ARMED=1
log "run dir: $RUN_DIR (logs in logs/, pids in pids/)"

# ---- 1. Kafka broker -----------------------------------------------------------------------------
KAFKA_DATA=$RUN_DIR/kafka-data
sed -e "s#@KAFKA_HOST@#$HOST#g" -e "s#@KAFKA_PORT@#$KAFKA_PORT#g" \
	-e "s#@KAFKA_CONTROLLER_PORT@#$KAFKA_CONTROLLER_PORT#g" -e "s#@KAFKA_DATA_DIR@#$KAFKA_DATA#g" \
	-e "s#@KAFKA_PARTITIONS@#$KAFKA_PARTITIONS#g" -e "s#@KAFKA_MAX_MESSAGE_BYTES@#$KAFKA_MAX_MESSAGE_BYTES#g" \
	"$SCRIPT_DIR/server.properties.in" >"$RUN_DIR/server.properties"
KAFKA_JAVA=(java -cp "$KAFKA_LIB/*" "-Dlog4j2.configurationFile=$SCRIPT_DIR/kafka-log4j2.properties")
if [[ ! -f $KAFKA_DATA/meta.properties ]]; then
	# A cluster id is 16 random bytes, base64url without padding (what `StorageTool random-uuid` prints);
	# one that starts with '-' would be read by StorageTool as an option, so draw again.
	cluster_id=-
	while [[ $cluster_id == -* ]]; do
		cluster_id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
	done
	t0=$(date +%s.%N)
	"${KAFKA_JAVA[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$RUN_DIR/server.properties" \
		>"$RUN_DIR/logs/kafka-format.log" 2>&1 || {
		tail -n 20 "$RUN_DIR/logs/kafka-format.log" >&2
		die "kafka storage format failed"
	}
	log "kafka storage formatted in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)")s (cluster id $cluster_id)"
fi
# shellcheck disable=SC2086 # KAFKA_HEAP_OPTS is a list of JVM options
start kafka "$RUN_DIR/logs/kafka.log" "${KAFKA_JAVA[@]:0:1}" $KAFKA_HEAP_OPTS "${KAFKA_JAVA[@]:1}" \
	kafka.Kafka "$RUN_DIR/server.properties"
wait_ready kafka 90 log_has kafka 'Kafka Server started' || exit 1

# ---- 2. optional SPARQL server ---------------------------------------------------------------------
case $SPARQL in
oxigraph)
	mkdir -p "$RUN_DIR/oxigraph"
	start oxigraph "$RUN_DIR/logs/oxigraph.log" "$OXIGRAPH_BIN" serve --location "$RUN_DIR/oxigraph" \
		--bind "$HOST:$OXIGRAPH_PORT"
	wait_ready oxigraph 60 port_busy "$OXIGRAPH_PORT" || exit 1
	;;
fuseki)
	mkdir -p "$RUN_DIR/fuseki-tdb2"
	# shellcheck disable=SC2086
	# FUSEKI_BASE: where Fuseki keeps its run area (config.ttl, a default shiro.ini, logs, backups);
	# its default is ./run in the CURRENT directory.
	start fuseki "$RUN_DIR/logs/fuseki.log" env FUSEKI_BASE="$RUN_DIR/fuseki-base" \
		java $FUSEKI_HEAP_OPTS -jar "$FUSEKI_JAR" --localhost \
		--port "$FUSEKI_PORT" --tdb2 --loc "$RUN_DIR/fuseki-tdb2" --update /ds
	wait_ready fuseki 90 curl -fsS "http://$HOST:$FUSEKI_PORT/\$/ping" || exit 1
	;;
esac

# ---- 3. otel-prov serve x N ----------------------------------------------------------------------
# SERVE_STORE_ARG i: the --store value of serve i: the one shared SPARQL store (SCALE_STORE_URL), or
# an embedded store of its own.
SERVE_STORE_ARG() {
	if [[ -n $SCALE_STORE_URL ]]; then
		printf '%s' "$SCALE_STORE_URL"
	else
		printf 'oxigraph:%s' "$RUN_DIR/serve-$1/store"
	fi
}
for ((i = 1; i <= N; i++)); do
	mkdir -p "$RUN_DIR/serve-$i"
	# In its own directory (env -C): a shared store's URL does not name the run dir, its cwd does.
	start "serve-$i" "$RUN_DIR/logs/serve-$i.log" env -C "$RUN_DIR/serve-$i" "${PROV_CMD[@]}" serve \
		--store "$(SERVE_STORE_ARG "$i")" \
		--host "$HOST" --grpc-port $((SERVE_GRPC_PORT_BASE + i - 1)) --http-port off
done
for ((i = 1; i <= N; i++)); do
	wait_ready "serve-$i" 60 port_busy $((SERVE_GRPC_PORT_BASE + i - 1)) || exit 1
done

# ---- 4. consumer Collectors x N, and Jaeger ---------------------------------------------------------
for ((i = 1; i <= N; i++)); do
	start "consumer-$i" "$RUN_DIR/logs/consumer-$i.log" env \
		OTELCOL_KAFKA_BROKERS="$BROKERS" OTELCOL_KAFKA_TOPIC="$KAFKA_TOPIC" \
		OTELCOL_KAFKA_CLIENT_ID="otel-prov-consumer-$i" \
		OTELCOL_PROV_ENDPOINT="$HOST:$((SERVE_GRPC_PORT_BASE + i - 1))" \
		OTELCOL_METRICS_PORT=$((CONSUMER_METRICS_PORT_BASE + i - 1)) \
		"$OTELCOL_BIN" --config "$SCRIPT_DIR/consumer.yaml"
done
if ((WITH_JAEGER)); then
	start jaeger "$RUN_DIR/logs/jaeger.log" env \
		JAEGER_KAFKA_BROKERS="$BROKERS" JAEGER_KAFKA_TOPIC="$KAFKA_TOPIC" \
		JAEGER_QUERY_HTTP_ENDPOINT="$HOST:$JAEGER_QUERY_HTTP_PORT" \
		JAEGER_QUERY_GRPC_ENDPOINT="$HOST:$JAEGER_QUERY_GRPC_PORT" \
		"$JAEGER_BIN" --config "$SCRIPT_DIR/jaeger-kafka.yaml"
fi
for ((i = 1; i <= N; i++)); do
	wait_ready "consumer-$i" 60 log_has "consumer-$i" 'Everything is ready' || exit 1
done
if ((WITH_JAEGER)); then
	wait_ready jaeger 60 log_has jaeger 'Everything is ready' || exit 1
fi

# ---- 5. front Collector ----------------------------------------------------------------------------
start front "$RUN_DIR/logs/front.log" env \
	OTELCOL_OTLP_GRPC_ENDPOINT="$HOST:$FRONT_OTLP_GRPC_PORT" OTELCOL_OTLP_HTTP_ENDPOINT="$HOST:$FRONT_OTLP_HTTP_PORT" \
	OTELCOL_KAFKA_BROKERS="$BROKERS" OTELCOL_KAFKA_TOPIC="$KAFKA_TOPIC" OTELCOL_METRICS_PORT="$FRONT_METRICS_PORT" \
	"$OTELCOL_BIN" --config "$SCRIPT_DIR/front.yaml"
wait_ready front 60 log_has front 'Everything is ready' || exit 1

# ---- endpoints -------------------------------------------------------------------------------------
{
	echo "agents:  OTEL_EXPORTER_OTLP_ENDPOINT=http://$HOST:$FRONT_OTLP_GRPC_PORT  (OTLP/gRPC; OTLP/HTTP: http://$HOST:$FRONT_OTLP_HTTP_PORT/v1/traces)"
	echo "kafka:   $BROKERS  topic $KAFKA_TOPIC ($KAFKA_PARTITIONS partitions on creation), groups otel-prov$( ((WITH_JAEGER)) && echo ', jaeger')"
	for ((i = 1; i <= N; i++)); do
		echo "serve-$i: OTLP/gRPC $HOST:$((SERVE_GRPC_PORT_BASE + i - 1)), store $(SERVE_STORE_ARG "$i")  <- consumer-$i (metrics http://$HOST:$((CONSUMER_METRICS_PORT_BASE + i - 1))/metrics)"
	done
	((WITH_JAEGER)) && echo "jaeger:  http://$HOST:$JAEGER_QUERY_HTTP_PORT  (API: /api/services, /api/traces/<id>; gRPC query $HOST:$JAEGER_QUERY_GRPC_PORT)"
	[[ $SPARQL == oxigraph ]] && echo "sparql:  Oxigraph http://$HOST:$OXIGRAPH_PORT  (/query, /update, /store)"
	[[ $SPARQL == fuseki ]] && echo "sparql:  Fuseki http://$HOST:$FUSEKI_PORT/ds  (/ds/query, /ds/update, /ds/data; POST /ds with N-Quads)"
	echo "front metrics: http://$HOST:$FRONT_METRICS_PORT/metrics; logs: $RUN_DIR/logs"
	if [[ -n $SCALE_STORE_URL ]]; then
		echo "store:   $SCALE_STORE_URL, shared by every serve (otel-prov list --store $SCALE_STORE_URL)"
	else
		echo "store:   one embedded store per serve (no --sparql and no SCALE_STORE_URL)"
	fi
} | tee "$RUN_DIR/endpoints.txt"
echo "READY $RUN_DIR"
log "running; Ctrl-C stops everything"

# ---- wait; report components that exit (e.g. a consumer killed on purpose) ------------------------
declare -A REPORTED=()
while :; do
	for n in "${STARTED[@]}"; do
		if [[ -z ${REPORTED[$n]:-} ]] && ! alive "$n"; then
			REPORTED[$n]=1
			log "$n (pid $(pid_of "$n")) has exited; the others keep running"
		fi
	done
	sleep 1 &
	wait $! || true
done
