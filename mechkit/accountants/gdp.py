"""Closed forms for Gaussian differential privacy (mu-GDP).

A composition of Gaussian mechanisms with mu_i = sensitivity_i / sigma_i is mu-GDP with
mu = sqrt(sum mu_i^2), and its privacy curve is exactly
``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (Balle & Wang 2018; Dong, Roth, Su 2019).
Evaluated in log space, so it stays accurate for tiny delta.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import log_ndtr

from ..engine.logspace import log1mexp
from ..errors import ParameterError, check_finite_real

_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)
SMALL_MU = 0.5


def _x_plus_mills(x):
    """h(x) = x + phi(x)/Phi(x) > 0 without cancellation: for x < -3 by the continued fraction
    h(x) = 1/(y + 2/(y + 3/(y + ...))), y = -x (from Laplace's fraction for the Mills ratio)."""
    x = np.asarray(x, dtype=float)
    out = np.empty(x.shape)
    far = x < -3.0
    with np.errstate(all="ignore"):
        xn = x[~far]
        out[~far] = xn + np.exp(-0.5 * xn * xn - 0.5 * math.log(2 * math.pi) - log_ndtr(xn))
        y = -x[far]
        tail = np.zeros(y.shape)
        for j in range(120, 1, -1):  # backward evaluation of y + j/(y + (j+1)/(...))
            tail = j / (y + tail)
        out[far] = 1.0 / (y + tail)
    return out


def log_delta_array(mu: ArrayLike, eps: ArrayLike) -> np.ndarray:
    """log delta_mu(eps) elementwise for arrays mu > 0, eps >= 0 (broadcast), accurate for tiny mu and delta.

    delta = Phi(a) (1 - e^D) with a = -eps/mu + mu/2 and D = eps - [log Phi(a) - log Phi(a - mu)].  For
    mu < 1/2 the difference is computed without cancellation as D = -mu * mean of h(x) = x + phi/Phi over
    [a - mu, a] (16-point Gauss-Legendre); for larger mu the direct difference is accurate.

    Parameters
    ----------
    mu : GDP parameters > 0 (not checked).
    eps : epsilons >= 0 (not checked), broadcast against ``mu``.

    Returns
    -------
    An array of the broadcast shape; -inf where delta = 0.
    """
    mu, eps = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(eps, dtype=float))
    with np.errstate(all="ignore"):
        a = -eps / mu + mu / 2
        la = log_ndtr(a)
        D = eps + log_ndtr(a - mu) - la
        small = mu < SMALL_MU
        if np.any(small):
            ms, as_ = mu[small], a[small]
            xs = as_[..., None] - 0.5 * ms[..., None] * (1.0 - _GL_X)  # nodes on [a - mu, a]
            avg = 0.5 * np.sum(_GL_W * _x_plus_mills(xs), axis=-1)
            D = D.copy()
            D[small] = -ms * avg
        out = np.where(D < 0, la + log1mexp(np.minimum(D, 0.0)), -np.inf)
    return out


def log_delta(mu: float, epsilon: float | ArrayLike) -> np.ndarray:
    """log delta(epsilon) of mu-GDP, accurate for tiny delta (vectorised over epsilon).

    Parameters
    ----------
    mu : the GDP parameter, > 0.
    epsilon : in [0, inf], or an array of such values.

    Returns
    -------
    An array of epsilon's shape, at least 1-D (also for a scalar epsilon).

    Raises
    ------
    ParameterError : mu not a finite number > 0, or an epsilon negative or nan.
    """
    mu = check_finite_real("mu", mu, low=0.0)
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    if np.any(np.isnan(eps)) or np.any(eps < 0):
        raise ParameterError(f"epsilon must lie in [0, inf], got {eps[np.isnan(eps) | (eps < 0)][0]!r}")
    return log_delta_array(np.full(eps.shape, mu), eps)


def delta(mu: float, epsilon: float | ArrayLike) -> float | np.ndarray:
    """delta(epsilon) of mu-GDP, Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2).

    Parameters
    ----------
    mu : the GDP parameter, > 0.
    epsilon : in [0, inf], or an array of such values.

    Returns
    -------
    A float for a scalar epsilon, else an array of its shape.

    Raises
    ------
    ParameterError : mu not a finite number > 0, or an epsilon negative or nan.
    """
    out = np.exp(log_delta(mu, epsilon))
    return float(out[0]) if np.ndim(epsilon) == 0 else out


def epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon >= 0 with delta_mu(epsilon) <= delta.

    Parameters
    ----------
    mu : the GDP parameter, > 0.
    delta : in (0, 1).

    Raises
    ------
    ParameterError : mu not a finite number > 0, or delta not in (0, 1).
    """
    mu = check_finite_real("mu", mu, low=0.0)
    d = check_finite_real("delta", delta, low=0.0, high=1.0)
    f = lambda e: float(log_delta(mu, e)[0]) - math.log(d)
    if f(0.0) <= 0:
        return 0.0
    hi = max(1.0, mu * mu)
    while f(hi) > 0:
        hi *= 2.0
    g = lambda e: f(e) if math.isfinite(f(e)) else -1e300
    from scipy.optimize import brentq  # here: SciPy's optimize costs every query's process ~0.2 s of imports

    return float(brentq(g, 0.0, hi, xtol=1e-14, rtol=8.9e-16, maxiter=500))


def mu_of_gaussians(*items: tuple) -> float:
    """mu of a composition of Gaussian mechanisms: sqrt(sum count * (sensitivity / sigma)^2).

    Parameters
    ----------
    *items : ``(sigma, sensitivity, count)`` or ``(sigma, sensitivity)`` (count 1) tuples.

    Raises
    ------
    ParameterError : sigma or sensitivity not a finite number > 0, or count not a finite number >= 1.
    """
    total = 0.0
    for it in items:
        sigma, sens, count = (tuple(it) + (1,))[:3] if len(it) == 2 else tuple(it)
        s = check_finite_real("sigma", sigma, low=0.0)
        c = check_finite_real("sensitivity", sens, low=0.0)
        n = check_finite_real("count", count, low=1.0, low_open=False)
        total += n * (c / s) ** 2
    return math.sqrt(total)
