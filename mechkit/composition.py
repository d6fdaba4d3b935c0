"""Compositions: an immutable multiset of (mechanism, count), answered by a registered accountant.

``mk.compose(m1, (m2, 100), other_composition)`` merges equal mechanisms (same family, same parameter
values) so that each distinct mechanism is processed once.  Queries dispatch by name to an accountant
module with ``epsilon(items, delta, **options)`` and ``delta(items, epsilon, **options)``; accountants see
only the PLRV interface of the mechanisms, never their types.
"""
from __future__ import annotations

import importlib
import math
import numbers
import warnings
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from . import relations
from .accountants.registry import ACCOUNTANTS, check_options
from .errors import MechkitWarning, ParameterError, check_finite_real, check_real, real_array
from .estimate import Estimate, EstimateArray, weakness
from .laws.family import Mechanism
from .laws.plrv import composed_inf_mass


#: the largest count of one mechanism: counts enter the accountants as doubles (k K(t), k log phi(t), ...), and
#: above 2**53 not every integer is a double, so a larger count could not even be represented exactly
MAX_COUNT = 2 ** 53


def _check_count(c, what="count"):
    """``c`` as an int in [1, 2**53], or a ``ParameterError`` naming the range."""
    if isinstance(c, (bool, np.bool_)) or not (isinstance(c, numbers.Integral)
                                               or (isinstance(c, (float, np.floating)) and float(c).is_integer())):
        raise ParameterError(f"{what} must be an integer in [1, 2**53 = {MAX_COUNT}], got {c!r}")
    if not 1 <= c <= MAX_COUNT:
        raise ParameterError(f"{what} must be an integer in [1, 2**53 = {MAX_COUNT}], got {c!r}")
    return int(c)


#: relative rounding allowed per largest loss in epsilon at delta = 0 (each a double from the compiled loss)
ROUNDING_REL = 1e-14

#: a delta this much (relatively) below the composed mass at +inf is answered epsilon = inf without an accountant;
#: the margin covers the rounding of the mass (a sum of k log1p(-a) terms), so the answer is certain
INF_MASS_MARGIN = 1e-12


def _key(m):
    return (m.family.key, m.family.relation, m.family.one_sided, tuple(m.theta.tolist()))


def _warned(est):
    """``est``, after a ``MechkitWarning`` where it says little (``estimate.weakness``)."""
    why = weakness(est)
    if why:
        warnings.warn(MechkitWarning(f"{est.method}: {why}; the bounds hold, but for a narrow certified answer use "
                                     "method='fft' (or a smaller eps_error)"), stacklevel=3)
    return est


class _Reversed:
    """The other orientation of a one-sided mechanism's pair (``Family.one_sided``): its remove PLRV is the
    mechanism's add PLRV and the reverse.  A composition with one-sided mechanisms composes each one's run with
    its reversed twin, i.e. both orientations of the pair in every run (docs/relations.md): a valid bound when the
    orientation may change from run to run.  Accountants see only ``plrv``."""

    __slots__ = ("mechanism",)

    def __init__(self, mechanism):
        self.mechanism = mechanism

    def plrv(self, direction):
        d = relations.check_direction(direction)
        return self.mechanism.plrv(relations.ADD if d == relations.REMOVE else relations.REMOVE)

    @property
    def name(self):
        return f"{self.mechanism.name}, reversed"


PAIR_LOWER_NOTE = ("the lower bound is 0: a selection mechanism's pair dominates its class and is tight for one run "
                   "at most, so what an accountant certifies below is the pairs' composition, not the mechanisms' "
                   "(mk.BoundedRange() brackets compositions of exponential mechanisms)")


def _lower_unknown(est):
    """``est`` with lower bound 0 (always valid) and a note saying why (``PAIR_LOWER_NOTE``)."""
    details = {**est.details, "lower": PAIR_LOWER_NOTE}
    if isinstance(est, EstimateArray):
        return EstimateArray(np.asarray(est), np.zeros(np.shape(est)), est.upper, est.method, est.certified, details)
    return Estimate(float(est), 0.0, est.upper, est.method, est.certified, details)


ONE_SIDED_NOTE = ("a one-sided pair (sampling without replacement under replace-one) dominates only for e^eps >= 1: "
                  "the estimate and upper bound compose both of its orientations in every run (valid however the "
                  "worst datasets change from run to run; Lebeda et al. 2024), the lower bound one orientation in "
                  "every run (attained); see docs/relations.md")


