#!/usr/bin/env bash
# The OCR example's figures: det and rec calls/s over Kiln's HTTP binary path vs ONNX Runtime in-process (one
# session, the threads of ocr.yaml) at concurrency 1 and 16, then images/s through the pipeline vs det+rec
# called directly (which leaves out the Python pre/post-processing, so it is an upper bound). Side by side in
# one run: on a shared machine quote the ratios, not the absolute figures.
# Usage: deploy/examples/ocr/bench.sh [seconds per measurement, default 5]   (port: OCR_BENCH_PORT, default 18431)
set -euo pipefail
cd "$(dirname "$0")/../../.."
SECONDS_EACH=${1:-5}
PORT=${OCR_BENCH_PORT:-18431}
PY=${PYTHON:-/usr/bin/python3}
models/ocr/fetch.sh
work=$(mktemp -d)
kiln_pid=
cleanup() { [ -n "$kiln_pid" ] && kill "$kiln_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# The inputs: one rendered image (two lines), its det tensor, and its crops' rec tensor (the example's own code).
"$PY" - "$work" <<'PYEOF'
import sys
sys.path.insert(0, "deploy/examples/ocr")
import numpy as np
from PIL import Image, ImageDraw, ImageFont
import model
work = sys.argv[1]
font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 32)
im = Image.new("RGB", (720, 180), "white")
d = ImageDraw.Draw(im)
d.text((24, 24), "Hello Kiln", font=font, fill="black")
d.text((24, 94), "warm models", font=font, fill="black")
im.save(work + "/image.png")
raw = np.frombuffer(open(work + "/image.png", "rb").read(), dtype=np.uint8)[None]
x = model.DetPre().predict({"image": raw})["x"]
x.astype("<f4").tofile(work + "/det.f32"); open(work + "/det.shape", "w").write(",".join(map(str, x.shape)))
# Rec input: two crops of the rendered lines' rough boxes (the bench measures the model, not the detector).
img = model.decode_image(raw[0])
boxes = [np.array([[16, 16], [260, 16], [260, 70], [16, 70]], np.float32),
         np.array([[16, 86], [280, 86], [280, 140], [16, 140]], np.float32)]
r = model.rec_batch([model.crop(img, b) for b in boxes])
r.astype("<f4").tofile(work + "/rec.f32"); open(work + "/rec.shape", "w").write(",".join(map(str, r.shape)))
PYEOF

[ -f deploy/target/kiln.jar ] || ./kiln --version >/dev/null
sed "s|interpreter: python3|interpreter: $PY|" deploy/examples/ocr/ocr.yaml > deploy/examples/ocr/.bench.yaml
java -jar deploy/target/kiln.jar up --file deploy/examples/ocr/.bench.yaml --host 127.0.0.1 --port "$PORT" \
  --grpc-port $((PORT + 1)) >"$work/kiln.log" 2>&1 &
kiln_pid=$!
for _ in $(seq 600); do
  curl -sf "http://127.0.0.1:$PORT/v2/models/ocr-ctc/ready" >/dev/null 2>&1 && break
  kill -0 "$kiln_pid" 2>/dev/null || { cat "$work/kiln.log" >&2; exit 1; }
  sleep 1
done
# kiln up serves the file's deployments; its pipelines are applied with deploy.
java -jar deploy/target/kiln.jar deploy deploy/examples/ocr/.bench.yaml --address "http://127.0.0.1:$PORT" >/dev/null
rm -f deploy/examples/ocr/.bench.yaml
ORT=$(ls ~/.m2/repository/com/microsoft/onnxruntime/onnxruntime/*/onnxruntime-*.jar | grep -v sources | head -1)
echo "[ocr] commit $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, ${SECONDS_EACH}s each"
java -Xmx1g -cp "$ORT" deploy/examples/ocr/OcrBench.java "$PORT" "$work" "$SECONDS_EACH"
