"""Issue "Any density a paper writes": densities with bounded or different supports and piecewise definitions.

Thirteen mechanisms written as a user would (none in the catalog): Piecewise, Heaviside, Max and Min, Interval
domains, supports where p or q vanishes (losses of +-inf), flat pieces (point masses), kinks from four Abs terms,
special functions in normalisers.  References are independent (``tests/references/piecewise.py``): mpmath
quadrature of (p - e^eps q)_+ split at hand-written cut points, exact sums over the atoms of piecewise-constant
densities, certified lattice brackets of the composed loss.
"""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, strategies as st
import sympy as sp

import mechkit as mk
from tests.references import piecewise as ref

x = sp.Symbol("x", real=True)
s, A, b = (sp.Symbol(n, positive=True) for n in ("s", "A", "b"))
half = sp.Rational(1, 2)


def _box(lo, hi, height=1):
    return sp.Piecewise((height, (x >= lo) & (x <= hi)), (0, True))


def _lap(c):
    return sp.Piecewise((sp.exp(-sp.Abs(x - c) / b) / (2 * b * (1 - sp.exp(-A / b))), (x >= c - A) & (x <= c + A)),
                        (0, True))


def _asym(c):  # rates 1 (right) and 2 (left), written with Min
    return sp.Rational(2, 3) * sp.exp(sp.Min(-(x - c), 2 * (x - c)))


PHI1 = (1 + sp.erf(1 / sp.sqrt(2))) / 2
FLAT = 4 * sp.exp(-1)
NORM = 2 - sp.exp(-1 - A) - sp.exp(1 - A)

#: name -> (p, q, domain, parameter values, cut points of the reference)
MECHANISMS = {
    "uniform_shift": (_box(0, 1), _box(s, 1 + s), None, {"s": 0.3}, [0, 0.3, 1, 1.3]),
    "one_sided_exponential": (sp.Piecewise((sp.exp(-(x - s)), x >= s), (0, True)),
                              sp.Piecewise((sp.exp(-x), x >= 0), (0, True)), None, {"s": 0.7}, [0, 0.7]),
    "heaviside_exponential": (2 * sp.exp(-2 * (x - s)) * sp.Heaviside(x - s), 2 * sp.exp(-2 * x) * sp.Heaviside(x),
                              None, {"s": 0.3}, [0, 0.3]),
    "histogram": (sp.Piecewise((sp.Rational(1, 5), (x >= 0) & (x < 1)), (sp.Rational(4, 5), (x >= 1) & (x < 2)),
                               (0, True)), _box(0, 2, half), None, {}, [0, 1, 2]),
    "truncated_laplace_shift": (_lap(1), _lap(0), None, {"A": 3.0, "b": 1.0}, [-3, -2, 0, 1, 3, 4]),
    "bounded_laplace": (sp.exp(-sp.Abs(x - 1)) / NORM, sp.exp(-sp.Abs(x)) / (2 - 2 * sp.exp(-A)),
                        sp.Interval(-A, A), {"A": 3.0}, [-3, 0, 1, 3]),
    "triangle": (sp.Max(0, 1 - sp.Abs(x - s)), sp.Max(0, 1 - sp.Abs(x)), None, {"s": 0.5}, [-1, -0.5, 0, 0.5, 1, 1.5]),
    "laplace_mixture": ((sp.exp(-sp.Abs(x - 1)) + sp.exp(-sp.Abs(x - 3))) / 4,
                        (sp.exp(-sp.Abs(x)) + sp.exp(-sp.Abs(x - 2))) / 4, None, {}, [0, 1, 2, 3]),
    "uniform_vs_gaussian": (_box(-1, 1, half), sp.exp(-x ** 2 / 2) / sp.sqrt(2 * sp.pi), None, {}, [-1, 0, 1]),
    "truncated_gaussian": (sp.Piecewise((sp.exp(-(x - 1) ** 2 / 2) / sp.sqrt(2 * sp.pi) / PHI1, x >= 0), (0, True)),
                           sp.Piecewise((2 * sp.exp(-x ** 2 / 2) / sp.sqrt(2 * sp.pi), x >= 0), (0, True)),
                           None, {}, [0]),
    "flat_top": (sp.exp(-sp.Max(sp.Abs(x), 1)) / FLAT, sp.exp(-sp.Max(sp.Abs(x - s), 1)) / FLAT, None, {"s": 0.5},
                 [-1, -0.5, 0, 0.5, 1, 1.5]),
    "asymmetric_laplace": (_asym(1), _asym(0), None, {}, [0, 1]),
    "sign_written": ((1 + sp.sign(x - s) / 3) * sp.exp(-sp.Abs(x - s)) / 2,
                     (1 + sp.sign(x) / 3) * sp.exp(-sp.Abs(x)) / 2, None, {"s": 0.4}, [0, 0.4]),
}


