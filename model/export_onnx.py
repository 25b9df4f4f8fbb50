#!/usr/bin/env python3
"""ONNX export of vkllm's bundled model, with a reference fixture for `vkllm check`.

Follows shared/tools/export_hf_onnx.py (which made the importer's test fixtures) exactly;
that file does not travel to the GPU machine, so its export path is copied here, unchanged
where possible:

  * a wrapper module whose forward is (input_ids, attention_mask, position_ids, past_key_0,
    past_value_0, ...) -> (logits, present_key_0, present_value_0, ...); inside, the flat past
    tensors go into a transformers DynamicCache (cache.update(k, v, layer)), the HF model runs
    with past_key_values=cache, and the cache's per-layer tensors come back as the presents;
  * torch.onnx.export with the TorchScript exporter (dynamo=False), opset 17, constant folding,
    weights inside the file; dynamic axes batch, seq, past, total_seq;
  * attention in eager mode (explicit MatMul/Softmax in the graph);
  * reference run through ONNX Runtime (CPUExecutionProvider, optimisations off): prefill of 7
    tokens with a zero-length past, then 2 decode steps feeding ORT's presents back; every input
    and output saved as step<k>.{in,out}.<name>.npy and described in manifest.json (same fields
    as shared/models/<name>/manifest.json), compared with the PyTorch wrapper and with the plain
    HF model and its own cache.

Graph interface (shared/models/README.md):
  inputs : input_ids       int64   [batch, seq]
           attention_mask  int64   [batch, total_seq]      (total_seq = past + seq)
           position_ids    int64   [batch, seq]
           past_key_<i>    float32 [batch, kv_heads, past, head_dim]   i = 0..L-1
           past_value_<i>  float32 [batch, kv_heads, past, head_dim]
  outputs: logits          float32 [batch, seq, vocab]
           present_key_<i> float32 [batch, kv_heads, total_seq, head_dim]
           present_value_<i>

Used by model/train.py; export_causal_lm() is the entry point. Needs torch, transformers,
onnx, onnxruntime and numpy (the versions of shared/models: torch 2.11, transformers 5.17,
onnx 1.23, onnxruntime 1.30).
"""

import json
import os
import sys
import time
import traceback
import warnings
from collections import Counter

import numpy as np

LEGACY_OPSET = 17
DYNAMO_OPSET = 18
PREFILL_LEN = 7
DECODE_STEPS = 2
REL_TOL_FLAG = 1e-3   # max_abs_diff / max|ref| above this marks a comparison as suspicious


def log(*a):
    print(*a, flush=True)


def config_dict(cfg):
    try:
        return json.loads(cfg.to_json_string(use_diff=False))
    except Exception:
        return json.loads(json.dumps(cfg.to_dict(), default=str))


# ----------------------------------------------------------------------------- cache helpers

def cache_layer_kv(cache, i):
    """(key, value) tensors of layer i of a transformers Cache, across cache API versions."""
    if hasattr(cache, "layers"):
        layer = cache.layers[i]
        return layer.keys, layer.values
    if hasattr(cache, "key_cache"):
        return cache.key_cache[i], cache.value_cache[i]
    kv = cache[i]
    return kv[0], kv[1]


def cache_num_layers(cache):
    if hasattr(cache, "layers"):
        return len(cache.layers)
    if hasattr(cache, "key_cache"):
        return len(cache.key_cache)
    return len(cache)


def new_dynamic_cache(config):
    from transformers import DynamicCache
    try:
        return DynamicCache()
    except TypeError:
        return DynamicCache(config=config)


def kv_names(prefix, n_layers):
    out = []
    for i in range(n_layers):
        out += ["%s_key_%d" % (prefix, i), "%s_value_%d" % (prefix, i)]
    return out


