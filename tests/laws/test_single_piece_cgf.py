"""The CGF of a law with one monotone piece from the tilted-moment pass (``Law.single_piece_cgf``, the trapezoid
rule or GK21 with the kink split) against the CGF's own adaptive quadrature (``cgf_quadrature``) and, for one law,
mpmath; the CGF query takes that path, and a divergent tilted MGF is +inf on both."""
import math

import mpmath
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import mechkit as mk
from tests.laws.test_against_mpmath import logistic_family

x = sp.Symbol("x", real=True)
lam = sp.Symbol("lam", positive=True)


def _logistic():
    return logistic_family()(b=2.0)  # the README's user-defined mechanism


def _exponential_rates():
    # rate 1 against rate lam on (0, inf): L = log(1/lam) + (lam - 1) x, one monotone piece on a half-line;
    # K(t) = E_P[e^(t L)] diverges at t (lam - 1) >= 1
    return mk.Mechanism.from_densities(p=sp.exp(-x), q=lam * sp.exp(-lam * x), var=x,
                                       domain=sp.Interval.open(0, sp.oo), name="exp_rates")(lam=3.0)


LAWS = {
    "sg-0.8-0.01": lambda: mk.subsample(mk.gaussian(sigma=0.8), 0.01),
    "sg-2-0.001": lambda: mk.subsample(mk.gaussian(sigma=2.0), 0.001),
    "sg-0.5-0.1": lambda: mk.subsample(mk.gaussian(sigma=0.5), 0.1),
    "logistic": _logistic,
    "exp-rates": _exponential_rates,
}


@pytest.fixture(scope="module", params=sorted(LAWS))
def law(request):
    return request.param, LAWS[request.param]()


@given(t=st.floats(-12.0, 80.0))
def test_single_piece_cgf_matches_the_quadrature(law, t):
    name, m = law
    for direction in ("remove", "add"):
        core = m.plrv(direction)._core
        fast = core.single_piece_cgf(t)
        assert fast is not None, name
        slow = core.cgf_quadrature(t, 0)
        if math.isinf(slow):
            assert fast == slow, (name, direction, t)
        else:
            assert abs(fast - slow) <= 1e-12 * (1.0 + abs(slow)), (name, direction, t, fast, slow)


def test_a_divergent_tilted_mgf_is_inf_on_both_paths():
    m = _exponential_rates()
    core = m.remove._core
    t_core = [m.remove._a * t + m.remove._b for t in (0.4, 0.6)]  # the PLRV's tilts in the core's variable
    # finite below t = 1/2 (lam - 1 = 2), infinite above: K(0.4) = 0.4 log(1/3) - log(1 - 0.8)
    assert core.single_piece_cgf(t_core[0]) == pytest.approx(0.4 * math.log(1 / 3) - math.log(1 - 0.8), rel=1e-13)
    assert core.single_piece_cgf(t_core[1]) == math.inf and core.cgf_quadrature(t_core[1], 0) == math.inf


def _sg_remove_cgf_mpmath(sigma, q, t):
    """K(t) = log E_P[(p/q)^t] of a subsampled Gaussian's remove direction, P the mixture (40 digits)."""
    mpmath.mp.dps = 40
    s = mpmath.mpf(sigma)

    def npdf(y, mu):
        return mpmath.exp(-(y - mu) ** 2 / (2 * s * s)) / (s * mpmath.sqrt(2 * mpmath.pi))

    def f(y):
        pv = (1 - q) * npdf(y, 0) + q * npdf(y, 1)
        return pv * (pv / npdf(y, 0)) ** t
    return float(mpmath.log(mpmath.quad(f, [-mpmath.inf, -10, 0, 1, 10, 60, mpmath.inf])))


