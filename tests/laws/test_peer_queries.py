"""The queries the peers answer (issue "any density"): the hockey-stick delta at negative epsilon, epsilon at
delta = 0 (the largest privacy loss) and the Renyi divergence of order infinity, in every direction, one-shot and
composed; each against a closed form or an exact sum in mpmath, never against mechkit."""
import math

import mpmath as mp
import pytest

import mechkit as mk
from tests.helpers import approx_dp_pair


@mp.workdps(30)
def gaussian_delta(mu, eps):
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


@mp.workdps(30)
def atoms_delta(atoms, eps):
    """E[(1 - e^(eps - L))_+] for a loss with the given {value: probability} (exact sum)."""
    return mp.fsum(p * max(mp.mpf(0), 1 - mp.exp(mp.mpf(eps) - v)) for v, p in atoms.items())


@mp.workdps(30)
def rr_atoms(e0, q=1.0):
    """Loss atoms of (Poisson-subsampled) randomized response, remove and add directions."""
    e0, q = mp.mpf(e0), mp.mpf(q)
    hi, lo = mp.exp(e0) / (1 + mp.exp(e0)), 1 / (1 + mp.exp(e0))
    p_mix = {1: q * hi + (1 - q) * lo, 0: q * lo + (1 - q) * hi}  # P' = q P + (1 - q) Q on outputs 1 and 0
    qq = {1: lo, 0: hi}
    remove = {mp.log(p_mix[y] / qq[y]): p_mix[y] for y in (0, 1)}
    add = {mp.log(qq[y] / p_mix[y]): qq[y] for y in (0, 1)}
    return remove, add


@mp.workdps(30)
def laplace_delta(e0, eps):
    """Laplace with sensitivity / scale = e0: 1 - e^((eps - e0)/2) on [-e0, e0], 1 - e^eps below (L >= -e0)."""
    e0, eps = mp.mpf(e0), mp.mpf(eps)
    if eps >= e0:
        return mp.mpf(0)
    return 1 - mp.exp(eps) if eps <= -e0 else 1 - mp.exp((eps - e0) / 2)


EPS = [-3.0, -1.0, -0.25, 0.0, 0.4, 1.5]


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_gaussian_hockey_stick_at_negative_epsilon(sigma):
    m = mk.gaussian(sigma=sigma)
    for direction in ("remove", "add", "both"):  # symmetric: each direction has the mu-GDP curve
        got = m.delta(EPS, direction=direction)
        ref = [float(gaussian_delta(1 / sigma, e)) for e in EPS]
        assert got == pytest.approx(ref, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("scale", [0.4, 1.0, 2.5])
def test_laplace_hockey_stick_at_negative_epsilon(scale):
    m = mk.laplace(scale=scale)
    eps = EPS + [-1 / scale - 0.5]  # below the smallest loss: 1 - e^eps exactly
    ref = [float(laplace_delta(1 / scale, e)) for e in eps]
    for direction in ("remove", "add", "both"):
        assert m.delta(eps, direction=direction) == pytest.approx(ref, rel=1e-9, abs=1e-15)
        assert m.plrv("remove" if direction == "both" else direction).delta(eps) == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("e0,q", [(1.3, 1.0), (2.0, 0.1), (0.5, 0.6)])
def test_randomized_response_hockey_stick_and_largest_loss(e0, q):
    base = mk.randomized_response(epsilon=e0)
    m = base if q == 1.0 else mk.subsample(base, q)
    remove, add = rr_atoms(e0, q)
    for direction, atoms in (("remove", remove), ("add", add)):
        ref = [float(atoms_delta(atoms, e)) for e in EPS]
        assert m.delta(EPS, direction=direction) == pytest.approx(ref, rel=1e-9, abs=1e-15)
        top = float(max(atoms))
        assert m.epsilon(0.0, direction=direction) == pytest.approx(top, rel=1e-12)
        assert m.rdp(math.inf, direction=direction) == pytest.approx(top, rel=1e-12)
        # consistent with the curve: delta is 0 from the largest loss on, positive just below it
        assert m.delta(top * (1 + 1e-9) + 1e-12, direction=direction) == 0.0
        assert m.delta(top * (1 - 1e-6), direction=direction) > 0.0
    both = max(float(max(remove)), float(max(add)))
    assert m.epsilon(0.0) == pytest.approx(both, rel=1e-12) and m.rdp(float("inf")) == pytest.approx(both, rel=1e-12)


@pytest.mark.parametrize("make,top", [(lambda: mk.laplace(scale=0.5), 2.0),
                                      (lambda: mk.discrete_laplace(scale=0.7), 1 / 0.7),
                                      (lambda: mk.gaussian(sigma=1.0), math.inf),
                                      (lambda: approx_dp_pair()(eps0=1.0, delta0=1e-3), math.inf)])
def test_largest_loss_and_renyi_infinity(make, top):
    m = make()
    for direction in ("remove", "add", "both"):
        assert m.epsilon(0.0, direction=direction) == pytest.approx(top, rel=1e-12)
        assert m.rdp(math.inf, direction=direction) == pytest.approx(top, rel=1e-12)
    assert list(m.epsilon([0.0, 0.0])) == pytest.approx([top, top], rel=1e-12)


def test_composition_epsilon_at_delta_zero_and_the_cap():
    c = mk.compose((mk.laplace(scale=0.5), 3), (mk.randomized_response(epsilon=1.3), 2))
    top = 3 * 2.0 + 2 * 1.3  # the largest composed loss: a sum of independent losses' largest values
    for method in ("fft", "spa", "rdp"):
        e = c.epsilon(0.0, method=method)
        assert e.certified and e.lower <= top <= e.upper and e.upper - e.lower < 1e-11
    # every answer stays below the largest loss: delta is 0 there, whatever the accountant's discretisation says
    for d in (1e-5, 1e-8):
        e = c.epsilon(d)
        assert float(e) <= e.upper <= top * (1 + 1e-12) and e.lower <= float(e)
    assert math.isinf(float(mk.compose((mk.gaussian(sigma=1.0), 2)).epsilon(0.0)))
    assert math.isinf(float(mk.compose((approx_dp_pair()(eps0=1.0, delta0=1e-3), 2)).epsilon(0.0)))


def test_bad_epsilons_and_deltas_still_refused():
    m = mk.laplace(scale=1.0)
    with pytest.raises(mk.ParameterError, match="epsilon"):
        m.delta(-math.inf)
    with pytest.raises(mk.ParameterError, match="delta"):
        m.epsilon(-1e-9)
    with pytest.raises(mk.ParameterError, match="alpha"):
        m.rdp(-math.inf)
    with pytest.raises(mk.ParameterError, match="epsilon"):
        mk.compose((m, 2)).delta(-1.0)  # composed curves: epsilon >= 0 (the accountants' bounds are for those)
