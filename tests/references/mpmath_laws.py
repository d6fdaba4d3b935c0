"""Independent high-precision (mpmath) reference implementations of privacy
loss random variables (PLRVs) for a handful of mechanisms.

This module deliberately does NOT import mechkit.  It is meant to be used as
an oracle in tests.

Conventions
-----------
A mechanism is a pair of output distributions P (dataset WITH the individual)
and Q (WITHOUT).  Privacy loss L(x) = log p(x)/q(x).

* "remove" PLRV: L(x), x ~ P.           dual: L(x), x ~ Q.
* "add"    PLRV: -L(x), x ~ Q.          dual: -L(x), x ~ P.
* q = 0 < p gives L = +inf (mass under P); p = 0 < q gives L = -inf.
  Flat pieces of L give atoms.
* M(t) = E_P[e^{tL}];  K_remove(t) = log M(t), K_remove_dual(t) = log M(t-1),
  K_add(t) = log M(-1-t), K_add_dual(t) = log M(-t).
* delta_remove(eps) = int (p - e^eps q)_+ ,  delta_add(eps) = int (q - e^eps p)_+,
  delta_both = max.  epsilon(delta) = smallest eps >= 0 with delta(eps) <= delta.

All public methods return mpmath ``mpf`` values rounded to ``self.dps``
significant digits (default 40); internally GUARD extra digits are used.

Atom comparisons: a threshold ``s`` that agrees with an atom location to a
relative tolerance of 10**-(dps-2) is treated as *equal* to that atom (so that
an atom value returned by ``atoms()`` and fed back into ``cdf`` hits the atom).
"""


from mpmath import mp, mpf

mp.dps = 40
DEFAULT_DPS = 40
GUARD = 20

__all__ = [
    "gaussian", "laplace", "logistic", "cauchy", "subsampled_gaussian",
    "subsampled_laplace", "randomized_response", "discrete_laplace",
    "discrete_gaussian", "discrete", "gdp_delta", "gdp_epsilon",
    "DEFAULT_DPS",
]


# ---------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------

def _conv(x):
    return mpf(x)


def _dir(direction):
    d = str(direction).lower()
    if d not in ("remove", "add"):
        raise ValueError("direction must be 'remove' or 'add', got %r" % (direction,))
    return d


def _dir_both(direction):
    d = str(direction).lower()
    if d not in ("remove", "add", "both"):
        raise ValueError("direction must be 'remove', 'add' or 'both', got %r" % (direction,))
    return d


def _measure(d, dual):
    if d == "remove":
        return "Q" if dual else "P"
    return "P" if dual else "Q"


def _logsumexp(xs):
    xs = [x for x in xs if x != mp.ninf]
    if not xs:
        return mp.ninf
    m = max(xs)
    if m == mp.inf:
        return mp.inf
    return m + mp.log(mp.fsum(mp.exp(x - m) for x in xs))


def _kappas(m1, c, order):
    """Cumulants 1..order from mean m1 and central moments c[k] (k>=2)."""
    k = [None] * (order + 1)
    if order >= 1:
        k[1] = m1
    if order >= 2:
        k[2] = c[2]
    if order >= 3:
        k[3] = c[3]
    if order >= 4:
        k[4] = c[4] - 3 * c[2] ** 2
    if order >= 5:
        k[5] = c[5] - 10 * c[3] * c[2]
    if order >= 6:
        k[6] = c[6] - 15 * c[4] * c[2] - 10 * c[3] ** 2 + 30 * c[2] ** 3
    return k


def _weighted_cumulants(logw, Ls, order):
    """[log sum w, kappa_1..kappa_order] of the discrete measure with log-weights
    logw at loss values Ls (all finite)."""
    lM = _logsumexp(logw)
    if order == 0:
        return [lM]
    ws = [mp.exp(a - lM) for a in logw]
    m1 = mp.fsum(w * L for w, L in zip(ws, Ls))
    c = {}
    for j in range(2, order + 1):
        c[j] = mp.fsum(w * (L - m1) ** j for w, L in zip(ws, Ls))
    k = _kappas(m1, c, order)
    return [lM] + k[1:]


def _vquad(F, points, n, rtol):
    """Tanh-sinh quadrature of a vector-valued integrand F(x) -> list of n values
    over consecutive intervals given by ``points`` (may start/end with +-inf,
    but must not be just [-inf, inf]).  Convergence is judged per component
    relative to the integral of the absolute value."""
    rule = mp._tanh_sinh
    prec = mp.prec
    maxdeg = rule.guess_degree(prec) + 3
    total = [mpf(0)] * n
    for a, b in zip(points[:-1], points[1:]):
        if not a < b:
            continue
        hist = []
        ahist = []
        prev = None
        aprev = None
        ok = False
        est_int = mpf(0)
        for degree in range(1, maxdeg + 1):
            nodes = rule.get_nodes(a, b, degree, prec)
            h = mpf(2) ** (-degree)
            S = [prev[j] / (2 * h) if prev else mpf(0) for j in range(n)]
            A = [aprev[j] / (2 * h) if aprev else mpf(0) for j in range(n)]
            vals = [F(x) for x, _ in nodes]
            ws = [w for _, w in nodes]
            for j in range(n):
                S[j] += mp.fdot(ws, [v[j] for v in vals])
                A[j] += mp.fdot(ws, [abs(v[j]) for v in vals])
            cur = [h * S[j] for j in range(n)]
            acur = [h * A[j] for j in range(n)]
            hist.append(cur)
            ahist.append(acur)
            prev, aprev = cur, acur
            if degree >= 3:
                ok = True
                est_int = mpf(0)
                for j in range(n):
                    sc = acur[j]
                    if sc == 0:
                        continue
                    d1 = abs(hist[-1][j] - hist[-2][j]) / sc
                    d2 = abs(hist[-1][j] - hist[-3][j]) / sc
                    if d1 <= rtol:
                        continue
                    # tanh-sinh roughly doubles the digits per level:
                    # estimated error of the latest level ~ d1**2/d2
                    est = d1 * d1 / d2 if d2 > 0 else d1
                    if not (d1 < mpf(10) ** -6 and est <= rtol):
                        ok = False
                        est_int = max(est_int, min(est, d1))
                if ok:
                    break
        if not ok and est_int > rtol * mpf(10) ** 6:
            raise ArithmeticError("reference quadrature did not converge on [%s, %s] "
                                  "(relative error estimate %s)"
                                  % (mp.nstr(a, 8), mp.nstr(b, 8), mp.nstr(est_int, 3)))
        for j in range(n):
            total[j] += prev[j]
    return total


def _approx_eq(v, s, tol):
    if v == s:
        return True
    if mp.isinf(v) or mp.isinf(s):
        return False
    return abs(v - s) <= tol * max(abs(v), abs(s))


