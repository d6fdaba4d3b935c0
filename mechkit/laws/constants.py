"""Numeric values of a family's derived constants (parameter-only expressions, e.g. a normaliser) at given
parameter values: what ``Family._theta`` appends to the kernels' parameter vector at every bind."""
from __future__ import annotations

import math

import sympy as sp

from ..errors import ParameterError

_WINDOW = 64


def constant_fn(expr, parameters):
    """A Sum-free constant as a function of the parameter values, evaluated by mpmath at 50 digits (what
    ``eval_constant`` computes, without SymPy's substitution at every bind; nan where it has no real value), or None
    (a Sum: ``eval_constant``)."""
    if expr.has(sp.Sum):
        return None
    import mpmath

    f = sp.lambdify(list(parameters), expr, "mpmath")

    def value(*vals):
        with mpmath.workdps(50):  # 20 digits to spare for cancellation before the float
            try:
                return float(f(*[mpmath.mpf(v) for v in vals]))
            except (TypeError, ValueError, ZeroDivisionError):
                return math.nan
    return value


def eval_constant(expr, subs):
    """Numeric value of a parameter-only expression at 30 digits; a Sum directly where its terms have decayed
    within |j| <= 64, else by mpmath.nsum."""
    import mpmath

    e = expr.subs(subs)

    def num_sum(s):
        (j, a, b), = s.limits
        f = sp.lambdify(j, s.function, "mpmath")
        with mpmath.workdps(30):
            lo = int(a) if a.is_finite else None
            hi = int(b) if b.is_finite else None
            # a summand that has decayed by 1e-40 at both ends of the window |j| <= 64: the direct sum
            w_lo = -_WINDOW if lo is None else max(lo, -_WINDOW)
            w_hi = _WINDOW if hi is None else min(hi, _WINDOW)
            if w_lo + 1 < w_hi:
                terms = [f(mpmath.mpf(i)) for i in range(w_lo, w_hi + 1)]
                tot = mpmath.fsum(terms)
                small = lambda t: abs(t[0]) + abs(t[1]) <= 1e-40 * abs(tot)
                if tot and (lo == w_lo or small(terms[:2])) and (hi == w_hi or small(terms[-2:])):
                    return sp.Float(tot, 30)
            # otherwise Richardson + Shanks, and Euler-Maclaurin: extrapolation alone misjudges wide summands (the
            # discrete Gaussian's normaliser at sigma >= 300 came out 1e-3 to 100% low); nsum keeps the best
            lims = [a if a.is_finite else -mpmath.inf, b if b.is_finite else mpmath.inf]
            return sp.Float(mpmath.nsum(f, lims, method="r+s+e"), 30)

    e = e.replace(lambda z: isinstance(z, sp.Sum), num_sum)
    try:
        return float(sp.N(e, 30))
    except TypeError:
        raise ParameterError(f"cannot evaluate {expr} at {subs}") from None
