"""The PRV / FFT composer with certified bounds (Gopi, Lee, Wutschitz 2021; notes.md section 1).

For each direction separately:

1. **Domain** (Remark 5.6): L = 2 + max(eps_error + eps_M(delta_error/4), max_i eps_{M_i}(delta_error/(8k))) + 1,
   where eps_M is the Renyi-DP upper bound of the whole composition (from the derived CGFs) and
   eps_{M_i} the exact one-shot epsilon of each mechanism.
2. **Mesh** (Theorem 5.5): h = eps_error / sqrt((k/2) log(12/delta_error)), k the total count.
3. **Discretisation** (Algorithm 2): cell masses from the compiled CDF (below 0) and survival function
   (above 0, so tail cells keep their relative accuracy), renormalised on the window, and a mean shift
   mu = E[Y | window] - sum(i h q_i) that makes the discrete variable mean-preserving.  The truncated mean
   comes from the derived K'(0) minus the tail expectations (exact sums for purely atomic PLRVs).
   Each distinct mechanism is discretised once.
4. **Composition**: FFT of each pmf on one circle of N points, raised to its count, multiplied across
   mechanisms; one inverse FFT.  Point masses at +inf are mixed in afterwards (notes.md 1.1).
5. **Bounds** (Theorem 5.5): delta_upper(eps) = delta_Y~(eps - eps_error) + delta_error + fp,
   delta_lower(eps) = delta_Y~(eps + eps_error) - delta_error - fp, and the epsilon bounds likewise;
   ``fp`` is a floating-point allowance for the FFT and the suffix sums (16 N machine epsilons).

The reported curve is the max over the add and remove directions, for the estimate and both bounds.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.fft as sfft
from scipy import integrate

from . import rdp
from .errors import NumericalLimitError, ParameterError, check_finite_real
from .estimate import Estimate, EstimateArray

MACHINE_EPS = np.finfo(float).eps
FP_FACTOR = 16.0
DEFAULT_EPS_ERROR = 0.01
DEFAULT_MEMORY_LIMIT = 1 << 30
BYTES_PER_POINT = 8 * 6  # pmf, two complex half-spectra, values, suffix sums


def _check_budgets(eps_error, delta_error, memory_limit):
    e = check_finite_real("eps_error", eps_error, low=0.0)
    d = check_finite_real("delta_error", delta_error, low=0.0, high=1.0)
    mlim = check_finite_real("memory_limit", memory_limit, low=0.0)
    return e, d, mlim


class Grid:
    """Cells of width h centred at i h, i = -n..n, on a circle of N >= 2n + 1 points."""

    def __init__(self, L, h):
        self.L = L
        self.h = h
        self.n = int(math.ceil(L / h))
        self.N = sfft.next_fast_len(2 * self.n + 1, real=True)


def plan(items, eps_error, delta_error, memory_limit=DEFAULT_MEMORY_LIMIT):
    """Choose the domain and mesh (raises before allocating when memory would exceed the limit)."""
    k = sum(c for _, c in items)
    per = 0.0
    for m, _ in items:
        for d in ("remove", "add"):
            e = m.plrv(d).epsilon(min(delta_error / (8 * k), 0.5))
            per = max(per, e)
    comp = 0.0
    for d in ("remove", "add"):
        comp = max(comp, rdp.epsilon(items, min(delta_error / 4, 0.5), d, alphas=rdp.COARSE_ALPHAS, refine=False)[0])
    if not (math.isfinite(per) and math.isfinite(comp)):
        raise NumericalLimitError("the composition has no finite epsilon at delta_error/4: a point mass at +inf "
                                  "exceeds the error budget; increase delta_error")
    L = 3.0 + max(eps_error + comp, per)
    h = eps_error / math.sqrt((k / 2.0) * math.log(12.0 / delta_error))
    grid = Grid(L, h)
    need = grid.N * BYTES_PER_POINT
    if need > memory_limit:
        # N scales like 1/eps_error: the smallest eps_error that fits
        fit = eps_error * need / memory_limit
        raise ParameterError(
            f"eps_error={eps_error:g}, delta_error={delta_error:g} need a grid of {grid.N} points "
            f"(about {need / 2**20:.0f} MiB), above memory_limit={memory_limit / 2**20:.0f} MiB; "
            f"eps_error >= {fit:.3g} fits, or raise memory_limit")
    return grid


def discretise(plrv, grid):
    """Mean-preserving cell-centred discretisation: (pmf over i = -n..n, mean shift mu, mass at +inf)."""
    h, n = grid.h, grid.n
    vals, probs = plrv.atoms()
    inf_mass = float(probs[vals == np.inf].sum())
    edges = (np.arange(-n, n + 2) - 0.5) * h  # edges[j] is the lower edge of cell i = j - n
    neg = edges <= 0
    F = plrv.cdf(edges[neg])        # P(Y <= e)
    S = plrv.sf(edges[~neg])        # P(Y > e), includes the mass at +inf
    F_all = np.empty(edges.shape)
    S_all = np.empty(edges.shape)
    F_all[neg] = F
    S_all[~neg] = S
    q = np.empty(2 * n + 1)
    # cells entirely below 0 use F differences, entirely above use S differences; the cell around 0 the rest
    j_neg = np.nonzero(neg)[0]
    last_neg = j_neg[-1]  # edge index of the largest edge <= 0 (edge -h/2, lower edge of cell 0)
    q[:last_neg] = np.diff(F_all[: last_neg + 1])
    q[last_neg + 1:] = -np.diff(S_all[last_neg + 1:])
    q[last_neg] = (1.0 - inf_mass) - F_all[last_neg] - (S_all[last_neg + 1] - inf_mass)
    q = np.maximum(q, 0.0)
    total = q.sum()
    if not total > 0:
        raise NumericalLimitError("the privacy-loss distribution has no mass inside the domain")
    centres = np.arange(-n, n + 1) * h
    lo_edge, hi_edge = edges[0], edges[-1]
    if not plrv.mechanism.core.mono:
        fin = np.isfinite(vals)
        inside = fin & (vals > lo_edge) & (vals <= hi_edge)
        tmean = float(np.sum(vals[inside] * probs[inside]) / np.sum(probs[inside]))
    else:
        if inf_mass > 0:
            raise NumericalLimitError("continuous privacy losses with a point mass at +inf are not supported yet")
        full = plrv.cgf(0.0, 1)
        upper = hi_edge * float(plrv.sf(hi_edge)) + _tail_integral(plrv.sf, hi_edge, np.inf)
        F_lo = float(plrv.cdf(lo_edge))
        lower = lo_edge * F_lo - _tail_integral(plrv.cdf, max(plrv.support[0], -np.inf), lo_edge)
        tmean = (full - upper - lower) / total
    pmf = q / total
    mu = tmean - float(np.dot(centres, pmf))
    if not abs(mu) < h / 2 + 1e-12:
        raise NumericalLimitError(f"mean shift {mu:.3g} is not below half the mesh {h / 2:.3g}: the discretisation "
                                  "is not mean-preserving (report this as a bug)")
    return pmf, mu, inf_mass


def _tail_integral(f, a, b):
    if not b > a:
        return 0.0
    val, err = integrate.quad(lambda u: float(f(u)), a, b, limit=200, epsabs=1e-15, epsrel=1e-10)
    return val


class DiscreteCurve:
    """The composed discrete PRV: exact delta(eps) and its inverse (notes.md 1.6)."""

    def __init__(self, values, pmf, inf_mass, order=None):
        if order is None:
            order = np.argsort(values, kind="stable")
        self.y = values[order]
        p = pmf[order]
        self.inf_mass = inf_mass
        # suffix sums: d1_i = sum_{j >= i} p_j, d2_i = sum_{j >= i} p_j e^{-y_j}
        self.d1 = np.concatenate((np.cumsum(p[::-1])[::-1], [0.0]))
        self.d2 = np.concatenate((np.cumsum((p * np.exp(-self.y))[::-1])[::-1], [0.0]))
        # delta at each support point (only mass strictly above counts); e^y d2 in log space (y may exceed 709)
        with np.errstate(divide="ignore", over="ignore"):
            self.D = self.d1[1:] - np.exp(self.y + np.log(np.maximum(self.d2[1:], 0.0)))

    def delta_fin(self, eps):
        eps = np.asarray(eps, float)
        idx = np.searchsorted(self.y, eps, side="right")
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            out = self.d1[idx] - np.exp(eps + np.log(np.maximum(self.d2[idx], 0.0)))
        return np.where(np.isfinite(out), out, 0.0)

    def delta(self, eps):
        return self.inf_mass + (1.0 - self.inf_mass) * self.delta_fin(eps)

    def epsilon(self, delta):
        """Smallest eps >= 0 with delta(eps) <= delta (inf when the mass at +inf alone exceeds delta)."""
        if delta <= self.inf_mass:
            return math.inf
        target = (delta - self.inf_mass) / (1.0 - self.inf_mass)
        if self.delta_fin(0.0) <= target:
            return 0.0
        Dm = np.minimum.accumulate(self.D)
        j = int(np.searchsorted(-Dm, -target, side="left"))  # first support point with D <= target
        j = min(j, len(self.y) - 1)
        d1, d2 = self.d1[j], self.d2[j]
        if not d2 > 0:
            return float(self.y[j])
        return max(0.0, math.log(max(d1 - target, 1e-320) / d2))


def compose_direction(items, direction, grid):
    """The composed discrete PRV of one direction on the grid's circle."""
    N, n, h = grid.N, grid.n, grid.h
    spectrum = None
    mu_tot = 0.0
    log_fin = 0.0  # log prod (1 - inf_mass_i)^count
    for m, count in items:
        pmf, mu, inf_mass = discretise(m.plrv(direction), grid)
        buf = np.zeros(N)
        idx = np.arange(-n, n + 1) % N
        buf[idx] = pmf
        f = _power(sfft.rfft(buf), count)
        spectrum = f if spectrum is None else spectrum * f
        mu_tot += count * mu
        if inf_mass > 0:
            log_fin += count * math.log1p(-inf_mass)
    composed = sfft.irfft(spectrum, N)
    # circle index j holds the value j h for j <= N/2 and (j - N) h above: sorted order is a rotation
    half = N // 2 + 1
    order = np.concatenate((np.arange(half, N), np.arange(half)))
    values = np.concatenate((np.arange(half - N, 0), np.arange(half))) * h + mu_tot
    inf_total = -math.expm1(log_fin)
    return DiscreteCurve(values, composed[order], inf_total, order=slice(None))


