#!/usr/bin/env python3
# grpc-body.py MODEL OUT   writes one gRPC-framed inference.ModelInferRequest for h2load -d: input "input",
# FP32 [1,64] (the same values as run.sh's tensor_request) in raw_input_contents, the protobuf encoded by hand
# so that no JVM or classpath is needed (loadtest's GrpcRequestFile writes the same message from a JSON file).
import struct, sys

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def field(num, payload):  # length-delimited field
    return varint(num << 3 | 2) + varint(len(payload)) + payload

model, out = sys.argv[1], sys.argv[2]
values = [round((i % 17) / 17 - 0.5, 4) for i in range(64)]
shape = varint(1) + varint(64)
tensor = field(1, b"input") + field(2, b"FP32") + field(3, shape)
msg = field(1, model.encode()) + field(5, tensor) + field(7, struct.pack("<64f", *values))
with open(out, "wb") as f:
    f.write(b"\x00" + struct.pack(">I", len(msg)) + msg)
