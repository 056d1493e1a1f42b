#!/usr/bin/env bash
# fetch-deps.sh: get the Java servers of the scale-out path from Maven Central
# (through `mvn`, the only way they can be had here) into a cache directory
# OUTSIDE the repo:
#
#   $OTEL_PROV_DEPS_DIR/kafka-<v>/lib/*.jar        a one-node KRaft Kafka broker:
#       org.apache.kafka:kafka_2.13 (the broker, kafka.Kafka, and the storage
#       tool, kafka.tools.StorageTool) with the smallest runtime classpath that
#       was found to work, plus log4j-slf4j-impl so the broker's log shows.
#   $OTEL_PROV_DEPS_DIR/fuseki-<v>/jena-fuseki-server-<v>.jar
#       Apache Jena Fuseki (a self-contained jar; 5.6.0 runs on Java 17,
#       6.x needs Java 21+).
#
# OTEL_PROV_DEPS_DIR defaults to $HOME/.cache/otel-prov/deps. Maven's own local
# repository (~/.m2/repository, or OTEL_PROV_MAVEN_REPO) keeps the downloads,
# so a later run with an emptied deps dir needs no network.
#
# Idempotent: a component is reused when its .stamp (versions + the generated
# pom's sha256) matches; otherwise it is fetched again into a temporary
# directory and moved into place. Nothing is written into the repo.
#
# Usage: fetch-deps.sh [kafka|fuseki|all] [--force]
#        fetch-deps.sh --print-dir
# stdout (on success): OTEL_PROV_KAFKA_LIB=<dir of jars>,
#                      OTEL_PROV_FUSEKI_JAR=<jar>
# Exit status: 0 ready, 1 fetch failed, 2 bad usage / no mvn or java.
#
# The Kafka classpath: kafka_2.13 4.4.0 resolves to 44 runtime jars (43 MB).
# A broker started with -Xlog:class+load and exercised with produce/consume
# in a consumer group (none/gzip/snappy/lz4/zstd) plus `StorageTool format`
# never loaded a class from the ones excluded below (scala-reflect, jose4j
# [SASL/OAUTHBEARER only], caffeine [tiered-storage index cache only],
# jackson-dataformat-yaml + snakeyaml [Docker wrapper / YAML log config only],
# and commons-beanutils/-collections/-digester/-logging [commons-validator's
# XML framework; Kafka uses only its routines]). Result: 36 jars, about 37 MB.
# kafka-tools (the CLI tools, ~90 jars with it) is NOT needed for the broker
# or for formatting its storage.
# Measured on 2 shared cores: see collector-config/scale/NOTES.md.

set -euo pipefail

KAFKA_VERSION=${OTEL_PROV_KAFKA_VERSION:-4.4.0}
# Must match the log4j-core that kafka_2.13 brings (2.25.5 for Kafka 4.4.0).
LOG4J_VERSION=${OTEL_PROV_LOG4J_VERSION:-2.25.5}
FUSEKI_VERSION=${OTEL_PROV_FUSEKI_VERSION:-5.6.0}
DEPS_DIR=${OTEL_PROV_DEPS_DIR:-$HOME/.cache/otel-prov/deps}
RECIPE_REV=1

log() { printf '[fetch-deps] %s\n' "$*" >&2; }
die() {
	local code=$1
	shift
	printf '[fetch-deps] ERROR: %s\n' "$*" >&2
	exit "$code"
}

