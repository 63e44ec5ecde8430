"""The MLP of models/mlp (64 -> 256 -> ReLU -> 10) in torch, as a Kiln Python model: the weights of
deploy/examples/python/mlp.npz (config weights: a path relative to this folder), on the device Kiln names."""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import describe, pick_device, set_tf32  # noqa: E402

DEFAULT_WEIGHTS = "../../../../deploy/examples/python/mlp.npz"


class Model:
    def load(self, config, device):
        self.device = pick_device(device)
        set_tf32(config.get("tf32", False))
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), config.get("weights", DEFAULT_WEIGHTS))
        with np.load(path) as z:  # plain arrays; np.load never unpickles here (allow_pickle=False)
            self.w = {k: torch.from_numpy(np.ascontiguousarray(z[k])).to(self.device) for k in ("w0", "b0", "w1", "b1")}
        print("gpu-check mlp on " + describe(self.device), file=sys.stderr)


    def run(self, x):
        with torch.inference_mode():
            t = torch.from_numpy(x).to(self.device)
            h = torch.relu(torch.nn.functional.linear(t, self.w["w0"], self.w["b0"]))
            return torch.nn.functional.linear(h, self.w["w1"], self.w["b1"]).cpu().numpy()

    def predict(self, inputs):
        return {"output": self.run(np.ascontiguousarray(inputs["input"], dtype=np.float32))}
