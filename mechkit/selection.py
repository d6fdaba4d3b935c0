"""Compositions of exponential mechanisms, accounted more closely than by composing their pair: ``BoundedRange``.

``mk.exponential_mechanism(epsilon)`` is a pair that dominates every epsilon-bounded-range pair (``laws.selection``):
one run is exact, and any composition through the default accountants is a valid upper bound, for runs chosen
adaptively and beside any other mechanism (Zhu, Dong, Wang 2022, Theorem 10).  That pair is the least one that
dominates the class, but the worst run depends on the epsilon asked for, so k runs of it overstate k runs of the
mechanism.  ``BoundedRange`` answers a composition's queries (``method=mk.BoundedRange()``) with a bracket of the
mechanism's own worst case:

* ``adaptive=True`` (default; runs and utilities may depend on earlier outputs): upper bound the smaller of the pair's
  certified composition (the ``auto`` accountant's upper bound) and the Renyi-DP bound with, for each exponential
  mechanism, the largest Renyi divergence of any epsilon-BR pair (``laws.selection.bounded_range_rdp``; Renyi
  divergences add under adaptive composition, Mironov 2017, and convert by Canonne, Kamath, Steinke 2020); other
  mechanisms enter both with their own pairs.  Lower bound: the non-adaptive optimum of the exponential mechanisms of
  one epsilon (Dong, Durfee, Rogers 2020, Section 5; ``laws.selection.nonadaptive_delta``), which runs fixed in advance
  attain, so the true worst case is at least that (the largest over the groups of equal epsilon; other mechanisms can
  only add to it).  The adaptive optimum lies in between: DDR (Section 6) show that it exceeds the non-adaptive one.
* ``adaptive=False`` (every run and utility function fixed before any output is seen): the exact non-adaptive optimum
  of ``count`` exponential mechanisms of one epsilon (DDR Section 5: one common t, at one of the k + 1 points
  t_l), lower and upper bounds within rounding; up to ``MAX_EXACT_COUNT`` runs (above it, the adaptive upper bound).
  Heterogeneous non-adaptive compositions are #P-hard to optimise (DDR) and are refused.

``generalized_randomized_response(epsilon, t)`` is the two-output pair RR(epsilon, t) as a mechanism (attained by the
exponential mechanism on two candidates), for compositions that need an attained lower bound beside other mechanisms.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize_scalar

from . import relations
from .accountants.fft import DEFAULT_EPS_ERROR, DEFAULT_MEMORY_LIMIT
from .accountants.rdp import DEFAULT_ALPHAS
from .accountants.registry import ACCOUNTANTS
from .errors import ParameterError, check_finite_real
from .estimate import Estimate, EstimateArray
from .laws.selection import (MAX_EXACT_COUNT, bounded_range_epsilon, bounded_range_rdp, grr_log_masses,
                             nonadaptive_delta, nonadaptive_epsilon)
from .laws.tabulated import TabulatedMechanism, tabulated

#: relative allowance for rounding on the exact binomial sums (log-binomials by lgamma: about 1e-13 relative)
ROUNDING = 1e-10

ADAPTIVE_NOTE = ("adaptive composition of epsilon-bounded-range mechanisms: upper = min(the dominating pair's "
                 "certified composition, Renyi-DP with the class's largest divergences); lower = the non-adaptive "
                 "optimum (Dong, Durfee, Rogers 2020, Section 5), attained by runs fixed in advance; the adaptive "
                 "optimum lies in between")
ABOVE_EXACT_NOTE = (f"non-adaptive composition above {MAX_EXACT_COUNT} runs: the exact optimum is not computed; the "
                    "adaptive upper bound (valid here too) and the best non-adaptive composition found as lower bound")
NONADAPTIVE_NOTE = ("non-adaptive composition of exponential mechanisms (runs and utility functions fixed in advance): "
                    "the exact optimum (Dong, Durfee, Rogers 2020, Section 5); not valid for runs chosen adaptively")


def generalized_randomized_response(epsilon: float, t: float, relation: str = relations.ADD_REMOVE
                                    ) -> TabulatedMechanism:
    """RR(epsilon, t): two outputs with privacy losses t and t - epsilon (``laws.selection``), the pair of the
    exponential mechanism on two candidates whose utilities move in opposite directions.  Every epsilon-BR pair with
    losses in [t - epsilon, t] is dominated by it.

    Parameters
    ----------
    epsilon : the bounded-range parameter, > 0.
    t : in (0, epsilon).
    relation : the neighbouring relation to state (default "add_remove").

    Returns
    -------
    A ``TabulatedMechanism`` with P = (p_t, 1 - p_t), Q = (p_t e^-t, (1 - p_t) e^(epsilon - t)).

    Raises
    ------
    ParameterError : epsilon not positive or t outside (0, epsilon).
    """
    lhi, llo = grr_log_masses(epsilon, t)
    if not (math.isfinite(lhi) and math.isfinite(llo)):
        raise ParameterError(f"t must lie strictly between 0 and epsilon = {epsilon!r}, got {t!r}")
    p = np.exp([lhi, llo])
    q = np.exp([lhi - t, llo + epsilon - t])
    return tabulated(p / p.sum(), q / q.sum(), name=f"grr(epsilon={epsilon:g}, t={t:g})", relation=relation)


def _split(items):
    """({epsilon: count} of the exponential mechanisms, [(other mechanism, count), ...])."""
    groups, others = {}, []
    for m, c in items:
        e = bounded_range_epsilon(m)
        if e is None:
            others.append((m, c))
        else:
            groups[e] = groups.get(e, 0) + int(c)
    return groups, others


def _rdp_total(groups, others, alpha, direction):
    """The composition's Renyi divergence of order alpha in ``direction``: the class's largest per exponential
    mechanism, the pair's own for the others."""
    total = math.fsum(c * bounded_range_rdp(e, alpha) for e, c in groups.items())
    for m, c in others:
        k = m.plrv(direction).cgf(alpha - 1.0)
        if not math.isfinite(k):
            return math.inf
        total += c * k / (alpha - 1.0)
    return total


