"""Issue "Any density a paper writes": special functions.  A pmf whose log Numba cannot compile (Skellam noise:
besseli) is tabulated at bind time (SciPy, mpmath where SciPy over- or underflows); a continuous density with such
a function is refused before the derivation with its name.  References: SciPy's Skellam distribution summed
directly over the outputs (no mechkit), and the exact two-run sum over pairs of outputs."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as st
import sympy as sp

import mechkit as mk

k = sp.Symbol("k", integer=True)
mu = sp.Symbol("mu", positive=True)
x = sp.Symbol("x", real=True)


@pytest.fixture(scope="module")
def skellam():
    """Skellam noise of rate mu on each side, sensitivity 1: p(k) = e^(-2 mu) I_(k-1)(2 mu), q(k) = ... I_k."""
    pmf = lambda c: sp.exp(-2 * mu) * sp.besseli(k - c, 2 * mu)
    return mk.Mechanism.from_densities(pmf(1), pmf(0), k, name="skellam", domain="integers")


def _hockey(p, q, eps):
    return float(np.sum(np.maximum(p - math.exp(eps) * q, 0.0)))


@pytest.mark.parametrize("rate", [0.5, 3.0, 40.0, 500.0])
def test_skellam_pmf_is_tabulated_and_its_curve_is_scipys(skellam, rate):
    m = skellam(mu=rate)
    ks = np.arange(-4000, 4001)
    p, q = st.skellam.pmf(ks - 1, rate, rate), st.skellam.pmf(ks, rate, rate)
    for eps in (-0.3, 0.0, 0.2, 1.0):
        assert m.delta(eps, direction="remove") == pytest.approx(_hockey(p, q, eps), rel=1e-9, abs=1e-15)
        assert m.delta(eps, direction="add") == pytest.approx(_hockey(q, p, eps), rel=1e-9, abs=1e-15)


def test_skellam_two_runs_against_the_exact_double_sum(skellam):
    m = skellam(mu=1.5)
    ks = np.arange(-60, 61)
    p, q = st.skellam.pmf(ks - 1, 1.5, 1.5), st.skellam.pmf(ks, 1.5, 1.5)
    P, Q = np.outer(p, p), np.outer(q, q)  # every pair of outputs of the two runs
    for eps in (0.5, 1.5):
        want = max(_hockey(P.ravel(), Q.ravel(), eps), _hockey(Q.ravel(), P.ravel(), eps))
        got = mk.compose((m, 2)).delta(eps, method="fft")
        assert got.lower <= want <= got.upper, (eps, want, got)


def test_a_continuous_density_with_a_function_the_kernels_cannot_evaluate_names_it():
    fam = mk.Mechanism.from_densities(sp.besselk(0, sp.Abs(x)) / sp.pi, sp.besselk(0, sp.Abs(x - 1)) / sp.pi, x,
                                      name="bessel_k0")
    with pytest.raises(mk.SpecificationError, match="besselk cannot be evaluated by the compiled kernels"):
        fam()


def test_gamma_and_erf_in_continuous_densities():
    """Gamma(3) vs Gamma(2) shapes on x > 0 (loss log(x / 2), increasing): delta from the regularised incomplete
    gamma function, by SciPy."""
    fam = mk.Mechanism.from_densities(sp.Piecewise((x ** 2 * sp.exp(-x) / sp.gamma(3), x > 0), (0, True)),
                                      sp.Piecewise((x * sp.exp(-x) / sp.gamma(2), x > 0), (0, True)), x,
                                      name="gamma_shapes")
    m = fam()
    for eps in (0.0, 0.7, 2.0):
        t = 2 * math.exp(eps)  # L > eps  <=>  x > 2 e^eps
        want = st.gamma.sf(t, 3) - math.exp(eps) * st.gamma.sf(t, 2)
        assert m.delta(eps, direction="remove") == pytest.approx(want, rel=1e-9)
