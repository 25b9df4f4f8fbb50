#!/usr/bin/python3
"""Random single-op (and a few small multi-op) ONNX cases for the vkllm vs
ONNX Runtime differential test (tests/ort/run.sh).

Every case is a fixture folder in the format of shared/models/README.md:
model.onnx, manifest.json with one step, and step0.in.<name>.npy for every
graph input. run_ort.js adds the step0.out.*.npy reference outputs.

Shapes, dtypes, attributes, opsets and input forms are drawn at random from
what the ONNX spec allows for the op (and ONNX Runtime's CPU provider
implements): negative and positive axes, absent and present optional inputs
and attributes, broadcasting, legacy (attribute) and current (input) forms,
symbolic (dim_param) input dims. Inputs are non-zero and chosen so that the
float semantics are well conditioned (Log of positives, no exact ties where
the result would depend on them, ...).

Deterministic: the same --seed and --count-per-op give byte-identical
folders. Each case draws from its own generator, seeded by (seed, op, index),
so adding an op or changing one op's generator leaves every other case as
it was.

Usage: gen_cases.py OUT_DIR [--seed N] [--count-per-op N] [--ops A,B,...]
                            [--f16-outputs cast|raw] [--list] [--summary]
"""
import argparse
import json
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32, F16, F64 = np.float32, np.float16, np.float64
I64, I32, I8, U8, BOOL = np.int64, np.int32, np.int8, np.uint8, np.bool_
FLOATS = [F32, F16, F64]
ALL = [F32, F16, F64, I64, I32, I8, U8, BOOL]

ONNX_TYPE = {
    np.dtype(F32): TensorProto.FLOAT, np.dtype(F16): TensorProto.FLOAT16, np.dtype(F64): TensorProto.DOUBLE,
    np.dtype(I64): TensorProto.INT64, np.dtype(I32): TensorProto.INT32, np.dtype(I8): TensorProto.INT8,
    np.dtype(U8): TensorProto.UINT8, np.dtype(BOOL): TensorProto.BOOL,
}
INT64_MAX = 2**63 - 1
INT64_MIN = -2**63

# Relative tolerance (of max|ref|) per case: the README's fp32 bound, looser
# where a half-precision value takes part.
TOL_F32 = 1e-4
TOL_F16 = 2e-3
TOL_F64 = 1e-9  # f64 cases: computed in double by both


def dt(x):
    return np.dtype(x)


