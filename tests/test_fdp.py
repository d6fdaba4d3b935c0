"""f-DP views (issue 22): the trade-off function, the attacker's advantage and TPR at FPR, with certified bounds,
against the exact trade-off function of the Gaussian mechanism (k runs of sigma are G_mu, mu = sqrt(k)/sigma:
beta = Phi(Phi^-1(1 - alpha) - mu), advantage = 2 Phi(mu/2) - 1)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import special

import mechkit as mk
from mechkit.errors import ParameterError

ALPHAS = np.array([0.0, 1e-8, 1e-4, 0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 0.99, 1.0])


def gdp_beta(mu, alpha):
    return special.ndtr(special.ndtri(1.0 - alpha) - mu)


@given(sigma=st.floats(0.5, 8.0), k=st.integers(1, 60))
def test_tradeoff_band_holds_the_exact_gaussian_tradeoff(sigma, k):
    run = mk.compose((mk.gaussian(sigma), k))
    mu = math.sqrt(k) / sigma
    beta = run.tradeoff(ALPHAS)
    truth = gdp_beta(mu, ALPHAS)
    assert beta.certified and np.all(beta.lower <= truth + 1e-12) and np.all(truth <= beta.upper + 1e-12)
    assert np.all(np.abs(np.asarray(beta) - truth) <= 2e-3)  # the estimate is close, not only bracketed


def test_advantage_and_tpr_at_fpr():
    run = mk.compose((mk.gaussian(2.0), 10))
    mu = math.sqrt(10) / 2.0
    adv = run.advantage()
    assert adv.lower <= 2 * special.ndtr(mu / 2) - 1 <= adv.upper and adv.certified
    fpr = np.array([0.001, 0.01, 0.1])
    tpr = run.tpr_at_fpr(fpr)
    beta = run.tradeoff(fpr)
    assert np.allclose(np.asarray(tpr), 1 - np.asarray(beta)) and np.allclose(tpr.lower, 1 - beta.upper)
    truth = 1 - gdp_beta(mu, fpr)
    assert np.all(tpr.lower <= truth) and np.all(truth <= tpr.upper)


def test_dp_sgd_tradeoff_is_quiet_and_ordered():
    run = mk.dpsgd(noise_multiplier=1.0, sampling_rate=0.01, steps=500)
    beta = run.tradeoff([0.01, 0.1, 0.5])
    assert np.all(np.diff(np.asarray(beta)) < 0)  # a trade-off function decreases
    assert np.all(beta.lower <= beta) and np.all(beta <= beta.upper)
    with pytest.raises(ParameterError, match="alpha must lie in"):
        run.tradeoff(1.5)
    with pytest.raises(ParameterError, match="fpr must lie in"):
        run.tpr_at_fpr(-0.1)