def _cmp(v, op, s, tol):
    eq = _approx_eq(v, s, tol)
    if op == "le":
        return v < s or eq
    if op == "lt":
        return v < s and not eq
    if op == "ge":
        return v > s or eq
    if op == "gt":
        return v > s and not eq
    raise ValueError(op)


def _solve_epsilon(delta_fn, ddelta_fn, target, esssup, inf_mass, dps):
    """Smallest eps >= 0 with delta_fn(eps) <= target, for nonincreasing,
    continuous delta_fn (ddelta_fn its derivative).  Works at current precision."""
    target = mpf(target)
    if target < 0:
        raise ValueError("delta must be >= 0")
    zero = mpf(0)
    if delta_fn(zero) <= target:
        return zero
    if target < inf_mass:
        return mp.inf
    if target == 0 and inf_mass == 0:
        return max(zero, esssup)
    lo, hi = zero, mpf(1)
    if esssup < mp.inf:
        hi = max(mpf(esssup), mpf(1e-30))
        if delta_fn(hi) > target:  # only possible with an inf atom at exactly target
            lo = hi
            hi = 2 * hi + 1
    while delta_fn(hi) > target:
        lo = hi
        hi = 2 * hi
        if hi > mpf(10) ** 12:
            return mp.inf
    tol = mpf(10) ** (-(dps + 5))
    ftol = mpf(10) ** (-(dps + 8))
    x = (lo + hi) / 2
    for _ in range(2000):
        d = delta_fn(x)
        if d > target:
            lo = x
        else:
            hi = x
        xn = None
        if d > 0 and target > 0:
            dd = ddelta_fn(x)
            if dd < 0 and abs(d - target) <= ftol * target:
                # delta is strictly decreasing here and already matches
                return x
            if dd < 0:
                xn = x - (mp.log(d) - mp.log(target)) * d / dd
        if xn is None or not (lo < xn < hi):
            xn = (lo + hi) / 2
        if abs(xn - x) <= tol * max(1, abs(x)):
            return xn
        if hi - lo <= tol * max(1, abs(hi)):
            return hi
        x = xn
    return hi


# ---------------------------------------------------------------------------
# base class
# ---------------------------------------------------------------------------

class _Reference(object):
    """Common API.  Subclasses implement:

    _mass(meas, op, s)            measure ('P'/'Q') of {x : L(x) op s}
    _atoms_raw()                  list of (L, P-mass, Q-mass) for atoms of L
    _ess_range(meas)              (ess inf, ess sup) of L under meas
    _tilted(tau, order, method)   [log M(tau), K^(1)(tau), ..., K^(order)(tau)]
    _delta_integral(eps, d)       int (p - e^eps q)_+ (remove) etc. computed directly
    loss(x), logp(x), logq(x)
    """

    def __init__(self, dps=DEFAULT_DPS):
        self.dps = int(dps)

    # -- precision helpers --------------------------------------------------
    def _wp(self, extra=0):
        return mp.workdps(self.dps + GUARD + extra)

    def _out(self, r):
        with mp.workdps(self.dps):
            return +r

    def _tol(self):
        return mpf(10) ** (-(self.dps - 2))

    # -- default hooks --------------------------------------------------------
    def _atoms_raw(self):
        return []

    # -- PLRV distribution ---------------------------------------------------
    def _cdf(self, s, d, dual):
        m = _measure(d, dual)
        if d == "remove":
            return self._mass(m, "le", s)
        return self._mass(m, "ge", -s)

    def _sf(self, s, d, dual):
        m = _measure(d, dual)
        if d == "remove":
            return self._mass(m, "gt", s)
        return self._mass(m, "lt", -s)

    def cdf(self, s, direction="remove", dual=False):
        """P(L_dir <= s) under the direction's measure (dual: the other one)."""
        d = _dir(direction)
        with self._wp():
            r = self._cdf(_conv(s), d, dual)
        return self._out(r)

    def sf(self, s, direction="remove", dual=False):
        """P(L_dir > s)."""
        d = _dir(direction)
        with self._wp():
            r = self._sf(_conv(s), d, dual)
        return self._out(r)

    def logsf(self, s, direction="remove", dual=False):
        """log P(L_dir > s); no underflow (mpmath exponent range is unbounded)."""
        d = _dir(direction)
        with self._wp():
            r = self._sf(_conv(s), d, dual)
            r = mp.log(r) if r > 0 else mp.ninf
        return self._out(r)

    def logcdf(self, s, direction="remove", dual=False):
        d = _dir(direction)
        with self._wp():
            r = self._cdf(_conv(s), d, dual)
            r = mp.log(r) if r > 0 else mp.ninf
        return self._out(r)

    def atoms(self, direction="remove", dual=False):
        """Sorted list of (value, prob) of the atoms of L_dir (incl. +-inf),
        under the direction's measure (dual: the other one).  Zero-mass atoms
        are omitted.  For discrete_gaussian the (infinite) list is truncated to
        a window outside which the mass is < 10**-(dps+10)."""
        d = _dir(direction)
        m = _measure(d, dual)
        out = {}
        with self._wp():
            for L, pm, qm in self._atoms_raw():
                v = L if d == "remove" else -L
                pr = pm if m == "P" else qm
                if pr > 0:
                    out[v] = out.get(v, mpf(0)) + pr
            res = sorted(out.items(), key=lambda kv: kv[0])
        return [(self._out(v), self._out(p)) for v, p in res]

    def ess_range(self, direction="remove", dual=False):
        """(ess inf, ess sup) of L_dir under its measure."""
        d = _dir(direction)
        m = _measure(d, dual)
        with self._wp():
            lo, hi = self._ess_range(m)
            if d == "add":
                lo, hi = -hi, -lo
        return self._out(lo), self._out(hi)

    # -- CGF ------------------------------------------------------------------
    def _tilted_diff(self, tau, order, J=5):
        """Derivatives of log M at tau by numerical differentiation: log M is
        evaluated (to ~dps+10 digits) on the symmetric stencil tau + j h,
        j = -J..J, and the degree-2J Taylor polynomial through these points is
        solved for exactly (a high-order generalisation of mp.diff's central
        differences; error ~ h^(2J+2-n) for the n-th derivative)."""
        res = [self._tilted(tau, 0, "auto")[0]]
        if order == 0:
            return res
        acc = self.dps + 10
        h = mpf(10) ** (-mpf(acc) / (2 * J + 2))
        vals = [self._tilted(tau + j * h, 0, "auto")[0] for j in range(-J, J + 1)]
        with mp.workdps(mp.dps + 40):
            A = mp.matrix([[mpf(j) ** n for n in range(2 * J + 1)] for j in range(-J, J + 1)])
            c = mp.lu_solve(A, mp.matrix(vals))
            for n in range(1, order + 1):
                res.append(c[n] * mp.factorial(n) / h ** n)
        return res

    def _cgf_all(self, t, order, d, dual, method):
        if not (0 <= order <= 6):
            raise ValueError("order must be in 0..6")
        if d == "remove":
            tau, sgn = (t - 1 if dual else t), 1
        else:
            tau, sgn = (-t if dual else -1 - t), -1
        if method == "diff":
            vals = self._tilted_diff(tau, order)
        else:
            vals = self._tilted(tau, order, method)
        return [v * sgn ** n for n, v in enumerate(vals)]

    def cgf(self, t, order=0, direction="remove", dual=False, method="auto"):
        """K^(order)(t) of L_dir (order 0..6).
        method: 'auto' (closed form where available, else tilted moments),
        'moments' (tilted central moments by quadrature / summation),
        'diff' (mp.diff of log M)."""
        d = _dir(direction)
        with self._wp():
            vals = self._cgf_all(_conv(t), int(order), d, dual, method)
        return self._out(vals[int(order)])

    def cgf_all(self, t, max_order=6, direction="remove", dual=False, method="auto"):
        """[K(t), K'(t), ..., K^(max_order)(t)]."""
        d = _dir(direction)
        with self._wp():
            vals = self._cgf_all(_conv(t), int(max_order), d, dual, method)
        return [self._out(v) for v in vals]

    def renyi(self, alpha, direction="remove"):
        """D_alpha(P||Q) (remove) or D_alpha(Q||P) (add); alpha=1 gives KL."""
        d = _dir(direction)
        with self._wp():
            a = _conv(alpha)
            if a == 1:
                r = self._cgf_all(mpf(0), 1, d, False, "auto")[1]
            else:
                r = self._cgf_all(a - 1, 0, d, False, "auto")[0] / (a - 1)
        return self._out(r)

    # -- hockey stick ------------------------------------------------------------
    def _delta_dir(self, eps, d):
        """sf(eps) - e^eps sf_dual(eps), with precision raised on cancellation."""
        for extra in (0, 30, 100, 300):
            with mp.workdps(self.dps + GUARD + extra):
                e = mpf(eps)
                a = self._sf(e, d, False)
                if a == 0:
                    return mpf(0)
                b = mp.exp(e) * self._sf(e, d, True)
                r = a - b
                if r > a * mpf(10) ** (-(GUARD + extra - 5)):
                    return r
        return max(r, mpf(0))

    def _ddelta_dir(self, eps, d):
        return -mp.exp(eps) * self._sf(eps, d, True)

    def delta(self, eps, direction="both"):
        """Hockey-stick divergence delta(eps); 'both' = max over directions."""
        d = _dir_both(direction)
        with self._wp():
            e = _conv(eps)
            if d == "both":
                r = max(self._delta_dir(e, "remove"), self._delta_dir(e, "add"))
            else:
                r = self._delta_dir(e, d)
        return self._out(r)

    def delta_integral(self, eps, direction="both"):
        """Independent computation of delta(eps) as int (p - e^eps q)_+ (remove)
        / int (q - e^eps p)_+ (add) by quadrature / summation."""
        d = _dir_both(direction)
        with self._wp():
            e = _conv(eps)
            if d == "both":
                r = max(self._delta_integral(e, "remove"), self._delta_integral(e, "add"))
            else:
                r = self._delta_integral(e, d)
        return self._out(r)

    def _epsilon_dir(self, delta, d):
        m = _measure(d, False)
        lo, hi = self._ess_range(m)
        if d == "add":
            lo, hi = -hi, -lo
        inf_mass = mpf(0)
        for L, pm, qm in self._atoms_raw():
            v = L if d == "remove" else -L
            if v == mp.inf:
                inf_mass += pm if m == "P" else qm
        if hi == mp.inf and inf_mass > 0:
            # ess sup of the finite part
            fin = [(L if d == "remove" else -L) for L, pm, qm in self._atoms_raw()]
            fin = [v for v in fin if v < mp.inf]
            hi_fin = max(fin) if fin else mpf(0)
            if self._has_continuous_part():
                hi_fin = mp.inf
        else:
            hi_fin = hi
        return _solve_epsilon(lambda e: self._delta_dir(e, d),
                              lambda e: self._ddelta_dir(e, d),
                              delta, hi_fin, inf_mass, self.dps)

    def _has_continuous_part(self):
        return False

    def epsilon(self, delta, direction="both"):
        """Smallest eps >= 0 with delta(eps) <= delta (max over directions for 'both')."""
        d = _dir_both(direction)
        with self._wp():
            dl = _conv(delta)
            if d == "both":
                r = max(self._epsilon_dir(dl, "remove"), self._epsilon_dir(dl, "add"))
            else:
                r = self._epsilon_dir(dl, d)
        return self._out(r)


