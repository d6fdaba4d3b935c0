"""The saddle-point accountant (Alghamdi et al.; notes.md section 5), from the derived CGFs.

For one direction, L = sum of independent privacy losses, K(t) = sum_i k_i K_i(t) (counts multiply).  With

    psi(t) = K(t) - eps t - log t - log(1 + t),

the saddle point t0 > 0 solves psi'(t0) = 0, i.e. K'(t0) = eps + 1/t0 + 1/(1 + t0) (psi is strictly convex on
the CGF's domain of finiteness, so t0 is unique when it exists).  The answers:

* ``order=0`` (SP-MSD0):  delta = e^{psi(t0)} / sqrt(2 pi psi''(t0))
* ``order=1`` (SP-MSD1, Daniels):  delta_0 * [1 + psi''''/(8 psi''^2) - 5 psi'''^2/(24 psi''^3)]
* ``variant="clt"`` (SP-CLT, eq. 79):  exp(K - t0 eps - g^2/2) [Psi(a) - Psi(b)], s = sqrt(K''), g = (K' - eps)/s,
  a = t0 s - g, b = a + s, Psi(x) = e^{x^2/2} Q(x)

and the certified bounds of Theorem 5 (Berry-Esseen on the tilted sum, 2 C_BE = 1.12):

    |delta - delta_CLT| <= 1.12 e^{K - t0 eps} t0^t0/(1+t0)^(1+t0) sum_i k_i E|L_i,t0 - K_i'(t0)|^3 / K''(t0)^{3/2}.

Everything is computed in log space, so delta = 1e-100 is as accurate as 1e-5.  epsilon(delta) is solved in the
saddle point itself: eps(t) = K'(t) - 1/t - 1/(1+t) is increasing in t, delta(eps(t)) decreasing, so one
bracketed root search in log t needs one CGF evaluation (orders 0..4) per step.
"""
from __future__ import annotations

import math

import numpy as np

from ..engine import numerics as _nm
from ..errors import NumericalLimitError, ParameterError, check_finite_real
from ..estimate import Estimate, EstimateArray, clamp_into

C_BE2 = 1.12  # 2 * C_BE, Shevtsova's constant for non-identical summands (the authors' code)
LOG_2PI = math.log(2.0 * math.pi)
T_MIN, T_MAX = 1e-9, 1e7
#: relative allowance for the quadrature behind the CGF values (about 1e-13) in the certified bounds
QUAD_SLACK = 1e-9

VARIANTS = ("msd", "clt")


#: log(e^{x^2/2} Q(x)), the log scaled Mills ratio (compiled; scalar calls from Python cost ~0.2 us)
_log_psi = _nm.log_mills


H_NODE = math.log(2.0) / 32  # spacing in log t of the tilts where the search model is anchored


def _plrv_node(plrv, j):
    """[K, ..., K^(6)] of one mechanism's PLRV at t_j = 2^(j/32) (a list; None outside the domain), memoised on
    the PLRV so that every composition using the mechanism shares it.  Closed forms where the mechanism has them,
    else one quadrature pass (``tilt_stats``, centred by the Taylor model of a neighbouring node when there is one,
    else about the tilted law's mode), which also gives the node's tilted absolute third moment."""
    memo = plrv.__dict__.setdefault("_spa_nodes", {})
    got = memo.get(j)
    if got is None:
        t = math.exp(j * H_NODE)
        if plrv._core._cgf_closed is not None:
            v = plrv.cgf_vector(t, 6)
            got = [v.tolist() if np.all(np.isfinite(v)) else None, None, None]
        else:
            i = next((i for i in (j - 1, j + 1) if i in memo and memo[i][0] is not None), None)
            v = A = A_any = None
            if i is not None:
                centre = _taylor(memo[i][0], t - math.exp(i * H_NODE), 1)[1]
                if math.isfinite(centre):
                    v, A = plrv._tilt_stats(t, centre, 6)
            else:  # the first node: about the tilted law's mode (the pass's own peak scan), re-centred where far off
                v, A, centre = plrv.tilt_stats_about_mode(t, 6)
                if all(map(math.isfinite, v.tolist())):
                    if not (v[2] > 0 and abs(v[1] - centre) <= RECENTRE * math.sqrt(v[2])):
                        v, A = plrv._tilt_stats(t, float(v[1]), 6)
                    elif math.isfinite(A):
                        # the moments are accurate, but the absolute moment about a centre this far off bounds the
                        # one about the mean loosely (and would make the bounds' tilts depend on which node came
                        # first): computed about the mean when needed (_plrv_abs3); kept apart as a valid, looser
                        # bound for the other direction's certificate (_below_at_guess)
                        A, A_any = None, A
            got = [None, None, None]
            if v is not None and (A is None or math.isfinite(A)):
                if not isinstance(v, list):
                    v = v.tolist()
                if all(map(math.isfinite, v)):
                    got = [v, A, A if A is not None else A_any]
        memo[j] = got
    return got[0]


#: a node's quadrature is repeated about the tilted mean when its centre was further than this many standard
#: deviations from it (the central moments come from moments about the centre by the binomial shift)
RECENTRE = 3.0


def _moments_at_zero(plrv):
    """[K'(0), K''(0)] of one mechanism's PLRV (memoised on it): closed forms where it has them, else one
    tilt_stats pass about 0, re-centred on the mean where that was far from 0 next to the spread."""
    got = plrv.__dict__.get("_spa_m0")
    if got is None:
        if plrv._core._cgf_closed is not None:
            v = plrv.cgf_vector(0.0, 2)
        else:
            v = plrv._tilt_stats(0.0, 0.0, 2)[0]
            if math.isfinite(v[1]) and not v[1] * v[1] <= 1e4 * abs(v[2]):
                v = plrv._tilt_stats(0.0, float(v[1]), 2)[0]
        got = plrv._spa_m0 = [float(v[1]), float(v[2])]
    return got


def _plrv_abs3(plrv, j):
    """The tilted absolute third moment of one mechanism at the node t_j (memoised with the node)."""
    v = _plrv_node(plrv, j)
    got = plrv._spa_nodes[j]
    if got[1] is None and v is not None:
        got[1] = plrv._tilt_stats(math.exp(j * H_NODE), v[1], 2)[1]
        if got[2] is None:
            got[2] = got[1]
    return got[1]


_DIRECTIONS = {}
DIRECTION_CACHE = 32


def _directions(items):
    """The two _Direction objects of a composition, kept across queries (their nodes, domain and saddle point
    at epsilon = 0 are reused); a bounded cache holding the mechanisms themselves (no reuse of ids)."""
    key = tuple((m, c) for m, c in items)
    got = _DIRECTIONS.get(key)
    if got is None:
        got = [_Direction(items, d) for d in ("remove", "add")]
        if len(_DIRECTIONS) >= DIRECTION_CACHE:
            _DIRECTIONS.pop(next(iter(_DIRECTIONS)))
        _DIRECTIONS[key] = got
    return got


def _taylor(v, d, n=4):
    """[K, ..., K^(n)] (n = 1 or 4) at t_j + d from the node values v = [K, ..., K^(6)] at t_j (a list; Taylor,
    order 6, unrolled Horner)."""
    v0, v1, v2, v3, v4, v5, v6 = v
    k0 = v0 + d * (v1 + d * (v2 * 0.5 + d * (v3 * (1.0 / 6.0) + d * (v4 * (1.0 / 24.0) + d * (
        v5 * (1.0 / 120.0) + d * v6 * (1.0 / 720.0))))))
    k1 = v1 + d * (v2 + d * (v3 * 0.5 + d * (v4 * (1.0 / 6.0) + d * (v5 * (1.0 / 24.0) + d * v6 * (1.0 / 120.0)))))
    if n == 1:
        return [k0, k1]
    return [k0, k1,
            v2 + d * (v3 + d * (v4 * 0.5 + d * (v5 * (1.0 / 6.0) + d * v6 * (1.0 / 24.0)))),
            v3 + d * (v4 + d * (v5 * 0.5 + d * v6 * (1.0 / 6.0))),
            v4 + d * (v5 + d * v6 * 0.5)]


