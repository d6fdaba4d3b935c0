"""The certified FFT composer against independent truths: lower <= truth <= upper, always."""
import math

import numpy as np
import pytest
from hypothesis import event, given, settings, strategies as st
from scipy.optimize import brentq

import mechkit as mk
from mechkit import NumericalLimitError, ParameterError
from mechkit.accountants import fft, fft_grid
from tests.helpers import Reached, approx_dp_pair, rr_delta


@pytest.mark.parametrize("sigma,k", [(2.0, 1), (1.0, 30), (5.0, 1000)])
def test_gaussian_composition_inside_bounds_of_exact_curve(sigma, k):
    run = mk.compose((mk.gaussian(sigma=sigma), k))
    mu = math.sqrt(k) / sigma
    for delta in (1e-3, 1e-6):
        e = run.epsilon(delta, method="fft", variant="prv")
        truth = mk.gdp.epsilon(mu, delta)
        assert e.certified and e.lower <= truth <= e.upper
        # width: 2 eps_error horizontally, plus the effect of +/- (delta_error + fp) on the exact curve (Thm 5.5)
        slack = e.details["delta_error"] + e.details["fp_allowance"] + e.details["tail_allowance"]
        extra = mk.gdp.epsilon(mu, delta - slack) - mk.gdp.epsilon(mu, delta + slack)
        width = e.upper - e.lower
        assert 2 * e.details["eps_error"] - 1e-12 <= width <= 2 * e.details["eps_error"] + 1.05 * extra + 1e-9
        assert abs(float(e) - truth) < 1e-3
    d = run.delta([0.5, 1.0, 3.0])
    truth = mk.gdp.delta(mu, [0.5, 1.0, 3.0])
    assert np.all(d.lower <= truth) and np.all(truth <= d.upper)


def test_heterogeneous_gaussians_match_gdp():
    # exactly mu-GDP with mu^2 = sum k_i / sigma_i^2; the width as in the homogeneous test above (Thm 5.5)
    run = mk.compose((mk.gaussian(sigma=1.0), 3), (mk.gaussian(sigma=2.0), 20), mk.gaussian(sigma=0.5))
    mu = math.sqrt(3 + 20 / 4 + 4)
    for delta in (1e-5, 1e-8):
        e = run.epsilon(delta)
        assert e.lower <= mk.gdp.epsilon(mu, delta) <= e.upper
        slack = e.details["delta_error"] + e.details["fp_allowance"] + e.details["tail_allowance"]
        extra = mk.gdp.epsilon(mu, delta - slack) - mk.gdp.epsilon(mu, delta + slack)
        assert e.upper - e.lower <= 2 * e.details["eps_error"] + 1.05 * extra + 1e-9
    d = run.delta([1.0, 5.0, 10.0])
    truth = mk.gdp.delta(mu, [1.0, 5.0, 10.0])
    assert np.all(d.lower <= truth) and np.all(truth <= d.upper)


@pytest.mark.parametrize("e0,k", [(0.5, 20), (0.1, 300), (1.5, 7)])
def test_randomized_response_against_binomial_sum(e0, k):
    run = mk.compose((mk.randomized_response(epsilon=e0), k))
    eps = np.array([0.0, 0.3, 1.0, 2.5])
    d = run.delta(eps)
    truth = np.array([rr_delta(e0, k, x) for x in eps])
    assert np.all(d.lower <= truth + 1e-15) and np.all(truth <= d.upper + 1e-15)


def test_fourier_accountant_table_value_inside_bounds():
    # notes.md 8.1 V1: q = 0.01, sigma = 1.5, k = 1e4, eps = 1: converged delta 0.04960141031
    run = mk.compose((mk.subsample(mk.gaussian(sigma=1.5), 0.01), 10_000))
    d = run.delta(1.0, method="fft", variant="prv")
    assert d.lower <= 0.0496014103163 <= d.upper
    assert abs(float(d) - 0.0496014103163) < 2e-6
    # connect the dots (the FFT's default): a narrower certified interval on a coarser grid
    d = run.delta(1.0, method="fft")
    assert d.lower <= 0.0496014103163 <= d.upper and d.upper - d.lower < 1.5e-3


