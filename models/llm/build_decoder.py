"""Builds tiny-gpt/model.onnx and tiny-gpt/reference.json.

The model is a GPT-2-architecture decoder (config.json: 2 layers, 4 heads, 64 wide, 512 positions, GPT-2's 50257
tokens) with seeded random weights, exported with torch.onnx (opset 14) in Hugging Face Optimum's
text-generation-with-past layout: inputs input_ids, attention_mask, position_ids, past_key_values.{i}.key/value;
outputs logits, present.{i}.key/value. The first call passes a past of length 0.

reference.json holds ground truth for token-exact tests: each prompt's ids (from the real GPT-2 tokenizer, the npm
package gpt-3-encoder run with node), its 16-token greedy continuation (torch, with the KV cache fed back step by
step; checked against full recomputation and against the exported graph) and the decoded text.

Usage: /usr/bin/python3 build_decoder.py <gpt-3-encoder package dir>   (writes into tiny-gpt/ beside this file)
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from torch import nn

import jsonout
import onnx_eval

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "tiny-gpt")
OUT_LAST = os.path.join(HERE, "tiny-gpt-last")  # the same weights, logits of the last position only
SEED = 6
# Initialisation: GPT-2's N(0, 0.02) everywhere except the query/key/value projection (0.3, so attention is
# sharp enough to make the continuation depend on the context) and the final LayerNorm's gain (16, so logits
# spread over a few units: a greedy run is not one token repeated, and sampling is not near-uniform).
INIT_STD, QKV_STD, FINAL_GAIN = 0.02, 0.3, 16.0
NEW_TOKENS = 16
PROMPTS = [
    "Hello, my name is",
    "The quick brown fox",
    "In a quiet village at the edge of the forest, an old clockmaker repaired watches for travellers, and every "
    "evening he wrote down the stories they told him about the cities beyond the mountains.",
]
CHAT = [{"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is Kiln?"},
        {"role": "assistant", "content": "A model server."},
        {"role": "user", "content": "Does it stream tokens?"}]


class Attention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head, self.head_dim = n_head, n_embd // n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x, allowed, past_key, past_value):
        b, s, e = x.shape
        q, k, v = (t.reshape(b, s, self.n_head, self.head_dim).transpose(1, 2)
                   for t in self.c_attn(x).split(e, dim=2))
        k = torch.cat([past_key, k], dim=2)
        v = torch.cat([past_value, v], dim=2)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        # A finite minimum, not -inf: a row with every key masked (a padding query) stays finite (uniform).
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, s, e)
        return self.c_proj(y), k, v


class Block(nn.Module):
    def __init__(self, n_embd, n_head, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, eps=eps)
        self.attn = Attention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd, eps=eps)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x, allowed, past_key, past_value):
        a, k, v = self.attn(self.ln_1(x), allowed, past_key, past_value)
        x = x + a
        return x + self.mlp(self.ln_2(x)), k, v


class TinyGPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        # True: logits of each row's last real new position only, [batch, 1, vocab] (see last_position).
        self.last_only = False
        self.wte = nn.Embedding(cfg["vocab_size"], cfg["n_embd"])
        self.wpe = nn.Embedding(cfg["n_positions"], cfg["n_embd"])
        eps = cfg["layer_norm_epsilon"]
        self.h = nn.ModuleList(Block(cfg["n_embd"], cfg["n_head"], eps) for _ in range(cfg["n_layer"]))
        self.ln_f = nn.LayerNorm(cfg["n_embd"], eps=eps)

    def forward(self, input_ids, attention_mask, position_ids, *past):
        """past: key, value of layer 0, then of layer 1, ... each [batch, heads, past_len, head_dim]."""
        s = input_ids.shape[1]
        p = past[0].shape[2]
        # New token j sits at key index p + j and sees keys 0..p+j that attention_mask does not hide.
        causal = torch.arange(p + s)[None, :] <= (torch.arange(s) + p)[:, None]
        allowed = causal[None, None] & (attention_mask[:, None, None, :] != 0)
        x = self.wte(input_ids) + self.wpe(position_ids)
        presents = []
        for i, block in enumerate(self.h):
            x, k, v = block(x, allowed, past[2 * i], past[2 * i + 1])
            presents += [k, v]
        if self.last_only:
            x = last_position(x, attention_mask[:, p:])
        logits = self.ln_f(x) @ self.wte.weight.t()  # LM head tied to the token embedding
        return (logits, *presents)


def last_position(x, new_mask):
    """x [b, s, e] -> [b, 1, e]: each row's last new position whose attention_mask is 1 (right or left padding).

    A one-hot matmul rather than a gather: exact (the other positions are multiplied by 0), and made of operators the
    checks' interpreter (onnx_eval) runs. It precedes the LM head, whose vocab x d matrix dominates a prefill chunk's
    cost when computed at every position.
    """
    s = x.shape[1]
    last = torch.amax(new_mask * torch.arange(1, s + 1)[None, :], dim=1) - 1  # -1: a row with no real token
    one_hot = (torch.arange(s)[None, :] == last[:, None]).to(x.dtype)
    return one_hot[:, None, :] @ x


def build(cfg):
    torch.manual_seed(SEED)
    model = TinyGPT(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.zero_()
            elif name.startswith("ln_f"):
                p.fill_(FINAL_GAIN)
            elif ".ln_" in name:
                p.fill_(1.0)
            else:
                p.normal_(0.0, QKV_STD if "c_attn" in name else INIT_STD)
    return model.eval()


def empty_past(cfg, batch):
    shape = (batch, cfg["n_head"], 0, cfg["n_embd"] // cfg["n_head"])
    return [torch.zeros(shape) for _ in range(2 * cfg["n_layer"])]


@torch.no_grad()
def greedy_cached(model, cfg, ids, n):
    """Prompt in one call with an empty past, then one token a call with the returned present fed back."""
    past, x, out, steps = empty_past(cfg, 1), torch.tensor([ids]), [], []
    total = len(ids)
    position_ids = torch.arange(total)[None]
    for _ in range(n):
        logits, *past = model(x, torch.ones(1, total, dtype=torch.long), position_ids, *past)
        steps.append(logits[0, -1])
        out.append(int(logits[0, -1].argmax()))
        x, position_ids = torch.tensor([[out[-1]]]), torch.tensor([[total]])
        total += 1
    return out, steps


@torch.no_grad()
def greedy_full(model, cfg, ids, n):
    """Recomputes the whole sequence every step, no cache."""
    ids, out, steps = list(ids), [], []
    for _ in range(n):
        x = torch.tensor([ids])
        logits, *_ = model(x, torch.ones_like(x), torch.arange(len(ids))[None], *empty_past(cfg, 1))
        steps.append(logits[0, -1])
        out.append(int(logits[0, -1].argmax()))
        ids.append(out[-1])
    return out, steps


def greedy_onnx(graph, cfg, ids, n):
    """The cached loop again, through the exported graph."""
    feeds = {f"past_key_values.{i}.{kv}": np.zeros((1, cfg["n_head"], 0, cfg["n_embd"] // cfg["n_head"]), np.float32)
             for i in range(cfg["n_layer"]) for kv in ("key", "value")}
    x, total, out, steps = np.array([ids], np.int64), len(ids), [], []
    position_ids = np.arange(total, dtype=np.int64)[None]
    for _ in range(n):
        feeds.update(input_ids=x, attention_mask=np.ones((1, total), np.int64), position_ids=position_ids)
        result = graph.run(feeds)
        steps.append(result["logits"][0, -1])
        out.append(int(result["logits"][0, -1].argmax()))
        for i in range(cfg["n_layer"]):
            for kv in ("key", "value"):
                feeds[f"past_key_values.{i}.{kv}"] = result[f"present.{i}.{kv}"]
        x, position_ids = np.array([[out[-1]]], np.int64), np.array([[total]], np.int64)
        total += 1
    return out, steps


@torch.no_grad()
def check_padding(model, cfg, a, b):
    """Padding that attention_mask hides anywhere in the key range changes no logits (len(a) > len(b))."""
    def alone(ids):
        logits, *_ = model(torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.long),
                           torch.arange(len(ids))[None], *empty_past(cfg, 1))
        return logits[0, -1]

    pad, width = len(a) - len(b), len(a)
    rows = lambda x, y: torch.tensor([x, y])
    # Left padding at prefill.
    logits, *_ = model(rows(a, [0] * pad + b), rows([1] * width, [0] * pad + [1] * len(b)),
                       rows(list(range(width)), [0] * pad + list(range(len(b)))), *empty_past(cfg, 2))
    assert torch.allclose(logits[0, -1], alone(a), atol=1e-4) and torch.allclose(logits[1, -1], alone(b), atol=1e-4)
    # Right padding at prefill, then a decode step whose key range has the padding in the middle.
    mask = rows([1] * width, [1] * len(b) + [0] * pad)
    logits, *past = model(rows(a, b + [0] * pad), mask, rows(list(range(width)), list(range(len(b))) + [0] * pad),
                          *empty_past(cfg, 2))
    ta, tb = int(logits[0, -1].argmax()), int(logits[1, len(b) - 1].argmax())
    logits, *_ = model(rows([ta], [tb]), torch.cat([mask, torch.ones(2, 1, dtype=torch.long)], 1),
                       rows([len(a)], [len(b)]), *past)
    assert torch.allclose(logits[0, -1], alone(a + [ta]), atol=1e-4)
    assert torch.allclose(logits[1, -1], alone(b + [tb]), atol=1e-4)


def export(model, cfg, path, last_only=False):
    """Exports in Optimum's layout; last_only: logits [batch_size, 1, vocab] of each row's last real position."""
    model.last_only = last_only
    try:
        return _export(model, cfg, path, last_only)
    finally:
        model.last_only = False


def _export(model, cfg, path, last_only):
    n_layer, heads, head_dim = cfg["n_layer"], cfg["n_head"], cfg["n_embd"] // cfg["n_head"]
    past_names = [f"past_key_values.{i}.{kv}" for i in range(n_layer) for kv in ("key", "value")]
    present_names = [f"present.{i}.{kv}" for i in range(n_layer) for kv in ("key", "value")]
    total = "past_sequence_length + sequence_length"
    dynamic = {"input_ids": {0: "batch_size", 1: "sequence_length"},
               "attention_mask": {0: "batch_size", 1: total},
               "position_ids": {0: "batch_size", 1: "sequence_length"},
               "logits": {0: "batch_size"} if last_only else {0: "batch_size", 1: "sequence_length"}}
    dynamic.update({n: {0: "batch_size", 2: "past_sequence_length"} for n in past_names})
    dynamic.update({n: {0: "batch_size", 2: total} for n in present_names})
    # Traced with batch 2, 3 new tokens and a past of 4 so no size is 0 or 1 (and so never specialised).
    args = (torch.randint(0, cfg["vocab_size"], (2, 3)), torch.ones(2, 7, dtype=torch.long),
            torch.arange(4, 7).repeat(2, 1), *[torch.randn(2, heads, 4, head_dim) for _ in past_names])
    # do_constant_folding=False keeps the LM head a Transpose of the embedding initializer: folding would store
    # the 12.9 MB matrix twice.
    torch.onnx.export(model, args, path, input_names=["input_ids", "attention_mask", "position_ids", *past_names],
                      output_names=["logits", *present_names], dynamic_axes=dynamic, opset_version=14,
                      do_constant_folding=False)

    # Pin the declared shapes exactly (the exporter leaves some static dims unnamed/unknown).
    m = onnx.load(path)
    shapes = {"input_ids": ["batch_size", "sequence_length"], "attention_mask": ["batch_size", total],
              "position_ids": ["batch_size", "sequence_length"],
              "logits": ["batch_size", 1 if last_only else "sequence_length", cfg["vocab_size"]]}
    shapes.update({n: ["batch_size", heads, "past_sequence_length", head_dim] for n in past_names})
    shapes.update({n: ["batch_size", heads, total, head_dim] for n in present_names})
    for value in list(m.graph.input) + list(m.graph.output):
        dims = value.type.tensor_type.shape.dim
        del dims[:]
        for d in shapes[value.name]:
            dims.add().CopyFrom(onnx.TensorShapeProto.Dimension(**({"dim_param": d} if isinstance(d, str)
                                                                    else {"dim_value": d})))
    del m.graph.value_info[:]
    m.producer_name, m.producer_version = "kiln models/llm/build_decoder.py", torch.__version__
    onnx.save(m, path)
    onnx.checker.check_model(path, full_check=True)
    return [(v.name, onnx.TensorProto.DataType.Name(v.type.tensor_type.elem_type), shapes[v.name])
            for v in list(m.graph.input) + list(m.graph.output)]


def check_last_only(full, last, cfg, a, b):
    """The last-only graph's logits are the full graph's at each row's last real position, for right- and
    left-padded prefill rows and for a padded chunk after a past (len(a) > len(b)); both graphs run by onnx_eval."""
    pad, width = len(a) - len(b), len(a)
    past0 = {f"past_key_values.{i}.{kv}": np.zeros((2, cfg["n_head"], 0, cfg["n_embd"] // cfg["n_head"]), np.float32)
             for i in range(cfg["n_layer"]) for kv in ("key", "value")}
    arr = lambda rows: np.array(rows, np.int64)

    def both(feeds, lasts):
        f, l = full.run(feeds), last.run(feeds)
        assert l["logits"].shape == (2, 1, cfg["vocab_size"]), l["logits"].shape
        for i, j in enumerate(lasts):
            assert np.allclose(l["logits"][i, 0], f["logits"][i, j], atol=1e-5), (i, j)
        return f

    right_mask = arr([[1] * width, [1] * len(b) + [0] * pad])
    right = both(dict(past0, input_ids=arr([a, b + [0] * pad]), attention_mask=right_mask,
                      position_ids=arr([list(range(width)), list(range(len(b))) + [0] * pad])), [width - 1, len(b) - 1])
    both(dict(past0, input_ids=arr([a, [0] * pad + b]), attention_mask=arr([[1] * width, [0] * pad + [1] * len(b)]),
              position_ids=arr([list(range(width)), [0] * pad + list(range(len(b)))])), [width - 1, width - 1])
    # A chunk of 3 after that past: row 0 three real tokens, row 1 one and two of padding.
    feeds = {f"past_key_values.{i}.{kv}": right[f"present.{i}.{kv}"] for i in range(cfg["n_layer"])
             for kv in ("key", "value")}
    both(dict(feeds, input_ids=arr([a[:3], b[:1] + [0, 0]]),
              attention_mask=np.concatenate([right_mask, arr([[1, 1, 1], [1, 0, 0]])], axis=1),
              position_ids=arr([[width, width + 1, width + 2], [len(b), 0, 0]])), [2, 0])


def node_js(package, request):
    script = ("const {encode, decode} = require(process.argv[1]);"
              "const r = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "console.log(JSON.stringify({encode: (r.encode || []).map(t => encode(t)),"
              " decode: (r.decode || []).map(ids => decode(ids))}));")
    done = subprocess.run(["node", "-e", script, os.path.abspath(package)], input=json.dumps(request),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def render_chat(messages, eos):
    """What tokenizer_config.json's chat_template gives with add_generation_prompt=True."""
    text = "".join(f"<|{m['role']}|>\n{m['content']}" + (eos if m["role"] == "assistant" else "") + "\n"
                   for m in messages)
    return text + "<|assistant|>\n"


