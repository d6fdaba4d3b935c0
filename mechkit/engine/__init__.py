"""Compiled numerics shared by every stage below the symbolic one: kernel dispatch, log-space helpers, root
finding, quadrature, peak scans and tilted moments (``numerics``, Numba), and NumPy log-space helpers
(``logspace``).  Nothing here knows about mechanisms or accountants.
"""
from .. import cache as _cache

# before the first ``cache=True`` function is defined: Numba needs a writable cache location (a temporary one, with
# a warning, where it finds none)
_cache.ensure_numba_cache()

from . import warm as _warm  # noqa: E402  (after the cache location is settled)

_warm.start()
