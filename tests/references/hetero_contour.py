"""Heterogeneous compositions of Poisson-subsampled Gaussians, both directions, by the contour integral
(NumPy and SciPy only; nothing from mechkit).

The pair of one step with noise sigma (sensitivity 1, sampling rate q) is  P = (1 - q) N(0, s^2) + q N(1, s^2)
(with the individual) and  Q = N(0, s^2)  (without).  With  R(Y) = P/Q (Y) = 1 - q + q exp((2Y - 1) / (2 s^2)):

* remove:  L = log R under P,   E[e^{z L}] = E_Q[R^{1 + z}]   (``contour.log_mgf``, reused as is);
* add:     L' = -log R under Q, E[e^{z L'}] = E_Q[R^{-z}]     (``log_mgf_add`` below, the same quadrature).

A composition  sum_j k_j  of steps with noise s_j has the mgf  prod_j M_j(z)^{k_j}, and for either direction

    delta(eps) = E[(1 - e^{eps - L})_+] = (1/pi) int_0^inf Re[ M(t + iy) e^{-eps (t + iy)} / ((t + iy)(1 + t + iy)) ] dy

for any tilt t > 0 (notes.md 5.2; contour.py states it for one sigma).  The real part of the integrand is even in y
and analytic, so the trapezoid rule on [0, y_max] converges geometrically; y_max is where the integrand has
decayed by e^-40 from its value at y = 0, and the rule is refined (doubling the points) until halving the step
changes the result by less than 1e-10 relative.  The tilt is the saddle point of the composition's own real CGF
at the eps asked, rounded to a grid of tilts a factor 2^(1/8) apart so that the y-integrands can be reused across
nearby eps; an evaluation whose cancellation (the integrand's size at y = 0 against the result) could cost more
than ~1e-9 relative is re-tilted.  ``NotConverged`` when the characteristic function decays too slowly (few
expected sampled steps).

Self-checks (tests/individual/test_individual_pld_references.py): q = 1 against mu-GDP in closed form (both
directions, heterogeneous sigmas), the real CGF of both directions against ``mpmath_laws.subsampled_gaussian``
(tilts up to 300), and a homogeneous composition split in two parts against the P1 table value.  When written, a
three times finer quadrature in Y changed delta by < 1e-11 relative in the cases the tests use.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from . import contour

DIRECTIONS = ("remove", "add")
TILT_STEP = 2.0 ** 0.125
NotConverged = contour.NotConverged


def log_mgf_add(z, s, q):
    """log E_{Y ~ N(0, s^2)}[R(Y)^{-z}] for complex z (array): the add direction's mgf."""
    z = np.atleast_1d(np.asarray(z, dtype=complex))
    t = float(np.max(z.real))
    # the tilted integrand peaks near Y = -t for q = 1 (near 0 for q < 1: R^{-t} <= (1 - q)^{-t} is bounded)
    return contour.log_mean(z, s, q, -14.0 * s - 2.0 - t, 14.0 * s + 2.0, lambda w: -w)


def log_mgf(z, s, q, direction):
    if direction == "remove":
        return contour.log_mgf(z, s, q)
    if direction == "add":
        return log_mgf_add(z, s, q)
    raise ValueError(direction)


def cgf(t, s, q, direction):
    """The real CGF K(t) of one step."""
    return float(log_mgf(np.array([t]), s, q, direction)[0].real)