usage() {
	cat <<EOF
Usage: ${0##*/} [kafka|fuseki|all] [--force]
       ${0##*/} --print-dir

Fetches into \${OTEL_PROV_DEPS_DIR:-\$HOME/.cache/otel-prov/deps} (now: $DEPS_DIR):
  kafka   org.apache.kafka:kafka_2.13:$KAFKA_VERSION (broker + storage tool), trimmed classpath
  fuseki  org.apache.jena:jena-fuseki-server:$FUSEKI_VERSION
Default: all. --force refetches even when the stamp matches.
Environment: OTEL_PROV_DEPS_DIR, OTEL_PROV_KAFKA_VERSION, OTEL_PROV_LOG4J_VERSION,
OTEL_PROV_FUSEKI_VERSION, OTEL_PROV_MAVEN_REPO (Maven local repository).
EOF
}

want_kafka=1
want_fuseki=1
force=0
picked=0
while (($#)); do
	case $1 in
	kafka | fuseki | all)
		if ((picked == 0)); then want_kafka=0 want_fuseki=0 picked=1; fi
		[[ $1 == kafka || $1 == all ]] && want_kafka=1
		[[ $1 == fuseki || $1 == all ]] && want_fuseki=1
		;;
	--force) force=1 ;;
	--print-dir)
		printf '%s\n' "$DEPS_DIR"
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

command -v mvn >/dev/null 2>&1 || die 2 "'mvn' not found (apt-get install maven)"
command -v java >/dev/null 2>&1 || die 2 "'java' not found (Java 17+ is needed to run what this fetches)"

MVN=(mvn -B -q)
if [[ -n ${OTEL_PROV_MAVEN_REPO:-} ]]; then
	MVN+=("-Dmaven.repo.local=$OTEL_PROV_MAVEN_REPO")
fi

mkdir -p "$DEPS_DIR/.build"
DEPS_DIR=$(cd -- "$DEPS_DIR" && pwd)

# One fetch at a time per cache dir (a second run waits, then reuses).
if command -v flock >/dev/null 2>&1; then
	exec 9>"$DEPS_DIR/.lock"
	if ! flock -n 9; then
		log "another fetch-deps.sh holds $DEPS_DIR/.lock; waiting for it"
		flock 9
	fi
fi

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# fetch NAME POM DEST_DIR CHECK_GLOB: copy the runtime dependencies of POM into
# DEST_DIR (atomically, via DEST_DIR.tmp), unless DEST_DIR/.stamp matches.
fetch() {
	local name=$1 pom=$2 dest=$3 stamp want start
	want="recipe=$RECIPE_REV
pom_sha256=$(sha256_of "$pom")"
	if ((force == 0)) && [[ -f $dest/.stamp && "$(cat -- "$dest/.stamp")" == "$want" ]]; then
		log "$name: up to date, reusing $dest"
		return 0
	fi
	start=$SECONDS
	log "$name: fetching with mvn into $dest"
	rm -rf -- "$dest.tmp"
	if ! "${MVN[@]}" -f "$pom" dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$dest.tmp" >"$DEPS_DIR/.build/$name-mvn.log" 2>&1; then
		cat -- "$DEPS_DIR/.build/$name-mvn.log" >&2
		rm -rf -- "$dest.tmp"
		log "$name: mvn FAILED after $((SECONDS - start))s"
		return 1
	fi
	printf '%s\n' "$want" >"$dest.tmp/.stamp"
	rm -rf -- "$dest"
	mv -- "$dest.tmp" "$dest"
	log "$name: $(find "$dest" -name '*.jar' | wc -l) jars, $(du -sh "$dest" | cut -f1) in $((SECONDS - start))s"
}

kafka_pom() {
	local ex='' ga
	for ga in org.scala-lang:scala-reflect org.bitbucket.b_c:jose4j \
		com.github.ben-manes.caffeine:caffeine \
		com.fasterxml.jackson.dataformat:jackson-dataformat-yaml org.yaml:snakeyaml \
		commons-beanutils:commons-beanutils commons-collections:commons-collections \
		commons-digester:commons-digester commons-logging:commons-logging; do
		ex+="
        <exclusion><groupId>${ga%%:*}</groupId><artifactId>${ga#*:}</artifactId></exclusion>"
	done
	cat <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <!-- generated by otel-prov collector-config/scale/fetch-deps.sh; never published -->
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.otel-prov</groupId>
  <artifactId>kafka-broker-deps</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$KAFKA_VERSION</version>
      <exclusions>$ex
      </exclusions>
    </dependency>
    <!-- slf4j 1.x -> log4j2 binding: without it the broker logs nothing. -->
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>$LOG4J_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
}

fuseki_pom() {
	cat <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <!-- generated by otel-prov collector-config/scale/fetch-deps.sh; never published -->
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.otel-prov</groupId>
  <artifactId>fuseki-deps</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <!-- A shaded, self-contained jar: none of its declared dependencies are needed. -->
    <dependency>
      <groupId>org.apache.jena</groupId>
      <artifactId>jena-fuseki-server</artifactId>
      <version>$FUSEKI_VERSION</version>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>
    </dependency>
  </dependencies>
</project>
EOF
}

total_start=$SECONDS
failed=()
out=()
if ((want_kafka)); then
	pom=$DEPS_DIR/.build/kafka-$KAFKA_VERSION.pom.xml
	kafka_pom >"$pom"
	dest=$DEPS_DIR/kafka-$KAFKA_VERSION/lib
	mkdir -p -- "$(dirname -- "$dest")"
	if fetch kafka "$pom" "$dest" && [[ -f $dest/kafka_2.13-$KAFKA_VERSION.jar ]]; then
		out+=("OTEL_PROV_KAFKA_LIB=$dest")
	else
		failed+=(kafka)
	fi
fi
if ((want_fuseki)); then
	pom=$DEPS_DIR/.build/fuseki-$FUSEKI_VERSION.pom.xml
	fuseki_pom >"$pom"
	dest=$DEPS_DIR/fuseki-$FUSEKI_VERSION
	if fetch fuseki "$pom" "$dest" && [[ -f $dest/jena-fuseki-server-$FUSEKI_VERSION.jar ]]; then
		out+=("OTEL_PROV_FUSEKI_JAR=$dest/jena-fuseki-server-$FUSEKI_VERSION.jar")
	else
		failed+=(fuseki)
	fi
fi
if ((${#failed[@]})); then
	die 1 "failed: ${failed[*]} (after $((SECONDS - total_start))s)"
fi
log "done in $((SECONDS - total_start))s"
((${#out[@]} == 0)) || printf '%s\n' "${out[@]}"
