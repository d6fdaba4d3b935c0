import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings, strategies as st
from scipy import stats

import mechkit as mk

k = sp.Symbol("k", integer=True)


def truncated_pair():
    # outcome 2 is impossible without the individual: an atom of L at +inf with P-mass 0.2
    p = sp.Piecewise((sp.Rational(1, 2), sp.Eq(k, 0)), (sp.Rational(3, 10), sp.Eq(k, 1)), (sp.Rational(1, 5), True))
    q = sp.Piecewise((sp.Rational(3, 5), sp.Eq(k, 0)), (sp.Rational(2, 5), sp.Eq(k, 1)), (0, True))
    return mk.Mechanism.from_densities(p, q, k, domain=[0, 1, 2], name="truncated")()


def test_atom_at_plus_infinity():
    m = truncated_pair()
    vals, probs = m.remove.atoms()
    assert vals[-1] == math.inf and probs[-1] == pytest.approx(0.2)
    np.testing.assert_allclose(vals[:-1], [math.log(0.3 / 0.4), math.log(0.5 / 0.6)])
    # the add direction sees the same point as -inf with Q-mass 0
    avals, aprobs = m.add.atoms()
    assert -math.inf not in avals
    # delta never drops below the mass at +inf; no finite epsilon reaches a smaller delta
    assert m.delta(50.0, direction="remove") == pytest.approx(0.2)
    assert m.epsilon(0.1) == math.inf
    assert m.epsilon(0.25) == pytest.approx(0.0)
    # the MGF is infinite for t > 0 under P, finite for t < 0
    assert m.remove.cgf(0.5) == math.inf
    expect = math.log(0.5 * (0.5 / 0.6) ** -0.5 + 0.3 * (0.3 / 0.4) ** -0.5)
    assert m.remove.cgf(-0.5) == pytest.approx(expect, rel=1e-13)
    assert m.remove.sf(1e300) == pytest.approx(0.2)


@settings(deadline=None)
@given(sigma=st.floats(0.3, 5.0), q=st.floats(1e-3, 1.0), t=st.floats(-0.2, 4.0))
def test_subsampled_gaussian_cdf_random(sigma, q, t):
    m = mk.subsample(mk.gaussian(sigma=sigma), q)
    lo = math.log1p(-q) if q < 1 else -math.inf
    s = max(t, lo + 1e-3) if math.isfinite(lo) else t
    z = sigma ** 2 * math.log((math.exp(s) - (1 - q)) / q) + 0.5
    ref = (1 - q) * stats.norm.cdf(z / sigma) + q * stats.norm.cdf((z - 1) / sigma)
    ref_sf = (1 - q) * stats.norm.sf(z / sigma) + q * stats.norm.sf((z - 1) / sigma)
    assert m.remove.cdf(s) == pytest.approx(ref, rel=1e-9, abs=1e-300)
    assert m.remove.sf(s) == pytest.approx(ref_sf, rel=1e-9, abs=1e-300)
