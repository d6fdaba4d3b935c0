"""Optional (``pip install "mechkit[peers]"``): ``mk.calibrate`` on Poisson-subsampled DP-SGD against an
independent implementation, dp_accounting's privacy-loss distributions of the subsampled Gaussian
(``from_gaussian_mechanism``, connect-the-dots, value discretisation 1e-4).  Its *optimistic* PLD lower-bounds
the true epsilon, its *pessimistic* one upper-bounds it (up to its own numerics): mechkit's calibrated noise is
safe where the optimistic epsilon at it is within the target (a larger one would prove the true epsilon above
the target), and tight where the pessimistic epsilon one tolerance below it is above the target less the
certified width mechkit pays (eps_error 0.01 on each side, 0.03 allowed)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mechkit as mk

pld = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")

DELTA = 1e-5


def _dp_epsilon(sigma, q, steps, pessimistic):
    one = pld.from_gaussian_mechanism(sigma, sampling_prob=q, pessimistic_estimate=pessimistic,
                                      value_discretization_interval=1e-4)
    return one.self_compose(steps).get_epsilon_for_delta(DELTA)


@settings(max_examples=12, deadline=None)
@given(q=st.sampled_from([0.004, 0.01, 0.03]), steps=st.integers(100, 3000), eps=st.floats(0.8, 6.0))
def test_calibrated_noise_is_safe_and_tight_by_dp_accounting(q, steps, eps):
    cal = mk.calibrate(lambda s: mk.dpsgd(noise_multiplier=s, sampling_rate=q, steps=steps), epsilon=eps,
                       delta=DELTA, bounds=(0.3, 30.0), progress=False)
    assert cal.estimate.upper <= eps < cal.neighbour_upper
    assert _dp_epsilon(cal.value, q, steps, pessimistic=False) <= eps + 1e-9                 # safe
    assert _dp_epsilon(cal.neighbour, q, steps, pessimistic=True) >= eps - 0.03               # tight
    assert cal.evaluations <= 8
