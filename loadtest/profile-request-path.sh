#!/usr/bin/env bash
# Where a request's CPU goes: a fresh Kiln node (deploy/examples/bench/noop.yaml, builtin:identity, unless FILE says) pinned to
# SERVER_CPU, wrk -t1 -c16 pinned to CLIENT_CPU, WARM of load for the JIT to settle, then a JFR CPU profile
# (Java execution samples every 1 ms, stacks 256 deep) of PROFILE seconds of steady state only, charged by
# loadtest/jfr-owners.py to the nearest frame of a named part (Vert.x HTTP, vertx-web, Netty, the codec, the
# dispatcher, pool client, runtime, pool manager, metrics, timers...). On a shared machine the shares hold;
# absolute rates do not (and JFR's sampling itself costs the server throughput while it records).
# JFR samples threads running Java only: time in the kernel (socket reads/writes, epoll) is not in the shares.
# FILE and MODEL pick another deployment (default deploy/examples/bench/noop.yaml, model noop); the node's
# /metrics are saved before and after the profiled run (batch sizes, queue and compute time of its pools).
# walk.md: the Kiln classes and queued hand-offs the profiled requests went through (loadtest/request-walk.py).
# Usage: [FILE=deploy/examples/bench/tiny.yaml MODEL=mlp] loadtest/profile-request-path.sh [TAG]   -> loadtest/results/profile-TAG-<time>/{profile.jfr,owners.md,...}
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=loadtest/lib.sh
source loadtest/lib.sh
SERVER_CPU="${SERVER_CPU:-1}" CLIENT_CPU="${CLIENT_CPU:-0}" PORT="${PORT:-18400}" GRPC_PORT="${GRPC_PORT:-18401}"
WARM="${WARM:-40s}" PROFILE="${PROFILE:-20}"
new_results_dir "profile-${1:-noop}"
jdk_jfr="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")/lib/jfr/default.jfc"
sed -E '/<event name="jdk.ExecutionSample">/,/<\/event>/ s#(<setting name="period"[^>]*>)[^<]*#\11 ms#' "$jdk_jfr" >"$OUT/cpu.jfc"
KILN_JAVA_OPTS="-XX:FlightRecorderOptions=stackdepth=256 ${KILN_JAVA_OPTS:-}" setsid taskset -c "$SERVER_CPU" ./kiln up \
  --port "$PORT" --grpc-port "$GRPC_PORT" --file ${FILE:-deploy/examples/bench/noop.yaml} --cpus 2 >"$OUT/kiln.log" 2>&1 &
kiln_pid=$!
trap 'kill -TERM -- "-$kiln_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/v2/models/${MODEL:-noop}/ready" && break; sleep 0.5; done
java_pid=$(pgrep -n -f "kiln.jar up --port $PORT")
url="http://127.0.0.1:$PORT/v2/models/${MODEL:-noop}/infer"
taskset -c "$CLIENT_CPU" wrk -t1 -c16 -d"$WARM" -s loadtest/wrk/oip-json.lua "$url" >"$OUT/warm.wrk.txt" 2>&1
taskset -c "$CLIENT_CPU" wrk -t1 -c16 -d"$((PROFILE + 5))s" --latency -s loadtest/wrk/oip-json.lua "$url" >"$OUT/profiled.wrk.txt" 2>&1 &
wrk_pid=$!
sleep 2
jcmd "$java_pid" JFR.start name=request-path settings="$OUT/cpu.jfc" duration="${PROFILE}s" filename="$OUT/profile.jfr" >/dev/null
curl -sf "http://127.0.0.1:$PORT/metrics" >"$OUT/metrics-before.txt" || true
wait "$wrk_pid"
curl -sf "http://127.0.0.1:$PORT/metrics" >"$OUT/metrics-after.txt" || true
for _ in $(seq 1 60); do [ -s "$OUT/profile.jfr" ] && break; sleep 1; done # on a loaded machine JFR writes late
sleep 1
jfr print --json --stack-depth 300 --events jdk.ExecutionSample "$OUT/profile.jfr" >"$OUT/samples.json"
python3 loadtest/jfr-owners.py "$OUT/samples.json" | tee "$OUT/owners.md"
python3 loadtest/request-walk.py "$OUT/samples.json" 2 >"$OUT/walk.md" # classes and hand-offs (ARCHITECTURE.md)
echo "warm: $(awk '/^Requests\/sec/ {print $2}' "$OUT/warm.wrk.txt") req/s; while profiled: $(awk '/^Requests\/sec/ {print $2}' "$OUT/profiled.wrk.txt") req/s; $OUT" >&2
