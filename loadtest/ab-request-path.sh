#!/usr/bin/env bash
# A/B of the request path's cost between two checkouts, interleaved: for each round, a fresh `kiln up` of
# deploy/examples/bench/noop.yaml per checkout, pinned to SERVER_CPU, loaded by wrk -t1 -c16 (oip-json.lua) pinned
# to CLIENT_CPU: WARM of load, then MEASURE seconds measured: requests/s and the server's CPU time per request
# (utime+stime from /proc), which a busy machine disturbs less than the rate, and the share of the server core the
# hypervisor stole meanwhile (a run with much steal says little about req/s). Make the other checkout with e.g.
#   mkdir /tmp/kiln-base && git archive <commit> | tar -x -C /tmp/kiln-base
# FILE and MODEL pick another deployment (default deploy/examples/bench/noop.yaml, model noop).
# Usage: [FILE=deploy/examples/bench/tiny.yaml MODEL=mlp] BASE=/tmp/kiln-base loadtest/ab-request-path.sh [ROUNDS]   (prints one line per run)
set -euo pipefail
cd "$(dirname "$0")/.."
here="$(pwd)"
# Every load below runs with its output redirected: check the tools first, or a missing one ends the script in silence.
for tool in wrk taskset curl; do
  command -v "$tool" >/dev/null || { echo "${0##*/}: $tool is not installed (wrk and h2load: apt-get install wrk nghttp2-client)" >&2; exit 1; }
done
BASE="${BASE:?set BASE to the other checkout}" ROUNDS="${1:-3}"
SERVER_CPU="${SERVER_CPU:-1}" CLIENT_CPU="${CLIENT_CPU:-0}" PORT="${PORT:-18400}" WARM="${WARM:-20}" MEASURE="${MEASURE:-15}"
out="$(mktemp -d)"
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
# The server core's time stolen by the hypervisor (/proc/stat field 8), in ticks: on a shared VM it varies from run
# to run (0-35 % of the core measured under this load) and moves req/s far more than CPU per request.
stolen() { awk -v c="cpu$SERVER_CPU" '$1 == c {print $9}' /proc/stat; }
run() { # name dir round
  local name=$1 dir=$2 round=$3 pid t0 t1 n
  (cd "$dir" && setsid taskset -c "$SERVER_CPU" ./kiln up --port "$PORT" --grpc-port "$((PORT + 1))" \
    --file ${FILE:-deploy/examples/bench/noop.yaml} --cpus 2 --node-id "ab-$name" --warmup-seconds 5 >"$out/$name.$round.log" 2>&1 &)
  for _ in $(seq 1 600); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/v2/models/${MODEL:-noop}/ready" && break; sleep 0.5; done
  pid=$(pgrep -n -f "kiln.jar up --port $PORT")
  url="http://127.0.0.1:$PORT/v2/models/${MODEL:-noop}/infer"
  taskset -c "$CLIENT_CPU" wrk -t1 -c16 -d"${WARM}s" -s "$here/loadtest/wrk/oip-json.lua" "$url" >/dev/null 2>&1
  t0=$(ticks "$pid") s0=$(stolen)
  taskset -c "$CLIENT_CPU" wrk -t1 -c16 -d"${MEASURE}s" -s "$here/loadtest/wrk/oip-json.lua" "$url" >"$out/$name.$round.wrk" 2>&1
  t1=$(ticks "$pid") s1=$(stolen)
  n=$(awk '/requests in/ {print $1}' "$out/$name.$round.wrk")
  echo "$name round $round: $(awk '/^Requests\/sec/ {print $2}' "$out/$name.$round.wrk") req/s, server CPU" \
    "$(awk -v t=$((t1 - t0)) -v n="$n" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", t * 1e6 / hz / n}') us/request," \
    "steal $(awk -v s=$((s1 - s0)) -v d="$MEASURE" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.0f", s * 100 / hz / d}') %"
  kill -TERM "$pid"
  for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/.kiln/nodes/ab-$name.json"
}
for r in $(seq 1 "$ROUNDS"); do
  run this "$here" "$r"
  run base "$BASE" "$r"
done
echo "logs and wrk output: $out" >&2
