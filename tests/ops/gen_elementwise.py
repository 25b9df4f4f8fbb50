#!/usr/bin/python3
"""Writes tests/ops/cases/elementwise.json: op cases for the elementwise family
(format: tests/ops/README.md). Expected outputs come from numpy in float64,
then rounded to the output dtype; fp8 codes come from a nearest-value search
over all 256 codes. Deterministic: fixed seeds. Run: python3 gen_elementwise.py"""
import math

import numpy as np

import opcase
from opcase import FLOATS, NP_FLOAT, NP_INT, Cases, rounded

RNG = np.random.default_rng(20240611)
CASES = Cases()

# dtype name -> numpy type used to hold (and round) values of that dtype.
NP = {**NP_FLOAT, **NP_INT}
DTYPE_ENUM = {"f32": 1, "f16": 2, "bf16": 3, "f64": 4, "i64": 5, "i32": 6, "i16": 7, "i8": 8, "u8": 9,
              "u16": 10, "u32": 11, "u64": 12, "bool": 13, "fp8e4m3": 14, "fp8e5m2": 15}
INTS = ["i64", "i32", "i16", "i8", "u8", "u16", "u32", "u64"]
SINTS = ["i64", "i32", "i16", "i8"]


def tensor(dtype, a, sym=None, const=False):
    return opcase.tensor(a, dtype, sym, const)


def add_case(name, op, inputs, outputs, attrs=None, domain="", rtol=None, atol=None, error=None, data_error=False):
    c = {"name": name, "op": op, "domain": domain, "inputs": inputs, "outputs": outputs}
    if attrs:
        c["attrs"] = attrs
    if rtol is not None:
        c["rtol"] = rtol
    if atol is not None:
        c["atol"] = atol
    if error:
        c["expect_error"] = error
    if data_error:  # ref raises it from the data at run time: a GPU kernel may complete instead
        c["data_error"] = True
    CASES.append(c)


def rand(dtype, shape, lo=0.5, hi=2.0, signed=True):
    """Random non-zero values of a dtype: |v| in [lo, hi) (ints: 1..hi)."""
    if dtype in FLOATS:
        v = RNG.uniform(lo, hi, size=shape)
        if signed:
            v = v * RNG.choice([-1.0, 1.0], size=shape)
        return rounded(v, dtype)
    if dtype == "bool":
        return RNG.integers(0, 2, size=shape).astype(np.bool_)
    top = int(hi)
    v = RNG.integers(1, top + 1, size=shape)
    if signed and dtype in SINTS:
        v = v * RNG.choice([-1, 1], size=shape)
    return v.astype(NP[dtype])


def out_of(dtype, v):
    """Expected output tensor: float64 result rounded to dtype."""
    return tensor(dtype, rounded(v, dtype))


# --- binary arithmetic ------------------------------------------------------

def wrap(v, dtype):
    """Exact integer result wrapped to dtype (two's complement)."""
    bits = np.dtype(NP[dtype]).itemsize * 8
    v = np.asarray(v, dtype=object) % (1 << bits)
    if dtype in SINTS:
        v = np.where(v >= (1 << (bits - 1)), v - (1 << bits), v)
    return np.asarray(v.astype(np.int64) if dtype != "u64" else v.astype(np.uint64))


def int_div(a, b):
    q = np.abs(a.astype(object)) // np.abs(b.astype(object))
    return np.where((a < 0) != (b < 0), -q, q)


ARITH = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
         "Div": lambda a, b: a / b}


def arith_expected(op, a, b, dtype):
    if dtype in FLOATS:
        return out_of(dtype, ARITH[op](a.astype(np.float64), b.astype(np.float64)))
    a64, b64 = np.broadcast_arrays(a.astype(object), b.astype(object))
    r = int_div(a64, b64) if op == "Div" else ARITH[op](a64, b64)
    return tensor(dtype, wrap(r, dtype))


