"""The Fourier accountant's own scheme (``variant="fa"``; Koskela, Jalko, Honkela 2020; notes.md 2.2 and 2.4): the
PLRV density on an even grid, composed on a circle; its bounds are the paper's error *estimates*, not certified.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.fft as sfft

from ..errors import NumericalLimitError, ParameterError, check_finite_real
from ..estimate import Estimate, EstimateArray
from ..relations import DIRECTIONS
from .fft_grid import BYTES_PER_POINT, DiscreteCurve, plan, power


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
        f = power(sfft.rfft(w), count)
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
