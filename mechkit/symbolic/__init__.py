"""Stage 1-2 of the pipeline: a specification (densities as SymPy, or safely parsed strings) -> SymPy derivation
of every kernel accounting needs -> generated Numba source, cached on disk.

``parse``: safe parsing of user strings and cached text; ``algebra``: log-space primitives and rewriting;
``derive``: densities -> named kernels + structure; ``codegen``: kernels -> a cached module of compiled functions;
``entries``: loading cached ones without SymPy.  Nothing here evaluates numbers at a parameter value (that is
``mechkit.laws``).  ``sp`` stands for SymPy where a module needs it only in some calls and in its annotations.
"""


class _SymPy:
    """SymPy, imported at the first attribute asked of it (``sp.Symbol``, an annotation resolved)."""

    def __getattr__(self, name):
        import sympy

        return getattr(sympy, name)


#: SymPy, imported on first use: a family whose derivation is cached binds without it (``laws.shipped``)
sp = _SymPy()