def gen_arith():
    shapes = [([2, 3, 4], [2, 3, 4]), ([2, 3, 4], [4]), ([2, 1, 4], [3, 1]), ([], [2, 3]), ([5, 1], [1, 3])]
    for op in ARITH:
        for si, (sa, sb) in enumerate(shapes):
            a, b = rand("f32", sa), rand("f32", sb)
            add_case(f"{op.lower()}_f32_{si}", op, [tensor("f32", a), tensor("f32", b)],
                     [arith_expected(op, a, b, "f32")])
        for dt in ["f16", "bf16", "f64"] + INTS:
            a, b = rand(dt, [3, 4], hi=9), rand(dt, [4], hi=9)
            if op == "Sub" and dt in INTS and dt not in SINTS:
                a, b = (a + 9).astype(NP[dt]), b  # keep unsigned differences non-negative: no huge u64
            add_case(f"{op.lower()}_{dt}", op, [tensor(dt, a), tensor(dt, b)], [arith_expected(op, a, b, dt)])
        # symbolic dims: the rule works on N, the kernel on N = 2
        a, b = rand("f32", [2, 3]), rand("f32", [3])
        add_case(f"{op.lower()}_sym", op, [tensor("f32", a, sym=["N", 3]), tensor("f32", b)],
                 [arith_expected(op, a, b, "f32")])
        # long rows: several 256-element chunks, direct f32 rows, broadcast rows
        a, b = rand("f32", [2, 600]), rand("f32", [600])
        add_case(f"{op.lower()}_f32_long", op, [tensor("f32", a), tensor("f32", b)], [arith_expected(op, a, b, "f32")])
        a, b = rand("bf16", [2, 600]), rand("bf16", [2, 1])
        add_case(f"{op.lower()}_bf16_long", op, [tensor("bf16", a), tensor("bf16", b)],
                 [arith_expected(op, a, b, "bf16")])
        a, b = rand("f32", [517]), rand("f32", [])
        add_case(f"{op.lower()}_f32_scalar_long", op, [tensor("f32", a), tensor("f32", b)],
                 [arith_expected(op, a, b, "f32")])
        # constant operand (a weight)
        a, b = rand("i64", [3], hi=20), rand("i64", [1], hi=5)
        add_case(f"{op.lower()}_i64_const", op, [tensor("i64", a), tensor("i64", b, const=True)],
                 [arith_expected(op, a, b, "i64")])
        # zero-size dim
        add_case(f"{op.lower()}_empty", op, [tensor("f32", np.zeros([0, 3], np.float32)), tensor("f32", rand("f32", [3]))],
                 [tensor("f32", np.zeros([0, 3]))])
    # integer wrap-around: int8 100 + 100 = -56; uint8 200 + 100 = 44; int32 overflow of Mul
    add_case("add_i8_wrap", "Add", [tensor("i8", np.array([100, -100, 127], np.int8)), tensor("i8", np.array([100, -100, 1], np.int8))],
             [tensor("i8", np.array([-56, 56, -128]))])
    add_case("add_u8_wrap", "Add", [tensor("u8", np.array([200, 255], np.uint8)), tensor("u8", np.array([100, 1], np.uint8))],
             [tensor("u8", np.array([44, 0]))])
    add_case("mul_i32_wrap", "Mul", [tensor("i32", np.array([65536, -3], np.int32)), tensor("i32", np.array([65536, 5], np.int32))],
             [tensor("i32", np.array([0, -15]))])
    # integer Div truncates toward zero (C / ONNX Runtime), not floor (numpy //)
    a = np.array([-7, 7, -7, 7, 0, -1], np.int64)
    b = np.array([2, -2, -2, 2, 5, 3], np.int64)
    add_case("div_i64_trunc", "Div", [tensor("i64", a), tensor("i64", b)], [tensor("i64", np.array([-3, -3, 3, 3, 0, 0]))])
    add_case("div_i32_trunc", "Div", [tensor("i32", a.astype(np.int32)), tensor("i32", b.astype(np.int32))],
             [tensor("i32", np.array([-3, -3, 3, 3, 0, 0]))])
    add_case("div_i8_min_by_minus1", "Div", [tensor("i8", np.array([-128], np.int8)), tensor("i8", np.array([-1], np.int8))],
             [tensor("i8", np.array([-128]))])
    add_case("div_i64_by_zero", "Div", [tensor("i64", np.array([1, 2])), tensor("i64", np.array([1, 0]))],
             [tensor("i64", np.array([0, 0]))], error="VKL_ERR_INVALID_ARGUMENT", data_error=True)
    add_case("div_f32_by_zero", "Div", [tensor("f32", np.array([1.0, -1.0, 0.0, 2.0], np.float32)), tensor("f32", np.zeros(4, np.float32))],
             [tensor("f32", np.array([np.inf, -np.inf, np.nan, np.inf]))])
    # errors
    add_case("add_bad_broadcast", "Add", [tensor("f32", rand("f32", [2, 3])), tensor("f32", rand("f32", [4]))],
             [tensor("f32", np.zeros([2, 3]))], error="VKL_ERR_SHAPE")
    add_case("add_dtype_mismatch", "Add", [tensor("f32", rand("f32", [3])), tensor("f16", rand("f16", [3]))],
             [tensor("f32", np.zeros([3]))], error="VKL_ERR_SHAPE")
    add_case("add_bool_unsupported", "Add", [tensor("bool", rand("bool", [3])), tensor("bool", rand("bool", [3]))],
             [tensor("bool", np.zeros([3]))], error="VKL_ERR_UNSUPPORTED")
    # symbolic dims N and M broadcast to max(N, M): fine when one is 1 at run time...
    a, b = rand("f32", [3, 2]), rand("f32", [1, 2])
    add_case("add_sym_max_ok", "Add", [tensor("f32", a, sym=["N", 2]), tensor("f32", b, sym=["M", 2])],
             [arith_expected("Add", a, b, "f32")])
    # ...and a run-time shape error when they disagree
    add_case("add_sym_max_mismatch", "Add", [tensor("f32", rand("f32", [3, 2]), sym=["N", 2]),
                                             tensor("f32", rand("f32", [2, 2]), sym=["M", 2])],
             [tensor("f32", np.zeros([3, 2]))], error="VKL_ERR_SHAPE")


