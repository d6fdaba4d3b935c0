"""Independent references for densities with pieces (mpmath, NumPy and SciPy only; nothing from mechkit).

A test mechanism is given by its densities as plain functions (lambdified from the same SymPy expressions the
user writes, so that the reference shares no derived quantity with mechkit) and by the points where p or q
changes form or the loss log p/q changes monotonicity (``cuts``, written by hand from the formulas).

* ``hockey_stick(f, g, eps, cuts)``: the one-shot curve H_{e^eps}(f || g) = integral of (f - e^eps g)_+, by
  mpmath quadrature at 30 digits, split at the cuts and at every root of f - e^eps g (a sign scan on each part,
  then bisection), so that each integrand is smooth.  Remove is (p, q), add is (q, p).  Given the densities as
  NumPy functions too, the sign scan runs in NumPy (each change re-checked in mpmath) and the pieces are integrated
  by SciPy in double precision: the same roots, the answer to ~1e-13 relative, ~10x faster.
* ``loss_bracket(f, g, cuts, M)``: the law of L = log f/g under f as a certified lattice ``Bracket``
  (``tests/references/lattice.py``): the output axis is cut into cells inside each part (L monotone there), the
  f-mass of a cell (Gauss-Legendre, 16 nodes, on a smooth integrand) is placed at the lattice point below the
  cell's smallest loss in ``lower`` and above its largest in ``upper``, so lower <= L <= upper pointwise.  The
  part where g = 0 < f (L = +inf) is returned as a separate mass a; parts where f = 0 carry no f-mass.  Tails
  of infinite parts beyond the point where their mass is below 1e-16 are carried in the lattice's ``tail``.
* ``composed_delta(bracket, a, k, eps)``: k-fold composition: an infinite loss in any run is infinite in the
  sum, so delta = 1 - (1 - a)^k + E[(1 - e^{eps - S})_+; S finite], the last term bracketed by the lattice laws.
* ``exact_atoms_delta(values, probs, k, eps)``: exact k-fold composition of a loss with finitely many values
  (an enumeration of the multinomial sums in mpmath): the reference for piecewise-constant densities.
"""
from __future__ import annotations

import itertools
import math

import mpmath as mp
import numpy as np
from scipy import integrate

from .lattice import Bracket, Lattice, LatticeReference

DPS = 30
GL_NODES, GL_WEIGHTS = np.polynomial.legendre.leggauss(16)


def _parts(cuts, lo=-math.inf, hi=math.inf):
    pts = sorted({lo, hi, *[c for c in cuts if lo < c < hi]})
    return list(zip(pts[:-1], pts[1:]))


def _scan_points(a, b, n=400):
    if math.isfinite(a) and math.isfinite(b):
        # the ends too (a relative 1e-9 inside: a density may change form at a cut): on a part where the loss is
        # monotone, f - c g changes sign at most once, so the signs at its ends decide; a positive stretch shorter
        # than the spacing next to an end (a truncated Laplace with A = b = 1 at eps 0.998: 7.5e-7 of delta over
        # the last 1e-3 of [0, 1]) was missed by the midpoints alone
        w = b - a
        return [a + w * 1e-9, *[a + w * (i + 0.5) / n for i in range(n)], b - w * 1e-9]
    if math.isfinite(a):
        return [a + d for d in np.geomspace(1e-6, 400.0, n)]
    if math.isfinite(b):
        return [b - d for d in np.geomspace(1e-6, 400.0, n)][::-1]
    return list(np.sign(np.linspace(-1, 1, n)) * np.geomspace(1e-6, 400.0, n))


