#!/usr/bin/python3
"""Writes tests/ops/cases/{movement,indexing,generators}.json: op cases for the
data-movement, indexing and generator families (format: tests/ops/README.md).
Expected outputs come from numpy, with ONNX's rules (Slice clamping, Split
chunks, Range length, negative indices) written out here from the spec, not
taken from the C code. Deterministic: fixed seed. Run: python3 gen_movement.py

The runner reads JSON numbers as doubles, so INT64_MAX cannot be written; open
ends use 2**62 (same meaning: past any dim) and INT64_MIN (exact)."""
import math

import numpy as np

from opcase import NP_FLOAT, NP_INT, Cases
from opcase import tensor as T

RNG = np.random.default_rng(20240612)
FILES = {"movement": Cases(), "indexing": Cases(), "generators": Cases()}
BIG = 2 ** 62
INT64_MIN = -2 ** 63

NP = {**NP_FLOAT, "bf16": np.float32, **NP_INT}
# every plain dtype the pure data-movement kernels must carry
ALL = ["f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u8", "u16", "u32", "u64", "bool"]


def rand(shape, dt="f32"):
    """Random non-zero values exactly representable in dt."""
    shape = tuple(shape)
    if dt in ("f32", "f64"):
        v = RNG.uniform(-4, 4, shape)
        v[v == 0] = 1.0
        return v.astype(NP[dt])
    if dt in ("f16", "bf16"):  # k/8, |k| < 64: exact in both
        k = RNG.integers(1, 64, shape) * RNG.choice([-1, 1], shape)
        return (k / 8.0).astype(np.float32)
    if dt == "bool":
        return RNG.integers(0, 2, shape).astype(bool)
    lo = 1 if dt.startswith("u") else -100
    v = RNG.integers(lo, 100, shape)
    v[v == 0] = 7
    return v.astype(NP[dt])


def C(a, dt="i64"):
    """A constant (initializer) input."""
    return T(np.asarray(a, dtype=NP[dt]), dt, const=True)


def ints(v):
    return {"ints": [int(x) for x in v]}


def an_int(v):
    return {"int": int(v)}


def tensor_attr(a, dt):
    return {"tensor": T(a, dt)}


def add(file, name, op, inputs, outputs, attrs=None, error=None, data_error=False):
    """data_error: ref finds `error` in run-time data (an index out of range);
    other backends may instead complete the run (tests/ops/README.md)."""
    c = {"name": name, "op": op, "inputs": inputs, "outputs": outputs}
    if attrs:
        c["attrs"] = attrs
    if error:
        c["expect_error"] = error
    if data_error:
        c["data_error"] = True
    FILES[file].append(c)


def dummy_out(dt="f32"):
    """Output placeholder for error cases (never compared)."""
    return T(np.zeros((1,), NP[dt]), dt)


# ---- ONNX reference semantics, from the spec text ---------------------------

def slice_indices(d, start, end, step):
    """Indices ONNX Slice takes on an axis of size d."""
    if start < 0:
        start += d
    if end < 0:
        end += d
    if step > 0:
        start = min(max(start, 0), d)
        end = min(max(end, 0), d)
        return list(range(start, end, step))
    start = min(max(start, 0), d - 1)
    end = min(max(end, -1), d - 1)
    return list(range(start, end, step)) if d > 0 else []


def onnx_slice(x, starts, ends, axes=None, steps=None):
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    out = x
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = a + x.ndim if a < 0 else a
        out = np.take(out, slice_indices(x.shape[a], s, e, st), axis=a)
    return out


