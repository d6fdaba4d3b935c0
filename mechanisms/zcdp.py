"""A rho-zCDP mechanism through its Gaussian pair N(sqrt(2 rho), 1) against N(0, 1) (Bun, Steinke 2016): the
Gaussian mechanism is exactly rho-zCDP with its Renyi divergence alpha rho at every order.  An upper pair for
other rho-zCDP mechanisms only where their trade-off function is that Gaussian's (the Gaussian mechanism itself)."""
import sympy as sp

from mechkit.laws import Family

x = sp.Symbol("x", real=True)
rho = sp.Symbol("rho", positive=True)


def normal(mean):
    return sp.exp(-(x - mean) ** 2 / 2) / sp.sqrt(2 * sp.pi)


family = Family(p=normal(sp.sqrt(2 * rho)), q=normal(0), var=x, name="zcdp")