# ---------------------------------------------------------------------------
# continuous distributions with closed-form CDFs
# ---------------------------------------------------------------------------

def _const(obj, name, fn):
    """Per-precision cache of derived constants (speeds up quadrature)."""
    c = obj.__dict__.setdefault("_consts", {})
    key = (name, mp.prec)
    v = c.get(key)
    if v is None:
        v = c[key] = fn()
    return v


class _Dist(object):
    median = mpf(0)

    def cdf(self, x):
        if x == mp.inf:
            return mpf(1)
        if x == mp.ninf:
            return mpf(0)
        return self._cdf(x)

    def sf(self, x):
        if x == mp.inf:
            return mpf(0)
        if x == mp.ninf:
            return mpf(1)
        return self._sf(x)

    def mass(self, a, b):
        if not a < b:
            return mpf(0)
        if a == mp.ninf:
            return self.cdf(b)
        if b == mp.inf:
            return self.sf(a)
        m = self.median
        if a >= m:
            return self.sf(a) - self.sf(b)
        if b <= m:
            return self.cdf(b) - self.cdf(a)
        return 1 - self.cdf(a) - self.sf(b)


class _Normal(_Dist):
    def __init__(self, mu, s):
        self.mu, self.s = mpf(mu), mpf(s)
        self.median = self.mu

    def _cdf(self, x):
        return mp.erfc(-(x - self.mu) / (self.s * mp.sqrt(2))) / 2

    def _sf(self, x):
        return mp.erfc((x - self.mu) / (self.s * mp.sqrt(2))) / 2

    def logpdf(self, x):
        z = (x - self.mu) / self.s
        return -z * z / 2 - _const(self, "lc", lambda: mp.log(self.s) + mp.log(2 * mp.pi) / 2)


class _LaplaceD(_Dist):
    def __init__(self, mu, b):
        self.mu, self.b = mpf(mu), mpf(b)
        self.median = self.mu

    def _cdf(self, x):
        z = (x - self.mu) / self.b
        return mp.exp(z) / 2 if z < 0 else 1 - mp.exp(-z) / 2

    def _sf(self, x):
        z = (x - self.mu) / self.b
        return mp.exp(-z) / 2 if z > 0 else 1 - mp.exp(z) / 2

    def logpdf(self, x):
        return -abs(x - self.mu) / self.b - _const(self, "lc", lambda: mp.log(2 * self.b))


