#!/usr/bin/env bash
# A/B of the gRPC ModelInfer path's cost between two checkouts, interleaved: for each round, a fresh `kiln up` of
# deploy/examples/bench/noop.yaml per checkout, pinned to SERVER_CPU, loaded by h2load (one connection, 16 streams,
# raw_input_contents FP32 [1,64], loadtest/grpc-body.py) pinned to CLIENT_CPU: WARM seconds of load, then MEASURE
# seconds measured: requests/s and the server's CPU time per request (utime+stime from /proc over the requests
# h2load saw succeed; also that of the request path's threads alone), which a busy machine disturbs less than the rate. With JFR=1 a JFR CPU profile (Java samples
# every 1 ms) is recorded over a further ~MEASURE seconds and charged by loadtest/jfr-owners.py (shares only:
# JFR itself costs CPU, so the us/request figure is taken before it). Make the other checkout with e.g.
#   mkdir /tmp/kiln-base && git archive <commit> | tar -x -C /tmp/kiln-base
# Usage: BASE=/tmp/kiln-base loadtest/ab-grpc-path.sh [ROUNDS]   (prints one line per run; BASE=none: this one only)
set -euo pipefail
cd "$(dirname "$0")/.."
here="$(pwd)"
# Every load below runs with its output redirected: check the tools first, or a missing one ends the script in silence.
for tool in h2load taskset curl python3; do
  command -v "$tool" >/dev/null || { echo "${0##*/}: $tool is not installed (wrk and h2load: apt-get install wrk nghttp2-client)" >&2; exit 1; }
done
BASE="${BASE:?set BASE to the other checkout, or none}" ROUNDS="${1:-3}"
SERVER_CPU="${SERVER_CPU:-1}" CLIENT_CPU="${CLIENT_CPU:-0}" PORT="${PORT:-18420}" WARM="${WARM:-20}" MEASURE="${MEASURE:-15}"
JFR="${JFR:-0}"
out="$(mktemp -d)"
python3 loadtest/grpc-body.py noop "$out/noop.bin"
jdk_jfr="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")/lib/jfr/default.jfc"
sed -E '/<event name="jdk.ExecutionSample">/,/<\/event>/ s#(<setting name="period"[^>]*>)[^<]*#\11 ms#' "$jdk_jfr" >"$out/cpu.jfc"
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
# The request path's own threads only (event loops, actor and worker threads): without the JIT compiler, GC and
# the node's background work, which on a loaded machine and a few thousand requests would swamp the figure.
# Write syscalls so far (/proc/PID/io syscw): per request, the figure contention cannot move.
writes() { awk '/^syscw:/ {print $2}' "/proc/$1/io"; }
path_ticks() {
  local t sum=0 comm
  for t in /proc/"$1"/task/*; do
    comm=$(cat "$t/comm" 2>/dev/null) || continue
    case "$comm" in vert.x-eventloo*|kiln-actor*) sum=$((sum + $(awk '{print $14+$15}' "$t/stat" 2>/dev/null || echo 0))) ;; esac
  done
  echo "$sum"
}
load() { # seconds file
  taskset -c "$CLIENT_CPU" h2load -t1 -c1 -m16 -D "$1" -d "$out/noop.bin" -H 'content-type: application/grpc' \
    -H 'te: trailers' "$url" >"$2" 2>&1
}
run() { # name dir round
  local name=$1 dir=$2 round=$3 pid t0 t1 p0 p1 w0 w1 n
  (cd "$dir" && KILN_JAVA_OPTS="-XX:FlightRecorderOptions=stackdepth=256" setsid taskset -c "$SERVER_CPU" ./kiln up \
    --port "$PORT" --grpc-port "$((PORT + 1))" --file deploy/examples/bench/noop.yaml --cpus 2 --node-id "abg-$name" \
    --warmup-seconds 5 >"$out/$name.$round.log" 2>&1 &)
  for _ in $(seq 1 600); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/v2/models/noop/ready" && break; sleep 0.5; done
  pid=$(pgrep -n -f "kiln.jar up --port $PORT")
  url="http://127.0.0.1:$((PORT + 1))/inference.GRPCInferenceService/ModelInfer"
  nghttp -v -d "$out/noop.bin" -H 'content-type: application/grpc' -H 'te: trailers' "$url" >"$out/$name.$round.check" 2>&1 || true
  grep -aq 'grpc-status: 0' "$out/$name.$round.check" || { echo "$name: one call did not end with grpc-status 0 ($out/$name.$round.check)" >&2; exit 1; }
  load "$WARM" /dev/null
  t0=$(ticks "$pid") p0=$(path_ticks "$pid") w0=$(writes "$pid")
  load "$MEASURE" "$out/$name.$round.h2load"
  t1=$(ticks "$pid") p1=$(path_ticks "$pid") w1=$(writes "$pid")
  n=$(awk '/^requests:/ {print $8}' "$out/$name.$round.h2load")
  echo "$name round $round: $(awk '/^finished in/ {print $4}' "$out/$name.$round.h2load" | tr -d ,) req/s, server CPU" \
    "$(awk -v t=$((t1 - t0)) -v n="$n" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", t * 1e6 / hz / n}') us/request," \
    "request-path threads $(awk -v t=$((p1 - p0)) -v n="$n" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", t * 1e6 / hz / n}') us," \
    "write syscalls $(awk -v w=$((w1 - w0)) -v n="$n" 'BEGIN {printf "%.2f", w / n}')/request" \
    "($n succeeded, load $(cut -d' ' -f1 /proc/loadavg))"
  if [ "$JFR" = 1 ]; then
    load "$((MEASURE + 3))" /dev/null &
    local h=$!
    sleep 1
    jcmd "$pid" JFR.start name=ab settings="$out/cpu.jfc" >/dev/null
    wait "$h"
    # Stopped explicitly, so the file is complete when jfr reads it (a duration's end is written asynchronously).
    jcmd "$pid" JFR.stop name=ab filename="$out/$name.$round.jfr" >/dev/null
    jfr print --json --stack-depth 300 --events jdk.ExecutionSample "$out/$name.$round.jfr" >"$out/$name.$round.json"
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/.kiln/nodes/abg-$name.json"
}
for r in $(seq 1 "$ROUNDS"); do
  run this "$here" "$r"
  [ "$BASE" = none ] || run base "$BASE" "$r"
done
if [ "$JFR" = 1 ]; then
  python3 loadtest/jfr-owners.py "$out"/*.json
fi
echo "logs, h2load output and profiles: $out" >&2
