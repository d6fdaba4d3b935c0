"""Issue "Any density a paper writes": continuous outputs with point masses (censored and clipped noise), written as
DiracDelta terms of the densities: ``f(x) + w DiracDelta(x - c)``.

References are independent of mechkit (``tests/references/piecewise.py``): mpmath quadrature of (p - e^eps q)_+ over
the continuous part plus the exact sum over the point masses; certified lattice brackets of the composed loss with
the point masses as atoms; closed forms where the loss takes two values.
"""
from __future__ import annotations

import math

import mpmath as mp
import pytest
import sympy as sp
from hypothesis import given, strategies as st

import mechkit as mk
from tests.references import piecewise as ref

x = sp.Symbol("x", real=True)
s, B = sp.symbols("s B", positive=True)


def _phi(z):
    return sp.exp(-z ** 2 / 2) / sp.sqrt(2 * sp.pi)


def _Phi(z):
    return (1 + sp.erf(z / sp.sqrt(2))) / 2


def _clipped(c):
    """N(c, 1) clipped to [-B, B]: a density inside, the clipped tails as point masses at the ends."""
    return (sp.Piecewise((_phi(x - c), (x > -B) & (x < B)), (0, True))
            + _Phi(-B - c) * sp.DiracDelta(x + B) + (1 - _Phi(B - c)) * sp.DiracDelta(x - B))


def _censored(c):
    """Laplace(c, 1) censored below at 0: the mass below 0 sits at 0 (one end only)."""
    return sp.Piecewise((sp.exp(-sp.Abs(x - c)) / 2, x > 0), (0, True)) + (sp.exp(-c) / 2) * sp.DiracDelta(x)


@pytest.fixture(scope="module")
def clipped():
    return mk.Mechanism.from_densities(_clipped(s), _clipped(0), x, name="clipped_gaussian")


@pytest.fixture(scope="module")
def censored():
    return mk.Mechanism.from_densities(_censored(s), _censored(0), x, name="censored_laplace")


def _reference(expr_p, expr_q, vals):
    """(f, g, f_np, g_np, atoms of (f, g) as [(f-mass, g-mass)], atoms of (g, f)) at the parameter values."""
    subs = {sp.Symbol(k, positive=True): v for k, v in vals.items()}
    parts, atoms = [], []
    for e in (expr_p, expr_q):
        smooth, deltas = e.as_independent(sp.DiracDelta, as_Add=True)
        parts.append(sp.piecewise_fold(smooth.subs(subs)))
        found = {}
        for t in sp.Add.make_args(sp.expand(deltas)):  # (1 - Phi) DiracDelta expands into two terms: summed
            w, d = t.as_independent(sp.DiracDelta, as_Add=False)
            loc = -float(d.args[0].subs(subs).as_poly(x).all_coeffs()[1])
            found[loc] = found.get(loc, 0.0) + float(w.subs(subs))
        atoms.append(found)
    f, g = (sp.lambdify(x, e, modules="mpmath") for e in parts)
    f_np, g_np = (sp.lambdify(x, e, modules=["scipy", "numpy"]) for e in parts)
    locs = sorted(set(atoms[0]) | set(atoms[1]))
    pairs = [(atoms[0].get(c, 0.0), atoms[1].get(c, 0.0)) for c in locs]
    return f, g, f_np, g_np, pairs, [(b, a) for a, b in pairs]


def _one_shot(f, g, atoms, eps, cuts, lo, hi, numpy=(None, None)):
    curve = ref.hockey_stick(f, g, eps, cuts, lo, hi, f_np=numpy[0], g_np=numpy[1])
    return float(curve) + sum(max(a - math.exp(eps) * b, 0.0) for a, b in atoms)


