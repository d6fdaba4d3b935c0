"""The FFT and saddle-point accountants against an independent contour-integral reference
(tests/references/contour.py: numpy only, no mechkit code) at random DP-SGD settings; the references of compositions of
different mechanisms (contour_mix.py) checked, and the FFT, SPA and Edgeworth intervals of random heterogeneous
mixtures against them."""
import math

import pytest
from hypothesis import assume, event, given, settings, strategies as st
from scipy.stats import norm

import mechkit as mk
from tests.helpers import Reached
from tests.references import contour as ref


@pytest.mark.parametrize("s,k,eps", [(2.0, 10, 0.5), (1.0, 3, 1.0), (5.0, 100, 0.3)])
def test_reference_contour_selfcheck_gaussian(s, k, eps):
    mu = math.sqrt(k) / s
    exact = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
    assert ref.delta(eps, s, 1.0, k) == pytest.approx(exact, rel=1e-8)


def test_reference_contour_selfcheck_p1_table():
    assert ref.delta(1.0, 1.5, 0.01, 10_000) == pytest.approx(0.0496014103163, rel=1e-8)


@st.composite
def dp_sgd(draw):
    q = draw(st.floats(0.005, 0.2))
    k = draw(st.integers(max(10, math.ceil(3.0 / q)), 3000))  # >= 3 expected sampled steps: the reference converges
    return draw(st.floats(0.7, 3.0)), q, k, draw(st.floats(0.2, 4.0))


def test_reference_contour_refuses_when_not_converged():
    # one expected sampled step in ten: the loss is nearly atomic and the contour integral does not settle
    with pytest.raises(ref.NotConverged):
        ref.delta(1.0, 1.0, 0.0078125, 10)


_SPA_ANSWERED = Reached(spa=0.5)


@pytest.mark.slow
@_SPA_ANSWERED
@settings(deadline=None)
@given(case=dp_sgd())
def test_fft_and_spa_bounds_contain_independent_reference(case):
    # where the reference does not converge the input is out of scope (assumed away); the SPA may refuse
    # (NumericalLimitError), but at least half the examples must reach its check.  The FFT at eps_error 0.05: its
    # bounds still hold, at about half the cost of 0.02 (per example ~0.1 s, the reference ~0.1 s)
    sigma, q, k, eps = case
    try:
        truth = ref.delta(eps, sigma, q, k)  # remove direction, which dominates for the subsampled Gaussian
    except ref.NotConverged:
        assume(False)
    run = mk.compose((mk.subsample(mk.gaussian(sigma=sigma), q), k))
    d = run.delta(eps, eps_error=0.05)
    assert d.lower <= truth <= d.upper
    try:
        sp = run.delta(eps, method="spa")
    except mk.NumericalLimitError:
        event("spa refused")
        return
    assert sp.lower <= truth * (1 + 1e-6) + 1e-300 and truth * (1 - 1e-6) <= sp.upper
    _SPA_ANSWERED.hit("spa")


# ------------------------------------------------------------------------------------------------------------
# contour_mix.py (compositions of different mechanisms): its mgfs against quadrature, its curves against exact ones


def _log_lap(x, m, b):
    return -abs(x - m) / b - math.log(2 * b)


