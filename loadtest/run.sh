#!/usr/bin/env bash
# Benchmark scenarios for Kiln. Usage: loadtest/run.sh SCENARIO [extra LoadGen options...]
#   loadtest/run.sh noop                      # Kiln with a no-op model vs the bare HTTP server, side by side
#   DURATION=5s WARMUP=1s loadtest/run.sh bare --event-loops 1
# Builds what the scenario needs, waits (bounded) for a quiet machine, starts the servers, runs LoadGen,
# stops everything on exit (also on Ctrl-C or failure), and writes JSON + HTML, meta.txt (machine, command,
# load averages) and index.html (side by side, with ratios to the limits) into loadtest/results/<scenario>-<time>/.
# loadtest/results-md.sh then turns the latest folders into loadtest/RESULTS.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LT="$ROOT/loadtest"
# shellcheck source=loadtest/lib.sh
source "$LT/lib.sh"
DURATION="${DURATION:-10s}"
# Long enough for both JVMs' JIT to settle on a shared 2-core box (throughput still climbs for ~10 s).
WARMUP="${WARMUP:-10s}"
# Search steps run against a server the closed-loop runs already warmed.
SEARCH_WARMUP="${SEARCH_WARMUP:-5s}"
SEARCH_DURATION="${SEARCH_DURATION:-5s}"
BARE_PORT="${BARE_PORT:-8090}"
SERVER_EVENT_LOOPS="${SERVER_EVENT_LOOPS:-1}"
KILN_PORT="${KILN_PORT:-8000}"
KILN_GRPC_PORT="${KILN_GRPC_PORT:-8001}"
# The cluster scenario's three nodes: HTTP, gRPC and cluster ports of node i are the base + i - 1.
CLUSTER_HTTP_BASE="${CLUSTER_HTTP_BASE:-8100}"
CLUSTER_GRPC_BASE="${CLUSTER_GRPC_BASE:-8110}"
CLUSTER_PORT_BASE="${CLUSTER_PORT_BASE:-5801}"
EXAMPLES="$ROOT/deploy/examples/bench"
JAVA="${JAVA:-java}"
JAVA_OPTS="${JAVA_OPTS:--Xmx512m}"

die() { echo "run.sh: $*" >&2; exit 1; }
log() { echo "[run.sh] $*" >&2; }

# ---------------------------------------------------------------- helpers for scenarios

PIDS=()
CHILD=""
KILN_NODES=0
# Every background process runs in its own session, so stopping it also stops anything it started
# (e.g. the JVMs that ./kiln up forks). Nodes started with `kiln start` run detached: `kiln stop` ends them.
cleanup() {
  local pid
  [[ -z "$CHILD" ]] || kill -TERM "$CHILD" 2>/dev/null || true
  if [[ "$KILN_NODES" == 1 ]]; then
    "$ROOT/kiln" stop >>"$OUT/kiln-stop.log" 2>&1 || log "kiln stop failed; see $OUT/kiln-stop.log"
    KILN_NODES=0
  fi
  for pid in "${PIDS[@]:-}"; do
    [[ -n "$pid" ]] || continue
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]:-}"; do
    [[ -n "$pid" ]] || continue
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}
trap cleanup EXIT
trap 'exit 130' INT TERM

build() {
  if [[ "${SKIP_BUILD:-0}" == 1 && -d "$LT/target/lib" ]]; then
    log "SKIP_BUILD=1: using the existing build"
  else
    log "building the loadtest module"
    (cd "$ROOT" && ./mvnw -B -q -pl loadtest -am -DskipTests package dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory=target/lib)
  fi
  CP="$(ls "$LT"/target/kiln-loadtest-*.jar | grep -v -- '-tests.jar' | head -1):$LT/target/lib/*"
}