def make_lm_wrapper(model, n_layers):
    """nn.Module with forward(input_ids, attention_mask, position_ids, past_key_0, past_value_0, ...)
    -> (logits, present_key_0, present_value_0, ...). The forward signature is generated with
    explicit parameter names so both exporters (and torch.export's dynamic_shapes) see them."""
    import torch

    class LMWithFlatKV(torch.nn.Module):
        def __init__(self, m, n):
            super().__init__()
            self.model = m
            self.n_layers = n

        fill = "update"  # "update": cache.update(k, v, layer) (public API); "direct": set layer tensors

        def _run(self, input_ids, attention_mask, position_ids, flat_past):
            cache = new_dynamic_cache(self.model.config)
            if self.fill == "update":
                for i in range(self.n_layers):
                    cache.update(flat_past[2 * i], flat_past[2 * i + 1], i)
            else:  # fallback: no torch.tensor([]) placeholder concatenated in front of the past
                from transformers.cache_utils import DynamicLayer
                for i in range(self.n_layers):
                    layer = DynamicLayer()
                    try:  # transformers 5.x: lazy_initialization(key_states, value_states)
                        layer.lazy_initialization(flat_past[2 * i], flat_past[2 * i + 1])
                    except TypeError:  # 4.5x: lazy_initialization(key_states)
                        layer.lazy_initialization(flat_past[2 * i])
                    layer.keys, layer.values = flat_past[2 * i], flat_past[2 * i + 1]
                    cache.layers.append(layer)
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                             past_key_values=cache, use_cache=True, return_dict=True)
            pkv = out.past_key_values
            flat = []
            for i in range(self.n_layers):
                k, v = cache_layer_kv(pkv, i)
                flat += [k, v]
            return (out.logits, *flat)

    past = kv_names("past", n_layers)
    src = ("def forward(self, input_ids, attention_mask, position_ids, %s):\n"
           "    return self._run(input_ids, attention_mask, position_ids, [%s])\n") % (", ".join(past), ", ".join(past))
    ns = {}
    exec(src, ns)
    cls = type("LMWithFlatKV%d" % n_layers, (LMWithFlatKV,), {"forward": ns["forward"]})
    return cls(model, n_layers).eval()


# ----------------------------------------------------------------------------- export


def export_model(wrapper, example_args, path, input_names, output_names, dyn_axes, exporter):
    """Export with the chosen exporter; returns a dict describing what was done."""
    import inspect
    import torch
    info = {}
    if exporter == "legacy":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(wrapper, tuple(example_args), path, input_names=input_names,
                              output_names=output_names, dynamic_axes=dyn_axes, opset_version=LEGACY_OPSET,
                              do_constant_folding=True, export_params=True, dynamo=False)
        info["exporter"] = "torch.onnx.export(dynamo=False) [TorchScript tracing]"
        info["requested_opset"] = LEGACY_OPSET
        return info
    # dynamo: dynamic_shapes keyed by forward parameter name, dims given as names (strings)
    params = list(inspect.signature(wrapper.forward).parameters)
    dyn_shapes = {p: dyn_axes.get(p) for p in params}
    kw = dict(input_names=input_names, output_names=output_names, opset_version=DYNAMO_OPSET, dynamo=True,
              external_data=False)
    sig = inspect.signature(torch.onnx.export).parameters
    if "fallback" in sig:
        kw["fallback"] = False
    errors = []
    for how in ("dynamic_shapes", "dynamic_axes"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if how == "dynamic_shapes":
                    torch.onnx.export(wrapper, tuple(example_args), path, dynamic_shapes=dyn_shapes, **kw)
                else:
                    torch.onnx.export(wrapper, tuple(example_args), path, dynamic_axes=dyn_axes, **kw)
            info["exporter"] = "torch.onnx.export(dynamo=True) [torch.export + onnxscript], %s given" % how
            info["requested_opset"] = DYNAMO_OPSET
            if errors:
                info["earlier_attempt_errors"] = errors
            return info
        except Exception as e:  # try the other way of declaring dynamic dims
            errors.append("%s: %s" % (how, short_exc(e)))
            log("   dynamo export with %s failed: %s" % (how, short_exc(e, 400)))
    raise RuntimeError("dynamo export failed: " + " | ".join(errors))


def clean_json(x):
    """Replace non-finite floats (not valid JSON) by strings."""
    if isinstance(x, float) and not np.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: clean_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean_json(v) for v in x]
    return x


