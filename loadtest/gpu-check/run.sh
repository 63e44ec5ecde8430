#!/usr/bin/env bash
# The device check of "GPU workers for real": one command for a host with an NVIDIA GPU, no JDK and no
# registry. Uses only what travels with the working tree: .gpu-bundle/ (loadtest/gpu-check/pack.sh: a
# jlink'ed Java runtime, Kiln's jars, the load generator) and the machine's own python3 with torch.
#
#   loadtest/gpu-check/run.sh            on the GPU machine; results to $OUT (else loadtest/results/gpu-check-<time>/)
#   loadtest/gpu-check/run.sh --cpu      the same pipeline on a CPU machine (see "CPU mode" below)
#
# Steps, each under a timeout inside one overall budget (BUDGET_S, 530 s); a failing step is recorded with its
# exit status and the script goes on to write what it has:
#   preflight   nvidia-smi, the bundle's java (never the system's), python3 with torch/torchvision and
#               torch.cuda.is_available(); versions and nvidia-smi are recorded
#   direct      ResNet-18 3x224x224 in one Python process, no Kiln: batch 1/8/32/64, warmed, timed between
#               torch.cuda.synchronize() calls; on device and numpy-in/numpy-out; TF32's effect
#   node        one node: the bundle's java -jar kiln.jar up --gpus auto --host 127.0.0.1 (a builtin probe model)
#   deploy      gpu.yaml (ResNet-18 and the MLP on GPU workers, batching on) and cpu.yaml (the same on CPU
#               workers); wait until all four are ready (deadline)
#   compare     GPU vs CPU outputs for the same inputs through HTTP binary tensors (tolerances in check.py:
#               ResNet-18 1e-3, MLP 1e-5 max abs, FP32 with TF32 off)
#   load        ResNet-18 on the GPU through Kiln with the Java load generator: HTTP binary and gRPC at
#               c=1/16/64, closed loop, WARMUP + DURATION each (10 s + 15 s), nvidia-smi sampled during each,
#               /metrics before and after (mean batch, compute time per batch)
#   report      $OUT: results.md, results.json, run.log, node.log, nvidia-smi.txt, status.json, reports.tar.gz
#
# CPU mode (--cpu): no nvidia-smi, no CUDA. The node declares one logical GPU (--gpus 1, nothing probed) and
# --cpus 8; the "GPU" workers are told cuda:0 and, with KILN_GPU_CHECK_CPU=1 in their environment, run on the
# CPU (models/common.py); direct runs on the CPU; shorter runs (WARMUP 3s, DURATION 5s). It exercises every
# step above except what only a GPU shows: CUDA itself (device placement, cuDNN, memory, TF32), the
# GPU-vs-CPU numerical difference (here both sides are the CPU, so it is ~0), the throughput figures, nvidia-smi
# parsing and `--gpus auto` discovery.
set -euo pipefail
export PYTHONDONTWRITEBYTECODE=1   # leave no __pycache__ in the working tree

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
MODE=gpu
BUNDLE="${BUNDLE:-$ROOT/.gpu-bundle/kiln-gpu-bundle.tar.xz}"
while (($#)); do
  case "$1" in
    --cpu) MODE=cpu ;;
    --bundle) BUNDLE="$2"; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "run.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
if [[ "$MODE" == cpu ]]; then
  WARMUP="${WARMUP:-3s}"; DURATION="${DURATION:-5s}"; DIRECT_SECONDS="${DIRECT_SECONDS:-1}"
  NODE_JAVA_OPTS="${NODE_JAVA_OPTS:--Xmx1g}"; LOADGEN_JAVA_OPTS="${LOADGEN_JAVA_OPTS:--Xmx512m}"
else
  WARMUP="${WARMUP:-10s}"; DURATION="${DURATION:-15s}"; DIRECT_SECONDS="${DIRECT_SECONDS:-2}"
  NODE_JAVA_OPTS="${NODE_JAVA_OPTS:--Xmx4g}"; LOADGEN_JAVA_OPTS="${LOADGEN_JAVA_OPTS:--Xmx1g}"
