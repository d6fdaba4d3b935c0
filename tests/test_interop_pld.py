"""mechkit.interop.from_pld (issue 22) without dp_accounting: PLDs are read by attribute, so stand-ins with
dp_accounting's attributes (a PrivacyLossDistribution's ``_pmf_remove``/``_pmf_add``/``_symmetric``; a sparse PMF's
``_loss_probs``, a dense one's ``_lower_loss``/``_probs``; ``_discretization``, ``_infinity_mass``,
``_pessimistic_estimate``) exercise the reading here; tests/test_peers.py checks round trips with dp_accounting's own
PLDs.  Reference: dp_accounting's hockey-stick sum, delta(eps) = inf_mass + sum_{l_i > eps} w_i (1 - e^(eps - l_i)),
and for k-fold compositions the same sum over the k-fold convolution of the PMF (enumerated)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import mechkit as mk
from mechkit.errors import ParameterError
from mechkit.interop import from_pld

H = 0.01


class SparsePLDPmf:
    def __init__(self, loss_probs, infinity_mass=0.0, discretization=H, pessimistic=True):
        self._loss_probs, self._infinity_mass = dict(loss_probs), infinity_mass
        self._discretization, self._pessimistic_estimate = discretization, pessimistic


class DensePLDPmf:
    def __init__(self, lower_loss, probs, infinity_mass=0.0, discretization=H, pessimistic=True):
        self._lower_loss, self._probs, self._infinity_mass = lower_loss, np.asarray(probs, float), infinity_mass
        self._discretization, self._pessimistic_estimate = discretization, pessimistic


class PrivacyLossDistribution:
    def __init__(self, pmf_remove, pmf_add=None):
        self._pmf_remove = pmf_remove
        self._symmetric = pmf_add is None
        self._pmf_add = pmf_remove if pmf_add is None else pmf_add


def dense(sparse):
    lo, hi = min(sparse._loss_probs), max(sparse._loss_probs)
    return DensePLDPmf(lo, [sparse._loss_probs.get(i, 0.0) for i in range(lo, hi + 1)], sparse._infinity_mass)


def hockey(pmf, eps):
    items = pmf._loss_probs.items()
    return pmf._infinity_mass + math.fsum(w * -math.expm1(eps - i * H) for i, w in items if i * H > eps)


# remove: losses -0.3 ... 1.2 with a mass at +inf; add: another law (not the mirror image of remove's pair)
REMOVE = SparsePLDPmf({-30: 0.25, 0: 0.2, 40: 0.3, 70: 0.15, 120: 0.08}, infinity_mass=0.02)
ADD = SparsePLDPmf({-50: 0.1, -10: 0.3, 20: 0.4, 90: 0.2})
EPS = [0.0, 0.1, 0.35, 0.69, 1.0, 1.5]


def test_both_directions_are_the_plds_and_sparse_reads_as_dense():
    m = from_pld(PrivacyLossDistribution(REMOVE, ADD))
    assert m.two_pairs and m.relation == "add_remove" and not m.details["symmetric"]
    assert m.details["remove"] == m.details["add"] == {}  # both are laws of pairs as they are
    for eps in EPS:
        assert m.delta(eps, direction="remove") == pytest.approx(hockey(REMOVE, eps), rel=1e-14, abs=1e-17)
        assert m.delta(eps, direction="add") == pytest.approx(hockey(ADD, eps), rel=1e-14, abs=1e-17)
        assert m.delta(eps) == pytest.approx(max(hockey(REMOVE, eps), hockey(ADD, eps)), rel=1e-14)
    assert m.epsilon(0.3) == 0.0
    for d in (0.2, 0.1, 0.03):
        e = m.epsilon(d)
        assert e > 0
        assert max(hockey(REMOVE, e), hockey(ADD, e)) == pytest.approx(d, rel=1e-9)
    assert m.epsilon(0.01) == math.inf  # below the remove direction's mass at +inf
    vals, probs = m.add.atoms()
    np.testing.assert_allclose(vals, np.array(sorted(ADD._loss_probs)) * H)
    np.testing.assert_allclose(probs, [ADD._loss_probs[i] for i in sorted(ADD._loss_probs)], rtol=1e-15)
    from_dense = from_pld(PrivacyLossDistribution(dense(REMOVE), dense(ADD)))
    assert from_dense.family.key == m.family.key
    assert m.details == {**from_dense.details}


def test_a_symmetric_pld_gives_both_directions_its_law():
    m = from_pld(PrivacyLossDistribution(ADD), relation="REPLACE_ONE", name="sym")
    assert m.details["symmetric"] and m.relation == "replace_one" and m.name == "sym"
    for a, b in zip(m.remove.atoms(), m.add.atoms()):
        np.testing.assert_allclose(a, b, rtol=1e-15)
    for eps in EPS:
        assert m.delta(eps, direction="add") == pytest.approx(m.delta(eps, direction="remove"), rel=1e-14)
        assert m.delta(eps) == pytest.approx(hockey(ADD, eps), rel=1e-14, abs=1e-17)


def test_compositions_compose_each_direction_of_the_pld():
    """mk.compose((from_pld(pld), 3)): the certified FFT interval holds each direction's 3-fold convolution of the
    PLD's PMF (enumerated: what pld.self_compose(3) computes without truncation)."""
    m = from_pld(PrivacyLossDistribution(REMOVE, ADD))
    eps = np.array([0.2, 0.8, 1.6])
    exact = []
    for e in eps:
        per = []
        for pmf in (REMOVE, ADD):
            fin = 1.0 - pmf._infinity_mass
            tuples = itertools.product(pmf._loss_probs.items(), repeat=3)
            s = math.fsum(math.prod(w for _, w in t) * -math.expm1(e - sum(i for i, _ in t) * H)
                          for t in tuples if sum(i for i, _ in t) * H > e)
            per.append(1.0 - fin ** 3 + s)
        exact.append(max(per))
    est = mk.compose((m, 3)).delta(eps, method="fft", eps_error=0.005)
    assert np.all(np.asarray(est.lower) - 1e-12 <= exact) and np.all(np.asarray(exact) <= np.asarray(est.upper) + 1e-12)


