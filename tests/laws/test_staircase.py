"""Issue "Any density a paper writes": densities with steps, floor and ceiling of linear functions of the output,
where the privacy loss is constant on each step: the staircase mechanism (Geng and Viswanath, "The optimal
noise-adding mechanism in differential privacy", 2016), written as a user would:

    f(x) = a exp(-eps floor(|x| / Delta + 1 - gamma)),  a = (1 - b) / (2 Delta (gamma + (1 - gamma) b)),  b = e^-eps

with q = f(x) and p = f(x - Delta).  Its loss takes the values -eps, 0 and eps.

The reference shares nothing with mechkit: the densities (lambdified from the same SymPy expressions) are piecewise
constant between the points where |x| / Delta + 1 - gamma or |x - Delta| / Delta + 1 - gamma is an integer, so
every hockey-stick integral is an exact sum over those cells of a window wide enough that what lies beyond weighs
less than e^-60 (midpoint values times widths, in mpmath); composed, the exact multinomial sums over the three loss
values with the cell sums' masses (``tests/references/piecewise.exact_atoms_delta``).
"""
from __future__ import annotations


import mpmath as mp
import pytest
import sympy as sp
from hypothesis import given, strategies as st

import mechkit as mk
from tests.references import piecewise as ref

x = sp.Symbol("x", real=True)
eps, g, D = sp.symbols("epsilon gamma Delta", positive=True)
_b = sp.exp(-eps)
_a = (1 - _b) / (2 * D * (g + (1 - g) * _b))


def _stair(c, ceiling=False):
    u = sp.Abs(x - c) / D
    return _a * sp.exp(-eps * (sp.ceiling(u - g) if ceiling else sp.floor(u + 1 - g)))


@pytest.fixture(scope="module")
def staircase():
    return mk.Mechanism.from_densities(_stair(D), _stair(0), x, name="staircase")


def _cells(e, gam, delta):
    """Cell edges where either density changes value, over a window beyond which the mass is below e^-60."""
    K = int(60 / e) + 3
    edges = set()
    for k in range(K + 1):
        for c in (0.0, delta):
            for sgn in (1, -1):
                edges.add(c + sgn * (k - (1 - gam)) * delta)
    return sorted(edges)


def _masses(e, gam, delta):
    """{loss value: (P-mass, Q-mass)} of the remove direction, summed exactly over the cells (mpmath)."""
    subs = {eps: e, g: gam, D: delta}
    f_p, f_q = (sp.lambdify(x, ex.subs(subs), modules="mpmath") for ex in (_stair(D), _stair(0)))
    out = {}
    with mp.workdps(30):
        edges = [mp.mpf(v) for v in _cells(e, gam, delta)]
        for lo, hi in zip(edges[:-1], edges[1:]):
            mid = (lo + hi) / 2
            fp, fq = f_p(mid), f_q(mid)
            L = round(float(mp.log(fp / fq)) / e)  # -1, 0 or 1 (in units of eps)
            w = out.setdefault(L, [mp.mpf(0), mp.mpf(0)])
            w[0] += fp * (hi - lo)
            w[1] += fq * (hi - lo)
    return {L * e: (float(a), float(b)) for L, (a, b) in out.items()}


def _delta(masses, k, e_):
    """Exact k-fold delta(eps) of the remove direction (the add direction is its mirror: the same curve)."""
    vals = sorted(masses)
    return float(ref.exact_atoms_delta(vals, [masses[v][0] for v in vals], k, e_))


@pytest.mark.parametrize("e,gam,delta", [(1.0, 0.3, 1.0), (0.5, 0.5, 2.0), (2.0, 0.1, 0.5)])
def test_loss_law_and_one_shot_curve_exact(staircase, e, gam, delta):
    m = staircase(epsilon=e, gamma=gam, Delta=delta)
    want = _masses(e, gam, delta)
    assert sum(a for a, _ in want.values()) == pytest.approx(1.0, abs=1e-12)  # the window holds the mass
    vals, probs = m.remove.atoms()
    assert vals.tolist() == pytest.approx(sorted(want), abs=1e-12)
    assert probs.tolist() == pytest.approx([want[v][0] for v in sorted(want)], rel=1e-9)
    for e_ in (-0.2, 0.0, 0.3 * e, 0.9 * e, e):
        one = _delta(want, 1, e_)
        assert m.remove.delta(e_) == pytest.approx(one, rel=1e-9, abs=1e-15)
        assert m.add.delta(e_) == pytest.approx(one, rel=1e-9, abs=1e-15)  # the pair is symmetric
    assert m.epsilon(0.0) == pytest.approx(e, rel=1e-12)  # epsilon-DP: the largest loss


def test_written_with_ceiling_is_the_same_mechanism(staircase):
    up = mk.Mechanism.from_densities(_stair(D, ceiling=True), _stair(0, ceiling=True), x, name="staircase_ceiling")
    a, b = staircase(epsilon=1.0, gamma=0.3, Delta=1.0), up(epsilon=1.0, gamma=0.3, Delta=1.0)
    for direction in ("remove", "add"):
        for got, want in zip(b.plrv(direction).atoms(), a.plrv(direction).atoms()):
            assert got.tolist() == pytest.approx(want.tolist(), rel=1e-12)


@pytest.mark.parametrize("method", ["fft", "spa", "edgeworth"])
def test_composed_intervals_hold_the_exact_sums(staircase, method):
    e, gam, delta, k = 0.5, 0.3, 1.0, 20
    want_masses = _masses(e, gam, delta)
    run = mk.compose((staircase(epsilon=e, gamma=gam, Delta=delta), k))
    for e_ in (1.0, 3.0):
        want = _delta(want_masses, k, e_)
        got = run.delta(e_, method=method)
        assert got.lower <= want * (1 + 1e-9) + 1e-15 and want <= got.upper * (1 + 1e-9) + 1e-15, (e_, got, want)
    est = run.epsilon(1e-5, method=method)
    assert est.lower == 0.0 or _delta(want_masses, k, est.lower) >= 1e-5 * (1 - 1e-9)
    assert _delta(want_masses, k, est.upper) <= 1e-5 * (1 + 1e-9)


@given(e=st.floats(0.2, 3.0), gam=st.floats(0.05, 0.95), delta=st.floats(0.2, 5.0))
def test_random_staircases_one_shot_exact(staircase, e, gam, delta):
    m = staircase(epsilon=e, gamma=gam, Delta=delta)
    want = _masses(e, gam, delta)
    for e_ in (0.0, 0.5 * e):
        assert m.remove.delta(e_) == pytest.approx(_delta(want, 1, e_), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("p,q,match", [
    (sp.exp(-sp.floor(sp.Abs(x))) * (1 - sp.exp(-1)) / 2, sp.exp(-sp.Abs(x)) / 2, "constant on each step"),
    (sp.Piecewise((1 + sp.floor(x ** 2), (x >= 0) & (x < 1)), (0, True)),
     sp.Piecewise((1, (x >= 0) & (x < 1)), (0, True)), "linear"),
])
def test_floors_mechkit_cannot_cut_are_refused(p, q, match):
    with pytest.raises(mk.SpecificationError, match=match):
        mk.Mechanism.from_densities(p, q, x, name="bad_floor")()
