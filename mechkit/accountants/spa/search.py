"""Root searches of the SPA in the tilt: the bracketed search on the model or on exact values, the estimate's
polish, the saddle point of epsilon = 0, and exact answers from point masses at the largest loss.
"""
from __future__ import annotations

import math

from ...engine import scalars as _sc
from ...errors import NumericalLimitError
from ...estimate import Estimate
from .formulas import LOG_SLACK, T_MAX, T_MIN, ZeroDelta, exp_or_inf, modelled_value, result_details
from .model import H_NODE

#: forced bisections (the bracket not halving in four steps) after which a search bisects to the end: its root is a
#: cliff, not a crossing
CLIFF_BISECTIONS = 2
#: inside a bracket, a regula falsi point within this fraction of its width from an end is replaced by the midpoint
FALSI_EDGE = 0.01


def _initial_u(dirn, target, fn, u0, guess):
    """The log tilt a search starts from (see ``solve_t``)."""
    seen = dirn.roots.get(getattr(fn, "key", None)) if u0 is None else None
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
    return math.log(dirn.start()) if u0 is None else u0


def _slope(t, r, u, v, prev):
    """d(log delta)/du for Newton's step: the secant through ``prev`` = (u, v) where it is usable, else the slope
    of log delta_MSD0 along the saddle points, -t^2 psi'' - t psi''' / (2 psi''), or its leading term where that is
    not negative.  ``prev`` is None on exact values (the estimate's polish): there the analytic slope is MSD0's
    own, MSD1's but for its correction factor's, and a secant through the previous point of a strongly convex log
    delta only creeps (q = 0.001, k = 1e4, 22 nats off: 10 passes with it)."""
    slope = -t * (t * r["p2"] + 0.5 * r["p3"] / r["p2"])
    if not slope < 0:
        slope = -t * t * r["p2"]
    if prev is not None and math.isfinite(v) and math.isfinite(prev[1]) and prev[0] != u:
        sec = (v - prev[1]) / (u - prev[0])
        if sec < 0:
            slope = sec
    return slope


#: on exact values, the secant is used near the root where Newton's steps with the analytic slope creep: the value
#: within this many nats of the target, the same side as the previous point and less than half its distance
EXACT_SECANT = 0.1


def _creeping(v, prev):
    """True where an exact search's last two values lie on one side of the target, closing in linearly."""
    return (prev is not None and math.isfinite(v) and math.isfinite(prev[1]) and abs(v) <= EXACT_SECANT
            and v * prev[1] > 0 and abs(v) < 0.5 * abs(prev[1]))


def _unbracketed_step(u, v, slope, blind, cap, warm):
    """(next u, blind count) while one side of the root is unknown: a Newton step capped at a factor e^cap in t;
    where the value is not finite (e.g. a lower bound that is not positive at this tilt), steps of 2, 8, 32, ...
    nodes; a step of at least 1e-3 where the start is only a guess (not ``warm``)."""
    nu = u - v / slope if math.isfinite(v) and slope < 0 else math.nan
    if not math.isfinite(nu):
        blind += 1
        step = min(cap, 2.0 * 4.0 ** (blind - 1) * H_NODE)
        nu = u + step if v > 0 else u - step
    nu = min(max(nu, u - cap), u + cap)
    if not warm:
        nu = max(nu, u + 1e-3) if v > 0 else min(nu, u - 1e-3)
    return nu, blind


def solve_t(dirn, target, fn, bounds, u0=None, utol=1e-13, vtol=1e-10, guess=None):
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
    u = _initial_u(dirn, target, fn, u0, guess)
    lo_u, hi_u = -math.inf, math.inf  # fn > target at lo_u, < target at hi_u
    lo_v, hi_v = math.nan, math.nan
    side = 0  # Illinois bookkeeping: which end was kept last
    prev = None
    stalls, last_v = 0, math.inf
    widths = []
    cap = math.log(16.0)
    blind = 0  # steps taken without a finite value on the unknown side
    slow = 0  # bisections forced by a bracket that did not shrink
    for _ in range(200):
        t = math.exp(u)
        w = dirn.node_at(t)
        if w is None:  # outside the CGF's domain of finiteness
            hi_u, hi_v = u, -math.inf
            nu = 0.5 * (u + lo_u) if lo_u > -math.inf else u - cap
        else:
            r = dirn.at(t, want_bounds=bounds, w=w)
            v = fn(r) - target
            if v == 0.0 or (math.isfinite(v) and abs(v) <= vtol):
                return u
            if not bounds and not v > 0 and not r["eps"] > 0.0:
                # below the target at a tilt whose epsilon is <= 0: the root is further down, where epsilon is
                # smaller still (it increases with t), so the caller's answer is 0 (solve_root); a lower bound's
                # locating search would otherwise walk down to T_MIN in blind steps where the bound is not positive
                return None
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
            slope = _slope(t, r, u, v, prev if not bounds or _creeping(v, prev) else None)
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
                if slow >= CLIFF_BISECTIONS or (len(widths) >= 4 and width > 0.5 * widths[-4]):
                    # the bracket is not shrinking fast enough: bisect; where that happens CLIFF_BISECTIONS times
                    # the root is a cliff (an SP-MSD1 singularity on exact values: Newton and regula falsi creep
                    # along its flat side, 80 passes at sigma 1, q 0.001, k 1e4), and the search bisects from then on
                    nu = 0.5 * (lo_u + hi_u)
                    slow += 1
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
                nu, blind = _unbracketed_step(u, v, slope, blind, cap, warm)
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


