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

import numpy as np
from scipy import optimize

from ..errors import NumericalLimitError, ParameterError, check_finite_real
from ..estimate import Estimate, EstimateArray, clamp_into, reason_flags
from . import chernoff, spa
from . import edgeworth_compiled as _ec
from .edgeworth_sequence import LOG_SQRT_2PI, from_signed, sequences

ORDERS = (0, 1, 2, 3)
VARIANTS = ("plain", "tilted")
#: the estimate is flagged reliable when the next-lower order's delta differs by at most this (relative)
RELIABLE = 0.05
#: ... and (the plain expansion) where the tilted one, itself reliable, puts the same delta within this relative
#: distance in epsilon (``_confirmed``)
CONFIRM_BAND = 5e-4
#: why an answer is not reliable though it was not clamped into its interval (``details["clamped"]``), as
#: ``details`` keys (True on an epsilon query's; a list of booleans per point on a delta query's, for the reasons
#: some point has): the neighbouring order's estimate differs by more than RELIABLE, the tilted expansion does not
#: confirm the plain estimate (``_confirmed``), the tilted expansion is out of the saddle point's regime (in the
#: leading direction, or in another not certified below it: ``spa.in_regime``)
REASONS = ("orders_disagree", "not_confirmed", "out_of_regime")


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


# --- plain (untilted) answers ------------------------------------------------------------------------------
def _estimate(seqs, eps, order):
    """The AEA delta at each eps, max over the sequences (may be negative where the expansion is)."""
    est = np.full(eps.shape, -np.inf)
    for s in seqs:
        est = np.maximum(est, from_signed(*s.aea(eps, order)))
    return est


def _bound_curves(seqs, eps, lower=True, upper=True, target=None, x_cap=True):
    """(lower, upper) delta curves at each eps, max over the sequences; None for the one not asked for.  With a
    ``target`` delta the values are exact only on their side of it (``Sequence.bounds``); without ``x_cap`` the
    lower curve is a curve below it (S_X's Chernoff cap not asked)."""
    lo = np.zeros(eps.shape) if lower else None
    up = np.zeros(eps.shape) if upper else None
    for s in seqs:
        l_, u_ = s.bounds(eps, lower, upper, target, x_cap)
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
    seqs = sequences(items)
    est, lo, up = _curves(seqs, eps, order)
    neg = est < 0
    other = _estimate(seqs, eps, _neighbour(order))
    est, moved = clamp_into(est, lo, up)
    details = _plain_details(seqs, order)
    details["interval"] = [_quality(a, b, v) for a, b, v in zip(lo, up, est)]
    details["negative_expansion"] = neg.tolist()
    details["clamped"] = moved.tolist()
    agree = np.array([_reliable(a, b) for a, b in zip(est, other)], bool)
    ok = agree & ~moved
    ok[ok] = _confirmed(items, eps[ok], est[ok], order)
    details["reliable"] = ok.tolist()
    details.update(reason_flags([None if m or k else "not_confirmed" if a else "orders_disagree"
                                 for k, a, m in zip(ok, agree, moved)], REASONS))
    return EstimateArray(est, lo, up, "edgeworth", True, details)


def _confirmed(items, eps, deltas, order):
    """Whether the tilted expansion (a second method, much more accurate where it is reliable) confirms the plain
    one's (eps, delta) pairs: reliable at eps, and its delta there within the log-delta band that CONFIRM_BAND in
    epsilon spans, i.e. the plain delta is the tilted curve's at an epsilon within about CONFIRM_BAND of eps.  The
    orders agreeing alone promised little: over 3,193 random DP-SGD queries, 85 of the 338 plain epsilons flagged
    reliable were more than 1% off the FFT's (up to 13%; docs/performance.md).  False for eps <= 0 (no relative
    band) and where the tilted expansion has no saddle point."""
    eps, deltas = np.asarray(eps, float), np.asarray(deltas, float)
    out = np.zeros(eps.shape, bool)
    pos = eps > 0
    if not pos.any():
        return out
    e = eps[pos]
    try:
        tilted = _tilted_delta(items, e, order, {s.direction: s for s in sequences(items)})
    except NumericalLimitError:
        return out
    # d log delta / d eps = -t at the saddle point t (the SP-CLT envelope), so the band in log delta is t eps
    # CONFIRM_BAND, a tenth narrower for the terms beyond it
    band = 0.9 * CONFIRM_BAND * e * np.asarray(tilted.details["saddle_point"], float)
    with np.errstate(divide="ignore"):
        gap = np.abs(np.log(np.asarray(tilted.value, float)) - np.log(deltas[pos]))
    out[pos] = np.asarray(tilted.details["reliable"], bool) & (gap <= band)
    return out


