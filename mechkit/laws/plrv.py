"""``PLRV``: the privacy-loss random variable of one direction of a bound mechanism (remove: L = log p/q under P;
add: log q/p under Q; ``dual``: the same loss under the other distribution): CDF, log-survival, atoms, support,
the CGF and its derivatives, tilted statistics, the hockey-stick divergence and epsilon(delta).
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from ..engine.logspace import log1mexp
from ..errors import DerivationError, ParameterError, check_eps_array, check_finite_real

#: losses of at most this size are evaluated first when the median is bracketed (``PLRV._coarse_below``)
MODERATE = 1e12


class PLRV:
    """A privacy-loss random variable: a direction of a mechanism, under its own measure or the dual one.

    ``remove``: L = log p/q, output ~ P.  ``add``: log q/p, output ~ Q.  ``.dual``: same loss, other measure.
    The distribution functions and ``cgf`` are vectorised over their first argument.  Z below is the loss.
    Made by ``Mechanism`` (``m.remove``, ``m.add``); not constructed directly.

    Parameters
    ----------
    mech : the bound ``Mechanism`` (kept as ``mechanism``).
    direction : 'remove' or 'add'.
    dual : the loss under the other measure (``is_dual``).
    """

    def __init__(self, mech: object, direction: str, dual: bool = False) -> None:  # a Mechanism (made by it)
        self.mechanism = mech
        self.direction = direction
        self.is_dual = dual
        self._med = self._atoms = self._dual = None
        self._sign = 1.0 if direction == "remove" else -1.0
        under_q = (direction == "add") != dual  # the measure is Q: remove's dual, add's own
        self._m = int(under_q)
        self._a, self._b = self._sign, -1.0 if under_q else 0.0  # K_this(t) = K(a t + b), K(tau) = log E_P e^(tau L)

    @property
    def dual(self) -> PLRV:
        """The same privacy loss under the other measure (cached)."""
        if self._dual is None:
            self._dual = PLRV(self.mechanism, self.direction, not self.is_dual)
            self._dual._dual = self
        return self._dual

    def __repr__(self):
        return f"<PLRV {self.direction}{' dual' if self.is_dual else ''} of {self.mechanism.name}>"

    @property
    def _core(self):
        return self.mechanism.core

    _out = staticmethod(lambda x, like: float(x[0]) if np.ndim(like) == 0 else x)

    def _s(self, s):
        s = np.atleast_1d(np.asarray(s, dtype=float))
        if np.any(np.isnan(s)):
            raise ParameterError("s must not be nan")
        return s

    def _tails(self, v, want_lower, prob, split=None):
        """P(Z <= v) (want_lower) or P(Z > v), or its log (not ``prob``), each point computed from one side.

        Below ``split`` (default: the median) P(Z <= v) is evaluated, at and above it P(Z > v), each summed from
        positive parts; the other side is its complement: each point evaluates a side of probability at most about
        1/2: no log loses accuracy (``cdf``, ``sf``: split +-inf, no median search; a probability is as accurate
        summed).  In loss space (Z = sign L) the core's split is at sign * split; Z = -L: {Z <= v} = {L >= -v}."""
        split = self._median() if split is None else split
        pos = self._sign > 0
        return self._core.tails(self._m, v if pos else -v, self._sign * split, pos, want_lower != pos, prob)

    def _lower(self, v):  # log P(Z <= v) directly
        return self._tails(v, True, False, np.inf)

    def _first_above_half(self, pts, half, stride):
        """The first k with log P(Z <= pts[k]) > half (len(pts) if none; pts increasing): every stride-th point, then
        those between the last two (the CDF is monotone: the full scan's index)."""
        start, end = 0, len(pts)
        if stride > 1 and len(pts) > 2 * stride:
            coarse = np.unique(np.append(np.arange(0, len(pts), stride), len(pts) - 1))
            below = self._coarse_below(pts[coarse], half)
            if below.all():
                return len(pts)
            j = int(np.argmin(below))
            start, end = (int(coarse[j - 1]) + 1 if j > 0 else 0), int(coarse[j])
        below = self._lower(pts[start:end]) <= half
        return start + int(np.argmin(below)) if not below.all() else end

    def _coarse_below(self, pts, half):
        """log P(Z <= pts) <= half at increasing pts as far as it decides ``_first_above_half``'s index: |v| <= MODERATE
        first (~1 us each), the far ones (20-50 us) on a side only where the crossing may lie (the CDF is monotone)."""
        mid = np.flatnonzero(np.abs(pts) <= MODERATE)
        if not mid.size:
            return self._lower(pts) <= half
        below = np.empty(pts.size, dtype=bool)
        below[mid] = self._lower(pts[mid]) <= half
        left, right = slice(0, mid[0]), slice(mid[-1] + 1, pts.size)
        below[left] = True if below[mid[0]] else self._lower(pts[left]) <= half
        below[right] = self._lower(pts[right]) <= half if below[mid[-1]] else False
        return below

    def _median(self):
        """A point m near the median (P(Z <= s) about 1/2): only accuracy depends on it, and mildly, so two
        vectorised passes suffice: a geometric scan (``_first_above_half``), then a linear one inside its bracket."""
        if self._med is None:
            half = -math.log(2.0)
            mags = np.geomspace(1e-12, 1e300, 157)
            pts = np.concatenate((-mags[::-1], [0.0], mags))
            lo, hi = -np.inf, np.inf
            for level in range(2):
                k = self._first_above_half(pts, half, stride=16 if level == 0 else 1)
                if k == len(pts):  # P(Z <= s) <= 1/2 everywhere scanned: mass at +inf above 1/2
                    lo = pts[-1]
                    break
                hi = pts[k]
                lo = pts[k - 1] if k > 0 else -np.inf
                if not np.isfinite(lo):
                    break
                pts = np.linspace(lo, hi, 65)[1:-1]
                if not pts.size or not (lo < pts[0]):
                    break
            if np.isfinite(hi):
                # when the crossing is a jump (a point mass), split exactly there: at and above the atom the
                # upper side is computed directly, so P(Z > atom) stays exact (e.g. 0 above the top atom)
                vals, _ = self.atoms()
                cand = vals[(vals > lo) & (vals <= hi)]
                if cand.size:
                    ok = self._lower(cand) > half
                    if ok.any():
                        hi = float(cand[np.argmax(ok)])
            self._med = float(hi) if np.isfinite(hi) else float(lo)
        return self._med

    def logsf(self, s: float | ArrayLike) -> float | np.ndarray:
        """log P(Z > s), accurate in both tails.

        Parameters
        ----------
        s : a value of the loss, or a 1-D array of them; nan raises a ``ParameterError``.

        Returns
        -------
        A float for a scalar ``s``, else an array.
        """
        return self._out(self._tails(self._s(s), False, False), s)

    def logcdf(self, s: float | ArrayLike) -> float | np.ndarray:
        """log P(Z <= s), accurate in both tails.

        Parameters
        ----------
        s : a value of the loss, or a 1-D array of them; nan raises a ``ParameterError``.

        Returns
        -------
        A float for a scalar ``s``, else an array.
        """
        return self._out(self._tails(self._s(s), True, False), s)

    def sf(self, s: float | ArrayLike) -> float | np.ndarray:
        """P(Z > s), summed directly from positive parts at every s (no complement, no median: ``_tails``).

        Parameters
        ----------
        s : a value of the loss, or a 1-D array of them; nan raises a ``ParameterError``.

        Returns
        -------
        A float for a scalar ``s``, else an array.
        """
        return self._out(self._tails(self._s(s), False, True, -np.inf), s)

    def cdf(self, s: float | ArrayLike) -> float | np.ndarray:
        """P(Z <= s), summed directly from positive parts at every s (as ``sf``).

        Parameters
        ----------
        s : a value of the loss, or a 1-D array of them; nan raises a ``ParameterError``.

        Returns
        -------
        A float for a scalar ``s``, else an array.
        """
        return self._out(self._tails(self._s(s), True, True, np.inf), s)

    def pdf(self, s: float | ArrayLike) -> float | np.ndarray:
        """Density of the continuous part (atoms excluded).

        Parameters
        ----------
        s : a value of the loss, or a 1-D array of them; nan raises a ``ParameterError``.

        Returns
        -------
        A float for a scalar ``s``, else an array.
        """
        v = self._s(s)
        return self._out(self._core.pdf(self._m, self._sign * v), s)

    def atoms(self) -> tuple[np.ndarray, np.ndarray]:
        """(values, probabilities) of the point masses, +/-inf included, sorted by value (copies of a cache)."""
        if self._atoms is None:
            at = self._core.atoms
            lm = at.logmass(self._m)
            keep = lm > -np.inf
            vals = self._sign * at.values[keep]
            probs = np.exp(lm[keep])
            order = np.argsort(vals)
            self._atoms = (vals[order], probs[order])
        return self._atoms[0].copy(), self._atoms[1].copy()

    @property
    def support(self) -> tuple[float, float]:
        """(smallest, largest) value of Z with positive mass (+-inf where unbounded)."""
        lo, hi = self._core.support
        return (lo, hi) if self._sign > 0 else (-hi, -lo)

    @property
    def inf_mass(self) -> float:
        """P(Z = +inf): the probability of an infinite privacy loss (where only one density is positive)."""
        if not self.has_atoms:
            return 0.0
        vals, probs = self.atoms()
        return float(probs[vals == np.inf].sum())

    @property
    def finite_mass(self) -> float:
        """P(Z finite): 1 minus the point masses at +-inf (where only one density is positive)."""
        if not self.has_atoms:  # most continuous laws (``atoms`` on empty arrays: ~10 us a new PLRV)
            return 1.0
        vals, probs = self.atoms()
        return float(1.0 - probs[np.isinf(vals)].sum())

    def finite_part(self) -> PLRV:
        """Z restricted to its finite values (this PLRV where there are no masses at +-inf; cached): a sub-probability
        of total mass ``finite_mass``, whose CGF is ``cgf_finite`` plus the log of that mass (the SPA and Edgeworth
        compose these, adding the masses at +inf exactly).  It answers the generating-function queries (``cgf``,
        ``cgf_vector``, ``tilt_stats``, ``tilted_abs3``, ``pdf``, ``atoms``, ``support``), not the CDFs."""
        got = self.__dict__.get("_finite_view")
        if got is None:
            core = self._core
            got = self if core.finite_part() is core else _FinitePart(self)
            self._finite_view = got
        return got

    def cgf_finite(self, t: float, order: int = 0) -> float:
        """log E[exp(t Z); Z finite]: the generating function of the finite part (order 0), or its derivative
        E[Z e^(t Z); Z finite] / E[e^(t Z); Z finite] (order 1: at t = 0, the mean of the finite part).  ``cgf(t)``
        without mass at +inf; with it, the composers bound the finite part's tails (the mass apart: notes.md 1.1).

        Parameters
        ----------
        t : a finite real number.
        order : 0 or 1.

        Returns
        -------
        The value (``finite_part().cgf``); +inf where it diverges.

        Raises
        ------
        ParameterError : t not a finite real number.
        """
        t = float(check_finite_real("t", t))
        if order not in (0, 1):
            raise ParameterError(f"order must be 0 or 1, got {order!r}")
        return (self if self.inf_mass == 0.0 else self.finite_part()).cgf(t, order)

    def cgf(self, t: float | ArrayLike, order: int = 0) -> float | np.ndarray:
        """d^order/dt^order log E[exp(t Z)]; +inf where the MGF diverges.

        Parameters
        ----------
        t : a finite real number, or a 1-D array of them (then the result is an array; a float for a scalar).
        order : the derivative, 0..6.

        Raises
        ------
        ParameterError : ``order`` not in 0..6, or ``t`` not finite.
        """
        if order not in range(7):
            raise ParameterError(f"order must be an integer in [0, 6], got {order!r}")
        if isinstance(t, float) and math.isfinite(t):  # a scalar (the accountants' Renyi scans): no array round trip
            return float(self._a ** order * self._core.cgf(self._a * t + self._b, order))
        scalar = np.ndim(t) == 0
        ts = np.atleast_1d(np.asarray(t, dtype=float))
        if np.any(~np.isfinite(ts)):
            raise ParameterError("t must be finite")
        out = np.array([self.cgf(x, order) for x in ts])  # each a finite numpy float: the scalar path
        return float(out[0]) if scalar else out

    def cgf_unchecked(self, t: float) -> float:
        """``cgf(t)`` unchecked, for accountants using the engine's tilted moments anyway: the tilted-moment pass where
        the law is one monotone piece without atoms (``Law.cgf_tilted``; the same to the quadrature's tolerance).

        Parameters
        ----------
        t : a finite float (not checked).
        """
        return self._core.cgf_tilted(self._a * t + self._b)

    def cgf_vector(self, t: float, n: int = 4) -> np.ndarray:
        """[K(t), K'(t), ..., K^(n)(t)] in one pass; +inf entries where the MGF diverges.

        Parameters
        ----------
        t : a finite real number.
        n : the highest derivative, 0..6.

        Returns
        -------
        An array of n + 1 floats.

        Raises
        ------
        ParameterError : ``n`` not in 0..6, or ``t`` not a finite real number.
        """
        if n not in range(7):
            raise ParameterError(f"n must be an integer in [0, 6], got {n!r}")
        t = check_finite_real("t", t)
        v = np.array(self._core.cgf_vector(self._a * t + self._b, n), dtype=float)
        return v * self._a ** np.arange(n + 1)

    def tilted_abs3(self, t: float, power: int = 3) -> float:
        """E|Z_t - K'(t)|^power at tilt t: the absolute third central moment (default) or mean absolute deviation (1).

        Parameters
        ----------
        t, power : the tilt, a finite real number; 3 or 1.

        Raises
        ------
        ParameterError : t not a finite real number, or power not 1 or 3.
        """
        if power not in (1, 3):
            raise ParameterError(f"power must be 1 or 3, got {power!r}")
        return float(self._core.tilted_abs(self._a * check_finite_real("t", t) + self._b, power))

    def cumulants_abs3_unchecked(self, t: float, n: int) -> tuple[np.ndarray, float]:
        """([K(t), ..., K^(n)(t)], A >= E|Z_t - K'(t)|^3) for accountants: ``Law.cumulants_abs3``, memoised (two
        tilted passes where the loss has one monotone piece and no atoms).

        Parameters
        ----------
        t : a finite float (not checked).
        n : the highest derivative, 2..6 (not checked).
        """
        vec, A = self._core.cumulants_abs3(self._a * t + self._b, n)
        return vec * self._a ** np.arange(n + 1), A

    def tilt_mode(self, t: float) -> float:
        """About where the t-tilted law of the privacy loss has its bulk (``Law.tilt_mode``): a centre for
        ``tilt_stats`` where no model of K'(t) is at hand; nan where the CGF is infinite at t.

        Parameters
        ----------
        t : the tilt, a finite real number.

        Raises
        ------
        ParameterError : t not a finite real number.
        """
        t = check_finite_real("t", t)
        return self._a * self._core.tilt_mode(self._a * t + self._b)

    def tilt_stats_about_mode(self, t: float, n: int = 4) -> tuple[np.ndarray, float, float]:
        """``tilt_stats`` about the t-tilted law's mode (``Law.tilt_stats_about``: no model of K'(t) needed; one pass
        where the loss has one monotone piece).  Not memoised.

        Parameters
        ----------
        t : the tilt, a finite real number.
        n : the highest derivative, 2..6.

        Returns
        -------
        ([K(t), ..., K^(n)(t)], A, the centre used).

        Raises
        ------
        ParameterError : t not a finite real number.
        """
        t = check_finite_real("t", t)
        vec, A, c = self._core.tilt_stats_signed(self._a * t + self._b, math.nan, n, self._a)
        return vec, float(A), self._a * c

    def tilt_stats(self, t: float, center: float, n: int = 4) -> tuple[np.ndarray, float]:
        """([K(t), ..., K^(n)(t)], A) with A >= E|Z_t - K'(t)|^3, from one quadrature pass.

        Memoised per (t, center, n).  The saddle-point accountant's certificate evaluations use it.

        Parameters
        ----------
        t : the tilt, a finite real number.
        center : a guess of K'(t), finite (the moments are integrated about it; A is exact when it is K'(t)).
        n : the highest derivative, 2..6.

        Raises
        ------
        ParameterError : t or center not a finite real number.
        """
        vec, A = self.tilt_stats_unchecked(check_finite_real("t", t), check_finite_real("center", center), n)
        return np.array(vec), A

    # -- for accountants: unchecked fast paths and facts about the law ---------------------------------------------
    @property
    def has_closed_cgf(self) -> bool:
        """True where the CGF and its derivatives come from a closed form (checked against quadrature at bind)."""
        return self._core.closed_cgf is not None

    @property
    def has_atoms(self) -> bool:
        """True where the law of the loss has point masses (finite ones: flat pieces or a discrete support)."""
        return bool(self._core.atoms.values.size)

    @property
    def has_monotone_pieces(self) -> bool:
        """True where the law has a continuous part (pieces of the output on which the loss is strictly monotone)."""
        return bool(self._core.mono)

    def memo(self, name: str) -> dict:
        """A dict on this PLRV for an accountant's memo (shared by every composition of the mechanism, as long-lived).

        Parameters
        ----------
        name : the memo's name (one dict per name, made on first use).
        """
        memos = self.__dict__.setdefault("_accountant_memos", {})
        return memos.setdefault(name, {})

    def tilt_stats_unchecked(self, t: float, center: float, n: int) -> tuple[list, float]:
        """``tilt_stats`` for accountants that have checked t and center: ([K(t), ..., K^(n)(t)] as a list, A),
        memoised; the list is shared with the memo (read it, do not change it).

        Parameters
        ----------
        t, center : finite floats (not checked).
        n : the highest derivative, 2..6.
        """
        memo = self.__dict__.setdefault("_tilt_memo", {})
        key = (t, center, n)
        got = memo.get(key)
        if got is None:
            if len(memo) >= 4096:
                memo.clear()
            vec, A, _ = self._core.tilt_stats_signed(self._a * t + self._b, self._a * center, n, self._a)
            got = memo[key] = (vec.tolist(), float(A))
        return got

    def mgf(self, t: float | ArrayLike) -> float | np.ndarray:
        """E[exp(t Z)] = exp(cgf(t)); +inf where it diverges.

        Parameters
        ----------
        t : a finite real number, or a 1-D array of them.

        Raises
        ------
        ParameterError : ``t`` not finite.
        """
        return np.exp(self.cgf(t))

    def cumulants(self, t: float = 0.0, n: int = 6) -> np.ndarray:
        """[K'(t), ..., K^(n)(t)]: mean, variance and higher cumulants of the t-tilted variable.

        Parameters
        ----------
        t : the tilt, a finite real number (default 0: the cumulants of Z itself).
        n : the highest order, at most 6.

        Raises
        ------
        ParameterError : ``t`` not finite, or ``n`` above 6.
        """
        return np.array([self.cgf(t, k) for k in range(1, n + 1)])

    # -- hockey stick ----------------------------------------------------------------------------
    def log_hockey_stick(self, eps: float | ArrayLike) -> np.ndarray:
        """log of P(Z > eps) - e^eps P(Z' > eps) (Z' the dual) = log E[(1 - e^(eps - Z))_+].

        Parameters
        ----------
        eps : epsilon >= 0, or a 1-D array of them (not checked beyond nan: see ``delta``).

        Returns
        -------
        A 1-D array; -inf where the divergence is 0.
        """
        la = np.atleast_1d(self.logsf(np.asarray(eps, float)))
        lb = np.atleast_1d(self.dual.logsf(np.asarray(eps, float))) + eps
        out = np.full(la.shape, -np.inf)
        pos = la > lb
        with np.errstate(all="ignore"):
            out[pos] = la[pos] + log1mexp(lb[pos] - la[pos])
        # an atom at +inf has no dual mass: la finite, lb = -inf handled above (log1mexp(-inf) = 0)
        return out

    def delta(self, epsilon: float | ArrayLike) -> float | np.ndarray:
        """delta(epsilon) = E[(1 - e^(epsilon - Z))_+] of this direction.

        Parameters
        ----------
        epsilon : in (-inf, inf], or a 1-D array of such values (negative values as dp_accounting allows).

        Returns
        -------
        A float for a scalar epsilon, else a 1-D array.

        Raises
        ------
        ParameterError : epsilon not real, nan or -inf.
        """
        eps = check_eps_array(epsilon)
        r = np.exp(self.log_hockey_stick(eps))
        return float(r[0]) if np.ndim(epsilon) == 0 else r

    def largest_loss(self) -> float:
        """The essential supremum of Z: the smallest epsilon with delta(epsilon) = 0, and the Renyi divergence of
        order infinity of this direction; inf where Z is unbounded or has mass at +inf.

        Returns
        -------
        The value (at least 0: E[Z] is a Kullback-Leibler divergence).
        """
        return math.inf if self.inf_mass > 0.0 else max(float(self.support[1]), 0.0)

    def epsilon(self, delta: float) -> float:
        """Smallest epsilon >= 0 with delta(epsilon) <= delta for this direction (inf when no finite one exists).

        Parameters
        ----------
        delta : in [0, 1); at 0 the answer is ``largest_loss()``.

        Raises
        ------
        ParameterError : delta not in [0, 1), or (a loss with unbounded support) no epsilon below 1e6 reaches it.
        """
        d = check_finite_real("delta", delta, low=0.0, high=1.0, low_open=False)
        if d == 0.0:
            return self.largest_loss()
        logd = math.log(d)
        f = lambda e: float(self.log_hockey_stick(np.array([e]))[0]) - logd
        if f(0.0) <= 0:
            return 0.0
        hi_support = self.support[1]
        if self.inf_mass >= d:
            return math.inf
        if math.isfinite(hi_support):
            hi = max(hi_support, 1e-12)
            if f(hi) > 0:
                return math.inf
        else:
            hi = 1.0
            while f(hi) > 0:
                hi *= 2.0
                if hi > 1e6:
                    raise ParameterError(f"no epsilon below 1e6 reaches delta = {d}")

        def g(e):
            v = f(e)
            return v if math.isfinite(v) else -1e300

        from scipy.optimize import brentq  # here: SciPy's optimize costs a bind ~0.3 s of imports

        return float(brentq(g, 0.0, hi, xtol=1e-13, rtol=8.9e-16, maxiter=500))


