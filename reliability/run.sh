#!/usr/bin/env bash
# Kiln's reliability suite, at full size. CI runs the same tests CI-sized inside ./mvnw verify; this script
# runs one scenario (or all) bigger/longer and writes its figures to reliability/results/<scenario>.json.
#
#   reliability/run.sh <scenario> [size]
#
#   node-loss  [n]   3 node processes, traffic through every gateway, SIGKILL one, restart it (n: answers per
#                    gateway before the kill and again after the detection; default 5000)
#   failover   [r]   3 node processes, open loop through two gateways (r unpinned/s each, default 360, and 40/s pinned to
#                    n3), SIGKILL n3: in-flight unpinned requests re-sent elsewhere, the failover window's p50/p99/max
#   node-loss-processes [n]  3 node processes each time: the leader SIGKILLed under a client, a node SIGKILLed
#                    mid-stream, a node SIGKILLed mid-job (n: the job's inputs; default 60, CI 30); figures of each in
#                    its own JSON
#   drain      [n]   3 node processes, traffic through two gateways, SIGTERM the third: nothing may fail, exit 0
#                    (n: answers per gateway before the drain and again after it; default 5000)
#   crash      [s]   worker crash mid-batch under load, poison every 300 ms (default 30 s)
#   leader           leader killed mid-deploy (at the first manager, and at the first worker)
#   overload   [s]   capacity measured, then 10x capacity open loop (default 30 s)
#   slow       [n]   slowloris / stalled / vanishing clients (default 500 connections; n/2 vanish from a real pool)
#   fuzz       [n]   seeded fuzzing of the JSON, binary and gRPC decoders (n inputs each, default 1,000,000), of
#                    the real HTTP server (n/100) and of the YAML loaders (n/20); SEED=... replays a seed
#   changes    [n]   a version rollout, autoscaling 4 -> 1 and a delete, each under load: nothing may fail (n: answers
#                    after each change; default 5000)
#   soak       [s]   three nodes at half capacity, a model mix, worker crashes, a rolling restart every 600 s;
#                    heap/RSS slopes, threads, fds, p99 drift; plots in results/soak.html (default 1800 s)
#   partition  [n]   3 node processes in network namespaces, one cut off and healed (n: answers per phase; default
#                    100, the CI size; needs root for the namespaces)
#   stream           a node killed mid-stream: the SSE client gets a final error event
#   tls              TLS on the gateway (reload), mutual TLS on the event bus, both in real processes
#   security         cluster admission (name, secret), event bus, bytecode scan, default binds
#   engines    [k]   Python worker SIGKILLed mid-batch under load (k kills, default 3); a leaking Python worker
#                    OOM-killed by the kernel in a memory cgroup (k kills; root and a writable cgroupfs, else
#                    skipped) and a crash loop bounded by max_restarts; ONNX models that fail to load (truncated
#                    file, wrong declared input) next to a deployment under load, then fixed
#   job-loss         a node killed while it holds job batches: inputs, results, lost, duplicated, resumed
#   all              every scenario above at its default size
#   table            RELIABILITY.md's generated part rewritten from results/*.json (python3 reliability/table.py
#                    --write: only the text between its GENERATED markers; it refuses when a results file is missing);
#                    every scenario, and all, end with it
#
# Extra Maven flags go in MAVEN_ARGS (e.g. MAVEN_ARGS=-o to stay offline). Needs a JDK 17+, and python3 (standard
# library only) for `table`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT="$ROOT/reliability/results"
mkdir -p "$OUT"
MVN=(./mvnw -B ${MAVEN_ARGS:-} -Dkiln.reliability.out="$OUT" -Dsurefire.failIfNoSpecifiedTests=false
     -Dfailsafe.failIfNoSpecifiedTests=false)

unit() { # modules tests extra-args...
  local modules=$1 tests=$2
  shift 2
  "${MVN[@]}" -pl "$modules" -am verify -DskipITs -Dtest="$tests" "$@"
}

it() { # modules its extra-args...
  local modules=$1 its=$2
  shift 2
  "${MVN[@]}" -pl "$modules" -am verify -Dtest=none -Dit.test="$its" "$@"
}

