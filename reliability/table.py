#!/usr/bin/env python3
"""RELIABILITY.md's generated part from reliability/results/*.json (written by the tests; see run.sh).

  table.py [--results DIR]                 prints the generated part: the results table, then the results files
                                           behind it (when each was written, its load average, its size)
  table.py [--results DIR] --write [FILE]  splices it between FILE's GENERATED markers (default RELIABILITY.md),
                                           keeping everything outside them byte for byte
  table.py [--results DIR] --check [FILE]  exit 1, with a diff, when FILE's generated part differs from the rendering
  table.py [--results DIR] --trace         names the results file behind every number of the figure columns (sent to
                                           command); exit 1 when a number there is typed into this script

Every number in the figure columns is one a test counted and wrote into its JSON; this script only adds them up and
words them, and --trace proves it (traced.py: each JSON value carries its file's name into the text). Two kinds of
typed text are declared where they are typed: an HTTP status used as a word (http(503)), and a setting (setting())
naming the file and the snippet that set it. The load and fault columns describe each test's set-up, from its JSON
where the test writes it there. Where a scenario has no notion of requests sent or lost (a scan, a set of checks),
the cell is "-". A scenario whose JSON is missing gets no row and is named on stderr; --write and --check then refuse
(exit 1), so a regeneration never drops a row silently. Exit codes: 0 done, 1 a check failed or a file is missing,
2 bad arguments or markers.
"""
import argparse
import pathlib
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts in the source tree
import document  # noqa: E402 (after the line above)
import traced  # noqa: E402
from traced import http, setting  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
DOC = ROOT / "RELIABILITY.md"
_args = argparse.ArgumentParser(description="RELIABILITY.md's generated part from reliability/results/*.json")
_args.add_argument("results_dir", nargs="?", help=argparse.SUPPRESS)
_args.add_argument("--results", help="the results folder (default reliability/results)")
_mode = _args.add_mutually_exclusive_group()
_mode.add_argument("--write", nargs="?", const=str(DOC), metavar="FILE")
_mode.add_argument("--check", nargs="?", const=str(DOC), metavar="FILE")
_mode.add_argument("--trace", action="store_true")
ARGS = _args.parse_args()
RESULTS = pathlib.Path(ARGS.results or ARGS.results_dir or HERE / "results")
CI = "CI size: "
CHANGES_TEST = "deploy/src/test/java/io/kiln/deploy/e2e/ZeroFailureChangesTest.java"
RESTART_POLICY = 'new RetryPolicy("actor-restart", 1, Duration.ofMillis(100), 2,'
missing = []
loaded = {}


def load(name):
    f = RESULTS / (name + ".json")
    if not f.exists():
        missing.append(name)
        return None
    loaded[name] = f, traced.load(f)
    return loaded[name][1]


def mib(b):
    return f"{b / 2**20:.0f} MiB" if abs(b) >= 2**20 else f"{b / 2**10:.0f} KiB"


def n(v):
    return f"{v:,}" if isinstance(v, int) else str(v)


def cmd(c, size=None):
    return f"`{c}`" + (f" ({size})" if size else "")


rows = []


def row(scenario, load_, fault, sent, succeeded, failed, lost, reset, detection, recovery, command):
    rows.append([scenario, load_, fault, sent, succeeded, failed, lost, reset, detection, recovery, command])


nl = load("node-loss")
if nl:
    reset = nl["killedGatewayConnectionErrors"]
    assert nl["sent"] == nl["succeeded"] + nl["failedCleanly"] + nl["lost"] + reset, "node-loss: outcomes do not add up"
    row("Node loss under load", f"{nl['nodes']} node processes, {nl['clients']} closed-loop clients on all "
        f"{nl['nodes']} gateways, deadline {nl['deadlineMs']} ms",
        "SIGKILL of `n1` (hosts a pool), then restart with the same id",
        nl["sent"], nl["succeeded"], nl["failedCleanly"], nl["lost"], reset,
        f"status shows `n1` dead {nl['deadInStatusMs']} ms, its pool not ready {nl['poolNotReadyInStatusMs']} ms; "
        + (f"last failed request {nl['lastFailedRequestAfterKillMs']} ms after the kill"
           if sum(g["failedCleanly"] + g["lost"] for k, g in nl["byGateway"].items() if k != "n1")
           else "no request through a surviving gateway failed"),
        f"restart: joined {nl['restartJoinedMs']} ms, pool READY {nl['restartPoolReadyMs']} ms, head routes to it "
        f"{nl['restartServingViaHeadMs']} ms",
        cmd("reliability/run.sh node-loss", None if nl["requestsPerPhasePerGateway"] >= 5000
            else f"{CI}{nl['requestsPerPhasePerGateway']} answers per gateway per phase"))
