#!/usr/bin/env bash
# MB-sized tensors (issue #36): PP-OCRv4 recognition (models/ocr/rec; [8,3,48,320] FP32 in, an [8,40,6625] FP32 output
# of 8,480,000 bytes) and detection (models/ocr/det; [1,3,480,480] FP32 in, 2,764,800 bytes, a [1,1,480,480] FP32
# probability map out, 921,600 bytes) called directly in ONNX Runtime vs through Kiln, side by side, interleaved:
#   direct      one session opened as Kiln's worker opens it (intra-op threads $INTRA, 1 inter-op), C caller threads
#               taking turns on it as requests queue for Kiln's one worker (DIRECT_MODE=PARALLEL: runs overlap), each
#               output copied into a Java array (loadtest/BigTensorsDirect.java, a source-file program)
#   wrk         HTTP, binary extension (wrk with a Lua body: JSON header + raw input; the output as binary data)
#   py-http     the same over a keep-alive Python client with numpy (loadtest/big-tensors-client.py)
#   grpc        gRPC, raw_input_contents / raw_output_contents (the loadtest generator, LoadGen --protocol grpc)
#   grpc-h2load the same ModelInfer message from h2load (nghttp2's HTTP/2 load generator, one thread, C connections of
#               one stream: a client as light as wrk), framed by io.kiln.loadtest.GrpcRequestFile from the request
#               file the LoadGen runs send; h2load sees only HTTP statuses, so every answer's grpc-status is checked
#               from Kiln's own count of the codes it sent (kiln_gateway_requests_total, protocol grpc) around the run
#   py-shm      system shared memory: input and output by reference to a registered region (Python client)
# at concurrency 1 and 2 (= 2 x workers: Kiln runs one worker per model), $ROUNDS rounds, each configuration measured
# once per round (even rounds in reverse order). Prints, per model, configuration and concurrency, the median req/s
# with its range over the rounds and the ratio of medians to direct. Kiln runs as `./kiln up` on its own ports, both
# models deployed, one driven at a time.
#
# Writes loadtest/results/big-tensors-<time>/ in RESULTS.md's rounds format (rounds.tsv: every measurement, req/s;
# checks.tsv: each path / direct at each concurrency, >= 90 % of direct, issue #36's target for rec, a reference for
# det; meta.txt with the machine, commit and load averages) beside the raw lines (results.txt), the summary, Kiln's
# log and the JFR; then run loadtest/results-md.sh. LOADTEST_RESULTS=DIR puts the folder elsewhere (a trial that must
# not land in RESULTS.md); BIG_TENSORS_OUT=DIR names the folder itself. Waits up to LOAD_WAIT_MAX s (600) for a
# 1-minute load under LOAD_MAX (2.0) and records the outcome: figures of a loaded machine say so in meta.txt.
#
# Usage: loadtest/bench-big-tensors.sh   (env: ROUNDS=3 DURATION=20 WARMUP=3 INTRA=2 CONCURRENCY="1 2"
#          MODELS="rec det" CONFIGS="direct wrk py-http grpc grpc-h2load py-shm" KILN_PORT=8310 KILN_GRPC_PORT=8311
#          PROFILE=1 CLIENT_CPU=1 NOTE="free text for meta.txt, e.g. what else ran" KILN=path/to/kiln)
# CLIENT_CPU=N pins every client (wrk, the Python client, LoadGen, h2load) to CPU N with taskset; unset (the default),
# nothing is pinned, as the model's intra-op threads use both cores on both sides.
# PROFILE=1 also records a JFR of the Kiln JVM during an extra wrk c1 run (the first model) and prints where its
# samples fall.
# Needs: a JDK 17+, wrk, h2load and nghttp (nghttp2-client) for grpc-h2load, a python3 with numpy (/usr/bin/python3
# with python3-numpy, else python3 on PATH), the models (models/ocr/fetch.sh; run here when they are missing).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LT="$ROOT/loadtest"
# shellcheck source=loadtest/lib.sh
source "$LT/lib.sh"
ROUNDS="${ROUNDS:-3}"
# 20 s: rec answers ~7 a second, so an 8 s run counts ~60 answers and one answer moves a ratio 1.6 %.
DURATION="${DURATION:-20}"
WARMUP="${WARMUP:-3}"
INTRA="${INTRA:-2}"
CONCURRENCY="${CONCURRENCY:-1 2}"
MODELS="${MODELS:-rec det}"
CONFIGS="${CONFIGS:-direct wrk py-http grpc grpc-h2load py-shm}"
CLIENT_CPU="${CLIENT_CPU:-}"
KILN_PORT="${KILN_PORT:-8310}"
KILN_GRPC_PORT="${KILN_GRPC_PORT:-8311}"
# A launcher of a copied distribution keeps one build under measurement where others edit the tree (./kiln rebuilds
# itself whenever a source is newer than its jar).
KILN="${KILN:-$ROOT/kiln}"
COMMAND="ROUNDS=$ROUNDS DURATION=$DURATION WARMUP=$WARMUP INTRA=$INTRA CONCURRENCY=\"$CONCURRENCY\" MODELS=\"$MODELS\" \
CONFIGS=\"$CONFIGS\"${CLIENT_CPU:+ CLIENT_CPU=$CLIENT_CPU} loadtest/bench-big-tensors.sh"
if [[ -n "${BIG_TENSORS_OUT:-}" ]]; then
  OUT="$BIG_TENSORS_OUT"
  mkdir -p "$OUT"
