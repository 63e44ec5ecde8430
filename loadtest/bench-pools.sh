#!/usr/bin/env bash
# ResNet-18 through direct ModelRunner calls vs a pool with batching off and on, at several concurrencies,
# same JVM, same run. Builds models/resnet18-<size> (git-ignored, ~45 MiB) on first use.
# Usage: loadtest/bench-pools.sh [PoolBenchmark options, e.g. --image-size 64 --seconds 5]
set -euo pipefail
cd "$(dirname "$0")/.."
./mvnw -B -q -o -pl model-pools -am test-compile dependency:build-classpath \
  -Dmdep.outputFile="$PWD/model-pools/target/bench.cp" >/dev/null
CP="model-pools/target/test-classes:model-pools/target/classes:runtime/target/test-classes:runtime/target/classes"
CP="$CP:$(cat model-pools/target/bench.cp)"
exec java -Xmx1g -cp "$CP" -Dai.djl.offline=true -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  io.kiln.pools.bench.PoolBenchmark "$@"
