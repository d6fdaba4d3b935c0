"""The individual PLD accountant's compiled pass over a block's coarse tables (``buckets``, its sides' ``tables``).

One pass per row builds what NumPy built in eight whole-array passes (two concatenations, the scalings, A, B, their
difference and its running minimum): the same operations in the same order on the same floats, so the same
results bit for bit (tests/individual/test_individual_pld.py), without the temporaries.
"""
from __future__ import annotations

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
