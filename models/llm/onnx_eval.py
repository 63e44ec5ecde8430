"""A small numpy interpreter for the ONNX operators used by the two models in this folder.

Debian's Python here has onnx 1.12 (no onnx.reference.ReferenceEvaluator, which came in 1.13) and no
onnxruntime, so the build scripts run the exported graphs with this to check them and to compute the
embedding model's reference vectors. Operators follow the ONNX spec (float32 arithmetic, int64 shapes;
DynamicQuantizeLinear rounds half to even, as the spec says).
"""
import math

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.mapping import TENSOR_TYPE_TO_NP_TYPE

OPS = {}


def op(name):
    def register(fn):
        OPS[name] = fn
        return fn
    return register


OPS.update({"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "MatMul": np.matmul, "Sqrt": np.sqrt,
            "Where": np.where, "Identity": lambda x: x, "Equal": np.equal, "LessOrEqual": np.less_equal,
            "And": np.logical_and, "Not": np.logical_not})
_erf = np.vectorize(math.erf, otypes=[np.float64])


@op("Pow")
def _pow(a, b):
    return np.power(a, b).astype(a.dtype)


@op("Div")
def _div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        return (np.trunc(a / b)).astype(a.dtype)
    return np.divide(a, b)


@op("Erf")
def _erf_op(x):
    return _erf(x).astype(x.dtype)


@op("Constant")
def _constant(value):
    return numpy_helper.to_array(value)


@op("Cast")
def _cast(x, to):
    return x.astype(TENSOR_TYPE_TO_NP_TYPE[to])


@op("Shape")
def _shape(x, start=0, end=None):
    return np.array(x.shape[start:end], np.int64)


@op("Gather")
def _gather(data, indices, axis=0):
    return np.take(data, indices, axis=axis)


@op("Unsqueeze")
def _unsqueeze(x, axes_input=None, axes=None):
    axes = axes if axes_input is None else axes_input.tolist()
    rank = x.ndim + len(axes)
    for a in sorted(a % rank for a in axes):
        x = np.expand_dims(x, a)
    return x


@op("Concat")
def _concat(*xs, axis):
    return np.concatenate(xs, axis=axis)


@op("Reshape")
def _reshape(x, shape, allowzero=0):
    shape = [x.shape[i] if d == 0 and not allowzero else d for i, d in enumerate(shape.tolist())]
    return x.reshape(shape)


@op("Transpose")
def _transpose(x, perm=None):
    return np.transpose(x, perm)


@op("Range")
def _range(start, limit, delta):
    return np.arange(start, limit, delta, dtype=start.dtype)


@op("Slice")
def _slice(x, starts, ends, axes=None, steps=None):
    axes = range(len(starts)) if axes is None else axes.tolist()
    steps = [1] * len(starts) if steps is None else steps.tolist()
    index = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts.tolist(), ends.tolist(), axes, steps):
        index[axis] = slice(start, end, step)
    return x[tuple(index)]


@op("Split")
def _split(x, split=None, axis=0, _outputs=1):
    sizes = [x.shape[axis] // _outputs] * _outputs if split is None else list(split)
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


@op("ReduceMean")
def _reduce_mean(x, axes=None, keepdims=1):
    return np.mean(x, axis=None if axes is None else tuple(axes), keepdims=bool(keepdims), dtype=x.dtype)


@op("ReduceMax")
def _reduce_max(x, axes=None, keepdims=1):
    return np.max(x, axis=None if axes is None else tuple(axes), keepdims=bool(keepdims))


@op("Softmax")
def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@op("DynamicQuantizeLinear")
def _dynamic_quantize_linear(x):
    lo, hi = np.float32(min(0.0, x.min())), np.float32(max(0.0, x.max()))
    scale = np.float32(1) if hi == lo else np.float32((hi - lo) / np.float32(255))  # ONNX Runtime's choice for 0
    zero_point = np.uint8(np.clip(np.rint(np.float32(0) - lo / scale), 0, 255))
    y = np.clip(np.rint(x / scale) + zero_point, 0, 255)
    return y.astype(np.uint8), scale, zero_point


@op("DequantizeLinear")
def _dequantize_linear(x, scale, zero_point=None, axis=1):
    zp = np.zeros_like(scale, np.int32) if zero_point is None else zero_point.astype(np.int32)
    if scale.ndim == 1 and x.ndim > 1:  # per-axis
        shape = [1] * x.ndim
        shape[axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return ((x.astype(np.int32) - zp) * scale).astype(np.float32)


@op("MatMulInteger")
def _matmul_integer(a, b, a_zero_point=None, b_zero_point=None):
    a = a.astype(np.int64) - (0 if a_zero_point is None else a_zero_point.astype(np.int64))
    b = b.astype(np.int64) - (0 if b_zero_point is None else b_zero_point.astype(np.int64))
    return np.matmul(a, b).astype(np.int32)


class Model:
    def __init__(self, path):
        self.model = onnx.load(path)
        graph = self.model.graph
        self.initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        self.nodes = list(graph.node)
        self.input_names = [i.name for i in graph.input if i.name not in self.initializers]
        self.output_names = [o.name for o in graph.output]
        missing = sorted({n.op_type for n in self.nodes} - OPS.keys())
        if missing:
            raise NotImplementedError(f"onnx_eval: no implementation for {missing}")

    def run(self, feeds):
        env = dict(self.initializers)
        env.update(feeds)
        for node in self.nodes:
            args = [env[name] if name else None for name in node.input]
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            if node.op_type == "Unsqueeze" and len(args) > 1:  # axes: an attribute before opset 13, then an input
                attrs["axes_input"] = args.pop(1)
            if node.op_type == "Split":
                attrs["_outputs"] = len(node.output)
            result = OPS[node.op_type](*args, **attrs)
            results = result if isinstance(result, tuple) else (result,)
            for name, value in zip(node.output, results):
                env[name] = np.asarray(value)
        return {name: env[name] for name in self.output_names}
