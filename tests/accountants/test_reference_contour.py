"""The FFT and saddle-point accountants against an independent contour-integral reference
(tests/references/contour.py: numpy only, no mechkit code) at random DP-SGD settings."""
import math

import pytest
from hypothesis import assume, given, settings, strategies as st
from scipy.stats import norm

import mechkit as mk
from tests.references import contour as ref


@pytest.mark.parametrize("s,k,eps", [(2.0, 10, 0.5), (1.0, 3, 1.0), (5.0, 100, 0.3)])
def test_reference_contour_selfcheck_gaussian(s, k, eps):
    mu = math.sqrt(k) / s
    exact = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    assert ref.delta(eps, s, 1.0, k) == pytest.approx(exact, rel=1e-8)


def test_reference_contour_selfcheck_p1_table():
    assert ref.delta(1.0, 1.5, 0.01, 10_000) == pytest.approx(0.0496014103163, rel=1e-8)


@st.composite
def dp_sgd(draw):
    q = draw(st.floats(0.005, 0.2))
    k = draw(st.integers(max(10, math.ceil(3.0 / q)), 3000))  # >= 3 expected sampled steps: the reference converges
    return draw(st.floats(0.7, 3.0)), q, k, draw(st.floats(0.2, 4.0))


def test_reference_contour_refuses_when_not_converged():
    # one expected sampled step in ten: the loss is nearly atomic and the contour integral does not settle
    with pytest.raises(ref.NotConverged):
        ref.delta(1.0, 1.0, 0.0078125, 10)


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(case=dp_sgd())
def test_fft_and_spa_bounds_contain_independent_reference(case):
    sigma, q, k, eps = case
    try:
        truth = ref.delta(eps, sigma, q, k)  # remove direction, which dominates for the subsampled Gaussian
    except ref.NotConverged:
        assume(False)
    run = mk.compose((mk.subsample(mk.gaussian(sigma=sigma), q), k))
    d = run.delta(eps, eps_error=0.02)
    assert d.lower <= truth <= d.upper
    try:
        sp = run.delta(eps, method="spa")
    except mk.NumericalLimitError:
        return
    assert sp.lower <= truth * (1 + 1e-6) + 1e-300 and truth * (1 - 1e-6) <= sp.upper
