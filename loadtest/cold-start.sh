#!/usr/bin/env bash
# Cold start of one node: how fast it serves right after it says ready, against later.
#   loadtest/cold-start.sh [--dist DIR] [--java JAVA] [--cache FILE] YAML MODEL [kiln up options...]
#   loadtest/cold-start.sh deploy/examples/bench/noop.yaml noop --warmup-seconds 0
# Starts `kiln up --file YAML` pinned to CPU 1 (DIST: a folder holding kiln.jar and lib/, default this checkout's
# deploy/target), waits until /v2/models/MODEL/ready is 200, then loads it with wrk (a C client: no JIT of its
# own to warm up, unlike LoadGen, whose own cold start shows in its first seconds) pinned to CPU 0, 16
# connections, one JSON FP32 [1,64] request: 5 s, 25 s not reported, 5 s. Prints both rates and their ratio,
# and the node's warm-up line. --java: the java to run (default: java on PATH); --cache: a start-up cache the
# launcher built (./kiln train-aot; docs/cold-start.md): *.aot as -XX:AOTCache (JDK 25+), *.jsa as AppCDS. Needs wrk (apt-get install wrk) and taskset; about 40 s plus the warm-up.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIST="$ROOT/deploy/target"
JAVA=java; CACHE=()
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --dist) DIST="$2" ;;
    --java) JAVA="$2" ;;
    --cache) if [[ "$2" == *.aot ]]; then CACHE=(-XX:AOTCache="$2"); else CACHE=(-XX:SharedArchiveFile="$2" -Xshare:auto); fi ;;
    *) echo "cold-start.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
YAML="$1"; MODEL="$2"; shift 2
PORT="${COLD_PORT:-18000}"; GRPC_PORT="${COLD_GRPC_PORT:-18001}"
[[ -f "$DIST/kiln.jar" ]] || { echo "cold-start.sh: no $DIST/kiln.jar (./mvnw -B -q -DskipTests -pl deploy -am package)" >&2; exit 1; }
command -v wrk >/dev/null || { echo "cold-start.sh: needs wrk (apt-get install wrk)" >&2; exit 1; }
LOG="$(mktemp -t kiln-cold-XXXX.log)"; LUA="$(mktemp -t kiln-cold-XXXX.lua)"
python3 - "$LUA" <<'PY'
import sys
vals = ",".join(f"{((i * 37) % 101) / 16 - 3:.4f}" for i in range(64))
open(sys.argv[1], "w").write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
  f"wrk.body = '{{\"inputs\":[{{\"name\":\"input\",\"shape\":[1,64],\"datatype\":\"FP32\",\"data\":[{vals}]}}]}}'\n")
PY
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
setsid taskset -c 1 "$JAVA" -Xmx512m "${CACHE[@]}" --add-modules java.se --add-exports java.base/jdk.internal.ref=ALL-UNNAMED \
  --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  --add-opens java.management/sun.management=ALL-UNNAMED --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
  -Dai.djl.offline=true -Dhazelcast.phone.home.enabled=false -Dkiln.home="$ROOT" -jar "$DIST/kiln.jar" up \
  --file "$ROOT/$YAML" --port "$PORT" --grpc-port "$GRPC_PORT" "$@" >"$LOG" 2>&1 &
NODE=$!
trap 'kill -TERM -- -$NODE 2>/dev/null || true; wait $NODE 2>/dev/null || true; rm -f "$LUA"' EXIT
start=$(date +%s.%N)
until [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v2/models/$MODEL/ready")" == 200 ]]; do
  kill -0 "$NODE" 2>/dev/null || { echo "cold-start.sh: the node exited; log: $LOG" >&2; exit 1; }
  sleep 0.05
done
echo "ready $(echo "$(date +%s.%N) - $start" | bc | cut -c1-5) s after launch"
rate() { taskset -c 0 wrk -t1 -c16 -d"$1" -s "$LUA" "http://127.0.0.1:$PORT/v2/models/$MODEL/infer" | awk '/Requests\/sec/ {print $2}'; }
first=$(rate 5s); rate 25s >/dev/null; late=$(rate 5s)
echo "first 5 s after ready: $first req/s; 30-35 s: $late req/s; ratio $(echo "scale=2; $first / $late" | bc)"
grep -h "NodeWarmup - " "$LOG" | sed 's/.*NodeWarmup - //' || true
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); node log: $LOG"
