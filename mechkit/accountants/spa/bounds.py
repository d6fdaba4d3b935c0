"""The SPA's certified bounds: Theorem 5 solved in epsilon at located tilts, certificates that a direction is
below another, Chernoff bounds, and the anchors of the searches that locate the bounds' tilts.
"""
from __future__ import annotations

import math

from ...errors import NumericalLimitError
from . import compiled as _sb
from .formulas import LOG_SLACK, QUAD_SLACK, T_MAX, T_MIN, evaluate, log_err0, log_max_theta, rounding_slack
from .model import H_NODE, plrv_abs3
from .search import solve_root, zero_tilt


# -- certificates ----------------------------------------------------------------------------------------------
def certified_below(dirn, first, t, eps, target):
    """True when one exact evaluation of ``dirn`` at the tilt t (the first direction's saddle point; the
    quadratures centred on the first's K_i'(t)) certifies delta(eps) <= exp(target) for it: then its epsilon is at
    most eps."""
    vec, A = dirn.exact(t, first.centres(t))
    if not (math.isfinite(vec[0]) and vec[2] > 0 and math.isfinite(A)):
        return False
    return _chernoff_or_theorem5(t, vec, A, eps, dirn.n_total) <= target


def below_at_guess(dirn, eps, target):
    """True when ``dirn``'s node nearest the saddle point of eps under a Gaussian model of its K (K'(0), K''(0))
    certifies delta(eps) <= exp(target) for it (Chernoff, or Theorem 5 with the node's tilted absolute third moment,
    about the tilted mode where that is the node's centre: a valid, looser bound): then its epsilon is at most eps.
    Where the other direction's saddle point is far from the first's (e.g. subsampled Gaussians at about one
    expected sampled step: t = 35 against 85), the first's tilt cannot certify it, and this one node (memoised,
    and the start of the other direction's model if it is needed after all) spares its whole search.
    Returns (certified, log of the node's tilt or None): where it does not certify, the node is where the other
    direction's search starts."""
    u = dirn.gaussian_tilt(eps)
    if u is None or not math.log(T_MIN) < u < math.log(0.5 * T_MAX):
        return False, None
    j = round(u / H_NODE)
    comp = dirn.node(j)[1]
    if comp is None or not comp[2] > 0:
        return False, None
    A = 0.0
    for plrv, c in dirn.parts:
        a = plrv.memo("spa_nodes")[j][2]
        A += c * (a if a is not None else plrv_abs3(plrv, j))
    t = math.exp(j * H_NODE)
    return math.isfinite(A) and _chernoff_or_theorem5(t, comp, A, eps, dirn.n_total) <= target, j * H_NODE


def _chernoff_or_theorem5(t, vec, A, eps, n):
    """The better of two certified upper bounds on log delta(eps) from exact values at the tilt t: Chernoff's
    e^(K - t eps) t^t / (1+t)^(1+t) and Theorem 5 (n: the number of mechanisms, for ``rounding_slack``)."""
    return min(_chernoff(t, vec, eps, n), _bound_at(t, vec, A, "log_upper", n)(eps))


def _chernoff(t, vec, eps, n):
    """log of the Chernoff bound e^(K - t eps) t^t / (1+t)^(1+t) on delta(eps) from exact K at the tilt t."""
    return vec[0] - t * eps + log_max_theta(t) + LOG_SLACK + rounding_slack(t, vec, n)


def node_log_upper(dirn, t, eps, target=math.inf):
    """A certified upper bound on log delta(eps) of one direction from the memoised node nearest t: the Chernoff
    bound e^(K - t eps) t^t / (1+t)^(1+t) at that node's exact values where it is at most ``target``, else the
    better of it and Theorem 5 (which needs the node's tilted absolute third moment: one more quadrature pass)."""
    j = round(math.log(t) / H_NODE)
    comp = dirn.node(j)[1]
    if comp is None:
        return math.inf
    tj = math.exp(j * H_NODE)
    chernoff = _chernoff(tj, comp, eps, dirn.n_total)
    if chernoff <= target:
        return chernoff
    return _chernoff_or_theorem5(tj, comp, dirn.node_abs3(j), eps, dirn.n_total)


