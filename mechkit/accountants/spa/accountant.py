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
from dataclasses import dataclass

import numpy as np

from ...errors import NumericalLimitError, check_finite_real
from ...estimate import Estimate, EstimateArray, clamp_into, reason_flags
from .bounds import (POLISH_ERRORS, POLISH_MARGIN, below_at_guess, certified_below, certified_bounds, node_log_upper,
                     upper_at_tilt_of)
from .formulas import (
    ZeroDelta,
    check_options,
    estimate_key,
    estimate_log_delta,
    evaluate,
    exp_or_inf,
    modelled_value,
    reliable,
    result_details,
    second_term_reliable,
)
from .model import directions
from .search import estimate_root, heavy_tops, point_mass_delta, point_mass_epsilon, point_mass_lower, polish_estimate


# -- the queries -------------------------------------------------------------------------------------------------
def delta(items, epsilon, order=1, variant="msd"):
    """delta(epsilon) by the SPA (max over add and remove); EstimateArray with certified bounds.

    Per epsilon: the saddle points on the model; the estimate and both bounds of the dominant direction from one
    exact evaluation at its saddle point; the other direction's upper bound from its nearest memoised node
    (exact there), or exactly at its saddle point where that node's bound would raise the maximum.  Where a
    direction's loss has a point mass at +inf, each direction is answered on its own, for its finite part, and its
    composed mass at +inf added (``_with_inf_masses``).
    """
    check_options(order, variant)
    eps = np.atleast_1d(np.asarray(epsilon, float))
    dirs = directions(items)
    if any(dirn.inf_mass > 0 for dirn in dirs):
        return _with_inf_masses(dirs, [_delta([dirn], eps, order, variant) for dirn in dirs])
    return _delta(dirs, eps, order, variant)


def _with_inf_masses(dirs, rows):
    """The max over the directions of delta = (composed mass at +inf) + (the finite part's delta), from each
    direction's own answer for its finite part (``rows``, in the order of ``dirs``)."""
    masses = [dirn.inf_mass for dirn in dirs]
    vals, lows, ups = (np.array([m + np.asarray(getattr(r, w), float) for m, r in zip(masses, rows)])
                       for w in ("value", "lower", "upper"))
    lo, up, lead = lows.max(axis=0), np.minimum(ups.max(axis=0), 1.0), np.argmax(vals, axis=0)
    # not clipped to 1 first: an expansion above 1 (and so above up <= 1) has broken down, is clamped, not reliable
    val, moved = clamp_into(vals.max(axis=0), lo, up)
    details = {k: v for k, v in rows[0].details.items() if k not in REASONS}
    details["saddle_points"] = [[r.details["saddle_points"][i][0] for r in rows] for i in range(len(val))]
    # as reliable as the leader where every other direction is reliable or certified below the leader's estimate
    details["reliable"] = [not m and all(bool(r.details["reliable"][i]) or (j2 != j and ups[j2, i] <= vals[j, i])
                                         for j2, r in enumerate(rows))
                           for i, (j, m) in enumerate(zip(lead, moved))]
    details["clamped"] = moved.tolist()
    details.update(reason_flags(_merged_reasons(rows, lead, details["reliable"], moved), REASONS))
    details["inf_mass"] = {dirn.direction: m for dirn, m in zip(dirs, masses)}
    return EstimateArray(val, lo, up, "spa", True, details)


