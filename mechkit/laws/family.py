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
import numbers
import types
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from .. import relations
from ..engine import numerics as N
from ..errors import ParameterError, SpecificationError, check_eps_array, check_finite_real, check_real, real_array
from ..symbolic import sp
from . import catalog
from .continuous import ContinuousCore
from .core import DensityUndefined
from .discrete import DiscreteCore
from .plrv import PLRV
from .portable import PortableFamily, PortableMechanism

_FAMILIES = {}


def loaded_derivation(key: str) -> tuple | None:
    """The derivation (structure, display, module) of the family ``key`` loaded in this process, or None.

    Parameters
    ----------
    key : a family's content key (``Family.key``).

    Returns
    -------
    The loaded triple, or None.
    """
    return _FAMILIES.get(key)


def keep_derivation(key: str, loaded: tuple) -> tuple:
    """Keep a derivation loaded elsewhere (``laws.shipped``) for every family of that key in this process.

    Parameters
    ----------
    key : the family's content key.
    loaded : (structure, display, module).

    Returns
    -------
    The triple kept (an earlier one where this process had loaded the key already).
    """
    return _FAMILIES.setdefault(key, loaded)


def __getattr__(name):
    """``derive`` (the symbolic derivation): imported on first use, so that a family whose derivation is cached or
    shipped binds without importing SymPy (``laws.shipped``'s records)."""
    if name != "derive":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ..symbolic.derive import derive
    globals()["derive"] = derive
    return derive


def _derivation():
    """The derivation function: this module's ``derive`` (imported on first use; tests may replace it)."""
    return globals()["derive"] if "derive" in globals() else __getattr__("derive")


DIRECTIONS = relations.CHOICES  # what a query's direction argument accepts