# run_child COMMAND...   run in the foreground, but interruptibly: bash runs a trap only between
# commands, and `wait` is the one it can interrupt, so a SIGTERM to this script stops the run at once.
run_child() {
  "$@" &
  CHILD=$!
  local rc=0
  wait "$CHILD" || rc=$?
  CHILD=""
  return "$rc"
}

# start_bg NAME COMMAND...   start a process in the background, log to $OUT/NAME.log, stop it on exit
start_bg() {
  local name="$1"; shift
  log "starting $name: $*"
  setsid "$@" >"$OUT/$name.log" 2>&1 &
  PIDS+=("$!")
}

# require_free_port PORT   refuse to start if something already listens there (we would measure it instead)
require_free_port() {
  if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
    die "port $1 is already in use on 127.0.0.1; stop what listens there or choose another port"
  fi
}

# wait_ready BASE_URL [PATH] [TIMEOUT]   until GET BASE_URL+PATH answers 200
wait_ready() {
  run_child "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.LoadGen wait --url "$1" --path "${2:-/v2/health/ready}" \
    --timeout "${3:-120s}" || die "$1${2:-/v2/health/ready} never became ready; see the logs in $OUT"
}

# loadgen NAME [LoadGen options...]   one measured run, written to $OUT/NAME.json and .html
loadgen() {
  local name="$1"; shift
  meta "loadavg_before_$name" "$(loadavg1)"
  run_child "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.LoadGen --name "$name" --out "$OUT/$name.json" \
    --warmup "$WARMUP" --duration "$DURATION" "$@" "${EXTRA[@]}"
}

# search NAME [LoadGen options...]   a max-throughput search, written to $OUT/NAME.search.json and .html
#   e.g. search mlp-search --url http://127.0.0.1:8000 --model mlp --p99-target-ms 50
search() {
  local name="$1"; shift
  meta "loadavg_before_$name" "$(loadavg1)"
  run_child "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.LoadGen --search --name "$name" --out "$OUT/$name.search.json" \
    --warmup "$SEARCH_WARMUP" --duration "$SEARCH_DURATION" "$@" "${EXTRA[@]}"
}

# limit RUN LIMIT...   RUN's ratios to each LIMIT (a run of the same load on a baseline) go into index.html
# and RESULTS.md
limit() {
  local run="$1" l; shift
  for l in "$@"; do echo "$run $l" >>"$OUT/limits.txt"; done
}