def _delta(dirs, eps, order, variant):
    """``delta`` for the directions ``dirs`` (the max over them), epsilon an array."""
    key = estimate_key(order, variant)
    val, lo, up, ts, rel, why = [], [], [], [], [], []
    for e in eps:
        e = float(e)
        found = []
        for dirn in dirs:
            try:
                t = dirn.saddle(e)
            except ZeroDelta:
                continue
            res = dirn.at(t, e, want_bounds=False)
            found.append((estimate_log_delta(res, key), dirn, t, res))
        ts.append([next((t for _, d, t, _ in found if d is dirn), math.nan) for dirn in dirs])
        if not found:
            val.append(0.0), lo.append(0.0), up.append(0.0), rel.append(True), why.append(None)
            continue
        found.sort(key=lambda x: -x[0])
        _, dom, t, _ = found[0]
        t, r, _ = exact_saddle(dom, t, e)
        log_up, log_val, ok = r["log_upper"], estimate_log_delta(r, key), reliable(r)
        reason = out_of_regime(dom, r) if ok else None
        ok = ok and reason is None
        for _, dirn, t2, res in found[1:]:
            other = node_log_upper(dirn, t2, e, log_up)
            if other > log_up:
                other = min(other, dirn.at(t2, e, want_bounds=True)["log_upper"])
            log_up = max(log_up, other)
            # the max is as reliable as the leader where this direction is too or is certified below its estimate
            # (as ``_others_reliable`` for epsilon)
            if ok and not in_regime(dirn, res) and other > log_val:
                ok = (node_log_upper(dirn, t2, e, log_val) <= log_val
                      or dirn.at(t2, e, want_bounds=True)["log_upper"] <= log_val)
                reason = None if ok else "other_direction"
        val.append(exp_or_inf(log_val))
        lo.append(max(exp_or_inf(r["log_lower"]), point_mass_delta(dirs, e)))
        up.append(min(1.0, exp_or_inf(log_up)))
        rel.append(ok)
        why.append(reason)
    # not clipped to 1 first: an expansion above 1 (and so above up <= 1) has broken down, is clamped, not reliable
    val, moved = clamp_into(np.array(val), np.array(lo), np.array(up))
    details = result_details(order, variant, None)
    details["saddle_points"] = ts
    details["reliable"] = [bool(r) and not m for r, m in zip(rel, moved)]
    details["clamped"] = moved.tolist()
    # (a clamped point names no reason: as an epsilon query)
    details.update(reason_flags([None if m else w for w, m in zip(why, moved)], REASONS))
    return EstimateArray(val, np.array(lo), np.array(up), "spa", True, details)


#: why a point of a delta query is not reliable though its Daniels term is small: ``out_of_regime``'s reasons and
#: ``"other_direction"`` (as an epsilon query's details say with one key set to True)
REASONS = ("lattice", "few_runs", "next_term", "other_direction")


def _merged_reasons(rows, lead, rel, moved):
    """Per point of the max over the directions' own answers (``rows``; ``lead``: the leading row per point), why
    it is not reliable: the leader's reason where its own answer is the unreliable one (None where it has none: its
    Daniels term), else ``"other_direction"``; None where it is reliable or was clamped."""
    why = []
    for i, (ok, m, j) in enumerate(zip(rel, moved, lead)):
        own = rows[j].details
        if ok or m:
            why.append(None)
        elif own["reliable"][i]:
            why.append("other_direction")
        else:
            why.append(next((k for k in REASONS if k in own and own[k][i]), None))
    return why


#: ``in_regime``: the expansions need at least this many comparable non-Gaussian summands in the tilted sum
#: (``_Direction.effective_runs``).  Random compositions of 1-15 runs of subsampled Gaussians and Laplaces,
#: logistics and Gaussians: 16 of 5,468 reliable answers were 1.1-8e-3 off in epsilon, all with a subsampled
#: mechanism run once or twice (its tilted loss piles up at its support's edge, log(1 - q): a shape no cumulant
#: series sees), at 1.0-3.7 effective runs; 57 of 399 accurate reliable answers had fewer than 5
#: (docs/performance.md, "SPA reliable", twenty-ninth session)
MIN_EFFECTIVE_RUNS = 5.0


def in_regime(dirn, r):
    """The expansion's regime at ``r`` (everything at a tilt of direction ``dirn``): the Daniels criterion
    (``formulas.reliable``) and none of ``out_of_regime``'s reasons."""
    return reliable(r) and out_of_regime(dirn, r) is None


def out_of_regime(dirn, r):
    """Why the expansion is out of its regime at ``r`` though its Daniels term is small, or None:
    ``"lattice"``: a mechanism's runs lump the tilted loss on its point masses (Laplace scale 48 x 10 had been
    1.2% off, randomized response x 200 with Laplace 0.17%, both "reliable"); ``"few_runs"``: fewer than
    ``MIN_EFFECTIVE_RUNS`` comparable non-Gaussian summands; ``"next_term"``: the expansion's O(1/n^2) term moves
    epsilon by more than ``formulas.RELIABLE_SECOND`` relative (logistic x 10: MSD1 1.2e-3 off in epsilon with a
    Daniels term of 4e-3, the next one -3.2e-3)."""
    t = r["t"]
    if dirn.lattice(t):
        return "lattice"
    if dirn.effective_runs(t) < MIN_EFFECTIVE_RUNS:
        return "few_runs"
    hi = dirn.higher(t)
    if hi is None or not second_term_reliable(r, *hi):
        return "next_term"
    return None