def gen_pow():
    a, b = rand("f32", [2, 3], 0.5, 2.0, signed=False), rand("f32", [2, 3], -2.0, 2.0, signed=False)
    # powf is within an ulp or two of the true power; the default 1e-5 of max|ref| holds.
    add_case("pow_f32", "Pow", [tensor("f32", a), tensor("f32", b)], [out_of("f32", a ** b)])
    a = rand("f32", [2, 3], 0.5, 3.0)
    e = np.array([2, 3, -1], np.int64)
    add_case("pow_f32_int_exponent", "Pow", [tensor("f32", a), tensor("i64", e)], [out_of("f32", a ** e.astype(np.float64))])
    add_case("pow_f32_neg_base_frac_exp", "Pow", [tensor("f32", np.array([-2.0], np.float32)), tensor("f32", np.array([0.5], np.float32))],
             [tensor("f32", np.array([np.nan]))])
    for dt in ["f16", "bf16", "f64"]:
        a, b = rand(dt, [4], 0.5, 2.0, signed=False), rand(dt, [4], -2.0, 2.0, signed=False)
        add_case(f"pow_{dt}", "Pow", [tensor(dt, a), tensor(dt, b)], [out_of(dt, a.astype(np.float64) ** b.astype(np.float64))])
    a = np.array([3, -3, 2, 7, 0, 5], np.int64)
    e = np.array([20, 3, 62, 0, 0, 1], np.int64)
    add_case("pow_i64_exact", "Pow", [tensor("i64", a), tensor("i64", e)],
             [tensor("i64", wrap(np.array([int(x) ** int(y) for x, y in zip(a, e)], dtype=object), "i64"))])
    a32 = np.array([3, -3, 2, 10], np.int32)
    e32 = np.array([19, 3, 31, 10], np.int32)
    add_case("pow_i32_wrap", "Pow", [tensor("i32", a32), tensor("i32", e32)],
             [tensor("i32", wrap(np.array([int(x) ** int(y) for x, y in zip(a32, e32)], dtype=object), "i32"))])
    # negative integer exponent: 1/x^n truncated toward zero
    add_case("pow_i64_negative_exponent", "Pow", [tensor("i64", np.array([1, -1, -1, 2, -5])), tensor("i64", np.array([-3, -3, -2, -1, -1]))],
             [tensor("i64", np.array([1, -1, 1, 0, 0]))])
    add_case("pow_i64_zero_negative", "Pow", [tensor("i64", np.array([0])), tensor("i64", np.array([-1]))],
             [tensor("i64", np.array([0]))], error="VKL_ERR_INVALID_ARGUMENT", data_error=True)
    # integer base, float exponent: result truncated toward zero in the base's dtype
    add_case("pow_i32_f32_exponent", "Pow", [tensor("i32", np.array([2, 9, 10, -8], np.int32)), tensor("f32", np.array([0.5, 0.5, 2.0, 1.0], np.float32))],
             [tensor("i32", np.array([1, 3, 100, -8]))])
    # broadcast with a scalar exponent of another dtype
    a = rand("f32", [2, 3], 0.5, 2.0)
    add_case("pow_f32_scalar_i32", "Pow", [tensor("f32", a, sym=["N", 3]), tensor("i32", np.array(2, np.int32))],
             [out_of("f32", a.astype(np.float64) ** 2)])


CMP = {"Equal": np.equal, "Greater": np.greater, "GreaterOrEqual": np.greater_equal, "Less": np.less,
       "LessOrEqual": np.less_equal}


def gen_compare():
    for op, fn in CMP.items():
        a = rand("f32", [2, 3, 4])
        b = a.copy()
        b[0] = rand("f32", [3, 4])  # half equal, half random
        add_case(f"{op.lower()}_f32", op, [tensor("f32", a), tensor("f32", b)], [tensor("bool", fn(a, b))])
        a, b = rand("i64", [3, 4], hi=3), rand("i64", [4], hi=3)
        add_case(f"{op.lower()}_i64_broadcast", op, [tensor("i64", a, sym=["S", 4]), tensor("i64", b)], [tensor("bool", fn(a, b))])
        for dt in ["f16", "bf16", "f64", "i32", "i8", "u8"]:
            a, b = rand(dt, [5], hi=3), rand(dt, [5], hi=3)
            a[0] = b[0]
            add_case(f"{op.lower()}_{dt}", op, [tensor(dt, a), tensor(dt, b)], [tensor("bool", fn(a, b))])
        nan = np.array([np.nan, 1.0, np.nan], np.float32)
        add_case(f"{op.lower()}_nan", op, [tensor("f32", nan), tensor("f32", np.array([np.nan, np.nan, 1.0], np.float32))],
                 [tensor("bool", np.zeros(3, bool))])
    a, b = rand("bool", [2, 3]), rand("bool", [3])
    add_case("equal_bool", "Equal", [tensor("bool", a), tensor("bool", b)], [tensor("bool", a == b)])
    add_case("greater_bool_unsupported", "Greater", [tensor("bool", a), tensor("bool", b)],
             [tensor("bool", a)], error="VKL_ERR_UNSUPPORTED")
    add_case("less_bad_broadcast", "Less", [tensor("f32", rand("f32", [3])), tensor("f32", rand("f32", [2]))],
             [tensor("bool", np.zeros(3, bool))], error="VKL_ERR_SHAPE")


def gen_logic():
    for op, fn in {"And": np.logical_and, "Or": np.logical_or}.items():
        a, b = rand("bool", [2, 3, 4]), rand("bool", [3, 1])
        add_case(f"{op.lower()}_bool", op, [tensor("bool", a, sym=["B", 3, 4]), tensor("bool", b)], [tensor("bool", fn(a, b))])
        add_case(f"{op.lower()}_f32_unsupported", op, [tensor("f32", rand("f32", [2])), tensor("f32", rand("f32", [2]))],
                 [tensor("bool", np.zeros(2, bool))], error="VKL_ERR_UNSUPPORTED")


def gen_maxmin():
    for op, fn in {"Max": np.maximum, "Min": np.minimum}.items():
        a = rand("f32", [2, 3])
        add_case(f"{op.lower()}_one_input", op, [tensor("f32", a)], [out_of("f32", a)])
        a, b = rand("f32", [2, 3]), rand("f32", [3])
        add_case(f"{op.lower()}_two", op, [tensor("f32", a), tensor("f32", b)], [out_of("f32", fn(a, b))])
        # the largest shape comes last: the first pair broadcasts into the output
        a, b, c = rand("f32", [3]), rand("f32", [1, 1]), rand("f32", [2, 4, 3])
        add_case(f"{op.lower()}_three", op, [tensor("f32", a), tensor("f32", b), tensor("f32", c, sym=["A", "B", 3])],
                 [out_of("f32", fn(fn(a, b), c))])
        for dt in ["f16", "bf16", "f64", "i64", "i32", "i8", "u8", "u32"]:
            a, b, c = rand(dt, [4], hi=50), rand(dt, [4], hi=50), rand(dt, [1], hi=50)
            add_case(f"{op.lower()}_{dt}", op, [tensor(dt, a), tensor(dt, b), tensor(dt, c)],
                     [tensor(dt, fn(fn(a, b), c))] if dt in INTS else [out_of(dt, fn(fn(a, b), c))])
        x = np.array([np.nan, 1.0, 2.0], np.float32)
        y = np.array([1.0, np.nan, 1.0], np.float32)
        add_case(f"{op.lower()}_nan", op, [tensor("f32", x), tensor("f32", y)], [out_of("f32", fn(x, y))])
        add_case(f"{op.lower()}_dtype_mismatch", op, [tensor("f32", x), tensor("f64", y)], [tensor("f32", x)],
                 error="VKL_ERR_SHAPE")


