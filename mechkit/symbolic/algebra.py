"""Symbolic derivation: from the densities (p, q) to every expression accounting needs.

The output is a ``Derivation``: a set of named SymPy expressions ("kernels", each a function of one
variable ``X`` and the family parameters) plus the structure that tells the numeric layer how to combine
them (non-smooth points, smooth variants of the loss on each side of them, inverses, tails, the CGF).
Nothing here evaluates numbers; ``codegen`` turns the kernels into Numba functions.

Every SymPy call that can be slow runs under a time limit; when it fails or times out, the kernel is
simply absent and the numeric layer falls back to compiled quadrature or root finding.
"""
from __future__ import annotations

import contextlib
import signal
import threading

import sympy as sp

#: the one variable every kernel is a function of (output x, loss value s, or CGF argument t)
X = sp.Symbol("X", real=True)
S = sp.Symbol("s", real=True)
T = sp.Symbol("t", real=True)

SOLVE_SECONDS = 8.0
INTEGRATE_SECONDS = 12.0
MGF_SECONDS = 15.0


class _Timeout(BaseException):  # not an Exception: SymPy code that catches Exception must not swallow it
    pass


@contextlib.contextmanager
def time_limit(seconds):
    """Interrupt slow SymPy work (main thread only; elsewhere no limit is applied)."""
    if threading.current_thread() is not threading.main_thread() or seconds is None:
        yield
        return

    def handler(signum, frame):
        # The exception can land where Python swallows it (a gc callback, a __del__): re-arm first, so the
        # limit fires again shortly instead of letting the slow call run unbounded.  The ``finally`` below
        # disarms the timer once the guarded block has exited.
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def attempt(fn, seconds, default=None):
    """Run ``fn()`` under a time limit; any failure gives ``default``."""
    try:
        with time_limit(seconds):
            return fn()
    except _Timeout:
        return default
    except Exception:  # SymPy raises many kinds of NotImplementedError/ValueError/TypeError
        return default


def usable_limit(lim, var):
    """Whether SymPy's limit ``lim`` (None: none found in time) is an expression the numeric layer can use: no nan,
    complex infinity or accumulation bounds, and free of the variable ``var``."""
    return lim is not None and not lim.has(sp.nan, sp.zoo, sp.AccumBounds) and not lim.has(var)


_ANTIDERIVATIVES = {}


def quadratic_exponent(expo, var):
    """(a, b, c) where ``expo`` = a var^2 + b var + c with a certainly negative (a Gaussian-type exponent; a, b, c
    free of var), else None."""
    try:
        poly = sp.Poly(sp.expand(expo), var)
    except sp.PolynomialError:
        return None
    if poly.degree() != 2:
        return None
    a, b, c = poly.all_coeffs()
    return (a, b, c) if a.is_negative and not (b.has(var) or c.has(var)) else None


def gaussian_integral(expo, var):
    """The integral of exp(``expo``) over the real line where ``expo`` is a Gaussian-type exponent (completing the
    square: sqrt(pi / -a) exp(c - b^2 / 4a)), else None (SymPy's integrate takes ~1 s to find the same)."""
    abc = quadratic_exponent(expo, var)
    if abc is None:
        return None
    a, b, c = abc
    return sp.sqrt(sp.pi / -a) * sp.exp(c - b ** 2 / (4 * a))


def _gaussian_antiderivative(dens, var):
    """exp(c - b^2 / 4a) sqrt(pi / -a) / 2 erf(sqrt(-a) (var + b / 2a)) where log ``dens`` is a Gaussian-type
    exponent a var^2 + b var + c, else None."""
    if dens.is_Add or not dens.has(sp.exp):
        return None
    abc = quadratic_exponent(sp.expand_log(sp.log(dens), force=True), var)
    if abc is None:
        return None
    a, b, c = abc
    scale = attempt(lambda: sp.simplify(sp.exp(c - b ** 2 / (4 * a)) * sp.sqrt(sp.pi / -a) / 2), SOLVE_SECONDS)
    arg = attempt(lambda: sp.simplify(sp.sqrt(-a) * (var + b / (2 * a))), SOLVE_SECONDS)
    return None if scale is None or arg is None else scale * sp.erf(arg)