class _Direction:
    """The CGF of the composition in one direction, with everything the SPA needs at a tilt t.

    Two levels.  The *model* (``vector``, ``at`` without bounds): [K, ..., K^(6)] computed by quadrature at the
    nodes t_j = 2^(j/32), memoised on the mechanisms, and Taylor-expanded to any t from the nearest node
    (|t - t_j| <= 1.1% of t: usually accurate to ~1e-12, but not where the higher derivatives grow fast, e.g.
    1e-4 at sigma = 1, k = 1e3 and 1e-2 in K'' at sigma = 2, delta = 1e-30).  The searches run on it.  The
    *exact* evaluation (``exact``; ``at`` with bounds): one quadrature pass per mechanism at t, for K to K^(4) and
    the tilted absolute third moments; the certified bounds use only exact values.
    """

    def __init__(self, items, direction):
        self.direction = direction
        self.parts = [(m.plrv(direction), c) for m, c in items]
        for plrv, _ in self.parts:
            if plrv.inf_mass > 0:
                raise NumericalLimitError(
                    f"{plrv.mechanism.name} has a point mass at +inf (probability {plrv.inf_mass:.3g}): its CGF is "
                    "infinite for every t > 0, so no saddle point exists; use method='fft'")
        self.counts = np.array([float(c) for _, c in self.parts])
        self._nodes = {}
        # the MGF's domain of finiteness is an interval containing 0: a finite node j proves every node in
        # [0, j] finite, an infinite one every node above it infinite
        self._fin_hi, self._inf_lo = -math.inf, math.inf
        self._start = None
        self._sup = None
        self._top = False  # not yet computed (None: no point mass at the largest loss)
        self._t_zero = None
        self._m0 = None
        self._roots = {}  # estimate key -> {log delta: log of its model root} (earlier queries: the searches' starts)

    # -- the model ---------------------------------------------------------------------------------------
    def node(self, j):
        """(per-mechanism node vectors (P, 7), the composition's [K..K^(6)] or None outside the domain) at t_j."""
        got = self._nodes.get(j)
        if got is None:
            per = [_plrv_node(plrv, j) for plrv, _ in self.parts]
            comp = None
            if all(v is not None for v in per):
                if len(per) == 1:
                    c = float(self.counts[0])
                    comp = [c * x for x in per[0]]
                else:
                    comp = (self.counts @ np.array(per)).tolist()
                if j > self._fin_hi:
                    self._fin_hi = j
            elif j < self._inf_lo:
                self._inf_lo = j
            got = self._nodes[j] = (per, comp)
        return got

    def _where(self, t):
        """(nearest node j, t - t_j), or None when t may be outside the CGF's domain of finiteness (the node
        at or above t is not finite).  The domain is an interval containing 0, so the node above t is computed
        only when no finite node at or above it is known."""
        u = math.log(t) / H_NODE
        jc = math.ceil(u - 1e-9)
        if jc > self._fin_hi and (jc >= self._inf_lo or self.node(jc)[1] is None):
            return None
        j = round(u)
        if self.node(j)[1] is None:
            return None
        return j, t - math.exp(j * H_NODE)

    def vector(self, t, w=False):
        """[K, K', K'', K''', K''''] of the composition at t from the model (inf outside the domain); ``w``: t's
        ``_where`` where the caller has it."""
        if w is False:
            w = self._where(t)
        if w is None:
            return [math.inf] * 5
        v = _taylor(self._nodes[w[0]][1], w[1])
        if not v[2] > 0.0:  # the series does not converge this far from the node (K'' > 0 always): exact values
            v = self.exact(t)[0]
        return v

    def centres(self, t, w=False):
        """K_i'(t) of each mechanism from the model (the centres of the exact quadrature passes)."""
        j, d = self._where(t) if w is False else w
        per = self.node(j)[0]
        return [float(_taylor(per[i], d, 1)[1]) for i in range(len(self.parts))]

    def exact(self, t, centres=None, w=False):
        """([K..K''''] of the composition by quadrature at t, sum_i k_i E|L_i,t - K_i'(t)|^3 bounded above), the
        quadratures centred on the model's K_i'(t), or on ``centres`` (then A may bound loosely where they are far
        from the K_i'(t), and the model is not consulted)."""
        vec = [0.0] * 5
        A = 0.0
        for (plrv, c), ctr in zip(self.parts, self.centres(t, w) if centres is None else centres):
            v, a = plrv._tilt_stats(t, ctr, 4)
            vec = [x + c * y for x, y in zip(vec, v)]
            A += c * a
        return vec, A

    def node_abs3(self, j):
        """sum_i k_i E|L_i - K_i'|^3 at the node t_j (exact there, memoised with the node)."""
        key = ("A", j)
        got = self._nodes.get(key)
        if got is None:
            got = self._nodes[key] = sum(c * _plrv_abs3(plrv, j) for plrv, c in self.parts)
        return got

    def abs3_model(self, t):
        """The tilted absolute third moment interpolated (log-linearly in log t) between the two nodes around t,
        where it is exact: only to locate the tilts of the bounds, never inside a bound."""
        u = math.log(t) / H_NODE
        j = math.floor(u)
        a0, a1 = self.node_abs3(j), self.node_abs3(j + 1)
        if not (a0 > 0 and a1 > 0):
            return max(a0, a1)
        return math.exp(math.log(a0) + (u - j) * (math.log(a1) - math.log(a0)))

    def _moments0(self):
        """K'(0), K''(0) of the composition (cached; one quadrature pass per mechanism, only for first guesses)."""
        if self._m0 is None:
            v0 = self.counts @ np.array([_moments_at_zero(plrv) for plrv, _ in self.parts])
            self._m0 = (float(v0[0]), float(v0[1]))
        return self._m0

    def _gaussian_tilt(self, eps):
        """log of the saddle point of eps under a Gaussian model of K (K'(0), K''(0)); None where the moments at 0
        do not give one."""
        m1, var = self._moments0()
        if not (math.isfinite(m1) and math.isfinite(var) and var > 0):
            return None
        lo, hi = math.log(T_MIN), math.log(T_MAX)
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            t = math.exp(mid)
            if m1 + var * t - 1.0 / t - 1.0 / (1.0 + t) < eps:
                lo = mid
            else:
                hi = mid
        return 0.5 * (lo + hi)

    def _guess(self, eps):
        """A first tilt for the saddle point of eps: where a Gaussian model of K (K'(0), K''(0)) puts it, if that
        is inside the domain, else the start tilt."""
        u = self._gaussian_tilt(eps)
        if u is not None:
            t = math.exp(math.floor(u / H_NODE) * H_NODE)  # a node: see _solve_t
            if T_MIN < t < 0.5 * T_MAX and self.finite(t):
                return t
        return self.start()

    def model_start(self, target):
        """log t where a Gaussian model of K (from K'(0), K''(0)) puts log delta_MSD0 at ``target``: a cheap,
        usually close first guess for the search (the search itself uses the model of the real K); memoised per
        target (the estimate and both bounds of a query start from it)."""
        key = ("start", target)
        if key not in self._nodes:
            self._nodes[key] = self._model_start(target)
        return self._nodes[key]

    def _model_start(self, target):
        m1, var = self._moments0()
        if not (math.isfinite(m1) and math.isfinite(var) and var > 0):
            return None

        def logd(u):
            """log delta_MSD0 of the Gaussian model at its saddle point t = e^u (K'(0) cancels), and d/du of it."""
            t = math.exp(u)
            p2 = _psi2(t, var)
            dp2 = -2.0 / t ** 3 - 2.0 / (1.0 + t) ** 3
            v = (1.0 - 0.5 * var * t * t + t / (1.0 + t) - math.log(t) - math.log1p(t)
                 - 0.5 * (LOG_2PI + math.log(p2)))
            dv = t * (-var * t + 1.0 / (1.0 + t) ** 2 - 1.0 / t - 1.0 / (1.0 + t) - 0.5 * dp2 / p2)
            return v, dv

        lo, hi = math.log(T_MIN), math.log(T_MAX)
        if not (logd(lo)[0] > target > logd(hi)[0]):
            return None
        # safeguarded Newton (decreasing in u) from the leading term -var t^2 / 2 = target; a first guess:
        # 3e-8 in log t (or 1e-9 in log delta) is plenty
        u = min(max(0.5 * math.log(2.0 * max(1.0 - target, 1.0) / var), lo), hi)
        for _ in range(100):
            v, dv = logd(u)
            if abs(v - target) <= 1e-9:
                break
            if v > target:
                lo = u
            else:
                hi = u
            if hi - lo <= 3e-8:
                return 0.5 * (lo + hi)
            nu = u - (v - target) / dv if dv < 0 else math.nan
            u = nu if lo < nu < hi else 0.5 * (lo + hi)
        return u

    def sup(self):
        """The largest value the composed loss can take (inf for unbounded losses)."""
        if self._sup is None:
            self._sup = sum(c * plrv.support[1] for plrv, c in self.parts)
        return self._sup

    def top_atom(self):
        """(largest value, log of its probability) of the composed loss where every mechanism's loss has a point mass
        at its largest value (pure-DP mechanisms: Laplace, randomized response, discrete Laplace, their subsampled
        versions), else None (memoised)."""
        if self._top is False:
            top, logp = self.sup(), 0.0
            for plrv, c in self.parts:
                if not plrv._core.atoms.values.size:  # no point masses at all (most continuous mechanisms)
                    top = None
                    break
                vals, probs = plrv.atoms()
                if not (math.isfinite(top) and vals.size and vals[-1] == plrv.support[1] and probs[-1] > 0):
                    top = None
                    break
                logp += c * math.log(probs[-1])
            self._top = None if top is None else (top, logp)
        return self._top

    def finite(self, t):
        return self._where(t) is not None

    def start(self):
        """A tilt inside the CGF's domain of finiteness (t = 1 when possible)."""
        if self._start is None:
            if self.finite(1.0):
                self._start = 1.0
            else:
                lo, hi = 0.0, 1.0
                for _ in range(60):
                    mid = 0.5 * (lo + hi)
                    lo, hi = (mid, hi) if mid >= T_MIN and self.finite(mid) else (lo, mid)
                if lo < T_MIN:
                    raise NumericalLimitError(
                        f"the CGF of the composition ({self.direction} direction) is finite only at t = 0: "
                        "no saddle point exists (heavy-tailed privacy loss); use method='fft'")
                self._start = lo
        return self._start

    def up(self, t, factor=2.0):
        """The next tilt above t for a bracket search: factor t, or the end of the domain of finiteness (None at
        it)."""
        t2 = factor * t
        if t2 > T_MAX:
            return None
        if self.finite(t2):
            return t2
        lo, hi = t, t2
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if self.finite(mid) else (lo, mid)
        return lo if lo > t * (1.0 + 1e-9) else None

    # -- the saddle point for a given epsilon ----------------------------------------------------------
    def eps_of(self, t, vec=None):
        vec = self.vector(t) if vec is None else vec
        return vec[1] - 1.0 / t - 1.0 / (1.0 + t)

    def saddle(self, eps, t0=None):
        """t0 with K'(t0) = eps + 1/t0 + 1/(1+t0), by bracketed bisection in log t polished by Newton steps
        (from the tilt ``t0`` where given and finite, e.g. a nearby saddle point, else the Gaussian-model guess)."""
        lo, hi = None, None
        t = t0 if t0 is not None and T_MIN < t0 < 0.5 * T_MAX and self.finite(t0) else self._guess(eps)
        vec = self.vector(t)
        if self.eps_of(t, vec) < eps:
            lo = t
            while True:
                t2 = self.up(t, self._bracket_factor(t, vec, eps, 2.0))
                if t2 is None and eps >= self.sup():
                    raise _ZeroDelta()
                if t2 is None:
                    raise NumericalLimitError(
                        f"no saddle point for epsilon = {eps:g} ({self.direction} direction): K'(t) - 1/t - 1/(1+t) "
                        f"stays below epsilon up to the end of the CGF's domain (t = {t:.3g}); epsilon is beyond "
                        "the range where delta can be resolved by the SPA")
                t = t2
                vec = self.vector(t)
                if self.eps_of(t, vec) >= eps:
                    hi = t
                    break
                lo = t
        else:
            hi = t
            while True:
                t = self._bracket_factor(t, vec, eps, 0.5) * t
                if t < T_MIN:
                    raise NumericalLimitError(f"no saddle point above t = {T_MIN:g} for epsilon = {eps:g}")
                vec = self.vector(t)
                if self.eps_of(t, vec) < eps:
                    lo = t
                    break
                hi = t
        # eps_of is increasing in t (its derivative is psi'' > 0): safeguarded Newton on eps_of(t) = eps
        t = math.sqrt(lo * hi)
        for _ in range(100):
            vec = self.vector(t)
            f = self.eps_of(t, vec) - eps
            if f < 0:
                lo = t
            else:
                hi = t
            nt = t - f / _psi2(t, vec[2])
            if not (lo < nt < hi):
                nt = math.sqrt(lo * hi)
            if abs(nt - t) <= 1e-13 * t or hi - lo <= 1e-14 * hi:
                return nt
            t = nt
        return t

    def _bracket_factor(self, t, vec, eps, cap):
        """The factor from t to the next tilt of a bracket search for the saddle point of eps: a Newton step on
        eps_of overshot by 5% (so that it usually brackets the root), between 1 +/- 1e-3 and ``cap`` (2 or 1/2)."""
        f = self.eps_of(t, vec) - eps
        d = _psi2(t, vec[2])
        r = 1.0 - 1.05 * f / (d * t) if d > 0 and math.isfinite(f) else cap
        if not math.isfinite(r):
            return cap
        return min(max(r, 1.001), cap) if cap > 1 else max(min(r, 0.999), cap)

    # -- delta at a tilt ------------------------------------------------------------------------------------
    def at(self, t, eps=None, want_bounds=True, w=False):
        """Everything at tilt t for epsilon eps (default: the epsilon whose saddle point is t): the approximations
        from the model, or, with ``want_bounds``, everything from the exact values (certified bounds).  ``w``: t's
        ``_where`` where the caller has it."""
        if want_bounds:
            vec, A = self.exact(t, w=w)
        else:
            vec, A = self.vector(t, w), None
        if eps is None:
            eps = self.eps_of(t, vec)
        out = _evaluate(t, vec, eps, A)
        out["vec"] = vec
        return out


