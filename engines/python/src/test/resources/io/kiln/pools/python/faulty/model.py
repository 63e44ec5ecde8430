"""A test model for Kiln's Python engine: y = x * scale, with faults chosen by marker values in x.

Input x: FP32 [-1, 4]; output y: FP32 [-1, 4]. A batch holding
    13  raises ValueError (a predict that fails its batch)
    66  calls os._exit(3) (the process dies mid-batch)
    77  sleeps an hour (a hang)
    88  sleeps an hour the first time only (config marker_dir gets a file 'started' first), so that a test
        can SIGKILL the process mid-batch and the re-queued batch then succeeds
    99  writes garbage to the frame channel (as a native library writing to the wrong descriptor would)
config: scale (default 2), marker_dir, expect (a dict of environment variable -> value that load checks,
        with "device" checked against the device argument).
Every call also prints, to prove that prints cannot corrupt the frame channel.
"""
import os
import sys
import time

import numpy as np


class Model:
    def load(self, config, device):
        print("faulty model loading on", device, "with", config)
        self.scale = float(config.get("scale", 2))
        self.marker_dir = config.get("marker_dir")
        for name, want in config.get("expect", {}).items():
            got = device if name == "device" else os.environ.get(name)
            if got != want:
                raise RuntimeError("expected %s=%r, got %r" % (name, want, got))

    def warmup(self):
        print("faulty model warming up")

    def predict(self, inputs):
        x = inputs["x"]
        print("predict on", x.shape[0], "rows")
        if (x == 13).any():
            raise ValueError("unlucky 13 in a batch of %d rows" % x.shape[0])
        if (x == 66).any():
            sys.stderr.write("about to exit with code 3\n")
            os._exit(3)
        if (x == 77).any():
            time.sleep(3600)
        if (x == 88).any() and self.marker_dir:
            started = os.path.join(self.marker_dir, "started")
            if not os.path.exists(started):
                open(started, "w").close()
                time.sleep(3600)
        if (x == 99).any():
            main = sys.modules["__main__"]
            main._out.write(b"this is not a frame\n" * 4)
            main._out.flush()
            time.sleep(3600)
        return {"y": x * self.scale}


class Echo:
    """Returns every input as the output named <input>_out: a round trip of every datatype."""

    def predict(self, inputs):
        return {name + "_out": a for name, a in inputs.items()}


class Sloppy:
    """Returns float64 for an FP32 output (cast, fine) or an int for a missing output (an error)."""

    def predict(self, inputs):
        x = inputs["x"].astype(np.float64)
        return {"y": x * 2} if (x >= 0).all() else {"z": x}


class BadText:
    """For a BYTES output `out`: numbers when the first input string is b"ints", floats for b"floats", else the input."""

    def predict(self, inputs):
        t = inputs["t"]
        if t.reshape(-1)[0] == b"ints":
            return {"out": np.array([1] * t.shape[0], dtype=object)}
        if t.reshape(-1)[0] == b"floats":
            return {"out": np.zeros(t.shape[0])}
        return {"out": t}
