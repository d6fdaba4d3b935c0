"""Stage 1-2 of the pipeline: a specification (densities as SymPy, or safely parsed strings) -> SymPy derivation
of every kernel accounting needs -> generated Numba source, cached on disk.

``parse``: safe parsing of user strings and cached text; ``algebra``: log-space primitives and rewriting;
``derive``: densities -> named kernels + structure; ``codegen``: kernels -> a cached module of compiled functions.
Nothing here evaluates numbers at a parameter value (that is ``mechkit.laws``).
"""
