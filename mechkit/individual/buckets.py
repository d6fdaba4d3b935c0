"""The individual PLD accountant's planning and evaluation (Koskela, Tobaben, Honkela, App. D): each example's
steps bucketed by effective sigma on a geometric grid, the buckets discretised once on the FFT composer's grid
(one ``_Side`` per direction), and each distinct count row's delta evaluated from its band-limited spectrum by
the Plancherel inner product (``evaluate``).
"""
from __future__ import annotations

import collections
import math
import threading
import weakref
from concurrent.futures import Executor

import numpy as np
import scipy.fft as sfft
from numpy.typing import ArrayLike
from scipy.special import ndtri

from ..accountants import fft as _fft
from ..errors import NumericalLimitError, check_finite_real
from ..progress import run_in_order
from ..relations import DIRECTIONS
from . import compiled as _compiled
from .state import check_array

U = float(np.finfo(float).eps)


#: share of delta_error granted to each of: the wrapped tails (per side), the dropped band, the discretisation tails
TAIL_SHARE = 1e-3


#: Chernoff tilts (both signs): a factor 2 apart, so the window is at most ~25% wider than with the best tilt
TILTS = np.geomspace(2.0 ** -4, 2.0 ** 20, 25)


#: smallest circle a row is zoomed to, and the band sizes tried on a circle (then the full band)
MIN_CIRCLE = 64


BANDS = np.unique(np.concatenate([2 ** np.arange(3, 40), 3 * 2 ** np.arange(2, 39)]))


#: the coarse table has >= TABLE_OVERSAMPLING * J points (a power of 2 dividing the circle)
TABLE_OVERSAMPLING = 8


#: rows are evaluated in blocks of ROW_BLOCK, each in chunks whose complex arrays take about CHUNK_BYTES
ROW_BLOCK = 8192


CHUNK_BYTES = 8 << 20


#: frequencies of every zoomed circle kept from the full transform of each bucket (beyond: transformed on demand)
PRESTORED = 1024


UINT16_MAX = np.iinfo(np.uint16).max


def effective_sigma(norms: float | ArrayLike, noise_multiplier: float, clip: float) -> float | np.ndarray:
    """Per-example effective noise multiplier of one DP-SGD step, ``z C / min(norm, C)`` (inf for a norm of 0).

    With sensitivity 1 this is the sigma of the step's dominating pair ``subsample(gaussian(sigma), q)``.

    Parameters
    ----------
    norms : the per-example gradient norms before clipping (finite, >= 0), or one norm.
    noise_multiplier : z > 0.
    clip : the clipping bound C > 0.

    Returns
    -------
    A float for a scalar ``norms``, else an array of its shape.

    Raises
    ------
    ParameterError : a value out of range or not finite.
    """
    z = check_finite_real("noise_multiplier", noise_multiplier, low=0.0)
    c = check_finite_real("clip", clip, low=0.0)
    g = np.minimum(check_array("norms", norms, allow_scalar=True, high=None), c)
    with np.errstate(divide="ignore"):
        out = np.where(g > 0, z * c / np.where(g > 0, g, 1.0), np.inf)
    return float(out) if np.ndim(norms) == 0 else out


def n_buckets(ratio, factor):
    return 1 + max(0, int(math.ceil(math.log(factor) / math.log(ratio) - 1e-9)))