fi
BUDGET_S="${BUDGET_S:-530}"      # the whole script; the device tool's command limit is 600 s
RESERVE_S=25                     # kept back for stopping the node and writing the report
PORT="${KILN_PORT:-18000}"
GRPC_PORT="${KILN_GRPC_PORT:-18001}"
CONCURRENCY="${CONCURRENCY:-1 16 64}"
PROTOCOLS="${PROTOCOLS:-http-binary grpc}"
LOAD_MODEL=resnet18-gpu
OUTDIR="${OUT:-$ROOT/loadtest/results/gpu-check-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUTDIR"
WORK="$(mktemp -d /tmp/kiln-gpu-check.XXXXXX)"
mkdir -p "$WORK/lg" "$WORK/metrics" "$WORK/smi" "$WORK/yaml" "$WORK/home"
RUNLOG="$OUTDIR/run.log"
: >"$RUNLOG"
DEADLINE=$((SECONDS + BUDGET_S))
NODE_PID=""
FINISHED=0

log() { echo "[gpu-check $(date +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$RUNLOG" >&2; }
left() { echo $((DEADLINE - SECONDS)); }

# record STEP RC SECONDS NOTE   one line of steps.tsv (the report's Steps table)
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(tr '\t\n' '  ' <<<"$4")" >>"$WORK/steps.tsv"; }

# step NAME TIMEOUT CMD...   runs CMD (a command or a function of this script) in the background with its
# output in run.log, in a process group of its own so that a timeout stops it with everything it started;
# records the outcome and returns CMD's status (124: timed out) without stopping the script.
step() {
  local name="$1" t="$2" rc=0 start=$SECONDS avail note pid timed_out=0
  shift 2
  avail=$(($(left) - RESERVE_S))
  if ((avail < 3)); then
    log "SKIP $name: the time budget is spent"
    record "$name" 125 0 "skipped: out of the ${BUDGET_S} s budget"
    return 125
  fi
  ((t <= avail)) || t=$avail
  log "step $name (timeout ${t}s): $*"
  echo "----- $name" >>"$RUNLOG"
  set -m
  ( "$@" ) >>"$RUNLOG" 2>&1 </dev/null &
  pid=$!
  set +m
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS - start >= t)); then
      timed_out=1
      kill -TERM -- "-$pid" 2>/dev/null
      sleep 3
      kill -KILL -- "-$pid" 2>/dev/null
      break
    fi
    sleep 0.2
  done
  wait "$pid" 2>/dev/null || rc=$?
  ((timed_out == 0)) || rc=124
  if ((rc == 0)); then note="ok"; elif ((rc == 124)); then note="timed out after ${t} s"; else note="failed (exit $rc)"; fi
  log "step $name: $note ($((SECONDS - start)) s)"
  record "$name" "$rc" "$((SECONDS - start))" "$note"
  return "$rc"
}

meta() { "$PY" -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)) if __import__("os").path.exists(p) else {}; d[sys.argv[2]]=sys.argv[3]; json.dump(d, open(p,"w"), indent=1)' "$WORK/meta.json" "$1" "$2" 2>/dev/null || true; }

smi() { timeout 20 nvidia-smi "$@"; }

stop_node() {
  [[ -n "$NODE_PID" ]] || return 0
  log "stopping the node (pid $NODE_PID) and its Python workers"
  # The JVM first, so that Kiln closes its workers' Python processes itself; then whatever is left of its group.
  kill -TERM "$NODE_PID" 2>/dev/null || true
  for _ in $(seq 1 75); do kill -0 "$NODE_PID" 2>/dev/null || break; sleep 0.2; done
  kill -KILL -- "-$NODE_PID" 2>/dev/null || kill -KILL "$NODE_PID" 2>/dev/null || true
  wait "$NODE_PID" 2>/dev/null || true
  NODE_PID=""
}

