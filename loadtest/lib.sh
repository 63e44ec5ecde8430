# Shared by loadtest/run.sh, results-md.sh and the bench-*.sh scripts (sourced, not run): building the load
# generator, results folders with a description of the machine and of the run, and a bounded wait for a quiet machine.
#   LOAD_MAX (2.0)       wait until the 1-minute load average is below this before measuring
#   LOAD_WAIT_MAX (600)  ... but at most this many seconds (then measure anyway, and say so in meta.txt)
#   LOADTEST_RESULTS     where results folders go (default loadtest/results, which RESULTS.md is generated from;
#                        point a trial run elsewhere so that it never lands in RESULTS.md)

LOAD_MAX="${LOAD_MAX:-2.0}"
LOAD_WAIT_MAX="${LOAD_WAIT_MAX:-600}"

# new_results_dir NAME   creates loadtest/results/NAME-<time>/ (or under $LOADTEST_RESULTS) and sets $OUT to it
new_results_dir() {
  local base="${LOADTEST_RESULTS:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/results}"
  mkdir -p "$base"
  OUT="$(cd "$base" && pwd)/$1-$(date +%Y%m%d-%H%M%S)"
  mkdir -p "$OUT"
}

# mvn_quiet ARGS...   ./mvnw -B -q ARGS from the repository root: offline first (a populated local repository needs no
# network), then online if that failed (a fresh clone downloads what it lacks). $LOADTEST_MAVEN_ARGS adds options.
mvn_quiet() {
  local root log rc=0
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  log="$(mktemp)"
  # shellcheck disable=SC2086
  (cd "$root" && ./mvnw -B -q -o ${LOADTEST_MAVEN_ARGS:-} "$@") >"$log" 2>&1 || rc=$?
  if ((rc != 0)); then
    echo "[loadtest] the offline build failed ($(grep -m1 -E 'ERROR' "$log" | cut -c1-160)); building online" >&2
    rm -f "$log"
    # shellcheck disable=SC2086
    (cd "$root" && ./mvnw -B -q ${LOADTEST_MAVEN_ARGS:-} "$@") >&2 || return $?
    return 0
  fi
  rm -f "$log"
}

# loadtest_build   makes loadtest/target/kiln-loadtest-*.jar and its runtime dependencies in loadtest/target/lib, and
# sets CP to them. Skipped when that build is newer than every source it is made from (loadtest's and protocol's
# sources and poms, the root pom). From a fresh clone it builds what the load generator needs with it
# (-pl loadtest -am: the parent pom and kiln-protocol). LOADTEST_BUILD=module builds the loadtest module alone, taking
# kiln-protocol from the local Maven repository (for a checkout where others build the other modules at the same
# time). SKIP_BUILD=1 uses whatever build is there.
loadtest_build() {
  local root lt jar stamp projects
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  lt="$root/loadtest"
  stamp="$lt/target/lib/.built"
  # No target/ yet (a fresh clone): find fails, and under the callers' pipefail and -e that must not end the script.
  jar="$(find "$lt/target" -maxdepth 1 -name 'kiln-loadtest-*.jar' ! -name '*-tests.jar' 2>/dev/null | head -1 || true)"
  if [[ "${SKIP_BUILD:-0}" == 1 && -n "$jar" && -d "$lt/target/lib" ]]; then
    echo "[loadtest] SKIP_BUILD=1: using the existing build" >&2
  elif [[ -n "$jar" && -f "$stamp" && -z "$(find "$lt/src/main" "$lt/pom.xml" "$root/pom.xml" "$root/protocol/src/main" \
      "$root/protocol/pom.xml" -newer "$stamp" -print -quit 2>/dev/null)" ]]; then
    : # up to date
  else
    projects=(-pl loadtest -am)
    [[ "${LOADTEST_BUILD:-}" == module ]] && projects=(-pl loadtest)
    echo "[loadtest] building the load generator (./mvnw ${projects[*]} package dependency:copy-dependencies; the first" \
      "build downloads dependencies and takes a few minutes)" >&2
    rm -rf "$lt/target/lib"   # no stale dependency versions beside the new ones
    mvn_quiet "${projects[@]}" -DskipTests package dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory=target/lib || { echo "[loadtest] the build failed" >&2; return 1; }
    touch "$stamp"
    jar="$(find "$lt/target" -maxdepth 1 -name 'kiln-loadtest-*.jar' ! -name '*-tests.jar' | head -1)"
  fi
  [[ -n "$jar" ]] || { echo "[loadtest] no loadtest jar in $lt/target" >&2; return 1; }
  CP="$jar:$lt/target/lib/*"
}

loadavg1() { cut -d' ' -f1 /proc/loadavg; }

# pool_batches BASE_URL   a node's pool batches so far, from its /metrics: "rows batches" (kiln_pool_batch_size_rows'
# sum and count over its pools)
pool_batches() {
  curl -sf "$1/metrics" | awk '/^kiln_pool_batch_size_rows_sum/ {s += $NF} /^kiln_pool_batch_size_rows_count/ {c += $NF}
    END {printf "%d %d\n", s, c}'
}

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

# measure_round ROUND ENTRY...   calls the script's own `measure` once per ENTRY (its words are measure's arguments),
# in order in odd rounds and in reverse in even ones, so no configuration always runs first or last
measure_round() {
  local round="$1" i
  shift
  local -a entries=("$@")
  if ((round % 2 == 0)); then
    for ((i = ${#entries[@]} - 1; i >= 0; i--)); do
      # shellcheck disable=SC2086
      measure ${entries[$i]}
    done
  else
    for i in "${entries[@]}"; do
      # shellcheck disable=SC2086
      measure $i
    done
  fi
}
