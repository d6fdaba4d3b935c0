"""The Edgeworth accountant's compiled expansions: one sum's survival function Q(z) + phi(z) h(z) (notes.md 3.4) in
sign and log magnitude, and a direction's AEA delta built from two of them, at every point of an array in one call
(the epsilon query's root searches ask one point at a time: NumPy's per-call cost on one-element arrays was ~20% of
a cold query on 10 distinct mechanisms; docs/performance.md).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from ..engine.kernels import A1, f8
from .spa.compiled import log_mills

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT_HALF = math.sqrt(0.5)
_I8 = types.int64


@njit(types.none(A1, f8, _I8), cache=True, error_model="numpy")
def hermite(he, x, top):
    """he[0 .. top] = He_0(x) .. He_top(x), the probabilists' Hermite polynomials (he holds at least 2 and top + 1)."""
    he[0], he[1] = 1.0, x
    for k in range(1, top):
        he[k + 1] = x * he[k] - k * he[k - 1]


@njit(f8(f8, f8, f8, f8, _I8), cache=True, error_model="numpy")
def correction(z, g3, g4, g5, order):
    """h with E_order(z) = Phi(z) - phi(z) h(z) (g_r the standardised cumulants of the sum; 0 at order 0)."""
    if order == 0:
        return 0.0
    he = np.empty(9)  # He_0 .. He_8: the polynomials this order uses
    hermite(he, z, (2, 5, 8)[order - 1])
    h = g3 / 6.0 * he[2]
    if order >= 2:
        h = h + g4 / 24.0 * he[3] + g3 * g3 / 72.0 * he[5]
    if order >= 3:
        h = h + g5 / 120.0 * he[4] + g3 * g4 / 144.0 * he[6] + g3 ** 3 / 1296.0 * he[8]
    return h


@njit(types.UniTuple(f8, 2)(f8, f8), cache=True, error_model="numpy")
def signed_log_sf_z(z, h):
    """(log |sf|, sign) of Q(z) + phi(z) h(z).  Above the mean it is phi(z) [R(z) + h(z)], R(z) = Q(z) / phi(z) the
    Mills ratio (``log_mills`` is log(e^(z^2/2) Q(z))), so the tail keeps its relative accuracy; below it, Q(z) >=
    1/2 is summed directly."""
    if z > 0.0:
        val = math.exp(log_mills(z) + LOG_SQRT_2PI) + h
        base = -0.5 * z * z - LOG_SQRT_2PI
    else:
        val = 0.5 * math.erfc(z * _SQRT_HALF) + math.exp(-0.5 * z * z - LOG_SQRT_2PI) * h
        base = 0.0
    if val > 0.0:
        return base + math.log(val), 1.0
    if val < 0.0:
        return base + math.log(-val), -1.0
    return (-np.inf, 0.0) if val == 0.0 else (np.nan, np.nan)


@njit(types.UniTuple(A1, 2)(A1, f8, f8, f8, f8, f8, _I8), cache=True, error_model="numpy")
def side_log_sf(x, mean, sd, g3, g4, g5, order):
    """(log |sf|, sign) at each x of the order-``order`` expansion of a sum of mean ``mean``, standard deviation
    ``sd`` and standardised cumulants g3, g4, g5."""
    logmag, sign = np.empty(x.size), np.empty(x.size)
    for i in range(x.size):
        z = (x[i] - mean) / sd
        logmag[i], sign[i] = signed_log_sf_z(z, correction(z, g3, g4, g5, order))
    return logmag, sign


@njit(types.UniTuple(f8, 2)(f8, f8, f8, f8), cache=True, error_model="numpy")
def signed_diff(la, sa, lb, sb):
    """(log |d|, sign) of d = sa e^la - sb e^lb."""
    m = max(la, lb)
    safe = m if math.isfinite(m) else 0.0
    d = sa * math.exp(la - safe) - sb * math.exp(lb - safe)
    s = 1.0 if d > 0 else -1.0 if d < 0 else 0.0 if d == 0 else np.nan
    return (safe + math.log(abs(d)) if math.isfinite(m) else -np.inf), s


