#!/usr/bin/python3
"""Op cases for the quantized KV cache (docs/quant.md "KV cache"): KvAppend
writing a state of int8 keys (one Q_INT8 block per (position, head) row,
group = head_dim), fp8 e4m3fn / e5m2 values or f16, and Attention reading K
and V in those formats (kv_layout 1).

Independent of engine/quant: the fp8 codes are found here as the nearest of
the format's 256 values (decoded from the OCP bit layout, compared exactly
with fractions, ties to the even code, beyond max saturating), the int8 rows
are quantized by this file's own reading of the rule (d = max|x| / 127 in
f32, q = x / d in f32 rounded half away from zero, clamped to +-127), and
Attention's expected outputs come from this file's own decoding of the bytes
(int8: f32 product q * d; fp8: exact) and a float64 softmax. Quantized and
fp8 tensors travel as raw bytes ("bytes" + "group"); run_op_cases compares
such outputs byte for byte. Deterministic: run `python3 tests/ops/gen_kv.py`
and commit tests/ops/cases/kv.json."""
import math
from fractions import Fraction

import numpy as np

import opcase
from opcase import jnum_short
from opcase import rounded as rnd

rng = np.random.default_rng(20241105)
V = "vkllm"


# ---------------------------------------------------------------- fp8 (OCP e4m3fn, e5m2)

def fp8_value(code, fmt):
    """The value of a code as a Fraction, or "nan" / "inf" / "-inf"."""
    mbits, bias, has_inf = (3, 7, False) if fmt == "e4m3" else (2, 15, True)
    sign = -1 if code & 0x80 else 1
    e, m = (code & 0x7F) >> mbits, code & ((1 << mbits) - 1)
    emax = (1 << (7 - mbits)) - 1
    if has_inf and e == emax:
        return "nan" if m else ("inf" if sign > 0 else "-inf")
    if not has_inf and e == emax and m == (1 << mbits) - 1:
        return "nan"
    if e == 0:
        v = Fraction(m) * Fraction(2) ** (1 - bias - mbits)
    else:
        v = Fraction(m + (1 << mbits)) * Fraction(2) ** (e - bias - mbits)
    return sign * v


def fp8_finite_magnitudes(fmt):
    """(value, code) of every finite non-negative code, ascending."""
    out = []
    for c in range(0x80):
        v = fp8_value(c, fmt)
        if not isinstance(v, str):
            out.append((v, c))
    return sorted(out)


FP8_TABLE = {f: fp8_finite_magnitudes(f) for f in ("e4m3", "e5m2")}


def fp8_encode(x, fmt):
    """The code of f32 value x: nearest finite magnitude (ties: even code), +-inf and beyond max saturate to
    +-max, NaN -> 0x7F | sign."""
    x = float(np.float32(x))
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | 0x7F
    table = FP8_TABLE[fmt]
    if math.isinf(x):
        return sign | table[-1][1]
    a = Fraction(abs(x))
    best = None
    for v, c in table:
        d = abs(a - v)
        if best is None or d < best[0] or (d == best[0] and c % 2 == 0):
            best = (d, c)
    return sign | best[1]


def fp8_decode(code, fmt):
    v = fp8_value(code, fmt)
    return float(v) if not isinstance(v, str) else float(v)


def fp8_name(fmt):
    return "fp8e4m3" if fmt == "e4m3" else "fp8e5m2"


# ---------------------------------------------------------------- int8 key rows (Q_INT8, group = D)

def round_half_away(p):
    return math.copysign(math.floor(abs(p) + 0.5), p)


def int8_row(x):
    """One Q_INT8 block of the f32 values x: f32 d, then int8 q."""
    x = np.asarray(x, np.float32)
    amax = np.float32(np.max(np.abs(x))) if x.size else np.float32(0)
    d = np.float32(amax / np.float32(127.0))
    q = []
    for v in x:
        p = float(np.float32(v / d)) if d > 0 else 0.0
        q.append(int(max(-127, min(127, round_half_away(p)))))
    return d.tobytes() + np.asarray(q, np.int8).tobytes()