class Family(PortableFamily):
    """A symbolic pair of densities with named parameters.  Call it with values to get a Mechanism.

    Parameters
    ----------
    p, q : the densities (or pmfs) with and without the individual: SymPy expressions, or strings parsed without
        evaluating Python; floats become exact rationals.
    var : the output variable (a Symbol, or its name: a real symbol).
    name : shown in reprs and the CLI (default "custom").
    domain : ``sp.Reals``, an ``sp.Interval``, ``sp.Integers``, a finite ``sp.Range``, a finite set or list of
        numbers, or "reals"/"integers"; default: the integers for an integer ``var``, else the reals.
    constraints : parameter name -> range beyond its SymPy assumptions, as text (``"(0, 1]"``) or a tuple
        ``(low, high, low_open, high_open)``.
    derived : symbol -> parameter-only expression, a constant evaluated at bind time (e.g. 1 - sampling_rate).
    defaults : parameter name -> default value.
    relation : "add_remove" (default; p with the individual, q without) or "replace_one" (p, q on datasets that
        differ in one record; the pair must dominate every ordered pair of such neighbours).
    one_sided : True where the pair dominates only for e^epsilon >= 1 (in both orders of the neighbours), as the
        pair of sampling without replacement under replace-one: compositions then compose both of its
        orientations in every run (docs/relations.md).  Default False.

    Attributes
    ----------
    name, var, p, q, parameters (tuple of Symbols, sorted by name), constants, constraints, defaults, spec,
    relation, one_sided.

    Raises
    ------
    SpecificationError : var not a name or Symbol or absent from the densities, an expression that cannot be parsed,
        an unsupported domain, a malformed constraint, constraints or defaults on unknown parameters, an unknown
        relation.
    """

    def __init__(self, p: sp.Expr | str, q: sp.Expr | str, var: sp.Symbol | str, name: str | None = None,
                 domain: sp.Set | str | Iterable[float] | None = None,
                 constraints: dict[str, str | tuple] | None = None,
                 derived: dict[sp.Symbol, sp.Expr | str] | None = None,
                 defaults: dict[str, float] | None = None, relation: str = relations.ADD_REMOVE,
                 one_sided: bool = False) -> None:
        from ..symbolic.derive import Spec
        from ..symbolic.parse import NAME_RE
        from ..symbolic.spec import as_expr, extract_constants, parse_domain, parse_range
        if relation not in relations.RELATIONS:
            raise SpecificationError(f"relation must be one of {relations.RELATIONS}, got {relation!r}")
        self.relation = relation
        self.one_sided = bool(one_sided)
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
        self._constant_fns = None  # the constants as mpmath functions of the parameters, made at the first bind
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
    def key(self) -> str:
        """The family's content key (densities, domain, parameters and code version; computed once): equal for
        families built separately from the same spec, e.g. two ``subsample`` calls."""
        if self._key is None:
            from ..symbolic import codegen
            self._key = codegen.family_key(self.spec)
        return self._key

    # -- derivation (lazy, cached on disk) -------------------------------------------------------
    def derive(self, _screened: bool = False) -> Family:
        """Run (or load from the cache) the symbolic derivation and code generation, once per process.

        Returns
        -------
        The family itself.

        Raises
        ------
        SpecificationError : densities the derivation cannot handle, or (where every parameter has a default)
            densities that are negative or not normalised at the defaults.
        """
        if self._loaded is None:
            key = self.key
            if key not in _FAMILIES:
                from ..symbolic import codegen
                if not _screened:
                    self._screen_defaults()
                _FAMILIES[key] = codegen.load_or_build(self.spec, _derivation(), label=f"the family {self.name!r}",
                                                       prebuilt=catalog.prederived_dir(), key=key)
            self._loaded = _FAMILIES[key]
        return self

    def _screen_defaults(self):
        """Before a derivation asked for without values (``fam.privacy_loss``...): check the densities where every
        parameter has a default (e.g. a family without parameters); nothing to check otherwise."""
        try:
            theta = self._theta(self._check_params({}))
        except ParameterError:
            return
        from . import screen
        screen.screen(self, theta)

    @property
    def structure(self) -> dict:
        """The derivation's structure (kernel names by role; ``symbolic.derive``); derives on first use."""
        return self.derive()._loaded[0]

    @property
    def module(self) -> types.ModuleType:
        """The generated module of compiled kernels; derives on first use."""
        return self.derive()._loaded[2]

    def _display(self, key):
        return self.derive()._loaded[1].get(key)

    @property
    def privacy_loss(self) -> sp.Expr | None:
        """L(x) = log p(x)/q(x), simplified; derives on first use."""
        return self._display("privacy_loss")

    @property
    def inverse_loss(self) -> list | None:
        """Inverses of L on its smooth monotone variants: list of (sign pattern of Abs terms, [x(s)...])."""
        return self._display("inverse_loss")

    @property
    def mgf(self) -> sp.Expr | None:
        """M(t) = integral of p^(1+t) q^(-t) in closed form (None when only quadrature is available)."""
        return self._display("mgf")

    @property
    def cgf(self) -> sp.Expr | None:
        """K(t) = log M(t) in closed form (None when only quadrature is available)."""
        return self._display("cgf")

    @property
    def loss_variable(self) -> sp.Symbol:
        """The symbol of the privacy-loss value in ``inverse_loss``."""
        from ..symbolic.algebra import S
        return S

    @property
    def cgf_variable(self) -> sp.Symbol:
        """The symbol t of ``mgf`` and ``cgf``."""
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

    def __call__(self, *args: object, **params: float) -> Mechanism:
        """The mechanism with these parameter values (by name), derived on first use (or read from the cache).

        Parameters
        ----------
        *args : not accepted (a ``ParameterError`` showing the call by name).
        **params : the value of each parameter by name; ``defaults`` fill those not given.

        Returns
        -------
        The bound ``Mechanism``.

        Raises
        ------
        ParameterError : a positional value, an unknown or missing parameter, or a value outside its range
            (SymPy assumptions, ``constraints``) or beyond what double precision can evaluate.
        SpecificationError : the densities are negative or not normalised at these values.
        DerivationError : the limits of the privacy loss at the ends of the domain cannot be decided.
        """
        if args:
            names = ", ".join(f"{s.name}=..." for s in self.parameters)
            raise ParameterError(f"{self.name} takes its parameters by name, {self.name}({names}); got "
                                 f"{len(args)} positional argument(s) {args!r}")
        values = self._check_params(params)
        theta = self._theta(values)
        if self._derivation_pending():
            # the derivation is still to come (seconds): check the densities at these values first, so that a
            # negative or unnormalised density fails in milliseconds; on a cache hit the core's exact checks are as
            # quick
            from . import screen
            screen.screen(self, theta)
        self.derive(_screened=True)
        return Mechanism(self, values, theta)

    def _derivation_pending(self):
        """Whether binding will derive (seconds): the derivation is neither loaded, nor cached, nor shipped."""
        if self._loaded is not None or self.key in _FAMILIES:
            return False
        from ..symbolic import codegen
        return not codegen.available(self.spec, catalog.prederived_dir(), self.key)

    def _theta(self, values):
        """The kernels' parameter vector: the parameter values, then the derived constants evaluated at them."""
        theta = [values[s.name] for s in self.parameters]
        params = tuple(theta)
        if self._constant_fns is None:
            self._constant_fns = []
            if self.constants:  # SymPy's lambdify: only for a family with derived constants
                from . import constants
                self._constant_fns = [constants.constant_fn(e, self.parameters) for _, e in self.constants]
        for (c, e), fn in zip(self.constants, self._constant_fns):
            val = fn(*params) if fn is not None else math.nan
            if not math.isfinite(val):  # a Sum, or no finite value: SymPy's evaluation decides (or says why not)
                from . import constants
                val = constants.eval_constant(e, dict(zip(self.parameters, params)))
            if not math.isfinite(val):
                raise ParameterError(f"the constant {e} is not finite at {values}")
            theta.append(val)
        return np.array(theta, dtype=float)

    def __repr__(self):
        rel = "" if self.relation == relations.ADD_REMOVE else f", relation={self.relation!r}"
        return f"Family({self.name!r}, parameters={[s.name for s in self.parameters]}{rel})"


