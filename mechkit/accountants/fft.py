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
   ``fp`` bounds the floating-point error of the FFT, the powers and the suffix sums (``_Amplification``)

The reported curve is the max over the add and remove directions, for the estimate and both bounds.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.fft as sfft
from scipy import integrate

from ..errors import NumericalLimitError, ParameterError, check_finite_real
from ..estimate import Estimate, EstimateArray
from ..laws.plrv import composed_inf_mass
from ..progress import working
from ..relations import DIRECTIONS
from . import fft_sums as _fs
from . import rdp

MACHINE_EPS = np.finfo(float).eps
DEFAULT_EPS_ERROR = 0.01
DEFAULT_MEMORY_LIMIT = 1 << 30
#: peak bytes per grid point of a query (measured with tracemalloc: 80.0 at 6.5e4, 8e5 and 7.9e6 points): the
#: first direction's suffix sums while the second is composed (pmf, spectra, powers, error amplification)
BYTES_PER_POINT = 10 * 8


def check_budgets(eps_error, delta_error, memory_limit):
    """The FFT's budgets as floats, each checked (finite, positive; delta_error below 1): ``ParameterError`` names
    the one out of range.  ``auto`` checks them too, before either method runs."""
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
    # Renyi-DP upper bounds (cheap: a few memoised CGF values) stand in for the exact epsilons of Remark 5.6;
    # any upper bound keeps the domain valid.  Only the finite part counts: a point mass at +inf is composed
    # exactly, outside the grid (notes.md 1.1).
    per = 0.0
    comp = 0.0
    for d in DIRECTIONS:
        for m, _ in items:
            per = max(per, float(rdp.epsilon([(m, 1)], min(delta_error / (8 * k), 0.5), d, alphas=rdp.COARSE_ALPHAS,
                                             refine=False, finite=True)))
        comp = max(comp, float(rdp.epsilon(items, min(delta_error / 4, 0.5), d, alphas=rdp.COARSE_ALPHAS,
                                           refine=False, finite=True)))
    if not (math.isfinite(per) and math.isfinite(comp)):
        raise NumericalLimitError("no finite domain bounds the composition's finite privacy loss at "
                                  f"delta_error={delta_error:g}; increase delta_error")
    L = 3.0 + max(eps_error + comp, per)
    h = eps_error / math.sqrt((k / 2.0) * math.log(12.0 / delta_error))
    # the circle has at least 2 ceil(L/h) + 1 points: checked before Grid asks for a fast FFT length (which fails
    # with an OverflowError for the astronomically many points of k = 1e12)
    points = 2.0 * math.ceil(L / h) + 1.0
    grid = Grid(L, h) if points * BYTES_PER_POINT <= memory_limit else None
    n_points = grid.N if grid is not None else points
    need = n_points * BYTES_PER_POINT
    if need > memory_limit:
        # N scales like 1/eps_error: the smallest eps_error that fits
        fit = eps_error * need / memory_limit
        raise ParameterError(
            f"eps_error={eps_error:g}, delta_error={delta_error:g} need a grid of {n_points:.0f} points "
            f"(about {need / 2**20:.0f} MiB), above memory_limit={memory_limit / 2**20:.0f} MiB; "
            f"eps_error >= {fit:.3g} fits, or raise memory_limit (for long compositions method='spa' needs no grid)")
    return grid


#: cells beyond the point where a tail of the finite part holds less than TAIL_SHARE * delta_error / k are
#: dropped (not evaluated); the dropped mass is added to the certified error (composition moves delta by at
#: most sum_i k_i * dropped_i), so the bounds stay rigorous and the cost follows the mass, not the domain
TAIL_SHARE = 1e-3
COARSE_STRIDE = 256


