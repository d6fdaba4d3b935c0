"""Independent privacy-curve references on lattices (NumPy, SciPy and mpmath only; nothing from mechkit).

Conventions (the same as mechkit's README, restated so that this file stands alone): ``P`` is the output law
with the individual, ``Q`` without.  The *remove* direction is L = log P/Q under P, the *add* direction is
L' = log Q/P under Q.  For one direction, delta(eps) = E[(1 - e^{eps - L})_+] (the hockey-stick divergence
H_{e^eps}); a k-fold composition adds independent copies of L.  eps(delta) is the smallest eps >= 0 with
delta(eps) <= delta.  A composed query without ``direction=`` is the maximum over the two directions (for
epsilon: the larger of the two directions' epsilons).

Three kinds of reference, each returning certified brackets ``(lo, hi)`` of the truth:

* ``TwoPointPLD`` / ``Binomial``: mechanisms whose loss takes two values in each direction (randomized
  response; discrete Laplace with sensitivity 1, whose loss is +-1/scale; Poisson-subsampled randomized
  response).  The k-fold sum is j*hi + (k-j)*lo with j binomial, so delta(eps) is a finite sum and eps(delta)
  is solved exactly on the segment where delta(eps) = A - e^eps B (A, B suffix sums).  Everything is evaluated
  in mpmath at ``DPS`` digits, so 1e-30 or 1e-300 is as accurate as 1e-5; the only error left is the final
  conversion to a double, covered by widening by 8 ulp.
* ``Lattice``: a law on offset + h*i (i = 0..n-1) as a float64 pmf with a certified error model: the exact law
  is ``pmf * (1 +- rel)`` entrywise plus a signed measure of total mass <= ``tail`` (truncated tails).
  Composition of lattice laws is exact convolution of the integer-indexed pmfs (direct, non-negative sums,
  never an FFT), whose rounding error is relative (gamma_n of the sum length) and is tracked in ``rel``.
  The discrete Gaussian (L = (2k-1)/(2 sigma^2), a lattice of spacing 1/sigma^2) is exact up to a truncated
  tail whose mass is bounded by a geometric series and carried in ``tail``.
* ``Bracket``: a pair of lattice laws (lower, upper) with  lower <= L <= upper  under a coupling.  For the
  Laplace mechanism (continuous, atoms at +-1/scale) and the subsampled Laplace mechanism the loss is a
  monotone function of the output on (0, 1) and constant outside, so its law is two atoms plus a continuous
  part with a closed-form CDF (a mixture of Laplace CDFs at the preimage).  The atoms are placed exactly on
  the lattice (offset = smallest loss, h = range / M); each continuous cell (v_j, v_j+1] is moved to v_j+1
  in ``upper`` (rounding the loss up) and to v_j in ``lower``.  Coupled copies satisfy
  sum(lower_i) <= sum(L_i) <= sum(upper_i) pointwise, and (1 - e^{eps - s})_+ is non-decreasing in s, so
  delta_lower(eps) <= delta(eps) <= delta_upper(eps) for every composition, heterogeneous ones included.

``Composed`` evaluates E[f(X_1 + ... + X_m)] for independent lattice laws with *different* spacings (a
heterogeneous composition) without forming a common grid: all parts but the largest are enumerated (their
outer sum), and the largest enters through suffix sums,  E f(x + Y) = P(Y > t) - e^{t} E[e^{-Y}; Y > t]  with
t = eps - x.  This is the exact convolution, evaluated at the functional.  All floating-point allowances are
added to ``hi`` and subtracted from ``lo``; they are orders of magnitude below the mechkit widths tested.
"""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np

U = 2.0 ** -53          # unit roundoff of float64
DPS = 60                # mpmath digits for the exact two-point references
DIRECTIONS = ("remove", "add")


def _gamma(n):
    """gamma_n = n u / (1 - n u): relative error bound of a sum of n non-negative doubles (any order)."""
    return n * U / (1.0 - n * U)


def _down(x):
    return float(x) * (1.0 - 8 * U) if x > 0 else 0.0


