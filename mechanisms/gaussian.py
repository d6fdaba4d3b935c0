"""Gaussian mechanism: N(sensitivity, sigma^2) with the individual, N(0, sigma^2) without."""
import sympy as sp

from mechkit.laws import Family

x = sp.Symbol("x", real=True)
sigma, sensitivity = sp.symbols("sigma sensitivity", positive=True)


def normal(mean):
    return sp.exp(-(x - mean) ** 2 / (2 * sigma**2)) / (sp.sqrt(2 * sp.pi) * sigma)


family = Family(p=normal(sensitivity), q=normal(0), var=x, name="gaussian", defaults={"sensitivity": 1})
