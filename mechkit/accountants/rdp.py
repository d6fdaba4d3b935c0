"""Renyi-DP composition from the derived CGFs (an upper bound on epsilon; no grid, no hand-written RDP).

For each direction, the composition's Renyi divergence of order alpha is the sum over mechanisms of
count * K(alpha - 1) / (alpha - 1); the conversion to (epsilon, delta) is the improved one
(Canonne, Kamath, Steinke 2020; Balle et al. 2020; notes.md 4.5 / 5.3):

    epsilon(delta) = min over alpha > 1 of  RDP(alpha) + log((alpha - 1)/alpha) - (log delta + log alpha)/(alpha - 1)

The result is an upper bound on the true epsilon (it is what the moments accountant reports), returned as an
``Estimate`` like the other accountants' answers: ``lower`` 0, ``upper`` the bound itself, ``certified`` (the bound is
a theorem's), and the order that gives it in ``details["alpha"]``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ParameterError, check_finite_real
from ..estimate import Estimate
from ..relations import directions

if TYPE_CHECKING:
    from ..laws.family import Mechanism

DEFAULT_ALPHAS = np.concatenate((1 + np.logspace(-3, 0, 12)[:-1], np.linspace(2, 20, 37), np.geomspace(21, 4096, 40)))
#: enough to size an FFT domain: any alpha gives a valid upper bound, the optimum is not needed
COARSE_ALPHAS = np.array([1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0, 128.0, 256.0])


def _composed_rdp(items, alpha, direction, finite=False):
    total = 0.0
    for mech, count in items:
        plrv = mech.plrv(direction)
        k = plrv.cgf_finite(alpha - 1.0) if finite else plrv.cgf(alpha - 1.0)
        if not math.isfinite(k):
            return math.inf
        total += count * k / (alpha - 1.0)
    return total


def _eps_of(rdp, alpha, log_delta):
    return rdp + math.log1p(-1.0 / alpha) - (log_delta + math.log(alpha)) / (alpha - 1.0)


def best_of_orders(items: Sequence[tuple[Mechanism, int]], delta: float, direction: str, alphas: ArrayLike,
                   finite: bool = False) -> float:
    """The smallest of the Renyi bounds on epsilon(delta) at the given orders for one direction, every order
    evaluated (no stop, no refinement): an upper bound, for a caller that knows which orders' CGF values are
    already memoised (``fft_grid.domain``).

    Parameters
    ----------
    items : the composition, ``[(mechanism, count), ...]``.
    delta : in (0, 1) (not checked).
    direction : "remove" or "add".
    alphas : the orders > 1.
    finite : bound only the finite part of the privacy loss (as ``epsilon``).

    Returns
    -------
    The bound (>= 0; inf where every order's divergence is infinite or no order is given).
    """
    logd = math.log(delta)
    vals = [_eps_of(_composed_rdp(items, float(a), direction, finite), float(a), logd) for a in alphas]
    return max(min(vals, default=math.inf), 0.0)


def coarse_bound(items: Sequence[tuple[Mechanism, int]], delta: float, direction: str, start: int = 0,
                 finite: bool = False) -> tuple[float, float, np.ndarray]:
    """The smallest Renyi bound on epsilon(delta) over ``COARSE_ALPHAS`` for one direction, as ``epsilon`` with
    ``alphas=COARSE_ALPHAS, refine=False`` finds it (the orders in increasing order until the bound has risen twice
    past its minimum), from the order index ``start`` on: the bound falls then rises in alpha, so the orders below
    a point where it still falls cannot hold the minimum; where it does not fall at ``start`` the start moves down
    (two orders a step) until it does, or to the first order.  A start near the minimum (``fft_grid.domain``: a
    Gaussian model of the loss) saves the low orders' CGF values (a quadrature each and mechanism).

    Parameters
    ----------
    items : the composition, ``[(mechanism, count), ...]``.
    delta : in (0, 1) (not checked).
    direction : "remove" or "add".
    start : an index into ``COARSE_ALPHAS``.
    finite : bound only the finite part of the privacy loss (as ``epsilon``).

    Returns
    -------
    (the bound, its order, the orders evaluated: a contiguous run of ``COARSE_ALPHAS``).
    """
    logd = math.log(delta)
    grid = COARSE_ALPHAS
    vals = {}

    def f(i):
        if i not in vals:
            a = float(grid[i])
            vals[i] = _eps_of(_composed_rdp(items, a, direction, finite), a, logd)
        return vals[i]
    s = min(max(int(start), 0), grid.size - 1)
    while s > 0 and not f(s - 1) > f(s):
        s = max(s - 2, 0)
    s = max(s - 1, 0)  # the run starts with the order before, where the bound was seen falling
    run = []
    for i in range(s, grid.size):
        run.append(f(i))
        if len(run) >= 4 and run[-1] > run[-2] > run[-3]:  # (epsilon's rule; the run's first order is falling)
            break
    j = int(np.argmin(run))
    return max(run[j], 0.0), float(grid[s + j]), grid[min(vals):max(vals) + 1]


def epsilon(items: Sequence[tuple[Mechanism, int]], delta: float, direction: str = "both",
            alphas: ArrayLike | None = None, refine: bool = True, finite: bool = False) -> Estimate:
    """An upper bound on epsilon(delta) of a composition, from its Renyi divergences.

    Every alpha gives a valid upper bound, so a coarse grid is still sound, only looser.

    Parameters
    ----------
    items : the composition, ``[(mechanism, count), ...]``.
    delta : in (0, 1).
    direction : 'both' (the larger of the two directions' bounds), 'remove' or 'add'.
    alphas : the orders > 1 to try (default ``DEFAULT_ALPHAS``, a dense grid).
    refine : polish the best order by a bounded scalar search; without it, the scan stops two orders past the
        minimum.
    finite : bound only the finite part of the privacy loss (E[e^{tY}; Y finite] in place of the CGF); the
        conversion then bounds the finite part's contribution to delta, as the FFT domain needs.

    Returns
    -------
    An ``Estimate`` of method "rdp": the epsilon upper bound as its value and ``upper`` (inf where every order's
    divergence is infinite), ``lower`` 0, certified, and ``details["alpha"]``, the order alpha that gives it
    (``details["finite"]`` with ``finite``).

    Raises
    ------
    ParameterError : delta not in (0, 1), no items, or an unknown ``direction``.
    """
    grid = DEFAULT_ALPHAS if alphas is None else np.asarray(alphas, dtype=float)
    d = check_finite_real("delta", delta, low=0.0, high=1.0)
    if not items:
        raise ParameterError("the composition has no mechanisms")
    logd = math.log(d)
    dirs = directions(direction)
    best = (math.inf, math.nan)
    for dr in dirs:
        f = lambda a: _eps_of(_composed_rdp(items, a, dr, finite), a, logd)
        vals = []
        for a in grid:
            vals.append(f(a))
            # without refinement (a coarse bound is enough) stop two orders past the minimum: every order gives
            # a valid bound, and in alpha the bound falls then rises
            if not refine and len(vals) >= 4 and vals[-1] > vals[-2] > vals[-3]:
                break
        i = int(np.argmin(vals))
        lo = grid[max(i - 1, 0)]
        hi = grid[min(i + 1, len(vals) - 1)]
        e, a = vals[i], grid[i]
        if refine and hi > lo and math.isfinite(e):
            from scipy.optimize import minimize_scalar  # here: SciPy's optimize costs ~0.2 s of imports

            r = minimize_scalar(lambda la: f(math.exp(la)), bounds=(math.log(lo), math.log(hi)), method="bounded",
                                options={"xatol": 1e-6})
            if r.fun < e:
                e, a = float(r.fun), math.exp(r.x)
        e = max(e, 0.0)
        if best[0] == math.inf or e > best[0]:
            best = (e, float(a))
    eps, alpha = best
    details = {"alpha": alpha, "note": "Renyi-DP upper bound"}
    if finite:
        details.update(finite=True, note="Renyi-DP upper bound of the finite part of the privacy loss")
    return Estimate(eps, 0.0, eps, "rdp", True, details)