def _exp(x):
    """e^x, inf where that overflows (math.exp raises)."""
    return math.exp(x) if x < 709.0 else math.inf


def _psi2(t, K2):
    """psi''(t) = K''(t) + 1/t^2 + 1/(1+t)^2, the slope of eps_of(t) = K'(t) - 1/t - 1/(1+t)."""
    return K2 + 1.0 / t ** 2 + 1.0 / (1.0 + t) ** 2


def _evaluate(t, vec, eps, A=None):
    """The SPA's approximations of log delta(eps) at tilt t from [K..K''''] (and the certified bounds from A, an
    upper bound on the tilted absolute third moments, when given: Theorem 5 holds at every tilt)."""
    K, K1, K2, K3, K4 = vec
    p2 = _psi2(t, K2)
    p3 = K3 - 2.0 / t ** 3 - 2.0 / (1.0 + t) ** 3
    p4 = K4 + 6.0 / t ** 4 + 6.0 / (1.0 + t) ** 4
    log_msd0 = K - eps * t - math.log(t) - math.log1p(t) - 0.5 * (LOG_2PI + math.log(p2))
    corr = 1.0 + p4 / (8.0 * p2 * p2) - 5.0 * (p3 * p3) / (24.0 * p2 * p2 * p2)  # (inf, not an error, on overflow)
    log_msd1 = log_msd0 + math.log(corr) if corr > 0 else math.nan
    out = _Result(t=t, eps=eps, p2=p2, p3=p3, log_msd0=log_msd0, log_msd1=log_msd1, corr=corr)
    out.clt_args = (K, K1, K2)
    if A is not None:
        out.update(_log_bounds(t, K, K2, A, eps, out["log_clt"]))
    return out


