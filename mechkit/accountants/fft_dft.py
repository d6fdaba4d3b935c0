"""A pmf's lowest frequencies by a compensated direct sum, with a bound on its error (``fft_grid.Spectrum``).

The FFT's componentwise error bound, C u log2 N, is what a long composition amplifies k-fold at the frequencies
where its spectrum has not died out (a handful: the grid holds the composed loss with wide margins).  There the
direct sum X_w = sum_s x_s e^{-2 pi i w s / N} over the pmf's nonzero window, its twiddles from two small tables
(e^{-2 pi i m / N} = T_hi[m >> b] T_lo[m & (2^b - 1)], every entry computed from an angle reduced to [0, pi/4]
with exact integer arithmetic) and its sums compensated (Neumaier), is within about 20 units of rounding of the
mass: ``error`` states the bound.

Units below: eps = 2^-52 (``MACHINE_EPS``), the unit of rounding is eps / 2.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit

from .fft_sums import neumaier_step

EPS = float(np.finfo(float).eps)
#: error of a table entry (cos or sin of 2 pi m / N), in eps: the reduced angle pi M / (4 N) <= pi / 4 carries
#: three roundings (pi, the product, the quotient: 1.5 eps relative, <= 1.2 eps absolute), the libm sine or cosine
#: at most two units in the last place (<= 1 eps on values below 1); rounded up
TABLE_ERROR = 2.5
#: error of a twiddle (each component), in eps: two table entries' errors through cos(a + b) = ca cb - sa sb
#: (|ca| + |sa| <= sqrt 2 and likewise for b: 2 sqrt 2 TABLE_ERROR) and the three roundings of the products and
#: the difference (1.5 eps); rounded up
TWIDDLE_ERROR = 2.0 * math.sqrt(2.0) * TABLE_ERROR + 1.5 + 0.5


def _cos_sin(m, N):
    """(cos, sin) of 2 pi m / N for 0 <= m < N (libm's, through Python's math), from the angle reduced to [0, pi/4]
    in integers (8 m against 8 N)."""
    M = 8 * m
    sin_sign = cos_sign = 1.0
    if M > 4 * N:      # theta -> 2 pi - theta
        M, sin_sign = 8 * N - M, -1.0
    if M > 2 * N:      # theta -> pi - theta
        M, cos_sign = 4 * N - M, -1.0
    swap = M > N       # theta -> pi/2 - theta
    if swap:
        M = 2 * N - M
    phi = math.pi * float(M) / float(4 * N)
    c, s = math.cos(phi), math.sin(phi)
    if swap:
        c, s = s, c
    return cos_sign * c, sin_sign * s


@functools.lru_cache(maxsize=8)
def tables(N):
    """(bits, cos and sin of 2 pi m / N at m < 2^bits, at m = h 2^bits): about 2 sqrt N entries (a few ms in Python;
    nothing to compile), kept for the last grids (a refinement or a calibration asks for the same N again)."""
    N = int(N)
    bits = max(6, (N.bit_length() + 1) // 2)
    B = 1 << bits
    lo = np.array([_cos_sin(m % N, N) for m in range(B)])
    hi = np.array([_cos_sin(h * B, N) for h in range((N - 1) // B + 1)])
    return bits, lo[:, 0].copy(), lo[:, 1].copy(), hi[:, 0].copy(), hi[:, 1].copy()


@njit(cache=True, error_model="numpy", nogil=True)  # no signature: compiled when a long composition first asks
def _low_dft(x, first, N, W, bits, lo_c, lo_s, hi_c, hi_s):
    """re and im of sum_j x_j e^{-2 pi i w (first + j) / N} for w = 1..W (index w - 1), compensated."""
    mask = (1 << bits) - 1
    sr, cr = np.zeros(W), np.zeros(W)
    si, ci = np.zeros(W), np.zeros(W)
    m0 = first % N
    if m0 < 0:
        m0 += N
    for j in range(x.shape[0]):
        v = x[j]
        if v == 0.0:
            continue
        m1 = (m0 + j) % N   # the position's index on the circle
        m = 0
        for w in range(W):
            m += m1
            if m >= N:
                m -= N
            a = m >> bits
            b = m & mask
            c = hi_c[a] * lo_c[b] - hi_s[a] * lo_s[b]
            s = hi_s[a] * lo_c[b] + hi_c[a] * lo_s[b]
            sr[w], cr[w] = neumaier_step(sr[w], cr[w], v * c)
            si[w], ci[w] = neumaier_step(si[w], ci[w], -(v * s))
    for w in range(W):
        sr[w] += cr[w]
        si[w] += ci[w]
    return sr, si


def low_frequencies(x, first, N, W):
    """X_w = sum_j x_j e^{-2 pi i w (first + j) / N} for w = 1..W (complex array), x >= 0 a pmf whose first entry
    sits at the signed circle position ``first`` (its zeros are skipped); ``error`` bounds each."""
    bits, lo_c, lo_s, hi_c, hi_s = tables(N)
    re, im = _low_dft(np.ascontiguousarray(x, dtype=float), int(first), int(N), int(W), bits, lo_c, lo_s, hi_c, hi_s)
    return re + 1j * im


def error(mass, n):
    """A bound on |computed X_w - X_w| for ``low_frequencies`` of n nonnegative terms summing to ``mass`` (each
    component: every term carries its twiddle's error and its product's rounding, at most (TWIDDLE_ERROR + 0.5) eps
    of it; Neumaier's sum adds 2 eps |sum| + 2 n eps^2 sum|terms|; the modulus of the complex error at most sqrt 2
    times a component's)."""
    per_component = (TWIDDLE_ERROR + 0.5 + 2.0 + 2.0 * n * EPS) * EPS * mass
    return math.sqrt(2.0) * per_component * (1.0 + 4.0 * EPS)
