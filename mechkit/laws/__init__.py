"""Stage 3 of the pipeline: a derived family bound to parameter values.

``family``: ``Family`` (the symbolic pair: validation, lazy derivation) and ``Mechanism`` (bound to values: the
one-shot privacy curve); ``plrv``: ``PLRV``, the privacy-loss random variable of one direction; ``core``: what
the laws of L share (``Law``, atoms, the CGF's memo); ``continuous`` and ``discrete``: the two kinds of law;
``limits``: the loss's limits at +-inf from evidence that must agree; ``screen``: cheap checks of the densities at
the bound values before a derivation; ``catalog``: the ``mechanisms/`` folder.
"""
from .family import Family, Mechanism
from .plrv import PLRV

__all__ = ["Family", "Mechanism", "PLRV"]
