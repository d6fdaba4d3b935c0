"""Per-example mu-GDP arithmetic: mu from gradient norms, composition of mu, and the conversions between mu
and (epsilon, delta), exact (GDP) or through Renyi DP, vectorised over examples.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from concurrent.futures import Executor

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtri

from ..accountants import gdp as _gdp
from ..accountants import rdp as _rdp
from ..errors import ParameterError, check_finite_real
from ..progress import check_executor, run_in_order, setting, working
from .state import check_array, check_delta


def mu_from_norms(norms: float | ArrayLike, clip: float, sigma: float) -> float | np.ndarray:
    """Per-example GDP parameters of one DP-GD step: ``min(norm, clip) / sigma`` (vectorised).

    Removing example i changes the sum by its clipped gradient, so the step is ``||g_i||/sigma``-GDP for it
    (notes.md 4.4, C.2).

    Parameters
    ----------
    norms : the per-example gradient norms before clipping (finite, >= 0), or one norm.
    clip : the clipping bound C > 0.
    sigma : the standard deviation (> 0) of the Gaussian noise added to the *sum* of clipped gradients (with a
        noise multiplier z, ``sigma = z * clip``).

    Returns
    -------
    A float for a scalar ``norms``, else an array of its shape.

    Raises
    ------
    ParameterError : a value out of range or not finite.
    """
    c = check_finite_real("clip", clip, low=0.0)
    s = check_finite_real("sigma", sigma, low=0.0)
    arr = check_array("norms", norms, allow_scalar=True, high=None)
    out = np.minimum(arr, c) / s
    return float(out) if np.ndim(norms) == 0 else out


def composed_mu(mus: ArrayLike, axis: int | tuple[int, ...] | None = None) -> float | np.ndarray:
    """sqrt(sum mu_j^2): the GDP parameter of composed Gaussian steps (Theorem 2 when bounded a priori).

    Parameters
    ----------
    mus : the steps' GDP parameters, in [0, 1e100].
    axis : the axis (or axes) summed over, as for ``np.sum`` (default: all).

    Raises
    ------
    ParameterError : a value out of range or not finite.
    """
    arr = check_array("mus", mus, allow_scalar=True)
    return np.sqrt(np.sum(arr * arr, axis=axis))


def _log_delta_vec(mu, eps):
    """log delta_mu(eps) elementwise (mu > 0, eps >= 0): mechkit.gdp's cancellation-free form."""
    return _gdp.log_delta_array(mu, eps)


def gdp_eps_unique(mu: np.ndarray, delta: float) -> np.ndarray:
    """Smallest eps >= 0 with delta_mu(eps) <= delta, for an array of mu >= 0 (safeguarded Newton)."""
    out = np.zeros(mu.shape)
    logd = math.log(delta)
    idx = np.flatnonzero(mu > 0)
    if idx.size == 0:
        return out
    idx = idx[_log_delta_vec(mu[idx], 0.0) > logd]
    if idx.size == 0:
        return out
    m = mu[idx]
    z = max(-float(ndtri(delta)), 0.0)
    # delta_mu(e) <= Phi(-e/mu + mu/2) <= delta at e = mu^2/2 + mu z: a bracket [lo, hi] with f(lo) > 0 >= f(hi)
    lo = np.zeros_like(m)
    hi = m * m / 2 + m * z
    hi = hi * (1 + 1e-12) + 1e-300
    x = hi.copy()
    todo = np.arange(m.size)
    for _ in range(200):
        mm, xx = m[todo], x[todo]
        ld = _log_delta_vec(mm, xx)
        f = ld - logd
        pos = f > 0
        lo[todo] = np.where(pos, xx, lo[todo])
        hi[todo] = np.where(pos, hi[todo], xx)
        with np.errstate(all="ignore"):
            slope = -np.exp(xx + log_ndtr(-xx / mm - mm / 2) - ld)  # d log delta / d eps
            xn = xx - f / slope
        l, h = lo[todo], hi[todo]
        ok = np.isfinite(xn) & (xn > l) & (xn < h)
        tight = h - l <= 4e-16 * h
        done = (f == 0) | tight | (ok & (np.abs(xn - xx) <= 4e-16 * xn))
        # f == 0: the root itself; a collapsed bracket: its upper end (delta(hi) <= delta); else Newton, or bisection
        x[todo] = np.where(f == 0, xx, np.where(tight, h, np.where(ok, xn, 0.5 * (l + h))))
        todo = todo[~done]
        if todo.size == 0:
            break
    out[idx] = x
    return out


#: values per block of the per-example conversions, in this process and on an executor alike (the same arrays, so
#: the same doubles)
BLOCK = 1 << 16