class Mechanism(PortableMechanism):
    """A family with parameter values: its two PLRVs and one-shot privacy curve.

    Made by calling a ``Family`` (which checks the values); the constructor takes them as already checked.

    Parameters
    ----------
    family : the ``Family``.
    values : parameter name -> value.
    theta : the kernels' parameter vector (default: computed from ``values``).

    Attributes
    ----------
    family, params (dict of the values), theta, remove and add (the two ``PLRV``).

    Raises
    ------
    SpecificationError : a density is negative or not real at these values, or p and q have disjoint supports.
    ParameterError : values beyond what the compiled kernels can evaluate in double precision.
    DerivationError : the limits of the privacy loss at the ends of the domain cannot be decided.
    """

    @staticmethod
    def from_densities(p: sp.Expr | str, q: sp.Expr | str, var: sp.Symbol | str, name: str | None = None,
                       domain: sp.Set | str | Iterable[float] | None = None, constraints: dict | None = None,
                       defaults: dict | None = None, relation: str = relations.ADD_REMOVE) -> Family:
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
        relation : "add_remove" (default: p with the individual, q without) or "replace_one" (p and q on two
            datasets that differ in one record; the pair must dominate every ordered pair of such neighbours).

        Returns
        -------
        The ``Family``; free symbols other than ``var`` are its parameters.  Call it with values to bind.

        Raises
        ------
        SpecificationError : an expression that cannot be parsed or uses what is not allowed (naming it), var
            absent from the densities, an unsupported domain, constraints or defaults on unknown parameters, an
            unknown relation.
        """
        return Family(p, q, var, name=name, domain=domain, constraints=constraints, defaults=defaults,
                      relation=relation)

    def __init__(self, family: Family, values: dict[str, float], theta: ArrayLike | None = None,
                 _explain: bool = True) -> None:
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
            from . import screen  # SymPy and mpmath: only to explain the failure
            raise screen.undefined_error(family, self.params, self.theta, exc, Mechanism) from None
        if st.get("cgf"):
            self._attach_closed_cgf(st["cgf"])
        self.remove = PLRV(self, relations.REMOVE)
        self.add = PLRV(self, relations.ADD)

    def _attach_closed_cgf(self, names):
        """Offer the closed-form CGF to the core, to be used only after it agrees with quadrature at a few points
        (checked on the first CGF query; a failure is kept as ``cgf_check_failed``)."""
        mod = self.family.module

        def check():
            for tau in (0.7, -1.6, 2.5):
                closed = float(N.kernel_refs(mod)(names[0])(tau, self.theta))
                quad = self.core.cgf_quadrature(tau, 0)
                if not (math.isfinite(closed) and math.isfinite(quad)) or abs(closed - quad) > 1e-7 * (1 + abs(quad)):
                    self.cgf_check_failed = (tau, closed, quad)
                    return False
            return True
        self.core.offer_closed_cgf(names, check)

    @property
    def name(self) -> str:
        """The family's name with the parameter values, e.g. ``gaussian(sigma=1, sensitivity=1)``."""
        args = ", ".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"{self.family.name}({args})"

    @property
    def relation(self) -> str:
        """The neighbouring relation the mechanism's pair is for: "add_remove" or "replace_one"."""
        return self.family.relation

    def __repr__(self):
        rel = "" if self.relation == relations.ADD_REMOVE else f" ({self.relation})"
        return f"<Mechanism {self.name}{rel}>"

    def plrv(self, direction: str) -> PLRV:
        """The PLRV of ``direction``.

        Parameters
        ----------
        direction : 'remove' (L = log p/q under P) or 'add' (log q/p under Q).

        Returns
        -------
        ``self.remove`` or ``self.add``.

        Raises
        ------
        ParameterError : ``direction`` is not 'remove' or 'add'.
        """
        return self.remove if relations.check_direction(direction) == relations.REMOVE else self.add

    # -- one-shot privacy curve ------------------------------------------------------------------
    def log_delta(self, epsilon: float | ArrayLike, direction: str = "both") -> np.ndarray:
        """log delta(epsilon), accurate where delta underflows; vectorised over epsilon.

        Parameters
        ----------
        epsilon : in (-inf, inf], or a 1-D array of such values (negative values as dp_accounting allows).
        direction : 'both' (the maximum over the two directions), 'remove' or 'add'.

        Returns
        -------
        A 1-D array (also for a scalar epsilon); -inf where delta = 0.

        Raises
        ------
        ParameterError : epsilon not real, nan or -inf, or an unknown ``direction``.
        """
        eps = check_eps_array(epsilon)
        out = np.full(eps.shape, -np.inf)
        for d in relations.directions(direction):
            out = np.maximum(out, self.plrv(d).log_hockey_stick(eps))
        return out

    def delta(self, epsilon: float | ArrayLike, direction: str = "both") -> float | np.ndarray:
        """delta(epsilon) = max over directions of E[(1 - e^(epsilon - L))_+]; vectorised over epsilon.

        Parameters
        ----------
        epsilon : in (-inf, inf], or a 1-D array of such values (negative values as dp_accounting allows).
        direction : 'both' (the maximum over the two directions), 'remove' or 'add'.

        Returns
        -------
        A float for a scalar epsilon, else a 1-D array.

        Raises
        ------
        ParameterError : epsilon not real, nan or -inf, or ``direction`` not one of 'both', 'remove', 'add'.
        """
        scalar = np.ndim(epsilon) == 0
        out = np.exp(self.log_delta(epsilon, direction))
        return float(out[0]) if scalar else out

    def epsilon(self, delta: float | ArrayLike, direction: str = "both") -> float | np.ndarray:
        """Smallest epsilon >= 0 with delta(epsilon) <= delta (inf when no finite epsilon exists).

        Parameters
        ----------
        delta : in [0, 1), or a 1-D array of such values; at 0 the answer is the largest privacy loss (inf where
            the loss is unbounded or infinite with positive probability).
        direction : 'both' (the maximum over the two directions), 'remove' or 'add'.

        Returns
        -------
        A float for a scalar delta, else a 1-D array.

        Raises
        ------
        ParameterError : delta not in [0, 1), ``direction`` not one of 'both', 'remove', 'add', or (a loss with
            unbounded support) no epsilon below 1e6 reaches delta.
        """
        scalar = np.ndim(delta) == 0
        ds = np.atleast_1d(real_array("delta", delta))
        for d in ds:
            check_finite_real("delta", d, low=0.0, high=1.0, low_open=False)
        out = np.array([max(self.plrv(d).epsilon(float(x)) for d in relations.directions(direction)) for x in ds])
        return float(out[0]) if scalar else out

    def rdp(self, alpha: float, direction: str = "both") -> float:
        """Renyi divergence of order alpha > 1 (max over directions): K(alpha - 1) / (alpha - 1), and at alpha = inf
        the max-divergence, the largest privacy loss.

        Parameters
        ----------
        alpha : the order, a real number above 1, or inf.
        direction : 'both' (the maximum over the two directions), 'remove' or 'add'.

        Returns
        -------
        The divergence; inf where the moment generating function diverges (at alpha = inf: where the loss is
        unbounded or infinite with positive probability).

        Raises
        ------
        ParameterError : alpha not a real number above 1 nor inf, or an unknown ``direction``.
        """
        if isinstance(alpha, numbers.Real) and not isinstance(alpha, bool) and alpha == math.inf:
            return max(self.plrv(d).largest_loss() for d in relations.directions(direction))
        a = check_finite_real("alpha", alpha, low=1.0)
        return max(self.plrv(d).cgf(a - 1.0) / (a - 1.0) for d in relations.directions(direction))

