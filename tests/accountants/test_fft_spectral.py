"""The connect-the-dots curves of a long composition kept as their band-limited spectrum (``fft_spectral``): the
spectral sums against the same sums in mpmath (within the curve's allowance ``eval_error``), the curve against the
discrete curve of the same spectrum (inverse FFT and suffix sums), where each kind is used, and saved curves."""
import copy
import math

import mpmath
import numpy as np
import pytest
import scipy.fft as sfft

import mechkit as mk
from mechkit.accountants import fft_ctd, fft_grid, fft_spectral
from mechkit.relations import DIRECTIONS
from tests.helpers import assert_same_curve_answers

LONG = [((0.8, 0.01), 10_000, 2e-3), ((2.0, 0.1), 3_000, 1e-3), ((1.0, 1.0), 300, 1e-3)]


def _spectra(items, eps_error, monkeypatch):
    """The composed ``fft_grid.Spectrum`` objects of a CTD grid (copied just before their curves are made)."""
    got = []
    orig = fft_grid.Spectrum.curve

    def spy(self, spectral=False):
        got.append(copy.deepcopy(self))
        return orig(self, spectral)
    monkeypatch.setattr(fft_grid.Spectrum, "curve", spy)
    monkeypatch.setattr(fft_ctd, "THREAD_POINTS", 1 << 62)
    composed = fft_ctd.CTDComposed(items, eps_error, 1e-10)
    monkeypatch.undo()
    return composed, got


def _exact_suffix(curve, r):
    """A(r), B(r) of the curve's band in mpmath (40 digits; the band's doubles taken as exact)."""
    mpmath.mp.dps = 40
    N, half = curve.N, curve.half
    rho = mpmath.exp(-mpmath.mpf(curve.step))
    L = N - r
    y0 = mpmath.mpf(float(curve.band[0].real))
    A = y0 * L
    B = y0 * (1 - rho ** L) / (1 - rho)
    for w in range(1, curve.band.size):
        Y = mpmath.mpc(float(curve.band[w].real), float(curve.band[w].imag))
        z = mpmath.exp(2j * mpmath.pi * w / N)
        rot = Y * z ** half
        zr = z ** r
        A += 2 * mpmath.re(rot * (zr - 1) / (1 - z))
        B += 2 * mpmath.re(rot * (zr - rho ** L) / (1 - rho * z))
    return A / N, B / N