fo = load("node-loss-failover")
if fo:
    w, b, u = fo["failoverWindow"], fo["beforeKill"], fo["unpinned"]
    served = ", ".join(f"`{k}` {n(v)}" for k, v in u["servedBy"].items())
    full = fo["unpinnedPerSecondPerGateway"] >= 360
    model = traced.derived(fo["model"].replace("builtin:sleep", "`builtin:sleep`"), fo["model"])
    row("Node loss: failover of unpinned requests", f"{fo['nodes']} node processes, open loop through "
        f"{fo['gateways']} gateways, each {fo['unpinnedPerSecondPerGateway']:.0f}/s unpinned + "
        f"{fo['pinnedPerSecondPerGateway']:.0f}/s pinned to `n3`; {model} on `n2` and `n3`; deadline "
        f"{fo['deadlineMs']} ms",
        "SIGKILL of `n3` (hosts a pool) with requests in flight to it", fo["sent"], fo["succeeded"],
        fo["failedCleanly"], fo["lost"], "-",
        f"`n3` unreachable (its event-bus connection closed) on the head {fo['unreachableLoggedMs']} ms and on `n2` "
        f"{fo['unreachableLoggedOnN2Ms']} ms after the kill; membership {fo['leftClusterLoggedMs']} ms, status "
        f"{fo['deadInStatusMs']} ms; pinned requests a clean {http(503)} naming it meanwhile",
        f"failover window ({n(w['count'])} unpinned requests, {w['inFlightAtKill']} in flight at the kill): p50 "
        f"{w['p50Ms']} ms, p99 {w['p99Ms']} ms, max {w['maxMs']} ms (before the kill: p99 {b['p99Ms']} ms, max "
        f"{b['maxMs']} ms); unpinned {n(u['succeeded'])} of {n(u['sent'])} answered {http(200)} ({served})",
        cmd("reliability/run.sh failover", None if full else f"{CI}{fo['unpinnedPerSecondPerGateway']:.0f} + "
            f"{fo['pinnedPerSecondPerGateway']:.0f}/s per gateway, {fo['secondsPerPhase']} s per phase"))
wc = load("worker-crash")
if wc:
    nm, p = wc["normal"], wc["poison"]
    row("Worker crash mid-batch", f"{wc['nodes']} nodes x {wc['workersPerNode']} workers, 6 closed-loop clients, "
        f"{wc['seconds']} s", f"{p['sent']} poison (NaN) requests, each crashing its batch's worker twice",
        nm["sent"] + p["sent"], nm["succeeded"] + p["succeeded"], p["failedCleanly"] + nm["failedCleanly"],
        nm["lost"] + p["lost"], "-",
        f"at once: the batch fails; batch-mates re-queued ({wc['workerRestarts']} restarts)",
        f"pool whole again {wc['recoveryMs']} ms after the poison's {http(503)}; {wc['modelReloads']} model reloads; "
        f"normal p99 {nm['okP99Ms']:.0f} ms", cmd("reliability/run.sh crash"))
ll = load("leader-loss")
if ll:
    for r in ll["runs"]:
        row("Leader loss mid-deploy", f"{ll['nodes']} in-process nodes, deploy of 3 pools x 2 workers; {r['sent']} "
            "requests once READY", f"leader killed at the first {r['killedAtFirst']} claim", r["sent"], r["succeeded"],
            r["failedCleanly"], r["lost"], "-", f"new leader {r['newLeaderMs']} ms",
            f"READY {r['readyMs']} ms; {r['managers']} managers, {r['workers']} workers, {r['modelLoads']:.0f} model "
            "loads (none twice)", cmd("reliability/run.sh leader"))
lp = load("leader-loss-processes")
if lp:
    assert lp["sent"] == lp["succeeded"] + lp["failedCleanly"] + lp["lost"], "leader-loss-processes: outcomes do not add up"
    clients = "a closed-loop client" if lp["clients"] == 1 else f"{lp['clients']} closed-loop clients"
    row("Leader loss (real processes)", f"{lp['nodes']} node processes, identity pools on `n1` and `n2`, {clients} "
        "on `n2`'s gateway", "SIGKILL of the head (the leader; no pool) while traffic flows",
        lp["sent"], lp["succeeded"], lp["failedCleanly"], lp["lost"], "-",
        f"new leader (`{lp['newLeader']}`) in status {n(lp['newLeaderMs'])} ms after the kill",
        f"a second deployment, applied through `n1` once `{lp['newLeader']}` led, READY on `n1` and `n2` "
        f"{n(lp['secondDeploymentReadyMs'])} ms after the kill and answering through `n2`; the client through `n2` answered {n(lp['succeededBeforeKill'])} before the kill, "
        f"{n(lp['succeededKillToNewLeader'])} until the new leader, {n(lp['succeededWhileRedeploying'])} while the "
        f"deployment was applied, {n(lp['succeededAfter'])} after", cmd("reliability/run.sh node-loss-processes"))
