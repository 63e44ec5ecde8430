"""A token generator in the shape of a language model's decoding loop, for Kiln's streaming endpoints.

predict_stream is a generator: Kiln pulls one yield at a time (only while the client reads) and closes the
generator when the client goes away. Each step "decodes" the next token as (last token + 1) % vocab, so the
output is easy to check: prompt [5, 6, 7] with max_tokens 4 streams 8, 9, 10, 11.
"""
import numpy as np


class Model:
    def load(self, config, device):
        self.vocab = int(config.get("vocab", 32000))

    def predict_stream(self, inputs):
        prompt = inputs["prompt"]                     # INT64 [rows, prompt length]
        steps = int(inputs["max_tokens"].max())       # INT32 [rows, 1]
        last = prompt[:, -1:].astype(np.int64)
        for _ in range(steps):
            last = (last + 1) % self.vocab
            yield {"token": last}                     # INT64 [rows, 1]: one token per row per step
