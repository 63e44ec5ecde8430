#!/usr/bin/env bash
# Actor call latency/throughput vs a bare Vert.x event-bus request/reply, same JVM, same run: `local` (one
# node) or `cluster` (two clustered nodes in this JVM, the actor on the other one, over loopback TCP).
# Usage: [ROUNDS=3] loadtest/bench-runtime.sh [seconds-per-scenario] [local|cluster]
# Runs the benchmark ROUNDS times (3), each in a fresh JVM headed "## run N of M" (the bare event bus and the actors
# alternate inside each run), prints the tables and keeps them, with meta.txt, in
# loadtest/results/runtime-<mode>-<time>/ for results-md.sh, which judges the median over the runs (no verdict from
# fewer than 3).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=loadtest/lib.sh
source loadtest/lib.sh
seconds="${1:-5}"
mode="${2:-local}"
ROUNDS="${ROUNDS:-3}"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive number, not '$ROUNDS'" >&2; exit 2; }
./mvnw -B -q -o -pl runtime test-compile dependency:build-classpath -Dmdep.outputFile="$PWD/runtime/target/bench.cp" >/dev/null
CP="runtime/target/test-classes:runtime/target/classes:$(cat runtime/target/bench.cp)"
new_results_dir "runtime-$mode"
meta_start "runtime-$mode" "ROUNDS=$ROUNDS loadtest/bench-runtime.sh $seconds $mode"
meta rounds "$ROUNDS"
if [[ "$mode" == cluster ]]; then
  meta title "cross-node actor calls (two clustered nodes in one JVM, loopback TCP)"
  meta notes "ActorCallBenchmark: the caller on one Kiln node, the actor on another (each its own Hazelcast member and clustered Vert.x, in one JVM), so every call is encoded, sent over loopback TCP and decoded. One caller thread; 1 call in flight for latency, 16/64 in flight for throughput; the first of two rounds is warm-up. $ROUNDS runs, each a fresh JVM."
else
  meta title "local actor calls vs a bare event-bus request/reply"
  meta notes "ActorCallBenchmark: one caller thread, one node; the bare baseline is a Vert.x event-bus consumer on its own event loop (as an actor's is). 1 call in flight for latency, 16/64 in flight for throughput; the first of two rounds is warm-up. $ROUNDS runs, each a fresh JVM."
fi
wait_for_quiet
: >"$OUT/output.txt"
for ((r = 1; r <= ROUNDS; r++)); do
  echo "## run $r of $ROUNDS" | tee -a "$OUT/output.txt"
  meta "loadavg_before_run_$r" "$(loadavg1)"
  java -Xmx1g -cp "$CP" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn io.kiln.runtime.bench.ActorCallBenchmark \
    "$seconds" "$mode" 2>&1 | tee -a "$OUT/output.txt"
done
meta_end
echo "results: $OUT" >&2