ov = load("overload")
if ov:
    nm, o, a = ov["normal"], ov["overload"], ov["after"]
    row("Overload", f"{ov['offeredPerSecond']}/s open loop = 10x the measured {ov['capacityPerSecond']}/s, "
        f"{o['seconds']:.0f} s ({ov['model']})", "10x capacity", o["sent"], o["succeeded"], o["failedCleanly"],
        o["lost"], "-", f"refused at once: {http(503)} + Retry-After p99 {o['cleanP99Ms']:.0f} ms",
        f"admitted p99 {o['okP99Ms']:.0f} ms vs {nm['okP99Ms']:.0f} ms normal; right after: {a['okP99Ms']:.0f} ms; "
        f"heap after GC {mib(ov['heapAfterGcBeforeBytes'])} -> {mib(ov['heapAfterGcAfterBytes'])}, RSS "
        f"{mib(ov['rssBeforeBytes'])} -> {mib(ov['rssAfterBytes'])}", cmd("reliability/run.sh overload"))
sl = load("slowloris")
if sl:
    row("Slowloris", f"{sl['connections']} connections; 1 normal request meanwhile",
        "headers trickled every 200 ms, never finished", "-", "-", "-",
        sl["leftOpen"] + sl["unfinishedRequestsThatReachedAPool"], "-",
        f"{sl['closedByServer']} of {sl['connections']} closed by the server {sl['closedAfterMsMin']}-"
        f"{sl['closedAfterMsMax']} ms after connecting (read timeout {sl['readTimeoutMs']} ms), {sl['leftOpen']} left "
        f"open; {sl['unfinishedRequestsThatReachedAPool']} unfinished requests reached a pool; the normal request: "
        f"{sl['normalRequestsSucceeded']} of {sl['normalRequestsSent']} served",
        f"in flight {sl['requestsLeftInFlight']:.0f}; heap +{mib(sl['heapGrowthBytes'])}",
        cmd("reliability/run.sh slow", None if sl["connections"] >= 500 else f"{CI}{sl['connections']} connections"))
vc = load("vanishing-clients")
if vc:
    row("Clients vanish while queued", f"{vc['clients']} requests queued in a real pool",
        "every client closes its connection", vc["clients"], vc["completedInPool"], "-", vc["lost"], "-",
        f"{vc['cancelledInPool']} withdrawn from the queue, {vc['completedInPool']} finished (to nobody), "
        f"{vc['refusedExpiredOrFailedInPool']} refused/expired/failed, {vc['unaccountedFor']} unaccounted for",
        f"drained {vc['drainedMs']} ms; queue {vc['queueSlotsLeft']}, in flight {vc['inFlightLeft']}, gateway in "
        f"flight {vc['gatewayInFlightLeft']:.0f}; next client {vc['nextClientStatus']}; heap "
        f"+{mib(vc['heapGrowthBytes'])}", cmd("reliability/run.sh slow", None if vc["clients"] >= 250
                                                   else f"{CI}{vc['clients']} clients"))


def fuzz_size(inputs, full):
    return None if inputs >= full else f"{CI}{inputs:,}"


fh = load("fuzz-http-decoders")
if fh:
    for kind in ("json", "binary"):
        k = fh[kind]
        row(f"Hostile input: OIP {kind} decoder", f"{n(k['inputs'])} mutated {kind} bodies, seed {fh['seed']}",
            "truncation, flips, huge numbers, deep nesting, wrong types, huge declared shapes"
            + (", hostile header lengths" if kind == "binary" else ""), k["inputs"], k["accepted"],
            k["refusedCleanly"], k["escaped"] + k["overAllocated"], "-",
            f"{http(400)} INVALID_INPUT naming the field; {k['escaped']} escaped, {k['overAllocated']} over the "
            "allocation bound",
            f"max {mib(k['maxAllocatedBytes'])} allocated per body", cmd("reliability/run.sh fuzz",
                                                                          fuzz_size(k["inputs"], 1_000_000)))