else
  new_results_dir big-tensors
fi

log() { echo "[bench-big-tensors] $*" >&2; }
die() { echo "bench-big-tensors: $*" >&2; exit 1; }

# model_shape / model_output / model_out_bytes / model_words MODEL: what each model is sent and answers
model_shape() { case "$1" in rec) echo 8x3x48x320 ;; det) echo 1x3x480x480 ;; *) die "unknown model $1" ;; esac; }
model_words() {
  case "$1" in
    rec) echo "PP-OCRv4 rec ([8,3,48,320] FP32 in, 1.47 MB; [8,40,6625] FP32 out, 8.48 MB)" ;;
    det) echo "PP-OCRv4 det ([1,3,480,480] FP32 in, 2.76 MB; [1,1,480,480] FP32 out, 0.92 MB)" ;;
  esac
}

command -v wrk >/dev/null || die "needs wrk (apt-get install -y wrk)"
if [[ " $CONFIGS " == *" grpc-h2load "* ]]; then
  command -v h2load >/dev/null && command -v nghttp >/dev/null \
    || die "grpc-h2load needs h2load and nghttp (apt-get install -y nghttp2-client)"
fi
CLIENT_PIN=()
if [[ -n "$CLIENT_CPU" ]]; then
  taskset -c "$CLIENT_CPU" true 2>/dev/null || die "cannot pin to CPU $CLIENT_CPU (taskset -c $CLIENT_CPU failed)"
  CLIENT_PIN=(taskset -c "$CLIENT_CPU")
fi
PY=""
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import numpy' 2>/dev/null; then PY="$p"; break; fi
done
[[ -n "$PY" ]] || die "needs a python3 with numpy (apt-get install -y python3-numpy)"
for m in $MODELS; do
  model_shape "$m" >/dev/null
  [[ -f "$ROOT/models/ocr/$m/model.onnx" ]] || "$ROOT/models/ocr/fetch.sh"
done

log "building the kiln distribution and the load generator if stale"
"$KILN" --version >/dev/null || die "could not build or run ./kiln"
loadtest_build || die "could not build the load generator"
ORT_JAR="$(ls "$ROOT"/deploy/target/lib/onnxruntime-*.jar | head -1)"
[[ -f "$ORT_JAR" ]] || die "no onnxruntime jar in deploy/target/lib"

meta_start big-tensors "$COMMAND"
wait_for_quiet
meta title "MB-sized tensors (issue #36): PP-OCRv4 through Kiln (HTTP binary, gRPC raw contents, system shared memory) vs the same ONNX Runtime session called directly"
notes="Models: $(for m in $MODELS; do printf '%s; ' "$(model_words "$m")"; done)one worker each (intra-op $INTRA, \
inter-op 1, max_batch_size 1), served by ./kiln up; all deployed at once, one driven at a time. direct: the same session \
settings in a fresh JVM (loadtest/BigTensorsDirect.java, ${DIRECT_MODE:-SERIAL}: C callers take turns on one session as \
requests queue for the one worker), each output copied into a Java array. Paths: wrk = HTTP binary extension (wrk, \
Lua body), py-http = the same from a keep-alive Python client with numpy, grpc = raw_input_contents / \
raw_output_contents (LoadGen --protocol grpc), grpc-h2load = the same ModelInfer message (GrpcRequestFile, from the \
request file LoadGen sends) from h2load -t1 -cC -m1, every answer's grpc-status checked in Kiln's \
kiln_gateway_requests_total (h2load sees HTTP statuses only), py-shm = system shared memory (Python, input and output \
by reference). Concurrency $CONCURRENCY (2 = 2 x workers), ${WARMUP}s client warm-up then ${DURATION}s measured per \
run, $ROUNDS rounds, even rounds in reverse order."
if [[ -n "$CLIENT_CPU" ]]; then
  notes="$notes Clients pinned to CPU $CLIENT_CPU (taskset); Kiln and direct not: the model's $INTRA intra-op threads \
take both cores on both sides."
else
  notes="$notes Not pinned: the model's $INTRA intra-op threads take both cores on both sides, and the clients share \
them."
fi
meta notes "$notes${NOTE:+ $NOTE}"
meta rounds "$ROUNDS"
if [[ -n "$(git -C "$ROOT" status --porcelain)" ]]; then
  meta git_uncommitted "$(git -C "$ROOT" status --porcelain | wc -l) changed files (working tree not clean)"