finish() {
  local rc=$?
  ((FINISHED == 0)) || return 0
  FINISHED=1
  set +e
  [[ -z "${SAMPLER:-}" ]] || kill "$SAMPLER" 2>/dev/null
  if [[ -n "$NODE_PID" && -n "${JAVA:-}" ]]; then
    timeout 20 "$JAVA" "${FLAGS[@]}" -jar "$B/kiln.jar" status --json --address "$URL" >"$OUTDIR/status.json" 2>>"$RUNLOG"
  fi
  if [[ "$MODE" == gpu ]] && command -v nvidia-smi >/dev/null; then
    { echo; echo "===== nvidia-smi at the end, node still up ($(date -u +%H:%M:%SZ))"; smi; } >>"$WORK/nvidia-smi.txt" 2>&1
  fi
  stop_node
  meta total_s "$SECONDS"
  cp "$WORK/node.log" "$OUTDIR/node.log" 2>/dev/null
  STEPS_COPY="$(cat "$WORK/steps.tsv" 2>/dev/null)"
  cp "$WORK/nvidia-smi.txt" "$OUTDIR/nvidia-smi.txt" 2>/dev/null
  "$PY" "$HERE/check.py" report "$WORK" "$OUTDIR" >>"$RUNLOG" 2>&1 || {
    log "the report failed (see run.log); writing the step list only"
    { echo "# Kiln device check: report failed"; echo; echo '```'; cat "$WORK/steps.tsv"; echo '```'; } >"$OUTDIR/results.md"
  }
  (cd "$WORK" && tar -czf "$OUTDIR/reports.tar.gz" lg metrics smi steps.tsv meta.json direct.json compare.json yaml 2>/dev/null)
  log "done in ${SECONDS} s: $(cd "$OUTDIR" && printf '%s ' *)"
  cat "$OUTDIR/results.md" 2>/dev/null
  rm -rf "$WORK"
  # Exit 1 when any step failed or was skipped (the results are written either way).
  ((rc != 0)) || ! awk -F'\t' '$2 != 0 {bad = 1} END {exit !bad}' <<<"$STEPS_COPY" || rc=1
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

# The interpreter the workers and check.py use: PYTHON, else the first of python3 (on the GPU machine the
# torch-holding /opt/torch/.venv one), /opt/torch/.venv/bin/python3, /usr/bin/python3 that imports torch.
PY="${PYTHON:-}"
if [[ -z "$PY" ]]; then
  for cand in "$(command -v python3 || true)" /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    [[ -n "$cand" && -x "$cand" ]] || continue
    PY="${PY:-$cand}"
    if timeout 90 "$cand" -c 'import torch' 2>/dev/null; then PY="$cand"; break; fi
  done
fi
PY="$(command -v "${PY:-python3}" || echo "${PY:-python3}")"

log "mode $MODE, output $OUTDIR, budget ${BUDGET_S} s, work $WORK, python $PY"
meta mode "$MODE"
meta started "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
meta host "$(uname -n) ($(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo))"
meta cpus "$(nproc)"
meta commit "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
meta warmup "$WARMUP"
meta duration "$DURATION"
meta load_model "$LOAD_MODEL"

# ------------------------------------------------------------------------------------------------ preflight
: >"$WORK/nvidia-smi.txt"
if [[ "$MODE" == gpu ]]; then
  if step preflight-nvidia-smi 30 bash -c 'nvidia-smi && nvidia-smi --query-gpu=index,name,memory.total,uuid,driver_version --format=csv'; then
    { echo "===== nvidia-smi before the check ($(date -u +%H:%M:%SZ))"; smi; echo;
      smi --query-gpu=index,name,memory.total,memory.used,uuid,driver_version,pstate,clocks.sm,clocks.mem --format=csv; } \
      >>"$WORK/nvidia-smi.txt" 2>&1
    meta gpu "$(smi --query-gpu=name,memory.total --format=csv,noheader | head -1)"
    meta driver "$(smi --query-gpu=driver_version --format=csv,noheader | head -1)"
    meta cuda "$(smi | grep -o 'CUDA Version: [0-9.]*' | head -1)"
  fi
else
  echo "CPU mode: nvidia-smi not used" >>"$WORK/nvidia-smi.txt"
fi

# The bundle: unpacked to $WORK/bundle; its java, never the system's.
B="$WORK/bundle"
unpack() {
  [[ -f "$BUNDLE" ]] || { echo "no bundle at $BUNDLE: run loadtest/gpu-check/pack.sh and carry .gpu-bundle"; return 1; }
  if [[ -f "$BUNDLE.sha256" ]] && command -v sha256sum >/dev/null; then
    (cd "$(dirname "$BUNDLE")" && sha256sum -c "$(basename "$BUNDLE").sha256") || return 1
  fi
  mkdir -p "$B"
  if command -v xz >/dev/null; then
    xz -dc "$BUNDLE" | tar -x -C "$B"
  else  # no xz binary: Python's lzma + tarfile
    "$PY" -c 'import sys, tarfile
t = tarfile.open(sys.argv[1], "r:xz")
t.extractall(sys.argv[2], filter="data") if hasattr(tarfile, "data_filter") else t.extractall(sys.argv[2])' "$BUNDLE" "$B"
  fi
  cat "$B/BUNDLE.txt"
  local home
  home="$("$B/jre/bin/java" -XshowSettings:properties -version 2>&1 | awk -F' = ' '/java.home/ {print $2}')"
  echo "bundle java.home: $home"
  [[ "$home" == "$B/jre" ]] || { echo "the bundle's java reports java.home $home, not $B/jre"; return 1; }
  "$B/jre/bin/java" -version
}
if ! step unpack-bundle 60 unpack; then
  log "no usable Java runtime: nothing past the direct benchmark can run"
fi
JAVA="$B/jre/bin/java"
[[ -x "$JAVA" ]] && meta java "$("$JAVA" -version 2>&1 | head -1) (bundle, $JAVA)"
FLAGS=(--add-exports java.base/jdk.internal.ref=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED
  --add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-opens java.management/sun.management=ALL-UNNAMED
  --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
  -Dai.djl.offline=true -Dhazelcast.phone.home.enabled=false -Dkiln.home="$WORK/home")
LG_CP=""
[[ -f "$B/loadtest/classpath.txt" ]] && LG_CP="$(sed "s#\(^\|:\)#\1$B/#g" "$B/loadtest/classpath.txt")"

python_check() {
  "$PY" - "$1" <<'EOF'
import sys, platform
import numpy, torch, torchvision
print("python %s at %s; torch %s (CUDA %s, cuDNN %s); torchvision %s; numpy %s"
      % (platform.python_version(), sys.executable, torch.__version__, torch.version.cuda,
         torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
         torchvision.__version__, numpy.__version__))
print("torch.cuda.is_available(): %s, devices: %d" % (torch.cuda.is_available(), torch.cuda.device_count()))
if torch.cuda.is_available():
    print("device 0: %s" % torch.cuda.get_device_name(0))
if sys.argv[1] == "gpu" and not torch.cuda.is_available():
    sys.exit("torch sees no CUDA device")
EOF
}
step preflight-python 90 python_check "$MODE" || true
meta python "$("$PY" -c 'import sys, platform; print(platform.python_version(), sys.executable)' 2>/dev/null || echo "$PY: not usable")"
meta torch "$("$PY" -c 'import torch, torchvision; print("torch", torch.__version__, "CUDA", torch.version.cuda, "torchvision", torchvision.__version__)' 2>/dev/null || echo '?')"

# ------------------------------------------------------------------------------------------------ direct
if [[ "$MODE" == gpu ]]; then DEVICE=cuda:0; else DEVICE=cpu; fi
step direct 150 env PYTHONUNBUFFERED=1 "$PY" "$HERE/check.py" direct "$WORK/direct.json" --device "$DEVICE" \
  --seconds "$DIRECT_SECONDS" --batches 1,8,32,64 || true

# ------------------------------------------------------------------------------------------------ node
URL="http://127.0.0.1:$PORT"
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
start_node() {
  if ! port_free "$PORT" || ! port_free "$GRPC_PORT"; then echo "port $PORT or $GRPC_PORT is in use on 127.0.0.1"; return 1; fi
  local gpus=(--gpus auto) cpu_flag="${KILN_GPU_CHECK_CPU:-0}"
  [[ "$MODE" == gpu ]] || { gpus=(--gpus 1 --cpus 8); cpu_flag=1; }
  # A process group of its own (job control on while it forks): stop_node ends the JVM and its Python workers.
  set -m
  # shellcheck disable=SC2086
  KILN_GPU_CHECK_CPU=$cpu_flag "$JAVA" $NODE_JAVA_OPTS "${FLAGS[@]}" \
    -jar "$B/kiln.jar" up --file "$HERE/probe.yaml" --host 127.0.0.1 --port "$PORT" --grpc-port "$GRPC_PORT" \
    "${gpus[@]}" ${NODE_ARGS:-} --ready-timeout 120 >"$WORK/node.log" 2>&1 </dev/null &
  NODE_PID=$!
  set +m
  echo "node pid $NODE_PID: ${gpus[*]}"
  local end=$((SECONDS + 110))
  while ((SECONDS < end)); do
    kill -0 "$NODE_PID" 2>/dev/null || { echo "the node exited:"; tail -n 30 "$WORK/node.log"; return 1; }
    grep -q "deployment probe version 1 is ready" "$WORK/node.log" && { grep -E "started with|serving:" "$WORK/node.log"; return 0; }
    sleep 0.5
  done
  echo "the node did not get ready within 110 s"; tail -n 30 "$WORK/node.log"; return 1
}
NODE_OK=0
if [[ -x "$JAVA" ]]; then
  # In this shell, not through step: NODE_PID must survive it (start_node bounds its own wait).
  log "step node: $JAVA -jar kiln.jar up ($MODE mode)"
  echo "----- node" >>"$RUNLOG"
  node_start=$SECONDS
  if start_node >>"$RUNLOG" 2>&1; then
    NODE_OK=1
    record node 0 $((SECONDS - node_start)) "ok; $(grep -o "started with {[^}]*}" "$WORK/node.log" | head -1)"
  else
    record node 1 $((SECONDS - node_start)) "failed: see run.log and node.log"
  fi
  log "step node: $( ((NODE_OK)) && echo ok || echo FAILED) ($((SECONDS - node_start)) s)"
