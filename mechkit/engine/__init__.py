"""Compiled numerics shared by every stage below the symbolic one: kernel dispatch, log-space helpers, root
finding, quadrature, peak scans and tilted moments (``numerics``, Numba), and NumPy log-space helpers
(``logspace``).  Nothing here knows about mechanisms or accountants.
"""
from .. import cache as _cache
from . import warm as _warm

# where the engine's cache is plainly cold, the second process starts before this one imports Numba
_warm.start_early()

# before the first ``cache=True`` function is defined: Numba needs a writable cache location (a temporary one, with
# a warning, where it finds none)
_cache.ensure_numba_cache()

_warm.start()  # (after the cache location is settled) where start_early did not