class Composition:
    """An immutable multiset of mechanisms with counts (made by ``compose``).

    Parameters
    ----------
    items : ``(Mechanism, count)`` pairs; equal mechanisms (same family and parameter values) are merged.

    Raises
    ------
    ParameterError : a count, or a merged total, that is not an integer in [1, 2**53] (``MAX_COUNT``), or
        mechanisms under different neighbouring relations.
    """

    __slots__ = ("_items", "_top", "_acc")

    def __init__(self, items: Iterable[tuple[Mechanism, int]]) -> None:
        merged = {}
        order = []
        for m, c in items:
            k = _key(m)
            if k not in merged:
                merged[k] = [m, 0]
                order.append(k)
            merged[k][1] += _check_count(c)
        for k in order:
            m, c = merged[k]
            if c > MAX_COUNT:
                raise ParameterError(f"the total count of {m.name} is {c}; counts must be integers in "
                                     f"[1, 2**53 = {MAX_COUNT}]")
        found = {}
        for k in order:
            found.setdefault(merged[k][0].relation, merged[k][0])
        if len(found) > 1:
            which = "; ".join(f"{m.name} is for {r!r}" for r, m in found.items())
            raise ParameterError(f"a composition cannot mix neighbouring relations ({which}): account every "
                                 "mechanism under one relation, e.g. mk.replace_one(m) or mk.subsample(m, q, "
                                 "relation='replace_one')")
        items = tuple((merged[k][0], merged[k][1]) for k in order)
        object.__setattr__(self, "_items", items)
        # what the accountants compose: a one-sided mechanism run more than once also in its reversed orientation
        acc = list(items)
        if sum(c for _, c in items) > 1:
            acc += [(_Reversed(m), c) for m, c in items if m.family.one_sided]
        object.__setattr__(self, "_acc", tuple(acc))

    def __setattr__(self, name, value):
        raise AttributeError("a Composition is immutable; compose() a new one")

    def __reduce__(self):
        # rebuilt from its items; each mechanism pickles as its family and parameter values (laws/portable.py)
        return Composition, (self._items,)

    @property
    def items(self) -> tuple[tuple[Mechanism, int], ...]:
        """((mechanism, count), ...), one entry per distinct mechanism."""
        return self._items

    @property
    def accounted_items(self) -> tuple:
        """What the accountants compose: ``items``, and for a one-sided mechanism run more than once also its
        reversed orientation (``one_sided``)."""
        return self._acc

    @property
    def relation(self) -> str:
        """The neighbouring relation of every mechanism in the composition: "add_remove" or "replace_one"."""
        return self._items[0][0].relation

    @property
    def one_sided(self) -> bool:
        """True where the accountants compose both orientations of a one-sided pair in every run (``_Reversed``)."""
        return len(self._acc) > len(self._items)

    @property
    def total_count(self) -> int:
        """The sum of the counts: the number of mechanism runs composed."""
        return sum(c for _, c in self._items)

    def __len__(self):
        return len(self._items)

    def __repr__(self):
        inner = ", ".join(f"{m.name} x {c}" for m, c in self._items)
        return f"Composition({inner})"

    @staticmethod
    def _method(method):
        """(epsilon function, delta function, label) of a method name or of an accountant object."""
        if isinstance(method, str):
            if method not in ACCOUNTANTS:
                raise ParameterError(f"unknown method {method!r}; available: {sorted(ACCOUNTANTS)}")
            return (*ACCOUNTANTS[method], method)
        fns = getattr(method, "account_epsilon", None), getattr(method, "account_delta", None)
        if not all(callable(f) for f in fns):
            raise ParameterError(f"method must be one of {sorted(ACCOUNTANTS)} or an accountant object with "
                                 f"account_epsilon(items, delta) and account_delta(items, epsilon), got {method!r}")
        return (*fns, str(getattr(method, "method", type(method).__name__)))

    def inf_mass(self, direction: str) -> float:
        """P(L = +inf) of the composed privacy loss: an infinite loss in any one run is infinite in the sum, so it
        is 1 - prod_i (1 - a_i)^k_i with a_i each PLRV's ``inf_mass``.

        Parameters
        ----------
        direction : 'remove' or 'add'.

        Raises
        ------
        ParameterError : ``direction`` is not 'remove' or 'add'.
        """
        relations.check_direction(direction)
        return composed_inf_mass(self._acc, direction)

    def _below_inf_mass(self, d, method):
        """epsilon = inf, certain, where delta is below the composed mass at +inf of either direction (no finite
        epsilon has delta(epsilon) <= delta then, whatever the accountant); None otherwise."""
        mass, direction = max((self.inf_mass(r), r) for r in relations.DIRECTIONS)
        if not d < mass * (1.0 - INF_MASS_MARGIN):
            return None
        note = (f"delta = {d:g} is below P(L = +inf) = {mass:.6g} of the composition ({direction} direction): the "
                "privacy loss is infinite with a larger probability, so no finite epsilon reaches delta")
        return Estimate(math.inf, math.inf, math.inf, method, True,
                        {"note": note, "inf_mass": mass, "direction": direction})

    def _largest(self):
        """(value, lower, upper, direction) of the largest composed privacy loss: the sum of the counted largest
        losses (the essential supremum of a sum of independent variables), max over directions; exact up to
        rounding.  Computed once (the composition is immutable)."""
        try:
            return self._top
        except AttributeError:
            pass
        best, where = -math.inf, None
        for r in relations.DIRECTIONS:
            total = math.fsum(c * m.plrv(r).largest_loss() for m, c in self._acc)
            if total > best:
                best, where = total, r
        val = max(best, 0.0)
        # each largest loss is a rounded double, k of them summed
        slack = ROUNDING_REL * (1 + sum(c for _, c in self._acc)) * val if math.isfinite(val) else 0.0
        top = (val, max(val - slack, 0.0), val + slack, where)
        object.__setattr__(self, "_top", top)
        return top

    def _largest_loss(self, method):
        """epsilon at delta = 0 as an ``Estimate`` (``_largest``), certified for every method."""
        val, lo, up, where = self._largest()
        note = "delta = 0: epsilon is the largest privacy loss of the composition (inf where a loss is unbounded)"
        return Estimate(val, lo, up, method, True, {"note": note, "direction": where})

    def _capped(self, est):
        """``est`` with its epsilon and upper bound at most the largest composed loss (delta is 0 there, for every
        method: a certified upper bound); where the accountant's answer was above it, ``details`` says so."""
        top = self._largest()[2]
        if not (top < est.upper or top < float(est)):
            return est
        v = min(float(est), top)
        details = {**est.details, "capped_at_largest_loss": top}
        return Estimate(v, min(est.lower, v), min(est.upper, top), est.method, est.certified, details)

    def epsilon(self, delta: float | ArrayLike, method: str = "auto", **options: object) -> Estimate | EstimateArray:
        """Smallest epsilon with delta(epsilon) <= delta (max over add and remove).

        Parameters
        ----------
        delta : in [0, 1), or an array of such values.  At 0 the answer is exact for every method: the largest
            privacy loss of the composition (inf where a loss is unbounded or infinite with positive probability).
        method : "auto" (default: the SPA where its certified interval is within ``2 eps_error``, the FFT otherwise,
            at once where a test at t = 0 predicts the SPA's interval too wide, and the SPA's interval where the FFT
            cannot answer; ``details["auto"]`` says which and why), "fft", "spa",
            "edgeworth", "rdp" or "gdp" (``ACCOUNTANTS``), or an accountant object with
            ``account_epsilon(items, delta)`` and ``account_delta(items, epsilon)`` (as a ``PrivacyCurve``).
        **options : the method's own options (e.g. ``eps_error``, ``delta_error`` for "fft"; ``order``,
            ``variant`` for "spa").

        Returns
        -------
        An ``Estimate`` (an ``EstimateArray`` for an array of deltas) with ``lower``/``upper`` where the method
        certifies them.  Where delta is below the probability of an infinite privacy loss of the composition, the
        answer is epsilon = inf (certified, for every method) without calling the accountant.

        Raises
        ------
        ParameterError : delta not in [0, 1), an unknown method, or options the method does not take.
        NumericalLimitError : the method cannot certify an answer at this delta (it names what can).
        """
        fn, _, method = self._method(method)
        check_options(method, "epsilon", fn, options)

        def one(d):
            if d == 0.0:
                return self._largest_loss(method)
            return self._below_inf_mass(d, method) or self._capped(self._answer(fn, d, options))

        if np.ndim(delta) == 0:
            return _warned(one(check_real("delta", delta, low=0.0, high=1.0, low_open=False)))
        ds = [check_finite_real("delta", d, low=0.0, high=1.0, low_open=False)
              for d in np.ravel(real_array("delta", delta))]
        res = [one(d) for d in ds]
        details = {k: v for r in res for k, v in r.details.items() if k in ("reliable", "one_sided")}
        return _warned(EstimateArray([float(r) for r in res], [r.lower for r in res], [r.upper for r in res],
                                     method, all(r.certified for r in res), details))

    def delta(self, epsilon: float | ArrayLike, method: str = "auto", **options: object) -> Estimate | EstimateArray:
        """delta(epsilon) = max over add and remove of the hockey-stick divergence of the composition.

        Parameters
        ----------
        epsilon : in [0, inf), or an array of such values.
        method : "auto" (default: the FFT, the SPA where the FFT cannot answer), "fft", "spa", "edgeworth", "gdp"
            ("rdp" answers epsilon only), or an accountant object (see ``epsilon``).
        **options : the method's own options.

        Returns
        -------
        An ``Estimate`` for a scalar epsilon, an ``EstimateArray`` of the same shape for an array.

        Raises
        ------
        ParameterError : epsilon outside [0, inf), an unknown method, or options the method does not take.
        NumericalLimitError : the method cannot certify an answer here.
        """
        _, fn, method = self._method(method)
        check_options(method, "delta", fn, options)
        eps = np.atleast_1d(real_array("epsilon", epsilon))
        if np.any(np.isnan(eps)) or np.any(eps < 0) or np.any(np.isinf(eps)):
            bad = [e for e in eps.tolist() if not (0 <= e < math.inf)]
            raise ParameterError(f"epsilon must lie in [0, inf), got {bad[0]!r}")
        res = _warned(self._answer(fn, eps, options))
        return res[0] if np.ndim(epsilon) == 0 else res

    def _answer(self, fn, arg, options):
        """The accountant's answer for the composition.  With one-sided pairs (``one_sided``): the estimate and
        upper bound of both orientations composed in every run, and the lower bound of one orientation in every
        run, a composition that a mechanism attains (each bound certified as the accountant certifies it)."""
        est = fn(self._acc, arg, **options)
        if self._lower_of_pairs_only() and not getattr(getattr(fn, "__self__", None), "bounds_mechanisms", False):
            est = _lower_unknown(est)
        if not self.one_sided:
            return est
        low = fn(self._items, arg, **options)
        details = {**est.details, "one_sided": ONE_SIDED_NOTE}
        if isinstance(est, EstimateArray):
            lower = np.minimum(np.asarray(low.lower), np.asarray(est.lower))
            return EstimateArray(np.asarray(est), lower, est.upper, est.method, est.certified and low.certified,
                                 details)
        return Estimate(float(est), min(low.lower, est.lower), est.upper, est.method,
                        est.certified and low.certified, details)

    def _lower_of_pairs_only(self):
        """True where an accountant's lower bound bounds the pairs' composition, not the mechanisms': a pair that
        dominates a class of mechanisms (``Mechanism.pair_tightness``: "one run", tight alone; "never") composed."""
        tight = [getattr(m, "pair_tightness", None) for m, _ in self._acc]
        alone = len(self._acc) == 1 and self._acc[0][1] == 1
        return "never" in tight or ("one run" in tight and not alone)

    def facts(self) -> dict:
        """What a saved curve keeps of the composition (``SavedComposition`` takes it back): its description, the
        largest composed loss with its bounds (floats as hex text), the masses at +inf, the numbers of items.

        Returns
        -------
        A JSON-serialisable dict.
        """
        hx = float.hex
        top = self._largest()
        return {"description": repr(self), "top": [hx(float(v)) for v in top[:3]] + [top[3]],
                "inf_mass": {d: hx(self.inf_mass(d)) for d in relations.DIRECTIONS},
                "n_items": len(self._items), "n_acc": len(self._acc), "pairs_only": self._lower_of_pairs_only()}

    def curve(self, eps_error: float = 0.01, delta_error: float = 1e-10,
              memory_limit: float = 1 << 30, variant: str = "ctd") -> object:
        """The composition's privacy curve, composed once by the FFT composer (``PrivacyCurve``): further epsilon
        and delta queries on it are lookups, certified for these budgets, the same floats as
        ``epsilon``/``delta`` with ``method="fft"`` and this variant.

        Parameters
        ----------
        eps_error : half-width in epsilon of the certified intervals, > 0 (default 0.01).
        delta_error : the delta budget, in (0, 1) (default 1e-10); epsilon can be certified for deltas above about
            twice this (plus the composition's mass at +inf).
        memory_limit : bytes the grid may take (default 1 GiB).
        variant : "ctd" (connect the dots, the FFT's default: a grid ~35x coarser for the same width, finer ones
            composed when a query needs them) or "prv" (Theorem 5.5's bounds on one grid).

        Returns
        -------
        A ``PrivacyCurve``.

        Raises
        ------
        ParameterError : a budget outside its range, or a grid above ``memory_limit`` (the message says what fits).
        NumericalLimitError : no finite domain holds the composition at ``delta_error``.
        """
        return importlib.import_module(f"{__package__}.curves").PrivacyCurve(self, eps_error, delta_error,
                                                                            memory_limit, variant)

    def tradeoff(self, alpha: float | ArrayLike, eps_error: float = 0.01,
                 delta_error: float = 1e-10) -> EstimateArray:
        """The trade-off function beta(alpha) this composition's privacy curve implies, certified (``mechkit.fdp``).

        Parameters
        ----------
        alpha : type-I error(s) in [0, 1].
        eps_error, delta_error : the FFT budgets of the curve (``curve``).

        Returns
        -------
        An ``EstimateArray`` of beta, one per alpha.
        """
        return importlib.import_module(f"{__package__}.fdp").tradeoff(self.curve(eps_error, delta_error), alpha)

    def tpr_at_fpr(self, fpr: float | ArrayLike, eps_error: float = 0.01,
                   delta_error: float = 1e-10) -> EstimateArray:
        """The best membership attacker's true-positive rate at false-positive rate ``fpr``: 1 - beta(fpr), certified.

        Parameters
        ----------
        fpr : false-positive rate(s) in [0, 1].
        eps_error, delta_error : the FFT budgets of the curve.

        Returns
        -------
        An ``EstimateArray``, one per fpr.
        """
        return importlib.import_module(f"{__package__}.fdp").tpr_at_fpr(self.curve(eps_error, delta_error), fpr)

    def advantage(self, **options: object) -> Estimate:
        """The best attacker's advantage (true minus false positive rate; the total variation): delta at epsilon 0,
        max over directions, certified by the FFT.

        Parameters
        ----------
        **options : the FFT's options (``eps_error``, ``delta_error``, ``memory_limit``).

        Returns
        -------
        An ``Estimate``.
        """
        return self.delta(0.0, method="fft", **options)


