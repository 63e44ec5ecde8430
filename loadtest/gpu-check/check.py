"""The Python half of loadtest/gpu-check/run.sh: waits, output comparison, direct throughput, the report.

Standard library plus numpy (and torch for `direct`); talks to the node over HTTP with urllib only, so the
GPU machine needs no curl or jq. Subcommands (run.sh calls each under a timeout):
    wait     URL NAME... [--timeout S]        until /v2/models/NAME/ready answers 200 for each (exit 1 if not)
    compare  URL OUT.json                     GPU vs CPU deployments on the same inputs, through HTTP binary
    direct   OUT.json --device D [--seconds S] [--batches 1,8,32,64]   ResNet-18 in this process, no Kiln
    metrics  URL OUT.txt                      a snapshot of /metrics
    report   WORK OUTDIR                      results.json + results.md from what the steps left in WORK
"""
import argparse
import glob
import importlib.util
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The tolerances of the GPU-vs-CPU comparison (max |GPU - CPU| over all outputs), FP32 with TF32 off.
# ResNet-18's logits are O(1..10) and pass through 20 convolutions whose cuDNN kernels sum in another order
# than the CPU's; the MLP sums 64 and 256 products of O(0.1) values.
TOLERANCE = {"resnet18": 1e-3, "mlp": 1e-5}


# ----------------------------------------------------------------------------------------------- HTTP

