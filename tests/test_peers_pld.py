"""mechkit.interop.from_pld (issue 22) round trips with dp_accounting's PLDs.  Optional, like tests/test_peers.py:
skipped unless dp_accounting is installed (``pip install "mechkit[peers]"``).

* ``from_pld(to_pld(run))`` for a DP-SGD run and a Laplace composition: the mechanism's one-shot delta(eps) and
  epsilon(delta) are the PLD's own ``get_delta_for_epsilon`` / ``get_epsilon_for_delta`` (both are the same finite
  sums; measured: delta to 3e-15 absolute, epsilon to 2e-11), and stay above mechkit's certified lower bound of the
  original run (to_pld is pessimistic; measured above its upper bound by at most the rounding of k steps, k * 1e-4).
* ``from_pld`` of dp_accounting's own PLDs (Gaussian, Laplace, subsampled Gaussian, randomized response): the same
  one-shot agreement, and k-fold compositions in mechkit (the certified FFT) hold ``pld.self_compose(k)``'s epsilon
  and delta in their certified intervals (both compose the same PMF; dp_accounting truncates 1e-15 of tail mass).
"""
from __future__ import annotations

import pytest

import mechkit as mk

DELTAS = (1e-3, 1e-5, 1e-7)
EPSILONS = (0.0, 0.5, 1.0, 2.0, 4.0)
SLACK = 1e-9


def _modules():
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as P

    from mechkit.interop import from_pld, to_pld

    return P, from_pld, to_pld


def assert_same_one_shot(m, pld):
    for eps in EPSILONS:
        theirs = pld.get_delta_for_epsilon(eps)
        # the PMF's negative FFT noise (~1e-18 an entry) is set to 0 by from_pld: at most ~1e-13 in all
        assert m.delta(eps) == pytest.approx(theirs, rel=1e-9, abs=1e-12), eps
    for d in DELTAS:
        # dp_accounting steps its losses down by repeated subtraction (itertools.count): ~1e-11 of drift
        assert m.epsilon(d) == pytest.approx(pld.get_epsilon_for_delta(d), rel=1e-10, abs=1e-9), d


@pytest.mark.parametrize("label", ["dpsgd", "laplace"])
def test_from_pld_of_to_pld_is_the_pld_and_stays_pessimistic(label):
    _, from_pld, to_pld = _modules()
    run = {"dpsgd": lambda: mk.dpsgd(0.8, 0.01, 1000), "laplace": lambda: mk.compose((mk.laplace(2.0), 20))}[label]()
    pld = to_pld(run)
    m = from_pld(pld)
    assert m.two_pairs  # to_pld writes both directions
    assert_same_one_shot(m, pld)
    slack = run.total_count * 1e-4  # to_pld rounds each step's loss up by less than one interval
    for d in DELTAS:
        est = run.epsilon(d, method="fft")
        assert est.lower - SLACK <= m.epsilon(d) <= est.upper + slack, (d, est, m.epsilon(d))
    for eps in EPSILONS[1:]:
        assert m.delta(eps) >= run.delta(eps, method="fft").lower - SLACK


@pytest.mark.parametrize("case", ["gaussian", "laplace", "subsampled_gaussian", "randomized_response"])
def test_from_pld_of_dp_accountings_plds_composes_as_self_compose(case):
    P, from_pld, _ = _modules()
    pld, k = {"gaussian": lambda: (P.from_gaussian_mechanism(1.0), 10),
              "laplace": lambda: (P.from_laplace_mechanism(2.0), 20),
              "subsampled_gaussian": lambda: (P.from_gaussian_mechanism(0.8, sampling_prob=0.01), 1000),
              "randomized_response": lambda: (P.from_randomized_response(0.5, 4), 50)}[case]()
    m = from_pld(pld)
    assert_same_one_shot(m, pld)
    composed = pld.self_compose(k)
    run = mk.compose((m, k))
    est = run.epsilon(1e-5, method="fft")
    theirs = composed.get_epsilon_for_delta(1e-5)
    assert est.lower - SLACK <= theirs <= est.upper + SLACK, (case, est, theirs)
    est = run.delta(1.0, method="fft")
    theirs = composed.get_delta_for_epsilon(1.0)
    assert est.lower - SLACK <= theirs <= est.upper + SLACK, (case, est, theirs)
