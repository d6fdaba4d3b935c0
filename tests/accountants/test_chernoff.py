"""The Edgeworth accountant's Chernoff bounds computed lazily (mechkit/accountants/chernoff.py) against the minimum
over the whole grid of tilts computed eagerly (every CGF value, then the lines' minimum at each point: the
accountant's former code, kept here as the reference), on compositions with Gaussian-like, bounded, discrete and
partly infinite losses; the searches' ``_first_rising`` against a plain scan."""
from __future__ import annotations

import functools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import mechkit as mk
from mechkit.accountants import chernoff as ch
from mechkit.accountants import edgeworth as ew

NAMES = ("Y", "X", "Ylow", "hs")


@functools.lru_cache(maxsize=None)
def _run(i):
    """Composition i, its two sequences and each sequence's full table of lines (the eager reference)."""
    runs = [
        [(mk.subsample(mk.gaussian(sigma=1.0), 0.01), 1000), (mk.laplace(10.0), 20)],  # two families, skewed
        [(mk.subsample(mk.gaussian(sigma=0.8), 0.01), 10000)],
        [(mk.subsample(mk.gaussian(sigma=1.0), 0.001), 100)],  # few expected sampled steps
        [(mk.gaussian(5.0), 10)],
        [(mk.laplace(1.0), 5)],                                  # a bounded loss: K finite everywhere, K' saturates
        [(mk.randomized_response(1.0), 30)],                     # point masses only
        [(mk.approximate_dp(0.5, 1e-3), 30), (mk.gaussian(2.0), 1)],  # infinite losses: the finite parts' lines
        [(mk.laplace(20.0), 10000)],  # a small uniform bound: positive lower bounds, where the X cap decides them
    ]
    seqs = ew._sequences(runs[i])
    tables = []
    for s in seqs:
        t = ch.TILTS
        ky = np.array([s.K(v) for v in t])
        kx = np.array([s.K(v - 1.0) for v in t])
        kl = np.array([s.K(-v) for v in t])
        ly, lx = s.log_mass["Y"], s.log_mass["X"]
        tables.append({"Y": (ky - ly, -t), "X": (kx - lx, -t), "Ylow": (kl - ly, t), "hs": (ky - ly + ch.THETA, -t)})
    return seqs, tables


def _eager(table, name, x):
    a, b = table[name]
    ok = np.isfinite(a)
    if not ok.any():
        return np.zeros_like(x)
    with np.errstate(invalid="ignore"):
        return np.minimum(np.min(a[ok][None, :] + b[ok][None, :] * x[:, None], axis=1), 0.0)


RUNS = 8


@settings(max_examples=3 * settings.default.max_examples)
@given(st.integers(0, RUNS - 1), st.integers(0, 1), st.sampled_from(NAMES),
       st.lists(st.floats(-3.0, 12.0), min_size=1, max_size=40), st.floats(0.05, 20.0))
def test_lazy_bounds_equal_the_minimum_over_the_whole_grid(i, d, name, unit, scale):
    seqs, tables = _run(i)
    s = seqs[d]
    x = np.sort(np.asarray(unit) * scale * max(s.Y.sd, 1e-3) + s.Y.mean)
    assert np.array_equal(s.chernoff(name, x), _eager(tables[d], name, x))


def test_lazy_bounds_on_the_epsilon_query_grid_and_the_ceiling():
    for i in range(RUNS):
        seqs, tables = _run(i)
        for s, table in zip(seqs, tables):
            for delta in (0.3, 1e-3, 1e-5, 1e-10):
                a, b = table["hs"]
                ok = np.isfinite(a)
                rest = (delta - s.inf_mass) / math.exp(s.log_mass["Y"])
                want = (float(min(np.min((a[ok] - math.log(rest)) / -b[ok]) if ok.any() else math.inf, s.sup))
                        if rest > 0 else math.inf)
                assert s.eps_ceiling(delta) == want
                hi = want if math.isfinite(want) else s.Y.mean + 40.0 * s.Y.sd
                grid = np.concatenate((np.linspace(0.0, max(hi, 1e-6), 401), [hi * 1.5 + 1.0]))
                for name in NAMES:
                    assert np.array_equal(s.chernoff(name, grid), _eager(table, name, grid)), (i, s.direction, name)


def test_an_epsilon_query_computes_a_part_of_the_table():
    # the point of the lazy lines: a cold epsilon query evaluates the CGF at fewer tilts than the three full tables
    run = [(mk.subsample(mk.gaussian(sigma=1.1), 0.01), 1000), (mk.laplace(11.0), 20)]
    seen = []
    seqs = ew._sequences(run)
    for s in seqs:
        k = s.K
        s.K = lambda tau, k=k, d=s.direction: seen.append((d, tau)) or k(tau)
        s._lines = None
    ew.epsilon(run, 1e-5)
    assert 0 < len(seen) < 0.7 * 3 * ch.TILTS.size * len(seqs)
    assert len(seen) == len(set(seen))  # each (sequence, tilt) computed once
    for s in seqs:
        del s.K


def _scan(values):
    """The first index where the next value is not smaller (the first minimiser of a unimodal sequence)."""
    n = len(values)
    return next(i for i in range(n) if i == n - 1 or not values[i + 1] < values[i])


