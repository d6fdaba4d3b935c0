"""The FFT composer's compiled suffix sums of p e^{-y}, kept as logs scaled by exact powers of 2.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from ..engine import lazy
from ..engine.kernels import A1

#: the scaled suffix sum of p e^{-y} is rescaled by this power of 2 (exactly) whenever the scale would grow past it
_SUFFIX_RESCALE_LOG2 = 800
#: the scale's move, 800 log 2 (rounded once; the sums are multiplied by 2^-800 exactly)
_SUFFIX_STEP = _SUFFIX_RESCALE_LOG2 * math.log(2.0)


def suffix_sums(p, y):
    """d1_i = sum_{j >= i} p_j and ld2_i = log(sum_{j >= i} p_j e^{-y_j}) (-inf where that sum is not positive; each
    with a trailing entry, 0 and -inf), by compensated (Neumaier) summation: the error of every partial sum stays
    within a few units of rounding of the sum of absolute values, whatever the length.  The second sum is kept
    scaled, sum p_j e^{ref - y_j}, the scale ref moved down by exactly 800 log 2 (the running sum and its
    compensation multiplied by 2^-800, exact) whenever the next term would outgrow it: e^{-y} alone underflows
    above y = 745 and overflows below -709, and the privacy loss of a wide domain reaches both (epsilon ~ 1000).
    The exponentials and logarithms are NumPy's, over whole arrays; the sums compiled.  ``y`` is overwritten."""
    n = p.shape[0]
    ref = float(y[n - 1]) if n > 0 else 0.0
    if n == 0 or ref - y[0] <= 700.0:         # y increases: the scale never moves
        np.subtract(ref, y, out=y)
        moves = np.empty(0, dtype=np.int64)
    else:
        moves = _exponents(y)                 # y_i -> ref_i - y_i, and where the scale moved
    with np.errstate(over="ignore"):
        np.exp(y, out=y)
    d1, ld2 = _sums(p, y, moves)              # ld2 holds the scaled sums for now
    ends = [n] + [int(i) + 1 for i in moves] + [0]  # the scale ref - k _SUFFIX_STEP below index ends[k]
    for k in range(len(ends) - 1):
        seg = ld2[ends[k + 1]:ends[k]]
        pos = seg > 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            np.log(seg, out=seg)
        seg -= ref
        seg[~pos] = -np.inf
        ref -= _SUFFIX_STEP
    ld2[n] = -np.inf
    return d1, ld2


@njit(cache=True, error_model="numpy", inline="always")
def neumaier_step(s, comp, v):
    """One step of Neumaier's summation: the running sum s + v and its compensation (what s + v lost)."""
    t = s + v
    if abs(s) >= abs(v):
        comp += (s - t) + v
    else:
        comp += (v - t) + s
    return t, comp


@njit(types.float64(A1), cache=True, error_model="numpy", nogil=True)
def compensated_sum(x):
    """sum x by Neumaier's compensated summation: within 2u |sum| + 2 n u^2 sum |x_i| of the exact sum."""
    s = 0.0
    comp = 0.0
    for i in range(x.shape[0]):
        s, comp = neumaier_step(s, comp, x[i])
    return s + comp


@lazy.entry(types.int64[::1](A1), error_model="numpy", nogil=True)  # losses wider than 700 nats only
def _exponents(y):
    """In place y_i -> ref_i - y_i for ``suffix_sums`` (ref starts at the last y, moves down by _SUFFIX_STEP before
    index i whenever ref - y_i would exceed 700), and the indices before which it moved, in decreasing order."""
    n = y.shape[0]
    ref = y[n - 1] if n > 0 else 0.0
    low = ref
    for i in range(n):
        low = min(low, y[i])
    # the scale moves at most (ref - min y) / _SUFFIX_STEP + 1 times (np.append in the loop cost 0.5 s of compile)
    moves = np.empty(int((ref - low) / _SUFFIX_STEP) + 2, dtype=np.int64)
    k = 0
    for i in range(n - 1, -1, -1):
        while ref - y[i] > 700.0:
            ref -= _SUFFIX_STEP
            moves[k] = i
            k += 1
        y[i] = ref - y[i]
    return moves[:k].copy()