class Case:
    """One graph under construction."""

    def __init__(self, rng, opset=None, index=0):
        self.rng = rng
        self.index = index
        self.opset = opset if opset is not None else int(rng.integers(13, 22))
        self.nodes, self.inputs, self.inits, self.outputs = [], [], [], []
        self.n = 0
        # Declare the dims of data inputs as dim_params in about a third of
        # the cases: shapes are then bound when the inputs arrive.
        self.sym = rng.random() < 0.3
        # Of those, some declare the dims with no name at all (the importer
        # makes a fresh symbol per input and axis): 'anon'.
        self.anon = self.sym and rng.random() < 0.25
        # Size regime: 'big' shapes (up to 2048 elements, longer reduction
        # axes), 'zero' (one dim of the first shape is 0, in generators that
        # set zero_ok), or normal small shapes.
        u = rng.random()
        self.mode = 'big' if u < 0.1 else 'zero' if u < 0.16 else 'normal'
        self.big = self.mode == 'big'
        self.zero_ok = False
        self._zero_done = False
        self.dtypes = set()
        self.notes = {}

    # -- random helpers ---------------------------------------------------
    def ri(self, lo, hi):
        """Integer in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def coin(self, p=0.5):
        return bool(self.rng.random() < p)

    def pick(self, seq):
        return seq[int(self.rng.integers(0, len(seq)))]

    def main_dtype(self, seq):
        """The case's main dtype: the op's cases take the dtypes in turn (by
        case index), so that every dtype is covered once count >= len(seq)."""
        return seq[self.index % len(seq)]

    def shape(self, rank, lo=1, hi=5):
        if self.big:
            hi = hi * 3
        s = [self.ri(lo, hi) for _ in range(rank)]
        while int(np.prod(s)) > 2048:
            s[int(np.argmax(s))] //= 2
        if self.mode == 'zero' and self.zero_ok and not self._zero_done and rank:
            s[self.ri(0, rank - 1)] = 0
            self._zero_done = True
        return s

    def rank(self, lo, hi, extra=2):
        """A rank in [lo, hi], now and then up to hi + extra."""
        return self.ri(hi + 1, hi + extra) if self.coin(0.1) else self.ri(lo, hi)

    def fvals(self, shape, dtype=F32, lo=0.1, hi=2.0, signed=True):
        """Floats with |x| in [lo, hi], random sign: never zero."""
        m = self.rng.uniform(lo, hi, size=shape)
        if signed:
            m = m * self.rng.choice([-1.0, 1.0], size=shape)
        return np.asarray(m).astype(dtype)

    def ivals(self, shape, dtype, lo, hi, nonzero=False):
        info = np.iinfo(dtype)
        lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
        v = self.rng.integers(lo, hi + 1, size=shape)
        if nonzero:
            v = np.where(v == 0, hi if hi != 0 else lo, v)
        return np.asarray(v).astype(dtype)

    def vals(self, shape, dtype, nonzero=True, small=False):
        """Values of any dtype: floats |x| in [0.1, 2], ints in a small range."""
        d = dt(dtype)
        if d == dt(BOOL):
            return self.rng.random(size=shape) < 0.5
        if d.kind == 'f':
            return self.fvals(shape, dtype)
        if d.kind == 'u':
            return self.ivals(shape, dtype, 1 if nonzero else 0, 9 if small else 100)
        r = 9 if small else 100
        return self.ivals(shape, dtype, -r, r, nonzero)

    def distinct(self, shape, dtype):
        """Pairwise distinct values (no ties), spread over a few units."""
        n = int(np.prod(shape)) if len(shape) else 1
        d = dt(dtype)
        if d.itemsize == 1 and n > 250:
            return tie_values(self, shape, dtype)  # cannot be distinct
        if d == dt(F16):
            # k/16 with |k| <= 1024 is exact in fp16
            assert n <= 2048
            v = (self.rng.permutation(n) - n // 2) / 16.0
        elif d.kind == 'f':
            v = (self.rng.permutation(n) - n // 2) * 0.125 + 0.0625
        elif d.kind == 'u':
            v = self.rng.permutation(n) + 1
        else:
            v = self.rng.permutation(n) - n // 2
        return np.asarray(v).reshape(shape).astype(dtype)

    def bcast_shapes(self, out, k):
        """k shapes that broadcast to `out` (dropped leading dims, 1s)."""
        res = []
        for _ in range(k):
            r = self.ri(0, len(out)) if self.coin(0.4) else len(out)
            s = [d if self.coin(0.7) else 1 for d in out[len(out) - r:]]
            res.append(s)
        # One input keeps the full shape so the output is `out`.
        res[self.ri(0, k - 1)] = list(out)
        return res

    def axis(self, rank, allow_end=False):
        """An axis in [-rank, rank) (or up to rank with allow_end), either sign."""
        hi = rank if allow_end else rank - 1
        a = self.ri(0, hi)
        if self.coin() and a - rank >= -rank and not (allow_end and a == rank):
            a -= rank
        return a

    # -- graph building ---------------------------------------------------
    def name(self, prefix):
        self.n += 1
        return f'{prefix}{self.n}'

    def input(self, arr, prefix='x', sym=None, static_axes=()):
        """A graph input. With symbolic dims, every dim above 1 except
        static_axes is declared as the dim_param 's<size>' (equal sizes
        share a symbol, so broadcasting stays provable)."""
        arr = np.asarray(arr)
        name = self.name(prefix)
        sym = self.sym if sym is None else sym
        static = {a % arr.ndim for a in static_axes} if arr.ndim else set()
        anon = self.anon and sym
        dims = [(None if anon else f's{d}') if sym and d > 1 and i not in static else d
                for i, d in enumerate(arr.shape)]
        self.inputs.append((name, arr, dims))
        self.dtypes.add(arr.dtype)
        return name

    def init(self, arr, prefix='w'):
        arr = np.asarray(arr)
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(arr, name))
        self.dtypes.add(arr.dtype)
        return name

    def data(self, arr, prefix='x', p_init=0.0, static_axes=()):
        """A data operand: graph input, or (with probability p_init) initializer."""
        return self.init(arr, prefix) if self.coin(p_init) else self.input(arr, prefix, static_axes=static_axes)

    def node(self, op, ins, n_out=1, outs=None, domain='', **attrs):
        outs = outs if outs is not None else [self.name('t') for _ in range(n_out)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(helper.make_node(op, ins, outs, domain=domain or None, **attrs))
        return outs if len(outs) != 1 else outs[0]

    def output(self, name, dtype):
        self.outputs.append((name, dt(dtype)))
        self.dtypes.add(dt(dtype))

    def op(self, op, ins, out_dtypes, **attrs):
        """One node whose outputs are all graph outputs."""
        outs = [self.name('y') for _ in out_dtypes]
        self.node(op, ins, outs=outs, **attrs)
        for o, d in zip(outs, out_dtypes):
            if o:
                self.output(o, d)
        return outs


def attr_tensor(arr, name='value'):
    return numpy_helper.from_array(np.asarray(arr), name)


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------

def gen_binary_arith(op):
    def gen(c):
        c.zero_ok = True
        dtype = c.main_dtype([F32, F16, F64, I64, I32, I8, U8])
        d = dt(dtype)
        out = c.shape(c.rank(0, 4))
        sa, sb = c.bcast_shapes(out, 2)
        if d.kind == 'f':
            a = c.fvals(sa, dtype)
            b = c.fvals(sb, dtype, 0.5, 2.0) if op == 'Div' else c.fvals(sb, dtype)
        elif d.kind == 'u':
            # no wrap-around: a - b >= 0, sums and products below 256
            a = c.ivals(sa, dtype, 100, 200) if op == 'Sub' else c.ivals(sa, dtype, 1, 15 if op == 'Mul' else 120)
            b = c.ivals(sb, dtype, 1, 99 if op == 'Sub' else 15 if op == 'Mul' else 120)
        else:
            # negative operands: integer Div truncates toward zero
            r = 10 if (op == 'Mul' or d.itemsize == 1) else 1000
            a = c.ivals(sa, dtype, -r, r)
            b = c.ivals(sb, dtype, -r, r, nonzero=True)
            if op == 'Div' and c.coin(0.5):
                b = c.ivals(sb, dtype, -6, 6, nonzero=True)
        if d.itemsize == 1:
            c.opset = c.ri(14, 21)  # Add/Sub/Mul/Div-14 added the 8-bit types
        # Sometimes one operand is a constant (initializer), as exports do.
        ia = c.data(a, 'a', 0.15)
        ib = c.data(b, 'b', 0.25)
        c.op(op, [ia, ib], [dtype])
    return gen


def gen_pow(c):
    # Pow-15: base T in {i32, i64, f16, f32, f64, bf16}; exponent T1 of any
    # numeric type. ORT's CPU kernel implements these pairs.
    base_t = c.pick([F32, F64, F32, I32, I64])
    exp_choices = {dt(F32): [F32, F64, I32, I64], dt(F64): [F32, F64, I32, I64],
                   dt(I32): [I32, I64, F32, F64], dt(I64): [I64, I32, F32, F64]}[dt(base_t)]
    exp_t = c.pick(exp_choices)
    out = c.shape(c.ri(0, 3))
    sa, sb = c.bcast_shapes(out, 2)
    if dt(base_t).kind == 'f':
        if dt(exp_t).kind == 'f' and c.coin(0.6):
            a = c.fvals(sa, base_t, 0.2, 3.0, signed=False)  # fractional exponents need base > 0
            b = c.fvals(sb, exp_t, 0.1, 2.5)
        else:
            # negative bases with integral exponents (float or int typed)
            a = c.fvals(sa, base_t, 0.2, 3.0)
            b = c.ivals(sb, I32, -3, 4).astype(exp_t)
    else:
        a = c.ivals(sa, base_t, -5, 5, nonzero=True)
        if dt(exp_t).kind == 'f':
            if c.coin():
                b = c.rng.integers(0, 5, size=sb).astype(exp_t)  # integral float exponents
            else:
                # fractional exponents of positive bases: the f64 power
                # truncated toward zero on store (as ORT's static_cast)
                a = c.ivals(sa, base_t, 1, 9)
                b = (c.rng.integers(1, 9, size=sb) / 4 + 1 / 8).astype(exp_t)
        else:
            # negative exponents truncate: 0 unless the base is 1 or -1
            b = c.ivals(sb, exp_t, -2 if c.coin(0.3) else 0, 5)
    c.op('Pow', [c.data(a, 'a', 0.1), c.data(b, 'b', 0.3)], [base_t])


UNARY_FLOAT_RANGE = {
    'Sqrt': (0.05, 4.0, False), 'Reciprocal': (0.1, 3.0, True), 'Exp': (0.01, 4.0, True),
    'Log': (0.05, 5.0, False), 'Erf': (0.01, 2.5, True), 'Tanh': (0.01, 3.0, True),
    'Sigmoid': (0.01, 12.0, True), 'Cos': (0.01, 6.0, True), 'Sin': (0.01, 6.0, True),
    'Neg': (0.1, 2.0, True), 'Abs': (0.1, 2.0, True), 'Relu': (0.1, 2.0, True),
}


def gen_unary(op, int_types=()):
    # ORT's CPU provider has no f64 Erf.
    float_types = [F32, F16] if op == 'Erf' else FLOATS

    def gen(c):
        c.zero_ok = True
        dtype = c.main_dtype(float_types + list(int_types))
        s = c.shape(c.rank(0, 4))
        if dt(dtype).kind == 'f':
            lo, hi, signed = UNARY_FLOAT_RANGE[op]
            x = c.fvals(s, dtype, lo, hi, signed)
        else:
            x = c.vals(s, dtype)
            if op == 'Relu':
                c.opset = c.ri(14, 21)  # Relu-14 added the integer types
        c.op(op, [c.input(x)], [dtype])
    return gen


def gen_gelu(c):
    c.opset = c.ri(20, 21)
    approx = c.pick([None, 'none', 'tanh', 'tanh'])
    # ORT runs Gelu-20 as its function body: no f64 Erf kernel for 'none'.
    dtype = c.main_dtype(FLOATS if approx == 'tanh' else [F32, F16])
    x = c.fvals(c.shape(c.rank(0, 4)), dtype, 0.01, 4.0)
    c.op('Gelu', [c.input(x)], [dtype], approximate=approx)


def gen_not(c):
    c.zero_ok = True
    x = c.vals(c.shape(c.rank(0, 4)), BOOL)
    c.op('Not', [c.input(x)], [BOOL])


def gen_logic(op):
    def gen(c):
        c.zero_ok = True
        out = c.shape(c.rank(0, 4))
        sa, sb = c.bcast_shapes(out, 2)
        c.op(op, [c.data(c.vals(sa, BOOL), 'a', 0.1), c.data(c.vals(sb, BOOL), 'b', 0.2)], [BOOL])
    return gen


def tie_values(c, shape, dtype):
    """Values from a small set so that comparisons see equal elements."""
    d = dt(dtype)
    if d == dt(BOOL):
        return c.vals(shape, BOOL)
    if d.kind == 'f':
        return (c.rng.integers(-3, 4, size=shape) * 0.5).astype(dtype)
    lo = 0 if d.kind == 'u' else -3
    return c.rng.integers(lo, lo + 7, size=shape).astype(dtype)


def gen_compare(op):
    def gen(c):
        c.zero_ok = True
        types = [F32, F16, F64, I64, I32, I8, U8] + ([BOOL] if op == 'Equal' else [])
        dtype = c.main_dtype(types)
        c.opset = c.ri(16 if 'OrEqual' in op else 13, 21)
        out = c.shape(c.rank(0, 4))
        sa, sb = c.bcast_shapes(out, 2)
        a, b = tie_values(c, sa, dtype), tie_values(c, sb, dtype)
        c.op(op, [c.data(a, 'a', 0.1), c.data(b, 'b', 0.25)], [BOOL])
    return gen


def gen_maxmin(op):
    def gen(c):
        c.zero_ok = True
        dtype = c.main_dtype([F32, F16, F64, I64, I32, I8, U8])
        out = c.shape(c.rank(0, 4))
        k = c.ri(1, 4)
        shapes = c.bcast_shapes(out, k)
        ins = [c.data(tie_values(c, s, dtype) if c.coin(0.3) else c.vals(s, dtype), 'a', 0.15) for s in shapes]
        c.op(op, ins, [dtype])
    return gen


def gen_where(c):
    c.zero_ok = True
    dtype = c.main_dtype([F32, F16, F64, I64, I32, U8])  # ORT has no bool / i8 Where
    out = c.shape(c.rank(0, 4))
    sc, sx, sy = c.bcast_shapes(out, 3)
    cond = c.data(c.vals(sc, BOOL), 'cond', 0.2)
    x = c.data(c.vals(sx, dtype), 'x', 0.1)
    y = c.data(c.vals(sy, dtype), 'y', 0.3)
    c.opset = c.ri(16, 21)
    c.op('Where', [cond, x, y], [dtype])


def gen_clip(c):
    if c.coin(0.15):
        # Clip-6..10: min/max attributes, float only.
        c.opset = c.ri(6, 10)
        x = c.fvals(c.shape(c.ri(0, 4)), F32, 0.1, 3.0)
        lo = float(np.float32(c.rng.uniform(-2, 0))) if c.coin(0.7) else None
        hi = float(np.float32(c.rng.uniform(0, 2))) if c.coin(0.7) else None
        c.op('Clip', [c.input(x)], [F32], min=lo, max=hi)
        return
    dtype = c.main_dtype([F32, F16, F64, I64, I32, I8, U8])
    s = c.shape(c.rank(0, 4))
    if dt(dtype).kind == 'f':
        x = c.fvals(s, dtype, 0.1, 3.0)
        lo, hi = c.rng.uniform(-2, 0.5), c.rng.uniform(-0.5, 2)
    else:
        x = c.vals(s, dtype)
        a, b = sorted(c.rng.integers(1 if dt(dtype).kind == 'u' else -60, 90, size=2))
        lo, hi = a, b
    # min > max is defined (Clip-13: every value becomes max); rare.
    if lo > hi and not c.coin(0.1):
        lo, hi = hi, lo
    ins = [c.input(x)]
    has_lo, has_hi = c.coin(0.75), c.coin(0.75)
    mk = lambda v: c.data(np.array(v, dtype=dtype), 'b', 0.7)
    if has_lo or has_hi:
        ins.append(mk(lo) if has_lo else '')
    if has_hi:
        ins.append(mk(hi))
    c.op('Clip', ins, [dtype])


def gen_cast_f16_exact(c):
    """fp16 conversions that must be exact: subnormals, round to nearest
    even at and near halfway points. The f32 result is scaled by a power of
    two (exact) so that an error of one fp16 ulp exceeds the 1e-5 absolute
    slack of vkllm check, and compared with tolerance 0."""
    c.opset = c.ri(13, 21)
    s = c.shape(c.rank(1, 3))
    kind = c.pick(['tiny', 'round', 'from_tiny'])
    sign = c.rng.choice([-1.0, 1.0], size=s)
    if kind == 'from_tiny':
        # fp16 subnormals and small normals in, widened
        bits = c.rng.integers(1, 0x0800, size=s).astype(np.uint16) | np.where(sign < 0, 0x8000, 0).astype(np.uint16)
        x = bits.view(F16)
        w = c.node('Cast', [c.input(x)], to=c.pick([TensorProto.FLOAT, TensorProto.DOUBLE]))
        if c.nodes[-1].attribute[0].i == TensorProto.DOUBLE:
            w = c.node('Cast', [w], to=TensorProto.FLOAT)
        c.op('Mul', [w, c.init(np.array(2.0**24, dtype=F32), 'scale')], [F32])
    else:
        src = c.pick([F32, F64])
        if kind == 'tiny':
            # below 2^-14: fp16 subnormals (and values that round to 0 or
            # up to the smallest normal)
            x = (c.rng.uniform(2.0**-26, 2.0**-13, size=s) * sign).astype(src)
            scale = 2.0**24
        else:
            # k + f on the fp16 grid of exponent e: f = 0.5 is a tie (to
            # even), others land just beside it; exact in f32 as well, so
            # converting f64 through f32 cannot round twice.
            k = c.rng.integers(1024, 2048, size=s)
            f = c.rng.choice([0.5, 0.5, 0.25, 0.75, 0.5 - 2.0**-8, 0.5 + 2.0**-8], size=s)
            e = c.rng.integers(-3, 5, size=s)
            x = ((k + f) * 2.0**(e - 10) * sign).astype(src)
            scale = 1.0
        h = c.node('Cast', [c.input(x)], to=TensorProto.FLOAT16)
        w = c.node('Cast', [h], to=TensorProto.FLOAT)
        c.op('Mul', [w, c.init(np.array(scale, dtype=F32), 'scale')], [F32])
    c.notes['tol'] = 0.0


def gen_cast(op):
    def gen(c):
        c.zero_ok = True
        if op == 'Cast' and c.coin(0.25):
            return gen_cast_f16_exact(c)
        src, to = c.main_dtype(ALL), ALL[(c.index + c.index // len(ALL)) % len(ALL)]
        s = c.shape(c.rank(0, 4))
        ds, dto = dt(src), dt(to)
        # Values every target can hold exactly or by truncation toward zero.
        if ds == dt(BOOL):
            x = c.vals(s, BOOL)
        elif dto == dt(BOOL):
            x = (c.rng.integers(-2, 3, size=s)).astype(src) if ds.kind != 'u' else c.rng.integers(0, 3, size=s).astype(src)
            if ds.kind == 'f':
                x = (x * c.rng.uniform(0.3, 1.0, size=s)).astype(src)  # non-integral non-zeros, exact zeros
        elif ds.kind == 'f':
            if dto.kind == 'u':
                x = c.fvals(s, src, 0.0, 250.0, signed=False)
            elif dto.kind == 'i':
                r = 120.0 if dto.itemsize == 1 else 3000.0
                x = c.fvals(s, src, 0.0, r)
            else:
                x = c.fvals(s, src, 0.001, 100.0) if c.coin() else \
                    (c.rng.standard_normal(size=s) * 10).astype(src)
            if ds == dt(F16) and dto.kind in 'iu':
                x = x.astype(F16)
        else:
            info = np.iinfo(src)
            tinfo = np.iinfo(to) if dto.kind in 'iu' else None
            lo, hi = max(int(info.min), -2000), min(int(info.max), 2000)
            if tinfo:
                lo, hi = max(lo, int(tinfo.min)), min(hi, int(tinfo.max))
            x = c.ivals(s, src, lo, hi)
        ins = [c.input(x)]
        sat = None
        if op == 'Cast':
            c.opset = c.ri(13, 21)
            if c.opset >= 19 and c.coin(0.3):
                # saturate only matters for fp8 targets. ORT deviates from the
                # spec here: it rejects saturate=0 unless the target is fp8.
                sat = 1
            c.op('Cast', ins, [to], to=ONNX_TYPE[dto], saturate=sat)
        else:
            c.opset = c.ri(15, 21)
            if c.opset >= 19 and c.coin(0.3):
                sat = 1  # as for Cast
            like = c.vals(c.shape(c.ri(0, 2)), to)
            ins.append(c.data(like, 'like', 0.5))
            c.op('CastLike', ins, [to], saturate=sat)
        if dto == dt(F16) or ds == dt(F16):
            c.notes['tol'] = TOL_F16
    return gen


def gen_identity(c):
    c.zero_ok = True
    dtype = c.main_dtype(ALL)
    x = c.vals(c.shape(c.rank(0, 4)), dtype)
    c.op('Identity', [c.input(x)], [dtype])


def gen_dropout(c):
    dtype = c.main_dtype(FLOATS)
    x = c.fvals(c.shape(c.rank(0, 4)), dtype)
    if c.coin(0.2):
        # Dropout-10: ratio attribute; inference mode always.
        # No mask output: ORT fills the mask of Dropout-7..11 in inference
        # with false (onnxruntime identity_op.h: "no input values dropped
        # out so fill the buffer with 0/false"), while Dropout-12+ (and the
        # ONNX reference) give true = kept; the old spec does not say.
        c.opset = c.ri(10, 11)
        outs = [dtype]
        c.op('Dropout', [c.input(x)], outs, ratio=float(np.float32(c.rng.uniform(0, 0.9))) if c.coin() else None)
        return
    ins = [c.input(x)]
    has_ratio, has_train = c.coin(0.6), c.coin(0.5)
    # training_mode true is deterministic only with ratio 0: output = data,
    # mask all true.
    train = has_ratio and has_train and c.coin(0.3)
    if has_ratio or has_train:
        rt = c.pick(FLOATS)
        ratio = 0.0 if train else c.rng.uniform(0, 0.9)
        ins.append(c.data(np.array(ratio, dtype=rt), 'ratio', 0.7) if has_ratio else '')
    if has_train:
        ins.append(c.data(np.array(train), 'train', 0.6))
    outs = [dtype, BOOL] if c.coin() else [dtype]
    c.op('Dropout', ins, outs, seed=c.ri(0, 100) if c.coin(0.3) else None)


# ---------------------------------------------------------------------------
# Normalization, softmax
# ---------------------------------------------------------------------------

def gen_softmax(op):
    def gen(c):
        c.zero_ok = True
        dtype = c.main_dtype(FLOATS)
        r = c.rank(1, 4)
        x = c.fvals(c.shape(r), dtype, 0.01, 3.0 if c.coin(0.8) else 30.0)
        if c.coin(0.2):
            # Softmax-11/12: coerced to 2-D at axis (default 1).
            c.opset = c.ri(11, 12)
            r = max(r, 2)
            x = c.fvals(c.shape(r), dtype, 0.01, 3.0)
            ax = c.axis(r) if c.coin(0.7) else None
        else:
            ax = c.axis(r) if c.coin(0.75) else None
        c.op(op, [c.input(x)], [dtype], axis=ax)
    return gen


def gen_layernorm(c):
    c.opset = c.ri(17, 21)
    dtype = c.main_dtype(FLOATS)
    r = c.rank(1, 4)
    s = c.shape(r, 1, 6)
    ax = c.axis(r) if c.coin(0.7) else None
    a = (ax if ax is not None else -1) % r
    norm = s[a:]
    x = c.fvals(s, dtype, 0.01, 3.0)
    # Scale and B: the normalized shape, or broadcastable to it.
    def param():
        p = list(norm)
        if c.coin(0.25) and len(p) > 1:
            p = p[c.ri(1, len(p) - 1):]
        return c.data(c.fvals(p, dtype, 0.2, 1.5), 'scale', 0.8)
    ins = [c.input(x), param()]
    if c.coin(0.6):
        ins.append(param())
    stats = c.ri(0, 3)  # which of Mean / InvStdDev are requested
    eps = float(np.float32(c.pick([1e-5, 1e-3, 0.1, 1e-6]))) if c.coin(0.6) else None
    y = c.name('y')
    outs = [y]
    if stats:
        outs += [c.name('mean') if stats & 1 else '', c.name('istd') if stats & 2 else '']
        while outs[-1] == '':
            outs.pop()
    c.node('LayerNormalization', ins, outs=outs, axis=ax, epsilon=eps,
           stash_type=1 if c.coin(0.2) else None)
    c.output(y, dtype)
    for o in outs[1:]:
        if o:
            c.output(o, F32)


# ---------------------------------------------------------------------------
# Reductions, scans
# ---------------------------------------------------------------------------

def gen_reduce(op):
    axes_input_from = {'ReduceSum': 13, 'ReduceMean': 18, 'ReduceMax': 18}[op]

    def gen(c):
        # Empty inputs: Sum over no elements is 0. ReduceMean of an empty
        # set is undefined (ONNX) and ReduceMax -inf or the type's minimum:
        # not tested.
        c.zero_ok = op == 'ReduceSum'
        types = [F32, F16, F64, I64, I32] + ([I8, U8] if op == 'ReduceMax' else [])
        dtype = c.main_dtype(types)
        r = c.rank(1, 4)
        s = c.shape(r)
        x = c.vals(s, dtype, small=True) if dt(dtype).kind in 'iu' else c.fvals(s, dtype)
        if op == 'ReduceMean' and dt(dtype).kind in 'iu':
            # Mean of integers: ONNX does not say how to round a quotient;
            # ORT divides the sum by the count in the integer type. With
            # non-negative values truncation and floor agree.
            x = c.ivals(s, dtype, 0, 9)
        new_form = c.coin(0.7)
        # (ReduceMax-12 added the 8-bit types)
        old_lo = 12 if dt(dtype).itemsize == 1 else 11
        c.opset = c.ri(axes_input_from, 21) if new_form else c.ri(old_lo, axes_input_from - 1)
        n_ax = c.ri(0, r)
        axes = sorted(c.rng.choice(r, size=n_ax, replace=False).tolist())
        # ORT bug: on an empty input, negative axes give wrong shapes:
        # [4, 0, 3, 3] over axes [-1] -> [4, 0, 3, 3] (spec, numpy:
        # [4, 0, 3]), [0, 3] over [-1, 0] keepdims 1 -> [1, 3] (not [1, 1]).
        # The same axes written non-negative come out right.
        axes = [a - r if c.coin() and not c._zero_done else a for a in axes]
        c.rng.shuffle(axes)
        keep = c.pick([None, 0, 1])
        ins = [c.input(x)]
        attrs = dict(keepdims=keep)
        if new_form:
            noop = c.pick([None, 0, 1]) if n_ax == 0 else (c.pick([None, 0]) if c.coin(0.3) else None)
            attrs['noop_with_empty_axes'] = noop
            if n_ax or c.coin(0.3):
                ins.append(c.init(np.array(axes, dtype=I64), 'axes'))
        elif n_ax:
            attrs['axes'] = axes
        if dt(dtype) == dt(F16):
            c.notes['tol'] = TOL_F16
        c.op(op, ins, [dtype], **attrs)
    return gen


def gen_argmax(c):
    dtype = c.main_dtype([F32, F16, F64, I64, I32, I8, U8])
    r = c.rank(1, 4)
    s = c.shape(r)
    sel = c.pick([None, 0, 1])
    # Ties are defined (first index, or last with select_last_index): keep
    # them for integers; floats get distinct values.
    x = tie_values(c, s, dtype) if dt(dtype).kind in 'iu' and c.coin(0.6) else c.distinct(s, dtype)
    c.op('ArgMax', [c.input(x)], [I64], axis=c.axis(r) if c.coin(0.8) else None, keepdims=c.pick([None, 0, 1]),
         select_last_index=sel)


def gen_cumsum(c):
    c.opset = c.ri(14, 21) if c.coin(0.8) else c.ri(11, 13)
    dtype = c.main_dtype([F32, F64, I64, I32] + ([F16] if c.opset >= 14 else []))
    r = c.rank(1, 4)
    s = c.shape(r)
    x = c.vals(s, dtype) if dt(dtype).kind in 'iu' else c.fvals(s, dtype)
    ax = np.array(c.axis(r), dtype=c.pick([I64, I32]))
    if c.coin(0.2):
        ax = ax.reshape([1])  # ORT also takes a 1-element 1-D axis
    c.op('CumSum', [c.input(x), c.data(ax, 'axis', 0.8)], [dtype], exclusive=c.pick([None, 0, 1]),
         reverse=c.pick([None, 0, 1]))
    if dt(dtype) == dt(F16):
        c.notes['tol'] = TOL_F16


def gen_topk(c):
    c.opset = c.ri(11, 21) if c.coin(0.85) else 10
    dtype = c.main_dtype([F32, F64, I64, I32, I8, U8, F16])
    if c.opset == 10:
        dtype = c.pick(FLOATS)  # TopK-10: float types only
    r = c.rank(1, 4)
    s = c.shape(r, 1, 6)
    ax = c.axis(r) if c.coin(0.8) else None
    a = (ax if ax is not None else -1) % r
    k = c.ri(1, s[a])
    # Ties: lower index first (TopK-11). Integers may tie, floats do not.
    ties = dt(dtype).kind in 'iu' and c.coin(0.4)
    x = tie_values(c, s, dtype) if ties else c.distinct(s, dtype)
    ties = np.unique(x).size < x.size  # (distinct() of > 250 8-bit values ties too)
    largest = c.pick([None, 0, 1]) if c.opset >= 11 else None
    srt = c.pick([None, 1, 1, 0]) if c.opset >= 11 else None
    kname = c.init(np.array([k], dtype=I64), 'k')
    if srt == 0:
        if ties:
            srt = 1
        else:
            # Unsorted order is unspecified: sort the result with a second
            # TopK and gather the indices in that order.
            v, i = c.node('TopK', [c.input(x), kname], n_out=2, axis=ax, largest=largest, sorted=0)
            y = c.name('y')
            yi = c.name('yi')
            _, j = c.node('TopK', [v, kname], outs=[y, c.name('j')], axis=ax, largest=largest, sorted=1)
            c.node('GatherElements', [i, j], outs=[yi], axis=a)
            c.output(y, dtype)
            c.output(yi, I64)
            return
    c.op('TopK', [c.input(x), kname], [dtype, I64], axis=ax, largest=largest, sorted=srt)


# ---------------------------------------------------------------------------
# Linear algebra
# ---------------------------------------------------------------------------

def gen_matmul(c):
    dtype = c.main_dtype([F32, F16, F64, I64, I32])
    m, k, n = c.ri(1, 5), c.ri(1, 8), c.ri(1, 5)
    if c.big:
        m, k, n = c.ri(1, 24), c.ri(8, 96), c.ri(1, 24)
    if c.mode == 'zero':
        # an empty product: K = 0 gives zeros, M or N = 0 an empty output
        m, k, n = c.pick([(m, 0, n), (0, k, n), (m, k, 0)])
    form = c.pick(['nd', 'nd', 'nd', 'a1', 'b1', '11'])
    if c.mode == 'zero':
        # ORT fails [1, 0, 8] x [8] ("left operand cannot broadcast on dim
        # 1"; numpy: [1, 0]): empty products only with both operands >= 2-D.
        form = 'nd'
    batch = c.shape(c.ri(0, 2))
    ba, bb = c.bcast_shapes(batch, 2) if batch else ([], [])
    sa = [k] if form in ('a1', '11') else ba + [m, k]
    sb = [k] if form in ('b1', '11') else bb + [k, n]
    vals = lambda s: c.ivals(s, dtype, -5, 5) if dt(dtype).kind in 'iu' else c.fvals(s, dtype, 0.1, 1.5)
    c.op('MatMul', [c.data(vals(sa), 'a', 0.1), c.data(vals(sb), 'b', 0.4)], [dtype])
    if dt(dtype) == dt(F16):
        c.notes['tol'] = TOL_F16


def gen_gemm(c):
    dtype = c.main_dtype([F32, F32, F64, F16])  # ORT's CPU Gemm has no i32/i64 kernels
    m, k, n = c.ri(1, 6), c.ri(1, 8), c.ri(1, 6)
    if c.big:
        m, k, n = c.ri(1, 24), c.ri(8, 96), c.ri(1, 24)
    # Not tested: K = 0. ORT then returns C itself, not beta * C (Y =
    # alpha A B + beta C with A B = 0): wrong for beta != 1.
    ta, tb = c.pick([None, 0, 1]), c.pick([None, 0, 1])
    a = c.fvals([k, m] if ta else [m, k], dtype, 0.1, 1.5)
    b = c.fvals([n, k] if tb else [k, n], dtype, 0.1, 1.5)
    ins = [c.data(a, 'a', 0.1), c.data(b, 'b', 0.6)]
    if c.coin(0.75):
        cs = c.pick([[], [1], [n], [1, n], [m, 1], [m, n], [1, 1]])
        ins.append(c.data(c.fvals(cs, dtype), 'c', 0.6))
    alpha = float(np.float32(c.rng.uniform(-2, 2))) if c.coin(0.5) else None
    beta = float(np.float32(c.rng.uniform(-2, 2))) if c.coin(0.5) else None
    c.op('Gemm', ins, [dtype], transA=ta, transB=tb, alpha=alpha, beta=beta)
    if dt(dtype) == dt(F16):
        c.notes['tol'] = TOL_F16


def gen_conv(c):
    c.opset = c.ri(11, 21)
    dtype = c.main_dtype([F32, F32, F32, F16])  # ORT's CPU Conv has no f64 kernel
    nd = c.pick([1, 2, 2, 3])
    g = c.pick([1, 1, 2, 3])
    cin, mout = g * c.ri(1, 3), g * c.ri(1, 3)
    if c.big:
        cin, mout = g * c.ri(3, 8), g * c.ri(2, 6)
    batch = c.ri(1, 2)
    kern = [c.ri(1, 3) for _ in range(nd)]
    dil = [c.ri(1, 2) for _ in range(nd)] if c.coin(0.5) else None
    strides = [c.ri(1, 3) for _ in range(nd)] if c.coin(0.6) else None
    d_ = dil or [1] * nd
    keff = [(kk - 1) * dd + 1 for kk, dd in zip(kern, d_)]
    auto = c.pick(['NOTSET', 'NOTSET', 'NOTSET', 'SAME_UPPER', 'SAME_LOWER', 'VALID'])
    if auto.startswith('SAME') and dil:
        # ORT: "Dilation not supported for AutoPadType::SAME_UPPER or
        # SAME_LOWER" (the spec allows it).
        dil = None
        keff = kern
    pads = None
    if auto == 'NOTSET' and c.coin(0.7):
        pads = [c.ri(0, e - 1) if e > 1 else 0 for e in keff] + [c.ri(0, e - 1) if e > 1 else 0 for e in keff]
    spatial = []
    for i in range(nd):
        # the padded input must hold one dilated kernel (SAME_* pads enough)
        lo = 1 if auto.startswith('SAME') else keff[i] - (pads[i] + pads[nd + i] if pads else 0)
        spatial.append(c.ri(max(lo, 1), max(lo, 1) + (12 if c.big and nd < 3 else 4)))
    x = c.fvals([batch, cin] + spatial, dtype, 0.1, 1.5)
    w = c.fvals([mout, cin // g] + kern, dtype, 0.1, 1.5)
    ins = [c.input(x), c.data(w, 'w', 0.8)]
    if c.coin(0.6):
        ins.append(c.data(c.fvals([mout], dtype), 'bias', 0.8))
    attrs = dict(kernel_shape=kern if c.coin(0.6) else None, dilations=dil, strides=strides, pads=pads,
                 group=g if (g > 1 or c.coin(0.3)) else None, auto_pad=auto if (auto != 'NOTSET' or c.coin(0.2)) else None)
    c.op('Conv', ins, [dtype], **attrs)
    if dt(dtype) == dt(F16):
        c.notes['tol'] = TOL_F16


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------

def gen_concat(c):
    dtype = c.main_dtype(ALL)
    r = c.rank(1, 4)
    s = c.shape(r)
    ax = c.axis(r)
    a = ax % r
    k = c.ri(1, 4)
    ins = []
    for _ in range(k):
        si = list(s)
        si[a] = c.ri(0, 3) if c.coin(0.1) else c.ri(1, 3)
        ins.append(c.data(c.vals(si, dtype), 'x', 0.2))
    c.op('Concat', ins, [dtype], axis=ax)


def gen_split(c):
    dtype = c.main_dtype(ALL)
    r = c.rank(1, 4)
    s = c.shape(r, 1, 6)
    ax = c.axis(r) if c.coin(0.8) else None
    a = (ax if ax is not None else 0) % r
    d = s[a]
    form = c.pick(['sizes', 'sizes', 'even', 'num_outputs', 'legacy'])
    ins = [c.input(c.vals(s, dtype))]
    attrs = dict(axis=ax)
    if form == 'sizes':
        c.opset = c.ri(13, 21)
        n = c.ri(1, min(d, 4))
        cuts = sorted(c.rng.choice(np.arange(1, d), size=n - 1, replace=False).tolist()) if n > 1 else []
        sizes = np.diff([0] + cuts + [d]).tolist()
        if c.coin(0.1):
            sizes.insert(c.ri(0, len(sizes)), 0)  # a zero-length part
        ins.append(c.init(np.array(sizes, dtype=I64), 'split'))
        n = len(sizes)
    elif form == 'even':
        # Split-13..17 without sizes: as many equal parts as outputs.
        c.opset = c.ri(13, 17)
        divs = [q for q in range(1, d + 1) if d % q == 0]
        n = c.pick(divs[:4])
    elif form == 'num_outputs':
        # Split-18: num_outputs parts of ceil(d / n), the last smaller.
        c.opset = c.ri(18, 21)
        ok = [q for q in range(1, min(d, 5) + 1) if (q - 1) * -(-d // q) < d]
        n = c.pick(ok)
        attrs['num_outputs'] = n
    else:
        # Split-11: sizes as an attribute, or none (equal parts).
        c.opset = c.ri(11, 12)
        if c.coin():
            n = c.ri(1, min(d, 4))
            cuts = sorted(c.rng.choice(np.arange(1, d), size=n - 1, replace=False).tolist()) if n > 1 else []
            attrs['split'] = [int(v) for v in np.diff([0] + cuts + [d])]
        else:
            n = c.pick([q for q in range(1, d + 1) if d % q == 0][:4])
    c.op('Split', ins, [dtype] * n, **attrs)


def gen_slice(c):
    dtype = c.main_dtype(ALL)
    r = c.rank(1, 4)
    s = c.shape(r, 1, 7)
    x = c.input(c.vals(s, dtype))
    if c.coin(0.1):
        # Slice-1..9: starts/ends/axes attributes, step 1.
        c.opset = c.ri(7, 9)
        n = c.ri(1, r)
        axes = c.rng.choice(r, size=n, replace=False).tolist()
        st = [c.ri(-s[a] - 1, s[a] + 1) for a in axes]
        en = [c.ri(-s[a] - 1, s[a] + 1) if not c.coin(0.15) else INT64_MAX for a in axes]
        c.op('Slice', [x], [dtype], starts=st, ends=en, axes=axes if c.coin(0.7) else None)
        return
    n = c.ri(1, r)
    has_axes = c.coin(0.7)
    axes = c.rng.choice(r, size=n, replace=False).tolist() if has_axes else list(range(n))
    has_steps = c.coin(0.7)
    starts, ends, steps = [], [], []
    for a in axes:
        d = s[a]
        step = c.pick([1, 1, 2, 3, -1, -1, -2, -3]) if has_steps else 1
        if c.coin(0.12):
            st, en = (INT64_MAX, INT64_MIN) if step < 0 else (INT64_MIN, INT64_MAX)
            if c.coin(0.5):
                st = c.ri(-d, d - 1)
        else:
            st, en = c.ri(-d - 2, d + 2), c.ri(-d - 2, d + 2)
        starts.append(st)
        ends.append(en)
        steps.append(step)
    it = c.pick([I64, I64, I32])
    if it == I32:
        clamp = lambda v: int(np.clip(v, -2**31, 2**31 - 1))
        starts, ends = [clamp(v) for v in starts], [clamp(v) for v in ends]
    ins = [x, c.init(np.array(starts, dtype=it), 'starts'), c.init(np.array(ends, dtype=it), 'ends')]
    if has_axes or has_steps:
        axes_v = [a - r if c.coin() else a for a in axes]
        ins.append(c.init(np.array(axes_v, dtype=it), 'axes') if has_axes else '')
    if has_steps:
        ins.append(c.init(np.array(steps, dtype=it), 'steps'))
    c.op('Slice', ins, [dtype])


def gen_reshape(c):
    dtype = c.main_dtype(ALL)
    r = c.rank(0, 4)
    s = c.shape(r)
    total = int(np.prod(s)) if s else 1
    # A random factorization of total.
    tr = c.ri(0 if total == 1 else 1, 4)
    rem, tgt = total, []
    for i in range(tr - 1):
        divs = [q for q in range(1, rem + 1) if rem % q == 0]
        q = c.pick(divs)
        tgt.append(q)
        rem //= q
    if tr:
        tgt.append(rem)
        c.rng.shuffle(tgt)
    shape_v = list(tgt)
    allowzero = None
    c.opset = c.ri(13, 21)
    if c.opset >= 14 and c.coin(0.3):
        allowzero = c.ri(0, 1)
    if tr and c.coin(0.6):
        shape_v[c.ri(0, tr - 1)] = -1
        # vkllm infers a -1 only where the element count divides exactly as
        # expressions ([s3, s2] -> [-1, 6] fails: s2*s3 / 6): keep such
        # inputs static.
        c.sym = False
    if not allowzero:
        for i in range(min(tr, r)):
            if shape_v[i] == s[i] and c.coin(0.5):
                shape_v[i] = 0  # copy the input's dim
    c.op('Reshape', [c.input(c.vals(s, dtype)), c.init(np.array(shape_v, dtype=I64), 'shape')], [dtype],
         allowzero=allowzero)


def gen_transpose(c):
    c.zero_ok = True
    dtype = c.main_dtype(ALL)
    r = c.rank(0, 5, 1)
    s = c.shape(r, 1, 4)
    perm = c.rng.permutation(r).tolist() if (c.coin(0.8) and r) else None
    c.op('Transpose', [c.input(c.vals(s, dtype))], [dtype], perm=perm)


def gen_squeeze(c):
    dtype = c.main_dtype(ALL)
    r = c.rank(1, 5, 1)
    s = [1 if c.coin(0.5) else c.ri(2, 4) for _ in range(r)]
    ones = [i for i, d in enumerate(s) if d == 1]
    legacy = c.coin(0.2)
    c.opset = c.ri(11, 12) if legacy else c.ri(13, 21)
    ins = [c.input(c.vals(s, dtype))]
    attrs = {}
    if ones and c.coin(0.7):
        axes = c.rng.choice(ones, size=c.ri(1, len(ones)), replace=False).tolist()
        axes = [a - r if c.coin() else a for a in axes]
        if legacy:
            attrs['axes'] = axes
        else:
            ins.append(c.init(np.array(axes, dtype=I64), 'axes'))
    c.op('Squeeze', ins, [dtype], **attrs)


def gen_unsqueeze(c):
    c.zero_ok = True
    dtype = c.main_dtype(ALL)
    r = c.rank(0, 4)
    s = c.shape(r)
    k = min(c.ri(1, 3), 8 - r)  # vkllm's rank limit is 8
    out_r = r + k
    axes = c.rng.choice(out_r, size=k, replace=False).tolist()
    axes = [a - out_r if c.coin() else a for a in axes]
    legacy = c.coin(0.2)
    c.opset = c.ri(11, 12) if legacy else c.ri(13, 21)
    ins = [c.input(c.vals(s, dtype))]
    if legacy:
        c.op('Unsqueeze', ins, [dtype], axes=axes)
    else:
        c.op('Unsqueeze', ins + [c.init(np.array(axes, dtype=I64), 'axes')], [dtype])


def gen_expand(c):
    dtype = c.main_dtype(ALL)
    r = c.rank(0, 4)
    s = [1 if c.coin(0.5) else c.ri(2, 4) for _ in range(r)]
    extra = c.ri(0, 2)
    tgt = [c.ri(1, 3) for _ in range(extra)]
    for d in s:
        tgt.append(c.ri(1, 4) if d == 1 else (d if c.coin(0.8) else 1))
    if c.coin(0.2) and len(tgt) > 1:
        tgt = tgt[c.ri(1, len(tgt) - 1):]  # shape shorter than the input's rank
    c.op('Expand', [c.input(c.vals(s, dtype)), c.init(np.array(tgt, dtype=I64), 'shape')], [dtype])


def gen_tile(c):
    c.zero_ok = True
    dtype = c.main_dtype(ALL)
    r = c.rank(1, 4)
    s = c.shape(r, 1, 4)
    reps = [c.ri(1, 3) if not c.coin(0.05) else 0 for _ in range(r)]
    c.op('Tile', [c.input(c.vals(s, dtype)), c.init(np.array(reps, dtype=I64), 'repeats')], [dtype])


def gen_flatten(c):
    c.zero_ok = True
    dtype = c.main_dtype(ALL)
    r = c.rank(1, 4)
    s = c.shape(r)
    ax = c.axis(r, allow_end=True) if c.coin(0.8) else None
    c.op('Flatten', [c.input(c.vals(s, dtype))], [dtype], axis=ax)


def gen_trilu(c):
    c.opset = c.ri(14, 21)
    dtype = c.main_dtype([F32, F16, F64, I64, I32, BOOL])  # ORT has no 8-bit Trilu
    r = c.rank(2, 4)
    s = c.shape(r, 1, 6)
    ins = [c.input(c.vals(s, dtype))]
    if c.coin(0.7):
        k = c.ri(-s[-2] - 1, s[-1] + 1)
        ins.append(c.data(np.array(k, dtype=I64), 'k', 0.7))
    c.op('Trilu', ins, [dtype], upper=c.pick([None, 0, 1]))


# ---------------------------------------------------------------------------
# Indexing
# ---------------------------------------------------------------------------

def gen_gather(c):
    dtype = c.main_dtype(ALL)
    r = c.rank(1, 4)
    s = c.shape(r)
    ax = c.axis(r) if c.coin(0.8) else None
    d = s[(ax or 0) % r]
    it = c.pick([I64, I32])
    ishape = c.shape(c.ri(0, 3), 1, 4)
    if ishape and c.mode == 'zero':
        ishape[0] = 0  # no indices: an empty output
    idx = c.ivals(ishape, it, -d, d - 1)
    c.op('Gather', [c.input(c.vals(s, dtype)), c.data(idx, 'idx', 0.5)], [dtype], axis=ax)


def gen_gather_elements(c):
    dtype = c.main_dtype(ALL)
    r = c.rank(1, 4)
    s = c.shape(r)
    ax = c.axis(r) if c.coin(0.8) else None
    a = (ax or 0) % r
    si = [c.ri(1, d) for d in s]
    si[a] = c.ri(1, s[a] + 2)
    it = c.pick([I64, I32])
    idx = c.ivals(si, it, -s[a], s[a] - 1)
    c.op('GatherElements', [c.input(c.vals(s, dtype)), c.data(idx, 'idx', 0.4)], [dtype], axis=ax)


def gen_gather_nd(c):
    dtype = c.main_dtype(ALL)
    r = c.rank(1, 4)
    s = c.shape(r)
    b = c.ri(0, r - 1) if c.coin(0.4) else 0
    m = c.ri(1, r - b)
    mid = c.shape(c.ri(0, 2), 1, 3)
    ishape = s[:b] + mid + [m]
    idx = np.zeros(ishape, dtype=I64)
    for j in range(m):
        d = s[b + j]
        idx[..., j] = c.rng.integers(-d, d, size=ishape[:-1])
    # The index depth m (last dim of indices) fixes the output rank: exports
    # always have it static, and vkllm requires that.
    c.op('GatherND', [c.input(c.vals(s, dtype)), c.data(idx, 'idx', 0.4, static_axes=[-1])], [dtype],
         batch_dims=b if (b or c.coin(0.2)) else None)


def gen_scatter_nd(c):
    red = c.pick([None, 'none', 'add', 'mul', 'max', 'min', None])
    c.opset = 18 + c.ri(0, 3) if red in ('max', 'min') else c.ri(16, 21) if red else c.ri(13, 21)
    # ORT: no f16 with a reduction
    dtype = c.main_dtype(ALL if red in (None, 'none') else [F32, F64, I64, I32])
    r = c.rank(1, 4)
    s = c.shape(r)
    m = c.ri(1, r)
    space = int(np.prod(s[:m]))
    n = c.ri(1, min(space, 6))
    unique = red in (None, 'none')
    flat = c.rng.choice(space, size=n, replace=not unique and c.coin(0.5))
    tuples = np.stack(np.unravel_index(flat, s[:m]), axis=-1)
    neg = c.rng.random(size=tuples.shape) < 0.3
    tuples = np.where(neg, tuples - np.array(s[:m]), tuples)
    lead = [n] if c.coin(0.7) or n == 1 else None
    if lead is None:
        ishape = [n]
    else:
        ishape = lead
    idx = tuples.reshape(ishape + [m]).astype(I64)
    upd_shape = ishape + s[m:]
    if red == 'mul':
        upd = c.vals(upd_shape, dtype, small=True)
        if dt(dtype).kind == 'f':
            upd = c.fvals(upd_shape, dtype, 0.5, 1.5)
    else:
        upd = c.vals(upd_shape, dtype)
    x = c.vals(s, dtype, small=red == 'mul')
    c.op('ScatterND', [c.input(x), c.data(idx, 'idx', 0.6, static_axes=[-1]), c.data(upd, 'upd', 0.2)], [dtype],
         reduction=red)
    if dt(dtype) == dt(F16):
        c.notes['tol'] = TOL_F16


# ---------------------------------------------------------------------------
# Shape sources, generators
# ---------------------------------------------------------------------------

def gen_shape(c):
    c.zero_ok = True
    dtype = c.main_dtype(ALL)
    r = c.rank(0, 4)
    s = c.shape(r)
    c.opset = c.ri(13, 21)
    attrs = {}
    if c.opset >= 15:
        if c.coin(0.5):
            attrs['start'] = c.ri(-r - 2, r + 2)
        if c.coin(0.5):
            attrs['end'] = c.ri(-r - 2, r + 2)
    c.op('Shape', [c.input(c.vals(s, dtype))], [I64], **attrs)


def gen_size(c):
    dtype = c.main_dtype(ALL)
    s = c.shape(c.rank(0, 4), 0 if c.coin(0.1) else 1, 5)
    c.op('Size', [c.input(c.vals(s, dtype))], [I64])


def gen_constant_of_shape(c):
    # ConstantOfShape-9 value types; opset 20 adds bf16/fp8 we do not test.
    c.opset = c.ri(13, 21)
    dtype = c.main_dtype(ALL)
    vt = None if c.coin(0.2) else dtype
    out_t = F32 if vt is None else vt
    val = None if vt is None else attr_tensor(c.vals([1], vt))
    if c.coin(0.5):
        # shape from a constant (may be [], a scalar output)
        s = c.shape(c.ri(0, 4), 1, 4)
        if s and c.mode == 'zero':
            s[c.ri(0, len(s) - 1)] = 0
        shp = c.init(np.array(s, dtype=I64), 'shape')
        c.op('ConstantOfShape', [shp], [out_t], value=val)
    else:
        # shape from Shape(x): symbolic when x's dims are
        x = c.input(c.vals(c.shape(c.ri(1, 4)), F32))
        shp = c.node('Shape', [x])
        c.op('ConstantOfShape', [shp], [out_t], value=val)


def gen_constant(c):
    form = c.pick(['value', 'value', 'value', 'value_float', 'value_floats', 'value_int', 'value_ints'])
    if form == 'value':
        dtype = c.main_dtype(ALL)
        kv = c.vals(c.shape(c.ri(0, 3)), dtype, small=dt(dtype).itemsize == 1)
        attrs = dict(value=attr_tensor(kv))
    elif form == 'value_float':
        kv = np.array(c.rng.uniform(-3, 3), dtype=F32)
        attrs = dict(value_float=float(kv))
    elif form == 'value_floats':
        kv = c.fvals([c.ri(1, 5)])
        attrs = dict(value_floats=[float(v) for v in kv])
    elif form == 'value_int':
        kv = np.array(c.ri(-1000, 1000), dtype=I64)
        attrs = dict(value_int=int(kv))
    else:
        kv = np.array([c.ri(-1000, 1000) for _ in range(c.ri(1, 5))], dtype=I64)
        attrs = dict(value_ints=[int(v) for v in kv])
    k = c.node('Constant', [], **attrs)
    if c.coin(0.5) and kv.dtype != dt(BOOL):
        # Used by an op: Add with a graph input broadcasting against it.
        small = kv.dtype.itemsize == 1
        x = c.input(c.vals([c.ri(1, 3)] + list(kv.shape), kv.dtype, small=small))
        if small:
            c.opset = c.ri(14, 21)  # 8-bit Add
        c.op('Add', [x, k], [kv.dtype])
    else:
        c.output(k, kv.dtype)


def gen_range(c):
    dtype = c.main_dtype([F32, F64, I64, I32])
    n = c.ri(0, 12)
    if dt(dtype).kind == 'f':
        start = float(c.rng.uniform(-5, 5))
        delta = float(c.rng.uniform(0.2, 2.0)) * c.pick([-1, 1])
        limit = start + (max(n, 1) - 1 + float(c.rng.uniform(0.2, 0.8))) * delta if n else start - delta * 0.5
    else:
        start = c.ri(-10, 10)
        delta = c.pick([1, 1, 2, 3, -1, -2, -3])
        limit = start + (n * delta if c.coin() else (n - 1) * delta + (1 if delta > 0 else -1)) if n else start
    vals = [np.array(v, dtype=dtype) for v in (start, limit, delta)]
    # Not tested: start/limit/delta from run-time data (graph inputs). The
    # output length then depends on data, which vkllm rejects at import
    # ("Range: output shape depends on the run-time value of input 0").
    form = c.pick(['const', 'const', 'shape'])
    if form == 'shape' and dt(dtype) == dt(I64):
        # limit from a Shape: Range(0, Shape(x)[d], 1) as exporters write it.
        x = c.input(c.vals(c.shape(c.ri(1, 3), 1, 6), F32))
        sh = c.node('Shape', [x])
        lim = c.node('Gather', [sh, c.init(np.array(0, dtype=I64), 'i')], axis=0)
        c.op('Range', [c.init(vals[0], 'start'), lim, c.init(np.array(c.pick([1, 2]), dtype=I64), 'delta')], [dtype])
        return
    c.op('Range', [c.init(v, 'r') for v in vals], [dtype])


# ---------------------------------------------------------------------------
# Small multi-op graphs: shape subgraphs as exporters write them
# ---------------------------------------------------------------------------

def gen_chain_reshape_heads(c):
    """x [B, S, H*D] -> Shape -> Gather(0), Gather(1) -> Unsqueeze -> Concat
    with [H, D] -> Reshape -> Transpose [B, H, S, D]."""
    c.sym = c.coin(0.8)
    B, S, H, D = c.ri(1, 3), c.ri(1, 5), c.ri(1, 4), c.ri(1, 4)
    # Batch and sequence symbolic, the hidden size static, as in exports
    # (vkllm cannot infer the -1 of [B, S, H, -1] from a symbolic hidden
    # size: it does not cancel s_hidden*s_seq / (H*s_seq)).
    x = c.input(c.fvals([B, S, H * D], F32), static_axes=[2])
    sh = c.node('Shape', [x])
    parts = []
    for i in (0, 1):
        g = c.node('Gather', [sh, c.init(np.array(i, dtype=I64), 'i')], axis=0)
        parts.append(c.node('Unsqueeze', [g, c.init(np.array([0], dtype=I64), 'ax')]))
    cat = c.node('Concat', parts + [c.init(np.array([H, D] if c.coin() else [H, -1], dtype=I64), 'hd')], axis=0)
    y = c.node('Reshape', [x, cat])
    c.op('Transpose', [y], [F32], perm=[0, 2, 1, 3])


def gen_chain_slice_concat(c):
    """Shape -> Slice(negative) -> Concat([-1]) -> Reshape: merge the leading
    dims, keep the last."""
    c.sym = c.coin(0.8)
    r = c.ri(2, 4)
    s = c.shape(r)
    x = c.input(c.vals(s, c.pick([F32, I64])))
    sh = c.node('Shape', [x], start=-1) if c.coin(0.5) else c.node(
        'Slice', [c.node('Shape', [x]), c.init(np.array([-1], dtype=I64), 's'), c.init(np.array([INT64_MAX], dtype=I64), 'e')])
    cat = c.node('Concat', [c.init(np.array([-1], dtype=I64), 'm1'), sh], axis=0)
    y = c.name('y')
    c.node('Reshape', [x, cat], outs=[y])
    c.output(y, c.inputs[-1][1].dtype)
    c.opset = c.ri(15, 21)


def gen_chain_expand_mask(c):
    """A causal mask from shapes: Range(S) -> Unsqueeze -> LessOrEqual
    (broadcast) -> Where(mask, x, -1e4) -> Softmax."""
    c.sym = c.coin(0.8)
    c.opset = c.ri(16, 21)
    B, S = c.ri(1, 2), c.ri(1, 6)
    x = c.input(c.fvals([B, S, S], F32, 0.01, 3.0))
    sh = c.node('Shape', [x])
    n = c.node('Gather', [sh, c.init(np.array(2, dtype=I64), 'i')], axis=0)
    rng_ = c.node('Range', [c.init(np.array(0, dtype=I64), 'z'), n, c.init(np.array(1, dtype=I64), 'one')])
    rows = c.node('Unsqueeze', [rng_, c.init(np.array([1], dtype=I64), 'ax')])
    cols = c.node('Unsqueeze', [rng_, c.init(np.array([0], dtype=I64), 'ax')])
    mask = c.node('LessOrEqual', [cols, rows])
    w = c.node('Where', [mask, x, c.init(np.array(-1e4, dtype=F32), 'neg')])
    c.op('Softmax', [w], [F32], axis=-1)


def gen_chain_size_mean(c):
    """mean = ReduceSum(x) / Cast(Size(x)); ConstantOfShape(Shape(x)) + mean."""
    c.sym = c.coin(0.8)
    c.opset = c.ri(13, 21)
    x = c.input(c.fvals(c.shape(c.ri(1, 4)), F32))
    total = c.node('ReduceSum', [x], keepdims=0)
    n = c.node('Cast', [c.node('Size', [x])], to=TensorProto.FLOAT)
    mean = c.node('Div', [total, n])
    z = c.node('ConstantOfShape', [c.node('Shape', [x])], value=attr_tensor(np.array([1.0], dtype=F32)))
    c.op('Add', [z, mean], [F32])


def gen_chain_expand_shape(c):
    """Expand(y, Shape(x)), Tile by Shape-derived repeats, Flatten."""
    c.sym = c.coin(0.8)
    r = c.ri(1, 3)
    s = c.shape(r)
    x = c.input(c.fvals(s, F32))
    y = c.input(c.fvals([1] * r, F32), sym=False)
    e = c.node('Expand', [y, c.node('Shape', [x])])
    sum_ = c.node('Add', [e, x])
    c.op('Flatten', [sum_], [F32], axis=c.axis(r, allow_end=True))


# ---------------------------------------------------------------------------
# Fusion patterns as exporters write them, exact and near misses: the
# importer fuses the exact ones (RMSNorm, LayerNorm, Gelu, SiluMul, RoPE,
# Attention), the near misses must stay plain ops. Either way the result
# must match ONNX Runtime.
# ---------------------------------------------------------------------------

def scalar(c, v, dtype=F32, prefix='k'):
    return c.init(np.array(v, dtype=dtype), prefix)


def mul_any(c, a, b):
    """Mul in a random operand order."""
    return c.node('Mul', [a, b] if c.coin() else [b, a])


def add_any(c, a, b):
    return c.node('Add', [a, b] if c.coin() else [b, a])


def seq_input(c, last, extra=()):
    """x [B, S, *extra, last] with B and S symbolic (in most cases)."""
    c.sym = c.coin(0.8)
    shape = [c.ri(1, 2), c.ri(1, 7)] + list(extra) + [last]
    return c.input(c.fvals(shape, F32, 0.05, 2.5), static_axes=range(2, len(shape))), shape


def reduce_mean_last(c, x, axis=-1):
    """ReduceMean over one axis, keepdims, in the opset's form."""
    if c.opset >= 18:
        return c.node('ReduceMean', [x, scalar(c, [axis], I64, 'axes')], keepdims=1)
    return c.node('ReduceMean', [x], axes=[axis], keepdims=1)


