#!/usr/bin/env bash
# Regenerates the measured part of loadtest/RESULTS.md (between its GENERATED markers) from the latest
# complete folder of every scenario in loadtest/results/ (written by run.sh and the bench-*.sh scripts).
# Usage: loadtest/results-md.sh [--results DIR] [--out FILE.md]      SKIP_BUILD=1 reuses the last build
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
if [[ "${SKIP_BUILD:-0}" != 1 || ! -d loadtest/target/lib ]]; then
  ./mvnw -B -q -pl loadtest -am -DskipTests package dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory=target/lib
fi
CP="$(ls loadtest/target/kiln-loadtest-*.jar | grep -v -- '-tests.jar' | head -1):loadtest/target/lib/*"
exec "${JAVA:-java}" -cp "$CP" io.kiln.loadtest.ResultsMarkdown "$@"