def split_sizes(d, n):
    """Split-18 num_outputs: chunks of ceil(d / n), the last one smaller."""
    chunk = -(-d // n)
    return [chunk] * (n - 1) + [d - chunk * (n - 1)]


def wrap(i, d):
    return i + d if i < 0 else i


# ---- movement ----------------------------------------------------------------

def gen_concat():
    f = "movement"
    a, b, c = rand((2, 3)), rand((1, 3)), rand((3, 3))
    add(f, "concat_axis0", "Concat", [T(a, "f32"), T(b, "f32"), T(c, "f32")],
        [T(np.concatenate([a, b, c], 0), "f32")], {"axis": an_int(0)})
    a, b = rand((2, 3, 2)), rand((2, 3, 1))
    add(f, "concat_axis_neg", "Concat", [T(a, "f32"), T(b, "f32")], [T(np.concatenate([a, b], -1), "f32")],
        {"axis": an_int(-1)})
    past, new = rand((1, 2, 0, 32)), rand((1, 2, 7, 32))
    add(f, "concat_zero_length_past", "Concat", [T(past, "f32"), T(new, "f32")],
        [T(np.concatenate([past, new], 2), "f32")], {"axis": an_int(2)})
    add(f, "concat_zero_length_past_symbolic", "Concat",
        [T(past, "f32", sym=[1, 2, "past", 32]), T(new, "f32", sym=[1, 2, "seq", 32])],
        [T(np.concatenate([past, new], 2), "f32")], {"axis": an_int(2)})
    # the paper's [sumN - N] ++ [N] = [sumN]; a third input binds sumN for the runner
    p3, n3, s3 = rand((3, 1, 2, 4)), rand((2, 1, 2, 4)), rand((5, 1, 2, 4))
    add(f, "concat_symbolic_sum", "Concat",
        [T(p3, "f32", sym=["sumN - N", 1, 2, 4]), T(n3, "f32", sym=["N", 1, 2, 4]), T(s3, "f32", sym=["sumN", 1, 2, 4])],
        [T(np.concatenate([p3, n3, s3], 0), "f32")], {"axis": an_int(0)})
    a, b = rand((3, 2, 4)), rand((3, 1, 4))
    add(f, "concat_symbolic_other_dims", "Concat", [T(a, "f32", sym=["N", 2, 4]), T(b, "f32", sym=["N", 1, 4])],
        [T(np.concatenate([a, b], 1), "f32")], {"axis": an_int(1)})
    a = rand((2, 2))
    add(f, "concat_single_input", "Concat", [T(a, "f32")], [T(a, "f32")], {"axis": an_int(1)})
    e1, e2 = rand((0, 3)), rand((0, 3))
    add(f, "concat_all_empty", "Concat", [T(e1, "f32"), T(e2, "f32")], [T(np.zeros((0, 3)), "f32")],
        {"axis": an_int(0)})
    for dt in ALL:
        a, b = rand((2, 2), dt), rand((2, 3), dt)
        add(f, f"concat_{dt}", "Concat", [T(a, dt), T(b, dt, const=True)], [T(np.concatenate([a, b], 1), dt)],
            {"axis": an_int(1)})
    err = "VKL_ERR_SHAPE"
    add(f, "concat_err_rank", "Concat", [T(rand((2, 2)), "f32"), T(rand((2,)), "f32")], [dummy_out()],
        {"axis": an_int(0)}, err)
    add(f, "concat_err_dim", "Concat", [T(rand((2, 2)), "f32"), T(rand((2, 3)), "f32")], [dummy_out()],
        {"axis": an_int(0)}, err)
    add(f, "concat_err_axis", "Concat", [T(rand((2, 2)), "f32"), T(rand((2, 2)), "f32")], [dummy_out()],
        {"axis": an_int(2)}, err)
    add(f, "concat_err_dtype", "Concat", [T(rand((2, 2)), "f32"), T(rand((2, 2), "i64"), "i64")], [dummy_out()],
        {"axis": an_int(0)}, err)
    # symbolic non-axis dims that disagree at run time: the kernel catches it
    add(f, "concat_err_runtime_dim", "Concat",
        [T(rand((2, 2)), "f32", sym=["N", 2]), T(rand((3, 2)), "f32", sym=["M", 2])], [T(np.zeros((2, 4)), "f32")],
        {"axis": an_int(1)}, err)


def gen_split():
    f = "movement"
    x = rand((6, 2))
    parts = np.split(x, [1, 3], 0)
    add(f, "split_listed", "Split", [T(x, "f32"), C([1, 2, 3])], [T(p, "f32") for p in parts], {"axis": an_int(0)})
    x = rand((2, 8))
    sizes = split_sizes(8, 3)  # [3, 3, 2]: ONNX's uneven example
    assert sizes == [3, 3, 2]
    parts = np.split(x, np.cumsum(sizes)[:-1], 1)
    add(f, "split_num_outputs_uneven", "Split", [T(x, "f32")], [T(p, "f32") for p in parts],
        {"axis": an_int(1), "num_outputs": an_int(3)})
    x = rand((6, 4))
    add(f, "split_default_equal", "Split", [T(x, "f32")], [T(p, "f32") for p in np.split(x, 3, 0)])
    x = rand((2, 3, 4))
    parts = np.split(x, 2, -1)
    add(f, "split_axis_neg_unused_output", "Split", [T(x, "f32")], [T(parts[0], "f32"), None],
        {"axis": an_int(-1), "num_outputs": an_int(2)})
    x = rand((3, 6))
    add(f, "split_symbolic_rows", "Split", [T(x, "f32", sym=["N", 6])], [T(p, "f32") for p in np.split(x, 2, 1)],
        {"axis": an_int(1)})
    x = rand((7,))
    sizes = split_sizes(7, 2)
    add(f, "split_symbolic_axis_uneven", "Split", [T(x, "f32", sym=["N"])],
        [T(x[:sizes[0]], "f32"), T(x[sizes[0]:], "f32")], {"num_outputs": an_int(2)})
    x = rand((4, 3))
    add(f, "split_zero_chunk", "Split", [T(x, "f32"), C([2, 0, 2])], [T(x[:2], "f32"), T(x[2:2], "f32"), T(x[2:], "f32")])
    for dt in ["i64", "f16", "bool", "u8"]:
        x = rand((4, 2), dt)
        add(f, f"split_{dt}", "Split", [T(x, dt), C([3, 1], "i32")], [T(x[:3], dt), T(x[3:], dt)])
    err = "VKL_ERR_SHAPE"
    add(f, "split_err_sum", "Split", [T(rand((6,)), "f32"), C([2, 2])], [dummy_out(), dummy_out()], None, err)
    add(f, "split_err_num_outputs", "Split", [T(rand((6,)), "f32")], [dummy_out(), dummy_out()],
        {"num_outputs": an_int(3)}, err)
    add(f, "split_err_both", "Split", [T(rand((6,)), "f32"), C([3, 3])], [dummy_out(), dummy_out()],
        {"num_outputs": an_int(2)}, err)
    add(f, "split_err_count", "Split", [T(rand((6,)), "f32"), C([2, 2, 2])], [dummy_out(), dummy_out()], None, err)


def slice_case(name, x, dt, starts, ends, axes=None, steps=None, sym=None, idx="i64", error=None):
    ins = [T(x, dt, sym=sym), C(starts, idx), C(ends, idx)]
    if axes is not None or steps is not None:
        ins.append(C(axes, idx) if axes is not None else None)
    if steps is not None:
        ins.append(C(steps, idx))
    out = [dummy_out(dt)] if error else [T(onnx_slice(x, starts, ends, axes, steps), dt)]
    add("movement", name, "Slice", ins, out, None, error)


def gen_slice():
    x = rand((3, 4))
    slice_case("slice_basic", x, "f32", [1, 0], [3, 3])
    slice_case("slice_negative_bounds", x, "f32", [-2, -3], [-1, 4])
    slice_case("slice_axes_negative", x, "f32", [1], [BIG], axes=[-1])
    slice_case("slice_axes_reordered", x, "f32", [0, 1], [2, 3], axes=[1, 0])
    x = rand((5, 6))
    slice_case("slice_step2", x, "f32", [0, 1], [5, 6], axes=[0, 1], steps=[2, 2])
    slice_case("slice_reverse_all", x, "f32", [-1], [INT64_MIN], axes=[1], steps=[-1])
    slice_case("slice_step_minus2", x, "f32", [4, 5], [-6, 0], axes=[0, 1], steps=[-2, -3])
    slice_case("slice_clamp_large", x, "f32", [-100, 2], [1000, 1000])
    slice_case("slice_start_past_end_empty", x, "f32", [7], [10])
    slice_case("slice_empty_reversed_bounds", x, "f32", [3], [1])
    # ONNX clamps a backward start into [0, d-1]: start -100 -> 0, one element
    assert slice_indices(5, -100, INT64_MIN, -1) == [0]
    slice_case("slice_backward_start_clamped", x, "f32", [-100], [INT64_MIN], axes=[0], steps=[-1])
    slice_case("slice_backward_start_large", x, "f32", [100], [1], axes=[0], steps=[-1])
    slice_case("slice_i32_bounds", x, "f32", [1, -2], [4, 6], idx="i32")
    x3 = rand((2, 3, 4))
    slice_case("slice_3d_middle", x3, "f32", [1], [3], axes=[1])
    slice_case("slice_3d_last_step", x3, "f32", [3], [0], axes=[2], steps=[-2])
    x0 = rand((0, 3))
    slice_case("slice_zero_size_input", x0, "f32", [0], [1], axes=[1])
    # symbolic axes: the shape rule's min/max expressions, evaluated at run time
    xs = rand((5, 4))
    slice_case("slice_sym_last", xs, "f32", [-1], [BIG], axes=[0], sym=["N", 4])
    slice_case("slice_sym_inner", xs, "f32", [1], [-1], axes=[0], sym=["N", 4])
    slice_case("slice_sym_prefix", xs, "f32", [0], [3], axes=[0], sym=["N", 4])
    slice_case("slice_sym_prefix_clamped", xs[:2], "f32", [0], [3], axes=[0], sym=["N", 4])
    slice_case("slice_sym_from2", xs, "f32", [2], [BIG], axes=[0], sym=["N", 4])
    slice_case("slice_sym_tail_window", xs, "f32", [-3], [-1], axes=[0], sym=["N", 4])
    slice_case("slice_sym_tail_window_short", xs[:2], "f32", [-3], [-1], axes=[0], sym=["N", 4])
    slice_case("slice_sym_reverse", xs, "f32", [-1], [INT64_MIN], axes=[0], steps=[-1], sym=["N", 4])
    slice_case("slice_sym_reverse_to_1", xs, "f32", [BIG], [1], axes=[0], steps=[-1], sym=["N", 4])
    slice_case("slice_sym_reverse_from_start", xs, "f32", [2], [INT64_MIN], axes=[0], steps=[-2], sym=["N", 4])
    slice_case("slice_sym_step3", xs, "f32", [0], [BIG], axes=[0], steps=[3], sym=["N", 4])
    slice_case("slice_sym_backward_from_minus3", xs, "f32", [-3], [INT64_MIN], axes=[0], steps=[-1], sym=["N", 4])
    slice_case("slice_sym_backward_from_minus3_short", xs[:2], "f32", [-3], [INT64_MIN], axes=[0], steps=[-1],
               sym=["N", 4])
    slice_case("slice_sym_zero_rows", xs[:0], "f32", [-1], [BIG], axes=[0], sym=["N", 4])
    slice_case("slice_sym_int32_max_end", xs, "f32", [1], [2147483647], axes=[0], sym=["N", 4])
    for dt in ["i64", "u8", "f16", "bf16", "bool", "f64", "i16"]:
        slice_case(f"slice_{dt}", rand((4, 3), dt), dt, [1, 2], [4, 0], axes=[0, 1], steps=[2, -1])
    err = "VKL_ERR_SHAPE"
    slice_case("slice_err_step0", x, "f32", [0], [2], axes=[0], steps=[0], error=err)
    slice_case("slice_err_dup_axes", x, "f32", [0, 0], [2, 2], axes=[0, -2], error=err)
    slice_case("slice_err_axis_range", x, "f32", [0], [2], axes=[2], error=err)
    add("movement", "slice_err_lengths", "Slice", [T(x, "f32"), C([0, 0]), C([1])], [dummy_out()], None, err)
    add("movement", "slice_err_runtime_starts", "Slice", [T(x, "f32"), T(np.array([0], np.int64), "i64"), C([1])],
        [dummy_out()], None, "VKL_ERR_UNSUPPORTED")


def gen_reshape():
    f = "movement"
    x = rand((2, 3, 4))
    add(f, "reshape_basic", "Reshape", [T(x, "f32"), C([4, 6])], [T(x.reshape(4, 6), "f32")])
    add(f, "reshape_infer", "Reshape", [T(x, "f32"), C([2, -1, 2])], [T(x.reshape(2, -1, 2), "f32")])
    add(f, "reshape_zero_copies", "Reshape", [T(x, "f32"), C([0, 0, 2, 2])], [T(x.reshape(2, 3, 2, 2), "f32")])
    add(f, "reshape_flat", "Reshape", [T(x, "f32"), C([-1])], [T(x.reshape(-1), "f32")])
    add(f, "reshape_to_scalar", "Reshape", [T(np.array([[2.5]], np.float32), "f32"), C(np.zeros((0,), np.int64))],
        [T(np.array(2.5, np.float32), "f32")])
    e = rand((0, 3))
    add(f, "reshape_allowzero", "Reshape", [T(e, "f32"), C([3, 0])], [T(e.reshape(3, 0), "f32")],
        {"allowzero": an_int(1)})
    add(f, "reshape_allowzero_off_copies", "Reshape", [T(x, "f32"), C([0, 12])], [T(x.reshape(2, 12), "f32")],
        {"allowzero": an_int(0)})
    xs = rand((3, 4, 8))
    add(f, "reshape_sym_heads", "Reshape", [T(xs, "f32", sym=["N", 4, 8]), C([0, -1])], [T(xs.reshape(3, 32), "f32")])
    xp = rand((1, 3, 64))
    add(f, "reshape_paper", "Reshape", [T(xp, "f32", sym=[1, "N", 64]), C([1, -1, 4, 16])],
        [T(xp.reshape(1, 3, 4, 16), "f32")])
    for dt in ["i64", "f16", "bool", "u8", "bf16"]:
        v = rand((2, 6), dt)
        add(f, f"reshape_{dt}", "Reshape", [T(v, dt), C([3, -1], "i32")], [T(v.reshape(3, 4), dt)])
    err = "VKL_ERR_SHAPE"
    add(f, "reshape_err_count", "Reshape", [T(x, "f32"), C([5, 5])], [dummy_out()], None, err)
    add(f, "reshape_err_not_multiple", "Reshape", [T(x, "f32"), C([5, -1])], [dummy_out()], None, err)
    add(f, "reshape_err_two_infer", "Reshape", [T(x, "f32"), C([-1, -1])], [dummy_out()], None, err)
    add(f, "reshape_err_negative", "Reshape", [T(x, "f32"), C([-2, 12])], [dummy_out()], None, err)
    add(f, "reshape_err_allowzero_infer", "Reshape", [T(e, "f32"), C([0, -1])], [dummy_out()],
        {"allowzero": an_int(1)}, err)
    add(f, "reshape_err_zero_beyond_rank", "Reshape", [T(rand((6,)), "f32"), C([2, 0])], [dummy_out()], None, err)
    add(f, "reshape_err_runtime_shape", "Reshape", [T(x, "f32"), T(np.array([4, 6], np.int64), "i64")], [dummy_out()],
        None, "VKL_ERR_UNSUPPORTED")
    # symbolic input whose run-time size does not fit the constant target
    add(f, "reshape_err_runtime_count", "Reshape", [T(rand((3, 4)), "f32", sym=["N", 4]), C([2, 4])], [dummy_out()],
        None, err)


def gen_transpose():
    f = "movement"
    x = rand((2, 3))
    add(f, "transpose_default_2d", "Transpose", [T(x, "f32")], [T(x.T, "f32")])
    x = rand((2, 3, 4))
    add(f, "transpose_default_3d", "Transpose", [T(x, "f32")], [T(np.transpose(x), "f32")])
    add(f, "transpose_perm_3d", "Transpose", [T(x, "f32")], [T(np.transpose(x, (1, 2, 0)), "f32")],
        {"perm": ints([1, 2, 0])})
    x = rand((2, 3, 4, 5))
    add(f, "transpose_heads", "Transpose", [T(x, "f32")], [T(np.transpose(x, (0, 2, 1, 3)), "f32")],
        {"perm": ints([0, 2, 1, 3])})
    add(f, "transpose_identity", "Transpose", [T(x, "f32")], [T(x, "f32")], {"perm": ints([0, 1, 2, 3])})
    x = rand((4, 3))
    add(f, "transpose_sym", "Transpose", [T(x, "f32", sym=["N", 3])], [T(x.T, "f32")])
    v = rand((5,))
    add(f, "transpose_rank1", "Transpose", [T(v, "f32")], [T(v, "f32")])
    s = np.array(3.5, np.float32)
    add(f, "transpose_scalar", "Transpose", [T(s, "f32")], [T(s, "f32")])
    add(f, "transpose_empty", "Transpose", [T(rand((0, 3)), "f32")], [T(np.zeros((3, 0)), "f32")])
    for dt in ALL:
        v = rand((2, 3, 2), dt)
        add(f, f"transpose_{dt}", "Transpose", [T(v, dt)], [T(np.transpose(v, (2, 0, 1)), dt)], {"perm": ints([2, 0, 1])})
    err = "VKL_ERR_SHAPE"
    add(f, "transpose_err_repeat", "Transpose", [T(x, "f32")], [dummy_out()], {"perm": ints([0, 0])}, err)
    add(f, "transpose_err_range", "Transpose", [T(x, "f32")], [dummy_out()], {"perm": ints([0, 2])}, err)
    add(f, "transpose_err_length", "Transpose", [T(x, "f32")], [dummy_out()], {"perm": ints([0])}, err)


def gen_squeeze_unsqueeze():
    f = "movement"
    x = rand((1, 3, 1, 2))
    add(f, "squeeze_all_ones", "Squeeze", [T(x, "f32")], [T(np.squeeze(x), "f32")])
    add(f, "squeeze_axes", "Squeeze", [T(x, "f32"), C([2])], [T(np.squeeze(x, 2), "f32")])
    add(f, "squeeze_axes_negative", "Squeeze", [T(x, "f32"), C([-4, -2])], [T(np.squeeze(x, (0, 2)), "f32")])
    one = np.array([[1.25]], np.float32)
    add(f, "squeeze_to_scalar", "Squeeze", [T(one, "f32")], [T(np.squeeze(one), "f32")])
    xs = rand((3, 1, 2))
    add(f, "squeeze_sym_kept", "Squeeze", [T(xs, "f32", sym=["N", 1, 2])], [T(np.squeeze(xs, 1), "f32")])
    x1 = rand((1, 2))
    add(f, "squeeze_sym_listed", "Squeeze", [T(x1, "f32", sym=["N", 2]), C([0])], [T(np.squeeze(x1, 0), "f32")])
    add(f, "squeeze_empty_axes", "Squeeze", [T(x, "f32"), C(np.zeros((0,), np.int64))], [T(x, "f32")])
    b = rand((1, 3), "bool")
    add(f, "squeeze_bool", "Squeeze", [T(b, "bool")], [T(np.squeeze(b, 0), "bool")])
    err = "VKL_ERR_SHAPE"
    add(f, "squeeze_err_not_one", "Squeeze", [T(x, "f32"), C([1])], [dummy_out()], None, err)
    add(f, "squeeze_err_axis", "Squeeze", [T(x, "f32"), C([4])], [dummy_out()], None, err)
    add(f, "squeeze_err_runtime_not_one", "Squeeze", [T(rand((3, 2)), "f32", sym=["N", 2]), C([0])], [dummy_out()],
        None, err)
    x = rand((2, 3))
    add(f, "unsqueeze_front", "Unsqueeze", [T(x, "f32"), C([0])], [T(x[None], "f32")])
    add(f, "unsqueeze_back_negative", "Unsqueeze", [T(x, "f32"), C([-1])], [T(x[..., None], "f32")])
    add(f, "unsqueeze_multi", "Unsqueeze", [T(x, "f32"), C([3, 1])], [T(x.reshape(2, 1, 3, 1), "f32")])
    add(f, "unsqueeze_scalar", "Unsqueeze", [T(np.array(7, np.int64), "i64"), C([0])], [T(np.array([7]), "i64")])
    add(f, "unsqueeze_sym", "Unsqueeze", [T(x, "f32", sym=["N", 3]), C([1])], [T(x[:, None], "f32")])
    h = rand((3,), "f16")
    add(f, "unsqueeze_f16", "Unsqueeze", [T(h, "f16"), C([0])], [T(h[None], "f16")])
    add(f, "unsqueeze_err_dup", "Unsqueeze", [T(x, "f32"), C([0, -4])], [dummy_out()], None, err)
    add(f, "unsqueeze_err_range", "Unsqueeze", [T(x, "f32"), C([3])], [dummy_out()], None, err)


def gen_expand_tile_flatten():
    f = "movement"
    x = rand((3, 1))
    add(f, "expand_bidirectional", "Expand", [T(x, "f32"), C([2, 1, 6])],
        [T(np.broadcast_to(x, (2, 3, 6)), "f32")])
    x = rand((2, 3))
    add(f, "expand_smaller_shape", "Expand", [T(x, "f32"), C([3])], [T(x, "f32")])
    add(f, "expand_ones_shape", "Expand", [T(x, "f32"), C([1, 1])], [T(x, "f32")])
    s = np.array(2.0, np.float32)
    add(f, "expand_scalar", "Expand", [T(s, "f32"), C([2, 2])], [T(np.full((2, 2), 2.0, np.float32), "f32")])
    xs = rand((3, 1))
    add(f, "expand_sym", "Expand", [T(xs, "f32", sym=["N", 1]), C([1, 4])], [T(np.broadcast_to(xs, (3, 4)), "f32")])
    add(f, "expand_zero", "Expand", [T(rand((1, 2)), "f32"), C([0, 2])], [T(np.zeros((0, 2)), "f32")])
    for dt in ["i64", "bool", "f16", "u8"]:
        v = rand((1, 3), dt)
        add(f, f"expand_{dt}", "Expand", [T(v, dt), C([2, 1])], [T(np.broadcast_to(v, (2, 3)), dt)])
    add(f, "expand_err_incompatible", "Expand", [T(x, "f32"), C([4])], [dummy_out()], None, "VKL_ERR_SHAPE")
    add(f, "expand_err_runtime_shape", "Expand", [T(x, "f32"), T(np.array([2, 3], np.int64), "i64")], [dummy_out()],
        None, "VKL_ERR_UNSUPPORTED")
    add(f, "expand_err_runtime_dim", "Expand", [T(rand((3, 2)), "f32", sym=["N", 2]), C([4, 2])], [dummy_out()],
        None, "VKL_ERR_SHAPE")

    x = rand((2, 3))
    add(f, "tile_rows", "Tile", [T(x, "f32"), C([2, 1])], [T(np.tile(x, (2, 1)), "f32")])
    add(f, "tile_cols", "Tile", [T(x, "f32"), C([1, 3])], [T(np.tile(x, (1, 3)), "f32")])
    x3 = rand((2, 1, 2))
    add(f, "tile_3d", "Tile", [T(x3, "f32"), C([2, 3, 2])], [T(np.tile(x3, (2, 3, 2)), "f32")])
    add(f, "tile_zero", "Tile", [T(x, "f32"), C([0, 2])], [T(np.zeros((0, 6)), "f32")])
    add(f, "tile_sym", "Tile", [T(x, "f32", sym=["N", 3]), C([2, 2])], [T(np.tile(x, (2, 2)), "f32")])
    for dt in ["i64", "bool", "bf16", "i8"]:
        v = rand((2, 2), dt)
        add(f, f"tile_{dt}", "Tile", [T(v, dt), C([1, 2])], [T(np.tile(v, (1, 2)), dt)])
    add(f, "tile_err_length", "Tile", [T(x, "f32"), C([2])], [dummy_out()], None, "VKL_ERR_SHAPE")
    add(f, "tile_err_negative", "Tile", [T(x, "f32"), C([1, -1])], [dummy_out()], None, "VKL_ERR_SHAPE")

    x = rand((2, 3, 4))
    add(f, "flatten_default", "Flatten", [T(x, "f32")], [T(x.reshape(2, 12), "f32")])
    add(f, "flatten_axis0", "Flatten", [T(x, "f32")], [T(x.reshape(1, 24), "f32")], {"axis": an_int(0)})
    add(f, "flatten_axis_rank", "Flatten", [T(x, "f32")], [T(x.reshape(24, 1), "f32")], {"axis": an_int(3)})
    add(f, "flatten_axis_neg", "Flatten", [T(x, "f32")], [T(x.reshape(6, 4), "f32")], {"axis": an_int(-1)})
    add(f, "flatten_axis_neg_rank", "Flatten", [T(x, "f32")], [T(x.reshape(1, 24), "f32")], {"axis": an_int(-3)})
    add(f, "flatten_sym", "Flatten", [T(x, "f32", sym=["B", "S", 4])], [T(x.reshape(6, 4), "f32")], {"axis": an_int(2)})
    v = rand((2, 2, 2), "i32")
    add(f, "flatten_i32", "Flatten", [T(v, "i32")], [T(v.reshape(2, 4), "i32")])
    add(f, "flatten_err_axis", "Flatten", [T(x, "f32")], [dummy_out()], {"axis": an_int(4)}, "VKL_ERR_SHAPE")


def gen_trilu():
    f = "movement"
    x = rand((4, 5))
    add(f, "trilu_upper_default", "Trilu", [T(x, "f32")], [T(np.triu(x), "f32")])
    add(f, "trilu_lower", "Trilu", [T(x, "f32")], [T(np.tril(x), "f32")], {"upper": an_int(0)})
    for k in [1, -1, 2, -3, 9, -9]:
        add(f, f"trilu_upper_k{k}".replace("-", "m"), "Trilu", [T(x, "f32"), C(np.array(k, np.int64))],
            [T(np.triu(x, k), "f32")])
        add(f, f"trilu_lower_k{k}".replace("-", "m"), "Trilu", [T(x, "f32"), C(np.array(k, np.int64))],
            [T(np.tril(x, k), "f32")], {"upper": an_int(0)})
    xb = rand((2, 3, 5, 3))
    add(f, "trilu_batched_tall", "Trilu", [T(xb, "f32")], [T(np.triu(xb), "f32")])
    add(f, "trilu_batched_tall_lower", "Trilu", [T(xb, "f32"), C(np.array(-1, np.int64))],
        [T(np.tril(xb, -1), "f32")], {"upper": an_int(0)})
    add(f, "trilu_k_runtime", "Trilu", [T(x, "f32"), T(np.array(1, np.int64), "i64")], [T(np.triu(x, 1), "f32")])
    add(f, "trilu_sym", "Trilu", [T(x, "f32", sym=["S", "T"])], [T(np.tril(x), "f32")], {"upper": an_int(0)})
    for dt in ["i64", "bool", "f16", "bf16", "f64", "u8"]:
        v = rand((3, 3), dt)
        add(f, f"trilu_{dt}", "Trilu", [T(v, dt)], [T(np.triu(v), dt)])
    add(f, "trilu_err_rank", "Trilu", [T(rand((3,)), "f32")], [dummy_out()], None, "VKL_ERR_SHAPE")


# ---- indexing ---------------------------------------------------------------

def np_gather(data, idx, axis):
    d = data.shape[axis]
    return np.take(data, np.where(idx < 0, idx + d, idx), axis=axis)


def gen_gather():
    f = "indexing"
    data = rand((5, 4))
    idx = np.array([[0, 4], [2, 1]], np.int64)
    add(f, "gather_axis0_2d_indices", "Gather", [T(data, "f32"), T(idx, "i64")], [T(np_gather(data, idx, 0), "f32")])
    idx = np.array([3, -1, 0], np.int64)
    add(f, "gather_axis1_negative", "Gather", [T(data, "f32"), T(idx, "i64")], [T(np_gather(data, idx, 1), "f32")],
        {"axis": an_int(1)})
    add(f, "gather_axis_neg", "Gather", [T(data, "f32"), C(idx)], [T(np_gather(data, idx, -1), "f32")],
        {"axis": an_int(-1)})
    i0 = np.array(-2, np.int64)
    add(f, "gather_scalar_index", "Gather", [T(data, "f32"), C(i0)], [T(np_gather(data, i0, 0), "f32")])
    add(f, "gather_scalar_index_axis1", "Gather", [T(data, "f32"), C(np.array(1))],
        [T(np_gather(data, np.array(1), 1), "f32")], {"axis": an_int(1)})
    i32 = np.array([1, 0, 1], np.int32)
    add(f, "gather_i32_indices", "Gather", [T(data, "f32"), T(i32, "i32")], [T(np_gather(data, i32, 0), "f32")])
    emb = rand((10, 6))
    ids = np.array([[1, 9, 3], [0, 0, 7]], np.int64)
    add(f, "gather_embedding_sym", "Gather", [T(emb, "f32", const=True), T(ids, "i64", sym=["B", "S"])],
        [T(np_gather(emb, ids, 0), "f32")])
    add(f, "gather_sym_data", "Gather", [T(data, "f32", sym=["N", 4]), C([1, 2])],
        [T(np_gather(data, np.array([1, 2]), 1), "f32")], {"axis": an_int(1)})
    add(f, "gather_empty_indices", "Gather", [T(data, "f32"), T(np.zeros((0,), np.int64), "i64")],
        [T(np.zeros((0, 4)), "f32")])
    d3 = rand((2, 3, 4))
    idx = np.array([[2, 0]], np.int64)
    add(f, "gather_3d_middle", "Gather", [T(d3, "f32"), T(idx, "i64")], [T(np_gather(d3, idx, 1), "f32")],
        {"axis": an_int(1)})
    for dt in ALL:
        v = rand((4, 3), dt)
        add(f, f"gather_{dt}", "Gather", [T(v, dt), C([3, 0])], [T(np_gather(v, np.array([3, 0]), 0), dt)])
    shp = np.array([2, 5, 7], np.int64)  # a Shape-like constant: gather gives a value
    add(f, "gather_const_value", "Gather", [C(shp), C(np.array(-1))], [T(np.array(7), "i64")])
    add(f, "gather_err_runtime_index", "Gather", [T(data, "f32"), T(np.array([5], np.int64), "i64")], [dummy_out()],
        None, "VKL_ERR_INVALID_ARGUMENT", data_error=True)
    add(f, "gather_err_runtime_negative", "Gather", [T(data, "f32"), T(np.array([-6], np.int64), "i64")],
        [dummy_out()], None, "VKL_ERR_INVALID_ARGUMENT", data_error=True)
    add(f, "gather_err_const_index", "Gather", [T(data, "f32"), C([4])], [dummy_out()], {"axis": an_int(1)},
        "VKL_ERR_INVALID_ARGUMENT")
    add(f, "gather_err_axis", "Gather", [T(data, "f32"), C([0])], [dummy_out()], {"axis": an_int(2)}, "VKL_ERR_SHAPE")
    add(f, "gather_err_float_indices", "Gather", [T(data, "f32"), T(np.array([0.0], np.float32), "f32")],
        [dummy_out()], None, "VKL_ERR_SHAPE")


def np_gather_elements(data, idx, axis):
    """out[p] = data[p with p[axis] = idx[p]]; indices may be smaller than data off the axis."""
    axis = axis + data.ndim if axis < 0 else axis
    d = data.shape[axis]
    view = data[tuple(slice(None) if a == axis else slice(0, idx.shape[a]) for a in range(data.ndim))]
    return np.take_along_axis(view, np.where(idx < 0, idx + d, idx), axis=axis)


def gen_gather_elements():
    f = "indexing"
    data = rand((3, 3))
    idx = np.array([[1, 2, 0], [2, 0, 0]], np.int64)
    add(f, "gather_elements_axis0", "GatherElements", [T(data, "f32"), T(idx, "i64")],
        [T(np_gather_elements(data, idx, 0), "f32")])
    idx = np.array([[0, 0], [1, -1], [-3, 2]], np.int64)
    add(f, "gather_elements_axis1_negative", "GatherElements", [T(data, "f32"), T(idx, "i64")],
        [T(np_gather_elements(data, idx, 1), "f32")], {"axis": an_int(1)})
    d3 = rand((2, 3, 4))
    idx = RNG.integers(-4, 4, (2, 2, 5)).astype(np.int32)
    add(f, "gather_elements_3d_last_i32", "GatherElements", [T(d3, "f32"), T(idx, "i32")],
        [T(np_gather_elements(d3, idx, -1), "f32")], {"axis": an_int(-1)})
    idx = np.array([[2], [0]], np.int64)
    add(f, "gather_elements_sym_smaller_indices", "GatherElements", [T(data, "f32", sym=["N", 3]), T(idx, "i64")],
        [T(np_gather_elements(data, idx, 0), "f32")])
    for dt in ["i64", "bool", "f16", "u8"]:
        v = rand((2, 3), dt)
        ix = np.array([[2, 1, 0], [0, 0, 1]], np.int64)
        add(f, f"gather_elements_{dt}", "GatherElements", [T(v, dt), T(ix, "i64")],
            [T(np_gather_elements(v, ix, 1), dt)], {"axis": an_int(1)})
    add(f, "gather_elements_err_rank", "GatherElements", [T(data, "f32"), T(np.array([0], np.int64), "i64")],
        [dummy_out()], None, "VKL_ERR_SHAPE")
    add(f, "gather_elements_err_index", "GatherElements", [T(data, "f32"), T(np.array([[3]], np.int64), "i64")],
        [dummy_out()], None, "VKL_ERR_INVALID_ARGUMENT", data_error=True)


def np_gather_nd(data, idx, b):
    """GatherND per the ONNX spec, with batch_dims b."""
    m = idx.shape[-1]
    bshape = data.shape[:b]
    out_shape = idx.shape[:-1] + data.shape[b + m:]
    flat_idx = idx.reshape((int(np.prod(bshape)), -1, m)) if b else idx.reshape((1, -1, m))
    flat_data = data.reshape((int(np.prod(bshape)),) + data.shape[b:]) if b else data[None]
    out = []
    for bi in range(flat_idx.shape[0]):
        for t in flat_idx[bi]:
            tup = tuple(int(wrap(int(v), flat_data.shape[1 + k])) for k, v in enumerate(t))
            out.append(flat_data[bi][tup])
    return np.array(out, dtype=data.dtype).reshape(out_shape)


def gen_gather_nd():
    f = "indexing"
    data = rand((2, 2))
    idx = np.array([[0, 0], [1, 1]], np.int64)
    add(f, "gather_nd_elements", "GatherND", [T(data, "f32"), T(idx, "i64")], [T(np_gather_nd(data, idx, 0), "f32")])
    idx = np.array([[1], [0]], np.int64)
    add(f, "gather_nd_rows", "GatherND", [T(data, "f32"), T(idx, "i64")], [T(np_gather_nd(data, idx, 0), "f32")])
    d3 = rand((2, 3, 4))
    idx = np.array([[[1, -1]], [[0, 2]]], np.int64)
    add(f, "gather_nd_3d_negative", "GatherND", [T(d3, "f32"), T(idx, "i64")], [T(np_gather_nd(d3, idx, 0), "f32")])
    idx = np.array([[1], [0]], np.int64)
    add(f, "gather_nd_batch1", "GatherND", [T(d3, "f32"), T(idx, "i64")], [T(np_gather_nd(d3, idx, 1), "f32")],
        {"batch_dims": an_int(1)})
    idx = np.array([[[2, 3], [0, 0]], [[1, 1], [-1, -4]]], np.int64)
    add(f, "gather_nd_batch1_pairs", "GatherND", [T(d3, "f32"), T(idx, "i64")], [T(np_gather_nd(d3, idx, 1), "f32")],
        {"batch_dims": an_int(1)})
    idx = np.array([[0, 1, 2]], np.int64)
    add(f, "gather_nd_full_tuple_sym", "GatherND", [T(d3, "f32", sym=["B", 3, 4]), T(idx, "i64")],
        [T(np_gather_nd(d3, idx, 0), "f32")])
    for dt in ["i64", "f16", "bool"]:
        v = rand((3, 2), dt)
        ix = np.array([[2], [0]], np.int64)
        add(f, f"gather_nd_{dt}", "GatherND", [T(v, dt), T(ix, "i64")], [T(np_gather_nd(v, ix, 0), dt)])
    add(f, "gather_nd_err_depth", "GatherND", [T(data, "f32"), T(np.zeros((1, 3), np.int64), "i64")], [dummy_out()],
        None, "VKL_ERR_SHAPE")
    add(f, "gather_nd_err_index", "GatherND", [T(data, "f32"), T(np.array([[2, 0]], np.int64), "i64")],
        [dummy_out()], None, "VKL_ERR_INVALID_ARGUMENT", data_error=True)
    add(f, "gather_nd_err_batch_dims", "GatherND", [T(d3, "f32"), T(np.zeros((2, 1), np.int64), "i64")],
        [dummy_out()], {"batch_dims": an_int(2)}, "VKL_ERR_SHAPE")


def np_scatter_nd(data, idx, upd, reduction):
    out = data.astype(np.float64) if data.dtype.kind == "f" else data.copy()
    m = idx.shape[-1]
    tuples = idx.reshape(-1, m)
    slices = upd.reshape((tuples.shape[0],) + data.shape[m:])
    for t, u in zip(tuples, slices):
        key = tuple(int(wrap(int(v), data.shape[k])) for k, v in enumerate(t))
        if reduction == "none":
            out[key] = u
        elif reduction == "add":
            out[key] = out[key] + u
        elif reduction == "mul":
            out[key] = out[key] * u
        elif reduction == "max":
            out[key] = np.maximum(out[key], u)
        else:
            out[key] = np.minimum(out[key], u)
    return out.astype(data.dtype) if data.dtype.kind == "f" else out


def gen_scatter_nd():
    f = "indexing"
    data = rand((4, 3))
    idx = np.array([[1], [3]], np.int64)
    upd = rand((2, 3))
    for red in ["none", "add", "mul", "max", "min"]:
        attrs = None if red == "none" else {"reduction": {"string": red}}
        add(f, f"scatter_nd_rows_{red}", "ScatterND", [T(data, "f32"), T(idx, "i64"), T(upd, "f32")],
            [T(np_scatter_nd(data, idx, upd, red), "f32")], attrs)
    idx = np.array([[0, 1], [2, -1], [0, 1]], np.int64)  # a repeated tuple: applied in order
    upd = rand((3,))
    for red in ["add", "mul", "max"]:
        add(f, f"scatter_nd_elements_repeat_{red}", "ScatterND", [T(data, "f32"), T(idx, "i64"), T(upd, "f32")],
            [T(np_scatter_nd(data, idx, upd, red), "f32")], {"reduction": {"string": red}})
    d3 = rand((2, 3, 2))
    idx = np.array([[[1, 2]], [[0, 0]]], np.int64)
    upd = rand((2, 1, 2))
    add(f, "scatter_nd_3d", "ScatterND", [T(d3, "f32"), T(idx, "i64"), T(upd, "f32")],
        [T(np_scatter_nd(d3, idx, upd, "none"), "f32")])
    for dt, red in [("i64", "add"), ("i32", "mul"), ("f16", "add"), ("bool", "none"), ("u8", "max"), ("f64", "min"),
                    ("i8", "min"), ("bf16", "max")]:
        v = rand((3, 2), dt)
        ix = np.array([[2], [0]], np.int64)
        u = rand((2, 2), dt)
        add(f, f"scatter_nd_{dt}_{red}", "ScatterND", [T(v, dt), T(ix, "i64"), T(u, dt)],
            [T(np_scatter_nd(v, ix, u, red), dt)], {"reduction": {"string": red}})
    row = rand((1, 3))
    add(f, "scatter_nd_sym", "ScatterND", [T(data, "f32", sym=["N", 3]), C([[0]]), T(row, "f32")],
        [T(np_scatter_nd(data, np.array([[0]]), row, "none"), "f32")])
    add(f, "scatter_nd_err_index", "ScatterND", [T(data, "f32"), T(np.array([[4]], np.int64), "i64"),
                                                 T(rand((1, 3)), "f32")], [dummy_out()], None, "VKL_ERR_INVALID_ARGUMENT",
        data_error=True)
    add(f, "scatter_nd_err_reduction", "ScatterND", [T(data, "f32"), T(np.array([[0]], np.int64), "i64"),
                                                     T(rand((1, 3)), "f32")], [dummy_out()],
        {"reduction": {"string": "sub"}}, "VKL_ERR_SHAPE")
    add(f, "scatter_nd_err_updates", "ScatterND", [T(data, "f32"), T(np.array([[0]], np.int64), "i64"),
                                                   T(rand((1, 2)), "f32")], [dummy_out()], None, "VKL_ERR_SHAPE")


# ---- generators -------------------------------------------------------------

def onnx_shape(shape, start=0, end=None):
    r = len(shape)
    end = r if end is None else end
    start, end = start + r if start < 0 else start, end + r if end < 0 else end
    start, end = min(max(start, 0), r), min(max(end, 0), r)
    return np.array(shape[start:end], np.int64)


def gen_shape_size():
    f = "generators"
    x = rand((2, 3, 4))
    for name, s, e in [("default", 0, None), ("start1", 1, None), ("end_neg", 0, -1), ("start_neg", -2, None),
                       ("middle", 1, 2), ("empty", 2, 1), ("clamped", -10, 10)]:
        attrs = {}
        if s:
            attrs["start"] = an_int(s)
        if e is not None:
            attrs["end"] = an_int(e)
        add(f, f"shape_{name}", "Shape", [T(x, "f32")], [T(onnx_shape(x.shape, s, e), "i64")], attrs or None)
    add(f, "shape_scalar", "Shape", [T(np.array(1.5, np.float32), "f32")], [T(np.zeros((0,), np.int64), "i64")])
    add(f, "shape_sym", "Shape", [T(x, "f32", sym=["B", "S", 4])], [T(np.array([2, 3, 4]), "i64")])
    add(f, "shape_bool_empty", "Shape", [T(rand((0, 5), "bool"), "bool")], [T(np.array([0, 5]), "i64")])
    add(f, "size_basic", "Size", [T(x, "f32")], [T(np.array(24), "i64")])
    add(f, "size_scalar", "Size", [T(np.array(3, np.int32), "i32")], [T(np.array(1), "i64")])
    add(f, "size_empty", "Size", [T(rand((3, 0)), "f32")], [T(np.array(0), "i64")])
    add(f, "size_sym", "Size", [T(x, "f16", sym=["B", "S", 4])], [T(np.array(24), "i64")])


def gen_constants():
    f = "generators"
    add(f, "constant_of_shape_default", "ConstantOfShape", [C([2, 3])], [T(np.zeros((2, 3)), "f32")])
    for dt, v in [("i64", 7), ("f16", -1.5), ("bool", 1), ("i32", -3), ("f64", 0.25), ("u8", 200), ("bf16", 2.5)]:
        add(f, f"constant_of_shape_{dt}", "ConstantOfShape", [C([3, 1], "i64")],
            [T(np.full((3, 1), v, NP[dt]), dt)], {"value": tensor_attr(np.array([v], NP[dt]), dt)})
    add(f, "constant_of_shape_scalar", "ConstantOfShape", [C(np.zeros((0,), np.int64))],
        [T(np.array(4.0, np.float32), "f32")], {"value": tensor_attr(np.array([4.0], np.float32), "f32")})
    add(f, "constant_of_shape_empty", "ConstantOfShape", [C([2, 0])], [T(np.zeros((2, 0)), "f32")])
    add(f, "constant_of_shape_err_negative", "ConstantOfShape", [C([2, -1])], [dummy_out()], None, "VKL_ERR_SHAPE")
    add(f, "constant_of_shape_err_runtime", "ConstantOfShape", [T(np.array([2], np.int64), "i64")], [dummy_out()],
        None, "VKL_ERR_UNSUPPORTED")
    add(f, "constant_of_shape_err_value_size", "ConstantOfShape", [C([2])], [dummy_out()],
        {"value": tensor_attr(np.array([1.0, 2.0], np.float32), "f32")}, "VKL_ERR_SHAPE")
    for dt, shape in [("f32", (2, 2)), ("i64", (3,)), ("f64", ()), ("bool", (2, 1)), ("f16", (3,)), ("u8", (2,)),
                      ("bf16", (1, 2))]:
        v = rand(shape, dt)
        add(f, f"constant_{dt}", "Constant", [], [T(v, dt)], {"value": tensor_attr(v, dt)})


def range_ref(start, limit, delta, dt):
    n = max(math.ceil((limit - start) / delta), 0)
    return (start + np.arange(n, dtype=np.float64) * delta).astype(NP[dt])


def gen_range():
    f = "generators"
    for name, s, l, d, dt in [("basic", 0, 5, 1, "i64"), ("step3", 2, 11, 3, "i64"), ("negative", 10, 2, -3, "i64"),
                              ("empty", 5, 0, 1, "i64"), ("empty_negative", 0, 5, -1, "i64"), ("i32", -4, 4, 3, "i32"),
                              ("i16", 1, 9, 2, "i16"), ("f32", 0.5, 2.6, 0.3, "f32"), ("f64", 1.0, -1.0, -0.25, "f64"),
                              ("f32_exact", 0.0, 1.0, 0.25, "f32")]:
        ins = [C(np.array(v, NP[dt]), dt) for v in (s, l, d)]
        if dt == "f32":  # ONNX computes in T: the inputs are f32 values
            s, l, d = (float(np.float32(v)) for v in (s, l, d))
            n = max(math.ceil(float(np.float32(l) - np.float32(s)) / d), 0)
            want = (s + np.arange(n) * d).astype(np.float32)
        else:
            want = range_ref(s, l, d, dt)
        add(f, f"range_{name}", "Range", ins, [T(want, dt)])
    add(f, "range_err_delta0", "Range", [C(np.array(0)), C(np.array(5)), C(np.array(0))], [dummy_out("i64")], None,
        "VKL_ERR_SHAPE")
    add(f, "range_err_runtime", "Range", [T(np.array(0, np.int64), "i64"), C(np.array(5)), C(np.array(1))],
        [dummy_out("i64")], None, "VKL_ERR_UNSUPPORTED")
    add(f, "range_err_dtype_mix", "Range", [C(np.array(0)), C(np.array(5, np.int32), "i32"), C(np.array(1))],
        [dummy_out("i64")], None, "VKL_ERR_SHAPE")


def main():
    gen_concat()
    gen_split()
    gen_slice()
    gen_reshape()
    gen_transpose()
    gen_squeeze_unsqueeze()
    gen_expand_tile_flatten()
    gen_trilu()
    gen_gather()
    gen_gather_elements()
    gen_gather_nd()
    gen_scatter_nd()
    gen_shape_size()
    gen_constants()
    gen_range()
    for name, cases in FILES.items():
        cases.write(name)


if __name__ == "__main__":
    main()
