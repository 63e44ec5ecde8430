#!/usr/bin/env bash
# Builds what the device check needs on a GPU machine that has no JDK and reaches no registry, into the
# git-ignored folder .gpu-bundle/ at the repository root (name it in the device tool's carry):
#   .gpu-bundle/kiln-gpu-bundle.tar.xz   jre/ (a jlink'ed Java 17 runtime), kiln.jar + lib/ (the distribution
#                                        less the jars only the PyTorch/ONNX engines and clustering use),
#                                        loadtest/kiln-loadtest.jar + loadtest/classpath.txt (the load
#                                        generator: its jars are lib/'s where the same file is there, else
#                                        in loadtest/lib/)
#   .gpu-bundle/BUNDLE.txt               what is inside, the module list, sizes, the commit it was built from
# One compressed archive rather than a tree: it keeps file modes and the runtime's symbolic links intact
# through the copy, and xz halves the runtime (libjvm.so alone is 24 MB unstripped). run.sh unpacks it.
#
# Usage (on a development machine with this repository's JDK 17 and Maven cache):
#   loadtest/gpu-check/pack.sh            # SKIP_BUILD=1 reuses the last build; JDK=... another JDK 17
# Prints the bundle's size and the working tree's: what travels must stay under 64 MiB together.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
JDK="${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}"
BUNDLE_DIR="$ROOT/.gpu-bundle"
LIMIT=$((64 * 1024 * 1024))
# Jars the Python engine does not need, left out to stay inside the 64 MiB that travels:
#   pytorch-native-cpu (106 MiB) and onnxruntime (131 MiB): the PyTorch and ONNX Runtime natives;
#   pytorch-engine, pytorch-jni, api (DJL), jna, commons-compress, commons-io, commons-codec: DJL and its
#     dependencies, used by the PyTorch engine only (gson stays: protobuf-java-util, which gRPC links, uses it);
#   hazelcast, vertx-hazelcast (17 MiB): clustering; the check runs one `kiln up` node, which never clusters.
# Kiln names these engines' classes only inside their own runners (DjlModelRunner, OnnxModelRunner), which
# are loaded but never link DJL or ONNX Runtime classes unless such a model is deployed: checked with
# -verbose:class (no ai.djl.*, ai.onnxruntime.* or com.hazelcast.* class loads) and by the CPU-mode run.
EXCLUDE_RE='^(pytorch-native-.*|onnxruntime-[0-9].*|pytorch-engine-.*|pytorch-jni-.*|api-[0-9].*|jna-.*|commons-compress-.*|commons-io-.*|commons-codec-.*|hazelcast-.*|vertx-hazelcast-.*)\.jar$'
# Modules jdeps finds but the bundle leaves out: java.desktop (11 MB) is named only by micrometer-core's
# Log4j2Metrics (java.beans listeners; Kiln registers no Log4j2 binder) and by the excluded DJL/JNA jars.
DROP_MODULES_RE='^(java\.desktop)$'
# Modules added whatever jdeps says: reflective and optional uses it cannot see (Netty's sun.misc.Unsafe,
# Micrometer's JVM metrics through com.sun.management, Netty's JFR events, TLS curves for https clients).
EXTRA_MODULES=(java.management jdk.management jdk.unsupported jdk.crypto.ec jdk.jfr java.logging)

log() { echo "[pack.sh] $*" >&2; }
die() { echo "pack.sh: $*" >&2; exit 1; }

[[ -x "$JDK/bin/jlink" && -x "$JDK/bin/jdeps" ]] || die "no jlink/jdeps in $JDK (set JDK to a JDK 17)"
"$JDK/bin/java" -version 2>&1 | grep -q 'version "17' || die "$JDK is not a JDK 17 (Kiln targets 17)"
command -v xz >/dev/null || die "xz is needed (apt-get install xz-utils)"

cd "$ROOT"
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  log "building the distribution and the load generator (offline)"
  ./mvnw -B -o -q -pl deploy,loadtest -am -DskipTests package dependency:build-classpath \
    -DincludeScope=runtime -Dmdep.outputFile=target/gpu-check.cp >/dev/null
fi
KILN_JAR="$ROOT/deploy/target/kiln.jar"
LT_JAR=""
for j in "$ROOT"/loadtest/target/kiln-loadtest-*.jar; do [[ "$j" == *-tests.jar ]] || LT_JAR="$j"; done
[[ -f "$KILN_JAR" && -f "$LT_JAR" && -f "$ROOT/loadtest/target/gpu-check.cp" ]] \
  || die "build output missing (run without SKIP_BUILD=1)"

