"""The SPA's search model of one direction of a composition: CGF derivatives memoised at tilts 2^(j/32) per
mechanism (nodes), a Taylor series from the nearest node, exact quadrature passes where needed.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import NumericalLimitError
from ...laws.plrv import composed_inf_mass
from ...relations import DIRECTIONS
from .formulas import LOG_2PI, T_MAX, T_MIN, ZeroDelta, evaluate, psi2, rounding_slack

H_NODE = math.log(2.0) / 32  # spacing in log t of the tilts where the search model is anchored


def _plrv_node(plrv, j):
    """[K, ..., K^(6)] of one mechanism's PLRV at t_j = 2^(j/32) (a list; None outside the domain), memoised on
    the PLRV so that every composition using the mechanism shares it.  Closed forms where the mechanism has them,
    else one quadrature pass (``tilt_stats``, centred by the Taylor model of a neighbouring node when there is one,
    else about the tilted law's mode), which also gives the node's tilted absolute third moment."""
    memo = plrv.memo("spa_nodes")
    got = memo.get(j)
    if got is None:
        t = math.exp(j * H_NODE)
        if plrv.has_closed_cgf:
            v = plrv.cgf_vector(t, 6)
            got = [v.tolist() if np.all(np.isfinite(v)) else None, None, None]
        else:
            i = next((i for i in (j - 1, j + 1) if i in memo and memo[i][0] is not None), None)
            v = A = A_any = None
            if i is not None:
                centre = _taylor(memo[i][0], t - math.exp(i * H_NODE), 1)[1]
                if math.isfinite(centre):
                    v, A = stats_about(plrv, t, centre, 6)
            else:  # the first node: about the tilted law's mode (the pass's own peak scan), re-centred where far off
                v, A, centre = plrv.tilt_stats_about_mode(t, 6)
                if all(map(math.isfinite, v.tolist())):
                    if not _well_centred(v, centre):
                        v, A = plrv.tilt_stats_unchecked(t, float(v[1]), 6)
                    elif math.isfinite(A):
                        # the moments are accurate, but the absolute moment about a centre this far off bounds the
                        # one about the mean loosely (and would make the bounds' tilts depend on which node came
                        # first): computed about the mean when needed (plrv_abs3); kept apart as a valid, looser
                        # bound for the other direction's certificate (below_at_guess)
                        A, A_any = None, A
            got = [None, None, None]
            if v is not None and (A is None or math.isfinite(A)):
                if not isinstance(v, list):
                    v = v.tolist()
                if all(map(math.isfinite, v)):
                    got = [v, A, A if A is not None else A_any]
        memo[j] = got
    return got[0]


#: two directions give the same estimate at a tilt (``_Direction.mirrors``) where their estimates' log delta there
#: agree to this (the estimate's polish accepts 1e-9) and their epsilons to MIRROR_EPS relative; a Gaussian's
#: directions, quadratures of two mirrored integrands, agree to 1e-14 in log delta (K''' and K'''' of the sum, near
#: 0, only to ~1e-11 absolute: not compared themselves)
MIRROR_LOG_DELTA = 1e-10
MIRROR_EPS = 1e-12


#: ``_Direction.effective_runs``: a mechanism's tilted loss counts as Gaussian where its standardised third and
#: fourth cumulants are within this of 0 (closed forms give 0; quadratures ~1e-13)
GAUSSIAN_REL = 1e-9


#: a node's quadrature is repeated about the tilted mean when its centre was further than this many standard
#: deviations from it (the central moments come from moments about the centre by the binomial shift)
RECENTRE = 3.0


def _well_centred(v, centre):
    """True where a tilted-moment pass about ``centre`` gave a positive K'' and a tilted mean within RECENTRE
    standard deviations of the centre (further off, the central moments' binomial shift from moments about the
    centre cancels)."""
    k2 = v[2]
    return k2 > 0.0 and math.isfinite(k2) and abs(v[1] - centre) <= RECENTRE * math.sqrt(k2)


def stats_about(plrv, t, centre, n):
    """``tilt_stats_unchecked(t, centre, n)`` (as a list, A), repeated about the pass's own tilted mean where the
    centre was far from it, and about the tilted law's mode (then its mean) where that fails too.  A centre from
    the Taylor model can be far off where the tilted law changes shape within a node spacing (subsampled Gaussian
    sigma 3.73, q 0.001 between t = 185 and 200: the mass moves from the unsampled to the sampled steps; a centre of
    3.7e9 gave K'' = -2048 against 1e-3), or where the tilt is large, the node spacing with it, and the Taylor
    series' higher terms are quadrature noise (q 1.6e-4 at t = 1e4: 40 standard deviations off, where the pass took
    the MGF for divergent).  Divergence is the mode-centred pass's verdict."""
    v, A = plrv.tilt_stats_unchecked(t, centre, n)
    if _well_centred(v, centre):
        return v, A
    if math.isfinite(v[1]):
        v2, A2 = plrv.tilt_stats_unchecked(t, float(v[1]), n)
        if _well_centred(v2, float(v[1])):
            return v2, A2
    v3, A3, c3 = plrv.tilt_stats_about_mode(t, n)
    v3 = v3.tolist()
    if not _well_centred(v3, c3) and math.isfinite(v3[1]):
        return plrv.tilt_stats_unchecked(t, float(v3[1]), n)
    return v3, float(A3)


