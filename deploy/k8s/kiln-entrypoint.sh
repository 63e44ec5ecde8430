#!/bin/sh
# The image's ENTRYPOINT (deploy/k8s/Dockerfile): runs its arguments (java and the kiln script's flags, then the
# container's args) with the heap sized from the environment.
#   KILN_HEAP_PERCENT  heap as a percentage of the container's memory limit (default 40, at most 50): ONNX
#                      Runtime's and libtorch's native memory and the Python engine's processes (one per worker)
#                      live outside the heap, inside the same limit.
#   KILN_HEAP_MAX      an explicit maximum heap instead (a -Xmx size: 1536m, 2g); wins over the percentage.
set -eu
heap_percent="${KILN_HEAP_PERCENT:-40}"
case "$heap_percent" in
  ''|*[!0-9]*) echo "kiln-entrypoint: KILN_HEAP_PERCENT must be a whole percentage (1-50), got '$heap_percent'" >&2; exit 64 ;;
esac
if [ "$heap_percent" -lt 1 ] || [ "$heap_percent" -gt 50 ]; then
  echo "kiln-entrypoint: KILN_HEAP_PERCENT must be 1-50 (native engines and Python workers need the rest), got $heap_percent" >&2
  exit 64
fi
heap="-XX:MaxRAMPercentage=$heap_percent"
if [ -n "${KILN_HEAP_MAX:-}" ]; then
  case "$KILN_HEAP_MAX" in
    *[!0-9kKmMgG]*|[!0-9]*) echo "kiln-entrypoint: KILN_HEAP_MAX must be a size like 1536m or 2g, got '$KILN_HEAP_MAX'" >&2; exit 64 ;;
  esac
  heap="-Xmx$KILN_HEAP_MAX"
fi
java="$1"
shift
exec "$java" "$heap" "$@"