def _up(x):
    return float(x) * (1.0 + 8 * U) + 1e-320


# ------------------------------------------------------------------------------------------------------------
# Two-point laws: exact binomial sums in mpmath


class TwoPointPLD:
    """One direction's privacy loss taking the value ``hi`` w.p. ``p_hi`` and ``lo`` w.p. ``p_lo`` (mpf)."""

    def __init__(self, hi, p_hi, lo, p_lo):
        with mp.workdps(DPS):
            self.hi, self.p_hi, self.lo, self.p_lo = (mp.mpf(hi), mp.mpf(p_hi), mp.mpf(lo), mp.mpf(p_lo))
            assert self.hi > self.lo and abs(self.p_hi + self.p_lo - 1) < mp.mpf(10) ** (-DPS + 5)

    def composed(self, k):
        return Binomial(self, int(k))

    def to_lattice(self):
        """The same law as a float lattice (offset lo, spacing hi - lo): entries rounded, rel 2u."""
        return Lattice(float(self.lo), float(self.hi - self.lo), np.array([float(self.p_lo), float(self.p_hi)]),
                       rel=2 * U)


class Binomial:
    """k-fold sum of a ``TwoPointPLD``: S_j = j hi + (k - j) lo with probability C(k, j) p_hi^j p_lo^(k-j).

    delta(eps) = sum_{S_j > eps} w_j (1 - e^{eps - S_j}) is a finite sum evaluated at DPS digits: exact.
    On eps in [S_{m-1}, S_m) it equals A_m - e^eps B_m (A_m = sum_{j>=m} w_j, B_m = sum_{j>=m} w_j e^{-S_j}),
    so eps(delta) = log((A_m - delta) / B_m) on the segment where the curve crosses delta: exact as well.
    """

    def __init__(self, law, k):
        self.k = k
        with mp.workdps(DPS):
            js = range(k + 1)
            self.S = [j * law.hi + (k - j) * law.lo for j in js]
            w = [mp.binomial(k, j) * law.p_hi ** j * law.p_lo ** (k - j) for j in js]
            A, B = [mp.mpf(0)] * (k + 2), [mp.mpf(0)] * (k + 2)
            for j in range(k, -1, -1):
                A[j] = A[j + 1] + w[j]
                B[j] = B[j + 1] + w[j] * mp.exp(-self.S[j])
            self.A, self.B = A, B
            # delta at the lattice points: D[m] = delta(S_m) = A_{m+1} - e^{S_m} B_{m+1}
            self.D = [A[m + 1] - mp.exp(self.S[m]) * B[m + 1] for m in js]

    def delta_mp(self, eps):
        with mp.workdps(DPS):
            eps = mp.mpf(eps)
            m = next((j for j in range(self.k + 1) if self.S[j] > eps), None)
            if m is None:
                return mp.mpf(0)
            return self.A[m] - mp.exp(eps) * self.B[m]

    def epsilon_mp(self, delta):
        with mp.workdps(DPS):
            delta = mp.mpf(delta)
            # find the segment [S_{m-1}, S_m) with D[m-1] >= delta > D[m]
            for m in range(self.k, 0, -1):
                if self.D[m - 1] >= delta:
                    eps = mp.log((self.A[m] - delta) / self.B[m])
                    return max(mp.mpf(0), eps)
            eps = mp.log((self.A[0] - delta) / self.B[0])   # below S_0 every term counts
            return max(mp.mpf(0), eps)

    def delta_bracket(self, eps):
        d = self.delta_mp(eps)
        return _down(d), _up(d)

    def epsilon_bracket(self, delta):
        e = self.epsilon_mp(delta)
        return _down(e), _up(e)


def _mpf(x):
    """A parameter as an mpf: floats are taken at their exact binary value (as mechkit receives them)."""
    return mp.mpf(x)


