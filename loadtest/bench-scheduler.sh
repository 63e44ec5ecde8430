#!/usr/bin/env bash
# Scheduler microbenchmarks (JMH, in the runtime's test sources, io.kiln.runtime.bench): one placement over
# 1,000 and 10,000 simulated nodes, the plain scan (Scheduler.place over a ClusterView) against the
# PlacementIndex, and the index's cost per node-table change. One fork on one pinned core.
# Usage: loadtest/bench-scheduler.sh [JMH benchmark regexp]
#   QUICK=1         one 200 ms warm-up and one 200 ms measurement per benchmark: checks the script, not figures
#   BENCH_CPU (1)   the core taskset pins the benchmark JVM (and its fork) to
#   WARMUPS (2), ITERATIONS (3), ITERATION_SECONDS (1)   JMH iterations and their length otherwise
#   JMH_ARGS        more JMH options, e.g. '-p nodes=10000' for the 10,000-node rows only
#   TRAFFIC (1)     also simulate the node table's row traffic at 100 and 1,000 nodes (RowTrafficSimulation,
#                   counted bytes of the rows as serialised; TRAFFIC_SECONDS simulated seconds, 5)
#   REGISTRY (0)    also measure the named-actor registry with REGISTRY_ACTORS (10000) named actors on three
#                   in-process Hazelcast members: create, lookup, get-or-create rates (RegistryScaleBenchmark,
#                   REGISTRY_SECONDS per phase, 5; not pinned: three members need more than one core)
# Prints the table and keeps it, with meta.txt, in loadtest/results/scheduler-<time>/ (output.txt the
# table, jmh.json JMH's own record, jmh-log.txt the whole run).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=loadtest/lib.sh
source loadtest/lib.sh
filter="${1:-io.kiln.runtime.bench.(SchedulerBenchmark|PlacementIndexUpdateBenchmark)}"
cpu="${BENCH_CPU:-1}"
if [[ "${QUICK:-0}" == 1 ]]; then
  warmups=1 iterations=1 time=200ms
else
  warmups="${WARMUPS:-2}" iterations="${ITERATIONS:-3}" time="${ITERATION_SECONDS:-1}s"
fi
./mvnw -B -q -o -pl runtime test-compile dependency:build-classpath -Dmdep.includeScope=test \
  -Dmdep.outputFile="$PWD/runtime/target/bench.cp" >/dev/null
CP="runtime/target/test-classes:runtime/target/classes:$(cat runtime/target/bench.cp)"
new_results_dir scheduler
cmd=(taskset -c "$cpu" "${JAVA:-java}" -cp "$CP" org.openjdk.jmh.Main "$filter" -f 1 -wi "$warmups" -i "$iterations"
  -w "$time" -r "$time" -foe true -jvmArgsAppend -Xmx1g -rf json -rff "$OUT/jmh.json")
if [[ -n "${JMH_ARGS:-}" ]]; then
  read -r -a extra <<<"$JMH_ARGS"
  cmd+=("${extra[@]}")
fi
meta_start scheduler "QUICK=${QUICK:-0} REGISTRY=${REGISTRY:-0} JMH_ARGS='${JMH_ARGS:-}' loadtest/bench-scheduler.sh $*"
meta title "scheduler: placement over 1,000 and 10,000 simulated nodes, scan vs index, and the index's update cost"
meta notes "JMH average time per operation, one fork pinned to core $cpu (taskset), $warmups warm-up + $iterations measured iterations of $time. SchedulerBenchmark: one placement returning the whole ranking; cluster mixed = four node families with loads in whole CPUs, quarter GPUs, slots and 8 GiB blocks (2 % dead), distinct = every node its own (total, available), the index's worst case; requests cpu/gpu = DEFAULT CPU 1 / GPU 1, spread = SPREAD zero-resource, soft = soft affinity CPU 1. PlacementIndexUpdateBenchmark: one row change (availability) or a death/return, in ns."
meta git_uncommitted "$(git status --porcelain -- runtime loadtest pom.xml | wc -l) changed files"
meta jmh_command "${cmd[*]/"$CP"/\$CP}"
meta classpath "CP = runtime/target/test-classes:runtime/target/classes + the runtime's test-scope dependencies"
wait_for_quiet
"${cmd[@]}" >"$OUT/jmh-log.txt" 2>&1 || { tail -40 "$OUT/jmh-log.txt" >&2; exit 1; }
# The summary table JMH prints last: from its header line to the end.
awk '/^Benchmark +/ { table = 1 } table' "$OUT/jmh-log.txt" | tee "$OUT/output.txt"
if [[ "${TRAFFIC:-1}" == 1 ]]; then
  traffic_seconds="${TRAFFIC_SECONDS:-$([[ "${QUICK:-0}" == 1 ]] && echo 1 || echo 5)}"
  meta traffic_command "java -cp \$CP io.kiln.runtime.impl.RowTrafficSimulation $traffic_seconds 100 1000"
  echo | tee -a "$OUT/output.txt"
  "${JAVA:-java}" -cp "$CP" io.kiln.runtime.impl.RowTrafficSimulation "$traffic_seconds" 100 1000 | tee -a "$OUT/output.txt"
fi
if [[ "${REGISTRY:-0}" == 1 ]]; then
  actors="${REGISTRY_ACTORS:-$([[ "${QUICK:-0}" == 1 ]] && echo 1000 || echo 10000)}"
  registry_seconds="${REGISTRY_SECONDS:-$([[ "${QUICK:-0}" == 1 ]] && echo 1 || echo 5)}"
  # The JVM flags Hazelcast asks for on Java 17, as the tests pass them (root pom's kiln.jvm.flags).
  read -r -a hz_flags <<<"$(sed -n 's:.*<kiln.jvm.flags>\(.*\)</kiln.jvm.flags>.*:\1:p' pom.xml)"
  meta registry_command "java -Xmx2g \${kiln.jvm.flags} -cp \$CP io.kiln.runtime.bench.RegistryScaleBenchmark $actors $registry_seconds 64"
  echo | tee -a "$OUT/output.txt"
  "${JAVA:-java}" -Xmx2g "${hz_flags[@]}" -Dorg.slf4j.simpleLogger.defaultLogLevel=error -cp "$CP" \
    io.kiln.runtime.bench.RegistryScaleBenchmark "$actors" "$registry_seconds" 64 2>&1 | tee -a "$OUT/output.txt"
fi
meta_end
echo "results: $OUT" >&2
