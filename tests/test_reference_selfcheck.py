"""Self-checks of the mpmath reference implementations in tests/references/mpmath_laws.py.

These tests validate the *references* (closed forms, independent brute-force
computations, internal consistency); they do not touch mechkit."""

import pytest
from mpmath import mp, mpf

from tests.references import mpmath_laws as R


def close(a, b, rel=mpf(10) ** -35, abs_=mpf(10) ** -45):
    a, b = mpf(a), mpf(b)
    if a == b:
        return True
    return abs(a - b) <= abs_ + rel * max(abs(a), abs(b))


def assert_close(a, b, rel=mpf(10) ** -35, abs_=mpf(10) ** -45, msg=""):
    assert close(a, b, rel, abs_), "%s: %s != %s (diff %s)" % (
        msg, mp.nstr(a, 25), mp.nstr(b, 25), mp.nstr(mpf(a) - mpf(b), 5))


MECHS = {
    "gaussian": lambda: R.gaussian(sigma=2, sensitivity=1),
    "laplace": lambda: R.laplace(scale=1.5, sensitivity=1),
    "logistic": lambda: R.logistic(b=0.8),
    "cauchy": lambda: R.cauchy(gamma=0.7),
    "subsampled_gaussian": lambda: R.subsampled_gaussian(sigma=1, q=0.1, sensitivity=1),
    "subsampled_laplace": lambda: R.subsampled_laplace(scale=1, q=0.2, sensitivity=1),
    "randomized_response": lambda: R.randomized_response(epsilon=1),
    "discrete_laplace": lambda: R.discrete_laplace(scale=2, sensitivity=3),
    "discrete_gaussian": lambda: R.discrete_gaussian(sigma=1.5, sensitivity=2),
}
CONTINUOUS = ["gaussian", "laplace", "logistic", "cauchy", "subsampled_gaussian",
              "subsampled_laplace"]
DIRS = [("remove", False), ("remove", True), ("add", False), ("add", True)]

_cache = {}


def mech(name):
    if name not in _cache:
        _cache[name] = MECHS[name]()
    return _cache[name]


# ---------------------------------------------------------------------------
# Gaussian: everything in closed form
# ---------------------------------------------------------------------------

def test_gaussian_plrv_is_normal():
    g = mech("gaussian")
    mu = mpf(1) / 2
    for s in ["-3", "-0.4", "0", "0.125", "0.9", "4"]:
        s = mpf(s)
        # remove: N(mu^2/2, mu^2); remove-dual: N(-mu^2/2, mu^2); add = remove by symmetry
        assert_close(g.cdf(s), mp.ncdf(s, mu ** 2 / 2, mu))
        assert_close(g.cdf(s, dual=True), mp.ncdf(s, -mu ** 2 / 2, mu))
        assert_close(g.cdf(s, "add"), mp.ncdf(s, mu ** 2 / 2, mu))
        assert_close(g.cdf(s, "add", dual=True), mp.ncdf(s, -mu ** 2 / 2, mu))
        assert_close(g.sf(s), mp.ncdf(-s, -mu ** 2 / 2, mu))
    assert g.atoms() == []
    assert_close(g.loss(3), mpf(5) / 8)     # (2*3*1 - 1)/(2*4)


def test_gaussian_deep_tail_logsf():
    g = mech("gaussian")
    mu = mpf(1) / 2
    s = mpf(120)                      # z = (s - mu^2/2)/mu ~ 240 -> sf ~ 1e-12500
    with mp.workdps(60):
        z = (s - mu ** 2 / 2) / mu
        # asymptotic Mills-ratio series, independent of erfc
        series = 1 - 1 / z ** 2 + 3 / z ** 4 - 15 / z ** 6 + 105 / z ** 8 - 945 / z ** 10
        expect = -z ** 2 / 2 - mp.log(z * mp.sqrt(2 * mp.pi)) + mp.log(series)
    lg = g.logsf(s)
    assert lg < -12000
    assert_close(lg, expect, rel=mpf(10) ** -20)
    # the remove-dual tail is N(-mu^2/2, mu^2)
    assert_close(g.logsf(s, dual=True), mp.log(mp.ncdf(-(s + mu ** 2 / 2) / mu)), rel=mpf(10) ** -35)