@pytest.fixture(scope="module")
def families():
    out = {}
    for name, (p, q, dom, vals, _) in MECHANISMS.items():
        kw = {} if dom is None else {"domain": dom}
        out[name] = mk.Mechanism.from_densities(p, q, x, name=name, **kw)
    return out


def _functions(name):
    """The densities at the parameter values as mpmath and NumPy functions (SymPy's lambdify, not mechkit)."""
    p, q, dom, vals, cuts = MECHANISMS[name]
    subs = {sp.Symbol(k, positive=True): v for k, v in vals.items()}
    lo, hi = -math.inf, math.inf
    if dom is not None:
        lo, hi = float(dom.inf.subs(subs)), float(dom.sup.subs(subs))
    exprs = [sp.piecewise_fold(e.subs(subs).rewrite(sp.Piecewise)) for e in (p, q)]
    if dom is not None:
        exprs = [sp.Piecewise((e, (x >= lo) & (x <= hi)), (0, True)) for e in exprs]
    mpf = [sp.lambdify(x, e, modules="mpmath") for e in exprs]
    npf = [_numpy(e) for e in exprs]
    return mpf, npf, cuts, lo, hi


def _numpy(e):
    fn = sp.lambdify(x, e, modules=["scipy", "numpy"])
    return lambda t: np.broadcast_to(np.asarray(fn(np.asarray(t, float)), float), np.shape(t))


def test_reference_numpy_scan_finds_the_same_roots():
    """The reference's NumPy path (the sign scan re-checked in mpmath, SciPy's quadrature) against its mpmath path,
    and a closed form where the root lies on a scan point: f(x) = x / x0, g = 1 on [0, 1], x0 = 200.5/400 (the
    201st of the 400 scan points)."""
    x0 = 200.5 / 400
    f, g = (lambda t: t / x0), (lambda t: mp.mpf(1))
    fn, gn = (lambda t: np.asarray(t) / x0), (lambda t: np.ones_like(np.asarray(t, dtype=float)))
    want = (1 - x0 * x0) / (2 * x0) - (1 - x0)
    for kw in ({}, {"f_np": fn, "g_np": gn}):
        assert float(ref.hockey_stick(f, g, 0.0, [], 0.0, 1.0, **kw)) == pytest.approx(want, rel=1e-14)
    for name in ("laplace_mixture", "triangle", "truncated_gaussian", "sign_written"):
        (p, q), (pn, qn), cuts, lo, hi = _functions(name)
        for eps in (-0.2, 0.35, 1.2):
            for f, g, fn, gn in ((p, q, pn, qn), (q, p, qn, pn)):
                slow = ref.hockey_stick(f, g, eps, cuts, lo, hi)
                fast = ref.hockey_stick(f, g, eps, cuts, lo, hi, f_np=fn, g_np=gn)
                assert fast == pytest.approx(slow, rel=1e-12, abs=1e-17)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_one_shot_curve_matches_mpmath(families, name):
    # the reference's NumPy path (mpmath roots, SciPy quadrature): checked against its all-mpmath path above
    (p, q), (pn, qn), cuts, lo, hi = _functions(name)
    m = families[name](**MECHANISMS[name][3])
    for eps in (-0.2, 0.0, 0.35, 1.2):
        for direction, (f, g, fn, gn) in (("remove", (p, q, pn, qn)), ("add", (q, p, qn, pn))):
            want = float(ref.hockey_stick(f, g, eps, cuts, lo, hi, f_np=fn, g_np=gn))
            got = m.delta(eps, direction=direction)
            assert got == pytest.approx(want, rel=1e-9, abs=1e-14), (name, direction, eps)


