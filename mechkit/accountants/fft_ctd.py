"""The FFT composer with connect-the-dots bounds (``variant="ctd"``; docs/architecture.md, "FFT bounds by convex
order").

The hockey-stick divergence of a composition is delta(eps) = E[g(Y_1 ... Y_k)] with Y_i = e^{-L_i} under P and
g = (1 - e^eps prod y_i)_+, which is convex and non-increasing in each y_i.  So, coordinate by coordinate:

* a *spread* of a PLRV's law in y (same mean of e^{-L}) can only raise delta: each cell (x_i, x_{i+1}] of the grid
  sends its mass to its two ends with the weights that keep its mean of e^{-L} (its Q-mass), the connect-the-dots
  discretisation of Doroshenko et al. (2022).  Composed on the grid, it gives an *upper* bound;
* a *contraction* (merging masses at their mean of e^{-L}) and a move of mass to a smaller loss can only lower
  delta: a sweep upwards in L merges consecutive cells into groups whose mean of e^{-L} is a grid point
  (``fft_sums.contract``); composed on the grid, a *lower* bound.

Both keep the support on the grid, so the FFT composes them as it composes the mean-preserving pmf.  Their excess
is of second order in the mesh h (about k h^2 / 6 of variance for the spread, twice that for the contraction, in
the smooth regime), not of first order as for rounding up or down, and the estimate is (2 upper + lower) / 3 (the
second-order terms cancel where the law is smooth; it always lies between the bounds).

Certified allowances, added to both bounds: the floating-point error of the FFT, powers and sums (``fft``'s model),
the mass outside the evaluated window (count times mass per mechanism) and the composed mass that wraps around the
circle, bounded by a Chernoff bound on the discrete laws themselves (their exact moment generating functions).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import MechkitError, MechkitWarning, NumericalLimitError
from ..estimate import Estimate, EstimateArray
from ..progress import threaded, working
from ..relations import DIRECTIONS
from . import fft_grid as fft
from . import fft_sums as _fs
from .fft_wrap import TILTS, log_mgf, wrap_bound

#: the law-free model of the bounds' spread: upper - lower ~ MESH_CONSTANT * k * h^2 in epsilon; the reference of
#: the floor SCALE_SHRINK and of the memory limit's mesh (``first_mesh``), and the model where no PLRV has a variance
MESH_CONSTANT = 1.0
#: the spread model from the composed loss (``spread_constant``): a connect-the-dots curve adds about k h^2 / 6 of
#: variance to the loss (the lower one takes k h^2 / 3 away), and where the composition is near Gaussian with standard
#: deviation s (a mu-GDP curve, mu = s), epsilon moves by (1/2 + z / (2 s)) per unit of s^2, z the normal quantile
#: of delta: upper - lower ~ (1/4 + z / (4 s)) k h^2.  z is SPREAD_Z (delta 1e-5; the grid serves every query of
#: a composition); the measured spreads against it: docs/performance.md, benchmarks/fft_mesh.py
SPREAD_Z = 4.2649
#: ... at most this constant (small s: below ~0.5 the mesh is set by SCALE_SHARE or SCALE_SHRINK anyway)
SPREAD_MAX = 3.0
#: the mesh puts the model's spread at this share of its budget (1.5 eps_error), so that one grid usually meets the
#: budget where the measured constant is up to 1/0.8 of the model's (each further grid costs more than the first)
SPREAD_TARGET = 0.8
#: the mesh is at most this share of the smallest standard deviation of a PLRV (``mesh``): below 0.1 the measured
#: spread was 0.27-0.83 k h^2 (DP-SGD, sigma 0.5-5, q 0.001-1, k 1e2-1e4)
SCALE_SHARE = 0.1
#: ... but not below the model's mesh divided by this: where a step barely moves the loss (sigma 2-5, q 0.001) the
#: share put grids of 1e5-3e5 points whose bounds were 100x inside the budget; at the model's mesh / 20 the spread
#: is within it for constants up to 400 k h^2 (measured up to 144 there), and ``_refined`` checks it
SCALE_SHRINK = 20.0
#: a query whose bounds are further than eps_error from its estimate is recomputed on a finer grid, this many times
REFINEMENTS = 3
#: peak bytes per grid point of a query: two spectra composed at once, four curves kept (see fft.BYTES_PER_POINT)
BYTES_PER_POINT = 2 * fft.BYTES_PER_POINT
#: refinement stops where the excess falls slower than h ** MIN_ORDER (``_refined``)
MIN_ORDER = 1.5


def spread_constant(sd):
    """The constant C of the model spread C k h^2 (in epsilon) of a composition whose loss has standard deviation
    ``sd`` (SPREAD_Z, SPREAD_MAX)."""
    return min(SPREAD_MAX, 0.25 + SPREAD_Z / (4.0 * sd))


def mesh(k, eps_error, items=()):
    """The mesh whose model spread is SPREAD_TARGET x 1.5 eps_error for a total count k (the constant from the
    composed loss's standard deviation, the smaller of the two directions': ``spread_constant``; MESH_CONSTANT
    without ``items``), and at most SCALE_SHARE of a step's standard deviation (per direction, the root of the
    count-weighted mean variance of the PLRVs in ``items``): where the mesh is not small against the law, the model
    fails (the spread was measured 5-300 times the model's at h above 0.3 standard deviations).  A mechanism whose
    steps barely move the loss does not set the scale.  The share shrinks the law-free model's mesh by at most
    SCALE_SHRINK (the answer's excess is checked: ``_refined``)."""
    model = h = math.sqrt(1.5 * eps_error / (MESH_CONSTANT * k))
    sds = []
    for d in DIRECTIONS:
        tot, n = 0.0, 0
        for m, count in items:
            try:
                var = float(m.plrv(d).cgf(0.0, 2))
            except MechkitError:
                continue
            if math.isfinite(var) and var > 0.0:
                tot, n = tot + count * var, n + count
        if n:
            sds.append((math.sqrt(tot), SCALE_SHARE * math.sqrt(tot / n)))
    if sds:
        h = math.sqrt(1.5 * SPREAD_TARGET * eps_error / (spread_constant(min(s for s, _ in sds)) * k))
        h = min([h] + [share for _, share in sds])
    return max(h, model / SCALE_SHRINK)


def first_mesh(items, eps_error, L, memory_limit):
    """(the mesh a query starts from, whether point masses are off any lattice, whether no PLRV has two of them):
    ``mesh``, but where it asks for a grid above memory_limit, the finest that fits (not coarser than the law-free
    model's mesh: beyond it ``fft.grid_for`` refuses with the eps_error that fits); then aligned (``_alignment``)."""
    k = sum(c for _, c in items)
    model = mesh(k, eps_error)
    fits = 2.2 * L * BYTES_PER_POINT / memory_limit
    return _alignment(items, max(mesh(k, eps_error, items), min(model, fits)))


#: relative tolerance of the common lattice of the point masses (``aligned``)
LATTICE_TOL = 1e-9
#: how far (in steps of the lattice) a value may sit from a multiple of it and still count as on it
ON_LATTICE = 1e-6


def _lattice(values):
    """The largest b > 0 of which every value is an integer multiple (relative tolerance LATTICE_TOL), or 0."""
    v = np.unique(np.abs(values[np.isfinite(values)]))
    v = v[v > 0]
    if v.size == 0:
        return 0.0
    tol = LATTICE_TOL * float(v[-1])
    g = float(v[0])
    for x in v[1:]:
        a, b = float(x), g
        while b > tol:
            r = math.fmod(a, b)
            a, b = b, (0.0 if r < tol or b - r < tol else r)
        g = a
        if g <= 1e3 * tol:
            return 0.0
    q = v / g
    return g if np.all(np.abs(q - np.round(q)) <= ON_LATTICE) else 0.0


def _finite_atoms(plrv):
    v = plrv.atoms()[0]
    return v[np.isfinite(v)]


def _differences(items):
    """The distances of each PLRV's finite point masses from its smallest one, all PLRVs together (None if none
    has any)."""
    laws = [_finite_atoms(m.plrv(d)) for m, _ in items for d in DIRECTIONS]
    laws = [v for v in laws if v.size]
    return np.concatenate([v - v.min() for v in laws]) if laws else None


def _alignment(items, h):
    """(``aligned``'s mesh, ``off_lattice``'s answer, whether no PLRV has two point masses: any grid carries them)
    from one look at the point masses."""
    diff = _differences(items)
    if diff is None or diff.max() == 0.0:
        return h, False, True
    b = _lattice(diff)
    if not b >= h / 4:
        return h, True, False
    return b / math.ceil(b / h - 1e-9), False, False


def off_lattice(items, h):
    """Whether the PLRVs have finite point masses that ``aligned`` cannot put on a grid of mesh about h."""
    return _alignment(items, h)[1]


def aligned(items, h):
    """A mesh at most h that puts every point mass of each PLRV on a grid shifted for that PLRV (``offset``): h
    itself where there are none, or where the distances between a PLRV's masses have no common lattice at least
    h / 4.  An atom between grid points costs the contracted lower bound a first-order error (its mass moves by
    up to h), an atom on a grid point none; the shifts compose into the composed law's shift."""
    return _alignment(items, h)[0]


def offset(plrv, h):
    """The shift in [0, h) of the grid that puts the PLRV's finite point masses on grid points, if the distances
    between them are multiples of h (within ON_LATTICE steps); else 0."""
    v = _finite_atoms(plrv)
    if v.size == 0:
        return 0.0
    c = math.fmod(float(v.min()), h) % h
    q = (v - v.min()) / h
    return c if np.all(np.abs(q - np.round(q)) <= ON_LATTICE) else 0.0


def _edges_window(plrv, grid, tau, inf_mass, c=0.0):
    """Indices (a, b) of the first and last grid point of the evaluated window (grid point i at (i - n) h + c) and
    the finite mass outside it: coarse scans outwards from 0 stop at the first point beyond which a tail is <= tau."""
    n, h = grid.n, grid.h
    last = 2 * n
    up = np.unique(np.append(np.arange(n + 1, last + 1, fft.COARSE_STRIDE), last))
    S = np.maximum(plrv.sf((up - n) * h + c) - inf_mass, 0.0)
    ok = S <= tau
    hi = int(np.argmax(ok)) if ok.any() else len(up) - 1   # the scan ends at the last point
    down = np.unique(np.append(np.arange(n - 1, -1, -fft.COARSE_STRIDE), 0))[::-1]
    F = plrv.cdf((down - n) * h + c)
    ok = F <= tau
    lo = int(np.argmax(ok)) if ok.any() else len(down) - 1   # and at point 0
    return int(down[lo]), int(up[hi]), float(F[lo]) + float(S[hi])


def _cell_masses(law, xs, n_neg, inf_mass):
    """Masses of the cells (x_i, x_{i+1}] (xs increasing, the first n_neg of them <= 0) from the CDF below 0 and the
    survival function above (each tail keeps its relative accuracy), the cell across 0 from both."""
    F = law.cdf(xs[:n_neg]) if n_neg else np.zeros(0)
    S = law.sf(xs[n_neg:]) - inf_mass if n_neg < len(xs) else np.zeros(0)
    m = np.empty(len(xs) - 1)
    if n_neg == 0:
        m[:] = -np.diff(S)
    elif n_neg == len(xs):
        m[:] = np.diff(F)
    else:
        m[:n_neg - 1] = np.diff(F)
        m[n_neg - 1] = (1.0 - inf_mass) - F[-1] - S[0]
        m[n_neg:] = -np.diff(S)
    return np.maximum(m, 0.0)


def discretise(plrv, grid, tau=0.0, c=0.0):
    """The connect-the-dots (upper) and contracted (lower) pmfs of one PLRV's finite part, conditional on being
    finite, on the grid's points -n..n; its mass at +inf; the conditional mass outside the evaluated window."""
    n, h = grid.n, grid.h
    vals, probs = plrv.atoms()
    inf_mass = float(probs[vals == np.inf].sum())
    a, b, out = _edges_window(plrv, grid, tau, inf_mass, c)
    xs = (np.arange(a, b + 1) - n) * h + c
    n_neg = int(np.count_nonzero(xs <= 0.0))
    p = _cell_masses(plrv, xs, n_neg, inf_mass)
    r = _cell_masses(plrv.dual, xs, n_neg, 0.0)
    lr = _log_ratio(p, r, xs[:-1])
    # where the Q-mass is lost (underflow), the worst position: the cell's top end for the upper bound
    lr_up = np.where(np.isnan(lr), -h, lr)
    # the weight of the cell's bottom end: (E[e^{-L}] - e^{-x_{i+1}}) / (e^{-x_i} - e^{-x_{i+1}}) of its mass
    w_lo = np.clip(p * (np.expm1(lr_up + h) / math.expm1(h)), 0.0, p)
    upper = np.zeros(2 * n + 1)
    upper[a:b] += w_lo
    upper[a + 1:b + 1] += p - w_lo
    lower = np.zeros(2 * n + 1)
    parts, snapped = _parts(plrv, xs, p, r, h)
    lower[a:b + 1] = _fs.contract(*parts, h, b - a)
    out += snapped
    # the curves compose the finite part's conditional law (``DiscreteCurve``: delta = A + (1 - A) delta_fin)
    fin = 1.0 - inf_mass
    return upper / fin, lower / fin, inf_mass, out / fin


def _log_ratio(p, r, x):
    """log E[e^{-(L - x_i)} | cell] = log(r / p) + x_i, clipped to [-h, 0] (exact arithmetic puts it there); nan
    where the Q-mass underflows or the cell is empty."""
    h = x[1] - x[0] if x.size > 1 else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.log(r) - np.log(p) + x
    known = np.isfinite(lr) & (r > 1e-290) & (p > 0)
    return np.where(known, np.clip(lr, -h, 0.0), np.nan)


#: how close (in units of rounding of the loss) a point mass must be to a grid point to be put on it
SNAP_ULPS = 64
#: a cell's continuous part below this share of its point masses is taken as their rounding noise, and dropped
CONTINUOUS_FLOOR = 1e-12


def _parts(plrv, xs, p, r, h):
    """The cells' parts in increasing order of their mean loss, for ``fft_sums.contract``: (cell index, mass, lr),
    and the allowance for point masses put on a grid point within rounding.
    Each point mass is a part of its own at its exact loss, the rest of its cell another: merged, the cell's mean
    would sit inside the cell, and a part at the top of the support whose mean is not on a grid point moves down
    (by up to h, a first-order error on an atom's whole mass).  Where the mean of e^{-L} is lost, the cell's bottom
    end (a move down in L keeps the lower bound); dropped mass only lowers it."""
    vals, probs = plrv.atoms()
    keep = np.isfinite(vals) & (vals > xs[0]) & (vals <= xs[-1]) & (probs > 0)
    av, ap = vals[keep], probs[keep]
    cell = np.clip(np.searchsorted(xs, av, side="left") - 1, 0, len(p) - 1)
    p_at = np.bincount(cell, ap, minlength=len(p))
    r_at = np.bincount(cell, ap * np.exp(-av), minlength=len(p))
    pc = p - p_at
    pc = np.where(pc > CONTINUOUS_FLOOR * p_at, pc, 0.0)
    lr_c = _log_ratio(pc, np.maximum(r - r_at, 0.0), xs[:-1])
    lr_c = np.where(np.isnan(lr_c), 0.0, lr_c)
    # a point mass within rounding of its cell's top end (a grid point) is put on it: a move up in L of at most
    # SNAP_ULPS units of rounding, whose effect on delta (at most the mass times the distance) is returned
    # (one within rounding of its cell's bottom end is put there: a move down, which needs no allowance)
    tol = SNAP_ULPS * np.finfo(float).eps * np.maximum(np.abs(av), h)
    up = xs[cell + 1] - av
    snap = np.abs(up) <= tol
    lr_at = np.where(snap, -h, np.where(av - xs[cell] <= tol, 0.0, np.clip(xs[cell] - av, -h, 0.0)))
    idx = np.concatenate((np.arange(len(p)), cell)).astype(np.int64)
    mass = np.concatenate((pc, ap))
    lr = np.concatenate((lr_c, lr_at))
    order = np.lexsort((-lr, idx))
    return (idx[order], mass[order], lr[order]), float(np.sum(ap[snap] * np.abs(up[snap])))


def compose(items, direction, grid, delta_error):
    """(upper curve, lower curve) of one direction, each with its certified allowance ``slack``."""
    k = sum(c for _, c in items)
    tau = fft.TAIL_SHARE * delta_error / k
    up_acc, lo_acc = fft.Spectrum(grid, k, len(items)), fft.Spectrum(grid, k, len(items))
    up_mgf, lo_mgf = np.zeros((2, TILTS.size)), np.zeros((2, TILTS.size))
    out = 0.0
    for m, count in items:
        plrv = m.plrv(direction)
        c = offset(plrv, grid.h)
        upper, lower, inf_mass, o = discretise(plrv, grid, tau, c)
        out += count * o
        for acc, mgf, pmf in ((up_acc, up_mgf, upper), (lo_acc, lo_mgf, lower)):
            acc.add(pmf, count, c, inf_mass)
            mgf += count * np.array(log_mgf(pmf, -grid.n * grid.h + c, grid.h))
    return tuple(_finish(acc, mgf, out, grid) for acc, mgf in ((up_acc, up_mgf), (lo_acc, lo_mgf)))


def _finish(acc, mgf, out, grid):
    curve = acc.curve(spectral=True)
    curve.dropped = out
    curve.wrapped = wrap_bound(mgf, grid, acc.mu)
    curve.slack = curve.fp + out + curve.wrapped
    return curve


#: grids of at least this many points compose the two directions in two threads where a second core is likely idle
#: (``progress.threaded``; their FFTs and compiled passes release the GIL; each direction's arithmetic is unchanged)
THREAD_POINTS = 1 << 15


class CTDComposed:
    """A composition's connect-the-dots curves (upper and lower, each direction) on one grid: every query is a
    lookup.  ``h`` is the mesh (default from ``mesh``); the domain and tails follow ``fft.plan``."""

    def __init__(self, items, eps_error=fft.DEFAULT_EPS_ERROR, delta_error=1e-10,
                 memory_limit=fft.DEFAULT_MEMORY_LIMIT, h=None, L=None):
        eps_error, delta_error, memory_limit = fft.check_budgets(eps_error, delta_error, memory_limit)
        self.eps_error, self.delta_error = eps_error, delta_error
        k = sum(c for _, c in items)
        L = fft.domain(items, eps_error, delta_error) if L is None else L
        self.h = first_mesh(items, eps_error, L, memory_limit)[0] if h is None else h
        self.grid = fft.grid_for(L, self.h, memory_limit, eps_error, delta_error, per_point=BYTES_PER_POINT,
                                 power=2)
        with working(f"composing {k} runs of {len(items)} mechanism(s) on an FFT grid of {self.grid.N} points",
                     when=self.grid.N * len(items) >= fft.PROGRESS_POINTS,
                     silence="mechkit.progress.enabled(False)"):
            def run(d):
                return compose(items, d, self.grid, delta_error)
            self.curves = threaded(run, DIRECTIONS) if self.grid.N >= THREAD_POINTS else {d: run(d) for d in DIRECTIONS}

    _FLOATS = ("step", "shift", "inf_mass", "sum_error", "fp", "dropped", "wrapped", "slack")

    def state(self, key, arrays):
        """The header that ``restore`` takes back bit for bit; the curves' arrays go into ``arrays`` (``key_...``)."""
        hx = float.hex
        return {"eps_error": hx(self.eps_error), "delta_error": hx(self.delta_error), "h": hx(self.h),
                "grid": fft.grid_state(self.grid),
                "curves": {d: [fft.curve_state(c, f"{key}_{d}_{i}", self._FLOATS, arrays) for i, c in enumerate(pair)]
                           for d, pair in self.curves.items()}}

    @classmethod
    def restore(cls, meta, key, arrays):
        """The ``CTDComposed`` that ``state`` described (KeyError, TypeError or ValueError if it is inconsistent)."""
        obj = cls.__new__(cls)
        obj.eps_error, obj.delta_error = float.fromhex(meta["eps_error"]), float.fromhex(meta["delta_error"])
        obj.h, obj.grid = float.fromhex(meta["h"]), fft.grid_restore(meta["grid"])
        obj.curves = {d: tuple(fft.curve_restore(cm, f"{key}_{d}_{i}", cls._FLOATS, arrays)
                               for i, cm in enumerate(meta["curves"][d])) for d in DIRECTIONS}
        return obj

    def details(self):
        cs = [c for pair in self.curves.values() for c in pair]
        return {"variant": "ctd", "grid_points": self.grid.N, "mesh": self.grid.h, "domain": self.grid.L,
                "eps_error": self.eps_error, "delta_error": self.delta_error,
                "fp_allowance": max(c.fp for c in cs), "tail_allowance": max(c.dropped for c in cs),
                "wrap_allowance": max(c.wrapped for c in cs)}

    def _curves_at(self, eps):
        """(upper, lower, estimate) curves at eps, max over the directions, without the allowances."""
        ups = [u.delta(eps) for u, _ in self.curves.values()]
        los = [lo.delta(eps) for _, lo in self.curves.values()]
        val = np.max([(2.0 * u + w) / 3.0 for u, w in zip(ups, los)], axis=0)
        return ups, los, val

    def delta(self, eps):
        """delta at each of ``eps`` (an array), max over the directions: EstimateArray.  ``details["within"]``:
        whether each curve is inside the estimate moved eps_error sideways (the PRV variant's promise, before the
        allowances)."""
        ups, los, val = self._curves_at(eps)
        up = np.max([v + u.slack for v, (u, _) in zip(ups, self.curves.values())], axis=0)
        lo = np.max([v - lw.slack for v, (_, lw) in zip(los, self.curves.values())], axis=0)
        details = self.details()
        tol = 1e-12 * np.maximum(val, 1e-300)
        details["within"] = bool(np.all(np.max(ups, axis=0) <= self._curves_at(eps - self.eps_error)[2] + tol) and
                                 np.all(np.max(los, axis=0) >= self._curves_at(eps + self.eps_error)[2] - tol))
        up, lo = np.clip(up, 0.0, 1.0), np.clip(lo, 0.0, 1.0)
        return EstimateArray(np.clip(val, lo, up), lo, up, "fft", True, details)

    def epsilon(self, d):
        """Smallest epsilon with delta(epsilon) <= d, max over the directions: Estimate."""
        pairs = list(self.curves.values())
        inf_mass = max(u.inf_mass for u, _ in pairs)
        slack = max(u.slack for u, _ in pairs)
        if d - slack <= inf_mass:
            raise NumericalLimitError(
                f"delta = {d:g} cannot be certified on {self.grid.N} grid points (allowance {slack:.2g} for "
                f"rounding, tails and wrap-around); the smallest certifiable delta with these settings is about "
                f"{inf_mass + 2 * slack:.2g}."
                "  For tiny delta use a method that works in log space (the saddle-point accountant, method='spa').")
        # each curve's larger target first (a scan for the smaller one then starts at its answer: DiscreteCurve)
        lo = max(max(0.0, w.epsilon(min(d + w.slack, 1.0))) for _, w in pairs)
        at_d = [(u.epsilon(d), w.epsilon(d)) for u, w in pairs]
        up = max(u.epsilon(d - u.slack) for u, _ in pairs)
        val = max((2.0 * u + w) / 3.0 for u, w in at_d)
        details = self.details()
        # the discretisation's part of the width (the allowances' part is the curve's own slope over them)
        details["excess"] = (max(u for u, _ in at_d) - val, val - max(w for _, w in at_d))
        return Estimate(min(max(val, lo), up), lo, up, "fft", True, details)


def _epsilon_attempt(d, eps_error):
    """A query of epsilon(d) on a composition: (answer, within budget, excess over the budget).  The budget is
    the discretisation's: each curve's epsilon at d within eps_error of the estimate (the allowances widen the
    interval further by the curve's slope over them, as delta_error does in the PRV variant)."""
    def attempt(c):
        est = c.epsilon(d)
        side = max(est.details["excess"])
        return est, side <= eps_error, side / eps_error
    return attempt


def _delta_attempt(eps):
    """A query of delta(eps): within budget where each curve is inside the estimate moved eps_error sideways (the
    PRV variant's promise; the allowances, like its delta_error, come on top)."""
    def attempt(c):
        est = c.delta(eps)
        return est, est.details["within"], None
    return attempt


def _refined(build, attempt, fallback, h, eps_error, refinements=REFINEMENTS, jitter=False):
    """The query on the model's grid, then on finer ones while it is outside its budget (``attempt``; at most
    REFINEMENTS times, while the grid fits memory_limit and certifies the delta); if still outside, the PRV
    variant's answer (``fallback``, within budget by its theorem) intersected with the last one (both are
    certified); where the PRV variant cannot answer, the last one, with a warning.  The next mesh assumes the
    excess falls like h^order (2 at first, then as measured); where it falls slower than MIN_ORDER (point masses
    off the refined grid: the lower curve's error is of first order), no finer grid is tried, unless ``jitter``
    (no PLRV has two point masses, so every grid carries them: the excess of a smooth law's curves jitters with
    the grid's alignment before it falls like h^2; the next mesh then assumes order 2 again)."""
    est, ok, r = attempt(build(h))
    order = 2.0
    for _ in range(refinements):
        if ok:
            return est
        h_next = h * (0.5 if r is None else max(0.25, 0.9 * (1.0 / r) ** (1.0 / order)))
        try:
            est, ok, r_next = attempt(build(h_next))
        except MechkitError:  # a grid above memory_limit, or one whose rounding floor is above the delta
            break
        if r is not None and r_next is not None and r_next > 0:
            order = math.log(r / r_next) / math.log(h / h_next)
            if not order >= MIN_ORDER:
                if not jitter:
                    break
                order = 2.0
        h, r = h_next, r_next
    if ok:
        return est
    try:
        prv = fallback()
    except MechkitError as exc:
        warnings.warn(f"the certified interval is wider than eps_error={eps_error:g} asks (mesh "
                      f"{est.details['mesh']:.3g}); it holds, and no finer grid could answer ({exc})",
                      MechkitWarning, stacklevel=5)
        est.details["within_budget"] = False
        return est
    lo, up = np.maximum(prv.lower, est.lower), np.minimum(prv.upper, est.upper)
    val = np.minimum(np.maximum(np.asarray(prv, dtype=float), lo), up)
    details = dict(prv.details, ctd_mesh=est.details["mesh"],
                   note="connect the dots left an interval wider than eps_error: the PRV variant's, intersected")
    if isinstance(est, EstimateArray):
        return EstimateArray(val, lo, up, "fft", True, details)
    return Estimate(float(val), float(lo), float(up), "fft", True, details)


def _build(items, eps_error, delta_error, memory_limit):
    """(a builder of the composed curves for a mesh, the first mesh, the refinements allowed, whether their excess
    only jitters: ``_refined``): the domain is computed once; point masses off any common lattice get no refinement
    (the lower curve's error is of first order there: if the first grid does not meet the budget, the PRV variant
    answers)."""
    L = fft.domain(items, eps_error, delta_error)
    h, off, jitter = first_mesh(items, eps_error, L, memory_limit)
    return (lambda h: CTDComposed(items, eps_error, delta_error, memory_limit, h, L), h, 0 if off else REFINEMENTS,
            jitter)


def epsilon(items, d, eps_error, delta_error, memory_limit, fallback):
    """epsilon(d) with connect-the-dots bounds, each within about eps_error of the estimate (``_refined``)."""
    build, h, n, jitter = _build(items, eps_error, delta_error, memory_limit)
    return _refined(build, _epsilon_attempt(d, eps_error), fallback, h, eps_error, n, jitter)


def delta(items, eps, eps_error, delta_error, memory_limit, fallback):
    """delta(eps) with connect-the-dots bounds, each within the PRV variant's promise (``_refined``)."""
    build, h, n, jitter = _build(items, eps_error, delta_error, memory_limit)
    return _refined(build, _delta_attempt(eps), fallback, h, eps_error, n, jitter)


class Curves:
    """Connect-the-dots answers of one composition with every grid kept (``Composition.curve``): a query runs the
    refinement of ``epsilon``/``delta`` above (the same meshes, so the same floats as those functions), composing a
    grid only the first time a query needs it, and the PRV variant's fallback likewise.  ``state``/``restore`` keep
    what was composed so far; a restored object holds no mechanisms and composes nothing: a query that needs a grid
    it lacks gets the finest certified answer it has, with the warning that it is wider than eps_error.
    ``prv``: the PRV variant's class of composed curves (``fft.Composed``; passed in: ``fft`` imports this module)."""

    def __init__(self, items, eps_error, delta_error, memory_limit, prv):
        eps_error, delta_error, memory_limit = fft.check_budgets(eps_error, delta_error, memory_limit)
        self.items, self.eps_error, self.delta_error, self.memory_limit = items, eps_error, delta_error, memory_limit
        self._make, self.h0, self.refinements, self.jitter = _build(items, eps_error, delta_error, memory_limit)
        self.grids, self.prv, self._prv_cls = {}, None, prv
        self.build(self.h0)

    def _cannot(self, what):
        return NumericalLimitError(f"this curve was loaded from a file: it has no {what} and cannot compose one "
                                   "(its mechanisms are not stored)")

    def build(self, h):
        c = self.grids.get(h)
        if c is None:
            if self._make is None:
                raise self._cannot(f"grid of mesh {h:.3g}")
            c = self.grids[h] = self._make(h)
        return c

    def _fallback(self, query, arg):
        def answer():
            if self.prv is None:
                if self.items is None:
                    raise self._cannot("PRV-variant grid")
                self.prv = self._prv_cls(self.items, self.eps_error, self.delta_error, self.memory_limit)
            return getattr(self.prv, query)(arg)
        return answer

    def epsilon(self, d):
        return _refined(self.build, _epsilon_attempt(d, self.eps_error), self._fallback("epsilon", d), self.h0,
                        self.eps_error, self.refinements, self.jitter)

    def delta(self, eps):
        return _refined(self.build, _delta_attempt(eps), self._fallback("delta", eps), self.h0, self.eps_error,
                        self.refinements, self.jitter)

    def state(self):
        """(header dict, name -> array) that ``restore`` takes back bit for bit (floats as hex text)."""
        hx, arrays = float.hex, {}
        meta = {"eps_error": hx(self.eps_error), "delta_error": hx(self.delta_error), "h0": hx(self.h0),
                "refinements": self.refinements, "jitter": self.jitter,
                "grids": [c.state(f"g{i}", arrays) for i, c in enumerate(self.grids.values())], "prv": None}
        if self.prv is not None:
            meta["prv"], prv_arrays = self.prv.state()
            arrays.update({f"prv_{k}": v for k, v in prv_arrays.items()})
        return meta, arrays

    @classmethod
    def restore(cls, meta, arrays, prv):
        """The ``Curves`` that ``state`` described (KeyError, TypeError or ValueError if it is inconsistent)."""
        obj = cls.__new__(cls)
        obj.items, obj.memory_limit, obj._make, obj._prv_cls = None, None, None, prv
        obj.eps_error, obj.delta_error = float.fromhex(meta["eps_error"]), float.fromhex(meta["delta_error"])
        obj.h0, obj.refinements = float.fromhex(meta["h0"]), int(meta["refinements"])
        obj.jitter = bool(meta.get("jitter", False))  # files written before it: their grids followed the break
        grids = [CTDComposed.restore(g, f"g{i}", arrays) for i, g in enumerate(meta["grids"])]
        obj.grids = {g.h: g for g in grids}
        if obj.h0 not in obj.grids:
            raise ValueError("the curve's first grid is missing")
        obj.prv = None
        if meta["prv"] is not None:
            sub = {k[4:]: v for k, v in arrays.items() if k.startswith("prv_")}
            obj.prv = prv.restore(meta["prv"], sub)
        return obj
