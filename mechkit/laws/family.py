"""Families (symbolic pairs of densities) and bound mechanisms.

``Mechanism.from_densities(p, q, var)`` returns a ``Family``; calling the family with parameter values
returns a ``Mechanism``.  ``p`` is the output distribution on the dataset *with* the individual, ``q``
*without* it (the add/remove relation).  A mechanism exposes its two privacy-loss random variables:

* ``m.remove``: L = log p/q with the output drawn from P (its ``dual``: the same L under Q);
* ``m.add``: log q/p with the output drawn from Q (its ``dual``: under P).

and answers the one-shot privacy curve ``m.delta(epsilon)``, ``m.epsilon(delta)`` (max over both
directions unless ``direction`` says otherwise) and Renyi divergences ``m.rdp(alpha)``.
"""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import sympy as sp
from scipy.optimize import brentq

from ..symbolic import codegen
from . import screen as _screen
from .core import ContinuousCore, DensityUndefined, DiscreteCore
from ..symbolic.derive import Spec, derive
from ..engine.logspace import log1mexp
from ..errors import NumericalLimitError, ParameterError, SpecificationError, check_finite_real, check_real, real_array
from ..symbolic.parse import exact, parse_expression

_FAMILIES = {}
DIRECTIONS = ("both", "remove", "add")


# ----------------------------------------------------------------------------------------------------
# specification parsing


def _as_expr(value, what, local):
    """A user's expression as exact SymPy: strings are parsed without evaluating Python, floats made rational."""
    if isinstance(value, sp.Basic):
        return exact(value)
    if isinstance(value, str):
        return parse_expression(value, what, local)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return exact(sp.Float(value)) if isinstance(value, float) else sp.Integer(value)
    raise SpecificationError(f"{what} must be a SymPy expression or a string, got {type(value).__name__}")


def _parse_domain(domain, var):
    """-> (kind, lo, hi, points)"""
    if domain is None:
        domain = sp.Integers if var.is_integer else sp.Reals
    if isinstance(domain, str):
        key = domain.strip().lower()
        if key in ("reals", "real", "r"):
            domain = sp.Reals
        elif key in ("integers", "integer", "z"):
            domain = sp.Integers
        else:
            raise SpecificationError(f"domain {domain!r} is not one of 'reals', 'integers', an Interval, a finite set")
    if isinstance(domain, (list, tuple, set, frozenset)):
        domain = sp.FiniteSet(*domain)
    if domain == sp.Reals:
        return "continuous", -sp.oo, sp.oo, ()
    if isinstance(domain, sp.Interval):
        return "continuous", exact(domain.inf), exact(domain.sup), ()
    if domain == sp.Integers:
        return "integers", -sp.oo, sp.oo, ()
    if isinstance(domain, sp.FiniteSet):
        pts = []
        for v in domain:
            if not v.is_number or not v.is_real:
                raise SpecificationError(f"finite domain points must be real numbers, got {v}")
            pts.append(float(v))
        if not pts:
            raise SpecificationError("the finite domain is empty")
        return "finite", min(pts), max(pts), tuple(sorted(pts))
    if isinstance(domain, sp.Range):
        if domain.size.is_finite and domain.size <= 100_000:
            return "finite", domain.inf, domain.sup, tuple(float(v) for v in domain)
        raise SpecificationError("only finite Ranges (up to 100000 points) are supported; use sp.Integers")
    raise SpecificationError(f"unsupported domain {domain!r}: use sp.Reals, sp.Interval, sp.Integers or a finite set")


_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_INTERVAL_RE = re.compile(r"^\s*([\(\[])\s*([^,]+?)\s*,\s*([^\]\)]+?)\s*([\)\]])\s*$")


def _parse_range(text):
    m = _INTERVAL_RE.match(text)
    if not m:
        raise SpecificationError(f"constraint {text!r} must look like '(0, 1]' or '[0, inf)'")
    lo = float(m.group(2).replace("inf", "inf"))
    hi = float(m.group(3))
    return lo, hi, m.group(1) == "(", m.group(4) == ")"


