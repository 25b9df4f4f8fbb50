#!/usr/bin/env python3
"""Writes tests/cli/tiny_tokenizer/tokenizer.json: a byte-level BPE with one
token per byte (ids 0-255), <s> = 256, </s> = 257, and merges only for runs
of 'a' (2, 4, ..., 512 of them: ids 258-266), so that its 267 ids fit the
512-entry logits of tests/models/llama and a line of 70,000 bytes can be a
few hundred tokens. The CLI tests store it in models they import from that
fixture. Run from the repository root."""
import json


def bytes_to_unicode():
    # GPT-2's printable stand-ins for the 256 byte values
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def special(content, id_):
    return {"id": id_, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


vocab = {ch: b for b, ch in sorted(bytes_to_unicode().items())}
merges = []
for k in range(1, 10):
    half = "a" * (1 << (k - 1))
    merges.append(f"{half} {half}")
    vocab[half * 2] = 257 + k
byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
tok = {
    "version": "1.0",
    "truncation": None,
    "padding": None,
    "added_tokens": [special("<s>", 256), special("</s>", 257)],
    "normalizer": None,
    "pre_tokenizer": byte_level,
    "post_processor": {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [256], "tokens": ["<s>"]}},
    },
    "decoder": byte_level,
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
              "vocab": vocab, "merges": merges},
}
with open("tests/cli/tiny_tokenizer/tokenizer.json", "w", encoding="utf-8") as f:
    json.dump(tok, f, ensure_ascii=False, indent=1)
    f.write("\n")