def hockey_stick(f, g, eps, cuts, lo=-math.inf, hi=math.inf, f_np=None, g_np=None):
    """integral over (lo, hi) of (f - e^eps g)_+ in mpmath (module docstring).  With ``f_np``, ``g_np`` (the same
    densities as vectorised NumPy functions) the sign scan runs in NumPy and each change it finds is looked at
    again in mpmath on the scan points around it (a root within rounding of a scan point is neither lost nor
    doubled); the roots are mpmath's, the pieces' integrals SciPy's in double precision (~1e-13 relative)."""
    numpy = None if f_np is None else (f_np, g_np, math.exp(eps))
    with mp.workdps(DPS):
        c = mp.exp(mp.mpf(eps))
        h = lambda x: f(x) - c * g(x)
        total = mp.mpf(0)
        for a, b in _parts(cuts, lo, hi):
            xs = _scan_points(a, b)
            roots = [mp.findroot(h, (mp.mpf(xs[i]), mp.mpf(xs[i + 1])), solver="bisect")
                     for i in _sign_changes(h, xs, numpy)]
            pts = [mp.mpf(a) if math.isfinite(a) else (mp.ninf if a < 0 else mp.inf), *roots,
                   mp.mpf(b) if math.isfinite(b) else (mp.inf if b > 0 else mp.ninf)]
            for u, v in zip(pts[:-1], pts[1:]):
                mid = (u + v) / 2 if mp.isfinite(u) and mp.isfinite(v) else (u + 1 if mp.isfinite(u) else v - 1)
                if h(mid) > 0:
                    total += mp.quad(lambda x: max(h(x), 0), [u, v]) if numpy is None else \
                        _quad_np(*numpy, float(u), float(v))
        return total


def _quad_np(fn, gn, c, u, v):
    """integral over (u, v) of (f - c g)_+ in double precision (SciPy's QUADPACK to 1e-13 relative): the piece has
    no root inside, so the integrand is smooth there."""
    val, _ = integrate.quad(lambda x: max(float(fn(x)) - c * float(gn(x)), 0.0), u, v, epsabs=0.0, epsrel=1e-13,
                            limit=400)
    return mp.mpf(val)


def _sign_changes(h, xs, numpy_pair):
    """Indices i with h = f - c g of opposite signs (in mpmath) at xs[i] and xs[i + 1]: from an mpmath scan, or
    from a NumPy scan of (f, g, c) whose changes are re-checked in mpmath one scan point either side."""
    if numpy_pair is None:
        pos = [h(mp.mpf(x)) > 0 for x in xs]
        return [i for i in range(len(xs) - 1) if pos[i] != pos[i + 1]]
    fn, gn, c = numpy_pair
    pts = np.asarray(xs, dtype=float)
    pos = np.asarray(fn(pts), dtype=float) - c * np.asarray(gn(pts), dtype=float) > 0
    near = sorted({j for i in np.flatnonzero(pos[:-1] != pos[1:]) for j in range(i - 1, i + 3) if 0 <= j < len(xs)})
    exact = {j: h(mp.mpf(xs[j])) > 0 for j in near}
    return [j for j in near if j + 1 in exact and exact[j] != exact[j + 1]]


def _cells(f_np, a, b, n):
    """Cell edges on the part (a, b) and the mass beyond the last edge towards an infinite end (< 1e-16; by SciPy's
    quad in double precision, its error estimate added: the tail enters the bracket as an absolute allowance)."""
    if math.isfinite(a) and math.isfinite(b):
        return np.linspace(a, b, n + 1), 0.0
    end = a if math.isfinite(a) else b
    side = 1.0 if math.isfinite(a) else -1.0
    T = 1.0
    while True:
        far = end + side * T
        val, err = integrate.quad(lambda x: float(f_np(x)), *((far, math.inf) if side > 0 else (-math.inf, far)),
                                  epsabs=1e-30, epsrel=1e-8, limit=200)
        tail = val + err
        if tail < 1e-16:
            break
        T *= 2.0
    edges = end + side * np.linspace(0.0, T, n + 1)
    return (edges if side > 0 else edges[::-1]), float(tail)