def exact_saddle(dirn, t, e, r=None):
    """(t, everything at t from exact values, converged): Newton on the exact saddle-point equation
    K'(t) - 1/t - 1/(1+t) = e from the model's saddle point t (off where the model is: few sampled steps), at most
    8 steps, each within a factor 2 of t; ``r``: ``dirn.at(t, e)`` where the caller has it."""
    r = dirn.at(t, e, want_bounds=True) if r is None else r
    for _ in range(8):
        f = r["vec"][1] - 1.0 / t - 1.0 / (1.0 + t) - e
        if abs(f) <= 1e-11 * (1.0 + abs(e)):
            return t, r, True
        t2 = t - f / r["p2"]
        if not (0.5 * t < t2 < 2.0 * t) or not dirn.finite(t2):
            return t, r, False
        t = t2
        r = dirn.at(t, e, want_bounds=True)
    return t, r, abs(r["vec"][1] - 1.0 / t - 1.0 / (1.0 + t) - e) <= 1e-11 * (1.0 + abs(e))


def epsilon(items, delta_, order=1, variant="msd"):
    """epsilon(delta) by the SPA (max over add and remove), with certified lower and upper bounds.

    Where delta is below what the saddle points reach and the largest privacy loss carries a point mass (pure-DP
    mechanisms at tiny delta), the answer comes from that point mass (``point_mass_epsilon``).
    """
    check_options(order, variant)
    d = check_finite_real("delta", delta_, low=0.0, high=1.0)
    dirs = directions(items)
    if any(dirn.inf_mass > 0 for dirn in dirs):
        return _epsilon_with_inf_masses(dirs, d, order, variant)
    return _epsilon_or_point_mass(dirs, d, order, variant)


def _epsilon_or_point_mass(dirs, d, order, variant):
    try:
        return _epsilon(dirs, d, order, variant)
    except NumericalLimitError:
        got = point_mass_epsilon(dirs, math.log(d), order, variant)
        if got is None:
            raise
        return got


def _epsilon_with_inf_masses(dirs, d, order, variant):
    """epsilon(delta) where a direction's loss has a point mass A at +inf: delta(eps) = A + delta_fin(eps), so each
    direction solves its finite part at delta - A (epsilon inf where delta <= A: no finite epsilon reaches it; the
    lower bound is 0 there unless delta is clearly below A), and the answer is the max over the directions."""
    rows = []
    for dirn in dirs:
        rest = d - dirn.inf_mass
        if rest > 0.0:
            rows.append(_epsilon_or_point_mass([dirn], rest, order, variant))
        else:
            low = math.inf if rest < -1e-9 * d else 0.0  # certain only clear of the masses' rounding
            rows.append(Estimate(math.inf, low, math.inf, "spa", True, {"reliable": True}))
    lead = max(rows, key=float)
    lo, up = max(r.lower for r in rows), max(r.upper for r in rows)
    val, moved = clamp_into(float(lead), lo, up)
    details = {**lead.details, "inf_mass": {dirn.direction: dirn.inf_mass for dirn in dirs}}
    if moved:
        details.update(reliable=False, clamped=True)
    elif not all(r.details.get("reliable", True) or (r is not lead and r.upper <= val) for r in rows):
        details.update(reliable=False, other_direction=True)
    return Estimate(val, lo, up, "spa", True, details)


@dataclass
class _Row:
    """One direction's estimate: epsilon, the direction, and the log tilt it was found at (None: not reached)."""

    eps: float
    dirn: object
    u: float | None


