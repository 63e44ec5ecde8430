#!/usr/bin/env bash
# The OCR graph (issue #36): images/s of deploy/examples/ocr's model graph ocr-read (det-pre -> det -> crop -> rec ->
# ctc: PP-OCRv4 det and rec on ONNX Runtime pools, model.py's DetPre, Crop and Ctc on Python pools) through a
# `./kiln up` node, vs the same five steps called in ONE process with the same threads, side by side, interleaved:
#   graph    POST /v2/models/ocr-read/infer, the rendered page's PNG as UINT8 [1, n] over the binary extension, from C
#            keep-alive Python threads (loadtest/ocr-graph-client.py kiln)
#   direct   one Python process (loadtest/ocr-graph-client.py direct): det and rec in onnxruntime's Python API with
#            the intra-op / inter-op threads ocr.yaml gives them, DetPre / Crop / Ctc imported from model.py with
#            ocr.yaml's config and the Python pools' threads; C threads, each image through the five steps, each step
#            behind a lock of its own as each Kiln pool has one worker (DIRECT_MODE=PARALLEL: no locks)
# at concurrency 1 and 2 (= 2 x workers: every pool runs one), $ROUNDS rounds, each configuration once per round (even
# rounds in reverse order). Every answer on both sides must read exactly the rendered lines (OCR_LINES): one that does
# not is an error of its run, which RESULTS.md then does not judge. The page is rendered with PIL in DejaVu Sans, as
# OcrExampleTest and OcrReportEndToEndTest render theirs.
#
# onnxruntime for the direct side: a venv under loadtest/target/ (OCR_VENV) made from /usr/bin/python3 with
# --system-site-packages (Debian's numpy, OpenCV, PIL, PyYAML) and `pip install --no-index --find-links $ORT_WHEELS
# onnxruntime` (ORT_WHEELS, default /opt/pypi/files: a folder holding the wheel and its dependencies; nothing is
# downloaded). meta.txt names both sides' ONNX Runtime versions (Kiln's Java one vs the wheel's).
#
# Writes loadtest/results/ocr-graph-<time>/ in RESULTS.md's rounds format (rounds.tsv: every measurement, images/s;
# checks.tsv: graph / direct at each concurrency, a reference: issue #36 asks for the figure but names no target for
# it; meta.txt with the machine, commit, load averages and versions) beside the raw lines (results.txt), the summary
# and Kiln's log; then run loadtest/results-md.sh. LOADTEST_RESULTS=DIR puts the folder elsewhere (a trial that must
# not land in RESULTS.md); OCR_GRAPH_OUT=DIR names the folder itself. Waits up to LOAD_WAIT_MAX s (600) for a 1-minute
# load under LOAD_MAX (2.0) and records the outcome.
#
# Usage: loadtest/bench-ocr-graph.sh   (env: ROUNDS=3 DURATION=10 WARMUP=3 PREWARM=15 CONCURRENCY="1 2"
#          CONFIGS="graph direct" OCR_LINES='["download", "analyse", "callback"]' KILN_PORT=8320 KILN_GRPC_PORT=8321
#          NOTE="free text for meta.txt" KILN=path/to/kiln)
# PREWARM: seconds of unmeasured graph calls at the highest concurrency before round 1 (a fresh JVM serves at a
# fraction of its warm rate for its first ~30 s; the direct side is native code from its first call).
# Needs: a JDK 17+, /usr/bin/python3 with numpy, OpenCV, PIL and PyYAML (python3-numpy python3-opencv python3-pil
# python3-yaml), fonts-dejavu-core, the models (models/ocr/fetch.sh; run here when they are missing).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LT="$ROOT/loadtest"
# shellcheck source=loadtest/lib.sh
source "$LT/lib.sh"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-10}"
WARMUP="${WARMUP:-3}"
PREWARM="${PREWARM:-15}"
CONCURRENCY="${CONCURRENCY:-1 2}"
CONFIGS="${CONFIGS:-graph direct}"
OCR_LINES="${OCR_LINES:-[\"download\", \"analyse\", \"callback\"]}"
KILN_PORT="${KILN_PORT:-8320}"
KILN_GRPC_PORT="${KILN_GRPC_PORT:-8321}"
OCR_VENV="${OCR_VENV:-$LT/target/ocr-venv}"
ORT_WHEELS="${ORT_WHEELS:-/opt/pypi/files}"
PY=/usr/bin/python3
CLIENT="$LT/ocr-graph-client.py"
EXAMPLE="$ROOT/deploy/examples/ocr"
# A launcher of a copied distribution keeps one build under measurement where others edit the tree (./kiln rebuilds
# itself whenever a source is newer than its jar).
KILN="${KILN:-$ROOT/kiln}"
COMMAND="ROUNDS=$ROUNDS DURATION=$DURATION WARMUP=$WARMUP PREWARM=$PREWARM CONCURRENCY=\"$CONCURRENCY\" \
CONFIGS=\"$CONFIGS\" loadtest/bench-ocr-graph.sh"

