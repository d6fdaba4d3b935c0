"""Stage 3 of the pipeline: a derived family bound to parameter values.  ``family``: ``Family`` (the symbolic pair),
``Mechanism`` (bound) and ``PLRV`` (the privacy-loss random variable of one direction); ``core``: the law of L
(continuous and discrete cores: pieces, point masses, CDF/log-survival, CGF by closed form or quadrature);
``limits``: the loss's limits at +-inf from evidence that must agree; ``screen``: cheap checks of the densities at
the bound values before a derivation (negative somewhere, not normalised); ``catalog``: the ``mechanisms/`` folder.
"""
from .family import PLRV, Family, Mechanism

__all__ = ["Family", "Mechanism", "PLRV"]
