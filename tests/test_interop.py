"""mechkit.interop.from_dp_event (issue 22), without dp_accounting: events are read by class name and fields, so
stand-ins with dp_accounting's names and fields exercise the translation here (tests/test_peers.py compares the
numbers with dp_accounting's accountants where it is installed).  References: the compositions the events describe,
built with mechkit's own API, and the closed-form Gaussian."""
from __future__ import annotations

import dataclasses
import math

import pytest
from scipy import optimize, special

import mechkit as mk
from mechkit.errors import ParameterError
from mechkit.interop import from_dp_event


def _event(name, *fields):
    return dataclasses.make_dataclass(name, list(fields))


GaussianDpEvent = _event("GaussianDpEvent", "noise_multiplier")
LaplaceDpEvent = _event("LaplaceDpEvent", "noise_multiplier")
DiscreteLaplaceDpEvent = _event("DiscreteLaplaceDpEvent", "noise_parameter", "sensitivity")
RandomizedResponseDpEvent = _event("RandomizedResponseDpEvent", "noise_parameter", "num_buckets")
MixtureOfGaussiansDpEvent = _event("MixtureOfGaussiansDpEvent", "standard_deviation", "sensitivities",
                                   "sampling_probs")
PoissonSampledDpEvent = _event("PoissonSampledDpEvent", "sampling_probability", "event")
SampledWithoutReplacementDpEvent = _event("SampledWithoutReplacementDpEvent", "source_dataset_size", "sample_size",
                                          "event")
SelfComposedDpEvent = _event("SelfComposedDpEvent", "event", "count")
ComposedDpEvent = _event("ComposedDpEvent", "events")
NoOpDpEvent = _event("NoOpDpEvent")
NonPrivateDpEvent = _event("NonPrivateDpEvent")
ZCDpEvent = _event("ZCDpEvent", "rho", "xi")


def _same(run, other):
    a = sorted((m.family.key, m.relation, tuple(m.theta.tolist()), c) for m, c in run.items)
    b = sorted((m.family.key, m.relation, tuple(m.theta.tolist()), c) for m, c in other.items)
    return a == b


def test_events_become_the_compositions_they_describe():
    sgd = SelfComposedDpEvent(PoissonSampledDpEvent(0.01, GaussianDpEvent(0.8)), 1000)
    assert _same(from_dp_event(sgd), mk.dpsgd(0.8, 0.01, 1000))
    assert _same(from_dp_event(sgd, "REPLACE_ONE"), mk.dpsgd(0.8, 0.01, 1000, relation="replace_one"))
    wor = SelfComposedDpEvent(SampledWithoutReplacementDpEvent(1000, 10, GaussianDpEvent(1.0)), 50)
    assert _same(from_dp_event(wor, "REPLACE_ONE"),
                 mk.dpsgd(1.0, batch_size=10, dataset_size=1000, steps=50, sampling="without_replacement"))
    mixed = ComposedDpEvent([SelfComposedDpEvent(LaplaceDpEvent(3.0), 10), GaussianDpEvent(2.0), NoOpDpEvent(),
                             SelfComposedDpEvent(DiscreteLaplaceDpEvent(0.5, 2), 5)])
    assert _same(from_dp_event(mixed), mk.compose((mk.laplace(3.0), 10), mk.gaussian(2.0),
                                                  (mk.discrete_laplace(2.0, sensitivity=2), 5)))
    mog = MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0], [0.5, 0.5])
    assert _same(from_dp_event(mog), mk.compose(mk.gaussian_mixture(1.0, [0.0, 1.0], [0.5, 0.5])))
    rr = ComposedDpEvent([RandomizedResponseDpEvent(0.5, 4)] * 3)
    special_run = from_dp_event(rr, "REPLACE_SPECIAL")
    assert _same(special_run, mk.compose((mk.k_ary_randomized_response_special(0.5, 4), 3)))
    assert from_dp_event(rr, "replace_one").relation == "replace_one"
    lap_special = from_dp_event(SelfComposedDpEvent(PoissonSampledDpEvent(0.1, LaplaceDpEvent(2.0)), 4),
                                "REPLACE_SPECIAL")
    assert lap_special.relation == "replace_special"


def test_replace_one_gaussian_against_the_closed_form():
    run = from_dp_event(SelfComposedDpEvent(GaussianDpEvent(4.0), 9), "REPLACE_ONE")
    mu = 2 * math.sqrt(9) / 4.0  # the noise shifted by +-1: twice the contribution bound

    def delta(e):
        return special.ndtr(-e / mu + mu / 2) - math.exp(e) * special.ndtr(-e / mu - mu / 2)
    truth = optimize.brentq(lambda e: delta(e) - 1e-5, 0.0, 60.0)
    est = run.epsilon(1e-5)
    assert est.lower <= truth <= est.upper


@pytest.mark.parametrize("event, relation, match", [
    (NonPrivateDpEvent(), "ADD_OR_REMOVE_ONE", "NonPrivateDpEvent cannot be expressed"),
    (ZCDpEvent(0.5, 0.0), "ADD_OR_REMOVE_ONE", "ZCDpEvent cannot be expressed"),
    (RandomizedResponseDpEvent(0.5, 4), "ADD_OR_REMOVE_ONE", "replace-one or replace-special"),
    (SampledWithoutReplacementDpEvent(100, 10, GaussianDpEvent(1.0)), "ADD_OR_REMOVE_ONE", "under replace-one"),
    (NoOpDpEvent(), "ADD_OR_REMOVE_ONE", "nothing to account"),
    (GaussianDpEvent(1.0), "SUBSTITUTE", "relation must be one of"),
    (PoissonSampledDpEvent(0.1, SelfComposedDpEvent(GaussianDpEvent(1.0), 2)), "ADD_OR_REMOVE_ONE",
     "single mechanism"),
])
def test_what_cannot_be_expressed_is_named(event, relation, match):
    with pytest.raises(ParameterError, match=match):
        from_dp_event(event, relation)


def test_to_pld_checks_its_arguments_and_names_the_extra(monkeypatch):
    import builtins

    from mechkit.interop import to_pld
    with pytest.raises(ParameterError, match="value_discretization_interval"):
        to_pld(mk.gaussian(1.0), value_discretization_interval=-1.0)
    with pytest.raises(ParameterError, match="tail_mass"):
        to_pld(mk.gaussian(1.0), tail_mass=0.5)
    real_import = builtins.__import__

    def no_dp_accounting(name, *args, **kwargs):
        if name.startswith("dp_accounting"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_dp_accounting)
    with pytest.raises(ParameterError, match=r"mechkit\[interop\]"):
        to_pld(mk.gaussian(1.0))