def gen_fuse_gelu_erf(c):
    x, _ = seq_input(c, c.ri(1, 16))
    miss = c.coin(0.3)
    half, one, root2 = 0.5, 1.0, 1.4142135381698608
    if miss:
        which = c.pick(['half', 'one', 'root2'])
        half = 0.6 if which == 'half' else half
        one = 2.0 if which == 'one' else one
        root2 = 1.5 if which == 'root2' else root2
    arg = c.node('Div', [x, scalar(c, root2)]) if c.coin() else mul_any(c, x, scalar(c, 1.0 / root2))
    e = add_any(c, c.node('Erf', [arg]), scalar(c, one))
    order = c.ri(0, 2)
    if order == 0:
        y = mul_any(c, mul_any(c, x, scalar(c, half)), e)
    elif order == 1:
        y = mul_any(c, mul_any(c, x, e), scalar(c, half))
    else:
        y = mul_any(c, x, mul_any(c, e, scalar(c, half)))
    c.op('Identity', [y], [F32])


def gen_fuse_gelu_tanh(c):
    x, _ = seq_input(c, c.ri(1, 16))
    k0, k1 = 0.7978845834732056, 0.044715
    if c.coin(0.3):
        k1 = 0.05 if c.coin() else k1
        k0 = 0.8 if k1 == 0.044715 else k0
    cube = c.node('Pow', [x, scalar(c, 3.0)]) if c.coin() else mul_any(c, mul_any(c, x, x), x)
    inner = add_any(c, x, mul_any(c, cube, scalar(c, k1)))
    t = c.node('Tanh', [mul_any(c, inner, scalar(c, k0))])
    e = add_any(c, t, scalar(c, 1.0))
    y = mul_any(c, mul_any(c, x, scalar(c, 0.5)), e) if c.coin() else mul_any(c, mul_any(c, x, e), scalar(c, 0.5))
    c.op('Identity', [y], [F32])


