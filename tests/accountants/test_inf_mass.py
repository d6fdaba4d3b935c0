"""Issue "Any density a paper writes": losses that are +inf with positive probability.

Defect 5: epsilon below the composed mass at +inf is infinite, for every accountant.  Above it, every accountant
answers: the FFT composes the finite part (its default delta_error a thousandth of what the finite part adds), the
SPA and Edgeworth compose the finite parts (sub-probabilities) and add the composed mass at +inf exactly.  The
references are exact: the probability of an infinite loss, and delta(eps) summed over every outcome of the k runs
(``tests/references/piecewise.exact_atoms_delta``, mpmath); never mechkit itself."""
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, strategies as st

import mechkit as mk
from mechkit.composition import ACCOUNTANTS
from tests.helpers import Reached, approx_dp_pair
from tests.references import piecewise as ref

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


#: the methods that compose finite parts, with their options
FINITE_PART_METHODS = [("spa", {}), ("edgeworth", {}), ("edgeworth", {"variant": "tilted"}), ("fft", {})]
SLACK = 1e-9  # relative: the exact reference and mechkit's double precision


def _approx_dp_loss(e0, d0):
    """(values, probabilities) of the approximate-DP pair's loss in either direction: +inf with d0, +-e0."""
    return [math.inf, e0, -e0], [d0, (1 - d0) * math.exp(e0) / (1 + math.exp(e0)), (1 - d0) / (1 + math.exp(e0))]


def _contains(est, want):
    return est.lower <= want * (1 + SLACK) + 1e-15 and want <= est.upper * (1 + SLACK) + 1e-15


def test_finite_part_is_the_loss_without_its_masses_at_infinity():
    m = approx_dp_pair()(eps0=0.5, delta0=0.1)
    (inf, e0, _), (d0, hi, lo) = _approx_dp_loss(0.5, 0.1)
    whole = m.plrv("remove")
    part = whole.finite_part()
    assert whole.inf_mass == pytest.approx(d0, rel=1e-12) and part.inf_mass == 0.0
    assert part.finite_mass == pytest.approx(1 - d0, rel=1e-12) and part.support == pytest.approx((-e0, e0))
    for t in (0.0, 0.7, 3.0):  # the sub-probability's generating function, closed form
        assert part.cgf(t) == pytest.approx(math.log(hi * math.exp(t * e0) + lo * math.exp(-t * e0)), rel=1e-12)
    assert math.isinf(whole.cgf(0.7))
    with pytest.raises(mk.DerivationError, match="finite part"):
        part.cdf(0.0)
    gaussian = mk.gaussian(sigma=1.0).plrv("remove")
    assert gaussian.finite_part() is gaussian


@pytest.mark.parametrize("method,options", FINITE_PART_METHODS)
def test_composed_mass_at_infinity_is_added_exactly(method, options):
    """approximate-DP pairs (eps0 0.5, delta0 1e-3) x 30: delta at three epsilons and epsilon at three deltas just
    above the composed mass at +inf (0.0296), against the exact sum over the 3^30 outcomes' 496 classes."""
    values, probs = _approx_dp_loss(0.5, 1e-3)
    run = mk.compose((approx_dp_pair()(eps0=0.5, delta0=1e-3), 30))
    mass = 1 - (1 - 1e-3) ** 30
    for eps in (0.5, 2.0, 5.0):
        want = float(ref.exact_atoms_delta(values, probs, 30, eps))
        est = run.delta(eps, method=method, **options)
        assert _contains(est, want), (eps, want, est)
        assert est.lower >= mass * (1 - SLACK) and est.upper < 1.0 or eps < 2  # never below the mass at +inf
    for d in (mass + 1e-3, mass + 0.01, mass + 0.1):
        est = run.epsilon(d, method=method, **options)
        assert 0 < est.lower <= float(est) <= est.upper < math.inf or method != "fft"
        # certified: delta at the lower bound still exceeds d, delta at the upper bound is within it
        assert float(ref.exact_atoms_delta(values, probs, 30, est.lower)) >= d * (1 - SLACK), (d, est)
        assert float(ref.exact_atoms_delta(values, probs, 30, est.upper)) <= d * (1 + SLACK), (d, est)


