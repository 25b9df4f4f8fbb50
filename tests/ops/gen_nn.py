#!/usr/bin/python3
"""Op cases for the nn family (normalization, reductions, linear algebra, the
fused LLM ops), with expected outputs computed independently in numpy float64
and rounded to the output dtype. Writes tests/ops/cases/{norm,reduce,linalg,
fused}.json. Deterministic: run `python3 tests/ops/gen_nn.py` and commit."""
import math
import warnings

import numpy as np

import opcase
from opcase import FLOATS, NP_INT, jnum_short
from opcase import rounded as rnd

rng = np.random.default_rng(20240611)


# ---------------------------------------------------------------- values

def rand(shape, dt="f32", lo=0.1, hi=2.0):
    """Random non-zero values of either sign, |v| in [lo, hi], held in dt."""
    if dt in FLOATS:
        mag = rng.uniform(lo, hi, size=shape)
        return rnd(mag * rng.choice([-1.0, 1.0], size=shape), dt)
    if dt == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    lo_i, hi_i = (1, 9) if dt.startswith("u") else (-9, 9)
    v = rng.integers(lo_i, hi_i + 1, size=shape)
    v[v == 0] = 1
    return v.astype(NP_INT[dt])


def tensor(x, dt, sym=None, const=False):
    return opcase.tensor(rnd(x, dt) if dt in FLOATS else x, dt, sym, const, num=jnum_short)


def i64(values, const=True):
    return tensor(np.asarray(values, np.int64), "i64", const=const)


def A(v):
    """An attribute from a Python value."""
    if isinstance(v, bool) or isinstance(v, (int, np.integer)):
        return {"int": int(v)}
    if isinstance(v, float):
        return {"float": v}
    if isinstance(v, str):
        return {"string": v}
    if isinstance(v, (list, tuple)) and all(isinstance(e, (int, np.integer)) for e in v):
        return {"ints": [int(e) for e in v]}
    raise TypeError(v)


class Cases(opcase.Cases):
    def add(self, name, op, inputs, outputs, attrs=None, domain="", error=None, data_error=False, **tol):
        c = {"name": name, "op": op, "domain": domain,
             "attrs": {k: A(v) for k, v in (attrs or {}).items()},
             "inputs": inputs, "outputs": outputs}
        if error:
            c["expect_error"] = error
        if data_error:  # ref finds the error in the data at run time; a GPU kernel cannot (tests/ops/README.md)
            c["data_error"] = True
        c.update(tol)
        self.append(c)


def out(y, dt):
    return tensor(rnd(y, dt) if dt in FLOATS else np.asarray(y).astype(NP_INT[dt]), dt)


def dummy(dt, shape):
    """An expected output for an expect_error case (never compared)."""
    return tensor(np.zeros(shape), dt)


# ---------------------------------------------------------------- references (numpy float64)

def softmax_ref(x, axis, log=False):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    s = np.sum(e, axis=axis, keepdims=True)
    return x - m - np.log(s) if log else e / s


def layer_norm_ref(x, scale, bias, axis, eps):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    inv = 1.0 / np.sqrt(var + eps)
    y = (x - mean) * inv * scale
    if bias is not None:
        y = y + bias
    return y, mean, inv


def rms_norm_ref(x, scale, axis, eps):
    axes = tuple(range(axis % x.ndim, x.ndim))
    return x / np.sqrt(np.mean(x * x, axis=axes, keepdims=True) + eps) * scale


def f32(v):
    """A float attribute as the engine holds it (float32)."""
    return float(np.float32(v))


def cumsum_ref(x, axis, exclusive=0, reverse=0):
    y = np.flip(x, axis) if reverse else x
    c = np.cumsum(y, axis=axis, dtype=np.float64 if x.dtype.kind == "f" else np.int64)
    if exclusive:
        c = c - y
    return np.flip(c, axis) if reverse else c