class _Result(dict):
    """``_evaluate``'s answers; SP-CLT ("log_clt", two erfc evaluations) is computed when first looked up (the
    model searches of MSD0 and MSD1 do not need it)."""
    __slots__ = ("clt_args",)

    def __missing__(self, key):
        if key != "log_clt":
            raise KeyError(key)
        v = self["log_clt"] = _log_clt(self["t"], *self.clt_args, self["eps"])
        return v


def _log_clt(t, K, K1, K2, eps):
    """log of SP-CLT (eq. 79) at tilt t."""
    return _clt_terms(t, K, K1, math.sqrt(K2), eps)[0]


#: (log SP-CLT, g, a, b, log Psi(b) - log Psi(a)) at tilt t, s = sqrt(K''): the value and what its slope in epsilon
#: needs; the point-mass limit where K'' is 0 (``_numerics.clt_terms``, also the bounds' own)
_clt_terms = _nm.clt_terms


LOG_SLACK = math.log1p(QUAD_SLACK)


def _log_err0(t, K, K2, A):
    """log of Theorem 5's error term at tilt t for epsilon = 0, with the quadrature allowance (the term is
    e^(-t eps) times it)."""
    if not K2 > 0.0:
        return math.inf  # a (numerically) degenerate tilted law: Berry-Esseen says nothing here
    if not A > 0:
        return -math.inf
    return math.log(C_BE2) + K + _log_max_theta(t) + math.log(A) - 1.5 * math.log(K2) + LOG_SLACK


def _log_max_theta(t):
    """log max_y e^(-t y) (1 - e^(-y)) = log t^t / (1+t)^(1+t) (Theorem 5's and Chernoff's factor)."""
    return t * math.log(t) - (1.0 + t) * math.log1p(t)


def _log_upper(log_clt, log_err):
    """log(SP-CLT + error), with the quadrature allowance."""
    a = log_clt + LOG_SLACK
    hi = max(a, log_err)
    return hi if hi == -math.inf else hi + math.log1p(math.exp(min(a, log_err) - hi))


def _log_lower(log_clt, log_err):
    """log(SP-CLT - error), with the quadrature allowance (-inf where the error is the larger)."""
    return log_clt + _nm.log1mexp(min(log_err - log_clt, 0.0)) - QUAD_SLACK if log_err < log_clt else -math.inf


def _log_bounds(t, K, K2, A, eps, log_clt):
    """Theorem 5 at tilt t: the log of its error term, and of SP-CLT -/+ it (with the quadrature allowance)."""
    log_err = _log_err0(t, K, K2, A) - t * eps
    return {"log_err": log_err, "log_upper": _log_upper(log_clt, log_err), "log_lower": _log_lower(log_clt, log_err)}


def _estimate_key(order, variant):
    if variant == "clt":
        return "log_clt"
    return "log_msd1" if order == 1 else "log_msd0"


def _check(order, variant):
    if variant not in VARIANTS:
        raise ParameterError(f"variant must be one of {VARIANTS} for method='spa', got {variant!r}")
    if order not in (0, 1):
        raise ParameterError(f"order must be 0 or 1 for method='spa', got {order!r}")


def _modelled_value(key):
    """fn(r) for _solve_t: the estimate's log-delta at r."""
    def fn(r):
        return _value(r, key)
    fn.key = key
    return fn


def _value(res, key):
    """The estimate's log-delta; MSD1 falls back to MSD0 where its correction factor is not positive."""
    v = res[key]
    if math.isnan(v):
        v = res["log_msd0"]
    return v


class _ZeroDelta(Exception):
    """epsilon is at or above the largest value of the composed loss: delta is exactly 0 there."""


# -- certificates ----------------------------------------------------------------------------------------------
def _below(dirn, first, t, eps, target):
    """True when one exact evaluation of ``dirn`` at the tilt t (the first direction's saddle point; the
    quadratures centred on the first's K_i'(t)) certifies delta(eps) <= exp(target) for it: then its epsilon is at
    most eps."""
    vec, A = dirn.exact(t, first.centres(t))
    if not (math.isfinite(vec[0]) and vec[2] > 0 and math.isfinite(A)):
        return False
    return _chernoff_or_theorem5(t, vec, A, eps) <= target


def _below_at_guess(dirn, eps, target):
    """True when ``dirn``'s node nearest the saddle point of eps under a Gaussian model of its K (K'(0), K''(0))
    certifies delta(eps) <= exp(target) for it (Chernoff, or Theorem 5 with the node's tilted absolute third moment,
    about the tilted mode where that is the node's centre: a valid, looser bound): then its epsilon is at most eps.
    Where the other direction's saddle point is far from the first's (e.g. subsampled Gaussians at about one
    expected sampled step: t = 35 against 85), the first's tilt cannot certify it, and this one node (memoised,
    and the start of the other direction's model if it is needed after all) spares its whole search.
    Returns (certified, log of the node's tilt or None): where it does not certify, the node is where the other
    direction's search starts."""
    u = dirn._gaussian_tilt(eps)
    if u is None or not math.log(T_MIN) < u < math.log(0.5 * T_MAX):
        return False, None
    j = round(u / H_NODE)
    comp = dirn.node(j)[1]
    if comp is None or not comp[2] > 0:
        return False, None
    A = 0.0
    for plrv, c in dirn.parts:
        a = plrv._spa_nodes[j][2]
        A += c * (a if a is not None else _plrv_abs3(plrv, j))
    t = math.exp(j * H_NODE)
    return math.isfinite(A) and _chernoff_or_theorem5(t, comp, A, eps) <= target, j * H_NODE


def _chernoff_or_theorem5(t, vec, A, eps):
    """The better of two certified upper bounds on log delta(eps) from exact values at the tilt t: Chernoff's
    e^(K - t eps) t^t / (1+t)^(1+t) and Theorem 5."""
    return min(_chernoff(t, vec, eps), _bound_at(t, vec, A, "log_upper")(eps))


def _chernoff(t, vec, eps):
    """log of the Chernoff bound e^(K - t eps) t^t / (1+t)^(1+t) on delta(eps) from exact K at the tilt t."""
    return vec[0] - t * eps + _log_max_theta(t) + LOG_SLACK


def _node_log_upper(dirn, t, eps, target=math.inf):
    """A certified upper bound on log delta(eps) of one direction from the memoised node nearest t: the Chernoff
    bound e^(K - t eps) t^t / (1+t)^(1+t) at that node's exact values where it is at most ``target``, else the
    better of it and Theorem 5 (which needs the node's tilted absolute third moment: one more quadrature pass)."""
    j = round(math.log(t) / H_NODE)
    comp = dirn.node(j)[1]
    if comp is None:
        return math.inf
    tj = math.exp(j * H_NODE)
    chernoff = _chernoff(tj, comp, eps)
    if chernoff <= target:
        return chernoff
    return _chernoff_or_theorem5(tj, comp, dirn.node_abs3(j), eps)


def _cross_bound(t, vec, A, which, target, e0, scale, floor=-math.inf):
    """(a, b) with f(a) >= target > f(b) and b - a <= 1e-12 (1 + |a|) for f = ``_bound_at(t, vec, A, which)``: a
    crossing found from e0 (``_numerics.bound_cross``, compiled: safeguarded Newton with the analytic slope, doubling
    steps of ``scale`` x 1e-3, 2e-3, ... where the slope is not usable and no bracket is known yet, the floor tried
    after 3 such steps, bisection inside a known bracket where a step leaves it, the bracket closed by a step of
    half its tolerance past the last point, Illinois regula falsi after 200 steps).  a is None when f stays below
    the target down to ``floor``."""
    K, K1, K2 = vec[0], vec[1], vec[2]
    a, b, status = _nm.bound_cross(t, K, K1, math.sqrt(K2), _log_err0(t, K, K2, A), which == "log_upper", target,
                                   e0, scale, floor, LOG_SLACK, QUAD_SLACK)
    if status == 2:
        raise NumericalLimitError("the saddle-point bound has no crossing near the saddle point (report this as a bug)")
    return (None if status == 1 else a), b