def _extract_constants(expr, var, consts):
    """Replace var-free Sums/Products/Integrals by symbols evaluated at bind time."""
    def rep(e):
        for c, ce in consts:
            if ce == e:
                return c
        c = sp.Symbol(f"_const{len(consts)}", real=True)
        consts.append((c, e))
        return c
    return expr.replace(lambda e: isinstance(e, (sp.Sum, sp.Product, sp.Integral)) and not e.has(var), rep)


# ----------------------------------------------------------------------------------------------------


class Family:
    """A symbolic pair of densities with named parameters.  Call it with values to get a Mechanism."""

    def __init__(self, p, q, var, name=None, domain=None, constraints=None, derived=None, defaults=None):
        if isinstance(var, str):
            if not _NAME.match(var):
                raise SpecificationError(f"var must be a name (a letter, then letters, digits or _), got {var!r}")
            var = sp.Symbol(var, real=True)
        if not isinstance(var, sp.Symbol):
            raise SpecificationError(f"var must be a SymPy Symbol, got {var!r}")
        local = {var.name: var}
        p = _as_expr(p, "p", local)
        q = _as_expr(q, "q", local)
        if not (p.has(var) or q.has(var)):
            raise SpecificationError(f"var {var} does not appear in the densities p = {p} and q = {q}")
        kind, lo, hi, points = _parse_domain(domain, var)
        # derived parameters (e.g. 1 - sampling_rate as a non-negative symbol) are evaluated at bind time
        consts = [(s, _as_expr(e, f'derived parameter {s}', local)) for s, e in (derived or {}).items()]
        p = _extract_constants(p, var, consts)
        q = _extract_constants(q, var, consts)
        const_syms = {c for c, _ in consts}
        params = sorted((p.free_symbols | q.free_symbols) - {var} - const_syms, key=lambda s: s.name)
        for c, e in consts:
            extra = e.free_symbols - set(params) - {var}
            bound = {v for b in e.atoms(sp.Sum, sp.Product, sp.Integral) for v in b.variables}
            extra = extra - bound
            params = sorted(set(params) | extra, key=lambda s: s.name)
        self.name = name or "custom"
        self.var = var
        self.p, self.q = p, q
        self._consts = tuple(consts)
        self.parameters = tuple(params)
        self.constraints = {}
        for k, v in (constraints or {}).items():
            if k not in {s.name for s in params}:
                raise SpecificationError(f"constraint on unknown parameter {k!r}; "
                                         f"parameters: {[s.name for s in params]}")
            self.constraints[k] = _parse_range(v) if isinstance(v, str) else tuple(v)
        self.spec = Spec(p=p, q=q, var=var, kind=kind, lo=lo, hi=hi, points=points,
                         params=self.parameters, consts=self._consts)
        self.defaults = dict(defaults or {})
        unknown = set(self.defaults) - {s.name for s in params}
        if unknown:
            raise SpecificationError(f"defaults for unknown parameter(s) {sorted(unknown)}")
        self._loaded = None
        self._key = None

    @property
    def key(self):
        """The family's content key (densities, domain, parameters and code version; computed once): equal for
        families built separately from the same spec, e.g. two ``subsample`` calls."""
        if self._key is None:
            self._key = codegen.family_key(self.spec)
        return self._key

    # -- derivation (lazy, cached on disk) -------------------------------------------------------
    def derive(self, _screened=False):
        """Run (or load from the cache) the symbolic derivation and code generation; returns self."""
        if self._loaded is None:
            key = self.key
            if key not in _FAMILIES:
                if not _screened:
                    self._screen_defaults()
                _FAMILIES[key] = codegen.load_or_build(self.spec, derive)
            self._loaded = _FAMILIES[key]
        return self

    def _screen_defaults(self):
        """Before a derivation asked for without values (``fam.privacy_loss``...): check the densities where every
        parameter has a default (e.g. a family without parameters); nothing to check otherwise."""
        try:
            theta = self._theta(self._check_params({}))
        except ParameterError:
            return
        _screen.screen(self, theta)

    @property
    def structure(self):
        return self.derive()._loaded[0]

    @property
    def module(self):
        return self.derive()._loaded[2]

    def _display(self, key):
        return self.derive()._loaded[1].get(key)

    @property
    def privacy_loss(self):
        """L(x) = log p(x)/q(x), simplified."""
        return self._display("privacy_loss")

    @property
    def inverse_loss(self):
        """Inverses of L on its smooth monotone variants: list of (sign pattern of Abs terms, [x(s)...])."""
        return self._display("inverse_loss")

    @property
    def mgf(self):
        """M(t) = integral of p^(1+t) q^(-t) in closed form (None when only quadrature is available)."""
        return self._display("mgf")

    @property
    def cgf(self):
        """K(t) = log M(t) in closed form (None when only quadrature is available)."""
        return self._display("cgf")

    @property
    def loss_variable(self):
        from ..symbolic.algebra import S
        return S

    @property
    def cgf_variable(self):
        from ..symbolic.algebra import T
        return T

    # -- binding ---------------------------------------------------------------------------------
    def _check_params(self, values):
        values = {**self.defaults, **values}
        names = [s.name for s in self.parameters]
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ParameterError(f"unknown parameter(s) {unknown} for {self.name}; its parameters are {names}")
        missing = [n for n in names if n not in values]
        if missing:
            raise ParameterError(f"missing value(s) for parameter(s) {missing} of {self.name}")
        out = {}
        for s in self.parameters:
            v = values[s.name]
            x = check_real(s.name, v)  # strings (even '1.0') and booleans are refused
            if s.is_positive and not x > 0:
                raise ParameterError(f"{s.name} must be positive, got {v!r}")
            if s.is_nonnegative and not x >= 0:
                raise ParameterError(f"{s.name} must be non-negative, got {v!r}")
            if s.is_negative and not x < 0:
                raise ParameterError(f"{s.name} must be negative, got {v!r}")
            if s.is_integer and x != int(x):
                raise ParameterError(f"{s.name} must be an integer, got {v!r}")
            if s.name in self.constraints:
                lo, hi, lo_open, hi_open = self.constraints[s.name]
                check_finite_real(s.name, x, low=lo, high=hi if math.isfinite(hi) else None,
                                  low_open=lo_open, high_open=hi_open)
            out[s.name] = x
        return out

    def __call__(self, *args, **params):
        if args:
            names = ", ".join(f"{s.name}=..." for s in self.parameters)
            raise ParameterError(f"{self.name} takes its parameters by name, {self.name}({names}); got "
                                 f"{len(args)} positional argument(s) {args!r}")
        values = self._check_params(params)
        theta = self._theta(values)
        if self._loaded is None and self.key not in _FAMILIES:
            # the derivation is still to come in this process (seconds, on a cold cache): check the densities at
            # these values first, so that a negative or unnormalised density fails in milliseconds
            _screen.screen(self, theta)
        self.derive(_screened=True)
        return Mechanism(self, values, theta)

    def _theta(self, values):
        """The kernels' parameter vector: the parameter values, then the derived constants evaluated at them."""
        theta = [values[s.name] for s in self.parameters]
        subs = {s: values[s.name] for s in self.parameters}
        for c, e in self._consts:
            val = _eval_constant(e, subs)
            if not math.isfinite(val):
                raise ParameterError(f"the constant {e} is not finite at {values}")
            theta.append(val)
        return np.array(theta, dtype=float)

    def __repr__(self):
        return f"Family({self.name!r}, parameters={[s.name for s in self.parameters]})"


