#!/usr/bin/env python3
"""Train vkllm's bundled model: a byte-level BPE tokenizer (HF tokenizers, vocab 4096) and a small
Llama (transformers LlamaForCausalLM, about 6.5M parameters) on the King James Bible, then export it
to ONNX with the fixtures' exporter (model/export_onnx.py), check the export with ONNX Runtime,
write a `vkllm check` fixture and a greedy sample, and pack what comes back into --out.

  python3 model/train.py --data model/data --out $OUT --minutes 4

--data holds train.txt and heldout.txt from model/prepare_data.sh. Every 40th training verse is
kept apart as a validation set (model selection and early stopping); heldout.txt is only measured.
Training is time-boxed: --minutes of wall clock over all runs of --grid (each "dropout:epochs"),
the best run by validation loss is kept. Everything is seeded (--seed); GPU kernels may still
differ in the last bits between runs.

What lands in --out (at most 7 files, so that a `tee $OUT/train.log` makes 8):
  model.onnx.part-aa, -ab, ...  model.onnx in 15 MiB chunks (`cat model.onnx.part-* > model.onnx`)
  kjv-bundle.tar.gz             tokenizer/{tokenizer.json,tokenizer_config.json}, fixture/kjv/
                                (manifest.json + step*.npy, model.onnx left out), loss.csv,
                                sample.json, metrics.json, heldout.ids.txt, model.onnx.sha256
  loss.csv, sample.json         copies, readable without unpacking
If a step after training fails, the trained weights come back instead as ckpt.pt.part-* and
`--from-checkpoint ckpt.pt` redoes everything after training.

--dry-run reads the data, parses the arguments and checks the chat template (with jinja2 if
present) without importing torch, tokenizers or numpy.
"""

import argparse
import csv
import hashlib
import json
import math
import os
import shutil
import sys
import tarfile
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<pad>"]   # ids 0, 1, 2, 3
BOS, EOS = "<s>", "</s>"
CHUNK = 15 * 1024 * 1024          # `split -b 15M`
MAX_OUT_FILES = 7                 # the 8th is train.log
VAL_EVERY, VAL_OFFSET = 40, 20    # training verse j is validation when j % 40 == 20
SAMPLE_PROMPT = "In the beginning"
EXTRA_PROMPTS = ["And the LORD said unto Moses,", "Blessed are the", "The LORD is my shepherd;",
                 "And it came to pass"]
FIXTURE_TEXT = "In the beginning God created the heaven and the earth."

# Completion-style template: the model was never trained on dialogue, so the conversation is just
# its messages, one per line, after <s>; the model continues the last one. (The line break has to
# be a string literal: transformers renders with trim_blocks, which drops a newline after a tag.)
CHAT_TEMPLATE = ("{{ bos_token }}{% for message in messages %}{% if not loop.first %}{{ '\\n' }}{% endif %}"
                 "{{ message['content'] }}{% endfor %}")

MODEL_SHAPE = dict(vocab_size=4096, hidden_size=256, intermediate_size=688, num_hidden_layers=6,
                   num_attention_heads=8, num_key_value_heads=4, head_dim=32, max_position_embeddings=512,
                   rms_norm_eps=1e-6, initializer_range=0.02, hidden_act="silu",
                   bos_token_id=1, eos_token_id=2, pad_token_id=None, tie_word_embeddings=False)
ROPE_THETA = 10000.0              # transformers' Llama default; checked after the config is built


def log(*a):
    print(*a, flush=True)


# ----------------------------------------------------------------------------- data (no torch)

def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [ln.rstrip("\n") for ln in f]


def load_data(data_dir):
    """train.txt: verses, an empty line between chapters. Returns (chapters of training verses,
    validation verses, held-out verses)."""
    tp, hp = os.path.join(data_dir, "train.txt"), os.path.join(data_dir, "heldout.txt")
    for p in (tp, hp):
        if not os.path.isfile(p):
            raise SystemExit("missing %s: run model/prepare_data.sh (train.txt is git-ignored; on the GPU "
                             "machine name it in the run's carry list)" % p)
    chapters, val, cur, j = [], [], [], 0
    for ln in read_lines(tp):
        if not ln:
            if cur:
                chapters.append(cur)
            cur = []
            continue
        if j % VAL_EVERY == VAL_OFFSET:
            val.append(ln)
        else:
            cur.append(ln)
        j += 1
    if cur:
        chapters.append(cur)
    held = [ln for ln in read_lines(hp) if ln]
    if not chapters or not val or not held:
        raise SystemExit("empty data in %s" % data_dir)
    return chapters, val, held


