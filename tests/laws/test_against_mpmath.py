"""mechkit's derived objects against the independent mpmath reference (tests/references/mpmath_laws.py, 40 digits).

Mechanisms outside the catalog (logistic, Cauchy) and the subsampled Gaussian and Laplace; CDFs, survival
functions, log-survival deep in the tail, point masses, CGF derivatives of orders 0..6 at several t, both
directions, duals, and the one-shot privacy curve.  Agreement 1e-9 relative or better.
"""
import math

import numpy as np
import pytest
import sympy as sp

import mechkit as mk
from tests.references import mpmath_laws as ref

pytestmark = pytest.mark.slow
RTOL = 1e-9

x = sp.Symbol("x", real=True)
b = sp.Symbol("b", positive=True)
g = sp.Symbol("gamma", positive=True)


def logistic_family():
    return mk.Mechanism.from_densities(
        p=sp.exp(-x / b) / (b * (1 + sp.exp(-x / b)) ** 2),
        q=sp.exp(-(x - 1) / b) / (b * (1 + sp.exp(-(x - 1) / b)) ** 2), var=x, name="logistic")


def cauchy_family():
    return mk.Mechanism.from_densities(p=1 / (sp.pi * g * (1 + (x / g) ** 2)),
                                       q=1 / (sp.pi * g * (1 + ((x - 1) / g) ** 2)), var=x, name="cauchy")