@settings(max_examples=5 * settings.default.max_examples)
@given(st.integers(1, 40), st.integers(-10, 90), st.floats(0.01, 3.0), st.integers(0, 39), st.integers(0, 40))
def test_first_rising_finds_the_first_minimiser(n, centre2, curv, guess, inf_from):
    # convex values (two equal ones at the minimum when the centre is a half-integer), +inf from index inf_from on
    # (where a CGF is infinite)
    values = [curv * (i - centre2 / 2.0) ** 2 if i < inf_from else math.inf for i in range(n)]
    calls = []

    def rising(i):
        calls.append(i)
        return i >= n - 1 or not values[i + 1] < values[i]

    assert ch._first_rising(rising, n, guess) == _scan(values)
    assert len(calls) <= 4 + 2 * math.isqrt(2 * n) + n.bit_length()


def _eager_bounds(s, table, eps):
    """The EEAI bounds with every Chernoff cap taken at every point (the accountant's former code)."""
    dy, dx = s.Y.uniform_bound(), s.X.uniform_bound()
    gy = ew._from_signed(*s.Y.signed_log_sf(eps, 1))
    gx = ew._from_signed(*s.X.signed_log_sf(eps, 1))
    sy_up = np.minimum.reduce([np.ones_like(eps), gy + dy, np.exp(_eager(table, "Y", eps))])
    sy_lo = np.maximum.reduce([np.zeros_like(eps), gy - dy, -np.expm1(_eager(table, "Ylow", eps))])
    sx_lo = np.maximum(gx - dx, 0.0)
    my, lmx = math.exp(s.log_mass["Y"]), s.log_mass["X"]
    with np.errstate(divide="ignore", over="ignore"):
        log_sx_up = np.minimum(np.log(gx + dx), _eager(table, "X", eps))
        up = my * sy_up - np.exp(eps + lmx + np.log(sx_lo))
        lo = my * sy_lo - np.exp(eps + lmx + log_sx_up)
    up = np.minimum.reduce([up, my * np.exp(_eager(table, "hs", eps)), np.ones_like(eps)])
    beyond = eps >= s.sup
    a = s.inf_mass
    lo, up = np.where(beyond, 0.0, np.maximum(lo, 0.0)), np.where(beyond, 0.0, np.maximum(up, 0.0))
    return (lo, up) if a == 0.0 else (a + lo, np.minimum(a + up, 1.0))


@settings(max_examples=3 * settings.default.max_examples)
@given(st.integers(0, RUNS - 1), st.integers(0, 1), st.lists(st.floats(-2.0, 1.0), min_size=1, max_size=30),
       st.floats(0.5, 40.0), st.sampled_from(["both", "lower", "upper"]))
def test_bounds_asking_each_cap_only_where_it_can_win_are_the_same_floats(i, d, unit, scale, which):
    # unsorted points from below the mean to far in the tail (where the caps decide); each bound alone or both
    seqs, tables = _run(i)
    s = seqs[d]
    eps = np.asarray(unit) * scale * max(s.Y.sd, 1e-3) + max(s.Y.mean, 0.0) * (1 + scale)
    lo, up = s.bounds(eps, lower=which != "upper", upper=which != "lower")
    want = _eager_bounds(s, tables[d], eps)
    for got, ref in zip((lo, up), want):
        assert got is None or np.array_equal(got, ref)
    assert (lo is None) == (which == "upper") and (up is None) == (which == "lower")


def test_bounds_on_the_epsilon_query_grid_are_the_same_floats():
    for i in range(RUNS):
        seqs, tables = _run(i)
        for s, table in zip(seqs, tables):
            hi = s.eps_ceiling(1e-5)
            hi = hi if math.isfinite(hi) else s.Y.mean + 40.0 * s.Y.sd
            grid = np.concatenate((np.linspace(0.0, max(hi, 1e-6), 401), [hi * 1.5 + 1.0]))
            for got, ref in zip(s.bounds(grid), _eager_bounds(s, table, grid)):
                assert np.array_equal(got, ref), (i, s.direction)


@settings(max_examples=3 * settings.default.max_examples)
@given(st.integers(0, RUNS - 1), st.integers(0, 1), st.sampled_from(NAMES),
       st.lists(st.tuples(st.floats(-3.0, 12.0), st.floats(-3.0, 3.0)), min_size=1, max_size=40), st.floats(0.05, 20.0))
def test_a_cap_is_let_go_only_where_it_beats_none_of_the_callers_values(i, d, name, pts, scale):
    # the caller's values: near the bound itself (above or below it by up to 3 nats), so that some points are let go
    # and some not; let go (+inf) only where the exact bound is no smaller than the caller's value there
    seqs, tables = _run(i)
    s = seqs[d]
    x = np.asarray([p for p, _ in pts]) * scale * max(s.Y.sd, 1e-3) + s.Y.mean
    exact = _eager(tables[d], name, x)
    theirs = exact + np.asarray([o for _, o in pts])
    got = s.chernoff(name, x, lambda c, r: c >= np.max(theirs[r]))
    gone = got == np.inf
    assert np.array_equal(got[~gone], exact[~gone])
    assert np.all(exact[gone] >= theirs[gone])
    assert np.array_equal(np.minimum(got, theirs), np.minimum(exact, theirs))
