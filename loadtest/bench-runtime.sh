#!/usr/bin/env bash
# Actor call latency/throughput vs a bare Vert.x event-bus request/reply, same JVM, same run: `local` (one
# node) or `cluster` (two clustered nodes in this JVM, the actor on the other one, over loopback TCP).
# Usage: loadtest/bench-runtime.sh [seconds-per-scenario] [local|cluster]
# Prints the table and keeps it, with meta.txt, in loadtest/results/runtime-<mode>-<time>/ for results-md.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=loadtest/lib.sh
source loadtest/lib.sh
seconds="${1:-5}"
mode="${2:-local}"
./mvnw -B -q -o -pl runtime test-compile dependency:build-classpath -Dmdep.outputFile="$PWD/runtime/target/bench.cp" >/dev/null
CP="runtime/target/test-classes:runtime/target/classes:$(cat runtime/target/bench.cp)"
new_results_dir "runtime-$mode"
meta_start "runtime-$mode" "loadtest/bench-runtime.sh $seconds $mode"
if [[ "$mode" == cluster ]]; then
  meta title "cross-node actor calls (two clustered nodes in one JVM, loopback TCP)"
  meta notes "ActorCallBenchmark: the caller on one Kiln node, the actor on another (each its own Hazelcast member and clustered Vert.x, in one JVM), so every call is encoded, sent over loopback TCP and decoded. One caller thread; 1 call in flight for latency, 16/64 in flight for throughput; the first of two rounds is warm-up."
else
  meta title "local actor calls vs a bare event-bus request/reply"
  meta notes "ActorCallBenchmark: one caller thread, one node; the bare baseline is a Vert.x event-bus consumer on its own event loop (as an actor's is). 1 call in flight for latency, 16/64 in flight for throughput; the first of two rounds is warm-up."
fi
wait_for_quiet
java -Xmx1g -cp "$CP" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn io.kiln.runtime.bench.ActorCallBenchmark \
  "$seconds" "$mode" 2>&1 | tee "$OUT/output.txt"
meta_end
echo "results: $OUT" >&2
