"""The Edgeworth accountant's compiled expansions: one sum's survival function Q(z) + phi(z) h(z) (notes.md 3.4) in
sign and log magnitude, a direction's AEA delta built from two of them, and the arithmetic of its EEAI bounds around
their Chernoff caps (the caps' thresholds included), at every point of an array in one call (the epsilon query's
root searches ask one point at a time: NumPy's per-call cost on one-element arrays was ~20% of a cold query on 10
distinct mechanisms; docs/performance.md).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from ..engine.kernels import A1, f8
from ..engine.scalars import safe_log
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


# --- the EEAI bounds of a direction around their Chernoff caps (``edgeworth_sequence.Sequence.bounds``) ---------
# NumPy's semantics, one point at a time: nan propagates through max and min, log(0) = -inf, log(< 0) = nan
# (``engine.scalars.safe_log``).
# ``t``: the target delta less the mass at +inf, nan where there is none (then the thresholds are the EEAI values).
@njit(f8(f8, f8), cache=True, error_model="numpy")
def _max(a, b):
    return a if a != a or a >= b else b


@njit(f8(f8, f8), cache=True, error_model="numpy")
def _min(a, b):
    return a if a != a or a <= b else b


@njit(f8(f8, f8), cache=True, error_model="numpy")
def _margin(t, s):
    """The margin m = 1e-9 t + 1e-14 (1 + s) of a point whose curve subtracts s (``_Margins``)."""
    return 1e-9 * t + 1e-14 * (1.0 + s)


# the caps' thresholds at a point (``_Margins``' rules; with a target t, else the EEAI value itself); s is the
# point's subtracted term e^eps m_X P(S_X > eps) (the lower curve's sub, the upper's xt), m_Y the mass of S_Y
@njit(f8(f8, f8, f8, f8), cache=True, error_model="numpy")
def threshold_ylow(floor, t, s, my):
    """``"Ylow"``: the cap 1 - e^c is skipped at or below max(floor, (t - m) / m_Y)."""
    return _max(floor, (t - _margin(t, s)) / my) if t == t else floor


@njit(f8(f8, f8, f8, f8), cache=True, error_model="numpy")
def threshold_y(cap, t, s, my):
    """``"Y"``: the cap e^c is skipped at or above min(cap, (t + 2 m + s) / m_Y)."""
    return _min(cap, (t + 2.0 * _margin(t, s) + s) / my) if t == t else cap


@njit(f8(f8, f8, f8, f8, f8, f8), cache=True, error_model="numpy")
def threshold_x(log_gx, sy, shift, t, s, my):
    """``"X"``: the cap c is skipped at or above min(log(g_X + dx), log(max(m_Y sy - t + 2 m, 0)) - shift), shift
    = eps + l_X."""
    return _min(log_gx, safe_log(_max(my * sy - t + 2.0 * _margin(t, s), 0.0)) - shift) if t == t else log_gx


@njit(f8(f8, f8, f8), cache=True, error_model="numpy")
def threshold_hs(u, t, s):
    """``"hs"``: m_Y e^c is skipped at or above min(u, t + m), u the upper curve with its ``"Y"`` cap."""
    return _min(u, t + _margin(t, s)) if t == t else u


@njit(types.UniTuple(A1, 7)(A1, A1, A1, f8, f8, f8, f8, f8), cache=True, error_model="numpy")
def eeai_terms(eps, y, x, dy, dx, lmx, t, my):
    """The EEAI parts of a direction's bounds at each eps, from the order-1 expansions g_Y, g_X of S_Y and S_X (y,
    x: their (mean, sd, g3, g4, g5)), their uniform bounds dy, dx and the log mass l_X: (floor = max(0, g_Y - dy),
    log(g_X + dx), sub = e^(eps + l_X) (g_X + dx), cap = min(1, g_Y + dy), xt = e^(eps + l_X) max(g_X - dx, 0), the
    ``"Ylow"`` cap's threshold max(floor, (t - m) / m_Y) (m for sub), the ``"Y"`` cap's min(cap, (t + 2 m + xt) /
    m_Y) (m for xt)); the thresholds are floor and cap without a target."""
    n = eps.size
    floor, log_gx, sub, cap, xt = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    thr_lo, thr_up = np.empty(n), np.empty(n)
    for i in range(n):
        e = eps[i]
        zy, zx = (e - y[0]) / y[1], (e - x[0]) / x[1]
        ly, sy = signed_log_sf_z(zy, correction(zy, y[2], y[3], y[4], 1))
        lx, sx = signed_log_sf_z(zx, correction(zx, x[2], x[3], x[4], 1))
        gy, gx = sy * math.exp(ly), sx * math.exp(lx)
        floor[i] = _max(0.0, gy - dy)
        log_gx[i] = safe_log(gx + dx)
        sub[i] = math.exp(e + lmx + log_gx[i])
        cap[i] = _min(1.0, gy + dy)
        xt[i] = math.exp(e + lmx + safe_log(_max(gx - dx, 0.0)))
        thr_lo[i] = threshold_ylow(floor[i], t, sub[i], my)
        thr_up[i] = threshold_y(cap[i], t, xt[i], my)
    return floor, log_gx, sub, cap, xt, thr_lo, thr_up


@njit(types.UniTuple(A1, 2)(A1, A1, A1, A1, A1, f8, f8, f8), cache=True, error_model="numpy")
def lower_middle(floor, c_ylow, log_gx, sub, eps, lmx, t, my):
    """(sy = max(floor, 1 - e^c) with c the ``"Ylow"`` cap (log), the ``"X"`` cap's threshold: log(g_X + dx), or
    with a target its minimum with log(max(m_Y sy - t + 2 m, 0)) - eps - l_X (m for sub))."""
    n = eps.size
    sy, th = np.empty(n), np.empty(n)
    for i in range(n):
        sy[i] = _max(floor[i], -math.expm1(c_ylow[i]))
        th[i] = threshold_x(log_gx[i], sy[i], eps[i] + lmx, t, sub[i], my)
    return sy, th


@njit(A1(A1, A1, A1, A1, f8, f8, f8, f8), cache=True, error_model="numpy")
def lower_end(sy, c_x, log_gx, eps, lmx, my, sup, a):
    """The lower curve: m_Y sy - e^(eps + l_X + min(log(g_X + dx), c)) with c the ``"X"`` cap (log), at least 0,
    0 at and beyond the largest loss ``sup``, plus the mass at +inf a."""
    n = eps.size
    lo = np.empty(n)
    for i in range(n):
        v = my * sy[i] - math.exp(eps[i] + lmx + _min(log_gx[i], c_x[i]))
        v = 0.0 if eps[i] >= sup else _max(v, 0.0)
        lo[i] = v if a == 0.0 else a + v
    return lo


@njit(types.UniTuple(A1, 2)(A1, A1, A1, f8, f8), cache=True, error_model="numpy")
def upper_middle(cap, c_y, xt, t, my):
    """(u = m_Y min(cap, e^c) - xt with c the ``"Y"`` cap (log), the ``"hs"`` cap's threshold: u, or with a target
    min(u, t + m) (m for xt))."""
    n = cap.size
    u, kept = np.empty(n), np.empty(n)
    for i in range(n):
        u[i] = my * _min(cap[i], math.exp(c_y[i])) - xt[i]
        kept[i] = threshold_hs(u[i], t, xt[i])
    return u, kept


@njit(A1(A1, A1, A1, types.int64[:], f8, f8, f8), cache=True, error_model="numpy")
def upper_end(u, c_hs, eps, k, my, sup, a):
    """The upper curve at every eps: min(u, m_Y e^c, 1) at the points ``k`` (u and the ``"hs"`` cap c given there),
    0 elsewhere and at and beyond the largest loss ``sup``, at least 0; with the mass at +inf a, min(a + it, 1)."""
    n = eps.size
    up = np.zeros(n)
    for j in range(k.size):
        up[k[j]] = _min(_min(u[j], my * math.exp(c_hs[j])), 1.0)
    for i in range(n):
        v = 0.0 if eps[i] >= sup else _max(up[i], 0.0)
        up[i] = v if a == 0.0 else _min(a + v, 1.0)
    return up


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