fi
printf 'round\tname\tstart\tvalue\tunit\terrors\n' >"$OUT/rounds.tsv"
{
  printf 'label\tkind\trun\tbase\top\ttarget\tshow\n'
  for m in $MODELS; do
    kind="target"
    [[ "$m" == rec ]] || kind="reference, not a target"
    for c in $CONCURRENCY; do
      for config in $CONFIGS; do
        [[ "$config" != direct ]] || continue
        case "$config" in
          wrk) what="HTTP binary (wrk)" ;;
          py-http) what="HTTP binary (keep-alive Python)" ;;
          grpc) what="gRPC raw contents (LoadGen)" ;;
          grpc-h2load) what="gRPC raw contents (h2load)" ;;
          py-shm) what="system shared memory (Python)" ;;
          *) what="$config" ;;
        esac
        printf '%s, c=%s: %s / direct ONNX Runtime\t%s\t%s-c%s-%s\t%s-c%s-direct\t>=\t0.9\tpercent\n' \
          "$m" "$c" "$what" "$kind" "$m" "$c" "$config" "$m" "$c"
      done
    done
  done
} >"$OUT/checks.tsv"

{
  for m in $MODELS; do
    case "$m" in
      rec)
        echo "  - name: rec"
        echo "    version: \"1\""
        echo "    model:"
        echo "      uri: $ROOT/models/ocr/rec"
        echo "      engine: OnnxRuntime"
        echo "      inputs:  [{name: x, datatype: FP32, shape: [-1, 3, 48, -1]}]"
        echo "      outputs: [{name: softmax_11.tmp_0, datatype: FP32, shape: [-1, -1, 6625]}]" ;;
      det)
        echo "  - name: det"
        echo "    version: \"1\""
        echo "    model:"
        echo "      uri: $ROOT/models/ocr/det"
        echo "      engine: OnnxRuntime"
        echo "      inputs:  [{name: x, datatype: FP32, shape: [-1, 3, -1, -1]}]"
        echo "      outputs: [{name: sigmoid_0.tmp_0, datatype: FP32, shape: [-1, 1, -1, -1]}]" ;;
    esac
    echo "      threads: {intra_op: $INTRA, inter_op: 1}"
    echo "      warmup: {batch_sizes: []}"
    echo "    pool: {workers_per_node: 1, worker_resources: {CPU: 0.5}}"
    echo "    batching: {max_batch_size: 1}"
    echo "    queue: {max_queued: 64, timeout_ms: 60000}"
  done
} | { echo "deployments:"; cat; } >"$OUT/models.yaml"