fg = load("fuzz-grpc-decoder")
if fg:
    w, s, u = fg["wire"], fg["structural"], fg["notParsedByProtobuf"]
    total = w["inputs"] + s["inputs"]
    row("Hostile input: gRPC decoder", f"{n(total)} `ModelInferRequest`s, seed {fg['seed']}",
        f"{n(w['inputs'])} from mutated wire bytes that protobuf parses, {n(s['inputs'])} structurally random (shapes, "
        "types, contents)", total, w["accepted"] + s["accepted"], w["refusedCleanly"] + s["refusedCleanly"],
        w["escaped"] + w["overAllocated"] + s["escaped"] + s["overAllocated"], "-",
        f"INVALID_ARGUMENT; {w['escaped'] + s['escaped']} escaped, {w['overAllocated'] + s['overAllocated']} over the "
        "allocation bound", f"max {mib(max(w['maxAllocatedBytes'], s['maxAllocatedBytes']))} allocated",
        cmd("reliability/run.sh fuzz", fuzz_size(total, 1_000_000)))
    row("Hostile input: gRPC wire bytes protobuf refuses", f"{n(u['inputs'])} mutated wire inputs of the same run "
        "(not in the decoder's count)", "mutated wire bytes that do not parse as a `ModelInferRequest`", u["inputs"],
        "-", u["refusedCleanly"], u["escaped"], "-", "refused by protobuf's parser (`InvalidProtocolBufferException`) "
        "before Kiln's decoder; Vert.x's gRPC server answers them with an error", "-", cmd("reliability/run.sh fuzz"))
fs = load("fuzz-http-server")
if fs:
    codes = ", ".join(f"{c}: {v:,}" for c, v in fs["byStatus"].items())
    row("Hostile input: real HTTP server", f"{n(fs['requests'])} mutated requests, seed {fs['seed']}",
        "as above, plus hostile binary header lengths and paths", fs["requests"], fs["answered"], fs["refusedCleanly"],
        fs["serverErrors"] + fs["errorsNotJson"] + fs["noAnswer"], "-",
        f"{fs['serverErrors']} 5xx, {fs['errorsNotJson']} errors without a JSON message, {fs['noAnswer']} without an "
        f"answer ({codes})", f"a valid request after: {fs['validRequestAfterStatus']}",
        cmd("reliability/run.sh fuzz", fuzz_size(fs["requests"], 10_000)))
fy = load("fuzz-yaml-loader")
if fy:
    row("Hostile input: deployment YAML", f"{n(fy['inputs'])} mutated files, seed {fy['seed']}",
        "examples mutated; tags, anchors, alias bombs, duplicate keys", fy["inputs"], fy["loaded"],
        fy["refusedWithProblems"], fy["escaped"] + fy["overAllocated"], "-",
        f"problems with line and column; {fy['escaped']} escaped, {fy['overAllocated']} over the allocation bound",
        f"max {mib(fy['maxAllocatedBytes'])} allocated per file", cmd("reliability/run.sh fuzz",
                                                                       fuzz_size(fy["inputs"], 50_000)))
ca = load("cluster-admission")
if ca:
    row("Security: cluster admission", "a head with a name and a secret", "joins with another name, no secret, "
        "a wrong secret; then the right ones", ca["attempts"], ca["admitted"], ca["refused"], ca["wrongOutcomes"], "-",
        f"refused at join; cluster size stays {ca['clusterSizeAfterRefusals']}", "-", cmd("reliability/run.sh security"))
if nl and "managementToken" in nl:
    t = nl["managementToken"]
    row("Security: management token", "the node-loss cluster (real processes, `--token`)",
        "status, deploy and delete, each without the token and with a wrong one", t["attempts"], "-", t["refused401"],
        t["letThrough"], "-", f"{http(401)} each, before any body is read", "-", cmd("reliability/run.sh node-loss"))
ss = load("serialization-scan")
if ss:
    row("Security: no Java deserialization", f"bytecode of {ss['classes']} classes in {ss['modules']} modules",
        "ObjectInputStream, readObject, XMLDecoder, RMI, Jackson default typing", "-", "-", "-", "-", "-",
        f"{ss['violations']} uses found", "-", cmd("reliability/run.sh security"))

