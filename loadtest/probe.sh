#!/usr/bin/env bash
# Where does a request's time go? Starts `./kiln up --file YAML` on spare ports, warms it with closed-loop
# load, then for one measured interval prints: the client's figures, the node's own breakdown from
# /metrics (time inside the gateway, pool queueing, manager -> worker -> manager per batch, mean batch) and
# CPU seconds per thread of the node and of the generator; with JFR=1 it also records the interval with
# JFR (profile settings) into loadtest/results/probe-<time>.jfr and prints the hottest frames. Stops the node.
# Usage: loadtest/probe.sh YAML MODEL [CONNECTIONS=16] [PROTOCOL=http-json] [SECONDS=15]
#   loadtest/probe.sh deploy/examples/bench/noop.yaml noop 1
#   JFR=1 loadtest/probe.sh deploy/examples/bench/noop.yaml noop 16
# Environment: PROBE_PORT (18000; gRPC on +1), SHAPE (1x64), INPUT (input). Needs curl; JFR=1 needs jcmd, jfr.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
[[ $# -ge 2 ]] || { sed -n '2,10p' "$0"; exit 2; }
YAML="$1"; MODEL="$2"; C="${3:-16}"; PROTO="${4:-http-json}"; SECS="${5:-15}"
PORT="${PROBE_PORT:-18000}"; GPORT=$((PORT + 1))
CP="$(ls loadtest/target/kiln-loadtest-*.jar | grep -v -- '-tests.jar' | head -1):loadtest/target/lib/*"
lg() { java -cp "$CP" io.kiln.loadtest.LoadGen "$@"; }
URL="http://127.0.0.1:$PORT"; [[ "$PROTO" == grpc ]] && URL="http://127.0.0.1:$GPORT"
LOG="$(mktemp -t kiln-probe.XXXXXX)"
setsid ./kiln up --file "$YAML" --port "$PORT" --grpc-port "$GPORT" >"$LOG" 2>&1 &
NODE=$!
trap 'kill -TERM $NODE 2>/dev/null; wait $NODE 2>/dev/null; rm -f "$LOG"' EXIT
lg wait --url "http://127.0.0.1:$PORT" --path "/v2/models/$MODEL/ready" --timeout 180s \
  || { cat "$LOG"; exit 1; }
load=(--url "$URL" --protocol "$PROTO" --model "$MODEL" --shape "${SHAPE:-1x64}" --input-name "${INPUT:-input}"
  --mode closed --connections "$C" --quiet)
echo "# warm-up: 15 s at $C connections ($PROTO)"
lg "${load[@]}" --warmup 5s --duration 10s >/dev/null

metrics() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$MODEL" '
  /^kiln_gateway_request_duration_seconds_(count|sum)/ && index($0, "model=\"" m "\"") { g[$1 ~ /_count/ ? "c" : "s"] += $2 }
  /^kiln_pool_queue_duration_seconds_(count|sum)/ && index($0, "deployment=\"" m "\"") { q[$1 ~ /_count/ ? "c" : "s"] += $2 }
  /^kiln_pool_compute_duration_seconds_(count|sum)/ && index($0, "deployment=\"" m "\"") { k[$1 ~ /_count/ ? "c" : "s"] += $2 }
  /^kiln_pool_batch_size_rows_(count|sum)/ && index($0, "deployment=\"" m "\"") { b[$1 ~ /_count/ ? "c" : "s"] += $2 }
  END { print g["c"]+0, g["s"]+0, q["c"]+0, q["s"]+0, k["c"]+0, k["s"]+0, b["c"]+0, b["s"]+0 }'; }
threads() { for t in /proc/"$1"/task/*; do
    read -r line <"$t/stat" 2>/dev/null || continue; rest=${line##*) }; set -- $rest
    echo "${t##*/} $(( ${12} + ${13} )) $(tr ' ' '_' <"$t/comm" 2>/dev/null)"; done | sort; }

before=$(metrics)
OUTF="$(mktemp -t kiln-probe-lg.XXXXXX)"
lg "${load[@]}" --warmup 1s --duration "${SECS}s" >"$OUTF" &
GEN=$!
sleep 2
GENJVM=$(pgrep -P "$GEN" java 2>/dev/null || echo "$GEN")
if [[ "${JFR:-0}" == 1 ]]; then
  mkdir -p loadtest/results; JFRF="$ROOT/loadtest/results/probe-$(date +%Y%m%d-%H%M%S).jfr"
  jcmd "$NODE" JFR.start name=probe settings=profile filename="$JFRF" >/dev/null
fi
t1n=$(threads "$NODE"); t1g=$(threads "$GENJVM"); s1=$(date +%s.%N)
sleep $((SECS - 4))
t2n=$(threads "$NODE"); t2g=$(threads "$GENJVM"); s2=$(date +%s.%N)
[[ "${JFR:-0}" == 1 ]] && jcmd "$NODE" JFR.stop name=probe >/dev/null
wait "$GEN"
after=$(metrics)
echo "# client"; head -2 "$OUTF"; rm -f "$OUTF"
echo "# node, from /metrics over the interval"
python3 - "$before" "$after" <<'PY'
import sys
a = [float(x) for x in sys.argv[1].split()]; b = [float(x) for x in sys.argv[2].split()]
gc, gs, qc, qs, kc, ks, bc, bs = [y - x for x, y in zip(a, b)]
d = lambda s, c: 1e6 * s / c if c else float("nan")
print(f"requests {gc:.0f}: inside the gateway {d(gs, gc):.0f} us mean; queued in the pool {d(qs, qc):.0f} us mean;"
      f" manager -> worker -> manager {d(ks, kc):.0f} us mean per batch; mean batch {bs / bc if bc else float('nan'):.2f}")
PY
cpu() { join <(echo "$1") <(echo "$2") | awk -v s="$3" '{d = ($4 - $2) / 100; if (d > 0.02) printf "  %5.1f%% of a core  %s\n", 100 * d / s, $3}' | sort -rn | head -8; }
el=$(python3 -c "print($s2 - $s1)")
echo "# node threads, CPU over ${el%.*} s"; cpu "$t1n" "$t2n" "$el"
echo "# generator threads"; cpu "$t1g" "$t2g" "$el"
if [[ "${JFR:-0}" == 1 ]]; then
  echo "# JFR $JFRF: hottest frames (self)"
  jfr print --events jdk.ExecutionSample --stack-depth 1 "$JFRF" | awk '/line:/ {sub(/^[ \t]+/, ""); sub(/[ \t]+line:.*/, ""); n[$0]++; t++}
    END { for (f in n) printf "%6.1f%%  %s\n", 100 * n[f] / t, f }' | sort -rn | head -15
fi