def gen_where():
    c, x, y = rand("bool", [2, 1, 4]), rand("f32", [3, 1]), rand("f32", [2, 3, 4])
    add_case("where_f32_broadcast3", "Where", [tensor("bool", c), tensor("f32", x), tensor("f32", y, sym=["B", "S", 4])],
             [out_of("f32", np.where(c, x, y))])
    c = rand("bool", [2, 300])
    x = rand("f32", [2, 300])
    add_case("where_f32_scalar_y", "Where", [tensor("bool", c), tensor("f32", x), tensor("f32", np.array(-np.inf, np.float32))],
             [out_of("f32", np.where(c, x, -np.inf))])
    for dt in ["f16", "bf16", "f64", "i64", "i32", "i8", "u8", "bool"]:
        c, x, y = rand("bool", [2, 3]), rand(dt, [2, 3], hi=9), rand(dt, [3], hi=9)
        r = np.where(c, x, y)
        add_case(f"where_{dt}", "Where", [tensor("bool", c), tensor(dt, x), tensor(dt, y)],
                 [tensor(dt, r) if dt in INTS + ["bool"] else out_of(dt, r)])
    c = rand("bool", [4])
    x = np.array([0x38, 0x40, 0x7E, 0x80], np.uint8)  # fp8 codes are moved, not converted
    y = np.array([0x01, 0xC0, 0x7F, 0x00], np.uint8)
    add_case("where_fp8e4m3", "Where", [tensor("bool", c), tensor("fp8e4m3", x), tensor("fp8e4m3", y)],
             [tensor("fp8e4m3", np.where(c, x, y))])
    add_case("where_cond_not_bool", "Where", [tensor("i32", np.ones(2, np.int32)), tensor("f32", rand("f32", [2])),
                                              tensor("f32", rand("f32", [2]))], [tensor("f32", np.zeros(2))],
             error="VKL_ERR_UNSUPPORTED")
    add_case("where_xy_mismatch", "Where", [tensor("bool", rand("bool", [2])), tensor("f32", rand("f32", [2])),
                                            tensor("f16", rand("f16", [2]))], [tensor("f32", np.zeros(2))],
             error="VKL_ERR_SHAPE")
    add_case("where_bad_broadcast", "Where", [tensor("bool", rand("bool", [3])), tensor("f32", rand("f32", [2])),
                                              tensor("f32", rand("f32", [1]))], [tensor("f32", np.zeros(3))],
             error="VKL_ERR_SHAPE")


def silu(x):
    return x / (1.0 + np.exp(-x))


def gen_silu_mul():
    g, u = rand("f32", [2, 3, 8], 0.1, 4.0), rand("f32", [2, 3, 8])
    add_case("silu_mul_f32", "SiluMul", [tensor("f32", g, sym=["B", "S", 8]), tensor("f32", u, sym=["B", "S", 8])],
             [out_of("f32", silu(g) * u)], domain="vkllm")
    g, u = rand("f32", [3, 600], 0.1, 4.0), rand("f32", [600])
    add_case("silu_mul_f32_broadcast", "SiluMul", [tensor("f32", g), tensor("f32", u)], [out_of("f32", silu(g) * u)],
             domain="vkllm")
    g = np.array([-100.0, -20.0, 0.0, 20.0, 100.0], np.float32)
    u = np.full(5, 2.0, np.float32)
    add_case("silu_mul_f32_extremes", "SiluMul", [tensor("f32", g), tensor("f32", u)],
             [out_of("f32", silu(g.astype(np.float64)) * u)], domain="vkllm")
    for dt in ["f16", "bf16", "f64"]:
        g, u = rand(dt, [4, 5], 0.1, 4.0), rand(dt, [4, 5])
        add_case(f"silu_mul_{dt}", "SiluMul", [tensor(dt, g), tensor(dt, u)],
                 [out_of(dt, silu(g.astype(np.float64)) * u)], domain="vkllm")
    add_case("silu_mul_i32_unsupported", "SiluMul", [tensor("i32", np.ones(2, np.int32)), tensor("i32", np.ones(2, np.int32))],
             [tensor("i32", np.ones(2))], domain="vkllm", error="VKL_ERR_UNSUPPORTED")


# --- unary ------------------------------------------------------------------

def erf(x):
    return np.vectorize(math.erf)(x) if np.size(x) else np.zeros(np.shape(x))


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# op -> (numpy function on float64, input range (lo, hi, signed))
FLOAT_UNARY = {
    "Sqrt": (np.sqrt, (0.1, 4.0, False)),
    "Reciprocal": (lambda x: 1.0 / x, (0.5, 2.0, True)),
    "Exp": (np.exp, (0.0, 3.0, True)),
    "Log": (np.log, (0.1, 5.0, False)),
    "Cos": (np.cos, (0.0, 7.0, True)),
    "Sin": (np.sin, (0.0, 7.0, True)),
    "Erf": (erf, (0.0, 3.0, True)),
    "Tanh": (np.tanh, (0.0, 4.0, True)),
    "Sigmoid": (sigmoid, (0.0, 6.0, True)),
    "Relu": (lambda x: np.maximum(x, 0.0), (0.1, 3.0, True)),
    "Neg": (lambda x: -x, (0.1, 3.0, True)),
    "Abs": (np.abs, (0.1, 3.0, True)),
    "Gelu": (gelu, (0.0, 4.0, True)),
}


