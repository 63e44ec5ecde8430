"""Writes mlp.npz beside this file: the weights of models/mlp/mlp.pt as plain numpy arrays.

Needs only numpy (Debian: apt-get install -y python3-numpy), not torch: mlp.pt is a zip whose data/N entries
are the raw little-endian FP32 storages of Linear(64, 256).weight, .bias, Linear(256, 10).weight, .bias, in
that order (see models/mlp-onnx/generate.py). The numpy forward pass of model.py is checked against torch's
own output in models/mlp/expected.json (within 1e-5) before anything is written. Run from anywhere:
    /usr/bin/python3 deploy/examples/python/generate.py
"""
import json
import os
import sys
import zipfile

import numpy as np

IN_FEATURES, HIDDEN, OUT_FEATURES = 64, 256, 10


def torch_weights(pt):
    with zipfile.ZipFile(pt) as z:
        def storage(i, shape):
            return np.frombuffer(z.read("mlp/data/%d" % i), dtype="<f4").reshape(shape)
        return {"w0": storage(0, (HIDDEN, IN_FEATURES)), "b0": storage(1, (HIDDEN,)),
                "w1": storage(2, (OUT_FEATURES, HIDDEN)), "b1": storage(3, (OUT_FEATURES,))}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    weights = torch_weights(os.path.join(root, "models", "mlp", "mlp.pt"))
    sys.path.insert(0, here)
    from model import forward
    with open(os.path.join(root, "models", "mlp", "expected.json")) as f:
        expected = json.load(f)
    x = np.array(expected["input"]["data"], dtype=np.float32).reshape(expected["input"]["shape"])
    y = forward(x, weights)
    want = np.array(expected["output"]["data"], dtype=np.float32).reshape(y.shape)
    if not np.allclose(y, want, atol=1e-5, rtol=0):
        raise SystemExit("numpy forward pass disagrees with torch's by %g: weights misread" % np.abs(y - want).max())
    np.savez(os.path.join(here, "mlp.npz"), **weights)
    print("wrote mlp.npz; max difference to torch's output %.3g" % np.abs(y - want).max())


if __name__ == "__main__":
    main()
