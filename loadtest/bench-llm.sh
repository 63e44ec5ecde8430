#!/usr/bin/env bash
# The generative-serving benchmarks of issue #35, side by side in one run (loadtest/run.sh's `llm` scenario,
# defined in loadtest/scenario-llm.sh, which says what each configuration is): output tokens/s at 16 streams vs 1 and
# vs the same engine driven in-process, TTFT p50 at 16 vs 1, a cached 512-token prefix's TTFT vs a cold one, streamed
# vs non-streamed, and prefix-aware routing over 2 nodes vs round robin. Builds models/llm/bench-gpt first (once).
# Writes loadtest/results/llm-<time>/ (rounds.tsv + checks.tsv, RESULTS.md's rounds format); then run
# loadtest/results-md.sh. ~25 min on 2 cores.
# Usage: loadtest/bench-llm.sh
#   LLM_ROUNDS (3)  LLM_DURATION (20s)  LLM_WARMUP (5s)  LLM_PAIRS (8)  LLM_CLUSTER (1: also the 2-node routing runs)
#   SERVER_CPU (1) / CLIENT_CPU (0)   the cores taskset pins servers and clients to
#   LLM_SMOKE=1     tiny-gpt, one round of 2 s runs, no cluster: checks the machinery in ~2 min, measures nothing
#   LOADTEST_RESULTS=DIR  results elsewhere (a trial that must not land in RESULTS.md)
set -euo pipefail
cd "$(dirname "$0")/.."
[[ "${LLM_SMOKE:-0}" == 1 ]] || models/llm/bench/build.sh
exec loadtest/run.sh llm "$@"
