# Shared by loadtest/run.sh and the bench-*.sh scripts (sourced, not run): results folders with a
# description of the machine and of the run, and a bounded wait for a quiet machine.
#   LOAD_MAX (2.0)       wait until the 1-minute load average is below this before measuring
#   LOAD_WAIT_MAX (600)  ... but at most this many seconds (then measure anyway, and say so in meta.txt)

LOAD_MAX="${LOAD_MAX:-2.0}"
LOAD_WAIT_MAX="${LOAD_WAIT_MAX:-600}"

# new_results_dir NAME   creates loadtest/results/NAME-<time>/ and sets $OUT to it
new_results_dir() {
  OUT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/results/$1-$(date +%Y%m%d-%H%M%S)"
  mkdir -p "$OUT"
}

loadavg1() { cut -d' ' -f1 /proc/loadavg; }

# meta KEY VALUE   one line of $OUT/meta.txt (KEY=VALUE, the value on one line); later lines win
meta() {
  printf '%s=%s\n' "$1" "$(printf '%s' "$2" | tr '\n' ' ')" >>"$OUT/meta.txt"
}

# meta_start SCENARIO COMMAND   what ran, where, and how busy the machine was when it began
meta_start() {
  meta scenario "$1"
  meta command "$2"
  meta started "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  meta git "$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  meta cpus "$(nproc)"
  meta cpu_model "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  meta memory "$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  meta java "$("${JAVA:-java}" -version 2>&1 | head -1)"
  meta os "$(uname -sr)"
  meta loadavg_start "$(cut -d' ' -f1-3 /proc/loadavg)"
}

# meta_end   marks the folder complete (the RESULTS.md generator only reads complete folders)
meta_end() {
  meta loadavg_end "$(cut -d' ' -f1-3 /proc/loadavg)"
  meta finished "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}

# wait_for_quiet   until the 1-minute load average is below $LOAD_MAX, for at most $LOAD_WAIT_MAX s;
# the outcome goes to meta.txt (a shared machine: other people's builds would be measured too)
wait_for_quiet() {
  local start now l
  start=$(date +%s)
  while :; do
    l=$(loadavg1)
    now=$(date +%s)
    if awk -v l="$l" -v m="$LOAD_MAX" 'BEGIN { exit !(l < m) }'; then
      meta load_wait "1-min load ${l} < ${LOAD_MAX} after $((now - start)) s"
      meta loadavg_start "$(cut -d' ' -f1-3 /proc/loadavg)"
      return 0
    fi
    if ((now - start >= LOAD_WAIT_MAX)); then
      meta load_wait "1-min load still ${l} (>= ${LOAD_MAX}) after waiting ${LOAD_WAIT_MAX} s; measured anyway"
      meta loadavg_start "$(cut -d' ' -f1-3 /proc/loadavg)"
      echo "[loadtest] load average still $l after ${LOAD_WAIT_MAX} s; measuring anyway" >&2
      return 0
    fi
    echo "[loadtest] load average $l >= $LOAD_MAX; waiting ($((now - start)) s of at most $LOAD_WAIT_MAX s)" >&2
    sleep 15
  done
}