KILN_PID=""
cleanup() {
  if [[ -n "$KILN_PID" ]]; then
    kill -TERM -- "-$KILN_PID" 2>/dev/null || true
    wait "$KILN_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT

log "starting kiln up with $MODELS on :$KILN_PORT / :$KILN_GRPC_PORT"
KILN_STRICT_READINESS=true setsid "$KILN" up --port "$KILN_PORT" --grpc-port "$KILN_GRPC_PORT" \
  --file "$OUT/models.yaml" >"$OUT/kiln.log" 2>&1 &
KILN_PID=$!
for m in $MODELS; do
  for _ in $(seq 1 300); do
    if curl -sf "http://127.0.0.1:$KILN_PORT/v2/models/$m/ready" >/dev/null; then break; fi
    kill -0 "$KILN_PID" 2>/dev/null || { tail -30 "$OUT/kiln.log" >&2; die "kiln exited"; }
    sleep 1
  done
  curl -sf "http://127.0.0.1:$KILN_PORT/v2/models/$m/ready" >/dev/null || die "$m not ready after 300 s"

  header_len="$(BIG_TENSORS_MODEL=$m "$PY" "$LT/big-tensors-client.py" body "$OUT/body-$m.bin")"
  cat >"$OUT/wrk-$m.lua" <<EOF
local f = io.open("$OUT/body-$m.bin", "rb")
wrk.body = f:read("*a")
f:close()
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/octet-stream"
wrk.headers["Inference-Header-Content-Length"] = "$header_len"
done = function(summary, latency, requests)
  io.write(string.format('{"rps": %.3f, "p50_ms": %.2f, "p99_ms": %.2f, "n": %d, "errors": %d}\n',
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.requests, summary.errors.status + summary.errors.read + summary.errors.connect + summary.errors.write
      + summary.errors.timeout))
end
EOF
  # The gRPC paths' input: the same tensor as wrk's and the Python client's, as an OIP JSON request LoadGen sends and
  # GrpcRequestFile frames for h2load (one ModelInferRequest, the values in raw_input_contents, on both).
  BIG_TENSORS_MODEL=$m "$PY" "$LT/big-tensors-client.py" json "$OUT/request-$m.json"
  if [[ " $CONFIGS " == *" grpc-h2load "* ]]; then
    java -cp "$CP" io.kiln.loadtest.GrpcRequestFile --request "$OUT/request-$m.json" --model "$m" \
      --out "$OUT/grpc-$m.bin" || die "could not write $OUT/grpc-$m.bin"
    nghttp -n -v -d "$OUT/grpc-$m.bin" -H 'content-type: application/grpc' -H 'te: trailers' \
      "http://127.0.0.1:$KILN_GRPC_PORT/inference.GRPCInferenceService/ModelInfer" >"$OUT/grpc-$m.check.txt" 2>&1 \
      || true
    grep -aq 'grpc-status: 0' "$OUT/grpc-$m.check.txt" \
      || die "$m: one ModelInfer call from nghttp did not end with grpc-status 0; see $OUT/grpc-$m.check.txt"
  fi
done

kiln_cpu_ticks() { awk '{print $14 + $15}' "/proc/$KILN_PID/stat"; }

# grpc_codes MODEL   "OK CANCELLED OTHER": the gRPC answers Kiln has counted for MODEL so far, by the status it sent
grpc_codes() {
  curl -sf "http://127.0.0.1:$KILN_PORT/metrics" | awk -v m="model=\"$1\"" '
    /^kiln_gateway_requests_total\{/ && index($0, m) && index($0, "protocol=\"grpc\"") {
      v = $NF + 0
      if (index($0, "code=\"OK\"")) ok += v; else if (index($0, "code=\"CANCELLED\"")) cancelled += v; else other += v
    }
    END { printf "%d %d %d\n", ok, cancelled, other }'
}

# h2load_line FILE CODES_BEFORE CODES_AFTER C   measure's JSON line for a measured h2load run: req/s, mean latency
# (h2load prints no percentiles), succeeded answers, and errors: h2load's own (failed, errored, timed out, not 2xx)
# plus every gRPC answer Kiln counted with a status other than OK between the two grpc_codes (both runs, warm-up and
# measured: h2load -D ends each with its requests in flight cancelled, so up to 2 x C CANCELLED are the client's)
h2load_line() {
  "$PY" - "$@" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
finished = re.search(r"^finished in [0-9.]+(?:us|ms|s), ([0-9.]+) req/s", text, re.M)
req = re.search(r"^requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored, "
                r"(\d+) timeout", text, re.M)
codes = re.search(r"^status codes: \d+ 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text, re.M)
mean = re.search(r"^time for request:\s+\S+\s+\S+\s+([0-9.]+)(us|ms|s)\b", text, re.M)
data = re.search(r"^traffic: .*\((\d+)\) data", text, re.M)
if not (finished and req and codes and mean):
    sys.exit("not the output of a finished h2load run: " + sys.argv[1])
ok0, cancelled0, other0 = map(int, sys.argv[2].split())
ok1, cancelled1, other1 = map(int, sys.argv[3].split())
c = int(sys.argv[4])
succeeded = int(req.group(1))
h2load_errors = sum(int(g) for g in req.groups()[1:]) + sum(int(g) for g in codes.groups())
cancelled, other = cancelled1 - cancelled0, other1 - other0
print(json.dumps({
    "rps": float(finished.group(1)), "p50_ms": None,
    "mean_ms": round(float(mean.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[mean.group(2)], 2),
    "n": succeeded, "errors": h2load_errors + other + max(0, cancelled - 2 * c),
    "grpc_ok": ok1 - ok0, "grpc_cancelled": cancelled, "grpc_other": other,
    "data_bytes_per_answer": int(int(data.group(1)) / succeeded) if data and succeeded else None}))
EOF
}

# measure MODEL CONFIG C   one measured run; appends "MODEL CONFIG C ROUND <json>" to results.txt, the json with the
# Kiln JVM's CPU time per measured request (the whole process: gateway, pool, worker and ONNX Runtime's threads) where
# the client has no warm-up of its own in the window (wrk's is a separate run; the others' warm-up is counted, a small
# overstatement), and "ROUND MODEL-cC-CONFIG START REQ/S req/s ERRORS" to rounds.tsv (a run that measured no request
# counts as an error: it cannot be judged)
measure() {
  local model=$1 config=$2 c=$3 line cpu0 cpu1 start shape url
  shape="$(model_shape "$model")"
  url="http://127.0.0.1:$KILN_PORT/v2/models/$model/infer"
  start=$(date +%s.%N)
  cpu0=$(kiln_cpu_ticks)
  case "$config" in
    direct)
      line=$(java -Xmx1g -cp "$ORT_JAR" "$LT/BigTensorsDirect.java" "$ROOT/models/ocr/$model/model.onnx" "$INTRA" "$c" \
        "$WARMUP" "$DURATION" "${DIRECT_MODE:-SERIAL}" "$shape" 2>>"$OUT/direct.err" | tail -1) ;;
    wrk)
      "${CLIENT_PIN[@]}" wrk -t1 -c"$c" -d"${WARMUP}s" -s "$OUT/wrk-$model.lua" "$url" >/dev/null
      start=$(date +%s.%N)
      cpu0=$(kiln_cpu_ticks)
      line=$("${CLIENT_PIN[@]}" wrk -t1 -c"$c" -d"${DURATION}s" --timeout 30s -s "$OUT/wrk-$model.lua" "$url" \
        | grep '^{') ;;
    py-http)
      line=$(BIG_TENSORS_MODEL=$model "${CLIENT_PIN[@]}" "$PY" "$LT/big-tensors-client.py" http-binary "$KILN_PORT" \
        "$c" "$WARMUP" "$DURATION" | tail -1) ;;
    py-shm)
      line=$(BIG_TENSORS_MODEL=$model "${CLIENT_PIN[@]}" "$PY" "$LT/big-tensors-client.py" shm "$KILN_PORT" "$c" \
        "$WARMUP" "$DURATION" | tail -1) ;;
    grpc)
      # In a subfolder: the RESULTS.md generator reads a *.json beside meta.txt as a run of its own.
      local json="$OUT/grpc/$model-c$c-r$ROUND.json"
      mkdir -p "$OUT/grpc"
      "${CLIENT_PIN[@]}" java -Xmx512m -cp "$CP" io.kiln.loadtest.LoadGen --url "http://127.0.0.1:$KILN_GRPC_PORT" \
        --protocol grpc --model "$model" --request "$OUT/request-$model.json" --mode closed --connections "$c" \
        --warmup "${WARMUP}s" --duration "${DURATION}s" --timeout 30s --quiet --out "$json" >/dev/null \
        2>>"$OUT/grpc.err"
      line=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); l=d.get("latencyMs",{});
