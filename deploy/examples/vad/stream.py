#!/usr/bin/env python3
"""Streams a WAV file through Kiln's `vad` deployment as one sequence, a 512-sample chunk per request.

The server keeps Silero VAD's state between chunks (deploy/examples/vad/vad.yaml, docs/sequences.md): each request
carries the chunk, the sample rate and the sequence parameters, never the state. Prints each chunk's speech
probability and the spans it judges speech (probability >= --threshold). Standard library only.

  python3 deploy/examples/vad/stream.py speech.wav [--url http://127.0.0.1:8000] [--id 42]

The WAV must be 16 kHz mono 16-bit PCM (sox in.wav -r 16000 -c 1 -b 16 speech.wav makes one).
"""
import argparse
import json
import struct
import sys
import urllib.error
import urllib.request
import wave

CHUNK = 512
RATE = 16000


def chunks(path):
    with wave.open(path, "rb") as w:
        if w.getframerate() != RATE or w.getnchannels() != 1 or w.getsampwidth() != 2:
            sys.exit(f"{path}: need 16 kHz mono 16-bit PCM, got {w.getframerate()} Hz, {w.getnchannels()} channels,"
                     f" {8 * w.getsampwidth()}-bit")
        frames = w.readframes(w.getnframes())
    samples = [s / 32768.0 for s in struct.unpack(f"<{len(frames) // 2}h", frames)]
    for i in range(0, len(samples) - CHUNK + 1, CHUNK):
        yield samples[i:i + CHUNK]


def infer(url, body):
    req = urllib.request.Request(url + "/v2/models/vad/infer", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        sys.exit(f"HTTP {e.code}: {e.read().decode(errors='replace')}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("wav")
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--id", default="42", help="the sequence id (a number or a string)")
    p.add_argument("--threshold", type=float, default=0.5)
    a = p.parse_args()
    seq = int(a.id) if a.id.isdigit() else a.id
    all_chunks = list(chunks(a.wav))
    speech_from = None
    for n, chunk in enumerate(all_chunks):
        params = {"sequence_id": seq}
        if n == 0:
            params["sequence_start"] = True
        if n == len(all_chunks) - 1:
            params["sequence_end"] = True
        answer = infer(a.url, {"parameters": params, "inputs": [
            {"name": "input", "datatype": "FP32", "shape": [1, CHUNK], "data": chunk},
            {"name": "sr", "datatype": "INT64", "shape": [], "data": RATE}]})
        prob = answer["outputs"][0]["data"][0]
        t = n * CHUNK / RATE
        print(f"{t:7.3f} s  {prob:.4f}  {'#' * int(prob * 40)}")
        if prob >= a.threshold and speech_from is None:
            speech_from = t
        elif prob < a.threshold and speech_from is not None:
            print(f"speech {speech_from:.3f}-{t:.3f} s", file=sys.stderr)
            speech_from = None
    if speech_from is not None:
        print(f"speech {speech_from:.3f}-{len(all_chunks) * CHUNK / RATE:.3f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