# compare BASELINE TITLE   every run (not searches) of this scenario side by side in $OUT/index.html, with
# the ratios declared by `limit` and links to every report
compare() {
  local runs=() links=() pairs=()
  local f a b
  for f in "$OUT"/*.json; do
    [[ "$f" == *.search.json ]] || runs+=("$f")
  done
  for f in "$OUT"/*.search.html; do
    [[ -e "$f" ]] && links+=("$f")
  done
  if [[ -f "$OUT/limits.txt" ]]; then
    while read -r a b; do pairs+=("$a=$b"); done <"$OUT/limits.txt"
  fi
  run_child "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.LoadGen compare --baseline "$1" --title "$2" \
    --out "$OUT/index.html" --limits "$(IFS=,; echo "${pairs[*]:-}")" --links "$(IFS=,; echo "${links[*]:-}")" \
    "${runs[@]}"
}

# need_kiln   builds the kiln distribution now if it is missing or stale (not while measuring)
need_kiln() {
  [[ -x "$ROOT/kiln" ]] || die "$ROOT/kiln not found or not executable"
  "$ROOT/kiln" --version >/dev/null || die "could not build or run ./kiln"
}

# start_kiln [kiln up options...]   ./kiln up on $KILN_PORT/$KILN_GRPC_PORT in the background, waiting until
# the gateway is ready
start_kiln() {
  need_kiln
  require_free_port "$KILN_PORT"
  require_free_port "$KILN_GRPC_PORT"
  start_bg kiln "$ROOT/kiln" up --port "$KILN_PORT" --grpc-port "$KILN_GRPC_PORT" "$@"
  wait_ready "http://127.0.0.1:$KILN_PORT" /v2/health/ready 300s
}

# start_bare   BareServer on $BARE_PORT: the HTTP limit (a fixed body, no work)
start_bare() {
  require_free_port "$BARE_PORT"
  start_bg bare-server "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.BareServer --port "$BARE_PORT" \
    --event-loops "$SERVER_EVENT_LOOPS"
  wait_ready "http://127.0.0.1:$BARE_PORT" / 60s
}

# need_pools_bench   compiles model-pools' benchmark mains and sets $PCP, their class path
need_pools_bench() {
  log "building model-pools benchmark classes"
  (cd "$ROOT" && ./mvnw -B -q -o -pl model-pools -am test-compile dependency:build-classpath \
    -Dmdep.outputFile="$ROOT/model-pools/target/bench.cp" >/dev/null)
  PCP="$ROOT/model-pools/target/test-classes:$ROOT/model-pools/target/classes:$ROOT/runtime/target/classes"
  PCP="$PCP:$(cat "$ROOT/model-pools/target/bench.cp")"
}

# direct_baseline [DirectBaseline options...]   the compute limit: in-process ModelRunner calls, written as
# run summaries $OUT/direct-b<batch>.json (run before the servers start, so it has the machine to itself)
direct_baseline() {
  local before f
  before=$(loadavg1)
  log "direct baseline: DirectBaseline $*"
  run_child "$JAVA" -Xmx1g -cp "$PCP" -Dai.djl.offline=true -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    io.kiln.pools.bench.DirectBaseline --out "$OUT" "$@" >"$OUT/direct.log" 2>&1 \
    || die "the direct baseline failed; see $OUT/direct.log"
  grep -v ' WARN ' "$OUT/direct.log" >&2 || true
  for f in "$OUT"/direct-b*.json; do meta "loadavg_before_$(basename "$f" .json)" "$before"; done
}

# ---------------------------------------------------------------- scenarios
# A scenario is a function scenario_NAME using the helpers above; `run.sh NAME` runs it. It may set
# `meta title ...` and `meta notes ...` for RESULTS.md.

# The HTTP limit: BareServer (fixed body, no work) against closed-loop load at concurrency 1, 16, 64.
# Generator and server share this machine's cores; no Kiln endpoint here can beat these numbers.
scenario_bare() {
  meta title "the HTTP limit: BareServer, closed loop at concurrency 1 / 16 / 64"
  start_bare
  local c
  for c in 1 16 64; do
    loadgen "bare-c$c" --url "http://127.0.0.1:$BARE_PORT" --model bare --mode closed --connections "$c"
  done
  compare bare-c1 "HTTP limit: BareServer, closed loop at concurrency 1 / 16 / 64"
}

# Kiln's own overhead: the gateway with a no-op model (builtin:identity, 2 workers) against the bare HTTP
# server, interleaved at each concurrency so both see the same machine; then binary tensors and gRPC at 16.
scenario_noop() {
  meta title "gateway with a no-op model vs the HTTP limit"
  meta notes "Kiln serves \`builtin:identity\` (deploy/examples/bench/noop.yaml: 2 workers, batches up to 8 without waiting); requests are one FP32 1×64 tensor. The limit is BareServer (Vert.x, 1 event loop, fixed body) measured in the same run, interleaved with the Kiln runs at each concurrency. Closed loop; the gRPC and binary runs are compared with the bare HTTP server too (there is no bare gRPC server)."
  need_kiln
  start_bare
  start_kiln --file "$EXAMPLES/noop.yaml"
  local c kiln="http://127.0.0.1:$KILN_PORT"
  for c in 1 16 64; do
    loadgen "bare-c$c" --url "http://127.0.0.1:$BARE_PORT" --model bare --mode closed --connections "$c"
    loadgen "noop-c$c" --url "$kiln" --model noop --mode closed --connections "$c"
    limit "noop-c$c" "bare-c$c"
  done
  loadgen noop-binary-c16 --url "$kiln" --model noop --protocol http-binary --mode closed --connections 16
  limit noop-binary-c16 bare-c16
  loadgen noop-grpc-c16 --url "http://127.0.0.1:$KILN_GRPC_PORT" --model noop --protocol grpc --mode closed --connections 16
  limit noop-grpc-c16 bare-c16
  compare bare-c16 "Kiln, no-op model, vs the HTTP limit (BareServer)"
}

# The tiny model (the quickstart's TorchScript MLP, 64 -> 256 -> 10) through Kiln, against both limits
# measured in this run: direct in-process ModelRunner calls (compute) and BareServer (HTTP); plus an
# open-loop max-throughput search for p99 under 50 ms.
scenario_tiny() {
  meta title "the tiny model (MLP) vs the HTTP and compute limits"
  meta notes "Kiln serves models/mlp (TorchScript 64→256→10) per deploy/examples/bench/tiny.yaml: 2 workers × 1 intra-op thread, batches up to 8 without waiting (the quickstart waits up to 2 ms for a fuller batch). Limits measured in the same run: direct-b1/direct-b8 are 2 threads calling ModelRunner.infer back to back in process (one runner each, as the 2 workers have) with 1 or 8 rows per call — rows/s there, so ratios to them are the share of the model's compute rate that survives HTTP; bare-cN is BareServer at the same concurrency, interleaved."
  need_kiln
  need_pools_bench
  direct_baseline --model mlp --dir "$ROOT/models/mlp" --callers 2 --threads 1 --batches 1,8 --seconds 5 --warmup 2
  start_bare
  start_kiln --file "$EXAMPLES/tiny.yaml"
  local c kiln="http://127.0.0.1:$KILN_PORT"
  for c in 1 16 64; do
    loadgen "bare-c$c" --url "http://127.0.0.1:$BARE_PORT" --model bare --mode closed --connections "$c"
    loadgen "tiny-c$c" --url "$kiln" --model mlp --mode closed --connections "$c"
    limit "tiny-c$c" "bare-c$c" direct-b8
  done
  loadgen tiny-binary-c16 --url "$kiln" --model mlp --protocol http-binary --mode closed --connections 16
  limit tiny-binary-c16 bare-c16 direct-b8
  loadgen tiny-grpc-c16 --url "http://127.0.0.1:$KILN_GRPC_PORT" --model mlp --protocol grpc --mode closed --connections 16
  limit tiny-grpc-c16 bare-c16 direct-b8
  search tiny-search --url "$kiln" --model mlp --mode open --connections 64 --p99-target-ms 50 \
    --start-rate 1000 --precision 0.1 --max-steps 8
  compare bare-c16 "Kiln, tiny model (MLP), vs the HTTP limit (BareServer) and the compute limit (direct calls)"
}

# A ResNet-class model: ResNet-18 for 3x64x64 images (a size this 2-core box serves at a useful rate; at
# 224x224 one image takes ~20 ms here), through Kiln with batching on at concurrency 1/8/32, against the
# compute limit measured first in this run: direct ModelRunner calls at batch 1/8/16 on as many threads as
# the deployment has workers.
scenario_resnet() {
  meta title "ResNet-18 (3×64×64) with batching vs the compute limit"
  meta notes "ResNet-18 at 64×64 (not 224×224: on 2 shared cores one 224×224 image takes ~20 ms, so runs would measure little but the queue). Kiln serves it per deploy/examples/bench/resnet.yaml: 2 workers with 1 intra-op thread each, batches up to 16, waiting at most 2 ms. The compute limit, measured first in the same run with the machine to itself: 2 threads, each with its own runner (1 intra-op thread), calling ModelRunner.infer back to back at batch 1, 8, 16 (direct-bN, images/s). Requests use the binary tensor extension (one 48 KiB image each); resnet-json-c8 shows the cost of JSON tensors."
  need_kiln
  need_pools_bench
  direct_baseline --model resnet18 --dir "$ROOT/models/resnet18-64" --image-size 64 --callers 2 --threads 1 --batches 1,8,16 --seconds 5 --warmup 2
  start_kiln --file "$EXAMPLES/resnet.yaml"
  local c kiln="http://127.0.0.1:$KILN_PORT"
  for c in 1 8 32; do
    loadgen "resnet-c$c" --url "$kiln" --model resnet18 --protocol http-binary --shape 1x3x64x64 --input-name image \
      --mode closed --connections "$c" --timeout 30s
    limit "resnet-c$c" direct-b1 direct-b8 direct-b16
  done
  loadgen resnet-json-c8 --url "$kiln" --model resnet18 --shape 1x3x64x64 --input-name image --mode closed \
    --connections 8 --timeout 30s
  limit resnet-json-c8 direct-b1 direct-b8 direct-b16
  compare direct-b16 "Kiln, ResNet-18 (3x64x64), batching on, vs the compute limit (direct batched calls)"
}

# start_node NAME INDEX [kiln start options...]   one node of the local cluster (ports: the bases + INDEX - 1)
start_node() {
  local name="$1" i="$2"; shift 2
  local http=$((CLUSTER_HTTP_BASE + i - 1)) grpc=$((CLUSTER_GRPC_BASE + i - 1)) cport=$((CLUSTER_PORT_BASE + i - 1))
  require_free_port "$http"; require_free_port "$grpc"; require_free_port "$cport"
  KILN_NODES=1
  log "starting node $name: HTTP $http, gRPC $grpc, cluster $cport"
  "$ROOT/kiln" start --node-id "$name" --port "$http" --grpc-port "$grpc" --cluster-port "$cport" \
    --cluster-name "kiln-bench" "$@" >>"$OUT/cluster-start.log" 2>&1 || die "node $name did not start; see $OUT/cluster-start.log"
}

# wait_pools DEPLOYMENT N   until the management API reports N ready pools of DEPLOYMENT (180 s at most)
wait_pools() {
  local url="http://127.0.0.1:$CLUSTER_HTTP_BASE/api/v1/status" end=$((SECONDS + 180)) n
  while ((SECONDS < end)); do
    n=$(curl -sf "$url" | jq --arg d "$1" '[.deployments[] | select(.name == $d) | .pools[] | select(.ready)] | length' \
      2>/dev/null || echo 0)
    [[ "$n" -ge "$2" ]] && return 0
    sleep 1
  done
  mkdir -p "$OUT/cluster"
  curl -s "$url" >"$OUT/cluster/status-timeout.json" || true
  die "$1 did not get $2 ready pools within 180 s; status in $OUT/cluster/status-timeout.json"
}

# Three Kiln nodes on loopback (`kiln start --head` + 2 x `--address`), the tiny model on every node, load
# through the head's gateway: unpinned (the gateway keeps requests on its own node's pool while it has room)
# and pinned to another node (parameter node_id: every request crosses the clustered event bus and back).
scenario_cluster() {
  meta title "3-node loopback cluster, tiny model on every node"
  meta notes "Three Kiln JVMs on this one machine (kiln start --head, then 2 × kiln start --address), deploy/examples/bench/tiny-cluster.yaml (1 worker per node), load through node 1's gateway. cluster-cN: unpinned — the router keeps a request on the local pool while it has room, so this is the local path with a cluster around it. cluster-pinned-cN: every request carries node_id of node 2, so it crosses the clustered Vert.x event bus (TCP over loopback) to node 2's pool and back. The limit is BareServer in the same run. Three JVMs, the generator and the bare server share the same 2 cores, so this measures overhead, not scale-out."
  need_kiln
  start_bare
  start_node bench-n1 1 --head
  start_node bench-n2 2 --address "127.0.0.1:$CLUSTER_PORT_BASE"
  start_node bench-n3 3 --address "127.0.0.1:$CLUSTER_PORT_BASE"
  "$ROOT/kiln" deploy "$EXAMPLES/tiny-cluster.yaml" --address "http://127.0.0.1:$CLUSTER_HTTP_BASE" \
    >"$OUT/deploy.log" 2>&1 || die "deploy failed; see $OUT/deploy.log"
  local i
  for i in 1 2 3; do
    wait_ready "http://127.0.0.1:$((CLUSTER_HTTP_BASE + i - 1))" /v2/models/mlp/ready 180s
  done
  wait_pools mlp 3
  # Not beside the run summaries: `compare` and RESULTS.md read every *.json there.
  mkdir -p "$OUT/cluster"
  curl -s "http://127.0.0.1:$CLUSTER_HTTP_BASE/api/v1/status" >"$OUT/cluster/status.json" || true
  tensor_request "$OUT/cluster/request.json" ''
  tensor_request "$OUT/cluster/request-pinned.json" '"parameters": {"node_id": "bench-n2"}, '
  local c gw="http://127.0.0.1:$CLUSTER_HTTP_BASE"
  for c in 16 64; do
    loadgen "bare-c$c" --url "http://127.0.0.1:$BARE_PORT" --model bare --mode closed --connections "$c"
    loadgen "cluster-c$c" --url "$gw" --model mlp --request "$OUT/cluster/request.json" --mode closed --connections "$c"
    loadgen "cluster-pinned-c$c" --url "$gw" --model mlp --request "$OUT/cluster/request-pinned.json" --mode closed --connections "$c"
    limit "cluster-c$c" "bare-c$c"
    limit "cluster-pinned-c$c" "bare-c$c" "cluster-c$c"
  done
  # Evidence of where requests went: routes taken by node 1's gateway, requests served by each node's pool.
  for i in 1 2 3; do
    curl -s "http://127.0.0.1:$((CLUSTER_HTTP_BASE + i - 1))/metrics" | grep -E '^kiln_(gateway_routes|pool_requests|pool_batch_size_(count|sum))' \
      >"$OUT/cluster/metrics-bench-n$i.txt" || true
  done
  "$ROOT/kiln" stop >>"$OUT/kiln-stop.log" 2>&1 || log "kiln stop failed; see $OUT/kiln-stop.log"
  KILN_NODES=0
  for i in 1 2 3; do cp "$ROOT/.kiln/logs/bench-n$i.log" "$OUT/cluster/" 2>/dev/null || true; done
  compare bare-c16 "3-node loopback cluster, tiny model, through one gateway: unpinned and pinned to another node"
}

# tensor_request FILE PREFIX   an OIP v2 JSON request with one FP32 1x64 tensor; PREFIX goes before "inputs"
tensor_request() {
  local data
  data=$(awk 'BEGIN { for (i = 0; i < 64; i++) printf "%s%.4f", (i ? ", " : ""), (i % 17) / 17 - 0.5 }')
  printf '{%s"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 64], "data": [%s]}]}\n' "$2" "$data" >"$1"
}

# ---------------------------------------------------------------- main

scenarios() { declare -F | awk '{print $3}' | sed -n 's/^scenario_//p' | tr '\n' ' '; }

[[ $# -ge 1 ]] || die "usage: run.sh SCENARIO [LoadGen options...]; scenarios: $(scenarios)"
SCENARIO="$1"; shift
EXTRA=("$@")
declare -F "scenario_$SCENARIO" >/dev/null || die "unknown scenario '$SCENARIO'; scenarios: $(scenarios)"

new_results_dir "$SCENARIO"
build
meta_start "$SCENARIO" "DURATION=$DURATION WARMUP=$WARMUP loadtest/run.sh $SCENARIO${EXTRA[*]:+ ${EXTRA[*]}}"
wait_for_quiet
"scenario_$SCENARIO"
cleanup
meta_end
log "results: $OUT (open $OUT/index.html); loadtest/results-md.sh updates RESULTS.md"
