"""The privacy loss's limit at x = +-inf, from evidence that must agree.

A piece of the output line that reaches +-inf needs L's limit there: it is an end of the PLRV's support (or the
value of an atom).  Three kinds of evidence exist:

1. SymPy's limit of the variant's L, taken at derivation time (exact when SymPy finds one);
2. the compiled kernel along x = +-10^k in double precision (fast, but a difference of large powers cancels:
   ``x**1.5 - (x - 1)**1.5`` is 0 in floating point beyond x ~ 1e16 although it diverges);
3. the same L printed for mpmath and walked out to x = +-10^1024 at a precision that is checked (each point
   evaluated at two precisions that must agree), so cancellation cannot pass unnoticed.

The rule: the symbolic limit is used when (2) or (3) confirms it.  Where it is missing or contradicted, SymPy is
asked again with the parameters set to their bound values (its limits with symbolic parameters can be wrong),
and that limit is used when (3) confirms it; without any symbolic limit, (3) decides.  Where the symbolic and
the numeric evidence disagree, or none is conclusive, a ``DerivationError`` is raised: mechkit never picks
one silently.  The double-precision walk is trusted only
as far as L stays monotone along it (each piece is monotone in x; a reversal is rounding).
"""
from __future__ import annotations

import math

import mpmath
import numpy as np

from ..errors import DerivationError

#: x = 10^k, k = 1..299: the double-precision walk
WALK = 10.0 ** np.arange(1, 300)
#: x = 10^k for these k: the high-precision walk
HP_EXPONENTS = tuple(2 ** j for j in range(11))
#: digits of the first evaluation at x = 10^k (2k covers the cancellation of a difference of powers up to 2)
HP_BASE_DIGITS = 30
#: a high-precision point counts when two evaluations, at d and 2d digits, agree to this relative tolerance
HP_AGREE = 1e-20
#: the precision is doubled at most this many times per point before the walk stops there
HP_RETRIES = 3
#: relative tolerance for evidence to agree on a finite limit
AGREE_RTOL = 1e-7


def double_walk(ys):
    """Read the limit off L at x = +-10^k in double precision: ("converged", c), ("diverged", +-inf) or
    ("unknown", nan).  The walk stops at the first non-finite value and at the first reversal of direction."""
    ys = np.asarray(ys, float)
    bad = np.flatnonzero(~np.isfinite(ys))
    nf = int(bad[0]) if bad.size else ys.size
    y = ys[:nf]
    cut = nf
    if y.size > 1:
        d = np.diff(y)
        big = np.abs(d) > 4e-15 * (1 + np.abs(y[1:]))
        if big.any():
            direction = np.sign(d[np.argmax(big)])
            rev = np.flatnonzero(big & (np.sign(d) == -direction))
            if rev.size:
                cut = int(rev[0]) + 1
    y = y[:cut]
    close = np.flatnonzero(np.abs(np.diff(y)) <= 1e-13 * (1 + np.abs(y[1:])))
    if close.size:
        return "converged", float(y[close[0] + 1])
    if cut == nf < ys.size and np.isinf(ys[nf]) and (y.size < 2 or np.sign(y[-1] - y[0]) == np.sign(ys[nf])):
        return "diverged", float(ys[nf])
    if y.size > 3 and abs(y[-1]) > 1e6 and abs(y[-1]) > abs(y[-2]) > abs(y[-3]):
        return "diverged", math.copysign(math.inf, y[-1])
    return "unknown", math.nan


def _hp_point(fn, x_exp, sign, theta):
    """L at x = sign 10^x_exp by mpmath, or None where two precisions do not agree (or it is not real)."""
    digits = HP_BASE_DIGITS + 2 * x_exp
    for _ in range(HP_RETRIES + 1):
        vals = []
        for dps in (digits, 2 * digits):
            with mpmath.workdps(dps):
                try:
                    v = fn(sign * mpmath.mpf(10) ** x_exp, [mpmath.mpf(float(t)) for t in theta])
                except (ValueError, ZeroDivisionError, OverflowError, TypeError):
                    return None
                if not isinstance(v, mpmath.mpf):
                    v = mpmath.mpmathify(v)
                    if not isinstance(v, mpmath.mpf):
                        return None  # complex: L is not real there
                vals.append(v)
        a, b = vals
        if mpmath.isinf(a) or mpmath.isinf(b):
            return b if a == b else None
        if mpmath.isnan(a) or mpmath.isnan(b):
            return None
        if abs(a - b) <= HP_AGREE * (1 + abs(b)):
            return b
        digits *= 2
    return None


def high_precision_walk(fn, theta, sign):
    """Read the limit of L at sign * inf off mpmath evaluations at x = sign 10^k, k = 1, 2, 4, ..., 1024:
    ("converged", c), ("diverged", +-inf) or ("unknown", nan)."""
    ys = []
    for k in HP_EXPONENTS:
        v = _hp_point(fn, k, sign, theta)
        if v is None:
            break
        ys.append(v)
        if len(ys) >= 2 and ys[-1] == ys[-2] and not math.isinf(float(ys[-1])):
            return "converged", float(ys[-1])
        if math.isinf(float(v)):
            return "diverged", float(v)
    if len(ys) < 4:
        return "unknown", math.nan
    d = [ys[i] - ys[i - 1] for i in range(1, len(ys))]
    if abs(d[-1]) <= 1e-12 * (1 + abs(ys[-1])):
        return "converged", float(ys[-1])
    same = d[-1] * d[-2] > 0 and d[-2] * d[-3] > 0
    if same and abs(d[-1]) >= 0.9 * abs(d[-2]) and abs(d[-2]) >= 0.9 * abs(d[-3]):
        return "diverged", math.copysign(math.inf, float(d[-1]))
    return "unknown", math.nan


