"""Adaptive Gauss-Kronrod (7-15) quadrature of tilted log-densities on a piece, in scaled arithmetic, with a
QUADPACK-style round-off stop.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from .kernels import A1, A2, KT, as_kernel, f8

_XGK = np.array([
    0.995657163025808080735527280689003, 0.973906528517171720077964012084452,
    0.930157491355708226001207180059508, 0.865063366688984510732096688423493,
    0.780817726586416897063717578345042, 0.679409568299024406234327365114874,
    0.562757134668604683339000099272694, 0.433395394129247190799265943165784,
    0.294392862701460198131126603103866, 0.148874338981631210884826001129720,
    0.0])


_WGK = np.array([
    0.011694638867371874278064396062192, 0.032558162307964727478818972459390,
    0.054755896574351996031381300244580, 0.075039674810919952767043140916190,
    0.093125454583697605535065465083366, 0.109387158802297641899210590325805,
    0.123491976262065851077600501689580, 0.134709217311473325928054001771707,
    0.142775938577060080797094273138717, 0.147739104901338491374841515972068,
    0.149445554002916905664936468389821])


_WG = np.array([
    0.066671344308688137593568809893332, 0.149451349150580593145776339657697,
    0.219086362515982043995534934228163, 0.269266719309996355091226921569469,
    0.295524224714752870173892994651338])


@njit(f8(f8, f8, f8), cache=True, error_model="numpy")  # compiled with the module: gk_integrate calls it from Python
def u_of_x(x, c, w):
    """Inverse of x = c + w * u / (1 - u^2), u in (-1, 1)."""
    if x == np.inf:
        return 1.0
    if x == -np.inf:
        return -1.0
    y = (x - c) / w
    if y == 0.0:
        return 0.0
    return 2.0 * y / (1.0 + math.sqrt(1.0 + 4.0 * y * y))


@njit(types.void(types.int64, KT, KT, KT, f8, f8, f8, f8, f8, f8, types.int64, A1, A1), cache=True, error_model="numpy")
def _integrand(mode, f1, f2, f3, u, c, w, t, shift, mu, nmom, theta, out):
    """Fill out[0..nmom] with the mapped integrand at u.

    mode 0: exp((1+t) f1 - t f2 - shift) * (f3 - mu)^j       (tilted moments of the loss f3)
    mode 1: exp(f1 - shift)                                    (mass of a log-density)
    mode 2: exp(f1 - shift) * (-expm1(t - f3))_+                 (hockey-stick integrand, t = epsilon)
    mode 3: exp((1+t) f1 - t f2 - shift) * |f3 - mu|^3           (tilted absolute third central moment)
    mode 4: modes 0 and 3 in one pass: out[0..nmom-1] the moments of mode 0 about mu, out[nmom] |f3 - mu|^3
    mode 5: exp((1+t) f1 - t f2 - shift) * |f3 - mu|             (tilted mean absolute deviation)
    """
    one_m = 1.0 - u * u
    x = c + w * u / one_m
    jac = w * (1.0 + u * u) / (one_m * one_m)
    for j in range(nmom + 1):
        out[j] = 0.0
    if not (math.isfinite(x) and math.isfinite(jac)):
        return
    if mode == 0 or mode == 3 or mode == 4 or mode == 5:
        lp = f1(x, theta)
        if lp == -np.inf:
            return
        if t == 0.0:
            lg = lp
        elif t == -1.0:
            lg = f2(x, theta)
        else:
            lg = (1.0 + t) * lp - t * f2(x, theta)
        v = math.exp(lg - shift) * jac
        if v == 0.0 or v != v:
            return
        d = f3(x, theta) - mu
        if mode == 3:
            d = abs(d)
            out[0] = v * d * d * d
            return
        if mode == 5:
            out[0] = v * abs(d)
            return
        top = nmom if mode == 4 else nmom + 1
        p = 1.0
        for j in range(top):
            out[j] = v * p
            p *= d
        if mode == 4:
            ad = abs(d)
            out[nmom] = v * ad * ad * ad
    elif mode == 1:
        v = math.exp(f1(x, theta) - shift) * jac
        if v == v:
            out[0] = v
    else:
        loss = f3(x, theta)
        if loss > t:
            v = math.exp(f1(x, theta) - shift) * jac * (-math.expm1(t - loss))
            if v == v:
                out[0] = v


@njit(types.void(types.int64, KT, KT, KT, f8, f8, f8, f8, f8, f8, f8, types.int64, A1, A1, A1, A1, A2, A1),
      cache=True, error_model="numpy")
def _gk_interval(mode, f1, f2, f3, u0, u1, c, w, t, shift, mu, nmom, theta, res, err, absres, fv, gauss):
    """GK21 on [u0, u1]: res, err and absres (the integral of |f|) per component; fv (21, nmom + 1) and gauss are
    work arrays.  The error estimate is |K21 - G10|, except in mode 4 (the SPA's tilted moments, whose callers put
    the one kink of |L - mu|^3 on an interval end, so every interval's integrand is smooth), where it is QUADPACK's
    (``resasc min(1, (200 |K21 - G10| / resasc)^1.5)``, floored at 50 ulp of absres): |K21 - G10| is the error of
    the 10-point rule, orders of magnitude above the 21-point rule's own on smooth integrands."""
    half = 0.5 * (u1 - u0)
    ctr = 0.5 * (u1 + u0)
    m = nmom + 1
    for j in range(m):
        res[j] = 0.0
        absres[j] = 0.0
        gauss[j] = 0.0
    # the centre, then the pairs of nodes outwards, in one loop: one call site of the integrand (each site is a
    # copy of its machine code after inlining, and of its compile time)
    for p in range(21):
        if p == 0:
            k, row, x = 10, fv[20], ctr
        else:
            k = (p - 1) // 2
            row = fv[p - 1]
            x = ctr - half * _XGK[k] if (p - 1) % 2 == 0 else ctr + half * _XGK[k]
        _integrand(mode, f1, f2, f3, x, c, w, t, shift, mu, nmom, theta, row)
        for j in range(m):
            res[j] += _WGK[k] * row[j]
            absres[j] += _WGK[k] * abs(row[j])
            if p > 0 and k % 2 == 1:
                gauss[j] += _WG[k // 2] * row[j]
    for j in range(m):
        e = abs(res[j] - gauss[j]) * half
        if mode == 4:
            mean = 0.5 * res[j]
            asc = _WGK[10] * abs(fv[20, j] - mean)
            for k in range(10):
                asc += _WGK[k] * (abs(fv[2 * k, j] - mean) + abs(fv[2 * k + 1, j] - mean))
            asc *= abs(half)
            if asc != 0.0 and e != 0.0:
                e = asc * min(1.0, (200.0 * e / asc) ** 1.5)
            e = max(e, 50.0 * 2.220446049250313e-16 * absres[j] * abs(half))
        res[j] *= half
        absres[j] *= half
        err[j] = e


@njit(cache=True, error_model="numpy", inline="always")
def _sum_rows(vals, errs, absv, n, tot, tot_err, tot_abs):
    """tot, tot_err, tot_abs (in place) = the column sums of the first n rows of vals, errs, absv."""
    m = tot.shape[0]
    for j in range(m):
        tot[j] = 0.0
        tot_err[j] = 0.0
        tot_abs[j] = 0.0
    for i in range(n):
        for j in range(m):
            tot[j] += vals[i, j]
            tot_err[j] += errs[i, j]
            tot_abs[j] += absv[i, j]


@njit(cache=True, error_model="numpy", inline="always")
def _worst_row(errs, n, tot_abs):
    """The row among the first n whose largest error relative to its component's total |f| is the largest."""
    best = 0
    best_score = -1.0
    for i in range(n):
        sc = 0.0
        for j in range(tot_abs.shape[0]):
            r = errs[i, j] / (tot_abs[j] + 1e-300)
            if r > sc:
                sc = r
        if sc > best_score:
            best_score = sc
            best = i
    return best


# Explicit loops instead of slice assignment: a slice assignment compiles Numba's shape-mismatch error path
# (string formatting included), most of this module's first compilation.
@njit(cache=True, error_model="numpy", inline="always")
def _set_rows(vals, errs, absv, i, res, err, ab):
    for j in range(res.shape[0]):
        vals[i, j] = res[j]
        errs[i, j] = err[j]
        absv[i, j] = ab[j]


@njit(cache=True, error_model="numpy", inline="always")
def _grown(a, n, cap):
    out = np.empty(cap)
    for i in range(n):
        out[i] = a[i]
    return out


@njit(cache=True, error_model="numpy", inline="always")
def _grown_rows(a, n, cap):
    out = np.empty((cap, a.shape[1]))
    for i in range(n):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j]
    return out


@njit(types.Tuple((A1, A1))(types.int64, types.int64, types.int64, types.int64, A1, f8, f8, f8, f8, f8, types.int64,
                            A1, f8), cache=True, error_model="numpy")
def gk_adaptive(mode, f1_at, f2_at, f3_at, edges, c, w, t, shift, mu, nmom, theta, rtol):
    """Adaptive GK21 in the mapped variable u, starting from the intervals between consecutive ``edges``:
    the interval with the largest relative error contribution is halved until every component's error estimate
    is within rtol of its integral of |f|.  Returns (integrals[0..nmom], estimated absolute errors).  The kernels
    come as addresses (``KernelRef.address``; ``tilt_piece`` passes the ones it was given): a first-class function
    argument costs ~3 us of unboxing a call from Python."""
    f1 = as_kernel(f1_at)
    f2 = as_kernel(f2_at)
    f3 = as_kernel(f3_at)
    m = nmom + 1
    max_cap = 6000
    cap = 64  # grown on demand: a 6000-row allocation up front costs more than most calls (mmap + page faults)
    lo = np.empty(cap)
    hi = np.empty(cap)
    vals = np.empty((cap, m))
    errs = np.empty((cap, m))
    absv = np.empty((cap, m))
    fv = np.empty((21, m))
    gauss = np.empty(m)
    res = np.empty(m)
    err = np.empty(m)
    ab = np.empty(m)
    n = 0
    for i in range(edges.shape[0] - 1):
        x0 = edges[i]
        x1 = edges[i + 1]
        if not (x1 > x0):
            continue
        _gk_interval(mode, f1, f2, f3, x0, x1, c, w, t, shift, mu, nmom, theta, res, err, ab, fv, gauss)
        lo[n] = x0
        hi[n] = x1
        _set_rows(vals, errs, absv, n, res, err, ab)
        n += 1
    tot = np.zeros(m)
    tot_err = np.zeros(m)
    tot_abs = np.zeros(m)
    pval = np.zeros(m)
    perr = np.zeros(m)
    iroff = 0
    # one exit (each return of two fresh arrays is a copy of that code): the totals (zeros where nothing was
    # integrated: the first check stops there), or zeros where the iterations ran out
    done = False
    for it in range(max_cap):
        if n + 1 >= cap and cap < max_cap:
            cap = min(2 * cap, max_cap)
            lo, hi = _grown(lo, n, cap), _grown(hi, n, cap)
            vals, errs, absv = _grown_rows(vals, n, cap), _grown_rows(errs, n, cap), _grown_rows(absv, n, cap)
        if it % 64 == 0:  # running sums, refreshed now and then against drift
            _sum_rows(vals, errs, absv, n, tot, tot_err, tot_abs)
        ok = True
        for j in range(m):
            if tot_err[j] > rtol * tot_abs[j] + 1e-300:
                ok = False
        if ok or n + 1 >= max_cap:
            done = True
            break
        best = _worst_row(errs, n, tot_abs)  # split the interval with the largest relative error contribution
        a0 = lo[best]
        b0 = hi[best]
        mid = 0.5 * (a0 + b0)
        if not (a0 < mid < b0):
            done = True
            break
        for j in range(m):
            pval[j] = vals[best, j]
            perr[j] = errs[best, j]
            tot[j] -= vals[best, j]
            tot_err[j] -= errs[best, j]
            tot_abs[j] -= absv[best, j]
        for h in range(2):  # the two halves, in the interval's row and a new one (one call site: see _gk_interval)
            x0, x1, row = (a0, mid, best) if h == 0 else (mid, b0, n)
            _gk_interval(mode, f1, f2, f3, x0, x1, c, w, t, shift, mu, nmom, theta, res, err, ab, fv, gauss)
            lo[row] = x0
            hi[row] = x1
            _set_rows(vals, errs, absv, row, res, err, ab)
        n += 1
        noisy = True
        for j in range(m):
            tot[j] += vals[best, j] + vals[n - 1, j]
            tot_err[j] += max(errs[best, j] + errs[n - 1, j], 0.0)
            tot_abs[j] += absv[best, j] + absv[n - 1, j]
            # roundoff (QUADPACK's test): halving changed nothing and did not reduce the error estimate
            same = abs(vals[best, j] + vals[n - 1, j] - pval[j]) <= 1e-5 * abs(pval[j]) + 1e-300
            if not (same and errs[best, j] + errs[n - 1, j] >= 0.99 * perr[j]):
                noisy = False
        if noisy:
            iroff += 1
            if iroff >= 10:  # the error estimate is at the floor set by the integrand's own rounding
                done = True
                break
    if not done:
        for j in range(m):
            tot[j] = 0.0
            tot_err[j] = 0.0
    return tot, tot_err


@njit(A1(f8, f8, types.int64), cache=True, error_model="numpy")
def equal_edges(ua, ub, n):
    """n equal intervals of [ua, ub] (n + 1 edges), as ``gk_adaptive`` starts from them."""
    edges = np.empty(n + 1)
    for i in range(n + 1):
        edges[i] = ua + (ub - ua) * i / n
    return edges


def gk_integrate(mode, f1, f2, f3, a, b, c, w, t, shift, mu, nmom, theta, rtol, nsplit, kink=math.nan):
    """Adaptive GK21 integral over x in [a, b] (ends may be infinite) in the mapped variable u.

    The map x = c + w u/(1-u^2) puts the bulk of the integrand (centre c, width w) at u ~ 0; the search starts
    from ``nsplit`` equal intervals in u, or, with ``kink`` (an x inside (a, b) where the integrand has a kink:
    |L - mu|^p at L = mu), from nsplit // 2 on each side of it, so that no interval straddles it (the kink inside
    an interval costs the adaptive search many halvings: |L - mu| at a subsampled Gaussian's mean 150 us, 70 us
    split).  Returns (integrals[0..nmom], estimated absolute errors[0..nmom]).
    A Python function: compiled, it would hold a second copy of ``gk_adaptive``'s machine code (Numba links a
    callee into each compiled caller), a large part of the engine's first compilation.
    """
    ua = u_of_x(float(a), float(c), float(w))
    ub = u_of_x(float(b), float(c), float(w))
    if not (ub > ua):
        return np.zeros(nmom + 1), np.zeros(nmom + 1)
    uk = u_of_x(float(kink), float(c), float(w)) if a < kink < b else math.nan
    if ua < uk < ub:
        half = max(nsplit // 2, 1)
        edges = np.concatenate((equal_edges(ua, uk, half), equal_edges(uk, ub, half)[1:]))
    else:
        edges = equal_edges(ua, ub, nsplit)
    return gk_adaptive(mode, f1.address, f2.address, f3.address, edges, c, w, t, shift, mu, nmom, theta, rtol)


@njit(f8(types.int64, KT, KT, f8, f8, A1), cache=True, error_model="numpy")
def gval(mode, f1, f2, x, t, theta):
    if mode == 0 and t != 0.0:
        return (1.0 + t) * f1(x, theta) - t * f2(x, theta)
    return f1(x, theta)