def _direction_estimates(dirs, target, fn):
    """Each direction's estimate (``_Row``s), with the model's roots before polishing (by direction), the directions
    certified below the first (``dominated``), those whose SP-MSD1 root was its singularity (``fallback``) and those
    whose estimate is the first's (``mirrored``: the same law at its tilt, e.g. a Gaussian's two directions).

    The estimate is the approximation evaluated with exact CGF values: the model's root is polished by the same
    search on exact evaluations (one evaluation where the model is accurate; more where the CGF's higher
    derivatives outgrow the node spacing).  The first direction first; the other is skipped where one exact
    evaluation at the first's tilt certifies that its epsilon is below the first's estimate, else polished too
    where its model value is close to the first's.
    """
    est = []
    roots = {}  # the model's roots, before polishing (for the default estimate, the bounds' anchors)
    dominated = set()
    fallback = set()  # directions whose SP-MSD1 root was its singularity: SP-MSD0's root instead
    mirrored = set()
    margin = math.inf  # until the first direction's polish has measured the model's error
    for i, dirn in enumerate(dirs):
        guess = None
        if i > 0:
            # its epsilon is at most its largest loss, or certified at most the first's estimate (at the first's
            # tilt, else at its own saddle point under a Gaussian model, whose node starts its search otherwise)
            first = est[0]
            done = dirn.sup() <= first.eps
            if not done and first.u is not None:
                done = certified_below(dirn, dirs[0], math.exp(first.u), first.eps, target)
                if not done and dirn.mirrors(dirs[0], math.exp(first.u), fn):
                    est.append(_Row(first.eps, dirn, first.u))
                    mirrored.add(dirn)
                    if dirs[0] in fallback:
                        fallback.add(dirn)
                    continue
                if not done:
                    done, guess = below_at_guess(dirn, first.eps, target)
            if done:
                dominated.add(dirn)
                continue
        u, f_dir, fell = estimate_root(dirn, target, fn, guess=guess)
        roots[dirn] = u
        if fell:
            fallback.add(dirn)
        row = _Row(0.0 if u is None else max(dirn.eps_of(math.exp(u)), 0.0), dirn, u)
        est.append(row)
        if u is None or (i > 0 and row.eps < est[0].eps - margin):
            continue
        model = row.eps
        u, e, fell = polish_estimate(dirn, target, f_dir, u)
        if fell:
            fallback.add(dirn)
        row.u = u
        row.eps = 0.0 if u is None else max(e, 0.0)
        if i == 0:
            # the other direction is polished only where its model value could still be the larger one: within
            # a generous multiple of the model error just observed on the first, and never less than POLISH_MARGIN
            margin = max(POLISH_ERRORS * abs(row.eps - model), POLISH_MARGIN * (1.0 + row.eps))
    return est, roots, dominated, fallback, mirrored


