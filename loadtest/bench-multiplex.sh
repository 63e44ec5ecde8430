#!/usr/bin/env bash
# Multiplexing: a Zipf mix over a repository of ONNX MLP copies (each a real load) on two assembled nodes, one
# worker per node keeping K models, closed-loop HTTP clients alternating the two gateways (deploy's
# MultiplexBenchTest). Two phases: the whole Zipf mix (misses included), then only the K most popular models after a
# warm pass (no misses); each prints one [bench] line (batch hit ratio from the pools' own counters, loads, p50, p99)
# kept, with meta.txt, in loadtest/results/multiplex-<time>/.
# Usage: loadtest/bench-multiplex.sh
#   REQUESTS (20000) per phase   CONCURRENCY (8)   MODELS (20)   K (4)   ZIPF (1.1)   SEED (42)
# The CI-sized run (200 requests, 4 clients) is part of deploy's test suite and asserts no timing.
# Figures from a shared machine are contaminated by whatever else runs: say so when quoting them.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=loadtest/lib.sh
source loadtest/lib.sh
new_results_dir multiplex
meta_start multiplex "loadtest/bench-multiplex.sh (REQUESTS=${REQUESTS:-20000} CONCURRENCY=${CONCURRENCY:-8} MODELS=${MODELS:-20} K=${K:-4} ZIPF=${ZIPF:-1.1})"
meta title "Multiplexing: Zipf mix over 2 nodes x K models, hit ratio and latency"
meta notes "deploy's MultiplexBenchTest: two assembled nodes in one JVM (in-process cluster), repository of copies of models/mlp-onnx, one worker per node, max_concurrent_loads 2, HTTP/1.1 JSON clients in the same JVM."
wait_for_quiet
./mvnw -B -o -q -pl deploy -am test -Dtest=MultiplexBenchTest -Dsurefire.failIfNoSpecifiedTests=false \
  -Dkiln.bench.mux.requests="${REQUESTS:-20000}" -Dkiln.bench.mux.concurrency="${CONCURRENCY:-8}" \
  -Dkiln.bench.mux.models="${MODELS:-20}" -Dkiln.bench.mux.k="${K:-4}" -Dkiln.bench.mux.zipf="${ZIPF:-1.1}" \
  -Dkiln.bench.mux.seed="${SEED:-42}" >"$OUT/maven.log" 2>&1 || true
grep -h '^\[bench\] multiplex' deploy/target/surefire-reports/io.kiln.deploy.e2e.MultiplexBenchTest-output.txt \
  | tee "$OUT/output.txt" || { echo "bench-multiplex: no figure; see $OUT/maven.log" >&2; exit 1; }
meta_end
echo "results: $OUT" >&2