class Mechanism:
    """A family with parameter values: its two PLRVs and one-shot privacy curve."""

    @staticmethod
    def from_densities(p, q, var, name=None, domain=None, constraints=None, defaults=None):
        """A ``Family`` from the densities p (with the individual) and q (without) of the output ``var``.

        ``domain``: ``sp.Reals`` (default for a real var), an ``sp.Interval``, ``sp.Integers`` (default for
        an integer var) or a finite set of numbers (pmfs).  Free symbols other than ``var`` are parameters,
        checked against their SymPy assumptions; ``constraints`` adds ranges such as ``{"q": "(0, 1]"}`` and
        ``defaults`` default values.
        """
        return Family(p, q, var, name=name, domain=domain, constraints=constraints, defaults=defaults)

    def __init__(self, family, values, theta=None, _explain=True):
        self.family = family
        self.params = dict(values)
        self.theta = family._theta(values) if theta is None else np.array(theta, dtype=float)
        st = family.structure
        core_cls = ContinuousCore if st["kind"] == "continuous" else DiscreteCore
        try:
            self.core = core_cls(st, family.module, self.theta)
        except DensityUndefined as exc:
            if not _explain:
                raise
            raise _undefined(family, self.params, self.theta, exc) from None
        if st.get("cgf"):
            self._attach_closed_cgf(st["cgf"])
        self.remove = PLRV(self, "remove")
        self.add = PLRV(self, "add")

    def _attach_closed_cgf(self, names):
        """Use the closed-form CGF only after it agrees with quadrature at a few points."""
        mod = self.family.module
        for tau in (0.7, -1.6, 2.5):
            closed = float(getattr(mod, "k_" + names[0])(tau, self.theta))
            quad = self.core.cgf_quadrature(tau, 0)
            if not (math.isfinite(closed) and math.isfinite(quad)) or abs(closed - quad) > 1e-7 * (1 + abs(quad)):
                self.cgf_check_failed = (tau, closed, quad)
                return
        self.core.set_closed_cgf(names)

    @property
    def name(self):
        args = ", ".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"{self.family.name}({args})"

    def __repr__(self):
        return f"<Mechanism {self.name}>"

    def plrv(self, direction):
        if direction not in ("remove", "add"):
            raise ParameterError(f"direction must be 'remove' or 'add', got {direction!r}")
        return self.remove if direction == "remove" else self.add

    def _dirs(self, direction):
        if direction not in DIRECTIONS:
            raise ParameterError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
        return ("remove", "add") if direction == "both" else (direction,)

    # -- one-shot privacy curve ------------------------------------------------------------------
    def log_delta(self, epsilon, direction="both"):
        eps = _check_eps_array(epsilon)
        out = np.full(eps.shape, -np.inf)
        for d in self._dirs(direction):
            out = np.maximum(out, self.plrv(d).log_hockey_stick(eps))
        return out

    def delta(self, epsilon, direction="both"):
        """delta(epsilon) = max over directions of E[(1 - e^(epsilon - L))_+]; vectorised over epsilon."""
        scalar = np.ndim(epsilon) == 0
        out = np.exp(self.log_delta(epsilon, direction))
        return float(out[0]) if scalar else out

    def epsilon(self, delta, direction="both"):
        """Smallest epsilon >= 0 with delta(epsilon) <= delta (inf when no finite epsilon exists)."""
        scalar = np.ndim(delta) == 0
        ds = np.atleast_1d(real_array("delta", delta))
        for d in ds:
            check_finite_real("delta", d, low=0.0, high=1.0)
        out = np.array([max(self.plrv(d).epsilon(float(x)) for d in self._dirs(direction)) for x in ds])
        return float(out[0]) if scalar else out

    def rdp(self, alpha, direction="both"):
        """Renyi divergence of order alpha > 1 (max over directions): K(alpha - 1) / (alpha - 1)."""
        a = check_finite_real("alpha", alpha, low=1.0)
        return max(self.plrv(d).cgf(a - 1.0) / (a - 1.0) for d in self._dirs(direction))


