#!/usr/bin/env bash
# MB-sized tensors (issue #36): PP-OCRv4 recognition (models/ocr/rec; [8,3,48,320] FP32 in, an [8,40,6625] FP32 output
# of 8,480,000 bytes) called directly in ONNX Runtime vs through Kiln, side by side, interleaved:
#   direct      one session opened as Kiln's worker opens it (intra-op threads $INTRA, 1 inter-op), C caller threads
#               taking turns on it as requests queue for Kiln's one worker (DIRECT_MODE=PARALLEL: runs overlap), each
#               output copied into a Java array (loadtest/BigTensorsDirect.java, a source-file program)
#   wrk         HTTP, binary extension (wrk with a Lua body: JSON header + raw input; the output as binary data)
#   py-http     the same over a keep-alive Python client with numpy (loadtest/big-tensors-client.py)
#   grpc        gRPC, raw_input_contents / raw_output_contents (the loadtest generator, LoadGen --protocol grpc)
#   py-shm      system shared memory: input and output by reference to a registered region (Python client)
# at concurrency 1 and 2 (= 2 x workers: Kiln runs one worker), $ROUNDS rounds, each configuration measured once per
# round in the same order. Prints, per configuration and concurrency, the median req/s with its range over the rounds
# and the ratio of medians to direct. Kiln runs as `./kiln up` on its own ports.
#
# Usage: loadtest/bench-big-tensors.sh            (env: ROUNDS=3 DURATION=8 WARMUP=3 INTRA=2 CONCURRENCY="1 2"
#                                                  KILN_PORT=8310 KILN_GRPC_PORT=8311 CONFIGS="direct wrk ..." PROFILE=1)
# PROFILE=1 also records a JFR of the Kiln JVM during an extra wrk c1 run and prints where its samples fall.
# Results (raw lines, summary, Kiln's log, JFR) go to loadtest/target/big-tensors-<time>/ (BIG_TENSORS_OUT=DIR:
# elsewhere), never into loadtest/results: these figures are not RESULTS.md's.
# Needs: a JDK 17+, wrk, a python3 with numpy (/usr/bin/python3 with python3-numpy, else python3 on PATH), the model
# (models/ocr/fetch.sh; run here when it is missing).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LT="$ROOT/loadtest"
# shellcheck source=loadtest/lib.sh
source "$LT/lib.sh"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-8}"
WARMUP="${WARMUP:-3}"
INTRA="${INTRA:-2}"
CONCURRENCY="${CONCURRENCY:-1 2}"
CONFIGS="${CONFIGS:-direct wrk py-http grpc py-shm}"
KILN_PORT="${KILN_PORT:-8310}"
KILN_GRPC_PORT="${KILN_GRPC_PORT:-8311}"
MODEL="$ROOT/models/ocr/rec/model.onnx"
OUT="${BIG_TENSORS_OUT:-$LT/target/big-tensors-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"

log() { echo "[bench-big-tensors] $*" >&2; }
die() { echo "bench-big-tensors: $*" >&2; exit 1; }

command -v wrk >/dev/null || die "needs wrk (apt-get install -y wrk)"
PY=""
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import numpy' 2>/dev/null; then PY="$p"; break; fi
done
[[ -n "$PY" ]] || die "needs a python3 with numpy (apt-get install -y python3-numpy)"
[[ -f "$MODEL" ]] || "$ROOT/models/ocr/fetch.sh"

log "building the kiln distribution and the load generator if stale"
"$ROOT/kiln" --version >/dev/null || die "could not build or run ./kiln"
loadtest_build || die "could not build the load generator"
ORT_JAR="$(ls "$ROOT"/deploy/target/lib/onnxruntime-*.jar | head -1)"
[[ -f "$ORT_JAR" ]] || die "no onnxruntime jar in deploy/target/lib"

{
  dirty=""
  [[ -z "$(git -C "$ROOT" status --porcelain)" ]] || dirty=" (+ uncommitted changes)"
  echo "commit=$(git -C "$ROOT" rev-parse --short HEAD)$dirty"
  echo "started=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "cpus=$(nproc) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "rounds=$ROUNDS duration=${DURATION}s warmup=${WARMUP}s intra_op=$INTRA concurrency=$CONCURRENCY direct=${DIRECT_MODE:-SERIAL}"
} >"$OUT/meta.txt"

cat >"$OUT/rec.yaml" <<EOF
deployments:
  - name: rec
    version: "1"
    model:
      uri: $ROOT/models/ocr/rec
      engine: OnnxRuntime
      inputs:  [{name: x, datatype: FP32, shape: [-1, 3, 48, -1]}]
      outputs: [{name: softmax_11.tmp_0, datatype: FP32, shape: [-1, -1, 6625]}]
      threads: {intra_op: $INTRA, inter_op: 1}
      warmup: {batch_sizes: []}
    pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}
    batching: {max_batch_size: 1}
    queue: {max_queued: 64, timeout_ms: 60000}
EOF