def test_gaussian_cgf_closed_form_all_directions():
    g = R.gaussian(sigma="0.8", sensitivity="1.3")
    m2 = (mpf("1.3") / mpf("0.8")) ** 2
    for t in ["-2.5", "-0.5", "0", "0.7", "3"]:
        t = mpf(t)
        exp = {
            ("remove", False): [m2 * t * (t + 1) / 2, m2 * (2 * t + 1) / 2, m2],
            ("remove", True): [m2 * t * (t - 1) / 2, m2 * (2 * t - 1) / 2, m2],
            ("add", False): [m2 * t * (t + 1) / 2, m2 * (2 * t + 1) / 2, m2],
            ("add", True): [m2 * t * (t - 1) / 2, m2 * (2 * t - 1) / 2, m2],
        }
        for (d, dual), vals in exp.items():
            got = g.cgf_all(t, 6, d, dual)
            for n in range(7):
                e = vals[n] if n < 3 else mpf(0)
                assert_close(got[n], e, msg="order %d %s %s" % (n, d, dual))
    # the generic quadrature path reproduces the closed form
    got = g.cgf_all(mpf("0.7"), 6, method="moments")
    t = mpf("0.7")
    for n, e in enumerate([m2 * t * (t + 1) / 2, m2 * (2 * t + 1) / 2, m2, 0, 0, 0, 0]):
        assert_close(got[n], e, rel=mpf(10) ** -35, abs_=mpf(10) ** -38, msg="moments order %d" % n)
    # Renyi divergence of N(0,1) vs N(mu,1): alpha mu^2/2
    assert_close(g.renyi(3), 3 * m2 / 2)
    assert_close(g.renyi(1), m2 / 2)


def test_gaussian_delta_is_gdp():
    g = mech("gaussian")
    mu = mpf(1) / 2
    for eps in ["0", "0.1", "1", "3", "10"]:
        assert_close(g.delta(eps), R.gdp_delta(mu, eps), rel=mpf(10) ** -33)
        assert_close(g.delta(eps, "remove"), g.delta(eps, "add"), rel=mpf(10) ** -33)
    # independent direct formula check
    eps = mpf(1)
    assert_close(R.gdp_delta(mu, eps), mp.ncdf(-eps / mu + mu / 2) - mp.e * mp.ncdf(-eps / mu - mu / 2))
    for delta in ["1e-3", "1e-10", "1e-100"]:
        e1 = g.epsilon(mpf(delta))
        e2 = R.gdp_epsilon(mu, mpf(delta))
        assert_close(e1, e2, rel=mpf(10) ** -33)
        assert_close(R.gdp_delta(mu, e2), mpf(delta), rel=mpf(10) ** -30)
    assert g.epsilon(0) == mp.inf
    assert g.epsilon(1) == 0


# ---------------------------------------------------------------------------
# generic consistency for all mechanisms
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(MECHS))
def test_cdf_plus_sf_is_one(name):
    m = mech(name)
    for d, dual in DIRS:
        for s in ["-2", "-0.5", "0", "0.3", "1", "1.6"]:
            c, sf = m.cdf(s, d, dual), m.sf(s, d, dual)
            assert 0 <= c <= 1 and 0 <= sf <= 1
            assert_close(c + sf, 1, msg="%s %s %s %s" % (name, d, dual, s))
            if sf > 0:
                assert_close(m.logsf(s, d, dual), mp.log(sf), rel=mpf(10) ** -35)
        assert m.cdf(mp.inf, d, dual) == 1
        assert m.sf(mp.inf, d, dual) == 0
        # monotone
        vals = [m.cdf(s, d, dual) for s in ["-3", "-1", "-0.2", "0.2", "1", "3"]]
        assert all(a <= b for a, b in zip(vals, vals[1:]))


