"""Composition.curve (issue 21): the composition's privacy curve composed once; its epsilon and delta answer as the
composition's FFT queries with the same budgets, and contain the closed-form truth (k Gaussian runs are
sqrt(k) / sigma GDP exactly)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

import mechkit as mk
from mechkit.errors import NumericalLimitError, ParameterError


def gdp_delta(mu, eps):
    return special.ndtr(-eps / mu + mu / 2) - math.exp(eps + special.log_ndtr(-eps / mu - mu / 2))


def test_curve_contains_the_closed_form_and_equals_the_direct_queries():
    run = mk.compose((mk.gaussian(2.0), 10))
    mu = math.sqrt(10) / 2.0
    curve = run.curve(eps_error=0.01, delta_error=1e-12)
    deltas = [1e-3, 1e-5, 1e-7, 1e-9]
    est = curve.epsilon(deltas)
    for d, v, lo, up in zip(deltas, est, est.lower, est.upper):
        truth = optimize.brentq(lambda e: gdp_delta(mu, e) - d, 0.0, 100.0, xtol=1e-13)
        assert lo <= truth <= up and up - lo <= 0.021
        direct = run.epsilon(d, delta_error=1e-12)
        assert (v, lo, up) == (float(direct), direct.lower, direct.upper)
    eps = np.array([0.0, 0.5, 2.0, 6.0])
    dl = curve.delta(eps)
    truth = np.array([gdp_delta(mu, e) for e in eps])
    assert np.all(dl.lower <= truth) and np.all(truth <= dl.upper)
    direct = run.delta(eps, delta_error=1e-12)
    assert np.array_equal(np.asarray(dl), np.asarray(direct)) and np.array_equal(dl.upper, direct.upper)
    assert curve.delta(2.0) == dl[2] and isinstance(curve.epsilon(1e-5), mk.Estimate)


def test_curve_of_a_one_sided_composition_keeps_its_attained_lower_bound():
    m = mk.subsample(mk.gaussian(1.0), 0.05, scheme="without_replacement", relation="replace_one")
    run = mk.compose((m, 20))
    c = run.curve()
    a, b = c.epsilon(1e-5), run.epsilon(1e-5, delta_error=1e-10)
    assert (float(a), a.lower, a.upper) == (float(b), b.lower, b.upper) and "one_sided" in a.details


def test_curve_refuses_what_it_cannot_certify():
    curve = mk.compose((mk.gaussian(1.0), 3)).curve(delta_error=1e-6)
    with pytest.raises(NumericalLimitError, match="smallest certifiable delta"):
        curve.epsilon(1e-6)
    with pytest.raises(ParameterError, match="delta"):
        curve.epsilon(1.5)
    with pytest.raises(ParameterError, match="eps_error"):
        mk.compose((mk.gaussian(1.0), 3)).curve(eps_error=-1.0)
    assert curve.epsilon(0.0) == math.inf  # the Gaussian loss is unbounded: exact, no lookup
