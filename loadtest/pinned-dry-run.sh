#!/usr/bin/env bash
# A test of the pinned scenario's script, not a measurement: runs `loadtest/run.sh pinned` end to end in a minute or
# two with stand-ins — wrk, h2load and nghttp print recorded outputs (src/test/resources) instead of loading anything,
# and KILN is a stand-in launcher whose `up` serves BareServer and BareGrpcServer on Kiln's ports — so that the
# rounds, the per-round folders, the start times in round.txt and the generated summary.md / index.html can be
# checked without a Kiln build or a quiet machine. Then it checks that every check of the identity model came from
# PINNED_ROUNDS (3) interleaved rounds: a verdict (met / MISSED / UNSTABLE), never "insufficient rounds". Results go to
# a temporary folder, never to loadtest/results (RESULTS.md is generated from there). The figures mean nothing.
# Usage: loadtest/pinned-dry-run.sh        (KEEP=1 keeps the temporary folder; LOADTEST_BUILD=module as in lib.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LT="$ROOT/loadtest"
tmp="$(mktemp -d)"
[[ "${KEEP:-0}" == 1 ]] || trap 'rm -rf "$tmp"' EXIT
CP="$("$LT/run.sh" --classpath)"
export CP

mkdir -p "$tmp/bin"
# wrk: a recorded --latency output, its rate varied a little per call (so that rounds differ)
cat >"$tmp/bin/wrk" <<EOF
#!/usr/bin/env bash
if [[ "\${1:-}" == -v ]]; then echo "wrk stand-in (pinned-dry-run.sh)"; exit 0; fi
sleep 0.2
sed "s/^Requests\\/sec:.*/Requests\\/sec:  \$((40000 + RANDOM % 20000)).00/" "$LT/src/test/resources/wrk/bare-json-c16.txt"
EOF
cat >"$tmp/bin/h2load" <<EOF
#!/usr/bin/env bash
sleep 0.2
cat "$LT/src/test/resources/h2load/bare-grpc-c16.txt"
EOF
cat >"$tmp/bin/nghttp" <<'EOF'
#!/usr/bin/env bash
echo "grpc-status: 0"
EOF
# the Kiln stand-in: --version succeeds; `up --port P --grpc-port G ...` serves the bare servers on Kiln's ports (any
# path answers, so /v2/models/M/ready is 200 at once; stopped with its process group by run.sh)
cat >"$tmp/bin/kiln" <<'EOF'
#!/usr/bin/env bash
case "${1:-}" in
  --version) echo "kiln stand-in (pinned-dry-run.sh)"; exit 0 ;;
  stop) exit 0 ;;
  up)
    shift
    port="" grpc=""
    while [[ $# -gt 0 ]]; do
      case "$1" in --port) port="$2"; shift ;; --grpc-port) grpc="$2"; shift ;; esac
      shift
    done
    java -Xmx256m -cp "$CP" io.kiln.loadtest.BareGrpcServer --port "$grpc" &
    exec java -Xmx256m -cp "$CP" io.kiln.loadtest.BareServer --port "$port" --work oip ;;
  *) echo "kiln stand-in: $* not supported" >&2; exit 2 ;;
esac
EOF
chmod +x "$tmp/bin/"*

port() { echo $((20000 + RANDOM % 20000)); }
base="$(port)"
PATH="$tmp/bin:$PATH" KILN="$tmp/bin/kiln" LOADTEST_RESULTS="$tmp/results" SKIP_BUILD=1 LOAD_WAIT_MAX=0 \
  DURATION=1s WARMUP=1s WARM_ROUND=1s WARM_ROUNDS_MAX=2 COLD_DURATION=1s PINNED_ROUNDS="${PINNED_ROUNDS:-3}" \
  PINNED_TARGETS="bare bare-grpc identity" BARE_PORT="$base" BARE_GRPC_PORT=$((base + 1)) KILN_PORT=$((base + 2)) \
  KILN_GRPC_PORT=$((base + 3)) "$LT/run.sh" pinned >"$tmp/run.log" 2>&1 || { tail -30 "$tmp/run.log" >&2; exit 1; }

out="$(find "$tmp/results" -maxdepth 1 -name 'pinned-*' -type d | head -1)"
fail() { echo "pinned-dry-run: FAILED: $*" >&2; KEEP=1; echo "folder: $out" >&2; trap - EXIT; exit 1; }
[[ -f "$out/summary.md" && -f "$out/index.html" ]] || fail "no summary.md / index.html"
for r in $(seq 1 "${PINNED_ROUNDS:-3}"); do
  for f in identity-json-c16.wrk.txt bare-json-c16.wrk.txt identity-grpc-h2load-c16.h2load.txt \
    bare-grpc-h2load-c16.h2load.txt identity-grpc-c16.json bare-grpc-c16.json identity-cold-c16.wrk.txt round.txt; do
    [[ -f "$out/round-$r/identity/$f" ]] || fail "round $r lacks $f"
  done
done
# the checks the identity model's rounds decide: each must be a verdict from the rounds, not "insufficient rounds"
for label in "identity JSON / bare JSON, c16" "identity gRPC / bare gRPC, c16 (h2load)" \
  "identity gRPC / bare gRPC, c16 (LoadGen)" "identity binary / identity JSON, c16"; do
  row="$(grep -F "| $label | target |" "$out/summary.md")" || fail "no row for $label"
  if [[ "${PINNED_ROUNDS:-3}" -ge 3 ]]; then
    grep -Eq '\| (met|\*\*MISSED\*\*|\*\*UNSTABLE\*\*)' <<<"$row" || fail "$label: no verdict: $row"
    grep -q "${PINNED_ROUNDS:-3} rounds" <<<"$row" || fail "$label: not ${PINNED_ROUNDS:-3} rounds: $row"
  else
    grep -q 'insufficient rounds' <<<"$row" || fail "$label: a verdict from ${PINNED_ROUNDS} rounds: $row"
  fi
done
echo "pinned-dry-run: ok: ${PINNED_ROUNDS:-3} rounds in $out (round-N/identity/), each check judged over them" >&2
if [[ "${KEEP:-0}" == 1 ]]; then echo "kept: $tmp" >&2; fi