print(json.dumps({"rps": d.get("okRps", d.get("achievedRps")), "p50_ms": l.get("p50"), "p99_ms": l.get("p99"),
 "n": d.get("requests", d.get("completed")), "errors": d.get("errors")}))' "$json") ;;
    grpc-h2load)
      # A warm-up run of its own, as wrk's; Kiln's count of the gRPC codes it sent spans both runs.
      local f="$OUT/h2load/$model-c$c-r$ROUND" grpc_url codes0 codes1
      grpc_url="http://127.0.0.1:$KILN_GRPC_PORT/inference.GRPCInferenceService/ModelInfer"
      mkdir -p "$OUT/h2load"
      codes0=$(grpc_codes "$model") || die "no /metrics from Kiln on :$KILN_PORT"
      "${CLIENT_PIN[@]}" h2load -t1 -c"$c" -m1 -D "$WARMUP" -d "$OUT/grpc-$model.bin" \
        -H 'content-type: application/grpc' -H 'te: trailers' "$grpc_url" >"$f.warm.txt" 2>&1 \
        || die "h2load failed; see $f.warm.txt"
      start=$(date +%s.%N)
      cpu0=$(kiln_cpu_ticks)
      "${CLIENT_PIN[@]}" h2load -t1 -c"$c" -m1 -D "$DURATION" -d "$OUT/grpc-$model.bin" \
        -H 'content-type: application/grpc' -H 'te: trailers' "$grpc_url" >"$f.txt" 2>&1 \
        || die "h2load failed; see $f.txt"
      codes1=$(grpc_codes "$model") || die "no /metrics from Kiln on :$KILN_PORT"
      line=$(h2load_line "$f.txt" "$codes0" "$codes1" "$c") || die "could not read $f.txt" ;;
    *) die "unknown configuration $config" ;;
  esac
  [[ -n "$line" ]] || die "$model $config c$c round $ROUND gave no result"
  cpu1=$(kiln_cpu_ticks)
  if [[ "$config" != direct ]]; then
    line=$("$PY" -c 'import json,sys,os; d=json.loads(sys.argv[1]); t=(int(sys.argv[3])-int(sys.argv[2]))*1000.0/os.sysconf("SC_CLK_TCK")
d["cpu_ms_per_request"]=round(t/d["n"],2) if d.get("n") else None; print(json.dumps(d))' "$line" "$cpu0" "$cpu1")
  fi
  echo "$model $config $c $ROUND $line" | tee -a "$OUT/results.txt" >&2
  "$PY" -c 'import json,sys; d=json.loads(sys.argv[4]); e=int(d.get("errors") or 0) + (0 if d.get("n") else 1)
print("%s\t%s\t%s\t%s\treq/s\t%d" % (sys.argv[1], sys.argv[2], sys.argv[3], d.get("rps") or 0, e))' \
    "$ROUND" "$model-c$c-$config" "$start" "$line" >>"$OUT/rounds.tsv"
}

