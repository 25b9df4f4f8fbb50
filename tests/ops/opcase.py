"""What the op-case generators (tests/ops/gen_*.py) share: values rounded to
a dtype, JSON numbers and tensors in the case format (tests/ops/README.md),
and writing tests/ops/cases/<name>.json. Imported by the generators, which
run from any directory (Python puts the script's folder on sys.path)."""
import json
import math
import os

import numpy as np

CASES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
FLOATS = ["f32", "f16", "bf16", "f64"]
# integer (and bool) dtype name -> numpy type
NP_INT = {"i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8, "u8": np.uint8, "u16": np.uint16,
          "u32": np.uint32, "u64": np.uint64, "bool": np.bool_}
NP_FLOAT = {"f32": np.float32, "f16": np.float16, "f64": np.float64}


def bf16_round(a):
    """float values -> nearest bf16 values (round to nearest even, via f32), as float64; NaN stays NaN."""
    f = np.atleast_1d(np.asarray(a, dtype=np.float32))
    u = f.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    out = (r & 0xFFFFFFFF).astype(np.uint32).view(np.float32).astype(np.float64)
    out[np.isnan(f)] = np.nan
    return out.reshape(np.shape(a))


def rounded(a, dt):
    """Values of `a` as a tensor of dtype dt holds them (float64 for float dtypes, the numpy int type otherwise)."""
    a = np.asarray(a)
    if dt == "bf16":
        return bf16_round(a.astype(np.float64))
    if dt in FLOATS:
        with np.errstate(over="ignore"):  # out-of-range values become inf, as intended
            return a.astype(NP_FLOAT[dt]).astype(np.float64)
    return a.astype(NP_INT[dt])


def jnum(v, dt):
    """A value of dtype dt in JSON: floats as float64 ("nan", "inf", "-inf" as strings), others as int."""
    if dt in FLOATS:
        v = float(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    return int(v)


def jnum_short(v, dt):
    """jnum, with f32 and bf16 (f16) values written as the shortest text that reads back to the same f32 (f16)."""
    v = jnum(v, dt)
    if isinstance(v, float) and dt in ("f32", "bf16"):
        return float(repr(np.float32(v)))
    if isinstance(v, float) and dt == "f16":
        return float(repr(np.float16(v)))
    return v


def tensor(a, dt, sym=None, const=False, num=jnum):
    """A tensor of the case format: a's shape and values (each as num(v, dt)), with symbolic dims `sym` and
    `const` (an initializer) when given."""
    a = np.asarray(a)
    t = {"dtype": dt, "shape": list(a.shape), "data": [num(v, dt) for v in a.reshape(-1)]}
    if sym is not None:
        t["sym"] = sym
    if const:
        t["const"] = True
    return t


class Cases(list):
    """The cases of one file, in order; each name once."""

    def append(self, case):
        assert all(c["name"] != case["name"] for c in self), case["name"]
        super().append(case)

    def write(self, name):
        """Writes cases/<name>.json (compact, one line) and says so."""
        path = os.path.join(CASES_DIR, name + ".json")
        with open(path, "w") as f:
            json.dump({"cases": self}, f, separators=(",", ":"))
            f.write("\n")
        print("%s: %d cases, %d bytes" % (path, len(self), os.path.getsize(path)))