def _bound_at(t, vec, A, which):
    """epsilon -> the log of Theorem 5's bound ``which`` ("log_upper" or "log_lower") at the fixed tilt t, from
    [K, K', K'', ...] and A there; ``f(e, True)`` gives (value, d value / d epsilon) (``_numerics.bound_value``: the
    arithmetic of _clt_terms, _log_upper and _log_lower, with the slope)."""
    K, K1, K2 = vec[0], vec[1], vec[2]
    s, err0, upper = math.sqrt(K2), _log_err0(t, K, K2, A), which == "log_upper"

    def f(e, slope=False):
        v, d = _nm.bound_value(t, K, K1, s, err0, upper, e, LOG_SLACK, QUAD_SLACK)
        return (v, d) if slope else v
    return f


def _modelled(dirn, which, anchor=None):
    """fn(r) for _solve_t: the model's log upper or lower bound at r's tilt and epsilon (locating only).  The
    tilted absolute third moment: interpolated between the nodes, or, with ``anchor`` = (K'', K''', A) exact at a
    nearby tilt, A scaled as K''' (the two are close where the tilted loss is skewed, and their ratio changes
    little where it is not; as K''^(3/2) where K''' is not positive)."""
    def fn(r):
        K, K2, K3 = r["vec"][0], r["vec"][2], r["vec"][3]
        if anchor is None:
            A = dirn.abs3_model(r["t"])
        elif K3 > 0 and anchor[1] > 0:
            A = anchor[2] * K3 / anchor[1]
        elif not anchor[0] > 0:
            A = anchor[2]
        else:
            ratio = K2 / anchor[0]  # (** would raise on overflow; * gives inf: a vacuous bound)
            A = anchor[2] * ratio * math.sqrt(ratio)
        t = r["t"]
        # _log_bounds(t, K, K2, A, eps, log_clt)[which] in one compiled call (the same arithmetic)
        return _nm.bound_value(t, K, r["vec"][1], math.sqrt(K2) if K2 > 0.0 else 0.0, _log_err0(t, K, K2, A), upper,
                               r["eps"], LOG_SLACK, QUAD_SLACK)[0]
    upper = which == "log_upper"
    return fn


#: the other direction's estimate is polished on exact values where its model value is within
#: max(POLISH_ERRORS x the leader's model error, POLISH_MARGIN (1 + epsilon)) of the leader's polished value
POLISH_ERRORS, POLISH_MARGIN = 20.0, 1e-3


def _upper_eps(dirn, target):
    """A certified epsilon_up with delta(epsilon_up) <= exp(target) for one direction, and the exact evaluation
    (or None): the tilt is located on the model (A interpolated between the nodes), the bound solved in epsilon at
    that tilt from exact values (``_bounds`` without an anchor)."""
    u = _root(dirn, target, _modelled(dirn, "log_upper"), utol=LOCATE_UTOL, vtol=1e-3)
    if u is None:
        # the model puts the bound at or below delta at epsilon = 0: certify that at the saddle point of 0
        t = _zero_tilt(dirn)
        if math.isnan(t):
            return 0.0, None
        vec, A = dirn.exact(t)
        if _evaluate(t, vec, 0.0, A)["log_upper"] <= target:
            return 0.0, None
    else:
        t = math.exp(u)
        vec, A = dirn.exact(t)
    return _upper_at(dirn, target, t, vec, A)


LOWER_RETRIES = 5
#: the bracket width (relative, in log t) at which the bounds' tilts are located: a bound holds at every tilt and
#: changes only to second order near the best one
LOCATE_UTOL = 1e-3


def _lower_locate(dirn, target, u0=None, anchor=None):
    """log of the tilt where the model puts the lower bound's crossing of delta (None: no positive lower bound)."""
    return _root(dirn, target, _modelled(dirn, "log_lower", anchor), u0, utol=LOCATE_UTOL, vtol=1e-3)


def _lower_eps(dirn, target, u, uppers=None):
    """A certified epsilon_lo with delta(epsilon_lo) >= exp(target) for one direction (0 when none is found), from
    the exact values at the located tilt u (stepped down where the model put it on the edge of the region where
    the bound is positive).  With a list ``uppers``, the upper bound at each tilt evaluated is appended to it
    (as _upper_at's (epsilon_up, where))."""
    if u is None:
        return 0.0
    for i in range(LOWER_RETRIES):
        t = math.exp(u - (2 ** i - 1) * H_NODE)
        vec, A = dirn.exact(t)
        if uppers is not None:
            uppers.append(_upper_at(dirn, target, t, vec, A))
        if not vec[2] > 0.0:
            continue  # Theorem 5 is vacuous at this tilt (_log_err0)
        a, _ = _cross_bound(t, vec, A, "log_lower", target, dirn.eps_of(t), 1.0 / t, floor=0.0)
        if a is not None:
            return max(a, 0.0)
    return 0.0


def _upper_at(dirn, target, t, vec, A):
    """(epsilon_up, (t, vec, A, epsilon_up)): Theorem 5's upper bound solved in epsilon at the tilt t (exact
    values vec, A there)."""
    if not vec[2] > 0.0:
        return math.inf, None  # Theorem 5 is vacuous at this tilt (_log_err0; another tilt gives the bound)
    _, b = _cross_bound(t, vec, A, "log_upper", target, dirn.eps_of(t, vec), 1.0 / t)
    return max(b, 0.0), (t, vec, A, b)


def _bounds(dirn, target, u_anchor):
    """Certified (epsilon_lo, epsilon_up, where) for one direction; ``where`` = (t, vec, A, epsilon) of the upper
    bound (None when it is 0 without an evaluation).

    ``u_anchor``: log of the model's SP-MSD1 saddle point for delta (the default estimate's tilt, so its exact
    evaluation is usually shared with the estimate).  Theorem 5 holds at every tilt: the upper bound is solved at
    the anchor and at the tilt(s) of the lower bound, and at its own tilt located on the model where no positive
    lower bound was found, the smallest kept; the
    tilts are located on the model with the anchor's absolute third moment scaled as K''' (_modelled), the bounds
    solved there on exact values.
    Without an anchor (the approximation never reaches delta) both tilts are located on the model alone.
    """
    if u_anchor is None:
        up, where = _upper_eps(dirn, target)
        return _lower_eps(dirn, target, _lower_locate(dirn, target)), up, where
    t = math.exp(u_anchor)
    vec, A = dirn.exact(t)
    anchor = (vec[2], vec[3], A)
    uppers = [_upper_at(dirn, target, t, vec, A)]
    lo = _lower_eps(dirn, target, _optional(lambda: _lower_locate(dirn, target, u_anchor, anchor)), uppers)
    if not lo > 0.0:
        # the upper bound at its own located tilt: where a positive lower bound was found, the upper bound at that
        # tilt or at the anchor was never beaten by it (40 settings measured: subsampled Gaussians k = 1e2..1e6,
        # Laplace, Gaussian, randomized response, discrete Gaussian), and this saves a quadrature pass and a search
        u = _optional(lambda: _root(dirn, target, _modelled(dirn, "log_upper", anchor), u_anchor,
                                    utol=LOCATE_UTOL, vtol=1e-3))
        if u is not None and u != u_anchor:
            t = math.exp(u)
            uppers.append(_upper_at(dirn, target, t, *dirn.exact(t)))
    up, where = min(uppers, key=lambda x: x[0])
    return lo, up, where


def _optional(locate):
    """A tilt search that only tightens a bound (Theorem 5 holds at every tilt): None where it finds nothing, e.g.
    where the bound is vacuous at large tilts (a bounded loss whose tilted law degenerates) and the search runs
    to the end of the domain."""
    try:
        return locate()
    except NumericalLimitError:
        return None