def antiderivative(dens, var):
    """An antiderivative of ``dens`` in ``var`` (by completing the square where log dens is quadratic with a negative
    leading coefficient, else SymPy's under the time limit; None where it fails).  What SymPy returns is remembered
    (a family's pieces and the two densities often share an integrand: a generalized Gaussian's exp(-(1 - x)^b) on
    two pieces, 0.7 s each); a failure is not (a time limit hit under load may pass next time)."""
    key = (dens, var)
    got = _ANTIDERIVATIVES.get(key)
    if got is None:
        got = _gaussian_antiderivative(dens, var)
        if got is None:
            got = attempt(lambda: sp.integrate(dens, var), INTEGRATE_SECONDS)
        if got is not None:
            if len(_ANTIDERIVATIVES) >= 256:
                _ANTIDERIVATIVES.clear()
            _ANTIDERIVATIVES[key] = got
    return got


# ----------------------------------------------------------------------------------------------------
# log-space primitives (printed to numerically stable Numba helpers by codegen)


class LAE(sp.Function):
    """log(sum(exp(args))): printed as a chain of stable log-add-exp calls."""


class LogErfc(sp.Function):
    """log(erfc(z)) without underflow."""


class Softplus(sp.Function):
    """log(1 + exp(z))."""


class Erfc(sp.Function):
    """erfc(z) kept unevaluated (SymPy rewrites erfc(-z) as 2 - erfc(z), which cancels in the tails)."""


def surely_nonneg(e):
    """True only when e >= 0 follows from its form and the symbols' assumptions."""
    if e.is_Number:
        return e >= 0
    if e.is_nonnegative:
        return True
    if isinstance(e, (sp.exp, Erfc, sp.erfc)):
        return True
    if e.is_Mul or e.is_Add:
        return all(surely_nonneg(a) for a in e.args)
    if e.is_Pow:
        return surely_nonneg(e.base) or (e.exp.is_Integer and e.exp % 2 == 0)
    return False


def to_log(e, var):
    """A SymPy expression equal to log(e) built from stable primitives (e assumed positive)."""
    e = sp.sympify(e, strict=True)
    if e is sp.nan:
        return sp.nan
    if e.is_Number:
        if e > 0:
            return sp.log(e)
        if e == 0:
            return -sp.oo
        return sp.log(e)
    if isinstance(e, sp.exp):
        return stabilize(e.args[0], var)
    if isinstance(e, (sp.erfc, Erfc)):
        return LogErfc(stabilize(e.args[0], var))
    if e.is_Pow:
        if surely_nonneg(e.base):
            return stabilize(e.exp, var) * to_log(e.base, var)
        if e.exp.is_Integer and e.exp % 2 == 0:
            return e.exp * sp.log(sp.Abs(stabilize(e.base, var)))
        return sp.log(stabilize(e, var))
    if e.is_Mul and not all(surely_nonneg(f) for f in sp.Mul.make_args(e.as_coeff_Mul()[1])):
        return sp.log(stabilize(e, var))
    if e.is_Mul:
        coeff, rest = e.as_coeff_Mul()
        if coeff < 0:
            adds = [f for f in sp.Mul.make_args(rest) if f.is_Add]
            if not adds:
                return sp.log(stabilize(e, var))
            rest = rest.xreplace({adds[0]: sp.expand(-adds[0])})
            coeff = -coeff
        parts = [to_log(f, var) for f in sp.Mul.make_args(rest)]
        if coeff != 1:
            parts.append(sp.log(coeff))
        return sp.Add(*parts)
    if e.is_Add:
        dep = [a for a in e.args if a.has(var)]
        if dep:
            const = sp.factor(sp.Add(*[a for a in e.args if not a.has(var)]))
            terms = dep + ([const] if const != 0 else [])
        else:
            dep = [a for a in e.args if not a.is_Number]
            const, terms = sp.Add(*[a for a in e.args if a.is_Number]), list(e.args)
        if len(terms) < 2:
            return sp.log(e.func(*[stabilize(a, var) for a in e.args]))
        if not all(surely_nonneg(a) for a in terms):
            return sp.log(e.func(*[stabilize(a, var) for a in e.args]))
        if len(terms) == 2 and const == 1 and len(dep) == 1 and isinstance(dep[0], sp.exp):
            return Softplus(stabilize(dep[0].args[0], var))
        return LAE(*[to_log(a, var) for a in terms])
    if isinstance(e, sp.Piecewise):
        return sp.Piecewise(*[(to_log(ex, var), c) for ex, c in e.args])
    return sp.log(stabilize(e, var))


