#!/usr/bin/env bash
# Per-batch cost of a Python worker and an ONNX Runtime worker vs a DJL worker for the MLP of models/mlp, at batch 1 and 8: direct
# ModelRunner.infer calls on one thread, medians of many warmed calls (see PythonWorkerOverhead).
# Needs /usr/bin/python3 with numpy (apt-get install -y python3-numpy), or -Dkiln.test.python=PATH in JAVA_OPTS.
# Usage: loadtest/bench-python.sh [--batches 1,8] [--calls N] [--warmup N]
set -euo pipefail
cd "$(dirname "$0")/.."
./mvnw -B -q -o -pl engines/python -am test-compile dependency:build-classpath \
  -Dmdep.outputFile="$PWD/engines/python/target/bench.cp" >/dev/null
CP="engines/python/target/test-classes:engines/python/target/classes:model-pools/target/test-classes:model-pools/target/classes:runtime/target/test-classes:runtime/target/classes"
CP="$CP:$(cat engines/python/target/bench.cp)"
# shellcheck disable=SC2086
java -Xmx1g ${JAVA_OPTS:-} -cp "$CP" -Dai.djl.offline=true -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  io.kiln.pools.bench.PythonWorkerOverhead "$@"