def parse_grid(s):
    runs = []
    for item in s.split(","):
        d, e = item.split(":")
        d, e = float(d), float(e)
        if not (0 <= d < 1 and e > 0):
            raise ValueError(item)
        runs.append((d, e))
    if not runs:
        raise ValueError("empty grid")
    return runs


def tokenizer_config():
    return {
        "add_bos_token": True, "add_eos_token": False,
        "bos_token": BOS, "eos_token": EOS, "unk_token": "<unk>", "pad_token": "<pad>",
        "clean_up_tokenization_spaces": False, "model_max_length": MODEL_SHAPE["max_position_embeddings"],
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": {str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                                          "single_word": False, "special": True}
                                 for i, t in enumerate(SPECIAL_TOKENS)},
        "chat_template": CHAT_TEMPLATE,
    }


def render_chat_template(messages, add_generation_prompt=True):
    """Renders CHAT_TEMPLATE with jinja2 if it is installed (None otherwise)."""
    try:
        import jinja2
    except ImportError:
        return None
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)   # what transformers uses
    return env.from_string(CHAT_TEMPLATE).render(messages=messages, bos_token=BOS, eos_token=EOS,
                                                 add_generation_prompt=add_generation_prompt)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def split_file(path, out_dir, prefix):
    """Writes path in CHUNK-byte pieces named <prefix>aa, ab, ... (as `split -b 15M`)."""
    names = []
    with open(path, "rb") as f:
        k = 0
        while True:
            b = f.read(CHUNK)
            if not b:
                break
            name = prefix + chr(ord("a") + k // 26) + chr(ord("a") + k % 26)
            with open(os.path.join(out_dir, name), "wb") as g:
                g.write(b)
            names.append(name)
            k += 1
    return names


def make_bundle(work, out, files):
    """kjv-bundle.tar.gz in out from work/<relative path> for each existing relative path
    (folders recursively), skipping model.onnx and checkpoints."""
    path = os.path.join(out, "kjv-bundle.tar.gz")
    with tarfile.open(path, "w:gz") as tf:
        for rel in files:
            src = os.path.join(work, rel)
            if os.path.exists(src):
                tf.add(src, arcname=rel, filter=lambda ti: None if ti.name.endswith(("model.onnx", ".pt")) else ti)
    return path


def dry_run(args, chapters, val, held):
    n_train = sum(len(c) for c in chapters)
    tb = sum(len(v) + 1 for c in chapters for v in c)
    log("dry run: %d chapters, %d training verses (%d bytes), %d validation verses, %d held-out verses (%d bytes)"
        % (len(chapters), n_train, tb, len(val), len(held), sum(len(v) + 1 for v in held)))
    log("grid %s, %.1f minutes of training, batch %d x seq %d, lr %g, seed %d"
        % (parse_grid(args.grid), args.minutes, args.batch, args.seq_len, args.lr, args.seed))
    log("tokenizer_config.json:", json.dumps(tokenizer_config())[:200], "...")
    r = render_chat_template([{"role": "user", "content": "And God said,"},
                              {"role": "assistant", "content": "Let there be light."},
                              {"role": "user", "content": "And the evening"}])
    log("chat template renders:", repr(r) if r is not None else "(jinja2 not installed: not checked)")
    if r is not None:
        assert r == "<s>And God said,\nLet there be light.\nAnd the evening", r
    log("out %s: would write model.onnx.part-*, kjv-bundle.tar.gz, loss.csv, sample.json" % args.out)
    log("dry run ok")


# ----------------------------------------------------------------------------- tokenizer

def train_tokenizer(lines, vocab_size, path_dir):
    """Byte-level BPE (GPT-2 style, no prefix space) trained on `lines`; writes tokenizer.json and
    tokenizer_config.json into path_dir; returns the tokenizers.Tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(lines, trainer=trainer, length=len(lines))
    for i, t in enumerate(SPECIAL_TOKENS):
        if tok.token_to_id(t) != i:
            raise RuntimeError("special token %s has id %s, want %d" % (t, tok.token_to_id(t), i))
    bos = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(single="%s $A" % BOS, pair="%s $A:0 %s:1 $B:1" % (BOS, BOS),
                                                       special_tokens=[(BOS, bos)])
    os.makedirs(path_dir, exist_ok=True)
    tok.save(os.path.join(path_dir, "tokenizer.json"))
    with open(os.path.join(path_dir, "tokenizer_config.json"), "w") as f:
        json.dump(tokenizer_config(), f, indent=1)
    return tok


def check_tokenizer(tok, held, tok_dir, work):
    """Round trip on the held-out lines; reference ids (with <s>) written one line per held-out
    line to work/heldout.ids.txt; the transformers loader and chat template tried. Returns a dict."""
    encs = tok.encode_batch(held)
    bad = [i for i, (ln, e) in enumerate(zip(held, encs)) if tok.decode(e.ids, skip_special_tokens=True) != ln]
    with open(os.path.join(work, "heldout.ids.txt"), "w") as f:
        for e in encs:
            f.write(" ".join(map(str, e.ids)) + "\n")
    n_tok = sum(len(e.ids) - 1 for e in encs)
    info = {"vocab_size": tok.get_vocab_size(), "heldout_lines": len(held), "heldout_tokens_without_bos": n_tok,
            "heldout_bytes_per_token": sum(len(x.encode()) for x in held) / max(1, n_tok),
            "roundtrip_mismatches": len(bad), "first_bos": all(e.ids[:1] == [1] for e in encs)}
    try:
        from transformers import AutoTokenizer
        ht = AutoTokenizer.from_pretrained(tok_dir)
        info["transformers_class"] = type(ht).__name__
        info["transformers_ids_equal"] = all(ht(ln)["input_ids"] == e.ids for ln, e in zip(held[:200], encs))
        msgs = [{"role": "user", "content": "And God said,"}]
        info["chat_template_render"] = ht.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    except Exception as e:  # informative only: vkllm reads the JSON files itself
        info["transformers_check_error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
    return info


# ----------------------------------------------------------------------------- model

def make_config(attn, dropout):
    from transformers import LlamaConfig
    cfg = LlamaConfig(attention_dropout=dropout, attn_implementation=attn, **MODEL_SHAPE)
    rp = getattr(cfg, "rope_parameters", None) or {}
    theta = rp.get("rope_theta", getattr(cfg, "rope_theta", None)) if isinstance(rp, dict) else None
    if theta is not None and float(theta) != ROPE_THETA:
        raise RuntimeError("rope_theta is %s, want %s" % (theta, ROPE_THETA))
    return cfg


def make_model(attn, dropout, seed):
    import torch
    from transformers import LlamaForCausalLM
    torch.manual_seed(seed)
    model = LlamaForCausalLM(make_config(attn, dropout)).float()
    return model


def add_dropout_hooks(model, p):
    """Residual dropout (embeddings, attention output, MLP output) as forward hooks: Llama has none
    of its own, and with ~1M training tokens the model would overfit quickly without it. Hooks
    keep the module tree and state_dict identical to a plain LlamaForCausalLM."""
    import torch.nn.functional as F
    if p <= 0:
        return []

    def drop(mod, inp, out):
        if isinstance(out, tuple):
            return (F.dropout(out[0], p, mod.training),) + tuple(out[1:])
        return F.dropout(out, p, mod.training)
    inner = model.model
    hooks = [inner.embed_tokens.register_forward_hook(drop)]
    for layer in inner.layers:
        hooks.append(layer.self_attn.register_forward_hook(drop))
        hooks.append(layer.mlp.register_forward_hook(drop))
    return hooks


def count_params(model):
    return sum(p.numel() for p in model.parameters())


# ----------------------------------------------------------------------------- training

class Data:
    """Token stream of the training chapters on the device, plus per-line eval sets."""

    def __init__(self, tok, chapters, val, held, seq_len, device):
        import torch
        eos = tok.token_to_id(EOS)
        self.bos = tok.token_to_id(BOS)
        stream, starts = [], []
        for ch in chapters:
            encs = tok.encode_batch([v + "\n" for v in ch], add_special_tokens=False)
            for e in encs:
                starts.append(len(stream))
                stream.extend(e.ids)
            stream.append(eos)          # chapter end
        self.n_tokens = len(stream)
        self.seq_len = seq_len
        self.stream = torch.tensor(stream, dtype=torch.long, device=device)
        ok = [s for s in starts if s + seq_len <= len(stream)]
        self.starts = torch.tensor(ok, dtype=torch.long, device=device)
        self.offs = torch.arange(seq_len, device=device)
        self.val = self.line_batches(tok, val, device)
        self.held = self.line_batches(tok, held, device)
        self.held_lines = held

    def batch(self, b, gen):
        import torch
        i = torch.randint(len(self.starts), (b,), generator=gen, device=self.starts.device)
        y = self.stream[self.starts[i][:, None] + self.offs[None, :]]
        x = torch.cat([torch.full((b, 1), self.bos, dtype=torch.long, device=y.device), y[:, :-1]], 1)
        return x, y

    def line_batches(self, tok, lines, device, per_batch=256):
        """Each line scored alone: <s> line \\n, every token after <s> predicted. Right padding
        (ignored by the loss; causal attention keeps it out of earlier positions)."""
        import torch
        encs = [[self.bos] + e.ids for e in tok.encode_batch([ln + "\n" for ln in lines], add_special_tokens=False)]
        order = sorted(range(len(encs)), key=lambda i: len(encs[i]))
        out = []
        for k in range(0, len(order), per_batch):
            idx = order[k:k + per_batch]
            T = max(len(encs[i]) for i in idx) - 1
            x = torch.zeros((len(idx), T), dtype=torch.long)
            y = torch.zeros((len(idx), T), dtype=torch.long)
            m = torch.zeros((len(idx), T), dtype=torch.float32)
            for r, i in enumerate(idx):
                s = encs[i]
                x[r, :len(s) - 1] = torch.tensor(s[:-1])
                y[r, :len(s) - 1] = torch.tensor(s[1:])
                m[r, :len(s) - 1] = 1
            out.append((idx, x.to(device), y.to(device), m.to(device)))
        return out


def eval_lines(model, batches, amp, n_lines=None):
    """Mean NLL per token over the line batches; with n_lines also the per-line NLL sums."""
    import torch
    import torch.nn.functional as F
    was = model.training
    model.eval()
    tot = torch.zeros((), dtype=torch.float64)
    cnt = 0.0
    per_line = [0.0] * n_lines if n_lines else None
    with torch.no_grad(), amp():
        for idx, x, y, m in batches:
            logits = model(input_ids=x, use_cache=False).logits.float()
            nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="none").view_as(y) * m
            tot += nll.double().sum().cpu()
            cnt += float(m.sum())
            if per_line is not None:
                for r, s in zip(idx, nll.sum(1).tolist()):
                    per_line[r] = s
    model.train(was)
    return float(tot) / cnt, cnt, per_line


def lr_at(step, total, warmup, peak, min_ratio):
    if step < warmup:
        return peak * (step + 1) / warmup
    p = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * p)))


def train_run(ri, dropout, epochs, budget_s, data, args, device, amp, rows):
    """One training run; returns (best val loss, best state_dict on the CPU, info)."""
    import torch
    import torch.nn.functional as F
    model = make_model("sdpa", dropout, args.seed).to(device)
    hooks = add_dropout_hooks(model, dropout)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt_kw = dict(lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    if device.type == "cuda":
        opt_kw["fused"] = True
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], **opt_kw)
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed * 1000 + ri)
    tok_per_step = args.batch * args.seq_len
    epoch_steps = max(1, int(epochs * data.n_tokens / tok_per_step))
    total = epoch_steps
    warmup = min(args.warmup, max(1, total // 10))
    t0 = time.time()
    best, best_state, best_step, since_best = float("inf"), None, -1, 0
    acc, acc_n, step, calibrated, stop_reason = None, 0, 0, False, "steps"
    t_calib = None
    model.train()
    while step < total:
        if step == args.calib_from:
            if device.type == "cuda":
                torch.cuda.synchronize()
            t_calib = time.time()
        if step == args.calib_to and t_calib is not None and not calibrated:
            if device.type == "cuda":
                torch.cuda.synchronize()
            per_step = (time.time() - t_calib) / (args.calib_to - args.calib_from)
            left = budget_s - (time.time() - t0)
            fit = step + int(0.85 * left / per_step)       # 15% kept for evaluations
            total = max(step + 1, min(epoch_steps, fit))
            calibrated = True
            log("run %d: %.1f ms/step, %d steps (%.1f epochs; epoch cap %d steps, time cap %d)"
                % (ri, per_step * 1e3, total, total * tok_per_step / data.n_tokens, epoch_steps, fit))
        lr = lr_at(step, total, warmup, args.lr, args.min_lr_ratio)
        for gp in opt.param_groups:
            gp["lr"] = lr
        x, y = data.batch(args.batch, gen)
        with amp():
            logits = model(input_ids=x, use_cache=False).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        step += 1
        d = loss.detach()
        acc = d if acc is None else acc + d
        acc_n += 1
        last = step >= total
        out_of_time = time.time() - t0 > budget_s
        if step % args.eval_every == 0 or last or out_of_time:
            tr = float(acc) / acc_n
            acc, acc_n = None, 0
            v, _, _ = eval_lines(model, data.val, amp)
            h, _, _ = eval_lines(model, data.held, amp)
            mark = ""
            if v < best:
                best, best_step, since_best, mark = v, step, 0, " *"
                best_state = {k: t.detach().to("cpu", copy=True) for k, t in model.state_dict().items()}
            else:
                since_best += 1
            el = time.time() - t0
            ep = step * tok_per_step / data.n_tokens
            rows.append({"run": ri, "dropout": dropout, "step": step, "epoch": round(ep, 3),
                         "tokens": step * tok_per_step, "lr": "%.3e" % lr, "train_loss": round(tr, 4),
                         "val_loss": round(v, 4), "heldout_loss": round(h, 4), "seconds": round(el, 1)})
            log("r%d %5d ep %5.1f lr %.1e train %.3f val %.3f held %.3f %5.0fs%s" % (ri, step, ep, lr, tr, v, h, el, mark))
            if out_of_time:
                stop_reason = "time"
                break
            if since_best >= args.patience:
                stop_reason = "early stop (no validation gain in %d evaluations)" % args.patience
                break
    for hk in hooks:
        hk.remove()
    info = {"run": ri, "dropout": dropout, "epochs_planned": epochs, "steps_planned": total, "steps_done": step,
            "best_step": best_step, "best_val_loss": best, "stop": stop_reason,
            "seconds": round(time.time() - t0, 1), "epochs_done": round(step * tok_per_step / data.n_tokens, 2)}
    log("run %d done: %s" % (ri, json.dumps(info)))
    del model, opt
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return best, best_state, info


# ----------------------------------------------------------------------------- after training

def greedy_torch(model, ids, n_new):
    import torch
    ids = list(ids)
    out = []
    with torch.no_grad():
        for _ in range(n_new):
            logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits
            nxt = int(torch.argmax(logits[0, -1]))
            out.append(nxt)
            ids.append(nxt)
    return out


def finish(model, tok, data, work, args, metrics):
    """Everything after training: held-out perplexity in fp32, export + ORT check, fixture,
    sample. `model` is an eager-attention LlamaForCausalLM in float32 on the CPU."""
    import numpy as np
    import torch
    import export_onnx as ex
    from contextlib import nullcontext

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model.to(dev).eval()
    nll, n_tok, per_line = eval_lines(model, data.held, nullcontext, n_lines=len(data.held_lines))
    hb = sum(len(x.encode()) + 1 for x in data.held_lines)
    metrics["heldout"] = {
        "method": "each held-out line alone: ids = [<s>] + encode(line + '\\n', no specials); NLL of every id "
                  "after <s>; float32, eager attention",
        "lines": len(data.held_lines), "tokens": int(n_tok), "bytes": hb,
        "nll_per_token": nll, "perplexity": math.exp(nll), "bits_per_byte": nll * n_tok / hb / math.log(2),
        "line_nll": [round(v, 4) for v in per_line]}
    log("held-out: %d lines, %d tokens, NLL %.4f/token, perplexity %.2f, %.3f bits/byte"
        % (len(data.held_lines), n_tok, nll, math.exp(nll), metrics["heldout"]["bits_per_byte"]))
    model.to("cpu")

    # ONNX export + reference fixture (prefill 7 tokens, 2 decode steps) on real text
    ftoks = tok.encode(FIXTURE_TEXT).ids
    need = ex.PREFILL_LEN + ex.DECODE_STEPS
    if len(ftoks) < need:
        ftoks += tok.encode(" And the earth was without form, and void", add_special_tokens=False).ids
    tokens = np.array([ftoks[:need]], dtype=np.int64)
    fdir = os.path.join(work, "fixture", "kjv")
    t0 = time.time()
    manifest, sess = ex.export_causal_lm(
        model, fdir, tokens, seed=args.seed, name="kjv",
        weights_note="trained: vkllm bundled model (model/train.py) on the King James Bible",
        extra={"tokens_text": tok.decode(ftoks[:need], skip_special_tokens=False)})
    onnx_path = os.path.join(fdir, "model.onnx")
    log("export: %.1fs, %d bytes, opset %s, %d nodes, past_mode %s, onnx checker %s"
        % (time.time() - t0, manifest["model_bytes"], manifest["opset"], manifest["num_nodes"],
           manifest["past_mode"], manifest["onnx_checker"]))
    for st in manifest["steps"]:
        w = st["ort_vs_torch_wrapper"]
        n = st["ort_vs_hf_model"]
        log("  step %d %-7s ORT vs torch: logits max|diff| %.3e (max|logit| %.2f), worst output %.3e; vs HF cache %.3e"
            % (st["step"], st["kind"], w["logits"]["max_abs_diff"], w["logits"]["ref_max_abs"],
               max(d.get("max_abs_diff", float("inf")) for d in w.values()),
               max(d.get("max_abs_diff", float("inf")) for d in n.values())))
    ins = {i["name"]: i["shape"] for i in manifest["graph_inputs"]}
    outs = {o["name"]: o["shape"] for o in manifest["graph_outputs"]}
    dims = manifest["dims"]
    want_in = {"input_ids": ["batch", "seq"], "attention_mask": ["batch", "total_seq"],
               "position_ids": ["batch", "seq"], "past_key_0": ["batch", dims["kv_heads"], "past", dims["head_dim"]]}
    want_out = {"logits": ["batch", "seq", dims["vocab"]],
                "present_key_0": ["batch", dims["kv_heads"], "total_seq", dims["head_dim"]]}
    iface_ok = all(ins.get(k) == v for k, v in want_in.items()) and all(outs.get(k) == v for k, v in want_out.items())
    log("graph interface %s: inputs %s; outputs %s" % ("as the fixtures" if iface_ok else "DIFFERS from the fixtures",
                                                       list(ins.items())[:4], list(outs.items())[:2]))
    metrics["export"] = {"model_bytes": manifest["model_bytes"], "sha256": sha256(onnx_path),
                         "opset": manifest["opset"], "ir_version": manifest["ir_version"],
                         "num_nodes": manifest["num_nodes"], "op_histogram": manifest["op_histogram"],
                         "past_mode": manifest["past_mode"], "onnx_checker": manifest["onnx_checker"],
                         "worst_rel_diff_vs_torch": manifest["reference"]["worst_rel_diff_vs_torch"],
                         "interface_as_fixtures": iface_ok, "export_info": manifest["export"]}
    with open(os.path.join(work, "model.onnx.sha256"), "w") as f:
        f.write("%s  model.onnx\n" % metrics["export"]["sha256"])

    # greedy sample from PyTorch (fp32, CPU), checked against ORT with its KV-cache interface
    prompt_ids = tok.encode(SAMPLE_PROMPT).ids
    gen = greedy_torch(model, prompt_ids, args.sample_tokens)
    ort_gen = ex.ort_greedy(sess, prompt_ids, args.sample_tokens, dims["num_layers"], dims["kv_heads"], dims["head_dim"])
    eos = tok.token_to_id(EOS)
    sample = {"prompt": SAMPLE_PROMPT, "prompt_ids": prompt_ids, "n_new": args.sample_tokens, "greedy": True,
              "ids": gen, "text": tok.decode(gen, skip_special_tokens=False),
              "full_text": tok.decode(prompt_ids + gen, skip_special_tokens=True),
              "first_eos_index": gen.index(eos) if eos in gen else None,
              "note": "PyTorch float32 on the CPU, eager attention, no KV cache (full recompute each step); "
                      "prompt encoded with the post-processor (<s> first); all n_new tokens generated, "
                      "none skipped after an </s>",
              "ort_kv_cache_ids_equal": ort_gen == gen, "ort_ids": ort_gen,
              "extra": []}
    for p in EXTRA_PROMPTS:
        pid = tok.encode(p).ids
        g = greedy_torch(model, pid, args.sample_tokens)
        sample["extra"].append({"prompt": p, "prompt_ids": pid, "ids": g,
                                "full_text": tok.decode(pid + g, skip_special_tokens=True)})
    with open(os.path.join(work, "sample.json"), "w") as f:
        json.dump(sample, f, indent=1)
    log("sample (greedy, %d tokens; ORT with KV cache gives the same ids: %s):" % (args.sample_tokens,
                                                                                 sample["ort_kv_cache_ids_equal"]))
    for s in [sample] + sample["extra"]:
        log("  | " + s["full_text"].replace("\n", "\n  | "))
    return onnx_path


def write_loss_csv(rows, path):
    cols = ["run", "dropout", "step", "epoch", "tokens", "lr", "train_loss", "val_loss", "heldout_loss", "seconds"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow(r)


def pack(work, out, onnx_path=None, ckpt_path=None):
    """Copies what comes back into out (at most MAX_OUT_FILES files)."""
    written = []
    if onnx_path and os.path.exists(onnx_path):
        written += split_file(onnx_path, out, "model.onnx.part-")
    if ckpt_path and os.path.exists(ckpt_path):
        written += split_file(ckpt_path, out, "ckpt.pt.part-")
    written.append(os.path.basename(make_bundle(work, out, [
        "tokenizer", "fixture", "loss.csv", "sample.json", "metrics.json", "heldout.ids.txt",
        "model.onnx.sha256", "error.txt"])))
    for name in ("loss.csv", "sample.json"):
        if os.path.exists(os.path.join(work, name)) and len(written) < MAX_OUT_FILES:
            shutil.copy(os.path.join(work, name), os.path.join(out, name))
            written.append(name)
    if len(written) > MAX_OUT_FILES:
        log("WARNING: %d files in out, more than %d" % (len(written), MAX_OUT_FILES))
    for n in written:
        log("  out/%-24s %10d bytes" % (n, os.path.getsize(os.path.join(out, n))))
    return written


# ----------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.path.join(HERE, "data"), help="folder with train.txt and heldout.txt")
    ap.add_argument("--out", required=True, help="where the files to bring back go (at most 7 files)")
    ap.add_argument("--minutes", type=float, default=4.0, help="training wall-clock budget over all runs")
    ap.add_argument("--max-total-minutes", type=float, default=8.5,
                    help="the whole script's budget: training is cut so that export etc. still fit")
    ap.add_argument("--grid", default="0.1:30,0.1:60,0.2:120",
                    help="training runs as dropout:epochs, comma-separated; the best by validation loss is kept")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--patience", type=int, default=12, help="evaluations without validation gain before a run stops")
    ap.add_argument("--calib-from", type=int, default=10, help="steps timed to fit a run into its time share")
    ap.add_argument("--calib-to", type=int, default=40)
    ap.add_argument("--sample-tokens", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", default=None, help="scratch folder (default: a new temporary one, not under --out)")
    ap.add_argument("--from-checkpoint", default=None, help="skip training: load a ckpt.pt this script wrote")
    ap.add_argument("--dry-run", action="store_true", help="check data and arguments without torch")
    args = ap.parse_args()
    t_start = time.time()
    parse_grid(args.grid)
    if args.seq_len + 1 > MODEL_SHAPE["max_position_embeddings"]:
        ap.error("--seq-len too long")

    chapters, val, held = load_data(args.data)
    if args.dry_run:
        dry_run(args, chapters, val, held)
        return 0

    os.makedirs(args.out, exist_ok=True)
    work = args.work or tempfile.mkdtemp(prefix="vkllm-kjv-")
    os.makedirs(work, exist_ok=True)
    import warnings
    warnings.filterwarnings("ignore")
    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):   # nothing is downloaded; never wait for a network
        os.environ.setdefault(k, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch
    import transformers
    import tokenizers
    log("versions: torch %s, transformers %s, tokenizers %s, python %s; cuda %s"
        % (torch.__version__, transformers.__version__, tokenizers.__version__, sys.version.split()[0],
           torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no"))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(args.seed)
    metrics = {"args": vars(args), "model_shape": MODEL_SHAPE, "rope_theta": ROPE_THETA,
               "data": {"chapters": len(chapters), "train_verses": sum(len(c) for c in chapters),
                        "val_verses": len(val), "heldout_verses": len(held),
                        "val_rule": "training verse j (0-based, in train.txt order) when j %% %d == %d"
                                    % (VAL_EVERY, VAL_OFFSET)}}
    rows, onnx_path, ckpt_path, model, rc = [], None, None, None, 0
    tok_dir = os.path.join(work, "tokenizer")
    try:
        # -- tokenizer
        if args.from_checkpoint:
            ck = torch.load(args.from_checkpoint, map_location="cpu", weights_only=False)
            os.makedirs(tok_dir, exist_ok=True)
            for name, text in ck["tokenizer_files"].items():
                with open(os.path.join(tok_dir, name), "w") as f:
                    f.write(text)
            from tokenizers import Tokenizer
            tok = Tokenizer.from_file(os.path.join(tok_dir, "tokenizer.json"))
            rows = ck.get("loss_rows", [])
        else:
            t0 = time.time()
            tok = train_tokenizer([v for c in chapters for v in c], MODEL_SHAPE["vocab_size"], tok_dir)
            log("tokenizer: vocab %d, trained in %.1fs" % (tok.get_vocab_size(), time.time() - t0))
        metrics["tokenizer"] = check_tokenizer(tok, held, tok_dir, work)
        log("tokenizer check:", json.dumps(metrics["tokenizer"]))
        data = Data(tok, chapters, val, held, args.seq_len, device)
        metrics["data"]["train_tokens"] = data.n_tokens
        log("data: %d training tokens (%d chapters), %d window starts, %d val lines, %d held-out lines"
            % (data.n_tokens, len(chapters), len(data.starts), len(val), len(held)))

        # -- training
        if args.from_checkpoint:
            state, best_cfg = ck["state_dict"], ck["run"]
            metrics["runs"], metrics["chosen_run"] = ck.get("runs"), best_cfg
        else:
            if device.type == "cuda":
                torch.backends.cuda.matmul.allow_tf32 = True

                def amp():
                    return torch.autocast("cuda", dtype=torch.bfloat16)
            else:
                from contextlib import nullcontext as amp
            grid = parse_grid(args.grid)
            budget = min(args.minutes * 60, args.max_total_minutes * 60 - (time.time() - t_start) - 120)
            log("training: grid %s, budget %.0fs, batch %d x %d tokens, ~%.0f steps per epoch"
                % (grid, budget, args.batch, args.seq_len, data.n_tokens / (args.batch * args.seq_len)))
            t_train = time.time()
            results = []
            for ri, (dp, ep) in enumerate(grid):
                left = budget - (time.time() - t_train)
                share = left / (len(grid) - ri)
                if share < 10:
                    log("run %d skipped: no time left" % ri)
                    continue
                results.append(train_run(ri, dp, ep, share, data, args, device, amp, rows))
            results = [r for r in results if r[1] is not None and math.isfinite(r[0])]
            if not results:
                raise RuntimeError("no training run finished with a finite validation loss")
            best_i = min(range(len(results)), key=lambda i: results[i][0])
            _, state, best_cfg = results[best_i]
            metrics["runs"] = [r[2] for r in results]
            metrics["chosen_run"] = best_cfg
            metrics["training_seconds"] = round(time.time() - t_train, 1)
            log("chosen: run %d (dropout %g), best validation loss %.4f at step %d"
                % (best_cfg["run"], best_cfg["dropout"], best_cfg["best_val_loss"], best_cfg["best_step"]))
            del results
        write_loss_csv(rows, os.path.join(work, "loss.csv"))
        if not args.from_checkpoint:
            # comes back only if a later step fails (then: --from-checkpoint)
            ckpt_path = os.path.join(work, "ckpt.pt")
            files = {n: open(os.path.join(tok_dir, n)).read() for n in ("tokenizer.json", "tokenizer_config.json")}
            torch.save({"state_dict": state, "run": best_cfg, "runs": metrics.get("runs"), "loss_rows": rows,
                        "tokenizer_files": files, "model_shape": MODEL_SHAPE}, ckpt_path)

        # -- the exported model: plain LlamaForCausalLM, eager attention, no dropout, float32, CPU
        model = make_model("eager", 0.0, args.seed)
        model.load_state_dict(state, strict=True)
        model.eval()
        if getattr(model.config, "_attn_implementation", "eager") != "eager":
            raise RuntimeError("attention implementation is %s, not eager" % model.config._attn_implementation)
        metrics["parameters"] = count_params(model)
        metrics["config"] = json.loads(model.config.to_json_string(use_diff=False))
        log("model: %d parameters (%s)" % (metrics["parameters"], json.dumps(MODEL_SHAPE)))
        onnx_path = finish(model, tok, data, work, args, metrics)
        ckpt_path = None          # the ONNX file carries the weights: no need to bring the checkpoint back
    except Exception as e:
        rc = 1
        tb = traceback.format_exc()
        log("FAILED: %s\n%s" % (e, tb))
        with open(os.path.join(work, "error.txt"), "w") as f:
            f.write(tb)
        metrics["error"] = "%s: %s" % (type(e).__name__, str(e)[:2000])
        onnx_path = None
    metrics["total_seconds"] = round(time.time() - t_start, 1)
    with open(os.path.join(work, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1, default=str)
    if rows and not os.path.exists(os.path.join(work, "loss.csv")):
        write_loss_csv(rows, os.path.join(work, "loss.csv"))
    log("packing into %s:" % args.out)
    pack(work, args.out, onnx_path, ckpt_path)
    if rows:
        log("loss curve (chosen run %s):" % metrics.get("chosen_run", {}).get("run"))
        ch = metrics.get("chosen_run", {}).get("run")
        sel = [r for r in rows if r["run"] == ch]
        stride = max(1, len(sel) // 24)
        for r in sel[::stride] + ([sel[-1]] if sel and (len(sel) - 1) % stride else []):
            log("  step %5d  epoch %5.1f  train %.3f  val %.3f  heldout %.3f" % (
                r["step"], r["epoch"], r["train_loss"], r["val_loss"], r["heldout_loss"]))
    if "heldout" in metrics:
        log("held-out perplexity %.2f (%.4f nats/token, %.3f bits/byte)" % (
            metrics["heldout"]["perplexity"], metrics["heldout"]["nll_per_token"], metrics["heldout"]["bits_per_byte"]))
    log("%s in %.0fs" % ("done" if rc == 0 else "FAILED", time.time() - t_start))
    return rc


if __name__ == "__main__":
    sys.exit(main())