# -- the queries -------------------------------------------------------------------------------------------------
def delta(items, epsilon, order=1, variant="msd"):
    """delta(epsilon) by the SPA (max over add and remove); EstimateArray with certified bounds.

    Per epsilon: the saddle points on the model; the estimate and both bounds of the dominant direction from one
    exact evaluation at its saddle point; the other direction's upper bound from its nearest memoised node
    (exact there), or exactly at its saddle point where that node's bound would raise the maximum.
    """
    _check(order, variant)
    eps = np.atleast_1d(np.asarray(epsilon, float))
    key = _estimate_key(order, variant)
    dirs = _directions(items)
    val, lo, up, ts, rel = [], [], [], [], []
    for e in eps:
        e = float(e)
        found = []
        for dirn in dirs:
            try:
                t = dirn.saddle(e)
            except _ZeroDelta:
                continue
            found.append((_value(dirn.at(t, e, want_bounds=False), key), dirn, t))
        ts.append([next((t for _, d, t in found if d is dirn), math.nan) for dirn in dirs])
        if not found:
            val.append(0.0), lo.append(0.0), up.append(0.0), rel.append(True)
            continue
        found.sort(key=lambda x: -x[0])
        _, dom, t = found[0]
        r = dom.at(t, e, want_bounds=True)
        for _ in range(8):  # Newton on the exact saddle-point equation where the model's saddle point is off
            f = r["vec"][1] - 1.0 / t - 1.0 / (1.0 + t) - e
            if abs(f) <= 1e-11 * (1.0 + abs(e)):
                break
            t2 = t - f / r["p2"]
            if not (0.5 * t < t2 < 2.0 * t) or not dom.finite(t2):
                break
            t = t2
            r = dom.at(t, e, want_bounds=True)
        log_up = r["log_upper"]
        for _, dirn, t2 in found[1:]:
            other = _node_log_upper(dirn, t2, e, log_up)
            if other > log_up:
                other = min(other, dirn.at(t2, e, want_bounds=True)["log_upper"])
            log_up = max(log_up, other)
        val.append(_exp(_value(r, key)))
        lo.append(max(_exp(r["log_lower"]), _point_mass_delta(dirs, e)))
        up.append(min(1.0, _exp(log_up)))
        rel.append(_reliable(r))
    val, moved = clamp_into(np.minimum(np.array(val), 1.0), np.array(lo), np.array(up))
    details = _details(order, variant, None)
    details["saddle_points"] = ts
    details["reliable"] = [bool(r) and not m for r, m in zip(rel, moved)]
    details["clamped"] = moved.tolist()
    return EstimateArray(val, np.array(lo), np.array(up), "spa", True, details)


#: inside a bracket, a regula falsi point within this fraction of its width from an end is replaced by the midpoint
FALSI_EDGE = 0.01


def _solve_t(dirn, target, fn, bounds, u0=None, utol=1e-13, vtol=1e-10, guess=None):
    """log of the tilt t at which fn(at(t)) (a log-delta decreasing in t) equals target, or None when even the
    smallest resolvable epsilon has a log-delta below the target (then epsilon is 0).

    Newton in u = log t with the slope of log delta_MSD0 along the saddle points, -t^2 psi'' - t psi'''/(2 psi'')
    (a secant where one is usable), until the root is bracketed (steps capped at a factor 16 in t), then Newton
    inside the bracket with Illinois regula falsi as the safeguard (bisection where a value is not finite).
    ``u0`` warm-starts the search (the estimate's polish starts from the model's root, the bounds' from their
    anchor); without it, an approximation's search (fn.key) starts from its root for the nearest delta asked of
    this direction before, else from ``guess`` (log of a tilt where a node is known) or the Gaussian model's guess
    (steps of at least 1e-3 from such starts).
    ``utol``: the relative width of the final bracket, ``vtol`` the accepted |log-delta - target| (the tilts of the
    bounds need not be precise: a bound holds at every tilt, and is solved exactly in epsilon at the tilt found).
    """
    warm = u0 is not None
    seen = dirn._roots.get(getattr(fn, "key", None)) if u0 is None else None
    if seen:
        # the same approximation's root for the nearest delta asked before (the CGF there is known; a Gaussian
        # model can be far off where the composition is short); for the delta itself, the same root again
        u0 = seen[min(seen, key=lambda x: abs(x - target))]
    elif u0 is None and guess is not None:
        u0 = guess
    elif u0 is None:
        u0 = dirn.model_start(target)
        if u0 is not None:
            # a guess: moved down to the node below it, so that the model there needs that node only (between
            # nodes, the one above is needed too, to know that the CGF is finite there)
            u0 = math.floor(u0 / H_NODE) * H_NODE
            if not dirn.finite(math.exp(u0)):
                u0 = None
    u = math.log(dirn.start()) if u0 is None else u0
    lo_u, hi_u = -math.inf, math.inf  # fn > target at lo_u, < target at hi_u
    lo_v, hi_v = math.nan, math.nan
    side = 0  # Illinois bookkeeping: which end was kept last
    prev = None
    stalls, last_v = 0, math.inf
    widths = []
    cap = math.log(16.0)
    blind = 0  # steps taken without a finite value on the unknown side
    for _ in range(200):
        t = math.exp(u)
        w = dirn._where(t)
        if w is None:  # outside the CGF's domain of finiteness
            hi_u, hi_v = u, -math.inf
            nu = 0.5 * (u + lo_u) if lo_u > -math.inf else u - cap
        else:
            r = dirn.at(t, want_bounds=bounds, w=w)
            v = fn(r) - target
            if v == 0.0 or (math.isfinite(v) and abs(v) <= vtol):
                return u
            if v > 0:
                lo_u, lo_v = u, v
                if side == +1:
                    hi_v *= 0.5
                side = +1
            else:
                hi_u, hi_v = u, v
                if side == -1:
                    lo_v *= 0.5
                side = -1
            # slope: secant through the previous point where it is usable, else d log delta_MSD0 / du along the
            # saddle points, -t^2 psi'' - t psi''' / (2 psi''), or its leading term where that is not negative
            slope = -t * (t * r["p2"] + 0.5 * r["p3"] / r["p2"])
            if not slope < 0:
                slope = -t * t * r["p2"]
            # (the secant only in model searches: on exact values, the estimate's polish, the analytic slope is
            # MSD0's own, MSD1's but for its correction factor's, and a secant through the previous point of a
            # strongly convex log delta only creeps: q = 0.001, k = 1e4, 22 nats off, 10 passes with it)
            if not bounds and prev is not None and math.isfinite(v) and math.isfinite(prev[1]) and prev[0] != u:
                sec = (v - prev[1]) / (u - prev[0])
                if sec < 0:
                    slope = sec
            prev = (u, v)
            if lo_u > -math.inf and hi_u < math.inf:
                if hi_u - lo_u <= utol * max(1.0, abs(hi_u)):
                    # the end where the value is finite (a locating search can end on the edge of the region
                    # where a lower bound is positive)
                    return hi_u if bounds else (u if math.isfinite(v) else lo_u)
                nu = u - v / slope if math.isfinite(v) else math.nan
                if not bounds and utol < 1e-9 and abs(nu - u) <= utol * max(1.0, abs(u)):
                    return u  # converged: Newton's next point is this one (|v| is at the model's rounding level)
                width = hi_u - lo_u
                widths.append(width)
                if len(widths) >= 4 and width > 0.5 * widths[-4]:
                    nu = 0.5 * (lo_u + hi_u)  # the bracket is not shrinking fast enough: bisect
                    widths.clear()
                elif not (lo_u < nu < hi_u) or stalls >= 2:
                    # Illinois regula falsi (bisection where a value is not finite)
                    if math.isfinite(lo_v) and math.isfinite(hi_v) and hi_v < 0 < lo_v:
                        nu = lo_u + (hi_u - lo_u) * lo_v / (lo_v - hi_v)
                        edge = FALSI_EDGE * width
                        if not (lo_u + edge < nu < hi_u - edge):
                            # outside, or hugging an end because the other end's value is far larger (a cliff in
                            # log delta, where the tilted loss changes regime): bisection shrinks the bracket faster
                            nu = 0.5 * (lo_u + hi_u)
                    else:
                        nu = 0.5 * (lo_u + hi_u)
                    stalls = 0
                elif abs(v) > 0.5 * abs(last_v):
                    stalls += 1
                last_v = v
            else:
                # one side unknown: a Newton step, capped at a factor 16 in t; where the value is not finite (e.g. a
                # lower bound that is not positive at this tilt), steps of 2, 8, 32, ... nodes
                nu = u - v / slope if math.isfinite(v) and slope < 0 else math.nan
                if not math.isfinite(nu):
                    blind += 1
                    step = min(cap, 2.0 * 4.0 ** (blind - 1) * H_NODE)
                    nu = u + step if v > 0 else u - step
                nu = min(max(nu, u - cap), u + cap)
                if not warm:  # a step of at least 1e-3 where the start is only a guess
                    nu = max(nu, u + 1e-3) if v > 0 else min(nu, u - 1e-3)
        if nu > math.log(T_MAX):
            sup = dirn.sup()
            raise NumericalLimitError(
                f"delta = {math.exp(target):.3g} is not reached before the end of the CGF's domain (t = "
                f"{math.exp(u):.3g}); the SPA cannot resolve it for this composition" + (
                    f" ({dirn.direction} direction: its epsilon is at most the largest privacy loss, {sup:.6g})"
                    if math.isfinite(sup) else ""))
        if hi_u < math.log(T_MIN):
            return None  # delta is below the target already at the smallest tilt: epsilon is 0
        if nu < math.log(T_MIN):
            nu = math.log(T_MIN) if hi_u > math.log(T_MIN) else nu
            if lo_u == -math.inf and u <= math.log(T_MIN) * (1 - 1e-12):
                return None
        u = nu
    raise NumericalLimitError("the saddle-point search did not converge (report this as a bug)")


