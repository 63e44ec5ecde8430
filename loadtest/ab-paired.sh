#!/usr/bin/env bash
# Paired A/B of the request path's cost between two checkouts: both nodes run at once, pinned to the same SERVER_CPU
# (one loaded at a time, the other idle), and short wrk loads alternate between them in ABBA order, so that a slow
# spell of a shared machine falls on both sides of a pair rather than on one build's whole round (as it can with
# ab-request-path.sh, whose rounds start a fresh node each). Each node is warmed first (WARM seconds, twice each,
# alternated) until its JIT has settled; then PAIRS pairs of MEASURE-second loads. Per load: requests/s, the node's
# CPU time per request (utime+stime from /proc) and the pool's mean batch (rows per batch, from /metrics). Prints
# every load, then the median ratio this/base of the first two over the pairs (each pair: the two loads of one build
# against the two of the other, in ABBA order) and its range.
# FILE and MODEL pick another deployment (default deploy/examples/bench/noop.yaml, model noop).
# Usage: [FILE=deploy/examples/bench/tiny.yaml MODEL=mlp] BASE=/tmp/kiln-base loadtest/ab-paired.sh [PAIRS]
set -euo pipefail
cd "$(dirname "$0")/.."
here="$(pwd)"
# shellcheck source=loadtest/lib.sh
source loadtest/lib.sh
for tool in wrk taskset curl; do
  command -v "$tool" >/dev/null || { echo "${0##*/}: $tool is not installed (apt-get install wrk)" >&2; exit 1; }
done
BASE="${BASE:?set BASE to the other checkout}" PAIRS="${1:-8}"
SERVER_CPU="${SERVER_CPU:-1}" CLIENT_CPU="${CLIENT_CPU:-0}" PORT="${PORT:-18400}" WARM="${WARM:-20}" MEASURE="${MEASURE:-8}"
out="$(mktemp -d)"
declare -A pid url base_url
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
start() { # name dir port
  (cd "$2" && setsid taskset -c "$SERVER_CPU" ./kiln up --port "$3" --grpc-port "$(($3 + 1))" \
    --file ${FILE:-deploy/examples/bench/noop.yaml} --cpus 2 --node-id "abp-$1" --warmup-seconds 5 >"$out/$1.log" 2>&1 &)
  url[$1]="http://127.0.0.1:$3/v2/models/${MODEL:-noop}/infer" base_url[$1]="http://127.0.0.1:$3"
  for _ in $(seq 1 600); do curl -sf -o /dev/null "http://127.0.0.1:$3/v2/models/${MODEL:-noop}/ready" && break; sleep 0.5; done
  pid[$1]=$(pgrep -n -f "kiln.jar up --port $3")
}
stop() {
  for name in this base; do
    [ -n "${pid[$name]:-}" ] || continue
    kill -TERM "${pid[$name]}" 2>/dev/null || true
    for _ in $(seq 1 120); do kill -0 "${pid[$name]}" 2>/dev/null || break; sleep 0.5; done
    kill -9 "${pid[$name]}" 2>/dev/null || true
  done
  rm -f "$here/.kiln/nodes/abp-this.json" "$BASE/.kiln/nodes/abp-base.json"
}
trap stop EXIT
load() { # name seconds file
  taskset -c "$CLIENT_CPU" wrk -t1 -c16 -d"$2s" -s "$here/loadtest/wrk/oip-json.lua" "${url[$1]}" >"$3" 2>&1
}
batches() { pool_batches "${base_url[$1]}"; }
measure() { # name index -> prints "rps us rows-per-batch"
  local f="$out/$1.$2.wrk" t0 t1 n b0 b1
  b0=$(batches "$1")
  t0=$(ticks "${pid[$1]}")
  load "$1" "$MEASURE" "$f"
  t1=$(ticks "${pid[$1]}")
  b1=$(batches "$1")
  n=$(awk '/requests in/ {print $1}' "$f")
  # A load whose answers were errors measured something else: say so (its line still prints, for the record).
  if grep -qE 'Non-2xx|Socket errors' "$f"; then
    echo "${0##*/}: $1's load $2 had errors: $(grep -E 'Non-2xx|Socket errors' "$f" | tr -s ' ' | tr '\n' ';')" >&2
  fi
  echo "$(awk '/^Requests\/sec/ {print $2}' "$f") $(awk -v t=$((t1 - t0)) -v n="$n" -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%.2f", t * 1e6 / hz / n}') $(awk -v a="$b0" -v b="$b1" \
    'BEGIN {split(a, x, " "); split(b, y, " "); printf "%.2f", (y[2] > x[2] ? (y[1] - x[1]) / (y[2] - x[2]) : 0)}')"
}
start this "$here" "$PORT"
start base "$BASE" "$((PORT + 10))"
for w in 1 2; do for name in this base; do load "$name" "$WARM" /dev/null; done; done
results="$out/pairs.txt"
for p in $(seq 1 "$PAIRS"); do
  # ABBA within a pair; the pair after starts with the other build (BAAB), so neither always goes first.
  if [ $((p % 2)) -eq 1 ]; then order="this base base this"; else order="base this this base"; fi
  i=0
  declare -A sum_rps=([this]=0 [base]=0) sum_us=([this]=0 [base]=0)
  for name in $order; do
    i=$((i + 1))
    read -r rps us rows < <(measure "$name" "$p.$i")
    echo "pair $p $name: $rps req/s, server CPU $us us/request, $rows rows per batch"
    echo "$name $rps $us" >>"$out/loads.txt"
    sum_rps[$name]=$(awk -v a="${sum_rps[$name]}" -v b="$rps" 'BEGIN {print a + b}')
    sum_us[$name]=$(awk -v a="${sum_us[$name]}" -v b="$us" 'BEGIN {print a + b}')
  done
  echo "$p $(awk -v a="${sum_rps[this]}" -v b="${sum_rps[base]}" 'BEGIN {printf "%.4f", a / b}')" \
    "$(awk -v a="${sum_us[this]}" -v b="${sum_us[base]}" 'BEGIN {printf "%.4f", a / b}')" >>"$results"
done
# Numbers on stdin -> "median min max count best-quarter-mean" (the best quarter: the highest values).
stats() {
  sort -g | awk '{v[NR] = $1} END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; q = int((NR + 3) / 4); s = 0
    for (i = NR - q + 1; i <= NR; i++) s += v[i]
    print m, v[1], v[NR], NR, s / q}'
}
for col in 2 3; do
  label=$([ "$col" = 2 ] && echo "requests/s" || echo "server CPU per request")
  read -r m lo hi n _ < <(awk -v c="$col" '{print $c}' "$results" | stats)
  printf "%s this/base: median %.3f, range %.3f-%.3f over %d pairs\n" "$label" "$m" "$lo" "$hi" "$n"
done
# Per build over all its loads: the median, and the best quarter's mean (a shared machine's slow spells only ever lower
# a load's rate, so the best loads say most about the code).
for name in this base; do
  read -r m lo hi n best < <(awk -v n="$name" '$1 == n {print $2}' "$out/loads.txt" | stats)
  printf "%s: %d loads, requests/s median %.0f, best quarter %.0f, range %.0f-%.0f\n" "$name" "$n" "$m" "$best" "$lo" "$hi"
done
echo "logs and wrk output: $out" >&2
