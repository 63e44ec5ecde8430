#!/usr/bin/env bash
# Local actor call latency/throughput vs a bare Vert.x event-bus request/reply, same JVM, same run.
# Usage: loadtest/bench-runtime.sh [seconds-per-scenario] [local|cluster]
set -euo pipefail
cd "$(dirname "$0")/.."
./mvnw -B -q -o -pl runtime test-compile dependency:build-classpath -Dmdep.outputFile="$PWD/runtime/target/bench.cp" >/dev/null
CP="runtime/target/test-classes:runtime/target/classes:$(cat runtime/target/bench.cp)"
exec java -Xmx1g -cp "$CP" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn io.kiln.runtime.bench.ActorCallBenchmark "${1:-5}" "${2:-local}"