def _window(plrv, grid, tau, inf_mass):
    """Edge indices (j_lo, j_hi) of the evaluated window and the finite mass left outside it (<= 2 tau).

    Edges are e_j = (j - n - 1/2) h, j = 0 .. 2n+1.  A coarse scan (every COARSE_STRIDE-th edge) finds, on each
    side of 0, the first edge beyond which the finite part's tail is at most tau.
    """
    n, h = grid.n, grid.h
    last = 2 * n + 1
    up = np.unique(np.append(np.arange(n + 1, last + 1, COARSE_STRIDE), last))
    S = plrv.sf((up - n - 0.5) * h) - inf_mass
    ok = S <= tau
    j_hi, d_hi = (int(up[np.argmax(ok)]), max(float(S[np.argmax(ok)]), 0.0)) if ok.any() else (last, 0.0)
    down = np.unique(np.append(np.arange(n, -1, -COARSE_STRIDE), 0))[::-1]
    F = plrv.cdf((down - n - 0.5) * h)
    ok = F <= tau
    j_lo, d_lo = (int(down[np.argmax(ok)]), float(F[np.argmax(ok)])) if ok.any() else (0, 0.0)
    return j_lo, j_hi, d_lo + d_hi


def discretise(plrv, grid, tau=0.0):
    """Mean-preserving cell-centred discretisation: (pmf over i = -n..n, mean shift mu, mass at +inf,
    finite mass dropped from the tails)."""
    h, n = grid.h, grid.n
    vals, probs = plrv.atoms()
    inf_mass = float(probs[vals == np.inf].sum())
    j_lo, j_hi, dropped = _window(plrv, grid, tau, inf_mass)
    # cell c = i + n spans edges c and c + 1; cells below 0 from F differences, above from S differences
    F = plrv.cdf((np.arange(j_lo, n + 1) - n - 0.5) * h)       # edges j_lo .. n (all <= -h/2)
    S = plrv.sf((np.arange(n + 1, j_hi + 1) - n - 0.5) * h)    # edges n+1 .. j_hi (all >= h/2), incl. +inf mass
    q = np.zeros(2 * n + 1)
    q[j_lo:n] = np.diff(F)
    q[n + 1:j_hi] = -np.diff(S)
    q[n] = (1.0 - inf_mass) - F[-1] - (S[0] - inf_mass)
    q = np.maximum(q, 0.0)
    total = q.sum()
    if not total > 0:
        raise NumericalLimitError("the privacy-loss distribution has no mass inside the domain")
    centres = np.arange(-n, n + 1) * h
    lo_edge, hi_edge = (j_lo - n - 0.5) * h, (j_hi - n - 0.5) * h
    if not plrv.mechanism.core.mono:
        fin = np.isfinite(vals)
        inside = fin & (vals > lo_edge) & (vals <= hi_edge)
        tmean = float(np.sum(vals[inside] * probs[inside]) / np.sum(probs[inside]))
    else:
        # E[L; L finite] (the mass at +inf is composed exactly, apart from the discretised finite part)
        full = plrv.cgf_finite(0.0, 1) * (1.0 - inf_mass) if inf_mass > 0 else plrv.cgf(0.0, 1)
        sf_fin = (lambda s: np.maximum(plrv.sf(s) - inf_mass, 0.0)) if inf_mass > 0 else plrv.sf
        upper = hi_edge * (float(S[-1]) - inf_mass) + _tail_integral(sf_fin, hi_edge, np.inf)
        lower = lo_edge * float(F[0]) - _tail_integral(plrv.cdf, max(plrv.support[0], -np.inf), lo_edge)
        tmean = (full - upper - lower) / total
    pmf = q / total
    mu = tmean - float(np.einsum("i,i->", centres, pmf))  # not np.dot: BLAS rounds by its thread count
    if not abs(mu) < h / 2 + 1e-12:
        raise NumericalLimitError(f"mean shift {mu:.3g} is not below half the mesh {h / 2:.3g}: the discretisation "
                                  "is not mean-preserving (report this as a bug)")
    return pmf, mu, inf_mass, dropped


def _tail_integral(f, a, b):
    if not b > a:
        return 0.0
    val, err = integrate.quad(lambda u: float(f(u)), a, b, limit=200, epsabs=1e-15, epsrel=1e-10)
    return val