def randomized_response(eps0):
    """Binary RR as in mechanisms/randomized_response.py: P(x) = e^{eps0 x}/(1+e^eps0), Q(x) = e^{eps0(1-x)}/(1+e^eps0).

    x = 1 has loss log P(1)/Q(1) = eps0, x = 0 has -eps0.  Remove: L = eps0 w.p. P(1) = e^eps0/(1+e^eps0).
    Add: L' = log Q/P = eps0 at x = 0, w.p. Q(0) = e^eps0/(1+e^eps0).  Both directions are the same law.
    """
    with mp.workdps(DPS):
        e = _mpf(eps0)
        ph, pl = mp.exp(e) / (1 + mp.exp(e)), 1 / (1 + mp.exp(e))
        law = TwoPointPLD(e, ph, -e, pl)
        return {"remove": law, "add": TwoPointPLD(e, ph, -e, pl)}


def discrete_laplace(scale):
    """Discrete Laplace, pmf proportional to r^{|k - loc|} (r = e^{-1/scale}), P at loc 1, Q at loc 0.

    L(k) = (|k| - |k - 1|)/scale is +a (a = 1/scale) for k >= 1 and -a for k <= 0.  Under P (centre 1):
    P(k >= 1) = sum_{i>=0} c r^i = 1/(1 + r)  (c = (1-r)/(1+r)), P(k <= 0) = r/(1 + r).  The add direction
    (log Q/P under Q) is +a on k <= 0 with Q-mass 1/(1+r), -a on k >= 1 with mass r/(1+r): the same law, and
    the same as randomized response with eps0 = a.  (The sums are geometric series: exact.)
    """
    with mp.workdps(DPS):
        a = 1 / _mpf(scale)
        r = mp.exp(-a)
        return {"remove": TwoPointPLD(a, 1 / (1 + r), -a, r / (1 + r)),
                "add": TwoPointPLD(a, 1 / (1 + r), -a, r / (1 + r))}


def subsampled_randomized_response(eps0, q):
    """Poisson-subsampled RR: the pair ((1-q) Q + q P, Q) with P, Q of ``randomized_response``.

    With pi = e^eps0/(1+e^eps0): P(1) = pi, Q(1) = 1 - pi, so P2(1) = (1-q)(1-pi) + q pi, P2(0) = (1-q) pi + q (1-pi).
    Remove: L = log P2/Q is log(1 - q + q e^eps0) at x = 1 (mass P2(1)), log(1 - q + q e^-eps0) at x = 0.
    Add: L' = log Q/P2 is -log(1 - q + q e^-eps0) at x = 0 (mass Q(0) = pi), -log(1 - q + q e^eps0) at x = 1.
    """
    with mp.workdps(DPS):
        e, q = _mpf(eps0), _mpf(q)
        pi, pic = mp.exp(e) / (1 + mp.exp(e)), 1 / (1 + mp.exp(e))
        p2_1, p2_0 = (1 - q) * pic + q * pi, (1 - q) * pi + q * pic
        l1, l0 = mp.log(1 - q + q * mp.exp(e)), mp.log(1 - q + q * mp.exp(-e))
        return {"remove": TwoPointPLD(l1, p2_1, l0, p2_0), "add": TwoPointPLD(-l0, pi, -l1, pic)}


# ------------------------------------------------------------------------------------------------------------
# Lattice laws (float64 with a certified error model)


def _conv(a, b, block=2048):
    """Exact-arithmetic-order direct convolution of non-negative arrays (blocks keep numpy on its fast path)."""
    if len(a) < len(b):
        a, b = b, a
    if len(b) <= block:
        return np.convolve(a, b)
    out = np.zeros(len(a) + len(b) - 1)
    for i in range(0, len(b), block):
        bc = b[i:i + block]
        out[i:i + len(a) + len(bc) - 1] += np.convolve(a, bc)
    return out