def _rdp_min(value_at):
    """The minimum over orders alpha of ``value_at(alpha)`` (every order gives a valid bound): the grid of the RDP
    accountant, then a bounded search around its best point; returns (value, alpha)."""
    vals = [value_at(a) for a in DEFAULT_ALPHAS]
    i = int(np.argmin(vals))
    best = (vals[i], float(DEFAULT_ALPHAS[i]))
    lo, hi = DEFAULT_ALPHAS[max(i - 1, 0)], DEFAULT_ALPHAS[min(i + 1, len(vals) - 1)]
    if hi > lo and math.isfinite(best[0]):
        r = minimize_scalar(lambda la: value_at(math.exp(la)), bounds=(math.log(lo), math.log(hi)),
                            method="bounded", options={"xatol": 1e-6})
        if r.fun < best[0]:
            best = (float(r.fun), math.exp(r.x))
    return best


def rdp_epsilon(groups: dict, others: Sequence, delta: float) -> tuple[float, float]:
    """The Renyi-DP upper bound on epsilon(delta) of exponential mechanisms (``groups``, {epsilon: count}) composed
    with ``others`` ((mechanism, count) pairs), adaptively: Canonne, Kamath, Steinke 2020's conversion,
    RDP(alpha) + log((alpha - 1)/alpha) - (log delta + log alpha)/(alpha - 1), minimised over alpha, max over
    directions.

    Parameters
    ----------
    groups : {epsilon: count} of the exponential mechanisms.
    others : the other mechanisms with their counts.
    delta : in (0, 1).

    Returns
    -------
    (epsilon bound, the order alpha that gives it).
    """
    logd = math.log(delta)
    best = (0.0, math.nan)
    for d in relations.DIRECTIONS:
        f = lambda a, d=d: (_rdp_total(groups, others, a, d) + math.log1p(-1.0 / a)  # noqa: E731
                            - (logd + math.log(a)) / (a - 1.0))
        e, a = _rdp_min(f)
        best = max(best, (max(e, 0.0), a))
    return best


def rdp_delta(groups: dict, others: Sequence, epsilon: float) -> float:
    """The Renyi-DP upper bound on delta(epsilon), the same conversion solved for delta:
    min over alpha of exp((alpha - 1)(RDP(alpha) - epsilon + log(1 - 1/alpha)) - log alpha), max over directions.

    Parameters
    ----------
    groups : {epsilon: count} of the exponential mechanisms.
    others : the other mechanisms with their counts.
    epsilon : >= 0.

    Returns
    -------
    The delta bound (at most 1).
    """
    best = 0.0
    for d in relations.DIRECTIONS:
        f = lambda a, d=d: ((a - 1.0) * (_rdp_total(groups, others, a, d) - epsilon + math.log1p(-1.0 / a))  # noqa
                            - math.log(a))
        best = max(best, math.exp(min(_rdp_min(f)[0], 0.0)))
    return best