@pytest.mark.parametrize("mech,k,eps_error", LONG)
def test_the_spectral_sums_are_within_their_allowance_of_exact_ones(mech, k, eps_error):
    """A(r) and B(r) (and the epsilon search's table of D) against mpmath at random support points and the ends:
    the rounding of a delta, |dA| + |dB|, within ``eval_error`` (measured 1-3 orders below it)."""
    sigma, q = mech
    composed = fft_ctd.CTDComposed(((mk.subsample(mk.gaussian(sigma), q), k),), eps_error, 1e-10)
    rng = np.random.default_rng(7)
    for d in DIRECTIONS:
        for curve in composed.curves[d]:
            assert isinstance(curve, fft_spectral.SpectralCurve), (mech, k)
            N = curve.N
            rs = np.concatenate(([0, N - 1, N // 2], rng.integers(0, N, 3)))
            A, B = curve.suffix(rs)
            for r, a, b in zip(rs, A, B):
                ea, eb = _exact_suffix(curve, int(r))
                err = abs(a - float(ea)) + abs(b - float(eb))
                assert err <= curve.eval_error, (mech, d, int(r), err, curve.eval_error)
            js, D = curve._table()
            for i in rng.integers(0, js.size, 2):
                ea, eb = _exact_suffix(curve, int(js[i]) + 1)
                assert abs(D[i] - float(ea - curve.rho * eb)) <= curve.eval_error


@pytest.mark.parametrize("mech,k,eps_error", LONG)
def test_a_spectral_curve_answers_as_the_discrete_curve_of_its_spectrum(mech, k, eps_error, monkeypatch):
    """The same composed spectrum as a discrete curve (inverse FFT, suffix sums) and as a spectral one: delta at
    random points (negative, beyond the support, on support points) within the two curves' rounding allowances
    (the discrete one's inverse FFT and sums, the spectral one's ``eval_error``); epsilon at delta 1e-12 .. 0.5 where
    the discrete curve crosses it, and to 1e-7 relative of the discrete curve's epsilon where delta is well above
    the rounding (the same cell, inverted the same way)."""
    sigma, q = mech
    composed, spectra = _spectra(((mk.subsample(mk.gaussian(sigma), q), k),), eps_error, monkeypatch)
    rng = np.random.default_rng(11)
    for spec in spectra:
        disc_spec = copy.deepcopy(spec)
        N = spec.grid.N
        composed_pmf = sfft.irfft(disc_spec.spectrum, N)
        inverse = disc_spec.amp.c * math.sqrt(N) * math.sqrt(float(np.dot(composed_pmf, composed_pmf)))
        disc = disc_spec.curve(spectral=False)
        sc = spec.curve(spectral=True)
        assert isinstance(sc, fft_spectral.SpectralCurve) and isinstance(disc, fft_grid.DiscreteCurve)
        top = float(disc.y[-1])
        eps = np.concatenate((rng.uniform(-3.0, top + 2.0, 200), disc.y[rng.integers(0, N, 50)]))
        tol = sc.eval_error + disc.sum_error + inverse
        direct = np.concatenate([sc.delta_fin(eps[i:i + 50]) for i in range(0, eps.size, 50)])  # the sums
        dense = sc.delta_fin(eps)                       # more than DENSE_POINTS: its suffix-sum arrays
        assert eps.size > fft_spectral.DENSE_POINTS >= 50
        assert np.max(np.abs(direct - disc.delta_fin(eps))) <= tol
        assert np.max(np.abs(dense - direct)) <= 2.0 * sc.eval_error
        for target in np.geomspace(1e-12, 0.5, 25):
            a, b = sc.epsilon(target), disc.epsilon(target)
            # the spectral answer is where the discrete curve crosses the target, to the curves' rounding; where the
            # target is far above that rounding, the same epsilon
            assert disc.delta_fin(a) <= target + tol and (a == 0.0 or disc.delta_fin(a * (1 - 1e-9)) >= target - tol)
            if target >= 1e4 * tol:
                assert abs(a - b) <= 1e-7 * (1.0 + abs(b)), (target, a, b)
    assert composed.epsilon(1e-5).upper > 0


def test_where_each_kind_of_curve_is_used():
    # a long composition's spectrum is exactly 0 above its first few hundred frequencies: kept as its band; a short
    # one's is not (a single Gaussian run, three Laplace runs): the discrete curve
    long = fft_ctd.CTDComposed(((mk.subsample(mk.gaussian(1.0), 0.01), 5_000),), 3e-3, 1e-10)
    assert all(isinstance(c, fft_spectral.SpectralCurve) for pair in long.curves.values() for c in pair)
    for items in (((mk.gaussian(1.0), 1),), ((mk.laplace(1.0), 3),)):
        short = fft_ctd.CTDComposed(items, 3e-3, 1e-10)
        assert all(isinstance(c, fft_grid.DiscreteCurve) for pair in short.curves.values() for c in pair)
    c = long.curves["remove"][0]
    assert c.band.size <= fft_spectral.BAND_SHARE * c.N and c.Nc % 1 == 0 and c.N % c.Nc == 0


def test_a_saved_spectral_curve_answers_bit_for_bit(tmp_path):
    run = mk.dpsgd(noise_multiplier=0.9, sampling_rate=0.01, steps=5_000)
    curve = run.curve()
    kinds = {type(c).__name__ for g in curve._upper.grids.values() for pair in g.curves.values() for c in pair}
    assert "SpectralCurve" in kinds  # (with a discrete curve where a spectrum's band is wider: both kinds saved)
    curve.save(tmp_path / "long.curve")
    back = mk.load_curve(tmp_path / "long.curve")
    assert_same_curve_answers(curve, back, (1e-3, 1e-6, 1e-9), [0.0, 0.5, 2.0, 4.0])


def test_powers_are_computed_where_they_can_count():
    # a long composition's law spectrum raised to its count: the same floats as the repeated squaring where
    # (|x| + its rounding bound)^k can exceed NEGLIGIBLE_POWER, exact zeros only where it cannot; a short count
    # (or a spectrum mostly near 1) takes the plain power everywhere
    grid = fft_grid.Grid(20.0, 2e-3)
    m = mk.subsample(mk.gaussian(1.0), 0.01)
    pmf = fft_grid.discretise(m.plrv("remove"), grid, 1e-15)[0]
    buf = np.zeros(grid.N)
    buf[:grid.n + 1], buf[grid.N - grid.n:] = pmf[grid.n:], pmf[:grid.n]
    x = sfft.rfft(buf)
    a, c = np.abs(x), fft_grid._Amplification(grid.N).c
    for k in (1, 30, 10_000):
        got, cut = fft_grid.significant_power(x, a, k, c)
        full = fft_grid.power(x, k)
        zero = got == 0
        assert np.array_equal(got[~zero], full[~zero])
        assert np.all((a[zero & (full != 0)] + c) ** k <= fft_grid.NEGLIGIBLE_POWER)
        assert cut == (1 if k == 10_000 else 0) and (cut == 0) == np.array_equal(got, full)