class _LogisticD(_Dist):
    def __init__(self, mu, b):
        self.mu, self.b = mpf(mu), mpf(b)
        self.median = self.mu

    def _cdf(self, x):
        return 1 / (1 + mp.exp(-(x - self.mu) / self.b))

    def _sf(self, x):
        return 1 / (1 + mp.exp((x - self.mu) / self.b))

    def logpdf(self, x):
        z = abs(x - self.mu) / self.b
        return -z - 2 * mp.log1p(mp.exp(-z)) - _const(self, "lc", lambda: mp.log(self.b))


class _CauchyD(_Dist):
    def __init__(self, mu, g):
        self.mu, self.g = mpf(mu), mpf(g)
        self.median = self.mu

    def _cdf(self, x):
        z = (x - self.mu) / self.g
        if z < 0:
            return mp.atan(-1 / z) / mp.pi
        if z == 0:
            return mpf(1) / 2
        return 1 - mp.atan(1 / z) / mp.pi

    def _sf(self, x):
        z = (x - self.mu) / self.g
        if z > 0:
            return mp.atan(1 / z) / mp.pi
        if z == 0:
            return mpf(1) / 2
        return 1 - mp.atan(-1 / z) / mp.pi

    def logpdf(self, x):
        z = (x - self.mu) / self.g
        return -_const(self, "lc", lambda: mp.log(mp.pi * self.g)) - mp.log1p(z * z)


class _Mixture(_Dist):
    def __init__(self, comps):
        self.comps = [(mpf(w), d) for w, d in comps if w != 0]

    def _cdf(self, x):
        return mp.fsum(w * d.cdf(x) for w, d in self.comps)

    def _sf(self, x):
        return mp.fsum(w * d.sf(x) for w, d in self.comps)

    def mass(self, a, b):
        return mp.fsum(w * d.mass(a, b) for w, d in self.comps)

    def logpdf(self, x):
        lws = _const(self, "lw", lambda: [mp.log(w) for w, d in self.comps])
        return _logsumexp([lw + d.logpdf(x) for lw, (w, d) in zip(lws, self.comps)])


# ---------------------------------------------------------------------------
# continuous mechanisms
# ---------------------------------------------------------------------------

class _Continuous(_Reference):
    """Continuous mechanism described by distributions P, Q (internal
    coordinates), the internal loss _L(x), and a list of monotone branches.

    _branches() -> list of (a, b, kind, La, Lb, inv): on the open interval
    (a, b) L is strictly increasing (kind=+1) from La to Lb, strictly
    decreasing (kind=-1) from La to Lb, or constant (kind=0, La == Lb).
    inv(s) returns the x in (a, b) with L(x) = s.
    """

    def _has_continuous_part(self):
        return True

    def logp(self, x):
        with self._wp():
            r = self.P.logpdf(self._to_int(_conv(x)))
        return self._out(r)

    def logq(self, x):
        with self._wp():
            r = self.Q.logpdf(self._to_int(_conv(x)))
        return self._out(r)

    def loss(self, x):
        with self._wp():
            r = self._L(self._to_int(_conv(x)))
        return self._out(r)

    def _to_int(self, x):
        return x

    def _extra_points(self, tau):
        return []

    def _region(self, op, s):
        tol = self._tol()
        out = []
        for a, b, kind, La, Lb, inv in self._branches():
            if kind == 0:
                if _cmp(La, op, s, tol):
                    out.append((a, b))
                continue
            lo, hi = (La, Lb) if kind > 0 else (Lb, La)
            if op in ("le", "lt"):
                if s >= hi:
                    out.append((a, b))
                elif s <= lo:
                    pass
                else:
                    x = min(max(inv(s), a), b)
                    out.append((a, x) if kind > 0 else (x, b))
            else:
                if s <= lo:
                    out.append((a, b))
                elif s >= hi:
                    pass
                else:
                    x = min(max(inv(s), a), b)
                    out.append((x, b) if kind > 0 else (a, x))
        return out

    def _extra_digits(self, s):
        """Digits lost when s is close to a finite limit of a monotone branch
        (ill-conditioned inversion, e.g. near the max of the Cauchy loss)."""
        if mp.isinf(s):
            return 0
        best = 0
        for a, b, kind, La, Lb, inv in self._branches():
            if kind == 0:
                continue
            for Lc in (La, Lb):
                if mp.isinf(Lc) or s == Lc:
                    continue
                r = abs(s - Lc) / max(abs(Lc), 1)
                if r < mpf(10) ** -5:
                    best = max(best, int(-mp.log10(r)) + 5)
        return min(best, 1000)

    def _mass(self, meas, op, s):
        extra = self._extra_digits(s)
        if extra:
            with mp.workdps(mp.dps + extra):
                return +self._mass0(meas, op, s)
        return self._mass0(meas, op, s)

    def _mass0(self, meas, op, s):
        D = self.P if meas == "P" else self.Q
        return mp.fsum(D.mass(a, b) for a, b in self._region(op, s))

    def _atoms_raw(self):
        res = {}
        for a, b, kind, La, Lb, inv in self._branches():
            if kind == 0:
                pm, qm = self.P.mass(a, b), self.Q.mass(a, b)
                old = res.get(La, (mpf(0), mpf(0)))
                res[La] = (old[0] + pm, old[1] + qm)
        return [(L, pm, qm) for L, (pm, qm) in res.items()]

    def _ess_range(self, meas):
        vals = []
        for a, b, kind, La, Lb, inv in self._branches():
            vals += [La, Lb]
        return min(vals), max(vals)

    def _points(self, tau=None):
        pts = set()
        for a, b, kind, La, Lb, inv in self._branches():
            for x in (a, b):
                if not mp.isinf(x):
                    pts.add(x)
        if tau is not None:
            for x in self._extra_points(tau):
                pts.add(mpf(x))
        if not pts:
            pts.add(mpf(0))
        return [mp.ninf] + sorted(pts) + [mp.inf]

    _light_tails = True   # integrand p e^{tau L} decays at least exponentially

    def _scale(self):
        return mpf(1)

    def _truncate(self, pts, lwf):
        """Replace infinite ends of pts by finite points beyond which the
        log-weight lwf has dropped by more than the target precision."""
        if not self._light_tails:
            return pts
        inner = pts[1:-1]
        top = max(lwf(x) for x in inner)
        drop = (self.dps + 25) * mp.log(10) + 10
        h = self._scale()
        out = list(inner)
        for sgn, a in ((-1, inner[0]), (1, inner[-1])):
            prev = lwf(a)
            X = a
            k = 0
            while True:
                X = a + sgn * h * mpf(2) ** k
                v = lwf(X)
                top = max(top, v)
                if v < top - drop and v <= prev:
                    break
                prev = v
                k += 1
                if k > 200:
                    X = sgn * mp.inf
                    break
            out.append(X)
        return sorted(out)

    def _tilted(self, tau, order, method):
        """log M(tau) and cumulants of L under the tilted density p e^{tau L}
        by (vector) tanh-sinh quadrature split at the breakpoints (memoised)."""
        key = (mpf(tau), order, self.dps)
        cache = self.__dict__.setdefault("_tilt_cache", {})
        for (t0, o0, d0), v in cache.items():
            if t0 == key[0] and d0 == key[2] and o0 >= order:
                return v[:order + 1]
        with mp.workdps(self.dps + 10):
            res = self._tilted_quad(mpf(tau), order)
        if len(cache) > 256:
            cache.clear()
        cache[key] = res
        return res

    def _tilted_quad(self, tau, order):
        cache = {}

        def node(x):
            r = cache.get(x)
            if r is None:
                L = self._L(x)
                lw = self.P.logpdf(x) + tau * L
                r = (lw, L)
                cache[x] = r
            return r

        pts = self._points(tau)
        pts = self._truncate(pts, lambda x: node(x)[0])
        rtol = mpf(10) ** (-(self.dps + 5))
        # scale factor to keep numbers O(1): log-weight at a representative point
        shift = max(node(x)[0] for x in pts if not mp.isinf(x))

        def F1(x):
            lw, L = node(x)
            w = mp.exp(lw - shift)
            return [w, w * L]

        I0, I1 = _vquad(F1, pts, 2, rtol)
        lM = mp.log(I0) + shift
        if order == 0:
            return [lM]
        m1 = I1 / I0
        if order == 1:
            return [lM, m1]

        def F2(x):
            lw, L = node(x)
            w = mp.exp(lw - shift)
            dl = L - m1
            out = []
            p = w * dl
            for _ in range(2, order + 1):
                p = p * dl
                out.append(p)
            return out

        Is = _vquad(F2, pts, order - 1, rtol)
        c = {j: Is[j - 2] / I0 for j in range(2, order + 1)}
        k = _kappas(m1, c, order)
        return [lM] + k[1:]

    def _delta_integral(self, eps, d):
        if d == "remove":
            regs = self._region("gt", eps)
            f = lambda x: mp.exp(self.P.logpdf(x)) * (-mp.expm1(eps - self._L(x)))
        else:
            regs = self._region("lt", -eps)
            f = lambda x: mp.exp(self.Q.logpdf(x)) * (-mp.expm1(eps + self._L(x)))
        total = mpf(0)
        with mp.workdps(self.dps + 10):
            h = self._scale()
            rtol = mpf(10) ** (-(self.dps + 5))
            for a, b in regs:
                if not a < b:
                    continue
                if mp.isinf(a) and mp.isinf(b):
                    pts = [a, mpf(0), b]
                elif mp.isinf(b):
                    pts = [a, a + h, a + 10 * h, b]
                elif mp.isinf(a):
                    pts = [a, b - 10 * h, b - h, b]
                else:
                    pts = [a, b]
                # relative-accuracy quadrature (mp.quad's tolerance is absolute,
                # which is useless for deep-tail values like 1e-2000)
                total += _vquad(lambda x: [f(x)], pts, 1, rtol)[0]
        return total