class DiscreteCurve:
    """The composed discrete PRV: exact delta(eps) and its inverse (notes.md 1.6).

    Its support is the arithmetic grid y_i = (first + i) step + shift, i = 0 .. N-1 (sorted), so composition leaves
    only the suffix sums: two arrays of N, not five (y is recomputed when needed; the running minimum of the curve
    at the support points is made at the first epsilon query, after the memory peak of composition).
    """

    def __init__(self, first, step, shift, pmf, inf_mass):
        self.first, self.step, self.shift = int(first), float(step), float(shift)
        self.inf_mass = inf_mass
        # suffix sums d1_i = sum_{j >= i} p_j and the log of d2_i = sum_{j >= i} p_j e^{-y_j} (e^{-y} under- and
        # overflows beyond |y| ~ 709: kept scaled), compensated (a plain running sum of N terms may carry N units of
        # rounding; Neumaier's stays at a few units plus N u^2)
        p = np.ascontiguousarray(pmf, dtype=float)
        self.size = p.size
        self._Dm = None
        self.d1, self.ld2 = _fs.suffix_sums(p, self.y)
        self.sum_error = (4.0 * MACHINE_EPS + 2.0 * p.size * MACHINE_EPS ** 2) * float(np.sum(np.abs(p))) \
            + 4.0 * MACHINE_EPS

    @property
    def y(self):
        """The support points (computed; the same arithmetic as when the pmf was placed)."""
        return np.arange(self.first, self.first + self.size) * self.step + self.shift

    def _count_le(self, eps):
        """#{i : y_i <= eps} for each eps (searchsorted on the grid, without the array)."""
        n = self.size
        guess = np.floor((np.asarray(eps, float) - self.shift) / self.step) - self.first + 1
        c = np.clip(np.nan_to_num(guess, nan=0.0, posinf=n, neginf=0.0), 0, n).astype(np.int64)
        # the division may be off by one against the products that define y: one correction each way
        up = (c < n) & ((self.first + np.minimum(c, n - 1)) * self.step + self.shift <= eps)
        c = c + up
        down = (c > 0) & ((self.first + np.maximum(c - 1, 0)) * self.step + self.shift > eps)
        return c - down

    def delta_fin(self, eps):
        eps = np.asarray(eps, float)
        idx = self._count_le(eps)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            out = self.d1[idx] - np.exp(eps + self.ld2[idx])
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
        if self._Dm is None:
            # delta at each support point (only mass strictly above counts), running minimum; e^y d2 in log space
            # (y may exceed 709).  Made at the first query, after composition (so not part of the memory peak).
            # From the last support point <= 0 on (epsilon >= 0 needs no lower one; far below 0 the suffix sums of
            # p e^{-y} are the pmf's rounding noise times e^{|y|})
            i0 = max(int(self._count_le(0.0)) - 1, 0)
            with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
                self._Dm = (i0, np.minimum.accumulate(
                    self.d1[i0 + 1:] - np.exp(self.y[i0:] + self.ld2[i0 + 1:])))
        i0, Dm = self._Dm
        j = i0 + int(np.searchsorted(-Dm, -target, side="left"))  # first support point with D <= target
        j = min(j, self.size - 1)
        d1, ld2 = self.d1[j], self.ld2[j]
        if ld2 == -math.inf:
            return float((self.first + j) * self.step + self.shift)
        return max(0.0, math.log(max(d1 - target, 1e-320)) - ld2)


