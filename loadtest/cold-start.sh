#!/usr/bin/env bash
# Cold start of one node: how fast it serves right after it says ready, against later.
#
#   loadtest/cold-start.sh [options] YAML MODEL [node options...]        one run
#   loadtest/cold-start.sh --rounds N [--dist DIR] [--java JAVA]         N interleaved rounds of the four cases below
#   loadtest/cold-start.sh --summarize DIR                               the summary of a rounds folder, again
#
# One run starts a node pinned to CPU 1 (DIST: a folder holding kiln.jar and lib/, default this checkout's
# deploy/target) serving YAML, waits until /v2/models/MODEL/ready is 200, then loads it with wrk (a C client: no JIT
# of its own to warm up, unlike LoadGen, whose own cold start shows in its first seconds) pinned to CPU 0, 16
# connections, one JSON request: 5 s, 25 s not reported, 5 s. Prints both rates and their ratio, the node's warm-up
# line, and fails if wrk saw any answer other than 200 or any socket error. Options:
#   --path up|start     `kiln up --file YAML` (the default; warm-up budget 10 s) or `kiln start --head --foreground
#                       --apply YAML` (warm-up budget 40 s): the two ways a node starts with its deployments
#   --deploy-after FILE once the node is ready, apply FILE (POST /api/v1/deployments, as `kiln deploy` does) and
#                       measure MODEL, one of FILE's, from its own ready: no warm-up traffic ever reached it
#   --rows N            the request: N rows of FP32 [N, 64] for input `input` (default 1: the warm-up's own request)
#   --request FILE      the request: this JSON body instead
#   --json FILE         also write the run's figures (rates, ready times, load averages, commit) as JSON
#   --java JAVA         the java to run (default: java on PATH)
#   --cache FILE        a start-up cache the launcher built (./kiln train-aot; docs/cold-start.md): *.aot as
#                       -XX:AOTCache (JDK 25+), *.jsa as AppCDS
# --rounds N runs, in each of N rounds, a fresh node for each of (issue #37):
#   identity-up, identity-start   deploy/examples/bench/noop.yaml (builtin:identity FP32 [-1, 64]), its model
#                                 measured with [1, 64]: exactly what the node's warm-up sends
#   unseen-up, unseen-start       the same node, then deploy/examples/onnx/mlp.yaml (ONNX Runtime MLP) applied
#                                 once ready and measured with [3, 64]: a model, engine and shape the warm-up
#                                 never sent (only the worker's own load-time calls ran it)
#   each node with --cpus 4 (placement only: noop's and the MLP's 2 workers of 1 CPU each fit beside each other)
# into loadtest/results/cold-start/rounds-YYYYMMDD-HHMMSS/ (CASE.rK.json, CASE.rK.txt, the node logs), then writes
# summary.md and summary.json there: per case the median and range over the rounds of the first 5 s after ready as
# a share of 30-35 s, with the load averages. Before each run it waits up to COLD_LOAD_WAIT s (default 120) for the
# 1-minute load average to fall below COLD_LOAD_MAX (default 2.5), and records what it found. Needs wrk (apt-get
# install wrk), taskset, curl, python3; about a minute per `up` run and two per `start` run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIST="$ROOT/deploy/target"
JAVA=java; CACHE=(); PATH_KIND=up; DEPLOY_AFTER=""; ROWS=1; REQUEST=""; JSON_OUT=""; ROUNDS=""; SUMMARIZE=""
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --dist) DIST="$2" ;;
    --java) JAVA="$2" ;;
    --cache) if [[ "$2" == *.aot ]]; then CACHE=(-XX:AOTCache="$2"); else CACHE=(-XX:SharedArchiveFile="$2" -Xshare:auto); fi ;;
    --path) [[ "$2" == up || "$2" == start ]] || { echo "cold-start.sh: --path is up or start, not $2" >&2; exit 2; }
            PATH_KIND="$2" ;;
    --deploy-after) DEPLOY_AFTER="$2" ;;
    --rows) [[ "$2" =~ ^[1-9][0-9]{0,3}$ ]] || { echo "cold-start.sh: --rows must be 1..9999, not $2" >&2; exit 2; }
            ROWS="$2" ;;
    --request) REQUEST="$2" ;;
    --json) JSON_OUT="$2" ;;
    --rounds) [[ "$2" =~ ^[1-9][0-9]?$ ]] || { echo "cold-start.sh: --rounds must be 1..99, not $2" >&2; exit 2; }
              ROUNDS="$2" ;;
    --summarize) SUMMARIZE="$2" ;;
    *) echo "cold-start.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done