def int8_row_values(blk):
    d = np.frombuffer(blk[:4], np.float32)[0]
    q = np.frombuffer(blk[4:], np.int8).astype(np.float32)
    return (q * d).astype(np.float64)  # the f32 product, as (float)q * d


def rand_int8_block(D, d=None):
    d = np.float32(d if d is not None else rng.uniform(0.001, 0.05))
    return d.tobytes() + rng.integers(-127, 128, size=D).astype(np.int8).tobytes()


def rand_fp8_codes(n, fmt):
    """Random finite codes of either sign (subnormals, zeros and max included now and then)."""
    finite = [c for _, c in FP8_TABLE[fmt]]
    return [int(rng.choice(finite)) | (0x80 if rng.uniform() < 0.5 else 0) for _ in range(n)]


# ---------------------------------------------------------------- tensors and cases

def tensor(x, dt, sym=None):
    t = opcase.tensor(rnd(x, dt), dt, num=jnum_short)
    if sym is not None:
        t["sym"] = sym
    return t


def raw(dt, shape, data, group=None, sym=None):
    t = {"dtype": dt, "shape": list(shape), "bytes": list(bytes(data))}
    if group is not None:
        t["group"] = group
    if sym is not None:
        t["sym"] = sym
    return t


def rand(shape, lo=0.1, hi=2.0):
    return rnd(rng.uniform(lo, hi, size=shape) * rng.choice([-1.0, 1.0], size=shape), "f32")


cases = opcase.Cases()


def add(name, op, inputs, outputs, attrs=None, error=None, data_error=False):
    c = {"name": name, "op": op, "domain": V, "attrs": attrs or {}, "inputs": inputs, "outputs": outputs}
    if error:
        c["expect_error"] = error
    if data_error:  # ref finds the error in the data at run time; a GPU kernel cannot (tests/ops/README.md)
        c["data_error"] = True
    cases.append(c)


def kv_state(kind, T, B, H, D):
    """A random valid state: (bytes, group) and its rows as a list [T][B][H] of per-row bytes."""
    rows = [[[None] * H for _ in range(B)] for _ in range(T)]
    for t in range(T):
        for b in range(B):
            for h in range(H):
                if kind == "int8":
                    rows[t][b][h] = rand_int8_block(D)
                elif kind == "f16":
                    rows[t][b][h] = rand((D,)).astype(np.float16).tobytes()
                else:
                    rows[t][b][h] = bytes(rand_fp8_codes(D, kind))
    return rows


def state_bytes(rows):
    return b"".join(r for tb in rows for bh in tb for r in bh)


def encode_row(kind, x):
    x = np.asarray(x, np.float32)
    if kind == "int8":
        return int8_row(x)
    if kind == "f16":
        return x.astype(np.float16).tobytes()  # numpy's f32 -> f16 is round to nearest even
    return bytes(fp8_encode(v, kind) for v in x)


def state_tensor(kind, T, B, H, D, rows, sym=None):
    if kind == "f16":
        vals = np.frombuffer(state_bytes(rows), np.float16).astype(np.float64).reshape(T, B, H, D)
        return tensor(vals, "f16", sym=sym)
    if kind == "int8":
        return raw("int8", (T, B, H, D), state_bytes(rows), group=D, sym=sym)
    return raw(fp8_name(kind), (T, B, H, D), state_bytes(rows), sym=sym)


def kv_append(name, kind, T, B, H, S, D, pos, x=None, sym=None):
    rows = kv_state(kind, T, B, H, D)
    x = rand((B, H, S, D)) if x is None else np.asarray(x, np.float32)
    pos = np.asarray(pos, np.int64).reshape(B, S)
    before = state_tensor(kind, T, B, H, D, rows, sym=sym and sym[0])
    for b in range(B):
        for s in range(S):
            for h in range(H):
                rows[pos[b, s]][b][h] = encode_row(kind, x[b, h, s])
    after = state_tensor(kind, T, B, H, D, rows)
    add("kvappend_" + name, "KvAppend",
        [before, tensor(x, "f32", sym=sym and sym[1]), opcase.tensor(pos, "i64", sym=sym and sym[2])], [after])


