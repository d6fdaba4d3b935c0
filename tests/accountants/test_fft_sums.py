"""The FFT composer's suffix sums and its curve's epsilon search, against exact arithmetic and the plain forms.

``fft_sums.suffix_sums``: d1_i = sum_{j >= i} p_j and ld2_i = log sum_{j >= i} p_j e^{-y_j}, compensated, with the
second sum scaled where e^{-y} would over- or underflow; checked against ``math.fsum`` and mpmath at support ranges
that need no rescaling, one rescaling and several, with rounding noise (tiny negative entries) and empty cells.
``DiscreteCurve.epsilon``: its first queries scan for the answer, later ones search the running minimum; both
must give the answer of a plain scan over every support point."""
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, strategies as st

from mechkit.accountants import fft_sums
from mechkit.accountants.fft_grid import SCANS, DiscreteCurve


def _reference(p, y):
    """d1 by math.fsum; ld2 by mpmath (no scaling needed); both suffix by suffix."""
    n = p.size
    d1 = [math.fsum(p[i:]) for i in range(n)] + [0.0]
    ld2 = []
    with mpmath.workdps(40):
        acc = mpmath.mpf(0)
        for i in range(n - 1, -1, -1):
            acc += mpmath.mpf(float(p[i])) * mpmath.exp(-mpmath.mpf(float(y[i])))
            ld2.append(float(mpmath.log(acc)) if acc > 0 else -math.inf)
    return np.array(d1), np.array(ld2[::-1] + [-math.inf])


@pytest.mark.parametrize("h, first", [(0.01, -150), (3.0, -200), (7.0, -300), (0.5, 1)])
def test_suffix_sums_against_exact_sums(h, first):
    """h 0.01: no rescaling; 3.0 and 7.0: support points from about -1400 to +1400 and -2100 to 2100, rescaled
    several times (e^{-y} alone would overflow at one end and underflow at the other); 0.5: all positive."""
    rng = np.random.default_rng(7)
    n = 400 if first < 0 else 300
    y = (np.arange(first, first + n) * h + 0.013) if first < 0 else np.arange(first, first + n) * h
    p = rng.random(n) ** 3
    p[rng.integers(0, n, size=n // 4)] = 0.0
    p /= p.sum()
    p[rng.integers(0, n, size=10)] = -1e-19  # the inverse FFT's rounding noise
    d1, ld2 = fft_sums.suffix_sums(p, y.copy())
    r1, r2 = _reference(p, y)
    assert d1.shape == ld2.shape == (n + 1,)
    assert np.max(np.abs(d1 - r1)) <= 4 * np.finfo(float).eps  # within a few units of sum |p| = 1
    fin = np.isfinite(r2)
    assert np.array_equal(fin, np.isfinite(ld2)) and np.all(ld2[~fin] == -math.inf)
    # log space: a few units of rounding of the exponents ref - y (|y| up to ~2100 here, ref - y up to 700); a
    # scale misplaced by one move would be 554 off
    tol = 8 * np.finfo(float).eps * (np.max(np.abs(y)) + 700.0)
    assert np.max(np.abs(ld2[fin] - r2[fin])) <= tol


def _exp(v):
    """math.exp, +inf where it overflows (as in compiled code)."""
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _plain_epsilon(c, delta):
    """``DiscreteCurve.epsilon`` by its definition, every support point's delta computed (the former search), with
    the C library's exp as the compiled passes take it (NumPy's vectorised exp may differ in the last bit, which
    decides a delta asked exactly at a support point's value)."""
    if delta <= c.inf_mass:
        return math.inf
    target = (delta - c.inf_mass) / (1.0 - c.inf_mass)
    if c.delta_fin(0.0) <= target:
        return 0.0
    i0 = max(int(c._count_le(0.0)) - 1, 0)
    y = c.y[i0:] + c.ld2[i0 + 1:]
    D = c.d1[i0 + 1:] - np.array([_exp(v) for v in y.tolist()])
    hit = np.flatnonzero(np.minimum.accumulate(D) <= target)
    j = min(i0 + (int(hit[0]) if hit.size else D.size), c.size - 1)
    if c.ld2[j] == -math.inf:
        return float((c.first + j) * c.step + c.shift)
    return max(0.0, math.log(max(c.d1[j] - target, 1e-320)) - c.ld2[j])


@given(st.integers(0, 2**32 - 1), st.floats(0.05, 2.0), st.integers(50, 3000),
       st.lists(st.floats(0.05, 0.9), min_size=SCANS + 3, max_size=SCANS + 3), st.sampled_from([0.0, 1e-9]))
def test_the_scanning_queries_and_the_running_minimums_agree_with_a_plain_search(seed, step, size, where, inf_mass):
    """Random pmfs (with rounding noise) on random grids, each delta the curve's own at a random support point above
    0 (so every query searches): every query, the scanned ones and those searching the running minimum, equals the
    plain search; a scan that stopped early or one past the answer would not."""
    rng = np.random.default_rng(seed)
    p = rng.random(size) ** 4 + rng.normal(0.0, 1e-17, size)
    p /= p.sum()
    c = DiscreteCurve(-size // 3, step, 0.123, p, inf_mass)
    top = c.y[c.y > 0.0]
    for u in where:
        d = float(c.delta(top[min(int(u * top.size), top.size - 1)]))
        assert c.epsilon(d) == _plain_epsilon(c, d)
    assert c._Dm is not None  # the later queries searched the running minimum


@given(st.integers(0, 2**32 - 1), st.floats(0.05, 2.0), st.integers(50, 3000), st.floats(0.05, 0.9),
       st.sampled_from([0.0, 1e-12, 1e-9, 1e-3, 0.3]), st.sampled_from([0.0, 1e-9]))
def test_a_smaller_target_scanned_after_a_larger_one_is_the_plain_search(seed, step, size, where, gap, inf_mass):
    """The FFT composer asks each curve for a larger target, then a smaller one (delta and delta minus the curve's
    allowance, or delta plus it and delta): the second scan starts at the first one's answer.  Both equal the plain
    search, for targets equal, a rounding apart, or far apart; a scan started past a point where D is at most the
    smaller target would not."""
    rng = np.random.default_rng(seed)
    p = rng.random(size) ** 4 + rng.normal(0.0, 1e-17, size)
    p /= p.sum()
    c = DiscreteCurve(-size // 3, step, 0.123, p, inf_mass)
    top = c.y[c.y > 0.0]
    d = float(c.delta(top[min(int(where * top.size), top.size - 1)]))
    for target in (d, d * (1.0 - gap), d * (1.0 - gap) ** 2):
        assert c.epsilon(target) == _plain_epsilon(c, target)