KILN_PID=""
cleanup() {
  if [[ -n "$KILN_PID" ]]; then
    kill -TERM -- "-$KILN_PID" 2>/dev/null || true
    wait "$KILN_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT

log "starting kiln up with the rec model on :$KILN_PORT / :$KILN_GRPC_PORT"
KILN_STRICT_READINESS=true setsid "$ROOT/kiln" up --port "$KILN_PORT" --grpc-port "$KILN_GRPC_PORT" \
  --file "$OUT/rec.yaml" >"$OUT/kiln.log" 2>&1 &
KILN_PID=$!
for _ in $(seq 1 300); do
  if curl -sf "http://127.0.0.1:$KILN_PORT/v2/models/rec/ready" >/dev/null; then break; fi
  kill -0 "$KILN_PID" 2>/dev/null || { tail -30 "$OUT/kiln.log" >&2; die "kiln exited"; }
  sleep 1
done
curl -sf "http://127.0.0.1:$KILN_PORT/v2/models/rec/ready" >/dev/null || die "rec not ready after 300 s"

HEADER_LEN="$("$PY" "$LT/big-tensors-client.py" body "$OUT/body.bin")"
cat >"$OUT/wrk.lua" <<EOF
local f = io.open("$OUT/body.bin", "rb")
wrk.body = f:read("*a")
f:close()
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = "$HEADER_LEN"
done = function(summary, latency, requests)
  io.write(string.format('{"rps": %.3f, "p50_ms": %.2f, "p99_ms": %.2f, "n": %d, "errors": %d}\n',
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.requests, summary.errors.status + summary.errors.read + summary.errors.connect + summary.errors.write
      + summary.errors.timeout))
end
EOF

kiln_cpu_ticks() { awk '{print $14 + $15}' "/proc/$KILN_PID/stat"; }

# measure CONFIG C   one measured run; appends "CONFIG C ROUND <json>" to results.txt, the json with the Kiln JVM's CPU
# time per measured request (the whole process: gateway, pool, worker and ONNX Runtime's threads) where the client
# has no warm-up of its own in the window (wrk's is a separate run; the others' warm-up is counted, a small overstatement)
measure() {
  local config=$1 c=$2 line cpu0 cpu1
  cpu0=$(kiln_cpu_ticks)
  case "$config" in
    direct)
      line=$(java -Xmx1g -cp "$ORT_JAR" "$LT/BigTensorsDirect.java" "$MODEL" "$INTRA" "$c" "$WARMUP" "$DURATION" \
        "${DIRECT_MODE:-SERIAL}" \
        2>>"$OUT/direct.err" | tail -1) ;;
    wrk)
      wrk -t1 -c"$c" -d"${WARMUP}s" -s "$OUT/wrk.lua" "http://127.0.0.1:$KILN_PORT/v2/models/rec/infer" >/dev/null
      cpu0=$(kiln_cpu_ticks)
      line=$(wrk -t1 -c"$c" -d"${DURATION}s" --timeout 30s -s "$OUT/wrk.lua" \
        "http://127.0.0.1:$KILN_PORT/v2/models/rec/infer" | grep '^{') ;;
    py-http)
      line=$("$PY" "$LT/big-tensors-client.py" http-binary "$KILN_PORT" "$c" "$WARMUP" "$DURATION" | tail -1) ;;
    py-shm)
      line=$("$PY" "$LT/big-tensors-client.py" shm "$KILN_PORT" "$c" "$WARMUP" "$DURATION" | tail -1) ;;
    grpc)
      java -Xmx512m -cp "$CP" io.kiln.loadtest.LoadGen --url "http://127.0.0.1:$KILN_GRPC_PORT" --protocol grpc \
        --model rec --input-name x --shape 8x3x48x320 --mode closed --connections "$c" --warmup "${WARMUP}s" \
        --duration "${DURATION}s" --timeout 30s --quiet --out "$OUT/grpc-c$c-r$ROUND.json" >/dev/null 2>>"$OUT/grpc.err"
      line=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); l=d.get("latencyMs",{});
print(json.dumps({"rps": d.get("okRps", d.get("achievedRps")), "p50_ms": l.get("p50"), "p99_ms": l.get("p99"),
 "n": d.get("requests", d.get("completed")), "errors": d.get("errors")}))' "$OUT/grpc-c$c-r$ROUND.json") ;;
    *) die "unknown configuration $config" ;;
  esac
  [[ -n "$line" ]] || die "$config c$c round $ROUND gave no result"
  cpu1=$(kiln_cpu_ticks)
  if [[ "$config" != direct ]]; then
    line=$("$PY" -c 'import json,sys,os; d=json.loads(sys.argv[1]); t=(int(sys.argv[3])-int(sys.argv[2]))*1000.0/os.sysconf("SC_CLK_TCK")
d["cpu_ms_per_request"]=round(t/d["n"],2) if d.get("n") else None; print(json.dumps(d))' "$line" "$cpu0" "$cpu1")
  fi
  echo "$config $c $ROUND $line" | tee -a "$OUT/results.txt" >&2
}