def http(method, url, body=None, headers=None, timeout=60):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def infer(url, model, name, x):
    """One OIP v2 request with x as binary tensor data; the outputs asked for as binary too. Returns
    {output name: numpy array}."""
    import numpy as np
    x = np.ascontiguousarray(x, dtype="<f4")
    header = json.dumps({"inputs": [{"name": name, "datatype": "FP32", "shape": list(x.shape),
                                     "parameters": {"binary_data_size": x.nbytes}}],
                         "parameters": {"binary_data_output": True}}).encode()
    status, hdrs, body = http("POST", "%s/v2/models/%s/infer" % (url, model), header + x.tobytes(),
                              {"Content-Type": "application/octet-stream",
                               "Inference-Header-Content-Length": str(len(header))}, timeout=120)
    if status != 200:
        raise RuntimeError("%s: HTTP %d: %s" % (model, status, body[:500].decode("utf-8", "replace")))
    hlen = {k.lower(): v for k, v in hdrs.items()}.get("inference-header-content-length")
    n = int(hlen) if hlen is not None else len(body)
    reply, pos, out = json.loads(body[:n]), n, {}
    for o in reply["outputs"]:
        size = (o.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            arr = np.frombuffer(body[pos:pos + size], dtype="<f4").reshape(o["shape"])
            pos += size
        else:
            arr = np.array(o["data"], dtype=np.float32).reshape(o["shape"])
        out[o["name"]] = arr
    return out


def cmd_wait(a):
    end = time.time() + a.timeout
    pending, started, ready = list(a.names), time.time() - a.since, {}
    while pending and time.time() < end:
        for name in list(pending):
            try:
                if http("GET", "%s/v2/models/%s/ready" % (a.url, name), timeout=5)[0] == 200:
                    ready[name] = round(time.time() - started, 1)
                    print("ready: %s after %.1f s" % (name, ready[name]))
                    pending.remove(name)
            except OSError:
                pass
        time.sleep(0.5)
    if a.record:
        with open(a.record, "w") as f:
            json.dump(ready, f)
    if pending:
        print("not ready within %d s: %s" % (a.timeout, " ".join(pending)))
        return 1
    return 0


def cmd_metrics(a):
    status, _, body = http("GET", a.url + "/metrics", timeout=15)
    with open(a.out, "wb") as f:
        f.write(body)
    return 0 if status == 200 else 1


# ----------------------------------------------------------------------------------------------- compare

def cmd_compare(a):
    import numpy as np
    rng = np.random.default_rng(7)
    result = {"tolerance": TOLERANCE, "models": {}}
    cases = {
        "resnet18": ("input", "logits", [rng.standard_normal((1, 3, 224, 224), dtype=np.float32) for _ in range(4)]
                     + [rng.standard_normal((4, 3, 224, 224), dtype=np.float32)]),
        "mlp": ("input", "output", [rng.standard_normal((1, 64), dtype=np.float32) for _ in range(4)]
                + [rng.standard_normal((32, 64), dtype=np.float32)]),
    }
    ok = True
    for model, (iname, oname, inputs) in cases.items():
        r = {"requests": len(inputs), "rows": int(sum(x.shape[0] for x in inputs)), "tolerance": TOLERANCE[model]}
        try:
            diffs, scale, top1_same, rows = [], 0.0, 0, 0
            for x in inputs:
                g = infer(a.url, model + "-gpu", iname, x)[oname]
                c = infer(a.url, model + "-cpu", iname, x)[oname]
                diffs.append(float(np.abs(g.astype(np.float64) - c).max()))
                scale = max(scale, float(np.abs(c).max()))
                top1_same += int((g.argmax(axis=1) == c.argmax(axis=1)).sum())
                rows += x.shape[0]
            r.update(max_abs_diff=max(diffs), max_abs_cpu_output=scale, top1_agree=f"{top1_same}/{rows}",
                     passed=max(diffs) <= TOLERANCE[model])
        except Exception as e:  # noqa: BLE001 - recorded, the script goes on
            r.update(passed=False, error="%s: %s" % (type(e).__name__, e))
        ok = ok and r["passed"]
        result["models"][model] = r
    # The MLP against the reference its weights were checked with (models/mlp/expected.json, traced torch).
    try:
        with open(os.path.join(ROOT, "models", "mlp", "expected.json")) as f:
            exp = json.load(f)
        x = np.array(exp["input"]["data"], dtype=np.float32).reshape(exp["input"]["shape"])
        want = np.array(exp["output"]["data"], dtype=np.float32).reshape(exp["output"]["shape"])
        got = infer(a.url, "mlp-gpu", "input", x)["output"]
        d = float(np.abs(got - want).max())
        result["mlp_gpu_vs_expected_json"] = {"max_abs_diff": d, "passed": d <= TOLERANCE["mlp"]}
        ok = ok and d <= TOLERANCE["mlp"]
    except Exception as e:  # noqa: BLE001
        result["mlp_gpu_vs_expected_json"] = {"passed": False, "error": "%s: %s" % (type(e).__name__, e)}
        ok = False
    result["passed"] = ok
    with open(a.out, "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))
    return 0 if ok else 1


# ----------------------------------------------------------------------------------------------- direct

def load_resnet_module():
    spec = importlib.util.spec_from_file_location("gpu_check_resnet18", os.path.join(HERE, "models", "resnet18", "model.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def timed(fn, sync, seconds, min_calls=3):
    """Calls fn back to back for about `seconds` (at least min_calls), synchronising the device around the
    timed interval; returns (calls, elapsed seconds)."""
    sync()
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        if n >= min_calls and time.perf_counter() - t0 >= seconds:
            break
    sync()
    return n, time.perf_counter() - t0


def cmd_direct(a):
    import numpy as np
    import torch
    t_import = time.time()
    mod = load_resnet_module()
    model = mod.Model()
    t0 = time.time()
    model.load({"tf32": False}, a.device)
    dev = model.device
    cuda = dev.type == "cuda"
    sync = (lambda: torch.cuda.synchronize(dev)) if cuda else (lambda: None)
    sync()
    out = {"device": a.device, "torch_device": str(dev), "describe": mod.describe(dev), "load_s": time.time() - t0,
           "since_start_s": time.time() - t_import, "seconds_per_point": a.seconds, "batches": [],
           "timing": "CUDA-synchronised (torch.cuda.synchronize before and after each timed loop)" if cuda
           else "wall clock on the CPU"}
    if not cuda:
        out["threads"] = torch.get_num_threads()
    rng = np.random.default_rng(3)
    first = None
    for b in a.batches:
        x = rng.standard_normal((b, 3, 224, 224), dtype=np.float32)
        xd = torch.from_numpy(x).to(dev)
        with torch.inference_mode():
            if cuda:
                torch.cuda.reset_peak_memory_stats(dev)
            t_first = time.perf_counter()
            model.model(xd)
            sync()
            first_ms = (time.perf_counter() - t_first) * 1e3
            if first is None:
                first = first_ms
            timed(lambda: model.model(xd), sync, a.seconds / 4, 2)  # warm
            n, el = timed(lambda: model.model(xd), sync, a.seconds)
            n2, el2 = timed(lambda: model.run(x), sync, a.seconds / 2, 2)  # numpy in, numpy out: what predict does
        row = {"batch": b, "calls": n, "ms_per_batch": el / n * 1e3, "images_per_s": b * n / el,
               "host_to_host_ms_per_batch": el2 / n2 * 1e3, "host_to_host_images_per_s": b * n2 / el2,
               "first_call_ms": first_ms}
        if cuda:
            row["peak_allocated_mib"] = torch.cuda.max_memory_allocated(dev) / 2**20
        out["batches"].append(row)
        print(json.dumps(row), flush=True)
    out["first_call_ms"] = first
    if cuda:
        # How far TF32 (PyTorch's default for cuDNN convolutions) moves the logits, and what it gains.
        x = torch.from_numpy(rng.standard_normal((8, 3, 224, 224), dtype=np.float32)).to(dev)
        with torch.inference_mode():
            strict = model.model(x).float()
            mod.set_tf32(True)
            loose = model.model(x).float()
            b = a.batches[-1]
            xb = torch.from_numpy(rng.standard_normal((b, 3, 224, 224), dtype=np.float32)).to(dev)
            timed(lambda: model.model(xb), sync, a.seconds / 4, 2)
            n, el = timed(lambda: model.model(xb), sync, a.seconds)
            mod.set_tf32(False)
        out["tf32"] = {"max_abs_diff_vs_fp32_batch8": float((strict - loose).abs().max()),
                       "batch": b, "images_per_s": b * n / el}
        out["memory"] = {"max_allocated_mib": torch.cuda.max_memory_allocated(dev) / 2**20,
                         "reserved_mib": torch.cuda.memory_reserved(dev) / 2**20}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    return 0


# ----------------------------------------------------------------------------------------------- report

def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


METRIC = re.compile(r'^(kiln_pool_(?:batch_size_rows|compute_duration_seconds|queue_duration_seconds)_(?:sum|count))\{([^}]*)\}\s+(\S+)')


def pool_metrics(text, deployment):
    """Sums of the pool's batch size and compute time series for one deployment, from a /metrics text."""
    out = {}
    for line in text.splitlines():
        m = METRIC.match(line)
        if m and ('"%s"' % deployment in m.group(2) or '"%s@' % deployment in m.group(2)):
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
    return out


def delta_mean(before, after, name):
    c = after.get(name + "_count", 0) - before.get(name + "_count", 0)
    s = after.get(name + "_sum", 0) - before.get(name + "_sum", 0)
    return s / c if c > 0 else None


def smi_samples(path):
    """nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total,utilization.gpu samples (csv, noheader)."""
    used, util = [], []
    for line in read_text(path).splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 5:
            try:
                used.append(float(parts[2]))
                util.append(float(parts[4]))
            except ValueError:
                pass
    if not used:
        return None
    return {"samples": len(used), "memory_used_mib_max": max(used), "memory_used_mib_min": min(used),
            "utilization_pct_mean": sum(util) / len(util), "utilization_pct_max": max(util)}


LOADED = re.compile(r"RunnerLoader - model (\S+) \(([^)]*)\) loaded on (\S+) in ([\d.]+) ms, warmed up with batch sizes "
                    r"(\[[^\]]*\]) in ([\d.]+) ms")


def fmt(v, digits=1):
    if v is None:
        return "–"
    if isinstance(v, float):
        if v != 0 and abs(v) < 0.01:
            return "%.2e" % v
        return "{:,.{d}f}".format(v, d=digits)
    return str(v)


def cmd_report(a):
    w, out = a.work, a.outdir
    meta = read_json(os.path.join(w, "meta.json")) or {}
    steps = []
    for line in read_text(os.path.join(w, "steps.tsv")).splitlines():
        p = line.split("\t")
        if len(p) >= 4:
            steps.append({"step": p[0], "rc": int(p[1]), "seconds": float(p[2]), "note": p[3]})
    direct = read_json(os.path.join(w, "direct.json"))
    compare = read_json(os.path.join(w, "compare.json"))
    ready = read_json(os.path.join(w, "ready.json")) or {}
    runs = []
    for path in sorted(glob.glob(os.path.join(w, "lg", "*.json")), key=os.path.getmtime):  # in the order run
        r = read_json(path)
        if not r or "latencyMs" not in r:
            continue
        name = os.path.basename(path)[:-5]
        before = pool_metrics(read_text(os.path.join(w, "metrics", name + ".before.txt")), meta.get("load_model", ""))
        after = pool_metrics(read_text(os.path.join(w, "metrics", name + ".after.txt")), meta.get("load_model", ""))
        cm = delta_mean(before, after, "kiln_pool_compute_duration_seconds")
        lat = r.get("latencyMs", {})
        runs.append({"name": name, "protocol": r.get("config", {}).get("protocol"),
                     "connections": r.get("config", {}).get("connections"), "measured_s": r.get("measuredSeconds"),
                     "requests": r.get("requests"), "ok": r.get("ok"), "errors": r.get("errors"),
                     "ok_rps": r.get("okRps"), "p50_ms": lat.get("p50"), "p90_ms": lat.get("p90"),
                     "p99_ms": lat.get("p99"), "max_ms": lat.get("max"), "outcomes": r.get("outcomes"),
                     "mean_batch_rows": delta_mean(before, after, "kiln_pool_batch_size_rows"),
                     "mean_compute_ms_per_batch": cm * 1e3 if cm is not None else None,
                     "gpu": smi_samples(os.path.join(w, "smi", name + ".csv"))})
    loads = [{"model": m.group(1), "engine": m.group(2), "device": m.group(3), "load_ms": float(m.group(4)),
              "warmup_batches": m.group(5), "warmup_ms": float(m.group(6))}
             for m in LOADED.finditer(read_text(os.path.join(w, "node.log")))]
    apps = read_text(os.path.join(w, "smi-apps.csv")).strip()
    results = {"meta": meta, "steps": steps, "compare": compare, "direct": direct, "kiln": runs,
               "worker_loads": loads, "ready": ready, "gpu_processes_during_load": apps or None,
               "gpu_idle_after_deploy": smi_samples(os.path.join(w, "smi", "idle.csv"))}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)

    cpu_mode = meta.get("mode") == "cpu"
    md = ["# Kiln device check: GPU workers (Python + the machine's torch)", ""]
    if cpu_mode:
        md += ["**CPU MODE**: no GPU. `--gpus 1` declares one logical GPU, the \"GPU\" workers are told `cuda:0` and "
               "run on the CPU (KILN_GPU_CHECK_CPU=1), nothing is probed with nvidia-smi. Every figure below is a "
               "CPU figure; this run checks the pipeline, not the GPU.", ""]
    md += ["| | |", "|---|---|"]
    for k in ("started", "host", "commit", "mode", "java", "python", "torch", "gpu", "driver", "cuda", "cpus",
              "warmup", "duration", "total_s"):
        if k in meta:
            md.append("| %s | %s |" % (k, str(meta[k]).replace("|", "/")))
    md += ["", "## Steps", "", "| step | rc | s | note |", "|---|---|---|---|"]
    md += ["| %s | %d | %.1f | %s |" % (s["step"], s["rc"], s["seconds"], s["note"].replace("|", "/")) for s in steps]
    md += ["", "## GPU vs CPU outputs (same inputs, through HTTP binary tensors)", ""]
    if compare:
        md += ["| model | requests (rows) | max abs diff | tolerance | max abs CPU output | top-1 agree | pass |",
               "|---|---|---|---|---|---|---|"]
        for m, r in compare.get("models", {}).items():
            md.append("| %s | %s (%s) | %s | %g | %s | %s | %s |" % (
                m, r.get("requests"), r.get("rows"), fmt(r.get("max_abs_diff")), r["tolerance"],
                fmt(r.get("max_abs_cpu_output"), 3), r.get("top1_agree", "–"),
                "yes" if r.get("passed") else "**NO** " + r.get("error", "")))
        e = compare.get("mlp_gpu_vs_expected_json", {})
        md += ["", "mlp-gpu vs models/mlp/expected.json (traced torch reference): max abs diff %s, %s" % (
            fmt(e.get("max_abs_diff")), "pass" if e.get("passed") else "**FAIL** " + e.get("error", ""))]
        md += ["", "FP32 with TF32 off on both sides (models/common.py). Tolerances: ResNet-18 logits 1e-3 absolute, "
               "MLP 1e-5 absolute."]
    else:
        md.append("not run or failed: see Steps and run.log")
    md += ["", "## Direct ResNet-18 throughput in one Python process (no Kiln)", ""]
    if direct:
        md += ["%s; %s; %.1f s per point; first call after load %.0f ms." % (
            direct.get("describe"), direct.get("timing"), direct.get("seconds_per_point", 0), direct.get("first_call_ms") or 0), "",
            "| batch | calls | ms / batch | images/s (on device) | images/s (numpy in/out) | peak alloc MiB |",
            "|---|---|---|---|---|---|"]
        for b in direct.get("batches", []):
            md.append("| %d | %d | %s | %s | %s | %s |" % (b["batch"], b["calls"], fmt(b["ms_per_batch"], 2),
                                                         fmt(b["images_per_s"]), fmt(b["host_to_host_images_per_s"]),
                                                         fmt(b.get("peak_allocated_mib"))))
        if direct.get("tf32"):
            t = direct["tf32"]
            md += ["", "TF32 on (not what Kiln serves here): batch %d at %s images/s; it moves batch-8 logits by up to %s "
                   "against strict FP32." % (t["batch"], fmt(t["images_per_s"]), fmt(t["max_abs_diff_vs_fp32_batch8"]))]
    else:
        md.append("not run or failed: see Steps and run.log")
    md += ["", "## Kiln: ResNet-18 (%s) through the gateway, closed loop, batching on" % meta.get("load_model", "?"), "",
           "Warm-up %s + measured %s per run; requests of one 3x224x224 FP32 image (588 KiB). Mean batch and compute "
           "ms/batch: the pool's own /metrics (kiln_pool_batch_size, kiln_pool_compute_duration) over the run; device "
           "memory and utilisation: nvidia-smi every 0.5 s during the run (the whole card, all processes)." % (
               meta.get("warmup", "?"), meta.get("duration", "?")), "",
           "| run | protocol | c | ok req/s | p50 ms | p90 ms | p99 ms | errors | mean batch | compute ms/batch | device mem used max MiB | GPU util mean % |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        g = r.get("gpu") or {}
        md.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["name"], r["protocol"], r["connections"], fmt(r["ok_rps"]), fmt(r["p50_ms"], 2), fmt(r["p90_ms"], 2),
            fmt(r["p99_ms"], 2), r["errors"], fmt(r["mean_batch_rows"]), fmt(r["mean_compute_ms_per_batch"], 2),
            fmt(g.get("memory_used_mib_max"), 0), fmt(g.get("utilization_pct_mean"))))
    if not runs:
        md.append("| (none completed) |||||||||||| ")
    md += ["", "## GPU memory and warm-up", ""]
    idle = results["gpu_idle_after_deploy"]
    md.append("GPU memory used with all deployments loaded, before load: %s MiB (nvidia-smi)." % (
        fmt(idle["memory_used_mib_max"], 0) if idle else "n/a"))
    if apps:
        md += ["", "Per process during the c=64 run (nvidia-smi --query-compute-apps):", "", "```", apps, "```"]
    md += ["", "| worker's model | device | load ms (process start → loaded) | Kiln warm-up batches | warm-up ms |",
           "|---|---|---|---|---|"]
    for l in loads:
        md.append("| %s | %s | %s | %s | %s |" % (os.path.basename(l["model"]), l["device"], fmt(l["load_ms"]),
                                                l["warmup_batches"], fmt(l["warmup_ms"])))
    if ready:
        md += ["", "Deploy → ready (seconds, from `kiln deploy` until /v2/models/NAME/ready is 200): " +
               ", ".join("%s %s" % (k, fmt(v)) for k, v in ready.items())]
    md += ["", "Files: results.json (all of the above), run.log (this script), node.log, nvidia-smi.txt, "
           "status.json (`kiln status --json` at the end), reports.tar.gz (LoadGen's JSON + HTML per run, /metrics snapshots).", ""]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(md))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("wait")
    s.add_argument("url")
    s.add_argument("names", nargs="+")
    s.add_argument("--timeout", type=int, default=240)
    s.add_argument("--record", help="write {name: seconds until ready} here")
    s.add_argument("--since", type=float, default=0.0, help="seconds already elapsed when this wait began")
    s = sub.add_parser("compare")
    s.add_argument("url")
    s.add_argument("out")
    s = sub.add_parser("direct")
    s.add_argument("out")
    s.add_argument("--device", default="cuda:0")
    s.add_argument("--seconds", type=float, default=2.0)
    s.add_argument("--batches", type=lambda v: [int(x) for x in v.split(",")], default=[1, 8, 32, 64])
    s = sub.add_parser("metrics")
    s.add_argument("url")
    s.add_argument("out")
    s = sub.add_parser("report")
    s.add_argument("work")
    s.add_argument("outdir")
    a = p.parse_args(argv)
    return {"wait": cmd_wait, "compare": cmd_compare, "direct": cmd_direct, "metrics": cmd_metrics,
            "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
