"""Discrete Gaussian mechanism on the integers (Canonne, Kamath, Steinke 2020)."""
import sympy as sp

from mechkit.laws import Family

k, j = sp.symbols("k j", integer=True)
sigma = sp.Symbol("sigma", positive=True)
sensitivity = sp.Symbol("sensitivity", positive=True, integer=True)
Z = sp.Sum(sp.exp(-j**2 / (2 * sigma**2)), (j, -sp.oo, sp.oo))


def dgauss(loc):
    return sp.exp(-(k - loc) ** 2 / (2 * sigma**2)) / Z


family = Family(p=dgauss(sensitivity), q=dgauss(0), var=k, name="discrete_gaussian", defaults={"sensitivity": 1})
