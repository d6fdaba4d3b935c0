"""An independent reference for compositions of the Poisson-subsampled Gaussian (no mechkit code).

delta(eps) of the k-fold composition in the remove direction is the contour integral (notes.md 5.2)

    delta(eps) = (1/pi) int_0^inf Re[ M(t + iy)^k e^{-eps (t + iy)} / ((t + iy)(1 + t + iy)) ] dy,   t > 0,

with M(z) = E_{Y ~ N(0, s^2)} [(1 - q + q exp((2Y - 1)/(2 s^2)))^{1 + z}] (sensitivity 1).  M is computed by
the trapezoid rule in Y on a wide uniform grid whose step follows |Im z| (``step``; spectrally accurate for this
smooth, Gaussian-decaying integrand), the outer integral by the trapezoid rule in y up to twice where |M|^k has
decayed, the step halved until the sum settles (it converges geometrically: the integrand is even in y and
negligible there).  The tilt t is the saddle point of the reference's own real CGF.  Accuracy: about 1e-6 relative
for the settings the tests use, checked against the closed form at q = 1 (Gaussian) in
``test_reference_contour_selfcheck``; the step in Y changed delta by at most 4e-10 relative against the former
fixed 3,001 points (40 random DP-SGD settings), 3-8x faster.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar


def _y_range(s, t):
    return -14.0 * s - 2.0, 14.0 * s + 2.0 + (1.0 + t) * 1.0


def _log_integrand_base(Y, s, q):
    """log N(Y; 0, s^2) and log(1 - q + q e^{(2Y-1)/(2 s^2)}) on the grid."""
    lphi = -0.5 * (Y / s) ** 2 - math.log(s * math.sqrt(2.0 * math.pi))
    u = (2.0 * Y - 1.0) / (2.0 * s * s)
    lr = np.logaddexp(math.log1p(-q) if q < 1 else -np.inf, math.log(q) + u)
    return lphi, lr


def step(s, y):
    """The trapezoid rule's step in Y for a power w of R with ``y`` = |Im w| + max(0, -Re w): half the Gaussian's
    scale and of the period of e^{i Im(w) log R} (d log R / dY <= 1/s^2); a negative real power (the add direction's
    tilt) grows off the real axis (|R(Y + i d)| <= R(Y)) and counts as much.  Measured against 40,001 points (300
    draws of s 0.5-3, q 1e-3-1, tilts 1e-3-100, |Im w| up to 1e3): within the sums' rounding (~5e-12 of M(t)), as
    were thirds and sixths."""
    return min(s / 2.0, s * s / (2.0 * y + 1e-300))


#: the most intervals in Y (the former fixed grid's number): where ``step`` asks for more, the integrand is far
#: down its decay in y in the settings the tests use, or does not decay (one expected sampled step: NotConverged)
MAX_INTERVALS = 3_000


def frequency(w):
    """``step``'s y for the powers w (array) of R: the largest |Im w| plus the most negative real part's size."""
    return float(np.max(np.abs(w.imag))) + max(0.0, -float(np.min(w.real)))


def _intervals(s, lo, hi, w):
    return min(max(int(math.ceil((hi - lo) / step(s, frequency(w)))), 200), MAX_INTERVALS)


def log_mean(z, s, q, lo, hi, power):
    """log of the trapezoid sum of N(Y; 0, s^2) R(Y)^{power(z)} over [lo, hi], for each complex z (array): z in
    blocks by |Im z|, each block on the uniform grid of its ``step`` (200 to MAX_INTERVALS intervals), at most ~2e6
    terms at once."""
    z = np.atleast_1d(np.asarray(z, dtype=complex))
    w = power(z)
    order = np.argsort(np.abs(w.imag), kind="stable")
    out = np.empty(z.size, dtype=complex)
    i = 0
    while i < z.size:
        n = _intervals(s, lo, hi, w[order[i:i + 512]]) + 1
        j = min(z.size, i + max(1, min(512, 2_000_000 // n)))
        n = _intervals(s, lo, hi, w[order[i:j]]) + 1
        Y = np.linspace(lo, hi, n)
        lphi, lr = _log_integrand_base(Y, s, q)
        expo = lphi[None, :] + w[order[i:j]][:, None] * lr[None, :]
        shift = np.max(expo.real, axis=1, keepdims=True)
        out[order[i:j]] = np.log(np.sum(np.exp(expo - shift), axis=1) * (Y[1] - Y[0])) + shift[:, 0]
        i = j
    return out


def log_mgf(z, s, q):
    """log M(z) for complex z (array), remove direction; principal branch of the mean, not of the log."""
    z = np.atleast_1d(np.asarray(z, dtype=complex))
    return log_mean(z, s, q, *_y_range(s, float(np.max(z.real))), lambda w: 1.0 + w)


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
