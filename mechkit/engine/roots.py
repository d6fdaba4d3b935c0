"""Bracketed inversion of monotone kernels and the checked closed-form inverse (residual and range checks).
"""
from __future__ import annotations

import numpy as np
from numba import njit, types

from . import lazy
from .kernels import A1, KT, f8


@njit(cache=True, error_model="numpy", inline="always")
def _bracket_end(f, s, a, b, increasing, theta):
    """Replace infinite ends of (a, b) by finite points that bracket f(x) = s (f monotone)."""
    lo = a
    hi = b
    if lo == -np.inf:
        start = -1.0 if hi == np.inf else min(hi - 1.0, -1.0)
        step = 1.0
        lo = start
        for _ in range(2100):
            v = f(lo, theta)
            if (increasing and v <= s) or ((not increasing) and v >= s):
                break
            step *= 2.0
            lo = start - step
    if hi == np.inf:
        start = 1.0 if lo == -np.inf else max(lo + 1.0, 1.0)
        step = 1.0
        hi = start
        for _ in range(2100):
            v = f(hi, theta)
            if (increasing and v >= s) or ((not increasing) and v <= s):
                break
            step *= 2.0
            hi = start + step
    return lo, hi


@njit(f8(KT, f8, f8, f8, types.boolean, A1), cache=True, error_model="numpy")
def invert_monotone(f, s, a, b, increasing, theta):
    """x in [a, b] with f(x) = s for monotone f, by bracketed bisection polished to full precision.

    ``s`` must lie in the open range of f on (a, b); the result is clipped to [a, b].
    """
    lo, hi = _bracket_end(f, s, a, b, increasing, theta)
    for _ in range(2200):
        mid = 0.5 * (lo + hi)
        if not (lo < mid < hi):
            break
        v = f(mid, theta)
        if v != v:
            break
        if (v < s) == increasing:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@njit(cache=True, error_model="numpy", inline="always")  # inlined into its compiled callers: no entry of its own
def checked_inverse(inv, has_inv, f, s, a, b, increasing, tol, theta):
    """L^{-1}(s) on [a, b]: the closed form where it lands in [a, b] with residual |L(x) - s| <= tol (1 + |s|),
    else bracketed bisection on f = L."""
    if has_inv:
        x = inv(s, theta)
        if x >= a and x <= b and abs(f(x, theta) - s) <= tol * (1.0 + abs(s)):
            return x
    return invert_monotone(f, s, a, b, increasing, theta)


@lazy.entry(A1(KT, types.boolean, KT, A1, f8, f8, types.boolean, f8, A1), error_model="numpy")
def checked_inverse_many(inv, has_inv, f, ss, a, b, increasing, tol, theta):
    out = np.empty(ss.shape[0])
    for i in range(ss.shape[0]):
        out[i] = checked_inverse(inv, has_inv, f, ss[i], a, b, increasing, tol, theta)
    return out
