"""The SPA's root searches: where they stop early (a lower bound's locating search below epsilon = 0) and how they
close on a cliff (an SP-MSD1 singularity on exact values), with the same answers and fewer quadrature passes."""
import math

import pytest

import mechkit as mk
from mechkit.accountants.spa import formulas as spa_formulas
from mechkit.accountants.spa import model as spa_model
from mechkit.accountants.spa import search as spa_search


def sg(sigma, q):
    return mk.subsample(mk.gaussian(sigma=sigma), q)


def test_a_lower_bounds_search_stops_below_epsilon_zero():
    # sigma 0.5, q 0.001, k 100 (0.1 expected sampled steps): Theorem 5's lower bound is not positive near the
    # saddle points, and its locating search stepped down in blind steps of 2, 8, 32, 128 nodes to T_MIN (nodes down
    # to t = 2^-30); it now stops at the first tilt whose epsilon is <= 0, where no root can give a positive bound
    run = mk.compose((sg(0.5, 0.001), 100))
    e = run.epsilon(1e-5, method="spa")
    nodes = [j for plrv in (run.items[0][0].remove, run.items[0][0].add) for j in plrv.memo("spa_nodes")]
    assert min(nodes) > -200  # t > 2^-6.25
    assert e.lower == 0.0 and e.lower <= float(e) <= e.upper
    f = run.epsilon(1e-5, eps_error=0.05)  # the FFT's certified interval meets the SPA's
    assert max(e.lower, f.lower) <= min(e.upper, f.upper)


def _count_exact(monkeypatch):
    calls = []
    orig = spa_model._Direction.exact

    def exact(self, *a, **kw):
        calls.append(1)
        return orig(self, *a, **kw)
    monkeypatch.setattr(spa_model._Direction, "exact", exact)
    return calls


def test_a_search_closing_on_a_cliff_bisects(monkeypatch):
    # sigma 1, q 0.001, k 1e4: the estimate's polish on exact values closes on an SP-MSD1 singularity (log delta
    # jumps from 0.24 above the target to -inf); Newton and regula falsi crept along its flat side (88 exact passes
    # in the query); bisecting after the bracket twice failed to halve gives the same epsilon in ~40 fewer passes
    calls = _count_exact(monkeypatch)
    e = mk.compose((sg(1.0, 0.001), 10_000)).epsilon(1e-5, method="spa")
    fast = len(calls)
    monkeypatch.setattr(spa_search, "CLIFF_BISECTIONS", 10**9)
    calls.clear()
    f = mk.compose((sg(1.0, 0.001), 10_000)).epsilon(1e-5, method="spa")
    assert fast <= len(calls) - 30
    assert float(e) == pytest.approx(float(f), rel=1e-10)
    assert (e.lower, e.upper) == (f.lower, f.upper)
    assert e.details["reliable"] is False  # an estimate on a singularity
    # the cliff is real: the exact SP-MSD1 log delta just below the estimate's tilt is above the target, and just
    # above it far below (or MSD0 where the correction factor is not positive)
    dirn = spa_model.directions(mk.compose((sg(1.0, 0.001), 10_000)).items)[0]
    t = e.details["saddle_point"]
    lo, hi = (spa_formulas.estimate_log_delta(dirn.at(t * (1 + s)), "log_msd1") - math.log(1e-5)
              for s in (-1e-9, 1e-9))
    assert lo > 0.1 and hi < -1.0


def test_bounds_searched_for_a_lower_bound_only_locate_no_upper_tilt(monkeypatch):
    # sigma 0.5, q 0.001, k 100: the add direction is certified below the leader's estimate, and its bounds are
    # searched only for a lower bound (the leader's is 0); the upper bound's own tilt, located where no positive
    # lower bound is found, would not be used: the same answer in fewer passes
    from mechkit.accountants.spa import accountant as spa_accountant
    calls = _count_exact(monkeypatch)
    e = mk.compose((sg(0.5, 0.001), 100)).epsilon(1e-5, method="spa")
    fast = len(calls)
    orig = spa_accountant.certified_bounds
    monkeypatch.setattr(spa_accountant, "certified_bounds", lambda d, t, u, lo=True, up=True: orig(d, t, u, lo))
    calls.clear()
    spa_model._DIRECTIONS.clear()
    f = mk.compose((sg(0.5, 0.001), 100)).epsilon(1e-5, method="spa")
    assert fast < len(calls)
    assert (e.value, e.lower, e.upper) == (f.value, f.lower, f.upper)
