"""Tilted moments of a piece: the trapezoid rule on whole-line pieces (with its own convergence test), tilt_piece
(peak scan, divergence check, quadrature) and the cumulants K..K^(n) from tilted moments.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from .kernels import A1, KT, as_kernel, f8
from .peaks import peak_from_grid, tilt_diverges
from .quadrature import equal_edges, gk_adaptive, gval, u_of_x
from .roots import checked_inverse
from .scalars import cumulants_from_central

#: the trapezoid walk stops on a side once two consecutive points contribute less than this (relative to the
#: integrand's peak, every component) beyond the scanned extent
TRAP_NEGLIGIBLE = 1e-19


#: the trapezoid gives up (the caller falls back to adaptive GK21) beyond this many integrand evaluations, or
#: where its first level (step half the peak's width) needs more than TRAP_LEVEL0_POINTS to reach the negligible
#: tails: slowly decaying tails (e.g. exponential, the logistic mechanism's) cost adaptive GK21 less
TRAP_MAX_POINTS = 400


TRAP_LEVEL0_POINTS = 80


#: tilt_piece tries the trapezoid only where the peak scan's extent spans at most this many level-0 steps (a
#: performance choice, not a correctness one: subsampled Gaussians measure 13-53, the logistic mechanism's
#: exponential tails 59-115, where the walk would exceed TRAP_LEVEL0_POINTS and fall back anyway)
TRAP_EXTENT_POINTS = 56


#: the absolute third moment (a certificate's ingredient, returned with its error estimate added) is refined
#: until its levels agree to this
TRAP_ABS3_RTOL = 1e-3


@njit(f8(KT, KT, KT, f8, f8, f8, f8, types.int64, A1, A1), cache=True, error_model="numpy")
def _trap_point(lp, lq, L, x, t, shift, mu, nmom, theta, acc):
    """Add the tilted-moment integrand at x into acc: acc[j] += v (L - mu)^j (j < nmom), acc[nmom] += v |L - mu|^3,
    acc[m + j] the same in absolute value and acc[2m + j] times the conditioning of v (m = nmom + 1), with
    v = exp((1+t) lp - t lq - shift).  Returns the largest absolute term, -1 where v overflows."""
    m = nmom + 1
    if t == -1.0:
        lg = lq(x, theta)
        cond = abs(lg)
    else:
        lpv = lp(x, theta)
        if lpv == -np.inf:
            return 0.0
        if t == 0.0:
            lg = lpv
            cond = abs(lg)
        else:
            lqv = lq(x, theta)
            lg = (1.0 + t) * lpv - t * lqv
            cond = abs((1.0 + t) * lpv) + abs(t * lqv)
    e = lg - shift
    if e > 700.0:
        return -1.0
    v = math.exp(e)
    if v == 0.0 or v != v:
        return 0.0
    cond += abs(shift) + 1.0
    d = L(x, theta) - mu
    p = v
    big = v
    for j in range(nmom):
        ap = abs(p)
        acc[j] += p
        acc[m + j] += ap
        acc[2 * m + j] += ap * cond
        if ap > big:
            big = ap
        p *= d
    ad = abs(d)
    a3 = v * ad * ad * ad
    acc[nmom] += a3
    acc[m + nmom] += a3
    acc[2 * m + nmom] += a3 * cond
    if a3 > big:
        big = a3
    return big


@njit(types.Tuple((A1, types.boolean))(KT, KT, KT, f8, f8, f8, f8, f8, types.int64, A1, f8, f8, f8, f8),
      cache=True, error_model="numpy")
def trap_moments(lp, lq, L, t, x0, h, shift, mu, nmom, theta, rtol, xlo, xhi, c3):
    """Tilted moments on the whole line by the trapezoid rule on x = x0 + i h, halving h until two levels agree.

    For integrands analytic in a strip about the real axis and decaying like the tilted densities of smooth
    mechanisms, the rule converges geometrically in 1/h (a few dozen points where adaptive GK21 needs several
    hundred).  Level 0 walks outwards from x0 until every component is negligible (TRAP_NEGLIGIBLE) beyond
    [xlo, xhi]; each level adds the midpoints.  Done when every moment j < nmom changed by at most rtol of its
    integral of |f| (plus its rounding: the conditioning of the tilted log-density); the absolute third moment,
    whose integrand has a kink at x0 (where L = mu; c3 = 0 where there is none), carries the Euler-Maclaurin
    term of that kink, c3 h^4, and is returned with the last change added (an upper estimate).
    Returns (integrals[0..nmom], converged); not converged where level 0 needs more than TRAP_LEVEL0_POINTS, beyond
    TRAP_MAX_POINTS in all or where v overflows."""
    m = nmom + 1
    S = np.zeros(3 * m)
    out = np.zeros(m)
    if _trap_point(lp, lq, L, x0, t, shift, mu, nmom, theta, S) < 0.0:
        return out, False
    npts = 1
    ilo = 0
    ihi = 0
    for side in (-1, 1):
        i = 0
        quiet = 0
        while quiet < 2:
            i += 1
            x = x0 + side * i * h
            big = _trap_point(lp, lq, L, x, t, shift, mu, nmom, theta, S)
            npts += 1
            if big < 0.0 or npts > TRAP_LEVEL0_POINTS or not math.isfinite(x):
                return out, False
            past = x > xhi if side > 0 else x < xlo
            quiet = quiet + 1 if (big < TRAP_NEGLIGIBLE and past) else 0
        if side < 0:
            ilo = -i
        else:
            ihi = i
    prev = np.empty(m)
    for j in range(m):
        prev[j] = S[j] * h
    prev[nmom] += c3 * h ** 4
    while True:
        nk = ihi - ilo
        if npts + nk > TRAP_MAX_POINTS:
            return out, False
        for k in range(nk):
            if _trap_point(lp, lq, L, x0 + (ilo + k + 0.5) * h, t, shift, mu, nmom, theta, S) < 0.0:
                return out, False
        npts += nk
        h *= 0.5
        ilo *= 2
        ihi *= 2
        ok = True
        for j in range(m):
            out[j] = S[j] * h
            if j == nmom:
                out[j] += c3 * h ** 4
            tol = (rtol if j < nmom else TRAP_ABS3_RTOL) * S[m + j] * h + 1e-15 * S[2 * m + j] * h + 1e-300
            if abs(out[j] - prev[j]) > tol:
                ok = False
        if ok:
            out[nmom] += abs(out[nmom] - prev[nmom])
            return out, True
        for j in range(m):
            prev[j] = out[j]


@njit(cache=True, error_model="numpy", inline="always")
def tilt_piece(lp_at, lq_at, L_at, inv_at, has_inv, a, b, inc, La, Lb, t, mu, nmom, theta, rtol, nsplit, pts, vp,
               vq):
    """One monotone piece's share of a tilted-moment pass in one call: peak scan, divergence check and quadrature:
    on the whole line with short tails the trapezoid rule from the kink of |L - mu|^3 (``trap_moments``), else (or
    where it does not converge) adaptive GK21 (mode 4, QUADPACK's error estimate) started from ``nsplit`` intervals
    on each side of
    the kink of |L - mu|^3 (where L = mu, found with the piece's checked inverse; L runs monotonically from La at
    a to Lb at b), so that every interval's integrand is smooth.

    Returns (shift, integrals, mu): the integrals of exp((1+t) lp - t lq - shift) (L - mu)^j for j < nmom and of
    exp(...) |L - mu|^3 (index nmom); mu = nan asks for the loss at the tilted density's peak as the centre (no
    model of K'(t) at hand: usually within a few standard deviations of the tilted mean), and the mu used is
    returned.  shift = +inf: the tilted MGF diverges on the piece (the integrand does not
    decay at an infinite end); shift = -inf: the piece has no tilted mass.  The kernels (log p, log q, L and the
    closed-form inverse of L, or L where there is none) come as addresses (``KernelRef.address``); pts, vp, vq is
    the piece's peak-scan grid with log p and log q on it (``scan_grid``, mode 0: computed once per piece).
    """
    lp = as_kernel(lp_at)
    lq = as_kernel(lq_at)
    L = as_kernel(L_at)
    inv = as_kernel(inv_at)
    xs, gs, w, xlo, xhi = peak_from_grid(0, lp, lq, a, b, t, theta, pts, vp, vq)
    if not (gs > -np.inf and gs < np.inf):
        return gs, np.zeros(nmom + 1), mu
    if tilt_diverges(lp, lq, a, b, t, gs, theta):
        return np.inf, np.zeros(nmom + 1), mu
    if mu != mu:
        mu = L(xs, theta)
        if not math.isfinite(mu):  # (a peak where one density vanishes) any finite centre; the caller re-centres
            mu = 0.0
    xk = np.nan  # the kink of |L - mu|^3
    if min(La, Lb) < mu < max(La, Lb):
        xk = checked_inverse(inv, has_inv, L, mu, a, b, inc, 1e-12, theta)
    if a == -np.inf and b == np.inf and w > 0.0 and (xhi - xlo) <= TRAP_EXTENT_POINTS * 0.5 * w:
        # the whole line, tails about as short as a Gaussian's: the trapezoid rule from the kink (GK21 below where
        # it does not converge)
        x0 = xs
        c3 = 0.0
        if math.isfinite(xk):
            x0 = xk
            dx = 1e-4 * w
            d1 = abs(L(xk + dx, theta) - L(xk - dx, theta)) / (2.0 * dx)
            # Euler-Maclaurin: F = |L - mu|^3 e^g has a third derivative jumping by 12 L'^3 e^g at the kink
            c3 = -(d1 * d1 * d1) * math.exp(gval(0, lp, lq, xk, t, theta) - gs) / 60.0
            if not math.isfinite(c3):
                c3 = 0.0
        res, ok = trap_moments(lp, lq, L, t, x0, 0.5 * w, gs, mu, nmom, theta, rtol, xlo, xhi, c3)
        if ok:
            return gs, res, mu
    w *= 4.0  # a map 4x wider than the peak: fewer halvings towards u = +/-1 (20 -> 14 intervals, Gaussian tails)
    ua = u_of_x(a, xs, w)
    ub = u_of_x(b, xs, w)
    uk = u_of_x(xk, xs, w) if math.isfinite(xk) else np.nan
    if not (ua < uk < ub):  # no kink inside the piece: equal intervals
        if not (ub > ua):
            return gs, np.zeros(nmom + 1), mu
        edges = equal_edges(ua, ub, nsplit)
    else:
        edges = np.empty(2 * nsplit + 1)
        for i in range(nsplit + 1):
            edges[i] = ua + (uk - ua) * i / nsplit
            edges[nsplit + i] = uk + (ub - uk) * i / nsplit
    # one call site (tilt_piece is inlined into its callers: each site is a copy of that call's code)
    return gs, gk_adaptive(4, lp_at, lq_at, L_at, edges, xs, w, t, gs, mu, nmom, theta, rtol)[0], mu


@njit(types.Tuple((A1, f8))(A1, f8, f8, types.int64), cache=True, error_model="numpy")
def tilt_cumulants(tot, g, center, n):
    """([K, K', ..., K^(n)], A) from one tilted-moment pass: tot[j] = e^-g E~[(L - center)^j] (j = 0..n, the
    unnormalised tilted moments about ``center``) and tot[n + 1] the same for |L - center|^3.  Central moments by
    the binomial shift (the mean is close to the centre next to the spread), cumulants from them, and
    A = ((E|L - c|^3)^(1/3) + |K' - c|)^3 >= E|L - K'|^3 (Minkowski).  All inf where the mass is not positive."""
    out = np.empty(n + 1)
    if not (tot[0] > 0.0 and tot[0] < np.inf):
        out[:] = np.inf
        return out, np.inf
    raw = tot / tot[0]
    m1 = raw[1]
    cen = np.zeros(7)
    for j in range(2, n + 1):
        s = 0.0
        binom = 1.0
        for i in range(j + 1):  # sum_i C(j, i) raw_i (-m1)^(j - i)
            s += binom * raw[i] * (-m1) ** (j - i)
            binom = binom * (j - i) / (i + 1)
        cen[j] = s
    ks = cumulants_from_central(cen[2], cen[3], cen[4], cen[5], cen[6])
    out[0] = math.log(tot[0]) + g
    out[1] = center + m1
    for j in range(2, n + 1):
        out[j] = ks[j - 2]
    return out, (raw[n + 1] ** (1.0 / 3.0) + abs(m1)) ** 3


@njit(types.Tuple((A1, f8, f8, types.int64))(types.int64, types.int64, types.int64, types.int64, types.boolean, f8, f8,
                                             types.boolean, f8, f8, f8, f8, types.int64, A1, f8, types.int64, A1, A1,
                                             A1, f8), cache=True, error_model="numpy")
def tilt_stats_piece(lp_at, lq_at, L_at, inv_at, has_inv, a, b, inc, La, Lb, t, mu, n, theta, rtol, nsplit, pts, vp,
                     vq, sign):
    """``tilt_piece`` and ``tilt_cumulants`` in one call for a law with one monotone piece and no atoms: ([K(t), ...,
    K^(n)(t)] with K^(j) multiplied by sign^j, A, the centre used, status); status 0, or 1 where the tilted MGF
    diverges (vec and A inf), 2 where the piece has no tilted mass (the caller's general path decides)."""
    gs, res, mu2 = tilt_piece(lp_at, lq_at, L_at, inv_at, has_inv, a, b, inc, La, Lb, t, mu, n + 1, theta, rtol, nsplit,
                              pts, vp, vq)
    if gs == np.inf:
        out = np.empty(n + 1)
        out[:] = np.inf
        return out, np.inf, mu, 1
    if not gs > -np.inf:
        return np.zeros(n + 1), np.nan, mu, 2
    vec, A = tilt_cumulants(res, gs, mu2, n)
    if sign != 1.0:
        f = 1.0
        for j in range(n + 1):
            vec[j] *= f
            f *= sign
    return vec, A, mu2, 0