def polish_estimate(dirn, target, fn, u):
    """(log t, epsilon, fell back) of the estimate: the approximation ``fn`` on exact values at the model's root u,
    where the model was accurate enough that a first-order step along the saddle points (the model's slope of fn)
    corrects it (one exact evaluation, usually shared with the bounds' anchor), else the root searched on exact
    values (``solve_t``).  An SP-MSD1 root on exact values at its singularity (``MSD1_SINGULAR``, as in
    ``estimate_root``) is replaced by SP-MSD0's root on exact values (fell back: True); the search stops as soon
    as both ends of its bracket are within MSD1_SINGULAR of the singularity (``_SingularWatch``)."""
    msd1 = getattr(fn, "key", None) == "log_msd1"
    t = math.exp(u)
    r = dirn.at(t, want_bounds=True)
    v = fn(r) - target
    if math.isfinite(v) and r["p2"] > 0:
        sides = [dirn.at(math.exp(x), want_bounds=False) for x in (u + _SLOPE_H, u - _SLOPE_H)]
        hi, lo = (fn(x) for x in sides)
        slope = (hi - lo) / (2.0 * _SLOPE_H)
        if slope < 0 and (not msd1 or _one_branch([r] + sides)):
            step = -t * r["p2"] * v / slope  # d epsilon / du = t psi''
            if abs(step) <= POLISH_LINEAR * (1.0 + abs(r["eps"])):
                return u, r["eps"] + step, False
    fell = False
    if msd1:
        watch = _SingularWatch(fn, target)
        try:
            root = solve_t(dirn, target, watch, True, u, vtol=1e-9)
            fell = root is not None and _on_singularity(dirn.at(math.exp(root), want_bounds=True)["corr"])
        except _Singular:
            fell = True
        if fell:
            root = solve_t(dirn, target, modelled_value("log_msd0"), True, watch.last_u, vtol=1e-9)
        u = root
    else:
        u = solve_t(dirn, target, fn, True, u, vtol=1e-9)
    return u, (None if u is None else dirn.at(math.exp(u), want_bounds=True)["eps"]), fell


def _one_branch(rs):
    """True where SP-MSD1 is on one branch at all the results rs (its correction factor of one sign: below 0 it is
    SP-MSD0, a kink).  The polish's first-order step needs the model's slope and the exact value on one branch:
    across the kink (sigma 0.97, q 6.5e-4, k 3125: exact log delta 0.043 off the target on the MSD0 branch, the
    model's central difference straddling the kink) a "step" of 1e-6 stood for a root 3.5e-3 away."""
    return len({r["corr"] > 0 for r in rs}) == 1


class _Singular(Exception):
    """The exact SP-MSD1 search's bracket closes on the approximation's singularity (``_SingularWatch``)."""


class _SingularWatch:
    """fn for ``solve_t`` on exact values that watches SP-MSD1's correction factor at the ends of the bracket (the
    latest point on each side of the target, as solve_t keeps them): where both are within ``MSD1_SINGULAR`` of 0,
    the root between them is the approximation's singularity, not a crossing, and it raises ``_Singular`` (a
    search that bisected it to its tolerance took 42 exact passes at sigma 1, q 0.001, k 1e4)."""

    def __init__(self, fn, target):
        self.fn, self.target, self.key = fn, target, fn.key
        self.ends = [None, None]  # corr at the latest point above, below the target
        self.last_u = None

    def __call__(self, r):
        v = self.fn(r)
        self.last_u = math.log(r["t"])
        if math.isfinite(v) and v != self.target:
            self.ends[0 if v > self.target else 1] = r["corr"]
            if all(c is not None and _on_singularity(c) for c in self.ends):
                raise _Singular
        return v


#: an SP-MSD1 root where the correction factor is within this of 0 is spurious: log delta_MSD1 runs to -inf as the
#: factor falls to 0 (MSD0 takes over below it), so the search closes on that singularity wherever MSD0 is still
#: above delta there (sigma 1.03, q 0.0059, k 166, delta 1e-4: a "root" at epsilon 0.212 with the factor at 1e-4,
#: MSD0's own root at 0.420, the FFT 0.328)
MSD1_SINGULAR = 0.05


