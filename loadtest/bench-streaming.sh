#!/usr/bin/env bash
# Streaming: time to first chunk and chunks/s of builtin:chunks answers over SSE (generate_stream) and gRPC
# (ModelStreamInfer) from one assembled node (deploy's StreamingBenchTest: real gateway, real pool, clients in the
# same JVM over loopback), closed-loop clients at each concurrency. Prints one [bench] line per protocol and level
# and keeps them, with meta.txt, in loadtest/results/streaming-<time>/.
# Usage: loadtest/bench-streaming.sh
#   LEVELS (1,16,64)   concurrencies       LEVEL_SECONDS (10) per level    WARMUP (5) seconds per level before it
#   CHUNKS (32)        chunks per answer   DELAY_MS (0) model time per chunk
# The CI-sized run of the same test (levels 1,4; 1 s each) is part of deploy's test suite and asserts no timing.
# Figures from a shared machine are contaminated by whatever else runs: say so when quoting them.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=loadtest/lib.sh
source loadtest/lib.sh
LEVELS="${LEVELS:-1,16,64}"
SECONDS_PER_LEVEL="${LEVEL_SECONDS:-10}"
new_results_dir streaming
meta_start streaming "loadtest/bench-streaming.sh (LEVELS=$LEVELS LEVEL_SECONDS=$SECONDS_PER_LEVEL WARMUP=${WARMUP:-5} CHUNKS=${CHUNKS:-32} DELAY_MS=${DELAY_MS:-0})"
meta title "Streaming: time to first chunk and chunks/s over SSE and gRPC"
meta notes "deploy's StreamingBenchTest: one assembled node, builtin:chunks with 2 workers x max_batch_size 16, closed-loop clients in the test's JVM (SSE: one socket per client; gRPC: one ModelStreamInfer call per answer on a Vert.x client)."
wait_for_quiet
./mvnw -B -o -q -pl deploy -am test -Dtest=StreamingBenchTest -Dsurefire.failIfNoSpecifiedTests=false \
  -Dkiln.bench.stream.levels="$LEVELS" -Dkiln.bench.stream.seconds="$SECONDS_PER_LEVEL" \
  -Dkiln.bench.stream.warmup="${WARMUP:-5}" -Dkiln.bench.stream.chunks="${CHUNKS:-32}" \
  -Dkiln.bench.stream.delayMs="${DELAY_MS:-0}" >"$OUT/maven.log" 2>&1 || true
grep -h '^\[bench\] streaming' deploy/target/surefire-reports/io.kiln.deploy.e2e.StreamingBenchTest-output.txt \
  | tee "$OUT/output.txt" || { echo "bench-streaming: no figure; see $OUT/maven.log" >&2; exit 1; }
meta_end
echo "results: $OUT" >&2
