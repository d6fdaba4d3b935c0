"""The tight pair of a mechanism known only to be (epsilon, delta)-DP (Kairouz, Oh, Viswanath 2015; dp_accounting's
from_privacy_parameters): outputs 0 and 3 reveal the dataset (probability delta each way), 1 and 2 are
randomized response at epsilon.  Symmetric, so it holds under any relation the guarantee was stated for
(``mk.with_relation``)."""
import sympy as sp

from mechkit.laws import Family

o = sp.Symbol("o", integer=True)
epsilon = sp.Symbol("epsilon", nonnegative=True)
delta = sp.Symbol("delta", nonnegative=True)
big = (1 - delta) * sp.exp(epsilon) / (1 + sp.exp(epsilon))
small = (1 - delta) / (1 + sp.exp(epsilon))

p = sp.Piecewise((delta, sp.Eq(o, 0)), (big, sp.Eq(o, 1)), (small, sp.Eq(o, 2)), (0, True))
q = sp.Piecewise((0, sp.Eq(o, 0)), (small, sp.Eq(o, 1)), (big, sp.Eq(o, 2)), (delta, True))

ARGUMENTS = ("epsilon", "delta")  # mk.approximate_dp(epsilon, delta)
family = Family(p=p, q=q, var=o, domain=[0, 1, 2, 3], name="approximate_dp", constraints={"delta": "[0, 1)"})
