#!/usr/bin/env bash
# Lays out under PREFIX the files deploy/k8s/Dockerfile puts into the image, from this checkout's build
# (./kiln or ./mvnw -pl deploy -am package first), for checking the image without a container engine:
#   PREFIX/opt/kiln/{kiln.jar,lib/,models/,deploy/examples/,bin/kiln-entrypoint}   (the COPY lines)
#   PREFIX/opt/java/openjdk/bin/java                                                (eclipse-temurin's JAVA_HOME)
#   PREFIX/usr/bin/python3                           with --python (the python target's python3 + python3-numpy)
# Large directories are symbolic links into the checkout, not copies. PythonImageIT runs the entrypoint from here.
#   deploy/k8s/image-rootfs.sh [--python] PREFIX
set -euo pipefail
python=false
if [ "${1:-}" = "--python" ]; then python=true; shift; fi
prefix="${1:?usage: image-rootfs.sh [--python] PREFIX}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ -f "$root/deploy/target/kiln.jar" ] || { echo "image-rootfs: no deploy/target/kiln.jar: build first (./kiln)" >&2; exit 1; }
mkdir -p "$prefix/opt/kiln/bin" "$prefix/opt/kiln/deploy" "$prefix/opt/kiln/.kiln" "$prefix/var/cache/kiln" \
  "$prefix/opt/java/openjdk/bin" "$prefix/usr/bin"
cp "$root/deploy/target/kiln.jar" "$prefix/opt/kiln/kiln.jar"
ln -sfn "$root/deploy/target/lib" "$prefix/opt/kiln/lib"
ln -sfn "$root/models" "$prefix/opt/kiln/models"
ln -sfn "$root/deploy/examples" "$prefix/opt/kiln/deploy/examples"
install -m 0755 "$root/deploy/k8s/kiln-entrypoint.sh" "$prefix/opt/kiln/bin/kiln-entrypoint"
java="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}/bin/java"
ln -sfn "$java" "$prefix/opt/java/openjdk/bin/java"
if $python; then
  # Debian's interpreter with python3-numpy, as the python target's apt-get install gives the image.
  /usr/bin/python3 -c 'import numpy' || { echo "image-rootfs: /usr/bin/python3 has no numpy (apt-get install python3-numpy)" >&2; exit 1; }
  ln -sfn /usr/bin/python3 "$prefix/usr/bin/python3"
fi