def test_the_accountants_cgf_takes_the_single_piece_path(monkeypatch):
    # PLRV.cgf_unchecked (Edgeworth's Chernoff lines) goes through single_piece_cgf; PLRV.cgf (the FFT's, RDP's)
    # keeps the CGF's own quadrature, memoised apart
    from mechkit.laws.continuous import ContinuousCore
    orig = ContinuousCore.cgf_quadrature
    calls = []

    def count(self, tau, order=0, **kw):
        calls.append(order)
        return orig(self, tau, order, **kw)
    monkeypatch.setattr(ContinuousCore, "cgf_quadrature", count)
    m = mk.subsample(mk.gaussian(sigma=0.9), 0.02)
    ref = _sg_remove_cgf_mpmath(0.9, 0.02, 0.7)
    assert m.remove.cgf_unchecked(0.7) == pytest.approx(ref, rel=1e-12) and calls == []
    assert m.remove.cgf(0.7) == pytest.approx(ref, rel=1e-12) and calls == [0]


def test_single_piece_cgf_against_mpmath():
    m = mk.subsample(mk.gaussian(sigma=0.9), 0.02)
    for t in (-3.0, -0.5, 0.7, 4.0, 25.0):
        got = m.remove._core.single_piece_cgf(m.remove._a * t + m.remove._b)
        assert got == pytest.approx(_sg_remove_cgf_mpmath(0.9, 0.02, t), rel=1e-12, abs=1e-15), t


def test_the_first_pass_at_a_tilt_is_shared_and_changes_no_value(monkeypatch):
    # the cumulants and both absolute moments at a tilt start from one mass-and-mean pass (memoised per tau): three
    # queries, one such pass; each value the same float as from a fresh law asked for it alone
    from mechkit.laws import continuous
    orig = continuous.N.gk_integrate
    first = []

    def count(mode, *a):
        if mode == 0 and a[10] == 1:  # the mass-and-mean pass: mode 0, moments 0..1
            first.append(a[7])
        return orig(mode, *a)
    monkeypatch.setattr(continuous.N, "gk_integrate", count)

    def fresh():
        return mk.subsample(mk.gaussian(sigma=0.9), 0.02).remove
    z = fresh()
    got = (list(z.cgf_vector(0.0, 4)), z.tilted_abs3(0.0), z.tilted_abs3(0.0, power=1))
    assert len(first) == 1
    alone = (list(fresh().cgf_vector(0.0, 4)), fresh().tilted_abs3(0.0), fresh().tilted_abs3(0.0, power=1))
    assert got == alone and len(first) == 4


def _sg_remove_law_mpmath(sigma, q):
    """(pdf, loss, breakpoints, E L) of a subsampled Gaussian's remove direction in mpmath (40 digits): P the mixture
    (1 - q) N(0, s^2) + q N(1, s^2), L = log P / N(0, s^2)."""
    mpmath.mp.dps = 40
    s = mpmath.mpf(sigma)

    def npdf(y, mu):
        return mpmath.exp(-(y - mu) ** 2 / (2 * s * s)) / (s * mpmath.sqrt(2 * mpmath.pi))

    def pdf(y):
        return (1 - q) * npdf(y, 0) + q * npdf(y, 1)

    def loss(y):
        return mpmath.log(pdf(y) / npdf(y, 0))
    pts = [-mpmath.inf, -10, 0, 1, 10, mpmath.inf]
    return pdf, loss, pts, mpmath.quad(lambda y: pdf(y) * loss(y), pts)


def test_absolute_moments_split_at_their_kink_against_mpmath():
    # E_P|L - E L|^p (p = 1, 3) of a subsampled Gaussian's remove direction: the quadrature starts on each side of
    # the kink at L = E L (``ContinuousCore._kink``); reference: mpmath at 40 digits with the kink as a breakpoint
    sigma, q = 0.8, 0.01
    z = mk.subsample(mk.gaussian(sigma=sigma), q).remove
    pdf, loss, pts, mean = _sg_remove_law_mpmath(sigma, q)
    yk = mpmath.findroot(lambda y: loss(y) - mean, 0.5)
    cuts = sorted(pts[1:-1] + [yk])
    for power in (1, 3):
        ref = float(mpmath.quad(lambda y: pdf(y) * abs(loss(y) - mean) ** power, [-mpmath.inf] + cuts + [mpmath.inf]))
        assert z.tilted_abs3(0.0, power=power) == pytest.approx(ref, rel=1e-13), power