def _undefined(family, values, theta, exc):
    """What a NaN of a compiled log-density at ``exc.x`` means, decided in mpmath at 40 digits: the density is
    negative or not real there (``SpecificationError``), or it is a valid number that the compiled kernels cannot
    evaluate in double precision at these parameter values (``ParameterError`` naming the parameters, and for each
    one that alone is to blame, about where the values that bind end); ``exc`` itself where mpmath cannot tell."""
    import mpmath

    which, x = exc.which, exc.x
    word = "density" if family.spec.kind == "continuous" else "pmf"
    r = _screen.density_at(family, which, x, theta)
    if r is None or (isinstance(r, mpmath.mpf) and mpmath.isnan(r)):
        return exc
    if isinstance(r, mpmath.mpc):
        return SpecificationError(f"{word} {which} is not a real number at x = {x:g} ({which}(x) = {complex(r):.6g})")
    if r < 0:
        return SpecificationError(f"{word} {which} is negative at x = {x:g} ({which}(x) = {mpmath.nstr(r, 6)}); a "
                                  "density must be non-negative on its whole domain")
    ranges = [_working_range(family, values, s.name) for s in family.parameters]
    parts = [r_ for r_ in ranges if r_]
    at = ", ".join(f"{k}={v:g}" for k, v in values.items())
    head = (f"the parameter values ({at}) are outside the range that double precision can evaluate: {which}(x = {x:g}) "
            f"= {mpmath.nstr(r, 6)}, but its compiled log-{word} overflows or underflows to nan there")
    if parts:
        return ParameterError(f"{head}; " + "; ".join(parts) + " (the other parameters as given)")
    return ParameterError(f"{head}; rescale the problem so that the parameters are of moderate size")