def compose_direction(items, direction, grid, delta_error=0.0):
    """The composed discrete PRV of one direction on the grid's circle."""
    N, n, h = grid.N, grid.n, grid.h
    spectrum = None
    mu_tot = 0.0
    log_fin = 0.0  # log prod (1 - inf_mass_i)^count
    k = sum(c for _, c in items)
    tau = TAIL_SHARE * delta_error / k
    dropped = 0.0
    amp = _Amplification(N // 2 + 1)
    for m, count in items:
        pmf, mu, inf_mass, drop = discretise(m.plrv(direction), grid, tau)
        dropped += count * drop
        buf = np.zeros(N)  # grid values -n h .. n h on the circle: 0..n at the start, -n..-1 at the end
        buf[:n + 1] = pmf[n:]
        buf[N - n:] = pmf[:n]
        x = sfft.rfft(buf)
        del buf
        f = _power(x, count)
        amp.add(np.abs(x), f, count)
        del x
        spectrum = f if spectrum is None else spectrum * f
        mu_tot += count * mu
        if inf_mass > 0:
            log_fin += count * math.log1p(-inf_mass)
    composed = sfft.irfft(spectrum, N)
    fp = amp.l1_error_bound(N, k, composed)
    del spectrum
    # circle index j holds the value j h for j <= N/2 and (j - N) h above: sorted order is a rotation
    half = N // 2 + 1
    sorted_pmf = np.concatenate((composed[half:], composed[:half]))
    del composed
    curve = DiscreteCurve(half - N, h, mu_tot, sorted_pmf, -math.expm1(log_fin))
    curve.dropped = dropped
    curve.fp = fp + curve.sum_error
    return curve


#: constant of the componentwise FFT error bound |fl(FFT x)_w - (FFT x)_w| <= C u log2(N) sum|x_j| (twiddle
#: errors included); pocketfft's mixed-radix transforms stay well inside it
FFT_ERROR_CONSTANT = 8.0


class _Amplification:
    """Floating-point error of the composed pmf, propagated through the spectrum (a model-based bound).

    Each pmf's transform has componentwise error <= C u log2 N (its entries sum to 1).  Raising to the power k
    and multiplying across mechanisms amplifies a spectral error at frequency w by the derivative of the
    product, T_w = sum_i k_i |X_i,w|^(k_i-1) prod_{j != i} |X_j,w|^(k_j), accumulated here by the product rule
    without storing the spectra; the products themselves add 2 K u |Y_w| (K the total count).  The inverse
    transform maps the spectral error e to an l1 error of at most ||e||_2 (Parseval, with its own
    C u log2 N ||p||_2 sqrt(N)); the l1 error bounds the error of every delta the curve reports.
    """

    def __init__(self, m):
        self.P = np.ones(m)   # prod_j |X_j|^(k_j)
        self.T = np.zeros(m)  # its derivative-like sum

    def add(self, a, powered, k):
        """a = |X|, powered = X^k as computed (its modulus is |X|^k up to 2 k u, covered by the 2 K u term)."""
        Fk = np.abs(powered)
        self.T *= Fk
        if k == 1:
            self.T += self.P
        else:  # T += P k |X|^k / |X| (0 where X = 0), with one temporary
            dFk = np.zeros_like(a)
            np.divide(Fk, a, out=dFk, where=a > 0)
            dFk *= k
            dFk *= self.P
            self.T += dFk
        self.P *= Fk

    def l1_error_bound(self, N, k, composed):
        c = FFT_ERROR_CONSTANT * MACHINE_EPS * math.log2(N)
        e = c * self.T + 2.0 * k * MACHINE_EPS * self.P
        spectral = math.sqrt(2.0 * float(np.einsum("i,i->", e, e)))  # the half spectrum counted twice (upper bound)
        inverse = c * math.sqrt(N) * math.sqrt(float(np.einsum("i,i->", composed, composed)))  # no BLAS, as above
        return spectral + inverse + 8.0 * MACHINE_EPS


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


#: grid points times mechanisms from which a composition may print a progress line (``progress.working``: if it
#: still runs after ``progress.DELAY`` s); measured (2 cores): one mechanism ~0.3-0.4 s at 2^20 points, 2-4.5 s at 8e6
PROGRESS_POINTS = 1 << 20


def _curves(items, eps_error, delta_error, memory_limit):
    grid = plan(items, eps_error, delta_error, memory_limit)
    with working(f"composing {sum(c for _, c in items)} runs of {len(items)} mechanism(s) on an FFT grid of {grid.N} "
                 "points", when=grid.N * len(items) >= PROGRESS_POINTS, silence="mechkit.progress.enabled(False)"):
        curves = {d: compose_direction(items, d, grid, delta_error) for d in DIRECTIONS}
    # rounding of the FFT, the powers and the suffix sums, plus the finite mass dropped from the tails
    slack = max(c.fp + c.dropped for c in curves.values())
    grid.fp = max(c.fp for c in curves.values())
    return grid, curves, slack


def _details(grid, eps_error, delta_error, slack):
    return {"variant": "prv", "grid_points": grid.N, "mesh": grid.h, "domain": grid.L, "eps_error": eps_error,
            "delta_error": delta_error, "fp_allowance": grid.fp, "tail_allowance": slack - grid.fp}


class Composed:
    """A composition's two composed privacy curves on one grid (``_curves``), built once: every epsilon or delta
    query on it is a lookup (``mechkit.Composition.curve``).  Certified as the composer's answers, for the budgets it
    was built with.

    Parameters
    ----------
    items : ((mechanism, count), ...) as the accountants take them.
    eps_error, delta_error, memory_limit : the budgets (``check_budgets``).
    """

    def __init__(self, items, eps_error=DEFAULT_EPS_ERROR, delta_error=1e-10, memory_limit=DEFAULT_MEMORY_LIMIT):
        eps_error, delta_error, memory_limit = check_budgets(eps_error, delta_error, memory_limit)
        self.eps_error, self.delta_error = eps_error, delta_error
        self.grid, self.curves, self.fp = _curves(items, eps_error, delta_error, memory_limit)

    def details(self):
        return _details(self.grid, self.eps_error, self.delta_error, self.fp)

    _FLOATS = ("step", "shift", "inf_mass", "sum_error")

    def state(self):
        """(header dict, name -> array) that ``restore`` takes back bit for bit (floats as hex text)."""
        hx = float.hex
        meta = {"eps_error": hx(self.eps_error), "delta_error": hx(self.delta_error), "fp": hx(float(self.fp)),
                "grid": {"L": hx(float(self.grid.L)), "h": hx(self.grid.h), "n": self.grid.n, "N": self.grid.N,
                         "fp": hx(float(self.grid.fp))},
                "curves": {}}
        arrays = {}
        for d, c in self.curves.items():
            floats = {f: hx(float(getattr(c, f))) for f in self._FLOATS}
            meta["curves"][d] = {"first": c.first, "size": c.size, **floats}
            arrays[f"{d}_d1"], arrays[f"{d}_ld2"] = c.d1, c.ld2
        return meta, arrays

    @classmethod
    def restore(cls, meta, arrays):
        """The ``Composed`` that ``state`` described (KeyError, TypeError or ValueError if it is inconsistent)."""
        fh = float.fromhex
        obj = cls.__new__(cls)
        obj.eps_error, obj.delta_error, obj.fp = fh(meta["eps_error"]), fh(meta["delta_error"]), fh(meta["fp"])
        g = meta["grid"]
        obj.grid = Grid.__new__(Grid)
        obj.grid.L, obj.grid.h, obj.grid.n, obj.grid.N = fh(g["L"]), fh(g["h"]), int(g["n"]), int(g["N"])
        obj.grid.fp = fh(g["fp"])
        obj.curves = {}
        for d in DIRECTIONS:
            cm = meta["curves"][d]
            c = DiscreteCurve.__new__(DiscreteCurve)
            c.first, c.size = int(cm["first"]), int(cm["size"])
            c.step, c.shift, c.inf_mass, c.sum_error = (fh(cm[f]) for f in cls._FLOATS)
            c.d1 = np.ascontiguousarray(arrays[f"{d}_d1"], dtype=float)
            c.ld2 = np.ascontiguousarray(arrays[f"{d}_ld2"], dtype=float)
            if c.d1.shape != (c.size + 1,) or c.ld2.shape != (c.size + 1,):
                raise ValueError(f"the {d} curve's arrays do not have {c.size + 1} entries")
            c._Dm = None
            obj.curves[d] = c
        return obj

    def delta(self, eps):
        """delta at each of ``eps`` (an array), max over the directions: EstimateArray."""
        curves, eps_error, delta_error, fp = self.curves.values(), self.eps_error, self.delta_error, self.fp
        val = np.max([c.delta(eps) for c in curves], axis=0)
        up = np.max([c.delta(eps - eps_error) for c in curves], axis=0) + delta_error + fp
        lo = np.max([c.delta(eps + eps_error) for c in curves], axis=0) - delta_error - fp
        val = np.clip(val, 0.0, 1.0)
        up = np.clip(up, 0.0, 1.0)
        lo = np.clip(lo, 0.0, 1.0)
        return EstimateArray(val, lo, up, "fft", True, self.details())

    def epsilon(self, d):
        """Smallest epsilon with delta(epsilon) <= d, max over the directions: Estimate."""
        curves, grid, fp = self.curves.values(), self.grid, self.fp
        eps_error, delta_error = self.eps_error, self.delta_error
        inf_mass = max(c.inf_mass for c in curves)
        smallest = 2.0 * (delta_error + fp) + inf_mass
        if d - delta_error - fp <= inf_mass:
            raise NumericalLimitError(
                f"delta = {d:g} cannot be certified with eps_error={eps_error:g}, delta_error={delta_error:g} on "
                f"{grid.N} grid points (floating-point floor {fp:.2g}); the smallest certifiable delta with these "
                f"settings is about {smallest:.2g}.  For tiny delta use a method that works in log space "
                "(the saddle-point accountant, method='spa').")
        val = max(c.epsilon(d) for c in curves)
        up = max(c.epsilon(d - delta_error - fp) for c in curves) + eps_error
        lo = max(0.0, max(c.epsilon(min(d + delta_error + fp, 1.0)) for c in curves) - eps_error)
        return Estimate(val, lo, up, "fft", True, self.details())


def delta(items, epsilon, eps_error=DEFAULT_EPS_ERROR, delta_error=1e-10, memory_limit=DEFAULT_MEMORY_LIMIT,
          variant="prv", L=None, n=None):
    """delta(epsilon) of the composition, max over add and remove (EstimateArray).

    ``variant="prv"`` (default): certified bounds by Theorem 5.5 of Gopi et al. for the budgets
    ``eps_error``/``delta_error``.  ``variant="fa"``: the Fourier accountant (Koskela et al.) with domain
    [-L, L) and ``n`` points; its bounds are the paper's error *estimates*, not certified.
    """
    eps_error, delta_error, memory_limit = check_budgets(eps_error, delta_error, memory_limit)
    eps = np.atleast_1d(np.asarray(epsilon, float))
    if _variant(variant, L, n) == "fa":
        return fa_delta(items, eps, eps_error, delta_error, memory_limit, L, n)
    return Composed(items, eps_error, delta_error, memory_limit).delta(eps)


def epsilon(items, delta_, eps_error=DEFAULT_EPS_ERROR, delta_error=None, memory_limit=DEFAULT_MEMORY_LIMIT,
            variant="prv", L=None, n=None):
    """Smallest epsilon with delta(epsilon) <= delta_, max over add and remove (Estimate); see ``delta``."""
    d = check_finite_real("delta", delta_, low=0.0, high=1.0)
    if delta_error is None:  # a thousandth of what the finite part may add to the masses at +inf
        rest = d - max(composed_inf_mass(items, r) for r in DIRECTIONS)
        delta_error = (rest if rest > 0.0 else d) / 1000.0
    eps_error, delta_error, memory_limit = check_budgets(eps_error, delta_error, memory_limit)
    if not delta_error < d:
        raise ParameterError(f"delta_error must be below delta = {d:g}, got {delta_error:g}")
    if _variant(variant, L, n) == "fa":
        return fa_epsilon(items, d, eps_error, delta_error, memory_limit, L, n)
    return Composed(items, eps_error, delta_error, memory_limit).epsilon(d)


# ---------------------------------------------------------------------------------------------------
# The Fourier accountant's own scheme (Koskela, Jalko, Honkela 2020; notes.md 2.2 and 2.4)


def _variant(variant, L, n):
    if variant not in ("prv", "fa"):
        raise ParameterError(f"variant must be 'prv' (certified, default) or 'fa' (Fourier accountant), "
                             f"got {variant!r}")
    if variant == "prv" and (L is not None or n is not None):
        raise ParameterError("L and n are options of variant='fa'; the 'prv' variant sizes its grid from "
                             "eps_error and delta_error")
    return variant


def _fa_grid(items, eps_error, delta_error, memory_limit, L, n):
    """(L, n): the user's, or by default the certified scheme's domain with a mesh as fine as its mesh."""
    if L is not None:
        L = check_finite_real("L", L, low=0.0)
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, (int, float, np.integer, np.floating)) or \
                not float(n).is_integer() or n < 4 or int(n) % 2:
            raise ParameterError(f"n must be an even integer >= 4, got {n!r}")
        n = int(n)
    if L is None or n is None:
        grid = plan(items, eps_error, delta_error, memory_limit=math.inf)
        L = grid.L if L is None else L
        n = 2 * int(math.ceil(L / grid.h)) if n is None else n
    need = 2 * n * BYTES_PER_POINT  # the run at 2n for the error estimate dominates
    if need > memory_limit:
        raise ParameterError(f"variant='fa' with n={n} needs about {need / 2**20:.0f} MiB (the error estimate runs "
                             f"at 2n), above memory_limit={memory_limit / 2**20:.0f} MiB; "
                             f"n <= {int(memory_limit / (2 * BYTES_PER_POINT)) // 2 * 2} fits, or raise memory_limit")
    return L, n