def _log_norm(x, m, s):
    return -0.5 * ((x - m) / s) ** 2 - math.log(s * math.sqrt(2 * math.pi))


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
def test_contour_mix_mgfs_against_quadrature():
    """M(w) = int p^{1+w} q^{-w} at complex w (both half-planes: the add direction is w = -1 - z) by scipy quad."""
    import cmath

    import numpy as np
    from scipy import integrate

    from tests.references import contour_mix as C
    cases = [
        (C.laplace(2.0), lambda x: _log_lap(x, 1, 2), lambda x: _log_lap(x, 0, 2)),
        (C.laplace_pair(1, 1, 0, 2), lambda x: _log_lap(x, 1, 1), lambda x: _log_lap(x, 0, 2)),
        (C.laplace_pair(1, 4, 0, 5), lambda x: _log_lap(x, 1, 4), lambda x: _log_lap(x, 0, 5)),
        (C.laplace_pair(0, 5, 1, 4), lambda x: _log_lap(x, 0, 5), lambda x: _log_lap(x, 1, 4)),
        (C.subsampled_laplace(2.0, 0.05), lambda x: float(np.logaddexp(math.log(0.95) + _log_lap(x, 0, 2),
                                                                        math.log(0.05) + _log_lap(x, 1, 2))),
         lambda x: _log_lap(x, 0, 2)),
        (C.subsampled_gaussian(0.7, 0.3), lambda x: float(np.logaddexp(math.log(0.7) + _log_norm(x, 0, 0.7),
                                                                        math.log(0.3) + _log_norm(x, 1, 0.7))),
         lambda x: _log_norm(x, 0, 0.7)),
        (C.gaussian(0.8), lambda x: _log_norm(x, 1, 0.8), lambda x: _log_norm(x, 0, 0.8)),
    ]
    rr = C.randomized_response(0.7)
    for w in (0.3 + 2j, -1.4 + 3j, 0.7 + 15j, 3 + 1j):   # two-point laws: the sum over the two outputs
        p1 = math.exp(0.7) / (1 + math.exp(0.7))
        want = p1 ** (1 + w) * (1 - p1) ** -w + (1 - p1) ** (1 + w) * p1 ** -w
        assert abs(np.exp(rr.log_mgf(np.array([w])))[0] - want) <= 1e-14 * abs(want)
    lo, hi = C.laplace_pair(1, 1, 0, 2).w_range
    assert lo == pytest.approx(-2.0) and hi == math.inf      # the add direction's tilt must stay below 1
    for mech, lp, lq in cases:
        for w in (0.3 + 2j, 1.5 - 0.7j, -1.4 + 3j, -2.5 + 0.2j, 0.7 + 15j, 3 + 1j):
            if not mech.w_range[0] < w.real < mech.w_range[1]:
                continue
            g = lambda x, w=w: cmath.exp((1 + w) * lp(x) - w * lq(x))
            pts = [-np.inf, -1.0, 0.0, 0.5, 1.0, 2.0, np.inf]
            want = complex(*(sum(integrate.quad(lambda x: part(g(x)), a, b, limit=400, epsabs=0, epsrel=1e-12)[0]
                                 for a, b in zip(pts[:-1], pts[1:])) for part in (lambda v: v.real, lambda v: v.imag)))
            got = np.exp(mech.log_mgf(np.array([w])))[0]
            scale = math.exp(mech.log_mgf(np.array([w.real]))[0].real)    # int |p^{1+w} q^{-w}| = M(Re w)
            assert abs(got - want) <= 1e-11 * max(abs(want), 1e-3 * scale), (type(mech).__name__, w, got, want)


def _gdp_delta_np(mu, x):
    """mu-GDP delta at each x (array), relatively accurate: Phi(a) (1 - e^{x} Phi(b) / Phi(a))."""
    import numpy as np
    from scipy.special import log_ndtr
    x = np.asarray(x, dtype=float)
    la, lb = log_ndtr(-x / mu + mu / 2), x + log_ndtr(-x / mu - mu / 2)
    return np.exp(la) * -np.expm1(lb - la)


def test_contour_mix_against_exact_curves():
    """(a) heterogeneous Gaussians: mu-GDP (mpmath), both directions and the complement 1 - delta;
    (b) Gaussian + randomized response + discrete Laplace: exact by conditioning on the two binomials (mpmath);
    (c) Laplace x20 + Gaussian: the certified lattice bracket of the Laplace sum, conditioned on the Gaussian;
    (d) subsampled Gaussian: the P1 table value (13 digits)."""
    import mpmath as mp
    import numpy as np

    from tests.references import contour_mix as C
    from tests.references import lattice as L
    from tests.references import mpmath_laws as M
    comp = C.Composition((C.gaussian(1.0), 3), (C.gaussian(2.0), 20), (C.gaussian(0.5), 1))
    mu = math.sqrt(3 + 20 / 4 + 4)
    for eps in (0.5, 6.0, 15.0, 40.0):
        want = float(M.gdp_delta(mu, eps))
        for d in C.DIRECTIONS:
            assert comp.dirs[d].delta(eps) == pytest.approx(want, rel=1e-10)
        assert comp.dirs["remove"].delta(eps, complement=True) == pytest.approx(1 - want, rel=1e-10)
    assert comp.epsilon(1e-10) == pytest.approx(float(M.gdp_epsilon(mu, 1e-10)), rel=1e-10)

    comp = C.Composition((C.gaussian(2.0), 3), (C.randomized_response(0.3), 20), (C.discrete_laplace(10.0), 50))
    a, b = L.randomized_response(0.3)["remove"].composed(20), L.discrete_laplace(10.0)["remove"].composed(50)
    with mp.workdps(40):
        wa = [a.A[j] - a.A[j + 1] for j in range(a.k + 1)]
        wb = [b.A[j] - b.A[j + 1] for j in range(b.k + 1)]
        for eps in (0.5, 5.0, 9.0):
            want = float(sum(x * y * M._gdp_delta(mp.sqrt(3) / 2, mp.mpf(eps) - sa - sb)
                             for sa, x in zip(a.S, wa) for sb, y in zip(b.S, wb)))
            for d in C.DIRECTIONS:
                assert comp.dirs[d].delta(eps) == pytest.approx(want, rel=1e-10)

    mu = 0.5                                    # Gaussian sigma 2 x 1
    comp = C.Composition((C.laplace(5.0), 20), (C.gaussian(2.0), 1))
    for d in C.DIRECTIONS:
        br = L.laplace(5.0, d, 2000).power(20)
        for eps in (1.0, 2.5, 4.0):
            lo, hi = (float(np.sum(law.pmf * _gdp_delta_np(mu, eps - law.values))) for law in (br.lower, br.upper))
            lo, hi = lo * (1 - br.lower.rel) - br.lower.tail, hi * (1 + br.upper.rel) + br.upper.tail
            assert lo * (1 - 1e-12) <= comp.dirs[d].delta(eps) <= hi * (1 + 1e-12)
            assert hi - lo < 3e-3 * hi                        # the bracket is informative

    sg = C.Composition((C.subsampled_gaussian(1.5, 0.01), 10_000))
    assert sg.dirs["remove"].delta(1.0) == pytest.approx(0.0496014103163, rel=1e-8)


