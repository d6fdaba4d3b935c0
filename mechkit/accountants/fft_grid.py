"""The FFT composer's grid and machinery, and the PRV variant's discretisation with certified bounds (Gopi, Lee,
Wutschitz 2021; notes.md section 1).  ``fft`` answers queries; ``fft_ctd`` and ``fft_fa`` are the other variants.

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

from ..errors import MechkitError, NumericalLimitError, ParameterError, check_finite_real
from ..relations import DIRECTIONS
from . import fft_dft
from . import fft_sums as _fs
from .fft_spectral import GridSupport, SpectralCurve, band_of, suffix_delta
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
    h = eps_error / math.sqrt((k / 2.0) * math.log(12.0 / delta_error))
    return grid_for(domain(items, eps_error, delta_error), h, memory_limit, eps_error, delta_error)


def domain(items, eps_error, delta_error):
    """The half-width L of the grid (Remark 5.6)."""
    k = sum(c for _, c in items)
    # Renyi-DP upper bounds (cheap: a few memoised CGF values) stand in for the exact epsilons of Remark 5.6;
    # any upper bound keeps the domain valid.  Only the finite part counts: a point mass at +inf is composed
    # exactly, outside the grid (notes.md 1.1).  The composition's bound first; a mechanism's own bound matters
    # only where it exceeds eps_error + that one, and the orders the composition's scan evaluated (their CGF values
    # memoised, two past its best) bound it from above already: its own scan (up to order 256 at the tiny
    # delta_error / 8k, the costliest tilts) runs only where they do not keep it below.
    comp, seen = 0.0, {}
    d_comp = min(delta_error / 4, 0.5)
    for d in DIRECTIONS:
        c, _, seen[d] = rdp.coarse_bound(items, d_comp, d, _model_order(items, d_comp, d), finite=True)
        comp = max(comp, c)
    per = 0.0
    d_per = min(delta_error / (8 * k), 0.5)
    for d in DIRECTIONS:
        for m, _ in items:
            if math.isfinite(comp) and rdp.best_of_orders([(m, 1)], d_per, d, seen[d], finite=True) <= eps_error + comp:
                continue  # below the composition's term: it does not change the domain
            per = max(per, float(rdp.epsilon([(m, 1)], d_per, d, alphas=rdp.COARSE_ALPHAS, refine=False,
                                             finite=True)))
    if not (math.isfinite(per) and math.isfinite(comp)):
        raise NumericalLimitError("no finite domain bounds the composition's finite privacy loss at "
                                  f"delta_error={delta_error:g}; increase delta_error")
    return 3.0 + max(eps_error + comp, per)


def _model_order(items, delta, direction):
    """The index into ``rdp.COARSE_ALPHAS`` of the order that minimises the Renyi bound of a Gaussian model of the
    composed loss (each step's loss N(v/2, v), v its variance K''(0), memoised and asked again by the mesh: RDP(a)
    = a V / 2 for the total V): the start of ``rdp.coarse_bound``'s scan (0 where a variance is not at hand).
    Measured on 120 DP-SGD settings: the scan's minimum at this index in 97, one off in 20."""
    try:
        v = sum(c * float(m.plrv(direction).cgf(0.0, 2)) for m, c in items)
    except MechkitError:
        return 0
    if not (math.isfinite(v) and v > 0):
        return 0
    a = rdp.COARSE_ALPHAS
    return int(np.argmin(v * a / 2 + np.log1p(-1.0 / a) - (math.log(delta) + np.log(a)) / (a - 1.0)))