def test_supports_give_point_masses_at_infinity(families):
    """uniform on [0, 1] vs [s, 1 + s]: L = +inf on [0, s) (P-mass s), 0 on [s, 1]; delta = s for every eps >= 0."""
    m = families["uniform_shift"](s=0.3)
    vals, probs = m.remove.atoms()
    assert list(vals) == [0.0, math.inf] and probs == pytest.approx([0.7, 0.3], rel=1e-12)
    assert m.remove.inf_mass == pytest.approx(0.3, rel=1e-12)
    assert m.epsilon(0.29) == math.inf and m.epsilon(0.31) == 0.0
    # one-sided exponential shifted by s: the remove loss is s with probability 1 (pure s-DP in that direction)
    e = families["one_sided_exponential"](s=0.7)
    assert e.remove.largest_loss() == pytest.approx(0.7, rel=1e-12)
    assert e.epsilon(0.0, direction="remove") == pytest.approx(0.7, rel=1e-12)
    assert e.add.inf_mass == pytest.approx(1 - math.exp(-0.7), rel=1e-12)


EXACT = {  # name, values of the remove loss and the add loss with their probabilities (by hand from the densities)
    "uniform_shift": ({"s": 0.3}, ([0.0, math.inf], [0.7, 0.3]), ([0.0, math.inf], [0.7, 0.3])),
    "histogram": ({}, ([math.log(0.4), math.log(1.6)], [0.2, 0.8]), ([-math.log(0.4), -math.log(1.6)], [0.5, 0.5])),
    "one_sided_exponential": ({"s": 0.7}, ([0.7], [1.0]), ([-0.7, math.inf], [math.exp(-0.7), 1 - math.exp(-0.7)])),
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_composition_of_point_masses_against_exact_sums(families, name):
    vals, remove, add = EXACT[name]
    run = mk.compose((families[name](**vals), 6))
    for eps in (0.0, 0.5, 2.0):
        want = max(float(ref.exact_atoms_delta(*remove, 6, eps)), float(ref.exact_atoms_delta(*add, 6, eps)))
        got = run.delta(eps, method="fft")
        assert got.lower <= want * (1 + 1e-9) + 1e-15 and want <= got.upper * (1 + 1e-9) + 1e-15, (name, eps, got)
        assert got.upper - got.lower <= 2e-2 * want  # the FFT's certified width at its default eps_error


@pytest.mark.parametrize("name,k,eps", [("truncated_laplace_shift", 5, 1.0), ("laplace_mixture", 8, 2.0),
                                        ("truncated_gaussian", 4, 1.5)])
def test_composed_continuous_pieces_against_a_lattice_bracket(families, name, k, eps):
    (p, q), (pn, qn), cuts, lo, hi = _functions(name)
    if name == "truncated_gaussian":
        cuts = [*cuts, 0.5]  # the loss x - 1/2 + const is monotone: no extra cut needed, one for finer cells
    run = mk.compose((families[name](**MECHANISMS[name][3]), k))
    got = run.delta(eps, method="fft")
    refs = []
    for f, g, fn, gn in ((p, q, pn, qn), (q, p, qn, pn)):
        bracket, a = ref.loss_bracket(f, g, fn, gn, cuts, M=1500, cells=3000, lo=lo, hi=hi)
        refs.append(ref.composed_delta(bracket, a, k, eps))
    r_lo, r_hi = max(r[0] for r in refs), max(r[1] for r in refs)
    assert r_hi - r_lo < 0.05 * r_hi  # the reference is informative
    assert got.lower <= r_hi and r_lo <= got.upper, (got, r_lo, r_hi)
    for options in ({"method": "spa"}, {"method": "edgeworth"}):  # finite parts composed, masses at +inf added
        other = run.delta(eps, **options)
        assert other.lower <= r_hi and r_lo <= other.upper, (other, r_lo, r_hi)


def test_reference_can_fail():
    """The lattice reference tells compositions apart: mechkit's 9-fold answer lies above the 8-fold bracket."""
    (p, q), (pn, qn), cuts, lo, hi = _functions("laplace_mixture")
    bracket, a = ref.loss_bracket(p, q, pn, qn, cuts, M=1500, cells=3000)
    r = ref.composed_delta(bracket, a, 8, 2.0)
    fam = mk.Mechanism.from_densities(*MECHANISMS["laplace_mixture"][:2], x, name="laplace_mixture")
    got = mk.compose((fam(), 9)).delta(2.0, method="fft")  # p(3 - x) = q(x): both directions are the same
    assert got.lower > r[1]


def test_reference_sees_a_positive_stretch_next_to_a_cut():
    """The sign scan looks at each part's ends: truncated Laplace shift at A = b = 1 and eps = 0.998046875, where
    p - e^eps q > 0 only on the last 1e-3 of [0, 1] (the scan's midpoints stop 1.25e-3 short of it); the value
    against a direct mpmath integral over that stretch plus the mass at +inf (1/2, by symmetry)."""
    eps = mp.mpf(0.998046875)
    z = 2 * (1 - mp.e ** -1)
    p = lambda v: mp.e ** -abs(v - 1) / z if 0 <= v <= 2 else mp.mpf(0)  # noqa: E731
    q = lambda v: mp.e ** -abs(v) / z if -1 <= v <= 1 else mp.mpf(0)  # noqa: E731
    want = mp.mpf(1) / 2 + mp.quad(lambda v: p(v) - mp.e ** eps * q(v), [(1 + eps) / 2, 1])  # L = 2x - 1 on [0, 1]
    got = ref.hockey_stick(p, q, float(eps), [-1, 0, 1, 2])
    assert abs(got - want) < 1e-15 and want - mp.mpf(1) / 2 > 7e-7


def test_conditions_that_cannot_be_resolved_are_refused():
    with pytest.raises(mk.SpecificationError, match="floor"):
        mk.Mechanism.from_densities(sp.exp(-sp.floor(sp.Abs(x))) * (1 - sp.exp(-1)) / 2,
                                    sp.exp(-sp.Abs(x)) / 2, x, name="floored")()


# ---------------------------------------------------------------------------------------------------------------
# Hypothesis: random piecewise-constant densities and random shifts of supported families

_a = sp.symbols("a0:4", positive=True)
_b = sp.symbols("b1:5", positive=True)


def _bins(heights, first):
    return sp.Piecewise(*[(h, (x >= first + i) & (x < first + i + 1)) for i, h in enumerate(heights)], (0, True))


@pytest.fixture(scope="module")
def histogram_family():
    """p on [-1, 3) and q on [0, 4) in unit bins: the bin [-1, 0) is p's alone (loss +inf), [3, 4) q's alone."""
    return mk.Mechanism.from_densities(_bins(_a, -1), _bins(_b, 0), x, name="random_histogram")


def _normalised(ws):
    t = sum(ws)
    return [w / t for w in ws]


weights = st.lists(st.floats(0.05, 1.0), min_size=4, max_size=4).map(_normalised)


@given(a=weights, b=weights, k=st.integers(1, 4), eps=st.floats(0.0, 3.0))
def test_random_histograms_one_shot_exact_and_composed_interval_holds(histogram_family, a, b, k, eps):
    m = histogram_family(**{f"a{i}": v for i, v in enumerate(a)}, **{f"b{i + 1}": v for i, v in enumerate(b)})
    remove = ([math.log(a[i + 1] / b[i]) for i in range(3)] + [math.inf], a[1:] + [a[0]])
    add = ([math.log(b[i] / a[i + 1]) for i in range(3)] + [math.inf], b[:3] + [b[3]])
    one = max(float(ref.exact_atoms_delta(*remove, 1, eps)), float(ref.exact_atoms_delta(*add, 1, eps)))
    assert m.delta(eps) == pytest.approx(one, rel=1e-10, abs=1e-15)
    want = max(float(ref.exact_atoms_delta(*remove, k, eps)), float(ref.exact_atoms_delta(*add, k, eps)))
    got = mk.compose((m, k)).delta(eps, method="fft")
    assert got.lower <= want * (1 + 1e-9) + 1e-14 and want <= got.upper * (1 + 1e-9) + 1e-14, (want, got)


@given(s_=st.floats(0.01, 0.99), k=st.integers(1, 30))
def test_random_uniform_shifts_compose_exactly(families, s_, k):
    """U[0, 1] vs U[s, 1 + s]: the loss is +inf with probability s and 0 otherwise in both directions, so the
    k-fold delta(eps) is 1 - (1 - s)^k at every eps >= 0 and epsilon(delta) is 0 above it, inf below."""
    run = mk.compose((families["uniform_shift"](s=s_), k))
    want = 1 - (1 - s_) ** k
    got = run.delta(0.5, method="fft")
    assert got.lower <= want * (1 + 1e-12) and want <= got.upper * (1 + 1e-12)
    assert float(got) == pytest.approx(want, rel=1e-9)
    assert run.epsilon(want * 0.999) == math.inf
    if 1 - want > 1e-9:  # a delta above the mass at +inf that is not 1 in floating point
        for method in ("fft", "spa"):  # the finite part is 0: epsilon 0, certified
            est = run.epsilon(want + 0.5 * (1 - want), method=method)
            assert est.lower == 0.0 and 0.0 <= est <= est.upper <= 0.05


@given(A_=st.floats(0.6, 6.0), b_=st.floats(0.3, 3.0), eps=st.floats(-0.5, 3.0))
def test_random_truncated_laplace_one_shot_against_mpmath(families, A_, b_, eps):
    fam = families["truncated_laplace_shift"]
    m = fam(A=A_, b=b_)
    subs = {A: A_, b: b_}
    exprs = [sp.piecewise_fold(e.subs(subs)) for e in MECHANISMS["truncated_laplace_shift"][:2]]
    p, q = (sp.lambdify(x, e, modules="mpmath") for e in exprs)
    pn, qn = (_numpy(e) for e in exprs)
    cuts = [-A_, 1 - A_, 0, 1, A_, 1 + A_]
    for direction, (f, g, fn, gn) in (("remove", (p, q, pn, qn)), ("add", (q, p, qn, pn))):
        want = float(ref.hockey_stick(f, g, eps, cuts, f_np=fn, g_np=gn))
        assert m.delta(eps, direction=direction) == pytest.approx(want, rel=1e-9, abs=1e-14), direction


_w, _m1, _m2, _c = sp.symbols("w m1 m2 c", positive=True)


@pytest.fixture(scope="module")
def mixture_family():
    """A two-component Laplace mixture against a Laplace centred at 0: w Lap(m1) + (1 - w) Lap(m2 + m1) vs Lap(0),
    kinks at 0, m1 and m1 + m2 (a user-written mixture, not the catalog's)."""
    lap = lambda c: sp.exp(-sp.Abs(x - c)) / 2  # noqa: E731
    return mk.Mechanism.from_densities(_w * lap(_m1) + (1 - _w) * lap(_m1 + _m2), lap(0), x, name="random_mixture")


@given(w=st.floats(0.05, 0.95), m1=st.floats(0.05, 1.5), m2=st.floats(0.05, 1.5), k=st.integers(2, 6),
       eps=st.floats(0.0, 3.0))
@example(w=0.36088528766873834, m1=0.36088528766873834, m2=0.36088528766873834, k=3, eps=0.36088528766873834)
def test_random_mixtures_fft_and_spa_hold_the_reference_and_intersect(mixture_family, w, m1, m2, k, eps):
    """The FFT's and the SPA's certified intervals of the k-fold delta(eps) contain a certified lattice bracket of
    the composed loss (both directions), and intersect each other; one-shot, mechkit equals mpmath."""
    m = mixture_family(w=w, m1=m1, m2=m2)
    run = mk.compose((m, k))
    p = lambda t: w * mp.exp(-abs(t - m1)) / 2 + (1 - w) * mp.exp(-abs(t - m1 - m2)) / 2  # noqa: E731
    q = lambda t: mp.exp(-abs(t)) / 2  # noqa: E731
    pn = lambda t: w * np.exp(-np.abs(t - m1)) / 2 + (1 - w) * np.exp(-np.abs(t - m1 - m2)) / 2  # noqa: E731
    qn = lambda t: np.exp(-np.abs(t)) / 2  # noqa: E731
    cuts = [0.0, m1, m1 + m2]
    one = max(float(ref.hockey_stick(f, g, eps, cuts, f_np=fn, g_np=gn)) for f, g, fn, gn in ((p, q, pn, qn),
                                                                                             (q, p, qn, pn)))
    assert m.delta(eps) == pytest.approx(one, rel=1e-9, abs=1e-15)
    refs = [ref.composed_delta(*ref.loss_bracket(f, g, fn, gn, cuts, M=800, cells=1500), k, eps)
            for f, g, fn, gn in ((p, q, pn, qn), (q, p, qn, pn))]
    r_lo, r_hi = max(r[0] for r in refs), max(r[1] for r in refs)
    fft, spa = run.delta(eps, method="fft"), run.delta(eps, method="spa")
    for got in (fft, spa):
        assert got.lower <= r_hi * (1 + 1e-9) + 1e-14 and r_lo <= got.upper * (1 + 1e-9) + 1e-14, (got, r_lo, r_hi)
    assert max(fft.lower, spa.lower) <= min(fft.upper, spa.upper) * (1 + 1e-9) + 1e-14, (fft, spa)
