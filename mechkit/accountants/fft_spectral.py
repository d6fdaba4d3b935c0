"""A composed discrete curve kept as its band-limited spectrum (``SpectralCurve``): the same delta(eps) and epsilon
as ``fft_grid.DiscreteCurve`` without the inverse FFT and the suffix sums over every grid point.

A long composition's spectrum (the product of its laws' spectra raised to their counts) is exactly 0 in floating
point at all but its lowest frequencies (111-801 of 13,000-972,000 at k >= 1e3: docs/performance.md).  The pmf on
the circle of N points is p_c = (1/N) sum_w Y_w zeta^(w c), zeta = e^(2 pi i / N), and the curve's sorted support
point i (value y_i = (first + i) step + shift) is circle point c(i) = (half + i) mod N, half = N // 2 + 1.  The
suffix sums the curve needs are geometric series of each frequency (Plancherel; the individual PLD accountant's
``delta`` does the same on its rows):

    A(r) = sum_{i >= r} p_i
         = (1/N) [Y_0 (N - r) + 2 Re sum_{w >= 1} Y_w zeta^(w half) (zeta^(w r) - 1) / (1 - zeta^w)]
    B(r) = sum_{i >= r} p_i e^-(y_i - y_r)
         = (1/N) [Y_0 (1 - rho^L) / (1 - rho) + 2 Re sum_{w >= 1} Y_w zeta^(w half) (zeta^(w r) - rho^L)
                  / (1 - rho zeta^w)]

with rho = e^-step and L = N - r (the terms with w and N - w are conjugate; the band stops below N / 2).  delta at
eps is A(r) - e^(eps - y_r) B(r), r the first support point above eps: O(band) a point.  The denominators are
formed without cancellation (1 - zeta^w = 2 sin(pi w / N) e^(i (pi w / N - pi / 2)), 1 - rho zeta^w = (1 - rho) +
rho (1 - zeta^w), each part accurate), so every term is within a few units of rounding of the bound
|Y_w| 2 / |1 - zeta^w| (or 2 / |1 - rho zeta^w|), and ``eval_error`` bounds the rounding of a delta by those sums.
The spectrum's own errors are the composer's (``fft_grid._Amplification``), as for the discrete curve.  A delta
query at many points (``DENSE_POINTS``: a trade-off curve, a plot) reads the discrete curve's suffix sums instead,
made once from the band's inverse FFT; ``eval_error`` covers both ways.

epsilon(target): the first support point j at or above the last one <= 0 with D_j = A(j + 1) - rho B(j + 1) <=
target, bracketed on a table of A and B at every (N / Nc)-th point (two inverse FFTs of Nc >= 8 x the band points:
the band-limited sums are exact there, up to rounding), then bisected by single evaluations (the exact D is
nonincreasing: a crossing found among computed values within ``eval_error`` of it keeps the bounds, whose
allowances include ``eval_error``), and inverted inside its cell as ``DiscreteCurve.epsilon``.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.fft as sfft

from . import fft_sums as _fs

MACHINE_EPS = np.finfo(float).eps
#: a composed spectrum is kept as a ``SpectralCurve`` where its last nonzero frequency is below this share of the
#: circle (a delta costs O(band); the discrete curve's inverse FFT and suffix sums cost O(N log N) once)
BAND_SHARE = 1.0 / 32.0
#: the table of ``SpectralCurve.epsilon`` has at least this many points per band frequency (and at least 64)
TABLE_OVERSAMPLING = 8
#: the inverse FFT's rounding, in units of rounding times log2 of its length (as fft_grid.FFT_ERROR_CONSTANT)
FFT_ULPS = 8.0
#: a delta query at more points than this reads the curve's suffix sums, made once (an inverse FFT of the band and
#: compensated sums: ``fft_grid.DiscreteCurve``'s arrays; a trade-off curve asks ~12,000 points)
DENSE_POINTS = 64
#: units of rounding allowed per term of the spectral sums (phases of integer multiples of 2 pi / N, the
#: denominators, the products), on the bound of each term's modulus; the pairwise summation adds log2 of the count
TERM_ULPS = 96.0


def count_le(first, step, shift, size, eps):
    """#{i : y_i <= eps} for each eps, y_i = (first + i) step + shift, i = 0 .. size - 1 (searchsorted on the grid,
    without the array)."""
    guess = np.floor((np.asarray(eps, float) - shift) / step) - first + 1
    c = np.clip(np.nan_to_num(guess, nan=0.0, posinf=size, neginf=0.0), 0, size).astype(np.int64)
    # the division may be off by one against the products that define y: one correction each way
    up = (c < size) & ((first + np.minimum(c, size - 1)) * step + shift <= eps)
    c = c + up
    down = (c > 0) & ((first + np.maximum(c - 1, 0)) * step + shift > eps)
    return c - down


def suffix_delta(d1, ld2, idx, eps):
    """delta_fin at eps from the suffix sums d1 = sum p and ld2 = log sum p e^-y (``fft_sums.suffix_sums``) at the
    counts idx of support points <= eps."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        out = d1[idx] - np.exp(eps + ld2[idx])
    return np.where(np.isfinite(out), out, 0.0)