class gaussian(_Continuous):
    """P = N(sensitivity, sigma^2), Q = N(0, sigma^2)."""

    def __init__(self, sigma, sensitivity=1, dps=DEFAULT_DPS):
        _Reference.__init__(self, dps)
        with self._wp():
            self.sigma = _conv(sigma)
            self.sensitivity = _conv(sensitivity)
            self.D = abs(self.sensitivity)
            self.mu = self.D / self.sigma
            self.P = _Normal(self.D, self.sigma)
            self.Q = _Normal(0, self.sigma)

    def _to_int(self, x):
        return -x if self.sensitivity < 0 else x

    def _L(self, x):
        return self.D * (2 * x - self.D) / (2 * self.sigma ** 2)

    def _branches(self):
        if self.D == 0:
            return [(mp.ninf, mp.inf, 0, mpf(0), mpf(0), None)]
        s2 = self.sigma ** 2
        return [(mp.ninf, mp.inf, 1, mp.ninf, mp.inf,
                 lambda s: s2 * s / self.D + self.D / 2)]

    def _extra_points(self, tau):
        return [0, (1 + tau) * self.D]

    def _scale(self):
        return self.sigma

    def _tilted(self, tau, order, method):
        if method == "moments":
            return _Continuous._tilted(self, tau, order, method)
        m2 = self.mu ** 2
        vals = [m2 * tau * (tau + 1) / 2, m2 * (2 * tau + 1) / 2, m2]
        vals += [mpf(0)] * 4
        return vals[:order + 1]


class laplace(_Continuous):
    """P = Laplace(sensitivity, scale), Q = Laplace(0, scale)."""

    def __init__(self, scale, sensitivity=1, dps=DEFAULT_DPS):
        _Reference.__init__(self, dps)
        with self._wp():
            self.b = _conv(scale)
            self.sensitivity = _conv(sensitivity)
            self.D = abs(self.sensitivity)
            self.P = _LaplaceD(self.D, self.b)
            self.Q = _LaplaceD(0, self.b)

    def _to_int(self, x):
        return -x if self.sensitivity < 0 else x

    def _L(self, x):
        return (abs(x) - abs(x - self.D)) / self.b

    def _branches(self):
        e0 = self.D / self.b
        if self.D == 0:
            return [(mp.ninf, mp.inf, 0, mpf(0), mpf(0), None)]
        return [(mp.ninf, mpf(0), 0, -e0, -e0, None),
                (mpf(0), self.D, 1, -e0, e0, lambda s: (self.b * s + self.D) / 2),
                (self.D, mp.inf, 0, e0, e0, None)]

    def _scale(self):
        return self.b


class logistic(_Continuous):
    """P = Logistic(0, b), Q = Logistic(1, b)."""

    def __init__(self, b, dps=DEFAULT_DPS):
        _Reference.__init__(self, dps)
        with self._wp():
            self.b = _conv(b)
            self.P = _LogisticD(0, self.b)
            self.Q = _LogisticD(1, self.b)

    def _L(self, x):
        b = self.b
        r = _const(self, "r", lambda: mp.exp(1 / b))
        if x < 0:
            v = mp.exp(x / b)
            return -1 / b + 2 * (mp.log(r + v) - mp.log1p(v))
        return -1 / b + 2 * (mp.log1p(mp.exp(-(x - 1) / b)) - mp.log1p(mp.exp(-x / b)))

    def _inv(self, s):
        ib = 1 / self.b
        return self.b * ((s + ib) / 2 + mp.log(mp.expm1((ib - s) / 2))
                         - mp.log(mp.expm1((s + ib) / 2)))

    def _branches(self):
        ib = 1 / self.b
        return [(mp.ninf, mp.inf, -1, ib, -ib, self._inv)]

    def _extra_points(self, tau):
        lt = mp.log(abs(tau) + 2)
        return [0, 1, -self.b * lt, 1 + self.b * lt]

    def _scale(self):
        return self.b


