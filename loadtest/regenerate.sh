#!/usr/bin/env bash
# Measures every scenario the generated part of loadtest/RESULTS.md shows, then regenerates that part — one
# command for a quiet machine, unattended. Every verdict in RESULTS.md needs at least 3 interleaved rounds (the limit
# measured again next to Kiln in each), so each step runs 3: about 105 minutes on a quiet 2-core machine (up to ~125
# with the load waits each script does first: LOAD_MAX, LOAD_WAIT_MAX in lib.sh):
#   1. loadtest/run.sh pinned                 ~25 min  the request path, PINNED_ROUNDS (3) rounds: in each, per Kiln
#                                                      model, a fresh node (cold start), then at every concurrency Kiln
#                                                      and the bare HTTP/gRPC server right after it; servers on one
#                                                      pinned core, wrk/h2load/LoadGen on the other, warmed until flat
#   2. loadtest/bench-runtime.sh 5 local      ~7 min   local actor call p50, calls/s with 64 in flight; ROUNDS (3) JVMs
#   3. loadtest/bench-runtime.sh 5 cluster    ~4 min   cross-node actor call p50 (loopback TCP); ROUNDS (3) JVMs
#   4. loadtest/bench-pools.sh --image-size 64  ~4 min ResNet-18 through the pool vs direct, 6 A/B/A/B rounds
#   5. loadtest/bench-llm.sh                  ~20 min  generative serving (#35): 1 vs 16 streams, HTTP vs in-process,
#                                                      streamed vs not, prefix cache, prefix routing vs round robin;
#                                                      LLM_ROUNDS (3) interleaved rounds (LLM=0 leaves it out)
#   6. loadtest/bench-big-tensors.sh          ~35 min  MB-sized tensors (#36): PP-OCRv4 rec and det over HTTP binary
#                                                      (wrk, Python), gRPC (LoadGen, h2load), shared memory vs direct
#                                                      ONNX Runtime at c1 / c2, 3 interleaved rounds (BIG=0: left out)
#   7. loadtest/bench-ocr-graph.sh            ~6 min   the OCR graph (#36): ocr-read's images/s through Kiln vs its five
#                                                      steps in one process at c1 / c2, 3 interleaved rounds (OCR=0:
#                                                      left out)
#   8. loadtest/results-md.sh                          RESULTS.md between its GENERATED markers
# The noop/tiny/resnet/cluster scenarios of the earlier issues are not rerun: pinned measures the request path
# the way the request-path issue states its targets (results-md.sh still renders their folders if present).
# A failed step does not stop the others; RESULTS.md is regenerated from whatever completed, and the exit
# status is 1 if any step failed. The scripts' own variables (DURATION, WARM_ROUND, PINNED_ROUNDS, ROUNDS, ...) pass
# through; fewer than 3 rounds give "insufficient rounds" in RESULTS.md, never a verdict. Afterwards rewrite the
# hand-written analysis above the generated block from the new figures (RESULTS.md says how).
# Usage: loadtest/regenerate.sh   (LLM=0, BIG=0, OCR=0 leave those steps out)
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
step runtime-local env ROUNDS="${ROUNDS:-3}" loadtest/bench-runtime.sh 5 local
step runtime-cluster env ROUNDS="${ROUNDS:-3}" loadtest/bench-runtime.sh 5 cluster
step pools loadtest/bench-pools.sh --image-size 64
if [[ "${LLM:-1}" == 1 ]]; then step llm env LLM_ROUNDS="${LLM_ROUNDS:-${ROUNDS:-3}}" loadtest/bench-llm.sh; fi
if [[ "${BIG:-1}" == 1 ]]; then step big-tensors env ROUNDS="${ROUNDS:-3}" loadtest/bench-big-tensors.sh; fi
if [[ "${OCR:-1}" == 1 ]]; then step ocr-graph env ROUNDS="${ROUNDS:-3}" loadtest/bench-ocr-graph.sh; fi
step results-md loadtest/results-md.sh
echo "[regenerate] finished in $(($(date +%s) - start)) s${failed[*]:+; FAILED: ${failed[*]}}" >&2
[[ ${#failed[@]} -eq 0 ]]
