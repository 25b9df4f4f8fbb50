#!/usr/bin/python3
"""Op cases for QuantMatMul (domain vkllm): Y [..., N] = A [..., K] . W^T + bias
with W [N, K] block-quantized (E0M4, int4, int8) or plain f32/f16/bf16.

Independent of engine/quant: the weights are random *canonical blocks* made
here byte by byte from the layout in docs/quant.md (random fp16 scales,
random zero codes / biases, random nibbles or int8s), fed to the op as raw
bytes ("bytes" + "group" in the case JSON), and the expected outputs come
from this file's own numpy dequantization of those bytes, then a float64
matmul rounded to the output dtype. Deterministic: run
`python3 tests/ops/gen_quant.py` and commit tests/ops/cases/quant.json."""
import numpy as np

import opcase
from opcase import jnum_short
from opcase import rounded as rnd

rng = np.random.default_rng(20240717)

E0M4_EXP = {1: 0x4000, 2: 0x4400}  # fp16 sign+exponent bits of [2, 4) and [4, 8)


# ---------------------------------------------------------------- numbers

def f16_bits_to_f64(bits):
    return np.asarray(bits, np.uint16).view(np.float16).astype(np.float64)


def rand(shape, dt="f32", lo=0.1, hi=2.0):
    mag = rng.uniform(lo, hi, size=shape)
    return rnd(mag * rng.choice([-1.0, 1.0], size=shape), dt)


# ---------------------------------------------------------------- canonical blocks (docs/quant.md)

def rand_d16():
    """A random fp16 scale d >= 0 (normal, mostly around 0.01..0.2)."""
    return int(np.float16(rng.uniform(0.004, 0.2)).view(np.uint16))


def e0m4_block(group, d=None, q0=None, n=None, codes=None):
    """u16 d, u16 b = EXP | q0 << 6, u8 qs[group/2] (qs[j] = q[2j] | q[2j+1] << 4)."""
    n = n if n is not None else int(rng.integers(1, 3))
    q0 = q0 if q0 is not None else int(rng.integers(0, 16))
    d = d if d is not None else rand_d16()
    q = codes if codes is not None else rng.integers(0, 16, size=group)
    b = E0M4_EXP[n] | (q0 << 6)
    qs = (q[0::2] | (q[1::2] << 4)).astype(np.uint8)
    return bytes([d & 0xFF, d >> 8, b & 0xFF, b >> 8]) + qs.tobytes()


def int4_block(group, d=None, z=None, codes=None):
    """u16 d, u16 z (fp16 integer 0..15), u8 qs[group/2]."""
    z = z if z is not None else int(rng.integers(0, 16))
    d = d if d is not None else rand_d16()
    q = codes if codes is not None else rng.integers(0, 16, size=group)
    zb = int(np.float16(z).view(np.uint16))
    qs = (q[0::2] | (q[1::2] << 4)).astype(np.uint8)
    return bytes([d & 0xFF, d >> 8, zb & 0xFF, zb >> 8]) + qs.tobytes()


def int8_block(group, d=None):
    """f32 d, i8 q[group] in -127..127."""
    d = np.float32(d if d is not None else rng.uniform(0.001, 0.02))
    q = rng.integers(-127, 128, size=group).astype(np.int8)
    return d.tobytes() + q.tobytes()


def nibbles(qs):
    qs = np.frombuffer(qs, np.uint8)
    q = np.empty(qs.size * 2, np.int64)
    q[0::2] = qs & 0x0F
    q[1::2] = qs >> 4
    return q


def dequant_block(dtype, group, blk):
    """This file's own reading of one canonical block: float64 values that
    equal the exact f32 dequantization (no rounding happens for 4-bit; int8
    rounds once, q * d in f32)."""
    if dtype == "e0m4":
        d = f16_bits_to_f64(blk[0] | blk[1] << 8)
        b_bits = blk[2] | blk[3] << 8
        exp = b_bits & 0xFC00
        w1 = f16_bits_to_f64(exp | (nibbles(blk[4:]) << 6))
        return (w1 - f16_bits_to_f64(b_bits)) * d
    if dtype == "int4":
        d = f16_bits_to_f64(blk[0] | blk[1] << 8)
        z = f16_bits_to_f64(blk[2] | blk[3] << 8)
        return (nibbles(blk[4:]).astype(np.float64) - z) * d
    if dtype == "int8":
        d = np.frombuffer(blk[:4], np.float32)[0]
        q = np.frombuffer(blk[4:], np.int8).astype(np.float32)
        return (q * d).astype(np.float64)  # f32 product: one rounding, like (float)q * d
    raise ValueError(dtype)