# summarize DIR   summary.json and summary.md of a rounds folder from its CASE.rK.json files
summarize() {
  python3 - "$1" <<'PY'
import json, pathlib, re, statistics, sys
d = pathlib.Path(sys.argv[1])
every = [json.loads(f.read_text()) for f in sorted(d.glob("*.r*.json"))]
runs = [r for r in every if r["badAnswers"] == 0]
bad = [r["file"] for r in every if r["badAnswers"]]
if not runs:
    sys.exit(f"cold-start.sh: no CASE.rK.json in {d}")
order = ["identity-up", "identity-start", "unseen-up", "unseen-start"]
cases = sorted({r["case"] for r in runs}, key=lambda c: (order.index(c) if c in order else 99, c))
what = {"identity": "builtin:identity, FP32 [1, 64] (the warm-up's own model and request)",
        "unseen": "ONNX Runtime MLP applied after ready, FP32 [3, 64] (never sent by the warm-up)"}
path = {"up": "`kiln up` (warm-up budget 10 s)", "start": "`kiln start --apply` (warm-up budget 40 s)"}
def rng(xs, f):
    return f"{f(min(xs))}–{f(max(xs))}"
out = {"folder": d.name, "cases": []}
lines = ["| case | model and request | path | rounds | first 5 s after ready / 30–35 s: median (range) | "
         "first 5 s req/s: median (range) | 30–35 s req/s: median (range) | ready after launch, s: median (range) | "
         "node warm-up per run: serving-path phase / whole warm-up (* not flat when it ended) | "
         "1-min load before each run |", "|---|---|---|---:|---|---|---|---|---|---|"]
for c in cases:
    rs = [r for r in runs if r["case"] == c]
    ratio = [r["ratio"] for r in rs]
    first = [r["firstReqPerSec"] for r in rs]
    late = [r["lateReqPerSec"] for r in rs]
    ready = [r["nodeReadyAfterLaunchS"] for r in rs]
    loads = [r["loadBefore"][0] for r in rs]
    model, kind = c.rsplit("-", 1)
    s = {"case": c, "rounds": len(rs), "ratioMedian": statistics.median(ratio), "ratioMin": min(ratio),
         "ratioMax": max(ratio), "firstMedian": statistics.median(first), "lateMedian": statistics.median(late),
         "loadsBefore": loads, "runs": [r["file"] for r in rs]}
    out["cases"].append(s)
    warm = ", ".join(" / ".join(t for _, t in re.findall(r"warmed up its (serving path|deployments): ([0-9.]+) s",
                                                           r.get("warmup", ""))) + " s"
                     + ("*" if "budget ran out" in r.get("warmup", "") else "") for r in rs)
    lines.append(f"| {c} | {what.get(model, model)} | {path.get(kind, kind)} | {len(rs)} | "
                 f"**{statistics.median(ratio):.0%}** ({rng(ratio, lambda v: f'{v:.0%}')}) | "
                 f"{statistics.median(first):,.0f} ({rng(first, lambda v: f'{v:,.0f}')}) | "
                 f"{statistics.median(late):,.0f} ({rng(late, lambda v: f'{v:,.0f}')}) | "
                 f"{statistics.median(ready):.1f} ({rng(ready, lambda v: f'{v:.1f}')}) | {warm} | "
                 f"{', '.join(f'{l:.2f}' for l in loads)} |")
first, last = min(r["at"] for r in runs), max(r["at"] for r in runs)
commits = sorted({r["commit"] + (" + uncommitted changes" if r["dirty"] else "") for r in runs})
head = [f"Measured {first} to {last} by `loadtest/cold-start.sh --rounds {max(r['round'] for r in runs)}`, "
        f"commit {', '.join(commits)} (distribution: {', '.join(sorted({r.get('dist', 'not recorded') for r in runs}))}), {runs[0]['java']}; node pinned to CPU 1, wrk (1 thread, 16 connections) to "
        "CPU 0; first 5 s after ready against 30–35 s after ready of the same node. Results in "
        f"`loadtest/results/cold-start/{d.name}/`."
        + (f" Left out, wrk saw answers other than 200 or socket errors: {', '.join(bad)}." if bad else ""), ""]
lines += ["", "Every run (the medians above are of these; `badAnswers` 0 in each):", "",
          "| case | round | ended (UTC) | ready after launch, s | applied model ready after apply, s | first 5 s req/s | "
          "30–35 s req/s | ratio | 1-min load before / after |", "|---|---:|---|---:|---:|---:|---:|---:|---|"]
for r in sorted(runs, key=lambda r: r["at"]):
    ar = r.get("modelReadyAfterApplyS")
    lines.append(f"| {r['case']} | {r['round']} | {r['at'][11:19]} | {r['nodeReadyAfterLaunchS']:.2f} | "
                 f"{'-' if ar is None else f'{ar:.2f}'} | {r['firstReqPerSec']:,.0f} | {r['lateReqPerSec']:,.0f} | "
                 f"{r['ratio']:.2f} | {r['loadBefore'][0]:.2f} / {r['loadAfter'][0]:.2f} |")
(d / "summary.md").write_text("\n".join(head + lines) + "\n")
(d / "summary.json").write_text(json.dumps(out, indent=2) + "\n")
print("\n".join(head + lines))
PY
}