def stabilize(e, var):
    """Rewrite e for stable evaluation: logs go to log space, exponents are expanded."""
    e = sp.sympify(e, strict=True)
    if e.is_Atom:
        return e
    if isinstance(e, sp.log):
        return to_log(e.args[0], var)
    return e.func(*[stabilize(a, var) for a in e.args])


def tail_form(expr, var, side):
    """Rewrite erf/atan so that a tail probability (side = +1: x -> oo, -1: x -> -oo) has no cancellation."""
    target = sp.oo if side > 0 else -sp.oo
    reps = {}
    for f in expr.atoms(sp.erf):
        z = f.args[0]
        lim = attempt(lambda z=z: sp.limit(z, var, target), SOLVE_SECONDS)
        if lim == sp.oo:
            reps[f] = 1 - Erfc(z)
        elif lim == -sp.oo:
            reps[f] = Erfc(sp.expand(-z)) - 1
    for f in expr.atoms(sp.atan):
        z = f.args[0]
        lim = attempt(lambda z=z: sp.limit(z, var, target), SOLVE_SECONDS)
        if lim == sp.oo:
            reps[f] = sp.Piecewise((sp.pi / 2 - sp.atan(1 / z), z > 0), (sp.atan(z), True))
        elif lim == -sp.oo:
            reps[f] = sp.Piecewise((-sp.pi / 2 - sp.atan(1 / z), z < 0), (sp.atan(z), True))
    if not reps:
        return attempt(lambda: sp.simplify(expr), SOLVE_SECONDS, expr)
    out = sp.expand(expr.xreplace(reps))
    erfcs = sorted(out.atoms(Erfc), key=sp.default_sort_key)
    if erfcs:
        out = sp.collect(out, erfcs, evaluate=False)
        out = sp.Add(*[sp.factor(c) * k for k, c in out.items()])
        return out
    return attempt(lambda: sp.simplify(out), SOLVE_SECONDS, out)


# ----------------------------------------------------------------------------------------------------
# helpers on densities


def log_density(p, var):
    """log p expanded and simplified (sums of densities stay as log of a sum; printed via LAE)."""
    if p.is_Add:
        return sp.log(p)  # a mixture: printed as log-add-exp of its terms, never simplified into cancellation
    lp = sp.expand_log(sp.log(p), force=True)
    return attempt(lambda: sp.simplify(lp), SOLVE_SECONDS, lp)


def simplify_ratio(p, q, var):
    """p/q as a sum of simplified terms: for a mixture p = sum_i w_i p_i, sum_i w_i (p_i/q)."""
    terms = sp.Add.make_args(p)
    out = []
    for term in terms:
        r = sp.powsimp(term / q, force=True)
        r = attempt(lambda r=r: sp.simplify(r), SOLVE_SECONDS, r)
        r = r.replace(lambda z: isinstance(z, sp.exp), lambda z: sp.exp(sp.expand(z.args[0])))
        out.append(r)
    dep = [r for r in out if r.has(var)]
    const = sp.factor(sp.Add(*[r for r in out if not r.has(var)]))
    return sp.Add(*dep) + const


