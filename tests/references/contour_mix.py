"""delta(eps) of compositions of *different* mechanisms by the contour integral (NumPy and SciPy only; nothing
from mechkit).

Conventions as in mpmath_laws.py: P is the output law with the individual, Q without; the remove direction is
L = log P/Q under P, the add direction L' = log Q/P under Q.  Each mechanism is described by its moment generating
function  M(w) = E_P[e^{w L}] = int p^{1+w} q^{-w}  (remove direction); the add direction's is
E_Q[e^{z L'}] = int q^{1+z} p^{-z} = M(-1 - z).  A composition  sum_i k_i  mechanisms has the mgf
prod_i M_i(w)^{k_i}, and for either direction (notes.md 5.2; contour.py states it for the subsampled Gaussian)

    delta(eps) = E[(1 - e^{eps - S})_+]
               = (1/pi) int_0^inf Re[ M_S(t + iy) e^{-eps (t + iy)} / ((t + iy)(1 + t + iy)) ] dy

for any tilt t > 0 inside the domain of M_S.  Atoms are allowed (the kernel 1/(z(1+z)) is absolutely integrable);
the characteristic function must decay, which a Gaussian or subsampled-Gaussian part or enough continuous
parts provide.  Moving the line to -1 < t < 0 crosses the pole at z = 0 (residue 1), so the same integral there is
delta(eps) - 1:  ``complement=True`` returns 1 - delta(eps) accurately for delta near 1.

The mgfs (each self-checked in tests/accountants/test_reference_contour.py against scipy quadrature of
int p^{1+w} q^{-w} at complex w, or against closed forms of the composed curve):

* ``gaussian(sigma)``: L ~ N(mu^2/2, mu^2), mu = 1/sigma:  log M(w) = w (1 + w) mu^2 / 2.
* ``two_point(hi, p_hi, lo, p_lo)``: randomized response, discrete Laplace (sensitivity 1).
* ``laplace_pair(m_p, b_p, m_q, b_q)``: p = Lap(m_p, b_p), q = Lap(m_q, b_q): on each piece between the
  centres both log-densities are linear in x, so p^{1+w} q^{-w} = e^{C + D x} integrates in closed form; the
  catalog Laplace mechanism is (1, b, 0, b) (atoms where P/Q is flat come out of the same formula), user-defined
  pairs with two scales have a bounded domain (``w_range``).
* ``subsampled_laplace(b, q)``: P2 = (1-q) Lap(0, b) + q Lap(1, b) against Q = Lap(0, b): two atoms (x <= 0,
  x >= 1) in closed form plus Gauss-Legendre on (0, 1), where the integrand is analytic.
* ``subsampled_gaussian(sigma, q)``: P2 = (1-q) N(0, s^2) + q N(1, s^2) against N(0, s^2): the trapezoid rule in the
  output on a wide uniform grid (spectrally accurate: smooth, Gaussian-decaying integrand), as contour.py, with its
  step (``contour.step``: half the Gaussian's scale and of the period of the oscillating factor; changed from a
  sixth on 2026-11-26, delta moved by at most 1.6e-11 relative over 25 random DP-SGD settings, 2.2x faster).

Numerics: the tilt is the saddle point of the composition's real CGF plus the kernel; the y-integral is the
trapezoid rule on [0, y_max] (y_max where the integrand has decayed by e^-40), with the points doubled until
halving the step changes the result by less than 1e-8 relative (at most 4096 intervals).  ``NotConverged`` when
the integrand does not decay or the result is lost to cancellation.  Accuracy: about 1e-10 relative in the
self-checks, about 1e-9 at a count of 1e8 (which multiplies the mgf's rounding); far below the mechkit widths
tested (the tests allow 1e-8).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from . import contour
from .contour import NotConverged

DIRECTIONS = ("remove", "add")


# ------------------------------------------------------------------------------------------------------------
# One mechanism: log M(w) for complex w (arrays), and the real interval of w where M is finite


def _logsumexp_c(terms):
    """log sum exp(c_i) for complex arrays c_i (entries -inf allowed)."""
    stack = np.array(np.broadcast_arrays(*terms), dtype=complex)
    m = np.max(stack.real, axis=0)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.log(np.sum(np.exp(stack - m), axis=0)) + m


class Mechanism:
    w_range = (-math.inf, math.inf)

    def log_mgf(self, w):
        raise NotImplementedError


class gaussian(Mechanism):
    def __init__(self, sigma):
        self.mu2 = 1.0 / float(sigma) ** 2

    def log_mgf(self, w):
        w = np.asarray(w, dtype=complex)
        return w * (1.0 + w) * self.mu2 / 2.0


class two_point(Mechanism):
    """L = hi w.p. p_hi, lo w.p. p_lo (remove direction)."""

    def __init__(self, hi, p_hi, lo, p_lo):
        self.hi, self.lo = float(hi), float(lo)
        self.lph, self.lpl = math.log(p_hi), math.log(p_lo)

    def log_mgf(self, w):
        w = np.asarray(w, dtype=complex)
        return _logsumexp_c([self.lph + w * self.hi, self.lpl + w * self.lo])


def randomized_response(eps0):
    """Binary RR: L = +-eps0, P(L = eps0) = e^eps0 / (1 + e^eps0) (the same law in both directions)."""
    e = float(eps0)
    return two_point(e, 1.0 / (1.0 + math.exp(-e)), -e, 1.0 / (1.0 + math.exp(e)))


def discrete_laplace(scale):
    """Discrete Laplace, sensitivity 1: L = +-1/scale, P(L = 1/scale) = 1/(1 + e^{-1/scale})."""
    a = 1.0 / float(scale)
    return two_point(a, 1.0 / (1.0 + math.exp(-a)), -a, 1.0 / (1.0 + math.exp(a)))


class laplace_pair(Mechanism):
    """p = Lap(m_p, b_p), q = Lap(m_q, b_q) (densities e^{-|x - m|/b} / (2b))."""

    def __init__(self, m_p, b_p, m_q, b_q):
        self.p, self.q = (float(m_p), float(b_p)), (float(m_q), float(b_q))
        cuts = sorted({self.p[0], self.q[0]})
        edges = [-math.inf] + cuts + [math.inf]
        self.pieces = []
        for a, b in zip(edges[:-1], edges[1:]):
            mid = (a + b) / 2 if math.isfinite(a) and math.isfinite(b) else (b - 1.0 if math.isfinite(b) else a + 1.0)
            lin = []
            for m, s in (self.p, self.q):      # log density = c + alpha x on this piece
                sign = 1.0 if mid > m else -1.0
                lin.append((-math.log(2 * s) + sign * m / s, -sign / s))
            self.pieces.append((a, b, lin[0], lin[1]))
        # finiteness: D = (1+w) alpha_p - w alpha_q must be > 0 on the left piece, < 0 on the right one
        lo, hi = -math.inf, math.inf
        for (a, b, (cp, ap), (cq, aq)), need in ((self.pieces[0], 1.0), (self.pieces[-1], -1.0)):
            # need * (ap + w (ap - aq)) > 0
            slope, const = need * (ap - aq), need * ap
            if slope > 0:
                lo = max(lo, -const / slope)
            elif slope < 0:
                hi = min(hi, -const / slope)
            else:
                assert const > 0
        self.w_range = (lo, hi)

    def log_mgf(self, w):
        w = np.asarray(w, dtype=complex)
        terms = []
        for a, b, (cp, ap), (cq, aq) in self.pieces:
            C = (1 + w) * cp - w * cq
            D = (1 + w) * ap - w * aq
            if not math.isfinite(a):            # int_{-inf}^b e^{C + D x} = e^{C + D b} / D
                terms.append(C + D * b - np.log(D))
            elif not math.isfinite(b):          # int_a^inf = -e^{C + D a} / D
                terms.append(C + D * a - np.log(-D))
            else:                               # e^{C + D a} (e^{D (b - a)} - 1) / D
                h = b - a
                small = np.abs(D * h) < 1e-8
                Ds = np.where(small, 1.0, D)
                f = np.where(small, h * (1 + D * h / 2), np.expm1(Ds * h) / Ds)
                terms.append(C + D * a + np.log(f))
        return _logsumexp_c(terms)


def laplace(scale):
    """The catalog Laplace mechanism: P = Lap(1, b), Q = Lap(0, b)."""
    return laplace_pair(1.0, scale, 0.0, scale)


_GL = np.polynomial.legendre.leggauss(200)


class subsampled_laplace(Mechanism):
    """P2 = (1 - q) Lap(0, b) + q Lap(1, b) against Q = Lap(0, b) (sensitivity 1)."""

    def __init__(self, scale, q):
        b, q = float(scale), float(q)
        a = 1.0 / b
        self.atoms = [  # (log mass under P2, loss)
            (math.log((1 - q) * 0.5 + q * 0.5 * math.exp(-a)), math.log1p(q * math.expm1(-a))),   # x <= 0
            (math.log((1 - q) * 0.5 * math.exp(-a) + q * 0.5), math.log1p(q * math.expm1(a)))]    # x >= 1
        x = 0.5 * (_GL[0] + 1.0)
        lq = -math.log(2 * b) - x / b
        lp = np.log((1 - q) * np.exp(-x / b) + q * np.exp(-(1 - x) / b)) - math.log(2 * b)
        self.lp, self.L, self.lw = lp, lp - lq, np.log(0.5 * _GL[1])

    def log_mgf(self, w):
        w = np.asarray(w, dtype=complex)
        shape = w.shape
        w = w.reshape(-1)
        mid = _logsumexp_c(list((self.lw + self.lp)[:, None] + self.L[:, None] * w[None, :]))
        out = _logsumexp_c([lm + w * L for lm, L in self.atoms] + [mid])
        return out.reshape(shape)


class subsampled_gaussian(Mechanism):
    """P2 = (1 - q) N(0, s^2) + q N(1, s^2) against Q = N(0, s^2):  M(w) = E_Q[R^{1+w}], R = P2/Q."""

    def __init__(self, sigma, q):
        self.s, self.q = float(sigma), float(q)

    def log_mgf(self, w):
        w = np.asarray(w, dtype=complex)
        shape = w.shape
        w = w.reshape(-1)
        s, q = self.s, self.q
        t = float(np.max(w.real))
        # the tilted integrand e^{-Y^2/(2s^2)} R^{1+t} peaks near Y = 1 + t (q = 1) for t > -1, near Y <= 0 below
        a, b = -14.0 * s - 2.0 - max(-1.0 - t, 0.0), 14.0 * s + 2.0 + max(1.0 + t, 0.0)
        out = np.empty(w.size, dtype=complex)
        for i in range(0, w.size, 256):
            wi = w[i:i + 256]
            # step: contour.step (half the Gaussian's scale and of the period of e^{i Im(w) log R}), measured there
            h = contour.step(s, contour.frequency(1.0 + wi))
            Y = np.linspace(a, b, int(min(max((b - a) / h, 200), 8000)) + 1)
            lphi = -0.5 * (Y / s) ** 2 - math.log(s * math.sqrt(2.0 * math.pi))
            lr = np.logaddexp(math.log1p(-q) if q < 1 else -np.inf, math.log(q) + (2.0 * Y - 1.0) / (2.0 * s * s))
            ex = (1.0 + wi[:, None]) * lr[None, :]
            if float(np.max(ex.real)) < 30.0:
                # log(1 + int phi (R^{1+w} - 1)): relatively accurate also where M is within 1e-7 of 1 (a count of
                # 1e8 multiplies log M)
                m1 = np.sum(np.exp(lphi)[None, :] * np.expm1(ex), axis=1) * (Y[1] - Y[0])
                out[i:i + 256] = np.log1p(m1)
                continue
            expo = lphi[None, :] + ex
            shift = np.max(expo.real, axis=1, keepdims=True)
            out[i:i + 256] = np.log(np.sum(np.exp(expo - shift), axis=1) * (Y[1] - Y[0])) + shift[:, 0]
        return out.reshape(shape)


# ------------------------------------------------------------------------------------------------------------
# A composition, one direction


class Direction:
    """delta(eps) of one direction of the composition ``parts`` = [(Mechanism, count), ...]."""

    def __init__(self, parts, direction):
        if direction not in DIRECTIONS:
            raise ValueError(direction)
        self.parts = [(m, int(k)) for m, k in parts]
        self.direction = direction
        lo, hi = -math.inf, math.inf
        for m, _ in self.parts:
            lo, hi = max(lo, m.w_range[0]), min(hi, m.w_range[1])
        # the tilt t: w = t (remove) or w = -1 - t (add) must lie inside (lo, hi)
        self.t_max = hi if direction == "remove" else -1.0 - lo
        self.t_min = lo if direction == "remove" else -1.0 - hi
        self._cache = {}

    def log_m(self, z):
        z = np.atleast_1d(np.asarray(z, dtype=complex))
        w = z if self.direction == "remove" else -1.0 - z
        return sum(k * m.log_mgf(w) for m, k in self.parts)

    def _g(self, t, y):
        z = t + 1j * np.asarray(y, dtype=float)
        return self.log_m(z) - np.log(z) - np.log1p(z)

    def _tilt(self, eps, complement):
        lo, hi = (-1.0, 0.0) if complement else (0.0, math.inf)
        lo, hi = max(lo, self.t_min), min(hi, self.t_max, 400.0)
        pad = 1e-6 * max(1.0, abs(hi - lo) if math.isfinite(hi - lo) else 1.0)

        def psi(t):
            v = float(self._g(t, [0.0])[0].real) - eps * t
            return v if math.isfinite(v) else math.inf
        if complement:
            res = minimize_scalar(psi, bounds=(lo + pad, hi - pad), method="bounded", options={"xatol": 1e-9})
            return res.x
        # on the log scale for t > 0 (the saddle ranges over decades)
        res = minimize_scalar(lambda lt: psi(math.exp(lt)), bounds=(math.log(1e-5), math.log(hi - pad)),
                              method="bounded", options={"xatol": 1e-7})
        return math.exp(res.x)

    def _integral(self, t, eps):
        base = float(self._g(t, [0.0])[0].real) - eps * t
        f = lambda y: np.exp(self._g(t, y) - 1j * eps * y - eps * t - base).real
        y = 0.5 / max(1.0, abs(t))
        while float(np.max(self._g(t, y * np.array([1.0, 1.1, 1.25])).real)) - eps * t - base > -40.0:
            y *= 1.5
            if y > 1e5:
                raise NotConverged("the characteristic function decays too slowly")
        y *= 1.5                                  # margin beyond the first point below e^-40
        # the trapezoid rule with 2^j intervals, halving the step (new points only) until it settles
        trap = lambda v, m: float(np.sum(v) - 0.5 * (v[0] + v[-1])) * (y / m)
        n = 256
        vals = f(np.linspace(0.0, y, n + 1))
        half = trap(vals[::2], n // 2)
        while True:
            full = trap(vals, n)
            if abs(full - half) <= 1e-8 * abs(full):
                return full, base
            if n >= 4096:
                raise NotConverged(f"trapezoid rule not converged ({full!r} vs {half!r})")
            mids = f((np.arange(n) + 0.5) * (y / n))
            both = np.empty(2 * n + 1)
            both[0::2], both[1::2] = vals, mids
            vals, n, half = both, 2 * n, full

    @functools.lru_cache(maxsize=512)
    def delta(self, eps, complement=False):
        """delta(eps), or 1 - delta(eps) with ``complement``."""
        eps = float(eps)
        t = self._tilt(eps, complement)
        integral, base = self._integral(t, eps)
        sign = -1.0 if complement else 1.0
        if not sign * integral > 0 or -math.log(sign * integral) > 14.0:
            # the integrand is O(1) at y = 0: a result far below it lost digits to cancellation
            raise NotConverged(f"cancellation: integral {integral!r} at eps = {eps!r}")
        return math.exp(base) * sign * integral / math.pi

    def chernoff(self, eps):
        """A rigorous upper bound of delta(eps), also beyond the largest loss (where the saddle point runs off):
        (1 - e^{-x})_+ <= e^{t x} t^t / (1 + t)^{1+t} for every t > 0, so
        delta(eps) <= min_t M(t) e^{-t eps} t^t / (1 + t)^{1+t}."""
        def log_bound(lt):
            t = math.exp(lt)
            v = float(self.log_m(np.array([t]))[0].real) - t * eps + t * math.log(t) - (1 + t) * math.log1p(t)
            return v if math.isfinite(v) else math.inf
        hi = min(self.t_max, 1e4)
        res = minimize_scalar(log_bound, bounds=(math.log(1e-6), math.log(hi) - 1e-9), method="bounded",
                              options={"xatol": 1e-9})
        return math.exp(min(res.fun, log_bound(res.x)))

    def epsilon(self, delta, hi=1e4):
        """Smallest eps >= 0 with delta(eps) <= delta (brentq on log delta, to 1e-12 relative)."""
        if self.delta(0.0) <= delta:
            return 0.0
        # (a delta that underflows to 0 is below any delta asked: beyond the largest loss it is 0)
        f = lambda e: math.log(max(self.delta(e), 1e-320)) - math.log(delta)
        lo, up = 0.0, 1.0
        while True:
            try:
                if f(up) <= 0:
                    break
            except NotConverged:
                # beyond the largest loss (delta = 0 there, the saddle point runs off): come back towards lo
                if up - lo < 1e-9 * up:
                    raise
                up = (lo + up) / 2
                continue
            lo, up = up, up + 2 * (up - lo) if up > 1.0 else 2 * up
            if up > hi:
                raise NotConverged(f"epsilon above {hi}")
        return brentq(f, lo, up, xtol=1e-13, rtol=1e-12)


class Composition:
    """Both directions of ``parts`` = [(Mechanism, count), ...]; delta and epsilon are the max over them."""

    def __init__(self, *parts):
        self.dirs = {d: Direction(parts, d) for d in DIRECTIONS}

    def delta(self, eps):
        return max(self.dirs[d].delta(eps) for d in DIRECTIONS)

    def epsilon(self, delta):
        return max(self.dirs[d].epsilon(delta) for d in DIRECTIONS)

    def epsilon_within(self, delta, lo, hi, near_one=False):
        """Whether the true epsilon(delta) lies in [lo, hi]: delta(lo) >= delta >= delta(hi) (two or three
        evaluations instead of a root search; the curve is non-increasing).  At hi, a direction's Chernoff bound
        is tried first (a rigorous upper bound; it also covers points beyond the largest loss, where the contour
        integral does not converge).  ``near_one``: compare
        1 - delta(eps) with 1 - delta instead (the complement integral, accurate where delta is within 1e-6 of 1)."""
        def above(d):
            if near_one:
                return self.dirs[d].delta(lo, complement=True) <= 1.0 - delta
            return self.dirs[d].delta(lo) >= delta

        def below(d):
            if near_one:
                return self.dirs[d].delta(hi, complement=True) >= 1.0 - delta
            if self.dirs[d].chernoff(hi) <= delta:      # cheap, and decides a dominated direction outright
                return True
            return self.dirs[d].delta(hi) <= delta
        return (lo <= 0.0 or any(map(above, DIRECTIONS))) and all(map(below, DIRECTIONS))
