#!/usr/bin/env bash
# Measures every scenario the generated part of loadtest/RESULTS.md shows, then regenerates that part — one
# command for a quiet machine, unattended. About 20 minutes on a quiet 2-core machine (at most ~30 with the
# load waits each script does first: LOAD_MAX, LOAD_WAIT_MAX in lib.sh):
#   1. loadtest/run.sh pinned                 ~10 min  the request path: servers on one pinned core, wrk/h2load/
#                                                      LoadGen on the other, every JVM warmed until flat, bare HTTP
#                                                      and bare gRPC limits and the cold start in the same run
#   2. loadtest/bench-runtime.sh 5 local      ~3 min   local actor call p50, calls/s with 64 in flight
#   3. loadtest/bench-runtime.sh 5 cluster    ~2 min   cross-node actor call p50 (loopback TCP)
#   4. loadtest/bench-pools.sh --image-size 64  ~4 min ResNet-18 through the pool vs direct, A/B/A/B
#   5. loadtest/results-md.sh                          RESULTS.md between its GENERATED markers
# The noop/tiny/resnet/cluster scenarios of the earlier issues are not rerun: pinned measures the request path
# the way the request-path issue states its targets (results-md.sh still renders their folders if present).
# A failed step does not stop the others; RESULTS.md is regenerated from whatever completed, and the exit
# status is 1 if any step failed. The scripts' own variables (DURATION, WARM_ROUND, ...) pass through.
# Usage: loadtest/regenerate.sh
set -uo pipefail
cd "$(dirname "$0")/.."
if [[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
  echo "[regenerate] WARNING: the work tree has uncommitted changes; meta.txt records commit $(git rev-parse --short HEAD) only" >&2
fi
start=$(date +%s)
failed=()
step() {
  local name="$1" t0
  shift
  t0=$(date +%s)
  echo "[regenerate] $(date -u +%H:%M:%S) $name: $*" >&2
  if "$@"; then
    echo "[regenerate] $name done in $(($(date +%s) - t0)) s" >&2
  else
    echo "[regenerate] $name FAILED (exit $?) after $(($(date +%s) - t0)) s" >&2
    failed+=("$name")
  fi
}
step pinned loadtest/run.sh pinned
step runtime-local loadtest/bench-runtime.sh 5 local
step runtime-cluster loadtest/bench-runtime.sh 5 cluster
step pools loadtest/bench-pools.sh --image-size 64
step results-md loadtest/results-md.sh
echo "[regenerate] finished in $(($(date +%s) - start)) s${failed[*]:+; FAILED: ${failed[*]}}" >&2
[[ ${#failed[@]} -eq 0 ]]