log() { echo "[bench-ocr-graph] $*" >&2; }
die() { echo "bench-ocr-graph: $*" >&2; exit 1; }

"$PY" -c 'import cv2, numpy, PIL, yaml' 2>/dev/null \
  || die "$PY lacks numpy, OpenCV, PIL or PyYAML (apt-get install -y python3-numpy python3-opencv python3-pil \
python3-yaml)"
[[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]] \
  || die "needs DejaVu Sans (apt-get install -y fonts-dejavu-core)"
"$PY" -c 'import json, sys; l = json.loads(sys.argv[1]); assert l and all(isinstance(x, str) and x for x in l)' \
  "$OCR_LINES" 2>/dev/null || die "OCR_LINES must be a JSON list of non-empty strings, not: $OCR_LINES"
for m in det rec; do
  [[ -f "$ROOT/models/ocr/$m/model.onnx" ]] || "$ROOT/models/ocr/fetch.sh"
done

if [[ -n "${OCR_GRAPH_OUT:-}" ]]; then
  OUT="$OCR_GRAPH_OUT"
  mkdir -p "$OUT"
else
  new_results_dir ocr-graph
fi

# onnxruntime for the direct side, from wheels on disk (a fresh clone: loadtest/target/ has no venv yet).
if ! "$OCR_VENV/bin/python" -c 'import onnxruntime, cv2, yaml' 2>/dev/null; then
  ls "$ORT_WHEELS"/onnxruntime-*.whl >/dev/null 2>&1 \
    || die "no onnxruntime wheel in $ORT_WHEELS (ORT_WHEELS=DIR: a folder with the wheel for $($PY -V) and its \
dependencies)"
  log "making $OCR_VENV: $PY -m venv --system-site-packages; pip install --no-index --find-links $ORT_WHEELS \
onnxruntime"
  rm -rf "$OCR_VENV"
  "$PY" -m venv --system-site-packages "$OCR_VENV" >"$OUT/venv.log" 2>&1 || die "venv failed; see $OUT/venv.log"
  "$OCR_VENV/bin/pip" install -q --no-index --find-links "$ORT_WHEELS" onnxruntime >>"$OUT/venv.log" 2>&1 \
    || die "pip install onnxruntime failed; see $OUT/venv.log"
  "$OCR_VENV/bin/python" -c 'import onnxruntime, cv2, yaml' >>"$OUT/venv.log" 2>&1 \
    || die "the venv cannot import onnxruntime, cv2 and yaml together; see $OUT/venv.log"
fi
ORT_DIRECT="$("$OCR_VENV/bin/python" "$CLIENT" versions)"

log "building the kiln distribution if stale"
"$KILN" --version >/dev/null || die "could not build or run ./kiln"
ORT_JAR="$(ls "$ROOT"/deploy/target/lib/onnxruntime-*.jar 2>/dev/null | head -1)"
[[ -f "$ORT_JAR" ]] || die "no onnxruntime jar in deploy/target/lib"
ORT_KILN="$(basename "$ORT_JAR" .jar | sed 's/^onnxruntime-/onnxruntime (Java) /')"

# The example as written, its paths made absolute (the copy lives in $OUT) and its Python pools on $PY, which has
# OpenCV (a pyenv shim may come first on PATH). Both sides read this one file.
sed -e "s|uri: \.\./\.\./\.\./models/|uri: $ROOT/models/|" -e "s|uri: \.\( *#.*\)\{0,1\}$|uri: $EXAMPLE|" \
  -e "s|interpreter: python3|interpreter: $PY|" "$EXAMPLE/ocr.yaml" >"$OUT/ocr.yaml"
