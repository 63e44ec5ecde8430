"""Writes model.onnx: a string model for Kiln's BYTES datatype on ONNX Runtime, with no onnx package needed.

Graph (opset 20): text STRING [N] -> StringConcat(text, "!") -> exclaimed STRING [N]
                  text STRING [N] -> Identity -> same STRING [N]
(StringConcat rather than StringNormalizer: the latter needs the en_US.UTF-8 locale installed on the host.)
The protobuf is written by hand (a few fields of onnx.proto's ModelProto), so the file is reproducible with
just the standard library:  /usr/bin/python3 models/text-onnx/generate.py
"""
import os


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, value):
    """A length-delimited field (bytes/str/sub-message) or a varint (int)."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode("utf-8")
    return varint(number << 3 | 2) + varint(len(value)) + value


STRING = 8  # TensorProto.DataType.STRING


def value_info(name, dim_param):
    dim = field(1, field(2, dim_param))                     # TensorShapeProto.dim { dim_param }
    tensor = field(1, STRING) + field(2, dim)               # TypeProto.Tensor { elem_type, shape }
    return field(1, name) + field(2, field(1, tensor))      # ValueInfoProto { name, type { tensor_type } }


def node(inputs, outputs, name, op, attributes=b""):
    return b"".join(field(1, i) for i in inputs) + b"".join(field(2, o) for o in outputs) \
        + field(3, name) + field(4, op) + attributes


bang = field(1, 1) + field(2, STRING) + field(6, "!") + field(8, "bang")  # TensorProto: dims [1], string_data
graph = (field(1, node(["text", "bang"], ["exclaimed"], "exclaimed", "StringConcat"))
         + field(1, node(["text"], ["same"], "same", "Identity"))
         + field(2, "kiln-text")
         + field(5, bang)
         + field(11, value_info("text", "N"))
         + field(12, value_info("exclaimed", "N"))
         + field(12, value_info("same", "N")))
model = field(1, 8) + field(2, "kiln generate.py") + field(7, graph) + field(8, field(1, "") + field(2, 20))

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.onnx"), "wb") as f:
    f.write(model)
