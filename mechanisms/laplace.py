"""Laplace mechanism: Lap(sensitivity, scale) with the individual, Lap(0, scale) without."""
import sympy as sp

from mechkit.laws import Family

x = sp.Symbol("x", real=True)
scale, sensitivity = sp.symbols("scale sensitivity", positive=True)


def lap(loc):
    return sp.exp(-sp.Abs(x - loc) / scale) / (2 * scale)


family = Family(p=lap(sensitivity), q=lap(0), var=x, name="laplace", defaults={"sensitivity": 1})
