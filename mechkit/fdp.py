"""f-DP views of a privacy curve: the trade-off function, the best attacker's advantage, and the true-positive rate
at a false-positive rate, each with certified bounds.

The trade-off function here is the one the privacy curve implies: a mechanism that is (eps, delta(eps))-DP for every
eps >= 0 (delta the max over both directions) is f-DP with

    f(alpha) = sup_{eps >= 0} max(0, 1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha))

(Dong, Roth, Su 2022, Proposition 2.12; exact for the Gaussian: Phi(Phi^-1(1 - alpha) - mu)).  On a grid
0 = e_0 < ... < e_m of epsilons, with the curve's certified delta bounds:

* lower bound: the sup over the grid points with delta's *upper* bound (each line is implied by a true
  (eps, delta) guarantee, so their maximum is below f);
* upper bound: on each grid interval [e_i, e_i+1], every line lies below 1 - delta_lo(e_i+1) - e^e_i alpha (and
  its mirror e^-e_i (1 - delta_lo(e_i+1) - alpha)), delta being decreasing; beyond e_m, below 1 - e^e_m alpha and
  e^-e_m (1 - alpha);
* estimate: the sup over the grid points with delta's estimate.

A type-I error alpha for "the individual is in" means the attacker's false-positive rate; 1 - f(alpha) is the best
true-positive rate at that false-positive rate.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .errors import NumericalLimitError, ParameterError, quiet, real_array
from .estimate import EstimateArray

#: the epsilon grid's points: the upper bound's slack is about a factor e^(spacing) on alpha
GRID_POINTS = 4001
#: the largest epsilon of the grid
TOP = 600.0


def _alphas(name, alpha):
    a = np.atleast_1d(real_array(name, alpha)).astype(float)
    if np.any(np.isnan(a)) or np.any(a < 0) or np.any(a > 1):
        bad = [x for x in a.tolist() if not 0 <= x <= 1]
        raise ParameterError(f"{name} must lie in [0, 1], got {bad[0]!r}")
    return a


def _top(curve):
    """The largest epsilon the grid needs: where the certified delta reaches the curve's floor (or the largest
    privacy loss, past which delta is 0), at most ``TOP`` (e^eps stays a double)."""
    try:
        top = float(curve.epsilon(0.0).upper)
    except NumericalLimitError:
        top = math.inf
    if math.isfinite(top):
        return min(max(top, 1e-6), TOP)
    floor = 4.0 * curve.delta_error
    try:
        return min(float(curve.epsilon(floor).upper), TOP)
    except NumericalLimitError:
        return TOP


def tradeoff(curve: object, alpha: float | ArrayLike) -> EstimateArray:
    """beta = f(alpha), the smallest type-II error at type-I error alpha (module docstring), with certified bounds.

    Parameters
    ----------
    curve : a ``PrivacyCurve`` (``Composition.curve()``).
    alpha : type-I error(s) in [0, 1].

    Returns
    -------
    An ``EstimateArray`` of beta, one per alpha, certified (``lower <= f(alpha) <= upper``).

    Raises
    ------
    ParameterError : alpha outside [0, 1].
    """
    a = _alphas("alpha", alpha)[:, None]
    with quiet():  # tiny deltas far out have wide relative intervals: the grid's own business
        eps = np.linspace(0.0, _top(curve), GRID_POINTS)
        d = curve.delta(eps)
    e_lo, e_hi = np.exp(eps[:-1])[None, :], np.exp(eps)[None, :]

    def best(delta, e):
        """max over the lines 1 - delta - e alpha and their mirrors (1 - delta - alpha) / e, clipped to [0, 1 - a]."""
        lines = np.maximum(1.0 - delta[None, :] - e * a, (1.0 - delta[None, :] - a) / e)
        return np.clip(np.max(lines, axis=1), 0.0, 1.0 - a[:, 0])

    est = best(np.asarray(d, float), e_hi)
    low = best(np.asarray(d.upper, float), e_hi)
    up = best(np.asarray(d.lower, float)[1:], e_lo)
    tail = np.maximum(1.0 - e_hi[0, -1] * a[:, 0], (1.0 - a[:, 0]) / e_hi[0, -1])
    up = np.clip(np.maximum(up, tail), 0.0, 1.0 - a[:, 0])
    return EstimateArray(est, np.minimum(low, est), np.maximum(up, est), "fft", True,
                         {"epsilon_grid": (0.0, float(eps[-1]), GRID_POINTS), "curve": repr(curve)})


def tpr_at_fpr(curve: object, fpr: float | ArrayLike) -> EstimateArray:
    """The best membership attacker's true-positive rate at a false-positive rate: 1 - f(fpr), certified.

    Parameters
    ----------
    curve : a ``PrivacyCurve``.
    fpr : false-positive rate(s) in [0, 1].

    Returns
    -------
    An ``EstimateArray`` (``lower``/``upper`` from ``tradeoff``'s upper/lower bounds).

    Raises
    ------
    ParameterError : fpr outside [0, 1].
    """
    b = tradeoff(curve, _alphas("fpr", fpr))
    return EstimateArray(1.0 - np.asarray(b), 1.0 - b.upper, 1.0 - b.lower, "fft", True, b.details)