STAGE="$(mktemp -d /tmp/kiln-gpu-bundle.XXXXXX)"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/lib" "$STAGE/loadtest"
cp "$KILN_JAR" "$STAGE/kiln.jar"
cp "$LT_JAR" "$STAGE/loadtest/kiln-loadtest.jar"
excluded=()
for j in "$ROOT"/deploy/target/lib/*.jar; do
  b="$(basename "$j")"
  if [[ "$b" =~ $EXCLUDE_RE ]]; then excluded+=("$b"); else cp "$j" "$STAGE/lib/"; fi
done
# The load generator's runtime classpath, as paths inside the bundle: lib/NAME where Kiln ships the same
# file, else loadtest/lib/NAME (e.g. an older gson that protobuf-java-util asks for there).
mkdir -p "$STAGE/loadtest/lib"
cp_entries=("loadtest/kiln-loadtest.jar")
while read -r j; do
  [[ -n "$j" ]] || continue
  b="$(basename "$j")"
  [[ -f "$j" ]] || die "load generator classpath entry is not a jar: $j"
  if [[ -f "$STAGE/lib/$b" ]]; then
    cp_entries+=("lib/$b")
  else
    [[ "$b" =~ $EXCLUDE_RE ]] && log "the load generator needs $b, which Kiln's lib/ leaves out: it goes to loadtest/lib/"
    cp "$j" "$STAGE/loadtest/lib/"
    cp_entries+=("loadtest/lib/$b")
  fi
done < <(tr ':' '\n' <"$ROOT/loadtest/target/gpu-check.cp")
(IFS=:; echo "${cp_entries[*]}") >"$STAGE/loadtest/classpath.txt"

log "finding the Java modules (jdeps over kiln.jar, the load generator and lib/)"
mods_file="$STAGE/modules.txt"
: >"$mods_file"
for j in "$STAGE/kiln.jar" "$STAGE/loadtest/kiln-loadtest.jar" "$STAGE"/lib/*.jar "$STAGE"/loadtest/lib/*.jar; do
  # Modular jars need the others on the module path; plain ones are analysed alone. --ignore-missing-deps:
  # references into excluded jars (DJL, Hazelcast) are expected.
  out="$("$JDK/bin/jdeps" --print-module-deps --ignore-missing-deps --multi-release 17 "$j" 2>/dev/null)" \
    || out="$("$JDK/bin/jdeps" --module-path "$STAGE/lib" --print-module-deps --ignore-missing-deps --multi-release 17 "$j" 2>/dev/null)" \
    || { log "jdeps could not analyse $(basename "$j"); relying on the others and the fixed extras"; continue; }
  tr ',' '\n' <<<"$out" | grep -E '^(java|jdk)\.' >>"$mods_file" || true
done
printf '%s\n' "${EXTRA_MODULES[@]}" >>"$mods_file"
MODULES="$(sort -u "$mods_file" | grep -Ev "$DROP_MODULES_RE" | paste -sd, -)"
log "modules: $MODULES"

log "jlink (--strip-debug --no-man-pages --no-header-files --compress=2)"
"$JDK/bin/jlink" --add-modules "$MODULES" --strip-debug --no-man-pages --no-header-files --compress=2 \
  --output "$STAGE/jre"
"$STAGE/jre/bin/java" -version >/dev/null 2>&1 || die "the jlink'ed runtime does not start"

commit="$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- . ':!.gpu-bundle' 2>/dev/null || echo '+dirty')"
{
  echo "Kiln device-check bundle, built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $commit on $(hostname)"
  echo "java: $("$STAGE/jre/bin/java" -version 2>&1 | head -1)"
  echo "modules: $MODULES"
  echo "excluded jars: ${excluded[*]}"
  echo "sizes (bytes, unpacked): jre $(du -sb "$STAGE/jre" | cut -f1), lib $(du -sb "$STAGE/lib" | cut -f1), kiln.jar $(stat -c %s "$STAGE/kiln.jar"), loadtest $(du -sb "$STAGE/loadtest" | cut -f1)"
  echo "jars in lib/:"
  (cd "$STAGE/lib" && ls -1)
} >"$STAGE/BUNDLE.txt"

mkdir -p "$BUNDLE_DIR"
rm -f "$BUNDLE_DIR"/kiln-gpu-bundle.tar.xz "$BUNDLE_DIR"/BUNDLE.txt
log "packing (xz)"
tar -C "$STAGE" -cf - BUNDLE.txt jre kiln.jar lib loadtest | xz -T0 -6 >"$BUNDLE_DIR/kiln-gpu-bundle.tar.xz"
cp "$STAGE/BUNDLE.txt" "$BUNDLE_DIR/BUNDLE.txt"
(cd "$BUNDLE_DIR" && sha256sum kiln-gpu-bundle.tar.xz >kiln-gpu-bundle.tar.xz.sha256)

# Never commit the bundle: ignore it in this clone only (.git/info/exclude, found through git for worktrees).
exclude="$(git -C "$ROOT" rev-parse --git-path info/exclude)"
[[ "$exclude" = /* ]] || exclude="$ROOT/$exclude"
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.gpu-bundle/' "$exclude" 2>/dev/null || echo '/.gpu-bundle/' >>"$exclude"
git -C "$ROOT" check-ignore -q .gpu-bundle/BUNDLE.txt || die ".gpu-bundle/ is not ignored by git"

bundle=$(du -cb "$BUNDLE_DIR"/* | tail -1 | cut -f1)
tree=$(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null | awk '$2 == "total" {s += $1} END {print s + 0}')
tracked=$(cd "$ROOT" && git ls-files -z | xargs -0 du -cb 2>/dev/null | awk '$2 == "total" {s += $1} END {print s + 0}')
total=$((bundle + tree))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "bundle:        $(mib "$bundle") ($bundle bytes) in $BUNDLE_DIR (unpacked: $(du -sb "$STAGE" | cut -f1) bytes)"
echo "working tree:  $(mib "$tree") ($tree bytes: tracked and untracked-not-ignored; tracked alone $tracked)"
echo "travels:       $(mib "$total") of 64 MiB"
if ((total > LIMIT * 9 / 10)); then
  die "what travels ($(mib "$total")) is within 10 % of the 64 MiB limit: trim the bundle or the tree"
fi
echo "device call:   carry [\".gpu-bundle\"], command: see loadtest/gpu-check/README.md"