else
  record node 1 0 "not run: no Java runtime from the bundle"
fi

# ------------------------------------------------------------------------------------------------ deploy
deploy() {
  local f start
  for f in gpu cpu; do
    sed -e "s#uri: models/#uri: $HERE/models/#" -e "s#interpreter: python3#interpreter: $PY#" "$HERE/$f.yaml" >"$WORK/yaml/$f.yaml"
  done
  start=$SECONDS
  "$JAVA" "${FLAGS[@]}" -jar "$B/kiln.jar" deploy "$WORK/yaml/gpu.yaml" --address "$URL" || return 1
  "$JAVA" "${FLAGS[@]}" -jar "$B/kiln.jar" deploy "$WORK/yaml/cpu.yaml" --address "$URL" || return 1
  "$PY" "$HERE/check.py" wait "$URL" resnet18-gpu mlp-gpu resnet18-cpu mlp-cpu --timeout 280 --record "$WORK/ready.json" \
    --since "$((SECONDS - start))"
}
status_snapshot() {
  "$JAVA" "${FLAGS[@]}" -jar "$B/kiln.jar" status --address "$URL"
  "$JAVA" "${FLAGS[@]}" -jar "$B/kiln.jar" status --json --address "$URL" >"$OUTDIR/status.json"
}
DEPLOY_OK=0
if ((NODE_OK)); then
  if step deploy 300 deploy; then DEPLOY_OK=1; fi
  step status 30 status_snapshot || true
  if [[ "$MODE" == gpu ]]; then
    smi --query-gpu=timestamp,index,memory.used,memory.total,utilization.gpu --format=csv,noheader,nounits >"$WORK/smi/idle.csv" 2>>"$RUNLOG" || true
    { echo; echo "===== nvidia-smi with the deployments loaded, before load ($(date -u +%H:%M:%SZ))"; smi; } >>"$WORK/nvidia-smi.txt" 2>&1 || true
  fi