def test_remove_dominates_for_subsampled_gaussian_and_max_is_reported():
    sg = mk.subsample(mk.gaussian(sigma=1.0), 0.05)
    run = mk.compose((sg, 50))
    from mechkit.accountants import fft
    grid = fft.plan(run.items, 0.01, 1e-10)
    rem = fft.compose_direction(run.items, "remove", grid).delta(np.array([1.0]))[0]
    add = fft.compose_direction(run.items, "add", grid).delta(np.array([1.0]))[0]
    assert rem > add
    assert float(run.delta(1.0, method="fft", variant="prv")) == pytest.approx(max(rem, add), rel=1e-12)


_EPSILON_ANSWERED = Reached(epsilon=0.5)


@_EPSILON_ANSWERED
@settings(deadline=None)
@given(mu=st.floats(0.1, 6.0), k=st.integers(1, 2000), logd=st.floats(-9, -2), eps=st.floats(0.0, 6.0))
def test_bounds_contain_truth_random_gaussian(mu, k, logd, eps):
    # q = 1 subsampling is the Gaussian itself, run through the quadrature path: exact truth from mu-GDP.  The
    # epsilon query may refuse below the grid's floor; at least half the examples must check its bounds
    sigma = math.sqrt(k) / mu
    run = mk.compose((mk.subsample(mk.gaussian(sigma=sigma), 1.0), k))
    delta = 10.0 ** logd
    try:
        e = run.epsilon(delta, eps_error=0.05)
    except NumericalLimitError:
        # refusing is right only below the floating-point floor of the grid (notes.md 1.4)
        assert delta < 1e-6
        event("epsilon refused below the floor")
    else:
        truth = mk.gdp.epsilon(mu, delta)
        assert e.lower <= truth <= e.upper
        _EPSILON_ANSWERED.hit("epsilon")
    d = run.delta(eps, eps_error=0.05)
    t = mk.gdp.delta(mu, eps)
    assert d.lower <= t <= d.upper


@settings(deadline=None)
@given(e0=st.floats(0.05, 2.0), k=st.integers(1, 60), eps=st.floats(0.0, 4.0))
def test_bounds_contain_truth_random_rr(e0, k, eps):
    d = mk.compose((mk.randomized_response(epsilon=e0), k)).delta(eps, eps_error=0.05)
    t = rr_delta(e0, k, eps)
    assert d.lower - 1e-15 <= t <= d.upper + 1e-15


def test_bad_input_leaves_composition_unchanged():
    g = mk.gaussian(sigma=1.0)
    run = mk.compose((g, 10))
    before = run.items
    for kwargs in ({"delta": 1.0}, {"delta": -1e-5}, {"delta": float("nan")}):  # delta = 0: the largest loss
        with pytest.raises(ParameterError, match="delta"):
            run.epsilon(**kwargs)
        with pytest.raises(ParameterError, match="delta"):
            run.epsilon(method="fft", **kwargs)
    with pytest.raises(ParameterError, match="epsilon"):
        run.delta(-0.5)
    with pytest.raises(ParameterError, match="eps_error"):
        run.epsilon(1e-5, eps_error=float("inf"))
    with pytest.raises(ParameterError, match="delta_error"):
        run.delta(1.0, delta_error=float("nan"))
    with pytest.raises(ParameterError, match="unknown method"):
        run.epsilon(1e-5, method="nope")
    assert run.items == before
    with pytest.raises(AttributeError):
        run._items = ()


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_bad_counts(bad):
    with pytest.raises(ParameterError, match="count"):
        mk.compose((mk.gaussian(sigma=1.0), bad))


def test_zero_mechanisms_and_wrong_types():
    with pytest.raises(ParameterError, match="at least one"):
        mk.compose()
    with pytest.raises(ParameterError, match="cannot compose"):
        mk.compose(3.0)


def test_compose_merges_and_nests():
    a = mk.gaussian(sigma=1.0)
    run = mk.compose((a, 5), mk.gaussian(sigma=1.0), (mk.compose((a, 2)), 3))
    assert len(run) == 1 and run.total_count == 12


