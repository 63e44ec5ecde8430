#!/usr/bin/env python3
"""Prints RELIABILITY.md's results table from reliability/results/*.json (written by reliability/run.sh)."""
import json
import pathlib
import sys

RESULTS = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "results")


def load(name):
    f = RESULTS / (name + ".json")
    return json.loads(f.read_text()) if f.exists() else None


def mib(b):
    return f"{b / 2**20:.0f} MiB"


rows = []
nl = load("node-loss")
if nl:
    rows.append(["Node loss under load", f"3 node processes, {nl['clients']} closed-loop clients on all 3 gateways, "
                 f"deadline {nl['deadlineMs']} ms", "SIGKILL of `n1` (hosts a pool), then restart with the same id",
                 nl["sent"], nl["succeeded"], nl["failedCleanly"], nl["lost"],
                 f"status shows `n1` dead {nl['deadInStatusMs']} ms, its pool not ready {nl['poolNotReadyInStatusMs']} ms; "
                 f"last failed request {nl['lastFailedRequestAfterKillMs']} ms after the kill "
                 f"({nl['killedGatewayConnectionErrors']} in flight on `n1`'s own gateway reset at once, not counted)",
                 f"restart: joined {nl['restartJoinedMs']} ms, pool READY {nl['restartPoolReadyMs']} ms, head routes to it "
                 f"{nl['restartServingViaHeadMs']} ms", "`reliability/run.sh node-loss`"])
wc = load("worker-crash")
if wc:
    n, p = wc["normal"], wc["poison"]
    rows.append(["Worker crash mid-batch", f"{wc['nodes']} nodes x {wc['workersPerNode']} workers, 6 closed-loop clients, "
                 f"{wc['seconds']} s", f"{p['sent']} poison (NaN) requests, each crashing its batch's worker twice",
                 n["sent"] + p["sent"], n["succeeded"], p["failedCleanly"] + n["failedCleanly"], n["lost"] + p["lost"],
                 f"at once: the batch fails; batch-mates re-queued ({wc['workerRestarts']} restarts)",
                 f"pool whole again {wc['recoveryMs']} ms after the poison's 503; {wc['modelReloads']} model reloads; "
                 f"normal p99 {n['okP99Ms']:.0f} ms", "`reliability/run.sh crash`"])
ll = load("leader-loss")
if ll:
    for r in ll["runs"]:
        rows.append(["Leader loss mid-deploy", "4 in-process nodes, deploy of 3 pools x 2 workers",
                     f"leader killed at the first {r['killedAtFirst']} claim", r["requestsAfter"], r["requestsAfter"], 0, 0,
                     f"new leader {r['newLeaderMs']} ms", f"READY {r['readyMs']} ms; {r['managers']} managers, "
                     f"{r['workers']} workers, {r['modelLoads']:.0f} model loads (none twice)", "`reliability/run.sh leader`"])
ov = load("overload")
if ov:
    n, o, a = ov["normal"], ov["overload"], ov["after"]
    rows.append(["Overload", f"{ov['offeredPerSecond']}/s open loop = 10x the measured {ov['capacityPerSecond']}/s, "
                 f"{o['seconds']:.0f} s ({ov['model']})", "10x capacity", o["sent"], o["succeeded"], o["failedCleanly"],
                 o["lost"], f"refused at once: 503 + Retry-After p99 {o['cleanP99Ms']:.0f} ms",
                 f"admitted p99 {o['okP99Ms']:.0f} ms vs {n['okP99Ms']:.0f} ms normal; right after: {a['okP99Ms']:.0f} ms; "
                 f"heap after GC {mib(ov['heapAfterGcBeforeBytes'])} -> {mib(ov['heapAfterGcAfterBytes'])}, RSS "
                 f"{mib(ov['rssBeforeBytes'])} -> {mib(ov['rssAfterBytes'])}", "`reliability/run.sh overload`"])
