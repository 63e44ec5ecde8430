# The generative-serving benchmarks of issue #35 (sourced by run.sh: `loadtest/run.sh llm`, `loadtest/bench-llm.sh`).
# One model (models/llm/bench-gpt: models/llm/bench/build.sh builds it), one set of engine settings, the same
# prompts everywhere; server JVMs (and the in-process driver) pinned to SERVER_CPU, clients to CLIENT_CPU. In each of
# LLM_ROUNDS rounds, alternating (even rounds run the single-node configurations in reverse order):
#   http-c1 / http-c16              LoadGen --llm completions, closed loop, 1 and 16 streams (output tokens/s, TTFT p50)
#   inproc-c16                      LlmInProcess: the same engine, options, threads and prompts, 16 streams, no HTTP
#   http-c16-nostream               the same as http-c16 with stream: false
#   prefix-first / prefix-second    LlmPrefixPairs: LLM_PAIRS pairs sharing a fresh LLM_PREFIX_WORDS-word prefix
#   route-prefix / route-rr         2 nodes (kiln start), a shared-prefix workload: through node 1's gateway (prefix-
#                                   aware routing) vs round robin over both nodes' gateways (request i to node i mod 2)
# Every run sends prompts of its own seed (LoadGen's request i is a pure function of seed and i): a node keeps its
# prefix cache across runs, so runs of one seed resent prompts it may still hold, timing cache hits (fc67867's run: its
# node's prefix cache hit 43,008 prompt tokens, ~12,300 of them the prefix pairs'). inproc-c16 uses http-c16's seed.
# Writes rounds.tsv + checks.tsv (RESULTS.md's rounds format), every LoadGen/LlmInProcess JSON and the nodes' logs.
# LLM_SMOKE=1: a check of the machinery (tiny-gpt, 1 round of 2 s runs, no cluster), not figures.

LLM_MODEL="${LLM_MODEL:-bench-gpt}"
LLM_MODEL_DIR="${LLM_MODEL_DIR:-$ROOT/models/llm/bench-gpt}"
LLM_OPTIONS="${LLM_OPTIONS:-max_batched_tokens=256,kv_cache_tokens=16384,block_size=16}"
LLM_MAX_BATCH="${LLM_MAX_BATCH:-16}"
LLM_PROMPT_WORDS="${LLM_PROMPT_WORDS:-128}"
LLM_OUTPUT_TOKENS="${LLM_OUTPUT_TOKENS:-64}"
# Length spreads (normal, clipped at 1): real traffic does not end in lockstep, and a fixed length pulls streams into
# waves that no scheduler sees in practice (docs/llm.md). 0 and 0 give the fixed-length workload.
LLM_PROMPT_STDDEV="${LLM_PROMPT_STDDEV:-32}"
LLM_OUTPUT_STDDEV="${LLM_OUTPUT_STDDEV:-32}"
LLM_WARMUP="${LLM_WARMUP:-5s}"
LLM_DURATION="${LLM_DURATION:-20s}"
LLM_INPROC_WARMUP="${LLM_INPROC_WARMUP:-15s}"
LLM_ROUNDS="${LLM_ROUNDS:-3}"
LLM_PAIRS="${LLM_PAIRS:-8}"
LLM_PREFIX_WORDS="${LLM_PREFIX_WORDS:-508}"
LLM_CLUSTER="${LLM_CLUSTER:-1}"
ROUTE_PREFIXES="${ROUTE_PREFIXES:-8}"
ROUTE_PROMPT_WORDS="${ROUTE_PROMPT_WORDS:-32}"
ROUTE_OUTPUT_TOKENS="${ROUTE_OUTPUT_TOKENS:-32}"
ROUTE_CONNECTIONS="${ROUTE_CONNECTIONS:-16}"
LLM_PORT="${LLM_PORT:-8200}"
LLM_GRPC_PORT="${LLM_GRPC_PORT:-8201}"
LLM_NODE_HTTP=("${LLM_NODE1_HTTP:-8210}" "${LLM_NODE2_HTTP:-8211}")
LLM_NODE_GRPC=(8212 8213)
LLM_NODE_CLUSTER=("${LLM_CLUSTER_PORT:-5811}" 5812)
LLM_WARM_ROUND="${LLM_WARM_ROUND:-10s}"
LLM_WARM_ROUNDS_MAX="${LLM_WARM_ROUNDS_MAX:-6}"
LLM_WARM_FLAT_PCT="${LLM_WARM_FLAT_PCT:-5}"
# Nodes this scenario started with `kiln start`, stopped by id (never `kiln stop` of every node: others' may run).
# On a shared tree, a KILN launcher with its own -Dkiln.home keeps them out of others' `kiln stop` too (it happened:
# a node drained mid-run); KILN_LOG_DIR is then where its nodes' logs are (that home's .kiln/logs).
LLM_NODES=()

