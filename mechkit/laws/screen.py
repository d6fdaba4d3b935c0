"""Cheap checks of a family's densities at bound parameter values, before the (slow) symbolic derivation.

``screen(family, theta)`` evaluates p and q (lambdified SymPy, NumPy) on a grid over the domain and raises
``SpecificationError`` where

* a density is negative, or not a real number, at a grid point.  Every such point is confirmed with mpmath at 40
  digits before it is reported (a NaN of an overflowing double proves nothing), so no valid density is refused;
* a density clearly does not integrate (sum) to 1.  Finite domains are summed exactly.  On the integers the sum
  over the grid's points is a lower bound, so only a sum above 1 is reported.  Continuous densities are integrated
  by Gauss-Legendre between grid points, refined where the rules disagree or a peak or steep tail falls between
  nodes; a total above 1 is reported, a total below 1 - ``SHORT_TOL`` only where every sampled peak is resolved
  and the density has fallen to negligible values at the grid's outer points.  Anything inconclusive is left to
  the exact check of ``laws.core`` after the derivation (tolerance ``NORMALISATION_TOL``).

The grid is anchored where location-scale families put their mass: around 0, the domain's ends and the parameter
values, at the parameter values' scales and geometrically out to 1e9.  The one way a valid density could be refused
is a total below 1 from a component narrower than the grid's spacing, far from every anchor, beside a resolved one
(e.g. a mixture with a spike at a product of parameters); location-scale densities, their mixtures over the
parameters and all of the catalog are anchored.  Any failure to evaluate (an unsupported function, an exception)
makes the check inconclusive.

``density_at(family, which, x, theta)`` is the same mpmath evaluation at one point (``Mechanism`` uses it to tell a
density that is negative from one whose compiled kernels over- or underflow at the parameter values).
"""
from __future__ import annotations

import math
import warnings
import weakref

import numpy as np
import sympy as sp

from ..errors import ParameterError, SpecificationError
from .core import GL8, GL16

#: continuous densities: a total this far below 1 is reported before the derivation (when the quadrature is
#: conclusive); totals above 1 are reported beyond the core's tolerance plus the quadrature's error
SHORT_TOL = 1e-3
#: tolerance of the exact sums of finite domains (as the core's NORMALISATION_TOL)
SUM_TOL = 1e-6
MP_DPS = 40
MAX_INTERVALS = 400_000


#: family -> its lambdified densities (``_functions``), kept as long as the family lives
_FUNCTIONS = weakref.WeakKeyDictionary()


def _functions(family):
    """(NumPy p, NumPy q, mpmath p, mpmath q, ends) lambdified once per family: args (x, *params, *consts)."""
    got = _FUNCTIONS.get(family)
    if got is None:
        args = [family.var, *family.parameters, *[c for c, _ in family.constants]]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # dummify: the printed code names only dummies, whatever the symbols are called
            # the densities without their point masses (DiracDelta terms), whose weights are checked apart
            fns = [sp.lambdify(args, e, modules=m, dummify=True)
                   for m in (_numpy_modules(family.spec), "mpmath") for e in (family.spec.p, family.spec.q)]
            ends = [sp.lambdify(args[1:], e, modules="mpmath", dummify=True) for e in (family.spec.lo, family.spec.hi)]
            masses = [sp.lambdify(args[1:], sp.Add(*[w for _, w in ws]), modules="mpmath", dummify=True)
                      for ws in family.spec.masses]
        got = _FUNCTIONS[family] = (fns[0], fns[1], fns[2], fns[3], ends, masses)
    return got


def _numpy_modules(spec):
    """The modules of the densities' NumPy functions: NumPy alone where every function in them is one NumPy prints
    (importing SciPy's special functions for lambdify costs ~0.2 s, most of a cached bind's screening); SciPy too
    otherwise (erf, gamma, Bessel functions ...), or where SymPy's list cannot be read."""
    try:
        from sympy.printing.numpy import _known_functions_numpy
    except ImportError:
        return ["scipy", "numpy"]
    known = set(_known_functions_numpy) | NUMPY_PRINTED
    names = {type(f).__name__ for e in (spec.p, spec.q) for f in e.atoms(sp.Function)}
    return ["numpy"] if names <= known else ["scipy", "numpy"]


