"""Regenerates models/mlp: a seeded TorchScript MLP (64 -> 256 -> ReLU -> 10) and its expected outputs.

Run from the repository root with Debian's torch (apt-get install -y python3-torch):
    /usr/bin/python3 models/mlp/generate.py
Writes mlp.pt (traced TorchScript) and expected.json (a fixed 2x64 input and torch's output for it).
Re-running reproduces the same weights and numbers for a given torch version.
"""
import json
import os

import torch

SEED = 20240601
IN_FEATURES, HIDDEN, OUT_FEATURES = 64, 256, 10


def fixed_input(rows):
    # Every value is a multiple of 1/8 in [-1, 1], so it is exact in FP32 and easy to rebuild elsewhere.
    return torch.tensor(
        [[((i * IN_FEATURES + j) % 17 - 8) / 8.0 for j in range(IN_FEATURES)] for i in range(rows)],
        dtype=torch.float32)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(SEED)
    model = torch.nn.Sequential(
        torch.nn.Linear(IN_FEATURES, HIDDEN),
        torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, OUT_FEATURES),
    ).eval()
    with torch.no_grad():
        traced = torch.jit.trace(model, torch.zeros(1, IN_FEATURES))
        traced.save(os.path.join(here, "mlp.pt"))
        x = fixed_input(2)
        y = traced(x)
    expected = {
        "description": "input[i][j] = ((i*64 + j) % 17 - 8) / 8; output computed by torch "
                       + torch.__version__ + " from mlp.pt",
        "input": {"name": "input", "datatype": "FP32", "shape": list(x.shape),
                  "data": [float(v) for v in x.flatten().tolist()]},
        "output": {"name": "output", "datatype": "FP32", "shape": list(y.shape),
                   "data": [float(v) for v in y.flatten().tolist()]},
    }
    with open(os.path.join(here, "expected.json"), "w") as f:
        # One line per key keeps the file short and its diffs readable.
        f.write("{\n" + ",\n".join(" " + json.dumps(k) + ": " + json.dumps(v) for k, v in expected.items()) + "\n}\n")


if __name__ == "__main__":
    main()