# llm_yaml FILE   the deployment every configuration serves (one worker, LLM_MAX_BATCH sequences a step)
llm_yaml() {
  {
    echo "deployments:"
    echo "  - name: $LLM_MODEL"
    echo "    version: \"1\""
    echo "    model:"
    echo "      uri: $LLM_MODEL_DIR"
    echo "      engine: Decoder"
    echo "      threads: {intra_op: 1, inter_op: 1}"
    echo "      options:"
    tr ',' '\n' <<<"$LLM_OPTIONS" | sed -n 's/^\([a-z_]*\)=\(.*\)$/        \1: \2/p'
    echo "    pool: {workers_per_node: 1, worker_resources: {CPU: 1}, max_restarts: 3}"
    echo "    batching: {max_batch_size: $LLM_MAX_BATCH}"
    echo "    queue: {max_queued: 256, timeout_ms: 300000}"
  } >"$1"
}

# llm_record ROUND NAME START VALUE UNIT ERRORS   one line of rounds.tsv
llm_record() {
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$OUT/rounds.tsv"
  log "round $1: $2 = $4 $5 (errors $6)"
}

# llm_json FILE JQ   a number from a result file (jq), or die
llm_json() {
  local v
  v=$(jq -r "$2" "$1" 2>/dev/null) || die "cannot read $2 from $1"
  [[ "$v" =~ ^-?[0-9.eE+-]+$ ]] || die "$1: $2 is '$v', not a number"
  echo "$v"
}

# llm_loadgen ROUND NAME URLS CONNECTIONS [LoadGen options]   one measured LoadGen LLM run -> tok/s and TTFT rows
llm_loadgen() {
  local r="$1" name="$2" urls="$3" c="$4" start f errors
  shift 4
  f="$OUT/round-$r/$name.json"
  mkdir -p "$OUT/round-$r"
  start=$(date +%s.%N)
  run_child "${CLIENT_PIN[@]}" "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.LoadGen --name "$name.r$r" --out "$f" \
    --quiet --llm completions --url "$urls" --model "$LLM_MODEL" --mode closed --connections "$c" --event-loops 1 \
    --warmup "$LLM_WARMUP" --duration "$LLM_DURATION" --timeout 300s "$@" >"$OUT/round-$r/$name.txt" 2>&1 \
    || die "LoadGen $name failed; see $OUT/round-$r/$name.txt"
  errors=$(llm_json "$f" .errors)
  llm_record "$r" "$name-tps" "$start" "$(llm_json "$f" .llm.outputTokensPerSecond)" "tokens/s" "$errors"
  llm_record "$r" "$name-ttft" "$start" "$(llm_json "$f" .llm.ttftMs.p50)" "ms (TTFT p50)" "$errors"
}

# llm_inproc ROUND SEED   the same engine without HTTP, 16 streams, pinned where the node runs
llm_inproc() {
  local r="$1" seed="$2" name=inproc-c16 start f errors
  f="$OUT/round-$r/$name.json"
  mkdir -p "$OUT/round-$r"
  start=$(date +%s.%N)
  run_child "${SERVER_PIN[@]}" "$JAVA" -Xmx2g -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$CP" \
    io.kiln.loadtest.LlmInProcess --name "$name.r$r" --out "$f" --model-dir "$LLM_MODEL_DIR" --streams 16 \
    --max-batch-size "$LLM_MAX_BATCH" --intra-op 1 --inter-op 1 --option "$LLM_OPTIONS" \
    --prompt-words "$LLM_PROMPT_WORDS" --output-tokens "$LLM_OUTPUT_TOKENS" \
    --prompt-stddev "$LLM_PROMPT_STDDEV" --output-stddev "$LLM_OUTPUT_STDDEV" --seed "$seed" --warmup "$LLM_INPROC_WARMUP" \
    --duration "$LLM_DURATION" >"$OUT/round-$r/$name.txt" 2>&1 || die "LlmInProcess failed; see $OUT/round-$r/$name.txt"
  errors=$(llm_json "$f" .errors)
  llm_record "$r" "$name-tps" "$start" "$(llm_json "$f" .llm.outputTokensPerSecond)" "tokens/s" "$errors"
  llm_record "$r" "$name-ttft" "$start" "$(llm_json "$f" .llm.ttftMs.p50)" "ms (TTFT p50)" "$errors"
}