# ------------------------------------------------------------------------------------------------------------
# random heterogeneous mixtures against contour_mix.py (both directions): every accountant's certified interval


@st.composite
def _mixtures(draw):
    """2-4 parts of (name, parameters, count): a Gaussian or a subsampled Gaussian with >= 5 expected sampled steps
    first (its characteristic function decays, so the contour integral converges), then any of Gaussian, Laplace,
    subsampled Gaussian and subsampled Laplace (Poisson, add/remove)."""
    kinds = {
        "gauss": lambda: (draw(st.floats(1.0, 20.0)),),
        "lap": lambda: (draw(st.floats(2.0, 50.0)),),
        "sg": lambda: (draw(st.floats(0.6, 3.0)), draw(st.sampled_from([0.01, 0.05, 0.2]))),
        "slap": lambda: (draw(st.floats(0.5, 5.0)), draw(st.sampled_from([0.01, 0.05, 0.2]))),
    }
    first = draw(st.sampled_from(["gauss", "sg"]))
    args = kinds[first]()
    low = 1 if first == "gauss" else math.ceil(5 / args[1])
    parts = [(first, args, draw(st.integers(low, max(low, 2000 if first == "sg" else 30))))]
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(sorted(kinds)))
        parts.append((name, kinds[name](), draw(st.integers(1, 1000 if name in ("sg", "slap") else 30))))
    return parts, 10.0 ** draw(st.floats(-9.0, -3.0))


def _mechkit_part(name, args):
    make = {"gauss": lambda s: mk.gaussian(sigma=s), "lap": lambda b: mk.laplace(scale=b),
            "sg": lambda s, q: mk.subsample(mk.gaussian(sigma=s), q),
            "slap": lambda b, q: mk.subsample(mk.laplace(scale=b), q)}
    return make[name](*args)


def _reference_part(name, args):
    from tests.references import contour_mix as C
    make = {"gauss": C.gaussian, "lap": C.laplace, "sg": C.subsampled_gaussian, "slap": C.subsampled_laplace}
    return make[name](*args)


_MIX = Reached(fft=0.8, spa=0.5, edgeworth=0.3)


@pytest.mark.slow
@_MIX
@settings(deadline=None, max_examples=max(1, settings.default.max_examples // 5))  # ~0.3 s each
@given(case=_mixtures())
def test_random_heterogeneous_mixtures_hold_the_contour_truth(case):
    # the FFT (connect the dots, eps_error 0.02), the SPA and the Edgeworth accountant on a random mixture of
    # Gaussian, Laplace and Poisson-subsampled ones: each certified interval holds epsilon(delta) of the independent
    # contour integral of both directions (tests/references/contour_mix.py, ~1e-9 relative: the interval is widened
    # by that); the FFT's is narrower than 10 eps_error + 0.5% of epsilon, so that a vacuous interval cannot pass
    # (each bound is within eps_error of the estimate, and the rounding and tail allowances widen it by the curve's
    # slope over them, flat at large epsilon and tiny delta: 0.1005 at epsilon 50, 0.2002 at 187 and 0.359 at 155,
    # delta 1e-9, eps_error 0.02; at 155 the FFT's rounding allowance of 2.4 million points, 7.5e-11, is 7.5% of
    # delta, and the interval is as wide at eps_error 0.005)
    from tests.references import contour_mix as C
    parts, d = case
    ref = C.Composition(*[(_reference_part(n, a), k) for n, a, k in parts])
    run = mk.compose(*[(_mechkit_part(n, a), k) for n, a, k in parts])
    for method, kw in (("fft", {"eps_error": 0.02}), ("spa", {}), ("edgeworth", {})):
        try:
            e = run.epsilon(d, method=method, **kw)
        except mk.NumericalLimitError:
            event(f"{method} refused")
            continue
        lo, up = e.lower * (1 - 1e-9) - 1e-12, e.upper * (1 + 1e-9) + 1e-12
        try:
            held = ref.epsilon_within(d, lo, up)
        except C.NotConverged:
            assume(False)
        assert held, (method, float(e), e.lower, e.upper)
        assert method != "fft" or e.upper - e.lower <= 10 * kw["eps_error"] + 5e-3 * float(e), (e.lower, e.upper)
        _MIX.hit(method)