def gen_fuse_rmsnorm(c):
    c.opset = c.ri(13, 21)
    hid = c.ri(1, 32)
    x, shape = seq_input(c, hid)
    axis = -1 if c.coin(0.8) else -2  # -2: a near miss (not the last axis)
    sq = c.node('Pow', [x, scalar(c, 2.0)]) if c.coin() else c.node('Mul', [x, x])
    ms = reduce_mean_last(c, sq, axis)
    eps = float(np.float32(c.pick([1e-5, 1e-6, 1e-3])))
    root = c.node('Sqrt', [add_any(c, ms, scalar(c, eps))])
    if c.coin():
        normed = c.node('Div', [x, root])
    else:
        normed = mul_any(c, x, c.node('Reciprocal', [root]))
    if c.coin(0.8):
        w = c.data(c.fvals([shape[-1]] if axis == -1 else [1], F32, 0.2, 1.5), 'w', 0.9)
        normed = mul_any(c, normed, w)
    c.op('Identity', [normed], [F32])


def gen_fuse_layernorm(c):
    c.opset = c.ri(13, 21)
    hid = c.ri(2, 32)
    x, shape = seq_input(c, hid)
    axis = -1 if c.coin(0.85) else -2
    mean = reduce_mean_last(c, x, axis)
    d = c.node('Sub', [x, mean])
    sq = c.node('Pow', [d, scalar(c, 2.0)]) if c.coin(0.7) else c.node('Mul', [d, d])
    var = reduce_mean_last(c, sq, axis)
    eps = float(np.float32(c.pick([1e-5, 1e-12, 1e-3])))
    y = c.node('Div', [d, c.node('Sqrt', [add_any(c, var, scalar(c, eps))])])
    if c.coin(0.8):
        y = mul_any(c, y, c.data(c.fvals([hid], F32, 0.2, 1.5), 'gamma', 0.9))
    if c.coin(0.7):
        y = add_any(c, y, c.data(c.fvals([hid], F32, 0.05, 0.5), 'beta', 0.9))
    c.op('Identity', [y], [F32])