def agree(a, b):
    """Two limits agree: the same infinity, or finite and within ``AGREE_RTOL``."""
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= AGREE_RTOL * (1 + abs(a))


#: time limit of the symbolic limit at the bound values (seconds)
SYMBOLIC_AT_VALUES_SECONDS = 4.0
_AT_VALUES = {}


_SYMBOLIC = {}


def symbolic_limit_at(lexpr, var, names, theta, where):
    """SymPy's limit of L (its ``srepr`` text ``lexpr``) at ``where`` with the parameters ``names`` set to the
    exact rationals of ``theta``; nan where SymPy finds none in time.  Memoised per process."""
    if lexpr is None or var is None or names is None:
        return math.nan
    key = (lexpr, tuple(float(t) for t in theta), where)
    if key not in _AT_VALUES:
        from ..symbolic.parse import parse_srepr  # SymPy: only where the numeric evidence asks for it

        L = parse_srepr(lexpr)
        by_name = {s.name: s for s in L.free_symbols}
        X = by_name.get(var)
        lim = None if X is None else _limit_at_inf(L.xreplace(_at_values(by_name, names, theta)), X, where)
        _AT_VALUES[key] = _real(lim)
    return _AT_VALUES[key]


def _limit_at_inf(L, X, where):
    """SymPy's limit of L as X runs to ``where`` (+-inf), None where it finds none in time."""
    import sympy as sp

    from ..symbolic import algebra as sy
    return sy.attempt(lambda: sp.limit(L, X, sp.oo if where > 0 else -sp.oo), SYMBOLIC_AT_VALUES_SECONDS)


def _at_values(by_name, names, theta):
    """The substitution of the parameters ``names`` (among the symbols ``by_name``) by the exact rationals of theta."""
    from ..symbolic.parse import exact_float
    return {by_name[n]: exact_float(t) for n, t in zip(names, theta) if n in by_name}


def _real(val):
    """``val`` as a float where it is a real number or +-inf, else nan (None included)."""
    import sympy as sp
    if val is None or not (val.is_number and (val.is_real or val in (sp.oo, -sp.oo))):
        return math.nan
    return float(val)


def symbolic_limit(lexpr, var, names, theta, where):
    """SymPy's limit of L (its ``srepr`` text ``lexpr``) at ``where`` with symbolic parameters, then evaluated at
    ``theta``; nan where SymPy finds none in time or it is not a real number (or +-inf).  Memoised per process."""
    if lexpr is None or var is None or names is None:
        return math.nan
    key = (lexpr, where)
    if key not in _SYMBOLIC:
        from ..symbolic import algebra as sy
        from ..symbolic.parse import parse_srepr

        L = parse_srepr(lexpr)
        X = {s.name: s for s in L.free_symbols}.get(var)
        lim = None if X is None else _limit_at_inf(L, X, where)
        _SYMBOLIC[key] = lim if X is not None and sy.usable_limit(lim, X) else None
    lim = _SYMBOLIC[key]
    if lim is None:
        return math.nan
    return _real(lim.xreplace(_at_values({s.name: s for s in lim.free_symbols}, names, theta)))


def decide(sym, walk, hp, where, sym_at_values=lambda: math.nan, sym_more=list):
    """The limit of L at ``where`` (+-inf) from the evidence, each piece computed only when needed.

    Parameters
    ----------
    sym : SymPy's limits of equivalent forms of L with symbolic parameters, at the bound values (a list, nans
        and missing forms left out).
    walk : the double-precision walk's (status, value).
    hp : callable giving the high-precision walk's (status, value), or None where no mpmath kernel exists.
    where : +inf or -inf.
    sym_at_values : callable giving SymPy's limit with the parameters set to their values (nan if none), asked
        only where no symbolic limit is confirmed by the numeric evidence.
    sym_more : callable giving more forms' limits like ``sym`` (a list), asked only where the first of ``sym`` is
        not confirmed by the double-precision walk (or there is none); from then on the evidence is weighed as if
        they had been in ``sym`` from the start.

    Returns
    -------
    A symbolic limit confirmed by numeric evidence; the precision-checked numeric limit where SymPy has none;
    a symbolic limit that all forms agree on where the numeric evidence is silent (not contradicting).

    Raises
    ------
    DerivationError : the symbolic and the numeric evidence disagree, or none of it is conclusive.
    """
    status, value = walk
    sym = list(sym)
    for more in (list, sym_more):  # the other forms only where the first evidence is not confirmed
        sym = [s for s in sym + list(more()) if not math.isnan(s)]
        consistent = all(agree(sym[0], s) for s in sym[1:]) if sym else False
        if consistent and status != "unknown" and agree(sym[0], value):
            return sym[0]
    h = hp()
    hs, hv = h if h is not None else ("unavailable", math.nan)
    numeric = hs in ("converged", "diverged")
    if numeric:
        for s in sym:
            if agree(s, hv):
                return s  # the exact symbolic value, confirmed by precision-checked evaluation
    sym2 = sym_at_values()
    if numeric and not math.isnan(sym2) and agree(sym2, hv):
        return sym2
    if numeric and not sym and math.isnan(sym2):
        return hv  # no symbolic limit at all; precision-checked, it outranks the double-precision walk
    if not numeric and status == "unknown" and (consistent or not sym) and not math.isnan(sym2) \
            and all(agree(s, sym2) for s in sym):
        return sym2  # no numeric evidence either way; every symbolic limit agrees
    raise DerivationError(
        f"the privacy loss's limit at x = {where}: SymPy gives {sym or 'none'} (symbolic parameters) and {sym2} "
        f"(at the values), double-precision evaluation {status} {value}, high-precision evaluation {hs} {hv}; "
        "the evidence disagrees or is inconclusive, so no answer can be certified for this mechanism")