@pytest.mark.parametrize("which,vals,cuts,lo,hi", [
    ("clipped", {"s": 1.0, "B": 2.0}, [-2.0, 0.5, 2.0], -2.0, 2.0),
    ("clipped", {"s": 0.3, "B": 0.5}, [-0.5, 0.15, 0.5], -0.5, 0.5),
    ("censored", {"s": 0.7}, [0.0, 0.7], 0.0, math.inf),
])
def test_one_shot_curve_against_mpmath(request, which, vals, cuts, lo, hi):
    fam = request.getfixturevalue(which)
    exprs = (_clipped(s), _clipped(0)) if which == "clipped" else (_censored(s), _censored(0))
    f, g, _, _, rem, add = _reference(*exprs, vals)
    m = fam(**vals)
    for eps in (-0.3, 0.0, 0.2, 0.7, 1.5):
        for direction, (a, b, atoms) in (("remove", (f, g, rem)), ("add", (g, f, add))):
            want = _one_shot(a, b, atoms, eps, cuts, lo, hi)
            assert m.plrv(direction).delta(eps) == pytest.approx(want, rel=1e-9, abs=1e-15), (direction, eps)


def test_point_masses_are_atoms_of_the_loss(clipped):
    m = clipped(s=1.0, B=2.0)
    vals, probs = m.remove.atoms()
    Phi = lambda z: 0.5 * math.erfc(-z / math.sqrt(2))  # noqa: E731
    want = sorted([(math.log(Phi(-3.0) / Phi(-2.0)), Phi(-3.0)), (math.log(Phi(-1.0) / Phi(-2.0)), Phi(-1.0))])
    assert vals == pytest.approx([w[0] for w in want], rel=1e-12)
    assert probs == pytest.approx([w[1] for w in want], rel=1e-12)
    assert m.remove.support == pytest.approx((want[0][0], want[1][0]), rel=1e-12)  # inside: L = x - 1/2


@pytest.mark.parametrize("method", ["fft", "spa", "edgeworth"])
def test_composed_intervals_contain_a_lattice_bracket(clipped, method):
    vals, k, eps = {"s": 1.0, "B": 2.0}, 6, 1.0
    f, g, f_np, g_np, rem, add = _reference(_clipped(s), _clipped(0), vals)
    refs = []
    for a, b, an, bn, atoms in ((f, g, f_np, g_np, rem), (g, f, g_np, f_np, add)):
        bracket, inf = ref.loss_bracket(a, b, an, bn, [-2.0, 0.5, 2.0], M=1500, cells=3000, lo=-2.0, hi=2.0,
                                        atoms=atoms)
        refs.append(ref.composed_delta(bracket, inf, k, eps))
    r_lo, r_hi = max(r[0] for r in refs), max(r[1] for r in refs)
    assert r_hi - r_lo < 0.02 * r_hi  # the reference is informative
    got = mk.compose((clipped(**vals), k)).delta(eps, method=method)
    assert got.lower <= r_hi and r_lo <= got.upper, (got, r_lo, r_hi)
    if method == "fft":
        assert got.upper - got.lower < 0.01


def test_a_mass_only_one_density_has_is_an_infinite_loss():
    """p = 1/2 DiracDelta(x) + 1/2 on [0, 1], q uniform on [0, 1]: remove's loss is +inf with probability 1/2 and
    -log 2 otherwise, so delta(eps) = 1/2 for every eps >= 0; add's is log 2 with Q-probability 1:
    delta(eps) = (1 - e^eps / 2)^+.  Composed k-fold: 1 - 2^-k, and (1 - e^eps 2^-k)^+."""
    box = sp.Piecewise((1, (x >= 0) & (x <= 1)), (0, True))
    m = mk.Mechanism.from_densities(box / 2 + sp.DiracDelta(x) / 2, box, x, name="half_atom")()
    assert m.remove.inf_mass == pytest.approx(0.5, rel=1e-12)
    for eps in (0.0, 0.3, 1.0):
        assert m.remove.delta(eps) == pytest.approx(0.5, rel=1e-12)
        assert m.add.delta(eps) == pytest.approx(max(1 - math.exp(eps) / 2, 0.0), rel=1e-12, abs=1e-15)
    run = mk.compose((m, 3))
    for method in ("fft", "spa"):
        got = run.delta(0.05, method=method)
        want = max(1 - 2.0 ** -3, 1 - math.exp(0.05) / 8)
        assert got.lower <= want * (1 + 1e-9) and want <= got.upper * (1 + 1e-9), (method, got)