def gen_fuse_silu_mul(c):
    x, shape = seq_input(c, c.ri(1, 24))
    up = c.input(c.fvals(shape, F32, 0.05, 2.5), 'up', static_axes=[2])  # declared like x
    g = x
    sig_of = g if c.coin(0.85) else up  # near miss: Sigmoid(up)
    silu = mul_any(c, g, c.node('Sigmoid', [sig_of]))
    y = mul_any(c, silu, up) if c.coin(0.85) else silu  # a bare SiLU stays as it is
    c.op('Identity', [y], [F32])


def gen_fuse_rope(c):
    """Hugging Face rotate_half: x * cos + cat(-x2, x1) * sin, cos/sin
    [B, S, D] unsqueezed at 1; partial rotary (R < D) sometimes."""
    c.opset = c.ri(13, 21)
    c.sym = c.coin(0.8)
    B, H, S, D = c.ri(1, 2), c.ri(1, 4), c.ri(1, 6), 2 * c.ri(1, 8)
    R = D if c.coin(0.75) else 2 * c.ri(1, D // 2)
    x = c.input(c.fvals([B, H, S, D], F32, 0.05, 2.0), static_axes=[1, 3])
    pos = c.rng.integers(0, 50, size=(B, S))[..., None] * (10000.0 ** (-np.arange(0, R, 2) / R))[None, None]
    emb = np.concatenate([pos, pos], axis=-1)
    cos = c.input(np.cos(emb).astype(F32), 'cos', static_axes=[2])
    sin = c.input(np.sin(emb).astype(F32), 'sin', static_axes=[2])
    ax1 = scalar(c, [1], I64, 'ax')
    cu, su = c.node('Unsqueeze', [cos, ax1]), c.node('Unsqueeze', [sin, ax1])

    def sl(t, a, b):
        return c.node('Slice', [t, scalar(c, [a], I64, 's'), scalar(c, [b], I64, 'e'), scalar(c, [3], I64, 'a'),
                                scalar(c, [1], I64, 'st')])
    xr = sl(x, 0, R) if R < D else x
    h = R // 2
    swap = c.coin(0.15)  # near miss: cat(x1, -x2)
    x1, x2 = sl(xr, 0, h), sl(xr, h, INT64_MAX)
    rot = c.node('Concat', [x1, c.node('Neg', [x2])] if swap else [c.node('Neg', [x2]), x1], axis=-1)
    y = add_any(c, mul_any(c, xr, cu), mul_any(c, rot, su))
    if R < D:
        y = c.node('Concat', [y, sl(x, R, D)], axis=-1)
    c.op('Identity', [y], [F32])


def gen_fuse_attention(c):
    """Eager attention: MatMul(Q, Kᵀ) * scale [+ mask] -> Softmax -> MatMul V,
    with Hugging Face's repeat_kv for GQA."""
    c.opset = c.ri(13, 21)
    c.sym = c.coin(0.8)
    B, Hkv, S, D = c.ri(1, 2), c.ri(1, 2), c.ri(1, 6), c.ri(1, 8) * 2
    rep = c.pick([1, 1, 2, 3])
    H = Hkv * rep
    T = S + (c.ri(0, 4) if c.coin() else 0)
    q = c.input(c.fvals([B, H, S, D], F32, 0.05, 1.5), 'q', static_axes=[1, 3])
    k = c.input(c.fvals([B, Hkv, T, D], F32, 0.05, 1.5), 'k', static_axes=[1, 3])
    v = c.input(c.fvals([B, Hkv, T, D], F32, 0.05, 1.5), 'v', static_axes=[1, 3])

    def repeat_kv(t):
        if rep == 1:
            return t
        u = c.node('Unsqueeze', [t, scalar(c, [2], I64, 'ax')])
        e = c.node('Expand', [u, scalar(c, [B, Hkv, rep, T, D], I64, 'shape')])
        return c.node('Reshape', [e, scalar(c, [B, H, T, D], I64, 'shape')])
    if c.sym and rep > 1:
        c.sym = False  # the constant repeat_kv shapes need static B and T
        c.inputs = [(n, a, list(a.shape)) for n, a, _ in c.inputs]
    kt = c.node('Transpose', [repeat_kv(k)], perm=[0, 1, 3, 2])
    scores = c.node('MatMul', [q, kt])
    scale = 1.0 / np.sqrt(D)
    if c.coin():
        scores = c.node('Div', [scores, scalar(c, np.sqrt(D))])
    else:
        scores = mul_any(c, scores, scalar(c, scale))
    if c.coin(0.7):
        m = np.where(np.arange(T)[None, :] <= np.arange(S)[:, None] + (T - S), 0.0, -1e4).astype(F32)
        m = np.broadcast_to(m, (B, 1, S, T)).copy()
        if c.coin(0.3) and T > S:
            # padding: key 0 masked too (never a whole row: softmax of
            # score - 1e4 in f32 keeps ~3 digits, ORT's and vkllm's differ)
            m[..., 0] = -1e4
        scores = add_any(c, scores, c.input(m, 'mask', static_axes=[1]))
    probs = c.node('Softmax', [scores], axis=-1 if c.coin(0.9) else -2)
    c.op('MatMul', [probs, repeat_kv(v)], [F32])


# ---------------------------------------------------------------------------

OPS = {
    'Add': gen_binary_arith('Add'), 'Sub': gen_binary_arith('Sub'), 'Mul': gen_binary_arith('Mul'),
    'Div': gen_binary_arith('Div'), 'Pow': gen_pow,
    'Sqrt': gen_unary('Sqrt'), 'Reciprocal': gen_unary('Reciprocal'), 'Neg': gen_unary('Neg', [I64, I32, I8]),
    'Abs': gen_unary('Abs', [I64, I32, I8, U8]), 'Exp': gen_unary('Exp'), 'Log': gen_unary('Log'),
    'Erf': gen_unary('Erf'), 'Tanh': gen_unary('Tanh'), 'Sigmoid': gen_unary('Sigmoid'),
    'Relu': gen_unary('Relu', [I32, I8]), 'Gelu': gen_gelu, 'Cos': gen_unary('Cos'), 'Sin': gen_unary('Sin'),
    'Softmax': gen_softmax('Softmax'), 'LogSoftmax': gen_softmax('LogSoftmax'),
    'MatMul': gen_matmul, 'Gemm': gen_gemm, 'Conv': gen_conv, 'LayerNormalization': gen_layernorm,
    'ReduceMean': gen_reduce('ReduceMean'), 'ReduceSum': gen_reduce('ReduceSum'), 'ReduceMax': gen_reduce('ReduceMax'),
    'Cast': gen_cast('Cast'), 'CastLike': gen_cast('CastLike'),
    'Concat': gen_concat, 'Split': gen_split, 'Slice': gen_slice,
    'Gather': gen_gather, 'GatherND': gen_gather_nd, 'GatherElements': gen_gather_elements,
    'ScatterND': gen_scatter_nd,
    'Reshape': gen_reshape, 'Transpose': gen_transpose, 'Squeeze': gen_squeeze, 'Unsqueeze': gen_unsqueeze,
    'Expand': gen_expand, 'Tile': gen_tile, 'Flatten': gen_flatten,
    'Shape': gen_shape, 'Size': gen_size, 'ConstantOfShape': gen_constant_of_shape, 'Constant': gen_constant,
    'Range': gen_range, 'Where': gen_where,
    'Equal': gen_compare('Equal'), 'Greater': gen_compare('Greater'), 'GreaterOrEqual': gen_compare('GreaterOrEqual'),
    'Less': gen_compare('Less'), 'LessOrEqual': gen_compare('LessOrEqual'),
    'And': gen_logic('And'), 'Or': gen_logic('Or'), 'Not': gen_not,
    'Max': gen_maxmin('Max'), 'Min': gen_maxmin('Min'), 'Clip': gen_clip, 'ArgMax': gen_argmax,
    'Trilu': gen_trilu, 'CumSum': gen_cumsum, 'Identity': gen_identity, 'Dropout': gen_dropout, 'TopK': gen_topk,
    # multi-op shape subgraphs
    'chain.ReshapeHeads': gen_chain_reshape_heads, 'chain.SliceConcat': gen_chain_slice_concat,
    'chain.CausalMask': gen_chain_expand_mask, 'chain.SizeMean': gen_chain_size_mean,
    'chain.ExpandShape': gen_chain_expand_shape,
    # fusion patterns (exact and near misses)
    'fuse.GeluErf': gen_fuse_gelu_erf, 'fuse.GeluTanh': gen_fuse_gelu_tanh, 'fuse.RMSNorm': gen_fuse_rmsnorm,
    'fuse.LayerNorm': gen_fuse_layernorm, 'fuse.SiluMul': gen_fuse_silu_mul, 'fuse.RoPE': gen_fuse_rope,
    'fuse.Attention': gen_fuse_attention,
}


def ir_version_for(opset):
    return 8 if opset <= 18 else 9 if opset <= 20 else 10


def finish(c, f16_outputs):
    """The ModelProto; f16 graph outputs get a Cast to f32 appended unless
    f16_outputs == 'raw' (vkllm check compares f16 only once it reads them)."""
    outputs = []
    for name, d in c.outputs:
        if d == dt(F16) and f16_outputs == 'cast':
            wide = name + '_f32'
            c.nodes.append(helper.make_node('Cast', [name], [wide], to=TensorProto.FLOAT))
            outputs.append(helper.make_tensor_value_info(wide, TensorProto.FLOAT, None))
        else:
            outputs.append(helper.make_tensor_value_info(name, ONNX_TYPE[d], None))
    inputs = [helper.make_tensor_value_info(n, ONNX_TYPE[a.dtype], dims) for n, a, dims in c.inputs]
    graph = helper.make_graph(c.nodes, 'case', inputs, outputs, initializer=c.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_operatorsetid('', c.opset)],
                              producer_name='vkllm tests/ort/gen_cases.py')
    model.ir_version = ir_version_for(c.opset)
    if c.opset <= 17:
        # onnx 1.12 knows opsets up to 17: there, declare the output shapes
        # its shape inference derives (vkllm cross-checks declared outputs)
        # and run the checker on the result.
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        for o in model.graph.output:
            for io in inferred.graph.output:
                if io.name == o.name and io.type.tensor_type.HasField('shape'):
                    o.type.CopyFrom(io.type)
        # The checker wants a shape on every output: where inference gave
        # none, a copy gets an empty one (the checker does not compare it).
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        for o in copy.graph.output:
            if not o.type.tensor_type.HasField('shape'):
                o.type.tensor_type.shape.SetInParent()
        onnx.checker.check_model(copy)
    return model