sl = load("slowloris")
if sl:
    rows.append(["Slowloris", f"{sl['connections']} connections", "headers trickled every 200 ms, never finished",
                 "-", "-", "-", 0, f"all closed by the server {sl['closedAfterMsMin']}-{sl['closedAfterMsMax']} ms after "
                 f"connecting (read timeout {sl['readTimeoutMs']} ms); a normal client served meanwhile",
                 f"in flight {sl['requestsLeftInFlight']:.0f}; heap +{mib(sl['heapGrowthBytes'])}", "`reliability/run.sh slow`"])
vc = load("vanishing-clients")
if vc:
    rows.append(["Clients vanish while queued", f"{vc['clients']} requests queued in a real pool",
                 "every client closes its connection", vc["clients"], vc["completedInPool"], "-", 0,
                 f"{vc['cancelledInPool']} withdrawn from the queue", f"drained {vc['drainedMs']} ms; queue "
                 f"{vc['queueSlotsLeft']}, in flight {vc['inFlightLeft']}, gateway in flight {vc['gatewayInFlightLeft']:.0f}; "
                 f"heap +{mib(vc['heapGrowthBytes'])}", "`reliability/run.sh slow`"])
fh = load("fuzz-http-decoders")
if fh:
    for kind in ("json", "binary"):
        k = fh[kind]
        rows.append([f"Hostile input: OIP {kind} decoder", f"{k['inputs']} mutated bodies, seed {fh['seed']}",
                     "truncation, flips, huge numbers, deep nesting, wrong types, huge declared shapes", k["inputs"],
                     k["accepted"], k["refusedCleanly"], k["escaped"], "400 INVALID_INPUT naming the field",
                     f"max {mib(k['maxAllocatedBytes'])} allocated per body", "`reliability/run.sh fuzz`"])
fg = load("fuzz-grpc-decoder")
if fg:
    for kind in ("wire", "structural"):
        k = fg[kind]
        what = (f"mutated wire bytes (and {fg['unparsableWireInputs']} that protobuf refused to parse)" if kind == "wire"
                else "random shapes, types, contents")
        rows.append([f"Hostile input: gRPC decoder ({kind})", f"{k['inputs']} messages, seed {fg['seed']}", what, k["inputs"], k["accepted"],
                     k["refusedCleanly"], k["escaped"], "INVALID_ARGUMENT", f"max {mib(k['maxAllocatedBytes'])} allocated",
                     "`reliability/run.sh fuzz`"])
fs = load("fuzz-http-server")
if fs:
    codes = ", ".join(f"{c}: {n}" for c, n in fs["byStatus"].items())
    rows.append(["Hostile input: real HTTP server", f"{fs['requests']} mutated requests, seed {fs['seed']}",
                 "as above, plus hostile binary header lengths and paths", fs["requests"], fs["byStatus"].get("200", 0),
                 fs["requests"] - fs["byStatus"].get("200", 0), 0, f"never a 5xx ({codes})", "serves normally after",
                 "`reliability/run.sh fuzz`"])
fy = load("fuzz-yaml-loader")
if fy:
    rows.append(["Hostile input: deployment YAML", f"{fy['inputs']} mutated files, seed {fy['seed']}",
                 "examples mutated; tags, anchors, alias bombs, duplicate keys", fy["inputs"], fy["loaded"],
                 fy["refusedWithProblems"], fy["escaped"], "problems with line and column",
                 f"max {mib(fy['maxAllocatedBytes'])} allocated per file", "`reliability/run.sh fuzz`"])
ca = load("cluster-admission")
if ca:
    rows.append(["Security: cluster admission", "a head with a name and a secret", "joins with another name, no secret, "
                 "a wrong secret; then the right ones", ca["attempts"], ca["admitted"], ca["refused"], 0,
                 f"refused at join; cluster size stays {ca['clusterSizeAfterRefusals']}", "-", "`reliability/run.sh security`"])
if nl:
    rows.append(["Security: management token", "the node-loss cluster (real processes, `--token`)",
                 "status, deploy and delete without the token or with a wrong one", 4, 0, 4, 0, "401 each, before any body is read",
                 "-", "`reliability/run.sh node-loss`"])
ss = load("serialization-scan")
if ss:
    rows.append(["Security: no Java deserialization", f"bytecode of {ss['classes']} classes in {ss['modules']} modules",
                 "ObjectInputStream, readObject, XMLDecoder, RMI, Jackson default typing", "-", "-", "-", 0,
                 f"{ss['violations']} uses found", "-", "`reliability/run.sh security`"])

