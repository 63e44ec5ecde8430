"""A streaming test model: x FP32 [-1, 4] -> y FP32 [-1, 4], and no predict at all.

predict_stream yields n chunks, chunk i being {"y": x + i}; n is x[0, 1] when positive, else config "chunks" (3).
x[0, 0] == -1 makes it raise at chunk 2. config "delay_s" sleeps between chunks (a model's step). When config
names a "closed_marker" file, the generator appends a line to it when it ends for any reason, closed early
(GeneratorExit) included.
"""
import time


class Model:
    def load(self, config, device):
        self.chunks = int(config.get("chunks", 3))
        self.delay = float(config.get("delay_s", 0))
        self.marker = config.get("closed_marker")

    def predict_stream(self, inputs):
        x = inputs["x"]
        n = int(x[0, 1]) if x[0, 1] > 0 else self.chunks
        try:
            for i in range(n):
                if x[0, 0] == -1 and i == 2:
                    raise ValueError("asked to fail at chunk 2")
                if i and self.delay:
                    time.sleep(self.delay)
                yield {"y": x + i}
        finally:
            if self.marker:
                with open(self.marker, "a") as f:
                    f.write("ended\n")