#: functions that SymPy's NumPy printer prints itself (beside its table of NumPy names)
NUMPY_PRINTED = frozenset({"Abs", "Piecewise", "Max", "Min", "Heaviside"})


def _point_mass(fn, name, theta):
    """The total weight of a density's point masses at theta (0 without any): a ``SpecificationError`` where it is
    negative, None where it cannot be evaluated."""
    import mpmath

    try:
        with mpmath.workdps(MP_DPS):
            w = float(fn(*[mpmath.mpf(t) for t in theta]))
    except Exception:
        return None
    if w < 0:
        raise SpecificationError(f"the point masses (DiracDelta terms) of density {name} have a negative total "
                                 f"weight {w:.6g}; a density must be non-negative")
    return w


def _numpy_values(fn, xs, theta):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = fn(xs, *theta)
    v = np.asarray(v)
    if np.iscomplexobj(v):
        v = np.where(np.imag(v) == 0, np.real(v), np.nan)
    return np.broadcast_to(np.asarray(v, dtype=float), xs.shape)


def density_at(family, which, x, theta):
    """p(x) (``which`` = "p") or q(x) with mpmath at 40 digits: an mpf, an mpc (not real), or None (no value)."""
    import mpmath

    fn = _functions(family)[2 if which == "p" else 3]
    try:
        with mpmath.workdps(MP_DPS):
            r = fn(mpmath.mpf(float(x)), *[mpmath.mpf(float(t)) for t in theta])
            if isinstance(r, mpmath.mpc) and r.imag == 0:
                r = r.real
            if not isinstance(r, (mpmath.mpf, mpmath.mpc)):
                r = mpmath.mpmathify(r)
            return r
    except Exception:
        return None


def _confirm(family, which, xs, vals, theta):
    """The first grid point where the density is confirmed negative or not real: (x, value) or None."""
    import mpmath

    finite = vals[np.isfinite(vals)]
    scale = float(np.max(np.abs(finite))) if finite.size else 1.0
    neg = np.nonzero(vals < 0)[0]
    neg = neg[np.argsort(vals[neg] / max(scale, 1e-300))][:8]  # the most negative first
    nan = np.nonzero(np.isnan(vals))[0]
    nan = nan[np.argsort(np.abs(xs[nan]))][:8]
    for i in np.concatenate((neg, nan)).astype(int):
        r = density_at(family, which, xs[i], theta)
        if r is None:
            continue
        if isinstance(r, mpmath.mpc):
            if abs(r.imag) > 1e-25 * max(scale, abs(r.real)):
                return float(xs[i]), complex(r)
            continue
        if mpmath.isnan(r):
            continue
        if r < 0 and abs(r) > 1e-25 * max(scale, 1e-300):
            return float(xs[i]), float(r)
    return None


def _end(fn, theta):
    try:
        import mpmath

        v = fn(*[mpmath.mpf(float(t)) for t in theta])
        return float(v)
    except Exception:
        return math.nan


def _anchors(theta, lo, hi):
    """Centres (0, the finite domain ends, +-parameter values) and scales (1, |v|, 1/|v|) of the grid."""
    vals = [abs(float(t)) for t in theta if math.isfinite(t) and 1e-12 <= abs(t) <= 1e12]
    centres = {0.0, *vals, *[-v for v in vals]}
    centres |= {e for e in (lo, hi) if math.isfinite(e)}
    scales = {1.0, *vals, *[1.0 / v for v in vals]}
    return sorted(centres), sorted(s for s in scales if 1e-9 <= s <= 1e9)


def _continuous_grid(theta, lo, hi):
    centres, scales = _anchors(theta, lo, hi)
    geo = np.geomspace(1e-9, 1e9, 721)
    lin = np.linspace(-30.0, 30.0, 241)
    parts = []
    for c in centres:
        parts += [c - geo, [c], c + geo]
        parts += [c + s * lin for s in scales]
    if math.isfinite(lo) and math.isfinite(hi):
        parts.append(np.linspace(lo, hi, 4001))
    xs = np.unique(np.concatenate([np.asarray(p, float) for p in parts]))
    xs = xs[np.isfinite(xs)]
    return xs[(xs > lo) & (xs < hi)]