#: the estimate's polish accepts the first exact evaluation, corrected to first order along the saddle points, where
#: that correction of epsilon is at most this (relative to 1 + epsilon); the slope is the model's (central
#: differences, no quadrature), so the error is second order: measured 1e-10 (1 + epsilon) at a correction of 1e-6
#: (subsampled Gaussians, k = 100, where the model is least accurate), 1e-9 at 3e-6
POLISH_LINEAR = 1e-6
_SLOPE_H = 1e-7


def _polish(dirn, target, fn, u):
    """(log t, epsilon) of the estimate: the approximation ``fn`` on exact values at the model's root u, where the
    model was accurate enough that a first-order step along the saddle points (the model's slope of fn) corrects
    it (one exact evaluation, usually shared with the bounds' anchor), else the root searched on exact values
    (``_solve_t``)."""
    t = math.exp(u)
    r = dirn.at(t, want_bounds=True)
    v = fn(r) - target
    if math.isfinite(v) and r["p2"] > 0:
        hi, lo = (fn(dirn.at(math.exp(x), want_bounds=False)) for x in (u + _SLOPE_H, u - _SLOPE_H))
        slope = (hi - lo) / (2.0 * _SLOPE_H)
        if slope < 0:
            step = -t * r["p2"] * v / slope  # d epsilon / du = t psi''
            if abs(step) <= POLISH_LINEAR * (1.0 + abs(r["eps"])):
                return u, r["eps"] + step
    u = _solve_t(dirn, target, fn, True, u, vtol=1e-9)
    return u, (None if u is None else dirn.at(math.exp(u), want_bounds=True)["eps"])


#: an SP-MSD1 root where the correction factor is within this of 0 is spurious: log delta_MSD1 runs to -inf as the
#: factor falls to 0 (MSD0 takes over below it), so the search closes on that singularity wherever MSD0 is still
#: above delta there (sigma 1.03, q 0.0059, k 166, delta 1e-4: a "root" at epsilon 0.212 with the factor at 1e-4,
#: MSD0's own root at 0.420, the FFT 0.328)
MSD1_SINGULAR = 0.05


def _estimate_root(dirn, target, fn, **kw):
    """(log t, fn used, fell back): the model's root of the estimate's approximation; an SP-MSD1 root on its
    singularity (``MSD1_SINGULAR``) is replaced by SP-MSD0's root (the estimate is then not reliable)."""
    u = _root(dirn, target, fn, **kw)
    if getattr(fn, "key", None) != "log_msd1" or u is None:
        return u, fn, False
    corr = dirn.at(math.exp(u), want_bounds=False)["corr"]
    if not abs(corr) <= MSD1_SINGULAR:
        return u, fn, False
    f0 = _modelled_value("log_msd0")
    return _root(dirn, target, f0), f0, True


def _root(dirn, target, fn, u0=None, **kw):
    """log t where the model's curve fn crosses the target at a positive epsilon, or None when epsilon is 0.

    The search alone decides in the usual case; the saddle point of epsilon = 0 (``at_zero``) is consulted only
    where the search fails (near delta = 1 an approximation can stay below the target at every tilt).
    """
    try:
        u = _solve_t(dirn, target, fn, False, u0, **kw)
    except NumericalLimitError:
        if at_zero(dirn, fn, target, False):
            return None
        raise
    if u is None or dirn.eps_of(math.exp(u)) <= 0.0:
        return None
    key = getattr(fn, "key", None)
    if key is not None:  # an estimate's root: a start for later queries (_solve_t)
        seen = dirn._roots.setdefault(key, {})
        if len(seen) >= 64:
            seen.clear()
        seen[target] = u
    return u


def _zero_tilt(dirn):
    """The saddle point of epsilon = 0 (nan where epsilon = 0 is beyond the composed loss's range), cached."""
    if dirn._t_zero is None:
        try:
            dirn._t_zero = dirn.saddle(0.0)
        except _ZeroDelta:
            dirn._t_zero = math.nan
    return dirn._t_zero


def at_zero(dirn, fn, target, bounds):
    """True when the curve fn is already <= target at epsilon = 0 (then epsilon is 0 for this direction).

    Needed near delta = 1: the approximations can stay below the target at every tilt (MSD1 peaks below 1),
    so a root search in t would find no crossing.
    """
    t0 = _zero_tilt(dirn)
    return math.isnan(t0) or fn(dirn.at(t0, 0.0, want_bounds=bounds)) <= target


def _heavy_tops(dirs, target):
    """{id(direction): (s, log P)} for the directions whose largest loss s carries a point mass P > exp(target)."""
    return {id(d): top for d in dirs if (top := d.top_atom()) is not None and target < top[1]}


def _point_mass_delta(dirs, eps):
    """A certified lower bound on delta(eps) (max over the directions) from the point masses at the largest losses:
    delta(eps) >= P (1 - e^(eps - s)) for eps < s (exact where eps is above the second largest value of a
    finite loss, e.g. randomized response); 0 where no direction has such a point mass."""
    out = 0.0
    for dirn in dirs:
        top = dirn.top_atom()
        if top is not None and eps < top[0]:
            out = max(out, _exp(top[1] + _nm.log1mexp(eps - top[0]) - LOG_SLACK) * (1.0 - 1e-12))
    return out


def _point_mass_lower(top, target):
    """s + log(1 - delta/P) for top = (s, log P), with the quadrature allowance on P and a few units of rounding
    (where eps is above the second largest loss the bound is the exact answer, so rounding decides the side)."""
    s_max, logp = top
    return s_max + _nm.log1mexp(target - logp + LOG_SLACK) - 1e-13 * (1.0 + abs(s_max))


def _point_mass_epsilon(dirs, target, order, variant):
    """epsilon(delta) where delta is below what the saddle points can reach (t beyond T_MAX) for a direction whose
    composed loss has a point mass P at its largest value s: there delta(eps) >= P (1 - e^(eps - s)) and
    delta(s) = 0, so s + log(1 - delta / P) <= epsilon <= s (certified; the interval's width is about delta / P).
    The other direction must be below that lower end by its own largest loss.  None where this does not apply."""
    heavy = _heavy_tops(dirs, target)
    if not heavy:
        return None
    tops = list(heavy.values())
    lo = max(_point_mass_lower(top, target) for top in tops)
    up = max(top[0] for top in tops)
    if not all(id(d) in heavy or d.sup() <= lo for d in dirs):
        return None
    details = _details(order, variant, None)
    details.update(note="delta is below the saddle points' reach: the point mass P at the largest privacy loss s "
                        "gives s + log(1 - delta/P) <= epsilon <= s", point_mass=[math.exp(t[1]) for t in tops],
                   largest_loss=up, reliable=True)
    return Estimate(lo, lo, up, "spa", True, details)