class Direction:
    """delta(eps) and eps(delta) of one direction of the composition ``parts`` = [(sigma, count), ...]."""

    def __init__(self, parts, q, direction):
        self.parts = [(float(s), int(k)) for s, k in parts if int(k) > 0]
        if not self.parts:
            raise ValueError("an empty composition")
        self.q, self.direction = float(q), direction
        # the add direction's loss -log R is at most -log(1 - q) per step: delta = 0 from the sum of those on
        self.esssup = sum(k for _, k in self.parts) * -math.log1p(-self.q) if direction == "add" and q < 1 \
            else math.inf
        self._tilted = {}       # tilt index -> (t, y grid, log integrand without e^{-eps z})
        self._cgf = {}          # t -> the real CGF

    def log_m(self, z):
        z = np.atleast_1d(np.asarray(z, dtype=complex))
        return sum(k * log_mgf(z, s, self.q, self.direction) for s, k in self.parts)

    def cgf(self, t):
        """The composition's real CGF at the tilt t, remembered (the tilt searches of every eps ask the same t)."""
        have = self._cgf.get(t)
        if have is None:
            have = self._cgf[t] = float(self.log_m(np.array([t]))[0].real)
        return have

    def _psi(self, t, eps):
        return self.cgf(t) - eps * t - math.log(t) - math.log1p(t)

    def _tilt_index(self, eps):
        # a tilt already in use serves if its psi is within ~2 of the saddle's (second-order estimate of the gap
        # from finite differences; the cancellation check in _integrate still guards the result)
        for i in self._tilted:
            t = TILT_STEP ** i
            h = 1e-3 * t
            p0, p1, p2 = (self._psi(x, eps) for x in (t - h, t, t + h))
            d1, d2 = (p2 - p0) / (2 * h), (p2 - 2 * p1 + p0) / (h * h)
            if d2 > 0 and d1 * d1 / (2 * d2) < 2.0:
                return i
        res = minimize_scalar(lambda lt: self._psi(math.exp(lt), eps), bounds=(math.log(1e-4), math.log(400.0)),
                              method="bounded", options={"xatol": 1e-6})
        return int(round(res.x / math.log(TILT_STEP)))

    def _grid(self, i):
        have = self._tilted.get(i)
        if have is not None:
            return have
        t = TILT_STEP ** i
        g = lambda y: self.log_m(t + 1j * np.asarray(y)) - np.log(t + 1j * np.asarray(y)) \
            - np.log1p(t + 1j * np.asarray(y))
        base = float(g(np.array([0.0]))[0].real)
        y = 0.5
        while float(g(np.array([y]))[0].real) - base > -40.0:
            y *= 1.5
            if y > 1e7:
                raise NotConverged("the characteristic function does not decay")
        n = 801
        ys = np.linspace(0.0, y, n)
        G = g(ys)
        have = [t, ys, G, base]
        self._tilted[i] = have
        return have

    def _integrate(self, have, eps):
        t, ys, G, base = have
        for _ in range(8):
            vals = np.exp(G - base - 1j * eps * ys).real
            full = _trap(vals, ys)
            half = _trap(vals[::2], ys[::2])
            if abs(full - half) <= 1e-10 * abs(full):
                # cancellation: the rounding of the terms (~1e-16 of their absolute sum) against the result
                if not full > 1e-7 * _trap(np.abs(vals), ys):
                    raise NotConverged(f"cancellation: integral {full!r} at eps = {eps!r} (tilt {t!r})")
                return full, math.exp(base - eps * t) / math.pi
            # refine: double the points (the tail cut stays where the integrand decayed by e^-40)
            n = 2 * (ys.size - 1) + 1
            if n > 12_801:
                break
            ys = np.linspace(0.0, ys[-1], n)
            G = self.log_m(t + 1j * ys) - np.log(t + 1j * ys) - np.log1p(t + 1j * ys)
            have[1], have[2] = ys, G
        raise NotConverged(f"trapezoid rule not converged ({full!r} vs {half!r})")

    def delta(self, eps):
        if eps >= self.esssup:
            return 0.0
        i = self._tilt_index(eps)
        have = self._grid(i)
        integral, scale = self._integrate(have, eps)
        return scale * integral

    def chernoff(self, eps):
        """exp(min_t K(t) - t eps) >= P(L > eps) >= delta(eps)."""
        if eps >= self.esssup:
            return 0.0
        res = minimize_scalar(lambda lt: self.cgf(math.exp(lt)) - math.exp(lt) * eps,
                              bounds=(math.log(1e-4), math.log(400.0)), method="bounded", options={"xatol": 1e-6})
        return math.exp(min(res.fun, 0.0))

    def epsilon(self, delta, guess=1.0):
        """Smallest eps >= 0 with delta(eps) <= delta (brentq to 1e-12)."""
        f = lambda e: self.delta(e) - delta
        if f(0.0) <= 0:
            return 0.0
        lo, hi, step = max(guess - 0.25, 0.0), guess + 0.25, 0.25
        while lo > 0 and f(lo) <= 0:
            hi, lo, step = lo, max(lo - 2 * step, 0.0), 2 * step
        while f(hi) > 0:
            lo, hi, step = hi, hi + 2 * step, 2 * step
            if hi > 200:
                raise NotConverged("epsilon above 200")
        return brentq(f, lo, hi, xtol=1e-12, rtol=1e-12)


class Composition:
    """Both directions of a heterogeneous composition of subsampled Gaussians; the maximum over them.

    Where the add direction's Chernoff bound  delta <= P(L' > eps) <= exp(min_t K(t) - t eps)  already puts it
    below the remove direction's value (by 1e-12 relative), it is not evaluated: there its contour integral is
    a cancellation of terms ~1e13 times the result (the add loss is bounded, and eps near its supremum)."""

    def __init__(self, parts, q):
        self.directions = {d: Direction(parts, q, d) for d in DIRECTIONS}

    def delta(self, eps):
        rem, add = self.directions["remove"].delta(eps), self.directions["add"]
        if add.chernoff(eps) <= 1e-12 * rem:
            return rem
        return max(rem, add.delta(eps))

    def epsilon(self, delta, guess=1.0):
        """The larger of the two directions' epsilons; the add direction's is solved for only when it is not
        already known to be below the remove direction's (its delta there is at most delta)."""
        e = self.directions["remove"].epsilon(delta, guess)
        add = self.directions["add"]
        if add.chernoff(e) <= delta or add.delta(e) <= delta:
            return e
        return max(e, add.epsilon(delta, e))

def _trap(v, x):
    return float(np.trapezoid(v, x) if hasattr(np, "trapezoid") else np.trapz(v, x))
