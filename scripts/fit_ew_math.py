#!/usr/bin/env python3
"""Coefficients of the f32 polynomials in shaders/vulkan/ew_math.glsl.

Weighted least squares on Chebyshev nodes (close to minimax at these
degrees), rounded to f32, then evaluated in f32 arithmetic (numpy float32,
Horner as the shader writes it) against float64 references; prints each
polynomial's coefficients and its worst error in f32 ulps (erfc's factor:
relative error). Needs python3-numpy. Run: python3 scripts/fit_ew_math.py
"""
import math

import numpy as np

f32 = np.float32


def cheb(a, b, n=4000):
    k = np.arange(n)
    return (a + b) / 2 + (b - a) / 2 * np.cos(np.pi * (k + 0.5) / n)


def fit(xs, ys, deg, w):
    A = np.stack([xs ** i for i in range(deg)], 1) * w[:, None]
    c, *_ = np.linalg.lstsq(A, ys * w, rcond=None)
    return [f32(v) for v in c]


def horner(c, z):
    r = f32(c[-1])
    for ci in c[-2::-1]:
        r = f32(r * z + ci)
    return r


def ulps(got, want):
    return float(np.max(np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(f32(want))).astype(np.float64)))


def show(name, c, err, unit="ulp"):
    print(f"{name}: [{', '.join(repr(float(v)) for v in c)}]  max {err:.3g} {unit}")


erf = np.vectorize(math.erf)
erfc = np.vectorize(math.erfc)

# exp: e^r = 1 + (r + r^2 Q(r)), |r| <= ln2/2 (+ slack for k's rounding)
x = cheb(-0.36, 0.36)
c = fit(x, (np.exp(x) - 1 - x) / x ** 2, 5, np.ones_like(x))
r = np.linspace(-0.36, 0.36, 200001).astype(f32)
show("exp Q", c, ulps(f32(1) + (r + f32(r * r) * horner(c, r)), np.exp(r.astype(np.float64))))

# sin r = r + r z S(z), cos r = (1 - z/2) + z^2 C(z), z = r^2, |r| <= pi/4 + slack
z = cheb(0, (math.pi / 4 + 0.02) ** 2)
rr = np.sqrt(z)
cs = fit(z, (np.sin(rr) - rr) / rr ** 3, 3, rr ** 3 / np.sin(rr))
cc = fit(z, (np.cos(rr) - 1 + z / 2) / z ** 2, 3, z ** 2)
r = np.linspace(1e-4, math.pi / 4 + 0.02, 200001).astype(f32)
r2 = f32(r * r)
show("sin S", cs, ulps(r + f32(f32(r * r2) * horner(cs, r2)), np.sin(r.astype(np.float64))))
show("cos C", cc, ulps(f32(f32(1) - f32(f32(0.5) * r2)) + f32(f32(r2 * r2) * horner(cc, r2)), np.cos(r.astype(np.float64))))

# tanh x = x + x z T(z), |x| < 0.55
z = cheb(0, 0.55 ** 2)
rr = np.sqrt(z)
c = fit(z, (np.tanh(rr) - rr) / rr ** 3, 5, rr ** 3 / np.tanh(rr))
r = np.linspace(1e-4, 0.55, 200001).astype(f32)
r2 = f32(r * r)
show("tanh T", c, ulps(r + f32(f32(r * r2) * horner(c, r2)), np.tanh(r.astype(np.float64))))

# erf x = x P(z), |x| < 1
z = cheb(0, 1)
rr = np.sqrt(z)
c = fit(z, erf(rr) / rr, 6, rr / erf(rr))
r = np.linspace(1e-4, 1, 200001).astype(f32)
show("erf P", c, ulps(f32(r * horner(c, f32(r * r))), erf(r.astype(np.float64))))

# erfc x = exp(-x^2) R(1/x), 1 <= x < 4 (relative error of R)
x = cheb(1, 4)
ys = erfc(x) * np.exp(x * x)
c = fit(1 / x, ys, 10, 1 / ys)
xx = np.linspace(1, 4, 200001)
want = erfc(xx) * np.exp(xx * xx)
show("erfc R", c, float(np.max(np.abs(horner(c, f32(1) / xx.astype(f32)).astype(np.float64) - want) / want)), "rel")