def _working_range(family, values, name):
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
                Mechanism(family, family._check_params(trial), _explain=False)
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


_WINDOW = 64


def _eval_constant(expr, subs):
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


def _check_eps_array(epsilon):
    eps = np.atleast_1d(real_array("epsilon", epsilon))
    if np.any(np.isnan(eps)) or np.any(eps < 0):
        bad = eps[np.isnan(eps) | (eps < 0)][0]
        raise ParameterError(f"epsilon must lie in [0, inf], got {bad!r}")
    return eps


class PLRV:
    """A privacy-loss random variable: a direction of a mechanism, under its own measure or the dual one.

    ``remove``: L = log p/q, output ~ P.  ``add``: log q/p, output ~ Q.  ``.dual``: same loss, other measure.
    All methods are vectorised over their first argument.
    """

    def __init__(self, mech, direction, dual=False):
        self.mechanism = mech
        self.direction = direction
        self.is_dual = dual
        self._med = None
        self._atoms = None
        self._dual = None
        self._sign = 1.0 if direction == "remove" else -1.0
        own = 0 if direction == "remove" else 1
        self._m = 1 - own if dual else own
        # K_this(t) = K(a t + b) with K(tau) = log E_P[exp(tau L)]
        self._a = self._sign
        self._b = {("remove", False): 0.0, ("remove", True): -1.0,
                   ("add", False): -1.0, ("add", True): 0.0}[(direction, dual)]

    @property
    def dual(self):
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

    @staticmethod
    def _out(x, like):
        return float(x[0]) if np.ndim(like) == 0 else x

    def _s(self, s):
        s = np.atleast_1d(np.asarray(s, dtype=float))
        if np.any(np.isnan(s)):
            raise ParameterError("s must not be nan")
        return s

    def _tails(self, v, want_lower, prob, split=None):
        """P(Z <= v) (want_lower) or P(Z > v), or its log (not ``prob``), each point computed from one side.

        Below ``split`` (default: the median) P(Z <= v) is evaluated, at and above it P(Z > v), each summed
        from positive parts; the other side is its complement.  From the median, each point costs one
        evaluation of a side whose probability is at most about 1/2, so neither tail loses accuracy.  In loss
        space (Z = sign L) this is the core's split at sign * split; for Z = -L, {Z <= v} = {L >= -v}, so the
        atom at the point goes to the core's upper side (not ``closed``).
        """
        split = self._median() if split is None else split
        pos = self._sign > 0
        return self._core.tails(self._m, v if pos else -v, self._sign * split, pos, want_lower != pos, prob)

    def _lower(self, v):
        """log P(Z <= v) directly."""
        return self._tails(v, True, False, np.inf)

    def _median(self):
        """A point m near the median: P(Z <= s) is at most about 1/2 below m and at least about 1/2 above.

        Only accuracy depends on it, and only mildly (a probability near 1/2 is as accurate computed
        directly as by complement), so two vectorised passes suffice: a geometric scan, then a linear one
        between the bracketing points.
        """
        if self._med is None:
            half = -math.log(2.0)
            mags = np.geomspace(1e-12, 1e300, 157)
            pts = np.concatenate((-mags[::-1], [0.0], mags))
            lo, hi = -np.inf, np.inf
            for _ in range(2):
                below = self._lower(pts) <= half
                k = int(np.argmin(below)) if not below.all() else len(pts)
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

    def logsf(self, s):
        """log P(Z > s), accurate in both tails."""
        return self._out(self._tails(self._s(s), False, False), s)

    def logcdf(self, s):
        """log P(Z <= s), accurate in both tails."""
        return self._out(self._tails(self._s(s), True, False), s)

    def sf(self, s):
        """P(Z > s)."""
        return self._out(self._tails(self._s(s), False, True), s)

    def cdf(self, s):
        """P(Z <= s)."""
        return self._out(self._tails(self._s(s), True, True), s)

    def pdf(self, s):
        """Density of the continuous part (atoms excluded)."""
        v = self._s(s)
        return self._out(self._core.pdf(self._m, self._sign * v), s)

    def atoms(self):
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
    def support(self):
        lo, hi = self._core.support
        return (lo, hi) if self._sign > 0 else (-hi, -lo)

    @property
    def inf_mass(self):
        """P(Z = +inf): the probability of an infinite privacy loss (where only one density is positive)."""
        if not self._core.atoms.values.size:
            return 0.0
        vals, probs = self.atoms()
        return float(probs[vals == np.inf].sum())

    def cgf_finite(self, t):
        """log E[exp(t Z); Z finite]: the generating function of the finite part (order 0).

        Equal to ``cgf(t)`` when there is no mass at +inf; with such mass, the composers use it to bound
        the finite part's tails (the mass at +inf is accounted for separately, notes.md 1.1).
        """
        t = float(check_finite_real("t", t))
        if self.inf_mass == 0.0:
            return self.cgf(t)
        if self._core.mono:
            raise NumericalLimitError("the finite part of a continuous privacy loss with a point mass at +inf "
                                      "is not supported yet")
        vals, probs = self.atoms()
        fin = np.isfinite(vals) & (probs > 0)
        if not fin.any():
            return -math.inf
        lw = np.log(probs[fin]) + t * vals[fin]
        g = float(lw.max())
        return g + math.log(float(np.exp(lw - g).sum()))

    def cgf(self, t, order=0):
        """d^order/dt^order log E[exp(t Z)] (order 0..6); +inf where the MGF diverges."""
        if order not in range(7):
            raise ParameterError(f"order must be an integer in [0, 6], got {order!r}")
        scalar = np.ndim(t) == 0
        ts = np.atleast_1d(np.asarray(t, dtype=float))
        if np.any(~np.isfinite(ts)):
            raise ParameterError("t must be finite")
        out = np.array([self._a ** order * self._core.cgf(self._a * x + self._b, order) for x in ts])
        return float(out[0]) if scalar else out

    def cgf_vector(self, t, n=4):
        """[K(t), K'(t), ..., K^(n)(t)] in one pass (n <= 6); +inf entries where the MGF diverges."""
        if n not in range(7):
            raise ParameterError(f"n must be an integer in [0, 6], got {n!r}")
        t = check_finite_real("t", t)
        v = np.array(self._core.cgf_vector(self._a * t + self._b, n), dtype=float)
        return v * self._a ** np.arange(n + 1)

    def tilted_abs3(self, t):
        """E|Z_t - K'(t)|^3, the absolute third central moment of the t-tilted variable."""
        t = check_finite_real("t", t)
        return float(self._core.tilted_abs3(self._a * t + self._b))

    def tilt_mode(self, t):
        """About where the t-tilted law of the privacy loss has its bulk (``Law.tilt_mode``): a centre for
        ``tilt_stats`` where no model of K'(t) is at hand; nan where the CGF is infinite at t."""
        t = check_finite_real("t", t)
        return self._a * self._core.tilt_mode(self._a * t + self._b)

    def tilt_stats_about_mode(self, t, n=4):
        """``tilt_stats`` about the t-tilted law's mode (``Law.tilt_stats_about``: no model of K'(t) needed; one pass
        where the loss has one monotone piece): ([K(t), ..., K^(n)(t)], A, the centre used).  Not memoised."""
        t = check_finite_real("t", t)
        vec, A, c = self._core.tilt_stats_signed(self._a * t + self._b, math.nan, n, self._a)
        return vec, float(A), self._a * c

    def tilt_stats(self, t, center, n=4):
        """([K(t), ..., K^(n)(t)], A) with A >= E|Z_t - K'(t)|^3, from one quadrature pass (2 <= n <= 6).

        ``center`` is a guess of K'(t) (the moments are integrated about it; A is exact when it is K'(t)).
        Memoised per (t, center, n).  The saddle-point accountant's certificate evaluations use it.
        """
        vec, A = self._tilt_stats(check_finite_real("t", t), check_finite_real("center", center), n)
        return np.array(vec), A

    def _tilt_stats(self, t, center, n):
        """``tilt_stats`` for the engine's own callers (t and center finite floats): ([K(t), ..., K^(n)(t)] as a
        list, A), memoised; the list is shared with the memo (read it, do not change it)."""
        memo = self.__dict__.get("_tilt_memo")
        if memo is None:
            memo = self._tilt_memo = {}
        key = (t, center, n)
        got = memo.get(key)
        if got is None:
            if len(memo) >= 4096:
                memo.clear()
            vec, A, _ = self._core.tilt_stats_signed(self._a * t + self._b, self._a * center, n, self._a)
            got = memo[key] = (vec.tolist(), float(A))
        return got

    def mgf(self, t):
        return np.exp(self.cgf(t))

    def cumulants(self, t=0.0, n=6):
        """[K'(t), ..., K^(n)(t)]: mean, variance and higher cumulants of the t-tilted variable."""
        return np.array([self.cgf(t, k) for k in range(1, n + 1)])

    # -- hockey stick ----------------------------------------------------------------------------
    def log_hockey_stick(self, eps):
        """log of P(Z > eps) - e^eps P(Z' > eps) (Z' the dual) = log E[(1 - e^(eps - Z))_+]."""
        la = np.atleast_1d(self.logsf(np.asarray(eps, float)))
        lb = np.atleast_1d(self.dual.logsf(np.asarray(eps, float))) + eps
        out = np.full(la.shape, -np.inf)
        pos = la > lb
        with np.errstate(all="ignore"):
            out[pos] = la[pos] + log1mexp(lb[pos] - la[pos])
        # an atom at +inf has no dual mass: la finite, lb = -inf handled above (log1mexp(-inf) = 0)
        return out

    def delta(self, epsilon):
        eps = _check_eps_array(epsilon)
        r = np.exp(self.log_hockey_stick(eps))
        return float(r[0]) if np.ndim(epsilon) == 0 else r

    def epsilon(self, delta):
        d = check_finite_real("delta", delta, low=0.0, high=1.0)
        logd = math.log(d)
        f = lambda e: float(self.log_hockey_stick(np.array([e]))[0]) - logd
        if f(0.0) <= 0:
            return 0.0
        hi_support = self.support[1]
        vals, probs = self.atoms()
        inf_mass = float(probs[vals == np.inf].sum())
        if inf_mass >= d:
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

        return float(brentq(g, 0.0, hi, xtol=1e-13, rtol=8.9e-16, maxiter=500))
