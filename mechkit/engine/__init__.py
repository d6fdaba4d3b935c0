"""Compiled numerics shared by every stage below the symbolic one: kernel dispatch, log-space helpers, root
finding, quadrature, peak scans and tilted moments (``numerics``, Numba), and NumPy log-space helpers
(``logspace``).  Nothing here knows about mechanisms or accountants.
"""