def _integer_grid(theta):
    centres, scales = _anchors(theta, -math.inf, math.inf)
    parts = [np.arange(-2000.0, 2001.0)]
    pw = 2.0 ** np.arange(0, 53)
    parts += [-pw, pw]
    for c in centres:
        c = round(c)
        parts.append(c + np.arange(-200.0, 201.0))
        for s in scales:
            if s > 1:
                parts.append(np.round(c + s * np.linspace(-30.0, 30.0, 241)))
    xs = np.unique(np.concatenate(parts))
    return xs[np.abs(xs) <= 2.0 ** 53]


def _gl(fn, a, b, theta, rule):
    nodes, weights = rule
    mid, half = 0.5 * (a + b), 0.5 * (b - a)
    x = (mid[:, None] + half[:, None] * nodes[None, :]).ravel()
    v = _numpy_values(fn, x, theta).reshape(a.size, -1)
    return np.sum(v * weights[None, :], axis=1) * half


def _integral(fn, xs, theta):
    """(total, error bound) of the density over the grid's span by Gauss-Legendre 8/16 per grid interval, bad
    intervals split adaptively; None where the integrand is not a finite number everywhere used.

    An interval is bad where the two rules disagree, or where the density at an end times the interval's length
    exceeds 4 times the integral (a peak or a steep tail that the nodes step over: both rules would agree on a
    value that misses the mass)."""
    a, b = xs[:-1], xs[1:]
    done, err = 0.0, 0.0
    seen, rounds = 0, 0
    while a.size:
        seen += a.size
        rounds += 1
        i16 = _gl(fn, a, b, theta, GL16)
        i8 = _gl(fn, a, b, theta, GL8)
        ends = np.maximum(_numpy_values(fn, a, theta), _numpy_values(fn, b, theta))
        if not (np.all(np.isfinite(i16)) and np.all(np.isfinite(i8))):
            return None
        ends = np.where(np.isfinite(ends), ends, 0.0)  # a finite domain end may be a (integrable) singularity
        total = done + float(np.sum(i16))
        tol = 1e-10 * max(total, 1e-300) + 1e-300
        diff = np.abs(i16 - i8)
        bad = (diff > tol) | (ends * (b - a) > 4.0 * np.abs(i16) + tol)
        done += float(np.sum(i16[~bad]))
        if not bad.any():
            break
        if seen > MAX_INTERVALS or rounds >= 60:
            done += float(np.sum(i16[bad]))
            err += float(np.sum(diff[bad]))
            break
        a, b = a[bad], b[bad]
        if np.any(b - a <= 64 * np.finfo(float).eps * np.maximum(np.abs(a), np.abs(b))):
            return None  # a feature narrower than the doubles' spacing there: no quadrature can resolve it
        q = (b - a) / 4.0
        a, b = (np.concatenate([a + j * q for j in range(4)]), np.concatenate([a + (j + 1) * q for j in range(4)]))
    return done, err


def _peaks_resolved(vals):
    """Every local maximum of the sampled density has both neighbours within a factor 1e3 of it (a peak far
    narrower than the grid spacing would not be seen)."""
    v = np.where(np.isfinite(vals), vals, 0.0)
    top = float(v.max()) if v.size else 0.0
    if not top > 0:
        return False
    inner = v[1:-1]
    peak = (inner >= v[:-2]) & (inner >= v[2:]) & (inner > 1e-6 * top)
    idx = np.nonzero(peak)[0] + 1
    return bool(np.all((v[idx - 1] >= 1e-3 * v[idx]) & (v[idx + 1] >= 1e-3 * v[idx])))


def _tails_negligible(xs, vals, lo, hi):
    """Beyond the grid's outermost points (towards an infinite end) the density has fallen below 1e-12 of its
    sampled maximum and times |x| below 1e-9 (a density still flat there, e.g. a Laplace of scale 1e20, is not)."""
    top = float(np.max(vals)) if vals.size else 0.0
    ok = top > 0
    for end, i in ((lo, 0), (hi, -1)):
        if math.isinf(end):
            ok &= bool(abs(xs[i]) * vals[i] < 1e-9 and vals[i] <= 1e-12 * top)
    return ok


