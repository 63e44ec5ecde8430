#!/usr/bin/env python3
# jfr-owners.py SAMPLES.json... (jfr print --json --stack-depth 300 --events jdk.ExecutionSample): each event-loop CPU
# sample charged to the nearest frame (from the leaf down) of a named part; JDK frames (collections,
# CompletableFuture) count for whoever called them. One column per file, as a Markdown table.
import json, sys, collections
P = [
 ("model lookup (gateway ModelLookup, deploy/serve directory)", ["io.kiln.gateway.impl.ModelLookup", "io.kiln.deploy.node.ServeModelDirectory", "io.kiln.deploy.node.NodeModelDirectory", "io.kiln.serve"]),
 ("gateway metrics + Micrometer", ["io.kiln.gateway.impl.GatewayMetrics", "io.micrometer"]),
 ("gateway read deadlines", ["io.kiln.gateway.impl.ReadDeadlines"]),
 ("gateway JSON codec", ["io.kiln.gateway.impl.Json", "io.kiln.gateway.impl.SinglePass", "io.kiln.gateway.impl.HttpInferDecoder", "io.kiln.gateway.impl.InferResponseWriter", "io.kiln.gateway.impl.FloatFormat", "io.kiln.gateway.impl.Elements", "io.kiln.gateway.impl.InputPlans", "io.kiln.gateway.impl.ByteSink", "io.kiln.gateway.impl.DecodedRequest", "io.kiln.gateway.impl.RequestHeader", "io.kiln.gateway.impl.Fields", "com.fasterxml"]),
 ("gateway dispatch + routing (Dispatcher, Router, PoolsDirectory)", ["io.kiln.gateway.impl.Dispatcher", "io.kiln.gateway.impl.Router", "io.kiln.gateway.impl.Hints", "io.kiln.deploy.node.PoolsDirectory", "io.kiln.pools.PoolLoadBoard", "io.kiln.gateway.spi"]),
 ("gateway HTTP handler (HttpApi, servers)", ["io.kiln.gateway"]),
 ("pool client (PoolClient)", ["io.kiln.pools.PoolClient", "io.kiln.pools.PoolNames"]),
 ("runtime actor calls (CallPath, ActorCell, LocalReply)", ["io.kiln.runtime"]),
 ("pool manager + dispatcher", ["io.kiln.pools.PoolManager", "io.kiln.pools.impl.PoolDispatcher", "io.kiln.pools.impl.BatchFormer", "io.kiln.pools.impl.WorkerSet", "io.kiln.pools.impl.WorkerSlot", "io.kiln.pools.impl.RequestQueue", "io.kiln.pools.impl.PoolMetrics", "io.kiln.pools.impl.BatchKey", "io.kiln.pools.impl.LoadReporter", "io.kiln.pools.impl.DispatchTimes", "io.kiln.pools.impl.Throughput", "io.kiln.pools.impl.VertxTimers", "io.kiln.pools.impl.ActorWorkerChannel", "io.kiln.pools.impl.PendingRequest", "io.kiln.pools.impl.BatchTimer", "io.kiln.pools.impl.BatchResults", "io.kiln.pools.impl.Outcome"]),
 ("worker + model (ModelWorker, runner)", ["io.kiln.pools"]),
 ("Kiln other", ["io.kiln"]),
 ("Vert.x timers", ["io.vertx.core.impl.VertxImpl.setTimer", "io.vertx.core.impl.VertxImpl.scheduleTimeout", "io.vertx.core.impl.VertxImpl.cancelTimer", "io.vertx.core.impl.VertxImpl$InternalTimerHandler"]),
 ("vertx-web (Router, BodyHandler, RoutingContext)", ["io.vertx.ext.web"]),
 ("vertx-grpc (gRPC server, framing, message codecs)", ["io.vertx.grpc"]),
 ("Vert.x HTTP server", ["io.vertx.core.http", "io.vertx.core.net"]),
 ("Vert.x futures/contexts/buffers", ["io.vertx"]),
 ("Netty (HTTP codec, channel, event loop, buffers)", ["io.netty"]),
]
def part(n):
    for c, ps in P:
        for p in ps:
            if n.startswith(p): return c
    return None
def nm(f): m = f["method"]; return m["type"]["name"].replace("/", ".") + "." + m["name"]
cols = []
for path in sys.argv[1:]:
    ev = json.load(open(path))["recording"]["events"]
    c = collections.Counter(); n = 0
    for e in ev:
        t = (e["values"].get("sampledThread") or {}).get("javaName") or ""
        if not t.startswith("vert.x-eventloop"): continue
        n += 1
        o = None
        for f in e["values"]["stackTrace"]["frames"]:
            o = part(nm(f))
            if o: break
        c[o or "JDK only (no owner frame)"] += 1
    cols.append((path, n, c))
names = [p for p, _ in P] + ["JDK only (no owner frame)"]
print("| part | " + " | ".join(p.split("/")[-1].replace(".json", "") for p, _, _ in cols) + " |")
print("|---|" + "---:|" * len(cols))
for k in names:
    print(f"| {k} | " + " | ".join(f"{c[k]*100/n:.1f} %" for _, n, c in cols) + " |")
print("| samples (event loop) | " + " | ".join(str(n) for _, n, _ in cols) + " |")