class GridSupport:
    """What a composed curve on the arithmetic grid y_i = (first + i) step + shift, i < size, shares: the support
    points, their count up to eps, delta from the finite part's ``delta_fin`` and the mass at +inf, and epsilon's
    checks before the curve's own search (``_epsilon_fin``)."""

    @property
    def y(self):
        """The support points (computed; the same arithmetic as when the pmf was placed)."""
        return np.arange(self.first, self.first + self.size) * self.step + self.shift

    def _count_le(self, eps):
        return count_le(self.first, self.step, self.shift, self.size, eps)

    def delta(self, eps):
        return self.inf_mass + (1.0 - self.inf_mass) * self.delta_fin(eps)

    def epsilon(self, delta):
        """Smallest eps >= 0 with delta(eps) <= delta (inf when the mass at +inf alone exceeds delta): the finite
        part's target, 0 where delta(0) meets it, else the curve's own search from the last support point <= 0
        (``_epsilon_fin``)."""
        if delta <= self.inf_mass:
            return math.inf
        target = (delta - self.inf_mass) / (1.0 - self.inf_mass)
        if self.delta_fin(0.0) <= target:
            return 0.0
        return self._epsilon_fin(target, max(int(self._count_le(0.0)) - 1, 0))


class SpectralCurve(GridSupport):
    """A composed discrete curve from its spectrum's band (module docstring): ``delta_fin``, ``delta`` and
    ``epsilon`` as ``fft_grid.DiscreteCurve``'s (its support: N points y_i = (first + i) step + shift)."""

    def __init__(self, first, step, shift, band, N, inf_mass):
        self.first, self.step, self.shift = int(first), float(step), float(shift)
        self.size, self.N, self.inf_mass = int(N), int(N), inf_mass
        self.band = np.ascontiguousarray(band, dtype=complex)
        N, J = self.N, self.band.size
        self.half = N // 2 + 1
        w = np.arange(1, J)
        s = np.sin(np.pi / N * w)  # (w <= N / 4 here: no cancellation near pi)
        one_minus_zeta = 2.0 * s * np.exp(1j * (np.pi / N * w - np.pi / 2.0))
        rho = math.exp(-self.step)
        self.rho, self.one_minus_rho = rho, -math.expm1(-self.step)
        self.inv1 = 1.0 / one_minus_zeta
        self.inv2 = 1.0 / (self.one_minus_rho + rho * one_minus_zeta)
        self.w = w
        # Y_w zeta^(w half): the phase of the circle's rotation, once
        self.rot = self.band[1:] * np.exp(2j * np.pi / N * ((w * self.half) % N))
        y0 = float(self.band[0].real)
        mag = np.abs(self.band[1:])
        terms = 2.0 * float(np.sum(mag * 2.0 * (np.abs(self.inv1) + np.abs(self.inv2))))
        self.Nc = _table_length(N, max(TABLE_OVERSAMPLING * J, 64))
        ulps = TERM_ULPS + math.log2(max(J, 2)) + 2.0 + FFT_ULPS * math.log2(self.Nc)
        # A and B each: the Y_0 term (a few roundings of at most Y_0 (N + 1 / (1 - rho))) and the band's terms; the
        # delta A - e^t B (t <= 0) adds its own two roundings
        spectral = MACHINE_EPS * (4.0 * abs(y0) * (1.0 + 1.0 / (N * self.one_minus_rho)) + ulps * terms / N) \
            + 8.0 * MACHINE_EPS
        # the suffix sums of many-point queries (``DENSE_POINTS``): the inverse FFT's rounding, C u log2 N ||p||_2
        # sqrt(N), and the compensated sums' (fft_grid.DiscreteCurve), sum |p| <= sqrt(N) ||p||_2 = the spectrum's l2
        l2 = math.sqrt(y0 * y0 + 2.0 * float(np.sum(mag * mag)))
        dense = FFT_ULPS * MACHINE_EPS * math.log2(N) * l2 + (4.0 * MACHINE_EPS + 2.0 * N * MACHINE_EPS ** 2) * l2 \
            + 4.0 * MACHINE_EPS
        self.eval_error = max(spectral, dense)
        self.sum_error = self.eval_error
        self._y0 = y0
        self._tab = self._dense = None

    def suffix(self, r):
        """(A(r), B(r)) at the sorted support indices r (an integer array, 0 <= r <= N; both 0 at N)."""
        r = np.asarray(r, dtype=np.int64)
        N = self.N
        L = N - r
        ph = np.exp(2j * np.pi / N * ((np.multiply.outer(r, self.w)) % N))  # zeta^(w r)
        rl = np.exp(-self.step * L)
        a = (self.rot * (ph - 1.0) * self.inv1).real
        b = (self.rot * (ph - rl[..., None]) * self.inv2).real
        A = (self._y0 * L + 2.0 * a.sum(axis=-1)) / N
        B = (self._y0 * (-np.expm1(-self.step * L)) / self.one_minus_rho + 2.0 * b.sum(axis=-1)) / N
        end = r >= N
        return np.where(end, 0.0, A), np.where(end, 0.0, B)

    def _suffix_arrays(self):
        """The suffix sums at every support point (``fft_sums.suffix_sums`` of the band's inverse FFT), made once."""
        if self._dense is None:
            coef = np.zeros(self.N // 2 + 1, dtype=complex)
            coef[:self.band.size] = self.band
            composed = sfft.irfft(coef, self.N)
            p = np.concatenate((composed[self.half:], composed[:self.half]))
            self._dense = _fs.suffix_sums(p, self.y)
        return self._dense

    def delta_fin(self, eps):
        eps = np.asarray(eps, float)
        idx = self._count_le(eps)
        if eps.size > DENSE_POINTS:
            return suffix_delta(*self._suffix_arrays(), idx, eps)
        A, B = self.suffix(np.minimum(idx, self.N))
        y = (self.first + idx) * self.step + self.shift
        with np.errstate(over="ignore", invalid="ignore"):
            out = A - np.exp(eps - y) * B
        return np.where(np.isfinite(out) & (idx < self.size), out, 0.0)

    def _support_delta(self, j):
        """D_j = A(j + 1) - rho B(j + 1): delta at support point j (only mass strictly above it counts)."""
        A, B = self.suffix(np.asarray(j, dtype=np.int64) + 1)
        return A - self.rho * B

    def _table(self):
        """D at the support points j = m N / Nc - 1, m = 1 .. Nc (A and B at every (N / Nc)-th point, two inverse
        FFTs of length Nc; the last is 0)."""
        if self._tab is None:
            N, Nc = self.N, self.Nc
            r = np.arange(1, Nc + 1) * (N // Nc)
            L = N - r
            wave_a, const_a = self._wave(self.inv1)
            wave_b, const_b = self._wave(self.inv2)
            A = (self._y0 * L + wave_a - const_a) / N
            y0_b = self._y0 * (-np.expm1(-self.step * L)) / self.one_minus_rho
            D = A - self.rho * (y0_b + wave_b - np.exp(-self.step * L) * const_b) / N
            D[-1] = 0.0
            self._tab = (r - 1, D)
        return self._tab

    def _wave(self, inv):
        """(2 Re sum_w c_w zeta^(w r) at r = (m + 1) N / Nc for m = 0 .. Nc - 1, and its value at r = 0) for
        c_w = Y_w zeta^(w half) inv_w: one inverse FFT of length Nc (the band is below Nc / 2)."""
        Nc = self.Nc
        coef = np.zeros(Nc // 2 + 1, dtype=complex)
        coef[1:self.band.size] = self.rot * inv
        wave = sfft.irfft(coef, Nc) * Nc
        return np.concatenate((wave[1:], wave[:1])), 2.0 * float(np.sum(coef.real))

    def _epsilon_fin(self, target, lo):
        """``GridSupport.epsilon`` past its checks: the first support point j >= lo with D_j <= target, bracketed on
        the table and bisected, then the crossing inside its cell."""
        if float(self._support_delta(lo)) <= target:
            hi = lo
        else:  # the first j in (lo, hi] with D_j <= target (D_lo above it; D at the last point is 0)
            js, D = self._table()
            after = js > lo
            k = int(np.argmax(after & (D <= target)))
            hi = int(js[k])
            below = js[:k][js[:k] > lo]
            lo = int(below[-1]) if below.size else lo
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if float(self._support_delta(mid)) <= target:
                    hi = mid
                else:
                    lo = mid
        j = hi
        A, B = self.suffix(np.array([j]))
        A, B = float(A[0]), float(B[0])
        y = (self.first + j) * self.step + self.shift
        if not B > 0.0:
            return float(y)
        return max(0.0, math.log(max(A - target, 1e-320)) - math.log(B) + y)


def _table_length(N, at_least):
    """The smallest divisor of N that is at least ``at_least`` (N itself if none is smaller)."""
    best = N
    d = 1
    while d * d <= N:
        if N % d == 0:
            for c in (d, N // d):
                if at_least <= c < best:
                    best = c
        d += 1
    return best


def band_of(spectrum, N):
    """The leading part of a composed half spectrum up to its last nonzero frequency, or None where that is not
    below BAND_SHARE of the circle (the discrete curve is then the cheaper one)."""
    nz = np.flatnonzero(spectrum)
    J = int(nz[-1]) + 1 if nz.size else 1
    return spectrum[:J].copy() if J <= BAND_SHARE * N else None
