"""The FFT composer's queries: delta(epsilon) and epsilon(delta) of a composition, max over add and remove.

Variants: ``"ctd"`` (default), certified bounds by convex order, the connect-the-dots upper and a contracted lower
discretisation (``fft_ctd``); ``"prv"``, certified bounds by Theorem 5.5 of Gopi et al. on a mean-preserving
discretisation (``fft_grid``); ``"fa"``, the Fourier accountant's scheme and error estimates (``fft_fa``).
``Composed`` (the reusable curves of ``Composition.curve``) is the PRV variant's.
"""
from __future__ import annotations

import numpy as np

from ..errors import NumericalLimitError, ParameterError, check_finite_real
from ..estimate import Estimate, EstimateArray
from ..laws.plrv import composed_inf_mass
from ..progress import working
from ..relations import DIRECTIONS
from ..engine import warm
from . import fft_ctd, fft_dft, fft_fa
from .fft_grid import (BYTES_PER_POINT, COARSE_STRIDE, DEFAULT_EPS_ERROR, DEFAULT_MEMORY_LIMIT,  # noqa: F401
                       FFT_ERROR_CONSTANT, LOW_DFT_COUNT, LOW_DFT_TOTAL, MACHINE_EPS, PROGRESS_POINTS, TAIL_SHARE,
                       DiscreteCurve, Grid, Spectrum, check_budgets, compose_direction, curve_restore, curve_state,
                       discretise, domain, grid_for, grid_restore, grid_state, plan)


def compile_meanwhile(items):
    """On a cold engine, what this composition's FFT will compile is compiled while the engine's second process is
    awaited (``engine.warm.meanwhile``): the low frequencies' direct sums of a long composition (fft_grid)."""
    if sum(c for _, c in items) >= LOW_DFT_TOTAL and any(c >= LOW_DFT_COUNT for _, c in items):
        warm.meanwhile(fft_dft.compile_low_dft)


def _curves(items, eps_error, delta_error, memory_limit):
    compile_meanwhile(items)
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
                "grid": {**grid_state(self.grid), "fp": hx(float(self.grid.fp))}, "curves": {}}
        arrays = {}
        for d, c in self.curves.items():
            meta["curves"][d] = curve_state(c, d, self._FLOATS, arrays)
        return meta, arrays

    @classmethod
    def restore(cls, meta, arrays):
        """The ``Composed`` that ``state`` described (KeyError, TypeError or ValueError if it is inconsistent)."""
        fh = float.fromhex
        obj = cls.__new__(cls)
        obj.eps_error, obj.delta_error, obj.fp = fh(meta["eps_error"]), fh(meta["delta_error"]), fh(meta["fp"])
        obj.grid = grid_restore(meta["grid"])
        obj.grid.fp = fh(meta["grid"]["fp"])
        obj.curves = {d: curve_restore(meta["curves"][d], d, cls._FLOATS, arrays) for d in DIRECTIONS}
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
          variant="ctd", L=None, n=None):
    """delta(epsilon) of the composition, max over add and remove (EstimateArray).

    ``variant="ctd"`` (default): certified bounds by convex order (``fft_ctd``: the connect-the-dots upper and a
    contracted lower discretisation), on the mesh that puts each bound within about ``eps_error`` of the estimate;
    ``delta_error`` bounds the tails the grid leaves out (only what they hold is charged).  ``variant="prv"``:
    certified bounds by Theorem 5.5 of Gopi et al., exactly ``eps_error``/``delta_error`` wide (a finer grid).
    ``variant="fa"``: the Fourier accountant (Koskela et al.) with domain [-L, L) and ``n`` points; its bounds are
    the paper's error *estimates*, not certified.
    """
    eps_error, delta_error, memory_limit = check_budgets(eps_error, delta_error, memory_limit)
    eps = np.atleast_1d(np.asarray(epsilon, float))
    return _answer("delta", items, eps, eps_error, delta_error, memory_limit, variant, L, n)


def epsilon(items, delta_, eps_error=DEFAULT_EPS_ERROR, delta_error=None, memory_limit=DEFAULT_MEMORY_LIMIT,
            variant="ctd", L=None, n=None):
    """Smallest epsilon with delta(epsilon) <= delta_, max over add and remove (Estimate); see ``delta``."""
    d = check_finite_real("delta", delta_, low=0.0, high=1.0)
    if delta_error is None:  # a thousandth of what the finite part may add to the masses at +inf
        rest = d - max(composed_inf_mass(items, r) for r in DIRECTIONS)
        delta_error = (rest if rest > 0.0 else d) / 1000.0
    eps_error, delta_error, memory_limit = check_budgets(eps_error, delta_error, memory_limit)
    if not delta_error < d:
        raise ParameterError(f"delta_error must be below delta = {d:g}, got {delta_error:g}")
    return _answer("epsilon", items, d, eps_error, delta_error, memory_limit, variant, L, n)


_VARIANTS = {"delta": (fft_fa.fa_delta, fft_ctd.delta), "epsilon": (fft_fa.fa_epsilon, fft_ctd.epsilon)}


def _answer(query, items, arg, eps_error, delta_error, memory_limit, variant, L, n):
    """The query ("delta" or "epsilon") by the variant; connect the dots falls back on the PRV variant."""
    fa, ctd = _VARIANTS[query]
    v = _variant(variant, L, n)
    if v == "fa":
        return fa(items, arg, eps_error, delta_error, memory_limit, L, n)

    def prv():
        return getattr(Composed(items, eps_error, delta_error, memory_limit), query)(arg)
    return ctd(items, arg, eps_error, delta_error, memory_limit, prv) if v == "ctd" else prv()


def _variant(variant, L, n):
    if variant not in ("prv", "ctd", "fa"):
        raise ParameterError(f"variant must be 'ctd' (certified, connect the dots; default), 'prv' (certified, "
                             f"Theorem 5.5) or 'fa' (Fourier accountant), got {variant!r}")
    if variant != "fa" and (L is not None or n is not None):
        raise ParameterError("L and n are options of variant='fa'; the certified variants size its grid from "
                             "eps_error and delta_error")
    return variant