def _cross_bound(t, vec, A, which, target, e0, scale, n, floor=-math.inf):
    """(a, b) with f(a) >= target > f(b) and b - a <= 1e-12 (1 + |a|) for f = ``_bound_at(t, vec, A, which)``: a
    crossing found from e0 (``_numerics.bound_cross``, compiled: safeguarded Newton with the analytic slope, doubling
    steps of ``scale`` x 1e-3, 2e-3, ... where the slope is not usable and no bracket is known yet, the floor tried
    after 3 such steps, bisection inside a known bracket where a step leaves it, the bracket closed by a step of
    half its tolerance past the last point, Illinois regula falsi after 200 steps).  a is None when f stays below
    the target down to ``floor``."""
    K, K1, K2 = vec[0], vec[1], vec[2]
    slack = rounding_slack(t, vec, n)
    a, b, status = _sb.bound_cross(t, K, K1, math.sqrt(K2), log_err0(t, K, K2, A, slack), which == "log_upper",
                                   target, e0, scale, floor, LOG_SLACK + slack, QUAD_SLACK + slack)
    if status == 2:
        raise NumericalLimitError("the saddle-point bound has no crossing near the saddle point (report this as a bug)")
    return (None if status == 1 else a), b


def _bound_at(t, vec, A, which, n):
    """epsilon -> the log of Theorem 5's bound ``which`` ("log_upper" or "log_lower") at the fixed tilt t, from
    [K, K', K'', ...] and A there; ``f(e, True)`` gives (value, d value / d epsilon) (``_numerics.bound_value``: the
    arithmetic of _clt_terms, _log_upper and _log_lower, with the slope)."""
    K, K1, K2 = vec[0], vec[1], vec[2]
    slack = rounding_slack(t, vec, n)
    s, err0, upper = math.sqrt(K2), log_err0(t, K, K2, A, slack), which == "log_upper"

    def f(e, slope=False):
        v, d = _sb.bound_value(t, K, K1, s, err0, upper, e, LOG_SLACK + slack, QUAD_SLACK + slack)
        return (v, d) if slope else v
    return f


def _modelled(dirn, which, anchor=None):
    """fn(r) for solve_t: the model's log upper or lower bound at r's tilt and epsilon (locating only).  The
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
        return _sb.bound_value(t, K, r["vec"][1], math.sqrt(K2) if K2 > 0.0 else 0.0, log_err0(t, K, K2, A), upper,
                               r["eps"], LOG_SLACK, QUAD_SLACK)[0]
    upper = which == "log_upper"
    return fn


#: the other direction's estimate is polished on exact values where its model value is within
#: max(POLISH_ERRORS x the leader's model error, POLISH_MARGIN (1 + epsilon)) of the leader's polished value
POLISH_ERRORS, POLISH_MARGIN = 20.0, 1e-3


def _upper_eps(dirn, target):
    """A certified epsilon_up with delta(epsilon_up) <= exp(target) for one direction, and the exact evaluation
    (or None): the tilt is located on the model (A interpolated between the nodes), the bound solved in epsilon at
    that tilt from exact values (``certified_bounds`` without an anchor)."""
    u = solve_root(dirn, target, _modelled(dirn, "log_upper"), utol=LOCATE_UTOL, vtol=1e-3)
    if u is None:
        # the model puts the bound at or below delta at epsilon = 0: certify that at the saddle point of 0
        t = zero_tilt(dirn)
        if math.isnan(t):
            return 0.0, None
        vec, A = dirn.exact(t)
        if evaluate(t, vec, 0.0, A, dirn.n_total)["log_upper"] <= target:
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
    return solve_root(dirn, target, _modelled(dirn, "log_lower", anchor), u0, utol=LOCATE_UTOL, vtol=1e-3)


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
            continue  # Theorem 5 is vacuous at this tilt (log_err0)
        a, _ = _cross_bound(t, vec, A, "log_lower", target, dirn.eps_of(t), 1.0 / t, dirn.n_total, floor=0.0)
        if a is not None:
            return max(a, 0.0)
    return 0.0


def _upper_at(dirn, target, t, vec, A):
    """(epsilon_up, (t, vec, A, epsilon_up)): Theorem 5's upper bound solved in epsilon at the tilt t (exact
    values vec, A there)."""
    if not vec[2] > 0.0:
        return math.inf, None  # Theorem 5 is vacuous at this tilt (log_err0; another tilt gives the bound)
    _, b = _cross_bound(t, vec, A, "log_upper", target, dirn.eps_of(t, vec), 1.0 / t, dirn.n_total)
    return max(b, 0.0), (t, vec, A, b)


def upper_at_tilt_of(dirn, other, target, where):
    """Theorem 5's upper bound on ``dirn``'s epsilon solved at the tilt of ``other``'s upper bound (``where`` = (t,
    vec, A, epsilon) from ``certified_bounds``), from ``dirn``'s exact values there (the quadratures centred on
    ``other``'s K_i'(t)): certified for ``dirn``; ``other``'s bound to rounding where the two laws are the same."""
    t = where[0]
    return _upper_at(dirn, target, t, *dirn.exact(t, other.centres(t)))[0]


