"""The engine's interface to the stages above it: the compiled primitives the laws and the generated family
modules call, gathered from the engine's modules by subject.

Everything is ``@njit(cache=True, error_model="numpy")`` except ``gk_integrate``, a Python wrapper of compiled
code.  Family-specific kernels (log-densities, the privacy loss, ...) are passed in as first-class jitted functions
with the signature ``f(x, theta) -> float``; Numba compiles one specialisation per kernel and caches it on disk, so
a second process pays no compile time.

``kernels`` (kernel type, references, vectorised maps), ``scalars`` (log-space scalar helpers), ``roots``
(inversion), ``tails`` (tail masses of a law), ``quadrature`` (adaptive Gauss-Kronrod), ``peaks`` (peak scans),
``tilted`` (tilted moments and cumulants).
"""
import importlib

from ..progress import announce
from . import warm
from .collection import paused

#: name -> the engine module defining it.  A module is imported (and its functions compiled, or loaded from
#: Numba's cache) on the first use of one of its names, so a query compiles only the subjects it needs.
_WHERE = {
    "kernels": ("KERNEL_SIG", "KERNEL_SIGNATURE", "KT", "KernelRef", "call", "kernel_refs", "vmap"),
    "peaks": ("peak_from_grid", "peak_scan_at", "peak_scan_extent", "scan_grid", "scan_grid_at", "tilt_diverges",
              "tilt_diverges_at"),
    "quadrature": ("gk_integrate",),
    "roots": ("checked_inverse", "checked_inverse_many", "invert_monotone"),
    "scalars": ("cumulants_from_central", "lae", "log1mexp", "log_erfc", "log_ndtr", "safe_log", "sgn", "softplus"),
    "tails": ("atom_tails", "finish_tails", "piece_tails"),
    "tilted": ("tilt_cumulants", "tilt_piece", "tilt_stats_piece", "trap_moments"),
}
_MODULE_OF = {name: mod for mod, names in _WHERE.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name):
    mod = _MODULE_OF.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if warm.pending(mod):  # a second process compiles the subject: work meanwhile
        for other in warm.MEANWHILE:
            with announce(f"compiling the numerical engine: {other}"), paused():
                importlib.import_module(f"{__package__}.{other}")
        warm.work_while_pending(mod)
        for ready in warm.ready_before(mod):  # loaded from the cache meanwhile (the subject imports them anyway)
            with announce(f"loading the numerical engine: {ready}"), paused():
                importlib.import_module(f"{__package__}.{ready}")
        with announce(f"compiling the numerical engine: {mod} (in a second process)"):
            warm.wait(mod)
    with announce(f"compiling the numerical engine: {mod}"), paused():
        value = getattr(importlib.import_module(f"{__package__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_MODULE_OF))