pt = load("partition")
if pt:
    def phases(side):
        ph = pt[side]["phases"]
        return {k: sum(p[k] for p in ph.values()) for k in ("ended", "succeeded", "failedCleanly", "lost")}, ph
    out, oph = phases("throughN1")
    ins, iph = phases("insideN3")
    sent = pt["throughN1"]["sent"] + pt["insideN3"]["sent"]
    unended = pt["throughN1"]["inFlightAtEnd"] + pt["insideN3"]["inFlightAtEnd"]
    failures = {}
    for ph in (oph, iph):
        for p in ph.values():
            for cause, c in p["failures"].items():
                failures[cause] = failures.get(cause, 0) + c
    split = iph.get("split", {})
    mw = pt["minorityWrite"]
    converged = {k: v for k, v in pt.items() if k.startswith("convergedAt")}
    cut = traced.derived(pt["cut"].replace("n3", "`n3`", 1), pt["cut"])
    row("Network partition", f"3 node processes in network namespaces, `--min-cluster-size {pt['minClusterSize']}`; "
        "5 closed-loop clients through `n1` (2 unpinned, 1 pinned to `n2`, 2 pinned to `n3`), 2 more inside `n3`'s "
        f"namespace through `n3` from the split on; deadline {pt['deadlineMs']} ms",
        f"{cut}, ~{pt['splitMs'] / 1000:.0f} s, then up",
        sent, out["succeeded"] + ins["succeeded"], out["failedCleanly"] + ins["failedCleanly"],
        out["lost"] + ins["lost"] + unended, "-",
        f"`n1` sees `n3` dead {pt['majoritySawTheCutMs']} ms, `n3` sees both others dead {pt['minoritySawTheCutMs']} ms; "
        f"on `n3` `POST /api/v1/deployments` {mw['status']}{' + Retry-After' if mw['retryAfter'] != 'null' else ''} "
        f"({mw['tookMs']} ms); `n3` answered {split.get('succeeded', 0)} of {split.get('ended', 0)} from its own pool "
        "while cut off; failures by cause: " + (", ".join(f"{k}: {c}" for k, c in sorted(failures.items())) or "none"),
        f"every node sees {traced.derived(len(converged), *converged)} alive and `echo` READY with one ready pool per "
        f"node {max(converged.values())} ms after the heal; every registry name held by "
        f"exactly one live actor {pt['namesOwnedOnceMs']} ms (and stays so); `n3`'s pool manager "
        f"{pt['n3ManagerAcrossTheHeal'].split(' ')[0]}",
        cmd("reliability/run.sh partition", f"{CI}one cut; needs root"))

changes = [("rollout", "Version rollout under load", "2 in-process nodes × 2 workers (`builtin:sleep` 5 ms), 6 "
            "closed-loop clients through both gateways", "v1 → v2 applied while traffic flows"),
           ("scale-down", "Autoscaling 4 → 1 under load", "the same nodes, `min_workers 1, max_workers 4, "
            "target_ongoing_per_worker 1`, 20 ms model; 8 clients (up), then 1 client (down)",
            "scale up to 4 workers per node, then down to 1 while the one client's traffic flows"),
           ("delete", "Delete while the last requests finish", "the same nodes, a 200 ms model, 1 worker per node, "
            "16 clients", "new requests stop, `delete` while requests are queued or executing")]