pk = load("python-sigkill")
if pk:
    lo = pk["load"]
    rows.append(["Python worker SIGKILLed mid-batch", f"1 node, Python engine, {pk['workers']} workers, batching 8, "
                 f"{pk['clients']} closed-loop clients", f"{pk['kills']} x SIGKILL of a worker's Python process while its "
                 f"predict runs (batches of {', '.join(str(r) if r >= 0 else '?' for r in pk['rowsInKilledBatches'])} rows)",
                 lo["sent"], lo["succeeded"], lo["failedCleanly"], lo["lost"],
                 f"pool saw each kill in {', '.join(str(d) for d in pk['detectionMs'])} ms; {pk['requeued']} requests "
                 f"re-queued", f"fresh process, model reloaded, pool whole {', '.join(str(r) for r in pk['recoveryMs'])} ms "
                 f"after the kill ({pk['workerRestarts']} restarts)", "`reliability/run.sh engines`"])
oom = load("python-oom")
if oom:
    lo, cl = oom["load"], oom["crashLoop"]
    rows.append(["Python worker leaks until the OS kills it", f"1 node, {oom['workers']} workers, {oom['clients']} "
                 f"closed-loop clients; each process in its own memory cgroup ({oom['cgroup']}) of {oom['limitMiB']} MiB",
                 f"predict keeps {oom['leakMiBPerBatch']} MiB per batch: {oom['oomKills']} kernel OOM kills",
                 lo["sent"], lo["succeeded"], lo["failedCleanly"], lo["lost"],
                 f"each kill seen as SIGKILL (out of memory); {oom['requeued']} requests re-queued",
                 f"{oom['workerRestarts']} restarts (= kiln_pool_worker_restarts_total), pool whole {oom['wholeAgainMs']} ms "
                 f"after the load stopped; a model that outgrows the limit in load: {cl['restarts']} restarts of "
                 f"{cl['workers']} workers (max_restarts {cl['maxRestarts']}; 100, 200, 400 ms waits between failed loads), "
                 f"FAILED in {cl['failedAfterMs']} ms, no more attempts", "`reliability/run.sh engines`"])
ox = load("onnx-load-failure")
if ox:
    od = ox["otherDeployment"]
    for key, what, named in (("truncated", "a truncated model.onnx", "the file and ONNX Runtime's message"),
                             ("wrongInput", "a valid model.onnx, YAML declares an input it lacks",
                              "the undeclared input and the graph's inputs")):
        k = ox[key]
        rows.append([f"ONNX model fails to load: {what}", f"1 node; another deployment under {od['sent']} requests "
                     f"through both cases (one run)", what, od["sent"], od["succeeded"],
                     od["failedCleanly"], od["lost"], f"FAILED {k['failedAfterMs']} ms after the apply, naming {named}; {k['loadAttempts']} load attempts, {k['restartsAfterFailed']} after FAILED; "
                     f"its infer answers {k['answerWhileFailed']}", f"fixed and applied again: READY in {k['readyAfterFixMs']} ms",
                     "`reliability/run.sh engines`"])
jl = load("job-loss")
if jl:
    rows.append(["Node killed mid-job", f"{jl['nodes']} in-process nodes, a job of {jl['inputs']} inputs in batches",
                 f"a node killed holding {jl['inFlightAtKill']} inputs in flight ({jl['doneBeforeKill']} done before)",
                 jl["inputs"], jl["results"], jl["failed"], jl["lost"],
                 f"{jl['redispatched']} inputs redispatched; duplicated {jl['duplicated']}",
                 f"job SUCCEEDED {jl['endedAfterKillMs']} ms after the kill; {jl['resumedAfterKill']} inputs finished after it",
                 "`reliability/run.sh job-loss`"])

print("| scenario | load | fault | sent | succeeded | failed cleanly | lost | detection | recovery | command |")
print("|---|---|---|---:|---:|---:|---:|---|---|---|")
for r in rows:
    print("| " + " | ".join(str(c) for c in r) + " |")