def loss_bracket(f, g, f_np, g_np, cuts, M=2000, cells=4000, lo=-math.inf, hi=math.inf, atoms=()):
    """(Bracket of L = log f/g under f on its finite values, f-mass where g = 0 < f) (module docstring).

    f, g: mpmath functions; f_np, g_np: the same as vectorised NumPy functions (cell masses and losses); ``atoms``:
    point masses of the output as (f-mass, g-mass) pairs (a loss of +inf where the g-mass is 0)."""
    mass_inf = sum(a for a, b in atoms if a > 0 and b == 0)
    tail = 0.0
    cell_mass, cell_lo, cell_hi = [], [], []
    pts = [(a, math.log(a / b)) for a, b in atoms if a > 0 and b > 0]
    if pts:
        cell_mass.append(np.array([a for a, _ in pts]))
        cell_lo.append(np.array([v for _, v in pts]) - 1e-9)
        cell_hi.append(np.array([v for _, v in pts]) + 1e-9)
    for a, b in _parts(cuts, lo, hi):
        mid = 0.5 * (a + b) if math.isfinite(a) and math.isfinite(b) else (a + 1 if math.isfinite(a) else b - 1)
        fm, gm = float(f(mp.mpf(mid))), float(g(mp.mpf(mid)))
        if fm == 0:
            continue  # no f-mass on this part
        edges, t = _cells(f_np, a, b, cells)
        tail += t
        u, v = edges[:-1], edges[1:]
        nodes = 0.5 * (u + v)[:, None] + 0.5 * (v - u)[:, None] * GL_NODES[None, :]
        masses = np.sum(f_np(nodes) * GL_WEIGHTS[None, :], axis=1) * 0.5 * (v - u)
        if gm == 0:
            mass_inf += float(np.sum(masses))
            continue
        with np.errstate(all="ignore"):
            La = np.log(f_np(u)) - np.log(g_np(u))
            Lb = np.log(f_np(v)) - np.log(g_np(v))
        # an end where a density vanishes (a part's boundary) has an infinite loss there: use the inner node
        inner = np.log(f_np(nodes[:, [0, -1]])) - np.log(g_np(nodes[:, [0, -1]]))
        La = np.where(np.isfinite(La), La, inner[:, 0])
        Lb = np.where(np.isfinite(Lb), Lb, inner[:, 1])
        cell_mass.append(masses)
        cell_lo.append(np.minimum(La, Lb) - 1e-9)
        cell_hi.append(np.maximum(La, Lb) + 1e-9)
    m, lo_v, hi_v = (np.concatenate(x) for x in (cell_mass, cell_lo, cell_hi))
    offset = float(lo_v.min())
    h = (float(hi_v.max()) - offset) / M
    lower, upper = np.zeros(M + 2), np.zeros(M + 2)
    np.add.at(lower, np.floor((lo_v - offset) / h).astype(int), m)
    np.add.at(upper, np.minimum(np.ceil((hi_v - offset) / h).astype(int), M + 1), m)
    rel = 1e-10
    return Bracket(Lattice(offset, h, lower, rel=rel, tail=tail), Lattice(offset, h, upper, rel=rel, tail=tail)), \
        mass_inf


def composed_delta(bracket, a, k, eps):
    """Certified (lo, hi) of one direction's k-fold delta(eps) (module docstring)."""
    ref = LatticeReference.from_brackets([bracket.power(k)])
    lo, hi = ref.delta_bracket(eps)
    inf_part = 1.0 - (1.0 - a) ** k
    return inf_part + lo, min(1.0, inf_part + hi)


def exact_atoms_delta(values, probs, k, eps):
    """delta(eps) of the k-fold sum of a loss taking ``values`` (+inf allowed) with ``probs``: exact sums."""
    with mp.workdps(DPS):
        vals = [mp.mpf(v) if math.isfinite(v) else mp.inf for v in values]
        ps = [mp.mpf(p) for p in probs]
        total = mp.mpf(0)
        for combo in itertools.combinations_with_replacement(range(len(vals)), k):
            counts = [combo.count(i) for i in range(len(vals))]
            w = mp.factorial(k)
            for i, c in enumerate(counts):
                w *= ps[i] ** c / mp.factorial(c)
            s = sum(vals[i] for i in combo)
            if s > eps:
                total += w * (1 - (mp.exp(mp.mpf(eps) - s) if mp.isfinite(s) else 0))
        return total
