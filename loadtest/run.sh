#!/usr/bin/env bash
# Benchmark scenarios for Kiln, one command each from a fresh clone (also `./kiln bench SCENARIO`).
# Usage: loadtest/run.sh SCENARIO [extra LoadGen options...]   |   loadtest/run.sh --list | --help | --classpath
#   loadtest/run.sh noop                      # Kiln with a no-op model vs the bare HTTP server, 3 interleaved rounds
#   DURATION=5s WARMUP=1s loadtest/run.sh bare --event-loops 1
#   loadtest/run.sh pinned                    # wrk and servers pinned to their own CPU, warmed until flat, Kiln and
#                                             # the bare servers alternating in 3 rounds; summary.md + index.html
# Builds what the scenario needs (the load generator, lib.sh's loadtest_build; ./kiln builds itself), waits (bounded)
# for a quiet machine, starts the servers, runs the load, stops everything on exit (also on Ctrl-C or failure), and
# writes JSON + HTML, meta.txt (machine, command, commit, load averages) and index.html (Kiln and its limits side by
# side, with ratios) into loadtest/results/<scenario>-<time>/ (LOADTEST_RESULTS=DIR: elsewhere).
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
# Rounds of the interleaved scenarios (noop, tiny): each round measures Kiln and then its limit at every concurrency.
# RESULTS.md gives no verdict from fewer than 3.
ROUNDS="${ROUNDS:-3}"
BARE_PORT="${BARE_PORT:-8090}"
SERVER_EVENT_LOOPS="${SERVER_EVENT_LOOPS:-1}"
KILN_PORT="${KILN_PORT:-8000}"
KILN_GRPC_PORT="${KILN_GRPC_PORT:-8001}"
# The cluster scenario's three nodes: HTTP, gRPC and cluster ports of node i are the base + i - 1.
CLUSTER_HTTP_BASE="${CLUSTER_HTTP_BASE:-8100}"
CLUSTER_GRPC_BASE="${CLUSTER_GRPC_BASE:-8110}"
CLUSTER_PORT_BASE="${CLUSTER_PORT_BASE:-5801}"
BARE_GRPC_PORT="${BARE_GRPC_PORT:-8091}"
EXAMPLES="$ROOT/deploy/examples/bench"
JAVA="${JAVA:-java}"
JAVA_OPTS="${JAVA_OPTS:--Xmx512m}"
# The launcher of the Kiln under test (it builds the distribution when stale); loadtest/pinned-dry-run.sh puts a stand-in here.
KILN="${KILN:-$ROOT/kiln}"

die() { echo "run.sh: $*" >&2; exit 1; }
log() { echo "[run.sh] $*" >&2; }

# ---------------------------------------------------------------- helpers for scenarios