if grep -nE 'uri: \.|interpreter: python3([^0-9.]|$)' "$OUT/ocr.yaml" >&2; then
  die "$OUT/ocr.yaml still has a relative uri or a bare interpreter (above): ocr.yaml changed; adapt the sed here"
fi
"$PY" "$CLIENT" render "$OUT/page.png" "$OCR_LINES"

meta_start ocr-graph "$COMMAND"
wait_for_quiet
meta title "The OCR graph (issue #36): ocr-read through Kiln vs the same five steps called in one process"
notes="deploy/examples/ocr/ocr.yaml as written (paths absolute, Python pools on $PY), served by ./kiln up: the graph \
ocr-read, $("$PY" "$CLIENT" describe "$OUT/ocr.yaml"). The page: \
$("$PY" -c 'import json, sys; print(len(json.loads(sys.argv[1])))' "$OCR_LINES") lines rendered in DejaVu Sans 32 \
($(stat -c %s "$OUT/page.png") bytes of PNG), every answer checked against them on both sides. graph = \
POST /v2/models/ocr-read/infer, the PNG as UINT8 [1, n] over the binary extension, from C keep-alive Python threads \
(loadtest/ocr-graph-client.py kiln). direct = one Python process (ocr-graph-client.py direct): det and rec in \
onnxruntime's Python API with the same session options, DetPre / Crop / Ctc from model.py with the same config and \
threads, C threads taking each image through the five steps, each step behind its own lock (${DIRECT_MODE:-SERIAL}: \
as each pool has one worker; the Python steps share one interpreter, where Kiln runs one process each). Concurrency \
$CONCURRENCY (2 = 2 x workers), a ${PREWARM}s graph warm-up before round 1, ${WARMUP}s client warm-up then \
${DURATION}s measured per run (images answered inside the window / the window), $ROUNDS rounds, even rounds in \
reverse order. Not pinned: the models' threads take both cores on both sides, and the graph's client shares them. \
CPU ms per image: the Kiln node's process group (JVM and Python workers) or the direct process, over the window."
meta notes "$notes${NOTE:+ $NOTE}"
meta rounds "$ROUNDS"
meta onnxruntime_kiln "$ORT_KILN"
meta onnxruntime_direct "$ORT_DIRECT"
if [[ -n "$(git -C "$ROOT" status --porcelain)" ]]; then
  meta git_uncommitted "$(git -C "$ROOT" status --porcelain | wc -l) changed files (working tree not clean)"
fi
printf 'round\tname\tstart\tvalue\tunit\terrors\n' >"$OUT/rounds.tsv"
{
  printf 'label\tkind\trun\tbase\top\ttarget\tshow\n'
  for c in $CONCURRENCY; do
    printf '%s\t%s\tocr-c%s-graph\tocr-c%s-direct\t>=\t0.9\tpercent\n' \
      "OCR graph, c=$c: ocr-read through Kiln / the five steps in one process" "reference, not a target" "$c" "$c"
  done
} >"$OUT/checks.tsv"

KILN_PID=""
cleanup() {
  if [[ -n "$KILN_PID" ]]; then
    kill -TERM -- "-$KILN_PID" 2>/dev/null || true
    wait "$KILN_PID" 2>/dev/null || true
  fi
}
trap cleanup EXIT

log "starting kiln up with $OUT/ocr.yaml (a copy of $EXAMPLE/ocr.yaml) on :$KILN_PORT / :$KILN_GRPC_PORT"
KILN_STRICT_READINESS=true setsid "$KILN" up --port "$KILN_PORT" --grpc-port "$KILN_GRPC_PORT" \
  --file "$OUT/ocr.yaml" >"$OUT/kiln.log" 2>&1 &
KILN_PID=$!
for _ in $(seq 1 300); do
  if curl -sf "http://127.0.0.1:$KILN_PORT/v2/models/ocr-read/ready" >/dev/null; then break; fi
  kill -0 "$KILN_PID" 2>/dev/null || { tail -30 "$OUT/kiln.log" >&2; die "kiln exited"; }
  sleep 1
done
curl -sf "http://127.0.0.1:$KILN_PORT/v2/models/ocr-read/ready" >/dev/null || die "ocr-read not ready after 300 s"