class BoundedRange:
    """An accountant for compositions with exponential mechanisms (module docstring): ``method=`` of
    ``Composition.epsilon`` and ``Composition.delta``.

    Parameters
    ----------
    adaptive : True (default): runs may be chosen adaptively; the answer brackets the worst case between the
        non-adaptive optimum (attained) and a valid adaptive upper bound, its value the upper bound.  False: every run
        and utility function is fixed in advance; the exact non-adaptive optimum (one epsilon only).

    Attributes
    ----------
    method : "bounded_range" (the ``Estimate``'s method).
    """

    method = "bounded_range"
    #: its lower bounds are the mechanisms' own (Composition keeps them; ``Mechanism.pair_tightness``)
    bounds_mechanisms = True

    def __init__(self, adaptive: bool = True) -> None:
        self.adaptive = bool(adaptive)

    def __repr__(self):
        return f"BoundedRange(adaptive={self.adaptive})"

    def _groups(self, items):
        groups, others = _split(items)
        if not groups:
            raise ParameterError("BoundedRange accounts compositions that hold exponential mechanisms "
                                 "(mk.exponential_mechanism); for others use the default accountants")
        if not self.adaptive and (others or len(groups) > 1):
            raise ParameterError("BoundedRange(adaptive=False) takes exponential mechanisms of one epsilon only (the "
                                 "non-adaptive optimum of heterogeneous runs is #P-hard, Dong, Durfee, Rogers 2020); "
                                 "use BoundedRange() for a valid bracket")
        return groups, others

    def account_epsilon(self, items: Sequence, delta: float, eps_error: float = DEFAULT_EPS_ERROR,
                        delta_error: float | None = None, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> Estimate:
        """epsilon(delta) of the composition ``items``: an ``Estimate`` (value = its upper bound; class docstring).

        Parameters
        ----------
        items : ((mechanism, count), ...), as a ``Composition`` passes them.
        delta : in (0, 1).
        eps_error, delta_error, memory_limit : the budgets of the pair's composition (the ``auto`` accountant's).

        Returns
        -------
        A certified ``Estimate`` of method "bounded_range"; ``details`` holds each bound and what it rests on.

        Raises
        ------
        ParameterError : no exponential mechanism in ``items``, or ``adaptive=False`` with other mechanisms or
            several epsilons, or a budget or delta out of range.
        """
        d = check_finite_real("delta", delta, low=0.0, high=1.0)
        groups, others = self._groups(items)
        lows = {e: nonadaptive_epsilon(e, c, d, certify=not self.adaptive) for e, c in groups.items()}
        e_low, (low, exact_up, t) = max(lows.items(), key=lambda kv: kv[1][0])
        lower = max(low * (1.0 - ROUNDING) - ROUNDING, 0.0)
        if not self.adaptive and exact_up is not None:
            upper = exact_up * (1.0 + ROUNDING) + ROUNDING
            return Estimate(upper, lower, upper, self.method, True,
                            {"note": NONADAPTIVE_NOTE, "t": t, "adaptive": False})
        pair = ACCOUNTANTS["auto"][0](items, d, eps_error=eps_error, delta_error=delta_error,
                                      memory_limit=memory_limit)
        rdp, alpha = rdp_epsilon(groups, others, d)
        upper = min(pair.upper, rdp)
        details = {"note": ADAPTIVE_NOTE if self.adaptive else ABOVE_EXACT_NOTE, "adaptive": self.adaptive,
                   "upper_pair": pair.upper, "upper_rdp": rdp, "alpha": alpha,
                   "lower_from": f"exponential_mechanism(epsilon={e_low:g}) x {groups[e_low]}, t = {t:.6g}"}
        return Estimate(upper, min(lower, upper), upper, self.method, pair.certified, details)

    def account_delta(self, items: Sequence, epsilon: ArrayLike, eps_error: float = DEFAULT_EPS_ERROR,
                      delta_error: float = 1e-10, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> EstimateArray:
        """delta(epsilon) of the composition ``items`` at each epsilon: an ``EstimateArray`` (class docstring).

        Parameters
        ----------
        items : ((mechanism, count), ...), as a ``Composition`` passes them.
        epsilon : a 1-D array of epsilons >= 0.
        eps_error, delta_error, memory_limit : the budgets of the pair's composition (the ``auto`` accountant's).

        Returns
        -------
        A certified ``EstimateArray`` of method "bounded_range".

        Raises
        ------
        ParameterError : as ``account_epsilon``.
        """
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        groups, others = self._groups(items)
        lows = [max(nonadaptive_delta(e, c, float(x))[0] for e, c in groups.items()) for x in eps]
        exact = all(c <= MAX_EXACT_COUNT for c in groups.values())
        lower = np.array(lows) * (1.0 - ROUNDING)
        if not self.adaptive and exact:
            upper = np.minimum(np.array(lows) * (1.0 + ROUNDING) + 1e-300, 1.0)
            return EstimateArray(upper, lower, upper, self.method, True, {"note": NONADAPTIVE_NOTE, "adaptive": False})
        pair = ACCOUNTANTS["auto"][1](items, eps, eps_error=eps_error, delta_error=delta_error,
                                      memory_limit=memory_limit)
        rdp = np.array([rdp_delta(groups, others, float(x)) for x in eps])
        upper = np.minimum(np.asarray(pair.upper, dtype=float), rdp)
        details = {"note": ADAPTIVE_NOTE if self.adaptive else ABOVE_EXACT_NOTE, "adaptive": self.adaptive,
                   "upper_pair": np.asarray(pair.upper, dtype=float), "upper_rdp": rdp}
        return EstimateArray(upper, np.minimum(lower, upper), upper, self.method, pair.certified, details)