#: examples from which a filter's epsilon/delta may print a progress line (if it still runs after
#: ``progress.DELAY`` s): the exact GDP epsilon takes 10-30 us per distinct value here (2 cores), <= 0.5 s at 2^14
PROGRESS_EXAMPLES = 1 << 14


def map_blocks(fn: Callable[[np.ndarray], np.ndarray], values: np.ndarray, executor: Executor | None = None
               ) -> np.ndarray:
    """``fn`` on consecutive blocks of ``BLOCK`` values (1-D), concatenated in order; with an executor (and two
    blocks or more) each block is a task (``fn`` must pickle: a module-level function or a partial of one)."""
    if values.size <= BLOCK:
        return fn(values)
    calls = [((values[i:i + BLOCK],), {}) for i in range(0, values.size, BLOCK)]
    return np.concatenate(run_in_order(executor, fn, calls))


def unique_apply(values: np.ndarray, fn: Callable[[np.ndarray], np.ndarray], executor: Executor | None = None
                 ) -> np.ndarray:
    """fn (increasing) on the distinct values only (``map_blocks``); the results are made exactly non-decreasing in
    the values.

    The root finders are accurate to a few ulps, so two close values could come out in the wrong order; the running
    maximum over the sorted distinct values removes that (it only ever raises an epsilon, by rounding noise).
    """
    flat = values.ravel()
    u, inv = np.unique(flat, return_inverse=True)
    return np.maximum.accumulate(map_blocks(fn, u, executor))[inv].reshape(values.shape)


def positive_apply(values: np.ndarray, fn: Callable[[np.ndarray], np.ndarray], executor: Executor | None = None
                   ) -> np.ndarray:
    """fn on the positive values (``map_blocks``), 0 at the others."""
    out = np.zeros(values.shape)
    pos = values > 0
    out[pos] = map_blocks(fn, values[pos], executor)
    return out


def per_example(what: str, values: np.ndarray, fn: Callable[[np.ndarray], np.ndarray], executor: Executor | None,
                progress: bool, unique: bool = True) -> np.ndarray:
    """A filter's per-example query: ``executor`` and ``progress`` checked first, then ``unique_apply`` (or
    ``positive_apply``) of ``fn``, with a progress line (``working``) for many examples."""
    check_executor(executor)
    with setting(progress), working(f"{what} of {values.size} examples", when=values.size >= PROGRESS_EXAMPLES):
        return (unique_apply if unique else positive_apply)(values, fn, executor)


def gdp_delta_values(mu: np.ndarray, epsilon: float) -> np.ndarray:
    """delta_mu(epsilon) on the exact mu-GDP curve for an array of mu > 0 (``delta_from_mu``'s blocks)."""
    return np.exp(_log_delta_vec(mu, epsilon))


def epsilon_from_mu(mu: float | ArrayLike, delta: float) -> float | np.ndarray:
    """epsilon(delta) of mu-GDP with the exact curve, vectorised over ``mu``.

    Parameters
    ----------
    mu : a GDP parameter in [0, 1e100], or an array of them.
    delta : in (0, 1).

    Returns
    -------
    A float for a scalar ``mu``, else an array of its shape.

    Raises
    ------
    ParameterError : a value out of range or not finite.
    """
    d = check_delta(delta)
    arr = check_array("mu", mu, allow_scalar=True)
    out = unique_apply(arr, lambda u: gdp_eps_unique(u, d))
    return float(out) if np.ndim(mu) == 0 else out


def delta_from_mu(mu: float | ArrayLike, epsilon: float) -> float | np.ndarray:
    """delta(epsilon) of mu-GDP with the exact curve, vectorised over ``mu``.

    Parameters
    ----------
    mu : a GDP parameter in [0, 1e100], or an array of them.
    epsilon : finite, >= 0.

    Returns
    -------
    A float for a scalar ``mu``, else an array of its shape.

    Raises
    ------
    ParameterError : a value out of range or not finite.
    """
    e = check_finite_real("epsilon", epsilon, low=0.0, low_open=False)
    arr = check_array("mu", mu, allow_scalar=True)
    out = positive_apply(arr, functools.partial(gdp_delta_values, epsilon=e))
    return float(out) if np.ndim(mu) == 0 else out