def grid_for(L, h, memory_limit, eps_error, delta_error, per_point=BYTES_PER_POINT, power=1):
    """The grid of half-width L and mesh h, or ``ParameterError`` before allocating when its ``per_point`` bytes a
    point exceed memory_limit (the mesh scales like eps_error ** (1 / power): the message names the eps_error that
    fits)."""
    # the circle has at least 2 ceil(L/h) + 1 points: checked before Grid asks for a fast FFT length (which fails
    # with an OverflowError for the astronomically many points of k = 1e12)
    points = 2.0 * math.ceil(L / h) + 1.0
    grid = Grid(L, h) if points * per_point <= memory_limit else None
    n_points = grid.N if grid is not None else points
    need = n_points * per_point
    if need > memory_limit:
        fit = eps_error * (need / memory_limit) ** power
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
    from scipy import integrate  # here: SciPy's integrate imports its optimize, ~0.2 s

    val, err = integrate.quad(lambda u: float(f(u)), a, b, limit=200, epsabs=1e-15, epsrel=1e-10)
    return val


#: a composed curve's first epsilon queries scan its support points (a compiled pass, up to the answer), the next
#: one makes the running minimum of delta over all of them (``DiscreteCurve.epsilon``)
SCANS = 3


class DiscreteCurve(GridSupport):
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
        self._Dm, self._scans, self._scanned = None, 0, None
        self.d1, self.ld2 = _fs.suffix_sums(p, self.y)
        self.sum_error = (4.0 * MACHINE_EPS + 2.0 * p.size * MACHINE_EPS ** 2) * float(np.sum(np.abs(p))) \
            + 4.0 * MACHINE_EPS

    def delta_fin(self, eps):
        eps = np.asarray(eps, float)
        return suffix_delta(self.d1, self.ld2, self._count_le(eps), eps)

    def _epsilon_fin(self, target, i0):
        """``GridSupport.epsilon`` past its checks (i0: the last support point <= 0)."""
        # delta at each support point (``fft_sums._support_delta``) from the last one <= 0 on (epsilon >= 0 needs no
        # lower one; far below 0 the suffix sums of p e^{-y} are the pmf's rounding noise times e^{|y|}); the answer
        # is at the first support point with D <= target.  The first SCANS queries scan for it (a query of the FFT
        # composer asks each curve twice, the larger target first: a smaller one's scan starts at the larger one's
        # answer, every point before it having D above both); the next makes the running minimum of D (searched by
        # bisection from then on), after composition (so not part of the memory peak)
        if self._Dm is None:
            if self._scans < SCANS:
                self._scans += 1
                start = i0
                if self._scanned is not None and target <= self._scanned[0]:
                    start = max(i0, self._scanned[1])
                j = _fs.first_at_most(self.d1, self.ld2, self.first, self.step, self.shift, start, target)
                self._scanned = (target, j)
            else:
                self._Dm = (i0, _fs.running_min_delta(self.d1, self.ld2, self.first, self.step, self.shift, i0))
        if self._Dm is not None:
            i0, Dm = self._Dm
            j = i0 + int(np.searchsorted(-Dm, -target, side="left"))
        j = min(j, self.size - 1)
        d1, ld2 = self.d1[j], self.ld2[j]
        if ld2 == -math.inf:
            return float((self.first + j) * self.step + self.shift)
        return max(0.0, math.log(max(d1 - target, 1e-320)) - ld2)


def curve_state(c, key, floats, arrays):
    """A ``DiscreteCurve``'s header (its ``floats`` as hex text: exact) for ``curve_restore``; its two arrays go into
    ``arrays`` as ``key_d1``, ``key_ld2`` (a ``SpectralCurve``'s band as ``key_re``, ``key_im``)."""
    head = {"first": c.first, "size": c.size, **{f: float.hex(float(getattr(c, f))) for f in floats}}
    if isinstance(c, SpectralCurve):
        arrays[f"{key}_re"], arrays[f"{key}_im"] = c.band.real.copy(), c.band.imag.copy()
        return head | {"kind": "spectral"}
    arrays[f"{key}_d1"], arrays[f"{key}_ld2"] = c.d1, c.ld2
    return head


