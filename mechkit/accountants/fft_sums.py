"""The FFT composer's compiled suffix sums of p e^{-y}, kept as logs scaled by exact powers of 2.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from ..engine.kernels import A1

#: the scaled suffix sum of p e^{-y} is rescaled by this power of 2 (exactly) whenever the scale would grow past it
_SUFFIX_RESCALE_LOG2 = 800


@njit(types.UniTuple(A1, 2)(A1, A1), cache=True, error_model="numpy")
def suffix_sums(p, y):
    """d1_i = sum_{j >= i} p_j and ld2_i = log(sum_{j >= i} p_j e^{-y_j}) (-inf where that sum is not positive; each
    with a trailing entry, 0 and -inf), by compensated (Neumaier) summation: the error of every partial sum stays
    within a few units of rounding of the sum of absolute values, whatever the length.  The second sum is kept
    scaled, sum p_j e^{ref - y_j}, the scale ref moved down by exactly 800 log 2 (the running sum and its
    compensation multiplied by 2^-800, exact) whenever the next term would outgrow it: e^{-y} alone underflows
    above y = 745 and overflows below -709, and the privacy loss of a wide domain reaches both (epsilon ~ 1000)."""
    n = p.shape[0]
    d1 = np.zeros(n + 1)
    ld2 = np.full(n + 1, -np.inf)
    s1 = 0.0
    c1 = 0.0
    s2 = 0.0
    c2 = 0.0
    step = _SUFFIX_RESCALE_LOG2 * math.log(2.0)
    scale = 2.0 ** (-_SUFFIX_RESCALE_LOG2)
    ref = y[n - 1] if n > 0 else 0.0
    for i in range(n - 1, -1, -1):
        v = p[i]
        t = s1 + v
        if abs(s1) >= abs(v):
            c1 += (s1 - t) + v
        else:
            c1 += (v - t) + s1
        s1 = t
        d1[i] = s1 + c1
        while ref - y[i] > 700.0:  # the next term's factor e^{ref - y} would overflow: lower the scale
            ref -= step
            s2 *= scale
            c2 *= scale
        w = v * math.exp(ref - y[i]) if v != 0.0 else 0.0
        t = s2 + w
        if abs(s2) >= abs(w):
            c2 += (s2 - t) + w
        else:
            c2 += (w - t) + s2
        s2 = t
        tot = s2 + c2
        ld2[i] = math.log(tot) - ref if tot > 0.0 else -np.inf
    return d1, ld2
