#!/usr/bin/env python3
# request-walk.py SAMPLES.json [MIN] — the walk a request takes, read off a JFR profile of steady load on one model
# (jfr print --json --stack-depth 300 --events jdk.ExecutionSample, as loadtest/profile-request-path.sh writes it
# to samples.json), for ARCHITECTURE.md's before/after:
#   entries  how each sampled stack's Kiln work began: its outermost Kiln frame, and whether the thread reached it
#            from a socket read (Netty channelRead), from a queued task (Netty's task queue: runAllTasks/runTask, or
#            an executor's worker loop), from the end of its loop's turn (a Netty tail task: LoopTurns.atTurnEnd, on
#            the same thread with the same context current, once per turn), or from a timer. Each distinct queued
#            entry on the request path is one hand-off: work put on a queue and picked up again later, on the same or
#            another thread. Turn-end entries are listed apart and not counted as hand-offs.
#   classes  every Kiln class (top-level: inner classes and lambdas count for their outer class) with a frame in at
#            least MIN samples of stacks on the request path, by module. Stacks whose work began at a timer, or in a
#            background part (controller, load board and reports, dashboard sampler, group coordinator, meters,
#            warm-up, the metrics endpoint), are left out. A class doing almost nothing can be missed by sampling,
#            so the count is a floor: compare profiles of the same length and load.
# Usage: loadtest/request-walk.py SAMPLES.json [MIN]
import collections, json, re, sys

BACKGROUND = ("ControllerLoop", "PoolLoadBoard", "LoadReporter", "DashboardApi", "RequestSampler", "GroupCoordinator",
              "ClusterMeters", "NodeWarmup", "HttpApi.lambda$metrics", "ReadinessHolds",
              "InMemoryCluster$Maps.lambda$fire")  # a single node's cluster-map listeners (load reports)
path = sys.argv[1]
minimum = int(sys.argv[2]) if len(sys.argv) > 2 else 3
events = json.load(open(path))["recording"]["events"]

def cls(frame):
    return frame["method"]["type"]["name"].replace("/", ".")

def short(frame):
    return cls(frame).rsplit(".", 1)[-1] + "." + frame["method"]["name"]

def how(rest):
    names = [cls(f) + "." + f["method"]["name"] for f in rest]
    if any("afterRunningAllTasks" in n for n in names):
        return "turn end"  # a Netty tail task: the loop's own turn ending, on its thread (LoopTurns.atTurnEnd)
    for n in names:  # nearest cause first
        if "InternalTimerHandler" in n or "ScheduledFutureTask" in n:
            return "timer"
        if "channelRead" in n:
            return "socket read"
        if re.search(r"runAllTasks|runTask|ThreadPoolExecutor.runWorker|ForkJoinWorkerThread.run", n):
            return "queued"
    return "thread start"

classes = collections.Counter()
entries = collections.Counter()
total = path_samples = 0
for e in events:
    frames = e["values"]["stackTrace"]["frames"]  # leaf first
    thread = re.sub(r"-\d+$", "", (e["values"].get("sampledThread") or {}).get("javaName") or "")
    total += 1
    kiln = [i for i, f in enumerate(frames) if cls(f).startswith("io.kiln.") and "$$Lambda" not in cls(f)]
    if not kiln:
        continue
    root = kiln[-1]
    entry = short(frames[root])
    kind = how(frames[root + 1:])
    if kind == "timer" or any(b in entry for b in BACKGROUND):
        continue
    path_samples += 1
    entries[(kind, entry, thread)] += 1
    for c in {cls(frames[i]).split("$", 1)[0] for i in kiln}:
        classes[c] += 1

kept = sorted(c for c, n in classes.items() if n >= minimum)
by_module = collections.defaultdict(list)
for c in kept:
    by_module[c.split(".")[2]].append(c.rsplit(".", 1)[-1])
print(f"Request walk from {path}: {path_samples} of {total} samples on the request path; classes in >= {minimum}\n")
print(f"**{len(kept)} Kiln classes on the request path**\n")
print("| module | classes | names |\n|---|---:|---|")
for m in sorted(by_module):
    print(f"| {m} | {len(by_module[m])} | {', '.join(sorted(by_module[m]))} |")
shown = [(k, n) for k, n in entries.items() if n >= minimum]
queued = [k for k, n in shown if k[0] == "queued"]
print(f"\n**{len(queued)} queued hand-offs** (distinct queued entries into Kiln code in >= {minimum} samples)\n")
print("| how | entry (outermost Kiln frame) | thread | samples |\n|---|---|---|---:|")
for (kind, entry, thread), n in sorted(shown, key=lambda kv: (kv[0][0], -kv[1])):
    print(f"| {kind} | `{entry}` | {thread} | {n} |")