def gen_kv_append():
    for kind in ("int8", "e4m3", "e5m2", "f16"):
        k = "f16" if kind == "f16" else ("int8" if kind == "int8" else fp8_name(kind))
        kv_append(k + "_basic", kind, 6, 1, 2, 2, 8, [2, 3])
        kv_append(k + "_batch2", kind, 5, 2, 3, 2, 4, [[0, 1], [3, 4]])
        kv_append(k + "_decode", kind, 4, 1, 2, 1, 16, [3])
    kv_append("int8_sym", "int8", 8, 2, 2, 3, 8, [[0, 1, 2], [5, 6, 7]],
              sym=(["T", "B", 2, 8], ["B", 2, "S", 8], ["B", "S"]))
    kv_append("fp8e4m3_sym", "e4m3", 8, 2, 2, 3, 8, [[0, 1, 2], [5, 6, 7]],
              sym=(["T", "B", 2, 8], ["B", 2, "S", 8], ["B", "S"]))
    # int8 rows that exercise the rule: all zeros (d = 0), exact halves of the step, a lone large value, tiny
    # values, negative zero
    x = np.zeros((1, 4, 1, 8), np.float32)
    x[0, 1, 0] = [127, 0.5, -0.5, 1.5, -2.5, 63.5, -127, 3]     # d = 1: ties round away from zero
    x[0, 2, 0] = [1e6, 1, -1, 3e3, -4e3, 7.0e3, 0, -0.0]
    x[0, 3, 0] = [1e-30, -2e-30, 3e-31, 0, 5e-30, -1e-30, 1e-38, 2e-38]
    kv_append("int8_special_rows", "int8", 3, 1, 4, 1, 8, [1], x=x)
    # fp8: ties, the subnormal range, below half the smallest subnormal, beyond max, inf, NaN, -0
    for kind, big in (("e4m3", 448.0), ("e5m2", 57344.0)):
        sub = 2.0 ** -9 if kind == "e4m3" else 2.0 ** -16  # smallest subnormal
        vals = [0.0, -0.0, 1.0, 1.0625, 1.1875, -1.0625, 3 * sub / 2, sub / 2, -sub / 2, sub / 4, sub * 0.5000001,
                big, -big, big * 1.03, big * 1.2, -1e30, np.inf, -np.inf, np.nan, 17.0, 0.3, -6e-5, 2.5e-3]
        vals = vals + [0.0] * (-len(vals) % 8)
        x = np.asarray(vals, np.float32).reshape(1, len(vals) // 8, 1, 8)
        kv_append(fp8_name(kind) + "_special", kind, 2, 1, len(vals) // 8, 1, 8, [1], x=x)


def attention_ref(q, k, v, causal, window=0):
    """q [B, Hq, S, D], k/v [T, B, Hkv, D] float64 -> out [B, Hq, S, Dv]."""
    B, Hq, S, D = q.shape
    T, _, Hkv, Dv = v.shape
    out = np.zeros((B, Hq, S, Dv))
    sc = 1.0 / math.sqrt(D)
    for b in range(B):
        for h in range(Hq):
            g = h // (Hq // Hkv)
            for i in range(S):
                p = i + T - S
                js = [j for j in range(T) if (not causal or j <= p) and (window <= 0 or p - j < window)]
                if not js:
                    continue
                s = np.array([sc * np.dot(q[b, h, i], k[j, b, g]) for j in js])
                w = np.exp(s - s.max())
                out[b, h, i] = sum(wj * v[j, b, g] for wj, j in zip(w, js)) / w.sum()
    return out


def kv_input(kind, T, B, H, D, sym=None):
    """A random K or V input and its values [T, B, H, D] as float64."""
    rows = kv_state(kind, T, B, H, D)
    vals = np.zeros((T, B, H, D))
    for t in range(T):
        for b in range(B):
            for h in range(H):
                r = rows[t][b][h]
                if kind == "int8":
                    vals[t, b, h] = int8_row_values(r)
                elif kind == "f16":
                    vals[t, b, h] = np.frombuffer(r, np.float16).astype(np.float64)
                else:
                    vals[t, b, h] = [fp8_decode(c, kind) for c in r]
    return state_tensor(kind, T, B, H, D, rows, sym=sym), vals


def attn(name, kk, vk, B, Hq, Hkv, S, T, D, Dv=None, causal=1, window=0, zero_row=False):
    Dv = Dv or D
    q = rand((B, Hq, S, D))
    kt, k = kv_input(kk, T, B, Hkv, D)
    vt, v = kv_input(vk, T, B, Hkv, Dv)
    if zero_row and kk == "int8":  # a row with d = 0 reads as zeros
        blob = bytearray(kt["bytes"])
        blob[0:4 + D] = rand_int8_block(D, d=0.0)
        kt["bytes"] = list(blob)
        k[0, 0, 0] = 0.0
    y = attention_ref(q, k, v, causal, window)
    attrs = {"kv_layout": {"int": 1}, "causal": {"int": causal}}
    if window:
        attrs["window"] = {"int": window}
    add("attention_" + name, "Attention", [tensor(q, "f32"), kt, vt], [tensor(y, "f32")], attrs)


def gen_attention():
    attn("int8_k_fp8e4m3_v", "int8", "e4m3", 1, 2, 2, 3, 5, 8)
    attn("int8_k_fp8e5m2_v", "int8", "e5m2", 1, 2, 2, 3, 5, 8)
    attn("int8_gqa_decode", "int8", "e4m3", 2, 4, 2, 1, 7, 16)
    attn("int8_window_zero_row", "int8", "e4m3", 1, 2, 1, 4, 6, 8, window=3, zero_row=True)
    attn("int8_k_f16_v", "int8", "f16", 1, 2, 2, 2, 4, 8, causal=0)
    attn("fp8e4m3_k_int8_v", "e4m3", "int8", 1, 2, 2, 2, 4, 8)
    attn("f16_k_fp8e5m2_v_dv", "f16", "e5m2", 1, 2, 1, 3, 5, 8, Dv=4)

    # errors
    q = rand((1, 2, 1, 8))
    kt, _ = kv_input("int8", 3, 1, 2, 8)
    vt, _ = kv_input("e4m3", 3, 1, 2, 8)
    out = [tensor(np.zeros((1, 2, 1, 8)), "f32")]
    # kv_layout 0 with quantized K: K [B, H, T, D] shaped, same bytes
    k0 = dict(kt, shape=[1, 2, 3, 8])
    v0 = dict(vt, shape=[1, 2, 3, 8])
    add("attention_int8_layout0", "Attention", [tensor(q, "f32"), k0, v0], out, {"kv_layout": {"int": 0}},
        error="VKL_ERR_UNSUPPORTED")
    kbad = dict(kt, group=4, bytes=list(b"".join(rand_int8_block(4) for _ in range(3 * 2 * 2))))
    add("attention_int8_group_not_d", "Attention", [tensor(q, "f32"), kbad, vt], out, {"kv_layout": {"int": 1}},
        error="VKL_ERR_FORMAT")
    vbad = dict(vt, group=8)
    add("attention_fp8_with_group", "Attention", [tensor(q, "f32"), kt, vbad], out, {"kv_layout": {"int": 1}},
        error="VKL_ERR_FORMAT")
    neg = bytearray(kt["bytes"])
    neg[0:4] = np.float32(-0.5).tobytes()  # a negative scale in row (0, 0, 0), which query 0 sees
    add("attention_int8_bad_scale", "Attention", [tensor(q, "f32"), dict(kt, bytes=list(neg)), vt], out,
        {"kv_layout": {"int": 1}}, error="VKL_ERR_FORMAT", data_error=True)
    kd = dict(kt, sym=[3, 1, 2, "D"])
    add("attention_int8_symbolic_d", "Attention",
        [tensor(q, "f32", sym=[1, 2, 1, "D"]), kd, dict(vt, sym=[3, 1, 2, "D"])], out, {"kv_layout": {"int": 1}},
        error="VKL_ERR_SHAPE")
    ki32 = {"dtype": "i32", "shape": [3, 1, 2, 8], "data": [1] * 48}
    add("attention_i32_k", "Attention", [tensor(q, "f32"), ki32, vt], out, {"kv_layout": {"int": 1}},
        error="VKL_ERR_UNSUPPORTED")


def gen_kv_append_errors():
    rows = kv_state("int8", 4, 1, 2, 8)
    st = raw("int8", (4, 1, 2, 8), state_bytes(rows), group=8)
    x = rand((1, 2, 1, 8))
    pos = opcase.tensor(np.array([[1]], np.int64), "i64")
    x_nan = x.copy()
    x_nan[0, 1, 0, 3] = np.nan
    add("kvappend_int8_nan", "KvAppend", [st, tensor(x_nan, "f32"), pos], [st], error="VKL_ERR_INVALID_ARGUMENT",
        data_error=True)
    x_inf = x.copy()
    x_inf[0, 0, 0, 0] = np.inf
    add("kvappend_int8_inf", "KvAppend", [st, tensor(x_inf, "f32"), pos], [st], error="VKL_ERR_INVALID_ARGUMENT",
        data_error=True)
    bad = raw("int8", (4, 1, 2, 8), b"".join(rand_int8_block(4) for _ in range(16)), group=4)
    add("kvappend_int8_group_not_d", "KvAppend", [bad, tensor(x, "f32"), pos], [bad], error="VKL_ERR_FORMAT")
    fp8g = raw("fp8e4m3", (4, 1, 2, 8), bytes(64), group=8)
    add("kvappend_fp8_with_group", "KvAppend", [fp8g, tensor(x, "f32"), pos], [fp8g], error="VKL_ERR_FORMAT")
    i8 = {"dtype": "i8", "shape": [4, 1, 2, 8], "data": [0] * 64}
    add("kvappend_i8_state", "KvAppend", [i8, tensor(x, "f32"), pos], [i8], error="VKL_ERR_UNSUPPORTED")
    add("kvappend_int8_pos_too_big", "KvAppend", [st, tensor(x, "f32"), opcase.tensor(np.array([[4]], np.int64), "i64")],
        [st], error="VKL_ERR_INVALID_ARGUMENT", data_error=True)
    stsym = dict(st, sym=["T", 1, 2, "D"])
    add("kvappend_int8_symbolic_d", "KvAppend",
        [stsym, tensor(x, "f32", sym=[1, 2, 1, "D"]), pos], [st], error="VKL_ERR_SHAPE")


def self_check():
    """The fp8 reader and encoder against known values of the OCP formats."""
    assert fp8_value(0x7E, "e4m3") == 448 and fp8_value(0x7F, "e4m3") == "nan" and fp8_value(0x01, "e4m3") == Fraction(1, 512)
    assert fp8_value(0x7B, "e5m2") == 57344 and fp8_value(0x7C, "e5m2") == "inf" and fp8_value(0x01, "e5m2") == Fraction(1, 65536)
    assert fp8_encode(1.0, "e4m3") == 0x38 and fp8_encode(-2.0, "e5m2") == 0xC0
    assert fp8_encode(1.0625, "e4m3") == 0x38  # tie between 1 (0x38) and 1.125 (0x39): even code
    assert fp8_encode(1.1875, "e4m3") == 0x3A  # tie between 1.125 (0x39) and 1.25 (0x3A): even code
    assert fp8_encode(500.0, "e4m3") == 0x7E and fp8_encode(-np.inf, "e5m2") == 0xFB
    assert fp8_encode(np.nan, "e4m3") == 0x7F and fp8_encode(-0.0, "e4m3") == 0x80
    assert int8_row([127.0, 0.5, -0.5] + [0.0] * 5)[4:7] == bytes([127, 1, 0xFF])


def main():
    self_check()
    gen_kv_append()
    gen_kv_append_errors()
    gen_attention()
    cases.write("kv")


if __name__ == "__main__":
    main()