if [[ -n "$SUMMARIZE" ]]; then
  summarize "$SUMMARIZE"
  exit 0
fi

if [[ -n "$ROUNDS" ]]; then
  DIR="$ROOT/loadtest/results/cold-start/rounds-$(date -u +%Y%m%d-%H%M%S)"
  mkdir -p "$DIR"
  pass=(--dist "$DIST" --java "$JAVA")
  for ((k = 1; k <= ROUNDS; k++)); do
    for c in identity-up identity-start unseen-up unseen-start; do
      l=0
      for ((w = 0; w < ${COLD_LOAD_WAIT:-120}; w += 5)); do
        l=$(cut -d' ' -f1 /proc/loadavg)
        awk -v l="$l" -v m="${COLD_LOAD_MAX:-2.5}" 'BEGIN { exit !(l < m) }' && break
        sleep 5
      done
      echo "== round $k, $c: $(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
      case "$c" in
        identity-*) args=(--rows 1 deploy/examples/bench/noop.yaml noop --cpus 4) ;;
        unseen-*) args=(--deploy-after deploy/examples/onnx/mlp.yaml --rows 3 deploy/examples/bench/noop.yaml mlp-onnx
                        --cpus 4) ;;
      esac
      COLD_CASE="$c" COLD_ROUND="$k" "$0" "${pass[@]}" --path "${c##*-}" --json "$DIR/$c.r$k.json" "${args[@]}" \
        >"$DIR/$c.r$k.txt" 2>&1 || echo "cold-start.sh: round $k, $c failed; see $DIR/$c.r$k.txt" >&2
      tail -3 "$DIR/$c.r$k.txt" >&2
    done
  done
  summarize "$DIR"
  exit 0
fi