for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
  for c in $CONCURRENCY; do
    for config in $CONFIGS; do
      measure "$config" "$c"
    done
  done
done

# threads_cpu   "name ticks" per thread of the Kiln JVM (numbers in names folded: vert.x-eventloop-thread-3 -> -#)
threads_cpu() {
  local f
  for f in /proc/"$KILN_PID"/task/*/stat; do
    sed -E 's/^[0-9]+ \((.*)\) [A-Z] (.*)$/\1|\2/' "$f" 2>/dev/null | awk -F'|' '{split($2, a, " "); n = $1;
      gsub(/[0-9]+/, "#", n); gsub(/ /, "_", n); print n, a[11] + a[12]}'
  done
}

if [[ "${PROFILE:-0}" == 1 ]]; then
  JPID="$KILN_PID"
  log "profiling the Kiln JVM ($JPID) during wrk c1: CPU per thread group, and a JFR"
  threads_cpu >"$OUT/threads-before.txt"
  jcmd "$JPID" JFR.start name=bigt settings=profile filename="$OUT/kiln.jfr" >/dev/null
  wrk -t1 -c1 -d"${DURATION}s" -s "$OUT/wrk.lua" "http://127.0.0.1:$KILN_PORT/v2/models/rec/infer" \
    | grep '^{' >"$OUT/profile-run.json"
  jcmd "$JPID" JFR.stop name=bigt >/dev/null
  threads_cpu >"$OUT/threads-after.txt"
  "$PY" - "$OUT/threads-before.txt" "$OUT/threads-after.txt" "$OUT/profile-run.json" >"$OUT/threads.txt" <<'EOF'
import collections, json, os, sys
def load(p):
    c = collections.Counter()
    for line in open(p):
        name, ticks = line.rsplit(" ", 1)
        c[name] += int(ticks)
    return c
before, after = load(sys.argv[1]), load(sys.argv[2])
n = json.load(open(sys.argv[3]))["n"]
ms = 1000.0 / os.sysconf("SC_CLK_TCK")
rows = sorted(((after[k] - before.get(k, 0)) * ms / n, k) for k in after)
print("Kiln JVM CPU per request by thread group over %d requests (wrk c1):" % n)
for v, k in reversed(rows):
    if v > 0:
        print("  %8.1f ms  %s" % (v, k))
print("  %8.1f ms  total" % sum(v for v, _ in rows))
EOF
  cat "$OUT/threads.txt" >&2
  jfr print --events jdk.ExecutionSample "$OUT/kiln.jfr" >"$OUT/samples.txt"
  "$PY" - "$OUT/samples.txt" >"$OUT/profile.txt" <<'EOF'
import collections, re, sys
text = open(sys.argv[1]).read()
tops, frames, total = collections.Counter(), collections.Counter(), 0
for ev in text.split("jdk.ExecutionSample")[1:]:
    stack = re.findall(r"^\s+([\w$.<>/]+)\(", ev, re.M)
    if not stack:
        continue
    total += 1
    tops[stack[0]] += 1
    for f in set(stack):
        frames[f] += 1
print("samples", total)
print("top frames (self):")
for f, n in tops.most_common(15):
    print("  %5.1f %%  %s" % (100.0 * n / total, f))
print("frames on the stack (inclusive):")
for f, n in frames.most_common(40):
    print("  %5.1f %%  %s" % (100.0 * n / total, f))
EOF
  cat "$OUT/profile.txt" >&2
fi

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta.txt"
"$PY" - "$OUT/results.txt" "$CONCURRENCY" >"$OUT/summary.txt" <<'EOF'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    config, c, r, js = line.split(" ", 3)
    rows.setdefault((config, int(c)), []).append(json.loads(js))
print("%-8s %3s %10s %21s %9s %9s %13s %8s" % ("config", "c", "req/s", "range", "vs direct", "p50 ms",
      "CPU ms/req", "errors"))
for c in [int(x) for x in sys.argv[2].split()]:
    direct = [x["rps"] for x in rows.get(("direct", c), [])]
    base = statistics.median(direct) if direct else None
    for (config, cc), runs in rows.items():
        if cc != c:
            continue
        rps = [x["rps"] for x in runs]
        med = statistics.median(rps)
        ratio = "%8.0f%%" % (100 * med / base) if base else "%9s" % "-"
        p50 = statistics.median([x["p50_ms"] or 0 for x in runs])
        cpus = [x["cpu_ms_per_request"] for x in runs if x.get("cpu_ms_per_request")]
        cpu = "%13.1f" % statistics.median(cpus) if cpus else "%13s" % "-"
        print("%-8s %3d %10.2f %10.2f - %8.2f %s %9.1f %s %8d" % (config, c, med, min(rps), max(rps), ratio, p50,
              cpu, sum(x.get("errors") or 0 for x in runs)))
EOF
cat "$OUT/meta.txt" >&2
cat "$OUT/summary.txt"
log "results in $OUT"
