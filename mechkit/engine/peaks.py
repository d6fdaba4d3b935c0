"""Peak finding of tilted log-densities: the scan grid, Brent's maximisation, the peak's width and extent, and the
divergence check of a tilt.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from . import lazy
from .kernels import A1, KT, as_kernel, f8
from .quadrature import gval


@njit(cache=True, error_model="numpy", inline="always")  # inlined into peak_from_grid, its one caller
def _peak_width(mode, f1, f2, a, b, t, theta, xs, gs, d0):
    """About where g has dropped by 1 from its peak gs at xs: on each side, from the step d0 (a guess of the
    scale; at least 1e-9 (1 + |xs|)), steps growing or shrinking 4x until one has dropped by 1 and the next
    has not, then 4 bisections in log of that bracket (to ~9%); the mean of the two sides (a scale for the
    quadrature map, not a precise quantity)."""
    dmin = 1e-9 * (1.0 + abs(xs))
    total = 0.0
    for side in (-1.0, 1.0):
        d = max(d0, dmin)
        x = xs + side * d
        inside = x >= a and x <= b and gval(mode, f1, f2, x, t, theta) > gs - 1.0
        if inside:
            prev = d
            ended = False
            for _ in range(400):
                d *= 4.0
                x = xs + side * d
                if x < a or x > b or not (gval(mode, f1, f2, x, t, theta) > gs - 1.0):
                    ended = True
                    break
                prev = d
            if not ended:
                return np.inf  # g stays within 1 of its peak as far as doubles go: no finite width
        else:
            prev = d
            for _ in range(400):
                if d <= dmin:
                    prev = d
                    break
                prev = max(0.25 * d, dmin)
                x = xs + side * prev
                if x >= a and x <= b and gval(mode, f1, f2, x, t, theta) > gs - 1.0:
                    break
                d = prev
        if prev < d:
            for _ in range(4):
                mid = math.sqrt(prev * d)
                x = xs + side * mid
                if x >= a and x <= b and gval(mode, f1, f2, x, t, theta) > gs - 1.0:
                    prev = mid
                else:
                    d = mid
        total += d
    return 0.5 * total


#: how far below the scanned maximum of the tilted log-density a scanned point still counts towards the extent
#: that ``tilt_piece``'s trapezoid walk must cover
EXTENT_NATS = 60.0


@njit(cache=True, error_model="numpy", inline="always")  # inlined into peak_from_grid, its one caller
def _brent_max(mode, f1, f2, t, theta, left, right, xb, gb):
    """(x, g(x)) at the maximum of g on [left, right] by Brent's method (parabolic steps through the three best
    points, golden sections where a parabola is not trustworthy or a value is not finite), from the scanned best
    point xb (g = gb) inside; to 1e-9 (1 + |left| + |right|), as the golden section it replaced, in ~10-15
    evaluations instead of ~50 for a smooth peak.  Minimises f = -g (nan counts as +inf)."""
    cg = 0.3819660112501051
    a = left
    b = right
    x = xb
    w = xb
    v = xb
    fx = -gb
    fw = fx
    fv = fx
    d = 0.0
    e = 0.0
    for _ in range(300):
        xm = 0.5 * (a + b)
        tol1 = 0.25e-9 * (1.0 + abs(a) + abs(b))
        tol2 = 2.0 * tol1
        if abs(x - xm) <= tol2 - 0.5 * (b - a):
            break
        golden = True
        if abs(e) > tol1:
            r = (x - w) * (fx - fv)
            q = (x - v) * (fx - fw)
            p = (x - v) * q - (x - w) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            etemp = e
            e = d
            if math.isfinite(p) and math.isfinite(q) and q > 0.0 and abs(p) < abs(0.5 * q * etemp) \
                    and p > q * (a - x) and p < q * (b - x):
                d = p / q
                u = x + d
                if u - a < tol2 or b - u < tol2:
                    d = tol1 if xm >= x else -tol1
                golden = False
        if golden:
            e = (a - x) if x >= xm else (b - x)
            d = cg * e
        u = x + d if abs(d) >= tol1 else x + (tol1 if d >= 0.0 else -tol1)
        gu = gval(mode, f1, f2, u, t, theta)
        fu = -gu if gu == gu else np.inf
        if fu <= fx:
            if u >= x:
                a = x
            else:
                b = x
            v = w
            fv = fw
            w = x
            fw = fx
            x = u
            fx = fu
        else:
            if u < x:
                a = u
            else:
                b = u
            if fu <= fw or w == x:
                v = w
                fv = fw
                w = u
                fw = fu
            elif fu <= fv or v == x or v == w:
                v = u
                fv = fu
    return x, -fx


@njit(cache=True, error_model="numpy", inline="always")  # inlined into peak_scan_at (and scan_grid_at)
def scan_grid(mode, f1, f2, a, b, theta):
    """The peak scan's fixed grid on [a, b] (a geometric grid around 0, or the finite end, plus 101 equal points on a
    finite interval) with f1 and f2 there: (points, f1, f2).  It does not depend on the tilt, so a piece's grid is
    computed once and every tilt's scan (``peak_from_grid``) costs no kernel call on it.  Mode 1 (f1 alone): f2 is
    not evaluated (its column repeats f1's)."""
    pts = np.empty(420)
    npts = 0
    lo = a if a > -np.inf else -1e12
    hi = b if b < np.inf else 1e12
    anchor = 0.0
    if anchor < lo or anchor > hi:
        anchor = lo if a > -np.inf else hi
    pts[npts] = anchor
    npts += 1
    for k in range(-4, 13):
        for frac in (1.0, 2.0, 5.0):
            d = frac * 10.0 ** k
            for side in (-1.0, 1.0):
                x = anchor + side * d
                if lo <= x <= hi:
                    pts[npts] = x
                    npts += 1
    if a > -np.inf and b < np.inf:
        for i in range(101):
            pts[npts] = a + (b - a) * i / 100.0
            npts += 1
    pts = pts[:npts].copy()
    v1 = np.empty(npts)
    v2 = np.empty(npts)
    for i in range(npts):
        v1[i] = f1(pts[i], theta)
        v2[i] = f2(pts[i], theta) if mode == 0 else v1[i]
    return pts, v1, v2


@lazy.entry(types.UniTuple(A1, 3)(types.int64, types.int64, types.int64, f8, f8, A1), error_model="numpy")
def scan_grid_at(mode, f1_at, f2_at, a, b, theta):
    """``scan_grid`` with the kernels as addresses (``KernelRef.address``: no first-class function unboxing); compiled
    at the first call (the tilted moments' grids: an FFT query never asks)."""
    return scan_grid(mode, as_kernel(f1_at), as_kernel(f2_at), a, b, theta)


@njit(types.UniTuple(f8, 5)(types.int64, KT, KT, f8, f8, f8, A1, A1, A1, A1), cache=True, error_model="numpy")
def peak_from_grid(mode, f1, f2, a, b, t, theta, pts, v1, v2):
    """``peak_scan_extent`` from the grid's kernel values (``scan_grid``): the same arithmetic as ``gval``."""
    npts = pts.size
    lo = a if a > -np.inf else -1e12
    hi = b if b < np.inf else 1e12
    anchor = pts[0]
    best_x = anchor
    best_g = -np.inf
    gv = np.empty(npts)
    for i in range(npts):
        g = (1.0 + t) * v1[i] - t * v2[i] if mode == 0 and t != 0.0 else v1[i]
        gv[i] = g
        if g == g and g > best_g:
            best_g = g
            best_x = pts[i]
    if best_g == -np.inf:
        return anchor, -np.inf, 1.0, anchor, anchor
    xlo = best_x
    xhi = best_x
    for i in range(npts):
        if gv[i] >= best_g - EXTENT_NATS:
            xlo = min(xlo, pts[i])
            xhi = max(xhi, pts[i])
    left = lo
    right = hi
    for i in range(npts):
        x = pts[i]
        if best_x > x > left:
            left = x
        if best_x < x < right:
            right = x
    xs, gs = _brent_max(mode, f1, f2, t, theta, left, right, best_x, best_g)
    if not (gs >= best_g):
        xs = best_x
        gs = best_g
    return xs, gs, _peak_width(mode, f1, f2, a, b, t, theta, xs, gs, 0.25 * (right - left)), xlo, xhi


@njit(cache=True, error_model="numpy", inline="always")  # inlined into peak_scan_at: no entry of its own
def peak_scan_extent(mode, f1, f2, a, b, t, theta):
    """Locate the maximum of g(x) = (1+t) f1 - t f2 (mode 0) or f1 (mode 1) on [a, b].

    Returns (x_star, g_star, width): width is about where g has dropped by 1, a scale for the
    quadrature map.  A coarse scan over a geometric grid around 0 (or the finite end, ``scan_grid``), then Brent's
    refinement between the scanned neighbours of the best point (``peak_from_grid``).  ``peak_scan_extent`` also returns
    the smallest and largest scanned points where g is within EXTENT_NATS of the best scanned value (where a
    quadrature that walks outwards from the peak must reach at least: a second bump behind a deep valley).
    """
    pts, v1, v2 = scan_grid(mode, f1, f2, a, b, theta)
    return peak_from_grid(mode, f1, f2, a, b, t, theta, pts, v1, v2)


@njit(types.UniTuple(f8, 3)(types.int64, types.int64, types.int64, f8, f8, f8, A1), cache=True, error_model="numpy")
def peak_scan_at(mode, f1_at, f2_at, a, b, t, theta):
    """``peak_scan_extent`` without the extent, (x_star, g_star, width), the kernels as addresses
    (``KernelRef.address``: a first-class function argument costs ~3 us of unboxing a call from Python)."""
    xs, gs, w, _, _ = peak_scan_extent(mode, as_kernel(f1_at), as_kernel(f2_at), a, b, t, theta)
    return xs, gs, w


@njit(cache=True, error_model="numpy", inline="always")  # inlined into tilt_diverges_at and tilted's tilt_piece
def tilt_diverges(lp, lq, a, b, t, gs, theta):
    """True when the tilted integrand (1+t) lp - t lq does not decay at an infinite end of [a, b] (M(t) = inf);
    gs is its maximum on the piece."""
    for k in range(2):
        end = a if k == 0 else b
        x = -1e8 if k == 0 else 1e8
        if end == -np.inf or end == np.inf:
            g1 = gval(0, lp, lq, x, t, theta)
            g2 = gval(0, lp, lq, 2.0 * x, t, theta)
            if math.isfinite(g1) and math.isfinite(g2) and g2 >= g1 - 1.0 and g2 > gs - 700.0:
                return True
    return False


@njit(types.boolean(types.int64, types.int64, f8, f8, f8, f8, A1), cache=True, error_model="numpy")
def tilt_diverges_at(lp_at, lq_at, a, b, t, gs, theta):
    """``tilt_diverges`` with the kernels as addresses (its Python callers; compiled ones pass the kernels)."""
    return tilt_diverges(as_kernel(lp_at), as_kernel(lq_at), a, b, t, gs, theta)
