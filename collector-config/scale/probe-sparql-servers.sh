#!/usr/bin/env bash
# probe-sparql-servers.sh: start a real Oxigraph server (RocksDB) and a real Apache Jena Fuseki
# (TDB2) on 127.0.0.1, measure their start-up, and record how each answers the requests a
# remote-store writer would make: SPARQL query/update, the Graph Store Protocol, and a POST of a
# whole N-Quads dataset (also again, to see that it is idempotent, and a malformed one, to see
# that it is atomic). Then Fuseki's two ways to require a login (--passwd/--auth, --shiro).
# Everything it starts is stopped before it exits; data goes to a temporary directory.
#
# Usage: collector-config/scale/probe-sparql-servers.sh [--data FILE.nq] [--only oxigraph|fuseki]
# Environment: OXIGRAPH_PORT (37878), FUSEKI_PORT (33030), OXIGRAPH_BIN (oxigraph in PATH),
#   OTEL_PROV_DEPS_DIR (fetch-deps.sh's cache, for the Fuseki jar).
# Output: one line per request: server, method, path, content type, HTTP status, and what it did.

set -euo pipefail
SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
HOST=127.0.0.1
OXIGRAPH_PORT=${OXIGRAPH_PORT:-37878}
FUSEKI_PORT=${FUSEKI_PORT:-33030}
DATA=
ONLY=
while (($#)); do
	case $1 in
	--data) DATA=$2; shift ;;
	--only) ONLY=$2; shift ;;
	-h | --help) sed -n '2,/^$/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/otel-prov-sparql-probe.XXXXXX")
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
	done
	rm -rf -- "$WORK"
}
trap cleanup EXIT

if [[ -z $DATA ]]; then
	# 2,000 quads shaped like otel-prov's (one graph, IRIs, typed and plain literals).
	DATA=$WORK/sample.nq
	awk 'BEGIN { for (i = 0; i < 500; i++) {
		s = "<urn:trustgraph:agent:probe-" i ">"; g = "<urn:graph:retrieval>"
		print s " <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <https://trustgraph.ai/ns/Question> " g " ."
		print s " <https://trustgraph.ai/ns/query> \"What is " i " times 7?\" " g " ."
		print s " <https://w3id.org/otel-prov/ns#traceId> \"" sprintf("%032x", i) "\" " g " ."
		print s " <http://www.w3.org/ns/prov#startedAtTime> \"2026-11-30T10:00:00Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> " g " ."
	} }' >"$DATA"
fi
NQ=$(sort -u "$DATA" | wc -l)
printf 'n. of distinct quads in %s: %s\n' "$DATA" "$NQ"
printf 'a b c .\n<urn:x> <urn:y> "unterminated <urn:g> .\n' >"$WORK/bad.nq"
printf '<urn:probe:s> <urn:probe:p> "turtle" .\n' >"$WORK/g.ttl"
# 100 quads that are not in DATA, in graph <urn:probe:other>
awk 'NR <= 100 { print "<urn:probe:o" NR "> <urn:probe:p> \"" NR "\" <urn:probe:other> ." }' "$DATA" >"$WORK/other.nq"
printf '<urn:probe:s> <urn:probe:p> "ntriples" .\n' >"$WORK/g.nt"