class Lattice:
    """A (sub-)probability law on ``offset + h * i``, i = 0..len(pmf)-1.

    Error model: exact = pmf' + R with pmf' within a factor (1 +- rel) of ``pmf`` entrywise and R a signed
    measure of total mass <= ``tail``.  ``vpad`` bounds the absolute error of a computed lattice value
    offset + h*i against the exact loss it stands for (rounding of the offset, the spacing and the product).
    """

    def __init__(self, offset, h, pmf, rel=0.0, tail=0.0, vpad=None):
        self.offset, self.h = float(offset), float(h)
        self.pmf = np.asarray(pmf, dtype=float)
        assert self.pmf.ndim == 1 and np.all(self.pmf >= 0)
        self.rel, self.tail = float(rel), float(tail)
        top = max(abs(self.offset), abs(self.offset + self.h * (len(self.pmf) - 1)))
        self.vpad = 8 * U * (top + 1.0) if vpad is None else float(vpad)

    def __len__(self):
        return len(self.pmf)

    @property
    def values(self):
        return self.offset + self.h * np.arange(len(self.pmf))

    @property
    def mass(self):
        return float(self.pmf.sum())

    def compose(self, other):
        if self.h != other.h and abs(self.h - other.h) > 1e-14 * self.h:
            raise ValueError("lattice spacings differ; use Composed for heterogeneous sums")
        pmf = _conv(self.pmf, other.pmf)
        n = min(len(self.pmf), len(other.pmf)) + 2        # terms per entry, + the block additions
        rel = (1 + self.rel) * (1 + other.rel) * (1 + _gamma(n + 1)) - 1
        tail = (1 + self.rel) * self.mass * other.tail + (1 + other.rel) * other.mass * self.tail \
            + self.tail * other.tail
        off = self.offset + other.offset
        top = max(abs(off), abs(off + self.h * (len(pmf) - 1)))
        return Lattice(off, self.h, pmf, rel, tail, self.vpad + other.vpad + 8 * U * (top + 1.0))

    def power(self, k):
        """k-fold self-composition by repeated squaring (exact convolutions)."""
        k = int(k)
        assert k >= 1
        result, base = None, self
        while k:
            if k & 1:
                result = base if result is None else result.compose(base)
            k >>= 1
            if k:
                base = base.compose(base)
        return result

    def delta_bracket(self, eps):
        return Composed([self]).delta_bracket(eps)


class Bracket:
    """Lattice laws ``lower`` and ``upper`` with lower <= L <= upper under a coupling (the same object if exact)."""

    def __init__(self, lower, upper=None):
        self.lower = lower
        self.upper = lower if upper is None else upper

    @property
    def exact(self):
        return self.lower is self.upper

    def power(self, k):
        lo = self.lower.power(k)
        return Bracket(lo, lo if self.exact else self.upper.power(k))

    def compose(self, other):
        lo = self.lower.compose(other.lower)
        return Bracket(lo, lo if (self.exact and other.exact) else self.upper.compose(other.upper))


def _expm1_neg(x):
    """1 - e^{x} for x <= 0, relatively accurate."""
    return -np.expm1(x)