class _Side:
    """The buckets of one direction discretised on the plan's grid, and what a row evaluation needs of them."""

    def __init__(self, mechs, direction, grid, tau_disc):
        self.N, self.h, self.n = grid.N, grid.h, grid.n
        self.half = self.N // 2 + 1
        B = len(mechs)
        self.B = B
        self.offsets = np.empty(B, dtype=np.int64)   # absolute cell of each pmf slice's first entry
        self.pmfs = []
        self.mu = np.empty(B)
        self.drop = np.empty(B)
        khat = np.empty((B, 2 * TILTS.size))
        tilts = np.concatenate((TILTS, -TILTS))
        self.tilts = tilts
        self.zooms = [1 << k for k in range(int(math.log2(self.N // MIN_CIRCLE)) + 1)] if self.N >= MIN_CIRCLE else [1]
        self._env_index = {}                        # (s, band) -> column of self.env
        cols = []
        for s in self.zooms:
            for J in self._bands(self.N // s)[:-1]:  # the full band drops nothing
                self._env_index[(s, int(J))] = len(cols)
                cols.append(s * int(J))
        cols = np.asarray(cols, dtype=np.int64)
        self.env = np.zeros((B, cols.size))
        self._pre = {}
        e_fft = _fft.FFT_ERROR_CONSTANT * U * math.log2(self.N)
        for b, m in enumerate(mechs):
            pmf, mu, inf_mass, drop = _fft.discretise(m.plrv(direction), grid, tau_disc)
            if inf_mass > 0:
                raise NumericalLimitError("a bucket's privacy loss has a point mass at +inf (not a subsampled "
                                          "Gaussian)")
            nz = np.flatnonzero(pmf)
            lo, hi = int(nz[0]), int(nz[-1])
            vals = pmf[lo:hi + 1].copy()                 # a copy: a view would keep the whole grid alive
            self.offsets[b] = lo - self.n
            self.pmfs.append(vals)
            self.mu[b] = mu
            self.drop[b] = drop
            # exact cumulant generating function of the discrete variable (values a h + mu), log space
            x = (np.arange(lo, hi + 1) - self.n) * self.h + mu
            with np.errstate(divide="ignore"):
                lp = np.log(vals)
            for k in range(0, tilts.size, 10):
                t = tilts[k:k + 10, None]
                e = lp[None, :] + t * x[None, :]
                mx = e.max(axis=1, keepdims=True)
                khat[b, k:k + 10] = (mx + np.log(np.exp(e - mx).sum(axis=1, keepdims=True)))[:, 0]
            # suffix maxima of |X_b| (+ the FFT error: a bound on the exact spectrum) at the band edges, and the
            # first PRESTORED frequencies of every zoomed circle (X on the circle N/s at j is X(s j), aliasing)
            X = sfft.rfft(self._on_circle(b, self.N))
            suf = np.maximum.accumulate(np.abs(X)[::-1])[::-1]
            self.env[b] = np.log(np.minimum(suf[cols] + e_fft, 1.0))
            for z in self.zooms:
                self._pre.setdefault(z, np.empty((B, min(PRESTORED, self.N // z // 2 + 1)), dtype=complex))
                self._pre[z][b] = X[::z][:self._pre[z].shape[1]]
        # a tiny safety margin on the Chernoff exponents (rounding of the log-sum-exp)
        self.khat = khat + 1e-12 * (1.0 + np.abs(khat))
        self._zoom = {}
        self._circle = {}

    @staticmethod
    def _bands(Np):
        full = Np // 2 + 1
        b = BANDS[BANDS < full]
        return np.append(b, full)

    def _on_circle(self, b, Np):
        vals = self.pmfs[b]
        idx = (self.offsets[b] + np.arange(vals.size)) % Np
        return np.bincount(idx, weights=vals, minlength=Np)

    def zoom(self, s, J):
        """(log|X|, arg X, 1/|X|) of every bucket at the first J frequencies of the circle N/s, shape (B, J)."""
        have = self._zoom.get(s)
        if have is None or have[0].shape[1] < J:
            Np = self.N // s
            pre = self._pre[s]
            if J <= pre.shape[1]:
                X = pre
            else:  # beyond the stored frequencies: transform the wrapped pmfs (the stored ones kept, so that a
                # frequency's value does not depend on which bands were asked for before: the same doubles always)
                Jc = min(Np // 2 + 1, max(J, 2 * (have[0].shape[1] if have is not None else 0)))
                X = np.empty((self.B, Jc), dtype=complex)
                for b in range(self.B):
                    X[b] = sfft.rfft(self._on_circle(b, Np))[:Jc]
                X[:, :pre.shape[1]] = pre
            a = np.abs(X)
            with np.errstate(divide="ignore"):
                have = (np.log(np.maximum(a, 1e-300)), np.angle(X), np.minimum(1.0 / a, 1e250))
            self._zoom[s] = have
        return tuple(x[:, :J] for x in have)

    def circle(self, s):
        """Per circle N' = N/s: the hockey-stick kernels and the weights of the error bounds."""
        c = self._circle.get(s)
        if c is None:
            Np = self.N // s
            j = np.arange(Np // 2 + 1)
            zeta = np.exp(2j * np.pi * j / Np)
            inv1 = np.zeros(j.size, dtype=complex)
            inv1[1:] = 1.0 / (1.0 - zeta[1:])
            eh = math.exp(-self.h)
            inv2 = eh / (1.0 - eh * zeta)
            # |coefficient of Y_j| in delta = A - e^t B (t <= h): the weights of the error bounds
            kappa = 2.0 * np.abs(inv1) + 2.0 * math.exp(self.h) * np.abs(inv2)
            kappa[0] = Np + 2.0 * math.exp(self.h) * abs(inv2[0])
            w = np.full(j.size, 2.0)
            w[0] = 1.0
            if Np % 2 == 0:
                w[-1] = 1.0
            suffix = np.cumsum((w * kappa)[::-1])[::-1]   # sum_{j' >= J} w kappa
            c = (inv1, inv2, kappa, w, suffix)
            self._circle[s] = c
        return c

    # ------------------------------------------------------------------------------------------ row evaluation

    def layout(self, rows, tau):
        """Per row: shift, dropped mass, zoom s, window start c, band J, truncation and wrap allowances."""
        R = rows.shape[0]
        sigma = rows @ self.mu
        dropped = rows @ self.drop
        kt = rows @ self.khat                                  # (R, n_tilts)
        nt = TILTS.size
        logtau = math.log(tau)
        x_hi = np.min((kt[:, :nt] - logtau) / self.tilts[None, :nt], axis=1)
        x_lo = np.max((kt[:, nt:] - logtau) / self.tilts[None, nt:], axis=1)
        lo_cell = np.ceil((x_lo - sigma) / self.h)
        hi_cell = np.floor((x_hi - sigma) / self.h)
        first, last = self.half - self.N, self.half - 1       # the value range of the full circle
        lo_cell = np.clip(lo_cell, first, last).astype(np.int64)
        hi_cell = np.clip(hi_cell, first, last).astype(np.int64)
        width = np.maximum(hi_cell - lo_cell + 1, 1)
        s = np.ones(R, dtype=np.int64)
        for z in self.zooms[1:]:
            s = np.where(self.N // z >= width, z, s)
        Np = self.N // s
        c = np.where(s == 1, first, np.minimum(lo_cell, self.half - Np))
        # the wrapped pmf differs from the linear composition by <= 2 tau, which differs from the full circle's
        # (cyclic, the object of Theorem 5.5) by its mass outside the circle's value range, <= 2 tau again
        wrap = np.where(s == 1, 0.0, 4.0 * tau * (1.0 + 1e-9))
        # band: the smallest J whose dropped frequencies contribute <= tau to any delta
        J = np.empty(R, dtype=np.int64)
        trunc = np.zeros(R)
        for z in np.unique(s):
            sel = np.flatnonzero(s == z)
            Npz = self.N // z
            bands = self._bands(Npz)
            cols = [self._env_index[(int(z), int(b))] for b in bands[:-1]]
            suffix = self.circle(int(z))[4]
            if cols:
                with np.errstate(over="ignore"):
                    bound = (1.0 / Npz) * np.exp(rows[sel] @ self.env[:, cols]) * suffix[bands[:-1]][None, :]
                ok = bound <= tau
                k = np.where(ok.any(axis=1), np.argmax(ok, axis=1), len(cols))
                J[sel] = bands[k]
                trunc[sel] = np.where(k < len(cols), bound[np.arange(sel.size), np.minimum(k, len(cols) - 1)], 0.0)
            else:
                J[sel] = bands[-1]
        return {"sigma": sigma, "dropped": dropped, "s": s, "c": c, "J": J, "trunc": trunc, "wrap": wrap,
                "K": rows.sum(axis=1)}

    def spectra(self, rows, s, J, c):
        """Window-shifted band-limited spectra Y~ (R, J) of the rows and their floating-point error bound."""
        Np = self.N // s
        la, ar, ia = self.zoom(s, J)
        M = rows @ np.concatenate((la, ar, ia, np.abs(ar)), axis=1)
        lr, ph, inv, absarg = M[:, :J], M[:, J:2 * J], M[:, 2 * J:3 * J], M[:, 3 * J:]
        j = np.arange(J)
        ph = ph + 2.0 * np.pi * (np.outer(c % Np, j) % Np) / Np      # window shift: y~_r = y_{c + r}
        mag = np.exp(lr)
        Y = mag * np.cos(ph) + 1j * (mag * np.sin(ph))
        K = rows.sum(axis=1)
        e_x = (_fft.FFT_ERROR_CONSTANT * math.log2(self.N) + s) * U     # error of each (wrapped) spectrum
        # first order: the spectra's errors amplified by the product (as fft_grid._Amplification), then the log, the
        # matrix product (gamma_B sum k |log X|), the window phase and the exponential
        rel = e_x * inv + (self.B + 2) * U * (np.maximum(-lr, 0.0) + absarg) + 2 * U * K[:, None] \
            + 4 * U * (1.0 + 2.0 * np.pi * j[None, :]) + 4 * U
        return Y, mag * rel

    def tables(self, rows, lay, sel, s, J):
        """Coarse tables of the suffix sums A, B for the rows ``sel`` (all of zoom s and band J)."""
        Np = self.N // s
        Nc = min(Np, 1 << int(math.ceil(math.log2(max(TABLE_OVERSAMPLING * J, 64)))))
        if J == Np // 2 + 1:
            Nc = Np
        inv1, inv2, kappa, w, _ = self.circle(s)
        c = lay["c"][sel]
        Y, dY = self.spectra(rows[sel], s, J, c)
        G = Y * inv1[None, :J]
        H = Y * inv2[None, :J]
        fp = (1.0 / Np) * (dY * (w[:J] * kappa[:J])[None, :]).sum(axis=1)
        jj = np.arange(J)
        fp += (2.0 / Np) * ((np.abs(G) + np.abs(H)) * (U * (_fft.FFT_ERROR_CONSTANT * math.log2(Nc) + 6.0 * jj + 8.0))
                            ).sum(axis=1) + 16 * U
        half_c = Nc // 2 + 1
        pad = np.zeros((len(sel), half_c), dtype=complex)
        pad[:, :J] = G
        g = sfft.irfft(pad, Nc, axis=1)
        pad[:, :J] = H
        bb = sfft.irfft(pad, Nc, axis=1)
        step = Np // Nc
        r = np.arange(Nc + 1) * step
        Y0 = np.ascontiguousarray(Y[:, 0].real)
        A, Bt, Dmin, g0, b0 = _compiled.suffix_tables(g, bb, Nc / Np, Y0, Np, r, np.exp(-(Np - r) * self.h))
        slack = fp + lay["trunc"][sel] + lay["wrap"][sel] + lay["dropped"][sel]
        return {"Np": Np, "Nc": Nc, "step": step, "A": A, "B": Bt, "Dmin": Dmin, "G": G, "H": H, "Y0": Y0,
                "g0": g0, "b0": b0, "w": w[:J], "c": c, "sigma": lay["sigma"][sel], "slack": slack}

    def direct(self, T, rows_idx, r):
        """A(r), B(r) at single cells r (one per row of the table subset ``rows_idx``), by the Plancherel sums."""
        Np = T["Np"]
        G, H = T["G"][rows_idx], T["H"][rows_idx]
        J = G.shape[1]
        z1 = np.exp(2j * np.pi * (r % Np) / Np)
        pw = np.empty((r.size, J), dtype=complex)
        pw[:, 0] = 1.0
        if J > 1:
            pw[:, 1:] = z1[:, None]
            np.cumprod(pw, axis=1, out=pw)
        w = T["w"]
        g = ((G * pw).real * w[None, :]).sum(axis=1) / Np
        b = ((H * pw).real * w[None, :]).sum(axis=1) / Np
        A = (Np - r) * T["Y0"][rows_idx] / Np + g - T["g0"][rows_idx]
        B = b - np.exp(-(Np - r) * self.h) * T["b0"][rows_idx]
        A = np.where(r >= Np, 0.0, A)
        B = np.where(r >= Np, 0.0, B)
        return A, B

    def cell_value(self, T, r):
        """The value of window cell r - 1 (the curve's support point just below the cells r, r+1, ...)."""
        return (T["c"] + r - 1) * self.h + T["sigma"]

    def delta_at(self, T, eps):
        """delta~(eps) of every row of the table (eps: one value per row)."""
        Np = T["Np"]
        u = (eps - T["sigma"]) / self.h - T["c"]        # window-relative position
        m = np.floor(u)
        below = m < 0
        r0 = np.clip(m + 1, 0, Np).astype(np.int64)
        A, B = self.direct(T, np.arange(eps.size), r0)
        t = np.where(below, eps - self.cell_value(T, 0), (u - m) * self.h)
        with np.errstate(over="ignore", invalid="ignore"):
            out = A - np.exp(t) * B
        return np.where(m >= Np, 0.0, np.clip(out, 0.0, 1.0))

    def epsilon_at(self, T, target):
        """Smallest eps >= 0 with delta~(eps) <= target (one target per row; targets in (0, 1)).

        Bracketed on the table, then the cell is found by interpolation in log delta (safeguarded by a bisection
        every third step), one direct evaluation per step: A(m), B(m) give D(m) = A - B and D(m + 1) = A - e^h B;
        compiled, one row at a time (``compiled.epsilon_search``).
        """
        return _compiled.epsilon_search(np.ascontiguousarray(target, dtype=np.float64), T["Dmin"], T["A"], T["B"],
                                        T["step"], T["G"], T["H"], np.ascontiguousarray(T["w"]), T["Y0"], T["g0"],
                                        T["b0"], T["Np"], self.h, T["c"], T["sigma"])

    def fit_mu(self, T, eps_error, delta_error, floor):
        """Smallest mu whose mu-GDP curve dominates the upper curve on [0, eps(floor)] (module docstring).

        Each point (eps, d) of the upper curve gives the line f(a) >= 1 - d - e^eps a of the trade-off function, the
        points' lines and their mirror images bound it below by a symmetric convex piecewise-linear f_low, and the
        convex mu-GDP curve G lies below f_low on [a_last, a*] iff it does at the breakpoints (consecutive lines'
        intersections) and at a*, where f_low meets the diagonal (beyond it, symmetry).  a_last, the intersection of
        the two last lines, is where the check of eps <= eps_last ends.
        """
        R = T["A"].shape[0]
        rows = np.arange(R)
        slack = T["slack"] + delta_error
        D = np.maximum(T["A"] - T["B"], 0.0)
        up = np.maximum.accumulate((D + slack[:, None])[:, ::-1], axis=1)[:, ::-1]   # non-increasing
        r = np.arange(T["A"].shape[1]) * T["step"]
        eps = (T["c"][:, None] + r[None, :] - 1) * self.h + T["sigma"][:, None] + eps_error
        d0 = np.minimum(self.delta_at(T, np.full(R, -eps_error)) + slack, 1.0)   # delta_up(0), evaluated exactly
        # the used points (eps > 0, delta_up >= floor) are a contiguous range [q1, q2] of each row (eps increases,
        # delta_up does not)
        use = (eps > 0) & (up >= floor)
        has = use.any(axis=1)
        q1 = np.argmax(use, axis=1)
        q2 = use.shape[1] - 1 - np.argmax(use[:, ::-1], axis=1)
        lo, hi = (int(q1[has].min()), int(q2[has].max())) if has.any() else (0, 0)
        e = eps[:, lo:hi + 1]
        d = np.minimum(up[:, lo:hi + 1], d0[:, None])
        u = use[:, lo:hi + 1]
        # a*: the largest diagonal point (a = f) of the lines
        with np.errstate(over="ignore"):
            diag = np.where(u, (1.0 - d) / (1.0 + np.exp(e)), 0.0).max(axis=1, initial=0.0)
        a_star = np.maximum(0.5 * (1.0 - d0), diag)
        mu = -2.0 * ndtri(np.maximum(a_star, 1e-300))
        first_e, first_d = eps[rows, q1], np.minimum(up[rows, q1], d0)
        a, m = _vertex_mu(np.zeros(R), d0, first_e, first_d)
        mu = np.maximum(mu, np.where(has & (a < a_star), m, 0.0))
        if hi > lo:
            a, m = _vertex_mu(e[:, :-1], d[:, :-1], e[:, 1:], d[:, 1:])
            pair = u[:, :-1] & u[:, 1:] & (a < a_star[:, None])
            mu = np.maximum(mu, np.where(pair, m, 0.0).max(axis=1))
        return np.maximum(mu, 0.0)


def _vertex_mu(e1, d1, e2, d2):
    """(a, mu): the intersection a of the lines f = 1 - d_i - e^(e_i) a (e1 < e2, d1 >= d2), and the smallest mu for
    which mu-GDP's trade-off curve Phi(Phi^-1(1 - a) - mu) passes below it (the lower of the two lines at a)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        x1, x2 = np.exp(e1), np.exp(e2)
        a = (d1 - d2) / (x2 - x1)
        a = np.where(np.isfinite(a), np.clip(a, 1e-300, 0.5), 1e-300)
        one_minus_f = np.minimum(np.maximum(d1 + x1 * a, d2 + x2 * a), 1.0)
        return a, -ndtri(a) + ndtri(one_minus_f)


class Plan:
    """The grid for up to ``K`` steps and both directions' bucket discretisations on it.

    ``spec`` holds its arguments: a task on a worker process gets the spec and rebuilds the plan once
    (``plan_for``) instead of receiving tens of megabytes; the rebuilt plan is the same doubles.
    """

    def __init__(self, sigmas, q, K, eps_error, delta_error, memory_limit):
        from ..laws.shipped import convenience
        from ..transforms import subsample

        gaussian = convenience("gaussian")

        self.spec = self.spec_of(sigmas, q, K, eps_error, delta_error, memory_limit)
        mechs = [subsample(gaussian(s), q) for s in self.spec[0]]
        grid = _fft.plan([(mechs[0], K)], eps_error, delta_error, memory_limit)
        grid.N = 1 << int(math.ceil(math.log2(2 * grid.n + 1)))   # a power of 2: every zoom divides it
        self.grid = grid
        self.K = K
        self.tau = TAIL_SHARE * delta_error
        self.sides = {d: _Side(mechs, d, grid, TAIL_SHARE * delta_error / K) for d in DIRECTIONS}

        with _LOCK:
            _PLANS[self.spec] = self

    @staticmethod
    def spec_of(sigmas, q, K, eps_error, delta_error, memory_limit):
        """The ``spec`` of the plan with these arguments (the key of ``plan_for``)."""
        return (tuple(float(s) for s in sigmas), float(q), int(K), float(eps_error), float(delta_error),
                float(memory_limit))

    def details(self):
        g = self.grid
        return {"grid_points": g.N, "mesh": g.h, "domain": g.L, "planned_steps": self.K}


#: every plan alive in this process, by spec; the last two that ``plan_for`` built are kept alive (a worker's next
#: task finds its plan)
_PLANS = weakref.WeakValueDictionary()
_KEPT = collections.deque(maxlen=2)
_LOCK = threading.RLock()


def plan_for(spec: tuple) -> Plan:
    """The plan of ``spec`` (``Plan.spec``): the one alive in this process, or a new one (kept for the next calls).

    Parameters
    ----------
    spec : the plan's arguments, as ``Plan.spec`` holds them.
    """
    with _LOCK:
        plan = _PLANS.get(spec)
        if plan is None:
            plan = Plan(*spec)
            _KEPT.append(plan)
        return plan


def _chunks(idx, per_row_bytes):
    n = max(1, CHUNK_BYTES // max(per_row_bytes, 1))
    for k in range(0, idx.size, n):
        yield idx[k:k + n]


def evaluate(plan, rows, eps_error, delta_error, eps_targets=(), delta_points=(), fit=None, block=None):
    """Evaluate distinct count rows (R, B) in both directions, in blocks of ``block`` rows (default ROW_BLOCK).

    ``eps_targets``: (name, delta, sign): epsilon~ at delta + sign (delta_error + slack) (sign 0, -1 or +1);
    ``delta_points``: (name, eps): delta~ at eps; ``fit``: the floor of the mu fit (result "mu").  Returns per
    direction a dict of arrays over the rows, with each row's allowance "slack".
    """
    R = rows.shape[0]
    block = ROW_BLOCK if block is None else block
    names = ["slack"] + [t[0] for t in eps_targets] + [t[0] for t in delta_points] + (["mu"] if fit is not None else [])
    out = {d: {name: np.zeros(R) for name in names} for d in DIRECTIONS}
    for start in range(0, R, block):
        rf = rows[start:start + block].astype(np.float64)
        for d in DIRECTIONS:
            side, res = plan.sides[d], out[d]
            lay = side.layout(rf, plan.tau)
            keys = lay["s"] * (1 << 32) + lay["J"]
            for key in np.unique(keys):
                group = np.flatnonzero(keys == key)
                s, J = int(key >> 32), int(key & ((1 << 32) - 1))
                Nc = min(plan.grid.N // s, max(TABLE_OVERSAMPLING * J, 64))
                for sel in _chunks(group, 16 * (8 * J + 3 * Nc)):
                    T = side.tables(rf, lay, sel, s, J)
                    g = start + sel
                    res["slack"][g] = T["slack"]
                    for name, delta, sign in eps_targets:
                        target = np.clip(delta + sign * (delta_error + T["slack"]), 0.0, 1.0)
                        res[name][g] = side.epsilon_at(T, target)
                    for name, eps in delta_points:
                        res[name][g] = side.delta_at(T, np.full(sel.size, eps))
                    if fit is not None:
                        res["mu"][g] = side.fit_mu(T, eps_error, delta_error, fit)
    return out


def evaluate_blocks(plan: Plan, rows: np.ndarray, eps_error: float, delta_error: float,
                    executor: Executor | None = None, **targets: object) -> dict:
    """``evaluate``, serially or with each block of ROW_BLOCK rows a task on ``executor``.

    The tasks are the blocks ``evaluate`` works through itself, so every row meets the same arithmetic either way
    (bit-identical answers); the plan travels as its spec (``evaluate_spec``), the rows as uint16/uint32 counts.
    With fewer rows than two blocks the executor is not used (a worker would only rebuild the plan).
    """
    block = ROW_BLOCK
    if executor is None or rows.shape[0] <= block:
        return evaluate(plan, rows, eps_error, delta_error, block=block, **targets)
    calls = [((plan.spec, rows[start:start + block], eps_error, delta_error), dict(targets, block=block))
             for start in range(0, rows.shape[0], block)]
    parts = run_in_order(executor, evaluate_spec, calls)
    return {d: {name: np.concatenate([part[d][name] for part in parts]) for name in parts[0][d]} for d in DIRECTIONS}


def evaluate_spec(spec: tuple, rows: np.ndarray, eps_error: float, delta_error: float, **targets: object) -> dict:
    """``evaluate`` with the plan of ``spec`` (``plan_for``: built once per process): a task of ``evaluate_blocks``."""
    return evaluate(plan_for(spec), rows, eps_error, delta_error, **targets)


#: rows hashed per NumPy pass in ``distinct_rows`` (a temporary of CHUNK x columns 64-bit words)
CHUNK = 1 << 16


def row_hash_multipliers(m: int) -> np.ndarray:
    """The m odd 64-bit multipliers of ``distinct_rows``' hash (fixed: the same rows hash alike in every process)."""
    return np.random.default_rng(0x6D6B).integers(0, 2**62, m, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


def distinct_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, inverse) with ``rows[inverse] == a``: the distinct rows of a 2-D integer array, as ``np.unique(a,
    axis=0, return_inverse=True)`` gives them but ordered by a hash, in a seventh of its time (1e6 rows of 96
    counts: 0.8 s against 5.6 s for NumPy's byte-wise sort).  Each row is hashed to 64 bits (a sum of its entries
    times fixed odd multipliers, wrapping), the hashes are made unique, and every row is then compared with its
    hash's first row: where two different rows share a hash, NumPy's ``unique`` answers instead, so the answer is
    exact."""
    n, m = a.shape
    if n == 0 or m == 0:
        rows, inv = np.unique(a, axis=0, return_inverse=True)
        return rows, inv.reshape(-1)
    mult = row_hash_multipliers(m)
    h = np.empty(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for s in range(0, n, CHUNK):
            h[s:s + CHUNK] = (a[s:s + CHUNK].astype(np.uint64) * mult).sum(axis=1, dtype=np.uint64)
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    rows = a[first]
    for s in range(0, n, CHUNK):
        if not np.array_equal(rows[inv[s:s + CHUNK]], a[s:s + CHUNK]):  # a collision: exact rows instead
            rows, inv = np.unique(a, axis=0, return_inverse=True)
            return rows, inv.reshape(-1)
    return rows, inv
