"""Stage 3 of the pipeline: a derived family bound to parameter values.

``family``: ``Family`` (the symbolic pair: validation, lazy derivation) and ``Mechanism`` (bound to values: the
one-shot privacy curve); ``plrv``: ``PLRV``, the privacy-loss random variable of one direction; ``core``: what
the laws of L share (``Law``, atoms, the CGF's memo); ``continuous`` and ``discrete``: the two kinds of law;
``limits``: the loss's limits at +-inf from evidence that must agree; ``screen``: cheap checks of the densities at
the bound values before a derivation; ``catalog``: the ``mechanisms/`` folder; ``portable``: how families and
mechanisms pickle (for worker processes).
"""
import importlib

#: imported on first use, so ``mechkit.laws.catalog`` (the catalog's names) loads without SymPy or the engine
_LAZY = {"Family": "family", "Mechanism": "family", "PLRV": "plrv"}

__all__ = ["Family", "Mechanism", "PLRV"]


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
