"""The SPA's compiled Theorem 5: the log scaled Mills ratio, SP-CLT's terms, the bound's value and its crossing
solved in epsilon.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from ...engine.kernels import f8
from ...engine.scalars import log1mexp

_SQRT_HALF = math.sqrt(0.5)


_LOG_2PI = math.log(2.0 * math.pi)


@njit(f8(f8), cache=True, error_model="numpy")
def log_mills(x):
    """log(e^{x^2/2} Q(x)), the log scaled Mills ratio, stable for all x: math.erfc where Q(x) is a normal double,
    else Laplace's continued fraction Q(x) = phi(x) / (x + 1/(x + 2/(x + ...))) (backward; 8 terms reach double
    precision from x = 25).  scipy's log_ndtr is slow per scalar call (a ufunc) and cancels at huge x."""
    if x < 25.0:
        return 0.5 * x * x + math.log(0.5 * math.erfc(x * _SQRT_HALF))
    r = x
    for k in range(12, 0, -1):
        r = x + k / r
    return -0.5 * _LOG_2PI - math.log(r)


@njit(types.UniTuple(f8, 5)(f8, f8, f8, f8, f8), cache=True, error_model="numpy")
def clt_terms(t, K, K1, s, e):
    """(log SP-CLT, g, a, b, log Psi(b) - log Psi(a)) at tilt t and epsilon e, s = sqrt(K''), Psi(x) = e^{x^2/2}
    Q(x): the value (eq. 79) and what its slope in epsilon needs (``bound_value``).  Where K'' is 0 (a tilted law
    concentrated on its largest value to double precision, e.g. a bounded loss at a large tilt), the value is its
    limit as s -> 0, the point mass at K': e^(K - t K') (1 - e^(e - K')) (0 for e >= K'), and the slope terms are
    nan."""
    if not s > 0.0:
        return (K - t * K1 + log1mexp(e - K1) if K1 > e else -np.inf), np.nan, np.nan, np.nan, np.nan
    g = (K1 - e) / s
    a = t * s - g
    b = a + s
    la = log_mills(a)
    lb = log_mills(b)
    clt = K - t * e - 0.5 * g * g + la + log1mexp(lb - la) if lb < la else -np.inf
    return clt, g, a, b, lb - la


@njit(types.UniTuple(f8, 2)(f8, f8, f8, f8, f8, types.boolean, f8, f8, f8), cache=True, error_model="numpy")
def bound_value(t, K, K1, s, err0, upper, e, log_slack, quad_slack):
    """(value, d value / d epsilon) of the log of Theorem 5's upper (``upper``) or lower bound at the fixed tilt t
    and epsilon e, from K, K', s = sqrt(K'') and err0 (the log error term at epsilon 0, with its allowance): SP-CLT
    (``clt_terms``) and the arithmetic of spa._log_upper and _log_lower, in the same order, and the slope
    d log SP-CLT / d eps = -t + g/s + (a Psi(a) - b Psi(b)) / ((Psi(a) - Psi(b)) s) (Psi' = x Psi - phi(0)),
    weighted by the two terms of the bound."""
    clt, g, a, b, dl = clt_terms(t, K, K1, s, e)
    log_err = err0 - t * e
    if upper:
        a2 = clt + log_slack
        hi = log_err if log_err > a2 else a2
        lo = log_err if log_err < a2 else a2
        v = hi if hi == -np.inf else hi + math.log1p(math.exp(lo - hi))
    else:
        m = log_err - clt
        v = clt + log1mexp(0.0 if 0.0 < m else m) - quad_slack if log_err < clt else -np.inf
    if not (clt > -np.inf and math.isfinite(v)):
        return v, np.nan
    dclt = -t + g / s + (a - b * math.exp(dl)) / (-math.expm1(dl) * s)
    x = log_err - clt - (log_slack if upper else 0.0)
    if upper:
        w = 1.0 / (1.0 + math.exp(x)) if x < 700.0 else 0.0
        return v, w * dclt - (1.0 - w) * t
    rho = math.exp(x)
    return v, (dclt + t * rho) / (1.0 - rho)


@njit(types.Tuple((f8, f8, types.int64))(f8, f8, f8, f8, f8, types.boolean, f8, f8, f8, f8, f8, f8), cache=True,
      error_model="numpy")
def bound_cross(t, K, K1, s, err0, upper, target, e0, scale, floor, log_slack, quad_slack):
    """A crossing of ``bound_value`` in epsilon (spa._cross_bound says how): (a, b, status) with f(a) >= target >
    f(b) and b - a <= 1e-12 (1 + |a|); status 0, 1 where f stays below the target down to ``floor`` (a is nan),
    2 where no bracket was found (the caller raises)."""
    has_a = False
    has_b = False
    a = np.nan
    b = np.nan
    va = np.nan
    vb = np.nan
    e = e0
    step = scale * 1e-3
    blind = 0
    for _ in range(200):
        v, d = bound_value(t, K, K1, s, err0, upper, e, log_slack, quad_slack)
        if v >= target:
            if not has_a or e > a:
                a = e
                va = v
                has_a = True
        else:
            if not has_b or e < b:
                b = e
                vb = v
                has_b = True
            if not has_a and e <= floor:
                return np.nan, b, 1
        if has_a and has_b and b - a <= 1e-12 * (1.0 + abs(a)):
            return a, b, 0
        ne = e - (v - target) / d if (math.isfinite(v) and d < 0) else np.nan
        if math.isfinite(ne):
            h = 0.5e-12 * (1.0 + abs(e))
            if abs(ne - e) < h:
                ne = e + h if v >= target else e - h
        if has_a and has_b:
            if not (a < ne < b):
                ne = 0.5 * (a + b)
        elif not math.isfinite(ne) or (has_b and ne >= b) or (has_a and ne <= a):
            ne = a + step if has_a else b - step
            step *= 2.0
            blind += 1
            if not has_a and blind > 3 and floor > -np.inf:
                ne = floor
        if ne < floor:
            if has_b and b <= floor:
                return np.nan, b, 1
            ne = floor
        e = ne
    if not (has_a and has_b):
        return a, b, 2
    # Illinois regula falsi: the kept end's value halved towards the target when it is kept again
    side = 0
    for _ in range(200):
        if b - a <= 1e-12 * (1.0 + abs(a)):
            break
        if math.isfinite(va) and math.isfinite(vb):
            m = a + (b - a) * (va - target) / (va - vb)
            if not (a < m < b):
                m = 0.5 * (a + b)
        else:
            m = 0.5 * (a + b)
        v = bound_value(t, K, K1, s, err0, upper, m, log_slack, quad_slack)[0]
        if v >= target:
            a = m
            va = v
            if side == 1:
                vb = target + 0.5 * (vb - target)
            side = 1
        else:
            b = m
            vb = v
            if side == -1:
                va = target + 0.5 * (va - target)
            side = -1
    return a, b, 0