class cauchy(_Continuous):
    """P = Cauchy(0, gamma), Q = Cauchy(1, gamma).  L has a maximum at x1 < 0
    and a minimum at x2 > 1 (x1, x2 = (1 -+ sqrt(1+4 gamma^2))/2), -> 0 at +-inf."""

    def __init__(self, gamma, dps=DEFAULT_DPS):
        _Reference.__init__(self, dps)
        with self._wp():
            self.g = _conv(gamma)
            self.P = _CauchyD(0, self.g)
            self.Q = _CauchyD(1, self.g)

    def _L(self, x):
        return mp.log1p((1 - 2 * x) / (x * x + self.g ** 2))

    def _crit(self):
        r = mp.sqrt(1 + 4 * self.g ** 2)
        x1 = -2 * self.g ** 2 / (1 + r)
        x2 = (1 + r) / 2
        return x1, x2

    def _roots(self, s):
        A = -mp.expm1(s)
        g2 = self.g ** 2
        if A == 0:
            return None, mpf(1) / 2
        D2 = 1 - A - g2 * A * A
        Dd = mp.sqrt(D2) if D2 > 0 else mpf(0)
        return (1 + Dd) / A, (1 + g2 * A) / (1 + Dd)

    def _branches(self):
        x1, x2 = self._crit()
        Lmax = self._L(x1)
        Lmin = -Lmax
        return [(mp.ninf, x1, 1, mpf(0), Lmax, lambda s: self._roots(s)[0]),
                (x1, x2, -1, Lmax, Lmin, lambda s: self._roots(s)[1]),
                (x2, mp.inf, 1, Lmin, mpf(0), lambda s: self._roots(s)[0])]

    _light_tails = False   # algebraic tails: keep infinite intervals

    def _extra_points(self, tau):
        return [0, 1]


class subsampled_gaussian(_Continuous):
    """P = (1-q) N(0, sigma^2) + q N(sensitivity, sigma^2), Q = N(0, sigma^2)."""

    def __init__(self, sigma, q, sensitivity=1, dps=DEFAULT_DPS):
        _Reference.__init__(self, dps)
        with self._wp():
            self.sigma = _conv(sigma)
            self.q = _conv(q)
            self.sensitivity = _conv(sensitivity)
            self.D = abs(self.sensitivity)
            self.P = _Mixture([(1 - self.q, _Normal(0, self.sigma)),
                               (self.q, _Normal(self.D, self.sigma))])
            self.Q = _Normal(0, self.sigma)

    def _to_int(self, x):
        return -x if self.sensitivity < 0 else x

    def _ell(self, x):
        return self.D * (2 * x - self.D) / (2 * self.sigma ** 2)

    def _L(self, x):
        l = self._ell(x)
        q = self.q
        if l > 0:
            return l + mp.log(q + (1 - q) * mp.exp(-l))
        return mp.log((1 - q) + q * mp.exp(l))

    def _branches(self):
        if self.D == 0 or self.q == 0:
            return [(mp.ninf, mp.inf, 0, mpf(0), mpf(0), None)]
        q = self.q
        s2 = self.sigma ** 2
        lo = mp.log(1 - q) if q < 1 else mp.ninf

        def inv(s):
            l = mp.log((mp.expm1(s) + q) / q)
            return s2 * l / self.D + self.D / 2
        return [(mp.ninf, mp.inf, 1, lo, mp.inf, inv)]

    def _extra_points(self, tau):
        return [0, self.D, (1 + tau) * self.D]

    def _scale(self):
        return self.sigma


class subsampled_laplace(_Continuous):
    """P = (1-q) Lap(0, b) + q Lap(sensitivity, b), Q = Lap(0, b)."""

    def __init__(self, scale, q, sensitivity=1, dps=DEFAULT_DPS):
        _Reference.__init__(self, dps)
        with self._wp():
            self.b = _conv(scale)
            self.q = _conv(q)
            self.sensitivity = _conv(sensitivity)
            self.D = abs(self.sensitivity)
            self.P = _Mixture([(1 - self.q, _LaplaceD(0, self.b)),
                               (self.q, _LaplaceD(self.D, self.b))])
            self.Q = _LaplaceD(0, self.b)

    def _to_int(self, x):
        return -x if self.sensitivity < 0 else x

    def _h(self, l):
        q = self.q
        if l > 0:
            return l + mp.log(q + (1 - q) * mp.exp(-l))
        return mp.log((1 - q) + q * mp.exp(l))

    def _L(self, x):
        return self._h((abs(x) - abs(x - self.D)) / self.b)

    def _branches(self):
        if self.D == 0 or self.q == 0:
            return [(mp.ninf, mp.inf, 0, mpf(0), mpf(0), None)]
        e0 = self.D / self.b
        lo, hi = self._h(-e0), self._h(e0)
        q = self.q

        def inv(s):
            l = mp.log((mp.expm1(s) + q) / q)
            return (self.b * l + self.D) / 2
        return [(mp.ninf, mpf(0), 0, lo, lo, None),
                (mpf(0), self.D, 1, lo, hi, inv),
                (self.D, mp.inf, 0, hi, hi, None)]

    def _scale(self):
        return self.b


# ---------------------------------------------------------------------------
# purely atomic mechanisms (finite list of loss values)
# ---------------------------------------------------------------------------

class _Atomic(_Reference):
    """PLRV with finitely many atoms (L, P-mass, Q-mass); L may be +-inf."""

    def _mass(self, meas, op, s):
        tol = self._tol()
        i = 1 if meas == "P" else 2
        return mp.fsum(a[i] for a in self._atoms_raw() if _cmp(a[0], op, s, tol))

    def _ess_range(self, meas):
        i = 1 if meas == "P" else 2
        vals = [a[0] for a in self._atoms_raw() if a[i] > 0]
        return min(vals), max(vals)

    def _tilted(self, tau, order, method):
        logw, Ls = [], []
        special = mpf(0)   # mass of an infinite atom with zero exponent
        bad = None
        for L, pm, qm in self._atoms_raw():
            if L == mp.inf:
                if pm == 0:
                    continue
                if tau > 0:
                    bad = mp.inf
                elif tau == 0:
                    special += pm
                    bad = bad or "inf"
                continue
            if L == mp.ninf:
                if qm == 0:
                    continue
                if tau < -1:
                    bad = mp.inf
                elif tau == -1:
                    special += qm
                    bad = bad or "ninf"
                continue
            if pm == 0:
                continue
            logw.append(mp.log(pm) + tau * L)
            Ls.append(L)
        if bad == mp.inf:
            return [mp.inf] * (order + 1)
        if special > 0:
            lM = _logsumexp(logw + [mp.log(special)])
            k1 = mp.inf if bad == "inf" else mp.ninf
            return ([lM, k1] + [mp.inf] * (order - 1))[:order + 1]
        return _weighted_cumulants(logw, Ls, order)

    def _delta_integral(self, eps, d):
        tot = mpf(0)
        for L, pm, qm in self._outcome_table():
            a, b = (pm, qm) if d == "remove" else (qm, pm)
            v = a - mp.exp(eps) * b
            if v > 0:
                tot += v
        return tot

    def _outcome_table(self):
        return self._atoms_raw()