class SavedComposition(Composition):
    """A stand-in for a composition that a saved curve was built from (``mechkit.curves.load_curve``): its largest
    privacy loss, masses at +inf and description as ``facts()`` gave them, and as many placeholder items as it had;
    it answers only through that curve (``epsilon``/``delta`` with ``method=curve``).

    Parameters
    ----------
    facts : the dict ``Composition.facts()`` returns.
    """

    __slots__ = ("_description", "_inf", "_pairs_only")

    def __init__(self, facts: dict) -> None:
        fh = float.fromhex
        for name, value in (("_items", (None,) * int(facts["n_items"])), ("_acc", (None,) * int(facts["n_acc"])),
                            ("_top", tuple(fh(v) for v in facts["top"][:3]) + (facts["top"][3],)),
                            ("_description", str(facts["description"])),
                            ("_inf", {d: fh(facts["inf_mass"][d]) for d in relations.DIRECTIONS}),
                            ("_pairs_only", bool(facts.get("pairs_only", False)))):
            object.__setattr__(self, name, value)

    def inf_mass(self, direction: str) -> float:
        """The saved P(L = +inf) of ``direction``.

        Parameters
        ----------
        direction : 'remove' or 'add'.
        """
        return self._inf[relations.check_direction(direction)]

    def _lower_of_pairs_only(self):
        return self._pairs_only

    def __repr__(self):
        return self._description

    def __reduce__(self):
        return SavedComposition, (self.facts(),)