def test_fft_answers_just_above_the_mass_at_infinity():
    """One approximate-DP run (delta0 0.3) at delta = 0.3 + 1e-4: a thousandth of delta (the old default delta_error)
    exceeds what the finite part adds, so the FFT refused; its budget is now the finite part's share.  Exact:
    delta(eps) = d0 + (1 - d0) (e^eps0 - e^eps) / (1 + e^eps0) below eps0."""
    e0, d0, d = 0.5, 0.3, 0.3 + 1e-4
    run = mk.compose((approx_dp_pair()(eps0=e0, delta0=d0), 1))
    want = math.log(math.exp(e0) - (d - d0) * (1 + math.exp(e0)) / (1 - d0))
    est = run.epsilon(d, method="fft")
    assert est.lower <= want <= est.upper and est.upper - est.lower <= 0.05, (want, est)


_weights = st.lists(st.floats(0.05, 1.0), min_size=4, max_size=4).map(lambda w: [v / sum(w) for v in w])


@pytest.fixture(scope="module")
def histogram_family():
    """p on [-1, 3) and q on [0, 4) in unit bins: [-1, 0) is p's alone (loss +inf), [3, 4) q's alone."""
    x = sp.Symbol("x", real=True)

    def bins(hs, first):
        return sp.Piecewise(*[(h, (x >= first + i) & (x < first + i + 1)) for i, h in enumerate(hs)], (0, True))

    return mk.Mechanism.from_densities(bins(sp.symbols("a0:4", positive=True), -1),
                                       bins(sp.symbols("b1:5", positive=True), 0), x, name="random_histogram")


_reached = Reached(spa=0.5, edgeworth=0.5)


@_reached
@given(a=_weights, b=_weights, k=st.integers(1, 6), eps=st.floats(0.0, 4.0), share=st.floats(0.01, 0.9))
def test_random_histograms_with_masses_at_infinity(histogram_family, a, b, k, eps, share):
    """SPA and Edgeworth (both variants): delta(eps) and epsilon(delta) certified against exact sums, both
    directions (each with its own mass at +inf), delta a random share above the larger composed mass.  epsilon may
    be refused (NumericalLimitError: at k = 1 or 2 a saddle point may not reach delta; a finite part of zero variance
    has no Edgeworth expansion); ``Reached`` requires answers in at least half of the examples."""
    m = histogram_family(**{f"a{i}": v for i, v in enumerate(a)}, **{f"b{i + 1}": v for i, v in enumerate(b)})
    losses = [([math.log(a[i + 1] / b[i]) for i in range(3)] + [math.inf], a[1:] + [a[0]]),
              ([math.log(b[i] / a[i + 1]) for i in range(3)] + [math.inf], b[:3] + [b[3]])]

    def exact(e):
        return max(float(ref.exact_atoms_delta(v, p, k, e)) for v, p in losses)

    run = mk.compose((m, k))
    want = exact(eps)
    mass = max(1 - (1 - a[0]) ** k, 1 - (1 - b[3]) ** k)
    d = mass + share * (1 - mass)
    for method, options in FINITE_PART_METHODS[:3]:
        try:
            got = run.delta(eps, method=method, **options)
            est = run.epsilon(d, method=method, **options)
        except mk.NumericalLimitError:
            continue
        assert _contains(got, want), (method, eps, want, got)
        if not options:
            _reached.hit(method)
        # certified: the true epsilon (where delta, continuous, falls to d) is in [lower, upper]
        assert est.lower == 0.0 or exact(est.lower) >= d * (1 - SLACK), (method, d, est)
        assert exact(est.upper) <= d * (1 + SLACK), (method, d, est)
