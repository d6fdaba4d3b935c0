"""The law of L for pmfs on the integers or a finite set: the support enumerated over its significant range, L and
the masses as arrays, the CGF by exact sums.
"""
from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np

from ..engine import numerics as N
from ..errors import SpecificationError
from .core import (NEG_INF, NORMALISATION_TOL, AtomSet, DensityUndefined, Law, combine_cgf, lse, memo_abs, memo_cgf,
                   memo_vector)


#: a tabulated pmf (``_PythonKernel``) keeps the points where p or q exceeds e^-690 (about 1e-300): beyond, SciPy's
#: special functions underflow and would make false zeros, hence false losses of +-inf; what is dropped changes no
#: delta above 1e-300 (the FFT's and SPA's answers are far above it)
TABULATED_FLOOR = -690.0


class DiscreteCore(Law):
    """Law of L for probability mass functions on a finite set or the integers."""

    MAX_POINTS = 20_000_000
    NUMERIC_CGF = "exact sum"

    def __init__(self, structure, mod, theta):
        self.st, self.mod, self.theta = structure, mod, np.ascontiguousarray(theta, dtype=float)
        compiled = N.kernel_refs(mod)
        slow = set(structure.get("python_kernels", ()))
        ref = lambda name: _PythonKernel(mod, name, self.theta) if name in slow else compiled(name)
        lp_k, lq_k = ref(structure["logp"]), ref(structure["logq"])
        self._lp, self._lq = lp_k, lq_k
        if structure["kind"] == "finite":
            xs = np.asarray(structure["points"], float)
        else:
            xs = self._integer_window()
        with np.errstate(all="ignore"):
            lp = self._map(lp_k, xs)
            lq = self._map(lq_k, xs)
        for name, arr in (("p", lp), ("q", lq)):
            bad = np.isnan(arr) | (arr == np.inf)
            if bad.any():
                raise DensityUndefined(name, xs[bad][0], "pmf")
            total = math.exp(lse(arr))
            if not abs(total - 1.0) <= NORMALISATION_TOL:
                raise SpecificationError(f"pmf {name} sums to {total:.10g} over the domain, not 1 "
                                         f"(tolerance {NORMALISATION_TOL:g}); check the normalising constant")
        # the window holds all mass down to e^-800: renormalising removes the normaliser's rounding
        lp = lp - lse(lp)
        lq = lq - lse(lq)
        keep = (lp > NEG_INF) | (lq > NEG_INF)
        if slow:  # tabulated in doubles: below e^-690 a special function underflows to 0 (a false zero of p or q)
            keep &= np.maximum(lp, lq) > TABULATED_FLOOR
        lp, lq, xs = lp[keep], lq[keep], xs[keep]
        if not np.any((lp > NEG_INF) & (lq > NEG_INF)):
            raise SpecificationError("p and q have disjoint supports: the privacy loss is infinite everywhere")
        with np.errstate(all="ignore"):
            Lk = self._map(ref(structure["L"]), xs)
            # the derived loss is exact on flat stretches where lp - lq would pick up rounding
            # where one log-pmf kernel underflows to -inf (e.g. a mixture's log evaluated as log(sum of exps)) but
            # the derived loss is finite, that pmf is positive there: p = q e^L exactly (not an atom at +-inf)
            fin = np.isfinite(Lk)
            lp = np.where((lp == NEG_INF) & (lq > NEG_INF) & fin, lq + Lk, lp)
            lq = np.where((lq == NEG_INF) & (lp > NEG_INF) & fin, lp - Lk, lq)
            Lk = np.where(fin & (np.abs(Lk - (lp - lq)) <= 1e-9 * (1 + np.abs(Lk))), Lk, lp - lq)
            L = np.where(lq == NEG_INF, np.inf, np.where(lp == NEG_INF, -np.inf, Lk))
        self.points = xs
        self.atoms = AtomSet(L, lp, lq)
        self.mono = []
        self.support = (float(self.atoms.values[0]), float(self.atoms.values[-1]))

    def _map(self, kernel, xs):
        return kernel.map(xs) if isinstance(kernel, _PythonKernel) else N.vmap(kernel, xs, self.theta)

    def _integer_window(self):
        th = self.theta

        def g(k):
            return max(self._lp(float(k), th), self._lq(float(k), th))

        cands = [0] + [s * 2 ** j for j in range(0, 45) for s in (-1, 1)]
        vals = [g(k) for k in cands]
        best = int(np.nanargmax(vals)) if not all(v != v for v in vals) else 0
        kmax, gmax = cands[best], vals[best]
        if not math.isfinite(gmax):
            for k in cands:  # a NaN: the pmf is negative there, or its kernels overflow at the parameter values
                for name, f in (("p", self._lp), ("q", self._lq)):
                    if math.isnan(f(float(k), th)):
                        raise DensityUndefined(name, k, "pmf")
            raise SpecificationError("the pmf is zero or undefined everywhere it was probed")
        thr = gmax - 800.0
        ends = []
        for side in (-1, 1):
            step, inner = 1, kmax
            while True:
                k = kmax + side * step
                if not g(k) > thr:
                    break
                inner = k
                step *= 2
                if step > 2 ** 45:
                    raise SpecificationError("the pmf does not decay: its support is too wide to enumerate")
            outer = kmax + side * step
            while abs(outer - inner) > 1:  # last point above threshold between inner and outer
                mid = (inner + outer) // 2
                if g(mid) > thr:
                    inner = mid
                else:
                    outer = mid
            ends.append(inner)
        lo, hi = ends
        if hi - lo + 1 > self.MAX_POINTS:
            raise SpecificationError(f"the pmf's support has {hi - lo + 1} significant points, more than "
                                     f"{self.MAX_POINTS} can be enumerated")
        return np.arange(lo, hi + 1, dtype=float)

    def pdf(self, m, s):
        return np.zeros(np.atleast_1d(s).shape)

    def cgf(self, tau, order=0):
        return memo_cgf(self, float(tau), order)

    def _cgf_uncached(self, tau, order):
        closed = self.closed_cgf
        if closed is not None and order < len(closed):
            val = self.closed_cgf_value(closed[order], tau)
            if math.isfinite(val):
                return val
        return self.cgf_quadrature(tau, order)

    def cgf_quadrature(self, tau, order=0, vector=False, abs_power=0):
        return combine_cgf([], self.atoms, float(tau), order, lambda mu, nm: [], vector=vector, abs_power=abs_power)

    def cgf_vector(self, tau, n=4):
        return memo_vector(self, float(tau), n)

    def tilted_abs(self, tau, power=3):
        return memo_abs(self, float(tau), power)

    def closed_cgf_value(self, name, tau):
        """The closed-form CGF kernel ``name`` at ``tau``."""
        return float(N.kernel_refs(self.mod)(name)(tau, self.theta))


