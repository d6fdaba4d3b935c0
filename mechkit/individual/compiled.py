"""The individual PLD accountant's compiled pass over a block's coarse tables (``buckets``, its sides' ``tables``).

One pass per row builds what NumPy built in eight whole-array passes (two concatenations, the scalings, A, B, their
difference and its running minimum): the same operations in the same order on the same floats, so the same
results bit for bit (tests/individual/test_individual_pld.py), without the temporaries.
"""
from __future__ import annotations

import cmath
import math

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy", nogil=True)  # no signature: compiled on the accountant's first query
def suffix_tables(g, bb, scale, Y0, Np, r, decay):
    """(A, B, running minimum of A - B, g0, b0) from the inverse transforms g, bb (R, Nc) before their ``scale``:
    with g~ = g scale and b~ = bb scale, A_j = (Np - r_j) Y0 / Np + g~_j - g~_0, B_j = b~_j - decay_j b~_0 for
    j < Nc, both 0 at j = Nc (the circle's end, where r = Np)."""
    R, Nc = g.shape
    A = np.empty((R, Nc + 1))
    B = np.empty((R, Nc + 1))
    D = np.empty((R, Nc + 1))
    g0 = np.empty(R)
    b0 = np.empty(R)
    for i in range(R):
        a0 = g[i, 0] * scale
        c0 = bb[i, 0] * scale
        g0[i] = a0
        b0[i] = c0
        low = np.inf
        for j in range(Nc + 1):
            if j < Nc:
                a = float(Np - r[j]) * Y0[i] / Np + g[i, j] * scale - a0
                b = bb[i, j] * scale - decay[j] * c0
            else:
                a = 0.0
                b = 0.0
            A[i, j] = a
            B[i, j] = b
            v = a - b
            if low == low and not (low <= v):  # np.minimum's running minimum: a nan stays
                low = v
            D[i, j] = low
    return A, B, D, g0, b0


@njit(cache=True, error_model="numpy", nogil=True)
def _direct(G, H, w, Y0, g0, b0, i, r, Np, h):
    """A(r), B(r) of row i at the single cell r by the Plancherel sums (``buckets._Side.direct`` for one row): the
    powers z^j by repeated multiplication as NumPy's cumprod makes them, each sum compensated (Neumaier), so its
    rounding is at most ~2 units of the sum of the terms' magnitudes, below the pairwise sum's the allowance was
    made for."""
    if r >= Np:
        return 0.0, 0.0
    z = cmath.exp(complex(0.0, 2.0 * np.pi * (r % Np)) / Np)
    p = complex(1.0, 0.0)
    sg, cg, sb, cb = 0.0, 0.0, 0.0, 0.0
    for j in range(G.shape[1]):
        if j > 0:
            p = p * z
        tg = (G[i, j] * p).real * w[j]
        tb = (H[i, j] * p).real * w[j]
        s = sg + tg
        cg += (sg - s) + tg if abs(sg) >= abs(tg) else (tg - s) + sg
        sg = s
        s = sb + tb
        cb += (sb - s) + tb if abs(sb) >= abs(tb) else (tb - s) + sb
        sb = s
    g = (sg + cg) / Np
    b = (sb + cb) / Np
    A = (Np - r) * Y0[i] / Np + g - g0[i]
    B = b - math.exp(-(Np - r) * h) * b0[i]
    return A, B


_INT_MIN = -(2 ** 63)


@njit(cache=True, error_model="numpy", nogil=True)
def epsilon_search(target, Dmin, At, Bt, step, G, H, w, Y0, g0, b0, Np, h, c, sigma):
    """Per row, the smallest eps >= 0 with delta~(eps) <= target (``buckets._Side.epsilon_at``, one row at a time:
    the same bracketing on the coarse table, the same interpolation in log delta with a bisection every third step,
    the same final step inside the cell; only the direct sums are compensated instead of pairwise)."""
    R, M = Dmin.shape
    eh = math.exp(h)
    out = np.empty(R)
    for i in range(R):
        x = target[i]
        q = 0
        for k in range(M):
            if Dmin[i, k] <= x:
                q = k
                break
        hi = q * step
        qm = max(q - 1, 0)
        lo = qm * step
        A_lo, B_lo = At[i, qm], Bt[i, qm]
        D_lo, D_hi = A_lo - B_lo, Dmin[i, q]
        it = 0
        if q > 0:
            while hi - lo > 1:
                if it % 3 == 2:
                    m = (lo + hi) // 2
                else:
                    a = math.log(max(D_lo, 1e-300))
                    frac = (a - math.log(x)) / (a - math.log(max(D_hi, 1e-300)))
                    if not math.isfinite(frac):
                        frac = 0.5
                    v = math.floor(frac * (hi - lo))
                    m = lo + (int(v) if -9.2e18 < v < 9.2e18 else _INT_MIN)  # NumPy's cast of what overflows
                m = min(max(m, lo + 1), hi - 1)
                A, B = _direct(G, H, w, Y0, g0, b0, i, m, Np, h)
                d_m, d_next = A - B, A - eh * B
                if d_m > x:
                    lo, A_lo, B_lo, D_lo = m, A, B, d_m
                    if d_next <= x:
                        hi, D_hi = m + 1, d_next
                else:
                    hi, D_hi = m, d_m
                it += 1
        else:
            A_lo, B_lo, lo = At[i, 0], Bt[i, 0], 0
        if B_lo > 0:
            t = math.log(max(A_lo - x, 1e-320) / B_lo)
        else:
            t = 0.0
        t = min(t, 0.0) if q == 0 else min(max(t, 0.0), h)
        out[i] = max((c[i] + lo - 1) * h + sigma[i] + t, 0.0)
    return out