YAML="$1"; MODEL="$2"; shift 2
PORT="${COLD_PORT:-18000}"; GRPC_PORT="${COLD_GRPC_PORT:-18001}"
[[ -f "$DIST/kiln.jar" ]] || { echo "cold-start.sh: no $DIST/kiln.jar (./mvnw -B -q -DskipTests -pl deploy -am package)" >&2; exit 1; }
command -v wrk >/dev/null || { echo "cold-start.sh: needs wrk (apt-get install wrk)" >&2; exit 1; }
[[ "$YAML" = /* ]] || YAML="$ROOT/$YAML"
[[ -z "$DEPLOY_AFTER" || "$DEPLOY_AFTER" = /* ]] || DEPLOY_AFTER="$ROOT/$DEPLOY_AFTER"
LOG="$(mktemp -t kiln-cold-XXXX.log)"; LUA="$(mktemp -t kiln-cold-XXXX.lua)"; HOME_DIR="$(mktemp -d -t kiln-cold-home-XXXX)"
python3 - "$LUA" "$ROWS" "${REQUEST:-}" <<'PY'
import sys
lua, rows, request = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if request:
    body = open(request).read().strip()
else:
    vals = ",".join(f"{((i * 37) % 101) / 16 - 3:.4f}" for i in range(64 * rows))
    body = f'{{"inputs":[{{"name":"input","shape":[{rows},64],"datatype":"FP32","data":[{vals}]}}]}}'
assert "'" not in body and "\n" not in body, "the request must be one line without single quotes"
open(lua, "w").write('wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
                     f"wrk.body = '{body}'\n")
PY
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "load before: $LOAD_BEFORE"
if [[ "$PATH_KIND" == up ]]; then
  CMD=(up --file "$YAML")
else
  CMD=(start --head --foreground --apply "$YAML" --cluster-port 0 --cluster-name "cold-$$-$RANDOM" --node-id cold)
fi
setsid taskset -c 1 "$JAVA" -Xmx512m "${CACHE[@]}" --add-modules java.se --add-exports java.base/jdk.internal.ref=ALL-UNNAMED \
  --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  --add-opens java.management/sun.management=ALL-UNNAMED --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
  -Dai.djl.offline=true -Dhazelcast.phone.home.enabled=false -Dkiln.home="$HOME_DIR" -jar "$DIST/kiln.jar" "${CMD[@]}" \
  --host 127.0.0.1 --port "$PORT" --grpc-port "$GRPC_PORT" "$@" >"$LOG" 2>&1 &
NODE=$!
trap 'kill -TERM -- -$NODE 2>/dev/null || true; wait $NODE 2>/dev/null || true; rm -rf "$LUA" "$HOME_DIR"' EXIT
start=$(date +%s.%N)
# await_ready MODEL   until /v2/models/MODEL/ready answers 200 (the node dying ends the run)
await_ready() {
  until [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v2/models/$1/ready")" == 200 ]]; do
    kill -0 "$NODE" 2>/dev/null || { echo "cold-start.sh: the node exited; log: $LOG" >&2; exit 1; }
    sleep 0.05
  done
}
READY_MODEL="$MODEL"
if [[ -n "$DEPLOY_AFTER" ]]; then
  READY_MODEL="$(sed -n 's/^ *- *name: *\([A-Za-z0-9._-]*\).*/\1/p' "$YAML" | head -1)"
fi
await_ready "$READY_MODEL"
NODE_READY="$(echo "$(date +%s.%N) - $start" | bc)"
echo "ready $(printf '%.2f' "$NODE_READY") s after launch"
APPLY_READY=null
if [[ -n "$DEPLOY_AFTER" ]]; then
  # The node's readiness (/v2/health/ready) is also held until its warm-up is over; the model's own ready above may
  # come first: wait for both, so that nothing of the warm-up still runs when the applied model is measured.
  until [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v2/health/ready")" == 200 ]]; do
    kill -0 "$NODE" 2>/dev/null || { echo "cold-start.sh: the node exited; log: $LOG" >&2; exit 1; }
    sleep 0.05
  done
  applied=$(date +%s.%N)
  code=$(curl -s -o "$HOME_DIR/apply.json" -w '%{http_code}' -X POST -H 'Content-Type: application/yaml' \
    --data-binary @"$DEPLOY_AFTER" "http://127.0.0.1:$PORT/api/v1/deployments?source=$DEPLOY_AFTER")
  [[ "$code" == 200 ]] || { echo "cold-start.sh: applying $DEPLOY_AFTER answered $code: $(cat "$HOME_DIR/apply.json")" >&2; exit 1; }
  await_ready "$MODEL"
  APPLY_READY="$(echo "$(date +%s.%N) - $applied" | bc)"
  echo "$MODEL applied after ready: ready $(printf '%.2f' "$APPLY_READY") s after the apply"
fi
# wrk_run NAME DURATION   one wrk run into $HOME_DIR/NAME.wrk
wrk_run() {
  taskset -c 0 wrk -t1 -c16 -d"$2" -s "$LUA" "http://127.0.0.1:$PORT/v2/models/$MODEL/infer" >"$HOME_DIR/$1.wrk"
}
wrk_run first 5s; wrk_run middle 25s; wrk_run late 5s
first=$(awk '/Requests\/sec/ {print $2}' "$HOME_DIR/first.wrk")
late=$(awk '/Requests\/sec/ {print $2}' "$HOME_DIR/late.wrk")
# Answers other than 2xx and socket errors, in all three runs: any makes the rates meaningless.
BAD=$(cat "$HOME_DIR"/*.wrk | awk '/Non-2xx/ {n += $NF} /Socket errors/ {gsub(/,/, ""); n += $4 + $6 + $8 + $10}
  END {print n + 0}')
ratio=$(echo "scale=4; $first / $late" | bc)
echo "first 5 s after ready: $first req/s; 30-35 s: $late req/s; ratio $(printf '%.2f' "$ratio")"
# The warm-up's two parts: the serving path (the internal identity model), then the node's deployments.
WARMUP="$(grep -h -e "NodeWarmup - " -e "ServingNode - .*warmed up its deployments" "$LOG" | sed 's/.* - node [^ ]* //' \
  | paste -sd'|' | sed 's/|/ | /g' || true)"
echo "$WARMUP"
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "load after: $LOAD_AFTER; node log: $LOG"
if [[ -n "$JSON_OUT" ]]; then
  C_COMMIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  C_DIRTY="$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null | head -1)" \
  C_JAVA="$("$JAVA" -version 2>&1 | head -1)" C_PATH="$PATH_KIND" C_YAML="${YAML#"$ROOT"/}" \
  C_AFTER="${DEPLOY_AFTER#"$ROOT"/}" C_MODEL="$MODEL" C_ROWS="$ROWS" C_REQUEST="$REQUEST" C_OPTS="$*" \
  C_READY="$NODE_READY" C_APPLY_READY="$APPLY_READY" C_FIRST="$first" C_LATE="$late" C_BAD="$BAD" \
  C_WARMUP="$WARMUP" C_DIST="$DIST/kiln.jar of $(date -u -r "$DIST/kiln.jar" +%FT%TZ)" C_LOAD_BEFORE="$LOAD_BEFORE" C_LOAD_AFTER="$LOAD_AFTER" python3 - "$JSON_OUT" <<'PY'
import datetime, json, os, sys
e = os.environ
first, late = float(e["C_FIRST"]), float(e["C_LATE"])
f = {"case": e.get("COLD_CASE", ""), "round": int(e.get("COLD_ROUND", "1")), "file": os.path.basename(sys.argv[1]),
     "at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "commit": e["C_COMMIT"],
     "dirty": bool(e["C_DIRTY"]), "dist": e["C_DIST"], "java": e["C_JAVA"], "path": e["C_PATH"], "yaml": e["C_YAML"],
     "deployAfter": e["C_AFTER"] or None, "model": e["C_MODEL"], "rows": int(e["C_ROWS"]),
     "request": e["C_REQUEST"] or None, "nodeOptions": e["C_OPTS"],
     "nodeReadyAfterLaunchS": round(float(e["C_READY"]), 2),
     "modelReadyAfterApplyS": None if e["C_APPLY_READY"] == "null" else round(float(e["C_APPLY_READY"]), 2),
     "firstReqPerSec": first, "lateReqPerSec": late, "ratio": round(first / late, 4), "badAnswers": int(e["C_BAD"]),
     "warmup": e["C_WARMUP"], "loadBefore": [float(v) for v in e["C_LOAD_BEFORE"].split()],
     "loadAfter": [float(v) for v in e["C_LOAD_AFTER"].split()]}
with open(sys.argv[1], "w") as out:
    json.dump(f, out, indent=2)
PY
  cp "$LOG" "${JSON_OUT%.json}.log"
fi
if ((BAD > 0)); then
  echo "cold-start.sh: $BAD answers were not 200 (or socket errors): the rates do not count; log: $LOG" >&2
  exit 1
fi