def curve_restore(meta, key, floats, arrays):
    """The curve (``DiscreteCurve`` or ``SpectralCurve``) that ``curve_state`` described, bit for bit (KeyError,
    TypeError or ValueError if the header and arrays do not fit together)."""
    if meta.get("kind") == "spectral":
        band = np.asarray(arrays[f"{key}_re"], dtype=float) + 1j * np.asarray(arrays[f"{key}_im"], dtype=float)
        step, shift, inf_mass = (float.fromhex(meta[f]) for f in ("step", "shift", "inf_mass"))
        c = SpectralCurve(int(meta["first"]), step, shift, band, int(meta["size"]), inf_mass)
        for f in floats:
            setattr(c, f, float.fromhex(meta[f]))
        return c
    c = DiscreteCurve.__new__(DiscreteCurve)
    c.first, c.size = int(meta["first"]), int(meta["size"])
    for f in floats:
        setattr(c, f, float.fromhex(meta[f]))
    c.d1 = np.ascontiguousarray(arrays[f"{key}_d1"], dtype=float)
    c.ld2 = np.ascontiguousarray(arrays[f"{key}_ld2"], dtype=float)
    if c.d1.shape != (c.size + 1,) or c.ld2.shape != (c.size + 1,):
        raise ValueError(f"the {key} curve's arrays do not have {c.size + 1} entries")
    c._Dm, c._scans, c._scanned = None, 0, None
    return c


def grid_state(grid):
    return {f: float.hex(float(getattr(grid, f))) for f in ("L", "h")} | {"n": grid.n, "N": grid.N}


def grid_restore(meta):
    grid = Grid.__new__(Grid)
    grid.L, grid.h = float.fromhex(meta["L"]), float.fromhex(meta["h"])
    grid.n, grid.N = int(meta["n"]), int(meta["N"])
    return grid


def compose_direction(items, direction, grid, delta_error=0.0):
    """The composed discrete PRV of one direction on the grid's circle."""
    k = sum(c for _, c in items)
    tau = TAIL_SHARE * delta_error / k
    dropped = 0.0
    acc = Spectrum(grid, k, len(items))
    for m, count in items:
        pmf, mu, inf_mass, drop = discretise(m.plrv(direction), grid, tau)
        dropped += count * drop
        acc.add(pmf, count, mu, inf_mass)
    curve = acc.curve()
    curve.dropped = dropped
    return curve