@njit(types.UniTuple(A1, 2)(A1, A1, A1, f8, f8, f8, f8, _I8), cache=True, error_model="numpy")
def aea(eps, y, x, log_my, log_mx, sup, log_inf, order):
    """(log |delta|, sign) at each eps of one direction's AEA: m_Y sf_Y(eps) - e^eps m_X sf_X(eps), 0 at and beyond
    the largest loss ``sup``, plus the mass at +inf (log ``log_inf``, -inf where there is none).  y, x: (mean, sd,
    g3, g4, g5) of S_Y and S_X."""
    ld, sd = np.empty(eps.size), np.empty(eps.size)
    for i in range(eps.size):
        e = eps[i]
        if e >= sup:
            a, s = -np.inf, 0.0
        else:
            zy, zx = (e - y[0]) / y[1], (e - x[0]) / x[1]
            ly, sy = signed_log_sf_z(zy, correction(zy, y[2], y[3], y[4], order))
            lx, sx = signed_log_sf_z(zx, correction(zx, x[2], x[3], x[4], order))
            a, s = signed_diff(ly + log_my, sy, lx + log_mx + e, sx)
        if log_inf > -np.inf:
            a, s = signed_diff(log_inf, 1.0, a, -s)
        ld[i], sd[i] = a, s
    return ld, sd


@njit(A1(f8, f8, f8), cache=True, error_model="numpy")
def tilted_edges(small, umax, ustar):
    """The partition of [0, umax] of the tilted expansion's integral: 0, 48 geometric cuts from ``small`` to
    ``umax`` (the kernel's scale near u = 0) and 49 equal ones from max(0, ustar - 12) to ``umax`` (the Gaussian's
    unit scale about its peak ustar), merged in order without repeats (two ascending runs: no sort to compile)."""
    geo = np.empty(49)
    geo[0] = 0.0
    ls, lu = math.log(small), math.log(umax)
    for i in range(48):
        geo[1 + i] = math.exp(ls + (lu - ls) * i / 47.0)
    geo[1], geo[48] = small, umax
    lo = max(0.0, ustar - 12.0)
    lin = np.empty(49)
    for i in range(49):
        lin[i] = lo + (umax - lo) * i / 48.0
    lin[48] = umax
    out = np.empty(98)
    i = j = n = 0
    while i < 49 or j < 49:
        v = geo[i] if j >= 49 or (i < 49 and geo[i] <= lin[j]) else lin[j]
        if i < 49 and geo[i] == v:
            i += 1
        else:
            j += 1
        if n == 0 or v != out[n - 1]:
            out[n] = v
            n += 1
    return out[:n].copy()


@njit(f8(A1, f8, f8, f8, f8, A1, A1, A1), cache=True, error_model="numpy")
def tilted_integral(edges, c, a, s, e_star, coef, glx, glw):
    """The tilted expansion's integral (``edgeworth._tilted_log_delta``): the sum over the intervals of ``edges``
    (``tilted_edges``: a partition of u >= 0), Gauss-Legendre nodes ``glx`` and weights ``glw`` on each, of
    exp(-a u - x^2 / 2 - e_star) (1 - e^(-s u)) (1 + sum_j coef[j] He_j(x)), x = c + u."""
    top = 0
    for j in range(coef.size):
        if coef[j] != 0.0:
            top = j
    he = np.empty(max(top + 1, 2))
    total = 0.0
    for k in range(edges.size - 1):
        half, mid = 0.5 * (edges[k + 1] - edges[k]), 0.5 * (edges[k + 1] + edges[k])
        for g in range(glx.size):
            u = half * glx[g] + mid
            x = c + u
            poly = 1.0
            if top > 0:
                hermite(he, x, top)
                for j in range(1, top + 1):
                    poly += coef[j] * he[j]
            total += half * glw[g] * (math.exp(-a * u - 0.5 * x * x - e_star) * -math.expm1(-s * u) * poly)
    return total
