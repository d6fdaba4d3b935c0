"""A pmf's lowest frequencies by a compensated direct sum, with a bound on its error (``fft_grid.Spectrum``).

The FFT's componentwise error bound, C u log2 N, is what a long composition amplifies k-fold at the frequencies
where its spectrum has not died out (a handful: the grid holds the composed loss with wide margins).  There the
direct sum X_w = sum_s x_s e^{-2 pi i w s / N} over the pmf's nonzero window, its twiddles from two small tables
(e^{-2 pi i m / N} = T_hi[m >> b] T_lo[m & (2^b - 1)], every entry computed from an angle reduced to [0, pi/4]
with exact integer arithmetic) and its sums compensated (Neumaier), is within about 20 units of rounding of the
mass: ``error`` states the bound.  For the longest compositions of few laws the same sums, the powers and the
products across laws run in double-double arithmetic instead (``low_frequencies_dd``, ``power_dd``, ``mul_dd``;
``dd_error`` and ``GAMMA_DD`` their bounds): the composed spectrum there is within a rounding of exact.

Units below: eps = 2^-52 (``MACHINE_EPS``), the unit of rounding is eps / 2.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit

from ..engine.collection import paused

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


@njit(cache=True, error_model="numpy")
def _reduce(m, N):
    """The angle 2 pi m / N (0 <= m < N) reduced to pi M / (4 N) in [0, pi/4] in integers (8 m against 8 N): M, the
    signs of the cosine and the sine, and whether they swap."""
    M = 8 * m
    sin_sign = 1.0
    cos_sign = 1.0
    if M > 4 * N:      # theta -> 2 pi - theta
        M = 8 * N - M
        sin_sign = -1.0
    if M > 2 * N:      # theta -> pi - theta
        M = 4 * N - M
        cos_sign = -1.0
    swap = M > N       # theta -> pi/2 - theta
    if swap:
        M = 2 * N - M
    return M, cos_sign, sin_sign, swap


def _cos_sin(m, N):
    """(cos, sin) of 2 pi m / N for 0 <= m < N (libm's, through Python's math) from the reduced angle."""
    M, cos_sign, sin_sign, swap = _reduce(m, N)
    phi = math.pi * float(M) / float(4 * N)
    c, s = math.cos(phi), math.sin(phi)
    if swap:
        c, s = s, c
    return cos_sign * c, sin_sign * s


def _bits(N):
    """log2 of the low table's length: about sqrt N entries in each table."""
    return max(6, (N.bit_length() + 1) // 2)


@njit(cache=True, error_model="numpy", inline="always")
def _start(first, N):
    """The circle index of the signed position ``first``."""
    m0 = first % N
    return m0 + N if m0 < 0 else m0


@functools.lru_cache(maxsize=8)
def tables(N):
    """(bits, cos and sin of 2 pi m / N at m < 2^bits, at m = h 2^bits): about 2 sqrt N entries (a few ms in Python;
    nothing to compile), kept for the last grids (a refinement or a calibration asks for the same N again)."""
    N = int(N)
    bits = _bits(N)
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
    m0 = _start(first, N)
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
    compile_low_dft()  # nothing where it is compiled already
    re, im = _low_dft(np.ascontiguousarray(x, dtype=float), int(first), int(N), int(W), bits, lo_c, lo_s, hi_c, hi_s)
    return re + 1j * im


def compile_low_dft():
    """Compile (or load) ``low_frequencies``' sums ahead of their first use (``fft.compile_meanwhile``), the garbage
    collector paused (``engine.collection``)."""
    if not _low_dft.signatures:
        bits, lo_c, lo_s, hi_c, hi_s = tables(64)
        with paused():
            _low_dft(np.ones(4), 0, 64, 1, bits, lo_c, lo_s, hi_c, hi_s)


def error(mass, n):
    """A bound on |computed X_w - X_w| for ``low_frequencies`` of n nonnegative terms summing to ``mass`` (each
    component: every term carries its twiddle's error and its product's rounding, at most (TWIDDLE_ERROR + 0.5) eps
    of it; Neumaier's sum adds 2 eps |sum| + 2 n eps^2 sum|terms|; the modulus of the complex error at most sqrt 2
    times a component's)."""
    per_component = (TWIDDLE_ERROR + 0.5 + 2.0 + 2.0 * n * EPS) * EPS * mass
    return math.sqrt(2.0) * per_component * (1.0 + 4.0 * EPS)


# -- double-double: the lowest frequencies and their powers to ~1e-30, for the longest compositions -------------
# Error-free transformations (Dekker's product, Knuth's sum) and double-double arithmetic (Joldes, Muller, Popescu
# 2017: a product within 7 u^2, an accurate sum within 3 u^2 relative, u = 2^-53).  ``GAMMA_DD`` bounds the
# relative error of one complex double-double product (componentwise 15 u^2 |a| |b|: 1.9e-31), with margin.
GAMMA_DD = 1e-30
#: error of a double-double table entry (cos or sin of 2 pi m / N): the reduced angle's three double-double
#: roundings and pi's (1e-33), 15 Horner steps of a Taylor series truncated below 1e-33 (<= 50 u^2 = 6e-31), with
#: margin
TABLE_DD_ERROR = 1e-29
_SPLIT = 134217729.0  # 2^27 + 1
_PI_DD = (3.141592653589793, 1.2246467991473532e-16)


def _inverse_factorials(start):
    """(hi, lo) of 1/(2k + start)! for k = 0..14 (double-double, exact to u^2)."""
    from fractions import Fraction
    out = []
    for k in range(15):
        v = Fraction(1, math.factorial(2 * k + start))
        hi = float(v)
        out.append((hi, float(v - Fraction(hi))))
    return np.array(out)


_COS_C = _inverse_factorials(0)
_SIN_C = _inverse_factorials(1)


@njit(cache=True, error_model="numpy", inline="always")
def _two_prod(a, b):
    p = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@njit(cache=True, error_model="numpy", inline="always")
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@njit(cache=True, error_model="numpy", inline="always")
def _fast_two_sum(a, b):
    s = a + b
    return s, b - (s - a)


@njit(cache=True, error_model="numpy", inline="always")
def _dd_add(ah, al, bh, bl):
    s, e = _two_sum(ah, bh)
    t, f = _two_sum(al, bl)
    s, e = _fast_two_sum(s, e + t)
    return _fast_two_sum(s, e + f)


@njit(cache=True, error_model="numpy", inline="always")
def _dd_mul(ah, al, bh, bl):
    p, e = _two_prod(ah, bh)
    return _fast_two_sum(p, e + (ah * bl + al * bh))


@njit(cache=True, error_model="numpy", inline="always")
def _cdd_mul(arh, arl, aih, ail, brh, brl, bih, bil):
    """(ar + i ai) (br + i bi), each part a double-double."""
    r1h, r1l = _dd_mul(arh, arl, brh, brl)
    r2h, r2l = _dd_mul(aih, ail, bih, bil)
    i1h, i1l = _dd_mul(arh, arl, bih, bil)
    i2h, i2l = _dd_mul(aih, ail, brh, brl)
    rh, rl = _dd_add(r1h, r1l, -r2h, -r2l)
    ih, il = _dd_add(i1h, i1l, i2h, i2l)
    return rh, rl, ih, il


@njit(cache=True, error_model="numpy")
def _dd_cos_sin(m, N, cos_c, sin_c):
    """cos and sin of 2 pi m / N as double-doubles (c_hi, c_lo, s_hi, s_lo): the angle reduced to [0, pi/4] in
    integers (``_reduce``), pi M / (4 N) in double-double, Taylor series by Horner's rule."""
    M, cos_sign, sin_sign, swap = _reduce(m, N)
    # phi = pi M / (4 N): pi M in double-double, then divided by 4 N (one correction step)
    p, e = _two_prod(_PI_DD[0], float(M))
    ph, pl = _fast_two_sum(p, e + _PI_DD[1] * float(M))
    d = float(4 * N)
    q1 = ph / d
    r, re = _two_prod(q1, d)
    rh, rl = _dd_add(ph, pl, -r, -re)
    fh, fl = _fast_two_sum(q1, rh / d)
    xh, xl = _dd_mul(fh, fl, fh, fl)
    ch, cl = cos_c[14, 0], cos_c[14, 1]
    sh, sl = sin_c[14, 0], sin_c[14, 1]
    for k in range(13, -1, -1):
        ch, cl = _dd_mul(ch, cl, xh, xl)
        ch, cl = _dd_add(ch, cl, (-1.0) ** k * cos_c[k, 0], (-1.0) ** k * cos_c[k, 1])
        sh, sl = _dd_mul(sh, sl, xh, xl)
        sh, sl = _dd_add(sh, sl, (-1.0) ** k * sin_c[k, 0], (-1.0) ** k * sin_c[k, 1])
    sh, sl = _dd_mul(sh, sl, fh, fl)
    if swap:
        ch, cl, sh, sl = sh, sl, ch, cl
    return cos_sign * ch, cos_sign * cl, sin_sign * sh, sin_sign * sl


@njit(cache=True, error_model="numpy")
def _dd_table(ms, N, cos_c, sin_c):
    out = np.empty((ms.shape[0], 4))
    for i in range(ms.shape[0]):
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = _dd_cos_sin(ms[i], N, cos_c, sin_c)
    return out


@functools.lru_cache(maxsize=8)
def dd_tables(N):
    """(bits, lo, hi): double-double cos and sin of 2 pi m / N (columns c_hi, c_lo, s_hi, s_lo) at m < 2^bits and
    at m = h 2^bits (``tables``' layout)."""
    N = int(N)
    bits = _bits(N)
    B = 1 << bits
    lo = _dd_table(np.arange(B, dtype=np.int64) % N, N, _COS_C, _SIN_C)
    hi = _dd_table(np.arange((N - 1) // B + 1, dtype=np.int64) * B, N, _COS_C, _SIN_C)
    return bits, lo, hi


@njit(cache=True, error_model="numpy", nogil=True)
def _low_dft_dd(x, first, N, W, bits, lo, hi):
    """sum_j x_j e^{-2 pi i w (first + j) / N} for w = 0..W in double-double: rows (re_hi, re_lo, im_hi, im_lo)."""
    mask = (1 << bits) - 1
    out = np.zeros((4, W + 1))
    m0 = _start(first, N)
    for j in range(x.shape[0]):
        v = x[j]
        if v == 0.0:
            continue
        out[0, 0], out[1, 0] = _dd_add(out[0, 0], out[1, 0], v, 0.0)
        m1 = (m0 + j) % N
        m = 0
        for w in range(1, W + 1):
            m += m1
            if m >= N:
                m -= N
            a = m >> bits
            b = m & mask
            ch, cl, sh, sl = _cdd_mul(hi[a, 0], hi[a, 1], hi[a, 2], hi[a, 3], lo[b, 0], lo[b, 1], lo[b, 2], lo[b, 3])
            # v e^{-i theta} = v cos - i v sin
            ph, pl = _dd_mul(ch, cl, v, 0.0)
            out[0, w], out[1, w] = _dd_add(out[0, w], out[1, w], ph, pl)
            ph, pl = _dd_mul(sh, sl, v, 0.0)
            out[2, w], out[3, w] = _dd_add(out[2, w], out[3, w], -ph, -pl)
    return out


@njit(cache=True, error_model="numpy", nogil=True)
def _mul_dd(a, b):
    out = np.empty_like(a)
    for w in range(a.shape[1]):
        out[0, w], out[1, w], out[2, w], out[3, w] = _cdd_mul(a[0, w], a[1, w], a[2, w], a[3, w],
                                                               b[0, w], b[1, w], b[2, w], b[3, w])
    return out


def low_frequencies_dd(x, first, N, W):
    """X_w for w = 0..W in double-double (rows re_hi, re_lo, im_hi, im_lo; ``low_frequencies``' arguments), within
    ``dd_error`` of the exact sums."""
    bits, lo, hi = dd_tables(N)
    return _low_dft_dd(np.ascontiguousarray(x, dtype=float), int(first), int(N), int(W), bits, lo, hi)


def power_dd(z, k):
    """z^k by repeated squaring in double-double (each product within GAMMA_DD relative: at most 2 log2 k of them,
    so within 2 k GAMMA_DD |z|^k of the exact power of the given z)."""
    out, base = None, z
    while True:
        if k & 1:
            out = base.copy() if out is None else _mul_dd(out, base)
        k >>= 1
        if not k:
            return out
        base = _mul_dd(base, base)


def mul_dd(a, b):
    """The componentwise product of two double-double spectra (within GAMMA_DD relative)."""
    return _mul_dd(a, b)


def dd_value(z):
    """The double-double spectrum rounded to complex doubles (each part within u = eps / 2 relative)."""
    return (z[0] + z[1]) + 1j * (z[2] + z[3])


def dd_error(mass, n):
    """A bound on |X_w - exact| for ``low_frequencies_dd`` of n nonnegative terms summing to ``mass``: a twiddle
    within 2 TABLE_DD_ERROR + GAMMA_DD of exact (each component), its product with a term within 2 u^2, each of the
    n accumulations within 3 u^2 of the partial sum (at most the mass); the modulus within sqrt 2 of a component's."""
    u2 = 2.0 ** -106
    return math.sqrt(2.0) * mass * (2.0 * TABLE_DD_ERROR + GAMMA_DD + 2.0 * u2 + 3.0 * n * u2) * 1.01