class Composed:
    """E[(1 - e^{eps - S})_+] for S = sum of independent ``Lattice`` laws (spacings may differ).

    All parts but the largest are enumerated (outer sum of values, product of masses); the largest, Y, enters
    through suffix sums S0(t) = P(Y > t) and S1(t) = E[e^{c - Y}; Y > t]:  E f(x + Y) = S0(t) - e^{t - c} S1(t),
    t = eps - x.  Each term e^{t - y} <= 1, so the cancellation costs at most 2 gamma_N P(Y > t) in absolute
    terms; together with the value padding ``vpad`` (a term whose loss is within vpad of eps contributes at
    most vpad) the floating-point allowance is  (2 gamma_N + 4 u + vpad) * P(S > eps - vpad), added to hi and
    subtracted from lo along with the parts' relative errors and tails.
    """

    MAX_ENUM = 3_000_000

    def __init__(self, parts):
        parts = list(parts)
        self.parts = parts
        big = max(range(len(parts)), key=lambda i: len(parts[i]))
        self.Y = parts[big]
        others = [p for i, p in enumerate(parts) if i != big]
        x = np.zeros(1)
        w = np.ones(1)
        for p in others:
            keep = p.pmf > 0
            x = (x[:, None] + p.values[keep][None, :]).ravel()
            w = (w[:, None] * p.pmf[keep][None, :]).ravel()
            assert len(x) <= self.MAX_ENUM
        order = np.argsort(x)
        self.x, self.w = x[order], w[order]
        self.rel = float(np.prod([1 + p.rel for p in parts]) - 1) + _gamma(len(others) + 1)
        tail, mass = 0.0, 1.0
        for p in parts:   # exact = prod (pmf'_i + R_i): the R-terms have mass <= this
            tail = tail * (1 + p.rel) * p.mass + mass * p.tail + tail * p.tail
            mass = mass * (1 + p.rel) * p.mass
        self.tail = tail
        self.vpad = sum(p.vpad for p in parts) + 8 * U * (float(np.max(np.abs(self.x))) + 1.0)
        y = self.Y.values
        self.y = y
        span = y[-1] - y[0] if len(y) > 1 else 0.0
        if len(parts) > 1 and span > 600:
            raise ValueError("the largest part spans more than 600 nats; e^{c - y} would overflow")
        self.c = y[-1]
        b = self.Y.pmf
        assert 2 * self.vpad < self.Y.h
        self.S0 = np.append(np.cumsum(b[::-1])[::-1], 0.0)
        if len(parts) > 1:
            self.S1 = np.append(np.cumsum((b * np.exp(self.c - y))[::-1])[::-1], 0.0)
        self.gN = _gamma(len(b) + 4)

    def _sum(self, eps):
        """(E f(S), an upper bound of P(S > eps - 2 vpad)) for the computed laws."""
        t = eps - self.x
        idx = np.searchsorted(self.y, t, side="right")         # first y_j > t
        # P(Y > t - 2 vpad) <= S0[idx - 1] when 2 vpad < h_Y (one more lattice point below t)
        s0m = self.S0[np.maximum(idx - 1, 0)]
        above = float(np.sum(self.w * s0m))
        if len(self.parts) == 1:   # one part: direct sum of relatively accurate terms, no cancellation
            i0 = int(idx[0])
            y, b = self.y[i0:], self.Y.pmf[i0:]
            return float(np.sum(b * _expm1_neg(eps - y))), above
        g = self.S0[idx] - np.exp(np.minimum(t - self.c, 0.0)) * self.S1[idx]
        return float(np.sum(self.w * np.maximum(g, 0.0))), above

    def delta_bracket(self, eps):
        eps = float(eps)
        d, above = self._sum(eps)
        fp = (2 * self.gN + 4 * U + self.vpad) * 1.01 * above + _gamma(len(self.x) + 4) * d
        lo = d * (1 - self.rel) - self.tail - fp
        hi = d * (1 + self.rel) + self.tail + fp
        return max(lo, 0.0), min(hi, 1.0)

    @property
    def top(self):
        return float(self.x[-1] + self.y[-1])


class LatticeReference:
    """One direction: a certified delta bracket from the lower and upper laws, eps by a verified root search.

    eps_hi is a point where the *upper* delta bound is <= delta (so the truth is too: eps_true <= eps_hi);
    eps_lo is a point where the *lower* delta bound is > delta (the truth is > delta there and non-increasing,
    so eps_true > eps_lo).  Neither needs the computed bounds to be monotone.
    """

    def __init__(self, lower_parts, upper_parts=None):
        self.lo_sum = Composed(lower_parts)
        self.hi_sum = self.lo_sum if upper_parts is None else Composed(upper_parts)

    @classmethod
    def from_brackets(cls, brackets):
        exact = all(b.exact for b in brackets)
        return cls([b.lower for b in brackets], None if exact else [b.upper for b in brackets])

    def delta_bracket(self, eps):
        lo = self.lo_sum.delta_bracket(eps)[0]
        hi = self.hi_sum.delta_bracket(eps)[1]
        return lo, hi

    def epsilon_bracket(self, delta, tol=1e-10):
        return _eps_search(lambda e: self.lo_sum.delta_bracket(e)[0], lambda e: self.hi_sum.delta_bracket(e)[1],
                           delta, max(self.hi_sum.top, self.lo_sum.top, 0.0) + 1.0, tol)


