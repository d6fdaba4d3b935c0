"""The saddle-point accountant (Alghamdi et al.; notes.md 3.3): epsilon(delta) and delta(epsilon) of a composition
from the saddle point of its CGF, with certified bounds from Theorem 5.

``formulas``: the approximations and Theorem 5 at one tilt; ``model``: the per-direction search model (memoised
CGF nodes, Taylor series); ``search``: root searches in the tilt, the estimate's polish, point-mass answers;
``bounds``: the certified bounds and certificates; ``accountant``: ``epsilon`` and ``delta``, the public entry points.
"""
from .accountant import delta, epsilon, exact_saddle, in_regime
from .formulas import VARIANTS, ZeroDelta, reliable
from .model import DIRECTION_CACHE, directions
from .search import at_zero, solve_t

__all__ = ["epsilon", "delta", "exact_saddle", "in_regime", "at_zero", "directions", "solve_t", "ZeroDelta",
           "reliable", "VARIANTS", "DIRECTION_CACHE"]
