#!/usr/bin/env python3
"""Keep-alive client of loadtest/bench-big-tensors.sh: C threads, each with its own HTTP/1.1 connection, in a
closed loop against Kiln, the way a Python user with numpy calls it; prints one JSON line (requests/s, latency
percentiles of the measured window, errors).

  big-tensors-client.py http-binary PORT C WARMUP_S DURATION_S   the binary extension: the input after the JSON
      header, the output asked as binary data and read as a numpy array straight out of the response body
  big-tensors-client.py shm PORT C WARMUP_S DURATION_S [TOKEN]   system shared memory: each thread registers one
      POSIX shared-memory object holding its input and output windows, sends a small JSON request naming them, and
      copies the output out of the region into a numpy array (the region is reused by its next request)
  big-tensors-client.py body FILE                                writes the binary-extension body for wrk; prints the
      JSON header's length
  big-tensors-client.py json FILE                                writes the same input as an OIP JSON request (the
      request file LoadGen's gRPC runs send and GrpcRequestFile frames for h2load: raw_input_contents of these values)

The model is BIG_TENSORS_MODEL's (default rec): rec's input is [8, 3, 48, 320] FP32 (PP-OCRv4 rec, a crop batch), its
output [8, 40, 6625] FP32 (8,480,000 bytes); det's (PP-OCRv4 det) [1, 3, 480, 480] FP32 (2,764,800 bytes) in and the
[1, 1, 480, 480] FP32 probability map (921,600 bytes) out.
Needs numpy; nothing else beyond the standard library.
"""
import http.client
import json
import mmap
import os
import sys
import threading
import time
import uuid

import numpy as np

# The model (BIG_TENSORS_MODEL, default rec): its input shape, output name and output shape.
MODELS = {
    "rec": ([8, 3, 48, 320], "softmax_11.tmp_0", [8, 40, 6625]),
    "det": ([1, 3, 480, 480], "sigmoid_0.tmp_0", [1, 1, 480, 480]),
}
MODEL = os.environ.get("BIG_TENSORS_MODEL", "rec")
SHAPE, OUTPUT, OUT_SHAPE = MODELS[MODEL]


def make_input():
    rng = np.random.default_rng(36)
    n = int(np.prod(SHAPE))
    x = (np.sin(np.arange(n) * 0.001) * 0.8 + (rng.random(n) - 0.5) * 0.4).astype("<f4")
    return x.reshape(SHAPE)


def binary_body(x):
    header = json.dumps({
        "inputs": [{"name": "x", "datatype": "FP32", "shape": SHAPE,
                    "parameters": {"binary_data_size": x.nbytes}}],
        "outputs": [{"name": OUTPUT, "parameters": {"binary_data": True}}],
    }, separators=(",", ":")).encode()
    return header, header + x.tobytes()


def percentile(sorted_values, q):
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


def run(worker_factory, concurrency, warmup, duration):
    start = time.monotonic()
    measure_from, end = start + warmup, start + warmup + duration
    latencies, errors, lock = [], [0], threading.Lock()

    def loop(index):
        call = worker_factory(index)
        while True:
            t0 = time.monotonic()
            if t0 >= end:
                break
            try:
                call()
            except Exception as e:  # counted, and the connection is rebuilt by the next call
                with lock:
                    errors[0] += 1
                    if errors[0] <= 3:
                        print("error: %r" % (e,), file=sys.stderr)
                continue
            t1 = time.monotonic()
            if t0 >= measure_from and t1 <= end:
                with lock:
                    latencies.append(t1 - t0)

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies.sort()
    print(json.dumps({"rps": round(len(latencies) / duration, 3),
                      "p50_ms": round(percentile(latencies, 0.5) * 1000, 2),
                      "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
                      "n": len(latencies), "errors": errors[0]}))