def _eps_search(lo_fn, hi_fn, delta, top, tol):
    """(eps_lo, eps_hi) with lo_fn(eps_lo) > delta (or eps_lo = 0) and hi_fn(eps_hi) <= delta.

    Brent's method on log(bound) - log(delta) finds the crossing; the answer is then *verified* at the returned
    points (and moved outwards until it verifies), so correctness rests on the two evaluations, not on the
    root finder.
    """
    from scipy.optimize import brentq

    def one(fn, want_upper):
        if fn(0.0) <= delta:
            return 0.0
        b = top
        assert fn(b) <= delta, "the bound never falls below delta (tail allowance too large for this delta)"
        g = lambda e: math.log(max(fn(e), 1e-300)) - math.log(delta)
        try:
            r = brentq(g, 0.0, b, xtol=tol, rtol=1e-14, maxiter=200)
        except ValueError:
            r = 0.5 * b
        step = tol * max(1.0, r)
        x = r
        if want_upper:
            while fn(x) > delta:
                x = min(b, x + step)
                step *= 2
        else:
            while x > 0 and fn(x) <= delta:
                x = max(0.0, x - step)
                step *= 2
        return x
    return one(lo_fn, False), one(hi_fn, True)


# ------------------------------------------------------------------------------------------------------------
# Lattice one-shot laws


def discrete_gaussian(sigma, direction, tail=1e-30):
    """Exact lattice PLD of the discrete Gaussian (pmf proportional to exp(-(k - loc)^2/(2 sigma^2)) on Z).

    P is centred at 1, Q at 0, with the same normaliser Z = sum_j e^{-j^2/(2 sigma^2)}.
    Remove: L(k) = ((k)^2 - (k-1)^2)/(2 sigma^2) = (2k - 1)/(2 sigma^2) with k ~ P.  Add: L'(k) = (1 - 2k)/(2 sigma^2)
    with k ~ Q.  Both lie on the lattice of spacing 1/sigma^2.  The pmf is kept for |k - centre| <= T, where the
    dropped mass  2 sum_{j > T} e^{-j^2/(2s^2)} / Z <= 2 e^{-(T+1)^2/(2s^2)} / ((1 - e^{-(T+1)/s^2}) Z)  (ratio of
    consecutive terms <= e^{-(T+1)/s^2}) is below ``tail``; that bound is carried as the certified ``tail``.
    Masses are computed in mpmath and rounded once (rel 2u).
    """
    with mp.workdps(40):
        s2 = mp.mpf(sigma) ** 2
        Z = mp.nsum(lambda j: mp.exp(-j ** 2 / (2 * s2)), [-mp.inf, mp.inf])

        def dropped(T):
            return 2 * mp.exp(-(T + 1) ** 2 / (2 * s2)) / ((1 - mp.exp(-(T + 1) / s2)) * Z)
        T = 0
        while dropped(T) >= tail:
            T += 1
        dev = list(range(-T, T + 1))                       # k - centre
        mass = [mp.exp(-j ** 2 / (2 * s2)) / Z for j in dev]
        bound = float(dropped(T)) * (1 + 1e-12)
    if direction == "remove":        # k = 1 + j ascending; L = (2k-1)/(2s^2) ascending
        kmin = 1 - T
        offset = (2 * kmin - 1) / (2 * sigma ** 2)
        pmf = [float(m) for m in mass]
    elif direction == "add":         # k = j (centre 0); L' = (1 - 2k)/(2s^2); ascending in L' means k descending
        kmax = T
        offset = (1 - 2 * kmax) / (2 * sigma ** 2)
        pmf = [float(m) for m in mass[::-1]]
    else:
        raise ValueError(direction)
    return Lattice(offset, 1.0 / sigma ** 2, np.array(pmf), rel=2 * U, tail=bound)


