"""Compiled log-space scalar helpers (log-add-exp, log(1 - e^x), log erfc, log Phi, softplus, guarded log,
sign; the generated family modules call them) and cumulants from central moments.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

LOG2 = math.log(2.0)


LOG_SQRT_PI = 0.5 * math.log(math.pi)


NEG_INF = -np.inf


@njit(cache=True, error_model="numpy")
def lae(a, b):
    """log(exp(a) + exp(b)), exact for -inf arguments."""
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


@njit(cache=True, error_model="numpy")
def log1mexp(x):
    """log(1 - exp(x)) for x <= 0 (Maechler's switch); nan for x > 0."""
    if x > 0.0:
        return np.nan
    if x > -0.6931471805599453:
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


@njit(cache=True, error_model="numpy")
def log_erfc(z):
    """log(erfc(z)) without underflow for large z."""
    if z < 20.0:
        return math.log(math.erfc(z))
    # asymptotic series: erfc(z) = exp(-z^2)/(z sqrt(pi)) * sum_k (-1)^k (2k-1)!! / (2 z^2)^k
    iz2 = 1.0 / (2.0 * z * z)
    term = 1.0
    s = 1.0
    for k in range(1, 12):
        term *= -(2 * k - 1) * iz2
        s += term
    return -z * z - math.log(z) - LOG_SQRT_PI + math.log(s)


@njit(cache=True, error_model="numpy")
def log_ndtr(z):
    """log Phi(z)."""
    return log_erfc(-z / math.sqrt(2.0)) - LOG2


@njit(cache=True, error_model="numpy")
def softplus(u):
    """log(1 + exp(u))."""
    if u > 35.0:
        return u + math.exp(-u)
    if u < -35.0:
        return math.exp(u)
    return math.log1p(math.exp(u))


@njit(cache=True, error_model="numpy")
def safe_log(u):
    """log(u) with log(0) = -inf and nan for u < 0 (never raises inside kernels)."""
    if u > 0.0:
        return math.log(u)
    if u == 0.0:
        return -np.inf
    return np.nan


@njit(cache=True, error_model="numpy")
def sgn(u):
    if u > 0.0:
        return 1.0
    if u < 0.0:
        return -1.0
    return 0.0


@njit(cache=True, error_model="numpy")
def cumulants_from_central(m2, m3, m4, m5, m6):
    """Cumulants 2..6 from central moments 2..6.  Compiled lazily, by the tilted moments; the CGF's quadrature calls
    its Python function (``.py_func``) for its few calls, without the compilation: products only (a power would be
    libm's pow in Python, Numba's repeated multiplication compiled), so both give the same floats."""
    k6 = m6 - 15.0 * m4 * m2 - 10.0 * m3 * m3 + 30.0 * (m2 * m2 * m2)
    return (m2, m3, m4 - 3.0 * m2 * m2, m5 - 10.0 * m3 * m2, k6)
