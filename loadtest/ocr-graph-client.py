#!/usr/bin/env python3
"""Both sides of loadtest/bench-ocr-graph.sh: images/s of the OCR example's graph through Kiln, and of the same five
steps called in this one process; C threads in a closed loop, WARMUP_S unmeasured then DURATION_S measured; prints
one JSON line (images/s, latency percentiles, errors, the serving side's CPU per image, the text read).

  ocr-graph-client.py render FILE LINES_JSON
      renders the lines (a JSON list of strings) black on white in DejaVu Sans 32, as OcrExampleTest does, into FILE
  ocr-graph-client.py kiln PORT C WARMUP_S DURATION_S IMAGE LINES_JSON [PID]
      POST /v2/models/ocr-read/infer with the binary extension (the image file as UINT8 [1, n] after the JSON
      header), each thread on its own keep-alive HTTP/1.1 connection; CPU per image is that of PID's process group
      (the Kiln node started with setsid: its JVM and its Python workers) over the measured window
  ocr-graph-client.py direct YAML C WARMUP_S DURATION_S IMAGE LINES_JSON
      the graph ocr-read of YAML, its five steps in this process: det-pre, crop and ctc are model.py's classes (from
      the Python steps' uri, with their config), det and rec ONNX Runtime sessions with the deployments' intra-op /
      inter-op threads, the Python steps' intra-op threads as OMP/MKL/OpenBLAS threads (as Kiln's Python workers
      get them); each step behind a lock of its own, as each of Kiln's pools has one worker (DIRECT_MODE=PARALLEL:
      no locks); CPU per image is this process's
  ocr-graph-client.py describe YAML
      one line: the graph's steps, each with its deployment, engine, threads and workers (for meta.txt)
  ocr-graph-client.py versions
      onnxruntime's version and where it was imported from

Every answer must read exactly LINES_JSON, in order: an answer that does not counts as an error (the first few are
printed), so a run whose two sides read differently is not judged. Needs numpy, OpenCV (model.py), PIL (render),
PyYAML and onnxruntime (direct).
"""
import http.client
import json
import os
import sys
import threading
import time

GRAPH = "ocr-read"
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def render(path, lines):
    from PIL import Image, ImageDraw, ImageFont
    font = ImageFont.truetype(FONT, 32)
    im = Image.new("RGB", (720, 40 + 70 * len(lines)), "white")
    d = ImageDraw.Draw(im)
    for i, line in enumerate(lines):
        d.text((24, 24 + 70 * i), line, font=font, fill="black")
    im.save(path)


def percentile(sorted_values, q):
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


def group_cpu_seconds(pgid):
    """User + system CPU of every process in group PGID (a Kiln node started with setsid: its JVM and workers)."""
    ticks = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        # After the command's ")": state ppid pgrp ... utime (the 12th) stime (the 13th).
        if int(fields[2]) == pgid:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds():
    t = os.times()
    return t.user + t.system


def run(call, concurrency, warmup, duration, expected, cpu_seconds):
    """Closed loop: an image is counted when its answer ends inside the measured window (a completion rate, the same
    on both sides); answers that do not read `expected` are errors."""
    start = time.monotonic()
    measure_from, end = start + warmup, start + warmup + duration
    latencies, errors, wrong, lock = [], [0], [], threading.Lock()
    cpu = {}

    def loop(index):
        read = call(index)
        while True:
            t0 = time.monotonic()
            if t0 >= end:
                break
            try:
                text = read()
            except Exception as e:  # counted; the next call rebuilds what it needs
                with lock:
                    errors[0] += 1
                    if errors[0] <= 3:
                        print("error: %r" % (e,), file=sys.stderr)
                continue
            t1 = time.monotonic()
            if text != expected:
                with lock:
                    errors[0] += 1
                    wrong.append(text)
                    if len(wrong) <= 3:
                        print("wrong answer: %r (expected %r)" % (text, expected), file=sys.stderr)
                continue
            if measure_from <= t1 <= end:
                with lock:
                    latencies.append(t1 - t0)

    def clock():
        # The serving side's CPU over the measured window only (not the warm-up, not the stragglers after it).
        for key, at in (("from", measure_from), ("to", end)):
            time.sleep(max(0.0, at - time.monotonic()))
            cpu[key] = cpu_seconds()

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(concurrency)]
    threads.append(threading.Thread(target=clock))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies.sort()
    n = len(latencies)
    return {"rps": round(n / duration, 3),
            "p50_ms": round(percentile(latencies, 0.5) * 1000, 2),
            "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
            "n": n, "errors": errors[0],
            "cpu_ms_per_image": round((cpu["to"] - cpu["from"]) * 1000 / n, 1) if n else None,
            "text": expected if not wrong else wrong[0]}


def kiln(port, image):
    header = json.dumps({
        "inputs": [{"name": "image", "datatype": "UINT8", "shape": [1, len(image)],
                    "parameters": {"binary_data_size": len(image)}}],
        "outputs": [{"name": "text"}],
    }, separators=(",", ":")).encode()
    body = header + image
    headers = {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(header))}

    def call(_):
        conn = [None]

        def read():
            if conn[0] is None:
                conn[0] = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            try:
                conn[0].request("POST", "/v2/models/%s/infer" % GRAPH, body=body, headers=headers)
                resp = conn[0].getresponse()
                data = resp.read()
            except Exception:
                conn[0].close()
                conn[0] = None
                raise
            if resp.status != 200:
                raise RuntimeError("HTTP %d: %s" % (resp.status, data[:300]))
            n = resp.getheader("Inference-Header-Content-Length")
            answer = json.loads(data[:int(n)] if n else data)
            text = [o for o in answer["outputs"] if o["name"] == "text"][0]
            return [str(s) for s in text["data"]]
        return read
    return call


