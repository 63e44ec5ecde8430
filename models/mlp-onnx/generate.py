"""Regenerates models/mlp-onnx: the MLP of models/mlp (same weights) as an ONNX graph, and its expected outputs.

Needs only Debian's numpy and onnx (apt-get install -y python3-numpy python3-onnx), not torch: the weights
are read straight out of models/mlp/mlp.pt (a zip whose data/N entries are the raw little-endian FP32
storages of Linear(64, 256).weight, .bias, Linear(256, 10).weight, .bias, in that order), and the numpy
forward pass is checked against torch's own output in models/mlp/expected.json before anything is written.
Run from the repository root:
    /usr/bin/python3 models/mlp-onnx/generate.py
Writes model.onnx (opset 13, batch dimension free) and expected.json (the same fixed 2x64 input, the output).
"""
import json
import os
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IN_FEATURES, HIDDEN, OUT_FEATURES = 64, 256, 10


def torch_weights(pt):
    with zipfile.ZipFile(pt) as z:
        def storage(i, shape):
            return np.frombuffer(z.read("mlp/data/%d" % i), dtype="<f4").reshape(shape)
        return (storage(0, (HIDDEN, IN_FEATURES)), storage(1, (HIDDEN,)),
                storage(2, (OUT_FEATURES, HIDDEN)), storage(3, (OUT_FEATURES,)))


def forward(x, w0, b0, w1, b1):
    return np.maximum(x @ w0.T + b0, 0) @ w1.T + b1


def graph(w0, b0, w1, b1):
    batch = "batch"
    nodes = [
        helper.make_node("Gemm", ["input", "w0", "b0"], ["hidden"], transB=1),
        helper.make_node("Relu", ["hidden"], ["relu"]),
        helper.make_node("Gemm", ["relu", "w1", "b1"], ["output"], transB=1),
    ]
    inits = [numpy_helper.from_array(np.ascontiguousarray(a), name)
             for name, a in (("w0", w0), ("b0", b0), ("w1", w1), ("b1", b1))]
    g = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, IN_FEATURES])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [batch, OUT_FEATURES])],
        inits)
    model = helper.make_model(g, producer_name="kiln models/mlp-onnx/generate.py",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7  # readable by every ONNX Runtime since 1.6
    onnx.checker.check_model(model)
    return model


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    weights = torch_weights(os.path.join(root, "models", "mlp", "mlp.pt"))
    with open(os.path.join(root, "models", "mlp", "expected.json")) as f:
        torch_expected = json.load(f)
    x = np.array(torch_expected["input"]["data"], dtype=np.float32).reshape(torch_expected["input"]["shape"])
    y = forward(x, *weights).astype(np.float32)
    torch_y = np.array(torch_expected["output"]["data"], dtype=np.float32).reshape(y.shape)
    if not np.allclose(y, torch_y, atol=1e-5):
        raise SystemExit("numpy forward pass disagrees with torch's by %g: weights misread" % np.abs(y - torch_y).max())
    onnx.save(graph(*weights), os.path.join(here, "model.onnx"))
    expected = {
        "description": "the input of models/mlp/expected.json; output computed by numpy " + np.__version__
                       + " from the weights in models/mlp/mlp.pt (agrees with torch's within 1e-5)",
        "input": torch_expected["input"],
        "output": {"name": "output", "datatype": "FP32", "shape": list(y.shape),
                   "data": [float(v) for v in y.flatten().tolist()]},
    }
    with open(os.path.join(here, "expected.json"), "w") as f:
        f.write("{\n" + ",\n".join(" " + json.dumps(k) + ": " + json.dumps(v) for k, v in expected.items()) + "\n}\n")


if __name__ == "__main__":
    main()
