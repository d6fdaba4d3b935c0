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
import warnings

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike

from .. import relations
from ..errors import ParameterError, SpecificationError, check_finite_real, check_real, real_array
from ..symbolic import codegen
from ..symbolic.derive import Spec, derive
from ..symbolic.parse import NAME_RE
from ..symbolic.spec import as_expr, extract_constants, parse_domain, parse_range
from . import screen as _screen
from .continuous import ContinuousCore
from .core import DensityUndefined
from .discrete import DiscreteCore
from .plrv import PLRV, check_eps_array

_FAMILIES = {}


DIRECTIONS = relations.CHOICES  # what a query's direction argument accepts


class Family:
    """A symbolic pair of densities with named parameters.  Call it with values to get a Mechanism."""

    def __init__(self, p, q, var, name=None, domain=None, constraints=None, derived=None, defaults=None):
        if isinstance(var, str):
            if not NAME_RE.match(var):
                raise SpecificationError(f"var must be a name (a letter, then letters, digits or _), got {var!r}")
            var = sp.Symbol(var, real=True)
        if not isinstance(var, sp.Symbol):
            raise SpecificationError(f"var must be a SymPy Symbol, got {var!r}")
        local = {var.name: var}
        p = as_expr(p, "p", local)
        q = as_expr(q, "q", local)
        if not (p.has(var) or q.has(var)):
            raise SpecificationError(f"var {var} does not appear in the densities p = {p} and q = {q}")
        kind, lo, hi, points = parse_domain(domain, var)
        # derived parameters (e.g. 1 - sampling_rate as a non-negative symbol) are evaluated at bind time
        consts = [(s, as_expr(e, f'derived parameter {s}', local)) for s, e in (derived or {}).items()]
        p = extract_constants(p, var, consts)
        q = extract_constants(q, var, consts)
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
        self.constants = tuple(consts)
        self.parameters = tuple(params)
        self.constraints = {}
        for k, v in (constraints or {}).items():
            if k not in {s.name for s in params}:
                raise SpecificationError(f"constraint on unknown parameter {k!r}; "
                                         f"parameters: {[s.name for s in params]}")
            self.constraints[k] = parse_range(v) if isinstance(v, str) else tuple(v)
        self.spec = Spec(p=p, q=q, var=var, kind=kind, lo=lo, hi=hi, points=points,
                         params=self.parameters, consts=self.constants)
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

    def __call__(self, *args, **params) -> Mechanism:
        """The mechanism with these parameter values (by name), derived on first use (or read from the cache).

        Raises
        ------
        ParameterError : a positional value, an unknown or missing parameter, or a value outside its range
            (SymPy assumptions, ``constraints``) or beyond what double precision can evaluate.
        SpecificationError : the densities are negative or not normalised at these values.
        """
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
        for c, e in self.constants:
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
    def from_densities(p: sp.Expr | str, q: sp.Expr | str, var: sp.Symbol | str, name: str | None = None,
                       domain=None, constraints: dict | None = None, defaults: dict | None = None) -> Family:
        """A ``Family`` from the densities p (with the individual) and q (without) of the output ``var``.

        Parameters
        ----------
        p, q : SymPy expressions, or strings parsed without evaluating Python (``symbolic.parse.FUNCTIONS``);
            floats become exact rationals.
        var : the output variable (a Symbol, or its name: a real symbol).
        name : shown in reprs and the CLI.
        domain : ``sp.Reals`` (default for a real var), an ``sp.Interval``, ``sp.Integers`` (default for an
            integer var) or a finite set of numbers (pmfs).
        constraints : ranges of parameters beyond their SymPy assumptions, e.g. ``{"q": "(0, 1]"}``.
        defaults : default parameter values.

        Returns
        -------
        The ``Family``; free symbols other than ``var`` are its parameters.  Call it with values to bind.

        Raises
        ------
        SpecificationError : an expression that cannot be parsed or uses what is not allowed (naming it), var
            absent from the densities, an unsupported domain, constraints or defaults on unknown parameters.
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
        self.remove = PLRV(self, relations.REMOVE)
        self.add = PLRV(self, relations.ADD)

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
        """The PLRV of ``direction`` ('remove' or 'add').

        Raises
        ------
        ParameterError : ``direction`` is not 'remove' or 'add'.
        """
        return self.remove if relations.check_direction(direction) == relations.REMOVE else self.add

    def _dirs(self, direction):
        return relations.directions(direction)

    # -- one-shot privacy curve ------------------------------------------------------------------
    def log_delta(self, epsilon, direction="both"):
        eps = check_eps_array(epsilon)
        out = np.full(eps.shape, -np.inf)
        for d in self._dirs(direction):
            out = np.maximum(out, self.plrv(d).log_hockey_stick(eps))
        return out

    def delta(self, epsilon: float | ArrayLike, direction: str = "both") -> float | np.ndarray:
        """delta(epsilon) = max over directions of E[(1 - e^(epsilon - L))_+]; vectorised over epsilon.

        Raises
        ------
        ParameterError : epsilon not real, or ``direction`` not one of 'both', 'remove', 'add'.
        """
        scalar = np.ndim(epsilon) == 0
        out = np.exp(self.log_delta(epsilon, direction))
        return float(out[0]) if scalar else out

    def epsilon(self, delta: float | ArrayLike, direction: str = "both") -> float | np.ndarray:
        """Smallest epsilon >= 0 with delta(epsilon) <= delta (inf when no finite epsilon exists).

        Raises
        ------
        ParameterError : delta outside [0, 1], or ``direction`` not one of 'both', 'remove', 'add'.
        """
        scalar = np.ndim(delta) == 0
        ds = np.atleast_1d(real_array("delta", delta))
        for d in ds:
            check_finite_real("delta", d, low=0.0, high=1.0)
        out = np.array([max(self.plrv(d).epsilon(float(x)) for d in self._dirs(direction)) for x in ds])
        return float(out[0]) if scalar else out

    def rdp(self, alpha: float, direction: str = "both") -> float:
        """Renyi divergence of order alpha > 1 (max over directions): K(alpha - 1) / (alpha - 1).

        Raises
        ------
        ParameterError : alpha not a real number above 1, or an unknown ``direction``.
        """
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