fi

# ------------------------------------------------------------------------------------------------ compare
if ((DEPLOY_OK)); then
  step compare 120 "$PY" "$HERE/check.py" compare "$URL" "$WORK/compare.json" || true
fi

# ------------------------------------------------------------------------------------------------ load
secs() { local v="$1"; case "$v" in *ms) echo 1 ;; *s) echo "${v%s}" ;; *m) echo $((${v%m} * 60)) ;; *) echo "$v" ;; esac; }
RUN_S=$(($(secs "$WARMUP") + $(secs "$DURATION")))
loadgen_run() {  # NAME PROTOCOL C
  local name="$1" proto="$2" c="$3" url="$URL" rc=0
  [[ "$proto" == grpc ]] && url="http://127.0.0.1:$GRPC_PORT"
  "$PY" "$HERE/check.py" metrics "$URL" "$WORK/metrics/$name.before.txt" || true
  SAMPLER=""
  if [[ "$MODE" == gpu ]]; then
    nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total,utilization.gpu --format=csv,noheader,nounits \
      -lms 500 >"$WORK/smi/$name.csv" 2>/dev/null &
    SAMPLER=$!
    if [[ "$c" == 64 && ! -s "$WORK/smi-apps.csv" ]]; then
      (sleep $(($(secs "$WARMUP") + 3)); smi --query-compute-apps=pid,process_name,used_memory --format=csv >"$WORK/smi-apps.csv" 2>&1) &
    fi
  fi
  # shellcheck disable=SC2086
  "$JAVA" $LOADGEN_JAVA_OPTS -cp "$LG_CP" io.kiln.loadtest.LoadGen --url "$url" --protocol "$proto" --model "$LOAD_MODEL" \
    --shape 1x3x224x224 --input-name input --mode closed --connections "$c" --warmup "$WARMUP" --duration "$DURATION" \
    --timeout 60s --quiet --name "$name" --out "$WORK/lg/$name.json" || rc=$?
  [[ -z "$SAMPLER" ]] || { kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null; SAMPLER=""; }
  "$PY" "$HERE/check.py" metrics "$URL" "$WORK/metrics/$name.after.txt" || true
  [[ -f "$WORK/lg/$name.json" ]] && "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); l=r["latencyMs"]; print("%s: %d ok of %d, %.1f ok req/s, p50 %.2f ms, p99 %.2f ms, outcomes %s" % (sys.argv[2], r["ok"], r["requests"], r["okRps"], l["p50"], l["p99"], r["outcomes"]))' "$WORK/lg/$name.json" "$name"
  return "$rc"
}
if ((DEPLOY_OK)) && [[ -n "$LG_CP" ]]; then
  for proto in $PROTOCOLS; do
    for c in $CONCURRENCY; do
      name="resnet-${proto}-c$c"
      if (($(left) - RESERVE_S < RUN_S + 20)); then
        log "SKIP $name: $(left) s left, a run needs $((RUN_S + 20))"
        record "load-$name" 125 0 "skipped: out of the ${BUDGET_S} s budget"
        continue
      fi
      step "load-$name" $((RUN_S + 75)) loadgen_run "$name" "$proto" "$c" || true
    done
  done
else
  record load 1 0 "not run: the deployments are not ready"
fi
log "all steps done; writing the report"