def gen_float_unary():
    for op, (fn, (lo, hi, signed)) in FLOAT_UNARY.items():
        for dt in FLOATS:
            x = rand(dt, [2, 3, 5], lo, hi, signed)
            add_case(f"{op.lower()}_{dt}", op, [tensor(dt, x, sym=["N", 3, 5] if dt == "f32" else None)],
                     [out_of(dt, fn(x.astype(np.float64)))])
        x = rand("f32", [700], lo, hi, signed)
        add_case(f"{op.lower()}_f32_long", op, [tensor("f32", x)], [out_of("f32", fn(x.astype(np.float64)))])
        add_case(f"{op.lower()}_empty", op, [tensor("f32", np.zeros([2, 0], np.float32))], [tensor("f32", np.zeros([2, 0]))])
    specials = np.array([-0.0, 0.0, -1.0, np.inf, -np.inf, np.nan], np.float32)
    with np.errstate(all="ignore"):
        for op, fn in [("Sqrt", np.sqrt), ("Log", np.log), ("Reciprocal", lambda x: 1.0 / x), ("Exp", np.exp),
                       ("Sigmoid", sigmoid), ("Tanh", np.tanh), ("Relu", lambda x: np.where(x < 0, 0.0, x)),
                       ("Abs", np.abs), ("Erf", lambda x: np.array([math.erf(v) for v in x]))]:
            add_case(f"{op.lower()}_specials", op, [tensor("f32", specials)], [out_of("f32", fn(specials.astype(np.float64)))])
    x = np.array([-100.0, -30.0, 30.0, 100.0], np.float32)
    add_case("sigmoid_saturates", "Sigmoid", [tensor("f32", x)], [out_of("f32", sigmoid(x.astype(np.float64)))])
    for dt in FLOATS:
        x = rand(dt, [3, 7], 0.0, 4.0)
        add_case(f"gelu_tanh_{dt}", "Gelu", [tensor(dt, x)], [out_of(dt, gelu_tanh(x.astype(np.float64)))],
                 attrs={"approximate": {"string": "tanh"}})
    x = rand("f32", [6], 0.0, 4.0)
    add_case("gelu_none_explicit", "Gelu", [tensor("f32", x)], [out_of("f32", gelu(x.astype(np.float64)))],
             attrs={"approximate": {"string": "none"}})
    add_case("gelu_bad_approximate", "Gelu", [tensor("f32", x)], [tensor("f32", x)],
             attrs={"approximate": {"string": "fast"}}, error="VKL_ERR_FORMAT")
    add_case("sqrt_i32_unsupported", "Sqrt", [tensor("i32", np.ones(2, np.int32))], [tensor("i32", np.ones(2))],
             error="VKL_ERR_UNSUPPORTED")
    add_case("erf_i64_unsupported", "Erf", [tensor("i64", np.ones(2, np.int64))], [tensor("i64", np.ones(2))],
             error="VKL_ERR_UNSUPPORTED")


def gen_int_unary():
    for dt in SINTS:
        x = rand(dt, [3, 4], hi=3)
        x[0, 0] = np.iinfo(NP[dt]).min  # |MIN| and -MIN wrap to MIN, as in numpy
        add_case(f"neg_{dt}", "Neg", [tensor(dt, x)], [tensor(dt, wrap(-x.astype(object), dt))])
        add_case(f"abs_{dt}", "Abs", [tensor(dt, x)], [tensor(dt, wrap(np.abs(x.astype(object)), dt))])
        add_case(f"relu_{dt}", "Relu", [tensor(dt, x)], [tensor(dt, np.maximum(x, 0))])
    for dt in ["u8", "u16", "u32", "u64"]:
        x = rand(dt, [5], hi=200)
        add_case(f"abs_{dt}", "Abs", [tensor(dt, x)], [tensor(dt, x)])
    add_case("neg_u8_unsupported", "Neg", [tensor("u8", np.ones(2, np.uint8))], [tensor("u8", np.ones(2))],
             error="VKL_ERR_UNSUPPORTED")
    add_case("relu_u8_unsupported", "Relu", [tensor("u8", np.ones(2, np.uint8))], [tensor("u8", np.ones(2))],
             error="VKL_ERR_UNSUPPORTED")
    x = rand("bool", [3, 4])
    add_case("not_bool", "Not", [tensor("bool", x, sym=["K", 4])], [tensor("bool", ~x)])
    add_case("not_i32_unsupported", "Not", [tensor("i32", np.ones(2, np.int32))], [tensor("i32", np.ones(2))],
             error="VKL_ERR_UNSUPPORTED")


