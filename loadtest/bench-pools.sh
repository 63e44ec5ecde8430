#!/usr/bin/env bash
# ResNet-18 through direct ModelRunner calls vs a pool with batching off and on, at several concurrencies,
# same JVM, same run. Builds models/resnet18-<size> (git-ignored, ~45 MiB) on first use.
# Usage: loadtest/bench-pools.sh [PoolBenchmark options, e.g. --image-size 64 --seconds 5]
# Prints the tables and keeps them, with meta.txt, in loadtest/results/pools-<time>/ for results-md.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=loadtest/lib.sh
source loadtest/lib.sh
./mvnw -B -q -o -pl model-pools -am test-compile dependency:build-classpath \
  -Dmdep.outputFile="$PWD/model-pools/target/bench.cp" >/dev/null
CP="model-pools/target/test-classes:model-pools/target/classes:runtime/target/test-classes:runtime/target/classes"
CP="$CP:$(cat model-pools/target/bench.cp)"
new_results_dir pools
meta_start pools "loadtest/bench-pools.sh $*"
meta title "ResNet-18: direct ModelRunner calls vs a pool with batching off and on"
meta notes "PoolBenchmark, in one JVM: direct ModelRunner.infer on one thread at batch 1/8/16 (the compute limit), then a pool on a one-node runtime reached through PoolClient with max_batch_size 1 (batching off), 8 and 16 (on, max_batch_delay 2 ms), each under closed-loop load of 1, 8 and 32 one-image clients (the defaults; the first line of the printout says what ran). Every round runs every scenario; the last round is quoted."
wait_for_quiet
java -Xmx1g -cp "$CP" -Dai.djl.offline=true -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  io.kiln.pools.bench.PoolBenchmark "$@" 2>&1 | tee "$OUT/output.txt"
meta_end
echo "results: $OUT" >&2