def _clamped_estimate(val, lo, up, details):
    """An epsilon Estimate with the value moved into its certified interval (then flagged unreliable)."""
    val, moved = clamp_into(val, lo, up)
    details["clamped"] = moved
    details["reliable"] = details["reliable"] and not moved
    if moved or details["reliable"]:
        for k in REASONS:
            details.pop(k, None)
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


def _first_below(sides, pts, d):
    """(the index of the first of ``pts`` where the lower curve, the max of the directions' ``sides`` (each an array
    of points -> that direction's lower curve), is <= d, or None; the index of a direction that was above d where
    the first one was not, or None).  The first direction is asked at every point, the others at its first point <=
    d alone, and at its other such points only where one of them is above d there (a point is above d where any
    direction is: its delta is at least that direction's lower bound)."""
    cand = np.nonzero(~(sides[0](pts) > d))[0]
    if not cand.size:
        return None, None
    for k in range(1, len(sides)):
        if sides[k](pts[cand[:1]])[0] > d:
            break
    else:
        return int(cand[0]), None
    cand = cand[1:]
    for f in sides[1:]:
        if cand.size:
            cand = cand[~(f(pts[cand]) > d)]
    return (int(cand[0]) if cand.size else None), k


def _last_above(sides, a, b, d, points=255):
    """A point of [a, b) where the lower curve is > d, within 1e-11 (1 + x) of a point of (a, b] where it is <= d
    (given > d at a and <= d at b): the bracket cut in ``points`` + 1 at each round, the first of them <= d
    (``_first_below``) its new right end.  A section search rather than a secant method's: near its drop the curve's
    side of d jitters with rounding (~1e-11 wide), where a secant method falls back to one point at a time; a finer
    tolerance would only place the point within that jitter.  A direction found above d where the first one asked
    was not is asked first from the next round on (near the drop one direction usually decides).  255 points: about
    four rounds from a grid step (31 took seven; a round's cost is mostly its Python, not its points)."""
    sides = list(sides)
    while b - a > 1e-11 * (1.0 + abs(b)):
        pts = np.linspace(a, b, points + 2)[1:-1]
        j, lead = _first_below(sides, pts, d)
        if j is not None:
            a, b = (pts[j - 1] if j else a), pts[j]
        else:
            a = pts[-1]
        if lead is not None:
            sides.insert(0, sides.pop(lead))
    return float(a)


def _first_drop(seqs, grid, d, capless):
    """The first index of ``grid`` where the lower curve is <= d (None where it stays above d), given ``capless``, the
    curve without S_X's cap on the whole grid (it is below the curve: where it is > d the curve is too): the curve
    itself only at the points where that one is <= d, in order, in chunks of 1, 4, 16, ...: the cap's searches (each
    a CGF value a mechanism and tilt) are asked near the drop only, where the first such point usually is the one.
    The same index as the whole curve's (each point's side of d is exact in target mode)."""
    cand = np.nonzero(capless <= d)[0]
    start, size = 0, 1
    while start < cand.size:
        idx = cand[start:start + size]
        hit = np.nonzero(_bound_curves(seqs, grid[idx], upper=False, target=d)[0] <= d)[0]
        if hit.size:
            return int(idx[hit[0]])
        start, size = start + size, 4 * size
    return None


def _plain_epsilon(items, d, order):
    seqs = sequences(items)
    hi = max(s.eps_ceiling(d) for s in seqs)
    finite = math.isfinite(hi)
    if not finite:
        hi = max(s.Y.mean + 40.0 * s.Y.sd for s in seqs)
    hi = max(hi, 1e-6)
    grid = np.concatenate((np.linspace(0.0, hi, 401), [hi * 1.5 + 1.0]))
    past = hi + 1e-4 * (1.0 + hi) if finite else grid[-1]
    est = _estimate(seqs, grid, order)
    # the bounds' sides of d only (``Sequence.bounds``' target): the lower curve at 0 first (where it is <= d there,
    # the lower bound is 0), then on the grid without S_X's cap, with the upper curve
    if _bound_curves(seqs, grid[:1], upper=False, target=d)[0][0] <= d:
        first, up = 0, _bound_curves(seqs, grid, lower=False, target=d)[1]
    else:
        capless, up = _bound_curves(seqs, grid, target=d, x_cap=False)
        first = _first_drop(seqs, grid, d, capless)

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
    if first is None or first == 0:
        e_lo = math.inf if first is None else 0.0
    else:
        e_lo = _last_above([lambda e, s=s: s.bounds(e, upper=False)[0] for s in seqs], grid[first - 1], grid[first],
                           d)
    if not math.isfinite(val):
        val = e_up
    details = _plain_details(seqs, order)
    agree = _reliable(d, float(_estimate(seqs, np.array([val]), _neighbour(order))[0]))
    details["reliable"] = bool(agree and _confirmed(items, [val], [d], order)[0])
    if not details["reliable"]:
        details["not_confirmed" if agree else "orders_disagree"] = True
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
    # exponent of the integrand in u = x - c >= 0: -a u - (c + u)^2 / 2, peak at u* = max(0, -(c + a))
    ustar = max(0.0, -(c + a))
    e_star = -0.5 * c * c if ustar == 0.0 else 0.5 * a * a + a * c
    umax = ustar + 12.0
    small = 1e-6 / (abs(c + a) + s + 1.0)
    # the kernel's scale near u = 0 (geometric cuts) and the Gaussian's unit scale around its peak u*
    edges = _ec.tilted_edges(small, umax, ustar)
    cj = np.zeros(10)
    for j, v in _density_coefficients(kn, order).items():
        cj[j] = v
    total = _ec.tilted_integral(edges, c, a, s, e_star, cj, _GL_X, _GL_W)
    if not total > 0:
        return math.nan
    return K - t * eps + e_star - LOG_SQRT_2PI + math.log(total)