def privacy_loss(p, q, var):
    """L = log(p/q), simplified; log p - log q where the simplified form is not that function at some parameter
    values (SymPy can write a normalising constant's sign as logs of negative factors, or as i*pi)."""
    r = simplify_ratio(p, q, var)
    if r.is_Add:
        return sp.log(r)
    L = sp.expand_log(sp.log(r), force=True)
    L = attempt(lambda: sp.simplify(L), SOLVE_SECONDS, L)
    raw = sp.expand_log(sp.log(p), force=True) - sp.expand_log(sp.log(q), force=True)
    symbols = sorted((p.free_symbols | q.free_symbols) - {var}, key=lambda s: s.name)
    return raw if L.has(sp.I) or not same_function(L, raw, var, symbols) else L


def real_solutions(eq, var, seconds=SOLVE_SECONDS):
    """Solutions of eq = 0 for var (None when SymPy cannot solve), dropping manifestly complex ones."""
    # check=False: candidates are verified numerically at bind time (residual and range), which also
    # rejects spurious roots; SymPy's own check is the slow part of solve
    sols = attempt(lambda: sp.solve(eq, var, check=False), seconds)
    if sols is None:
        return None
    out = []
    for s in sols:
        if isinstance(s, dict):
            return None
        if s.has(sp.I) or s.has(sp.LambertW):
            continue
        out.append(s)
    return out


def _sample_values(sym):
    """Values a symbol may take by its assumptions, for ``same_function``."""
    if sym.is_integer:
        return (2, 3, 5) if sym.is_nonnegative else (2, -1, 3)
    if sym.is_nonnegative:
        return (0.7, 1.9, 3.1)
    return (0.6, -1.3, 2.2)


def same_function(a, b, var, symbols):
    """False when expressions a and b (in var and symbols) differ somewhere they are evaluated: at three parameter
    points by the symbols' assumptions and nine values of var, wherever b is a finite real number, a must be one
    equal to it (to 1e-9).  SymPy's simplification can turn a real loss into logs of negative factors."""
    import mpmath

    args = [var, *symbols]
    try:
        fa, fb = (sp.lambdify(args, e, modules="mpmath") for e in (a, b))
    except Exception:
        return True
    for i in range(3):
        theta = [mpmath.mpf(_sample_values(s)[i]) for s in symbols]
        for x in (-3.7, -1.2, -0.3, 0.2, 0.55, 0.9, 1.4, 2.6, 5.3):
            with mpmath.workdps(30):
                try:
                    vb = fb(mpmath.mpf(x), *theta)
                except Exception:
                    continue
                if not isinstance(vb, mpmath.mpf) or not mpmath.isfinite(vb):
                    continue
                try:
                    va = fa(mpmath.mpf(x), *theta)
                except Exception:
                    return False
                if not isinstance(va, mpmath.mpf) or not abs(va - vb) <= 1e-9 * (1 + abs(vb)):
                    return False
    return True


#: the step functions of a continuous density: cut into steps at bind time (``derive._floor_variant``), not compiled
STEP_FUNCTIONS = (sp.floor, sp.ceiling)
#: the functions a continuous density may call: Numba compiles them (math module), or mechkit rewrites them first
COMPILED_FUNCTIONS = {sp.exp, sp.log, sp.Abs, sp.sign, sp.erf, sp.erfc, sp.gamma, sp.loggamma, sp.sin, sp.cos, sp.tan,
                      sp.atan, sp.asin, sp.acos, sp.sinh, sp.cosh, sp.tanh, sp.asinh, sp.acosh, sp.atanh,
                      sp.Piecewise, sp.Heaviside, sp.Max, sp.Min, LAE, LogErfc, Softplus, Erfc}