class Spectrum:
    """The product of the powered spectra of pmfs on the grid's points -n..n (each added once, then dropped), with
    their floating-point error (``_Amplification``), the total mean shift and the composed mass at +inf.  ``total``:
    the composition's count when known (which of its lowest frequencies a long composition checks: ``_low_errors``);
    ``distinct`` its number of laws.  A composition of at least LOW_DD_TOTAL runs of at most LOW_DD_LAWS laws
    composes its lowest frequencies in double-double instead (``_add_exact``): there the composed spectrum is
    within a rounding of exact, not k-fold the FFT's error."""

    def __init__(self, grid, total=None, distinct=None):
        self.grid = grid
        self.total = total
        self.exact = None if total is None or total < LOW_DD_TOTAL or (distinct or 1) > LOW_DD_LAWS else {}
        self.spectrum = None
        self.mu = 0.0
        self.log_fin = 0.0  # log prod (1 - inf_mass_i)^count
        self.k = 0
        self.amp = _Amplification(grid.N)
        self.cut = 0  # laws whose powers were set to 0 below NEGLIGIBLE_POWER somewhere (``significant_power``)

    def add(self, pmf, count, mu=0.0, inf_mass=0.0):
        N, n = self.grid.N, self.grid.n
        buf = np.zeros(N)  # grid values -n h .. n h on the circle: 0..n at the start, -n..-1 at the end
        buf[:n + 1] = pmf[n:]
        buf[N - n:] = pmf[:n]
        x = sfft.rfft(buf)
        x[0] = _fs.compensated_sum(buf)  # the mass within 4 units of rounding (Neumaier), not C u log2 N
        del buf
        a = np.abs(x)
        mass = float(x[0].real) * (1.0 + 8.0 * MACHINE_EPS)  # an upper bound on the pmf's mass (the sums' bounds)
        if self.exact is not None:
            d = self._add_exact(pmf, a, mass, count)
        else:
            d = np.concatenate(([4.0 * MACHINE_EPS], self._low_errors(pmf, x, a, mass, count)))
        f, cut = significant_power(x, a, count, self.amp.c)
        self.cut += cut
        self.amp.add(a, f, count, d)
        del x
        self.spectrum = f if self.spectrum is None else self.spectrum * f
        self.mu += count * mu
        self.k += count
        if inf_mass > 0:
            self.log_fin += count * math.log1p(-inf_mass)

    def _add_exact(self, pmf, a, mass, count):
        """The law's frequencies 0..W in double-double (``fft_dft.low_frequencies_dd``), raised to its count and
        multiplied into the composition's; W chosen at the first law (``low_count`` over the whole composition) and
        kept.  Returns the error bounds of those frequencies (for ``_Amplification``'s product rule)."""
        ex = self.exact
        if "W" not in ex:
            ex["W"] = max(1, low_count(a, self.total, self.amp.c, LOW_DD_FLOOR, LOW_DD_MAX))
        W = ex["W"]
        z = fft_dft.power_dd(fft_dft.low_frequencies_dd(pmf, -self.grid.n, self.grid.N, W), count)
        ex["Y"] = z if "Y" not in ex else fft_dft.mul_dd(ex["Y"], z)
        return np.full(W + 1, fft_dft.dd_error(mass, pmf.size))

    def _low_errors(self, pmf, x, a, mass, count):
        """Error bounds of the FFT's x_w at its lowest frequencies w = 1..W, checked against the compensated direct
        sum (``fft_dft``): |x_w - direct_w| + the direct sum's bound, for a law composed at least LOW_DFT_COUNT
        times in a composition of at least LOW_DFT_TOTAL runs, W the frequencies where the FFT's bound amplified by
        the whole composition would still count (``low_count``, as if every law of it had this one's spectrum); an
        empty array otherwise (the FFT's bound, C u log2 N, stands everywhere)."""
        total = max(count, self.total or count)
        if count < LOW_DFT_COUNT or total < LOW_DFT_TOTAL:
            return np.zeros(0)
        W = low_count(a, total, self.amp.c)
        exact = fft_dft.low_frequencies(pmf, -self.grid.n, self.grid.N, W)
        bound = fft_dft.error(mass, pmf.size)
        return np.minimum(np.abs(x[1:W + 1] - exact) * (1.0 + MACHINE_EPS) + bound, self.amp.c)

    def curve(self, spectral=False):
        """The composed ``DiscreteCurve`` (its ``fp``: the rounding of the FFT, powers and suffix sums); with
        ``spectral``, a ``fft_spectral.SpectralCurve`` where the spectrum is band-limited (its ``fp``: the rounding
        of the FFT, the powers and its spectral sums)."""
        N, h = self.grid.N, self.grid.h
        if self.exact:
            Y = fft_dft.dd_value(self.exact["Y"])
            self.spectrum[:Y.size] = Y
            self.amp.exact = np.abs(Y)
        # each frequency ``significant_power`` set to 0 was at most NEGLIGIBLE_POWER (times the other laws' factors,
        # at most 1): its share of any delta is at most that, over the half spectrum and its mirror
        half = N // 2 + 1
        cut = 2.0 * half * self.cut * NEGLIGIBLE_POWER
        band = band_of(self.spectrum, N) if spectral else None
        if band is not None:
            fp = self.amp.error_bound(N, self.k, None) + cut
            self.spectrum = None
            curve = SpectralCurve(half - N, h, self.mu, band, N, -math.expm1(self.log_fin))
            curve.fp = fp + curve.sum_error
            return curve
        composed = sfft.irfft(self.spectrum, N)
        fp = self.amp.error_bound(N, self.k, composed) + cut
        self.spectrum = None
        # circle index j holds the value j h for j <= N/2 and (j - N) h above: sorted order is a rotation
        sorted_pmf = np.concatenate((composed[half:], composed[:half]))
        del composed
        curve = DiscreteCurve(half - N, h, self.mu, sorted_pmf, -math.expm1(self.log_fin))
        curve.fp = fp + curve.sum_error
        return curve