# llm_pairs ROUND   LLM_PAIRS pairs of requests sharing a prefix no earlier request had (seeds differ per round)
llm_pairs() {
  local r="$1" start f errors
  f="$OUT/round-$r/prefix-pairs.json"
  mkdir -p "$OUT/round-$r"
  start=$(date +%s.%N)
  run_child "${CLIENT_PIN[@]}" "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.LlmPrefixPairs --url "http://127.0.0.1:$LLM_PORT" \
    --model "$LLM_MODEL" --pairs "$LLM_PAIRS" --prefix-words "$LLM_PREFIX_WORDS" --prompt-words 32 --output-tokens 8 \
    --seed $((100000 * r + RANDOM)) --timeout 300s --out "$f" >"$OUT/round-$r/prefix-pairs.txt" 2>&1 \
    || die "LlmPrefixPairs failed; see $OUT/round-$r/prefix-pairs.txt"
  errors=$(llm_json "$f" .errors)
  llm_record "$r" prefix-first-ttft "$start" "$(llm_json "$f" .firstP50Ms)" "ms (TTFT p50, prefix cold)" "$errors"
  llm_record "$r" prefix-second-ttft "$(awk -v s="$start" 'BEGIN { printf "%.3f", s + 0.001 }')" \
    "$(llm_json "$f" .secondP50Ms)" "ms (TTFT p50, prefix cached)" "$errors"
}

# llm_warm NAME URLS   LoadGen warm at 16 streams until two rounds' req/s differ by < LLM_WARM_FLAT_PCT %
llm_warm() {
  local f="$OUT/warm-$1.txt"
  shift
  run_child "${CLIENT_PIN[@]}" "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.LoadGen warm --llm completions --url "$1" \
    --model "$LLM_MODEL" --mode closed --connections 16 --event-loops 1 --timeout 300s --warmup 5s \
    --round "$LLM_WARM_ROUND" --max-rounds "$LLM_WARM_ROUNDS_MAX" --flat-pct "$LLM_WARM_FLAT_PCT" --quiet \
    --record "$f.rounds" "${@:2}" >"$f" 2>&1 || die "LoadGen warm failed; see $f"
  log "warm-up $(basename "$f" .txt): $(tr '\n' ' ' <"$f.rounds")"
}

# llm_start_node NAME INDEX [kiln start options]   one node of the 2-node cluster, pinned like the single node
llm_start_node() {
  local name="$1" i="$2"
  shift 2
  require_free_port "${LLM_NODE_HTTP[$i]}"
  require_free_port "${LLM_NODE_GRPC[$i]}"
  require_free_port "${LLM_NODE_CLUSTER[$i]}"
  LLM_NODES+=("$name")
  log "starting node $name: HTTP ${LLM_NODE_HTTP[$i]}"
  "${SERVER_PIN[@]}" "$KILN" start --node-id "$name" --port "${LLM_NODE_HTTP[$i]}" --grpc-port "${LLM_NODE_GRPC[$i]}" \
    --cluster-port "${LLM_NODE_CLUSTER[$i]}" --cluster-name "kiln-llm-bench-$$" --warmup-seconds 5 "$@" \
    >>"$OUT/cluster-start.log" 2>&1 || die "node $name did not start; see $OUT/cluster-start.log"
}

# llm_snapshot_cp   copies the load generator's build (jar + lib/) aside and points CP at the copy: a run of ~25 min
# must not load classes from a jar that someone rebuilds meanwhile (a shared tree; it happened: ClassNotFoundException)
LLM_CP_COPY=""
llm_snapshot_cp() {
  local jar
  jar="${CP%%:*}"
  LLM_CP_COPY="$(mktemp -d /tmp/kiln-llm-cp.XXXXXX)"
  cp "$jar" "$LLM_CP_COPY/kiln-loadtest.jar" && cp -r "$(dirname "$jar")/lib" "$LLM_CP_COPY/lib" \
    || die "could not copy the load generator's build to $LLM_CP_COPY"
  CP="$LLM_CP_COPY/kiln-loadtest.jar:$LLM_CP_COPY/lib/*"
}