class discrete(_Atomic):
    """Generic finite mechanism: p, q are sequences (or dicts outcome->prob)."""

    def __init__(self, p, q, dps=DEFAULT_DPS):
        _Reference.__init__(self, dps)
        with self._wp():
            if not isinstance(p, dict):
                p = dict(enumerate(p))
            if not isinstance(q, dict):
                q = dict(enumerate(q))
            keys = sorted(set(p) | set(q))
            self.p = {k: _conv(p.get(k, 0)) for k in keys}
            self.q = {k: _conv(q.get(k, 0)) for k in keys}

    def _Lk(self, k):
        p, q = self.p[k], self.q[k]
        if p == 0 and q == 0:
            return mp.nan
        if q == 0:
            return mp.inf
        if p == 0:
            return mp.ninf
        return mp.log(p) - mp.log(q)

    def loss(self, x):
        with self._wp():
            r = self._Lk(x)
        return self._out(r)

    def _outcome_table(self):
        return [(self._Lk(k), self.p[k], self.q[k]) for k in self.p
                if not (self.p[k] == 0 and self.q[k] == 0)]

    def _atoms_raw(self):
        res = {}
        for L, pm, qm in self._outcome_table():
            o = res.get(L, (mpf(0), mpf(0)))
            res[L] = (o[0] + pm, o[1] + qm)
        return [(L, a, b) for L, (a, b) in res.items()]


class randomized_response(discrete):
    """Binary randomized response with parameter epsilon."""

    def __init__(self, epsilon, dps=DEFAULT_DPS):
        _Reference.__init__(self, dps)
        with self._wp():
            self.eps = e = _conv(epsilon)
            hi = 1 / (1 + mp.exp(-e))
            lo = 1 / (1 + mp.exp(e))
            self.p = {0: lo, 1: hi}
            self.q = {0: hi, 1: lo}

    def _Lk(self, k):
        return self.eps if k == 1 else -self.eps


class discrete_laplace(_Atomic):
    """P(k) = c exp(-|k - sensitivity|/t), Q(k) = c exp(-|k|/t), c = tanh(1/(2t)).
    The PLRV is purely atomic (|sensitivity|+1 atoms); masses in closed form."""

    def __init__(self, scale, sensitivity=1, dps=DEFAULT_DPS):
        _Reference.__init__(self, dps)
        if int(sensitivity) != sensitivity:
            raise ValueError("sensitivity must be an integer")
        self.sensitivity = int(sensitivity)
        self.D = abs(self.sensitivity)
        with self._wp():
            self.t = _conv(scale)

    def loss(self, x):
        with self._wp():
            x = _conv(x)
            r = (abs(x) - abs(x - self.sensitivity)) / self.t
        return self._out(r)

    def logp(self, x):
        with self._wp():
            r = mp.log(mp.tanh(1 / (2 * self.t))) - abs(_conv(x) - self.sensitivity) / self.t
        return self._out(r)

    def logq(self, x):
        with self._wp():
            r = mp.log(mp.tanh(1 / (2 * self.t))) - abs(_conv(x)) / self.t
        return self._out(r)

    def _atoms_raw(self):
        t, D = self.t, self.D
        if D == 0:
            return [(mpf(0), mpf(1), mpf(1))]
        c = mp.tanh(1 / (2 * t))
        G = -1 / mp.expm1(-1 / t)          # sum_{j>=0} e^{-j/t}
        eD = mp.exp(-D / t)
        out = [(-D / t, c * eD * G, c * G), (D / t, c * G, c * eD * G)]
        for k in range(1, D):
            out.append((mpf(2 * k - D) / t, c * mp.exp(-(D - k) / t), c * mp.exp(-mpf(k) / t)))
        return out


# ---------------------------------------------------------------------------
# discrete Gaussian
# ---------------------------------------------------------------------------

