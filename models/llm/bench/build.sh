#!/usr/bin/env bash
# Builds models/llm/bench-gpt/ (the decoder loadtest/bench-llm.sh measures; ~70 MB, git-ignored): model.onnx from
# bench/build_bench_decoder.py (tiny-gpt's architecture at 4 layers x d=256, 2048 positions, seeded random weights),
# tokenizer.json copied from tiny-gpt (GPT-2's BPE; ../fetch.sh builds it first). Not part of ./run-tests' set-up:
# only the benchmark needs it. A no-op when model.onnx is newer than its inputs.
# Usage: models/llm/bench/build.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=/usr/bin/python3
../../models/llm/fetch.sh
out=bench-gpt/model.onnx
if [[ -f "$out" && -f bench-gpt/tokenizer.json && -z "$(find bench/build_bench_decoder.py build_decoder.py onnx_eval.py \
    bench-gpt/config.json tiny-gpt/tokenizer.json -newer "$out" -print -quit)" ]]; then
  exit 0
fi
cp tiny-gpt/tokenizer.json bench-gpt/tokenizer.json
PYTHONDONTWRITEBYTECODE=1 "$PY" bench/build_bench_decoder.py