def test_what_is_not_a_law_is_made_one_without_changing_delta_at_positive_epsilon():
    """dp_accounting's PMFs carry rounding: negative probabilities (FFT noise), totals a little off 1, and noise at
    very negative losses whose Q = w e^-l sums above 1.  from_pld zeroes the first, takes an excess from the lowest
    losses (<= 0) or puts a deficit at +inf, and rounds the lowest losses up to a loss <= 0 until Q's total is <= 1."""
    # noise at -30 (Q = 1e-12 e^30 ~ 10.7), a negative probability, probabilities summing to 1 exactly
    noisy = SparsePLDPmf({-3000: 1e-12, -20: 0.3, 0: 0.2, 30: 0.3 - 1e-12, 60: 0.2 + 1e-18, 80: -1e-18})
    m = from_pld(PrivacyLossDistribution(noisy))
    notes = m.details["remove"]
    assert notes["negative_probabilities_zeroed"] == pytest.approx(1e-18)
    assert notes["rounded_up_to"] == pytest.approx((-0.2, 1e-12)) and notes["q_total_was"] > 10
    clean = SparsePLDPmf({i: max(w, 0.0) for i, w in noisy._loss_probs.items()})
    for eps in EPS:
        assert m.delta(eps) == pytest.approx(hockey(clean, eps), rel=1e-13, abs=1e-17)
    vals, qs = m.remove.dual.atoms()
    assert qs.sum() == pytest.approx(1.0, abs=1e-15) and vals[0] == -math.inf and qs[0] > 0
    # with no loss <= 0 to round up to but the noise: up to 0
    m = from_pld(PrivacyLossDistribution(SparsePLDPmf({-3000: 1e-12, 30: 0.5, 60: 0.5 - 1e-12})))
    assert m.details["remove"]["rounded_up_to"] == pytest.approx((0.0, 1e-12))
    # a total above 1 loses its excess at the lowest losses; below 1 the rest goes to +inf
    over = SparsePLDPmf({-40: 0.1 + 2e-9, -10: 0.3, 50: 0.6})
    m = from_pld(PrivacyLossDistribution(over))
    assert m.details["remove"]["excess_removed_at_losses_up_to"] == pytest.approx((2e-9, -0.4), rel=1e-6)
    for eps in EPS:
        assert m.delta(eps) == pytest.approx(hockey(over, eps), rel=1e-14)
    under = SparsePLDPmf({-40: 0.1, -10: 0.3, 50: 0.6 - 1e-9}, infinity_mass=1e-10)
    m = from_pld(PrivacyLossDistribution(under))
    assert m.remove.inf_mass == pytest.approx(1e-9, rel=1e-6)
    assert m.delta(2.0) == pytest.approx(1e-9, rel=1e-6)


class NotAPmf:
    _discretization, _infinity_mass = H, 0.0


@pytest.mark.parametrize("pld, match", [
    (object(), "must be a dp_accounting PrivacyLossDistribution"),
    (PrivacyLossDistribution(SparsePLDPmf({0: 1.0}, pessimistic=False)), "pessimistic PLDs only"),
    (PrivacyLossDistribution(NotAPmf()), "neither _loss_probs"),
    (PrivacyLossDistribution(SparsePLDPmf({0: 0.5})), "sum to 0.5"),
    (PrivacyLossDistribution(SparsePLDPmf({0: 0.5, 10: float("nan")})), "not finite"),
    (PrivacyLossDistribution(SparsePLDPmf({10: 0.5, 20: 0.5 + 1e-5})), "more than its mass at losses <= 0"),
])
def test_what_cannot_be_read_is_named(pld, match):
    with pytest.raises(ParameterError, match=match):
        from_pld(pld)


def test_relation_and_composition_with_catalog_mechanisms():
    class NeighboringRelation:  # dp_accounting's enum is read by name
        name = "ADD_OR_REMOVE_ONE"

    m = from_pld(PrivacyLossDistribution(REMOVE, ADD), relation=NeighboringRelation())
    run = mk.compose((m, 2), (mk.laplace(3.0), 2))
    assert run.relation == "add_remove" and len(run) == 2
    est = run.epsilon(0.05, method="fft")
    assert est.certified and est.lower <= float(est) <= est.upper
    with pytest.raises(ParameterError, match="relation"):
        from_pld(PrivacyLossDistribution(REMOVE), relation="neighbours")