max_c=$(tr ' ' '\n' <<<"$CONCURRENCY" | sort -n | tail -1)
if ((PREWARM > 0)); then
  log "warming the graph: ${PREWARM}s at c$max_c, not recorded"
  line=$("$PY" "$CLIENT" kiln "$KILN_PORT" "$max_c" 0 "$PREWARM" "$OUT/page.png" "$OCR_LINES" 2>>"$OUT/client.err" \
    | tail -1)
  echo "prewarm $max_c 0 $line" >>"$OUT/results.txt"
  "$PY" -c 'import json, sys; d = json.loads(sys.argv[1]); sys.exit(0 if d["n"] and not d["errors"] else 1)' "$line" \
    || die "the graph's warm-up answered wrongly or not at all: $line (see $OUT/client.err and $OUT/kiln.log)"
fi

# measure CONFIG C   one measured run; appends "CONFIG C ROUND <json>" to results.txt and
# "ROUND ocr-cC-CONFIG START IMAGES/S images/s ERRORS" to rounds.tsv (a run that measured no image counts as an error)
measure() {
  local config=$1 c=$2 line start
  start=$(date +%s.%N)
  case "$config" in
    graph)
      line=$("$PY" "$CLIENT" kiln "$KILN_PORT" "$c" "$WARMUP" "$DURATION" "$OUT/page.png" "$OCR_LINES" "$KILN_PID" \
        2>>"$OUT/client.err" | tail -1) ;;
    direct)
      line=$("$OCR_VENV/bin/python" "$CLIENT" direct "$OUT/ocr.yaml" "$c" "$WARMUP" "$DURATION" "$OUT/page.png" \
        "$OCR_LINES" 2>>"$OUT/direct.err" | tail -1) ;;
    *) die "unknown configuration $config" ;;
  esac
  [[ -n "$line" ]] || die "$config c$c round $ROUND gave no result (see $OUT/client.err, $OUT/direct.err)"
  echo "$config $c $ROUND $line" | tee -a "$OUT/results.txt" >&2
  "$PY" -c 'import json,sys; d=json.loads(sys.argv[4]); e=int(d.get("errors") or 0) + (0 if d.get("n") else 1)
print("%s\t%s\t%s\t%s\timages/s\t%d" % (sys.argv[1], sys.argv[2], sys.argv[3], d.get("rps") or 0, e))' \
    "$ROUND" "ocr-c$c-$config" "$start" "$line" >>"$OUT/rounds.tsv"
  if [[ "$(tail -1 "$OUT/rounds.tsv" | cut -f6)" != 0 ]]; then
    log "WARNING: $config c$c round $ROUND had errors or wrong answers (see $OUT/client.err, $OUT/direct.err)"
  fi
}

for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
  plan=()
  for c in $CONCURRENCY; do
    for config in $CONFIGS; do
      plan+=("$config $c")
    done
  done
  measure_round "$ROUND" "${plan[@]}"
done

meta_end
"$PY" - "$OUT/results.txt" "$CONCURRENCY" >"$OUT/summary.txt" <<'EOF'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    config, c, r, js = line.split(" ", 3)
    if config != "prewarm":
        rows.setdefault((config, int(c)), []).append(json.loads(js))
print("%-7s %3s %10s %21s %9s %9s %9s %15s %7s" % ("config", "c", "images/s", "range", "vs direct", "p50 ms",
      "p99 ms", "CPU ms/image", "errors"))
for c in [int(x) for x in sys.argv[2].split()]:
    direct = [x["rps"] for x in rows.get(("direct", c), [])]
    base = statistics.median(direct) if direct else None
    for (config, cc), runs in rows.items():
        if cc != c:
            continue
        rps = [x["rps"] for x in runs]
        med = statistics.median(rps)
        ratio = "%8.0f%%" % (100 * med / base) if base else "%9s" % "-"
        cpus = [x["cpu_ms_per_image"] for x in runs if x.get("cpu_ms_per_image")]
        cpu = "%15.1f" % statistics.median(cpus) if cpus else "%15s" % "-"
        print("%-7s %3d %10.2f %10.2f - %8.2f %s %9.1f %9.1f %s %7d" % (config, c, med, min(rps), max(rps), ratio,
              statistics.median([x["p50_ms"] for x in runs]), statistics.median([x["p99_ms"] for x in runs]), cpu,
              sum(x.get("errors") or 0 for x in runs)))
EOF
cat "$OUT/meta.txt" >&2
cat "$OUT/summary.txt"
log "results in $OUT (RESULTS.md's rounds format: loadtest/results-md.sh regenerates RESULTS.md from it)"