def fa_compose_direction(items, direction, L, n):
    """FA Algorithm 1 (heterogeneous form 5.5): the density of each PLRV evaluated at x_i = -L + i dx,
    dx = 2L/n, times dx, composed on the circle [-L, L).  Point masses (which the paper leaves to future
    work) go to the nearest grid point; masses at +inf are composed as in the certified scheme."""
    dx = 2.0 * L / n
    half = n // 2
    j = np.arange(n)
    xs = np.where(j < half, j, j - n) * dx  # circle index j holds x = j dx, and x = (j - n) dx from n/2 on (= D x)
    spectrum = None
    log_fin = 0.0
    for m, count in items:
        plrv = m.plrv(direction)
        w = plrv.pdf(xs) * dx
        av, ap = plrv.atoms()
        fin = np.isfinite(av)
        if fin.any():
            k = np.rint(av[fin] / dx).astype(np.int64)
            keep = (k >= -half) & (k < half)
            np.add.at(w, k[keep] % n, ap[fin][keep])
        inf_mass = float(ap[av == np.inf].sum())
        f = _power(sfft.rfft(w), count)
        spectrum = f if spectrum is None else spectrum * f
        if inf_mass > 0:
            log_fin += count * math.log1p(-inf_mass)
    composed = sfft.irfft(spectrum, n)
    return DiscreteCurve(-half, dx, 0.0, np.concatenate((composed[half:], composed[:half])), -math.expm1(log_fin))