def _power(f, count):
    """f ** count by repeated squaring (complex power through log/exp is slower and no more accurate)."""
    out = None
    base = f
    while True:
        if count & 1:
            out = base.copy() if out is None else out * base
        count >>= 1
        if not count:
            return out
        base = base * base


def fp_allowance(grid):
    return FP_FACTOR * grid.N * MACHINE_EPS


def _curves(items, eps_error, delta_error, memory_limit):
    grid = plan(items, eps_error, delta_error, memory_limit)
    return grid, {d: compose_direction(items, d, grid) for d in ("remove", "add")}


def delta(items, epsilon, eps_error=DEFAULT_EPS_ERROR, delta_error=1e-10, memory_limit=DEFAULT_MEMORY_LIMIT):
    eps_error, delta_error, memory_limit = _check_budgets(eps_error, delta_error, memory_limit)
    eps = np.atleast_1d(np.asarray(epsilon, float))
    grid, curves = _curves(items, eps_error, delta_error, memory_limit)
    fp = fp_allowance(grid)
    val = np.max([c.delta(eps) for c in curves.values()], axis=0)
    up = np.max([c.delta(eps - eps_error) for c in curves.values()], axis=0) + delta_error + fp
    lo = np.max([c.delta(eps + eps_error) for c in curves.values()], axis=0) - delta_error - fp
    val = np.clip(val, 0.0, 1.0)
    up = np.clip(up, 0.0, 1.0)
    lo = np.clip(lo, 0.0, 1.0)
    details = {"grid_points": grid.N, "mesh": grid.h, "domain": grid.L, "eps_error": eps_error,
               "delta_error": delta_error, "fp_allowance": fp}
    return EstimateArray(val, lo, up, "fft", True, details)