for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
  plan=()
  for m in $MODELS; do
    for c in $CONCURRENCY; do
      for config in $CONFIGS; do
        plan+=("$m $config $c")
      done
    done
  done
  measure_round "$ROUND" "${plan[@]}"
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
  wrk -t1 -c1 -d"${DURATION}s" -s "$OUT/wrk-${MODELS%% *}.lua" "http://127.0.0.1:$KILN_PORT/v2/models/${MODELS%% *}/infer" \
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

meta_end
"$PY" - "$OUT/results.txt" "$CONCURRENCY" >"$OUT/summary.txt" <<'EOF'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    model, config, c, r, js = line.split(" ", 4)
    rows.setdefault((model, config, int(c)), []).append(json.loads(js))
# h2load prints no percentiles: its rows show the mean latency instead (marked *).
print("%-5s %-11s %3s %10s %21s %9s %9s %13s %8s" % ("model", "config", "c", "req/s", "range", "vs direct", "p50 ms",
      "CPU ms/req", "errors"))
for model in dict.fromkeys(k[0] for k in rows):
    for c in [int(x) for x in sys.argv[2].split()]:
        direct = [x["rps"] for x in rows.get((model, "direct", c), [])]
        base = statistics.median(direct) if direct else None
        for (m, config, cc), runs in rows.items():
            if m != model or cc != c:
                continue
            rps = [x["rps"] for x in runs]
            med = statistics.median(rps)
            ratio = "%8.0f%%" % (100 * med / base) if base else "%9s" % "-"
            p50s = [x["p50_ms"] for x in runs if x.get("p50_ms") is not None]
            p50 = "%9.1f" % statistics.median(p50s) if p50s else "%8.1f*" % statistics.median(
                [x.get("mean_ms") or 0 for x in runs])
            cpus = [x["cpu_ms_per_request"] for x in runs if x.get("cpu_ms_per_request")]
            cpu = "%13.1f" % statistics.median(cpus) if cpus else "%13s" % "-"
            print("%-5s %-11s %3d %10.2f %10.2f - %8.2f %s %s %s %8d" % (model, config, c, med, min(rps), max(rps),
                  ratio, p50, cpu, sum(x.get("errors") or 0 for x in runs)))
EOF
cat "$OUT/meta.txt" >&2
cat "$OUT/summary.txt"
log "results in $OUT (RESULTS.md's rounds format: loadtest/results-md.sh regenerates RESULTS.md from it)"