def npy_name(d):
    return {'float32': 'float32', 'float16': 'float16', 'float64': 'float64', 'int64': 'int64', 'int32': 'int32',
            'int8': 'int8', 'uint8': 'uint8', 'bool': 'bool'}[str(d)]


def write_case(root, case_name, op, index, c, model):
    d = os.path.join(root, case_name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'model.onnx'), 'wb') as f:
        f.write(model.SerializeToString())
    ins = []
    for n, a, dims in c.inputs:
        fn = f'step0.in.{n}.npy'
        np.save(os.path.join(d, fn), a)
        ins.append({'name': n, 'file': fn, 'dtype': npy_name(a.dtype), 'shape': list(a.shape)})
    tol = c.notes.get('tol', TOL_F16 if any(x == dt(F16) for x in c.dtypes) else
                      TOL_F64 if c.dtypes and all(x == dt(F64) or x.kind in 'iub' for x in c.dtypes) and
                      any(x == dt(F64) for x in c.dtypes) else TOL_F32)
    if all(d.kind in 'iub' for _, d in c.outputs):
        tol = 0.0  # integer and bool outputs must match exactly
    manifest = {
        'name': case_name, 'kind': 'ort_op_case', 'op': op, 'index': index, 'opset': c.opset,
        'symbolic_inputs': ('unnamed' if c.anon else True) if c.sym else False, 'tol': tol,
        'nodes': [n.op_type for n in model.graph.node],
        'steps': [{'inputs': ins, 'outputs': []}],
    }
    with open(os.path.join(d, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)
        f.write('\n')


SHORT = {'float32': 'f32', 'float16': 'f16', 'float64': 'f64', 'int64': 'i64', 'int32': 'i32', 'int8': 'i8',
         'uint8': 'u8', 'bool': 'bool'}


def note_coverage(cv, op, c, model):
    """What one case exercises: opset, dtypes, attributes, input forms."""
    cv['n'] = cv.get('n', 0) + 1
    cv.setdefault('opsets', set()).add(c.opset)
    main_op = op if '.' not in op else None
    for node in model.graph.node:
        if main_op and node.op_type != main_op:
            continue
        for a in node.attribute:
            v = helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            if isinstance(v, (int, str)) and a.name not in ('seed', 'k', 'value_int', 'to'):
                cv.setdefault('attrs', set()).add(f'{a.name}={v}')
            elif a.name == 'to':
                cv.setdefault('attrs', set()).add('to=' + SHORT[str(np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[v]))])
            else:
                cv.setdefault('attrs', set()).add(a.name)
        if main_op:
            present = ''.join('1' if x else '0' for x in node.input)
            cv.setdefault('inputs', set()).add(present)
    for _, a, _ in c.inputs:
        cv.setdefault('dtypes', set()).add(SHORT[str(a.dtype)])
    for _, d in c.outputs:
        cv.setdefault('dtypes', set()).add(SHORT[str(d)])
    for key, on in (('symbolic', c.sym), ('big', c.big), ('zero-size', c._zero_done),
                    ('const-input', bool(c.inits))):
        cv[key] = cv.get(key, 0) + bool(on)