def _tilted_at(dirn, t, eps, order, exact=None):
    """log delta of one direction at tilt t by the order-``order`` expansion; ``exact``: the composition's exact
    [K, K', ..., K^(4)] at t where the caller has them (enough up to order 2; order 3 needs K^(5))."""
    if exact is not None and order <= 2:
        return _tilted_log_delta(np.asarray(exact, float), t, eps, order)
    w = dirn.node_at(t)
    if w is not None:  # passes about the search model's centres (1e-11 relative: the SPA's exact)
        return _tilted_log_delta(np.asarray(dirn.exact(t, w=w, n=5)[0], float), t, eps, order)
    vec = np.zeros(6)
    for plrv, c in dirn.parts:
        vec += c * np.asarray(plrv.cgf_vector(t, 5), float)
    return _tilted_log_delta(vec, t, eps, order)


_TILT_INDEX = {float(t): i for i, t in enumerate(chernoff.TILTS)}  # the Chernoff grid's tilts and their indices


def _saddle_start(known, e):
    """A first tilt for the saddle point of e (K'(t) = e + 1/t + 1/(1 + t)) from the CGF values a sequence's
    Chernoff lines hold (``known``: their ``known()``): K' of the cubic through four consecutive grid tilts about the
    root (where the lines' searches passed there, as they usually do at the epsilon asked: within 0.1% of the saddle
    point in most directions, a few percent in some, against 5-90% for the Gaussian model's guess); None where no
    four such tilts bracket it."""
    ts, ks = known
    for j in range(1, len(ts) - 2):
        x0, x1, x2, x3 = x = ts[j - 1:j + 3]
        if not all(_TILT_INDEX.get(x[m]) == _TILT_INDEX.get(x0, -9) + m for m in range(4)):
            continue
        y0, y1, y2, y3 = ks[j - 1:j + 3]  # Newton's divided differences of the cubic through (x, y)
        a1, b1, c1 = (y1 - y0) / (x1 - x0), (y2 - y1) / (x2 - x1), (y3 - y2) / (x3 - x2)
        a2, b2 = (b1 - a1) / (x2 - x0), (c1 - b1) / (x3 - x1)
        a3 = (b2 - a2) / (x3 - x0)

        def f(t, x0=x0, x1=x1, x2=x2, a1=a1, a2=a2, a3=a3):  # the cubic's slope minus the right-hand side
            u0, u1, u2 = t - x0, t - x1, t - x2
            return a1 + a2 * (u0 + u1) + a3 * (u1 * u2 + u0 * u2 + u0 * u1) - e - 1.0 / t - 1.0 / (1.0 + t)

        lo, hi = x1, x2
        if not f(lo) < 0.0 < f(hi):
            continue
        for _ in range(40):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if f(mid) < 0.0 else (lo, mid)
        return math.sqrt(lo * hi)
    return None


