"""The compensated direct sum of a pmf's lowest frequencies (``fft_dft``), whose error bound replaces the FFT's
C u log2 N where a long composition amplifies it: twiddle tables, the sum and its bound against mpmath."""

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mechkit.accountants import fft_dft

EPS = fft_dft.EPS


def _exact(N, m):
    with mpmath.workdps(40):
        a = 2 * mpmath.pi * m / N
        return mpmath.cos(a), mpmath.sin(a)


@pytest.mark.parametrize("N", [1, 2, 3, 7, 8, 1000, 1024, 9375, 243000])
def test_twiddle_tables_within_their_stated_error(N):
    """Every table entry (an angle reduced to [0, pi/4] in integers: a wrong reflection is an O(1) error) within
    TABLE_ERROR eps of cos and sin of 2 pi m / N, and their products (every twiddle for N <= 9375, a sample of
    m otherwise) within TWIDDLE_ERROR eps."""
    bits, lo_c, lo_s, hi_c, hi_s = fft_dft.tables(N)
    B = 1 << bits
    worst = 0.0
    for m in list(range(min(B, N))) + [h * B for h in range(hi_c.size)]:
        c, s = (lo_c[m], lo_s[m]) if m < B else (hi_c[m // B], hi_s[m // B])
        ec, es = _exact(N, m % N)
        worst = max(worst, float(abs(c - ec)), float(abs(s - es)))
    assert worst <= fft_dft.TABLE_ERROR * EPS
    ms = range(N) if N <= 9375 else np.random.default_rng(1).integers(0, N, 3000)
    worst = 0.0
    for m in ms:
        a, b = int(m) >> bits, int(m) & (B - 1)
        c = hi_c[a] * lo_c[b] - hi_s[a] * lo_s[b]
        s = hi_s[a] * lo_c[b] + hi_c[a] * lo_s[b]
        ec, es = _exact(N, int(m))
        worst = max(worst, float(abs(c - ec)), float(abs(s - es)))
    assert worst <= fft_dft.TWIDDLE_ERROR * EPS


def _dft(x, first, N, W):
    with mpmath.workdps(30):
        out = []
        for w in range(1, W + 1):
            s = mpmath.mpc(0)
            for j, v in enumerate(x):
                if v:
                    s += mpmath.mpf(float(v)) * mpmath.expjpi(mpmath.mpf(-2 * w * (first + j)) / N)
            out.append(s)
        return out


@given(N=st.integers(16, 5000), size=st.integers(1, 200), shift=st.floats(0.0, 1.0), seed=st.integers(0, 2**31),
       W=st.integers(1, 6), zeros=st.booleans())
def test_direct_sum_within_its_bound_against_mpmath(N, size, shift, seed, W, zeros):
    """The direct sum of a pmf at signed circle positions (negative ones wrap) within ``error``'s bound of a
    30-digit DFT; the bound itself a few tens of units of rounding of the mass (far below the FFT's)."""
    size = min(size, N)
    rng = np.random.default_rng(seed)
    x = rng.exponential(size=size) ** 3
    if zeros:
        x[rng.random(size) < 0.5] = 0.0
    x /= max(x.sum(), 1e-300)
    first = int(-shift * size)  # the window's start at -size .. 0
    got = fft_dft.low_frequencies(x, first, N, W)
    ref = _dft(x, first, N, W)
    bound = fft_dft.error(float(x.sum()) * (1 + 8 * EPS), size)
    err = max(float(abs(mpmath.mpc(complex(g)) - r)) for g, r in zip(got, ref))
    assert err <= bound
    assert bound <= 25 * EPS


def test_a_long_composition_checks_its_low_frequencies():
    """A law composed 1e5 times: the error bounds at the checked frequencies are the direct sum's (about 17 eps),
    not the FFT's 8 eps log2 N; a law composed a few times, or a composition of fewer than LOW_DFT_TOTAL runs,
    keeps the FFT's."""
    import mechkit as mk
    from mechkit.accountants import fft_grid as fft

    m = mk.subsample(mk.gaussian(sigma=0.8), 0.01)
    grid = fft.Grid(60.0, 0.005)
    pmf = fft.discretise(m.plrv("remove"), grid, 1e-15)[0]
    x = np.fft.rfft(np.roll(np.concatenate((pmf, np.zeros(grid.N - pmf.size))), -grid.n))
    mass = float(pmf.sum())
    spec = fft.Spectrum(grid, 10**5)
    d = spec._low_errors(pmf, x, np.abs(x), mass, 10**5)
    assert 3 <= d.size <= fft.LOW_DFT_MAX
    assert np.all(d <= 20 * EPS) and spec.amp.c > 100 * EPS
    assert spec._low_errors(pmf, x, np.abs(x), mass, 10).size == 0
    assert fft.Spectrum(grid, 1500)._low_errors(pmf, x, np.abs(x), mass, 1500).size == 0  # below LOW_DFT_TOTAL


def _mp(z, w):
    return mpmath.mpc(mpmath.mpf(z[0, w]) + mpmath.mpf(z[1, w]), mpmath.mpf(z[2, w]) + mpmath.mpf(z[3, w]))


@pytest.mark.parametrize("N", [1, 7, 1000, 9375, 243000])
def test_double_double_tables_within_their_stated_error(N):
    """Every double-double table entry within TABLE_DD_ERROR of cos and sin of 2 pi m / N (50 digits)."""
    bits, lo, hi = fft_dft.dd_tables(N)
    B = 1 << bits
    worst = mpmath.mpf(0)
    with mpmath.workdps(50):
        for m in list(range(min(B, N)))[:1500] + [h * B for h in range(hi.shape[0])][:1500]:
            row = lo[m] if m < B else hi[m // B]
            a = 2 * mpmath.pi * (m % N) / N
            worst = max(worst, abs(mpmath.mpf(row[0]) + mpmath.mpf(row[1]) - mpmath.cos(a)),
                        abs(mpmath.mpf(row[2]) + mpmath.mpf(row[3]) - mpmath.sin(a)))
    assert worst <= fft_dft.TABLE_DD_ERROR


@given(N=st.integers(16, 5000), size=st.integers(1, 120), shift=st.floats(0.0, 1.0), seed=st.integers(0, 2**31),
       W=st.integers(1, 4), k=st.integers(1, 10**6))
def test_double_double_sums_and_powers_within_their_bounds(N, size, shift, seed, W, k):
    """The double-double sums (w = 0..W) within ``dd_error`` of a 50-digit DFT, and their k-th powers within
    2 k GAMMA_DD |z|^k of the 50-digit power of the sums as given (a wrong sign or index is an O(1) error; a
    double-precision slip is 1e-16, far above either bound)."""
    size = min(size, N)
    rng = np.random.default_rng(seed)
    x = rng.exponential(size=size) ** 3
    x /= max(x.sum(), 1e-300)
    first = int(-shift * size)
    z = fft_dft.low_frequencies_dd(x, first, N, W)
    zk = fft_dft.power_dd(z, k)
    bound = fft_dft.dd_error(float(x.sum()) * (1 + 8 * EPS), size)
    assert bound < 1e-26
    with mpmath.workdps(50):
        for w in range(W + 1):
            ref = mpmath.fsum(mpmath.mpf(float(v)) * mpmath.expjpi(mpmath.mpf(-2 * w * (first + j)) / N)
                              for j, v in enumerate(x))
            assert abs(_mp(z, w) - ref) <= bound
            exact = _mp(z, w) ** k
            assert abs(_mp(zk, w) - exact) <= 2 * k * fft_dft.GAMMA_DD * abs(exact) + mpmath.mpf(10) ** -300


def test_a_long_composition_of_few_laws_is_exact_at_its_lowest_frequencies():
    """A subsampled Gaussian composed 1e5 times: the composed spectrum's lowest frequencies (composed in
    double-double, then rounded once) within a unit of rounding of 50-digit powers of the pmf's exact transform,
    where the FFT's own powers are ~1e-12 off; its deltas within the two allowances of the FFT-only composition's;
    the allowance ~1e-13 against the FFT-only 1e-9."""
    import mechkit as mk
    from mechkit.accountants import fft_grid as fft

    k = 10**5
    m = mk.subsample(mk.gaussian(sigma=0.8), 0.01)
    grid = fft.Grid(80.0, 0.004)
    pmf = fft.discretise(m.plrv("remove"), grid, 1e-16)[0]
    exact = fft.Spectrum(grid, k, 1)
    plain = fft.Spectrum(grid)
    plain._low_errors = lambda *a: np.zeros(0)
    for acc in (exact, plain):
        acc.add(pmf, k)
    W = exact.exact["W"]
    Y = fft_dft.dd_value(exact.exact["Y"])
    assert 5 <= W <= fft.LOW_DD_MAX
    nz = np.flatnonzero(pmf)
    with mpmath.workdps(50):
        for w in (0, 1, W // 2, W):
            X = mpmath.fsum(mpmath.mpf(float(pmf[j])) * mpmath.expjpi(mpmath.mpf(-2 * w * (int(j) - grid.n)) / grid.N)
                            for j in nz)
            ref = X ** k
            assert abs(mpmath.mpc(complex(Y[w])) - ref) <= EPS * abs(ref) + mpmath.mpf(10) ** -30
            assert abs(mpmath.mpc(complex(plain.spectrum[w])) - ref) > 1e3 * EPS * abs(ref) or w == 0 or abs(ref) < 1e-6
    c1, c2 = exact.curve(), plain.curve()
    eps = np.linspace(0.0, 40.0, 81)
    assert np.all(np.abs(c1.delta_fin(eps) - c2.delta_fin(eps)) <= c1.fp + c2.fp)
    assert c1.fp < 1e-12 < 1e-10 < c2.fp


@pytest.mark.parametrize("sigma, q, k", [(0.8, 0.01, 100_000), (1.0, 0.02, 200_000)])
def test_long_compositions_in_double_double_hold_the_contour_truth(sigma, q, k):
    """DP-SGD compositions long enough for the double-double frequencies: the certified interval at eps_error 1e-3
    holds the contour integral's epsilon (tests/references/contour_mix.py; 43.5445 and 115.0649) and is narrow
    around it (the allowance, ~1e-13, no longer widens it)."""
    import mechkit as mk
    from tests.references import contour_mix as C

    est = mk.compose((mk.subsample(mk.gaussian(sigma=sigma), q), k)).epsilon(1e-5, method="fft", eps_error=1e-3)
    assert est.details["fp_allowance"] < 1e-12
    truth = C.Composition((C.subsampled_gaussian(sigma, q), k)).epsilon(1e-5)
    assert est.lower <= truth <= est.upper
    # each bound within eps_error of the estimate (the discretisation), then delta_error's widening
    assert est.upper - truth < 1e-3 and truth - est.lower < 1.5e-3
