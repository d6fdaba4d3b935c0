"""An independent reference for compositions of the Poisson-subsampled Gaussian (no mechkit code).

delta(eps) of the k-fold composition in the remove direction is the contour integral (notes.md 5.2)

    delta(eps) = (1/pi) int_0^inf Re[ M(t + iy)^k e^{-eps (t + iy)} / ((t + iy)(1 + t + iy)) ] dy,   t > 0,

with M(z) = E_{Y ~ N(0, s^2)} [(1 - q + q exp((2Y - 1)/(2 s^2)))^{1 + z}] (sensitivity 1).  M is computed by
the trapezoid rule in Y on a wide uniform grid (spectrally accurate for this smooth, Gaussian-decaying
integrand), the outer integral by the trapezoid rule in y up to twice where |M|^k has decayed, the step halved
until the sum settles (it converges geometrically: the integrand is even in y and negligible there).  The tilt t is the
saddle point of the reference's own real CGF.  Accuracy: about 1e-6 relative for the settings the tests use,
checked against the closed form at q = 1 (Gaussian) in ``test_reference_contour_selfcheck``.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar


def _y_grid(s, t):
    lo, hi = -14.0 * s - 2.0, 14.0 * s + 2.0 + (1.0 + t) * 1.0
    return np.linspace(lo, hi, 3001)


def _log_integrand_base(Y, s, q):
    """log N(Y; 0, s^2) and log(1 - q + q e^{(2Y-1)/(2 s^2)}) on the grid."""
    lphi = -0.5 * (Y / s) ** 2 - math.log(s * math.sqrt(2.0 * math.pi))
    u = (2.0 * Y - 1.0) / (2.0 * s * s)
    lr = np.logaddexp(math.log1p(-q) if q < 1 else -np.inf, math.log(q) + u)
    return lphi, lr


def log_mgf(z, s, q):
    """log M(z) for complex z (array), remove direction; principal branch of the mean, not of the log."""
    z = np.atleast_1d(np.asarray(z, dtype=complex))
    t = float(np.max(z.real))
    Y = _y_grid(s, t)
    dY = Y[1] - Y[0]
    lphi, lr = _log_integrand_base(Y, s, q)
    expo = lphi[None, :] + (1.0 + z[:, None]) * lr[None, :]
    shift = np.max(expo.real, axis=1, keepdims=True)
    vals = np.exp(expo - shift)
    m = np.sum(vals, axis=1) * dY
    return np.log(m) + shift[:, 0]


def cgf(t, s, q):
    return float(log_mgf(np.array([t]), s, q)[0].real)


def delta(eps, s, q, k):
    """delta(eps) of k compositions of the subsampled Gaussian (remove direction) by the contour integral."""
    def psi(lt):
        t = math.exp(lt)
        return k * cgf(t, s, q) - eps * t - math.log(t) - math.log1p(t)

    res = minimize_scalar(psi, bounds=(math.log(1e-4), math.log(200.0)), method="bounded",
                          options={"xatol": 1e-8})
    t = math.exp(res.x)
    base = psi(res.x)
    h = 1e-4
    k2 = (cgf(t * (1 + h), s, q) - 2 * cgf(t, s, q) + cgf(t * (1 - h), s, q)) / (t * h) ** 2
    curv = k * k2 + 1.0 / t ** 2 + 1.0 / (1.0 + t) ** 2

    def logabs(y):
        z = t + 1j * y
        return float((k * log_mgf(np.array([z]), s, q)[0] - eps * z - np.log(z) - np.log1p(z)).real)

    y = 0.5 / math.sqrt(curv)
    while logabs(y) - base > -40.0 and y < 1e7:
        y *= 1.5

    def values(yy):
        out = np.empty(yy.size)
        for i0 in range(0, yy.size, 500):
            zc = t + 1j * yy[i0:i0 + 500]
            lm = k * log_mgf(zc, s, q) - eps * zc - np.log(zc) - np.log1p(zc)
            out[i0:i0 + 500] = np.exp(lm - base).real
        return out

    # the trapezoid rule on [0, 2y] from 64 intervals, their number doubled (reusing the values) until the sum
    # changes by less than 1e-7 relative: the integrand is even in y about 0 and negligible at 2y, so the rule
    # converges geometrically; at most 4096 intervals.  Then the part beyond y must be below 1e-7 of the whole.
    n, f, prev = 64, values(np.linspace(0.0, 2.0 * y, 65)), None
    while True:
        w = 2.0 * y / n
        full = w * (f.sum() - 0.5 * (f[0] + f[-1]))
        if prev is not None and abs(full - prev) <= 1e-7 * abs(full):
            break
        if n >= 4096:
            raise NotConverged(f"contour integral not converged: {prev!r} vs {full!r} (step {w:g})")
        g = np.empty(2 * n + 1)
        g[0::2], g[1::2] = f, values(np.linspace(0.0, 2.0 * y, 2 * n + 1)[1::2])
        n, f, prev = 2 * n, g, full
    half = w * (f[:n // 2 + 1].sum() - 0.5 * (f[0] + f[n // 2]))
    if not abs(half - full) <= 1e-7 * abs(full):
        # the characteristic function decays too slowly (a nearly atomic loss: few expected sampled steps)
        raise NotConverged(f"contour integral not converged: {half!r} on [0, y] vs {full!r} on [0, 2y]")
    return math.exp(base) * full / math.pi


class NotConverged(ArithmeticError):
    pass