def epsilon(items, delta_, eps_error=DEFAULT_EPS_ERROR, delta_error=None, memory_limit=DEFAULT_MEMORY_LIMIT):
    d = check_finite_real("delta", delta_, low=0.0, high=1.0)
    if delta_error is None:
        delta_error = d / 1000.0
    eps_error, delta_error, memory_limit = _check_budgets(eps_error, delta_error, memory_limit)
    if not delta_error < d:
        raise ParameterError(f"delta_error must be below delta = {d:g}, got {delta_error:g}")
    grid, curves = _curves(items, eps_error, delta_error, memory_limit)
    fp = fp_allowance(grid)
    inf_mass = max(c.inf_mass for c in curves.values())
    smallest = 2.0 * (delta_error + fp) + inf_mass
    if d - delta_error - fp <= inf_mass:
        raise NumericalLimitError(
            f"delta = {d:g} cannot be certified with eps_error={eps_error:g}, delta_error={delta_error:g} on "
            f"{grid.N} grid points (floating-point floor {fp:.2g}); the smallest certifiable delta with these "
            f"settings is about {smallest:.2g}.  For tiny delta use a method that works in log space "
            "(the saddle-point accountant, method='spa', once available).")
    val = max(c.epsilon(d) for c in curves.values())
    up = max(c.epsilon(d - delta_error - fp) for c in curves.values()) + eps_error
    lo = max(0.0, max(c.epsilon(min(d + delta_error + fp, 1.0)) for c in curves.values()) - eps_error)
    details = {"grid_points": grid.N, "mesh": grid.h, "domain": grid.L, "eps_error": eps_error,
               "delta_error": delta_error, "fp_allowance": fp}
    return Estimate(val, lo, up, "fft", True, details)
