"""The catalog mechanisms of issue 20, each against an independent reference: direct enumeration of the pmfs
(mpmath, the k buckets themselves rather than the catalog's lumped outcomes), closed forms (zCDP, the
(epsilon, delta)-DP pair), and dp_accounting 0.6.0's PLD values (value discretisation 1e-6, pessimistic: a hair
above the truth) where a peer has them."""
from __future__ import annotations

import math

import mpmath
import pytest
from scipy import special

import mechkit as mk
from mechkit.errors import ParameterError

EPS = (0.0, 0.5, 1.0, 3.0)


def _delta_by_enumeration(p, q, eps):
    """sum over outcomes of (p - e^eps q)_+ in mpmath (40 digits)."""
    with mpmath.workdps(40):
        a = mpmath.exp(eps)
        return float(mpmath.fsum(max(pk - a * qk, 0) for pk, qk in zip(p, q)))


def _truncated_dg(sigma, bound, shift):
    with mpmath.workdps(40):
        z = mpmath.fsum(mpmath.exp(-mpmath.mpf(j) ** 2 / (2 * sigma**2)) for j in range(-bound, bound + 1))
        ks = range(-bound - abs(shift), bound + abs(shift) + 1)
        pmf = lambda c: [mpmath.exp(-mpmath.mpf(k - c) ** 2 / (2 * sigma**2)) / z if abs(k - c) <= bound else 0
                         for k in ks]
        return pmf(shift), pmf(0)


@pytest.mark.parametrize("sigma, bound, shift, dpa", [
    (1.0, 5, 1, [0.3989422831220074, 0.20398282019340278, 0.141351351581658, 0.0018492518690817784]),
    (2.0, 3, 2, [0.40681876457757843, 0.2762738548006781, 0.20123420592639202, 0.20123420592639202]),
    (0.7, 10, 1, [0.5698459079101483, 0.4303209106430082, 0.20028307985429702, 0.020699433381503766]),
])
def test_truncated_discrete_gaussian(sigma, bound, shift, dpa):
    m = mk.truncated_discrete_gaussian(sigma, bound, sensitivity=shift)
    p, q = _truncated_dg(sigma, bound, shift)
    for e, ref in zip(EPS, dpa):
        want = max(_delta_by_enumeration(p, q, e), _delta_by_enumeration(q, p, e))
        assert m.delta(e) == pytest.approx(want, rel=1e-10, abs=1e-15)
        assert m.delta(e) == pytest.approx(ref, rel=1e-5)
    assert m.remove.inf_mass > 0 and m.epsilon(m.remove.inf_mass / 2) == math.inf


def _krr(noise, k):
    """The k-bucket output pmfs of randomized response on input 0, on input 1, and on the special input."""
    own, other = 1 - noise + noise / k, noise / k
    x0 = [own] + [other] * (k - 1)
    x1 = [other, own] + [other] * (k - 2)
    return x0, x1, [1.0 / k] * k


@pytest.mark.parametrize("noise, k, dpa_one, dpa_special", [
    (0.5, 4, (32.176597072393065, [0.500000010945737, 0.4189098592089533, 0.2852148011962172, 0.0]),
     (18.313657072393067, [0.37500030728989464, 0.21281979284114907, 0.0, 0.0])),
    (0.1, 2, (58.88877721048629, [0.900000001041678, 0.8675639381824302, 0.814085911408622, 0.0]),
     (43.10222113080374, [0.45000005691379935, 0.4175640112349601, 0.364086031851882, 0.0])),
    (0.9, 10, (9.506405914367194, [0.10000005383526403, 0.041615174396333346, 0.0, 0.0]),
     (7.545134816043667, [0.09000039231706569, 0.025127891696985503, 0.0, 0.0])),
])
def test_k_ary_randomized_response_both_relations(noise, k, dpa_one, dpa_special):
    x0, x1, special_ = _krr(noise, k)
    one = mk.k_ary_randomized_response(noise, k)
    spec = mk.k_ary_randomized_response_special(noise, k)
    assert one.relation == "replace_one" and spec.relation == "replace_special"
    for i, e in enumerate(EPS):
        assert one.delta(e) == pytest.approx(_delta_by_enumeration(x0, x1, e), abs=1e-14)
        want = max(_delta_by_enumeration(x0, special_, e), _delta_by_enumeration(special_, x0, e))
        assert spec.delta(e) == pytest.approx(want, abs=1e-14)
        assert one.delta(e) == pytest.approx(dpa_one[1][i], abs=2e-6)
        assert spec.delta(e) == pytest.approx(dpa_special[1][i], abs=2e-6)
    for m, (ref, _) in ((one, dpa_one), (spec, dpa_special)):
        est = mk.compose((m, 20)).epsilon(1e-6)
        assert est.lower - 1e-3 <= ref <= est.upper + 1e-3


