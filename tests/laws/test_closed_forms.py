"""Derived objects against closed forms (independent of the derivation: scipy.stats and textbook formulas)."""
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

import mechkit as mk

S = np.array([-30.0, -3.0, -0.4, 0.0, 0.17, 1.0, 2.5, 8.0, 40.0])


@pytest.mark.parametrize("sigma,sens", [(1.0, 1.0), (0.5, 1.0), (3.0, 2.0)])
def test_gaussian_plrv_is_normal(sigma, sens):
    m = mk.gaussian(sigma=sigma, sensitivity=sens)
    mu = sens / sigma
    ref = stats.norm(mu * mu / 2, mu)
    np.testing.assert_allclose(m.remove.cdf(S), ref.cdf(S), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(m.remove.logsf(S), ref.logsf(S), rtol=1e-11)
    np.testing.assert_allclose(m.remove.logcdf(S), ref.logcdf(S), rtol=1e-11)
    np.testing.assert_allclose(m.remove.pdf(S), ref.pdf(S), rtol=1e-10, atol=1e-300)
    # the dual (L under Q) is N(-mu^2/2, mu^2); the add direction equals remove for a symmetric pair
    np.testing.assert_allclose(m.remove.dual.logsf(S), stats.norm(-mu * mu / 2, mu).logsf(S), rtol=1e-11)
    np.testing.assert_allclose(m.add.logsf(S), ref.logsf(S), rtol=1e-11)
    assert m.remove.atoms()[0].size == 0


def test_gaussian_deep_tail_logsf():
    m = mk.gaussian(sigma=1.0)
    s = np.array([50.0, 200.0, 1000.0])
    with mpmath.workdps(40):
        ref = [float(mpmath.log(mpmath.ncdf(-(x - 0.5)))) for x in s]
    np.testing.assert_allclose(m.remove.logsf(s), ref, rtol=1e-12)


@pytest.mark.parametrize("t", [-3.0, -1.0, -0.5, 0.0, 0.7, 2.0, 10.0])
def test_gaussian_cgf_closed_form(t):
    m = mk.gaussian(sigma=0.7)
    mu2 = 1 / 0.49
    expect = [mu2 * t * (t + 1) / 2, mu2 * (t + 0.5), mu2, 0, 0, 0, 0]
    got = [m.remove.cgf(t, k) for k in range(7)]
    np.testing.assert_allclose(got, expect, rtol=1e-12, atol=1e-12)
    # the compiled quadrature path gives the same numbers (a second, independent method)
    quad = [m.core.cgf_quadrature(t, k) for k in range(5)]
    np.testing.assert_allclose(quad, expect[:5], rtol=1e-9, atol=1e-7 * mu2 ** 2)


def test_cgf_directions_are_shifts_of_one_function():
    m = mk.subsample(mk.gaussian(sigma=1.3), 0.05)
    for t in (-0.7, 0.4, 2.0):
        # remove dual: log E_Q[e^{tL}] = K(t-1); add: log E_Q[e^{-tL}] = K(-1-t); add dual: K(-t)
        assert m.remove.dual.cgf(t) == pytest.approx(m.remove.cgf(t - 1), rel=1e-12, abs=1e-15)
        assert m.add.cgf(t) == pytest.approx(m.remove.cgf(-1 - t), rel=1e-12, abs=1e-15)
        assert m.add.dual.cgf(t) == pytest.approx(m.remove.cgf(-t), rel=1e-12, abs=1e-15)
        assert m.add.cgf(t, 1) == pytest.approx(-m.remove.cgf(-1 - t, 1), rel=1e-12)
    assert m.remove.cgf(0.0) == pytest.approx(0.0, abs=1e-13)
    assert m.remove.cgf(-1.0) == pytest.approx(0.0, abs=1e-13)


@settings(deadline=None)
@given(sigma=st.floats(0.2, 20.0), eps=st.floats(0.0, 15.0))
def test_gaussian_delta_matches_gdp(sigma, eps):
    m = mk.gaussian(sigma=sigma)
    mu = 1 / sigma
    ref = mk.gdp.delta(mu, eps)
    got = m.delta(eps)
    assert got == pytest.approx(ref, rel=1e-9, abs=1e-300)


def test_laplace_atoms_and_curve():
    b, sens = 1.3, 1.0
    m = mk.laplace(scale=b, sensitivity=sens)
    vals, probs = m.remove.atoms()
    np.testing.assert_allclose(vals, [-sens / b, sens / b], rtol=1e-14)
    np.testing.assert_allclose(probs, [math.exp(-sens / b) / 2, 0.5], rtol=1e-13)
    # continuous part on (-1/b, 1/b): P(L <= s) = e^{-1/b}/2 + (e^{(s b - ...)}) ; check by the closed form
    s = np.array([-0.5, 0.0, 0.3, 0.7])
    # L = (2x - 1)/b on (0, 1): x = (s b + 1)/2; P(L <= s) = P(X <= x) for X ~ Lap(1, b)
    x = (s * b + sens) / 2
    np.testing.assert_allclose(m.remove.cdf(s), stats.laplace(sens, b).cdf(x), rtol=1e-12)
    eps = np.array([0.0, 0.2, 0.5, 0.76])
    np.testing.assert_allclose(m.delta(eps), 1 - np.exp((eps - sens / b) / 2), rtol=1e-11)
    assert m.delta(sens / b) == 0.0
    assert m.epsilon(1e-9) == pytest.approx(sens / b + 2 * math.log1p(-1e-9), rel=1e-9)


def test_laplace_cgf_by_quadrature_matches_closed_form():
    # M(t) for Laplace(b) with sensitivity 1, computed by hand over the three pieces
    b = 0.8
    m = mk.laplace(scale=b)

    def M(t):
        a = 1 / b
        left = math.exp(-a) / 2 * math.exp(-t * a)          # x < 0: L = -a, P-mass e^{-a}/2
        right = 0.5 * math.exp(t * a)                       # x > 1: L = a, P-mass 1/2
        # 0 < x < 1: p = e^{-(1-x)/b}/(2b), L = (2x-1)/b
        c = (2 * t + 1) / b
        mid = math.exp(-(1 + t) / b) / (2 * b) * (math.exp(c) - 1) / c
        return left + right + mid

    for t in (-2.0, -0.3, 0.9, 4.0):
        assert m.remove.cgf(t) == pytest.approx(math.log(M(t)), rel=1e-11)


@pytest.mark.parametrize("e", [0.3, 1.0, 3.0])
def test_randomized_response(e):
    m = mk.randomized_response(epsilon=e)
    vals, probs = m.remove.atoms()
    np.testing.assert_allclose(vals, [-e, e])
    np.testing.assert_allclose(probs, [1 / (1 + math.exp(e)), math.exp(e) / (1 + math.exp(e))], rtol=1e-14)
    for eps in (0.0, e / 3, e / 2):
        expect = (math.exp(e) - math.exp(eps)) / (1 + math.exp(e))
        assert m.delta(eps) == pytest.approx(expect, rel=1e-12)
    assert m.delta(e) == 0.0
    assert m.core.cgf_source == "closed form"
    for t in (-1.5, 0.5, 2.0):
        M = (math.exp(e * (1 + t)) + math.exp(-e * t)) / (1 + math.exp(e))
        assert m.remove.cgf(t) == pytest.approx(math.log(M), rel=1e-13)


def test_discrete_laplace():
    t = 2.0
    m = mk.discrete_laplace(scale=t)
    vals, probs = m.remove.atoms()
    np.testing.assert_allclose(vals, [-1 / t, 1 / t], rtol=1e-15)
    # P(L = 1/t) = P(K >= 1) for K ~ DLap centred at 1 = sum_{k>=1} c e^{-|k-1|/t} = c / (1 - e^{-1/t})
    c = math.tanh(1 / (2 * t))
    np.testing.assert_allclose(probs[1], c / (1 - math.exp(-1 / t)), rtol=1e-12)
    assert m.epsilon(1e-8) <= 1 / t + 1e-12


@pytest.mark.parametrize("sigma", [0.7, 3.0])
def test_discrete_gaussian_renyi(sigma):
    # Canonne, Kamath, Steinke 2020: D_alpha <= alpha Delta^2 / (2 sigma^2), with equality at integer alpha
    # (the tilted sum is a theta function shifted by (1 - alpha) Delta, maximal at integer shifts)
    m = mk.discrete_gaussian(sigma=sigma)
    for a in (2.0, 3.0, 8.0):
        assert m.rdp(a) == pytest.approx(a / (2 * sigma * sigma), rel=1e-10)
    assert m.rdp(1.5) <= 1.5 / (2 * sigma * sigma) * (1 + 1e-12)
    # and the non-integer order against a direct mpmath sum
    a = 1.5
    with mpmath.workdps(30):
        w = lambda k: mpmath.exp(-(k ** 2) / (2 * sigma ** 2))
        Z = mpmath.nsum(w, [-mpmath.inf, mpmath.inf])
        S_ = mpmath.nsum(lambda k: w(k - 1) ** a * w(k) ** (1 - a), [-mpmath.inf, mpmath.inf])
        ref = float(mpmath.log(S_ / Z) / (a - 1))
    assert m.rdp(1.5, direction="remove") == pytest.approx(ref, rel=1e-10)


def test_subsampled_gaussian_renyi_integer_order():
    # Mironov et al.: A_alpha = sum_k C(alpha,k) (1-q)^{alpha-k} q^k exp((k^2 - k)/(2 sigma^2))
    sigma, q = 1.1, 0.02
    m = mk.subsample(mk.gaussian(sigma=sigma), q)
    for a in (2, 3, 6, 16):
        A = sum(math.comb(a, k) * (1 - q) ** (a - k) * q ** k * math.exp((k * k - k) / (2 * sigma ** 2))
                for k in range(a + 1))
        assert m.remove.cgf(a - 1) / (a - 1) == pytest.approx(math.log(A) / (a - 1), rel=1e-10)


def test_subsampled_gaussian_plrv_cdf_notes_formula():
    # notes.md 1.5 / 2.3: z(t) = sigma^2 log((e^t - (1-q))/q) + 1/2; CDF under the mixture
    sigma, q = 0.8, 0.01
    m = mk.subsample(mk.gaussian(sigma=sigma), q)
    t = np.array([-0.005, 0.0, 0.1, 1.0, 3.0])
    z = sigma ** 2 * np.log((np.exp(t) - (1 - q)) / q) + 0.5
    cdf_mix = (1 - q) * stats.norm.cdf(z / sigma) + q * stats.norm.cdf((z - 1) / sigma)
    np.testing.assert_allclose(m.remove.cdf(t), cdf_mix, rtol=1e-11)
    np.testing.assert_allclose(m.remove.dual.cdf(t), stats.norm.cdf(z / sigma), rtol=1e-11)
    lo, hi = m.remove.support
    assert lo == pytest.approx(math.log(1 - q), rel=1e-12) and hi == math.inf


@pytest.mark.parametrize("e", [0.3, 2.0])
def test_randomized_response_cgf_derivatives_from_the_atoms(e):
    """A finite pmf's derivation keeps K closed (derive.FINITE_CLOSED_ORDER); K' .. K^(6) come from the atoms'
    exact tilted central moments: each order against mpmath's derivative of log M, both directions."""
    import mpmath as mp

    from mechkit.symbolic import derive
    m = mk.randomized_response(epsilon=e)
    assert m.core.cgf_source == "closed form" and len(m.core.closed_cgf) == derive.FINITE_CLOSED_ORDER + 1
    mp.mp.dps = 40
    E = mp.mpf(e)

    def K(t):
        return mp.log((mp.exp(E * (1 + t)) + mp.exp(-E * t)) / (1 + mp.exp(E)))
    for plrv in (m.remove, m.add):  # symmetric: the add direction has the same law
        for t in (-1.5, 0.0, 0.7, 3.0):
            vec = plrv.cgf_vector(t, 6)
            for n in range(7):
                ref = float(mp.diff(K, mp.mpf(t), n))
                assert plrv.cgf(t, n) == pytest.approx(ref, rel=1e-10, abs=1e-13), (t, n)
                assert vec[n] == pytest.approx(ref, rel=1e-10, abs=1e-13), (t, n)
