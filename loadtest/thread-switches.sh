#!/usr/bin/env bash
# What the request path costs the kernel: a fresh Kiln node (deploy/examples/bench/noop.yaml, builtin:identity with 2
# workers, unless FILE and MODEL say) and the bare Vert.x server doing the same OIP JSON work (BareServer --work oip,
# one event loop), each pinned to SERVER_CPU in turn, wrk -t1 -c16 pinned to CLIENT_CPU, WARM seconds of load each for
# the JIT, then ROUNDS interleaved rounds of MEASURE seconds each under `perf stat --per-thread` (context switches and
# the futex, epoll_wait, read, writev and write system calls) and /proc's user and system time. Prints, per server and
# round, the rate and per request: user and system µs of CPU, context switches, futex calls, epoll_waits; for Kiln also
# the pool's rows per batch (from /metrics) and, per batch, the worker threads' context switches and futex calls and
# the event loop's futex calls (the thread hand-offs to the model's thread and back). Needs perf (Debian: linux-perf)
# with perf_event_paranoid <= 2 for one's own processes. Not part of any CI run; see ARCHITECTURE.md's "Threads and
# queued hand-offs on the local path".
# Usage: [ROUNDS=3 WARM=30 MEASURE=10] loadtest/thread-switches.sh   -> loadtest/results/thread-switches-<time>/summary.md
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=loadtest/lib.sh
source loadtest/lib.sh
for tool in perf wrk taskset curl; do
  command -v "$tool" >/dev/null || { echo "${0##*/}: $tool is not installed" >&2; exit 1; }
done
SERVER_CPU="${SERVER_CPU:-1}" CLIENT_CPU="${CLIENT_CPU:-0}" PORT="${PORT:-18400}" BARE_PORT="${BARE_PORT:-18490}"
WARM="${WARM:-30}" MEASURE="${MEASURE:-10}" ROUNDS="${ROUNDS:-3}" MODEL="${MODEL:-noop}"
loadtest_build
new_results_dir thread-switches
setsid taskset -c "$SERVER_CPU" ./kiln up --port "$PORT" --grpc-port "$((PORT + 1))" \
  --file "${FILE:-deploy/examples/bench/noop.yaml}" --cpus 2 --node-id thread-switches --warmup-seconds 5 \
  >"$OUT/kiln.log" 2>&1 &
kiln_group=$!
setsid taskset -c "$SERVER_CPU" java -cp "$CP" io.kiln.loadtest.BareServer --port "$BARE_PORT" --event-loops 1 \
  --work oip >"$OUT/bare.log" 2>&1 &
bare_group=$!
trap 'kill -TERM -- "-$kiln_group" "-$bare_group" 2>/dev/null || true; rm -f .kiln/nodes/thread-switches.json' EXIT
for _ in $(seq 1 600); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/v2/models/$MODEL/ready" && break; sleep 0.5; done
for _ in $(seq 1 120); do curl -s -o /dev/null "http://127.0.0.1:$BARE_PORT/" && break; sleep 0.5; done
declare -A pid url
pid[kiln]=$(pgrep -n -f "kiln.jar up --port $PORT")
pid[bare]=$(pgrep -n -f "BareServer --port $BARE_PORT")
url[kiln]="http://127.0.0.1:$PORT/v2/models/$MODEL/infer"
# The bare server answers as the model does: the whole input for identity (model echo), else 10 floats.
url[bare]="http://127.0.0.1:$BARE_PORT/v2/models/$([[ $MODEL == noop ]] && echo echo || echo bare)/infer"
load() { taskset -c "$CLIENT_CPU" wrk -t1 -c16 -d"$2s" -s loadtest/wrk/oip-json.lua "${url[$1]}" >"$3" 2>&1; }
# The pool's "rows batches" so far; "0 0" for the bare server.
batches() { if [[ $1 == kiln ]]; then pool_batches "http://127.0.0.1:$PORT"; else echo "0 0"; fi; }
cpu() { awk '{print $14, $15}' "/proc/$1/stat"; }
for name in kiln bare; do load "$name" "$WARM" "$OUT/$name.warm.wrk"; done
echo "| server | round | requests/s | user µs/req | sys µs/req | switches/req | futex/req | epoll_wait/req |" \
  "rows/batch | worker switches/batch | worker futex/batch | loop futex/batch |" >"$OUT/summary.md"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|" >>"$OUT/summary.md"
hz=$(getconf CLK_TCK)
for round in $(seq 1 "$ROUNDS"); do
  for name in kiln bare; do
    f="$OUT/$name.r$round"
    load "$name" $((MEASURE + 3)) "$f.wrk" &
    load_pid=$!
    sleep 1
    b0=$(batches "$name"); c0=$(cpu "${pid[$name]}")
    perf stat -x, --per-thread -e context-switches,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_wait \
      -p "${pid[$name]}" -o "$f.perf" -- sleep "$MEASURE"
    c1=$(cpu "${pid[$name]}"); b1=$(batches "$name")
    wait "$load_pid"
    rps=$(awk '/^Requests\/sec/ {print $2}' "$f.wrk")
    # perf -x, --per-thread: "thread-tid,count,unit,event,..."; worker threads are kiln-actor-*, the loop vert.x-eventloo*.
    awk -F, -v name="$name" -v round="$round" -v rps="$rps" -v secs="$MEASURE" -v hz="$hz" -v c="$c0 $c1" \
        -v b="$b0 $b1" '
      $2 ~ /^[0-9]+$/ {
        ev = $4; n = $2; all[ev] += n
        if ($1 ~ /^kiln-actor/) worker[ev] += n
        if ($1 ~ /^vert\.x-eventloo/) loop[ev] += n
      }
      END {
        split(c, t, " "); split(b, r, " ")
        req = rps * secs; rows = r[3] - r[1]; nb = r[4] - r[2]
        us = 1e6 / hz / req
        printf "| %s | %d | %.0f | %.1f | %.1f | %.2f | %.2f | %.2f |", name, round, rps, (t[3] - t[1]) * us,
          (t[4] - t[2]) * us, all["context-switches"] / req, all["syscalls:sys_enter_futex"] / req,
          all["syscalls:sys_enter_epoll_wait"] / req
        if (nb > 0) printf " %.2f | %.2f | %.2f | %.2f |\n", rows / nb, worker["context-switches"] / nb,
          worker["syscalls:sys_enter_futex"] / nb, loop["syscalls:sys_enter_futex"] / nb
        else printf " | | | |\n"
      }' "$f.perf" >>"$OUT/summary.md"
  done
done
cat "$OUT/summary.md"
echo "${0##*/}: $OUT"