def fa_tail_estimate(items, L):
    """The FA paper's neglected-tail estimate (7.3) in its generic Chernoff form, lambda = L/2:
    P(S > L) <= exp(sum_i k_i K_i(L/2) - L^2/2), with the derived CGFs K_i, max over directions."""
    out = 0.0
    for d in DIRECTIONS:
        tot = sum(c * m.plrv(d).cgf(L / 2.0) for m, c in items)
        out = max(out, math.exp(min(tot - L * L / 2.0, 0.0)))
    return out


def _fa_details(L, n, err, tail):
    return {"variant": "fa", "L": L, "n": n, "mesh": 2.0 * L / n, "richardson_error": err, "tail_estimate": tail,
            "note": "Fourier accountant: error estimates (7.3) and (7.4) of Koskela et al., not certified bounds"}


def fa_delta(items, eps, eps_error, delta_error, memory_limit, L, n):
    L, n = _fa_grid(items, eps_error, delta_error, memory_limit, L, n)
    val = np.max([fa_compose_direction(items, d, L, n).delta(eps) for d in DIRECTIONS], axis=0)
    fine = np.max([fa_compose_direction(items, d, L, 2 * n).delta(eps) for d in DIRECTIONS], axis=0)
    err = 2.0 * np.abs(val - fine)  # err(L, n) of (7.4)
    tail = fa_tail_estimate(items, L)
    val = np.clip(val, 0.0, 1.0)
    return EstimateArray(val, np.clip(val - err - tail, 0.0, 1.0), np.clip(val + err + tail, 0.0, 1.0), "fft-fa",
                         False, _fa_details(L, n, err, tail))


def fa_epsilon(items, d, eps_error, delta_error, memory_limit, L, n):
    L, n = _fa_grid(items, eps_error, delta_error, memory_limit, L, n)
    val = max(fa_compose_direction(items, dr, L, n).epsilon(d) for dr in DIRECTIONS)
    fine = max(fa_compose_direction(items, dr, L, 2 * n).epsilon(d) for dr in DIRECTIONS)
    if not (math.isfinite(val) and math.isfinite(fine)):
        raise NumericalLimitError(f"variant='fa' found no finite epsilon at delta = {d:g} on [-{L:g}, {L:g}); "
                                  "increase L or use the default certified variant")
    err = 2.0 * abs(val - fine)
    tail = fa_tail_estimate(items, L)
    return Estimate(val, max(0.0, val - err), val + err, "fft-fa", False, _fa_details(L, n, err, tail))
