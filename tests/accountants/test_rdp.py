"""The Renyi-DP accountant (mk.rdp) against the exact mu-GDP curve of Gaussian compositions and the optimum over
the order computed directly."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mechkit as mk


@settings(deadline=None)
@given(sigma=st.floats(0.5, 10.0), steps=st.integers(1, 5000), logd=st.floats(-12, -2))
def test_rdp_bound_never_below_exact_gaussian_curve(sigma, steps, logd):
    delta = 10.0 ** logd
    m = mk.gaussian(sigma=sigma)
    eps_rdp = mk.rdp.epsilon([(m, steps)], delta)
    exact = mk.gdp.epsilon(math.sqrt(steps) / sigma, delta)
    assert eps_rdp >= exact - 1e-9


def test_rdp_bound_heterogeneous_sums_orders():
    a, b_ = mk.gaussian(sigma=2.0), mk.gaussian(sigma=3.0)
    eps = mk.rdp.epsilon([(a, 10), (b_, 40)], 1e-6)
    mu = math.sqrt(10 / 4 + 40 / 9)
    assert eps >= mk.gdp.epsilon(mu, 1e-6)
    # RDP of the composition is mu^2 alpha / 2 for Gaussians: check the optimum directly
    f = lambda al: mu * mu * al / 2 + math.log1p(-1 / al) - (math.log(1e-6) + math.log(al)) / (al - 1)
    grid = np.linspace(1.01, 200, 200000)
    assert eps == pytest.approx(min(f(x) for x in grid), rel=1e-6)
