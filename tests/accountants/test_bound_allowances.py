"""Guards found by a mutation check (docs/performance.md has none of these numbers; the session note has the table):
each test fails when one allowance of a certified bound is weakened although every containment test still passes,
because the allowance is much larger than the error it covers on the suite's cases.  The floating-point allowance
of the FFT bounds (a lower bound at 0 beyond the largest loss), the width Theorem 5.5 demands (and the bounds being
exactly that theorem on the discrete curves), and Theorem 5's error term of the SPA against a closed form."""
import math

import numpy as np
import pytest

import mechkit as mk
from mechkit.accountants import fft
from mechkit.accountants.spa.model import directions
from tests.helpers import rr_delta


def test_fp_allowance_keeps_the_lower_bound_at_zero_beyond_the_largest_loss():
    # k-fold randomized response has delta(eps) = 0 exactly for eps >= k e0.  With a negligible delta_error the
    # lower bound there is delta_Y(eps + eps_error) - delta_error - fp: only the floating-point allowance removes
    # the rounding noise of the composed pmf (~1e-16, either sign) from it.  Without it the lower bound was
    # 1.0e-16 > 0 = truth at eps = 10.5 (e0 = 0.5, k = 20, delta_error = 1e-300).
    for e0, k in [(0.5, 20), (1.0, 7), (0.2, 50), (0.3, 40)]:
        run = mk.compose((mk.randomized_response(epsilon=e0), k))
        eps = np.array([k * e0 - 0.5, k * e0 - 0.05, k * e0 + 0.5, k * e0 + 2.0])
        for de in (1e-30, 1e-300):
            d = run.delta(eps, delta_error=de, method="fft", variant="prv")
            truth = np.array([rr_delta(e0, k, e) for e in eps])
            assert np.all(d.lower <= truth) and np.all(truth <= d.upper), (e0, k, de, d.lower, truth, d.upper)


@pytest.mark.parametrize("de", [1e-10, 1e-4, 1e-3])
def test_delta_bounds_are_at_least_theorem_5_5_wide(de):
    # Theorem 5.5 widens delta by delta_error + fp on each side (and eps by eps_error): where neither bound is
    # clipped to [0, 1], upper - lower >= 2 (delta_error + fp) whatever the curve does.  The containment tests
    # cannot see a halved delta_error: the realised discretisation error is far below it.
    run = mk.compose((mk.subsample(mk.gaussian(sigma=1.0), 0.05), 50), (mk.laplace(scale=5.0), 3))
    d = run.delta(np.array([0.2, 0.5, 1.0, 1.5]), delta_error=de, method="fft", variant="prv")
    s = d.details["delta_error"] + d.details["fp_allowance"] + d.details["tail_allowance"]
    inside = (d.lower > 0) & (d.upper < 1)
    assert inside.any()
    assert np.all((d.upper - d.lower)[inside] >= 2 * s * (1 - 1e-9))


def test_bounds_are_theorem_5_5_of_the_discrete_curve():
    # white box: the bounds are exactly Theorem 5.5 applied to the composed discrete curves (both directions)
    run = mk.compose((mk.subsample(mk.gaussian(sigma=1.0), 0.05), 50))
    ee, de = 0.01, 1e-4
    grid, curves, slack = fft._curves(run.items, ee, de, fft.DEFAULT_MEMORY_LIMIT)
    eps = np.array([0.3, 1.0, 2.0])
    d = run.delta(eps, eps_error=ee, delta_error=de, method="fft", variant="prv")
    up = np.max([c.delta(eps - ee) for c in curves.values()], axis=0) + de + slack
    lo = np.max([c.delta(eps + ee) for c in curves.values()], axis=0) - de - slack
    assert np.array_equal(d.upper, np.clip(up, 0, 1)) and np.array_equal(d.lower, np.clip(lo, 0, 1))
    assert slack >= max(c.fp for c in curves.values()) > 0
    e = run.epsilon(1e-2, eps_error=ee, delta_error=de, method="fft", variant="prv")
    assert e.upper == max(c.epsilon(1e-2 - de - slack) for c in curves.values()) + ee
    assert e.lower == max(0.0, max(c.epsilon(1e-2 + de + slack) for c in curves.values()) - ee)


@pytest.mark.parametrize("e0,k,t,eps", [(0.5, 100, 0.8, 25.0), (0.1, 2000, 0.4, 15.0), (1.0, 10, 2.0, 6.0)])
def test_theorem_5_error_term_against_closed_form_randomized_response(e0, k, t, eps):
    # Theorem 5 (Alghamdi et al.): |delta - SP-CLT| <= 1.12 e^(K - t eps) t^t/(1+t)^(1+t) sum_i E|L_it - K_i'|^3
    # / K''^1.5.
    # For k-fold randomized response every term has a closed form (two-point tilted law).  Containment cannot see a
    # halved term: the realised |delta - SP-CLT| is at most ~15% of it on the reference cells.
    p = math.exp(e0) / (1 + math.exp(e0))
    a, b = p * math.exp(t * e0), (1 - p) * math.exp(-t * e0)
    K = k * math.log(a + b)
    q = a / (a + b)                                   # tilted P(L = +e0)
    K2 = k * (2 * e0) ** 2 * q * (1 - q)
    abs3 = k * (2 * e0) ** 3 * q * (1 - q) * (q * q + (1 - q) ** 2)
    theta = t ** t / (1 + t) ** (1 + t)
    want = 1.12 * math.exp(K - t * eps) * theta * abs3 / K2 ** 1.5
    dirn = directions(mk.compose((mk.randomized_response(epsilon=e0), k)).items)[0]
    got = math.exp(dirn.at(t, eps, want_bounds=True)["log_err"])
    assert got == pytest.approx(want, rel=1e-7)   # the allowances (quadrature 1e-9, rounding ~1e-13) only add
    assert got >= want
