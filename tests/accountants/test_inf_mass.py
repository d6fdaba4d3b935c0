"""Issue "Any density a paper writes", defect 5: epsilon below the composed mass at +inf is infinite, for every
accountant.  The reference is the exact probability of an infinite loss; never mechkit itself."""
import math

import numpy as np
import pytest
import sympy as sp

import mechkit as mk
from mechkit.composition import ACCOUNTANTS
from tests.helpers import approx_dp_pair

k = sp.Symbol("k", integer=True)


@pytest.mark.parametrize("method", sorted(ACCOUNTANTS))
def test_epsilon_below_the_composed_inf_mass_is_infinite(method):
    fam = approx_dp_pair()
    a, b = fam(eps0=0.5, delta0=1e-3), fam(eps0=0.2, delta0=2e-3)
    run = mk.compose((a, 100), (b, 50), mk.gaussian(sigma=2.0))
    mass = 1 - (1 - 1e-3) ** 100 * (1 - 2e-3) ** 50  # exact: an infinite loss in any run is infinite in the sum
    assert run.inf_mass("remove") == pytest.approx(mass, rel=1e-12)
    assert mass > max(1 - (1 - 1e-3) ** 100, 1 - (1 - 2e-3) ** 50) + 0.05  # neither part alone reaches it
    for d in (0.5 * mass, mass * (1 - 1e-9)):
        est = run.epsilon(d, method=method)
        assert est == math.inf and est.lower == math.inf and est.upper == math.inf
        assert est.certified and est.method == method
        assert est.details["inf_mass"] == pytest.approx(mass, rel=1e-12)
    arr = run.epsilon([0.5 * mass, 0.9 * mass], method=method)
    assert np.all(np.isinf(arr)) and np.all(np.isinf(arr.lower))


def test_above_the_inf_mass_the_accountant_answers():
    m = approx_dp_pair()(eps0=0.5, delta0=1e-3)
    run = mk.compose((m, 100))
    mass = 1 - (1 - 1e-3) ** 100
    est = run.epsilon(mass + 0.01)
    assert math.isfinite(est) and 0 <= est.lower <= est.upper < math.inf


def test_inf_mass_of_the_add_direction():
    # q > 0 = p at k = 2: the add direction's loss log q/p is +inf with Q-mass 1/10; the remove direction has none
    p = sp.Piecewise((sp.Rational(1, 2), sp.Eq(k, 0)), (sp.Rational(1, 2), sp.Eq(k, 1)), (0, True))
    q = sp.Piecewise((sp.Rational(9, 20), sp.Eq(k, 0)), (sp.Rational(9, 20), sp.Eq(k, 1)), (sp.Rational(1, 10), True))
    m = mk.Mechanism.from_densities(p, q, k, domain=[0, 1, 2], name="add_only")()
    run = mk.compose((m, 3))
    assert run.inf_mass("remove") == 0.0
    assert run.inf_mass("add") == pytest.approx(1 - 0.9 ** 3, rel=1e-12)
    est = run.epsilon(0.2, method="fft")
    assert est == math.inf and est.details["direction"] == "add"