def test_memory_limit_raises_before_allocating():
    run = mk.compose((mk.gaussian(sigma=1.0), 10))
    with pytest.raises(ParameterError, match=r"eps_error >= .* fits"):
        run.epsilon(1e-5, method="fft", eps_error=1e-6, memory_limit=10 * 2**20)
    # the default (auto) answers from the saddle point, which needs no grid, and says why
    est = run.epsilon(1e-5, eps_error=1e-6, memory_limit=10 * 2**20)
    assert est.method == "spa" and "fft could not answer" in est.details["auto"]


def test_planned_memory_covers_the_measured_peak():
    # the memory limit is checked against N * BYTES_PER_POINT before allocating: that must bound the real peak
    # (it did not: 123 bytes per point were live against 64 planned, before the curve stopped storing y and D)
    import tracemalloc
    from mechkit.accountants import fft
    run = mk.compose((mk.subsample(mk.gaussian(sigma=1.0), 0.01), 2000))
    run.epsilon(1e-5, eps_error=0.05, method="fft", variant="prv")  # warm: compiled kernels, memoised CGFs
    tracemalloc.start()
    try:
        e = run.epsilon(1e-5, eps_error=0.01, method="fft", variant="prv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    n = e.details["grid_points"]
    assert n > 1e5
    assert peak <= n * fft.BYTES_PER_POINT + 2**20


def test_tiny_delta_says_it_cannot_be_certified():
    run = mk.compose((mk.subsample(mk.gaussian(sigma=2.0), 0.01), 3000))
    with pytest.raises(NumericalLimitError, match=r"smallest certifiable delta.*spa"):
        run.epsilon(1e-15, method="fft")


def test_estimate_behaves_as_number():
    e = mk.compose(mk.gaussian(sigma=1.0)).epsilon(1e-5)
    assert isinstance(e, float) and e * 2 == pytest.approx(2 * e.value)
    assert e.method == "fft" and e.lower <= e <= e.upper


@pytest.mark.parametrize("p,sigma,k,delta,ref", [
    (1e-3, 0.8, 100, 1e-7, 0.44118), (1e-3, 0.8, 1000, 1e-7, 0.70371), (1e-3, 0.8, 2000, 1e-7, 0.80712),
    (0.05, 1.0, 200, 1e-5, 4.76592)])
def test_notes_8_3_dp_sgd_epsilons(p, sigma, k, delta, ref):
    # notes.md 8.3: independent re-implementations (PRV with eps_error 0.01, and FA for the last row)
    run = mk.compose((mk.subsample(mk.gaussian(sigma=sigma), p), k))
    e = run.epsilon(delta, method="fft", variant="prv")
    assert e.lower <= ref <= e.upper
    assert float(e) == pytest.approx(ref, abs=5e-5)  # refs are given to 5 digits
    # connect the dots (the FFT's default): certified, each bound within eps_error of its estimate
    c = run.epsilon(delta, method="fft")
    assert c.lower <= ref <= c.upper and c.upper - c.lower <= 2 * c.details["eps_error"]


def test_notes_8_3_delta():
    run = mk.compose((mk.subsample(mk.gaussian(sigma=0.8), 4e-3), 1000))
    d = run.delta(1.5, method="fft", variant="prv")
    assert float(d) == pytest.approx(2.575e-6, rel=1e-3)
    assert d.lower <= 2.575e-6 <= d.upper
    c = run.delta(1.5, method="fft")
    assert c.lower <= 2.575e-6 <= c.upper and float(c) == pytest.approx(2.575e-6, rel=0.05)


# ---- the Fourier accountant's own scheme, variant="fa" (notes.md 8.1, P1 Tables 1 and 2) -------------------

P1_RUN = None


def p1_run():
    global P1_RUN
    if P1_RUN is None:
        P1_RUN = mk.compose((mk.subsample(mk.gaussian(sigma=1.5), 0.01), 10_000))
    return P1_RUN


@pytest.mark.slow
@pytest.mark.parametrize("n,ref,rel_err", [
    (50_000, 0.0491228786423, 2.01e-2), (200_000, 0.0496013846114, 1.06e-6),
    (800_000, 0.0496014103252, None), (3_200_000, 0.0496014103163, None)])
def test_fa_reproduces_p1_table_1(n, ref, rel_err):
    r = p1_run().delta(1.0, method="fft", variant="fa", L=12.0, n=n)
    assert abs(float(r) - ref) < 5e-11  # the table's 13 digits, up to the last two
    assert r.method == "fft-fa" and not r.certified and r.details["n"] == n
    err = float(np.ravel(r.details["richardson_error"])[0]) / float(r)  # the table's err(L, n) is relative
    if rel_err is not None:
        assert err == pytest.approx(rel_err, rel=0.05)
    else:
        assert err < 1e-9  # at the rounding floor, as in the table
    assert r.details["tail_estimate"] < 1e-20  # (7.3) is O(1e-24) at L = 12


@pytest.mark.slow
@pytest.mark.parametrize("L,ref,tail_hi", [(2.0, 0.0422160172923, 0.5), (6.0, 0.0496014103158, 1e-5),
                                           (10.0, 0.0496014103134, 1e-15)])
def test_fa_reproduces_p1_table_2(L, ref, tail_hi):
    r = p1_run().delta(1.0, method="fft", variant="fa", L=L, n=3_200_000)
    assert abs(float(r) - ref) < 5e-11
    # the generic Chernoff form of (7.3) with the exact CGF: below the paper's Abadi-style estimate
    assert r.details["tail_estimate"] < tail_hi


def test_fa_converged_value_inside_certified_bounds():
    run = p1_run()
    fa = run.delta(1.0, method="fft", variant="fa", L=12.0, n=800_000)
    for variant in ("prv", "ctd"):
        cert = run.delta(1.0, method="fft", variant=variant)
        assert cert.lower <= float(fa) <= cert.upper
        assert cert.certified and cert.details["variant"] == variant


def test_fa_epsilon_and_defaults_against_the_contour_truth():
    # subsampled Gaussian x500 + Laplace x3.  Truth: the contour integral of the product of the mgfs, both directions
    # (tests/references/contour_mix.py): epsilon(1e-5) = 2.795188; checked by the sign of delta_true - 1e-5 at the
    # ends of each interval (no root search).  The certified interval must hold it and be at most 2 eps_error wide
    # plus the truth's spread over delta +- delta_error (measured 0.020395); the FA estimate's Richardson bracket
    # (+-8.0e-5, not certified) held it too on 2026-11-25.  The FA value inside the certified interval: consistency
    from tests.references import contour_mix as C
    run = mk.compose((mk.subsample(mk.gaussian(sigma=1.0), 0.02), 500), (mk.laplace(scale=20.0), 3))
    ref = C.Composition((C.subsampled_gaussian(1.0, 0.02), 500), (C.laplace(20.0), 3))
    fa = run.epsilon(1e-5, method="fft", variant="fa")  # default L and n from the certified plan
    prv = run.epsilon(1e-5, method="fft")
    assert ref.epsilon_within(1e-5, prv.lower, prv.upper)
    assert prv.upper - prv.lower <= 2 * prv.details["eps_error"] + 1e-3
    assert ref.epsilon_within(1e-5, fa.lower, fa.upper) and fa.upper - fa.lower <= 2e-4
    assert prv.lower <= float(fa) <= prv.upper
    assert fa.lower <= float(fa) <= fa.upper and fa.method == "fft-fa"


@pytest.mark.parametrize("kw,word", [({"variant": "exact"}, "variant"), ({"variant": "fa", "n": 1001}, "n must"),
                                     ({"variant": "fa", "n": 2.5}, "n must"), ({"variant": "fa", "L": -1.0}, "L"),
                                     ({"variant": "fa", "L": float("nan")}, "L"), ({"L": 12.0}, "variant='fa'"),
                                     ({"variant": "fa", "L": 12.0, "n": 2**30}, "memory_limit")])
def test_fa_bad_options(kw, word):
    run = p1_run()
    with pytest.raises(ParameterError, match=word):
        run.delta(1.0, method="fft", **kw)


# ---- point masses at +inf (notes.md 1.1): the canonical (eps0, delta0)-DP pair (tests/helpers.py), composed -----

def approx_dp_exact_delta(e0, d0, k, eps, mu=0.0):
    # Kairouz et al.: 1 - (1 - d0)^k + (1 - d0)^k * (pure eps0 randomized response composed k times);
    # with a Gaussian partner N(mu^2/2, mu^2) the finite part is sum_j w_j delta_gauss(eps - loss_j)
    from scipy.stats import binom, norm
    j = np.arange(k + 1)
    w = binom.pmf(j, k, math.exp(e0) / (1 + math.exp(e0)))
    loss = (2 * j - k) * e0
    if mu == 0.0:
        fin = np.sum(w * np.maximum(0.0, 1.0 - np.exp(eps - loss)))
    else:
        x = eps - loss
        fin = np.sum(w * (norm.cdf(-x / mu + mu / 2) - np.exp(x) * norm.cdf(-x / mu - mu / 2)))
    return 1.0 - (1.0 - d0) ** k + (1.0 - d0) ** k * fin


@pytest.mark.parametrize("e0,d0,k", [(0.5, 1e-4, 20), (0.2, 1e-6, 300)])
def test_point_mass_at_infinity_composes_exactly(e0, d0, k):
    m = approx_dp_pair()(eps0=e0, delta0=d0)
    assert m.remove.inf_mass == pytest.approx(d0, rel=1e-12, abs=0.0)
    eps = np.array([0.5, 1.0, 2.0, 3.0])
    pure = mk.compose((m, k)).delta(eps)
    exact = np.array([approx_dp_exact_delta(e0, d0, k, e) for e in eps])
    assert np.all(pure.lower <= exact) and np.all(exact <= pure.upper)
    assert np.all(pure.lower >= 1.0 - (1.0 - d0) ** k - 1e-12)  # the mass at +inf alone
    # with a continuous partner on the same grid (Gaussian, mu = 0.5): exact by conditioning on the atoms
    mixed = mk.compose((m, k), mk.gaussian(sigma=2.0)).delta(eps)
    exact = np.array([approx_dp_exact_delta(e0, d0, k, e, mu=0.5) for e in eps])
    assert np.all(mixed.lower <= exact) and np.all(exact <= mixed.upper)
    assert np.allclose(mixed, exact, atol=2e-4)
    e = mk.compose((m, k)).epsilon(1e-2)
    # the exact epsilon: delta(eps) is continuous and decreasing, above 1e-2 at 0 and below it at 20 (the +inf mass
    # 1 - (1 - d0)^k is under 1e-2), so a root finder gives it (a 1e-4 grid search gave the same value to 5e-5)
    ref = brentq(lambda x: approx_dp_exact_delta(e0, d0, k, x) - 1e-2, 0.0, 20.0, xtol=1e-12)
    assert e.lower <= ref + 1e-4 and ref - 1e-4 <= e.upper


def test_floating_point_allowance_bounds_the_actual_rounding_error():
    # the composed pmf from the FFT against the same circular convolution power done directly in extended
    # precision: the l1 difference must stay below the allowance the bounds use
    m = mk.subsample(mk.gaussian(sigma=0.7), 0.2)
    items = [(m, 60)]
    grid = fft.plan(items, 0.5, 1e-6)
    assert grid.N < 4000
    curve = fft.compose_direction(items, "remove", grid, 1e-6)
    pmf, mu, _, _ = fft.discretise(m.plrv("remove"), grid, fft.TAIL_SHARE * 1e-6 / 60)
    N, n = grid.N, grid.n
    x = np.zeros(N, dtype=np.longdouble)
    x[np.arange(-n, n + 1) % N] = pmf

    def circ(a, b):
        full = np.convolve(a, b)
        out = full[:N].copy()
        out[: full.size - N] += full[N:]
        return out

    acc, base, k = None, x, 60
    while k:
        if k & 1:
            acc = base.copy() if acc is None else circ(acc, base)
        k >>= 1
        if k:
            base = circ(base, base)
    half = N // 2 + 1
    order = np.concatenate((np.arange(half, N), np.arange(half)))
    exact = acc[order]
    # DiscreteCurve keeps the pmf only through its suffix sums: compare delta at many epsilons instead
    eps = np.linspace(0.0, 3.0, 61)
    y = curve.y
    ref = np.array([float(np.sum(exact[y > e] * (1 - np.exp(e - y[y > e].astype(np.longdouble))))) for e in eps])
    err = np.max(np.abs(curve.delta_fin(eps) - ref))
    assert err <= curve.fp
    assert curve.fp < 1e-9  # and the allowance is not vacuous at this size


@pytest.mark.parametrize("mu", [40.0, 60.0])
def test_large_epsilon_beyond_exp_range_matches_gdp(mu):
    # two Gaussians with mu-GDP mu: epsilon(1e-5) ~ 970 (mu = 40) and ~ 2100 (mu = 60), where e^{-y} alone
    # underflows (y > 745) in the suffix sums of p e^{-y}, and the domain's far end (y < -709) overflows: the FFT
    # returned -1107 (mu = 40; a nan-poisoned running minimum) and, with that fixed, delta 6-11% too large (the
    # e^{eps} P(Y' > eps) term lost to underflow: its certified lower bound above the truth).  Now both sides are
    # kept scaled: the certified interval must hold the exact mu-GDP epsilon, and delta(eps) the exact delta
    sigma = math.sqrt(2.0) / mu
    run = mk.compose((mk.gaussian(sigma=sigma), 2))
    e = run.epsilon(1e-5, eps_error=0.05)
    want = mk.gdp.epsilon(mu, 1e-5)
    assert e.lower <= want <= e.upper and e.upper - e.lower <= 0.2
    eps = np.array([want - 50.0, want, want + 10.0])
    d = run.delta(eps, eps_error=0.05, delta_error=1e-9)
    exact = np.array([mk.gdp.delta(mu, float(x)) for x in eps])
    assert np.all(d.lower <= exact) and np.all(exact <= d.upper)


def test_astronomical_grid_is_a_parameter_error_not_an_overflow():
    # Gaussian x 1e12: the grid would have ~4e20 points; next_fast_len raised OverflowError (a traceback, not a
    # MechkitError) before the memory check
    run = mk.compose((mk.gaussian(1.0), 10**12))
    with pytest.raises(ParameterError, match="memory_limit"):
        run.epsilon(1e-5, method="fft")


def test_rounding_bound_covers_the_worst_phases_of_every_monotone_functional():
    """The summation-by-parts term of the floating-point allowance against the worst case it claims to bound.
    Spectral errors of modulus at most e_w (any phases) reach a sum_j g_j eps_j, g in [0, 1] monotone along the
    sorted grid, as (1/N) sum_w e_w G_w; g is a convex combination of suffix indicators (arcs of the circle), and
    for an arc of length L the worst phases give (1/N) sum_w e_w |sin(pi w L / N) / sin(pi w / N)| exactly (L at
    w = 0): the bound must hold over every L, and be tighter than the l1 bound where errors sit at low frequencies."""
    N = 1024
    grid = fft.Grid.__new__(fft.Grid)
    grid.N, grid.n = N, 300
    w = np.arange(N // 2 + 1, dtype=float)
    full_w = np.arange(N, dtype=float)
    L = np.arange(N + 1, dtype=float)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        G = np.abs(np.sin(np.pi * full_w * L / N) / np.sin(np.pi * full_w / N))
    G[:, 0] = L[:, 0]
    for width in (2.0, 20.0, 200.0, 1e9):  # a long composition's narrow band ... flat (one pmf, no power)
        amp = fft.Spectrum(grid).amp
        amp.T = np.exp(-(w / width) ** 2) * 1e-9
        amp.P = np.zeros_like(w)
        bound = amp.error_bound(N, 1, np.zeros(N)) - 8.0 * fft.MACHINE_EPS
        e_full = np.concatenate((amp.T, amp.T[1:N - N // 2][::-1]))  # e_{N-w} = e_w
        worst = float(np.max(G @ e_full)) / N
        l1 = math.sqrt(2.0 * float(np.sum(amp.T ** 2)))
        assert worst <= bound <= l1 * (1 + 1e-12)
        assert bound < 3.0 * worst  # and not far from it


def test_floating_point_allowance_of_a_long_composition_against_extended_precision():
    """k = 20000 Gaussian mechanisms: the composed curve's deltas against the same circular convolution power
    computed in extended precision (NumPy's long double FFT, unit roundoff 5e-20: its own error is ~2000x below
    double's) must lie within the floating-point allowance, which the low-frequency terms (the mass summed
    within 4 units of rounding, summation by parts) keep well below the first-order l1 model's."""
    if np.finfo(np.longdouble).eps > 1e-18:
        pytest.skip("long double is double on this platform")
    import scipy.fft as sfft
    m = mk.gaussian(sigma=30.0)
    k = 20000
    items = [(m, k)]
    grid = fft.plan(items, 1.0, 1e-6)
    N, n = grid.N, grid.n
    assert 2 ** 13 < N < 2 ** 17
    pmf, mu, _, _ = fft.discretise(m.plrv("remove"), grid, fft.TAIL_SHARE * 1e-6 / k)
    acc = fft.Spectrum(grid)
    acc.add(pmf, k, mu)
    amp = acc.amp
    c, u = amp.c, fft.MACHINE_EPS
    old = amp.T.copy()
    old[0] *= c / (4.0 * u)  # the l1 model with the FFT's error at w = 0 too
    l1_model = math.sqrt(2.0 * float(np.sum((old + 2.0 * k * u * amp.P) ** 2)))
    curve = acc.curve()
    x = np.zeros(N, dtype=np.longdouble)
    x[np.arange(-n, n + 1) % N] = pmf
    exact = sfft.irfft(fft_grid.power(sfft.rfft(x), k), N)
    half = N // 2 + 1
    exact = np.concatenate((exact[half:], exact[:half]))
    eps = np.linspace(0.0, 2.0, 41)
    y = curve.y.astype(np.longdouble)
    ref = np.array([float(np.sum(exact[y > e] * -np.expm1(e - y[y > e]))) for e in eps])
    err = np.max(np.abs(curve.delta_fin(eps) - ref))
    assert 0 < err <= curve.fp
    assert curve.fp < 0.6 * l1_model
    # the lowest frequencies checked by a direct sum (``fft_dft``): without it, the FFT's bound everywhere but w = 0
    fft_only = fft.Spectrum(grid)
    fft_only._low_errors = lambda *a: np.zeros(0)
    fft_only.add(pmf, k, mu)
    assert curve.fp < 0.3 * fft_only.curve().fp


def _domain_by_full_scans(items, eps_error, delta_error):
    """Remark 5.6's half-width as every mechanism's own Renyi scan gives it (the domain before its per-mechanism
    scans were skipped where the composition's term dominates)."""
    from mechkit.accountants import rdp
    from mechkit.relations import DIRECTIONS
    k = sum(c for _, c in items)
    per = comp = 0.0
    for d in DIRECTIONS:
        for m, _ in items:
            per = max(per, float(rdp.epsilon([(m, 1)], min(delta_error / (8 * k), 0.5), d, alphas=rdp.COARSE_ALPHAS,
                                             refine=False, finite=True)))
        comp = max(comp, float(rdp.epsilon(items, min(delta_error / 4, 0.5), d, alphas=rdp.COARSE_ALPHAS,
                                           refine=False, finite=True)))
    return 3.0 + max(eps_error + comp, per)


@pytest.mark.parametrize("make", [
    lambda: [(mk.subsample(mk.gaussian(sigma=0.8), 0.01), 10_000)],               # the composition's term leads
    lambda: [(mk.subsample(mk.gaussian(sigma=float(s)), 0.01), 1000) for s in np.linspace(0.8, 1.2, 10)],
    lambda: [(mk.gaussian(sigma=1.0), 1)],                                        # one run: its own term leads
    lambda: [(mk.laplace(scale=0.2), 1), (mk.subsample(mk.gaussian(sigma=2.0), 0.01), 50)],  # one loud mechanism
    lambda: [(mk.randomized_response(epsilon=2.0), 3), (mk.gaussian(sigma=3.0), 2)],
    lambda: [(mk.subsample(mk.gaussian(sigma=2.0), 0.001), 100)],                # the minimum at order 32-128
])
def test_domain_equals_the_full_scans(make):
    # the per-mechanism scans skipped where the composition's orders keep them below eps_error + its bound, and
    # the composition's scans started at a Gaussian model's order (rdp.coarse_bound; 36 -> 22 CGF quadratures at
    # sigma 0.8, q 0.01, k 1e3): the same half-width as with every scan made from the first order
    items = make()
    for ee, de in ((2.1e-3, 1e-8), (0.01, 1e-10)):
        assert fft_grid.domain(items, ee, de) == _domain_by_full_scans(make(), ee, de)