def certified_bounds(dirn, target, u_anchor, want_lower=True, want_upper=True, floor=-math.inf):
    """Certified (epsilon_lo, epsilon_up, where) for one direction; ``where`` = (t, vec, A, epsilon) of the upper
    bound (None when it is 0 without an evaluation).

    ``u_anchor``: log of the model's SP-MSD1 saddle point for delta (the default estimate's tilt, so its exact
    evaluation is usually shared with the estimate).  Theorem 5 holds at every tilt: the upper bound is solved at
    the anchor and at the tilt(s) of the lower bound, and at its own tilt located on the model where no positive
    lower bound was found, the smallest kept; the
    tilts are located on the model with the anchor's absolute third moment scaled as K''' (_modelled), the bounds
    solved there on exact values.
    Without an anchor (the approximation never reaches delta) both tilts are located on the model alone, and the
    lower bound is 0 where ``want_lower`` is False (the caller has a better one: the other direction's).  Where
    ``want_upper`` is False (the caller has certified this direction below its upper bound already) no tilt is
    located for the upper bound: the one returned is the best at the tilts the lower bound evaluated (inf without
    an anchor).
    ``floor``: a lower bound the caller has already (the other direction's): where this direction's upper bound
    at the anchor (or at its own tilt, without an anchor, where it is wanted) is at most it, its lower bound (at
    most its epsilon) cannot beat it: 0 is returned for it, with that upper bound, and no other tilt is searched.
    """
    if u_anchor is None:
        up, where = _upper_eps(dirn, target) if want_upper else (math.inf, None)
        if not want_lower or up <= floor:
            return 0.0, up, where
        return _lower_eps(dirn, target, _lower_locate(dirn, target)), up, where
    t = math.exp(u_anchor)
    vec, A = dirn.exact(t)
    anchor = (vec[2], vec[3], A)
    uppers = [_upper_at(dirn, target, t, vec, A)]
    if uppers[0][0] <= floor:
        return 0.0, *uppers[0]
    lo = _lower_eps(dirn, target, _optional(lambda: _lower_locate(dirn, target, u_anchor, anchor)), uppers)
    if not lo > 0.0 and want_upper:
        # the upper bound at its own located tilt: where a positive lower bound was found, the upper bound at that
        # tilt or at the anchor was never beaten by it (40 settings measured: subsampled Gaussians k = 1e2..1e6,
        # Laplace, Gaussian, randomized response, discrete Gaussian), and this saves a quadrature pass and a search
        u = _optional(lambda: solve_root(dirn, target, _modelled(dirn, "log_upper", anchor), u_anchor,
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