def _tilted_delta(items, eps, order, seqs=None):
    """The tilted expansion's delta at each eps (an ``EstimateArray``); ``seqs``: direction -> its ``Sequence``
    where the caller has them (the saddle searches start from their CGF values, else from their moments)."""
    dirs = spa.directions(items)
    rows, fell, regimes, tilts = [], [], [], []
    for e in eps:
        best = np.full(4, -math.inf)  # log: estimate, lower, upper, neighbouring order's estimate
        bad, cands = False, []
        for dirn in dirs:
            # the SPA composes a direction's finite part; its mass at +inf is added (log(A + delta_fin))
            la = math.log(dirn.inf_mass) if dirn.inf_mass > 0.0 else -math.inf
            try:
                seq = None if seqs is None else seqs.get(dirn.direction)
                if seq is None:
                    t = dirn.saddle(float(e))
                else:
                    known = seq.lines().known()
                    dirn.finite_to(max(known[0], default=math.nan))  # its finite CGF values bound the domain below
                    t = dirn.saddle(float(e), _saddle_start(known, float(e)), (seq.Y.mean, seq.Y.sd ** 2))
            except spa.ZeroDelta:
                best = np.maximum(best, la)
                continue
            # the expansion at the exact saddle point (the model's can be far off with few sampled steps: at
            # sigma 2.06, q 0.0026, k 1404, eps 0.1172 its t = 50 gave delta e^46, reported 1 and "reliable")
            r0 = dirn.at(t, float(e))
            t, r, converged = spa.exact_saddle(dirn, t, float(e), r0)
            vals = []
            for o in (order, _neighbour(order)):
                v = _tilted_at(dirn, t, float(e), o, r["vec"])
                bad = bad or (math.isnan(v) and o == order)
                vals.append(r["log_clt"] if math.isnan(v) else v)
            # the certified bounds hold at every tilt: the better of the two tilts' (the model's may be the tighter)
            bounds = max(r["log_lower"], r0["log_lower"]), min(r["log_upper"], r0["log_upper"])
            row = np.logaddexp(la, [vals[0], *bounds, vals[1]])
            cands.append((row, converged and spa.in_regime(dirn, r), t))  # the SPA's regime
            best = np.maximum(best, row)
        rows.append(np.minimum(np.exp(best), 1.0))
        fell.append(bad)
        # in its regime at the dominant direction, and at the other unless certified below the dominant's estimate
        regimes.append(all(g or (row[0] < best[0] and row[2] <= best[0]) for row, g, _ in cands))
        tilts.append(min((t for row, _, t in cands if row[0] >= best[0]), default=math.nan))
    val, lo, up, other = np.array(rows).reshape(-1, 4).T
    details = _tilted_details(order)
    details["fell_back_to_order_0"] = fell
    details["saddle_point"] = tilts  # the dominant direction's, per epsilon
    val, moved = clamp_into(val, lo, up)
    details["clamped"] = moved.tolist()
    agree = [_reliable(a, b) for a, b in zip(val, other)]
    details["reliable"] = [a and g and not m for a, g, m in zip(agree, regimes, moved)]
    details.update(reason_flags([None if m or (a and g) else "out_of_regime" if not g else "orders_disagree"
                                 for a, g, m in zip(agree, regimes, moved)], REASONS))
    return EstimateArray(val, lo, up, "edgeworth", True, details)


def _tilted_details(order):
    return {"order": order, "variant": "tilted",
            "note": "estimate: Edgeworth expansion of the saddle-point-tilted sum (order 0 = SP-CLT); bounds: the "
                    "saddle-point accountant's certified ones (Berry-Esseen on the tilted sum)"}


def _tilted_epsilon(items, d, order):
    bounds = spa.epsilon(items, d, order=0, variant="clt")
    best, lead = 0.0, None
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
        if u is not None and dirn.eps_of(math.exp(u)) >= best:
            best, lead = dirn.eps_of(math.exp(u)), (dirn, math.exp(u))
    details = _tilted_details(order)
    why = None if lead is None else _root_out_of_regime(*lead, order)
    if why is None and math.isfinite(best):
        at = _tilted_delta(items, np.array([best]), order).details
        if not at["reliable"][0]:  # (its estimate clamped into its bounds: out of the regime as well)
            why = next((k for k in REASONS if at.get(k, [False])[0]), "out_of_regime")
    details["reliable"] = not math.isfinite(best) or why is None
    if not details["reliable"]:
        details[why] = True
    return _clamped_estimate(best, bounds.lower, bounds.upper, details)


def _root_out_of_regime(dirn, t, order):
    """Why the root the estimate came from (the leading direction at tilt t) is not in the expansion's regime, or
    None: the SPA's criterion there (``"out_of_regime"``), and the expansion itself (not SP-CLT's fallback) with
    the neighbouring order agreeing (``"orders_disagree"``).  The same test at the estimate's epsilon alone can pass
    where the root's cannot (the saddle point of a larger epsilon is another tilt): subsampled Gaussian sigma 2.5,
    q 0.0011, k 138, delta 5.7e-7 gave 0.0608 "reliable" from an SP-CLT fallback at t = 83 (correction factor
    -5.8), the truth 0.0194."""
    r = dirn.at(t)
    if not spa.in_regime(dirn, r):
        return "out_of_regime"
    vals = [_tilted_at(dirn, t, r["eps"], o, r["vec"]) for o in (order, _neighbour(order))]
    return None if _reliable(*(math.exp(v) if math.isfinite(v) else 0.0 for v in vals)) else "orders_disagree"


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