def print_coverage(cover):
    for op, cv in cover.items():
        ops = sorted(cv['opsets'])
        attrs = ' '.join(sorted(cv.get('attrs', []))) or '-'
        forms = ' '.join(sorted(cv.get('inputs', []))) or '-'
        print(f"{op}: {cv['n']} cases; opsets {ops[0]}-{ops[-1]}; dtypes {' '.join(sorted(cv['dtypes']))}; "
              f"inputs present {forms}; symbolic {cv['symbolic']}, big {cv['big']}, zero-size {cv['zero-size']}; "
              f"attrs {attrs}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('out', nargs='?')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--count-per-op', type=int, default=20)
    ap.add_argument('--ops', default='', help='comma-separated subset of op names (default: all)')
    ap.add_argument('--f16-outputs', choices=['cast', 'raw'], default='cast')
    ap.add_argument('--list', action='store_true', help='print the op names and exit')
    ap.add_argument('--summary', action='store_true', help='print what the cases of each op cover')
    args = ap.parse_args()
    if args.list:
        print('\n'.join(OPS))
        return 0
    if not args.out:
        ap.error('OUT_DIR is required')
    ops = [o for o in args.ops.split(',') if o] or list(OPS)
    for o in ops:
        if o not in OPS:
            ap.error(f'unknown op {o}')
    os.makedirs(args.out, exist_ok=True)
    n = 0
    cover = {}
    for op in ops:
        for i in range(args.count_per_op):
            seed = zlib.crc32(f'{args.seed}/{op}/{i}'.encode())
            c = Case(np.random.default_rng(seed), index=i)
            OPS[op](c)
            try:
                model = finish(c, args.f16_outputs)
            except Exception as e:
                raise SystemExit(f'gen_cases: {op}.{i:03d} (opset {c.opset}): invalid model: {e}')
            write_case(args.out, f'{op}.{i:03d}', op, i, c, model)
            n += 1
            if args.summary:
                note_coverage(cover.setdefault(op, {}), op, c, model)
    if args.summary:
        print_coverage(cover)
    print(f'gen_cases: {n} cases, {len(ops)} ops, seed {args.seed}, {args.count_per_op} per op')
    return 0


if __name__ == '__main__':
    sys.exit(main())