@pytest.mark.parametrize("name", list(MECHS))
def test_atoms(name):
    m = mech(name)
    tiny = mpf(10) ** -30
    for d, dual in DIRS:
        at = m.atoms(d, dual)
        vals = [v for v, _ in at]
        assert vals == sorted(vals)
        total = mp.fsum(p for _, p in at)
        if name in CONTINUOUS:
            assert total < 1
        else:
            assert_close(total, 1, abs_=mpf(10) ** -40)
        # each atom is the jump of the cdf
        for v, p in at[:6] + at[-6:]:
            if mp.isinf(v):
                continue
            jump = m.cdf(v, d, dual) - m.cdf(v - tiny * max(1, abs(v)), d, dual)
            assert_close(jump, p, rel=mpf(10) ** -25, abs_=mpf(10) ** -27)
    # change of measure: Q-mass = e^{-L} P-mass on every finite atom
    P = dict(m.atoms("remove", False))
    Q = dict(m.atoms("remove", True))
    for v in P:
        assert_close(Q[v], P[v] * mp.exp(-v), rel=mpf(10) ** -35)


def test_laplace_atoms_closed_form():
    m = mech("laplace")
    e0 = mpf(1) / mpf("1.5")
    at = m.atoms()
    assert len(at) == 2
    assert_close(at[0][0], -e0)
    assert_close(at[0][1], mp.exp(-e0) / 2)
    assert_close(at[1][0], e0)
    assert_close(at[1][1], mpf(1) / 2)
    at = m.atoms("add")          # -L under Q
    assert_close(at[0][0], -e0)
    assert_close(at[0][1], mp.exp(-e0) / 2)
    assert_close(at[1][1], mpf(1) / 2)


def test_discrete_laplace_atoms_brute_force():
    t, D = mpf(2), 3
    m = R.discrete_laplace(scale=2, sensitivity=3)
    c = mp.tanh(1 / (2 * t))
    with mp.workdps(60):
        accP, accQ = {}, {}
        for k in range(-400, 404):
            L = (abs(mpf(k)) - abs(mpf(k - D))) / t
            accP[L] = accP.get(L, 0) + c * mp.exp(-abs(mpf(k - D)) / t)
            accQ[L] = accQ.get(L, 0) + c * mp.exp(-abs(mpf(k)) / t)
    atP, atQ = m.atoms(), m.atoms(dual=True)
    assert len(atP) == D + 1
    for (v, p), (v2, q) in zip(atP, atQ):
        key = min(accP, key=lambda L: abs(L - v))
        assert_close(v, key)
        assert_close(p, accP[key])
        assert_close(q, accQ[key])
    assert_close(m.loss(10), mpf(3) / 2)
    assert_close(m.loss(1), mpf(-1) / 2)


def test_discrete_gaussian_tails_brute_force():
    m = R.discrete_gaussian(sigma="1.5", sensitivity=2)
    s2 = mpf("1.5") ** 2
    with mp.workdps(80):
        Z = mp.fsum(mp.exp(-mpf(k) ** 2 / (2 * s2)) for k in range(-200, 201))
        P = lambda k: mp.exp(-mpf(k - 2) ** 2 / (2 * s2)) / Z
        Q = lambda k: mp.exp(-mpf(k) ** 2 / (2 * s2)) / Z
        # L(k) = (4k - 4) / (2 s2); sf at s = L(20) (strictly greater) under P and Q, deep tail
        sfP = mp.fsum(P(k) for k in range(21, 300))
        sfQ = mp.fsum(Q(k) for k in range(21, 300))
        cdfP = mp.fsum(P(k) for k in range(-300, 3))
    s = m.loss(20)
    assert_close(m.sf(s), sfP, rel=mpf(10) ** -35)
    assert_close(m.sf(s, dual=True), sfQ, rel=mpf(10) ** -35)
    assert_close(m.logsf(s, dual=True), mp.log(sfQ), rel=mpf(10) ** -35)
    assert_close(m.cdf(m.loss(2)), cdfP)
    # add direction: -L under Q; P(-L > s) = Q(L < -s)
    assert_close(m.sf(-s, "add"), 1 - sfQ - Q(20))
    # very deep tail, no underflow
    assert m.logsf(m.loss(400)) < -15000


# ---------------------------------------------------------------------------
# independent brute-force CDF: roots of L(x) = s by bracketing findroot on a
# grid, then quadrature of the density between the roots
# ---------------------------------------------------------------------------