def topk_ref(x, k, axis=-1, largest=1):
    """Sorted top-k, ties by lower index first (a stable sort)."""
    key = -x if largest else x
    if x.dtype.kind in "iu":
        key = -x.astype(np.int64) if largest else x.astype(np.int64)
    idx = np.argsort(key, axis=axis, kind="stable")
    idx = np.take(idx, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx


def argmax_ref(x, axis, keepdims=1, last=0):
    if last:
        n = x.shape[axis]
        r = n - 1 - np.argmax(np.flip(x, axis), axis=axis)
    else:
        r = np.argmax(x, axis=axis)
    return np.expand_dims(r, axis) if keepdims else r


def conv_ref(x, w, b=None, strides=None, pads=None, dilations=None, group=1, auto_pad="NOTSET"):
    """Zero-pad, then for each kernel tap add a strided slice of the input
    times that tap's weights (einsum over the group's channels)."""
    nsp = x.ndim - 2
    strides = strides or [1] * nsp
    dil = dilations or [1] * nsp
    pads = pads or [0] * (2 * nsp)
    ins, ks = x.shape[2:], w.shape[2:]
    widths, outs = [(0, 0), (0, 0)], []
    for i in range(nsp):
        span = (ks[i] - 1) * dil[i] + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-ins[i] // strides[i])
            total = max(0, (o - 1) * strides[i] + span - ins[i])
            pb = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            pe = total - pb
        elif auto_pad == "VALID":
            pb = pe = 0
            o = (ins[i] - span) // strides[i] + 1
        else:
            pb, pe = pads[i], pads[nsp + i]
            o = (ins[i] + pb + pe - span) // strides[i] + 1
        widths.append((pb, pe))
        outs.append(o)
    xp = np.pad(x, widths)
    n, m, cg = x.shape[0], w.shape[0], w.shape[1]
    mpg = m // group
    y = np.zeros([n, m] + outs)
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for tap in np.ndindex(*ks):
            sl = tuple(slice(tap[i] * dil[i], tap[i] * dil[i] + (outs[i] - 1) * strides[i] + 1, strides[i])
                       for i in range(nsp))
            patch = xs[(slice(None), slice(None)) + sl]
            wt = w[(slice(g * mpg, (g + 1) * mpg), slice(None)) + tap]
            y[:, g * mpg:(g + 1) * mpg] += np.einsum("nc...,mc->nm...", patch, wt)
    if b is not None:
        y += b.reshape([1, m] + [1] * nsp)
    return y


def rope_ref(x, cos, sin, interleaved=0):
    """x [B, H, S, D]; cos/sin [S, R] or [B, S, R]; the first R dims rotate."""
    r = cos.shape[-1]
    c = cos[:, None] if cos.ndim == 3 else cos[None, None]
    s = sin[:, None] if sin.ndim == 3 else sin[None, None]
    y = x.copy()
    xr = x[..., :r]
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
        y[..., 0:r:2] = x1 * c[..., 0::2] - x2 * s[..., 0::2]
        y[..., 1:r:2] = x2 * c[..., 1::2] + x1 * s[..., 1::2]
    else:
        h = r // 2
        x1, x2 = xr[..., :h], xr[..., h:]
        y[..., :h] = x1 * c[..., :h] - x2 * s[..., :h]
        y[..., h:r] = x2 * c[..., h:] + x1 * s[..., h:]
    return y


def rope_tables(positions, r, interleaved=0, base=10000.0):
    """cos/sin as Hugging Face builds them: [..., S, R] at full width."""
    inv = 1.0 / base ** (np.arange(0, r, 2) / r)
    f = np.asarray(positions, np.float64)[..., None] * inv
    emb = np.repeat(f, 2, axis=-1) if interleaved else np.concatenate([f, f], axis=-1)
    return np.cos(emb), np.sin(emb)


def attention_ref(q, k, v, mask=None, scale=0.0, causal=0, window=0, layout=0):
    if layout == 1:
        k, v = k.transpose(1, 2, 0, 3), v.transpose(1, 2, 0, 3)
    b, hq, s, d = q.shape
    hkv, t = k.shape[1], k.shape[2]
    k, v = np.repeat(k, hq // hkv, axis=1), np.repeat(v, hq // hkv, axis=1)
    sc = scale if scale else 1.0 / math.sqrt(d)
    scores = sc * np.einsum("bhid,bhjd->bhij", q, k)
    p = np.arange(s)[:, None] + (t - s)
    j = np.arange(t)[None, :]
    visible = np.ones((b, hq, s, t), bool)
    if causal:
        visible &= j <= p
    if window > 0:
        visible &= (p - j) < window
    if mask is not None:
        if mask.dtype == np.bool_:
            visible &= np.broadcast_to(mask, visible.shape)
        else:
            scores = scores + mask
    visible &= scores != -np.inf
    scores = np.where(visible, scores, -np.inf)
    m = np.max(scores, axis=-1, keepdims=True)
    e = np.where(visible, np.exp(scores - np.where(np.isfinite(m), m, 0)), 0.0)
    tot = np.sum(e, axis=-1, keepdims=True)
    w = e / np.where(tot > 0, tot, 1.0)
    return np.einsum("bhij,bhjd->bhid", w, v)


def self_check():
    """Hand-checked values from the ONNX operator docs, where semantics are subtle."""
    x = np.array([1.0, 2, 3, 4, 5])
    assert list(cumsum_ref(x, 0, exclusive=1)) == [0, 1, 3, 6, 10]
    assert list(cumsum_ref(x, 0, reverse=1)) == [15, 14, 12, 9, 5]
    assert list(cumsum_ref(x, 0, exclusive=1, reverse=1)) == [14, 12, 9, 5, 0]
    d = np.array([[2, 2], [3, 10]])
    assert argmax_ref(d, 1, 1, 1).tolist() == [[1], [1]]
    assert argmax_ref(d, 1, 1, 0).tolist() == [[0], [1]]
    # Conv docs, "conv_with_autopad_same": 5x5 arange, 3x3 ones, stride 2, SAME_LOWER.
    y = conv_ref(np.arange(25.0).reshape(1, 1, 5, 5), np.ones((1, 1, 3, 3)), strides=[2, 2], auto_pad="SAME_LOWER")
    assert y.reshape(-1).tolist() == [12, 27, 24, 63, 108, 81, 72, 117, 84]
    # Conv docs, "conv_with_strides_and_asymmetric_padding": pads [1, 0, 1, 0], strides 2.
    y = conv_ref(np.arange(35.0).reshape(1, 1, 7, 5), np.ones((1, 1, 3, 3)), strides=[2, 2], pads=[1, 0, 1, 0])
    assert y.reshape(-1).tolist() == [21, 33, 99, 117, 189, 207, 171, 183]
    vals, idx = topk_ref(np.array([[3.0, 1, 3, 2]]), 3)
    assert vals.tolist() == [[3, 3, 2]] and idx.tolist() == [[0, 2, 3]]
    # softmax of equal logits is uniform; rotate_half by 90 degrees swaps halves
    assert np.allclose(softmax_ref(np.zeros((1, 4)), -1), 0.25)
    r = rope_ref(np.array([[[[1.0, 2, 3, 4]]]]), np.zeros((1, 4)), np.ones((1, 4)))
    assert r.reshape(-1).tolist() == [-3, -4, 1, 2]


# ---------------------------------------------------------------- norm.json

def gen_norm():
    c = Cases()
    for op, log in (("Softmax", False), ("LogSoftmax", True)):
        p = op.lower()
        x = rand((2, 3, 5))
        c.add(p + "_default", op, [tensor(x, "f32")], [out(softmax_ref(x, -1, log), "f32")])
        x = rand((3, 4))
        c.add(p + "_axis0", op, [tensor(x, "f32")], [out(softmax_ref(x, 0, log), "f32")], {"axis": 0})
        x = rand((2, 3, 4))
        c.add(p + "_axis_neg2", op, [tensor(x, "f32")], [out(softmax_ref(x, -2, log), "f32")], {"axis": -2})
        for dt in ("f16", "bf16", "f64"):
            x = rand((2, 6), dt)
            c.add(p + "_" + dt, op, [tensor(x, dt)], [out(softmax_ref(x, 1, log), dt)], {"axis": 1})
        x = rand((3, 7))
        c.add(p + "_sym", op, [tensor(x, "f32", sym=["N", 7])], [out(softmax_ref(x, -1, log), "f32")])
        x = rnd(rand((2, 5)) * 400, "f32")  # exp overflows without max subtraction
        c.add(p + "_large", op, [tensor(x, "f32")], [out(softmax_ref(x, -1, log), "f32")])
        x = rand((6,))
        c.add(p + "_rank1", op, [tensor(x, "f32")], [out(softmax_ref(x, 0, log), "f32")])
        x = np.zeros((0, 4))
        c.add(p + "_empty", op, [tensor(x, "f32")], [out(x, "f32")])
        c.add(p + "_bad_axis", op, [tensor(rand((2, 3)), "f32")], [dummy("f32", (2, 3))], {"axis": 2},
              error="VKL_ERR_SHAPE")
        c.add(p + "_int", op, [tensor(rand((2, 3), "i32"), "i32")], [dummy("i32", (2, 3))],
              error="VKL_ERR_UNSUPPORTED")
    x = np.array([[1.0, np.nan, 2.0]])
    c.add("softmax_nan", "Softmax", [tensor(x, "f32")], [out(softmax_ref(x, -1), "f32")])

    # LayerNormalization-17
    eps = f32(1e-5)
    x, s, b = rand((2, 3, 8)), rand((8,)), rand((8,))
    y, m, inv = layer_norm_ref(x, s, b, -1, eps)
    c.add("layernorm_default", "LayerNormalization", [tensor(x, "f32"), tensor(s, "f32"), tensor(b, "f32")],
          [out(y, "f32")])
    c.add("layernorm_all_outputs", "LayerNormalization", [tensor(x, "f32"), tensor(s, "f32", const=True),
          tensor(b, "f32", const=True)], [out(y, "f32"), out(m, "f32"), out(inv, "f32")])
    c.add("layernorm_inv_only", "LayerNormalization", [tensor(x, "f32"), tensor(s, "f32"), tensor(b, "f32")],
          [out(y, "f32"), None, out(inv, "f32")])
    x, s, b = rand((2, 3, 4)), rand((3, 4)), rand((3, 4))
    y, m, inv = layer_norm_ref(x, s, b, 1, eps)
    c.add("layernorm_axis1", "LayerNormalization", [tensor(x, "f32"), tensor(s, "f32"), tensor(b, "f32")],
          [out(y, "f32"), out(m, "f32"), out(inv, "f32")], {"axis": 1})
    c.add("layernorm_axis_neg2", "LayerNormalization", [tensor(x, "f32"), tensor(s, "f32"), tensor(b, "f32")],
          [out(y, "f32"), out(m, "f32")], {"axis": -2})
    x, s = rand((4, 6)), rand((6,))
    y, m, inv = layer_norm_ref(x, s, None, -1, eps)
    c.add("layernorm_no_bias", "LayerNormalization", [tensor(x, "f32"), tensor(s, "f32")], [out(y, "f32")])
    x, s, b = rand((3, 5)), rand((5,)), rand((5,))
    y, m, inv = layer_norm_ref(x, s, b, -1, f32(0.25))
    c.add("layernorm_epsilon", "LayerNormalization", [tensor(x, "f32"), tensor(s, "f32"), tensor(b, "f32")],
          [out(y, "f32"), out(m, "f32"), out(inv, "f32")], {"epsilon": 0.25})
    x, s, b = rand((2, 3, 8)), rand((1, 8)), rand((3, 1))
    y, m, inv = layer_norm_ref(x, s, b, -1, eps)
    c.add("layernorm_broadcast_scale_bias", "LayerNormalization",
          [tensor(x, "f32"), tensor(s, "f32"), tensor(b, "f32")], [out(y, "f32")])
    for dt in ("f16", "bf16"):
        x, s, b = rand((3, 8), dt), rand((8,), dt), rand((8,), dt)
        y, m, inv = layer_norm_ref(x, s, b, -1, eps)
        c.add("layernorm_" + dt, "LayerNormalization", [tensor(x, dt), tensor(s, dt), tensor(b, dt)],
              [out(y, dt), out(m, "f32"), out(inv, "f32")])
    x, s, b = rand((3, 8), "f64"), rand((8,), "f64"), rand((8,), "f64")
    y, m, inv = layer_norm_ref(x, s, b, -1, eps)
    c.add("layernorm_f64_stash_f64", "LayerNormalization", [tensor(x, "f64"), tensor(s, "f64"), tensor(b, "f64")],
          [out(y, "f64"), out(m, "f64"), out(inv, "f64")], {"stash_type": 11})
    c.add("layernorm_f64", "LayerNormalization", [tensor(x, "f64"), tensor(s, "f64"), tensor(b, "f64")],
          [out(y, "f64"), out(m, "f32"), out(inv, "f32")])
    x, s, b = rand((2, 3, 8)), rand((8,)), rand((8,))
    y, m, inv = layer_norm_ref(x, s, b, -1, eps)
    c.add("layernorm_sym", "LayerNormalization",
          [tensor(x, "f32", sym=["B", "S", 8]), tensor(s, "f32", const=True), tensor(b, "f32", const=True)],
          [out(y, "f32"), out(m, "f32"), out(inv, "f32")])
    c.add("layernorm_bad_scale", "LayerNormalization", [tensor(rand((2, 8)), "f32"), tensor(rand((7,)), "f32")],
          [dummy("f32", (2, 8))], error="VKL_ERR_SHAPE")
    c.add("layernorm_bad_axis", "LayerNormalization", [tensor(rand((2, 8)), "f32"), tensor(rand((8,)), "f32")],
          [dummy("f32", (2, 8))], {"axis": 2}, error="VKL_ERR_SHAPE")
    c.add("layernorm_bad_stash", "LayerNormalization", [tensor(rand((2, 8)), "f32"), tensor(rand((8,)), "f32")],
          [dummy("f32", (2, 8))], {"stash_type": 7}, error="VKL_ERR_UNSUPPORTED")
    c.add("layernorm_scale_runtime_mismatch", "LayerNormalization",
          [tensor(rand((2, 8)), "f32", sym=[2, "D"]), tensor(rand((4,)), "f32", sym=["E"])],
          [dummy("f32", (2, 8))], error="VKL_ERR_SHAPE")

    # RMSNorm (vkllm)
    x, s = rand((2, 3, 8)), rand((8,))
    c.add("rmsnorm_default", "RMSNorm", [tensor(x, "f32"), tensor(s, "f32", const=True)],
          [out(rms_norm_ref(x, s, -1, eps), "f32")], domain="vkllm")
    x, s = rand((2, 3, 4)), rand((3, 4))
    c.add("rmsnorm_axis1", "RMSNorm", [tensor(x, "f32"), tensor(s, "f32")],
          [out(rms_norm_ref(x, s, 1, eps), "f32")], {"axis": 1}, domain="vkllm")
    s = rand((1, 4))
    c.add("rmsnorm_axis_neg2_bcast", "RMSNorm", [tensor(x, "f32"), tensor(s, "f32")],
          [out(rms_norm_ref(x, s, -2, eps), "f32")], {"axis": -2}, domain="vkllm")
    x, s = rand((3, 6)), rand((6,))
    c.add("rmsnorm_epsilon", "RMSNorm", [tensor(x, "f32"), tensor(s, "f32")],
          [out(rms_norm_ref(x, s, -1, f32(0.5)), "f32")], {"epsilon": 0.5}, domain="vkllm")
    for dt in ("f16", "bf16", "f64"):
        x, s = rand((3, 8), dt), rand((8,), dt)
        c.add("rmsnorm_" + dt, "RMSNorm", [tensor(x, dt), tensor(s, dt)],
              [out(rms_norm_ref(x, s, -1, eps), dt)], domain="vkllm")
    x, s = rand((3, 8), "f16"), rand((8,), "f32")
    c.add("rmsnorm_f16_scale_f32", "RMSNorm", [tensor(x, "f16"), tensor(s, "f32")],
          [out(rms_norm_ref(x, s, -1, eps), "f16")], domain="vkllm")
    x, s = rand((2, 5, 16)), rand((16,))
    c.add("rmsnorm_sym", "RMSNorm", [tensor(x, "f32", sym=["B", "S", 16]), tensor(s, "f32", const=True)],
          [out(rms_norm_ref(x, s, -1, eps), "f32")], domain="vkllm")
    c.add("rmsnorm_bad_scale", "RMSNorm", [tensor(rand((2, 8)), "f32"), tensor(rand((5,)), "f32")],
          [dummy("f32", (2, 8))], domain="vkllm", error="VKL_ERR_SHAPE")
    c.add("rmsnorm_scale_outside_axes", "RMSNorm", [tensor(rand((2, 8)), "f32"), tensor(rand((2, 8)), "f32")],
          [dummy("f32", (2, 8))], domain="vkllm", error="VKL_ERR_SHAPE")
    c.add("rmsnorm_int", "RMSNorm", [tensor(rand((2, 8), "i32"), "i32"), tensor(rand((8,)), "f32")],
          [dummy("i32", (2, 8))], domain="vkllm", error="VKL_ERR_UNSUPPORTED")
    return c


# ---------------------------------------------------------------- reduce.json

def reduce_ref(op, x, axes, keepdims):
    if op == "ReduceSum":
        return np.sum(x, axis=axes, keepdims=keepdims, dtype=np.float64 if x.dtype.kind == "f" else np.int64)
    if op == "ReduceMax":
        init = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min if x.dtype.kind in "iu" else 0
        return np.max(x, axis=axes, keepdims=keepdims, initial=init)
    if x.dtype.kind in "iu":  # integer mean truncates toward zero
        s = np.sum(x, axis=axes, keepdims=keepdims, dtype=np.int64)
        n = np.prod([x.shape[a] for a in (axes if axes is not None else range(x.ndim))], dtype=np.int64)
        return np.sign(s) * (np.abs(s) // n)
    with warnings.catch_warnings():  # the mean of an empty set is NaN, as intended
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.mean(x, axis=axes, keepdims=keepdims)


def gen_reduce():
    c = Cases()
    for op in ("ReduceMean", "ReduceSum", "ReduceMax"):
        p = op.lower()

        def red(name, x, dt, axes, keepdims=1, attrs=None, axes_in=None, **kw):
            ins = [tensor(x, dt, **kw)]
            if axes_in is not None:
                ins.append(i64(axes_in))
            a = dict(attrs or {})
            if keepdims != 1:
                a["keepdims"] = keepdims
            c.add(p + "_" + name, op, ins, [out(reduce_ref(op, x, axes, bool(keepdims)), dt)], a)

        x = rand((2, 3, 4))
        red("axis1", x, "f32", (1,), axes_in=[1])
        red("axes02_nokeep", x, "f32", (0, 2), keepdims=0, axes_in=[0, 2])
        red("axis_neg1", x, "f32", (2,), axes_in=[-1])
        red("all_keep", x, "f32", None)
        red("all_nokeep", x, "f32", None, keepdims=0)
        red("empty_axes_all", x, "f32", None, axes_in=[])
        red("noop_empty", x, "f32", (), attrs={"noop_with_empty_axes": 1})
        red("noop_axes_given", x, "f32", (0,), attrs={"noop_with_empty_axes": 1}, axes_in=[0])
        for dt in ("f16", "bf16", "f64", "i32", "i64"):
            red(dt, rand((3, 5), dt), dt, (1,), axes_in=[1])
        red("u32", rand((3, 5), "u32"), "u32", (0,), axes_in=[0])
        x = rand((4, 3, 5))
        red("sym", x, "f32", (1, 2), axes_in=[1, 2], sym=["N", 3, 5])
        red("sym_reduce_sym_dim", x, "f32", (0,), keepdims=0, axes_in=[0], sym=["N", "C", 5])
        red("empty_input", np.zeros((0, 3)), "f32", (0,), axes_in=[0])
        red("scalar", np.array(2.5), "f32", None)
        c.add(p + "_bad_axis", op, [tensor(rand((2, 3)), "f32"), i64([2])], [dummy("f32", (2, 1))],
              error="VKL_ERR_SHAPE")
        c.add(p + "_repeated_axis", op, [tensor(rand((2, 3)), "f32"), i64([1, -1])], [dummy("f32", (2, 1))],
              error="VKL_ERR_SHAPE")
        c.add(p + "_runtime_axes", op, [tensor(rand((2, 3)), "f32"), i64([1], const=False)],
              [dummy("f32", (2, 1))], error="VKL_ERR_UNSUPPORTED")
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    c.add("reducemax_nan", "ReduceMax", [tensor(x, "f32"), i64([1])], [out(reduce_ref("ReduceMax", x, (1,), True), "f32")])
    for dt in ("i8", "u8", "bool"):
        x = rand((3, 4), dt)
        c.add("reducemax_" + dt, "ReduceMax", [tensor(x, dt), i64([0])],
              [out(reduce_ref("ReduceMax", x, (0,), True), dt)])
    x = np.zeros((2, 0), np.int32)
    c.add("reducemax_empty_i32", "ReduceMax", [tensor(x, "i32"), i64([1])], [out(np.full((2, 1), -2**31), "i32")])
    x = np.array([[2**31 - 1, 1], [5, 6]], np.int32)
    c.add("reducesum_i32_wraps", "ReduceSum", [tensor(x, "i32"), i64([1])],
          [out(np.array([[-2**31], [11]]), "i32")])
    x = np.array([[-7, 2], [7, 0]], np.int64)
    c.add("reducemean_i64_truncates", "ReduceMean", [tensor(x, "i64"), i64([1])],
          [out(np.array([[-2], [3]]), "i64")])
    x = np.array([[3, 1, 2], [4, 5, 6]], np.int64)
    c.add("reducesum_const_value", "ReduceSum", [tensor(x, "i64", const=True), i64([0])],
          [out(np.array([[7, 6, 8]]), "i64")])

    # ArgMax-13
    x = rand((3, 4))
    c.add("argmax_default", "ArgMax", [tensor(x, "f32")], [out(argmax_ref(x, 0), "i64")])
    c.add("argmax_axis_neg1_nokeep", "ArgMax", [tensor(x, "f32")], [out(argmax_ref(x, -1, 0), "i64")],
          {"axis": -1, "keepdims": 0})
    x = np.array([[2, 5, 5, 1], [7, 7, 0, 7], [3, 3, 3, 3]], np.int32)
    c.add("argmax_ties_first", "ArgMax", [tensor(x, "i32")], [out(argmax_ref(x, 1), "i64")], {"axis": 1})
    c.add("argmax_ties_last", "ArgMax", [tensor(x, "i32")], [out(argmax_ref(x, 1, 1, 1), "i64")],
          {"axis": 1, "select_last_index": 1})
    c.add("argmax_ties_last_axis0", "ArgMax", [tensor(x, "i32")], [out(argmax_ref(x, 0, 0, 1), "i64")],
          {"keepdims": 0, "select_last_index": 1})
    for dt in ("f16", "bf16", "f64", "i64", "u8"):
        x = rand((2, 3, 4), dt)
        c.add("argmax_" + dt, "ArgMax", [tensor(x, dt)], [out(argmax_ref(x, 1), "i64")], {"axis": 1})
    x = rand((5, 6))
    c.add("argmax_sym", "ArgMax", [tensor(x, "f32", sym=["B", "V"])], [out(argmax_ref(x, -1, 0), "i64")],
          {"axis": -1, "keepdims": 0})
    x = np.array([[1.0, np.nan, 3.0, np.nan]])
    c.add("argmax_nan_is_max", "ArgMax", [tensor(x, "f32")], [out(argmax_ref(x, 1), "i64")], {"axis": 1})
    c.add("argmax_bad_axis", "ArgMax", [tensor(rand((2, 3)), "f32")], [dummy("i64", (2, 1))], {"axis": 2},
          error="VKL_ERR_SHAPE")
    c.add("argmax_empty_axis", "ArgMax", [tensor(np.zeros((3, 0)), "f32")], [dummy("i64", (3, 1))], {"axis": 1},
          error="VKL_ERR_SHAPE")

    # CumSum-14
    x = rand((3, 4))
    for name, axis, ex, rev in (("axis0", 0, 0, 0), ("axis1", 1, 0, 0), ("exclusive", 1, 1, 0),
                                ("reverse", 0, 0, 1), ("exclusive_reverse", 1, 1, 1), ("axis_neg1", -1, 0, 0)):
        attrs = {}
        if ex:
            attrs["exclusive"] = 1
        if rev:
            attrs["reverse"] = 1
        c.add("cumsum_" + name, "CumSum", [tensor(x, "f32"), tensor(np.array(axis, np.int64), "i64", const=True)],
              [out(cumsum_ref(x, axis, ex, rev), "f32")], attrs)
    x = np.array([1.0, 2, 3, 4, 5])
    c.add("cumsum_onnx_example", "CumSum", [tensor(x, "f64"), tensor(np.array(0, np.int32), "i32", const=True)],
          [out(np.array([14.0, 12, 9, 5, 0]), "f64")], {"exclusive": 1, "reverse": 1})
    for dt in ("f16", "bf16", "f64", "i32", "i64", "u32"):
        x = rand((2, 5), dt)
        c.add("cumsum_" + dt, "CumSum", [tensor(x, dt), tensor(np.array([1], np.int64), "i64", const=True)],
              [out(cumsum_ref(x, 1), dt)])
    x = rand((4, 3))
    c.add("cumsum_runtime_axis_i32", "CumSum", [tensor(x, "f32", sym=["N", 3]), tensor(np.array(0, np.int32), "i32")],
          [out(cumsum_ref(x, 0), "f32")])
    x = np.array([2**31 - 1, 1, 1], np.int32)
    c.add("cumsum_i32_wraps", "CumSum", [tensor(x, "i32"), i64(0)], [out(np.array([2**31 - 1, -2**31, -2**31 + 1]), "i32")])
    c.add("cumsum_bad_axis", "CumSum", [tensor(rand((2, 3)), "f32"), i64(2)], [dummy("f32", (2, 3))],
          error="VKL_ERR_SHAPE")
    # the axis is data: a GPU kernel cannot raise the error (data_error: it may run instead)
    c.add("cumsum_bad_axis_runtime", "CumSum", [tensor(rand((2, 3)), "f32"), tensor(np.array(-3, np.int64), "i64")],
          [dummy("f32", (2, 3))], error="VKL_ERR_SHAPE", data_error=True)
    c.add("cumsum_axis_not_scalar", "CumSum", [tensor(rand((2, 3)), "f32"), i64([0, 1])], [dummy("f32", (2, 3))],
          error="VKL_ERR_SHAPE")

    # TopK-11
    def topk(name, x, dt, k, axis=-1, largest=1, attrs=None, sym=None, outputs=(True, True)):
        v, ix = topk_ref(x, k, axis, largest)
        a = dict(attrs or {})
        if axis != -1:
            a["axis"] = axis
        if not largest:
            a["largest"] = 0
        outs = [out(v, dt) if outputs[0] else None, out(ix, "i64") if outputs[1] else None]
        c.add("topk_" + name, "TopK", [tensor(x, dt, sym=sym), i64([k])], outs, a)

    x = rand((3, 6))
    topk("default", x, "f32", 3)
    topk("axis0", x, "f32", 2, axis=0)
    topk("smallest", x, "f32", 4, largest=0)
    topk("unsorted_flag", x, "f32", 3, attrs={"sorted": 0})
    topk("k0", x, "f32", 0)
    topk("k_all", x, "f32", 6)
    xt = np.array([[3, 1, 3, 2, 1, 3], [0, 0, 5, 5, 0, 1]], np.int64)
    topk("ties_largest", xt, "i64", 4)
    topk("ties_smallest", xt, "i64", 4, largest=0)
    for dt in ("f16", "bf16", "f64", "i32"):
        topk(dt, rand((2, 3, 5), dt), dt, 2, axis=1)
    topk("sym", rand((4, 10)), "f32", 3, sym=["N", 10])
    topk("values_only", x, "f32", 2, outputs=(True, False))
    topk("indices_only", x, "f32", 2, outputs=(False, True))
    c.add("topk_k_too_big", "TopK", [tensor(rand((2, 3)), "f32"), i64([4])], [dummy("f32", (2, 4)), dummy("i64", (2, 4))],
          error="VKL_ERR_SHAPE")
    c.add("topk_k_negative", "TopK", [tensor(rand((2, 3)), "f32"), i64([-1])], [dummy("f32", (2, 1)), dummy("i64", (2, 1))],
          error="VKL_ERR_SHAPE")
    c.add("topk_runtime_k", "TopK", [tensor(rand((2, 3)), "f32"), i64([2], const=False)],
          [dummy("f32", (2, 2)), dummy("i64", (2, 2))], error="VKL_ERR_UNSUPPORTED")
    c.add("topk_k_exceeds_sym_dim", "TopK", [tensor(rand((2, 3)), "f32", sym=[2, "N"]), i64([5])],
          [dummy("f32", (2, 5)), dummy("i64", (2, 5))], error="VKL_ERR_INVALID_ARGUMENT")
    return c


# ---------------------------------------------------------------- linalg.json

def mm_out(a, b, dt):
    if dt in FLOATS:
        return out(np.matmul(a, b), dt)
    y = np.matmul(a.astype(np.int64), b.astype(np.int64))  # int64 wraps; then wrap to dt
    return out(y.astype(NP_INT[dt]), dt)


def gen_linalg():
    c = Cases()
    for name, sa, sb in (("2d", (3, 4), (4, 5)), ("1d_2d", (4,), (4, 5)), ("2d_1d", (3, 4), (4,)),
                         ("1d_1d", (4,), (4,)), ("batched", (2, 3, 4), (2, 4, 5)),
                         ("batch_broadcast", (2, 1, 3, 4), (3, 4, 5)), ("1d_3d", (4,), (2, 4, 5)),
                         ("3d_1d", (2, 3, 4), (4,)), ("3d_2d", (2, 3, 4), (4, 2)), ("2d_3d", (3, 4), (2, 4, 5)),
                         ("k0", (3, 0), (0, 2)), ("m0", (0, 4), (4, 5)), ("larger", (1, 7, 64), (64, 96))):
        a, b = rand(sa), rand(sb)
        c.add("matmul_" + name, "MatMul", [tensor(a, "f32"), tensor(b, "f32")], [mm_out(a, b, "f32")],
              **({"rtol": 3e-5} if name == "larger" else {}))
    for dt in ("f16", "bf16", "f64", "i32", "i64", "u32"):
        a, b = rand((2, 3, 4), dt), rand((4, 3), dt)
        c.add("matmul_" + dt, "MatMul", [tensor(a, dt), tensor(b, dt, const=True)], [mm_out(a, b, dt)])
    a = np.array([[60000, 60000]], np.int32)
    b = np.array([[60000], [60000]], np.int32)
    c.add("matmul_i32_wraps", "MatMul", [tensor(a, "i32"), tensor(b, "i32")], [mm_out(a, b, "i32")])
    a, b = rand((2, 5, 8)), rand((8, 16))
    c.add("matmul_sym_linear", "MatMul", [tensor(a, "f32", sym=["B", "S", 8]), tensor(b, "f32", const=True)],
          [mm_out(a, b, "f32")])
    a, b = rand((2, 2, 3, 4)), rand((2, 2, 4, 5))
    c.add("matmul_sym_scores", "MatMul", [tensor(a, "f32", sym=["B", 2, "S", 4]), tensor(b, "f32", sym=["B", 2, 4, "T"])],
          [mm_out(a, b, "f32")])
    a, b = rand((3, 3, 4)), rand((1, 4, 2))
    c.add("matmul_sym_batch_broadcast", "MatMul", [tensor(a, "f32", sym=["P", 3, 4]), tensor(b, "f32", sym=["Q", 4, 2])],
          [mm_out(a, b, "f32")])
    c.add("matmul_k_mismatch", "MatMul", [tensor(rand((3, 4)), "f32"), tensor(rand((5, 6)), "f32")],
          [dummy("f32", (3, 6))], error="VKL_ERR_SHAPE")
    c.add("matmul_batch_mismatch", "MatMul", [tensor(rand((2, 3, 4)), "f32"), tensor(rand((3, 4, 5)), "f32")],
          [dummy("f32", (3, 3, 5))], error="VKL_ERR_SHAPE")
    c.add("matmul_dtype_mismatch", "MatMul", [tensor(rand((3, 4)), "f32"), tensor(rand((4, 5), "f16"), "f16")],
          [dummy("f32", (3, 5))], error="VKL_ERR_SHAPE")
    c.add("matmul_k_mismatch_runtime", "MatMul",
          [tensor(rand((2, 3)), "f32", sym=["M", "K1"]), tensor(rand((4, 3)), "f32", sym=["K2", 3])],
          [dummy("f32", (2, 3))], error="VKL_ERR_SHAPE")
    c.add("matmul_batch_mismatch_runtime", "MatMul",
          [tensor(rand((2, 2, 3)), "f32", sym=["P", 2, 3]), tensor(rand((3, 3, 2)), "f32", sym=["Q", 3, 2])],
          [dummy("f32", (3, 2, 2))], error="VKL_ERR_SHAPE")
    c.add("matmul_bool", "MatMul", [tensor(rand((2, 2), "bool"), "bool"), tensor(rand((2, 2), "bool"), "bool")],
          [dummy("bool", (2, 2))], error="VKL_ERR_UNSUPPORTED")

    # Gemm-13
    def gemm(name, m, k, n, dt="f32", ta=0, tb=0, alpha=None, beta=None, cshape=(), sym=None, const_b=False, **kw):
        a = rand((k, m) if ta else (m, k), dt)
        b = rand((n, k) if tb else (k, n), dt)
        cc = rand(cshape, dt) if cshape is not None else None
        y = (alpha if alpha is not None else 1.0) * ((a.T if ta else a) @ (b.T if tb else b))
        if cc is not None:
            y = y + (beta if beta is not None else 1.0) * cc
        attrs = {}
        if ta:
            attrs["transA"] = 1
        if tb:
            attrs["transB"] = 1
        if alpha is not None:
            attrs["alpha"] = alpha
        if beta is not None:
            attrs["beta"] = beta
        ins = [tensor(a, dt, sym=sym), tensor(b, dt, const=const_b)]
        if cc is not None:
            ins.append(tensor(cc, dt, const=const_b))
        c.add("gemm_" + name, "Gemm", ins, [out(y, dt)], attrs, **kw)

    gemm("default_c_row", 3, 4, 5, cshape=(5,))
    gemm("no_c", 3, 4, 5, cshape=None)
    gemm("c_full", 3, 4, 5, cshape=(3, 5))
    gemm("c_col", 3, 4, 5, cshape=(3, 1))
    gemm("c_scalar", 3, 4, 5, cshape=())
    gemm("c_one", 3, 4, 5, cshape=(1,))
    gemm("trans_a", 3, 4, 5, ta=1, cshape=(5,))
    gemm("trans_b", 3, 4, 5, tb=1, cshape=(5,))
    gemm("trans_ab", 3, 4, 5, ta=1, tb=1, cshape=(3, 5))
    gemm("alpha_beta", 3, 4, 5, alpha=0.5, beta=2.0, cshape=(3, 5))
    gemm("alpha_no_c", 2, 3, 4, alpha=-1.5, cshape=None)
    for dt in ("f16", "bf16", "f64"):
        gemm(dt, 3, 4, 5, dt=dt, tb=1, alpha=0.5, beta=0.25, cshape=(5,))
    gemm("sym_linear", 6, 8, 5, tb=1, cshape=(5,), sym=["M", 8], const_b=True)
    gemm("larger_trans_b", 5, 64, 48, tb=1, cshape=(48,), rtol=3e-5)
    c.add("gemm_bad_c", "Gemm", [tensor(rand((3, 4)), "f32"), tensor(rand((4, 5)), "f32"), tensor(rand((4,)), "f32")],
          [dummy("f32", (3, 5))], error="VKL_ERR_SHAPE")
    c.add("gemm_k_mismatch", "Gemm", [tensor(rand((3, 4)), "f32"), tensor(rand((5, 5)), "f32")],
          [dummy("f32", (3, 5))], error="VKL_ERR_SHAPE")
    c.add("gemm_k_mismatch_trans", "Gemm", [tensor(rand((3, 4)), "f32"), tensor(rand((5, 3)), "f32")],
          [dummy("f32", (3, 5))], {"transB": 1}, error="VKL_ERR_SHAPE")
    c.add("gemm_rank3", "Gemm", [tensor(rand((2, 3, 4)), "f32"), tensor(rand((4, 5)), "f32")],
          [dummy("f32", (3, 5))], error="VKL_ERR_SHAPE")
    c.add("gemm_int", "Gemm", [tensor(rand((3, 4), "i32"), "i32"), tensor(rand((4, 5), "i32"), "i32")],
          [dummy("i32", (3, 5))], error="VKL_ERR_UNSUPPORTED")

    # Conv-11
    def conv(name, xs, ws, bias=True, dt="f32", sym=None, **attrs):
        x, w = rand(xs, dt), rand(ws, dt)
        b = rand((ws[0],), dt) if bias else None
        ref_attrs = {k: v for k, v in attrs.items() if k != "kernel_shape"}
        y = conv_ref(x, w, b, **ref_attrs)
        ins = [tensor(x, dt, sym=sym), tensor(w, dt, const=True)]
        if bias:
            ins.append(tensor(b, dt, const=True))
        c.add("conv_" + name, "Conv", ins, [out(y, dt)], attrs)

    conv("1d", (1, 2, 10), (3, 2, 3), strides=[2], pads=[1, 2])
    conv("1d_dilated", (2, 3, 9), (2, 3, 2), dilations=[3])
    conv("2d", (2, 3, 6, 7), (4, 3, 3, 3), pads=[1, 1, 1, 1])
    conv("2d_no_bias", (1, 3, 5, 5), (2, 3, 3, 3), bias=False)
    conv("2d_strides_dilations", (1, 2, 9, 8), (3, 2, 2, 3), strides=[2, 1], dilations=[2, 2])
    conv("2d_asymmetric_pads", (1, 2, 5, 6), (2, 2, 3, 3), pads=[0, 1, 2, 1])
    conv("2d_kernel_shape", (1, 2, 5, 5), (2, 2, 3, 2), kernel_shape=[3, 2])
    conv("2d_group2", (1, 4, 5, 5), (6, 2, 3, 3), group=2, pads=[1, 1, 1, 1])
    conv("2d_depthwise", (1, 3, 6, 6), (3, 1, 3, 3), group=3, strides=[2, 2])
    conv("2d_depthwise_multiplier", (1, 2, 5, 5), (4, 1, 2, 2), group=2)
    conv("clip_patch_embed", (1, 3, 16, 16), (64, 3, 8, 8), bias=False, strides=[8, 8])
    conv("same_upper", (1, 2, 7, 6), (2, 2, 3, 4), auto_pad="SAME_UPPER", strides=[2, 2])
    conv("same_lower", (1, 2, 7, 6), (2, 2, 3, 4), auto_pad="SAME_LOWER", strides=[2, 2])
    conv("same_upper_dilated", (1, 1, 6, 6), (1, 1, 3, 3), auto_pad="SAME_UPPER", dilations=[2, 2])
    conv("valid", (1, 2, 7, 6), (2, 2, 3, 2), auto_pad="VALID", strides=[2, 1])
    conv("3d", (1, 2, 4, 5, 4), (2, 2, 2, 3, 2), strides=[1, 2, 1], pads=[1, 0, 1, 0, 1, 1])
    conv("3d_dilated_group", (1, 4, 5, 4, 4), (2, 2, 2, 2, 2), group=2, dilations=[2, 1, 2])
    for dt in ("f16", "bf16", "f64"):
        conv("2d_" + dt, (1, 2, 5, 5), (3, 2, 3, 3), dt=dt, pads=[1, 1, 1, 1])
    conv("sym", (2, 3, 9, 7), (4, 3, 3, 3), sym=["N", 3, "H", "W"], strides=[2, 2], pads=[1, 1, 1, 1])
    conv("sym_same_upper", (1, 3, 9, 7), (2, 3, 3, 3), sym=["N", 3, "H", "W"], strides=[2, 2], auto_pad="SAME_UPPER")
    x = np.arange(25.0).reshape(1, 1, 5, 5)
    c.add("conv_onnx_autopad_same", "Conv", [tensor(x, "f32"), tensor(np.ones((1, 1, 3, 3)), "f32", const=True)],
          [out(np.array([12.0, 27, 24, 63, 108, 81, 72, 117, 84]).reshape(1, 1, 3, 3), "f32")],
          {"auto_pad": "SAME_LOWER", "strides": [2, 2], "kernel_shape": [3, 3]})

    def conv_err(name, xs, ws, error="VKL_ERR_SHAPE", **attrs):
        c.add("conv_" + name, "Conv", [tensor(rand(xs), "f32"), tensor(rand(ws), "f32", const=True)],
              [dummy("f32", (1, 1, 1, 1))], attrs, error=error)

    conv_err("channel_mismatch", (1, 3, 5, 5), (4, 2, 3, 3))
    conv_err("group_not_dividing", (1, 4, 5, 5), (3, 2, 3, 3), group=2)
    conv_err("kernel_too_big", (1, 1, 2, 2), (1, 1, 3, 3))
    conv_err("bad_auto_pad", (1, 1, 5, 5), (1, 1, 3, 3), auto_pad="SAME")
    conv_err("kernel_shape_mismatch", (1, 1, 5, 5), (1, 1, 3, 3), kernel_shape=[2, 2])
    conv_err("strides_count", (1, 1, 5, 5), (1, 1, 3, 3), strides=[1])
    conv_err("zero_stride", (1, 1, 5, 5), (1, 1, 3, 3), strides=[1, 0])
    conv_err("rank2", (1, 5), (1, 5))
    c.add("conv_bias_mismatch", "Conv", [tensor(rand((1, 1, 5, 5)), "f32"), tensor(rand((2, 1, 3, 3)), "f32"),
          tensor(rand((3,)), "f32")], [dummy("f32", (1, 2, 3, 3))], error="VKL_ERR_SHAPE")
    c.add("conv_kernel_too_big_runtime", "Conv", [tensor(rand((1, 1, 2, 2)), "f32", sym=[1, 1, "H", "W"]),
          tensor(rand((1, 1, 3, 3)), "f32", const=True)], [dummy("f32", (1, 1, 1, 1))], error="VKL_ERR_SHAPE")
    return c


# ---------------------------------------------------------------- fused.json

def gen_fused():
    c = Cases()
    V = "vkllm"

    def rope(name, b, h, s, d, r, interleaved=0, per_batch=False, dt="f32", cdt="f32", sym=None, csym=None):
        x = rand((b, h, s, d), dt)
        if per_batch:
            pos = np.stack([np.arange(s) + 3 * i for i in range(per_batch)])  # [B or 1, S]
        else:
            pos = np.arange(s) + 2
        cos, sin = rope_tables(pos, r, interleaved)
        cos, sin = rnd(cos, cdt), rnd(sin, cdt)
        attrs = {"interleaved": 1} if interleaved else {}
        c.add("rope_" + name, "RoPE", [tensor(x, dt, sym=sym), tensor(cos, cdt, sym=csym), tensor(sin, cdt, sym=csym)],
              [out(rope_ref(x, cos, sin, interleaved), dt)], attrs, domain=V)

    rope("half", 1, 2, 3, 8, 8)
    rope("partial", 1, 2, 3, 8, 4)
    rope("interleaved", 1, 2, 3, 8, 8, interleaved=1)
    rope("interleaved_partial", 2, 1, 3, 6, 4, interleaved=1)
    rope("per_batch", 2, 2, 3, 4, 4, per_batch=2)
    rope("batch1_table", 2, 2, 3, 4, 4, per_batch=1)
    rope("f16", 1, 2, 3, 8, 8, dt="f16", cdt="f16")
    rope("bf16_f32_tables", 1, 2, 3, 8, 8, dt="bf16")
    rope("f64", 1, 2, 3, 8, 8, dt="f64", cdt="f64")
    rope("sym", 2, 2, 5, 8, 8, sym=["B", 2, "S", 8], csym=["S", 8])
    x = np.arange(1.0, 5.0).reshape(1, 1, 1, 4)
    c.add("rope_hand_rotate_half", "RoPE", [tensor(x, "f32"), tensor(np.zeros((1, 4)), "f32"), tensor(np.ones((1, 4)), "f32")],
          [out(np.array([-3.0, -4, 1, 2]).reshape(1, 1, 1, 4), "f32")], domain=V)
    c.add("rope_hand_interleaved", "RoPE", [tensor(x, "f32"), tensor(np.zeros((1, 4)), "f32"), tensor(np.ones((1, 4)), "f32")],
          [out(np.array([-2.0, 1, -4, 3]).reshape(1, 1, 1, 4), "f32")], {"interleaved": 1}, domain=V)

    def rope_err(name, xs, cs, ss=None, error="VKL_ERR_SHAPE", **kw):
        c.add("rope_" + name, "RoPE", [tensor(rand(xs), "f32", **kw), tensor(rand(cs), "f32"), tensor(rand(ss or cs), "f32")],
              [dummy("f32", xs)], domain=V, error=error)

    rope_err("odd_width", (1, 1, 3, 8), (3, 7))
    rope_err("width_gt_d", (1, 1, 3, 4), (3, 6))
    rope_err("seq_mismatch", (1, 1, 3, 4), (4, 4))
    rope_err("cos_sin_differ", (1, 1, 3, 4), (3, 4), (3, 2))
    rope_err("rank3", (1, 3, 4), (3, 4))
    rope_err("batch_mismatch", (2, 1, 3, 4), (3, 3, 4))
    rope_err("seq_mismatch_runtime", (1, 1, 3, 4), (4, 4), sym=[1, 1, "S", 4])

    def attn(name, b, hq, hkv, s, t, d, dv=None, dt="f32", mask=None, layout=0, sym=None, **attrs):
        dv = dv or d
        q, k, v = rand((b, hq, s, d), dt), rand((b, hkv, t, d), dt), rand((b, hkv, t, dv), dt)
        y = attention_ref(q, k, v, mask, attrs.get("scale", 0.0), attrs.get("causal", 0), attrs.get("window", 0))
        if layout:
            k, v = k.transpose(2, 0, 1, 3), v.transpose(2, 0, 1, 3)
            attrs["kv_layout"] = 1
        ins = [tensor(q, dt, sym=sym and sym[0]), tensor(k, dt, sym=sym and sym[1]), tensor(v, dt, sym=sym and sym[2])]
        if mask is not None:
            ins.append(tensor(mask, "bool" if mask.dtype == np.bool_ else "f32"))
        c.add("attention_" + name, "Attention", ins, [out(y, dt)], attrs, domain=V)

    attn("basic", 1, 2, 2, 3, 3, 4)
    attn("causal", 2, 2, 2, 5, 5, 4, causal=1)
    attn("causal_past", 1, 2, 2, 2, 6, 4, causal=1)
    attn("decode", 1, 2, 2, 1, 7, 8, causal=1)
    attn("gqa", 1, 4, 2, 3, 5, 4, causal=1)
    attn("mqa", 2, 3, 1, 2, 4, 4, causal=1)
    attn("window_causal", 1, 1, 1, 6, 6, 4, causal=1, window=3)
    attn("window_noncausal", 1, 1, 1, 4, 6, 4, window=2)
    attn("scale", 1, 2, 2, 3, 4, 4, scale=0.3)
    attn("dv", 1, 2, 1, 3, 4, 4, dv=6, causal=1)
    m = np.where(rng.uniform(size=(1, 1, 3, 5)) < 0.3, -np.inf, rnd(rand((1, 1, 3, 5)), "f32"))
    m[0, 0, 1, :] = -np.inf  # a fully masked row gives zeros
    attn("mask_float", 1, 2, 2, 3, 5, 4, mask=m)
    mb = np.array([[[[1, 1, 0, 1, 1]]], [[[0, 0, 0, 0, 0]]]], np.bool_)  # [B, 1, 1, T] padding mask
    attn("mask_bool_padding", 2, 2, 2, 3, 5, 4, mask=mb)
    attn("mask_bool_causal", 1, 2, 2, 3, 5, 4, mask=rng.integers(0, 2, (1, 2, 3, 5)).astype(np.bool_), causal=1)
    attn("mask_rank2", 1, 2, 2, 3, 4, 4, mask=rnd(rand((3, 4)), "f32"))
    attn("layout1", 2, 2, 2, 3, 4, 4, layout=1)
    attn("layout1_gqa_causal_past", 2, 4, 2, 2, 5, 4, layout=1, causal=1, window=4)
    attn("queries_before_keys", 1, 1, 1, 3, 2, 4, causal=1)  # T < S: query 0 sees nothing
    for dt in ("f16", "bf16", "f64"):
        attn(dt, 1, 2, 1, 3, 4, 8, dt=dt, causal=1)
    attn("sym", 2, 2, 2, 3, 5, 4, causal=1,
         sym=(["B", 2, "S", 4], ["B", 2, "T", 4], ["B", 2, "T", 4]))

    def attn_err(name, qs, ks, vs, mask_shape=None, error="VKL_ERR_SHAPE", qsym=None, ksym=None, **attrs):
        ins = [tensor(rand(qs), "f32", sym=qsym), tensor(rand(ks), "f32", sym=ksym), tensor(rand(vs), "f32", sym=ksym)]
        if mask_shape:
            ins.append(tensor(rand(mask_shape), "f32"))
        c.add("attention_" + name, "Attention", ins, [dummy("f32", qs)], attrs, domain=V, error=error)

    attn_err("heads_not_multiple", (1, 3, 2, 4), (1, 2, 2, 4), (1, 2, 2, 4))
    attn_err("head_dim_mismatch", (1, 2, 2, 4), (1, 2, 2, 5), (1, 2, 2, 4))
    attn_err("kv_len_mismatch", (1, 2, 2, 4), (1, 2, 3, 4), (1, 2, 4, 4))
    attn_err("bad_layout", (1, 2, 2, 4), (1, 2, 2, 4), (1, 2, 2, 4), kv_layout=2)
    attn_err("bad_mask", (1, 2, 2, 4), (1, 2, 3, 4), (1, 2, 3, 4), mask_shape=(3, 3))
    attn_err("q_rank3", (2, 2, 4), (1, 2, 2, 4), (1, 2, 2, 4))
    attn_err("heads_runtime", (1, 3, 2, 4), (1, 2, 2, 4), (1, 2, 2, 4), qsym=[1, "H", 2, 4], ksym=[1, "G", 2, 4])

    def kv(name, t, b, h, s, d, pos, dt="f32", xdt="f32", pdt="i64", sym=None):
        state, x = rand((t, b, h, d), dt), rand((b, h, s, d), xdt)
        pos = np.asarray(pos).reshape(b, s)
        y = state.copy()
        for bi in range(b):
            for si in range(s):
                y[pos[bi, si], bi] = rnd(x[bi, :, si], dt)
        c.add("kvappend_" + name, "KvAppend",
              [tensor(state, dt, sym=sym and sym[0]), tensor(x, xdt, sym=sym and sym[1]),
               tensor(pos.astype(NP_INT[pdt]), pdt, sym=sym and sym[2])],
              [out(y, dt)], domain=V)

    kv("basic", 6, 1, 2, 2, 4, [2, 3])
    kv("batch2_i32", 6, 2, 2, 2, 4, [[0, 1], [4, 5]], pdt="i32")
    kv("decode", 5, 1, 3, 1, 4, [4])
    kv("f16_state_f32_x", 4, 1, 2, 2, 4, [0, 2], dt="f16")
    kv("bf16", 4, 1, 2, 1, 4, [1], dt="bf16", xdt="bf16")
    kv("f64", 4, 2, 1, 1, 2, [[3], [0]], dt="f64", xdt="f64")
    kv("sym", 8, 2, 2, 3, 4, [[0, 1, 2], [5, 6, 7]],
       sym=(["T", "B", 2, 4], ["B", 2, "S", 4], ["B", "S"]))

    def kv_err(name, ss, xs, pos, error, pdt="i64", data_error=False):
        c.add("kvappend_" + name, "KvAppend", [tensor(rand(ss), "f32"), tensor(rand(xs), "f32"),
              tensor(np.asarray(pos).astype(NP_INT.get(pdt, np.float64)), pdt)], [dummy("f32", ss)], domain=V, error=error,
              data_error=data_error)

    kv_err("pos_too_big", (4, 1, 2, 4), (1, 2, 1, 4), [[4]], "VKL_ERR_INVALID_ARGUMENT", data_error=True)
    kv_err("pos_negative", (4, 1, 2, 4), (1, 2, 2, 4), [[1, -1]], "VKL_ERR_INVALID_ARGUMENT", data_error=True)
    kv_err("heads_mismatch", (4, 1, 2, 4), (1, 3, 1, 4), [[0]], "VKL_ERR_SHAPE")
    kv_err("pos_shape", (4, 1, 2, 4), (1, 2, 2, 4), [[0]], "VKL_ERR_SHAPE")
    kv_err("pos_float", (4, 1, 2, 4), (1, 2, 1, 4), [[0.0]], "VKL_ERR_UNSUPPORTED", pdt="f32")
    return c


def main():
    self_check()
    gen_norm().write("norm")
    gen_reduce().write("reduce")
    gen_linalg().write("linalg")
    gen_fused().write("fused")


if __name__ == "__main__":
    main()