def mu_from_epsilon(epsilon: float, delta: float) -> float:
    """The largest B with delta_B(epsilon) <= delta on the exact mu-GDP curve (budget conversion).

    Parameters
    ----------
    epsilon : finite, > 0.
    delta : in (0, 1).

    Raises
    ------
    ParameterError : a value out of range, or no bound on mu below 1e6.
    """
    e = check_finite_real("epsilon", epsilon, low=0.0)
    d = check_delta(delta)
    logd = math.log(d)
    f = lambda m: float(_gdp.log_delta(m, e)[0]) - logd  # increasing in m
    hi = 1.0
    while f(hi) <= 0:
        hi *= 2.0
        if hi > 1e6:
            raise ParameterError(f"epsilon = {e!r} with delta = {d!r} puts no bound on mu")
    lo = min(hi / 2, 1.0)
    while f(lo) > 0:
        lo /= 2.0
    g = lambda m: f(m) if math.isfinite(f(m)) else -1e300
    b = brentq(g, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    while f(b) > 0:  # make the budget conservative: delta_B(epsilon) <= delta
        b = float(np.nextafter(b, 0.0))
    return float(b)


def _rdp_const(alpha, logd):
    return np.log1p(-1.0 / alpha) - (logd + np.log(alpha)) / (alpha - 1.0)


def rdp_eps_sq_unique(s: np.ndarray, delta: float, chunk: int = 1 << 15) -> np.ndarray:
    """min over alpha of alpha s/2 + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1), for s = sum mu^2.

    Grid ``mechkit.rdp.DEFAULT_ALPHAS``, then a golden-section refinement in log alpha between the neighbours of the
    best grid order (what :func:`mechkit.rdp.epsilon` does per composition).  Any alpha gives an upper bound.
    """
    logd = math.log(delta)
    grid = np.asarray(_rdp.DEFAULT_ALPHAS, dtype=float)
    cg = _rdp_const(grid, logd)
    lg = np.log(grid)
    out = np.zeros(s.shape)
    idx = np.flatnonzero(s > 0)
    inv_phi = (math.sqrt(5.0) - 1.0) / 2.0
    for start in range(0, idx.size, chunk):
        sel = idx[start:start + chunk]
        ss = s[sel]
        vals = 0.5 * ss[:, None] * grid[None, :] + cg[None, :]
        i = np.argmin(vals, axis=1)
        best = vals[np.arange(sel.size), i]
        a = lg[np.maximum(i - 1, 0)]
        b = lg[np.minimum(i + 1, grid.size - 1)]
        f = lambda la: 0.5 * ss * np.exp(la) + _rdp_const(np.exp(la), logd)
        c = b - inv_phi * (b - a)
        d = a + inv_phi * (b - a)
        fc, fd = f(c), f(d)
        for _ in range(64):  # golden section: one new evaluation per iteration
            left = fc < fd  # the minimum lies in [a, d]
            a = np.where(left, a, c)
            b = np.where(left, d, b)
            x = np.where(left, b - inv_phi * (b - a), a + inv_phi * (b - a))
            fx = f(x)
            c, d, fc, fd = (np.where(left, x, d), np.where(left, c, x),
                            np.where(left, fx, fd), np.where(left, fc, fx))
        best = np.minimum(best, np.minimum(fc, fd))
        out[sel] = np.maximum(best, 0.0)
    return out


def rdp_epsilon_from_mu(mu: float | ArrayLike, delta: float) -> float | np.ndarray:
    """epsilon(delta) from the RDP curve alpha mu^2/2 of mu-GDP Gaussian steps, improved conversion, vectorised.

    Parameters
    ----------
    mu : a GDP parameter in [0, 1e100], or an array of them.
    delta : in (0, 1).

    Returns
    -------
    A float for a scalar ``mu``, else an array of its shape.

    Raises
    ------
    ParameterError : a value out of range or not finite.
    """
    d = check_delta(delta)
    arr = check_array("mu", mu, allow_scalar=True)
    out = unique_apply(arr * arr, lambda u: rdp_eps_sq_unique(u, d))
    return float(out) if np.ndim(mu) == 0 else out


def rdp_cap_for(epsilon: float, delta: float) -> float:
    """The largest s = sum mu^2 whose RDP-converted epsilon(delta) is <= epsilon."""
    f = lambda s: float(rdp_eps_sq_unique(np.array([s]), delta)[0]) - epsilon  # increasing in s
    hi = 1.0
    while f(hi) <= 0:
        hi *= 2.0
        if hi > 1e12:
            raise ParameterError(f"epsilon = {epsilon!r} with delta = {delta!r} puts no bound on the RDP budget")
    lo = hi / 2
    while f(lo) > 0:
        lo /= 2.0
        if lo < 1e-300:
            raise ParameterError(f"epsilon = {epsilon!r} is too small for delta = {delta!r} under RDP")
    s = brentq(f, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    while f(s) > 0:
        s *= 1 - 1e-13
    return float(s)