def short_exc(e, n=1500):
    s = "%s: %s" % (type(e).__name__, e)
    return s if len(s) <= n else s[:n] + " ..."


# ----------------------------------------------------------------------------- ONNX inspection

def dims_of(vi):
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    out = []
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            out.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            out.append(d.dim_param)
        else:
            out.append(None)
    return out


def graph_io(model):
    from onnx import helper
    def one(vi):
        et = vi.type.tensor_type.elem_type
        try:
            dt = str(np.dtype(helper.tensor_dtype_to_np_dtype(et)))
        except Exception:
            dt = str(et)
        return {"name": vi.name, "dtype": dt, "shape": dims_of(vi)}
    return [one(v) for v in model.graph.input], [one(v) for v in model.graph.output]


def op_histogram(model):
    """Count op types over the main graph and nested subgraphs; local functions counted apart."""
    import onnx

    def walk(g, c):
        for n in g.node:
            key = n.op_type if n.domain in ("", "ai.onnx") else "%s::%s" % (n.domain, n.op_type)
            c[key] += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g, c)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for sg in a.graphs:
                        walk(sg, c)
    main = Counter()
    walk(model.graph, main)
    funcs = {}
    for f in model.functions:
        c = Counter()
        walk(f, c)
        funcs["%s::%s" % (f.domain, f.name)] = dict(sorted(c.items()))
    return dict(sorted(main.items())), funcs


def onnx_summary(path):
    import onnx
    m = onnx.load(path)
    ins, outs = graph_io(m)
    hist, funcs = op_histogram(m)
    try:
        onnx.checker.check_model(m)
        checker = "ok"
    except Exception as e:
        checker = short_exc(e, 500)
    n_params = 0
    for init in m.graph.initializer:
        k = 1
        for d in init.dims:
            k *= d
        n_params += k
    ext = [i.name for i in m.graph.initializer if i.data_location == onnx.TensorProto.EXTERNAL]
    return {
        "ir_version": m.ir_version,
        "opset_import": {(o.domain or "ai.onnx"): o.version for o in m.opset_import},
        "producer": "%s %s" % (m.producer_name, m.producer_version),
        "graph_inputs": ins, "graph_outputs": outs,
        "num_nodes": sum(hist.values()), "op_histogram": hist, "function_op_histograms": funcs,
        "num_initializers": len(m.graph.initializer), "num_initializer_elements": n_params,
        "external_data_initializers": len(ext),
        "onnx_checker": checker,
    }


# ----------------------------------------------------------------------------- ORT reference runs

