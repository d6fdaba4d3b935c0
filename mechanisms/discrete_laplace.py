"""Discrete Laplace (two-sided geometric) mechanism on the integers, pmf proportional to exp(-|k - loc| / scale)."""
import sympy as sp

from mechkit.laws import Family

k = sp.Symbol("k", integer=True)
scale = sp.Symbol("scale", positive=True)
sensitivity = sp.Symbol("sensitivity", positive=True, integer=True)


def dlap(loc):
    return sp.tanh(1 / (2 * scale)) * sp.exp(-sp.Abs(k - loc) / scale)


family = Family(p=dlap(sensitivity), q=dlap(0), var=k, name="discrete_laplace", defaults={"sensitivity": 1})