def _brute_cdf(m, s, meas, lo=-40, hi=40, n=801, kinks=()):
    with mp.workdps(30):
        s = mpf(s)
        L = lambda x: m._L(mpf(x))
        xs = [mpf(lo) + (mpf(hi) - lo) * i / (n - 1) for i in range(n)]
        f = [L(x) - s for x in xs]
        roots = []
        for a, b, fa, fb in zip(xs, xs[1:], f, f[1:]):
            if fa == 0:
                roots.append(a)
            elif fa * fb < 0:
                roots.append(mp.findroot(lambda x: L(x) - s, (a, b), solver="anderson"))
        pts = [mp.ninf] + roots + [mp.inf]
        kinks = [mpf(k) for k in kinks]
        D = m.P if meas == "P" else m.Q
        pdf = lambda x: mp.exp(D.logpdf(x))
        tot = mpf(0)
        for a, b in zip(pts, pts[1:]):
            if mp.isinf(a):
                mid = b - 1
            elif mp.isinf(b):
                mid = a + 1
            else:
                mid = (a + b) / 2
            if L(mid) <= s:
                # split at the density's own non-smooth points
                inner = [a] + [k for k in kinks if a < k < b] + [b]
                if len(inner) == 2 and mp.isinf(a) and mp.isinf(b):
                    inner = [a, 0, b]
                tot += mp.quad(pdf, inner)
        return tot


@pytest.mark.parametrize("name,svals,kinks", [
    ("cauchy", ["-1.1", "-0.3", "0.2", "1.0"], ()),
    ("logistic", ["-1.0", "0.1", "1.2"], ()),
    ("subsampled_gaussian", ["-0.08", "0.3", "2.0"], ()),
    ("subsampled_laplace", ["-0.1", "0.05", "0.25"], (0, 1)),
])
def test_cdf_brute_force(name, svals, kinks):
    m = mech(name)
    for s in svals:
        for meas, dual in (("P", False), ("Q", True)):
            assert_close(m.cdf(s, dual=dual), _brute_cdf(m, s, meas, kinks=kinks),
                         rel=mpf(10) ** -24, abs_=mpf(10) ** -25, msg="%s %s %s" % (name, s, meas))


def test_symmetric_mechanisms_add_equals_remove():
    # x -> 1-x (logistic, cauchy) / x -> D-x (gaussian, laplace) swaps P and Q
    for name in ["gaussian", "laplace", "logistic", "cauchy"]:
        m = mech(name)
        for s in ["-0.7", "0.05", "0.6"]:
            assert_close(m.cdf(s, "add"), m.cdf(s, "remove"))
            assert_close(m.cdf(s, "add", True), m.cdf(s, "remove", True))


def test_cauchy_near_maximum():
    m = mech("cauchy")
    lo, hi = m.ess_range()
    x1 = (1 - mp.sqrt(1 + 4 * mpf(0.7) ** 2)) / 2     # built from the float 0.7
    assert_close(hi, m.loss(x1))
    assert_close(lo, -hi)
    # just below the maximum the set {L > s} is a tiny interval around x1
    s = hi - mpf(10) ** -20
    assert m.sf(s) > 0
    assert_close(m.logsf(s), m.logsf(s, "add"), rel=mpf(10) ** -35)   # add PLRV = remove PLRV
    assert m.sf(hi) == 0 and m.cdf(hi) == 1


# ---------------------------------------------------------------------------
# CGF
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(MECHS))
def test_cgf_zero_and_minus_one(name):
    m = mech(name)
    assert_close(m.cgf(0), 0, abs_=mpf(10) ** -38)
    assert_close(m.cgf(-1), 0, abs_=mpf(10) ** -38)
    assert_close(m.cgf(0, direction="add", dual=True), 0, abs_=mpf(10) ** -38)
    assert_close(m.cgf(1, direction="remove", dual=True), 0, abs_=mpf(10) ** -38)


