"""The MLP of models/mlp (64 -> 256 -> ReLU -> 10, the same weights) in plain numpy, as a Kiln Python model.

Kiln instantiates Model() in every worker's Python process, calls load(config, device) once and warmup()
once, then predict(inputs) for each batch: inputs and outputs are dicts of tensor name -> numpy array whose
first dimension is the rows of the whole batch. The process's working directory is this folder.
"""
import os

import numpy as np


def forward(x, w):
    """The MLP: x is [rows, 64] float32; returns [rows, 10] float32."""
    hidden = np.maximum(x @ w["w0"].T + w["b0"], 0)
    return (hidden @ w["w1"].T + w["b1"]).astype(np.float32, copy=False)


class Model:
    def load(self, config, device):
        # numpy runs on the CPU whatever device says; a torch model would do .to(device).
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), config.get("weights", "mlp.npz"))
        with np.load(path) as z:  # .npz of plain arrays: np.load never unpickles (allow_pickle=False)
            self.weights = {k: np.ascontiguousarray(z[k]) for k in ("w0", "b0", "w1", "b1")}

    def warmup(self):
        forward(np.zeros((1, 64), dtype=np.float32), self.weights)

    def predict(self, inputs):
        return {"output": forward(inputs["input"], self.weights)}