@pytest.mark.parametrize("eps0, delta0, dpa, composed", [
    (1.0, 1e-6, [0.46211769514285245, 0.28764984899583124, 1e-06, 1e-06], 9.99793379272522),
    (0.3, 1e-3, [0.14973614858969464, 0.001, 0.001, 0.001], math.inf),
])
def test_approximate_dp_pair(eps0, delta0, dpa, composed):
    m = mk.approximate_dp(eps0, delta0)
    assert m.params == {"delta": delta0, "epsilon": eps0}  # ARGUMENTS: mk.approximate_dp(epsilon, delta)
    for e, ref in zip(EPS, dpa):
        closed = delta0 + (1 - delta0) * max(0.0, (math.exp(eps0) - math.exp(e)) / (1 + math.exp(eps0)))
        assert m.delta(e) == pytest.approx(closed, rel=1e-12)
        assert m.delta(e) == pytest.approx(ref, rel=1e-6)
    est = mk.compose((m, 10)).epsilon(1e-4)
    if math.isinf(composed):
        assert est.upper == math.inf and est.certified
    else:
        assert est.lower - 1e-3 <= composed <= est.upper + 1e-3


@pytest.mark.parametrize("rho", [0.01, 0.5, 3.0])
def test_zcdp_is_its_gaussian_pair(rho):
    m = mk.zcdp(rho)
    for a in (1.5, 2.0, 10.0):
        assert m.rdp(a) == pytest.approx(a * rho, rel=1e-9)
    mu = math.sqrt(2 * rho)
    for e in EPS:
        closed = special.ndtr(-e / mu + mu / 2) - math.exp(e) * special.ndtr(-e / mu - mu / 2)
        assert m.delta(e) == pytest.approx(closed, abs=1e-13)


def test_gaussian_mixture_any_number_of_components():
    m = mk.gaussian_mixture(1.0, [0.0, 1.0, 2.0], [0.5, 0.3, 0.2])
    dpa = [0.24517851820995226, 0.09990191097032618, 0.013773422616185787]
    for e, ref in zip((0.0, 1.0, 3.0), dpa):
        assert m.delta(e) == pytest.approx(ref, rel=1e-6)
    assert m.epsilon(1e-6) == pytest.approx(8.71659223939399, abs=1e-6)
    est = mk.compose((m, 10)).epsilon(1e-6)
    assert est.lower <= 23.761132404331665 <= est.upper
    # three equal components are one Gaussian (the same derived family, bound again: no second derivation)
    same = mk.gaussian_mixture(2.0, [1.0, 1.0, 1.0], [0.5, 0.3, 0.2])
    assert same.epsilon(1e-6) == pytest.approx(mk.gaussian(2.0).epsilon(1e-6), rel=1e-12)
    from mechkit.mechanisms import gaussian_mixture
    assert [s.name for s in gaussian_mixture.family_of(1).parameters] == ["probability_1", "sensitivity_1", "sigma"]
    with pytest.raises(ParameterError, match="sum to 1"):
        mk.gaussian_mixture(1.0, [0.0, 1.0], [0.5, 0.6])
    with pytest.raises(ParameterError, match="same length"):
        mk.gaussian_mixture(1.0, [0.0, 1.0], [1.0])


def test_replace_special_laplace_composed_with_randomized_response():
    """dp_accounting's PLD accountant under REPLACE_SPECIAL: Laplace(2) x 5 and randomized response (0.5, 4 buckets)
    x 5 composed one event at a time, epsilon(1e-6) = 7.08116 (value discretisation 1e-5; with count=5 its
    randomized response is composed once, 3.416: tests/test_peers.py has that bug as a strict xfail)."""
    lap = mk.laplace(2.0)
    special_lap = mk.with_relation(lap, "replace_special")
    assert special_lap.relation == "replace_special" and mk.with_relation(special_lap, "replace_special") is special_lap
    assert special_lap.delta(0.3) == lap.delta(0.3)
    rr = mk.k_ary_randomized_response_special(0.5, 4)
    with pytest.raises(ParameterError, match="cannot mix"):
        mk.compose((lap, 5), (rr, 5))
    est = mk.compose((special_lap, 5), (rr, 5)).epsilon(1e-6)
    assert est.lower - 1e-3 <= 7.081164540109857 <= est.upper + 1e-3
    with pytest.raises(ParameterError, match="replace_special is not provided"):
        mk.subsample(lap, 0.1, relation="replace_special")
