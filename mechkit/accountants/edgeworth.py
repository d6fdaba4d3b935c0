"""The Edgeworth accountant (Wang, Gao, Zhang, Shen, Su; notes.md section 3), from the derived cumulants.

One direction of mechkit (remove or add) is one PLLR sequence of Lemma 3.3.  For each mechanism the loss L
is taken under the numerator measure (``Y``: mechkit's PLRV) and under the other one (``X``: its dual), and
the composition's sums S_Y, S_X have cumulants sum_i k_i kappa_r (counts multiply, so a query costs
O(number of distinct mechanisms), flat in k).  Proposition 3.2:

    delta(eps) = P(S_Y > eps) - e^eps P(S_X > eps),

and the reported delta is the max over the two directions (Lemma 3.3).

* **AEA** (Def. 4.1), ``order`` 0 (CLT) to 3: each survival function replaced by its Edgeworth expansion
  (notes.md 3.4), evaluated as phi(z) [R(z) + h(z)] (R the Mills ratio) so the tails keep their digits.
* **EEAI** (Def. 4.2): the order-1 expansion plus/minus the explicit uniform bound of Derumigny, Girard and
  Guyonvarch (Lemma 4.3; ``edgeworth_bound``), returned as ``lower``/``upper``.  A uniform error is useless
  once it is multiplied by e^eps, so each survival bound is also capped by a Chernoff bound from the derived
  CGF (P(S >= x) <= exp(K(t) - t x) for every t > 0), and delta itself by the tilted moment bound
  delta <= exp(K(t) - t eps) t^t / (1+t)^(1+t).  These are the exponentially decaying tail bounds of
  Theorem 1 (subsampled Gaussian) and Proposition 4.5 (subsampled Laplace), for every mechanism: those
  bound the same moment generating function from above (sub-Gaussian / Hoeffding), so the exact CGF is at
  least as tight (tested against both).  The Chernoff bounds are minima over a fixed grid of tilts (a
  valid bound at every eps, within a few percent of the optimum).
* **Tilted** (``variant="tilted"``; the SPA paper's section 3.3.2): the Edgeworth expansion of the
  exponentially tilted sum at the saddle point, integrated against the hockey-stick kernel; order 0 is the
  SPA's SP-CLT.  Its bounds are the SPA's certified ones (Berry-Esseen on the tilted sum).

Epsilon(delta) is read off the same curves: the estimate is the largest root of AEA(eps) = delta, the upper
bound a point where the upper curve is <= delta, the lower bound a point below which the lower curve is
> delta (both checked pointwise, so they stay valid even where the curves are not monotone).
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
from scipy import optimize
from scipy.special import erfcx, ndtr

from ..errors import NumericalLimitError, ParameterError, check_finite_real
from ..estimate import Estimate, EstimateArray, clamp_into
from ..relations import DIRECTIONS
from . import spa
from .chernoff import ChernoffLines

ORDERS = (0, 1, 2, 3)
VARIANTS = ("plain", "tilted")
#: allowance for the quadrature error of the derived cumulants: relative on the uniform bound, absolute
#: on a probability, relative on a CGF value (the CGFs are accurate to about 1e-13)
BOUND_SLACK_REL, PROB_SLACK, CGF_SLACK = 1e-6, 1e-12, 1e-9
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_CACHE_SIZE = 16
#: the estimate is flagged reliable when the next-lower order's delta differs by at most this (relative)
RELIABLE = 0.05


# --- the Edgeworth expansion ---------------------------------------------------------------------------
def _hermite(z, n):
    """[He_0(z), ..., He_n(z)] (probabilists' Hermite polynomials)."""
    he = [np.ones_like(z), z]
    for k in range(1, n):
        he.append(z * he[k] - k * he[k - 1])
    return he


def _cdf_correction(z, g3, g4, g5, order):
    """h with E_order(z) = Phi(z) - phi(z) h(z) (notes.md 3.4; g_r the standardised cumulants of the sum)."""
    h = np.zeros_like(z)
    if order == 0:
        return h
    he = _hermite(z, (2, 5, 8)[order - 1])  # the polynomials this order uses
    h = h + g3 / 6.0 * he[2]
    if order >= 2:
        h = h + g4 / 24.0 * he[3] + g3 * g3 / 72.0 * he[5]
    if order >= 3:
        h = h + g5 / 120.0 * he[4] + g3 * g4 / 144.0 * he[6] + g3 ** 3 / 1296.0 * he[8]
    return h


def _density_coefficients(k, order):
    """{j: c_j} with f(x) = phi(x) (1 + sum_j c_j He_j(x)): the Edgeworth density of standardised cumulants k."""
    c = {}
    if order >= 1:
        c[3] = k[3] / 6.0
    if order >= 2:
        c[4] = k[4] / 24.0
        c[6] = k[3] ** 2 / 72.0
    if order >= 3:
        c[5] = k[5] / 120.0
        c[7] = k[3] * k[4] / 144.0
        c[9] = k[3] ** 3 / 1296.0
    return c


def _signed_log_sf(z, h):
    """(log |sf|, sign) of the expansion's survival function Q(z) + phi(z) h(z).

    Above the mean it is phi(z) [R(z) + h(z)], R(z) = sqrt(pi/2) erfcx(z/sqrt 2) the Mills ratio, so the
    tail keeps its relative accuracy; below it, Q(z) >= 1/2 is summed directly.
    """
    z = np.asarray(z, float)
    if z.shape == (1,):
        return _signed_log_sf_point(z[0], h[0])
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        upper = z > 0
        inner = np.where(upper, math.sqrt(math.pi / 2.0) * erfcx(np.where(upper, z, 0.0) / math.sqrt(2.0)) + h, 0.0)
        direct = np.where(upper, 0.0, ndtr(-z) + np.exp(-0.5 * z * z - LOG_SQRT_2PI) * h)
        val = np.where(upper, inner, direct)
        logmag = np.where(upper, -0.5 * z * z - LOG_SQRT_2PI + np.log(np.abs(inner)), np.log(np.abs(direct)))
    return logmag, np.sign(val)


def _signed_log_sf_point(z, h):
    """``_signed_log_sf`` at one point (the epsilon query's root searches): only the branch it needs, NumPy's
    ufuncs on float64 scalars (the same floats as on arrays; math's exp and log differ in the last bit)."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        if z > 0:
            val = math.sqrt(math.pi / 2.0) * erfcx(z / math.sqrt(2.0)) + h
            logmag = -0.5 * z * z - LOG_SQRT_2PI + np.log(np.abs(val))
        else:
            val = ndtr(-z) + np.exp(-0.5 * z * z - LOG_SQRT_2PI) * h
            logmag = np.log(np.abs(val))
    return np.array([logmag]), np.array([np.sign(val)])


def _signed_diff(la, sa, lb, sb):
    """(log |d|, sign) of d = sa e^la - sb e^lb."""
    m = np.maximum(la, lb)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        d = sa * np.exp(la - safe) - sb * np.exp(lb - safe)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(m), safe + np.log(np.abs(d)), -np.inf), np.sign(d)


def _from_signed(logmag, sign):
    with np.errstate(over="ignore"):
        return sign * np.exp(logmag)


# --- one PLLR sequence -----------------------------------------------------------------------------------
class _Side:
    """The sum over the composition of one loss under one measure: cumulants and uniform-bound inputs."""

    def __init__(self, parts):
        vecs = []
        m = 0
        for plrv, c in parts:
            v = np.asarray(plrv.cgf_vector(0.0, 5), float)[1:]
            if not np.all(np.isfinite(v)):
                raise NumericalLimitError(
                    f"the privacy loss of {plrv.mechanism.name} has no finite moments of order <= 5 (heavy tails or "
                    "an infinite loss with positive probability): the Edgeworth accountant needs them; use "
                    "method='fft'")
            vecs.append((plrv, c, v))
            m += c
        self.m = m
        self.kappa = sum(c * v for _, c, v in vecs)  # cumulants 1..5 of the sum
        s2 = float(self.kappa[1])
        if not s2 > 0:
            raise NumericalLimitError("the composed privacy loss (or its finite part) has zero variance: there is "
                                      "no Edgeworth expansion of a constant; use method='fft' or 'spa'")
        self.mean, self.sd = float(self.kappa[0]), math.sqrt(s2)
        self.g = {r: float(self.kappa[r - 1]) / s2 ** (r / 2.0) for r in (3, 4, 5)}
        self._vecs = vecs
        self._delta = None

    def uniform_bound(self):
        """sup_x |F(x) - E_1(x)| <= this (Lemma 4.3 with the explicit remainder), with a quadrature allowance."""
        if self._delta is None:
            from .edgeworth_bound import edgeworth_bound

            vecs, m = self._vecs, self.m
            bbar3 = (self.sd ** 2 / m) ** 1.5
            k3 = sum(c * plrv.tilted_abs3(0.0) for plrv, c, _ in vecs) / m / bbar3
            k4 = sum(c * (v[3] + 3.0 * v[1] ** 2) for _, c, v in vecs) / m / bbar3 ** (4.0 / 3.0)
            k3t = k3 + sum(c * plrv.tilted_abs3(0.0, power=1) * v[1] for plrv, c, v in vecs) / m / bbar3
            lam3 = float(self.kappa[2]) / m / bbar3
            k4 = max(k4, 1.0)
            k3 = max(k3, abs(lam3))
            b = edgeworth_bound(m, k3 * (1 + BOUND_SLACK_REL), k3t * (1 + BOUND_SLACK_REL), k4 * (1 + BOUND_SLACK_REL),
                                lam3, iid=len(vecs) == 1)
            self._delta = b * (1.0 + BOUND_SLACK_REL) + PROB_SLACK
            self.inputs = {"n": m, "K3": k3, "K3_tilde": k3t, "K4": k4, "lambda3": lam3}
        return self._delta

    def signed_log_sf(self, x, order):
        z = (np.asarray(x, float) - self.mean) / self.sd
        return _signed_log_sf(z, _cdf_correction(z, self.g[3], self.g[4], self.g[5], order))


class _Sequence:
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
        self.Y = _Side(parts)
        self.X = _Side([(p.dual, c) for p, c in parts])
        self.sup = sum(c * p.support[1] for p, c in parts)
        self._lines = None

    def K(self, tau):
        """K_Y(tau) of the sum (inf outside the domain), with a quadrature allowance added."""
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
        """(log |delta|, sign) of the AEA of this sequence."""
        ly, sy = self.Y.signed_log_sf(eps, order)
        lx, sx = self.X.signed_log_sf(eps, order)
        ld, sd = _signed_diff(ly + self.log_mass["Y"], sy, lx + self.log_mass["X"] + eps, sx)
        beyond = eps >= self.sup
        ld, sd = np.where(beyond, -np.inf, ld), np.where(beyond, 0.0, sd)
        if self.inf_mass > 0.0:
            with np.errstate(divide="ignore"):
                ld, sd = _signed_diff(np.full(ld.shape, math.log(self.inf_mass)), 1.0, ld, -sd)
        return ld, sd

    def bounds(self, eps, lower=True, upper=True, target=None):
        """EEAI lower and upper delta, with the Chernoff caps (notes.md 3.5, 3.6): (lo, up), None for the one not
        asked for.  Each cap is asked only where it can beat the EEAI value it is compared with
        (``ChernoffLines.bound``'s ``covered``; the same floats: a test with a relative margin of 1e-12 against
        ulp differences between math and NumPy).

        ``target``: a delta whose side alone is wanted (the epsilon query's grid): a cap is then also skipped where
        it cannot move a value across ``target`` (``_Margins``), so the values returned may be above the upper
        curve's (below the lower's) where both are on the same side of ``target``, by more than a margin."""
        dy, dx = self.Y.uniform_bound(), self.X.uniform_bound()
        gy = _from_signed(*self.Y.signed_log_sf(eps, 1))
        gx = _from_signed(*self.X.signed_log_sf(eps, 1))
        my, lmx = math.exp(self.log_mass["Y"]), self.log_mass["X"]
        beyond = eps >= self.sup
        a = self.inf_mass  # the finite part's delta is >= 0 and at most its mass
        lo = up = None
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            # in log space: e^eps times a Chernoff bound that underflows (e^-8000) must not become 0
            if lower:
                floor = np.maximum(np.zeros_like(eps), gy - dy)
                log_gx = np.log(gx + dx)
                side = _Margins(target, a, my, np.exp(eps + lmx + log_gx))
                sy_lo = np.maximum(floor, -np.expm1(self.chernoff(
                    "Ylow", eps, lambda c, r: -math.expm1(c) <= _lo(side.lower_y(floor, r)))))
                # where sy_lo is 0, lo = -e^(...) <= 0 whatever S_X's cap: it is asked only where sy_lo > 0
                cap_x, need = np.full(eps.shape, np.inf), sy_lo > 0.0
                if need.any():
                    th = side.lower_x(log_gx, sy_lo, eps + lmx)[need]
                    cap_x[need] = self.chernoff("X", eps[need], lambda c, r: c >= np.max(th[r]))
                log_sx_up = np.minimum(log_gx, cap_x)
                lo = my * sy_lo - np.exp(eps + lmx + log_sx_up)
                lo = np.where(beyond, 0.0, np.maximum(lo, 0.0))
                lo = lo if a == 0.0 else a + lo
            if upper:
                cap = np.minimum(np.ones_like(eps), gy + dy)
                xt = np.exp(eps + lmx + np.log(np.maximum(gx - dx, 0.0)))
                # with a target, the points past the tilted moment bound's ceiling are below it (0 stands for them)
                k = _Margins(target, a, my, xt).undecided(eps, self.lines())
                side = _Margins(target, a, my, xt[k])
                e, cap, xt = eps[k], cap[k], xt[k]
                sy_up = np.minimum(cap, np.exp(self.chernoff(
                    "Y", e, lambda c, r: math.exp(c) >= _hi(side.upper_y(cap, r)))))
                u = my * sy_up - xt
                kept = side.upper_hs(u)
                test = (lambda c, r: my * math.exp(c) >= _hi(kept[r])) if my > 0.0 else None
                up = np.zeros(eps.shape)
                up[k] = np.minimum(np.minimum(u, my * np.exp(self.chernoff("hs", e, test))), 1.0)
                up = np.where(beyond, 0.0, np.maximum(up, 0.0))
                up = up if a == 0.0 else np.minimum(a + up, 1.0)
        return lo, up

    def eps_ceiling(self, delta):
        """An epsilon at which the tilted moment bound is <= delta (inf when the CGF is nowhere finite)."""
        rest = (delta - self.inf_mass) / math.exp(self.log_mass["Y"])  # the normalised finite part's share
        if not rest > 0.0:
            return math.inf
        return float(min(self.lines().ceiling(math.log(rest)), self.sup))


class _Margins:
    """Where only the side of a target delta matters (``_Sequence.bounds``' ``target``): the values below which a
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
    are then skipped only where they change nothing)."""

    def __init__(self, target, inf_mass, my, subtracted):
        t = None if target is None else target - inf_mass
        self.t = t if t is not None and t > 0.0 else None
        self.my = my
        if self.t is not None:
            self.m = 1e-9 * self.t + 1e-14 * (1.0 + subtracted)
            self.s = subtracted

    def undecided(self, eps, lines):
        """The indices of the points not known to be below the target: all of them, or (with a target) those up
        to a little past the tilted moment bound's ceiling (where its line at the ceiling's tilt, of slope >= 1e-3,
        has dropped 1e-7 below log(t / m_Y), so m_Y e^c < t - m whatever the other caps)."""
        if self.t is None or not self.my > 0.0:
            return np.arange(eps.size)
        c = lines.ceiling(math.log(self.t / self.my))
        return np.nonzero(~(eps > c + 1e-4 * (1.0 + abs(c))))[0]

    def upper_y(self, cap, r):
        if self.t is None:
            return cap[r]
        return np.minimum(cap[r], (self.t + 2.0 * self.m[r] + self.s[r]) / self.my)

    def upper_hs(self, up):
        return up if self.t is None else np.minimum(up, self.t + self.m)

    def lower_y(self, floor, r):
        if self.t is None:
            return floor[r]
        return np.maximum(floor[r], (self.t - self.m[r]) / self.my)

    def lower_x(self, log_gx, sy, shift):
        if self.t is None:
            return log_gx
        with np.errstate(divide="ignore"):  # -inf where the lower curve is below t - m whatever the cap
            return np.minimum(log_gx, np.log(np.maximum(self.my * sy - self.t + 2.0 * self.m, 0.0)) - shift)


def _hi(v):
    """The largest of v, moved up by a relative 1e-12 (a test that a Chernoff value beats none of v)."""
    m = float(np.max(v))
    return m + 1e-12 * abs(m)


def _lo(v):
    """The smallest of v, moved down by a relative 1e-12; nan unless it is positive (then nothing is covered)."""
    m = float(np.min(v))
    return m * (1.0 - 1e-12) if m > 0.0 else math.nan


_SEQUENCES = OrderedDict()


def _sequences(items):
    """The two sequences of a composition (a small LRU cache: calibration loops query the same one)."""
    key = tuple((id(m), c) for m, c in items)
    hit = _SEQUENCES.get(key)
    if hit is not None and all(a is m for a, (m, _) in zip(hit[0], items)):
        _SEQUENCES.move_to_end(key)
        return hit[1]
    seqs = [_Sequence(items, d) for d in DIRECTIONS]
    _SEQUENCES[key] = ([m for m, _ in items], seqs)
    while len(_SEQUENCES) > _CACHE_SIZE:
        _SEQUENCES.popitem(last=False)
    return seqs


# --- plain (untilted) answers ------------------------------------------------------------------------------
def _estimate(seqs, eps, order):
    """The AEA delta at each eps, max over the sequences (may be negative where the expansion is)."""
    est = np.full(eps.shape, -np.inf)
    for s in seqs:
        est = np.maximum(est, _from_signed(*s.aea(eps, order)))
    return est


def _bound_curves(seqs, eps, lower=True, upper=True, target=None):
    """(lower, upper) delta curves at each eps, max over the sequences; None for the one not asked for.  With a
    ``target`` delta the values are exact only on their side of it (``_Sequence.bounds``)."""
    lo = np.zeros(eps.shape) if lower else None
    up = np.zeros(eps.shape) if upper else None
    for s in seqs:
        l_, u_ = s.bounds(eps, lower, upper, target)
        lo = None if l_ is None else np.maximum(lo, l_)
        up = None if u_ is None else np.maximum(up, u_)
    return lo, up


def _curves(seqs, eps, order):
    """(estimate, lower, upper) of delta at each eps, max over the sequences."""
    return (_estimate(seqs, eps, order), *_bound_curves(seqs, eps))


def _neighbour(order):
    """The order the estimate is compared with to judge whether the expansion is in its regime."""
    return order - 1 if order > 0 else 1


def _reliable(a, b):
    """True when two consecutive orders agree to RELIABLE (relative, in delta)."""
    return bool(a > 0 and b > 0 and abs(a - b) <= RELIABLE * max(a, b))


def _quality(lo, up, value):
    if lo <= 0.0 and up >= 1.0:
        return "vacuous"
    if lo <= 0.0:
        return "upper only"
    return "two-sided" if up <= 10.0 * max(value, lo) else "wide"


def _plain_details(seqs, order):
    return {"order": order, "variant": "plain",
            "uniform_bound": {s.direction: {"Y": s.Y.uniform_bound(), "X": s.X.uniform_bound()} for s in seqs},
            "note": "estimate: Edgeworth approximation (AEA), no guarantee; bounds: EEAI (first-order expansion "
                    "+ Derumigny et al.'s uniform bound) capped by Chernoff bounds from the CGF"}


def _plain_delta(items, eps, order):
    seqs = _sequences(items)
    est, lo, up = _curves(seqs, eps, order)
    neg = est < 0
    other = _estimate(seqs, eps, _neighbour(order))
    est, moved = clamp_into(est, lo, up)
    details = _plain_details(seqs, order)
    details["interval"] = [_quality(a, b, v) for a, b, v in zip(lo, up, est)]
    details["negative_expansion"] = neg.tolist()
    details["clamped"] = moved.tolist()
    details["reliable"] = [_reliable(a, b) and not m for a, b, m in zip(est, other, moved)]
    return EstimateArray(est, lo, up, "edgeworth", True, details)


def _clamped_estimate(val, lo, up, details):
    """An epsilon Estimate with the value moved into its certified interval (then flagged unreliable)."""
    val, moved = clamp_into(val, lo, up)
    details["clamped"] = moved
    details["reliable"] = details["reliable"] and not moved
    return Estimate(val, lo, up, "edgeworth", True, details)


def _last_crossing(f, grid, vals, target):
    """The largest x with f(x) = target between grid points (f >= target at the left end), or None."""
    idx = np.nonzero(vals >= target)[0]
    if idx.size == 0:
        return None
    i = int(idx[-1])
    if i == grid.size - 1:
        return math.inf
    return optimize.brentq(lambda e: f(e) - target, grid[i], grid[i + 1], xtol=1e-13, rtol=1e-15)


def _last_above(lower_at, a, b, d, points=31):
    """A point of [a, b) where the lower curve is > d, within 1e-11 (1 + x) of a point of (a, b] where it is <= d
    (given > d at a and <= d at b): the bracket cut in ``points`` + 1 at each round, all points of a round in one
    call of ``lower_at`` (an array of points), the first of them <= d its new right end.  A section search rather
    than a secant method's: near its drop the curve's side of d jitters with rounding (~1e-11 wide), where a
    secant method falls back to one point at a time; a finer tolerance would only place the point within that
    jitter."""
    while b - a > 1e-11 * (1.0 + abs(b)):
        pts = np.linspace(a, b, points + 2)[1:-1]
        below = np.nonzero(~(lower_at(pts) > d))[0]
        if below.size:
            j = int(below[0])
            a, b = (pts[j - 1] if j else a), pts[j]
        else:
            a = pts[-1]
    return float(a)


def _plain_epsilon(items, d, order):
    seqs = _sequences(items)
    hi = max(s.eps_ceiling(d) for s in seqs)
    finite = math.isfinite(hi)
    if not finite:
        hi = max(s.Y.mean + 40.0 * s.Y.sd for s in seqs)
    hi = max(hi, 1e-6)
    grid = np.concatenate((np.linspace(0.0, hi, 401), [hi * 1.5 + 1.0]))
    past = hi + 1e-4 * (1.0 + hi) if finite else grid[-1]
    est = _estimate(seqs, grid, order)
    # the bounds' sides of d only (``_Sequence.bounds``' target); the lower curve at 0 first: where it is <= d there
    # the lower bound is 0 and the rest of that curve is not needed
    lo = _bound_curves(seqs, grid[:1], upper=False, target=d)[0]
    if not lo[0] <= d:
        lo = _bound_curves(seqs, grid, upper=False, target=d)[0]
    up = _bound_curves(seqs, grid, lower=False, target=d)[1]

    def one(which):
        return lambda e: float(_bound_curves(seqs, np.array([e]), which == 1, which == 2)[which - 1][0])

    val = _last_crossing(lambda e: float(_estimate(seqs, np.array([e]), order)[0]), grid, est, d)
    val = 0.0 if val is None else val
    # upper: a point where the upper curve is <= d (then the true epsilon is below it)
    e_up = _last_crossing(one(2), np.concatenate((grid[:-1], [past])), up, d)
    if e_up is None:
        e_up = 0.0
    elif math.isfinite(e_up):
        for i in range(60):
            if one(2)(e_up) <= d:
                break
            e_up += 1e-12 * (1.0 + e_up) * 2 ** i
    # lower: the first grid interval where the lower curve drops to <= d; all points below have delta > d
    below = np.nonzero(lo <= d)[0]
    if below.size == 0 or below[0] == 0:
        e_lo = 0.0 if below.size else math.inf
    else:
        i = int(below[0])
        e_lo = _last_above(lambda e: _bound_curves(seqs, e, upper=False)[0], grid[i - 1], grid[i], d)
    if not math.isfinite(val):
        val = e_up
    details = _plain_details(seqs, order)
    details["reliable"] = _reliable(d, float(_estimate(seqs, np.array([val]), _neighbour(order))[0]))
    details["interval"] = ("vacuous" if e_lo == 0.0 and not math.isfinite(e_up) else
                           "upper only" if e_lo == 0.0 else "two-sided")
    return _clamped_estimate(val, e_lo, e_up, details)


# --- tilted Edgeworth --------------------------------------------------------------------------------------
_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)


def _tilted_log_delta(vec, t, eps, order):
    """log delta of one direction from the order-``order`` Edgeworth density of the t-tilted sum.

    delta = e^{K(t) - t eps} E[theta(L_t - eps)], theta(y) = e^{-t y} (1 - e^{-y})^+, with L_t = K'(t) + s x and
    x of density phi(x) (1 + sum_j c_j He_j(x)); the integral over y = s(x - c) > 0 is done by Gauss-Legendre on
    a partition that resolves both the kernel's scale near 0 and the Gaussian's unit scale.  nan when the
    expansion makes the integral non-positive.
    """
    K, K1, K2 = vec[0], vec[1], vec[2]
    if not (K2 > 0 and np.all(np.isfinite(vec))):
        return math.nan  # the tilted law is degenerate (the end of a bounded loss's range)
    s = math.sqrt(K2)
    c = (eps - K1) / s
    a = t * s
    kn = {j: vec[j] / s ** j for j in range(3, 6) if j < len(vec)}
    coef = _density_coefficients(kn, order)
    # exponent of the integrand in u = x - c >= 0: -a u - (c + u)^2 / 2, peak at u* = max(0, -(c + a))
    ustar = max(0.0, -(c + a))
    e_star = -0.5 * c * c if ustar == 0.0 else 0.5 * a * a + a * c
    umax = ustar + 12.0
    small = 1e-6 / (abs(c + a) + s + 1.0)
    # the kernel's scale near u = 0 (geometric cuts) and the Gaussian's unit scale around its peak u*
    edges = np.unique(np.concatenate(([0.0], np.geomspace(small, umax, 48),
                                      np.linspace(max(0.0, ustar - 12.0), umax, 49))))
    lo, hi = edges[:-1, None], edges[1:, None]
    u = (0.5 * (hi - lo) * _GL_X[None, :] + 0.5 * (hi + lo)).ravel()
    w = (0.5 * (hi - lo) * _GL_W[None, :]).ravel()
    x = c + u
    poly = np.ones_like(x)
    if coef:
        he = _hermite(x, max(coef))
        for j, cj in coef.items():
            poly = poly + cj * he[j]
    f = np.exp(-a * u - 0.5 * x * x - e_star) * -np.expm1(-s * u) * poly
    total = float(np.dot(w, f))
    if not total > 0:
        return math.nan
    return K - t * eps + e_star - LOG_SQRT_2PI + math.log(total)


def _tilted_at(dirn, t, eps, order):
    vec = np.zeros(6)
    for plrv, c in dirn.parts:
        vec += c * np.asarray(plrv.cgf_vector(t, 5), float)
    return _tilted_log_delta(vec, t, eps, order)


def _tilted_delta(items, eps, order):
    dirs = spa.directions(items)
    rows, fell, regimes = [], [], []
    for e in eps:
        best = np.full(4, -math.inf)  # log: estimate, lower, upper, neighbouring order's estimate
        bad, regime = False, True
        for dirn in dirs:
            # the SPA composes a direction's finite part; its mass at +inf is added (log(A + delta_fin))
            la = math.log(dirn.inf_mass) if dirn.inf_mass > 0.0 else -math.inf
            try:
                t = dirn.saddle(float(e))
            except spa.ZeroDelta:
                best = np.maximum(best, la)
                continue
            r = dirn.at(t, float(e))
            vals = []
            for o in (order, _neighbour(order)):
                v = _tilted_at(dirn, t, float(e), o)
                bad = bad or (math.isnan(v) and o == order)
                vals.append(r["log_clt"] if math.isnan(v) else v)
            row = np.logaddexp(la, [vals[0], r["log_lower"], r["log_upper"], vals[1]])
            if row[0] >= best[0]:
                regime = spa.reliable(r)  # the SPA's own criterion (Daniels term) at the dominant direction
            best = np.maximum(best, row)
        rows.append(np.minimum(np.exp(best), 1.0))
        fell.append(bad)
        regimes.append(regime)
    val, lo, up, other = np.array(rows).reshape(-1, 4).T
    details = _tilted_details(order)
    details["fell_back_to_order_0"] = fell
    val, moved = clamp_into(val, lo, up)
    details["clamped"] = moved.tolist()
    details["reliable"] = [_reliable(a, b) and g and not m for a, b, g, m in zip(val, other, regimes, moved)]
    return EstimateArray(val, lo, up, "edgeworth", True, details)


def _tilted_details(order):
    return {"order": order, "variant": "tilted",
            "note": "estimate: Edgeworth expansion of the saddle-point-tilted sum (order 0 = SP-CLT); bounds: the "
                    "saddle-point accountant's certified ones (Berry-Esseen on the tilted sum)"}


def _tilted_epsilon(items, d, order):
    bounds = spa.epsilon(items, d, order=0, variant="clt")
    best = 0.0
    for dirn in spa.directions(items):
        if not d > dirn.inf_mass:  # the mass at +inf alone reaches delta
            best = math.inf
            continue
        target = math.log(d - dirn.inf_mass)  # what the finite part may add

        def fn(r, dirn=dirn):
            v = _tilted_at(dirn, r["t"], r["eps"], order)
            return r["log_clt"] if math.isnan(v) else v

        if spa.at_zero(dirn, fn, target, False):
            continue
        u = spa.solve_t(dirn, target, fn, False)
        if u is not None:
            best = max(best, dirn.eps_of(math.exp(u)))
    details = _tilted_details(order)
    details["reliable"] = not math.isfinite(best) or bool(
        _tilted_delta(items, np.array([best]), order).details["reliable"][0])
    return _clamped_estimate(best, bounds.lower, bounds.upper, details)


# --- the accountant's entry points -------------------------------------------------------------------------
def _check(order, variant, options):
    if options:
        raise ParameterError(f"method 'edgeworth' takes the options order and variant, got {sorted(options)}")
    if isinstance(order, bool) or not isinstance(order, (int, np.integer)) or order not in ORDERS:
        raise ParameterError(f"order must be an integer in {list(ORDERS)} for method='edgeworth', got {order!r}")
    if variant not in VARIANTS:
        raise ParameterError(f"variant must be one of {VARIANTS} for method='edgeworth', got {variant!r}")
    return int(order)


def delta(items, epsilon, order=2, variant="plain", **options):
    """delta(epsilon): AEA estimate with the EEAI bounds (or the tilted expansion with the SPA's bounds)."""
    order = _check(order, variant, options)
    eps = np.atleast_1d(np.asarray(epsilon, float))
    if variant == "tilted":
        return _tilted_delta(items, eps, order)
    return _plain_delta(items, eps, order)


def epsilon(items, delta_, order=2, variant="plain", **options):
    """epsilon(delta): the largest root of the estimate's curve, with bounds from the EEAI curves."""
    order = _check(order, variant, options)
    d = check_finite_real("delta", delta_, low=0.0, high=1.0)
    if variant == "tilted":
        return _tilted_epsilon(items, d, order)
    return _plain_epsilon(items, d, order)