# llm_cleanup   (run.sh's cleanup) the nodes this scenario started, and its copy of the load generator
llm_cleanup() {
  llm_stop_nodes
  if [[ -n "$LLM_CP_COPY" && -d "$LLM_CP_COPY" ]]; then rm -rf "$LLM_CP_COPY"; fi
  LLM_CP_COPY=""
}

llm_stop_nodes() {
  local n
  for n in "${LLM_NODES[@]:-}"; do
    [[ -n "$n" ]] || continue
    "$KILN" stop --node "$n" >>"$OUT/kiln-stop.log" 2>&1 || log "kiln stop --node $n failed; see $OUT/kiln-stop.log"
    cp "${KILN_LOG_DIR:-$ROOT/.kiln/logs}/$n.log" "$OUT/" 2>/dev/null || true
  done
  LLM_NODES=()
}

# llm_checks   the issue's targets (and the routing comparison, a reference) over the rounds
llm_checks() {
  {
    printf 'label\tkind\trun\tbase\top\ttarget\tshow\n'
    printf '%s\ttarget\t%s\t%s\t%s\t%s\t%s\n' \
      "output tokens/s, 16 streams / 1 stream (HTTP)" http-c16-tps http-c1-tps ">=" 4 times \
      "output tokens/s at 16 streams, HTTP / in-process" http-c16-tps inproc-c16-tps ">=" 0.9 percent \
      "TTFT p50, 16 streams / 1 stream (HTTP)" http-c16-ttft http-c1-ttft "<=" 2 times \
      "TTFT p50 of a request sharing a cached ${LLM_PREFIX_WORDS}-word prefix / the first's" prefix-second-ttft \
      prefix-first-ttft "<=" 0.3 percent \
      "output tokens/s at 16 streams, streamed / not streamed" http-c16-tps http-c16-nostream-tps ">=" 0.95 percent
    if [[ "$LLM_CLUSTER" == 1 ]]; then
      printf '%s\treference, not a target\t%s\t%s\t%s\t%s\t%s\n' \
        "2 nodes, shared prefixes: output tokens/s, prefix-aware / round robin" route-prefix-tps route-rr-tps ">=" 1 times \
        "2 nodes, shared prefixes: TTFT p50, prefix-aware / round robin" route-prefix-ttft route-rr-ttft "<=" 1 times
    fi
  } >"$OUT/checks.tsv"
}

# llm_single_round ROUND   the single-node configurations, reversed in even rounds so a steady drift cancels
llm_single_round() {
  local r="$1" url="http://127.0.0.1:$LLM_PORT" steps s
  local words=(--prompt-words "$LLM_PROMPT_WORDS" --output-tokens "$LLM_OUTPUT_TOKENS"
    --prompt-stddev "$LLM_PROMPT_STDDEV" --output-stddev "$LLM_OUTPUT_STDDEV")
  steps=(c1 c16 inproc nostream pairs)
  ((r % 2 == 0)) && steps=(pairs nostream inproc c16 c1)
  for s in "${steps[@]}"; do
    case "$s" in
      c1) llm_loadgen "$r" http-c1 "$url" 1 "${words[@]}" --seed $((1000 * r + 1)) ;;
      c16) llm_loadgen "$r" http-c16 "$url" 16 "${words[@]}" --seed $((1000 * r + 2)) ;;
      nostream) llm_loadgen "$r" http-c16-nostream "$url" 16 "${words[@]}" --seed $((1000 * r + 3)) --no-stream ;;
      inproc) llm_inproc "$r" $((1000 * r + 2)) ;;
      pairs) llm_pairs "$r" ;;
    esac
  done
}