scenario() {
  local name=$1 size=${2:-}
  echo "== $name $(date -u +%FT%TZ) load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo n/a)"
  case "$name" in
    node-loss) it deploy NodeLossIT -Dkiln.reliability.nodeloss.requests="${size:-5000}" ;;
    failover)  it deploy NodeLossFailoverIT -Dkiln.reliability.failover.unpinnedPerSecond="${size:-360}" \
                  -Dkiln.reliability.failover.pinnedPerSecond=40 -Dkiln.reliability.failover.serviceMs=5 \
                  -Dkiln.reliability.failover.seconds=15 ;;
    node-loss-processes) it deploy NodeLossProcessesIT -Dkiln.reliability.jobLossProcesses.inputs="${size:-60}" ;;
    drain)     it deploy DrainIT -Dkiln.reliability.drain.requests="${size:-5000}" ;;
    crash)     unit deploy WorkerCrashUnderLoadTest -Dkiln.reliability.crash.seconds="${size:-30}" ;;
    leader)    unit serve LeaderLossMidDeployTest ;;
    overload)  unit deploy OverloadTest -Dkiln.reliability.overload.seconds="${size:-30}" \
                  -Dkiln.reliability.overload.measureSeconds=10 ;;
    slow)      unit gateway,deploy 'SlowClientsTest,VanishingClientsTest' -Dkiln.reliability.slow.connections="${size:-500}" \
                  -Dkiln.reliability.vanish.clients=$(( ${size:-500} / 2 )) ;;
    fuzz)      unit gateway,pipelines 'HostileInputFuzzTest,HostileHttpTest,DeploymentYamlFuzzTest' \
                  -Dkiln.reliability.fuzz.iterations="${size:-1000000}" \
                  -Dkiln.reliability.fuzz.http.iterations=$(( ${size:-1000000} / 100 )) \
                  -Dkiln.reliability.fuzz.yaml.iterations=$(( ${size:-1000000} / 20 )) \
                  -Dkiln.reliability.fuzz.seed="${SEED:-$(date +%s)}" ;;
    changes)   unit deploy ZeroFailureChangesTest -Dkiln.reliability.changes.answers="${size:-5000}" ;;
    soak)      unit deploy SoakTest -Dkiln.reliability.soak.seconds="${size:-1800}" \
                  -Dkiln.reliability.soak.windowSeconds=30 -Dkiln.reliability.soak.restartEverySeconds=600 ;;
    partition) it deploy PartitionIT -Dkiln.partition.requests="${size:-100}" ;;
    stream)    unit deploy StreamNodeLossTest ;;
    tls)       unit runtime,gateway 'BusTlsTest,GatewayTlsTest'
               it deploy TlsIT ;;
    security)  unit deploy SecurityDefaultsTest
               it runtime ClusterSecurityIT ;;
    engines)   unit deploy 'PythonWorkerKillTest,PythonMemoryLeakTest,OnnxLoadFailureTest' \
                  -Dkiln.reliability.pykill.kills="${size:-3}" -Dkiln.reliability.leak.kills="${size:-4}" ;;
    job-loss)  unit pipelines 'JobBatchesTest#killingANodeThatHoldsBatchesLosesNoResultAndDuplicatesNone' ;;
    all)       for s in security tls fuzz slow leader crash overload changes stream node-loss node-loss-processes failover drain partition engines job-loss soak; do scenario "$s"; done
               scenario table; return ;;
    table)     python3 "$ROOT/reliability/table.py" --write
               local trace
               trace=$(python3 "$ROOT/reliability/table.py" --trace) || { echo "$trace"; exit 1; }
               echo "$trace" | sed -n 1,2p
               return ;;
    *)         sed -n '2,42p' "$0"; exit 2 ;;
  esac
  echo "== figures in $OUT:"
  ls -1t "$OUT"/*.json 2>/dev/null | head -5 || true
}

scenario "${1:-help}" "${2:-}"
# Every run ends with the document regenerated from what it wrote (all and table have just done it).
case "${1:-help}" in all|table) ;; *) scenario table ;; esac