def _moments_at_zero(plrv):
    """[K'(0), K''(0)] of one mechanism's PLRV (memoised on it): closed forms where it has them, else one
    tilt_stats pass about 0, re-centred on the mean where that was far from 0 next to the spread."""
    got = plrv.memo("spa").get("m0")
    if got is None:
        if plrv.has_closed_cgf:
            v = plrv.cgf_vector(0.0, 2)
        else:
            v = plrv.tilt_stats_unchecked(0.0, 0.0, 2)[0]
            if math.isfinite(v[1]) and not v[1] * v[1] <= 1e4 * abs(v[2]):
                v = plrv.tilt_stats_unchecked(0.0, float(v[1]), 2)[0]
        got = plrv.memo("spa")["m0"] = [float(v[1]), float(v[2])]
    return got


def plrv_abs3(plrv, j):
    """The tilted absolute third moment of one mechanism at the node t_j (memoised with the node)."""
    v = _plrv_node(plrv, j)
    if v is None:
        return math.inf  # outside the model's domain: no value (``abs3_model`` only locates tilts with it)
    got = plrv.memo("spa_nodes")[j]
    if got[1] is None:
        got[1] = plrv.tilt_stats_unchecked(math.exp(j * H_NODE), v[1], 2)[1]
        if got[2] is None:
            got[2] = got[1]
    return got[1]


_DIRECTIONS = {}


DIRECTION_CACHE = 32
#: ``_Direction.lattice``: the tilted weight of one mechanism's runs all on point masses at which the expansions'
#: smooth-density assumption is given up (``accountant.in_regime``)
LATTICE_WEIGHT = 1e-6


