#!/usr/bin/env bash
# Codec microbenchmarks (JMH, in the gateway's test sources, io.kiln.gateway.impl.CodecBenchmark): the gateway's
# OIP codecs (HTTP JSON and binary tensors, gRPC) against the bare servers' (loadtest's BareOipCodec and
# BareGrpcCodec, the limits loadtest/run.sh pinned measures Kiln against), on the load test's request of one
# FP32 [1, 64] tensor. One fork on one pinned core, with JMH's gc profiler: B/op (allocation per operation)
# is the figure that holds on a shared machine; ns/op moves with the machine's load.
# Usage: loadtest/bench-codec.sh [JMH benchmark regexp]
#   QUICK=1         one 200 ms warm-up and one 200 ms measurement per benchmark: checks the script, not figures
#   BENCH_CPU (1)   the core taskset pins the benchmark JVM (and its fork) to
#   WARMUPS (3), ITERATIONS (5), ITERATION_SECONDS (1)   JMH iterations and their length otherwise
#   JMH_ARGS        more JMH options
# Prints the table and keeps it, with meta.txt, in loadtest/results/codec-<time>/ (output.txt the table,
# jmh.json JMH's own record, jmh-log.txt the whole run).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=loadtest/lib.sh
source loadtest/lib.sh
filter="${1:-io.kiln.gateway.impl.CodecBenchmark}"
cpu="${BENCH_CPU:-1}"
if [[ "${QUICK:-0}" == 1 ]]; then
  warmups=1 iterations=1 time=200ms
else
  warmups="${WARMUPS:-3}" iterations="${ITERATIONS:-5}" time="${ITERATION_SECONDS:-1}s"
fi
./mvnw -B -q -o -pl gateway -am test-compile dependency:build-classpath -Dmdep.includeScope=test \
  -Dmdep.outputFile="$PWD/gateway/target/bench.cp" >/dev/null
CP="gateway/target/test-classes:gateway/target/classes:$(cat gateway/target/bench.cp)"
new_results_dir codec
cmd=(taskset -c "$cpu" "${JAVA:-java}" -cp "$CP" org.openjdk.jmh.Main "$filter" -f 1 -wi "$warmups" -i "$iterations"
  -w "$time" -r "$time" -foe true -prof gc -jvmArgsAppend -Xmx1g -rf json -rff "$OUT/jmh.json")
if [[ -n "${JMH_ARGS:-}" ]]; then
  read -r -a extra <<<"$JMH_ARGS"
  cmd+=("${extra[@]}")
fi
meta_start codec "QUICK=${QUICK:-0} JMH_ARGS='${JMH_ARGS:-}' loadtest/bench-codec.sh $*"
meta title "codecs: the gateway's OIP JSON, binary and gRPC codecs against the bare servers', FP32 [1, 64] request"
meta notes "JMH average time per operation and gc.alloc.rate.norm (B/op), one fork pinned to core $cpu (taskset), $warmups warm-up + $iterations measured iterations of $time. kiln* = the gateway's codec as HttpApi/GrpcApi call it (Vert.x Buffer body to validated request; response to bytes), bare* = loadtest's BareOipCodec / BareGrpcCodec. encode10 = ten FP32 values answered (the bare server's answer), encode64 = the identity model's real answer to the [1, 64] request."
meta git_uncommitted "$(git status --porcelain -- gateway loadtest pom.xml | wc -l) changed files"
meta jmh_command "${cmd[*]/"$CP"/\$CP}"
meta classpath "CP = gateway/target/test-classes:gateway/target/classes + the gateway's test-scope dependencies"
wait_for_quiet
"${cmd[@]}" >"$OUT/jmh-log.txt" 2>&1 || { tail -40 "$OUT/jmh-log.txt" >&2; exit 1; }
# The summary table JMH prints last, time and allocation rows only (the other gc rows are rates and counts).
awk '/^Benchmark +/ { table = 1 } table && (/^Benchmark +/ || / avgt / && !/[:·]gc\.(alloc\.rate |count|time)/)' \
  "$OUT/jmh-log.txt" | tee "$OUT/output.txt"
meta_end
echo "results: $OUT" >&2
