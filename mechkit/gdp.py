"""Closed forms for Gaussian differential privacy (mu-GDP).

A composition of Gaussian mechanisms with mu_i = sensitivity_i / sigma_i is mu-GDP with
mu = sqrt(sum mu_i^2), and its privacy curve is exactly
``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (Balle & Wang 2018; Dong, Roth, Su 2019).
Evaluated in log space, so it stays accurate for tiny delta.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

from .errors import ParameterError, check_finite_real


def _log1mexp(x):
    return np.where(x > -math.log(2), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))


def log_delta(mu, epsilon):
    mu = check_finite_real("mu", mu, low=0.0)
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    if np.any(np.isnan(eps)) or np.any(eps < 0):
        raise ParameterError(f"epsilon must lie in [0, inf], got {eps[np.isnan(eps) | (eps < 0)][0]!r}")
    with np.errstate(all="ignore"):
        la = log_ndtr(-eps / mu + mu / 2)
        lb = eps + log_ndtr(-eps / mu - mu / 2)
        out = np.where(la > lb, la + _log1mexp(np.minimum(lb - la, 0.0)), -np.inf)
    return out


def delta(mu, epsilon):
    """delta(epsilon) of mu-GDP (vectorised over epsilon)."""
    out = np.exp(log_delta(mu, epsilon))
    return float(out[0]) if np.ndim(epsilon) == 0 else out


def epsilon(mu, delta):
    """Smallest epsilon >= 0 with delta_mu(epsilon) <= delta."""
    mu = check_finite_real("mu", mu, low=0.0)
    d = check_finite_real("delta", delta, low=0.0, high=1.0)
    f = lambda e: float(log_delta(mu, e)[0]) - math.log(d)
    if f(0.0) <= 0:
        return 0.0
    hi = max(1.0, mu * mu)
    while f(hi) > 0:
        hi *= 2.0
    g = lambda e: f(e) if math.isfinite(f(e)) else -1e300
    return float(brentq(g, 0.0, hi, xtol=1e-14, rtol=8.9e-16, maxiter=500))


def mu_of_gaussians(*items):
    """mu of a composition of Gaussian mechanisms given as (sigma, sensitivity, count) tuples."""
    total = 0.0
    for it in items:
        sigma, sens, count = (tuple(it) + (1,))[:3] if len(it) == 2 else tuple(it)
        s = check_finite_real("sigma", sigma, low=0.0)
        c = check_finite_real("sensitivity", sens, low=0.0)
        n = check_finite_real("count", count, low=1.0, low_open=False)
        total += n * (c / s) ** 2
    return math.sqrt(total)