def _epsilon(dirs, d, order, variant):
    """epsilon(delta) by the SPA (max over add and remove), with certified lower and upper bounds.

    The estimate: the saddle point where the approximation equals delta, found on the model and polished on exact
    evaluations (the approximation is always evaluated with exact CGF values).  The bounds (certified):
    Theorem 5 solved in epsilon from exact evaluations at the model's SP-MSD1 saddle point and at the tilts
    located on the model for each bound (``certified_bounds``); the lower bound is the larger of the two
    directions' (each bounds the maximum), the upper bound the larger, the other direction skipped where it is
    certified below the first's estimate, else checked at memoised nodes before its own bounds are computed.
    """
    target = math.log(d)
    key = estimate_key(order, variant)
    fn = modelled_value(key)
    est, roots, dominated, fallback, mirrored = _direction_estimates(dirs, target, fn)
    est.sort(key=lambda r: -r.eps)
    val, dom, u_dom = est[0].eps, est[0].dirn, est[0].u
    # the bounds: at each direction's anchor, the model's SP-MSD1 saddle point (the default estimate's model root,
    # so that the bounds do not depend on the estimate's order or variant); the leader first, the other where
    # its bound at its nearest memoised node does not already keep it below the leader's upper bound
    msd1, msd1_roots = modelled_value("log_msd1"), (dict(roots) if key == "log_msd1" else {})

    def anchor(dirn):
        if dirn not in msd1_roots:
            msd1_roots[dirn] = estimate_root(dirn, target, msd1)[0]
        return msd1_roots[dirn]

    lo, up, where = certified_bounds(dom, target, anchor(dom))
    for dirn in dirs:
        if dirn is dom:
            continue
        # the leader's lower bound, which the other's may beat: far below its estimate next to the upper bound, or
        # (a direction with a law of its own: a mirrored one's is the leader's) next to the estimate itself
        weak = (lo == 0.0 or val - lo > LOWER_WEAK * (up - val)
                or (dirn not in mirrored and val - lo > LOWER_GAP * val))
        if dirn in mirrored and where is not None and not weak:
            # the leader's law at its estimate's tilt: the leader's upper bound's tilt certifies this one too (a
            # weak lower bound is still searched for from this direction's own model below: its search path, not
            # its law, can find a better tilt)
            up2 = upper_at_tilt_of(dirn, dom, target, where)
            if up2 <= up + MIRROR_UPPER * (1.0 + abs(up)):
                up = max(up, up2)
                continue
        u = next((r.u for r in est if r.dirn is dirn), None)
        # certified below the leader's estimate (where that is <= up) or its largest loss below up already, else
        # first at the node nearest its estimate's tilt (memoised by the search), then at its saddle point of up
        need_up = (dirn.sup() > up and not (dirn in dominated and val <= up)
                   and (u is None or node_log_upper(dirn, math.exp(u), up, target) > target))
        if need_up:
            need_up = not _certified_at_most(dirn, up, target, None if u is None else math.exp(u))
        if need_up or weak:
            # either direction's lower bound holds for the max: the other's is computed too where the leader has
            # none or a weak one (Berry-Esseen is loose where the leader's tilted loss is skewed; the other's may
            # be the tighter); else only its upper bound (a direction whose estimate is 0 would otherwise search
            # the whole domain for a lower bound of ~0)
            try:
                lo2, up2, _ = certified_bounds(dirn, target, anchor(dirn), weak, need_up, floor=lo)
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
        b = evaluate(t, vec, e, A, dom.n_total)
        rel = exp_or_inf(b["log_err"] - b["log_clt"]) if b["log_clt"] > -math.inf else math.inf
    details = result_details(order, variant, res, rel)
    # two more certified facts: delta(largest loss) = 0, and a point mass at the largest loss keeps delta above
    # the target up to s + log(1 - delta/P) (pure-DP mechanisms at small delta; ``point_mass_epsilon``)
    up = min(up, max(dirn.sup() for dirn in dirs))
    for top in heavy_tops(dirs, target).values():
        lo = max(lo, point_mass_lower(top, target))
    val, moved = clamp_into(val, lo, up)
    if moved or (u_dom is None and up > 0):
        # outside its own certified interval, or 0 only because the approximation never reaches delta
        details.update(reliable=False, clamped=moved)
    if dom in fallback:
        details.update(reliable=False, msd1_singular=True)
    why = out_of_regime(dom, res) if details.get("reliable") else None
    if why is not None:
        details.update({"reliable": False, why: True})
    if details.get("reliable") and not _others_reliable(est, dom, val, target, mirrored):
        details.update(reliable=False, other_direction=True)
    return Estimate(val, lo, up, "spa", True, details)


def _others_reliable(est, dom, val, target, mirrored):
    """Whether the maximum over the directions is as reliable as its leader's estimate: every other direction
    with an estimate (the dominated ones are certified below the leader's) is reliable itself (a mirrored one
    shares the leader's law), or certified at most ``val`` (``_certified_at_most``).  Else the max is unreliable:
    an expansion far off in the other direction can hide a larger epsilon there (subsampled Gaussian sigma 2,
    q 0.0059, k 457, delta 1e-5: the add direction's 0.2104 is right, the remove direction's true 0.2318 came out
    0.1991 with a correction factor of -5.7)."""
    for row in est:
        if row.dirn is dom or row.dirn in mirrored:
            continue
        if row.u is not None and in_regime(row.dirn, row.dirn.at(math.exp(row.u), want_bounds=True)):
            continue
        if not _certified_at_most(row.dirn, val, target):
            return False
    return True


def _certified_at_most(dirn, eps, target, near=None):
    """True when a certified upper bound on delta(eps) of ``dirn`` (at the memoised node nearest its saddle point
    of eps, searched from the tilt ``near`` where given) is at most exp(target): its epsilon is then at most eps."""
    if dirn.sup() <= eps:
        return True
    try:
        t = dirn.saddle(eps, near)
    except ZeroDelta:
        return True
    except NumericalLimitError:
        return False
    return node_log_upper(dirn, t, eps, target) <= target


#: a mirrored direction's upper bound at the leader's upper bound's tilt is kept (the larger of the two reported)
#: where it is at most this much above the leader's, relative to 1 + epsilon, instead of its own bounds being searched
#: (which give the same to ~1e-8: sigma 0.5, k = 1e4, epsilon 20859.6379 and 20859.6380)
MIRROR_UPPER = 1e-6


#: the other direction's bounds are computed as well where the leader's lower bound is further below its estimate
#: than this many times its upper bound is above it
LOWER_WEAK = 3.0
#: ... or than this share of the estimate
LOWER_GAP = 0.15
