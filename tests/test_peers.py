"""mechkit's certified intervals against peer accountants: Google's dp_accounting (PLD accountant) and Microsoft's
prv_accountant.  Optional: ``pip install "mechkit[peers]"``; each test skips cleanly (pytest.importorskip) when its
peer is not installed.

The same queries go to mechkit (``mk.compose(...).epsilon(DELTA, eps_error=0.01, delta_error=1e-10)``, a certified
[lower, upper] of width 0.02 to 0.034) and to the peers:

* DP-SGD: Poisson-subsampled Gaussian, noise 0.8 and 2.0, q = 0.01, 1000 and 10000 steps;
* Laplace composition (sensitivity 1, scale 1 and 5; 10 and 100 steps);
* randomized response with eps0 = 0.5 and 0.1 (100 and 1000 steps): dp_accounting's ``RandomizedResponseDpEvent``
  with two buckets and noise p = 2 / (1 + e^eps0) (relation REPLACE_ONE, the only one it accepts; the pair is
  RR's), and prv_accountant's ``PureDPMechanism(eps0)``, whose loss is RR's two atoms +-eps0.

What is asserted (tolerances documented per peer):

* soundness across implementations: a peer's *pessimistic* epsilon (dp_accounting's ``get_epsilon``, prv's upper
  bound) is at least mechkit's certified lower bound (1e-9 slack): both claim to bound the same truth;
* dp_accounting (pessimistic PLD, value_discretization_interval 1e-4): its epsilon lies in mechkit's interval,
  up to how much its discretisation may overstate: the subsampled Gaussian uses "connect the dots" (measured
  within 1e-4 of mechkit's estimate; no extra tolerance), Laplace and RR round each step's loss up by less than one
  interval, so their epsilon may exceed the truth by up to k * 1e-4 (measured: 0.069 at RR 0.5 x 1000);
* prv_accountant (eps_error 0.01, delta_error 1e-10): its interval intersects mechkit's, and its estimate, which it
  certifies to within its eps_error of the truth, lies in mechkit's interval widened by that 0.01.  (mechkit's
  FFT composer follows the same paper (Gopi et al.) as prv_accountant, and their numbers agree to ~1e-4; the
  dp_accounting comparison is the more independent one.)

Where a peer is wrong or refuses, the case is an xfail(strict=True) naming the reason (a fixed peer turns it into
an XPASS failure, to be updated).  Values when written (dp_accounting 0.6.0, prv_accountant 0.2.0; eps at 1e-5;
truths from tests/references: lattice.py for Laplace and RR, exact or bracketed):

 query                 mechkit [lower, value, upper]     dp_accounting  prv [lower, est, upper]         truth
 DP-SGD 0.8 x 1000     3.13101   3.14102   3.15102     3.14102        3.13101  3.14102  3.15102
 DP-SGD 0.8 x 10000    10.04358  10.05364  10.06369    10.05366       10.04365 10.05365 10.06366
 DP-SGD 2.0 x 1000     0.61204   0.62204   0.63204     0.62205        0.61204  0.62204  0.63204
 DP-SGD 2.0 x 10000    2.15269   2.16271   2.17272     2.16277        2.15271  2.16271  2.17271
 Laplace 1 x 10        9.97757   9.98758   9.99758     9.98996        9.97758  9.98758  9.99758     9.98995-9.98997
 Laplace 1 x 100       68.23927  68.24928  68.25930    68.25295       68.23927 68.24928 68.25930
 Laplace 5 x 10        1.98093   1.99093   2.00000     1.98996        1.98093  1.99093  2.00093     1.98996
 Laplace 5 x 100       9.36881   9.37881   9.38882     9.38192        9.36878  9.37879  9.38879     9.38150-9.38233
 RR 0.5 x 100          31.16572  31.17583  31.18595    0.50008 (*)    31.16582 31.17584 31.18586    31.17286
                                                       31.18108 (**)
 RR 0.5 x 1000         186.10361 186.12080 186.13793   0.50008 (*)    RuntimeError (***)            186.12063
                                                       186.18937 (**)
 RR 0.1 x 1000         17.77228  17.78251  17.79274    0.10008 (*)    17.77250 17.78251 17.79252    17.78713
                                                       17.84619 (**)

(*) ``PLDAccountant.compose(RandomizedResponseDpEvent, count=k)`` composes the event once: dp_accounting 0.6.0's
``_maybe_compose`` ignores ``count`` for randomized response (also through ``SelfComposedDpEvent``), so it
reports the one-step epsilon ~eps0 for any k: wrong (below the truth and mechkit's lower bound).  (**) The same
event composed k times, one call each: correct and pessimistic.  (***) prv_accountant raises "Discrete mean differs
from continuous mean significantly." for RR 0.5 x 1000 (a refusal, not a wrong number).
"""
from __future__ import annotations