def _laplace_cdf_diff(x1, x2, loc, b):
    """P(x1 < X <= x2) for X ~ Lap(loc, b), x1 < x2 on one side of loc, as a relatively accurate difference."""
    x1, x2 = np.asarray(x1, float), np.asarray(x2, float)
    w = -np.expm1(-(x2 - x1) / b)
    left = x2 <= loc          # F = e^{(x - loc)/b}/2: F(x2) - F(x1) = e^{(x2-loc)/b}/2 (1 - e^{-(x2-x1)/b})
    right = x1 >= loc         # F = 1 - e^{-(x - loc)/b}/2: difference = e^{-(x1-loc)/b}/2 (1 - e^{-(x2-x1)/b})
    assert np.all(left | right)
    return np.where(left, 0.5 * np.exp((x2 - loc) / b) * w, 0.5 * np.exp(-(x1 - loc) / b) * w)


def subsampled_laplace(scale, q, direction, M):
    """Certified lattice ``Bracket`` of the (Poisson-subsampled, rate q; q = 1: plain) Laplace mechanism.

    P = Lap(1, b), Q = Lap(0, b), b = scale, a = 1/b; with subsampling the pair is (P2, Q), P2 = (1-q) Q + q P.
    L0(x) = log P/Q = (|x| - |x - 1|)/b is -a on x <= 0, +a on x >= 1, (2x - 1)/b in between (increasing).
    Remove: L = g(L0(x)) under P2, g(l) = log(1 - q + q e^l) increasing.  Add: L' = -g(L0(x)) under Q, decreasing.
    So in each direction L has two atoms (x <= 0 and x >= 1, masses from Laplace tails) and a continuous part
    whose cell masses are measures of x-intervals: the preimage of (v1, v2] is (x(v1), x(v2)] (or reversed)
    with x(v) = (b log((e^v - (1 - q))/q) + 1)/2 (remove) or x(-v) (add), and a Laplace interval's mass is a
    closed form (``_laplace_cdf_diff``).  Grid: offset = smallest loss, h = (largest - smallest)/M, so both atoms
    are lattice points; continuous cell j goes to point j+1 (upper) or j (lower).
    The cell masses are products/quotients of exp, log and expm1 of moderate arguments (relative error < 40 u
    each, plus a relative shift of the cell edges < 1e-12 of the cell width for cells wider than 1e-6); the
    model carries rel = 1e-10 for them, orders of magnitude above that.
    """
    b, q = float(scale), float(q)
    a = 1.0 / b
    gl = lambda l: math.log1p(q * math.expm1(l))           # log(1 - q + q e^l)
    if direction == "remove":
        vmin, vmax = gl(-a), gl(a)
        meas = [((1 - q), 0.0), (q, 1.0)]                  # P2 = (1-q) Lap(0) + q Lap(1)
        m_lo = (1 - q) * 0.5 + q * 0.5 * math.exp(-a)      # P2(x <= 0): loss vmin
        m_hi = (1 - q) * 0.5 * math.exp(-a) + q * 0.5      # P2(x >= 1): loss vmax
    elif direction == "add":
        vmin, vmax = -gl(a), -gl(-a)
        meas = [(1.0, 0.0)]                                # Q = Lap(0)
        m_lo = 0.5 * math.exp(-a)                          # Q(x >= 1): loss -g(a) = vmin
        m_hi = 0.5                                         # Q(x <= 0): loss -g(-a) = vmax
    else:
        raise ValueError(direction)
    h = (vmax - vmin) / M
    edges = vmin + h * np.arange(M + 1)
    edges[0], edges[-1] = vmin, vmax

    def x_of(v):     # preimage of a remove-direction loss value v under g o L0
        l0 = np.log1p(np.expm1(v) / q) if q < 1 else v                # log((e^v - 1 + q)/q)
        return np.clip((b * l0 + 1.0) / 2.0, 0.0, 1.0)
    if direction == "remove":
        x1, x2 = x_of(edges[:-1]), x_of(edges[1:])
    else:            # L' = -g(L0(x)) <= v  <=>  g(L0(x)) >= -v: cell (v1, v2] <-> x in [x(-v2), x(-v1))
        x1, x2 = x_of(-edges[1:]), x_of(-edges[:-1])
    cell = np.zeros(M)
    for wgt, loc in meas:
        cell += wgt * _laplace_cdf_diff(x1, x2, loc, b)
    up = np.zeros(M + 1)
    dn = np.zeros(M + 1)
    up[1:] += cell
    dn[:-1] += cell
    for arr in (up, dn):
        arr[0] += m_lo
        arr[-1] += m_hi
    rel = 1e-10
    return Bracket(Lattice(vmin, h, dn, rel=rel), Lattice(vmin, h, up, rel=rel))


