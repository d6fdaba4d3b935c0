"""Helpers shared by several test modules (no test module imports another).  Unlike ``tests.references`` they
may use mechkit.

``ROOT``: the repository root; ``approx_dp_pair``: the canonical (eps0, delta0)-DP pair, a family whose privacy
loss has a point mass at +inf (notes.md 1.1).
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def approx_dp_pair():
    import sympy as sp

    import mechkit as mk

    k = sp.Symbol("k", integer=True)
    e0 = sp.Symbol("eps0", positive=True)
    d0 = sp.Symbol("delta0", positive=True)
    hi, lo = (1 - d0) * sp.exp(e0) / (1 + sp.exp(e0)), (1 - d0) / (1 + sp.exp(e0))
    p = sp.Piecewise((d0, sp.Eq(k, 0)), (hi, sp.Eq(k, 1)), (lo, sp.Eq(k, 2)), (0, True))
    q = sp.Piecewise((0, sp.Eq(k, 0)), (lo, sp.Eq(k, 1)), (hi, sp.Eq(k, 2)), (d0, True))
    return mk.Mechanism.from_densities(p, q, k, domain=[0, 1, 2, 3], name="approx_dp",
                                       constraints={"delta0": "(0, 1)"})