def directions(items):
    """The two _Direction objects of a composition, kept across queries (their nodes, domain and saddle point
    at epsilon = 0 are reused); a bounded cache holding the mechanisms themselves (no reuse of ids)."""
    key = tuple((m, c) for m, c in items)
    got = _DIRECTIONS.get(key)
    if got is None:
        got = [_Direction(items, d) for d in DIRECTIONS]
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
        # a loss with a point mass at +inf has an infinite CGF for t > 0: its finite part (a sub-probability) is
        # composed instead, and the composed mass at +inf, 1 - prod_i (1 - a_i)^k_i, is added to delta exactly
        # (accountant.py); the SPA's formulas and bounds are homogeneous in the measure
        self.parts = [(m.plrv(direction), c) for m, c in items]
        self.parts = [(plrv.finite_part() if plrv.inf_mass > 0 else plrv, c) for plrv, c in self.parts]
        self.inf_mass = composed_inf_mass(items, direction)
        self.counts = np.array([float(c) for _, c in self.parts])
        self.n_total = float(self.counts.sum())  # number of mechanisms: the bounds' rounding allowance
        self._nodes = {}
        # the MGF's domain of finiteness is an interval containing 0: a finite node j proves every node in
        # [0, j] finite, an infinite one every node above it infinite
        self._fin_hi, self._inf_lo = -math.inf, math.inf
        self._start = None
        self._sup = None
        self._top = False  # not yet computed (None: no point mass at the largest loss)
        self.t_zero = None
        self._m0 = None
        self.roots = {}  # estimate key -> {log delta: log of its model root} (earlier queries: the searches' starts)

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

    def node_at(self, t):
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
        ``node_at`` where the caller has it."""
        if w is False:
            w = self.node_at(t)
        if w is None:
            return [math.inf] * 5
        v = _taylor(self._nodes[w[0]][1], w[1])
        if not v[2] > 0.0:  # the series does not converge this far from the node (K'' > 0 always): exact values
            v = self.exact(t)[0]
        return v

    def effective_runs(self, t):
        """(sum_i k_i V_i)^2 / sum_i k_i V_i^2 over the mechanisms whose t-tilted loss is not Gaussian (V_i: one
        run's tilted variance K_i''(t); a Gaussian loss is a sum of any number of Gaussians and counts in the
        numerator only): how many comparable non-Gaussian summands the tilted sum has, from the model (inf where
        it is Gaussian, or outside the domain)."""
        w = self.node_at(t)
        if w is None:
            return math.inf
        total = spread = 0.0
        for v, c in zip(self._nodes[w[0]][0], self.counts):
            k = _taylor(v, w[1])
            if not k[2] > 0.0:  # the series does not reach t (K'' > 0 always): the node's own values
                k = v
            if not k[2] > 0.0:
                continue
            total += c * k[2]
            if not (abs(k[3]) <= GAUSSIAN_REL * k[2] ** 1.5 and abs(k[4]) <= GAUSSIAN_REL * k[2] ** 2):
                spread += c * k[2] ** 2
        return total * total / spread if spread > 0.0 else math.inf

    def higher(self, t):
        """[K^(5), K^(6)] of the composition at t from the model (the regime's next term: ``formulas.second_term``);
        None outside the domain."""
        w = self.node_at(t)
        if w is None:
            return None
        v = self._nodes[w[0]][1]
        return [v[5] + w[1] * v[6], v[6]]

    def centres(self, t, w=False):
        """K_i'(t) of each mechanism from the model (the centres of the exact quadrature passes)."""
        j, d = self.node_at(t) if w is False else w
        per = self.node(j)[0]
        return [float(_taylor(per[i], d, 1)[1]) for i in range(len(self.parts))]

    def exact(self, t, centres=None, w=False, n=4):
        """([K..K^(n)] of the composition by quadrature at t (n = 4: K''''), sum_i k_i E|L_i,t - K_i'(t)|^3 bounded
        above), the quadratures centred on the model's K_i'(t), or on ``centres`` (then A may bound loosely where
        they are far from the K_i'(t), and the model is not consulted)."""
        vec = [0.0] * (n + 1)
        A = 0.0
        for (plrv, c), ctr in zip(self.parts, self.centres(t, w) if centres is None else centres):
            v, a = stats_about(plrv, t, ctr, n)
            vec = [x + c * y for x, y in zip(vec, v)]
            A += c * a
        return vec, A

    def mirrors(self, other, t, fn):
        """True where ``other``'s estimate found at t is this direction's too: the estimate's log delta ``fn`` from
        this direction's exact values at t (the quadratures centred on ``other``'s K_i'(t)) is within MIRROR_LOG_DELTA
        of ``other``'s, or within the composed CGF's rounding allowance (``rounding_slack``, ~7e-9 at a million
        runs) where that is larger, and epsilon there within MIRROR_EPS relative (a symmetric pair, such as a
        Gaussian's: the two composed laws agree).  The certified bounds are checked for each direction regardless."""
        if len(self.parts) != len(other.parts):
            return False
        vec, ref = self.exact(t, other.centres(t))[0], other.exact(t)[0]
        if not all(map(math.isfinite, vec)) or not vec[2] > 0.0:
            return False  # e.g. t outside this direction's domain of finiteness
        mine, theirs = evaluate(t, vec, self.eps_of(t, vec)), evaluate(t, ref, other.eps_of(t, ref))
        tol = max(MIRROR_LOG_DELTA, rounding_slack(t, ref, self.n_total))
        return (abs(fn(mine) - fn(theirs)) <= tol
                and abs(mine["eps"] - theirs["eps"]) <= MIRROR_EPS * (1.0 + abs(theirs["eps"])))

    def node_abs3(self, j):
        """sum_i k_i E|L_i - K_i'|^3 at the node t_j (exact there, memoised with the node)."""
        key = ("A", j)
        got = self._nodes.get(key)
        if got is None:
            got = self._nodes[key] = sum(c * plrv_abs3(plrv, j) for plrv, c in self.parts)
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

    def gaussian_tilt(self, eps, moments=None):
        """log of the saddle point of eps under a Gaussian model of K (K'(0), K''(0)); None where the moments at 0
        do not give one.  ``moments``: (K'(0), K''(0)) where the caller has them (no quadrature here then)."""
        m1, var = self._moments0() if moments is None else moments
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

    def _guess(self, eps, moments=None):
        """A first tilt for the saddle point of eps: where a Gaussian model of K (K'(0), K''(0); ``moments`` where
        the caller has them) puts it, if that is inside the domain, else the start tilt."""
        u = self.gaussian_tilt(eps, moments)
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
            p2 = psi2(t, var)
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
                if not plrv.has_atoms:  # no point masses at all (most continuous mechanisms)
                    top = None
                    break
                vals, probs = plrv.atoms()
                if not (math.isfinite(top) and vals.size and vals[-1] == plrv.support[1] and probs[-1] > 0):
                    top = None
                    break
                logp += c * math.log(probs[-1])
            self._top = None if top is None else (top, logp)
        return self._top

    def lattice(self, t):
        """True where a mechanism's runs alone make the t-tilted composed loss lumpy: the tilted probability that all
        its k runs land on point masses of its loss, (sum_j p_j e^(t l_j - K(t)))^k, is at least LATTICE_WEIGHT
        (randomized response: always; Laplace scale 35 x 50: 0.5), unless the mechanisms without point masses smooth
        it: their tilted variance V and the lattice's spacing h (the smallest gap between its point masses) have
        e^(-2 pi^2 V / h^2), the Gaussian smoothing's factor on the lattice's periodic term, below LATTICE_WEIGHT
        too.  The expansions assume a smooth density."""
        smooth = None  # V, computed at the first lattice found
        for plrv, c in self.parts:
            if not plrv.has_atoms:
                continue
            vals, probs = plrv.atoms()
            fin = np.isfinite(vals) & (probs > 0)
            if not fin.any():
                continue
            lw = np.logaddexp.reduce(np.log(probs[fin]) + t * vals[fin]) - plrv.cgf(t)
            if c * min(float(lw), 0.0) < math.log(LATTICE_WEIGHT):
                continue
            if smooth is None:
                smooth = sum(k * plrv2.cgf(t, order=2) for plrv2, k in self.parts if not plrv2.has_atoms)
            gaps = np.diff(vals[fin])
            if gaps.size == 0 or -2.0 * math.pi ** 2 * smooth / float(gaps.min()) ** 2 > math.log(LATTICE_WEIGHT):
                return True
        return False

    def finite(self, t):
        return self.node_at(t) is not None

    def finite_to(self, t):
        """Learn that the composition's CGF is finite at the tilt t > 0 (another quadrature of it, e.g. the Edgeworth
        accountant's Chernoff lines): every node at or below t is in the domain, so ``node_at`` asks no node above
        t's nearest to prove it (the nodes' own quadratures still decide where they fail)."""
        if t > 0.0 and math.isfinite(t):
            self._fin_hi = max(self._fin_hi, math.floor(math.log(t) / H_NODE))

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

    def saddle(self, eps, t0=None, moments=None):
        """t0 with K'(t0) = eps + 1/t0 + 1/(1+t0), by bracketed bisection in log t polished by Newton steps
        (from the tilt ``t0`` where given and finite, e.g. a nearby saddle point, else the Gaussian-model guess, from
        ``moments`` (K'(0), K''(0)) where the caller has them)."""
        lo, hi = None, None
        t = t0 if t0 is not None and T_MIN < t0 < 0.5 * T_MAX and self.finite(t0) else self._guess(eps, moments)
        vec = self.vector(t)
        if self.eps_of(t, vec) < eps:
            lo = t
            while True:
                t2 = self.up(t, self._bracket_factor(t, vec, eps, 2.0))
                if t2 is None and eps >= self.sup():
                    raise ZeroDelta()
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
            nt = t - f / psi2(t, vec[2])
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
        d = psi2(t, vec[2])
        r = 1.0 - 1.05 * f / (d * t) if d > 0 and math.isfinite(f) else cap
        if not math.isfinite(r):
            return cap
        return min(max(r, 1.001), cap) if cap > 1 else max(min(r, 0.999), cap)

    # -- delta at a tilt ------------------------------------------------------------------------------------
    def at(self, t, eps=None, want_bounds=True, w=False):
        """Everything at tilt t for epsilon eps (default: the epsilon whose saddle point is t): the approximations
        from the model, or, with ``want_bounds``, everything from the exact values (certified bounds).  ``w``: t's
        ``node_at`` where the caller has it."""
        if want_bounds:
            vec, A = self.exact(t, w=w)
        else:
            vec, A = self.vector(t, w), None
        if eps is None:
            eps = self.eps_of(t, vec)
        out = evaluate(t, vec, eps, A, self.n_total)
        out["vec"] = vec
        return out