def _as_items(obj):
    if isinstance(obj, Composition):
        return list(obj.items)
    if isinstance(obj, Mechanism):
        return [(obj, 1)]
    if isinstance(obj, tuple) and len(obj) == 2:
        m, c = obj
        if not isinstance(m, (Mechanism, Composition)):
            raise ParameterError(f"expected (mechanism, count), got ({type(m).__name__}, ...)")
        c = _check_count(c)
        return [(mm, cc * c) for mm, cc in _as_items(m)]
    raise ParameterError(f"cannot compose a {type(obj).__name__}: pass mechanisms, (mechanism, count) pairs "
                         "or compositions")


def compose(*items: Mechanism | Composition | tuple) -> Composition:
    """Compose mechanisms, (mechanism, count) pairs and compositions, in any mix.

    Parameters
    ----------
    *items : ``Mechanism``, ``(Mechanism or Composition, count)`` or ``Composition``; equal mechanisms (same family
        and parameter values) are merged.

    Returns
    -------
    An immutable ``Composition``.

    Raises
    ------
    ParameterError : no items, an item of another type, or a count that is not an integer in [1, 2**53]
        (``MAX_COUNT``, also after merging: the accountants use counts as doubles, exact only up to 2**53).
    """
    if not items:
        raise ParameterError("compose() needs at least one mechanism")
    out = []
    for it in items:
        out.extend(_as_items(it))
    return Composition(out)