def gen_clip():
    x = rand("f32", [3, 4], 0.0, 3.0)
    lo, hi = np.array(-1.0, np.float32), np.array(1.5, np.float32)
    add_case("clip_f32_both", "Clip", [tensor("f32", x, sym=["N", 4]), tensor("f32", lo), tensor("f32", hi)],
             [out_of("f32", np.minimum(np.maximum(x, lo), hi))])
    add_case("clip_f32_min_only", "Clip", [tensor("f32", x), tensor("f32", lo, const=True)], [out_of("f32", np.maximum(x, lo))])
    add_case("clip_f32_max_only", "Clip", [tensor("f32", x), None, tensor("f32", hi, const=True)],
             [out_of("f32", np.minimum(x, hi))])
    add_case("clip_f32_none", "Clip", [tensor("f32", x)], [out_of("f32", x)])
    # min > max: every element becomes max (ONNX: min(max(x, min), max))
    add_case("clip_f32_min_gt_max", "Clip", [tensor("f32", x), tensor("f32", np.array(2.0, np.float32)), tensor("f32", np.array(-2.0, np.float32))],
             [out_of("f32", np.full(x.shape, -2.0))])
    add_case("clip_f32_bound_shape_1", "Clip", [tensor("f32", x), tensor("f32", np.array([0.0], np.float32))],
             [out_of("f32", np.maximum(x, 0.0))])
    xn = np.array([np.nan, -5.0, 5.0], np.float32)
    add_case("clip_f32_nan", "Clip", [tensor("f32", xn), tensor("f32", lo), tensor("f32", hi)],
             [out_of("f32", np.array([np.nan, -1.0, 1.5]))])
    for dt in ["f16", "bf16", "f64"]:
        x = rand(dt, [6], 0.0, 3.0)
        l, h = rounded(np.array(-0.5), dt), rounded(np.array(1.25), dt)
        add_case(f"clip_{dt}", "Clip", [tensor(dt, x), tensor(dt, l), tensor(dt, h)],
                 [out_of(dt, np.clip(x.astype(np.float64), l, h))])
    for dt in ["i64", "i32", "i8", "u8", "u64"]:
        x = rand(dt, [7], hi=100)
        l, h = np.array(10, NP[dt]), np.array(60, NP[dt])
        add_case(f"clip_{dt}", "Clip", [tensor(dt, x), tensor(dt, l), tensor(dt, h)], [tensor(dt, np.clip(x, l, h))])
        add_case(f"clip_{dt}_max_only", "Clip", [tensor(dt, x), None, tensor(dt, h)], [tensor(dt, np.minimum(x, h))])
    add_case("clip_min_not_scalar", "Clip", [tensor("f32", x.astype(np.float32)), tensor("f32", np.zeros(2, np.float32))],
             [tensor("f32", x)], error="VKL_ERR_SHAPE")
    add_case("clip_min_dtype_mismatch", "Clip", [tensor("f32", rand("f32", [2])), tensor("f64", np.zeros(1))],
             [tensor("f32", np.zeros(2))], error="VKL_ERR_SHAPE")
    # a symbolic bound shape is only known at run time
    add_case("clip_min_runtime_not_scalar", "Clip", [tensor("f32", rand("f32", [2])), tensor("f32", np.zeros(2, np.float32), sym=["K"])],
             [tensor("f32", np.zeros(2))], error="VKL_ERR_SHAPE")


def gen_identity_dropout():
    for dt in ["f32", "f16", "i64", "bool", "u8"]:
        x = rand(dt, [2, 3], hi=9)
        add_case(f"identity_{dt}", "Identity", [tensor(dt, x, sym=["N", 3])], [tensor(dt, x) if dt not in FLOATS else out_of(dt, x)])
    codes = np.arange(0, 256, 37, dtype=np.uint8)
    add_case("identity_fp8e5m2", "Identity", [tensor("fp8e5m2", codes)], [tensor("fp8e5m2", codes)])
    add_case("identity_empty", "Identity", [tensor("f32", np.zeros([0], np.float32))], [tensor("f32", np.zeros([0]))])
    x = rand("f32", [2, 5])
    mask = tensor("bool", np.ones([2, 5], bool))
    add_case("dropout_default", "Dropout", [tensor("f32", x, sym=["B", 5])], [out_of("f32", x), mask])
    add_case("dropout_no_mask", "Dropout", [tensor("f32", x)], [out_of("f32", x), None])
    add_case("dropout_ratio_eval", "Dropout", [tensor("f32", x), tensor("f32", np.array(0.3, np.float32), const=True),
                                               tensor("bool", np.array(False), const=True)],
             [out_of("f32", x), mask], attrs={"seed": {"int": 7}})
    # training with ratio 0 is the identity (ONNX's reference does the same)
    add_case("dropout_training_ratio0", "Dropout", [tensor("f32", x), tensor("f32", np.array(0.0, np.float32)),
                                                    tensor("bool", np.array(True))], [out_of("f32", x), mask])
    for dt in ["f16", "bf16", "f64"]:
        xd = rand(dt, [4])
        add_case(f"dropout_{dt}", "Dropout", [tensor(dt, xd), tensor("f16", np.array(0.1, np.float16))],
                 [out_of(dt, xd), tensor("bool", np.ones(4, bool))])
    codes = np.array([0x38, 0x7E, 0x80, 0x01], np.uint8)
    add_case("dropout_fp8e4m3", "Dropout", [tensor("fp8e4m3", codes)], [tensor("fp8e4m3", codes), tensor("bool", np.ones(4, bool))])
    add_case("dropout_training_const", "Dropout", [tensor("f32", x), None, tensor("bool", np.array(True), const=True)],
             [out_of("f32", x), mask], error="VKL_ERR_UNSUPPORTED")
    add_case("dropout_training_runtime", "Dropout", [tensor("f32", x), tensor("f32", np.array(0.5, np.float32)),
                                                     tensor("bool", np.array(True))],
             [out_of("f32", x), mask], error="VKL_ERR_UNSUPPORTED", data_error=True)
    add_case("dropout_i32_unsupported", "Dropout", [tensor("i32", np.ones(2, np.int32))], [tensor("i32", np.ones(2)), None],
             error="VKL_ERR_UNSUPPORTED")


# --- Cast -------------------------------------------------------------------

def cast_values(x, src, dst):
    """Expected Cast output values (as held by dst), computed in float64/exact ints."""
    if dst == "bool":
        return np.asarray(x).astype(np.float64) != 0 if src in FLOATS else np.asarray(x) != 0
    if dst in FLOATS:
        return rounded(np.asarray(x).astype(np.float64), dst)  # test ints are exact in float64
    if src in FLOATS:  # truncate, saturate to the target's range, NaN -> 0
        info = np.iinfo(NP[dst])
        v = np.asarray(x, dtype=np.float64)
        t = np.where(np.isnan(v), 0.0, np.trunc(np.clip(v, float(info.min), float(info.max))))
        return np.array([min(max(int(a), int(info.min)), int(info.max)) for a in t.reshape(-1)], dtype=object).reshape(v.shape)
    return wrap(np.asarray(x).astype(object), dst)


def cast_input(src):
    """A few values of src dtype that exercise rounding, wrap and truncation."""
    if src in FLOATS:
        v = np.array([0.0, -0.0, 1.5, -2.5, 2.7, -2.7, 100.25, -300.75, 65.0, 0.333], np.float64)
        return rounded(v, src)
    if src == "bool":
        return np.array([0, 1, 1, 0], np.bool_)
    if src in ["u8", "u16", "u32", "u64"]:
        return np.array([0, 1, 7, 200, 255], NP[src])
    return np.array([0, 1, -1, 100, -128, 127], NP[src])