def main(package):
    with open(os.path.join(OUT, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(OUT, "tokenizer_config.json")) as f:
        eos = json.load(f)["eos_token"]
    eos_id = cfg["eos_token_id"]
    torch.set_num_threads(1)  # reproducible float sums
    model = build(cfg)

    encoded = node_js(package, {"encode": PROMPTS})["encode"]
    # The past of length 0 a first call gets must work (and agree with full recomputation).
    runs = []
    for ids in encoded:
        cached, cached_steps = greedy_cached(model, cfg, ids, NEW_TOKENS)
        full, full_steps = greedy_full(model, cfg, ids, NEW_TOKENS)
        assert cached == full, (cached, full)
        assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(cached_steps, full_steps))
        assert eos_id not in cached, "a continuation would stop early at <|endoftext|>"
        runs.append((ids, cached, cached_steps))
    check_padding(model, cfg, encoded[0], encoded[1])

    path = os.path.join(OUT, "model.onnx")
    io = export(model, cfg, path)
    for name, dtype, shape in io:
        print(f"build_decoder.py: {name} {dtype} {shape}", file=sys.stderr)
    # The same weights with the LM head on each row's last position only (the engine's other logits layout).
    os.makedirs(OUT_LAST, exist_ok=True)
    last_path = os.path.join(OUT_LAST, "model.onnx")
    export(model, cfg, last_path, last_only=True)
    graph, last_graph = onnx_eval.Model(path), onnx_eval.Model(last_path)
    for ids, cached, steps in runs:
        for g in (graph, last_graph):
            via_onnx, onnx_steps = greedy_onnx(g, cfg, ids, NEW_TOKENS)
            assert via_onnx == cached, (via_onnx, cached)
            assert all(np.allclose(a.numpy(), b, atol=1e-4) for a, b in zip(steps, onnx_steps))
    check_last_only(graph, last_graph, cfg, encoded[0], encoded[1])

    # gpt-3-encoder knows no special tokens: the chat text is encoded around its <|endoftext|>, as HF tokenizers do.
    chat_text = render_chat(CHAT, eos)
    continuations = [c for _, c, _ in runs]
    js = node_js(package, {"encode": chat_text.split(eos),
                           "decode": continuations + [ids + c for ids, c, _ in runs]})
    chat_ids = js["encode"][0]
    for piece in js["encode"][1:]:
        chat_ids += [eos_id] + piece
    n = len(runs)
    reference = {
        "model": "tiny-gpt (seeded random weights: the text is gibberish, the tokens are exact)",
        "seed": SEED,
        "new_tokens": NEW_TOKENS,
        "greedy": "argmax at every step; the prompt in one call with past length 0, then one token a call",
        "prompts": [],
        "chat": {"messages": CHAT, "add_generation_prompt": True, "text": chat_text, "input_ids": chat_ids},
    }
    for i, ((ids, cont, steps), text) in enumerate(zip(runs, PROMPTS)):
        top = steps[0].topk(5)
        margins = [float(s.topk(2).values[0] - s.topk(2).values[1]) for s in steps]
        reference["prompts"].append({
            "text": text,
            "input_ids": ids,
            "greedy_ids": cont,
            "greedy_text": js["decode"][i],
            "full_text": js["decode"][n + i],
            "first_step_top5": {"ids": top.indices.tolist(), "logits": [round(v, 5) for v in top.values.tolist()]},
            "min_top1_top2_gap": round(min(margins), 5),
        })
    jsonout.write(os.path.join(OUT, "reference.json"), reference)
    for p in reference["prompts"]:
        print(f"build_decoder.py: {p['text'][:30]!r} -> {p['greedy_ids']} {p['greedy_text']!r}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