def direct(yaml_path, image):
    import yaml
    folder = os.path.dirname(os.path.abspath(yaml_path))
    with open(yaml_path) as f:
        spec = yaml.safe_load(f)
    graph = [g for g in spec["graphs"] if g["name"] == GRAPH][0]
    deployments = {d["name"]: d for d in spec["deployments"]}
    # Kiln starts each Python worker with its threads.intra_op as OMP/MKL/OpenBLAS threads; here one process runs all
    # three Python steps, so they must agree. Set before numpy and OpenCV load.
    python_threads = {int(deployments[s["model"]]["model"].get("threads", {}).get("intra_op", 0))
                      for s in graph["steps"] if deployments[s["model"]]["model"]["engine"] == "Python"}
    if len(python_threads) != 1:
        sys.exit("the Python steps' threads.intra_op differ (%s): one process cannot run them alike" % python_threads)
    threads = python_threads.pop()
    if threads > 0:
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ[name] = str(threads)
    import numpy as np
    import onnxruntime as ort
    code = {os.path.join(folder, deployments[s["model"]]["model"]["uri"]) for s in graph["steps"]
            if deployments[s["model"]]["model"]["engine"] == "Python"}
    if len(code) != 1:
        sys.exit("the Python steps' uri differ (%s): expected one model.py" % code)
    sys.path.insert(0, code.pop())
    import model as ocr  # deploy/examples/ocr/model.py: the Python pools' own code

    steps = []
    for step in graph["steps"]:
        d = deployments[step["model"]]["model"]
        if d["engine"] == "OnnxRuntime":
            so = ort.SessionOptions()
            t = d.get("threads", {})
            so.intra_op_num_threads = int(t.get("intra_op", 0))
            so.inter_op_num_threads = int(t.get("inter_op", 0))
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL  # as Kiln's ALL_OPT
            session = ort.InferenceSession(os.path.join(folder, d["uri"], "model.onnx"), so,
                                           providers=["CPUExecutionProvider"])
            outputs = [o["name"] for o in d["outputs"]]

            def run_session(inputs, session=session, outputs=outputs):
                return dict(zip(outputs, session.run(outputs, inputs)))
            fn = run_session
        else:
            py = d["python"]
            obj = getattr(ocr, py["class"])()
            obj.load(py.get("config", {}), "cpu")
            obj.warmup()
            fn = obj.predict
        steps.append((step["name"], step["input_map"], fn))
    outputs = {o["name"]: o["from"] for o in graph["outputs"]}
    parallel = os.environ.get("DIRECT_MODE", "SERIAL") == "PARALLEL"
    locks = {name: threading.Lock() for name, _, _ in steps}

    def value(results, source):
        # A graph source: input.NAME, STEP.OUTPUT (the output's name may hold dots), or either with [0] (one row).
        row = source.endswith("[0]")
        source = source[:-3] if row else source
        step, name = source.split(".", 1)
        v = results[step][name]
        return v[0] if row else v

    raw = np.frombuffer(image, dtype=np.uint8)[np.newaxis]

    def call(_):
        def read():
            results = {"input": {"image": raw}}
            for name, input_map, fn in steps:
                inputs = {k: value(results, src) for k, src in input_map.items()}
                if parallel:
                    results[name] = fn(inputs)
                else:
                    with locks[name]:
                        results[name] = fn(inputs)
            text = value(results, outputs["text"])
            return [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in text]
        return read
    return call


def describe(yaml_path):
    import yaml
    with open(yaml_path) as f:
        spec = yaml.safe_load(f)
    graph = [g for g in spec["graphs"] if g["name"] == GRAPH][0]
    deployments = {d["name"]: d for d in spec["deployments"]}
    steps = []
    for step in graph["steps"]:
        d = deployments[step["model"]]
        m = d["model"]
        what = m["engine"] + (" " + m["python"]["class"] if m["engine"] == "Python" else "")
        threads = ", ".join("%s %s" % (k.replace("_", "-"), v) for k, v in sorted(m.get("threads", {}).items()))
        steps.append("%s = %s (%s; %s; %s worker(s), max_batch_size %s)" % (
            step["name"], d["name"], what, threads or "default threads", d.get("pool", {}).get("workers_per_node", 1),
            d.get("batching", {}).get("max_batch_size", 1)))
    return "; ".join(steps)


def main():
    mode = sys.argv[1]
    if mode == "render":
        render(sys.argv[2], json.loads(sys.argv[3]))
    elif mode == "describe":
        print(describe(sys.argv[2]))
    elif mode == "versions":
        import onnxruntime as ort
        print("onnxruntime %s (%s)" % (ort.__version__, os.path.dirname(ort.__file__)))
    elif mode == "kiln":
        port, c, warmup, duration = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
        with open(sys.argv[6], "rb") as f:
            image = f.read()
        expected = json.loads(sys.argv[7])
        pgid = os.getpgid(int(sys.argv[8])) if len(sys.argv) > 8 else 0
        cpu = (lambda: group_cpu_seconds(pgid)) if pgid else (lambda: 0.0)
        print(json.dumps(run(kiln(port, image), c, warmup, duration, expected, cpu)))
    elif mode == "direct":
        c, warmup, duration = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
        with open(sys.argv[6], "rb") as f:
            image = f.read()
        expected = json.loads(sys.argv[7])
        print(json.dumps(run(direct(sys.argv[2], image), c, warmup, duration, expected, own_cpu_seconds)))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