def gen_cast():
    all_plain = FLOATS + INTS + ["bool"]
    for src in all_plain:
        for dst in all_plain:
            x = cast_input(src)
            if dst == "u64" and src in SINTS + FLOATS:
                x = x[np.asarray(x, dtype=np.float64) >= 0]  # wrapped u64 tops do not fit the JSON reader
            want = cast_values(x, src, dst)
            out = tensor(dst, want) if dst in INTS + ["bool"] else out_of(dst, want)
            add_case(f"cast_{src}_to_{dst}", "Cast", [tensor(src, x)], [out], attrs={"to": {"int": DTYPE_ENUM[dst]}})
    # float -> int saturation and NaN (documented: saturate, NaN -> 0)
    v = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 3.99, -3.99], np.float32)
    for dst in ["i32", "i8", "u8", "i64", "u16"]:
        x = v[1:] if dst != "i64" else v[2:]  # INT64_MAX does not survive the JSON reader's double
        add_case(f"cast_f32_to_{dst}_saturate", "Cast", [tensor("f32", x)], [tensor(dst, cast_values(x, "f32", dst))],
                 attrs={"to": {"int": DTYPE_ENUM[dst]}})
    add_case("cast_f32_nan_to_i32", "Cast", [tensor("f32", v[:1])], [tensor("i32", np.zeros(1))], attrs={"to": {"int": 6}})
    add_case("cast_f32_to_bool_nan", "Cast", [tensor("f32", np.array([np.nan, 0.0, -0.0, 1e-30], np.float32))],
             [tensor("bool", np.array([1, 0, 0, 1]))], attrs={"to": {"int": DTYPE_ENUM["bool"]}})
    # f32 -> f16 overflow/underflow and f32 -> bf16 rounding
    v = np.array([70000.0, -70000.0, 1e-8, 65504.0, 1.0009765625, np.nan], np.float32)
    add_case("cast_f32_to_f16_range", "Cast", [tensor("f32", v)], [out_of("f16", v)], attrs={"to": {"int": 2}})
    v = rand("f32", [2, 300])
    add_case("cast_f32_to_f16_long", "Cast", [tensor("f32", v, sym=["B", 300])], [out_of("f16", v)], attrs={"to": {"int": 2}})
    add_case("cast_i64_to_i32_long", "Cast", [tensor("i64", np.arange(-300, 300, dtype=np.int64) * 9999991)],
             [tensor("i32", wrap(np.arange(-300, 300).astype(object) * 9999991, "i32"))], attrs={"to": {"int": 6}})
    add_case("cast_empty", "Cast", [tensor("f32", np.zeros([0, 2], np.float32))], [tensor("i64", np.zeros([0, 2]))],
             attrs={"to": {"int": 5}})
    add_case("cast_to_quantized", "Cast", [tensor("f32", np.ones(2, np.float32))], [tensor("f32", np.ones(2))],
             attrs={"to": {"int": 32}}, error="VKL_ERR_UNSUPPORTED")
    add_case("cast_to_invalid", "Cast", [tensor("f32", np.ones(2, np.float32))], [tensor("f32", np.ones(2))],
             attrs={"to": {"int": 99}}, error="VKL_ERR_FORMAT")
    add_case("cast_missing_to", "Cast", [tensor("f32", np.ones(2, np.float32))], [tensor("f32", np.ones(2))],
             error="VKL_ERR_FORMAT")
    # CastLike: the target dtype is input 1's
    x = cast_input("f32")
    for dst in ["i32", "f16", "bool", "u8", "f64"]:
        like = tensor(dst, np.zeros([1], NP[dst]), const=True)
        want = cast_values(x, "f32", dst)
        add_case(f"cast_like_f32_to_{dst}", "CastLike", [tensor("f32", x), like],
                 [tensor(dst, want) if dst in INTS + ["bool"] else out_of(dst, want)])
    xi = cast_input("i64")
    add_case("cast_like_i64_to_bf16", "CastLike", [tensor("i64", xi), tensor("bf16", np.zeros(3))],
             [out_of("bf16", cast_values(xi, "i64", "bf16"))])


# fp8: the value of every code, then round-to-nearest-even by search.
FP8 = {"fp8e4m3": dict(mbits=3, bias=7, has_inf=False), "fp8e5m2": dict(mbits=2, bias=15, has_inf=True)}


def fp8_value(fmt, code):
    f = FP8[fmt]
    mb, bias = f["mbits"], f["bias"]
    sign = -1.0 if code & 0x80 else 1.0
    e, m = (code & 0x7F) >> mb, code & ((1 << mb) - 1)
    emax = (1 << (7 - mb)) - 1
    if f["has_inf"] and e == emax:
        return math.nan if m else sign * math.inf
    if not f["has_inf"] and e == emax and m == (1 << mb) - 1:
        return math.nan
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - mb)
    return sign * (1 + m / (1 << mb)) * 2.0 ** (e - bias)


def fp8_max(fmt):
    return max(v for v in (fp8_value(fmt, c) for c in range(128)) if math.isfinite(v))


def fp8_encode(fmt, x, saturate):
    """ONNX Cast to fp8: RNE to the nearest code; past the largest finite value
    (after rounding) -> max with saturate, else NaN (e4m3fn) / inf (e5m2)."""
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return 0x7F | sign
    inf_code = 0x7C if FP8[fmt]["has_inf"] else 0x7F
    mx = fp8_max(fmt)
    max_code = next(c for c in range(128) if fp8_value(fmt, c) == mx)
    if math.isinf(x):
        return sign | (max_code if saturate else inf_code)
    a = abs(x)
    # candidates: every finite non-negative code, plus the first value past max
    # (max + the spacing of max's binade) standing for "overflow"
    spacing = mx - fp8_value(fmt, max_code - 1)
    cands = [(fp8_value(fmt, c), c) for c in range(max_code + 1)] + [(mx + spacing, max_code + 1)]
    best = min(cands, key=lambda vc: (abs(vc[0] - a), vc[1] & 1))  # ties: even code
    if best[1] > max_code:
        return sign | (max_code if saturate else inf_code)
    return sign | best[1]