#: laws composed at least this many times have their lowest frequencies checked by a direct sum (``fft_dft``): the
#: FFT's error there is amplified count-fold
LOW_DFT_COUNT = 1000
#: ... in a composition of at least this many runs (at k = 1e3 the check moved the bounds by 1e-6 for ~5% of the
#: query's time; at k = 1e4 by 1.6e-5 for ~7%: measured on DP-SGD, eps_error 2.1e-4)
LOW_DFT_TOTAL = 3000
#: compositions of at least this many runs of at most LOW_DD_LAWS laws compose their lowest frequencies in
#: double-double (``Spectrum._add_exact``: ~40 ns a term and frequency, about 10x the direct sum's check)
LOW_DD_TOTAL = 50_000
LOW_DD_LAWS = 4
#: the double-double frequencies go on while the FFT's bound there, amplified, is above this share of a unit of
#: rounding (the frequencies above them then add a small part of what the composition's rounding adds)
LOW_DD_FLOOR = 1e-4
LOW_DD_MAX = 64
#: at most this many frequencies checked (the FFT's bound amplified at the 16th is below a unit of rounding in
#: every composition measured: 99% of it sat at w = 1..7)
LOW_DFT_MAX = 32


def low_count(a, count, c, floor=1.0, most=LOW_DFT_MAX):
    """How many of the lowest frequencies w >= 1 to check: while the FFT's bound ``c`` at w, amplified as a
    composition of ``count`` amplifies it (|X_w|^(count - 1), reaching a delta with weight 1 / w: summation by
    parts), is above ``floor`` units of rounding; at most ``most``."""
    w = np.arange(1, min(most, a.size - 1) + 1)
    with np.errstate(divide="ignore", under="ignore"):
        term = c / MACHINE_EPS * np.exp((count - 1) * np.log(np.minimum(a[w], 1.0))) / w
    below = np.flatnonzero(term < floor)
    return int(below[0]) if below.size else int(w.size)


#: constant of the componentwise FFT error bound |fl(FFT x)_w - (FFT x)_w| <= C u log2(N) sum|x_j| (twiddle
#: errors included); pocketfft's mixed-radix transforms stay well inside it
FFT_ERROR_CONSTANT = 8.0


