#!/usr/bin/env bash
# ResNet-18 through a pool with batching vs the best direct batched throughput, A/B/A/B interleaved in one JVM
# (short direct and pool slices alternate, so drift from other load cancels; one ratio per round, then the
# median/mean/spread). Builds models/resnet18-<size> (git-ignored, ~45 MiB) on first use. ~4 min by default.
# Usage: loadtest/bench-pools.sh [PoolBenchmark options, e.g. --image-size 64 --ab-rounds 6 --slice 3; --rounds 1
# adds the older survey table of every pool at concurrency 1/8/32]
# Prints the tables and keeps them, with meta.txt, in loadtest/results/pools-<time>/ for results-md.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=loadtest/lib.sh
source loadtest/lib.sh
./mvnw -B -q -o -pl engines/pytorch -am test-compile dependency:build-classpath \
  -Dmdep.outputFile="$PWD/engines/pytorch/target/bench.cp" >/dev/null
CP="engines/pytorch/target/test-classes:engines/pytorch/target/classes:model-pools/target/test-classes:model-pools/target/classes:runtime/target/test-classes:runtime/target/classes"
CP="$CP:$(cat engines/pytorch/target/bench.cp)"
new_results_dir pools
meta_start pools "loadtest/bench-pools.sh $*"
meta title "ResNet-18 through the pool with batching vs the best direct batched throughput, A/B interleaved"
meta notes "PoolBenchmark, in one JVM, every scenario warmed first. Each round alternates slices (3 s after a 0.5 s lead-in, by default): direct ModelRunner.infer on one thread at batch 8, then the pool (one-node runtime, PoolClient, 1 worker, the same intra-op threads) with max_batch_size 8 (max_batch_delay 2 ms) under closed-loop load of 32 one-image clients, then the same at batch 16, then the pool with batching off (max_batch_size 1); every even round runs its slices in reverse order, so a steady drift cancels over two rounds. A round's ratio is its best pool slice over its best direct slice; the table gives every round's, the summary their median, mean and spread (computed by results-md.sh from the round lines). The first line of the printout says what ran; the last round's table is quoted."
wait_for_quiet
# libtorch warns once per inference thread where the CPU lacks what NNPACK needs (42,617 lines on 2 AMD EPYC cores):
# noise without a figure, left out of the printout and the kept output.
java -Xmx1g -cp "$CP" -Dai.djl.offline=true -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  io.kiln.pools.bench.PoolBenchmark "$@" 2>&1 | { grep --line-buffered -v 'Could not initialize NNPACK' || true; } \
  | tee "$OUT/output.txt"
meta_end
echo "results: $OUT" >&2