def gen_fp8():
    codes = np.arange(256, dtype=np.uint8)
    for fmt in FP8:
        vals = np.array([fp8_value(fmt, int(c)) for c in codes])
        add_case(f"cast_{fmt}_to_f32_all_codes", "Cast", [tensor(fmt, codes)], [tensor("f32", vals)], attrs={"to": {"int": 1}})
        add_case(f"cast_{fmt}_to_f16", "Cast", [tensor(fmt, codes[:120])], [out_of("f16", vals[:120])], attrs={"to": {"int": 2}})
        mx = fp8_max(fmt)
        tiny = fp8_value(fmt, 1)
        x = [0.0, -0.0, 1.0, -1.0, 0.3, -0.3, mx, -mx, mx * 1.03, mx * 1.07, mx * 1.5, -mx * 4, 1e9,
             math.inf, -math.inf, math.nan, tiny, tiny / 2, tiny * 0.51, tiny * 1.5, tiny * 2.5, -tiny * 0.49,
             1.0625, 1.1875, 3.14159, 17.5, 0.01]
        x = list(np.array(x, np.float32).astype(np.float64))
        for sat in (1, 0):
            want = np.array([fp8_encode(fmt, v, sat) for v in x], np.uint8)
            add_case(f"cast_f32_to_{fmt}_sat{sat}", "Cast", [tensor("f32", np.array(x, np.float32))], [tensor(fmt, want)],
                     attrs={"to": {"int": DTYPE_ENUM[fmt]}, "saturate": {"int": sat}})
        r = rand("f32", [64], 0.001, 500.0)
        want = np.array([fp8_encode(fmt, float(v), 1) for v in r], np.uint8)
        add_case(f"cast_f32_to_{fmt}_random", "Cast", [tensor("f32", r)], [tensor(fmt, want)],
                 attrs={"to": {"int": DTYPE_ENUM[fmt]}})
        h = rand("f16", [16], 0.01, 100.0)
        want = np.array([fp8_encode(fmt, float(v), 1) for v in h], np.uint8)
        add_case(f"cast_f16_to_{fmt}", "Cast", [tensor("f16", h)], [tensor(fmt, want)], attrs={"to": {"int": DTYPE_ENUM[fmt]}})
        add_case(f"cast_like_f32_to_{fmt}_nosat", "CastLike", [tensor("f32", np.array([1e6, 2.0], np.float32)), tensor(fmt, codes[:1])],
                 [tensor(fmt, np.array([fp8_encode(fmt, 1e6, 0), fp8_encode(fmt, 2.0, 0)], np.uint8))],
                 attrs={"saturate": {"int": 0}})
    # fp8 -> fp8 goes through the exact value
    src = np.array([0x38, 0x7E, 0x01, 0xC4, 0x7F], np.uint8)  # e4m3: 1, 448, 2^-9, -3, NaN
    want = np.array([fp8_encode("fp8e5m2", fp8_value("fp8e4m3", int(c)), 1) for c in src], np.uint8)
    add_case("cast_fp8e4m3_to_fp8e5m2", "Cast", [tensor("fp8e4m3", src)], [tensor("fp8e5m2", want)], attrs={"to": {"int": 15}})
    add_case("cast_fp8e5m2_to_i32", "Cast", [tensor("fp8e5m2", np.array([0x3C, 0x4A, 0xC9, 0x7C], np.uint8))],
             [tensor("i32", np.array([1, 12, -10, 2147483647]))], attrs={"to": {"int": 6}})


def hand_checks():
    """A few results checked against the ONNX spec by hand, not by numpy."""
    assert fp8_encode("fp8e4m3", 448.0, 1) == 0x7E and fp8_encode("fp8e4m3", 464.0, 0) == 0x7E  # tie -> even (448)
    assert fp8_encode("fp8e4m3", 470.0, 0) == 0x7F and fp8_encode("fp8e4m3", 470.0, 1) == 0x7E   # rounds to 480: overflow
    assert fp8_encode("fp8e4m3", math.inf, 1) == 0x7E and fp8_encode("fp8e4m3", -math.inf, 0) == 0xFF
    assert fp8_encode("fp8e5m2", 61440.0, 0) == 0x7C and fp8_encode("fp8e5m2", 61439.0, 0) == 0x7B  # tie -> even = inf
    assert fp8_encode("fp8e5m2", -math.inf, 1) == 0xFB and fp8_value("fp8e5m2", 0x7B) == 57344.0
    assert fp8_value("fp8e4m3", 0x01) == 2.0 ** -9 and fp8_value("fp8e4m3", 0x7E) == 448.0
    assert list(cast_values(np.array([-2.7, 2.7]), "f32", "i32")) == [-2, 2]  # truncation toward zero
    assert list(int_div(np.array([-7]), np.array([2]))) == [-3]  # ONNX Runtime / C, not numpy floor (-4)
    assert abs(gelu_tanh(np.array([1.0]))[0] - 0.8411919906082768) < 1e-15  # value from the Gelu paper's formula
    assert abs(gelu(np.array([1.0]))[0] - 0.8413447460685429) < 1e-15


def main():
    hand_checks()
    gen_arith()
    gen_pow()
    gen_compare()
    gen_logic()
    gen_maxmin()
    gen_where()
    gen_silu_mul()
    gen_float_unary()
    gen_int_unary()
    gen_clip()
    gen_identity_dropout()
    gen_cast()
    gen_fp8()
    CASES.write("elementwise")


if __name__ == "__main__":
    main()