class _PythonKernel:
    """A log-pmf or loss kernel that Numba cannot compile (a special function such as besseli), tabulated once at
    bind time over the significant support: by its NumPy/SciPy version, and where that over- or underflows to NaN
    or +inf, by its mpmath version at 30 digits (a point mpmath cannot evaluate either stays NaN: reported)."""

    def __init__(self, mod, name, theta):
        self.vec = getattr(mod, "sp_" + name, None)
        self.mp = getattr(mod, "mp_" + name, None)
        self.theta = np.asarray(theta, float)
        self.mp_theta = [mpmath.mpf(float(t)) for t in theta]

    def __call__(self, x, theta=None):
        return float(self.map(np.array([float(x)]))[0])

    def map(self, xs):
        xs = np.asarray(xs, float)
        out = np.full(xs.shape, np.nan)
        if self.vec is not None:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    v = np.asarray(self.vec(xs, self.theta))
                    if np.iscomplexobj(v):
                        v = np.where(np.imag(v) == 0, np.real(v), np.nan)
                    out = np.broadcast_to(np.asarray(v, float), xs.shape).copy()
                except Exception:
                    pass
        for i in np.nonzero(np.isnan(out) | (out == np.inf))[0]:
            out[i] = self._mp(xs[i])
        return out

    def _mp(self, x):
        if self.mp is None:
            return math.nan
        with mpmath.workdps(30):
            try:
                v = self.mp(mpmath.mpf(float(x)), self.mp_theta)
            except (ValueError, ZeroDivisionError, OverflowError):
                return math.nan
            if isinstance(v, mpmath.mpc):
                return float(v.real) if v.imag == 0 else math.nan
            return float(v)