def _on_singularity(corr):
    """True where SP-MSD1's correction factor is within ``MSD1_SINGULAR`` of 0 (a root there is spurious)."""
    return abs(corr) <= MSD1_SINGULAR


def estimate_root(dirn, target, fn, **kw):
    """(log t, fn used, fell back): the model's root of the estimate's approximation; an SP-MSD1 root on its
    singularity (``MSD1_SINGULAR``) is replaced by SP-MSD0's root (the estimate is then not reliable)."""
    u = solve_root(dirn, target, fn, **kw)
    if getattr(fn, "key", None) != "log_msd1" or u is None:
        return u, fn, False
    if not _on_singularity(dirn.at(math.exp(u), want_bounds=False)["corr"]):
        return u, fn, False
    f0 = modelled_value("log_msd0")
    return solve_root(dirn, target, f0), f0, True


def solve_root(dirn, target, fn, u0=None, **kw):
    """log t where the model's curve fn crosses the target at a positive epsilon, or None when epsilon is 0.

    The search alone decides in the usual case; the saddle point of epsilon = 0 (``at_zero``) is consulted only
    where the search fails (near delta = 1 an approximation can stay below the target at every tilt).
    """
    try:
        u = solve_t(dirn, target, fn, False, u0, **kw)
    except NumericalLimitError:
        if at_zero(dirn, fn, target, False):
            return None
        raise
    if u is None or dirn.eps_of(math.exp(u)) <= 0.0:
        return None
    key = getattr(fn, "key", None)
    if key is not None:  # an estimate's root: a start for later queries (solve_t)
        seen = dirn.roots.setdefault(key, {})
        if len(seen) >= 64:
            seen.clear()
        seen[target] = u
    return u


def zero_tilt(dirn):
    """The saddle point of epsilon = 0 (nan where epsilon = 0 is beyond the composed loss's range), cached."""
    if dirn.t_zero is None:
        try:
            dirn.t_zero = dirn.saddle(0.0)
        except ZeroDelta:
            dirn.t_zero = math.nan
    return dirn.t_zero


def at_zero(dirn, fn, target, bounds):
    """True when the curve fn is already <= target at epsilon = 0 (then epsilon is 0 for this direction).

    Needed near delta = 1: the approximations can stay below the target at every tilt (MSD1 peaks below 1),
    so a root search in t would find no crossing.
    """
    t0 = zero_tilt(dirn)
    return math.isnan(t0) or fn(dirn.at(t0, 0.0, want_bounds=bounds)) <= target


def heavy_tops(dirs, target):
    """{direction: (s, log P)} for the directions whose largest loss s carries a point mass P > exp(target)."""
    return {d: top for d in dirs if (top := d.top_atom()) is not None and target < top[1]}


def point_mass_delta(dirs, eps):
    """A certified lower bound on delta(eps) (max over the directions) from the point masses at the largest losses:
    delta(eps) >= P (1 - e^(eps - s)) for eps < s (exact where eps is above the second largest value of a
    finite loss, e.g. randomized response); 0 where no direction has such a point mass."""
    out = 0.0
    for dirn in dirs:
        top = dirn.top_atom()
        if top is not None and eps < top[0]:
            out = max(out, exp_or_inf(top[1] + _sc.log1mexp(eps - top[0]) - LOG_SLACK) * (1.0 - 1e-12))
    return out


def point_mass_lower(top, target):
    """s + log(1 - delta/P) for top = (s, log P), with the quadrature allowance on P and a few units of rounding
    (where eps is above the second largest loss the bound is the exact answer, so rounding decides the side)."""
    s_max, logp = top
    return s_max + _sc.log1mexp(target - logp + LOG_SLACK) - 1e-13 * (1.0 + abs(s_max))


def point_mass_epsilon(dirs, target, order, variant):
    """epsilon(delta) where delta is below what the saddle points can reach (t beyond T_MAX) for a direction whose
    composed loss has a point mass P at its largest value s: there delta(eps) >= P (1 - e^(eps - s)) and
    delta(s) = 0, so s + log(1 - delta / P) <= epsilon <= s (certified; the interval's width is about delta / P).
    The other direction must be below that lower end by its own largest loss.  None where this does not apply."""
    heavy = heavy_tops(dirs, target)
    if not heavy:
        return None
    tops = list(heavy.values())
    lo = max(point_mass_lower(top, target) for top in tops)
    up = max(top[0] for top in tops)
    if not all(d in heavy or d.sup() <= lo for d in dirs):
        return None
    details = result_details(order, variant, None)
    details.update(note="delta is below the saddle points' reach: the point mass P at the largest privacy loss s "
                        "gives s + log(1 - delta/P) <= epsilon <= s", point_mass=[math.exp(t[1]) for t in tops],
                   largest_loss=up, reliable=True)
    return Estimate(lo, lo, up, "spa", True, details)
