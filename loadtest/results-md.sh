#!/usr/bin/env bash
# Regenerates the measured part of loadtest/RESULTS.md (between its GENERATED markers) from the latest
# complete folder of every scenario in loadtest/results/ (written by run.sh and the bench-*.sh scripts).
# Builds the load generator first when it is missing or stale (lib.sh's loadtest_build; SKIP_BUILD=1 reuses the last
# build, LOADTEST_BUILD=module builds the loadtest module alone).
# Usage: loadtest/results-md.sh [--results DIR] [--out FILE.md]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=loadtest/lib.sh
source loadtest/lib.sh
loadtest_build
exec "${JAVA:-java}" -cp "$CP" io.kiln.loadtest.ResultsMarkdown "$@"