def test_logistic_cgf_two_methods():
    # tilted central moments by quadrature vs numerical differentiation of log M
    # (dps=15 keeps the 11 quadratures of the finite-difference stencil cheap)
    m = R.logistic(b="0.8", dps=15)
    a = m.cgf_all("0.5", 6, method="moments")
    b = m.cgf_all("0.5", 6, method="diff")
    for n in range(7):
        assert_close(a[n], b[n], rel=mpf(10) ** -10, abs_=mpf(10) ** -13, msg="order %d" % n)
    # cross-direction identity K_add(t) = K_remove(-1-t), with sign (-1)^n
    c = m.cgf_all("-1.5", 3, direction="add", method="moments")
    for n in range(4):
        assert_close(c[n], (-1) ** n * a[n], rel=mpf(10) ** -14, abs_=mpf(10) ** -15)
    # and at full precision the cumulants are sensible: K'' = Var > 0, K'(0) = KL > 0
    m40 = mech("logistic")
    k = m40.cgf_all(0, 2)
    assert k[0] == 0 or abs(k[0]) < mpf(10) ** -40
    assert k[1] > 0 and k[2] > 0
    assert m40.cgf(1, 1, dual=True) == k[1]      # remove-dual K(t) = K(t-1)


def test_laplace_mgf_closed_form():
    # Mironov (2017): M(t) = (1+t)/(2t+1) e^{t e0} + t/(2t+1) e^{-(1+t) e0}
    m = mech("laplace")
    e0 = mpf(1) / mpf("1.5")
    for t in ["-2", "0.3", "4"]:
        t = mpf(t)
        M = (1 + t) / (2 * t + 1) * mp.exp(t * e0) + t / (2 * t + 1) * mp.exp(-(1 + t) * e0)
        assert_close(m.cgf(t), mp.log(M))
    # K'(0) = KL(P||Q) = e0 + e^{-e0} - 1
    assert_close(m.cgf(0, 1), e0 + mp.exp(-e0) - 1)


def test_subsampled_gaussian_integer_moments():
    m = mech("subsampled_gaussian")
    q, mu2 = mpf(0.1), mpf(1)          # the mechanism was built from the float 0.1
    for alpha in [2, 5]:
        M = mp.fsum(mp.binomial(alpha, k) * (1 - q) ** (alpha - k) * q ** k *
                    mp.exp(k * (k - 1) * mu2 / 2) for k in range(alpha + 1))
        assert_close(m.cgf(alpha - 1), mp.log(M))


def test_discrete_gaussian_cgf_two_ways():
    m = mech("discrete_gaussian")
    for t in ["-1.7", "0.35"]:
        a = m.cgf_all(t, 6)                      # Poisson summation closed form
        b = m.cgf_all(t, 6, method="moments")    # tilted window sums
        for n in range(7):
            assert_close(a[n], b[n], rel=mpf(10) ** -33, abs_=mpf(10) ** -36, msg="order %d" % n)
    # discrete Gaussian is close to (but not exactly) the continuous one
    mu2 = (mpf(2) / mpf("1.5")) ** 2
    assert abs(m.cgf(1) - mu2) < mpf(10) ** -10


def test_atomic_cgf_direct():
    m = mech("randomized_response")
    e = mpf(1)
    p1 = mp.exp(e) / (1 + mp.exp(e))
    for t in ["-0.4", "2.5"]:
        t = mpf(t)
        M = p1 * mp.exp(t * e) + (1 - p1) * mp.exp(-t * e)
        assert_close(m.cgf(t), mp.log(M))
        # Var under the tilt: K'' = e^2 (1 - tanh^2(...))
        w = p1 * mp.exp(t * e) / M
        assert_close(m.cgf(t, 2), 4 * e ** 2 * w * (1 - w))


# ---------------------------------------------------------------------------
# hockey-stick divergence
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(MECHS))
def test_delta_integral_matches_sf_form(name):
    m = mech(name)
    for eps in ["0", "0.4"]:
        for d in ["remove", "add"]:
            a = m.delta(eps, d)
            b = m.delta_integral(eps, d)
            c = m.sf(eps, d) - mp.exp(mpf(eps)) * m.sf(eps, d, dual=True)
            assert_close(a, b, rel=mpf(10) ** -33, abs_=mpf(10) ** -40, msg="%s %s %s" % (name, eps, d))
            assert_close(a, c, rel=mpf(10) ** -33, abs_=mpf(10) ** -40)
        assert m.delta(eps) == max(m.delta(eps, "remove"), m.delta(eps, "add"))


