"""The connect-the-dots composer's bound on the mass of the composed discrete law beyond the circle (it wraps
around): each discrete law's moment generating function at ``TILTS`` (exact sums, or upper bounds), composed by the
counts, and Chernoff at the best tilt.
"""
from __future__ import annotations

import math

import numpy as np

from . import fft_sums as _fs

#: tilts at which the composed tails beyond the circle are bounded (Chernoff, the best of them)
TILTS = np.array([0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0])


#: laws with more support points than this have their moment generating functions summed by the compiled pass
#: (``fft_sums.log_mgf``, compiled on first use: a query on a small grid, the default budget's, does not wait for it)
COMPILED_MGF_POINTS = 5_000


#: laws of more support points than this (up to COMPILED_MGF_POINTS) take ``_mgf_dots``: the exact sums' (10 tilts
#: x points) arrays cost 0.8 ms at 5,000 points, the dot products 0.18 ms (0.13 against 0.11 ms at 2,000)
DOT_MGF_POINTS = 2_000
#: ... where both extreme support points carry at least this mass (each sum is at least it, so the terms that
#: underflow, each below 5e-324 of its mass, are far inside the padding)
DOT_MGF_FLOOR = 1e-250


def log_mgf(pmf, x0, h):
    """log sum_j pmf_j e^{+-t (x0 + j h)} at each t of TILTS (exact sums of the discrete law, from its extreme
    support point: no overflow), for the Chernoff bound on the wrap-around; upper bounds by the compiled pass for
    large laws, and by one exponential and one dot product a tilt for middling ones (``_mgf_dots``)."""
    nz = np.nonzero(pmf > 0.0)[0]
    if nz.size == 0:
        return np.full(TILTS.size, -np.inf), np.full(TILTS.size, -np.inf)
    if nz.size > COMPILED_MGF_POINTS:
        return _fs.log_mgf(pmf, x0, h, TILTS)
    if nz.size > DOT_MGF_POINTS and min(pmf[nz[0]], pmf[nz[-1]]) >= DOT_MGF_FLOOR:
        return _mgf_dots(pmf, nz, x0, h)
    lp = np.log(pmf[nz])
    out = []
    for sign, ref in ((1.0, nz[-1]), (-1.0, nz[0])):
        e = lp[None, :] + sign * TILTS[:, None] * ((nz - ref) * h)[None, :]
        top = e.max(axis=1)
        out.append(top + np.log(np.exp(e - top[:, None]).sum(axis=1)) + sign * TILTS * (x0 + ref * h))
    return out[0], out[1]


def _mgf_dots(pmf, nz, x0, h):
    """``log_mgf``'s upper bounds from sum_j p_j e^{-t d_j} (d_j >= 0 the distance from the extreme support point),
    one np.exp and one dot product a tilt: each term is within (|t d_j| + 2) units of rounding (the exponent's own
    rounding; |t d_j| <= 745 where the term does not underflow), the sum within 2 n more: raised by (1000 + 2 n)
    units."""
    p = pmf[nz]
    first, last = int(nz[0]), int(nz[-1])
    pad = math.log1p((1000.0 + 2.0 * nz.size) * np.finfo(float).eps)
    out = []
    for sign, d, ref in ((1.0, (last - nz) * h, last), (-1.0, (nz - first) * h, first)):
        logs = np.array([math.log(float(np.dot(p, np.exp(-t * d)))) for t in TILTS])
        out.append(logs + pad + sign * TILTS * (x0 + ref * h))
    return out[0], out[1]


def wrap_bound(mgf, grid, shift=0.0):
    """Mass of the composed discrete law beyond the circle's range (it wraps around): Chernoff at the best tilt,
    from ``mgf`` = the composed log moment generating functions at TILTS and -TILTS; ``shift`` the sum of the
    laws' grid offsets."""
    N, h = grid.N, grid.h
    half = N // 2 + 1
    top, bottom = (half - 1) * h + shift, -(N - half) * h + shift
    up, down = mgf
    with np.errstate(over="ignore"):
        hi = np.exp(np.min(up - TILTS * (top + h / 2)))
        lo = np.exp(np.min(down + TILTS * (bottom - h / 2)))
    return float(min(hi, 1.0) + min(lo, 1.0))
