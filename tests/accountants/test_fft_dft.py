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
    not the FFT's 8 eps log2 N; a law composed a few times keeps the FFT's."""
    import mechkit as mk
    from mechkit.accountants import fft_grid as fft

    m = mk.subsample(mk.gaussian(sigma=0.8), 0.01)
    grid = fft.Grid(60.0, 0.005)
    pmf = fft.discretise(m.plrv("remove"), grid, 1e-15)[0]
    x = np.fft.rfft(np.roll(np.concatenate((pmf, np.zeros(grid.N - pmf.size))), -grid.n))
    spec = fft.Spectrum(grid, 10**5)
    d = spec._low_errors(pmf, x, np.abs(x), 10**5)
    assert 3 <= d.size <= fft.LOW_DFT_MAX
    assert np.all(d <= 20 * EPS) and spec.amp.c > 100 * EPS
    assert spec._low_errors(pmf, x, np.abs(x), 10).size == 0