def _not_normalised(name, kind, total, at_least=False):
    verb = "integrates" if kind == "continuous" else "sums"
    word = "density" if kind == "continuous" else "pmf"
    return SpecificationError(f"{word} {name} {verb} to {'at least ' if at_least else ''}{total:.6g} over the "
                              "domain, not 1 (a numerical check at the parameter values, before the derivation); "
                              "check the normalising constant")


def screen(family, theta):
    """Raise ``SpecificationError`` for a density that is confirmed negative or not real somewhere on a grid over
    the domain, or clearly not normalised (module docstring); return quietly when all is well or inconclusive."""
    try:
        fnp, fnq, _, _, ends, masses = _functions(family)
    except Exception:
        return
    theta = [float(t) for t in theta]
    spec = family.spec
    if spec.kind == "continuous":
        lo, hi = _end(ends[0], theta), _end(ends[1], theta)
        if math.isnan(lo) or math.isnan(hi) or not lo < hi:
            return  # the core reports an empty or undefined domain
        xs = _continuous_grid(theta, lo, hi)
    elif spec.kind == "finite":
        lo, hi = -math.inf, math.inf
        xs = np.asarray(spec.points, float)
    else:
        lo, hi = -math.inf, math.inf
        xs = _integer_grid(theta)
    if not xs.size:
        return
    for name, fn, mass in (("p", fnp, masses[0]), ("q", fnq, masses[1])):
        atoms = _point_mass(mass, name, theta)
        if atoms is None:
            continue
        try:
            vals = _numpy_values(fn, xs, theta)
        except Exception:
            continue
        bad = _confirm(family, name, xs, vals, theta) if np.any(~(vals >= 0)) else None
        if bad is not None:
            x, r = bad
            what = "negative" if isinstance(r, float) else "not a real number"
            word = "density" if spec.kind == "continuous" else "pmf"
            raise SpecificationError(f"{word} {name} is {what} at x = {x:g} ({name}(x) = {r:.6g}); a density "
                                     "must be non-negative on its whole domain")
        tails_ok = True
        if spec.kind == "continuous" and not np.all(np.isfinite(vals)):
            # NumPy's evaluation often overflows far out (exp(-x/b) at x = -1e9: inf/inf); integrate over the
            # finite middle, and trust its ends as the tails only where mpmath finds the density negligible there
            fin = np.nonzero(np.isfinite(vals))[0]
            if fin.size < 3 or not np.all(np.isfinite(vals[fin[0]:fin[-1] + 1])):
                continue  # a singularity or an overflow inside: the core decides
            for j in (fin[0] - 1, fin[-1] + 1):
                if 0 <= j < xs.size:
                    r = density_at(family, name, xs[j], theta)
                    try:
                        tails_ok &= bool(r is not None and 0 <= float(r) and abs(xs[j]) * float(r) < 1e-9)
                    except (TypeError, ValueError):
                        tails_ok = False
            xs_n, vals_n = xs[fin[0]:fin[-1] + 1], vals[fin[0]:fin[-1] + 1]
            lo_n = lo if fin[0] == 0 else -math.inf
            hi_n = hi if fin[-1] == xs.size - 1 else math.inf
        elif not np.all(np.isfinite(vals)):
            continue  # overflow, or a singularity: the core decides
        else:
            xs_n, vals_n, lo_n, hi_n = xs, vals, lo, hi
        if spec.kind == "finite":
            total = float(np.sum(vals))
            if abs(total - 1.0) > SUM_TOL:
                raise _not_normalised(name, spec.kind, total)
        elif spec.kind == "integers":
            total = float(np.sum(vals))  # a lower bound: only a total clearly above 1 is conclusive
            if total > 1.0 + SUM_TOL * max(1.0, total):
                raise _not_normalised(name, spec.kind, total, at_least=True)
        else:
            span = np.concatenate(([lo_n] if math.isfinite(lo_n) else [], xs_n, [hi_n] if math.isfinite(hi_n) else []))
            got = _integral(fn, span, theta)  # from a finite end itself: no mass next to it is left out
            if got is None:
                continue
            total, err = got
            total += atoms
            if total - err > 1.0 + SUM_TOL:
                raise _not_normalised(name, spec.kind, total)
            if (total + err < 1.0 - SHORT_TOL and tails_ok and _peaks_resolved(vals_n)
                    and _tails_negligible(xs_n, vals_n, lo_n, hi_n)):
                raise _not_normalised(name, spec.kind, total)


