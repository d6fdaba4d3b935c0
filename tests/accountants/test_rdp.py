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


MECHS = [lambda: mk.subsample(mk.gaussian(sigma=0.8), 0.01), lambda: mk.subsample(mk.gaussian(sigma=2.0), 0.001),
         lambda: mk.gaussian(sigma=3.0), lambda: mk.laplace(scale=2.0), lambda: mk.randomized_response(epsilon=0.5),
         lambda: mk.discrete_gaussian(sigma=4.0), lambda: mk.zcdp(rho=0.1)]


@settings(deadline=None)
@given(which=st.integers(0, len(MECHS) - 1), k=st.integers(1, 100_000), logd=st.floats(-16.0, -3.0),
       start=st.integers(0, 13), direction=st.sampled_from(["remove", "add"]))
def test_coarse_bound_from_any_start_is_the_prefix_scans_minimum(which, k, logd, start, direction):
    # rdp.coarse_bound starts its scan at an order near the minimum (fft_grid.domain: a Gaussian model's) and walks
    # down where the bound does not fall there: the same bound and order as epsilon's scan from the first order (the
    # bound falls then rises in alpha), and the orders it evaluated run through two past the minimum
    from mechkit.accountants import rdp
    items = [(MECHS[which](), k)]
    d = 10.0 ** logd
    ref = rdp.epsilon(items, d, direction, alphas=rdp.COARSE_ALPHAS, refine=False, finite=True)
    got, alpha, orders = rdp.coarse_bound(items, d, direction, start, finite=True)
    assert (got, alpha) == (float(ref), ref.details["alpha"])
    best = int(np.searchsorted(rdp.COARSE_ALPHAS, alpha))
    assert orders[0] <= alpha and orders[-1] >= rdp.COARSE_ALPHAS[min(best + 2, rdp.COARSE_ALPHAS.size - 1)]
    assert np.all(np.diff(np.searchsorted(rdp.COARSE_ALPHAS, orders)) == 1)  # a contiguous run of the grid