# req SERVER METHOD URL [CONTENT_TYPE [BODY_FILE]] [-- curl args]: prints the status line
req() {
	local server=$1 method=$2 url=$3 ctype=${4:-} body=${5:-} code args=()
	shift $(($# < 5 ? $# : 5))
	[[ -n $ctype ]] && args+=(-H "Content-Type: $ctype")
	[[ -n $body ]] && args+=(--data-binary "@$body")
	code=$(curl -s -o "$WORK/resp" -w '%{http_code}' -X "$method" "${args[@]}" "$@" "$url") || code="curl-failed"
	printf '%-8s %-6s %-62s %-28s -> %s  %s\n' "$server" "$method" "${url#http://$HOST:*/}" "${ctype:--}" "$code" \
		"$(head -c 160 "$WORK/resp" | tr '\n' ' ')"
}
# count SERVER QUERY_URL [curl args]: number of quads in named graphs + triples in the default graph
count() {
	local url=$1
	shift
	curl -s -H 'Accept: text/csv' "$@" --data-urlencode \
		'query=SELECT (COUNT(*) AS ?n) WHERE { { GRAPH ?g { ?s ?p ?o } } UNION { ?s ?p ?o } }' "$url" |
		tail -n 1 | tr -d '\r'
}
count_graph() { # count_graph QUERY_URL GRAPH_IRI
	curl -s -H 'Accept: text/csv' --data-urlencode \
		"query=SELECT (COUNT(*) AS ?n) WHERE { GRAPH <$2> { ?s ?p ?o } }" "$1" | tail -n 1 | tr -d '\r'
}
wait_http() { # wait_http URL TIMEOUT_S [curl args] -> prints seconds
	local url=$1 timeout=$2 t0
	shift 2
	t0=$(date +%s.%N)
	for _ in $(seq $((timeout * 20))); do
		if curl -fs -o /dev/null "$@" "$url"; then
			printf '%.2f' "$(echo "$(date +%s.%N) - $t0" | bc)"
			return 0
		fi
		sleep 0.05
	done
	echo "not-up"
	return 1
}

probe_common() { # probe_common NAME BASE QUERY UPDATE GSP DATASET_POST_URL
	local n=$1 q=$3 u=$4 gsp=$5 ds=$6 c
	req "$n" POST "$ds" application/n-quads "$DATA"
	c=$(count "$q"); echo "         count after POST: $c (expected $NQ)"
	req "$n" POST "$ds" application/n-quads "$DATA"
	c=$(count "$q"); echo "         count after the same POST again: $c (an RDF dataset is a set)"
	req "$n" POST "$ds" application/n-quads "$WORK/bad.nq"
	c=$(count "$q"); echo "         count after a malformed POST: $c (unchanged = atomic)"
	printf 'INSERT DATA { GRAPH <urn:probe:upd> { <urn:probe:s> <urn:probe:p> "update" } }' >"$WORK/ins.ru"
	req "$n" POST "$u" application/sparql-update "$WORK/ins.ru"
	printf 'DELETE DATA { GRAPH <urn:probe:upd> { <urn:probe:s> <urn:probe:p> "update" } }' >"$WORK/del.ru"
	req "$n" POST "$u" application/sparql-update "$WORK/del.ru"
	req "$n" GET "$q?query=ASK%7B%7D" "" "" -H 'Accept: application/sparql-results+json'
	req "$n" PUT "$gsp?graph=urn:probe:put" text/turtle "$WORK/g.ttl"
	req "$n" POST "$gsp?graph=urn:probe:put" application/n-triples "$WORK/g.nt"
	req "$n" GET "$gsp?graph=urn:probe:put" "" "" -H 'Accept: application/n-triples'
	req "$n" DELETE "$gsp?graph=urn:probe:put"
	req "$n" GET "$gsp?graph=urn:probe:put"
	req "$n" POST "$gsp?graph=urn:probe:nq" application/n-quads "$WORK/other.nq"
	echo "         N-Quads POSTed to ?graph=urn:probe:nq: $(count_graph "$q" urn:probe:nq) in that graph, $(count_graph "$q" urn:probe:other) in their own graph <urn:probe:other> (of 100)"
	req "$n" POST "$gsp?default" application/n-triples "$WORK/g.nt"
	req "$n" GET "$ds" "" "" -H 'Accept: application/n-quads'
	echo "         (GET of the dataset returned $(grep -c . "$WORK/resp" || true) lines)"
}

# ---- Oxigraph ------------------------------------------------------------------------------------
if [[ -z $ONLY || $ONLY == oxigraph ]]; then
	OX=${OXIGRAPH_BIN:-$(command -v oxigraph || true)}
	[[ -n $OX ]] || { echo "oxigraph not found (pip install oxigraph, or OXIGRAPH_BIN)" >&2; exit 1; }
	echo "== Oxigraph server $("$OX" --version | awk '{print $2}') (RocksDB at $WORK/oxigraph)"
	"$OX" serve --location "$WORK/oxigraph" --bind "$HOST:$OXIGRAPH_PORT" >"$WORK/oxigraph.log" 2>&1 &
	PIDS+=($!)
	B=http://$HOST:$OXIGRAPH_PORT
	echo "started: query endpoint answers after $(wait_http "$B/query?query=ASK%7B%7D" 60)s"
	probe_common oxigraph "$B" "$B/query" "$B/update" "$B/store" "$B/store"
	req oxigraph POST "$B/store?no_transaction&lenient" application/n-quads "$DATA"
	req oxigraph PUT "$B/store" application/n-quads "$DATA"
	echo "         count after PUT of the dataset (replaces it): $(count "$B/query")"
	req oxigraph POST "$B/query" application/sparql-query <(printf 'ASK {}') -H 'Accept: application/sparql-results+json'
	req oxigraph GET "$B/"
	echo "auth: none in the server (no option); bind to loopback and put a reverse proxy with auth in front"
fi

# ---- Fuseki --------------------------------------------------------------------------------------
if [[ -z $ONLY || $ONLY == fuseki ]]; then
	JAR=$(bash "$SCRIPT_DIR/fetch-deps.sh" fuseki 2>/dev/null | sed -n 's/^OTEL_PROV_FUSEKI_JAR=//p')
	[[ -f $JAR ]] || { echo "Fuseki jar not found (fetch-deps.sh fuseki)" >&2; exit 1; }
	fuseki() { # fuseki NAME EXTRA_ARGS...: start, wait, print start-up time
		local name=$1
		shift
		mkdir -p "$WORK/$name"
		# FUSEKI_BASE: its run area (config.ttl, a default shiro.ini, logs); default ./run in the cwd.
		FUSEKI_BASE="$WORK/$name-base" java -Xmx1g -jar "$JAR" --localhost --port "$FUSEKI_PORT" --tdb2 --loc "$WORK/$name" "$@" --update /ds \
			>"$WORK/$name.log" 2>&1 &
		FPID=$!
		PIDS+=("$FPID")
	}
	stop_fuseki() {
		kill -TERM "$FPID"
		for _ in $(seq 100); do kill -0 "$FPID" 2>/dev/null || break; sleep 0.1; done
	}
	echo "== Fuseki $(basename "$JAR" .jar) (TDB2 at $WORK/tdb2)"
	fuseki tdb2
	F=http://$HOST:$FUSEKI_PORT
	echo "started: /ds/query answers after $(wait_http "$F/ds/query?query=ASK%7B%7D" 90)s"
	probe_common fuseki "$F" "$F/ds/query" "$F/ds/update" "$F/ds/data" "$F/ds"
	req fuseki PUT "$F/ds" application/n-quads "$DATA"
	echo "         count after PUT of the dataset: $(count "$F/ds/query")"
	req fuseki GET "$F/ds?query=ASK%7B%7D"
	req fuseki POST "$F/ds" application/sparql-update "$WORK/ins.ru"
	req fuseki POST "$F/ds/sparql" application/sparql-query <(printf 'ASK {}')
	req fuseki PUT "$F/ds/get?graph=urn:probe:ro" text/turtle "$WORK/g.ttl"
	req fuseki GET "$F/\$/ping"
	req fuseki GET "$F/\$/server"
	stop_fuseki

	echo "== Fuseki with --passwd FILE --auth basic"
	printf 'writer: s3cret\n' >"$WORK/passwd"
	fuseki tdb2-passwd --passwd "$WORK/passwd" --auth basic
	echo "started after $(wait_http "$F/ds/query?query=ASK%7B%7D" 90 -u writer:s3cret)s"
	req fuseki GET "$F/ds/query?query=ASK%7B%7D"
	req fuseki GET "$F/ds/query?query=ASK%7B%7D" "" "" -u writer:wrong
	req fuseki GET "$F/ds/query?query=ASK%7B%7D" "" "" -u writer:s3cret
	req fuseki POST "$F/ds" application/n-quads "$DATA"
	req fuseki POST "$F/ds" application/n-quads "$DATA" -u writer:s3cret
	stop_fuseki

	echo "== Fuseki with --shiro FILE (Apache Shiro ini: users + URL rules)"
	cat >"$WORK/shiro.ini" <<'EOF'
[main]
# Stateless Basic authentication: without this line and `noSessionCreation` below, every
# authenticated request fails with 500 "IllegalStateException: No SessionManager" (Fuseki's Jetty
# has no servlet sessions).
# Plain-text passwords only for this probe (Shiro supports hashed ones: sha256Matcher etc.).
securityManager.subjectDAO.sessionStorageEvaluator.sessionStorageEnabled = false
[users]
writer = s3cret, rw
reader = r3ad, ro
[roles]
rw = *
ro = *
[urls]
# First match wins: readers may query; only role rw may write (/ds = dataset POST, /ds/update,
# /ds/data).
/$/ping = anon
/ds/query = noSessionCreation, authcBasic
/ds/sparql = noSessionCreation, authcBasic
/ds/** = noSessionCreation, authcBasic, roles[rw]
/ds = noSessionCreation, authcBasic, roles[rw]
/** = noSessionCreation, authcBasic
EOF
	fuseki tdb2-shiro --shiro "$WORK/shiro.ini"
	echo "started after $(wait_http "$F/ds/query?query=ASK%7B%7D" 90 -u writer:s3cret)s"
	req fuseki GET "$F/\$/ping"
	req fuseki GET "$F/ds/query?query=ASK%7B%7D"
	req fuseki GET "$F/ds/query?query=ASK%7B%7D" "" "" -u reader:r3ad
	req fuseki POST "$F/ds" application/n-quads "$DATA" -u reader:r3ad
	req fuseki POST "$F/ds" application/n-quads "$DATA" -u writer:s3cret
	stop_fuseki
fi