def undefined_error(family: object, values: dict, theta: np.ndarray, exc: Exception, bind: type) -> Exception:
    """What a NaN of a compiled log-density at ``exc.x`` means, decided in mpmath at 40 digits (a bind's failure,
    explained: ``Mechanism``).

    Parameters
    ----------
    family : the ``Family`` being bound.
    values : parameter name -> value.
    theta : the kernels' parameter vector.
    exc : the ``DensityUndefined`` raised by the core (``which`` density, at ``x``).
    bind : the ``Mechanism`` class (a trial binding at other values finds where the values that bind end).

    Returns
    -------
    A ``SpecificationError`` where the density is negative or not real there; a ``ParameterError`` where it is a
    valid number that the compiled kernels cannot evaluate in double precision at these values (naming the
    parameters, and for each one that alone is to blame, about where the values that bind end); ``exc`` itself
    where mpmath cannot tell.
    """
    import mpmath

    family = getattr(family, "real", family)  # a family bound from its record (``laws.shipped``): its SymPy form
    which, x = exc.which, exc.x
    word = "density" if family.spec.kind == "continuous" else "pmf"
    r = density_at(family, which, x, theta)
    if r is None or (isinstance(r, mpmath.mpf) and mpmath.isnan(r)):
        return exc
    if isinstance(r, mpmath.mpc):
        return SpecificationError(f"{word} {which} is not a real number at x = {x:g} ({which}(x) = {complex(r):.6g})")
    if r < 0:
        return SpecificationError(f"{word} {which} is negative at x = {x:g} ({which}(x) = {mpmath.nstr(r, 6)}); a "
                                  "density must be non-negative on its whole domain")
    ranges = [_working_range(family, values, s.name, bind) for s in family.parameters]
    parts = [r_ for r_ in ranges if r_]
    at = ", ".join(f"{k}={v:g}" for k, v in values.items())
    head = (f"the parameter values ({at}) are outside the range that double precision can evaluate: {which}(x = {x:g}) "
            f"= {mpmath.nstr(r, 6)}, but its compiled log-{word} overflows or underflows to nan there")
    if parts:
        return ParameterError(f"{head}; " + "; ".join(parts) + " (the other parameters as given)")
    return ParameterError(f"{head}; rescale the problem so that the parameters are of moderate size")


def _working_range(family, values, name, bind):
    """'name must be >= (<=) about b' where moving parameter ``name`` alone towards magnitude 1 makes the mechanism
    bind (b found by bisection on the exponent, each step a trial binding); '' where it does not."""
    v = values[name]
    if not (v != 0 and math.isfinite(v)):
        return ""
    sign, e_bad = math.copysign(1.0, v), math.log10(abs(v))

    def works(e):
        trial = dict(values, **{name: sign * 10.0 ** e})
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bind(family, family._check_params(trial), _explain=False)
        except Exception:
            return False
        return True

    if abs(e_bad) < 1 or not works(0.0):
        return ""
    good, bad = 0.0, e_bad
    for _ in range(11):
        mid = 0.5 * (good + bad)
        good, bad = (mid, bad) if works(mid) else (good, mid)
    bound = sign * 10.0 ** good
    small = e_bad < 0
    if sign < 0:
        return f"{name} = {v:g} is too {'small' if small else 'large'} in magnitude: |{name}| must be " \
               f"{'>=' if small else '<='} about {abs(bound):.2g}"
    return f"{name} = {v:g} is too {'small' if small else 'large'}: {name} must be {'>=' if small else '<='} " \
           f"about {bound:.2g}"
