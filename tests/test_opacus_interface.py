"""mechkit.opacus.MechkitAccountant (issue 22): Opacus's accountant interface without torch, answered by the
certified composition of the recorded phases; compared with mk.dpsgd directly and, for a full-batch run, with the
closed-form Gaussian (k steps of sigma: mu = sqrt(k) / sigma GDP)."""
from __future__ import annotations

import math

import pytest
from scipy import optimize, special

import mechkit as mk
from mechkit.errors import ParameterError
from mechkit.opacus import MechkitAccountant


def test_history_and_epsilon_match_the_composition():
    acc = MechkitAccountant()
    assert acc.mechanism() == "mechkit" and len(acc) == 0 and acc.get_epsilon(1e-5) == 0.0
    for _ in range(300):
        acc.step(noise_multiplier=1.0, sample_rate=0.01)
    for _ in range(100):
        acc.step(noise_multiplier=0.8, sample_rate=0.02)
    assert acc.history == [(1.0, 0.01, 300), (0.8, 0.02, 100)] and len(acc) == 2
    run = mk.compose(mk.dpsgd(1.0, 0.01, 300), mk.dpsgd(0.8, 0.02, 100))
    est = run.epsilon(1e-5)
    assert acc.get_epsilon(1e-5) == est.upper and float(acc.get_estimate(1e-5)) == float(est)
    state = acc.state_dict()
    other = MechkitAccountant()
    other.load_state_dict(state)
    assert other.history == acc.history and other.get_epsilon(1e-5) == acc.get_epsilon(1e-5)


def test_full_batch_against_the_closed_form():
    acc = MechkitAccountant()
    for _ in range(16):
        acc.step(noise_multiplier=4.0, sample_rate=1.0)
    mu = math.sqrt(16) / 4.0

    def delta(e):
        return special.ndtr(-e / mu + mu / 2) - math.exp(e) * special.ndtr(-e / mu - mu / 2)
    truth = optimize.brentq(lambda e: delta(e) - 1e-6, 0.0, 50.0)
    est = acc.get_estimate(1e-6)
    assert est.lower <= truth <= est.upper == acc.get_epsilon(1e-6)


def test_no_noise_no_sampling_and_bad_input():
    acc = MechkitAccountant()
    acc.step(noise_multiplier=1.0, sample_rate=0.0)
    assert acc.get_epsilon(1e-5) == 0.0
    acc.step(noise_multiplier=0.0, sample_rate=0.1)
    assert acc.get_epsilon(1e-5) == math.inf
    with pytest.raises(ParameterError, match="sample_rate"):
        acc.step(noise_multiplier=1.0, sample_rate=1.5)
    assert len(acc) == 2  # the refused step left the history as it was
    with pytest.raises(ParameterError, match="mechanism"):
        acc.load_state_dict({"history": [], "mechanism": "rdp"})
    with pytest.raises(ParameterError, match="malformed"):
        acc.load_state_dict({"history": [(1.0, 0.1)], "mechanism": "mechkit"})
    assert len(acc) == 2


def test_optimizer_hook_steps_like_opacus():
    acc = MechkitAccountant()

    class Optim:  # the two attributes Opacus's DPOptimizer gives the hook
        noise_multiplier, accumulated_iterations = 1.2, 1

    hook = acc.get_optimizer_hook_fn(sample_rate=0.05)
    hook(Optim())
    hook(Optim())
    assert acc.history == [(1.2, 0.05, 2)]