import functools
import math

import pytest

import mechkit as mk

DELTA = 1e-5
EE, DE = 0.01, 1e-10          # mechkit's and prv_accountant's eps_error / delta_error
DP_INTERVAL = 1e-4            # dp_accounting's default value_discretization_interval
SLACK = 1e-9

DP_SGD = [(0.8, 1000), (0.8, 10000), (2.0, 1000), (2.0, 10000)]
LAPLACE = [(1.0, 10), (1.0, 100), (5.0, 10), (5.0, 100)]
RR = [(0.5, 100), (0.5, 1000), (0.1, 1000)]

DP_RR_COUNT_BUG = ("dp_accounting 0.6.0: PLDAccountant._maybe_compose composes a RandomizedResponseDpEvent once and "
                   "ignores count (eps(1e-5) of RR 0.5 x 100 reported as 0.50008; truth 31.17286)")
PRV_RR_REFUSES = ("prv_accountant 0.2.0 refuses RR 0.5 x 1000: RuntimeError 'Discrete mean differs from continuous "
                  "mean significantly.'")


@functools.lru_cache(maxsize=None)
def mechkit_eps(kind, a, k):
    mech = {"dpsgd": lambda: mk.subsample(mk.gaussian(a), 0.01), "laplace": lambda: mk.laplace(a),
            "rr": lambda: mk.randomized_response(a)}[kind]()
    e = mk.compose((mech, k)).epsilon(DELTA, eps_error=EE, delta_error=DE)
    # Theorem 5.5 allows 4 eps_error plus the delta shift (RR 0.5 x 1000: width 0.034, the true curve's shift 2e-4)
    assert e.certified and e.upper - e.lower < 4 * EE + 1e-3
    return e.lower, float(e), e.upper


def check_dp_accounting(kind, a, k, eps, tol):
    lower, _, upper = mechkit_eps(kind, a, k)
    assert eps >= lower - SLACK, f"dp_accounting's pessimistic epsilon {eps} is below mechkit's lower bound {lower}"
    assert eps <= upper + tol + SLACK, f"dp_accounting {eps} above mechkit's upper bound {upper} + {tol}"


def check_prv(kind, a, k, prv_bounds):
    lower, _, upper = mechkit_eps(kind, a, k)
    p_lo, p_est, p_up = prv_bounds
    assert p_up >= lower - SLACK, f"prv's upper bound {p_up} is below mechkit's lower bound {lower}"
    assert p_lo <= upper + SLACK, f"prv's lower bound {p_lo} is above mechkit's upper bound {upper}"
    assert lower - EE - SLACK <= p_est <= upper + EE + SLACK, (lower, p_est, upper)


def dp_epsilon(event, k, relation="ADD_OR_REMOVE_ONE", one_by_one=False):
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant(getattr(dpa.NeighboringRelation, relation))
    if one_by_one:
        for _ in range(k):
            acc.compose(event)
    else:
        acc.compose(event, k)
    return acc.get_epsilon(DELTA)


def prv_epsilon(prv, k):
    prv_accountant = pytest.importorskip("prv_accountant")
    acc = prv_accountant.PRVAccountant(prvs=[prv], max_self_compositions=[k], eps_error=EE, delta_error=DE)
    return acc.compute_epsilon(DELTA, [k])


def _prvs():
    pytest.importorskip("prv_accountant")
    from prv_accountant import privacy_random_variables

    return privacy_random_variables


def _dpa():
    return pytest.importorskip("dp_accounting")


# ------------------------------------------------------------------------------------------------------- DP-SGD

@pytest.mark.parametrize("noise,steps", DP_SGD)
def test_dp_sgd_against_dp_accounting(noise, steps):
    dpa = _dpa()
    eps = dp_epsilon(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(noise)), steps)
    check_dp_accounting("dpsgd", noise, steps, eps, tol=0.0)


@pytest.mark.parametrize("noise,steps", DP_SGD)
def test_dp_sgd_against_prv_accountant(noise, steps):
    prvs = _prvs()
    check_prv("dpsgd", noise, steps, prv_epsilon(prvs.PoissonSubsampledGaussianMechanism(0.01, noise), steps))


