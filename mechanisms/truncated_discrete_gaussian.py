"""Discrete Gaussian truncated to [-truncation_bound, truncation_bound] around the query (dp_accounting's
discrete Gaussian with a truncation bound): the pmfs have different supports, so the privacy loss is +-inf with
positive probability."""
import sympy as sp

from mechkit.laws import Family

k, j = sp.symbols("k j", integer=True)
sigma = sp.Symbol("sigma", positive=True)
truncation_bound = sp.Symbol("truncation_bound", positive=True, integer=True)
sensitivity = sp.Symbol("sensitivity", positive=True, integer=True)
Z = sp.Sum(sp.exp(-j**2 / (2 * sigma**2)), (j, -truncation_bound, truncation_bound))


def truncated(loc):
    inside = (k >= loc - truncation_bound) & (k <= loc + truncation_bound)
    return sp.Piecewise((sp.exp(-(k - loc) ** 2 / (2 * sigma**2)) / Z, inside), (0, True))


family = Family(p=truncated(sensitivity), q=truncated(0), var=k, name="truncated_discrete_gaussian",
                defaults={"sensitivity": 1})