# llm_route_round ROUND   the 2-node cluster: prefix-aware through node 1's gateway vs round robin over both
llm_route_round() {
  local r="$1" n1="http://127.0.0.1:${LLM_NODE_HTTP[0]}" n2="http://127.0.0.1:${LLM_NODE_HTTP[1]}" order
  local w=(--prompt-words "$ROUTE_PROMPT_WORDS" --output-tokens "$ROUTE_OUTPUT_TOKENS" --prefixes "$ROUTE_PREFIXES"
    --prefix-words "$LLM_PREFIX_WORDS")
  order=(prefix rr)
  ((r % 2 == 0)) && order=(rr prefix)
  for s in "${order[@]}"; do
    case "$s" in
      prefix) llm_loadgen "$r" route-prefix "$n1" "$ROUTE_CONNECTIONS" "${w[@]}" --seed $((7000 + 2 * r)) ;;
      rr) llm_loadgen "$r" route-rr "$n1,$n2" "$ROUTE_CONNECTIONS" "${w[@]}" --seed $((7001 + 2 * r)) ;;
    esac
  done
}

scenario_llm() {
  if [[ "${LLM_SMOKE:-0}" == 1 ]]; then
    LLM_MODEL=tiny-gpt LLM_MODEL_DIR="$ROOT/models/llm/tiny-gpt" LLM_ROUNDS=1 LLM_DURATION=2s LLM_WARMUP=1s
    LLM_INPROC_WARMUP=1s LLM_PAIRS=2 LLM_PREFIX_WORDS=200 LLM_PROMPT_WORDS=16 LLM_OUTPUT_TOKENS=8 LLM_CLUSTER=0
    LLM_WARM_ROUND=2s LLM_WARM_ROUNDS_MAX=2
  fi
  [[ -f "$LLM_MODEL_DIR/model.onnx" ]] || die "$LLM_MODEL_DIR/model.onnx is missing: run models/llm/bench/build.sh"
  command -v jq >/dev/null || die "jq is not installed (package jq)"
  command -v taskset >/dev/null || die "taskset is not installed (package util-linux)"
  command -v curl >/dev/null || die "curl is not installed (package curl)"
  [[ "$SERVER_CPU" != "$CLIENT_CPU" ]] || die "SERVER_CPU and CLIENT_CPU must differ (both are $SERVER_CPU)"
  taskset -c "$SERVER_CPU" true 2>/dev/null && taskset -c "$CLIENT_CPU" true 2>/dev/null \
    || die "cannot pin to CPUs $SERVER_CPU and $CLIENT_CPU (taskset failed)"
  need_kiln
  SERVER_PIN=(taskset -c "$SERVER_CPU")
  CLIENT_PIN=(taskset -c "$CLIENT_CPU")
  meta title "generative serving (issue #35): continuous batching over HTTP vs in-process, streaming, prefix cache, prefix-aware routing"
  meta notes "Model $LLM_MODEL ($LLM_MODEL_DIR: GPT-2 architecture, seeded random weights; models/llm/README.md), Decoder engine options $LLM_OPTIONS, 1 worker, 1 intra-op + 1 inter-op thread, max_batch_size $LLM_MAX_BATCH. Servers (kiln up / kiln start nodes, and LlmInProcess) pinned to CPU $SERVER_CPU, LoadGen and LlmPrefixPairs to CPU $CLIENT_CPU (taskset). /v1/completions, prompts of $LLM_PROMPT_WORDS +- $LLM_PROMPT_STDDEV words and max_tokens $LLM_OUTPUT_TOKENS +- $LLM_OUTPUT_STDDEV (normal, clipped at 1; each run its own seed, inproc-c16 the seed of http-c16) with ignore_eos, closed loop, $LLM_WARMUP client warm-up then $LLM_DURATION measured per run; the node warmed with LoadGen warm at 16 streams until two ${LLM_WARM_ROUND} rounds differed by < ${LLM_WARM_FLAT_PCT} %. inproc-c16: LlmInProcess, the same engine, options, threads and prompts stepped like a Kiln worker without HTTP, in a fresh JVM each round ($LLM_INPROC_WARMUP warm-up). prefix-first/second: LlmPrefixPairs, $LLM_PAIRS pairs per round, each pair a fresh $LLM_PREFIX_WORDS-word prefix + a 32-word unique part (PAIR_TOKENS), one request at a time; the value is the median over the pairs. route-*: 2 nodes (kiln start, one worker each, both pinned to CPU $SERVER_CPU), $ROUTE_PREFIXES shared prefixes of $LLM_PREFIX_WORDS words, $ROUTE_PROMPT_WORDS-word unique parts, max_tokens $ROUTE_OUTPUT_TOKENS, $ROUTE_CONNECTIONS streams: route-prefix through node 1's gateway (prefix-aware routing), route-rr spread by the client, request i to node (i mod 2)'s gateway, each keeping it on its own pool (round robin). Rounds alternate the configurations; even rounds run them in reverse order."
  meta command "LLM_ROUNDS=$LLM_ROUNDS LLM_DURATION=$LLM_DURATION LLM_WARMUP=$LLM_WARMUP LLM_PAIRS=$LLM_PAIRS LLM_CLUSTER=$LLM_CLUSTER SERVER_CPU=$SERVER_CPU CLIENT_CPU=$CLIENT_CPU${LLM_SMOKE:+ LLM_SMOKE=$LLM_SMOKE} loadtest/bench-llm.sh"
  meta rounds "$LLM_ROUNDS"
  meta server_cpu "$SERVER_CPU"
  meta client_cpu "$CLIENT_CPU"
  meta git_uncommitted "$(git -C "$ROOT" status --porcelain -- loadtest models/llm gateway deploy | wc -l) changed files under loadtest, models/llm, gateway, deploy"
  llm_snapshot_cp
  printf 'round\tname\tstart\tvalue\tunit\terrors\n' >"$OUT/rounds.tsv"
  llm_yaml "$OUT/llm-bench.yaml"
  llm_checks
  KILN_PORT="$LLM_PORT" KILN_GRPC_PORT="$LLM_GRPC_PORT" start_kiln --file "$OUT/llm-bench.yaml" --warmup-seconds 5
  llm_warm single "http://127.0.0.1:$LLM_PORT" --prompt-words "$LLM_PROMPT_WORDS" --output-tokens "$LLM_OUTPUT_TOKENS" \
    --seed 999
  local r
  for ((r = 1; r <= LLM_ROUNDS; r++)); do
    llm_single_round "$r"
  done
  curl -s "http://127.0.0.1:$LLM_PORT/metrics" | grep -E '^kiln_(llm|decoder)' >"$OUT/metrics-single.txt" || true
  stop_bg "$KILN_BG"
  if [[ "$LLM_CLUSTER" == 1 ]]; then
    llm_start_node llm-n1 0 --head
    llm_start_node llm-n2 1 --address "127.0.0.1:${LLM_NODE_CLUSTER[0]}"
    "$KILN" deploy "$OUT/llm-bench.yaml" --address "http://127.0.0.1:${LLM_NODE_HTTP[0]}" >"$OUT/deploy.log" 2>&1 \
      || die "deploy failed; see $OUT/deploy.log"
    CLUSTER_HTTP_BASE="${LLM_NODE_HTTP[0]}" wait_pools "$LLM_MODEL" 2
    local i
    for i in 0 1; do
      wait_ready "http://127.0.0.1:${LLM_NODE_HTTP[$i]}" "/v2/models/$LLM_MODEL/ready" 180s
    done
    local rw=(--prompt-words "$ROUTE_PROMPT_WORDS" --output-tokens "$ROUTE_OUTPUT_TOKENS" --prefixes "$ROUTE_PREFIXES"
      --prefix-words "$LLM_PREFIX_WORDS")
    llm_warm cluster "http://127.0.0.1:${LLM_NODE_HTTP[0]},http://127.0.0.1:${LLM_NODE_HTTP[1]}" "${rw[@]}"
    for ((r = 1; r <= LLM_ROUNDS; r++)); do
      llm_route_round "$r"
    done
    for i in 0 1; do
      curl -s "http://127.0.0.1:${LLM_NODE_HTTP[$i]}/metrics" | grep -E '^kiln_(gateway_routes|llm|decoder|pool_requests)' \
        >"$OUT/metrics-node$((i + 1)).txt" || true
    done
    llm_stop_nodes
  fi
  # The notes again (later lines win), with the prompt length the server counted for the pairs.
  local tokens
  tokens=$(jq -r '.pairs[0].firstPromptTokens' "$OUT/round-1/prefix-pairs.json" 2>/dev/null || echo "?")
  meta notes "$(sed -n 's/^notes=//p' "$OUT/meta.txt" | tail -1 | sed "s/(PAIR_TOKENS)/(a request of $tokens prompt tokens, by the server's usage count)/")"
  log "rounds: $OUT/rounds.tsv; loadtest/results-md.sh puts them into RESULTS.md"
}