def epsilon(items, delta_, order=1, variant="msd"):
    """epsilon(delta) by the SPA (max over add and remove), with certified lower and upper bounds.

    Where delta is below what the saddle points reach and the largest privacy loss carries a point mass (pure-DP
    mechanisms at tiny delta), the answer comes from that point mass (``_point_mass_epsilon``).
    """
    _check(order, variant)
    d = check_finite_real("delta", delta_, low=0.0, high=1.0)
    try:
        return _epsilon(items, d, order, variant)
    except NumericalLimitError:
        got = _point_mass_epsilon(_directions(items), math.log(d), order, variant)
        if got is None:
            raise
        return got


def _epsilon(items, d, order, variant):
    """epsilon(delta) by the SPA (max over add and remove), with certified lower and upper bounds.

    The estimate: the saddle point where the approximation equals delta, found on the model and polished on exact
    evaluations (the approximation is always evaluated with exact CGF values).  The bounds (certified):
    Theorem 5 solved in epsilon from exact evaluations at the model's SP-MSD1 saddle point and at the tilts
    located on the model for each bound (``_bounds``); the lower bound is the larger of the two directions' (each
    bounds the maximum), the upper bound the larger, the other direction skipped where it is certified below the
    first's estimate, else checked at memoised nodes before its own bounds are computed.
    """
    target = math.log(d)
    key = _estimate_key(order, variant)
    dirs = _directions(items)

    fn = _modelled_value(key)
    # the estimate is the approximation evaluated with exact CGF values: the model's root is polished by the
    # same search on exact evaluations (one evaluation where the model is accurate; more where the CGF's higher
    # derivatives outgrow the node spacing).  The first direction first; the other is skipped where one exact
    # evaluation at the first's tilt certifies that its epsilon is below the first's estimate, else polished too
    # where its model value is close to the first's
    est = []
    roots = {}  # the model's roots, before polishing (for the default estimate, the bounds' anchors)
    dominated = set()
    fallback = set()  # directions whose SP-MSD1 root was its singularity: SP-MSD0's root instead
    margin = math.inf  # until the first direction's polish has measured the model's error
    for i, dirn in enumerate(dirs):
        guess = None
        if i > 0:
            # its epsilon is at most its largest loss, or certified at most the first's estimate (at the first's
            # tilt, else at its own saddle point under a Gaussian model, whose node starts its search otherwise)
            done = dirn.sup() <= est[0][0]
            if not done and est[0][2] is not None:
                done = _below(dirn, dirs[0], math.exp(est[0][2]), est[0][0], target)
                if not done:
                    done, guess = _below_at_guess(dirn, est[0][0], target)
            if done:
                dominated.add(id(dirn))
                continue
        u, f_dir, fell = _estimate_root(dirn, target, fn, guess=guess)
        roots[id(dirn)] = u
        if fell:
            fallback.add(id(dirn))
        row = [0.0 if u is None else max(dirn.eps_of(math.exp(u)), 0.0), dirn, u]
        est.append(row)
        if u is None or (i > 0 and row[0] < est[0][0] - margin):
            continue
        model = row[0]
        u, e = _polish(dirn, target, f_dir, u)
        row[2] = u
        row[0] = 0.0 if u is None else max(e, 0.0)
        if i == 0:
            # the other direction is polished only where its model value could still be the larger one: within
            # a generous multiple of the model error just observed on the first, and never less than POLISH_MARGIN
            margin = max(POLISH_ERRORS * abs(row[0] - model), POLISH_MARGIN * (1.0 + row[0]))
    est.sort(key=lambda x: -x[0])
    val, dom, u_dom = est[0]
    # the bounds: at each direction's anchor, the model's SP-MSD1 saddle point (the default estimate's model root,
    # so that the bounds do not depend on the estimate's order or variant); the leader first, the other where
    # its bound at its nearest memoised node does not already keep it below the leader's upper bound
    msd1, msd1_roots = _modelled_value("log_msd1"), (dict(roots) if key == "log_msd1" else {})

    def anchor(dirn):
        if id(dirn) not in msd1_roots:
            msd1_roots[id(dirn)] = _estimate_root(dirn, target, msd1)[0]
        return msd1_roots[id(dirn)]

    lo, up, where = _bounds(dom, target, anchor(dom))
    for dirn in dirs:
        if dirn is dom:
            continue
        u = next((r[2] for r in est if r[1] is dirn), None)
        # certified below the leader's estimate (where that is <= up) or its largest loss below up already, else
        # first at the node nearest its estimate's tilt (memoised by the search), then at its saddle point of up
        need_up = (dirn.sup() > up and not (id(dirn) in dominated and val <= up)
                   and (u is None or _node_log_upper(dirn, math.exp(u), up, target) > target))
        if need_up:
            try:
                t_up = dirn.saddle(up, None if u is None else math.exp(u))
                need_up = _node_log_upper(dirn, t_up, up, target) > target
            except _ZeroDelta:
                need_up = False
            except NumericalLimitError:
                pass
        if need_up or lo == 0.0 or val - lo > LOWER_WEAK * (up - val):
            # either direction's lower bound holds for the max: the other's is computed too where the leader has
            # none or a weak one (Berry-Esseen is loose where the leader's tilted loss is skewed; the other's may
            # be the tighter)
            try:
                lo2, up2, _ = _bounds(dirn, target, anchor(dirn))
            except NumericalLimitError:
                if need_up and not math.isfinite(dirn.sup()):
                    raise
                lo2, up2 = 0.0, dirn.sup()  # its epsilon is at most its largest loss
            if need_up:
                up = max(up, up2)
            lo = max(lo, lo2)
    res = None if u_dom is None else dom.at(math.exp(u_dom), want_bounds=True)
    rel = None
    if where is not None:  # Theorem 5's error over SP-CLT, at the upper bound's tilt and epsilon
        t, vec, A, e = where
        b = _evaluate(t, vec, e, A)
        rel = _exp(b["log_err"] - b["log_clt"]) if b["log_clt"] > -math.inf else math.inf
    details = _details(order, variant, res, rel)
    # two more certified facts: delta(largest loss) = 0, and a point mass at the largest loss keeps delta above
    # the target up to s + log(1 - delta/P) (pure-DP mechanisms at small delta; ``_point_mass_epsilon``)
    up = min(up, max(dirn.sup() for dirn in dirs))
    for top in _heavy_tops(dirs, target).values():
        lo = max(lo, _point_mass_lower(top, target))
    val, moved = clamp_into(val, lo, up)
    if moved or (u_dom is None and up > 0):
        # outside its own certified interval, or 0 only because the approximation never reaches delta
        details.update(reliable=False, clamped=moved)
    if id(dom) in fallback:
        details.update(reliable=False, msd1_singular=True)
    return Estimate(val, lo, up, "spa", True, details)


#: the other direction's bounds are computed as well where the leader's lower bound is further below its estimate
#: than this many times its upper bound is above it
LOWER_WEAK = 3.0

RELIABLE_CORRECTION = 0.05


def _reliable(res):
    """The size of the next-order (Daniels) term decides whether the expansion is in its regime."""
    return bool(abs(res["corr"] - 1.0) <= RELIABLE_CORRECTION)


def _details(order, variant, res, rel=None):
    """What the estimate rests on, and whether the regime suits it.

    ``reliable`` is true when the MSD1 correction factor is within 5% of 1, i.e. the expansion's next term
    is small.  Where it is not (e.g. DP-SGD with about one expected sampled step per individual, so the
    tilted sum is far from Gaussian) the estimate may be far off; the certified bounds hold regardless.
    ``relative_error_bound`` (epsilon queries) is Theorem 5's Berry-Esseen error over the SP-CLT value at the
    upper bound's tilt (conservative).
    """
    out = {"order": order, "variant": variant, "C_BE": C_BE2 / 2,
           "note": "bounds: Theorem 5 of Alghamdi et al. (Berry-Esseen on the tilted sum)"}
    if res is not None:
        out.update({"saddle_point": res["t"], "reliable": _reliable(res), "msd1_correction": res["corr"]})
    if rel is not None:
        out["relative_error_bound"] = rel
    return out