# ------------------------------------------------------------------------------------------------------ Laplace

@pytest.mark.parametrize("scale,steps", LAPLACE)
def test_laplace_against_dp_accounting(scale, steps):
    dpa = _dpa()
    eps = dp_epsilon(dpa.LaplaceDpEvent(scale), steps)
    check_dp_accounting("laplace", scale, steps, eps, tol=steps * DP_INTERVAL)


@pytest.mark.parametrize("scale,steps", LAPLACE)
def test_laplace_against_prv_accountant(scale, steps):
    prvs = _prvs()
    check_prv("laplace", scale, steps, prv_epsilon(prvs.LaplaceMechanism(1.0 / scale), steps))


# ------------------------------------------------------------------------------------------- randomized response

def _rr_event(eps0):
    dpa = _dpa()
    return dpa.RandomizedResponseDpEvent(noise_parameter=2.0 / (1.0 + math.exp(eps0)), num_buckets=2)


@pytest.mark.parametrize("eps0,steps", [
    pytest.param(e, k, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=DP_RR_COUNT_BUG))
    for e, k in RR])
def test_randomized_response_against_dp_accounting_with_count(eps0, steps):
    eps = dp_epsilon(_rr_event(eps0), steps, relation="REPLACE_ONE")
    check_dp_accounting("rr", eps0, steps, eps, tol=steps * DP_INTERVAL)


@pytest.mark.parametrize("eps0,steps", RR)
def test_randomized_response_against_dp_accounting_one_by_one(eps0, steps):
    eps = dp_epsilon(_rr_event(eps0), steps, relation="REPLACE_ONE", one_by_one=True)
    check_dp_accounting("rr", eps0, steps, eps, tol=steps * DP_INTERVAL)


@pytest.mark.parametrize("eps0,steps", [
    pytest.param(e, k, marks=pytest.mark.xfail(strict=True, raises=RuntimeError, reason=PRV_RR_REFUSES))
    if (e, k) == (0.5, 1000) else (e, k) for e, k in RR])
def test_randomized_response_against_prv_accountant(eps0, steps):
    prvs = _prvs()
    check_prv("rr", eps0, steps, prv_epsilon(prvs.PureDPMechanism(eps0), steps))


# ------------------------------------------------------------------------ relations and sampling schemes (issue 20)

RELATION_CASES = [(1.0, 0.01, 100), (1.0, 0.01, 1000), (0.8, 0.004, 2000)]


@pytest.mark.parametrize("noise,q,steps", RELATION_CASES)
def test_poisson_replace_one_against_dp_accounting(noise, q, steps):
    """dp_accounting's PLD accountant under REPLACE_ONE composes the symmetric pair of mechkit's
    ``subsample(m, q, relation="replace_one")`` (connect the dots: within 1e-3 of the truth here)."""
    dpa = _dpa()
    event = dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(noise))
    eps = dp_epsilon(event, steps, relation="REPLACE_ONE")
    m = mk.subsample(mk.gaussian(noise), q, relation="replace_one")
    est = mk.compose((m, steps)).epsilon(DELTA, eps_error=0.01, delta_error=1e-10)
    assert est.lower - 1e-3 <= eps <= est.upper + 1e-3


@pytest.mark.parametrize("noise,q,steps", RELATION_CASES)
def test_without_replacement_below_dp_accounting_rdp(noise, q, steps):
    """dp_accounting's RDP accountant for SampledWithoutReplacementDpEvent (Wang, Balle, Kasiviswanathan 2019,
    Theorem 27) is an upper bound; its Gaussian uses alpha / (2 sigma^2), i.e. a noise multiplier relative to the
    replace-one sensitivity, twice the contribution bound: noise / 2.  mechkit's certified upper bound (both
    orientations in every step) must not exceed it, and its lower bound (attained) must not either."""
    dpa = _dpa()
    from dp_accounting.rdp import rdp_privacy_accountant

    n = 100_000
    acc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    event = dpa.SampledWithoutReplacementDpEvent(n, round(q * n), dpa.GaussianDpEvent(noise / 2))
    acc.compose(dpa.SelfComposedDpEvent(event, steps))
    rdp_eps = acc.get_epsilon(DELTA)
    m = mk.subsample(mk.gaussian(noise), q, scheme="without_replacement", relation="replace_one")
    est = mk.compose((m, steps)).epsilon(DELTA)
    assert est.lower <= est.upper <= rdp_eps