class _Amplification:
    """Floating-point error of the composed pmf, propagated through the spectrum (a model-based bound).

    Each pmf's transform has componentwise error d_w <= C u log2 N (its entries sum to 1), d_0 <= 4 u at w = 0
    (the mass, by Neumaier's compensated sum: a long composition's largest amplification is there), and at the
    lowest frequencies of a long composition the smaller bound a direct sum certifies (``Spectrum._low_errors``).
    Raising to the power k and multiplying across mechanisms amplifies a spectral error at frequency w by the
    derivative of the product: T_w = sum_i d_i,w k_i |X_i,w|^(k_i-1) prod_{j != i} |X_j,w|^(k_j), accumulated here
    by the product rule without storing the spectra; the products themselves add 2 K u |Y_w| (K the total count).
    ``error_bound`` turns these spectral bounds e_w into a bound on the error of every delta the curve reports.
    """

    def __init__(self, N):
        self.c = FFT_ERROR_CONSTANT * MACHINE_EPS * math.log2(N)  # the FFT's error bound d_w at w != 0
        self.P = np.ones(N // 2 + 1)   # prod_j |X_j|^(k_j)
        self.T = np.zeros(N // 2 + 1)  # the error bounds' derivative-like sum
        self.exact = None  # |Y_w| of the frequencies composed in double-double (``Spectrum._add_exact``), if any

    def add(self, a, powered, k, d):
        """a = |X|, powered = X^k as computed (its modulus is |X|^k up to 2 k u, covered by the 2 K u term); d the
        error bounds of X at w = 0, 1, .. len(d) - 1 (above, the FFT's, C u log2 N)."""
        c = self.c
        Fk = np.abs(powered)
        self.T *= Fk
        if k == 1:
            dFk = self.P * c
        else:  # d P k |X|^k / |X| (0 where X = 0), with one temporary
            dFk = np.zeros_like(a)
            np.divide(Fk, a, out=dFk, where=a > 0)
            dFk *= k * c
            dFk *= self.P
        dFk[:d.size] *= d / c
        self.T += dFk
        self.P *= Fk

    def error_bound(self, N, k, composed):
        """A bound on the error of sum_j g_j p_j over the composed pmf p for every g with values in [0, 1] that is
        monotone along the sorted grid: every delta(eps) of the curve (g = (1 - e^(eps - y))_+, times 1 - the mass
        at +inf).

        The spectral errors e_w reach such a sum as (1/N) sum_w e_w G_w, G the transform of g.  Two bounds on
        it, the smaller taken: the l1 norm of the time-domain error (at most ||e||_2 by Parseval), and summation
        by parts on the circle, |G_w| <= TV(g) / |1 - omega^w| = 1 / sin(pi w / N) for w != 0 (g's total variation
        around the circle is at most 2: one rise, one fall where the sorted grid wraps) and |G_0| <= N, so the sum
        is at most e_0 + (2/N) sum_{w >= 1} e_w / sin(pi w / N) over the half spectrum (its conjugate half counted
        by the 2).  The second is much the smaller where e_w is concentrated at low frequencies (a long
        composition: e_0 ~ C u log2(N) k).  The inverse transform's own rounding comes on top: an l1 error of at
        most C u log2 N ||p||_2 sqrt(N).
        """
        e = self.T + 2.0 * k * MACHINE_EPS * self.P
        if self.exact is not None:  # frequencies composed in double-double, then rounded once
            W = self.exact.size
            e[:W] = self.T[:W] + (2.0 * k * fft_dft.GAMMA_DD + 0.5 * MACHINE_EPS) * self.exact * (1.0 + MACHINE_EPS)
        l1 = math.sqrt(2.0 * float(np.einsum("i,i->", e, e)))  # the half spectrum counted twice (upper bound)
        # only where e_w > 0: a long composition's powers underflow to 0 at all but its lowest ~100-800 frequencies,
        # and the sines of the others cost ~2 ms at 2.5e5 points
        w = np.flatnonzero(e[1:]) + 1
        if w.size > e.size // 2:
            w = np.arange(1, e.size)
        by_parts = float(e[0]) + 2.0 / N * float(np.sum(e[w] / np.sin(np.pi / N * w)))
        inverse = 0.0 if composed is None else \
            self.c * math.sqrt(N) * math.sqrt(float(np.einsum("i,i->", composed, composed)))  # no BLAS, as above
        return min(l1, by_parts) + inverse + 8.0 * MACHINE_EPS


#: a pmf's spectrum raised to its count is set to exactly 0 at the frequencies where even |X| plus its rounding
#: bound, so raised, is at most this (the repeated squaring would only underflow there); ``Spectrum.curve`` adds it
#: to the floating-point allowance for each such frequency
NEGLIGIBLE_POWER = 1e-300


def significant_power(x, a, count, c):
    """(x ** count, 1) with exact zeros where (|x| + c) ** count <= NEGLIGIBLE_POWER (a = |x|, c the bound on x's
    rounding; the other entries the same floats as ``power``'s), or (``power(x, count)``, 0) where that would spare
    less than half the frequencies.  A long composition's spectrum is significant at few frequencies: at count
    1e4 only where |x| > 0.933 (~0.1% of them for DP-SGD's steps)."""
    cut = math.exp(math.log(NEGLIGIBLE_POWER) / count) - c
    keep = np.flatnonzero(a > cut) if cut > 0.0 else None
    if keep is None or keep.size > a.size // 2:
        return power(x, count), 0
    out = np.zeros_like(x)
    out[keep] = power(x[keep], count)
    return out, 1


def power(f, count):
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
