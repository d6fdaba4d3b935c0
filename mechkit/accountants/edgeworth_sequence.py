"""One PLLR sequence of the Edgeworth accountant (``edgeworth``; Wang et al., Lemma 3.3): the sums S_Y and S_X of a
composition's loss under the numerator measure and under the other, their Edgeworth expansions (survival functions
in the form phi(z) [Mills(z) + h(z)], so that the tails keep relative accuracy), the EEAI bounds with their Chernoff
caps (``chernoff``), and the cache of a composition's two sequences.  docs/architecture.md, "The Edgeworth
accountant".
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from ..errors import NumericalLimitError
from ..relations import DIRECTIONS
from . import edgeworth_compiled as _ec
from .chernoff import ChernoffLines

#: allowance for the quadrature error of the derived cumulants: relative on the uniform bound, absolute
#: on a probability, relative on a CGF value (the CGFs are accurate to about 1e-13)
BOUND_SLACK_REL, PROB_SLACK, CGF_SLACK = 1e-6, 1e-12, 1e-9
LOG_SQRT_2PI = _ec.LOG_SQRT_2PI
_CACHE_SIZE = 16


# --- the Edgeworth expansion (compiled: ``edgeworth_compiled``) ----------------------------------------------
def from_signed(logmag, sign):
    with np.errstate(over="ignore"):
        return sign * np.exp(logmag)


# --- one PLLR sequence -----------------------------------------------------------------------------------
class Side:
    """The sum over the composition of one loss under one measure: cumulants and uniform-bound inputs."""

    def __init__(self, parts):
        vecs = []
        m = 0
        for plrv, c in parts:
            vec, A = plrv.cumulants_abs3_unchecked(0.0, 5)
            v = np.asarray(vec, float)[1:]
            if not (np.all(np.isfinite(v)) and math.isfinite(A)):
                raise NumericalLimitError(
                    f"the privacy loss of {plrv.mechanism.name} has no finite moments of order <= 5 (heavy tails or "
                    "an infinite loss with positive probability): the Edgeworth accountant needs them; use "
                    "method='fft'")
            vecs.append((c, v, A))
            m += c
        self.m = m
        self.kappa = sum(c * v for c, v, _ in vecs)  # cumulants 1..5 of the sum
        s2 = float(self.kappa[1])
        if not s2 > 0:
            raise NumericalLimitError("the composed privacy loss (or its finite part) has zero variance: there is "
                                      "no Edgeworth expansion of a constant; use method='fft' or 'spa'")
        self.mean, self.sd = float(self.kappa[0]), math.sqrt(s2)
        self.g = {r: float(self.kappa[r - 1]) / s2 ** (r / 2.0) for r in (3, 4, 5)}
        self.params = np.array([self.mean, self.sd, self.g[3], self.g[4], self.g[5]])  # the compiled expansion's
        self._vecs = vecs
        self._delta = self.group = None

    def uniform_bound(self):
        """sup_x |F(x) - E_1(x)| <= this (Lemma 4.3 with the explicit remainder), with a quadrature allowance: for
        all the sides of its ``group`` at once (``edgeworth_bounds``; a composition's four sides, or this one)."""
        if self._delta is None:
            _uniform_bounds(self.group or [self])
        return self._delta

    def _bound_inputs(self):
        """(n, K3, K3_tilde, K4, lambda3) of the DGG bound, with the relative allowance on the upper bounds."""
        vecs, m = self._vecs, self.m
        bbar3 = (self.sd ** 2 / m) ** 1.5
        k3 = sum(c * A for c, _, A in vecs) / m / bbar3
        k4 = sum(c * (v[3] + 3.0 * v[1] ** 2) for c, v, _ in vecs) / m / bbar3 ** (4.0 / 3.0)
        # K3_tilde's E|L - EL| Var L terms with E|L - EL| <= sd (Jensen): upper bounds are accepted
        k3t = k3 + sum(c * v[1] ** 1.5 for c, v, _ in vecs) / m / bbar3
        lam3 = float(self.kappa[2]) / m / bbar3
        k4 = max(k4, 1.0)
        k3 = max(k3, abs(lam3))
        self.inputs = {"n": m, "K3": k3, "K3_tilde": k3t, "K4": k4, "lambda3": lam3}
        return m, k3 * (1 + BOUND_SLACK_REL), k3t * (1 + BOUND_SLACK_REL), k4 * (1 + BOUND_SLACK_REL), lam3


def _uniform_bounds(sides):
    """Each side's ``uniform_bound``, in one pass (``edgeworth_bounds``): the sides of one composition, whose sums
    have the same summands (iid where there is one distinct law)."""
    from .edgeworth_bound import edgeworth_bounds

    bounds = edgeworth_bounds([s._bound_inputs() for s in sides], iid=len(sides[0]._vecs) == 1)
    for s, b in zip(sides, bounds):
        s._delta = float(b) * (1.0 + BOUND_SLACK_REL) + PROB_SLACK


class Sequence:
    """One direction: S_Y (the loss under the numerator measure) and S_X (under the other), with the CGF
    of the numerator side for the Chernoff bounds."""

    def __init__(self, items, direction):
        self.direction = direction
        parts = [(m.plrv(direction), c) for m, c in items]
        # a loss infinite with positive probability (under either measure) has infinite cumulants: the finite parts
        # (sub-probabilities of masses m_Y, m_X) are expanded instead, normalised, and the composed mass at +inf A
        # added exactly: delta = A + m_Y P(S_Y > eps) - e^eps m_X P(S_X > eps) (log masses 0 and A = 0 otherwise)
        if any(p.finite_mass < 1.0 or p.dual.finite_mass < 1.0 for p, _ in parts):
            parts = [(p.finite_part(), c) for p, c in parts]
        self.log_mass = {"Y": sum(c * math.log(p.finite_mass) for p, c in parts),
                         "X": sum(c * math.log(p.dual.finite_mass) for p, c in parts)}
        self.inf_mass = -math.expm1(self.log_mass["Y"]) if self.log_mass["Y"] < 0.0 else 0.0
        self.parts = parts
        self.Y = Side(parts)
        self.X = Side([(p.dual, c) for p, c in parts])
        self.sup = sum(c * p.support[1] for p, c in parts)
        self._lines = None

    def K(self, tau):
        """K_Y(tau) of the sum (inf outside the domain), with a quadrature allowance added; at tau = 0 the log mass
        l_Y itself (no quadrature: the lines' tilt 1 of ``"X"`` asks for it)."""
        if tau == 0.0:
            tot = self.log_mass["Y"]
            return tot + CGF_SLACK * (1.0 + abs(tot))
        tot = 0.0
        for plrv, c in self.parts:
            v = plrv.cgf_unchecked(tau)
            if not math.isfinite(v):
                return math.inf
            tot += c * v
        return tot + CGF_SLACK * (1.0 + abs(tot))

    def lines(self):
        """The Chernoff bounds of this direction's sums (``chernoff.ChernoffLines``; made once, CGF values computed
        as the bounds ask for them)."""
        if self._lines is None:
            self._lines = ChernoffLines(self.K, self.log_mass, {"Y": (self.Y.mean, self.Y.sd ** 2),
                                                                "X": (self.X.mean, self.X.sd ** 2)})
        return self._lines

    def chernoff(self, name, x, covered=None):
        """min over the grid of tilts of the named Chernoff lines at each x (log of a bound; capped at 0):
        ``"Y"``, ``"X"``, ``"Ylow"``, ``"hs"``; +inf where ``covered`` lets a point go (``chernoff.ChernoffLines``)."""
        return self.lines().bound(name, np.asarray(x, float), covered)

    def aea(self, eps, order):
        """(log |delta|, sign) of the AEA of this sequence (``edgeworth_compiled.aea``)."""
        eps = np.asarray(eps, float)
        log_inf = math.log(self.inf_mass) if self.inf_mass > 0.0 else -math.inf
        ld, sd = _ec.aea(np.ascontiguousarray(eps).reshape(-1), self.Y.params, self.X.params, self.log_mass["Y"],
                         self.log_mass["X"], float(self.sup), log_inf, order)
        return ld.reshape(eps.shape), sd.reshape(eps.shape)

    def bounds(self, eps, lower=True, upper=True, target=None, x_cap=True):
        """EEAI lower and upper delta, with the Chernoff caps (notes.md 3.5, 3.6): (lo, up), None for the one not
        asked for.  Each cap is asked only where it can beat the EEAI value it is compared with
        (``ChernoffLines.bound``'s ``covered``; the same floats: a test with a relative margin of 1e-12 against
        ulp differences between math and NumPy).

        ``target``: a delta whose side alone is wanted (the epsilon query's grid): a cap is then also skipped where
        it cannot move a value across ``target``, and the upper curve is 0 past the tilted moment bound's ceiling
        (``_Margins``), so a value returned may differ from the curve's, either way, where both are on the same side
        of ``target`` by more than a margin.  ``x_cap=False``: S_X's Chernoff cap is not asked (the lower curve is
        then at most the one with it: the e^eps m_X P(S_X > eps) it subtracts is not capped)."""
        dy, dx = self.Y.uniform_bound(), self.X.uniform_bound()
        my, lmx = math.exp(self.log_mass["Y"]), self.log_mass["X"]
        a, sup = self.inf_mass, float(self.sup)  # the finite part's delta is >= 0 and at most its mass
        side = _Margins(target, a, my)
        t = math.nan if side.t is None else side.t
        flat = np.ascontiguousarray(eps, dtype=float).reshape(-1)
        # the EEAI values and, with a target, the thresholds below which a cap cannot move a value across it
        # (``edgeworth_compiled``: NumPy's arithmetic a point at a time; the caps in log space: e^eps times a
        # Chernoff bound that underflows, e^-8000, must not become 0)
        floor, log_gx, sub, cap, xt, thr_lo, thr_up = _ec.eeai_terms(flat, self.Y.params, self.X.params, dy, dx,
                                                                     lmx, t, my)
        lo = up = None
        if lower:
            sy_lo, th = _ec.lower_middle(floor, self.chernoff(
                "Ylow", flat, lambda c, r: -math.expm1(c) <= _lo(thr_lo[r])), log_gx, sub, flat, lmx, t, my)
            # where sy_lo is 0, lo = -e^(...) <= 0 whatever S_X's cap: it is asked only where sy_lo > 0
            cap_x, need = np.full(flat.shape, np.inf), np.nonzero(sy_lo > 0.0)[0]
            if x_cap and need.size:
                th = th[need]
                cap_x[need] = self.chernoff("X", flat[need], lambda c, r: c >= np.max(th[r]))
            lo = _ec.lower_end(sy_lo, cap_x, log_gx, flat, lmx, my, sup, a).reshape(eps.shape)
        if upper:
            # with a target, the points past the tilted moment bound's ceiling are below it (0 stands for them)
            k = side.undecided(flat, self.lines())
            e, thr = flat[k], thr_up[k]
            u, kept = _ec.upper_middle(cap[k], self.chernoff("Y", e, lambda c, r: math.exp(c) >= _hi(thr[r])),
                                       xt[k], t, my)
            test = (lambda c, r: my * math.exp(c) >= _hi(kept[r])) if my > 0.0 else None
            up = _ec.upper_end(u, self.chernoff("hs", e, test), flat, k, my, sup, a).reshape(eps.shape)
        return lo, up

    def eps_ceiling(self, delta):
        """An epsilon at which the tilted moment bound is <= delta (inf when the CGF is nowhere finite)."""
        rest = (delta - self.inf_mass) / math.exp(self.log_mass["Y"])  # the normalised finite part's share
        if not rest > 0.0:
            return math.inf
        return float(min(self.lines().ceiling(math.log(rest)), self.sup))


class _Margins:
    """Where only the side of a target delta matters (``Sequence.bounds``' ``target``): the values below which a
    Chernoff cap cannot move a curve's value across it, per point r.  With t = target - A (A the mass at +inf) and
    a margin m_r = 1e-9 t + 1e-14 (1 + s_r) (s_r the curve's subtracted term e^eps m_X P(S_X > eps), whose rounding
    it covers), a cap is skipped where:

    * ``"Y"`` (upper curve, m_Y P(S_Y > eps) - s <= m_Y cap - s): e^c >= (t + 2 m + s) / m_Y (the value, capped or
      not, stays >= t + 2 m);
    * ``"hs"`` (the upper curve's tilted moment bound, a min): m_Y e^c >= t + m (the min stays >= t + m);
    * ``"Ylow"`` (lower curve, m_Y max(floor, 1 - e^c) - s with s >= 0): 1 - e^c <= (t - m) / m_Y (the value,
      raised or not, stays <= t - m whatever S_X's cap);
    * ``"X"`` (lower curve, m_Y sy - e^(eps + l_X + min(log gx, c))): c >= log(m_Y sy - t + 2 m) - eps - l_X
      (stays <= t - m).

    and past the tilted moment bound's ceiling (``undecided``) the upper curve is below t whatever its caps.
    Without a target (or t <= 0: the mass at +inf alone reaches it) the thresholds are the EEAI values (the caps
    are then skipped only where they change nothing).  The thresholds are computed with the curves
    (``edgeworth_compiled.eeai_terms``, ``lower_middle``, ``upper_middle``); this holds t and m_Y."""

    def __init__(self, target, inf_mass, my):
        t = None if target is None else target - inf_mass
        self.t = t if t is not None and t > 0.0 else None
        self.my = my

    def undecided(self, eps, lines):
        """The indices of the points not known to be below the target: all of them, or (with a target) those up
        to a little past the tilted moment bound's ceiling (where its line at the ceiling's tilt, of slope >= 1e-3,
        has dropped 1e-7 below log(t / m_Y), so m_Y e^c < t - m whatever the other caps)."""
        if self.t is None or not self.my > 0.0:
            return np.arange(eps.size)
        c = lines.ceiling(math.log(self.t / self.my))
        return np.nonzero(~(eps > c + 1e-4 * (1.0 + abs(c))))[0]


def _hi(v):
    """The largest of v, moved up by a relative 1e-12 (a test that a Chernoff value beats none of v)."""
    m = float(np.max(v))
    return m + 1e-12 * abs(m)


def _lo(v):
    """The smallest of v, moved down by a relative 1e-12; nan unless it is positive (then nothing is covered)."""
    m = float(np.min(v))
    return m * (1.0 - 1e-12) if m > 0.0 else math.nan


_SEQUENCES = OrderedDict()


def sequences(items):
    """The two sequences of a composition (a small LRU cache: calibration loops query the same one)."""
    key = tuple((id(m), c) for m, c in items)
    hit = _SEQUENCES.get(key)
    if hit is not None and all(a is m for a, (m, _) in zip(hit[0], items)):
        _SEQUENCES.move_to_end(key)
        return hit[1]
    seqs = [Sequence(items, d) for d in DIRECTIONS]
    group = [side for s in seqs for side in (s.Y, s.X)]
    for side in group:
        side.group = group
    _SEQUENCES[key] = ([m for m, _ in items], seqs)
    while len(_SEQUENCES) > _CACHE_SIZE:
        _SEQUENCES.popitem(last=False)
    return seqs