@pytest.mark.parametrize("name", list(MECHS))
def test_epsilon_inverts_delta(name):
    m = mech(name)
    for target in ["1e-2", "1e-7"]:
        for d in ["remove", "add", "both"]:
            e = m.epsilon(mpf(target), d)
            if m.delta(0, d) <= mpf(target):
                assert e == 0
                continue
            if e == mp.inf:
                continue
            assert_close(m.delta(e, d), mpf(target), rel=mpf(10) ** -30)
            # minimality
            assert m.delta(e * (1 - mpf(10) ** -25), d) > mpf(target)


def test_randomized_response_closed_form():
    er = mpf("1.3")
    m = R.randomized_response(epsilon=er)
    for eps in ["0", "0.5", "1.29"]:
        eps = mpf(eps)
        exp_ = (mp.exp(er) - mp.exp(eps)) / (1 + mp.exp(er))
        for d in ["remove", "add", "both"]:
            assert_close(m.delta(eps, d), exp_)
    assert m.delta("1.3") == 0 and m.delta(5) == 0
    for delta in ["0.01", "0.3"]:
        delta = mpf(delta)
        assert_close(m.epsilon(delta), mp.log(mp.exp(er) - delta * (1 + mp.exp(er))))
    assert_close(m.epsilon(0), er)
    assert m.atoms() == [(m.atoms()[0][0], 1 / (1 + mp.exp(er))), (er, m.atoms()[1][1])]


def test_laplace_pure_dp_closed_form():
    b = mpf("0.7")
    m = R.laplace(scale=b, sensitivity=2)
    e0 = 2 / b
    for eps in [0, "0.3", "1.5", e0 * (1 - mpf(10) ** -10)]:
        eps = mpf(eps)
        expect = 1 - mp.exp((eps - e0) / 2)      # verified here against the integral
        assert_close(m.delta_integral(eps, "remove"), expect, rel=mpf(10) ** -25)
        for d in ["remove", "add", "both"]:
            assert_close(m.delta(eps, d), expect, rel=mpf(10) ** -25)
    for eps in [e0, e0 + 1, 100]:
        assert m.delta(eps) == 0
        assert m.delta_integral(eps) == 0
    assert_close(m.epsilon(0), e0)
    for delta in ["1e-9", "0.2"]:
        assert_close(m.epsilon(mpf(delta)), e0 + 2 * mp.log(1 - mpf(delta)), rel=mpf(10) ** -30)


def test_discrete_with_infinite_atoms():
    # outcome 0: only under P (L=+inf); outcome 2: only under Q (L=-inf)
    m = R.discrete([0.5, 0.5, 0], [0, 0.5, 0.5])
    assert m.atoms() == [(0, mpf(1) / 2), (mp.inf, mpf(1) / 2)]
    assert m.atoms(dual=True) == [(mp.ninf, mpf(1) / 2), (0, mpf(1) / 2)]
    assert m.atoms("add") == [(0, mpf(1) / 2), (mp.inf, mpf(1) / 2)]
    assert m.cdf(100) == mpf(1) / 2 and m.cdf(mp.inf) == 1
    assert m.delta(3, "remove") == mpf(1) / 2
    assert m.epsilon("0.4") == mp.inf
    assert m.epsilon("0.5") == 0
    assert m.cgf("0.5") == mp.inf
    assert_close(m.cgf("-0.5"), mp.log(mpf(1) / 2))
    assert m.cgf(0) == 0 and m.cgf(-1) == 0
    assert m.cgf(0, 1) == mp.inf                 # KL = inf


def test_gdp_helpers():
    for mu in ["0.5", "1", "3"]:
        mu = mpf(mu)
        for delta in ["1e-5", "0.1"]:
            e = R.gdp_epsilon(mu, mpf(delta))
            assert_close(R.gdp_delta(mu, e), mpf(delta), rel=mpf(10) ** -30)
    # mu -> the delta at eps=0 is 2 Phi(mu/2) - 1
    assert_close(R.gdp_delta(2, 0), 2 * mp.ncdf(1) - 1)
