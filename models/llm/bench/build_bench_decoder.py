"""Builds bench-gpt/model.onnx: the benchmark decoder of loadtest/bench-llm.sh.

The same GPT-2 architecture, initialisation rule and export as tiny-gpt (build_decoder.py, imported: one model
definition), with bench-gpt/config.json: 4 layers, d=256, 4 heads, 2048 positions, exported with the LM head on each
row's last real position only (logits [batch, 1, vocab]): with every position's logits a 512-token prefill chunk
spends ~6.6 GFLOP in the 50257 x 256 head alone, which the decoder never reads (issue #35's profile). tiny-gpt's 512-token context
cannot hold a 512-token shared prefix plus a prompt and its output; at d=64 a step is mostly fixed per-call cost, so
a 512-token prefill would barely cost more than a decode step and the prefix-cache figure would say little.

Checks, before writing: the greedy continuation with the KV cache fed back equals full recomputation (torch), the
exported graph (run by onnx_eval) gives the same tokens for one prompt, and its logits equal those of the same weights
exported with every position's logits at each padded row's last real position (build_decoder.check_last_only). No reference.json: no test depends on
these weights' exact tokens.

Usage: /usr/bin/python3 bench/build_bench_decoder.py   (writes bench-gpt/model.onnx beside bench/)
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
LLM = os.path.dirname(HERE)
sys.path.insert(0, LLM)
import build_decoder  # noqa: E402  (the tiny-gpt builder: architecture, seeded init, Optimum-layout export)
import onnx_eval  # noqa: E402

OUT = os.path.join(LLM, "bench-gpt")
PROMPT_IDS = [15496, 11, 616, 1438, 318]  # "Hello, my name is" in GPT-2's BPE (tiny-gpt/reference.json)
CHECK_TOKENS = 4


def main():
    with open(os.path.join(OUT, "config.json")) as f:
        cfg = json.load(f)
    torch.set_num_threads(1)
    model = build_decoder.build(cfg)
    cached, _ = build_decoder.greedy_cached(model, cfg, PROMPT_IDS, CHECK_TOKENS)
    full, _ = build_decoder.greedy_full(model, cfg, PROMPT_IDS, CHECK_TOKENS)
    assert cached == full, (cached, full)
    path = os.path.join(OUT, "model.onnx")
    tmp = path + ".tmp"
    full = path + ".full.tmp"
    try:
        build_decoder.export(model, cfg, tmp, last_only=True)
        build_decoder.export(model, cfg, full)
        last_graph = onnx_eval.Model(tmp)
        via_onnx, _ = build_decoder.greedy_onnx(last_graph, cfg, PROMPT_IDS, CHECK_TOKENS)
        assert via_onnx == cached, (via_onnx, cached)
        build_decoder.check_last_only(onnx_eval.Model(full), last_graph, cfg, PROMPT_IDS, PROMPT_IDS[1:])
    finally:
        if os.path.exists(full):
            os.remove(full)
    os.replace(tmp, path)
    print(f"build_bench_decoder.py: {path} ({os.path.getsize(path) / 1e6:.1f} MB), greedy {cached}", file=sys.stderr)


if __name__ == "__main__":
    main()
