"""A test model for scalars (rank-0 tensors, shape []) through Kiln's Python engine (issue #36).

Inputs: x FP32 [-1, 4]; k INT64 [] and tag BYTES [], each a 0-d numpy array (shape ()), once per batch.
Outputs: y = x * k, FP32 [-1, 4]; rows, INT64 []: the rows of the call (a 0-d array); label, BYTES []: tag + b":" + k.
predict raises unless the scalars arrive as 0-d arrays.
"""
import numpy as np


class Model:
    def predict(self, inputs):
        x, k, tag = inputs["x"], inputs["k"], inputs["tag"]
        for name, a in (("k", k), ("tag", tag)):
            if a.shape != ():
                raise ValueError("%s arrived with shape %s, not ()" % (name, a.shape))
        label = np.empty((), dtype=object)
        label[()] = tag[()] + b":" + str(int(k)).encode("ascii")
        return {"y": x * k, "rows": np.int64(x.shape[0]), "label": label}