for key, name, load_, fault in changes:
    z = load("zero-failure-" + key)
    if not z:
        continue
    lo = z["load"]
    sent, ok, clean, lost = lo["sent"], lo["succeeded"], lo["failedCleanly"], lo["lost"]
    if key == "scale-down":
        up = load("zero-failure-scale-up")
        if up:
            sent, ok = sent + up["load"]["sent"], ok + up["load"]["succeeded"]
            clean, lost = clean + up["load"]["failedCleanly"], lost + up["load"]["lost"]
        # The JSON does not say it: the test waits for 4 workers on each node before it stops these clients.
        detection = setting("4 workers per node under 8 clients", CHANGES_TEST, 'workers("shrink", "za") == 4',
                            'driver.start(ports, 8, rows("shrink", 20))')
        recovery = (f"{' and '.join(str(w) for w in z['workersAfter'])} workers per node after, with the single "
                    f"client's {lo['sent']} requests: {lo['succeeded']} answered")
    elif key == "rollout":
        detection, recovery = "-", (f"v2 serving on both nodes, only v2 pools left; {z['answeredBeforeTheRollout']} "
                                    "answered before the change")
    else:
        detection = "-"
        recovery = f"{z['inFlightWhenDeleted']} in flight at the delete, all answered; the deployment gone on both nodes"
    # The size (run.sh's 5000 answers after each change) shows as the rollout's answers and as a quarter of it in
    # the one client's answers after the scale-down (awaitAnswered(light, ANSWERS / 4)); a delete has no size: it
    # is the requests in flight when it comes.
    full = key == "delete" or (lo["succeeded"] >= 5000 // 4 if key == "scale-down" else ok >= 5000)
    row(name, load_, fault, sent, ok, clean, lost, "-", detection, recovery, cmd("reliability/run.sh changes",
        None if full else CI + setting("200 answers after each change", CHANGES_TEST,
                                       'Figures.knob("changes.answers", 200)')))

dr = load("drain")
if dr:
    by = dr["byGateway"]
    tot = {k: sum(g[k] for g in by.values()) for k in ("sent", "succeeded", "failedCleanly", "lost")}
    # The JSON does not say the size; run.sh's full size is 5000 answers per gateway before and after the drain.
    full = min(g["succeeded"] for g in by.values()) >= 2 * 5000
    row("Node drain (SIGTERM) under load", "3 node processes, 2 closed-loop clients each on the head's and `n2`'s "
        "gateways", f"SIGTERM of `n1` (hosts a pool; grace {dr['graceSeconds']} s) while traffic flows",
        tot["sent"], tot["succeeded"], tot["failedCleanly"], tot["lost"], "-",
        f"`n1`'s readiness {http(503)} while draining: {'seen' if dr['readiness503Seen'] else 'not seen'}; "
        f"the head routed {dr['headRanOnN1DuringDrain']} requests to `n1` during the drain",
        f"`n1` exit code {dr['exitCode']} {dr['exitedAfterSigtermMs']} ms after SIGTERM, gone from status "
        f"{dr['goneFromStatusMs']} ms", cmd("reliability/run.sh drain", None if full else CI + setting(
            "300 answers per gateway per phase", "deploy/src/test/java/io/kiln/deploy/DrainIT.java",
            '"kiln.reliability.drain.requests", 300')))

st = load("stream-node-loss")
if st:
    row("Node killed mid-stream", f"2 in-process nodes, the `builtin:chunks` pool on `b` ({st['chunkDelayMs']} ms per "
        "chunk), an SSE client on `a`'s gateway", "`b` crashed as SIGKILL would (member and event bus gone) mid-stream",
        f"{st['streams']} stream", "-", st["endedWithErrorEvent"], st["lost"], "-",
        f"a final `event: error` (\"{traced.parse(st['errorEvent'])['error']}\") {st['endedAfterKillMs']} ms after the "
        "kill, after "
        f"{st['chunksBeforeTheEnd']} chunks; the stream ends, never hangs", "-",
        cmd("reliability/run.sh stream"))

sp = load("stream-node-loss-processes")
if sp:
    assert sp["streams"] == sp["endedWithErrorEvent"] + sp["lost"], "stream-node-loss-processes: outcomes do not add up"
    row("Node killed mid-stream (real processes)", f"{sp['nodes']} node processes, the `builtin:chunks` pool on `n1` "
        f"({sp['chunkDelayMs']} ms per chunk), an SSE client on `n2`'s gateway", "SIGKILL of `n1` mid-stream",
        f"{sp['streams']} stream", "-", sp["endedWithErrorEvent"], sp["lost"], "-",
        (f"a final `event: error` (\"{traced.parse(sp['errorEvent'])['error']}\") " if sp["errorEvent"] else
         "no error event: ") + f"{sp['endedAfterKillMs']} ms after the kill, after {sp['chunksBeforeTheEnd']} chunks; "
        "the stream ends, never hangs", "-", cmd("reliability/run.sh node-loss-processes"))

so = load("soak")
if so:
    p = so["poison"]
    full = so["seconds"] >= 1800
    row("Soak" + ("" if full else " (CI size)"), f"3 in-process nodes, 3 models (identity, `builtin:sleep` 3 ms, "
        f"`builtin:crash-on-nan`), open loop at half the measured capacity: {so['ratePerSecond']:,} of "
        f"{so['capacityPerSecond']:,} req/s, {so['seconds']} s", f"a poison request every 2 s ({p['sent']} worker "
        f"crashes), {so['restarts']} rolling restart(s) of `s3` (drain, stop, rejoin), under load",
        so["sent"], so["succeeded"], so["failedCleanly"], so["lost"], "-",
        f"poison: {p['failedCleanly']} of {p['sent']} a clean {http(503)} (p99 {p['cleanP99Ms']:.0f} ms), "
        f"{p['lost']} lost",
        f"heap after GC slope {so['heapSlopeMiBPerMinute']:+.2f} MiB/min, RSS {so['rssSlopeMiBPerMinute']:+.2f} MiB/min; "
        f"threads {so['threads'][0]} → {so['threads'][1]}, fds {so['fds'][0]} → {so['fds'][1]}"
        + (f" (less the load driver's own connections, up to {so['loadSocketsMax']:,} sockets)" if "loadSocketsMax" in so
           else "") + "; p99 "
        f"{so['p99EarlyMs']:.0f} ms early, {so['p99LateMs']:.0f} ms late; plots in `reliability/results/soak.html`",
        cmd("reliability/run.sh soak", None if full else f"{CI}{so['seconds']} s; " + setting(
            "full size 1800 s, a restart every 600 s", "reliability/run.sh", 'soak.seconds="${size:-1800}"',
            "soak.restartEverySeconds=600")))

tg, tb, tp = load("tls-gateway"), load("tls-bus"), load("tls-processes")
bus_timeout = setting("timeout 5 s", "runtime/src/test/java/io/kiln/runtime/BusTlsTest.java",
                      "withTimeout(Duration.ofSeconds(5))")
if tg or tb or tp:
    parts = [f"{name} {t['passed']} of {t['checks']}" for name, t in (("gateway", tg), ("bus", tb), ("processes", tp)) if t]
    row("Security: TLS", "gateway HTTPS + gRPC over TLS from PEM files; event bus with mutual TLS; 2 `kiln start` "
        "processes with both (`TlsIT`), 3 in-process members, one holding another CA's certificate (`BusTlsTest`)",
        "plain text on a TLS port; a client of another CA; a half-written certificate; a member without the "
        "cluster's certificate", "-", "-", "-", "-", "-",
        "checks passed: " + ", ".join(parts) + "; plain text gets no answer; the stranger's handshake refused"
        + (f"; its call fails in {tb['strangerCallFailedMs']} ms ({bus_timeout}), creating an actor on it fails in "
           f"{tb['placementOnStrangerFailedMs']} ms with `PlacementTimeoutException`" if tb and "strangerCallFailedMs" in tb
           else ""),
        (f"a replaced certificate served to new connections {tg['newCertificateServedMs']} ms after the key was "
         f"replaced, without a restart; the half-written one refused ({tg['halfWrittenRefusals']} refusals), the old one "
         "kept" if tg and "newCertificateServedMs" in tg else "-"), cmd("reliability/run.sh tls"))

pk = load("python-sigkill")
if pk:
    lo = pk["load"]
    row("Python worker SIGKILLed mid-batch", f"1 node, Python engine, {pk['workers']} workers, batching 8, "
                 f"{pk['clients']} closed-loop clients", f"{pk['kills']} x SIGKILL of a worker's Python process while its "
                 f"predict runs (batches of {', '.join(str(r) if r >= 0 else '?' for r in pk['rowsInKilledBatches'])} rows)",
                 lo["sent"], lo["succeeded"], lo["failedCleanly"], lo["lost"], "-",
                 f"pool saw each kill in {', '.join(str(d) for d in pk['detectionMs'])} ms; {pk['requeued']} requests "
                 f"re-queued", f"fresh process, model reloaded, pool whole {', '.join(str(r) for r in pk['recoveryMs'])} ms "
                 f"after the kill ({pk['workerRestarts']} restarts)", cmd("reliability/run.sh engines"))
oom = load("python-oom")
if oom:
    lo, cl = oom["load"], oom["crashLoop"]
    row("Python worker leaks until the OS kills it", f"1 node, {oom['workers']} workers, {oom['clients']} "
                 f"closed-loop clients; each process in its own memory cgroup ({oom['cgroup']}) of {oom['limitMiB']} MiB",
                 f"predict keeps {oom['leakMiBPerBatch']} MiB per batch: {oom['oomKills']} kernel OOM kills",
                 lo["sent"], lo["succeeded"], lo["failedCleanly"], lo["lost"], "-",
                 f"each kill seen as SIGKILL (out of memory); {oom['requeued']} requests re-queued",
                 f"{oom['workerRestarts']} restarts (= kiln_pool_worker_restarts_total), pool whole {oom['wholeAgainMs']} ms "
                 f"after the load stopped; a model that outgrows the limit in load: {cl['restarts']} restarts of "
                 f"{cl['workers']} workers (max_restarts {cl['maxRestarts']}; waits from "
                 f"{setting('100 ms', 'runtime/src/main/java/io/kiln/runtime/RetryPolicy.java', RESTART_POLICY)}, "
                 "doubling, between failed loads), "
                 f"FAILED in {cl['failedAfterMs']} ms, no more attempts", cmd("reliability/run.sh engines"))
ox = load("onnx-load-failure")
if ox:
    od = ox["otherDeployment"]
    for key, what, named in (("truncated", "a truncated model.onnx", "the file and ONNX Runtime's message"),
                             ("wrongInput", "a valid model.onnx, YAML declares an input it lacks",
                              "the undeclared input and the graph's inputs")):
        k = ox[key]
        row(f"ONNX model fails to load: {what}", f"1 node; another deployment under {od['sent']} requests "
                     f"through both cases (one run)", what, od["sent"], od["succeeded"],
                     od["failedCleanly"], od["lost"], "-", f"FAILED {k['failedAfterMs']} ms after the apply, naming {named}; {k['loadAttempts']} load attempts, {k['restartsAfterFailed']} after FAILED; "
                     f"its infer answers {k['answerWhileFailed']}", f"fixed and applied again: READY in {k['readyAfterFixMs']} ms",
                     cmd("reliability/run.sh engines"))
jl = load("job-loss")
if jl:
    row("Node killed mid-job", f"{jl['nodes']} in-process nodes, a job of {jl['inputs']} inputs in batches",
                 f"a node killed holding {jl['inFlightAtKill']} inputs in flight ({jl['doneBeforeKill']} done before)",
                 jl["inputs"], jl["results"], jl["failed"], jl["lost"], "-",
                 f"{jl['redispatched']} inputs redispatched; duplicated {jl['duplicated']}",
                 f"job SUCCEEDED {jl['endedAfterKillMs']} ms after the kill; {jl['resumedAfterKill']} inputs finished after it",
                 cmd("reliability/run.sh job-loss"))

jp = load("job-loss-processes")
if jp:
    assert jp["inputs"] == jp["results"] + jp["failed"] + jp["lost"], "job-loss-processes: outcomes do not add up"
    causes = ", ".join(f"`{k}` {v}" for k, v in jp["failuresByCause"].items()) or "none"
    row("Node killed mid-job (real processes)", f"{jp['nodes']} node processes, the head coordinating a job of "
        f"{jp['inputs']} one-row files over `builtin:sleep` pools on `n1`, `n2` ({jp['batchMs']} ms a batch of up to "
        f"{jp['maxBatchSize']}; `per_node: {jp['perNode']}`)",
        f"SIGKILL of `n1` with {jp['inFlightAtKill']} inputs in flight ({jp['doneAtKill']} done before)",
        jp["inputs"], jp["results"], jp["failed"], jp["lost"], "-",
        f"{jp['redispatched']} inputs redispatched ({causes}); duplicated {jp['duplicated']}",
        f"job {jp['state']} {jp['endedAfterKillMs'] / 1000:.1f} s after the kill (`n2` alone, load average "
        f"{jp['loadAverage']:.1f}); {jp['results']} inputs with their one right result file, {jp['wrongValues']} wrong, "
        f"{jp['strayFiles']} stray files", cmd("reliability/run.sh node-loss-processes"))


HEADER = ["scenario", "load", "fault", "sent", "succeeded", "failed cleanly", "lost", "reset by the killed node",
          "detection", "recovery", "command"]
FIGURES = HEADER[3:]  # every number in these columns must come from a results file (--trace)
cells = [[n(c) if isinstance(c, int) else str(c) for c in r] for r in rows]

RUNS_HEADER = ["results file", "rows", "written (UTC)", "1-minute load average", "cores", "bytes"]
runs = []
for name, (f, d) in loaded.items():
    fed = [c[0] for c in cells if f.name in traced.sources("".join(c[3:]))]
    at = d.get("at")
    runs.append([f"`{f.name}`", "; ".join(dict.fromkeys(fed)) or "none",
                 str(traced.derived(at[:16].replace("T", " "), at)) if at else "not recorded",
                 f"{d['loadAverage']:.1f}" if "loadAverage" in d else "not recorded",
                 str(d["cpus"]) if "cpus" in d else "not recorded", f"{traced.derived(f.stat().st_size, f.name):,}"])

generated = traced.strip(
    document.markdown_table(HEADER, cells, right=range(3, 8)) + "\n"
    + document.paragraph(
        "The results files behind the rows, as committed in `reliability/results/`: when its test wrote each, the "
        "1-minute load average and the cores it recorded then (\"not recorded\" where the test writes none), and its "
        "size. `python3 reliability/table.py --trace` names the file behind every number of the figure columns. Each "
        "row is one run of its test: no rounds, so no range. A count needs none; a time or a latency is that run's, "
        "under that run's load.") + "\n"
    + document.markdown_table(RUNS_HEADER, runs, right=range(3, 6)))

if missing:
    print("no results for: " + ", ".join(missing), file=sys.stderr)
try:
    if ARGS.write:
        if missing:
            sys.exit(f"not written: {ARGS.write} would lose the rows of the missing results")
        changed = document.write(ARGS.write, generated)
        print(f"{'wrote' if changed else 'unchanged:'} {ARGS.write} ({len(rows)} rows from {len(loaded)} results "
              "files)")
    elif ARGS.check:
        diff = document.check(ARGS.check, generated)
        if diff or missing:
            print("\n".join(diff) or "results missing", file=sys.stderr)
            sys.exit(f"{ARGS.check}: its generated part differs from table.py's rendering of {RESULTS}; "
                     "run python3 reliability/table.py --write")
        print(f"{ARGS.check}: its generated part is table.py's rendering of {RESULTS} ({len(rows)} rows)")
    elif ARGS.trace:
        report, problems = document.trace(HEADER, FIGURES, cells, RUNS_HEADER, runs, ROOT)
        print("\n".join(report + problems))
        if problems:
            sys.exit(f"{len(problems)} problems")
    else:
        sys.stdout.write(generated)
except document.MarkerError as e:
    print(f"{ARGS.write or ARGS.check}: {e}", file=sys.stderr)
    sys.exit(2)
