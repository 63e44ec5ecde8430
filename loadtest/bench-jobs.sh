#!/usr/bin/env bash
# Batch-job throughput: does a job over many small inputs keep the pools as busy as a saturating online load?
# Two in-process nodes (pipelines' JobLoadTest), builtin:sleep, one worker per node. Phase 1: 8 closed-loop
# online clients per node for ONLINE_SECONDS; phase 2: a job over INPUTS one-row files alone. The workers'
# busy fraction (busy/total, sampled every 10 ms from the pools' own counts) is compared; prints one [jobs] line.
# Usage: loadtest/bench-jobs.sh
#   INPUTS (10000)   inputs of the job        SLEEP_MS (2)   model time per batch
#   PER_NODE (8)     job inputs in flight per node          PRIORITY (low)   low | normal
#   ONLINE_SECONDS (10)  ROUNDS (2: online and job phases alternate in one run; the ratio is of their sums)
#   JFR (a file, absolute: a JFR CPU profile, Java samples every 1 ms, of the last job phase)
# Figures from a shared 2-core machine are contaminated by whatever else runs: compare ratios, not rates.
set -euo pipefail
cd "$(dirname "$0")/.."
./mvnw -B -o -q -pl pipelines -am verify -DskipITs -Dtest=JobLoadTest#aJobKeepsThePoolsAsBusyAsASaturatingOnlineLoad \
  -Dsurefire.failIfNoSpecifiedTests=false -Dkiln.bench.jobs=true -Dkiln.bench.inputs="${INPUTS:-10000}" \
  -Dkiln.bench.sleepMs="${SLEEP_MS:-2}" -Dkiln.bench.perNode="${PER_NODE:-8}" \
  -Dkiln.bench.priority="${PRIORITY:-low}" -Dkiln.bench.onlineSeconds="${ONLINE_SECONDS:-10}" \
  -Dkiln.bench.rounds="${ROUNDS:-2}" -Dkiln.bench.jfr="${JFR:-}" >/dev/null || true
grep -h '^\[jobs\] \(round\|bench\)' pipelines/target/surefire-reports/io.kiln.pipelines.JobLoadTest-output.txt \
  || { echo "bench-jobs: no figure; see pipelines/target/surefire-reports" >&2; exit 1; }
