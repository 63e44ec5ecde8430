#!/usr/bin/env bash
# Installs the official openai npm client (pinned, package-lock.json's integrity checked by `npm ci`) for deploy's
# LlmEndToEndTest, which drives a node with it as an independent client. A no-op when it is already installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if [ -f node_modules/openai/package.json ] && grep -q '"version": "7.60.0"' node_modules/openai/package.json; then
  exit 0
fi
command -v npm >/dev/null || { echo "fetch.sh: needs npm (e.g. apt-get install -y npm)" >&2; exit 1; }
npm ci --no-audit --no-fund --silent
echo "fetch.sh: openai@7.60.0 -> $(pwd)/node_modules" >&2
