"""The engine's interface to the stages above it: the compiled primitives the laws and the generated family
modules call, gathered from the engine's modules by subject.

Everything is ``@njit(cache=True, error_model="numpy")``.  Family-specific kernels (log-densities, the privacy
loss, ...) are passed in as first-class jitted functions with the signature ``f(x, theta) -> float``; Numba
compiles one specialisation per kernel and caches it on disk, so a second process pays no compile time.

``kernels`` (kernel type, references, vectorised maps), ``scalars`` (log-space scalar helpers), ``roots``
(inversion), ``tails`` (tail masses of a law), ``quadrature`` (adaptive Gauss-Kronrod), ``peaks`` (peak scans),
``tilted`` (tilted moments and cumulants).
"""
from .kernels import KERNEL_SIG, KERNEL_SIGNATURE, KT, KernelRef, cmap, kernel_refs, vmap
from .peaks import peak_from_grid, peak_scan, peak_scan_extent, scan_grid, scan_grid_at, tilt_diverges
from .quadrature import gk_integrate
from .roots import checked_inverse, checked_inverse_many, invert_monotone
from .scalars import lae, log1mexp, log_erfc, log_ndtr, safe_log, sgn, softplus
from .tails import atom_tails, finish_tails, piece_tails
from .tilted import cumulants_from_central, tilt_cumulants, tilt_piece, tilt_stats_piece, trap_moments

__all__ = ["KERNEL_SIG", "KERNEL_SIGNATURE", "KT", "KernelRef", "cmap", "kernel_refs", "vmap", "peak_from_grid",
           "peak_scan", "peak_scan_extent", "scan_grid", "scan_grid_at", "tilt_diverges", "gk_integrate",
           "checked_inverse", "checked_inverse_many", "invert_monotone", "lae", "log1mexp", "log_erfc", "log_ndtr",
           "safe_log", "sgn", "softplus", "atom_tails", "finish_tails", "piece_tails", "cumulants_from_central",
           "tilt_cumulants", "tilt_piece", "tilt_stats_piece", "trap_moments"]