def test_a_symmetric_laws_mean_absolute_deviation_is_the_same_both_ways():
    # the logistic pair is symmetric: L under P and -L under Q have one law, so both directions' E|L - EL| agree to
    # rounding (with the kink inside an interval they differed by 5e-14 relative)
    m = _logistic()
    a, b_ = m.remove.tilted_abs3(0.0, power=1), m.add.tilted_abs3(0.0, power=1)
    assert abs(a - b_) <= 1e-15 * a


def test_a_scalar_cgf_query_equals_the_array_path_and_checks_its_input():
    # PLRV.cgf's scalar path (no array round trip: the Renyi scans ask it ~50 times a query) returns the array
    # path's floats; non-finite tilts are refused either way
    z = mk.subsample(mk.gaussian(sigma=0.9), 0.02).add
    ts = [-2.5, -0.3, 0.0, 0.7, 4.0, 31.0]
    for order in (0, 1, 2, 4):
        arr = z.cgf(np.array(ts), order)
        for t, want in zip(ts, arr):
            assert z.cgf(t, order) == want and z.cgf(np.float64(t), order) == want
            assert type(z.cgf(t, order)) is float
    for bad in (math.inf, -math.inf, math.nan):
        with pytest.raises(mk.ParameterError):
            z.cgf(bad)


@given(t=st.floats(-6.0, 20.0))
def test_cumulants_and_abs3_from_two_tilted_passes_match_the_quadrature(law, t):
    # Law.cumulants_abs3 (the Edgeworth accountant's inputs: two tilted passes for a law with one monotone piece)
    # against cgf_vector's and tilted_abs's adaptive quadrature: the cumulants to 1e-11 of their scale sd^j, and A an
    # upper bound on E|L - K'|^3 (the trapezoid's last change added) within 0.2% of it
    name, m = law
    for direction in ("remove", "add"):
        core = m.plrv(direction)._core
        vec, A = core.cumulants_abs3(t, 5)
        ref = core.cgf_quadrature(t, 5, vector=True)
        if not np.all(np.isfinite(ref)):
            continue
        sd = math.sqrt(ref[2])
        for j in range(1, 6):
            assert abs(vec[j] - ref[j]) <= 1e-11 * (sd ** j + abs(ref[j])), (name, direction, t, j, vec[j], ref[j])
        exact = core.cgf_quadrature(t, 3, abs_power=3)
        assert exact * (1 - 1e-12) <= A <= exact * (1 + 2e-3), (name, direction, t, A, exact)


def test_edgeworth_inputs_come_from_the_tilted_passes_and_bound_the_third_absolute_moment():
    # the subsampled Gaussian's remove direction at t = 0: cumulants 1..5 and A >= E|L - EL|^3 from
    # PLRV.cumulants_abs3_unchecked, against mpmath at 40 digits (A within 0.2% above it); the add direction's are
    # the same law's at another tilt, with signs (-1)^j
    sigma, q = 0.8, 0.01
    m = mk.subsample(mk.gaussian(sigma=sigma), q)
    pdf, loss, pts, mean = _sg_remove_law_mpmath(sigma, q)
    c = [mpmath.quad(lambda y: pdf(y) * (loss(y) - mean) ** j, pts) for j in range(2, 6)]
    kappa = [mean, c[0], c[1], c[2] - 3 * c[0] ** 2, c[3] - 10 * c[1] * c[0]]
    yk = mpmath.findroot(lambda y: loss(y) - mean, 0.5)
    cuts = [-mpmath.inf] + sorted(pts[1:-1] + [yk]) + [mpmath.inf]  # the kink of |L - EL|^3 a breakpoint
    abs3 = float(mpmath.quad(lambda y: pdf(y) * abs(loss(y) - mean) ** 3, cuts))
    vec, A = m.remove.cumulants_abs3_unchecked(0.0, 5)
    for j in range(1, 6):
        assert vec[j] == pytest.approx(float(kappa[j - 1]), rel=1e-10), j
    assert abs3 <= A <= abs3 * (1 + 2e-3)
    # the add direction's dual is L under P with the sign flipped: the same cumulants times (-1)^j, the same A
    vd, Ad = m.add.dual.cumulants_abs3_unchecked(0.0, 5)
    assert np.array_equal(vd[1:], vec[1:] * (-1.0) ** np.arange(1, 6)) and Ad == A
