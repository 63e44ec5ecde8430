#!/usr/bin/env bash
# Benchmark scenarios for Kiln. Usage: loadtest/run.sh SCENARIO [extra LoadGen options...]
#   loadtest/run.sh bare                      # BareServer at concurrency 1/16/64: the HTTP limit of this box
#   DURATION=5s WARMUP=1s loadtest/run.sh bare --event-loops 1
# Builds the loadtest module, starts what the scenario needs, runs LoadGen, stops everything on exit
# (also on Ctrl-C or failure), and writes JSON + HTML into loadtest/results/<scenario>-<time>/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LT="$ROOT/loadtest"
DURATION="${DURATION:-10s}"
# Long enough for both JVMs' JIT to settle on a shared 2-core box (throughput still climbs for ~10 s).
WARMUP="${WARMUP:-10s}"
BARE_PORT="${BARE_PORT:-8090}"
SERVER_EVENT_LOOPS="${SERVER_EVENT_LOOPS:-1}"
JAVA="${JAVA:-java}"
JAVA_OPTS="${JAVA_OPTS:--Xmx512m}"

die() { echo "run.sh: $*" >&2; exit 1; }
log() { echo "[run.sh] $*" >&2; }

# ---------------------------------------------------------------- helpers for scenarios

PIDS=()
CHILD=""
# Every background process runs in its own session, so stopping it also stops anything it started
# (e.g. the JVMs that ./kiln up forks).
cleanup() {
  local pid
  [[ -z "$CHILD" ]] || kill -TERM "$CHILD" 2>/dev/null || true
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
    (cd "$ROOT" && ./mvnw -B -q -pl loadtest -DskipTests package dependency:copy-dependencies \
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
  run_child "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.LoadGen --name "$name" --out "$OUT/$name.json" \
    --warmup "$WARMUP" --duration "$DURATION" "$@" "${EXTRA[@]}"
}

# search NAME [LoadGen options...]   a max-throughput search, written to $OUT/NAME.search.json and .html
#   e.g. search mlp-search --url http://127.0.0.1:8000 --model mlp --p99-target-ms 50
search() {
  local name="$1"; shift
  run_child "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.LoadGen --search --name "$name" --out "$OUT/$name.search.json" \
    --warmup "$WARMUP" --duration "$DURATION" "$@" "${EXTRA[@]}"
}

# compare BASELINE TITLE   every run (not searches) of this scenario side by side in $OUT/index.html
compare() {
  local runs=()
  local f
  for f in "$OUT"/*.json; do
    [[ "$f" == *.search.json ]] || runs+=("$f")
  done
  run_child "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.LoadGen compare --baseline "$1" --title "$2" \
    --out "$OUT/index.html" "${runs[@]}"
}

# start_kiln [kiln up options...]   ./kiln up in the background, waiting until the gateway is ready
start_kiln() {
  [[ -x "$ROOT/kiln" ]] || die "$ROOT/kiln not found or not executable (build the deploy module first)"
  require_free_port 8000
  start_bg kiln "$ROOT/kiln" up "$@"
  wait_ready "http://127.0.0.1:8000" /v2/health/ready 300s
}

# ---------------------------------------------------------------- scenarios
# A scenario is a function scenario_NAME using the helpers above; `run.sh NAME` runs it.

# The HTTP limit: BareServer (fixed body, no work) against closed-loop load at concurrency 1, 16, 64.
# Generator and server share this machine's cores; no Kiln endpoint here can beat these numbers.
scenario_bare() {
  require_free_port "$BARE_PORT"
  start_bg bare-server "$JAVA" $JAVA_OPTS -cp "$CP" io.kiln.loadtest.BareServer --port "$BARE_PORT" \
    --event-loops "$SERVER_EVENT_LOOPS"
  wait_ready "http://127.0.0.1:$BARE_PORT" / 60s
  local c
  for c in 1 16 64; do
    loadgen "bare-c$c" --url "http://127.0.0.1:$BARE_PORT" --model bare --mode closed --connections "$c"
  done
  compare bare-c1 "HTTP limit: BareServer, closed loop at concurrency 1 / 16 / 64"
}

# ---------------------------------------------------------------- main

scenarios() { declare -F | awk '{print $3}' | sed -n 's/^scenario_//p' | tr '\n' ' '; }

[[ $# -ge 1 ]] || die "usage: run.sh SCENARIO [LoadGen options...]; scenarios: $(scenarios)"
SCENARIO="$1"; shift
EXTRA=("$@")
declare -F "scenario_$SCENARIO" >/dev/null || die "unknown scenario '$SCENARIO'; scenarios: $(scenarios)"

OUT="$LT/results/$SCENARIO-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT"
build
"scenario_$SCENARIO"
cleanup
log "results: $OUT (open $OUT/index.html)"