def block_bytes(dtype, group):
    return 4 + group // 2 if dtype in ("e0m4", "int4") else 4 + group


def row_groups(K, group):
    """Blocks per row: ceil(K / group); when group does not divide K the last
    one is short (docs/quant.md): it is stored whole, only its first
    K % group values are W's."""
    return -(-K // group)


def dequant(dtype, group, raw, N, K):
    """[N, K] float64 from canonical bytes: N rows of ceil(K / group) blocks,
    a short last block's values past K dropped."""
    bb, G = block_bytes(dtype, group), row_groups(K, group)
    assert len(raw) == N * G * bb
    out = np.empty((N, K))
    for r in range(N):
        for g in range(G):
            off = (r * G + g) * bb
            n = min(group, K - g * group)
            out[r, g * group:g * group + n] = dequant_block(dtype, group, raw[off:off + bb])[:n]
    return out


def make_w(dtype, group, N, K, special=None):
    """Random canonical bytes for W [N, K]; `special` (row, group) -> block
    bytes. A short last block keeps random codes past K: a writer puts the
    code of 0 there, a reader must never use them, and these cases check it."""
    raw = b""
    for r in range(N):
        for g in range(row_groups(K, group)):
            if special and (r, g) in special:
                raw += special[(r, g)]
            elif dtype == "e0m4":
                raw += e0m4_block(group)
            elif dtype == "int4":
                raw += int4_block(group)
            else:
                raw += int8_block(group)
    return raw


# ---------------------------------------------------------------- case building

def tensor(x, dt, sym=None, const=False):
    return opcase.tensor(rnd(x, dt), dt, sym, const, num=jnum_short)


def qtensor(dtype, group, raw, N, K):
    return {"dtype": dtype, "shape": [N, K], "group": group, "bytes": list(raw), "const": True}


cases = opcase.Cases()


def add(name, inputs, outputs=None, **extra):
    c = {"name": name, "op": "QuantMatMul", "domain": "vkllm", "attrs": {}, "inputs": inputs}
    if outputs is not None:
        c["outputs"] = outputs
    c.update(extra)
    cases.append(c)


def expected(a, w, bias, dt):
    """Y = A . W^T (+ bias) in float64 over [..., K] rows, rounded to dt."""
    y = np.asarray(a, np.float64) @ w.T
    if bias is not None:
        y = y + bias
    return tensor(rnd(y, dt), dt)


def quant_case(name, dtype, group, a_shape, N, bias=False, a_dt="f32", sym=None, special=None, rtol=None):
    K = a_shape[-1]
    raw = make_w(dtype, group, N, K, special)
    w = dequant(dtype, group, raw, N, K)
    a = rand(a_shape, a_dt)
    b = rand([N], a_dt) if bias else None
    ins = [tensor(a, a_dt, sym=sym), qtensor(dtype, group, raw, N, K)]
    if bias:
        ins.append(tensor(b, a_dt, const=True))
    extra = {"rtol": rtol} if rtol else {}
    add(name, ins, [expected(a, w, b, a_dt)], **extra)


def plain_case(name, w_dt, a_shape, N, bias=False):
    K = a_shape[-1]
    w = rand([N, K], w_dt, lo=0.01, hi=0.5)
    a = rand(a_shape)
    b = rand([N]) if bias else None
    ins = [tensor(a, "f32"), tensor(w, w_dt, const=True)]
    if bias:
        ins.append(tensor(b, "f32", const=True))
    add(name, ins, [expected(a, w, b, "f32")])


# E0M4: both exponents (n = 1, 2) mixed in one tensor, every code, the edge blocks.
all_codes = np.arange(32) % 16
quant_case("e0m4_g32", "e0m4", 32, [3, 64], 5,
           special={(0, 0): e0m4_block(32, codes=all_codes, n=1),
                    (1, 1): e0m4_block(32, codes=all_codes, n=2, q0=15),
                    (2, 0): e0m4_block(32, d=0, q0=0),                 # all-zero group: d = 0
                    (3, 1): e0m4_block(32, d=0x0001, q0=7)})          # subnormal d
# Largest finite d (65504) on its own: its outputs would set the tolerance of the others.
quant_case("e0m4_large_d", "e0m4", 32, [2, 64], 1, special={(0, 1): e0m4_block(32, d=0x7BFF, q0=3, n=2)})
quant_case("e0m4_g128_batch_bias", "e0m4", 128, [2, 3, 128], 4, bias=True)
quant_case("e0m4_g64_sym", "e0m4", 64, [2, 128], 6, sym=["seq", 128])
quant_case("e0m4_a1d", "e0m4", 32, [96], 3)
quant_case("e0m4_f16_act", "e0m4", 32, [2, 64], 4, bias=True, a_dt="f16")
# int4 asymmetric: z at both ends, every code.
quant_case("int4_g32_bias", "int4", 32, [4, 96], 6, bias=True,
           special={(0, 0): int4_block(32, codes=all_codes, z=0),
                    (5, 2): int4_block(32, codes=all_codes, z=15),
                    (2, 1): int4_block(32, d=0, z=8)})
quant_case("int4_g128", "int4", 128, [1, 2, 256], 3)
quant_case("int4_bf16_act", "int4", 64, [3, 64], 2, a_dt="bf16")
# int8: per output channel (group = K, any K) as the lm_head, and blocks.
quant_case("int8_per_channel", "int8", 40, [3, 40], 7, bias=True)
quant_case("int8_g16", "int8", 16, [2, 48], 5,
           special={(1, 1): int8_block(16, d=0.0)})
quant_case("int8_lm_head_sym", "int8", 64, [1, 2, 64], 9, sym=["batch", "seq", 64])
# Plain weights in the same orientation (the f16 recipe, and f32/bf16).
plain_case("f16_weight", "f16", [3, 40], 5, bias=True)
plain_case("bf16_weight", "bf16", [2, 2, 24], 3)
plain_case("f32_weight", "f32", [4, 16], 6, bias=True)

# Errors: shape rule and kernel.
K_raw = make_w("e0m4", 32, 4, 64)
add("err_k_mismatch", [tensor(rand([2, 32]), "f32"), qtensor("e0m4", 32, K_raw, 4, 64)],
    [{"dtype": "f32", "shape": [2, 4], "data": [0] * 8}], expect_error="VKL_ERR_SHAPE")
# (A case here once refused a K that is not a multiple of the group; such a
# K is now a short last group, cases below. Its random draws stay, so that
# the cases after it keep their data.)
rand([2, 48])
make_w("e0m4", 64, 3, 64)
add("err_bias_size", [tensor(rand([2, 64]), "f32"), qtensor("e0m4", 32, K_raw, 4, 64), tensor(rand([5]), "f32", const=True)],
    [{"dtype": "f32", "shape": [2, 4], "data": [0] * 8}], expect_error="VKL_ERR_SHAPE")
# An E0M4 bias with low fraction bits set is not a code: the kernel refuses it.
bad = bytearray(e0m4_block(32, q0=3, n=1))
bad[2] |= 0x01
bad_raw = make_w("e0m4", 32, 2, 64, special={(1, 0): bytes(bad)})
add("err_bad_e0m4_header", [tensor(rand([2, 64]), "f32"), qtensor("e0m4", 32, bad_raw, 2, 64)],
    [{"dtype": "f32", "shape": [2, 2], "data": [0] * 4}], expect_error="VKL_ERR_FORMAT")
add("err_w_dtype", [tensor(rand([2, 4]), "f32"), {"dtype": "i32", "shape": [3, 4], "data": [1] * 12, "const": True}],
    [{"dtype": "f32", "shape": [2, 3], "data": [0] * 6}], expect_error="VKL_ERR_UNSUPPORTED")

# Prefill shapes (appended last: the cases above keep their random data): rows
# of A enough for the Vulkan GEMM (from 16 rows; several 64-row tiles at 300)
# and N that leaves a partial tile, each format. rtol 1e-3: on a device with
# cooperative matrix the GEMM's operands are fp16 (A rounded once, relative
# 2^-11), which the f32 default of 1e-4 of max |y| does not allow for.
GEMM_RTOL = 1e-3
quant_case("e0m4_gemm_m64", "e0m4", 128, [64, 256], 67, bias=True, rtol=GEMM_RTOL)
quant_case("e0m4_gemm_m300", "e0m4", 64, [3, 100, 64], 45, rtol=GEMM_RTOL)
quant_case("int4_gemm_m300", "int4", 32, [300, 64], 37, bias=True, rtol=GEMM_RTOL)
quant_case("int8_gemm_m64", "int8", 32, [2, 32, 96], 19, rtol=GEMM_RTOL)

# Short last groups (K % group != 0: docs/quant.md, "The short last group"),
# every format: K = 40 at group 32, K = 100 at group 64, and the bundled
# model's down projections (K = 688 at group 128, 5 whole groups and one of
# 48) for one row (decode) and 20 (prefill: on Vulkan past the GEMM's row
# threshold, which hands a short group to the matvec). Appended last, and
# the random state put back after them, so that pieces.json keeps its data.
before_short = rng.bit_generator.state
for f in ("e0m4", "int4", "int8"):
    quant_case(f + "_short_k40_g32", f, 32, [3, 40], 5, bias=True)
    quant_case(f + "_short_k100_g64", f, 64, [2, 100], 7)
    quant_case(f + "_short_k688_g128", f, 128, [1, 688], 9)
    quant_case(f + "_short_k688_g128_m20", f, 128, [20, 688], 11, bias=True, rtol=GEMM_RTOL)
    quant_case(f + "_short_k688_g64", f, 64, [2, 688], 6)
# K not a multiple of 4 (Vulkan: the general path), a symbolic row count,
# f16 activations
quant_case("e0m4_short_k42_g32", "e0m4", 32, [2, 42], 3)
quant_case("int8_short_k50_g32_sym", "int8", 32, [2, 3, 50], 4, sym=["batch", "seq", 50])
quant_case("int4_short_k72_g64_f16_act", "int4", 64, [2, 72], 3, a_dt="f16")
# the Vulkan tiled GEMM (from 16 rows under ops.vulkan.gemm) over several row
# tiles with K % 32 = 4: the A slice zero-filled mid-step
quant_case("e0m4_short_k100_g64_gemm_m70", "e0m4", 64, [70, 100], 37, bias=True, rtol=GEMM_RTOL)
rng.bit_generator.state = before_short

cases.write("quant")

# ---------------------------------------------------------------- pieces.json
# Cases whose weights, inputs or outputs pass a small binding limit: run on
# Vulkan with VKL_VK_MAX_BINDING_BYTES=4096 (tests/CMakeLists.txt), they are
# stored and bound in row pieces (backends/vulkan/vk_weights.c,
# vk_quant_matmul.c, vk_indexing.c), with a ragged last piece; on every
# backend they are plain cases. Made after quant.json so its values stay.
cases = opcase.Cases()
# W [200, 64] int8: 64-byte rows, 4 pieces of 64, 64, 64, 8 rows
quant_case("pieces_int8_w", "int8", 64, [3, 64], 200)
# W [136, 64]: 64, 64, 8 rows; A [24, 64] and Y [24, 136] over the limit too: ranges of rows
quant_case("pieces_int8_w_a_y", "int8", 64, [24, 64], 136, bias=True)
# E0M4 [72, 256], 128-byte rows: 32, 32, 8; with a bias read at each piece's columns
quant_case("pieces_e0m4_bias", "e0m4", 128, [2, 256], 72, bias=True)
# int4 [100, 128]: 64, 36; a 3D A
quant_case("pieces_int4_3d", "int4", 32, [1, 2, 128], 100)


def gather_case(name, table, dt, idx, idx_dt):
    """Gather along axis 0 of a weight table (an embedding)."""
    t = np.asarray(table)
    y = t[np.asarray(idx) % t.shape[0]]
    cases.append({"name": name, "op": "Gather", "domain": "", "attrs": {},
                  "inputs": [tensor(t, dt, const=True), opcase.tensor(np.asarray(idx), idx_dt)],
                  "outputs": [tensor(y, dt)]})


# bf16 [300, 16] (32-byte rows): pieces of 128, 128, 44 rows; indices in each, a negative one
gather_case("pieces_gather_bf16", rand([300, 16], "bf16"), "bf16", [[0, 299, 128, 127, 5], [-1, 256, 200, 44, 255]],
            "i64")
# f32 [50, 40] (160-byte rows): 25, 25; i32 indices
gather_case("pieces_gather_f32", rand([50, 40]), "f32", [49, 0, 24, 25, 30], "i32")


def matmul_case(name, a_shape, b_shape, dt="f32"):
    """MatMul with a weight B [K, N] in row pieces (ranges of K)."""
    a, b = rand(a_shape, dt), rand(b_shape, dt, lo=0.01, hi=0.5)
    y = np.matmul(np.asarray(a, np.float64), np.asarray(b, np.float64))
    cases.append({"name": name, "op": "MatMul", "domain": "", "attrs": {},
                  "inputs": [tensor(a, dt), tensor(b, dt, const=True)], "outputs": [tensor(y, dt)]})


# B f32 [100, 24] (96-byte rows): K in pieces of 42, 42, 16; batched A (the tiled kernel) and one row (the matvec)
matmul_case("pieces_matmul_batched", [2, 3, 100], [100, 24])
matmul_case("pieces_matmul_row", [1, 100], [100, 24])
# bf16 [64, 80] (160-byte rows): 25, 25, 14
matmul_case("pieces_matmul_bf16", [5, 64], [64, 80], "bf16")
cases.write("pieces")