class discrete_gaussian(_Reference):
    """P(k) ~ exp(-(k-sensitivity)^2/(2 sigma^2)), Q(k) ~ exp(-k^2/(2 sigma^2)) on Z.

    L(k) = (2 k D - D^2)/(2 sigma^2) is strictly increasing in k (D=|sensitivity|),
    every integer is an atom.  Tail masses are summed exactly (term recurrence)
    from the threshold outwards, so sf/logsf are accurate deep in the tail.
    K(t) = mu^2 t(t+1)/2 + log Z(tD) - log Z(0) with Z(c)=sum_k exp(-(k-c)^2/2s^2),
    evaluated via Poisson summation for sigma >= 0.5."""

    def __init__(self, sigma, sensitivity=1, dps=DEFAULT_DPS):
        _Reference.__init__(self, dps)
        if int(sensitivity) != sensitivity or sensitivity == 0:
            raise ValueError("sensitivity must be a nonzero integer")
        self.sensitivity = int(sensitivity)
        self.D = abs(self.sensitivity)
        with self._wp():
            self.sigma = _conv(sigma)
        self._Zcache = {}

    # -- basic quantities ---------------------------------------------------
    def _Z0(self):
        key = mp.prec
        if key not in self._Zcache:
            self._Zcache[key] = self._wsum_right(0, 1) * 2 + 1
        return self._Zcache[key]

    def _w(self, d):
        return mp.exp(-mpf(d) ** 2 / (2 * self.sigma ** 2))

    def _wsum_right(self, c, k0):
        """sum_{k >= k0} exp(-(k-c)^2/(2 sigma^2)) for integers k0 >= c."""
        s2 = self.sigma ** 2
        dd = mpf(k0 - c)
        term = mp.exp(-dd * dd / (2 * s2))
        if term == 0:
            return mpf(0)
        r = mp.exp(-(2 * dd + 1) / (2 * s2))
        rr = mp.exp(-1 / s2)
        S = mpf(0)
        eps = mpf(2) ** (-mp.prec - 10)
        while True:
            S += term
            term *= r
            r *= rr
            if term <= eps * S:
                break
        return S

    def _Lk(self, k):
        return mpf(2 * k * self.D - self.D ** 2) / (2 * self.sigma ** 2)

    def loss(self, x):
        with self._wp():
            x = _conv(x)
            s = self.sensitivity
            r = (2 * x * s - s * s) / (2 * self.sigma ** 2)
        return self._out(r)

    def logp(self, x):
        with self._wp():
            r = -(_conv(x) - self.sensitivity) ** 2 / (2 * self.sigma ** 2) - mp.log(self._Z0())
        return self._out(r)

    def logq(self, x):
        with self._wp():
            r = -_conv(x) ** 2 / (2 * self.sigma ** 2) - mp.log(self._Z0())
        return self._out(r)

    # -- masses ---------------------------------------------------------------
    def _mass_le(self, c, K):
        """mass of {k <= K} under the measure centred at integer c."""
        if K < c:
            return self._wsum_right(0, c - K) / self._Z0()
        return 1 - self._wsum_right(c, K + 1) / self._Z0()

    def _mass_ge(self, c, K):
        if K > c:
            return self._wsum_right(c, K) / self._Z0()
        return 1 - self._mass_le(c, K - 1)

    def _kstar(self, s, op):
        """Integer threshold for {k : L(k) op s}."""
        tol = self._tol()
        a = mpf(self.D) / self.sigma ** 2
        k = int(mp.floor((s + mpf(self.D) ** 2 / (2 * self.sigma ** 2)) / a))
        if op in ("le", "lt"):
            # largest k with L(k) op s
            while _cmp(self._Lk(k + 1), op, s, tol):
                k += 1
            while not _cmp(self._Lk(k), op, s, tol):
                k -= 1
            return k
        while _cmp(self._Lk(k - 1), op, s, tol):
            k -= 1
        while not _cmp(self._Lk(k), op, s, tol):
            k += 1
        return k

    def _mass(self, meas, op, s):
        c = self.D if meas == "P" else 0
        if s == mp.inf:
            return mpf(1) if op in ("le", "lt") else mpf(0)
        if s == mp.ninf:
            return mpf(0) if op in ("le", "lt") else mpf(1)
        K = self._kstar(s, op)
        if op in ("le", "lt"):
            return self._mass_le(c, K)
        return self._mass_ge(c, K)

    def _window(self, center=None):
        W = int(mp.ceil(self.sigma * mp.sqrt(2 * mp.log(10) * (self.dps + 15)))) + 2
        if center is None:
            return range(-W, self.D + W + 1)
        c0 = int(mp.floor(center))
        return range(c0 - W, c0 + W + 2)

    def _atoms_raw(self):
        Z = self._Z0()
        s2 = self.sigma ** 2
        out = []
        for k in self._window():
            out.append((self._Lk(k), mp.exp(-mpf(k - self.D) ** 2 / (2 * s2)) / Z,
                        mp.exp(-mpf(k) ** 2 / (2 * s2)) / Z))
        return out

    def _ess_range(self, meas):
        return mp.ninf, mp.inf

    # -- CGF ------------------------------------------------------------------
    def _tilted(self, tau, order, method):
        if method == "moments" or self.sigma < mpf("0.5"):
            return self._tilted_sum(tau, order)
        return self._tilted_poisson(tau, order)

    def _tilted_sum(self, tau, order):
        s2 = self.sigma ** 2
        lZ = mp.log(self._Z0())
        center = (1 + tau) * self.D
        logw, Ls = [], []
        for k in self._window(center):
            L = self._Lk(k)
            logw.append(-mpf(k - self.D) ** 2 / (2 * s2) - lZ + tau * L)
            Ls.append(L)
        return _weighted_cumulants(logw, Ls, order)

    def _poisson_derivs(self, c, order):
        """Z~(c) = 1 + 2 sum_n e^{-2 pi^2 s^2 n^2} cos(2 pi n c) and its
        derivatives d^j/dc^j, j = 0..order."""
        a = 2 * mp.pi ** 2 * self.sigma ** 2
        eps = mpf(2) ** (-mp.prec - 20)
        D = [mpf(0)] * (order + 1)
        n = 1
        while True:
            e = mp.exp(-a * n * n)
            if e * (2 * mp.pi * n) ** order < eps and e < eps:
                break
            for j in range(order + 1):
                D[j] += 2 * e * (2 * mp.pi * n) ** j * mp.cos(2 * mp.pi * n * c + j * mp.pi / 2)
            n += 1
        D[0] += 1
        return D

    def _tilted_poisson(self, tau, order):
        Dl = self.D
        m2 = mpf(Dl) ** 2 / self.sigma ** 2
        Zc = self._poisson_derivs(tau * Dl, order)   # Z~ is 1-periodic, (1+tau)D = tau D mod 1
        Z0 = self._poisson_derivs(mpf(0), 0)[0]
        vals = [m2 * tau * (tau + 1) / 2 + mp.log(Zc[0]) - mp.log(Z0)]
        if order == 0:
            return vals
        # derivatives of log Z~ via cumulant recursion
        m = [Zc[j] / Zc[0] for j in range(order + 1)]
        kap = [mpf(0)] * (order + 1)
        for n in range(1, order + 1):
            kap[n] = m[n] - mp.fsum(mp.binomial(n - 1, i - 1) * kap[i] * m[n - i]
                                    for i in range(1, n))
        gauss = [None, m2 * (2 * tau + 1) / 2, m2, 0, 0, 0, 0]
        for n in range(1, order + 1):
            vals.append(gauss[n] + mpf(Dl) ** n * kap[n])
        return vals

    def _delta_integral(self, eps, d):
        """sum_k (p_k - e^eps q_k)_+ by direct term-by-term summation over the
        region {L > eps} (remove) / {L < -eps} (add), outward until negligible."""
        ee = mp.exp(eps)
        Z = self._Z0()
        s2 = self.sigma ** 2
        D = self.D
        P = lambda k: mp.exp(-mpf(k - D) ** 2 / (2 * s2)) / Z
        Q = lambda k: mp.exp(-mpf(k) ** 2 / (2 * s2)) / Z
        if d == "remove":
            k, step, a, b, past = self._kstar(eps, "gt"), 1, P, Q, D
        else:
            k, step, a, b, past = self._kstar(-eps, "lt"), -1, Q, P, 0
        tiny = mpf(2) ** (-mp.prec - 10)
        tot = mpf(0)
        while True:
            v = a(k) - ee * b(k)
            if v > 0:
                tot += v
            if (k - past) * step > 0 and (v <= tiny * tot or tot == 0 and v <= 0):
                break
            k += step
        return tot


# ---------------------------------------------------------------------------
# Gaussian DP
# ---------------------------------------------------------------------------

def _gdp_delta(mu, eps):
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def gdp_delta(mu, eps, dps=DEFAULT_DPS):
    """delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    for extra in (0, 30, 100, 300):
        with mp.workdps(dps + GUARD + extra):
            m, e = _conv(mu), _conv(eps)
            a = mp.ncdf(-e / m + m / 2)
            r = _gdp_delta(m, e)
            if a == 0 or r > a * mpf(10) ** (-(GUARD + extra - 5)):
                break
    with mp.workdps(dps):
        return +max(r, mpf(0))


def gdp_epsilon(mu, delta, dps=DEFAULT_DPS):
    """Smallest eps >= 0 with gdp_delta(mu, eps) <= delta."""
    with mp.workdps(dps + GUARD):
        m = _conv(mu)
        f = lambda e: gdp_delta(m, e, dps=dps + GUARD)
        df = lambda e: -mp.exp(e) * mp.ncdf(-e / m - m / 2)
        r = _solve_epsilon(f, df, _conv(delta), mp.inf, mpf(0), dps)
    with mp.workdps(dps):
        return +r