def ort_session(path):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 4
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def diff(a, b):
    """ORT value a vs PyTorch value b."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return {"shape_mismatch": [list(a.shape), list(b.shape)]}
    if a.size == 0:
        return {"max_abs_diff": 0.0, "ref_max_abs": 0.0, "rel_diff": 0.0}
    mad = float(np.max(np.abs(a - b)))
    ref = float(np.max(np.abs(b)))
    return {"max_abs_diff": mad, "ref_max_abs": ref, "rel_diff": mad / ref if ref > 0 else mad}


def save_arrays(folder, prefix, arrays):
    """arrays: ordered list of (name, np.ndarray). Returns manifest entries."""
    ent = []
    for name, arr in arrays:
        fn = "%s.%s.npy" % (prefix, name)
        np.save(os.path.join(folder, fn), arr)
        ent.append({"name": name, "file": fn, "dtype": str(arr.dtype), "shape": list(arr.shape)})
    return ent


def lm_reference(folder, sess, wrapper, model, n_layers, kv_heads, head_dim, tokens, past_mode):
    """Prefill + DECODE_STEPS decode steps through ORT; compares to the PyTorch wrapper (same inputs)
    and to the plain HF model with its own cache. Raises on ORT failure."""
    import torch
    batch = tokens.shape[0]
    off = 0 if past_mode == "zero_length" else 1
    in_names = [i.name for i in sess.get_inputs()]
    out_names = [o.name for o in sess.get_outputs()]
    past = {n: np.zeros((batch, kv_heads, off, head_dim), np.float32) for n in kv_names("past", n_layers)}
    plan = [(0, PREFILL_LEN)] + [(PREFILL_LEN + k, PREFILL_LEN + k + 1) for k in range(DECODE_STEPS)]
    steps = []
    native_cache = None
    worst = 0.0
    for si, (a, b) in enumerate(plan):
        ids = np.ascontiguousarray(tokens[:, a:b]).astype(np.int64)
        pos = np.tile(np.arange(a, b, dtype=np.int64)[None, :], (batch, 1))
        mask = np.ones((batch, off + b), np.int64)
        if off:
            mask[:, 0] = 0
        full = {"input_ids": ids, "attention_mask": mask, "position_ids": pos}
        full.update(past)
        feeds = {n: full[n] for n in in_names}
        outs = sess.run(None, feeds)
        outd = dict(zip(out_names, outs))
        # PyTorch wrapper on exactly the same inputs
        with torch.no_grad():
            order = ["input_ids", "attention_mask", "position_ids"] + kv_names("past", n_layers)
            tw = wrapper(*[torch.from_numpy(full[n]) for n in order])
            tw_names = ["logits"] + kv_names("present", n_layers)
            twd = {n: t.detach().numpy() for n, t in zip(tw_names, tw)}
            # plain HF model, its own cache, no dummy slot
            nat = model(input_ids=torch.from_numpy(ids), attention_mask=torch.ones((batch, b), dtype=torch.long),
                        position_ids=torch.from_numpy(pos), past_key_values=native_cache, use_cache=True,
                        return_dict=True)
            native_cache = nat.past_key_values
        cmp_wrapper = {n: diff(outd[n], twd[n]) for n in out_names if n in twd}
        cmp_native = {"logits": diff(outd["logits"], nat.logits.numpy())}
        for i in range(n_layers):
            # the native cache holds no dummy slot, and a sliding-window layer keeps only the last
            # window-1 tokens: compare the positions both hold (the tail)
            k, v = cache_layer_kv(native_cache, i)
            n = min(int(k.shape[2]), outd["present_key_%d" % i].shape[2] - off)
            cmp_native["present_key_%d" % i] = diff(outd["present_key_%d" % i][:, :, -n:], k.numpy()[:, :, -n:])
            cmp_native["present_value_%d" % i] = diff(outd["present_value_%d" % i][:, :, -n:], v.numpy()[:, :, -n:])
        for d in list(cmp_wrapper.values()) + list(cmp_native.values()):
            worst = max(worst, float("inf") if "shape_mismatch" in d else d["rel_diff"])
        prefix = "step%d" % si
        steps.append({
            "step": si, "kind": "prefill" if si == 0 else "decode",
            "token_positions": [a, b],
            "inputs": save_arrays(folder, prefix + ".in", [(n, feeds[n]) for n in in_names]),
            "outputs": save_arrays(folder, prefix + ".out", [(n, outd[n]) for n in out_names]),
            "ort_vs_torch_wrapper": cmp_wrapper,
            "ort_vs_hf_model": cmp_native,
        })
        past = {("past" + n[len("present"):]): outd[n] for n in out_names if n.startswith("present_")}
    return steps, worst


def versions():
    import onnx
    import onnxruntime
    import torch
    import transformers
    return {"torch": torch.__version__, "transformers": transformers.__version__, "onnx": onnx.__version__,
            "onnxruntime": onnxruntime.__version__, "numpy": np.__version__, "python": sys.version.split()[0]}




# ----------------------------------------------------------------------------- driver

def export_causal_lm(model, folder, tokens, seed=0, name="kjv", exporter="legacy", weights_note=None,
                     extra=None):
    """Export a trained causal LM (float32, eval mode, on the CPU, eager attention) to
    <folder>/model.onnx and write the reference steps and manifest.json beside it, as
    export_hf_onnx.py's export_lm does for a random-weight model. `tokens` is an int64 array
    [batch, PREFILL_LEN + DECODE_STEPS] of the reference run. Returns (manifest dict, the ORT
    session on model.onnx)."""
    import torch
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        os.remove(os.path.join(folder, f))
    cfg = model.config
    assert tokens.shape[1] == PREFILL_LEN + DECODE_STEPS, tokens.shape
    # probe the real cache layout (layers, kv heads, head_dim) with a 1-token forward
    with torch.no_grad():
        probe = model(input_ids=torch.zeros((1, 1), dtype=torch.long), use_cache=True, return_dict=True)
    n_layers = cache_num_layers(probe.past_key_values)
    k0, _ = cache_layer_kv(probe.past_key_values, 0)
    kv_heads, head_dim = int(k0.shape[1]), int(k0.shape[3])
    vocab = int(probe.logits.shape[-1])
    wrapper = make_lm_wrapper(model, n_layers)

    input_names = ["input_ids", "attention_mask", "position_ids"] + kv_names("past", n_layers)
    output_names = ["logits"] + kv_names("present", n_layers)
    dyn = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total_seq"},
           "position_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    for n in kv_names("past", n_layers):
        dyn[n] = {0: "batch", 2: "past"}
    for n in kv_names("present", n_layers):
        dyn[n] = {0: "batch", 2: "total_seq"}

    # example inputs for tracing: batch/seq/past all distinct and > 1 so none gets baked in
    tb, ts, tp = 2, 3, 5
    g = torch.Generator().manual_seed(seed + 11)
    ex = [torch.randint(3, vocab, (tb, ts), generator=g),
          torch.ones((tb, tp + ts), dtype=torch.long),
          torch.arange(tp, tp + ts, dtype=torch.long)[None, :].repeat(tb, 1)]
    ex += [torch.randn((tb, kv_heads, tp, head_dim), generator=g) for _ in range(2 * n_layers)]
    path = os.path.join(folder, "model.onnx")
    fill_errors = []
    for fill in ("update", "direct"):
        wrapper.fill = fill
        try:
            t0 = time.time()
            with torch.no_grad():
                exp_info = export_model(wrapper, ex, path, input_names, output_names, dyn, exporter)
            exp_info["export_seconds"] = round(time.time() - t0, 2)
            extra_files = [f for f in os.listdir(folder) if f != "model.onnx"]
            if extra_files:
                raise RuntimeError("exporter wrote extra files (external data?): %s" % extra_files)
            summ = onnx_summary(path)
            sess = ort_session(path)
            break
        except Exception as e:
            fill_errors.append("cache fill %r: %s" % (fill, short_exc(e)))
            log("   export/load with cache fill %r failed: %s" % (fill, short_exc(e, 600)))
            log("   " + traceback.format_exc()[-2500:].replace("\n", "\n   "))
            for f in os.listdir(folder):
                os.remove(os.path.join(folder, f))
    else:
        raise RuntimeError(" || ".join(fill_errors))
    exp_info["trace_example_sizes"] = {"batch": tb, "seq": ts, "past": tp}
    exp_info["cache_fill"] = {"update": "DynamicCache().update(past_key_i, past_value_i, i) for each layer",
                              "direct": "DynamicLayer tensors set directly (update() path failed)"}[fill]
    if fill_errors:
        exp_info["cache_fill_errors"] = fill_errors

    tokens = np.ascontiguousarray(tokens).astype(np.int64)
    zero_info = {}
    past_mode = "zero_length"
    try:
        steps, worst = lm_reference(folder, sess, wrapper, model, n_layers, kv_heads, head_dim, tokens, past_mode)
        zero_info = {"ok": worst <= REL_TOL_FLAG, "worst_rel_diff": worst}
        if worst > REL_TOL_FLAG:
            zero_info["note"] = "ORT output with a zero-length past disagrees with PyTorch"
    except Exception as e:
        zero_info = {"ok": False, "error": short_exc(e)}
        log("   zero-length past failed in ORT: %s" % short_exc(e, 300))
    if not zero_info["ok"]:
        for f in os.listdir(folder):
            if f.endswith(".npy"):
                os.remove(os.path.join(folder, f))
        past_mode = "dummy_masked_slot"
        steps, worst = lm_reference(folder, sess, wrapper, model, n_layers, kv_heads, head_dim, tokens, past_mode)

    manifest = {
        "name": name, "kind": "causal_lm_with_kv_cache", "arch": "llama",
        "hf_model_class": type(model).__name__, "hf_config_class": type(cfg).__name__,
        "model_file": "model.onnx", "model_bytes": os.path.getsize(path),
        "exporter": exp_info.pop("exporter"), "export": exp_info,
        "opset": summ["opset_import"].get("ai.onnx"),
        "seed": seed, "size_preset": "bundled",
        "weights": {"dtype": "float32", "init": weights_note or "trained"},
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "dims": {"num_layers": n_layers, "kv_heads": kv_heads, "head_dim": head_dim, "vocab": vocab},
        "symbolic_dims_meaning": {"batch": "batch size", "seq": "new tokens this call",
                                  "past": "cached tokens (KV length fed in)", "total_seq": "past + seq"},
        "io_convention": {
            "inputs": "input_ids, attention_mask (1 = attend, 0 = masked, length past+seq), position_ids, "
                      "then past_key_i, past_value_i for i = 0..num_layers-1",
            "outputs": "logits, then present_key_i, present_value_i (= past concatenated with this call's K/V "
                       "along axis 2)"},
        "past_mode": past_mode,
        "past_mode_meaning": {"zero_length": "step0 feeds past tensors with past = 0",
                              "dummy_masked_slot": "step0 feeds a past of length 1 (zeros) whose attention_mask "
                                                   "entry is 0; every later mask keeps that 0 at index 0"}[past_mode],
        "zero_length_past_check": zero_info,
        "tokens": tokens.tolist(),
        "reference": {"runtime": "onnxruntime CPUExecutionProvider, graph_optimization_level=ORT_DISABLE_ALL",
                      "decode_feeds": "each decode step feeds ORT's own present_* outputs of the previous step "
                                      "as past_*",
                      "worst_rel_diff_vs_torch": worst},
        "versions": versions(),
        "config": config_dict(cfg),
        "steps": steps,
    }
    if extra:
        manifest.update(extra)
    manifest.update({k: summ[k] for k in ("ir_version", "opset_import", "producer", "graph_inputs", "graph_outputs",
                                          "num_nodes", "op_histogram", "function_op_histograms", "num_initializers",
                                          "num_initializer_elements", "external_data_initializers", "onnx_checker")})
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump(clean_json(manifest), f, indent=1)
    return manifest, sess


def ort_greedy(sess, prompt_ids, n_new, n_layers, kv_heads, head_dim):
    """Greedy decoding through the exported graph with its KV-cache interface, batch 1:
    prefill the prompt (zero-length past), then one token per call. Returns the new ids."""
    in_names = [i.name for i in sess.get_inputs()]
    out_names = [o.name for o in sess.get_outputs()]
    past = {n: np.zeros((1, kv_heads, 0, head_dim), np.float32) for n in kv_names("past", n_layers)}
    ids = np.asarray(prompt_ids, np.int64)[None, :]
    start, out = 0, []
    for _ in range(n_new):
        n = ids.shape[1]
        full = {"input_ids": ids, "attention_mask": np.ones((1, start + n), np.int64),
                "position_ids": np.arange(start, start + n, dtype=np.int64)[None, :]}
        full.update(past)
        res = dict(zip(out_names, sess.run(None, {k: full[k] for k in in_names})))
        nxt = int(np.argmax(res["logits"][0, -1]))
        out.append(nxt)
        past = {("past" + k[len("present"):]): v for k, v in res.items() if k.startswith("present_")}
        start += n
        ids = np.array([[nxt]], np.int64)
    return out