# ------------------------------------------------------------------------------------- interop (issue 22)

def _interop_cases(dpa):
    de = dpa.dp_event
    NR = dpa.NeighboringRelation
    psg = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 1000)
    return [
        (psg, NR.ADD_OR_REMOVE_ONE), (psg, NR.REPLACE_ONE), (dpa.GaussianDpEvent(2.0), NR.REPLACE_ONE),
        (dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(3.0), 10), dpa.GaussianDpEvent(2.0)]),
         NR.ADD_OR_REMOVE_ONE),
        (dpa.SelfComposedDpEvent(de.DiscreteLaplaceDpEvent(0.5, 2), 5), NR.ADD_OR_REMOVE_ONE),
        (dpa.SelfComposedDpEvent(de.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0], [0.5, 0.5]), 10),
         NR.ADD_OR_REMOVE_ONE),
        (dpa.ComposedDpEvent([dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(2.0), 5)]
                             + [dpa.RandomizedResponseDpEvent(0.5, 4)] * 5), NR.REPLACE_SPECIAL),
        (dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.05, dpa.LaplaceDpEvent(2.0)), 100),
         NR.ADD_OR_REMOVE_ONE),
    ]


def test_from_dp_event_against_dp_accounting():
    """The same DpEvent to both: dp_accounting's PLD accountant (value discretisation 1e-4, pessimistic) and
    mechkit.interop.from_dp_event; dp_accounting's epsilon lies in mechkit's certified interval up to its
    discretisation (k steps of rounding up to 1e-4 each, as for the Laplace rows above)."""
    dpa = _dpa()
    from dp_accounting.pld import pld_privacy_accountant

    from mechkit.interop import from_dp_event

    for event, relation in _interop_cases(dpa):
        acc = pld_privacy_accountant.PLDAccountant(relation, value_discretization_interval=1e-4)
        acc.compose(event)
        theirs = acc.get_epsilon(DELTA)
        run = from_dp_event(event, relation)
        est = run.epsilon(DELTA)
        slack = run.total_count * 1e-4
        assert est.lower - 1e-9 <= theirs <= est.upper + slack, (event, relation, theirs, est)


@pytest.mark.parametrize("make, ref", [
    (lambda: mk.gaussian(sigma=1.0), lambda P: P.from_gaussian_mechanism(1.0)),
    (lambda: mk.laplace(scale=1.0), lambda P: P.from_laplace_mechanism(1.0)),
    (lambda: mk.subsample(mk.gaussian(sigma=1.0), 0.1), lambda P: P.from_gaussian_mechanism(1.0, sampling_prob=0.1)),
])
def test_to_pld_is_pessimistic_and_matches_dp_accountings_directions(make, ref):
    """mechkit.interop.to_pld: each direction's PLD delta is at least mechkit's exact one-shot delta and at most the
    exact delta at eps - h (losses rounded up by at most h = 1e-4, the tails put at +inf); the remove and add PMFs are
    dp_accounting's (its own PLDs of the same mechanisms agree with the exact values to 1e-6)."""
    _dpa()
    from dp_accounting.pld import privacy_loss_distribution as P

    from mechkit.interop import to_pld
    m, theirs = make(), ref(P)
    pld = to_pld(m)
    for eps in (0.0, 0.3, 1.0, 2.0):
        for mine, other, direction in ((pld._pmf_remove, theirs._pmf_remove, "remove"),
                                       (pld._pmf_add, theirs._pmf_add, "add")):
            exact = m.delta(eps, direction=direction)
            got = mine.get_delta_for_epsilon(eps)
            # losses rounded up by at most h: delta(eps) <= got <= delta(eps - h) + the tail mass put at +inf
            assert exact <= got <= m.delta(eps - 1e-4, direction=direction) + 2e-15, (direction, eps, got, exact)
            assert other.get_delta_for_epsilon(eps) == pytest.approx(exact, rel=1e-6, abs=1e-12)


def test_to_pld_of_a_composition_bounds_mechkits_certified_interval_from_above():
    _dpa()
    from mechkit.interop import to_pld
    run = mk.compose((mk.subsample(mk.gaussian(sigma=1.0), 0.1), 50), (mk.laplace(scale=20.0), 3))
    est = run.epsilon(1e-5, method="fft")
    eps = to_pld(run).get_epsilon_for_delta(1e-5)
    assert est.lower <= eps <= est.upper + 0.01  # pessimistic: above the truth, and close to it