def composed_inf_mass(items: object, direction: str) -> float:
    """P(L = +inf) of a composition's loss in one direction: an infinite loss in any one run is infinite in the
    sum, so 1 - prod_i (1 - a_i)^k_i with a_i each mechanism's ``inf_mass`` (``items``: (mechanism, count) pairs)."""
    log_finite = 0.0
    for m, c in items:
        a = m.plrv(direction).inf_mass
        if a > 0.0:
            log_finite += c * math.log1p(-a) if a < 1.0 else -math.inf
    return -math.expm1(log_finite) if log_finite < 0.0 else 0.0


class _FinitePart(PLRV):
    """``PLRV.finite_part``: the core's finite part (``Law.finite_part``) in ``whole``'s direction and measure."""

    def __init__(self, whole):
        super().__init__(whole.mechanism, whole.direction, whole.is_dual)
        self.whole = whole

    _core = property(lambda self: self.mechanism.core.finite_part())
    dual = property(lambda self: self.whole.dual.finite_part(), doc="The finite part of the whole law's dual.")
    finite_mass = property(lambda self: self.whole.finite_mass, doc="Its total mass: the whole law's P(Z finite).")

    def __repr__(self):
        return f"<PLRV {self.direction}{' dual' if self.is_dual else ''} finite part of {self.mechanism.name}>"

    def _tails(self, v, want_lower, prob, split=None):
        raise DerivationError("the finite part of a privacy loss answers generating-function queries only; "
                              "ask the whole PLRV for its distribution functions")
