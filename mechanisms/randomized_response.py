"""Binary randomized response: report the true bit with probability e^eps / (1 + e^eps)."""
import sympy as sp

from mechkit.laws import Family

x = sp.Symbol("x", integer=True)
epsilon = sp.Symbol("epsilon", positive=True)

family = Family(p=sp.exp(epsilon * x) / (1 + sp.exp(epsilon)),
                q=sp.exp(epsilon * (1 - x)) / (1 + sp.exp(epsilon)),
                var=x, domain=[0, 1], name="randomized_response")