CASES = {
    "logistic": (lambda: logistic_family()(b=2.0), lambda: ref.logistic(b=2.0)),
    "cauchy": (lambda: cauchy_family()(gamma=0.7), lambda: ref.cauchy(gamma=0.7)),
    "subsampled_gaussian": (lambda: mk.subsample(mk.gaussian(sigma=0.9), 0.02),
                            lambda: ref.subsampled_gaussian(sigma=0.9, q=0.02)),
    "subsampled_laplace": (lambda: mk.subsample(mk.laplace(scale=0.8), 0.1),
                           lambda: ref.subsampled_laplace(scale=0.8, q=0.1)),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def pair(request):
    mech, oracle = CASES[request.param]
    return request.param, mech(), oracle()


def interior_points(plrv, n=7):
    lo, hi = plrv.support
    lo = lo if math.isfinite(lo) else -8.0
    hi = hi if math.isfinite(hi) else 8.0
    pts = np.linspace(lo, hi, n + 2)[1:-1]
    return pts


def close(a, b_, rtol=RTOL, atol=0.0):
    b_ = float(b_)
    return abs(a - b_) <= rtol * abs(b_) + atol


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize("dual", [False, True])
def test_cdf_and_logsf(pair, direction, dual):
    name, m, o = pair
    z = m.plrv(direction)
    z = z.dual if dual else z
    for s in interior_points(z):
        assert close(z.cdf(s), o.cdf(s, direction, dual), atol=1e-300), (name, s)
        assert close(z.sf(s), o.sf(s, direction, dual), atol=1e-300), (name, s)  # each side summed directly
        assert close(z.logsf(s), o.logsf(s, direction, dual)), (name, s)
        assert close(z.logcdf(s), o.logcdf(s, direction, dual)), (name, s)


def test_atoms(pair):
    name, m, o = pair
    for direction in ("remove", "add"):
        for dual in (False, True):
            z = m.plrv(direction)
            z = z.dual if dual else z
            vals, probs = z.atoms()
            expect = o.atoms(direction, dual)
            assert len(vals) == len(expect), name
            for v, p_, (ev, ep) in zip(vals, probs, expect):
                assert close(v, ev, 1e-12) and close(p_, ep, 1e-11), (name, v, ev, p_, ep)


def test_support(pair):
    name, m, o = pair
    for direction in ("remove", "add"):
        lo, hi = m.plrv(direction).support
        elo, ehi = o.ess_range(direction, False)
        for a, e in ((lo, elo), (hi, ehi)):
            if math.isinf(float(e)):
                assert a == float(e)
            else:
                assert close(a, e, 1e-10, 1e-14), (name, direction, a, e)


def test_deep_tail_logsf(pair):
    name, m, o = pair
    z = m.remove
    lo, hi = z.support
    if math.isfinite(hi):
        # approach the top of a bounded loss: the survival probability shrinks to zero
        s_vals = [hi - d * (hi - lo) for d in (1e-3, 1e-6)]
    else:
        s_vals = [10.0, 40.0, 120.0]
    for s in s_vals:
        r = o.logsf(s)
        assert math.isfinite(z.logsf(s)) and close(z.logsf(s), r, 1e-8), (name, s, z.logsf(s), float(r))


@pytest.mark.parametrize("t", [-1.7, -0.5, 0.6, 2.5])
def test_cgf_orders(pair, t):
    name, m, o = pair
    for direction in ("remove", "add"):
        expect = o.cgf_all(t, 6, direction)
        got = [m.plrv(direction).cgf(t, k) for k in range(7)]
        scale = [float(abs(expect[2])) ** (k / 2) for k in range(7)]  # cumulants scale like sd^k
        for k in range(7):
            tol = RTOL * abs(float(expect[k])) + (1e-9 if k < 3 else 1e-7) * scale[k]
            assert abs(got[k] - float(expect[k])) <= tol, (name, direction, t, k, got[k], float(expect[k]))


@pytest.mark.parametrize("t", [0.3, 2.5, 12.0])
def test_tilt_stats_one_pass(pair, t):
    # the SPA's exact evaluations (one adaptive pass about a centre, started on each side of the kink of
    # |L - centre|^3, QUADPACK's error estimate) against the mpmath CGF, centred and 0.2 sd off-centre
    name, m, o = pair
    for direction in ("remove", "add"):
        p = m.plrv(direction)
        if not math.isfinite(p.cgf(t)):
            assert not math.isfinite(p.tilt_stats(t, 0.0, 4)[0][0])
            continue
        expect = [float(v) for v in o.cgf_all(t, 4, direction)]
        sd = math.sqrt(expect[2])
        for off in (0.0, 0.2):
            got, A = p.tilt_stats(t, expect[1] + off * sd, 4)
            for k in range(5):
                tol = RTOL * abs(expect[k]) + (1e-9 if k < 3 else 1e-7) * sd ** k
                assert abs(got[k] - expect[k]) <= tol, (name, direction, t, off, k, got[k], expect[k])
            # A >= E|L_t - K'(t)|^3, which lies between sd^3 and sqrt(m2 m4) (Lyapunov, Cauchy-Schwarz);
            # centred, A is that moment itself
            m4 = expect[4] + 3 * expect[2] ** 2
            assert sd ** 3 * (1 - 1e-9) <= A, (name, direction, t, off, A)
            if off == 0.0:
                assert A <= math.sqrt(expect[2] * m4) * (1 + 1e-9), (name, direction, t, A)


def test_privacy_curve(pair):
    name, m, o = pair
    for eps in (0.0, 0.05, 0.3):
        for direction in ("remove", "add"):
            assert close(m.delta(eps, direction=direction), o.delta(eps, direction), 1e-9, 1e-300), (name, eps)
    for d in (1e-3, 1e-6):
        e_ref = float(o.epsilon(d))
        assert m.epsilon(d) == pytest.approx(e_ref, rel=1e-8, abs=1e-10), (name, d)


def test_log_scaled_mills_ratio():
    # the SPA's log(e^{x^2/2} Q(x)): math.erfc below x = 25, a continued fraction above; against mpmath (30 digits),
    # including both sides of the switch and far tails where 0.5 x^2 + log Q(x) would cancel catastrophically
    import mpmath as mp
    from mechkit.accountants.spa.formulas import _log_psi
    for x in list(np.linspace(-40.0, 60.0, 401)) + [24.999999, 25.0, 25.000001, 1e3, 1e6, 1e9, -1e3]:
        with mp.workdps(30):
            ref = mp.mpf(x) ** 2 / 2 + mp.log(mp.erfc(mp.mpf(x) / mp.sqrt(2)) / 2)
        assert _log_psi(float(x)) == pytest.approx(float(ref), rel=1e-13, abs=1e-13)