def test_subsampled_clipping_against_mpmath(clipped):
    """Poisson subsampling rewrites the densities, point masses included: ((1 - r) Q + r P, Q)."""
    r, vals = 0.1, {"s": 1.0, "B": 2.0}
    sub = mk.subsample(clipped(**vals), r)
    f, g, _, _, rem, add = _reference((1 - r) * _clipped(0) + r * _clipped(s), _clipped(0), vals)
    for eps in (0.0, 0.1, 0.4):
        for direction, (a, b, atoms) in (("remove", (f, g, rem)), ("add", (g, f, add))):
            want = _one_shot(a, b, atoms, eps, [-2.0, 2.0], -2.0, 2.0)
            assert sub.plrv(direction).delta(eps) == pytest.approx(want, rel=1e-9, abs=1e-15), (direction, eps)


def test_written_as_a_string():
    m = mk.Mechanism.from_densities("Piecewise((exp(-(x-1)**2/2)/sqrt(2*pi), x < 2), (0, True))"
                                    " + (1 - (1 + erf(1/sqrt(2)))/2)*DiracDelta(x - 2)",
                                    "Piecewise((exp(-x**2/2)/sqrt(2*pi), x < 2), (0, True))"
                                    " + (1 - (1 + erf(2/sqrt(2)))/2)*DiracDelta(x - 2)", "x", name="clipped_above")()
    f = lambda z, c: mp.npdf(z, c, 1)  # noqa: E731
    with mp.workdps(30):
        want = mp.quad(lambda z: max(f(z, 1) - mp.e ** 0.5 * f(z, 0), 0), [-mp.inf, 0.5 + 0.5, 2])
        want += max(mp.ncdf(-1) - mp.e ** 0.5 * mp.ncdf(-2), 0)
    assert m.remove.delta(0.5) == pytest.approx(float(want), rel=1e-9)


@pytest.mark.parametrize("p,q,match", [
    (_censored(s) - sp.DiracDelta(x), _censored(0), "negative"),  # the weight at 0 becomes e^-s/2 - 1
    (sp.Piecewise((sp.exp(-x), x > 0), (0, True)) + sp.DiracDelta(x + 1) / 4,
     sp.Piecewise((sp.exp(-x), x > 0), (0, True)), "integrates|normal|outside"),
    (_censored(s), sp.exp(-sp.Abs(x)) / 2 * sp.DiracDelta(x ** 2 - 1), "linear|point mass"),
])
def test_bad_point_masses_are_refused(p, q, match):
    with pytest.raises(mk.SpecificationError, match=match):
        mk.Mechanism.from_densities(p, q, x, name="bad_atoms")(**({"s": 0.5} if p.has(s) else {}))


def test_a_pmf_with_diracdelta_is_refused():
    k = sp.Symbol("k", integer=True)
    with pytest.raises(mk.SpecificationError, match="DiracDelta"):
        mk.Mechanism.from_densities(sp.DiracDelta(k), sp.DiracDelta(k - 1), k, domain=[0, 1], name="bad_pmf")


@given(shift=st.floats(0.05, 2.0), bound=st.floats(0.3, 3.0), eps=st.floats(0.0, 2.0))
def test_random_clipping_one_shot_against_mpmath(clipped, shift, bound, eps):
    f, g, fn, gn, rem, add = _reference(_clipped(s), _clipped(0), {"s": shift, "B": bound})
    m = clipped(s=shift, B=bound)
    cuts = [-bound, shift / 2, bound]
    for direction, (a, b, atoms, numpy) in (("remove", (f, g, rem, (fn, gn))), ("add", (g, f, add, (gn, fn)))):
        want = _one_shot(a, b, atoms, eps, cuts, -bound, bound, numpy)
        assert m.plrv(direction).delta(eps) == pytest.approx(want, rel=1e-8, abs=1e-14)