PIDS=()
declare -A BG_PID=()
CHILD=""
KILN_NODES=0
# Commands that put a process on a CPU (e.g. taskset -c 1); empty: unpinned. The pinned scenario sets them.
SERVER_PIN=()
CLIENT_PIN=()
# Every background process runs in its own session, so stopping it also stops anything it started
# (e.g. the JVMs that ./kiln up forks). Nodes started with `kiln start` run detached: `kiln stop` ends them.
cleanup() {
  local pid
  [[ -z "$CHILD" ]] || kill -TERM "$CHILD" 2>/dev/null || true
  if declare -F llm_cleanup >/dev/null; then llm_cleanup; fi
  if [[ "$KILN_NODES" == 1 ]]; then
    "$KILN" stop >>"$OUT/kiln-stop.log" 2>&1 || log "kiln stop failed; see $OUT/kiln-stop.log"
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

# build   the load generator (lib.sh: skipped when up to date; SKIP_BUILD=1, LOADTEST_BUILD=module); sets CP
build() {
  loadtest_build || die "could not build the load generator"
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
  BG_PID[$name]=$!
}

# stop_bg NAME   stops what start_bg NAME started (and its children) now, waiting at most 10 s before SIGKILL
stop_bg() {
  local pid="${BG_PID[$1]:-}" p rest=()
  [[ -n "$pid" ]] || die "stop_bg: nothing named $1 was started"
  log "stopping $1"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for p in "${PIDS[@]}"; do [[ "$p" == "$pid" ]] || rest+=("$p"); done
  PIDS=("${rest[@]}")
  unset "BG_PID[$1]"
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

# The pinned scenario writes each round's measurements into its own folder, $LEAF (round-N/TARGET); elsewhere LEAF
# is empty and everything goes to $OUT.
LEAF=""
run_dir() { echo "${LEAF:-$OUT}"; }

# mark NAME   NAME's measured run begins now: in a round, its start time and the 1-minute load go to $LEAF/round.txt
# (RESULTS.md checks from the start times that the limit and Kiln alternated round by round); otherwise the load
# goes to meta.txt
mark() {
  if [[ -n "$LEAF" ]]; then
    printf 'start.%s=%s\nload.%s=%s\n' "$1" "$(date +%s.%N)" "$1" "$(loadavg1)" >>"$LEAF/round.txt"
  else
    meta "loadavg_before_$1" "$(loadavg1)"
  fi
}

# loadgen NAME [LoadGen options...]   one measured run, written to $OUT/NAME.json and .html (in a round: $LEAF/)
loadgen() {
  local name="$1"; shift
  mark "$name"
  run_child "${CLIENT_PIN[@]}" "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.LoadGen --name "$name" \
    --out "$(run_dir)/$name.json" --warmup "$WARMUP" --duration "$DURATION" "$@" "${EXTRA[@]}"
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
  [[ -x "$KILN" ]] || die "$KILN not found or not executable"
  "$KILN" --version >/dev/null || die "could not build or run $KILN"
}

# launch_kiln [kiln up options...]   ./kiln up on $KILN_PORT/$KILN_GRPC_PORT in the background (prefixed by
# $SERVER_PIN; the kiln script execs java, so the affinity sticks), without waiting; its name for start_bg/stop_bg
# (and its log, $OUT/NAME.log) is $KILN_BG
KILN_BG=kiln
launch_kiln() {
  need_kiln
  require_free_port "$KILN_PORT"
  require_free_port "$KILN_GRPC_PORT"
  start_bg "$KILN_BG" "${SERVER_PIN[@]}" "$KILN" up --port "$KILN_PORT" --grpc-port "$KILN_GRPC_PORT" "$@"
}

# start_kiln [kiln up options...]   launch_kiln, then wait until the gateway is ready
start_kiln() {
  # Strict readiness: /v2/health/ready waits for every deployment to serve, so no measurement starts on a
  # model still loading (by default a node is ready whatever its deployments' state).
  KILN_STRICT_READINESS=true launch_kiln "$@"
  wait_ready "http://127.0.0.1:$KILN_PORT" /v2/health/ready 300s
}

# start_bare [BareServer options...]   BareServer on $BARE_PORT: the HTTP limit (by default a fixed body, no
# work; --work oip for the OIP JSON work)
start_bare() {
  require_free_port "$BARE_PORT"
  start_bg bare-server "${SERVER_PIN[@]}" "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.BareServer --port "$BARE_PORT" \
    --event-loops "$SERVER_EVENT_LOOPS" "$@"
  wait_ready "http://127.0.0.1:$BARE_PORT" / 60s
}

# need_pools_bench   compiles the pool benchmark mains (kiln-engine-pytorch's tests) and sets $PCP, their class path
need_pools_bench() {
  log "building the pool benchmark classes"
  mvn_quiet -pl engines/pytorch -am test-compile dependency:build-classpath \
    -Dmdep.outputFile="$ROOT/engines/pytorch/target/bench.cp" >/dev/null || die "could not build the pool benchmarks"
  PCP="$ROOT/engines/pytorch/target/test-classes:$ROOT/engines/pytorch/target/classes"
  PCP="$PCP:$ROOT/model-pools/target/test-classes:$ROOT/model-pools/target/classes:$ROOT/runtime/target/classes"
  PCP="$PCP:$(cat "$ROOT/engines/pytorch/target/bench.cp")"
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
# server, in $ROUNDS rounds: in each, at each concurrency, Kiln then the bare server, so both see the same machine;
# then binary tensors and gRPC at 16. Run NAME of round N is NAME.rN.
scenario_noop() {
  meta title "gateway with a no-op model vs the HTTP limit"
  meta notes "Kiln serves \`builtin:identity\` (deploy/examples/bench/noop.yaml: 2 workers, batches up to 8 without waiting); requests are one FP32 1×64 tensor. The limit is BareServer (Vert.x, 1 event loop, fixed body), measured again in each of $ROUNDS rounds right after Kiln at each concurrency (run NAME.rN is round N). Closed loop; the gRPC and binary runs are compared with the bare HTTP server too (there is no bare gRPC server)."
  meta rounds "$ROUNDS"
  need_kiln
  start_bare
  start_kiln --file "$EXAMPLES/noop.yaml"
  local r c kiln="http://127.0.0.1:$KILN_PORT"
  for ((r = 1; r <= ROUNDS; r++)); do
    for c in 1 16 64; do
      loadgen "noop-c$c.r$r" --url "$kiln" --model noop --mode closed --connections "$c"
      loadgen "bare-c$c.r$r" --url "http://127.0.0.1:$BARE_PORT" --model bare --mode closed --connections "$c"
      limit "noop-c$c.r$r" "bare-c$c.r$r"
    done
    loadgen "noop-binary-c16.r$r" --url "$kiln" --model noop --protocol http-binary --mode closed --connections 16
    limit "noop-binary-c16.r$r" "bare-c16.r$r"
    loadgen "noop-grpc-c16.r$r" --url "http://127.0.0.1:$KILN_GRPC_PORT" --model noop --protocol grpc --mode closed \
      --connections 16
    limit "noop-grpc-c16.r$r" "bare-c16.r$r"
  done
  compare bare-c16.r1 "Kiln, no-op model, vs the HTTP limit (BareServer), $ROUNDS interleaved rounds"
}

# The tiny model (the quickstart's TorchScript MLP, 64 -> 256 -> 10) through Kiln, against both limits
# measured in this run: direct in-process ModelRunner calls (compute) and BareServer (HTTP); plus an
# open-loop max-throughput search for p99 under 50 ms.
scenario_tiny() {
  meta title "the tiny model (MLP) vs the HTTP and compute limits"
  meta notes "Kiln serves models/mlp (TorchScript 64→256→10) per deploy/examples/bench/tiny.yaml: 2 workers × 1 intra-op thread, batches up to 8 without waiting (the quickstart waits up to 2 ms for a fuller batch). Limits measured in the same run: direct-b1/direct-b8 are 2 threads calling ModelRunner.infer back to back in process (one runner each, as the 2 workers have) with 1 or 8 rows per call — rows/s there, so ratios to them are the share of the model's compute rate that survives HTTP; bare-cN.rR is BareServer at the same concurrency, measured right after Kiln in each of $ROUNDS rounds (run NAME.rR is round R)."
  need_kiln
  need_pools_bench
  direct_baseline --model mlp --dir "$ROOT/models/mlp" --callers 2 --threads 1 --batches 1,8 --seconds 5 --warmup 2
  meta rounds "$ROUNDS"
  start_bare
  start_kiln --file "$EXAMPLES/tiny.yaml"
  local r c kiln="http://127.0.0.1:$KILN_PORT"
  for ((r = 1; r <= ROUNDS; r++)); do
    for c in 1 16 64; do
      loadgen "tiny-c$c.r$r" --url "$kiln" --model mlp --mode closed --connections "$c"
      loadgen "bare-c$c.r$r" --url "http://127.0.0.1:$BARE_PORT" --model bare --mode closed --connections "$c"
      limit "tiny-c$c.r$r" "bare-c$c.r$r" direct-b8
    done
    loadgen "tiny-binary-c16.r$r" --url "$kiln" --model mlp --protocol http-binary --mode closed --connections 16
    limit "tiny-binary-c16.r$r" "bare-c16.r$r" direct-b8
    loadgen "tiny-grpc-c16.r$r" --url "http://127.0.0.1:$KILN_GRPC_PORT" --model mlp --protocol grpc --mode closed \
      --connections 16
    limit "tiny-grpc-c16.r$r" "bare-c16.r$r" direct-b8
  done
  search tiny-search --url "$kiln" --model mlp --mode open --connections 64 --p99-target-ms 50 \
    --start-rate 1000 --precision 0.1 --max-steps 8
  compare bare-c16.r1 "Kiln, tiny model (MLP), vs the HTTP limit (BareServer) and the compute limit (direct calls)"
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
  "$KILN" start --node-id "$name" --port "$http" --grpc-port "$grpc" --cluster-port "$cport" \
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
  "$KILN" deploy "$EXAMPLES/tiny-cluster.yaml" --address "http://127.0.0.1:$CLUSTER_HTTP_BASE" \
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
  "$KILN" stop >>"$OUT/kiln-stop.log" 2>&1 || log "kiln stop failed; see $OUT/kiln-stop.log"
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

# ---------------------------------------------------------------- the pinned scenario
# Measured like a peer would: wrk (1 thread) pinned to CLIENT_CPU against servers pinned to SERVER_CPU, every one
# warmed until throughput is flat, and the limits measured in the same rounds: BareServer --work oip (the same OIP
# JSON parse + encode, nothing behind it) and BareGrpcServer (the same protobuf work). The limits stay up for the
# whole run, beside Kiln on SERVER_CPU (idle while Kiln is loaded, and Kiln idle while they are), so that every round
# measures them again right after Kiln: per round and Kiln model, a fresh node (cold run), then at each concurrency
# Kiln and then the bare server, and so on for binary tensors and gRPC. Round N of model M goes to round-N/M/.

SERVER_CPU="${SERVER_CPU:-1}"
CLIENT_CPU="${CLIENT_CPU:-0}"
# Warm until two consecutive rounds (wrk or LoadGen at c16) differ by less than WARM_FLAT_PCT %, at most
# WARM_ROUNDS_MAX rounds of WARM_ROUND each.
WARM_ROUND="${WARM_ROUND:-5s}"
WARM_ROUNDS_MAX="${WARM_ROUNDS_MAX:-8}"
WARM_FLAT_PCT="${WARM_FLAT_PCT:-3}"
COLD_DURATION="${COLD_DURATION:-5s}"
# The warm-up budget of the pinned Kiln nodes: 40 s is what `kiln start` (a production node) uses by default;
# `kiln up` alone uses 10 s.
PINNED_WARMUP_SECONDS="${PINNED_WARMUP_SECONDS:-40}"
# What the Kiln node advertises: noop.yaml and tiny.yaml ask for 2 workers x 1 CPU, and a JVM pinned to one
# core would otherwise advertise 1 and place only one worker. Both workers then share SERVER_CPU.
KILN_CPUS="${KILN_CPUS:-2}"
# Which target groups to measure (a reduced run: e.g. PINNED_TARGETS="bare identity").
PINNED_TARGETS="${PINNED_TARGETS:-bare bare-grpc identity mlp}"
# Rounds: RESULTS.md gives no verdict from fewer than 3 (each round starts every Kiln model afresh: ~4 min a model).
PINNED_ROUNDS="${PINNED_ROUNDS:-3}"
PINNED_BARE=0
PINNED_BARE_GRPC=0

# need_pinning   wrk (installed with apt-get when root), taskset, curl, and two distinct usable CPUs
need_pinning() {
  if ! command -v wrk >/dev/null; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
      log "installing wrk (apt-get install -y wrk)"
      apt-get install -y wrk >"$OUT/apt-wrk.log" 2>&1 || { apt-get update >>"$OUT/apt-wrk.log" 2>&1 && \
        apt-get install -y wrk >>"$OUT/apt-wrk.log" 2>&1; } || die "could not install wrk; see $OUT/apt-wrk.log"
    else
      die "wrk is not installed: install the package 'wrk' (e.g. sudo apt-get install wrk) and run again"
    fi
  fi
  if ! command -v h2load >/dev/null || ! command -v nghttp >/dev/null; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
      log "installing h2load and nghttp (apt-get install -y nghttp2-client)"
      apt-get install -y nghttp2-client >"$OUT/apt-nghttp2.log" 2>&1 || { apt-get update >>"$OUT/apt-nghttp2.log" 2>&1 && \
        apt-get install -y nghttp2-client >>"$OUT/apt-nghttp2.log" 2>&1; } \
        || die "could not install nghttp2-client; see $OUT/apt-nghttp2.log"
    else
      die "h2load is not installed: install the package 'nghttp2-client' and run again"
    fi
  fi
  command -v taskset >/dev/null || die "taskset is not installed (package util-linux)"
  command -v curl >/dev/null || die "curl is not installed (package curl)"
  [[ "$(nproc)" -ge 2 ]] || die "the pinned scenario needs at least 2 CPUs (one for the server, one for the client); nproc says $(nproc)"
  [[ "$SERVER_CPU" != "$CLIENT_CPU" ]] || die "SERVER_CPU and CLIENT_CPU must differ (both are $SERVER_CPU)"
  local c
  for c in "$SERVER_CPU" "$CLIENT_CPU"; do
    taskset -c "$c" true 2>/dev/null || die "cannot pin to CPU $c (taskset -c $c failed); CPUs allowed here: $(taskset -cp $$ | sed 's/.*: //')"
  done
}

# wrk_to FILE SCRIPT URL CONNECTIONS DURATION   one wrk run pinned to $CLIENT_CPU; sets WRK_RPS
wrk_to() {
  local f="$1" script="$LT/wrk/$2.lua" url="$3" c="$4" d="$5"
  run_child taskset -c "$CLIENT_CPU" wrk -t1 -c"$c" -d"$d" --latency -s "$script" "$url" >"$f" 2>&1 \
    || die "wrk failed ($url, c$c); see $f"
  WRK_RPS=$(awk '/^Requests\/sec:/ {print $2}' "$f")
  [[ -n "$WRK_RPS" ]] || die "wrk printed no Requests/sec; see $f"
  if awk -v r="$WRK_RPS" 'BEGIN { exit !(r + 0 == 0) }'; then
    log "WARNING: no request answered in $d ($url, c$c; see $f): the summary does not judge this run"
  fi
  if grep -q 'Non-2xx or 3xx responses' "$f"; then
    log "WARNING: $(grep 'Non-2xx or 3xx' "$f" | sed 's/^ *//') in $f (the summary does not judge this run)"
  fi
}

# measure_wrk NAME SCRIPT URL CONNECTIONS   a measured wrk run of $DURATION -> $LEAF/NAME.wrk.txt (or $OUT/)
measure_wrk() {
  mark "$1"
  wrk_to "$(run_dir)/$1.wrk.txt" "$2" "$3" "$4" "$DURATION"
  log "${LEAF:+${LEAF#"$OUT"/}: }$1: $WRK_RPS req/s"
}

# wrk_round TARGET ROUND SCRIPT URL   one warm-up round: wrk at c16 for $WARM_ROUND; sets ROUND_RPS
wrk_round() {
  wrk_to "$(run_dir)/warm/$1-$2.wrk.txt" "$3" "$4" 16 "$WARM_ROUND"
  ROUND_RPS="$WRK_RPS"
}

# grpc_body MODEL   $OUT/MODEL.grpc.bin: the framed ModelInferRequest h2load posts, from the same tensor as
# tensor_request (and the wrk scripts); sets GRPC_BODY
grpc_body() {
  [[ -f "$OUT/request.json" ]] || tensor_request "$OUT/request.json" ''
  GRPC_BODY="$OUT/$1.grpc.bin"
  run_child "$JAVA" -cp "$CP" io.kiln.loadtest.GrpcRequestFile --request "$OUT/request.json" --model "$1" \
    --out "$GRPC_BODY" || die "could not write $GRPC_BODY"
}

# measure_h2load NAME URL MODEL   gRPC ModelInfer with h2load pinned to $CLIENT_CPU: one thread, one connection,
# 16 concurrent streams, 2 s of its own warm-up, then $DURATION -> $OUT/NAME.h2load.txt. One call first through
# nghttp must end with grpc-status 0 (h2load itself only sees the HTTP status, which gRPC errors leave at 200).
measure_h2load() {
  local name="$1" path="$2/inference.GRPCInferenceService/ModelInfer" f check
  f="$(run_dir)/$1.h2load.txt" check="$(run_dir)/$1.check.txt"
  grpc_body "$3"
  nghttp -v -d "$GRPC_BODY" -H 'content-type: application/grpc' -H 'te: trailers' "$path" >"$check" 2>&1 || true
  grep -aq 'grpc-status: 0' "$check" || die "$name: a single ModelInfer call did not end with grpc-status 0; see $check"
  mark "$name"
  run_child taskset -c "$CLIENT_CPU" h2load -t1 -c1 -m16 --warm-up-time=2 -D "${DURATION%s}" -d "$GRPC_BODY" \
    -H 'content-type: application/grpc' -H 'te: trailers' "$path" >"$f" 2>&1 || die "h2load failed ($path); see $f"
  log "$name: $(awk '/^finished in/ {print $4, $5}' "$f" | tr -d ,)"
}

# warm_grpc TARGET URL MODEL   the same rule for gRPC: `LoadGen warm` runs the rounds (c16, $WARM_ROUND each)
# in one JVM, so the client warms up along with the server; the rounds go to $OUT/TARGET.warm.txt
warm_grpc() {
  local d f
  d="$(run_dir)" f="$(run_dir)/warm/$1.loadgen.txt"
  mkdir -p "$d/warm"
  run_child "${CLIENT_PIN[@]}" "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.LoadGen warm --url "$2" --model "$3" \
    --protocol grpc --mode closed --connections 16 --event-loops 1 --warmup 1s --round "$WARM_ROUND" \
    --max-rounds "$WARM_ROUNDS_MAX" --flat-pct "$WARM_FLAT_PCT" --quiet --record "$d/$1.warm.txt" >"$f" 2>&1 \
    || die "LoadGen warm failed ($2); see $f"
  log "warm-up $1: req/s per round: $(sed -n 's/^round [0-9]*: \([0-9.]*\) req.*/\1/p' "$f" | tr '\n' ' ')-> $(tail -1 "$f")"
}

# warm_until_flat TARGET ROUND_FUNCTION ARGS...   rounds until two consecutive ones differ by < $WARM_FLAT_PCT %
# (at most $WARM_ROUNDS_MAX); the rounds and the outcome go to $OUT/TARGET.warm.txt
warm_until_flat() {
  local target="$1" fn="$2" f prev="" i flat=no rounds=""
  f="$(run_dir)/$1.warm.txt"
  shift 2
  mkdir -p "$(run_dir)/warm"
  : >"$f"
  for ((i = 1; i <= WARM_ROUNDS_MAX; i++)); do
    "$fn" "$target" "$i" "$@"
    echo "round $i $ROUND_RPS" >>"$f"
    rounds="$rounds $ROUND_RPS"
    if [[ -n "$prev" ]] && awk -v a="$prev" -v b="$ROUND_RPS" -v p="$WARM_FLAT_PCT" \
        'BEGIN { d = a > 0 ? (b - a) / a * 100 : 100; if (d < 0) d = -d; exit !(d < p) }'; then
      flat=yes
      break
    fi
    prev="$ROUND_RPS"
  done
  echo "flat $flat" >>"$f"
  log "warm-up $target: req/s per round:$rounds -> $([[ $flat == yes ]] && echo flat || echo "NOT flat after $WARM_ROUNDS_MAX rounds")"
}

# wait_port PORT [TIMEOUT_S]   until something listens on 127.0.0.1:PORT
wait_port() {
  local end=$((SECONDS + ${2:-60}))
  while ((SECONDS < end)); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  die "nothing listens on 127.0.0.1:$1 after ${2:-60} s; see the logs in $OUT"
}

# poll_ready URL TIMEOUT_S   GET URL every 50 ms until it answers 200; sets READY_S, the seconds it took
poll_ready() {
  local start="$EPOCHREALTIME" end=$((SECONDS + $2)) code
  while ((SECONDS < end)); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$1" 2>/dev/null || true)
    if [[ "$code" == 200 ]]; then
      READY_S=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
      return 0
    fi
    sleep 0.05
  done
  die "$1 did not answer 200 within $2 s; see $OUT/$KILN_BG.log"
}

# pinned_start_bare   the HTTP limit: BareServer --work oip, started once and warmed until flat (up for the whole run)
pinned_start_bare() {
  start_bare --work oip
  warm_until_flat bare-json wrk_round oip-json "http://127.0.0.1:$BARE_PORT/v2/models/bare/infer"
}

# pinned_start_bare_grpc   the gRPC limit: BareGrpcServer, started once and warmed until flat (LoadGen gRPC at c16)
pinned_start_bare_grpc() {
  require_free_port "$BARE_GRPC_PORT"
  start_bg bare-grpc-server "${SERVER_PIN[@]}" "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.BareGrpcServer \
    --port "$BARE_GRPC_PORT" --event-loops "$SERVER_EVENT_LOOPS"
  wait_port "$BARE_GRPC_PORT" 60
  warm_grpc bare-grpc "http://127.0.0.1:$BARE_GRPC_PORT" bare
}

# pinned_bare_json C [MODEL]   the HTTP limit at concurrency C, in this round (right after Kiln's run at C); MODEL
# echo answers the whole input as builtin:identity does, any other (default bare) 10 floats as the MLP does
pinned_bare_json() {
  ((PINNED_BARE)) || return 0
  measure_wrk "bare-json-c$1" oip-json "http://127.0.0.1:$BARE_PORT/v2/models/${2:-bare}/infer" "$1"
}

# pinned_bare_grpc_h2load, pinned_bare_grpc_loadgen [MODEL]   the gRPC limit at c16, in this round, with each client
pinned_bare_grpc_h2load() {
  ((PINNED_BARE_GRPC)) || return 0
  measure_h2load bare-grpc-h2load-c16 "http://127.0.0.1:$BARE_GRPC_PORT" "${1:-bare}"
}
pinned_bare_grpc_loadgen() {
  ((PINNED_BARE_GRPC)) || return 0
  loadgen bare-grpc-c16 --url "http://127.0.0.1:$BARE_GRPC_PORT" --model "${1:-bare}" --protocol grpc --mode closed \
    --connections 16 --event-loops 1
}

# pinned_round ROUND TARGET MODEL YAML BARE   one round of one Kiln model, into round-ROUND/TARGET/: a fresh node (the
# cold start: wrk c16 right after the model is ready), warmed until flat, then JSON at c1/c16/c64 each followed by the
# bare server at the same concurrency, binary tensors at c16, gRPC at c16 with h2load (Kiln, then bare) and with
# LoadGen (Kiln, then bare); the bare servers answer as model BARE (echo: the whole input, as identity does; bare: 10
# floats, as the MLP does), so that both sides encode the same answer
pinned_round() {
  local r="$1" target="$2" model="$3" yaml="$4" bare="$5" c
  local url="http://127.0.0.1:$KILN_PORT/v2/models/$model/infer" grpc="http://127.0.0.1:$KILN_GRPC_PORT"
  LEAF="$OUT/round-$r/$target"
  mkdir -p "$LEAF"
  KILN_BG="kiln-$target-r$r"
  launch_kiln --file "$yaml" --cpus "$KILN_CPUS" --warmup-seconds "$PINNED_WARMUP_SECONDS"
  poll_ready "http://127.0.0.1:$KILN_PORT/v2/models/$model/ready" 300
  echo "ready_s=$READY_S" >>"$LEAF/round.txt"
  log "round $r, $target: ready after $READY_S s; cold run"
  mark "$target-cold-c16"
  wrk_to "$LEAF/$target-cold-c16.wrk.txt" oip-json "$url" 16 "$COLD_DURATION"
  log "round $r, $target-cold-c16: $WRK_RPS req/s"
  warm_until_flat "$target-json" wrk_round oip-json "$url"
  for c in 1 16 64; do
    measure_wrk "$target-json-c$c" oip-json "$url" "$c"
    pinned_bare_json "$c" "$bare"
  done
  warm_until_flat "$target-binary" wrk_round oip-binary "$url"
  measure_wrk "$target-binary-c16" oip-binary "$url" 16
  warm_grpc "$target-grpc" "$grpc" "$model"
  measure_h2load "$target-grpc-h2load-c16" "$grpc" "$model"
  pinned_bare_grpc_h2load "$bare"
  loadgen "$target-grpc-c16" --url "$grpc" --model "$model" --protocol grpc --mode closed --connections 16 --event-loops 1
  pinned_bare_grpc_loadgen "$bare"
  stop_bg "$KILN_BG"
  KILN_BG=kiln
  LEAF=""
}

# pinned_limits_round ROUND   a round of the limits alone (PINNED_TARGETS without a Kiln model), into round-ROUND/limits/
pinned_limits_round() {
  local c
  LEAF="$OUT/round-$1/limits"
  mkdir -p "$LEAF"
  for c in 1 16 64; do pinned_bare_json "$c"; done
  pinned_bare_grpc_h2load
  pinned_bare_grpc_loadgen
  LEAF=""
}

# The request path against the hardware limit, measured like a peer would (see loadtest/README.md), in
# $PINNED_ROUNDS rounds with the limits measured again next to Kiln in each: summary.md and index.html hold every
# target and the issue's ratios per round, with median, range and verdict.
scenario_pinned() {
  meta title "the request path at the hardware limit: pinned wrk vs pinned servers, warmed until flat, $PINNED_ROUNDS interleaved rounds"
  meta notes "Servers pinned to CPU $SERVER_CPU (taskset), wrk -t1 / h2load / LoadGen pinned to CPU $CLIENT_CPU. Limits: BareServer --work oip (Vert.x, 1 event loop, Jackson streaming OIP JSON parse + encode) and BareGrpcServer (vertx-grpc-server, the same protobuf work), up for the whole run beside Kiln and measured again in every round right after Kiln, answering as the Kiln model of the round does: after identity as model echo (the whole 1×64 input back), after the MLP with 10 floats. Kiln: noop.yaml (builtin:identity) and tiny.yaml (MLP), each started fresh in every round (cold start: wrk c16 for $COLD_DURATION right after /v2/models/M/ready), node advertising --cpus $KILN_CPUS. See summary.md and index.html."
  need_pinning
  SERVER_PIN=(taskset -c "$SERVER_CPU")
  CLIENT_PIN=(taskset -c "$CLIENT_CPU")
  meta command "DURATION=$DURATION WARMUP=$WARMUP WARM_ROUND=$WARM_ROUND WARM_ROUNDS_MAX=$WARM_ROUNDS_MAX SERVER_CPU=$SERVER_CPU CLIENT_CPU=$CLIENT_CPU PINNED_ROUNDS=$PINNED_ROUNDS PINNED_TARGETS=\"$PINNED_TARGETS\" loadtest/run.sh pinned${EXTRA[*]:+ ${EXTRA[*]}}"
  meta server_cpu "$SERVER_CPU"
  meta client_cpu "$CLIENT_CPU"
  meta wrk "$(wrk -v 2>&1 | head -1 | sed 's/ Copyright.*//')"
  meta duration "$DURATION per measured run (LoadGen gRPC runs: $WARMUP client warm-up first); cold run $COLD_DURATION"
  meta cold_duration "$COLD_DURATION"
  meta warmup_seconds "$PINNED_WARMUP_SECONDS"
  meta warm_rule "rounds of $WARM_ROUND at c16 until two consecutive differ by < $WARM_FLAT_PCT % (at most $WARM_ROUNDS_MAX); the bare servers once at the start, each fresh Kiln node in every round"
  meta targets "$PINNED_TARGETS"
  meta rounds "$PINNED_ROUNDS"
  meta interleaving "in each round and for each Kiln model: a fresh node, then at c1, c16, c64 Kiln JSON followed by bare JSON, Kiln binary, then gRPC c16 Kiln followed by bare with h2load and again with LoadGen; the bare servers stay up beside Kiln on the server CPU"
  local t models=()
  for t in $PINNED_TARGETS; do
    case "$t" in
      bare) PINNED_BARE=1 ;;
      bare-grpc) PINNED_BARE_GRPC=1 ;;
      identity | mlp) need_kiln; models+=("$t") ;;
      *) die "PINNED_TARGETS: unknown target '$t' (bare, bare-grpc, identity, mlp)" ;;
    esac
  done
  [[ "$PINNED_ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "PINNED_ROUNDS must be a positive number, not '$PINNED_ROUNDS'"
  ((PINNED_ROUNDS >= 3)) || log "WARNING: PINNED_ROUNDS=$PINNED_ROUNDS: RESULTS.md gives no verdict from fewer than 3 rounds"
  ((PINNED_BARE)) && pinned_start_bare
  ((PINNED_BARE_GRPC)) && pinned_start_bare_grpc
  local r m
  for ((r = 1; r <= PINNED_ROUNDS; r++)); do
    ((${#models[@]})) || pinned_limits_round "$r"
    for m in "${models[@]}"; do
      case "$m" in
        identity) pinned_round "$r" identity noop "$EXAMPLES/noop.yaml" echo ;;
        mlp) pinned_round "$r" mlp mlp "$EXAMPLES/tiny.yaml" bare ;;
      esac
    done
  done
  meta loadavg_end "$(cut -d' ' -f1-3 /proc/loadavg)"
  run_child "$JAVA" -cp "$CP" io.kiln.loadtest.PinnedSummary --dir "$OUT" >&2 || die "could not write $OUT/summary.md"
}

# The generative-serving scenario (issue #35): scenario_llm and its helpers.
# shellcheck source=loadtest/scenario-llm.sh
source "$LT/scenario-llm.sh"

# ---------------------------------------------------------------- main

scenarios() { declare -F | awk '{print $3}' | sed -n 's/^scenario_//p' | tr '\n' ' '; }

usage() {
  cat <<USAGE
usage: loadtest/run.sh SCENARIO [LoadGen options...]     (or: ./kiln bench SCENARIO ...)
       loadtest/run.sh --list | --help | --classpath
scenarios: $(scenarios)
  bare     the HTTP limit alone (BareServer), ~1.5 min         noop    Kiln no-op model vs BareServer, $ROUNDS rounds
  tiny     the MLP vs BareServer and the compute limit           resnet  ResNet-18 vs direct batched calls
  pinned   the request-path targets: pinned wrk/h2load, Kiln and the bare servers alternating, $PINNED_ROUNDS rounds
  cluster  3 nodes on loopback, unpinned and cross-node
  llm      generative serving (#35): 1 vs 16 streams, HTTP vs in-process, streamed vs not, prefix cache, prefix
           routing over 2 nodes vs round robin; LLM_ROUNDS (3) rounds, ~25 min (also loadtest/bench-llm.sh)
Builds the load generator itself (and ./kiln builds the distribution), writes loadtest/results/SCENARIO-<time>/ with
index.html (Kiln and its limits side by side) and meta.txt. Environment: DURATION ($DURATION), WARMUP ($WARMUP),
ROUNDS ($ROUNDS), PINNED_ROUNDS ($PINNED_ROUNDS), LOAD_MAX ($LOAD_MAX), LOAD_WAIT_MAX ($LOAD_WAIT_MAX),
LOADTEST_RESULTS (results elsewhere), SKIP_BUILD=1, LOADTEST_BUILD=module; see loadtest/README.md.
--classpath builds the load generator and prints its class path (for java -cp ... io.kiln.loadtest.LoadGen).
USAGE
}

case "${1:-}" in
  "") usage >&2; exit 2 ;;
  -h | --help | help) usage; exit 0 ;;
  --list) scenarios | tr ' ' '\n' | sed '/^$/d'; exit 0 ;;
  --classpath) build; echo "$CP"; exit 0 ;;
esac
SCENARIO="$1"; shift
EXTRA=("$@")
declare -F "scenario_$SCENARIO" >/dev/null || die "unknown scenario '$SCENARIO'; scenarios: $(scenarios)"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number, not '$ROUNDS'"

new_results_dir "$SCENARIO"
build
meta_start "$SCENARIO" "DURATION=$DURATION WARMUP=$WARMUP loadtest/run.sh $SCENARIO${EXTRA[*]:+ ${EXTRA[*]}}"
wait_for_quiet
"scenario_$SCENARIO"
cleanup
meta_end
if [[ -f "$OUT/index.html" ]]; then
  log "results: $OUT (open $OUT/index.html); loadtest/results-md.sh updates RESULTS.md"
else
  log "results: $OUT"
fi