@njit(types.UniTuple(A1, 2)(A1, A1, types.int64[::1]), cache=True, error_model="numpy", nogil=True)
def _sums(p, e, moves):
    """``suffix_sums``' compensated sums: d1, and the scaled sums of p_j e_j (e = e^{ref - y}) rescaled at the moves."""
    n = p.shape[0]
    d1 = np.zeros(n + 1)
    s2v = np.zeros(n + 1)
    s1 = 0.0
    c1 = 0.0
    s2 = 0.0
    c2 = 0.0
    scale = 2.0 ** (-_SUFFIX_RESCALE_LOG2)
    k = 0
    for i in range(n - 1, -1, -1):
        v = p[i]
        s1, c1 = neumaier_step(s1, c1, v)
        d1[i] = s1 + c1
        while k < moves.shape[0] and moves[k] == i:
            s2 *= scale
            c2 *= scale
            k += 1
        s2, c2 = neumaier_step(s2, c2, v * e[i] if v != 0.0 else 0.0)
        s2v[i] = s2 + c2
    return d1, s2v


@njit(cache=True, error_model="numpy", inline="always")
def _support_delta(d1, ld2, first, step, shift, j):
    """delta at support point j of a composed curve (y_j = (first + j) step + shift; only mass strictly above it
    counts): D_j = d1_{j+1} - e^{y_j + ld2_{j+1}} (e^y d2 in log space: y may exceed 709)."""
    return d1[j + 1] - math.exp((first + j) * step + shift + ld2[j + 1])


@njit(types.int64(A1, A1, types.int64, types.float64, types.float64, types.int64, types.float64), cache=True,
      error_model="numpy", nogil=True)
def first_at_most(d1, ld2, first, step, shift, i, target):
    """The first support point j >= i of a composed curve where D_j (``_support_delta``) is at most target; the last
    one if none (``DiscreteCurve.epsilon``'s first queries: the running minimum's answer without the array)."""
    n = d1.shape[0] - 1
    for j in range(i, n):
        if _support_delta(d1, ld2, first, step, shift, j) <= target:
            return j
    return n - 1


@lazy.entry(A1(A1, A1, types.int64, types.float64, types.float64, types.int64), error_model="numpy", nogil=True)
def running_min_delta(d1, ld2, first, step, shift, i):
    """min_{i <= k <= j} D_k (``_support_delta``) for j = i .. n - 1 (``DiscreteCurve.epsilon``'s later queries
    bisect it)."""
    n = d1.shape[0] - 1
    out = np.empty(max(n - i, 0))
    low = np.inf
    for j in range(i, n):
        low = min(low, _support_delta(d1, ld2, first, step, shift, j))
        out[j - i] = low
    return out


