"""Neighbouring relations and sampling schemes (issue 20), each against an independent reference:

* brute force over small datasets (tests/references/subsampled_sums.py: every dataset of values in {-1, 0, 1},
  every neighbouring pair, the exact output mixtures, SciPy only): the one-step curve of every (scheme, relation)
  equals the maximum over the pairs, for Gaussian and Laplace noise;
* two runs composed: the certified interval holds the worst pair's two-run composition (a nested integral), and
  for sampling without replacement also the composition with the orientation changed between runs;
* closed forms (the replace-one Gaussian is the Gaussian of twice the sensitivity) and peers' values (dp_accounting
  0.6.0 at sigma 1, q 0.01, 1000 steps, delta 1e-5; its RDP bound for sampling without replacement);
* the API: relations as data, compositions that refuse to mix them, combinations that do not exist.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import special

import mechkit as mk
from mechkit.errors import ParameterError, SpecificationError
from tests.references import subsampled_sums as bf

EPS = [0.0, 0.1, 0.5, 1.0, 2.0]

COMBOS = [("poisson", "add_remove", 0.3, 0.3), ("poisson", "replace_one", 0.3, 0.3),
          ("without_replacement", "replace_one", 1, 0.25), ("without_replacement", "replace_one", 2, 0.5)]


def _base(kind, scale=1.0):
    return mk.gaussian(scale) if kind == "gaussian" else mk.laplace(scale)


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
@pytest.mark.parametrize("scheme, relation, arg, rate", COMBOS)
def test_one_step_curve_is_the_worst_pair_of_small_datasets(kind, scheme, relation, arg, rate):
    worst = bf.worst_delta(scheme, relation, 4, arg, kind, EPS)
    m = mk.subsample(_base(kind), rate, scheme=scheme, relation=relation)
    got = m.delta(EPS)
    want = np.array([w for w, _ in worst])
    assert np.all(want > 0.0) or kind == "laplace"
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-7)


def _pair(scheme, relation, arg, kind="gaussian", eps=0.5):
    """The neighbouring pair of datasets whose outputs are furthest apart at eps (the brute force's maximiser)."""
    return bf.worst_delta(scheme, relation, 4, arg, kind, [eps])[0][1]


@pytest.mark.parametrize("scheme, relation, arg, rate", COMBOS[:3])
def test_two_runs_interval_holds_the_worst_pair_composed(scheme, relation, arg, rate):
    p, q = _pair(scheme, relation, arg)
    eps = 0.5
    aligned = max(bf.two_run_delta((p, q), (p, q), eps), bf.two_run_delta((q, p), (q, p), eps))
    m = mk.subsample(mk.gaussian(1.0), rate, scheme=scheme, relation=relation)
    est = mk.compose((m, 2)).delta(eps)
    assert est.certified
    assert est.lower <= aligned * (1 + 1e-9) + 1e-12 and aligned <= est.upper * (1 + 1e-9) + 1e-12
    if m.family.one_sided:
        mixed = bf.two_run_delta((p, q), (q, p), eps)
        assert mixed <= est.upper * (1 + 1e-9) + 1e-12
        assert "one_sided" in est.details
    else:
        assert abs(float(est) - aligned) < 0.02 * aligned


def _analytic_gaussian_delta(mu, eps):
    return special.ndtr(-eps / mu + mu / 2) - math.exp(eps) * special.ndtr(-eps / mu - mu / 2)


@pytest.mark.parametrize("sigma", [0.7, 1.0, 3.0])
def test_replace_one_gaussian_is_the_gaussian_of_twice_the_bound(sigma):
    r = mk.replace_one(mk.gaussian(sigma))
    assert r.relation == "replace_one" and mk.gaussian(sigma).relation == "add_remove"
    for eps in (0.0, 0.5, 2.0):
        assert abs(r.delta(eps) - _analytic_gaussian_delta(2.0 / sigma, eps)) < 1e-12
    assert mk.replace_one(r) is r


def test_lebeda_regime_poisson_against_without_replacement():
    """sigma 1, q 0.01, 1000 steps, delta 1e-5 (the regime of Lebeda et al. 2024: epsilon near 1-3 with Poisson
    sampling, above 10 without replacement).  References: dp_accounting 0.6.0's PLD accountant (value
    discretisation 1e-3; Poisson add/remove 1.829, Poisson replace-one 2.844, the without-replacement pair composed
    in one orientation 13.36) and its RDP accountant for SampledWithoutReplacementDpEvent at noise multiplier
    sigma/2 (its replace-one sensitivity convention): 20.99, an upper bound mechkit must not exceed."""
    g = mk.gaussian(1.0)
    cases = {("poisson", "add_remove"): 1.829, ("poisson", "replace_one"): 2.844}
    for (scheme, relation), ref in cases.items():
        est = mk.compose((mk.subsample(g, 0.01, scheme=scheme, relation=relation), 1000)).epsilon(1e-5)
        assert est.lower - 0.005 <= ref <= est.upper + 0.005
    wor = mk.compose((mk.subsample(g, 0.01, scheme="without_replacement", relation="replace_one"), 1000))
    est = wor.epsilon(1e-5)
    assert est.certified and est.lower <= 13.36 + 0.005 <= est.upper + 0.01
    assert est.upper < 20.99
    assert est.lower > 13.3  # the attained composition: far above Poisson's


def _zhu_dong_wang_pair(sigma, n):
    """The record at 1 against -1 with every other record at -1, batch size 1 of n, Gaussian noise 2 sigma."""
    d, d2 = (1.0,) + (-1.0,) * (n - 1), (-1.0,) * n
    return (bf.output(d, "without_replacement", 1, "gaussian", 2 * sigma),
            bf.output(d2, "without_replacement", 1, "gaussian", 2 * sigma))


def test_monotone_two_run_reference_is_the_brute_force():
    """The vectorised two-run reference (a monotone privacy loss in the second run) against the nested brute force,
    in both orientations and the mixed one; the other mixed order (the runs swapped) is the same divergence; a
    second pair with a non-monotone loss is refused."""
    for sigma, n, eps, orient in [(3.0, 2, 0.0, "pp"), (1.0, 5, 0.3, "qq"), (0.6, 12, 1.0, "mixed")]:
        p, q = _zhu_dong_wang_pair(sigma, n)
        first, second = {"pp": ((p, q), (p, q)), "qq": ((q, p), (q, p)), "mixed": ((p, q), (q, p))}[orient]
        fast = bf.two_run_delta_monotone(first, second, eps)
        assert fast > 1e-3
        assert fast == pytest.approx(bf.two_run_delta(first, second, eps), rel=1e-9, abs=0)
        if orient == "mixed":
            assert bf.two_run_delta_monotone(second, first, eps) == pytest.approx(fast, rel=1e-12, abs=0)
    bump = bf.Mixture({-2.0: 0.5, 2.0: 0.5}, "gaussian", 1.0), bf.Mixture({0.0: 1.0}, "gaussian", 1.0)
    with pytest.raises(ValueError, match="not monotone"):
        bf.two_run_delta_monotone((p, q), bump, 0.5)


@given(sigma=st.floats(0.6, 3.0), n=st.integers(2, 12), eps=st.sampled_from([0.0, 0.3, 1.0]))
def test_random_without_replacement_upper_bounds_hold_both_orientations(sigma, n, eps):
    """The record at 1 against -1 with every other record at -1, batch size 1 of n: per run the pair of Zhu, Dong
    and Wang; two runs in the same and in opposite orientations; the certified upper bound holds both (the
    vectorised two-run reference, checked against the brute force above)."""
    p, q = _zhu_dong_wang_pair(sigma, n)
    truth = max(bf.two_run_delta_monotone((p, q), (p, q), eps), bf.two_run_delta_monotone((q, p), (q, p), eps),
                bf.two_run_delta_monotone((p, q), (q, p), eps))
    m = mk.subsample(mk.gaussian(sigma, 0.5), 1.0 / n, scheme="without_replacement", relation="replace_one")
    est = mk.compose((m, 2)).delta(eps)
    assert truth <= est.upper * (1 + 1e-9) + 1e-12


def test_relations_are_data_and_compositions_refuse_to_mix_them():
    g = mk.gaussian(1.0)
    r = mk.replace_one(g)
    assert "replace_one" in repr(r) and "replace_one" not in repr(g)
    with pytest.raises(ParameterError, match="cannot mix neighbouring relations"):
        mk.compose(g, r)
    w = mk.subsample(g, 0.1, scheme="without_replacement", relation="replace_one")
    c = mk.compose(r, (w, 3))
    assert c.relation == "replace_one" and c.one_sided
    assert not mk.compose(w).one_sided  # one run: the pair's own curve, exact
    assert mk.compose(g, g).relation == "add_remove" and len(mk.compose(g, g)) == 1


@pytest.mark.parametrize("call, match", [
    (lambda: mk.subsample(mk.gaussian(1.0), 0.1, scheme="with_replacement"), "scheme must be one of"),
    (lambda: mk.subsample(mk.gaussian(1.0), 0.1, relation="substitution"), "relation must be one of"),
    (lambda: mk.subsample(mk.gaussian(1.0), 0.1, scheme="without_replacement"), "fixed size"),
    (lambda: mk.subsample(mk.replace_one(mk.gaussian(1.0)), 0.1), "needs the mechanism's add/remove pair"),
    (lambda: mk.subsample(mk.replace_one(mk.gaussian(1.0)), 0.1, relation="replace_one"), "additive-noise"),
    (lambda: mk.subsample(mk.randomized_response(1.0), 0.1, relation="replace_one"), "symmetric about 0"),
    (lambda: mk.replace_one(mk.randomized_response(1.0)), "symmetric about 0"),
    (lambda: mk.subsample(mk.subsample(mk.gaussian(1.0), 0.5, scheme="without_replacement",
                                       relation="replace_one"), 0.5), "already subsampled"),
    (lambda: mk.subsample(mk.gaussian(1.0), 0.0, relation="replace_one"), "q"),
])
def test_combinations_that_do_not_exist_are_refused(call, match):
    with pytest.raises(ParameterError, match=match):
        call()


def test_a_declared_relation_is_checked_and_kept():
    with pytest.raises(SpecificationError, match="relation must be one of"):
        mk.Mechanism.from_densities("exp(-(x-1)**2/2)/sqrt(2*pi)", "exp(-x**2/2)/sqrt(2*pi)", "x",
                                    relation="swap")
    fam = mk.Mechanism.from_densities("exp(-(x-1)**2/2)/sqrt(2*pi)", "exp(-(x+1)**2/2)/sqrt(2*pi)", "x",
                                      relation="replace_one")
    m = fam()
    assert m.relation == "replace_one"
    assert abs(m.delta(0.5) - _analytic_gaussian_delta(2.0, 0.5)) < 1e-12
    # a user's replace-one pair is subsampled without replacement from its own pair
    w = mk.subsample(m, 0.25, scheme="without_replacement", relation="replace_one")
    ref = mk.subsample(mk.gaussian(1.0), 0.25, scheme="without_replacement", relation="replace_one")
    assert abs(w.delta(0.5) - ref.delta(0.5)) < 1e-10


def test_subsampled_binds_only_the_subsampled_pair():
    """transforms.subsampled(family, q, **params) is subsample(family(**params), q): the same family, parameters and
    answers, without binding the unsampled pair (the command line's subsampled-NAME and mk.dpsgd use it)."""
    from mechkit.transforms import subsampled

    fam = mk.catalog("laplace").family
    a = subsampled(fam, 0.1, scheme="poisson", relation="add_remove", scale=2.0)
    b = mk.subsample(fam(scale=2.0), 0.1)
    assert a.family is b.family and a.params == b.params and a.delta(0.5) == b.delta(0.5)
    with pytest.raises(mk.ParameterError, match="q"):
        subsampled(fam, 1.5, scale=2.0)
    with pytest.raises(mk.ParameterError, match="scale"):
        subsampled(fam, 0.1, scale=-1.0)
