"""Text in, text out: Kiln's BYTES datatype with a Python model.

A BYTES input arrives as a numpy object array of bytes, of the tensor's shape. A BYTES output may be an object
array of bytes or str (str goes out as UTF-8), or a numpy S or U array.

Upper.predict: text BYTES [-1] -> upper BYTES [-1] (each string upper-cased) and length INT32 [-1] (its length
in characters). Words.predict_stream: text BYTES [-1] -> word BYTES [-1], one yield per word of the first row.
"""
import numpy as np


class Upper:
    def predict(self, inputs):
        text = [b.decode("utf-8") for b in inputs["text"].reshape(-1)]
        shape = inputs["text"].shape
        upper = np.array([s.upper() for s in text], dtype=object).reshape(shape)
        length = np.array([len(s) for s in text], dtype=np.int32).reshape(shape)
        return {"upper": upper, "length": length}


class Words:
    def predict_stream(self, inputs):
        text = inputs["text"]
        rows = text.shape[0]
        for word in text[0].decode("utf-8").split():
            yield {"word": np.array([word + " "] * rows)}  # a numpy U array: one word per row per step