class Connection:
    def __init__(self, port):
        self.port = port
        self.conn = None

    def post(self, path, body, headers):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            self.conn.request("POST", path, body=body, headers=headers)
            resp = self.conn.getresponse()
            data = resp.read()
        except Exception:
            self.conn.close()
            self.conn = None
            raise
        if resp.status != 200:
            raise RuntimeError("HTTP %d: %s" % (resp.status, data[:300]))
        return resp, data


def http_binary(port):
    header, body = binary_body(make_input())
    headers = {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(header))}
    expected = int(np.prod(OUT_SHAPE)) * 4

    def factory(_):
        c = Connection(port)

        def call():
            resp, data = c.post("/v2/models/%s/infer" % MODEL, body, headers)
            n = int(resp.getheader("Inference-Header-Content-Length"))
            out = np.frombuffer(data, dtype="<f4", offset=n).reshape(OUT_SHAPE)
            if out.nbytes != expected:
                raise RuntimeError("output of %d bytes" % out.nbytes)
        return call
    return factory


def shm(port, token):
    x = make_input()
    out_bytes = int(np.prod(OUT_SHAPE)) * 4
    auth = {"Authorization": "Bearer " + token} if token else {}
    regions = []

    def factory(index):
        key = "kiln-bench-%s-%d" % (uuid.uuid4().hex[:8], index)
        size = x.nbytes + out_bytes
        fd = os.open("/dev/shm/" + key, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        os.ftruncate(fd, size)
        mm = mmap.mmap(fd, size)
        os.close(fd)
        mm[:x.nbytes] = x.tobytes()
        c = Connection(port)
        name = "bench-%d" % index
        c.post("/v2/systemsharedmemory/region/%s/register" % name,
               json.dumps({"key": "/" + key, "offset": 0, "byte_size": size}),
               dict(auth, **{"Content-Type": "application/json"}))
        regions.append((name, key, mm))
        body = json.dumps({
            "inputs": [{"name": "x", "datatype": "FP32", "shape": SHAPE, "parameters": {
                "shared_memory_region": name, "shared_memory_byte_size": x.nbytes}}],
            "outputs": [{"name": OUTPUT, "parameters": {
                "shared_memory_region": name, "shared_memory_offset": x.nbytes,
                "shared_memory_byte_size": out_bytes}}],
        })
        headers = {"Content-Type": "application/json"}
        view = np.frombuffer(mm, dtype="<f4", count=out_bytes // 4, offset=x.nbytes)

        def call():
            _, data = c.post("/v2/models/%s/infer" % MODEL, body, headers)
            meta = json.loads(data)["outputs"][0]
            if meta["shape"] != OUT_SHAPE:
                raise RuntimeError("shape %s" % meta["shape"])
            view.reshape(OUT_SHAPE).copy()
        return call

    def cleanup():
        c = Connection(port)
        for name, key, mm in regions:
            try:
                c.post("/v2/systemsharedmemory/region/%s/unregister" % name, b"", auth)
            except Exception as e:
                print("unregister %s: %r" % (name, e), file=sys.stderr)
            mm.close()
            os.unlink("/dev/shm/" + key)
    return factory, cleanup


def main():
    mode = sys.argv[1]
    if mode == "body":
        header, body = binary_body(make_input())
        with open(sys.argv[2], "wb") as f:
            f.write(body)
        print(len(header))
        return
    if mode == "json":
        x = make_input()
        with open(sys.argv[2], "w") as f:
            # float32 -> Python float is exact, and so is its shortest repr read back as FP32.
            json.dump({"inputs": [{"name": "x", "datatype": "FP32", "shape": SHAPE,
                                   "data": x.reshape(-1).tolist()}]}, f, separators=(",", ":"))
        return
    port, c, warmup, duration = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
    if mode == "http-binary":
        run(http_binary(port), c, warmup, duration)
    elif mode == "shm":
        factory, cleanup = shm(port, sys.argv[6] if len(sys.argv) > 6 else os.environ.get("KILN_TOKEN", ""))
        try:
            run(factory, c, warmup, duration)
        finally:
            cleanup()
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
