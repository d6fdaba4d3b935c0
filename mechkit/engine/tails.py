"""Tail masses of a law of L in one compiled pass per piece: atoms and monotone pieces on the evaluated side of
each point, then the complement where the other side was asked for.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from . import lazy
from .kernels import A1, as_kernel, f8
from .roots import checked_inverse
from .scalars import lae, log1mexp


@njit(cache=True, error_model="numpy", inline="always")
def _above(s, split, closed):
    """True where s is evaluated on its upper side: above the split, and at the split itself when ``closed``.

    ``closed``: the atom at s belongs to the lower side ({L <= s} below, {L > s} above); else {L < s} below
    and {L >= s} above.  A point at the split goes to the side without the atom at the split.
    """
    return s > split or (s == split and closed)


@njit(cache=True, error_model="numpy", inline="always")
def _scale(logv, prob):
    """A log-mass as accumulated: the mass (``prob``) or the log itself."""
    return math.exp(logv) if prob else logv


@njit(cache=True, error_model="numpy", inline="always")
def _add(acc, v, prob):
    """acc plus v, both as accumulated (``_scale``)."""
    return acc + v if prob else lae(acc, v)


@lazy.entry(types.void(A1, A1, A1, A1, f8, types.boolean, types.boolean, A1), error_model="numpy", nogil=True)
def atom_tails(values, below, above, ss, split, closed, prob, out):
    """out_i = the atoms' mass on the evaluated side of s_i (``_above``), from the log-sums over the atoms
    before index j (``below``) and from index j on (``above``), j = 0..n for the sorted values."""
    n = values.shape[0]
    for i in range(ss.shape[0]):
        s = ss[i]
        lo = 0  # bisection: lo = the number of atoms below s (at s too when closed)
        hi = n
        while lo < hi:
            mid = (lo + hi) // 2
            if values[mid] < s or (closed and values[mid] == s):
                lo = mid + 1
            else:
                hi = mid
        out[i] = _scale(above[lo] if _above(s, split, closed) else below[lo], prob)


@njit(cache=True, error_model="numpy", inline="always")
def _beyond(k, mode, gend, x, right, prob, theta):
    """Mass of (x, b) (right) or (a, x) on a piece: mode 0, k is its closed-form log tail (mode 3: the tail
    itself, used for probabilities); mode 1, k is the antiderivative G with value gend at that end.  nan where
    there is none, or where G's difference is not positive, not finite, or below 1e-3 of the values
    (cancellation): the caller integrates those."""
    if mode == 0:
        return _scale(k(x, theta), prob)
    if mode == 3:  # k is the tail probability itself
        v = k(x, theta)
        return v if prob else math.log(v)
    if mode == 1:
        g = k(x, theta)
        d = (gend - g) if right else (g - gend)
        if d > 0.0 and d < np.inf and d > 1e-3 * max(abs(g), abs(gend)):
            return d if prob else math.log(d)
    return np.nan


@njit(types.int64(types.int64, types.boolean, types.int64, types.int64, types.int64, f8, types.int64, types.int64, f8,
                  A1, f8, f8, types.boolean, f8, f8, f8, f8, f8, types.boolean, types.boolean, A1, A1, A1,
                  types.int64[::1], types.boolean[::1]), cache=True, error_model="numpy", nogil=True)
def piece_tails(inv_at, has_inv, f_at, kl_at, ml, gl, kr_at, mr, gr, ss, a, b, increasing, lo, hi, logmass, tol, split,
                closed, prob, theta, acc, xs, pending, right_of):
    """Add one monotone piece's mass on the evaluated side of each s_i to acc_i, in one pass (the kernels inv, f,
    kl, kr as addresses, ``KernelRef.address``: a first-class function argument costs ~3 us of unboxing a call
    from Python).

    The piece runs over x in (a, b), where L takes the values in (lo, hi) and P_m has log mass ``logmass``.
    Inside (lo, hi) the side of s is the mass beyond x = L^{-1}(s) (the checked inverse): (kl, ml, gl) give
    the mass left of x, (kr, mr, gr) right of it (``_beyond``).  Where that is nan the point is left out;
    its index, x and side go to pending / xs / right_of, and the count is returned.
    """
    inv, f, kl, kr = as_kernel(inv_at), as_kernel(f_at), as_kernel(kl_at), as_kernel(kr_at)
    whole = _scale(logmass, prob)
    k = 0
    for i in range(ss.shape[0]):
        s = ss[i]
        up = _above(s, split, closed)
        if (s <= lo) if up else (s >= hi):
            acc[i] = _add(acc[i], whole, prob)
            continue
        if (s >= hi) if up else (s <= lo):
            continue
        x = checked_inverse(inv, has_inv, f, s, a, b, increasing, tol, theta)
        right = up == increasing  # {L > s} is (x, b) on an increasing piece
        # one call site (each is a copy of the callee's machine code after inlining, and of its compile time)
        v = _beyond(kr if right else kl, mr if right else ml, gr if right else gl, x, right, prob, theta)
        if v == v:
            acc[i] = _add(acc[i], v, prob)
        else:
            pending[k] = i
            xs[k] = x
            right_of[k] = right
            k += 1
    return k


@njit(types.void(A1, A1, f8, types.boolean, types.boolean, types.boolean), cache=True, error_model="numpy",
      nogil=True)
def finish_tails(acc, ss, split, closed, want_above, prob):
    """In place: the mass of the evaluated side of s_i (``_above``) -> that of the wanted side, by complement
    (1 - p, or log(1 - e^x)) where the other side was evaluated."""
    for i in range(ss.shape[0]):
        if _above(ss[i], split, closed) != want_above:
            acc[i] = max(1.0 - acc[i], 0.0) if prob else log1mexp(min(acc[i], 0.0))