@njit(A1(types.int64[::1], A1, A1, types.float64, types.int64), cache=True, error_model="numpy", nogil=True)
def contract(idx, p, lr, h, n):
    """The lower bound's pmf on the grid points x_0 .. x_n from parts of the cells (x_i, x_{i+1}] (``fft_ctd``), in
    increasing order of their mean loss: part t lies in cell idx[t], has mass p[t] and lr[t] = log E[e^{-(L - x_i)}]
    in [-h, 0] (its mean of y = e^{-L} is e^{lr} G_i, G_i = e^{-x_i}).

    A sweep upwards in L gathers parts into a group until the group's mean of y reaches the grid point G_j just
    above (in L) where it began, splitting the part that crosses it (a merge of masses at their mean: a contraction
    in y); the group goes to x_j and the next begins with the rest of that part.  The last group, whose mean is
    still above G_j in y, moves down in L to the grid point at or below its mean loss.  Each merge's share of the
    crossing part is rounded up, which moves the merged mean (if at all) up in L: the placement at x_j is then a
    move down, which also keeps the bound.  Distances are kept relative to G_j (expm1 of log ratios)."""
    g = np.zeros(n + 1)
    j = -1
    W = 0.0  # the group's mass
    D = 0.0  # its sum of mass * (y / G_j - 1), >= 0 while the group's mean of y is above G_j
    t0 = 0   # the group's first part, and what of it the group holds
    r0 = 0.0
    for t in range(p.shape[0]):
        rest = p[t]
        if rest <= 0.0:
            continue
        i = idx[t]
        # lr in [-h, 0] exactly: a part a rounding below -h would never fit a group of its own (a sweep that
        # does not end)
        lt = min(max(lr[t], -h), 0.0)
        if j < 0:
            j = i + 1 if lt < 0.0 else i
            t0, r0 = t, rest
        while rest > 0.0:
            dl = math.expm1(lt + (j - i) * h)  # (y_t - G_j) / G_j
            if dl >= 0.0 or rest * (-dl) < D:
                W += rest
                D += rest * dl
                rest = 0.0
            else:
                w = min(rest, D / (-dl) * (1.0 + 1e-15))
                g[j] += W + w
                rest -= w
                W = 0.0
                D = 0.0
                j = i + 1 if lt < 0.0 else i
                t0, r0 = t, rest
    if W > 0.0:
        # the last group, whose mean is below x_j in L: all of it down to the grid point at or below its mean loss
        # x_j - log1p(D / W), or each part down to the grid point at or below its own loss, whichever moves less
        # of e^{-L} (a point mass on a grid point then stays where it is)
        k = max(j - int(math.ceil(math.log1p(max(D, 0.0) / W) / h)), 0)
        merged = W * math.expm1((j - k) * h) - D
        single = 0.0
        for t in range(t0, p.shape[0]):
            w = r0 if t == t0 else p[t]
            if w > 0.0:
                f = idx[t] + 1 if lr[t] <= -h else idx[t]
                single += w * (math.exp((j - f) * h) - math.exp(lr[t] + (j - idx[t]) * h))
        if merged <= single:
            g[k] += W
        else:
            for t in range(t0, p.shape[0]):
                w = r0 if t == t0 else p[t]
                if w > 0.0:
                    g[idx[t] + 1 if lr[t] <= -h else idx[t]] += w
    return g


@njit(cache=True, error_model="numpy", nogil=True)
def log_mgf(pmf, x0, h, tilts):
    """Upper bounds on log sum_j pmf_j e^{+-t (x0 + j h)} at each t of ``tilts`` (``fft_ctd``'s Chernoff bound on
    the wrap-around).  Scaled from the law's extreme support point and stepped by the rounded factor e^{-t h}: the
    running factor drifts by about a unit of rounding a step and is renewed by exp every 64 steps, covered by raising
    each sum by 256 units of rounding, plus two a term for the summation itself (a bound, not an estimate)."""
    n = pmf.shape[0]
    first = -1
    last = -1
    for j in range(n):
        if pmf[j] > 0.0:
            if first < 0:
                first = j
            last = j
    nt = tilts.shape[0]
    up = np.full(nt, -np.inf)
    down = np.full(nt, -np.inf)
    if first < 0:
        return up, down
    pad = 1.0 + (256.0 + 2.0 * (last - first + 1)) * 2.220446049250313e-16
    for k in range(nt):
        t = tilts[k]
        # sum_j p_j e^{t (x_j - x_last)}, from the top down
        s = 0.0
        f = 1.0
        r = math.exp(-t * h)
        for j in range(last, first - 1, -1):
            if (last - j) % 64 == 0:
                f = math.exp(-t * h * (last - j))
            s += pmf[j] * f
            f *= r
        up[k] = math.log(s * pad) + t * (x0 + last * h)
        # sum_j p_j e^{-t (x_j - x_first)}, from the bottom up
        s = 0.0
        f = 1.0
        for j in range(first, last + 1):
            if (j - first) % 64 == 0:
                f = math.exp(-t * h * (j - first))
            s += pmf[j] * f
            f *= r
        down[k] = math.log(s * pad) - t * (x0 + first * h)
    return up, down