def laplace(scale, direction, M):
    """Certified lattice bracket of the Laplace mechanism: ``subsampled_laplace`` with q = 1 (L = L0)."""
    return subsampled_laplace(scale, 1.0, direction, M)


# ------------------------------------------------------------------------------------------------------------
# Both directions


class Reference:
    """The truth of a composed query: the maximum over the two directions of certified brackets."""

    def __init__(self, remove, add):
        self.dirs = {"remove": remove, "add": add}

    def delta(self, eps):
        b = [self.dirs[d].delta_bracket(eps) for d in DIRECTIONS]
        return max(x[0] for x in b), max(x[1] for x in b)

    def epsilon(self, delta):
        b = [self.dirs[d].epsilon_bracket(delta) for d in DIRECTIONS]
        return max(x[0] for x in b), max(x[1] for x in b)


def binomial_reference(laws, k):
    """``laws``: {"remove": TwoPointPLD, "add": TwoPointPLD}, composed k times (exact)."""
    return Reference(laws["remove"].composed(k), laws["add"].composed(k))


def lattice_reference(components):
    """``components``: list of (direction -> one-shot Bracket or Lattice function, count).

    Each mechanism's one-shot bracket is composed with itself on its own lattice; different mechanisms are
    combined by ``Composed`` (exact evaluation of the convolution at the functional).  A count may be split into
    two equal halves (``("half", fn, k)``) so that E f(X + X') is evaluated by suffix sums instead of forming
    the full 2x-long convolution (same value, half the lattice length).
    """
    out = {}
    for d in DIRECTIONS:
        brackets = []
        for comp in components:
            if comp[0] == "half":
                _, fn, k = comp
                assert k % 2 == 0
                b = _as_bracket(fn(d)).power(k // 2)
                brackets += [b, b]
            else:
                fn, k = comp
                brackets.append(_as_bracket(fn(d)).power(k))
        out[d] = LatticeReference.from_brackets(brackets)
    return Reference(out["remove"], out["add"])


def _as_bracket(x):
    return x if isinstance(x, Bracket) else Bracket(x)


# ------------------------------------------------------------------------------------------------------------
# Closed forms and direct sums over outputs (for the self-checks)


def hockey_stick_sum(p, q, eps, ks):
    """sum_k (p(k) - e^eps q(k))_+ over the given outputs, in mpmath (direct summation over outputs)."""
    with mp.workdps(DPS):
        a = mp.exp(mp.mpf(eps))
        return sum(max(mp.mpf(0), p(k) - a * q(k)) for k in ks)


def rr_delta_closed_form(eps0, eps):
    """One-shot RR: H_{e^eps}(P||Q) = (e^eps0 - e^eps)/(1 + e^eps0) for eps < eps0, else 0."""
    with mp.workdps(DPS):
        e0, e = mp.mpf(eps0), mp.mpf(eps)
        return max(mp.mpf(0), (mp.exp(e0) - mp.exp(e)) / (1 + mp.exp(e0)))


def laplace_delta_closed_form(scale, eps):
    """One-shot Laplace (sensitivity 1): delta(eps) = 1 - e^{(eps - a)/2} for 0 <= eps < a = 1/scale."""
    a = 1.0 / scale
    return max(0.0, -math.expm1((eps - a) / 2.0))
